/* ELF vmlinux loading (arch/x86/vmlinux.h). */
#include "arch/x86/vmlinux.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

#define BOOT_FLAG_MAGIC 0xaa55
#define HDRS_MAGIC 0x53726448 /* "HdrS" */
#define BOOT_PROTOCOL 0x020c
#define LOADER_TYPE_UNDEFINED 0xff
#define KERNEL_ALIGNMENT 0x1000000
/* x86's COMMAND_LINE_SIZE, less its NUL. */
#define CMDLINE_MAX 2047
#define INITRD_MAX 0x7fffffff

static int fail(const char **why, const char *reason)
{
	*why = reason;
	return -ENOEXEC;
}

bool vmlinux_is_elf(const uint8_t *img, size_t size)
{
	return size >= SELFMAG && memcmp(img, ELFMAG, SELFMAG) == 0;
}

static int check_header(const Elf64_Ehdr *eh, size_t size, const char **why)
{
	if (size < sizeof(*eh) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
	    eh->e_type != ET_EXEC)
		return fail(why, "not a 64-bit x86 ELF kernel");
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
	    eh->e_phoff > size ||
	    (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return fail(why, "truncated ELF program headers");
	return 0;
}

int vmlinux_check(const uint8_t *img, size_t size, const char **why)
{
	Elf64_Ehdr eh;
	if (size < sizeof(eh))
		return fail(why, "not a 64-bit x86 ELF kernel");
	memcpy(&eh, img, sizeof(eh));
	return check_header(&eh, size, why);
}

int vmlinux_load(const struct guest_mem *mem, const uint8_t *img, size_t size,
		 struct boot_params *zp, struct kernel_info *ki,
		 const char **why)
{
	int err = vmlinux_check(img, size, why);
	if (err)
		return err;
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));

	uint64_t lo = UINT64_MAX, hi = 0;
	bool entry_loaded = false;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, img + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		if (ph.p_filesz > ph.p_memsz || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			return fail(why, "ELF segment outside the file");
		/* Below 1 MiB are the boot tables; the sum must not wrap. */
		if (ph.p_paddr < BOOT_HIGH_MEM ||
		    ph.p_paddr + ph.p_memsz < ph.p_paddr)
			return fail(why, "ELF segment at an address fsvm keeps");
		uint8_t *dst = guest_ptr(mem, ph.p_paddr, ph.p_memsz);
		if (!dst) {
			*why = "guest RAM too small for the kernel";
			return -ENOMEM;
		}
		/* Guest RAM is fresh anonymous memory, zero already: the bss
		 * (memsz past filesz) is left untouched, unpopulated. */
		guest_mem_prefault(mem, ph.p_paddr, ph.p_filesz);
		memcpy(dst, img + ph.p_offset, ph.p_filesz);
		if (ph.p_paddr < lo)
			lo = ph.p_paddr;
		if (ph.p_paddr + ph.p_memsz > hi)
			hi = ph.p_paddr + ph.p_memsz;
		entry_loaded |= eh.e_entry >= ph.p_paddr &&
				eh.e_entry - ph.p_paddr < ph.p_filesz;
	}
	if (!entry_loaded)
		return fail(why, "ELF entry point outside its loaded segments");

	/* What the kernel reads of the setup header a bzImage would carry. */
	memset(zp, 0, sizeof(*zp));
	zp->hdr.boot_flag = BOOT_FLAG_MAGIC;
	zp->hdr.header = HDRS_MAGIC;
	zp->hdr.version = BOOT_PROTOCOL;
	zp->hdr.type_of_loader = LOADER_TYPE_UNDEFINED;
	zp->hdr.loadflags = LOADED_HIGH;
	zp->hdr.kernel_alignment = KERNEL_ALIGNMENT;
	zp->hdr.cmdline_size = CMDLINE_MAX;
	zp->hdr.initrd_addr_max = INITRD_MAX;
	zp->hdr.code32_start = (uint32_t)lo;

	*ki = (struct kernel_info){
		.load_addr = lo,
		.entry = eh.e_entry,
		.end = hi,
		.cmdline_max = CMDLINE_MAX,
		.initrd_max = INITRD_MAX,
	};
	return 0;
}
