/* Loading an uncompressed kernel (an ELF vmlinux, from a build tree or
 * extracted from a bzImage by tools/extract-vmlinux): its segments go
 * straight to their physical addresses and the boot CPU enters the
 * kernel's own startup_64, so the guest spends no time decompressing or
 * relocating itself. */
#ifndef FSVM_X86_VMLINUX_H
#define FSVM_X86_VMLINUX_H

#include <asm/bootparam.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/boot.h"
#include "core/guest_mem.h"

/* The image starts like an ELF file. */
bool vmlinux_is_elf(const uint8_t *img, size_t size);

/* Validates a 64-bit x86 ELF kernel's headers without loading it. On
 * error returns a negative errno and points *why at the reason. */
int vmlinux_check(const uint8_t *img, size_t size, const char **why);

/* Validates a 64-bit x86 ELF kernel, copies its PT_LOAD segments to their
 * physical addresses (into fresh, zeroed RAM: the bss is not written) and
 * starts *zp with a minimal setup header. On error returns a negative errno and points *why at the
 * reason. */
int vmlinux_load(const struct guest_mem *mem, const uint8_t *img, size_t size,
		 struct boot_params *zp, struct kernel_info *ki,
		 const char **why);

#endif
