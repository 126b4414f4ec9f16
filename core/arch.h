/* What the core asks of the architecture it runs on (arch/x86/ implements
 * it): the VM's and each vCPU's architectural set-up, and what a CPU that
 * stopped for good looks like. */
#ifndef FSVM_ARCH_H
#define FSVM_ARCH_H

#include <stdbool.h>
#include <stddef.h>

struct vm;
struct vcpu;
struct kvm_irq_routing;

/* False when this host's KVM cannot run a stock Linux kernel, with *why
 * telling the user how to proceed. */
bool arch_runs_stock_kernels(const char **why);

/* After KVM_CREATE_VM: interrupt controllers, timers and whatever else the
 * architecture's VM needs before its memory and vCPUs; fills vm->arch. */
int arch_vm_init(struct vm *vm, const char **why);
void arch_vm_destroy(struct vm *vm);

/* After KVM_CREATE_VCPU: the vCPU's identity and local interrupt set-up. */
int arch_vcpu_init(struct vcpu *vcpu, const char **why);

/* The interrupt controller's own routes, which KVM_SET_GSI_ROUTING would
 * drop (it replaces KVM's default table): appends them to table, which has
 * room, and returns the first GSI past them, where MSI routes start. */
unsigned int arch_irq_routes(struct kvm_irq_routing *table);

/* An exit the core does not handle itself (x86: port I/O); false when the
 * vCPU must stop (the VM's stop says why). */
bool arch_vcpu_handle_exit(struct vcpu *vcpu);

/* Not running, and nothing but an NMI or INIT could wake it. */
bool arch_vcpu_stopped_for_good(struct vcpu *vcpu);

/* For a guest that never finished: one line on where a stopped vCPU was
 * and what it waited for, and one on the VM's interrupt controller. */
void arch_vcpu_report(struct vcpu *vcpu, char *buf, size_t len);
void arch_vm_report(struct vm *vm, char *buf, size_t len);

#endif
