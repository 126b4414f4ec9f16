/* bzImage loading, zero page, e820, command line, initrd placement and the
 * 64-bit entry state, following Documentation/x86/boot.rst. */
#include "arch/x86/boot.h"

#include <asm/e820.h>
#include <asm/processor-flags.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#define SETUP_HEADER_OFFSET 0x1f1
#define BOOT_FLAG_MAGIC 0xaa55
#define FPU_DEFAULT_FCW 0x37f
#define SSE_DEFAULT_MXCSR 0x1f80
#define HDRS_MAGIC 0x53726448 /* "HdrS" */
#define MIN_BOOT_PROTOCOL 0x020c /* xloadflags, 64-bit entry */
#define ENTRY_64_OFFSET 0x200
#define LEGACY_LOAD_ADDR 0x100000
#define LOADER_TYPE_UNDEFINED 0xff
#define EFER_LME (1ULL << 8)
#define EFER_LMA (1ULL << 10)
#define PTE_P 0x1ULL
#define PTE_RW 0x2ULL
#define PTE_PS 0x80ULL

static int fail(const char **why, const char *reason, int err)
{
	*why = reason;
	return err;
}

/* The real-mode setup code before the kernel proper (4 sectors if 0). */
static size_t bzimage_setup_size(const struct setup_header *hdr)
{
	return ((size_t)(hdr->setup_sects ? hdr->setup_sects : 4) + 1) * 512;
}

int bzimage_check(const uint8_t *img, size_t size, struct setup_header *hdr,
		  const char **why)
{
	if (size < sizeof(struct boot_params))
		return fail(why, "too small to be a bzImage", -ENOEXEC);

	memset(hdr, 0, sizeof(*hdr));
	/* The header's length is given by the jump at 0x200. */
	size_t hdr_end = 0x202 + img[0x201];
	size_t hdr_len = hdr_end - SETUP_HEADER_OFFSET;
	if (hdr_len > sizeof(*hdr))
		hdr_len = sizeof(*hdr);
	memcpy(hdr, img + SETUP_HEADER_OFFSET, hdr_len);

	if (hdr->boot_flag != BOOT_FLAG_MAGIC || hdr->header != HDRS_MAGIC)
		return fail(why, "not a bzImage (no Linux boot header)",
			    -ENOEXEC);
	if (hdr->version < MIN_BOOT_PROTOCOL)
		return fail(why, "boot protocol older than 2.12", -ENOEXEC);
	if (!(hdr->xloadflags & XLF_KERNEL_64))
		return fail(why, "kernel has no 64-bit entry point", -ENOEXEC);

	size_t setup_size = bzimage_setup_size(hdr);
	uint64_t kernel_size = (uint64_t)hdr->syssize * 16;
	if (setup_size >= size || kernel_size == 0 ||
	    kernel_size > size - setup_size)
		return fail(why, "truncated kernel image", -ENOEXEC);
	return 0;
}

int bzimage_load(const struct guest_mem *mem, const uint8_t *img,
		 size_t size, struct boot_params *zp, struct kernel_info *ki,
		 const char **why)
{
	memset(zp, 0, sizeof(*zp));
	struct setup_header *hdr = &zp->hdr;
	int err = bzimage_check(img, size, hdr, why);
	if (err)
		return err;
	size_t setup_size = bzimage_setup_size(hdr);
	uint64_t kernel_size = (uint64_t)hdr->syssize * 16;

	uint64_t load = LEGACY_LOAD_ADDR;
	if (hdr->relocatable_kernel && hdr->pref_address >= BOOT_HIGH_MEM)
		load = hdr->pref_address;
	uint64_t need = hdr->init_size > kernel_size ? hdr->init_size
						     : kernel_size;
	void *dst = guest_ptr(mem, load, need);
	if (!dst)
		return fail(why, "guest RAM too small for the kernel", -ENOMEM);
	guest_mem_prefault(mem, load, kernel_size);
	memcpy(dst, img + setup_size, kernel_size);

	hdr->type_of_loader = LOADER_TYPE_UNDEFINED;
	hdr->loadflags |= CAN_USE_HEAP;
	hdr->heap_end_ptr = 0xfe00;
	hdr->code32_start = (uint32_t)load;

	*ki = (struct kernel_info){
		.load_addr = load,
		.entry = load + ENTRY_64_OFFSET,
		.end = load + need,
		.cmdline_max = hdr->cmdline_size ? hdr->cmdline_size : 255,
		.initrd_max = hdr->initrd_addr_max,
	};
	return 0;
}

int boot_place_initrd(const struct guest_mem *mem, const struct kernel_info *ki,
		      uint64_t size, struct boot_params *zp, uint64_t *gpa,
		      const char **why)
{
	/* The low region holds the kernel; the initrd goes at its top. */
	const struct guest_region *low = &mem->regions[0];
	uint64_t top = low->gpa + low->size;
	if (ki->initrd_max + 1 < top)
		top = ki->initrd_max + 1;
	if (size > top || ((top - size) & ~(GUEST_PAGE_SIZE - 1)) < ki->end)
		return fail(why, "initrd too large for guest RAM", -ENOMEM);
	uint64_t addr = (top - size) & ~(GUEST_PAGE_SIZE - 1);

	zp->hdr.ramdisk_image = (uint32_t)addr;
	zp->hdr.ramdisk_size = (uint32_t)size;
	zp->ext_ramdisk_image = (uint32_t)(addr >> 32);
	zp->ext_ramdisk_size = (uint32_t)(size >> 32);
	*gpa = addr;
	return 0;
}

int boot_set_cmdline(const struct guest_mem *mem, const struct kernel_info *ki,
		     const char *cmdline, struct boot_params *zp,
		     const char **why)
{
	size_t len = strlen(cmdline);
	/* cmdline_size counts the characters, not the terminating NUL. */
	if (len > ki->cmdline_max || len >= BOOT_CMDLINE_MAX)
		return fail(why, "kernel command line too long", -E2BIG);
	if (guest_write(mem, BOOT_CMDLINE_ADDR, cmdline, len + 1))
		return fail(why, "no RAM for the command line", -ENOMEM);
	zp->hdr.cmd_line_ptr = BOOT_CMDLINE_ADDR;
	zp->ext_cmd_line_ptr = 0;
	return 0;
}

static void e820_add(struct boot_params *zp, uint64_t addr, uint64_t size,
		     uint32_t type)
{
	if (zp->e820_entries == E820_MAX_ENTRIES_ZEROPAGE || size == 0)
		return;
	zp->e820_table[zp->e820_entries++] =
		(struct boot_e820_entry){.addr = addr, .size = size, .type = type};
}

void boot_set_e820(const struct guest_mem *mem, struct boot_params *zp)
{
	zp->e820_entries = 0;
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->regions[i];
		uint64_t start = r->gpa, end = r->gpa + r->size;
		if (start < BOOT_HIGH_MEM) {
			/* Base memory up to the EBDA, then the BIOS hole. */
			uint64_t base_end = end < BOOT_EBDA_ADDR ? end
								 : BOOT_EBDA_ADDR;
			e820_add(zp, start, base_end - start, E820_RAM);
			if (end > BOOT_EBDA_ADDR)
				e820_add(zp, BOOT_EBDA_ADDR,
					 BOOT_HIGH_MEM - BOOT_EBDA_ADDR,
					 E820_RESERVED);
			start = BOOT_HIGH_MEM;
		}
		if (end > start)
			e820_add(zp, start, end - start, E820_RAM);
	}
}

int boot_write_tables(const struct guest_mem *mem, const struct boot_params *zp)
{
	static const uint64_t gdt[] = {
		0, 0,
		0x00af9b000000ffffULL, /* 64-bit code, BOOT_CODE_SEL */
		0x00cf93000000ffffULL, /* flat data, BOOT_DATA_SEL */
	};
	uint64_t *pml4 = guest_ptr(mem, BOOT_PML4_ADDR, GUEST_PAGE_SIZE);
	uint64_t *pdpt = guest_ptr(mem, BOOT_PDPT_ADDR, GUEST_PAGE_SIZE);
	uint64_t *pd = guest_ptr(mem, BOOT_PD_ADDR, 4 * GUEST_PAGE_SIZE);
	if (!pml4 || !pdpt || !pd ||
	    guest_write(mem, BOOT_GDT_ADDR, gdt, sizeof(gdt)) ||
	    guest_write(mem, BOOT_ZERO_PAGE_ADDR, zp, sizeof(*zp)))
		return -EFAULT;

	/* Identity map of the low 4 GiB in 2 MiB pages. */
	memset(pml4, 0, GUEST_PAGE_SIZE);
	memset(pdpt, 0, GUEST_PAGE_SIZE);
	pml4[0] = BOOT_PDPT_ADDR | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < 4; i++)
		pdpt[i] = (BOOT_PD_ADDR + i * GUEST_PAGE_SIZE) | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < 4 * 512; i++)
		pd[i] = (i << 21) | PTE_P | PTE_RW | PTE_PS;
	return 0;
}

static struct kvm_segment flat_segment(uint16_t selector, uint8_t type)
{
	return (struct kvm_segment){
		.base = 0, .limit = 0xffffffff, .selector = selector,
		.type = type, .present = 1, .dpl = 0, .db = 0, .s = 1,
		.l = 0, .g = 1,
	};
}

void boot_sregs(struct kvm_sregs *sregs)
{
	struct kvm_segment code = flat_segment(BOOT_CODE_SEL, 0xb);
	code.l = 1;
	struct kvm_segment data = flat_segment(BOOT_DATA_SEL, 0x3);
	data.db = 1;

	sregs->cs = code;
	sregs->ds = sregs->es = sregs->fs = sregs->gs = sregs->ss = data;
	/* A busy 64-bit TSS keeps VMX's entry checks happy. */
	sregs->tr = (struct kvm_segment){.limit = 0xffff, .type = 0xb,
					 .present = 1};
	sregs->ldt = (struct kvm_segment){.type = 0x2, .present = 1,
					  .unusable = 1};
	sregs->gdt.base = BOOT_GDT_ADDR;
	sregs->gdt.limit = 4 * sizeof(uint64_t) - 1;
	sregs->idt.base = 0;
	sregs->idt.limit = 0;
	sregs->cr0 = X86_CR0_PE | X86_CR0_PG | X86_CR0_ET | X86_CR0_NE;
	sregs->cr3 = BOOT_PML4_ADDR;
	sregs->cr4 = X86_CR4_PAE;
	sregs->efer = EFER_LME | EFER_LMA;
}

void boot_regs(struct kvm_regs *regs, const struct kernel_info *ki)
{
	memset(regs, 0, sizeof(*regs));
	regs->rflags = X86_EFLAGS_FIXED;
	regs->rip = ki->entry;
	regs->rsi = BOOT_ZERO_PAGE_ADDR;
	regs->rsp = BOOT_STACK_ADDR;
}

int boot_enter_kernel(struct vcpu *vcpu, const struct kernel_info *ki)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu = {.fcw = FPU_DEFAULT_FCW,
			      .mxcsr = SSE_DEFAULT_MXCSR};

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	boot_sregs(&sregs);
	boot_regs(&regs, ki);
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0)
		return -errno;
	return 0;
}
