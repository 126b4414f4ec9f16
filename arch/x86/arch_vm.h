/* The x86 VM's own state (vm->arch), shared by arch.c, which makes it,
 * and snapshot_state.c, which saves and restores the VM. */
#ifndef FSVM_X86_ARCH_VM_H
#define FSVM_X86_ARCH_VM_H

#include <linux/kvm.h>
#include <stdint.h>

struct arch_vm {
	struct kvm_cpuid2 *cpuid; /* what KVM supports; per-vCPU copies differ */
	/* How far arch_vm_restore_state() moved the guest's clock forward
	 * (ns): each vCPU's TSC is moved as far when it is restored. */
	uint64_t restore_advance_ns;
};

/* KVM's supported CPUID entry for function/index, or NULL. */
const struct kvm_cpuid_entry2 *x86_supported_cpuid(const struct arch_vm *a,
						   uint32_t function,
						   uint32_t index);

#endif
