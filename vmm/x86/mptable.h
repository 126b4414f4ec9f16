/* Intel MultiProcessor Specification 1.4 table: tells the guest about every
 * vCPU, the I/O APIC and how ISA interrupts reach it. */
#ifndef FSVM_MPTABLE_H
#define FSVM_MPTABLE_H

#include <stdint.h>

#include "vmm/core/guest_mem.h"

#define MPTABLE_ADDR 0xf0000 /* in the BIOS area Linux scans */
#define MPTABLE_MAX_CPUS 64
#define IOAPIC_ADDR 0xfec00000
#define LAPIC_ADDR 0xfee00000

/* Writes the floating pointer and configuration table; returns the bytes
 * used or a negative errno. */
int mptable_write(const struct guest_mem *mem, unsigned int nr_cpus);

#endif
