/* What the core asks of the architecture it runs on (arch/x86/ implements
 * it): the VM's and each vCPU's architectural set-up, and what a CPU that
 * stopped for good looks like. */
#ifndef FSVM_ARCH_H
#define FSVM_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct vcpu;
struct kvm_irq_routing;
struct gdb_debug;
struct gdb_stop;

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

/* A snapshot's architectural state, each a self-contained malloc'd blob
 * (the caller frees it); 0 or a negative errno. A vCPU's is taken stopped
 * out of KVM_RUN, its last exit handled and settled (vcpu_settle()); the
 * VM's holds its in-kernel interrupt controllers, timer and clock. */
int arch_vcpu_save_state(struct vcpu *vcpu, unsigned char **buf, size_t *len);
int arch_vm_save_state(struct vm *vm, unsigned char **buf, size_t *len);

/* Into a fresh VM made the same way (memory, vCPU count, interrupt
 * controllers), its VM state first, then each vCPU's (arch_vcpu_init done,
 * never run). Any input is checked, a blob from a host that differs in
 * what the state needs refused: 0, or a negative errno with err one line
 * naming the part that is wrong. */
int arch_vm_restore_state(struct vm *vm, const unsigned char *buf, size_t len,
			  char *err, size_t errlen);
int arch_vcpu_restore_state(struct vcpu *vcpu, const unsigned char *buf,
			    size_t len, char *err, size_t errlen);

/* gdb's view of this architecture (core/gdb_stub.c, core/gdb_server.c):
 * the target description gdb reads as target.xml, the register file in
 * its numbering (the g packet), the breakpoint instruction. */
const char *arch_gdb_target_xml(void);
size_t arch_gdb_regs_size(void);
/* Where register regno lies in the register file; false: none such. */
bool arch_gdb_reg(unsigned int regno, size_t *offset, size_t *size);
const uint8_t *arch_gdb_break_insn(size_t *len);

/* A stopped vCPU's registers, in and out of the register file. */
int arch_gdb_get_regs(struct vcpu *vcpu, uint8_t *regs);
int arch_gdb_set_regs(struct vcpu *vcpu, const uint8_t *regs);

/* A virtual address through the vCPU's page tables; -EFAULT unmapped. */
int arch_gdb_translate(struct vcpu *vcpu, uint64_t gva, uint64_t *gpa);

/* Arms the vCPU's debugging as dbg says (NULL: none), single-stepping it
 * if step; supported is KVM_CAP_SET_GUEST_DEBUG2's answer. */
int arch_gdb_set_debug(struct vcpu *vcpu, const struct gdb_debug *dbg,
		       bool step, uint32_t supported);

/* A KVM_EXIT_DEBUG: true with *stop's kind (and slot) when one of dbg's
 * points or the step asked for caused it; otherwise the exception was the
 * guest's own (its int3, its debug registers) and goes back to it. */
bool arch_gdb_debug_exit(struct vcpu *vcpu, const struct gdb_debug *dbg,
			 bool stepping, struct gdb_stop *stop);

#endif
