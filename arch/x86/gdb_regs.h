/* x86-64's register file as gdb's target description numbers it
 * (arch/x86/gdb_regs.c's target.xml), to and from KVM's register sets. */
#ifndef FSVM_X86_GDB_REGS_H
#define FSVM_X86_GDB_REGS_H

#include <linux/kvm.h>
#include <stdint.h>

/* gdb's numbers for the registers whose place tests and callers need. */
enum x86_gdb_regno {
	X86_GDB_RAX = 0,
	X86_GDB_RSP = 7,
	X86_GDB_RIP = 16,
	X86_GDB_EFLAGS = 17,
	X86_GDB_CS = 18,
	X86_GDB_ST0 = 24,
	X86_GDB_FCTRL = 32,
	X86_GDB_XMM0 = 40,
	X86_GDB_MXCSR = 56,
	X86_GDB_FS_BASE = 57,
	X86_GDB_GS_BASE = 58,
	X86_GDB_CR0 = 59,
	X86_GDB_EFER = 64,
	X86_GDB_NR_REGS = 65,
};

/* The register file's size: 600 bytes. */
#define X86_GDB_REGS_SIZE 600

void x86_gdb_pack(uint8_t *out, const struct kvm_regs *regs,
		  const struct kvm_sregs *sregs, const struct kvm_fpu *fpu);
/* Updates the sets from a register file (what it does not hold, such as
 * segment bases and attributes, stays as it was). */
void x86_gdb_unpack(const uint8_t *in, struct kvm_regs *regs,
		    struct kvm_sregs *sregs, struct kvm_fpu *fpu);

#endif
