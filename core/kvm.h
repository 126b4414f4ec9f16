/* KVM set-up: open /dev/kvm, judge whether it can run a stock kernel, and
 * create the VM with its in-kernel interrupt controllers and memory. */
#ifndef FSVM_KVM_H
#define FSVM_KVM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"

/* Opens /dev/kvm and checks the API; on error *why says what to do. */
int kvm_open(struct vm *vm, const char **why);

/* Creates the VM: the architecture's part (arch_vm_init), then one memory
 * slot per RAM region. */
int kvm_create_vm(struct vm *vm, const char **why);

/* Whether KVM offers capability cap (KVM_CAP_*). */
bool kvm_has(const struct vm *vm, int cap);

/* Memory slots: RAM takes the first ones, devices (DAX windows) the rest.
 * A size of 0 deletes the slot. */
unsigned int kvm_alloc_memslot(struct vm *vm);
int kvm_set_memslot(struct vm *vm, unsigned int slot, uint64_t gpa,
		    uint64_t size, void *hva);

/* A doorbell (KVM's ioeventfd): a len-byte guest write at addr (a port
 * when pio, else guest-physical) signals fd instead of exiting; any value
 * when match is negative, else only that value (one register for several
 * queues). Removing it (assign false) takes the same match. */
int kvm_set_doorbell(struct vm *vm, bool pio, uint64_t addr,
		     unsigned int len, int64_t match, int fd, bool assign);

#endif
