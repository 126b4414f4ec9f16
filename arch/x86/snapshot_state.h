/* The x86 snapshot blobs (core/arch.h's arch_*_save_state and
 * arch_*_restore_state): a vCPU's and the VM's KVM state, parsed into
 * these structs apart from KVM, so that hand-made input can be checked
 * (and fuzzed) without a VM.
 *
 * A blob: magic (8 bytes), version (u32), number of parts (u32), then each
 * part as tag (u32), length (u32) and that many bytes; integers
 * little-endian. A part holding a linux/kvm.h struct is the struct's bytes
 * as x86 lays them out (little-endian), its length exactly the struct's. */
#ifndef FSVM_X86_SNAPSHOT_STATE_H
#define FSVM_X86_SNAPSHOT_STATE_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_STATE_VERSION 1
/* Far above any CPU's (KVM's list has about 100; XSAVE with AMX 11 KiB). */
#define SNAPSHOT_MAX_MSRS 1024
#define SNAPSHOT_MAX_XSAVE (1u << 20)

/* What a restore's host must match: the vCPU's CPUID and XSAVE layout
 * come from KVM there, and a guest's saved state is only good for the
 * same ones. */
struct snapshot_host {
	char vendor[12];    /* CPUID 0 */
	uint32_t signature; /* CPUID 1 EAX: family, model, stepping */
	uint32_t xsave_size;
	uint64_t xcr0_mask; /* CPUID 0xd.0: the XSAVE features KVM offers */
};

struct vcpu_state {
	struct snapshot_host host;
	uint32_t tsc_khz;
	struct kvm_regs regs;
	bool has_sregs2; /* else sregs */
	struct kvm_sregs sregs;
	struct kvm_sregs2 sregs2;
	const unsigned char *xsave; /* host.xsave_size bytes, in the blob */
	bool has_xcrs;
	struct kvm_xcrs xcrs;
	uint32_t nr_msrs;
	const unsigned char *msrs; /* nr_msrs struct kvm_msr_entry, in the blob */
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_mp_state mp_state;
	struct kvm_debugregs debugregs;
};

struct vm_state {
	struct kvm_irqchip pic_master, pic_slave, ioapic;
	struct kvm_pit_state2 pit;
	/* KVM_GET_CLOCK's, realtime always set (by fsvm when KVM did not). */
	struct kvm_clock_data clock;
};

/* 0, or -EINVAL with err one line naming the part that is wrong. The
 * state points into buf. */
int vcpu_state_parse(const unsigned char *buf, size_t len,
		     struct vcpu_state *st, char *err, size_t errlen);
int vm_state_parse(const unsigned char *buf, size_t len, struct vm_state *st,
		   char *err, size_t errlen);

/* 0 when a snapshot taken on saved restores on here; else -EINVAL with
 * err naming what differs. */
int snapshot_host_match(const struct snapshot_host *saved,
			const struct snapshot_host *here, char *err,
			size_t errlen);

#endif
