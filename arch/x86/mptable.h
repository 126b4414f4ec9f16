/* Intel MultiProcessor Specification 1.4 table: tells the guest about every
 * vCPU, the I/O APIC and how ISA interrupts reach it. */
#ifndef FSVM_MPTABLE_H
#define FSVM_MPTABLE_H

#include <stdint.h>

#include "arch/x86/memory_map.h"
#include "core/guest_mem.h"

#define MPTABLE_MAX_CPUS 64

/* Writes the floating pointer and configuration table; returns the bytes
 * used or a negative errno. */
int mptable_write(const struct guest_mem *mem, unsigned int nr_cpus);

#endif
