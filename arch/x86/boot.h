/* Linux x86 boot protocol: load a bzImage, build the zero page (e820 map,
 * command line, initrd) and the CPU state for the 64-bit entry point. */
#ifndef FSVM_BOOT_H
#define FSVM_BOOT_H

#include <asm/bootparam.h>
#include <linux/kvm.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/memory_map.h"
#include "core/guest_mem.h"
#include "core/vcpu.h"

#define BOOT_CODE_SEL 0x10
#define BOOT_DATA_SEL 0x18

struct kernel_info {
	uint64_t load_addr; /* where the protected-mode kernel is copied */
	uint64_t entry;     /* 64-bit entry point */
	uint64_t end;       /* load_addr + init_size: first byte free after */
	uint32_t cmdline_max;
	uint64_t initrd_max; /* highest address an initrd byte may occupy */
};

/* Validates a bzImage's header (into *hdr) and that its kernel is all
 * there, without loading it. On error returns a negative errno and points
 * *why at the reason. */
int bzimage_check(const uint8_t *img, size_t size, struct setup_header *hdr,
		  const char **why);

/* Validates a bzImage, copies its kernel into guest RAM and starts the
 * zero page *zp from its setup header. On error returns a negative errno
 * and points *why at the reason. */
int bzimage_load(const struct guest_mem *mem, const uint8_t *img,
		 size_t size, struct boot_params *zp, struct kernel_info *ki,
		 const char **why);

/* Chooses where an initrd of size bytes goes: as high as the kernel
 * allows, page-aligned, above the kernel. Records it in *zp. */
int boot_place_initrd(const struct guest_mem *mem, const struct kernel_info *ki,
		      uint64_t size, struct boot_params *zp, uint64_t *gpa,
		      const char **why);

/* Copies the command line into guest memory and points *zp at it. */
int boot_set_cmdline(const struct guest_mem *mem, const struct kernel_info *ki,
		     const char *cmdline, struct boot_params *zp,
		     const char **why);

/* Fills the e820 map from the RAM regions, reserving the EBDA and the
 * BIOS area. */
void boot_set_e820(const struct guest_mem *mem, struct boot_params *zp);

/* Writes the GDT and identity page tables the 64-bit entry needs, and the
 * finished zero page. */
int boot_write_tables(const struct guest_mem *mem, const struct boot_params *zp);

/* CPU state at the 64-bit entry (boot protocol 2.12+, section 64-bit). */
void boot_sregs(struct kvm_sregs *sregs);
void boot_regs(struct kvm_regs *regs, const struct kernel_info *ki);

/* Gives the boot CPU that state (application processors wait for the
 * boot CPU's INIT/SIPI instead). */
int boot_enter_kernel(struct vcpu *vcpu, const struct kernel_info *ki);

#endif
