/* Unit tests for arch/x86/vmlinux: ELF kernels loaded at their physical
 * addresses, and every malformed header refused with a reason. */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/vmlinux.h"

#define MIB (1ULL << 20)
#define TEXT_PADDR (16 * MIB)
#define TEXT_BYTES 0x3000
#define BSS_BYTES 0x2000
#define DATA_OFF 0x1000

/* An ELF with one text segment (TEXT_BYTES in the file, BSS_BYTES more in
 * memory), entered at its start, and a PT_NOTE that is not loaded. */
struct elf_image {
	uint8_t data[DATA_OFF + TEXT_BYTES];
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph; /* [0] PT_LOAD, [1] PT_NOTE */
};

static void make_elf(struct elf_image *img)
{
	memset(img->data, 0, sizeof(img->data));
	img->eh = (Elf64_Ehdr *)img->data;
	img->ph = (Elf64_Phdr *)(img->data + sizeof(Elf64_Ehdr));
	memcpy(img->eh->e_ident, ELFMAG, SELFMAG);
	img->eh->e_ident[EI_CLASS] = ELFCLASS64;
	img->eh->e_ident[EI_DATA] = ELFDATA2LSB;
	img->eh->e_type = ET_EXEC;
	img->eh->e_machine = EM_X86_64;
	img->eh->e_entry = TEXT_PADDR + 0x40;
	img->eh->e_phoff = sizeof(Elf64_Ehdr);
	img->eh->e_phentsize = sizeof(Elf64_Phdr);
	img->eh->e_phnum = 2;
	img->ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = DATA_OFF,
				  .p_vaddr = 0xffffffff81000000ULL,
				  .p_paddr = TEXT_PADDR, .p_filesz = TEXT_BYTES,
				  .p_memsz = TEXT_BYTES + BSS_BYTES};
	img->ph[1] = (Elf64_Phdr){.p_type = PT_NOTE, .p_offset = 0,
				  .p_paddr = 0, .p_filesz = 16, .p_memsz = 16};
	for (size_t i = 0; i < TEXT_BYTES; i++)
		img->data[DATA_OFF + i] = (uint8_t)(i * 13 + 1);
}

static struct guest_mem new_mem(void)
{
	struct guest_mem mem;
	assert_int_equal(guest_mem_init(&mem, 64 * MIB, RAM_LOW_LIMIT,
					 RAM_HIGH_START), 0);
	return mem;
}

static void test_segments_land_at_their_physical_addresses(void **state)
{
	(void)state;
	struct elf_image img;
	make_elf(&img);
	struct guest_mem mem = new_mem();
	struct boot_params zp;
	struct kernel_info ki;
	const char *why = NULL;
	assert_true(vmlinux_is_elf(img.data, sizeof(img.data)));
	assert_int_equal(vmlinux_load(&mem, img.data, sizeof(img.data), &zp,
				      &ki, &why), 0);
	uint8_t *text = guest_ptr(&mem, TEXT_PADDR, TEXT_BYTES + BSS_BYTES);
	assert_memory_equal(text, img.data + DATA_OFF, TEXT_BYTES);
	for (size_t i = 0; i < BSS_BYTES; i++)
		assert_int_equal(text[TEXT_BYTES + i], 0);
	assert_int_equal(ki.entry, TEXT_PADDR + 0x40);
	assert_int_equal(ki.load_addr, TEXT_PADDR);
	assert_int_equal(ki.end, TEXT_PADDR + TEXT_BYTES + BSS_BYTES);
	assert_int_equal(zp.hdr.boot_flag, 0xaa55);
	assert_int_equal(zp.hdr.header, 0x53726448);
	assert_int_equal(zp.hdr.type_of_loader, 0xff);
	assert_true(ki.cmdline_max >= 255);
	guest_mem_destroy(&mem);
}

static void expect_refused(struct elf_image *img, size_t size,
			   const char *reason)
{
	struct guest_mem mem = new_mem();
	struct boot_params zp;
	struct kernel_info ki;
	const char *why = NULL;
	int err = vmlinux_load(&mem, img->data, size, &zp, &ki, &why);
	assert_true(err < 0);
	assert_non_null(why);
	assert_non_null(strstr(why, reason));
	guest_mem_destroy(&mem);
}

static void test_malformed_headers_are_refused(void **state)
{
	(void)state;
	struct elf_image img;

	make_elf(&img);
	img.eh->e_machine = EM_AARCH64;
	expect_refused(&img, sizeof(img.data), "not a 64-bit x86 ELF");
	make_elf(&img);
	img.eh->e_phnum = 60000;
	expect_refused(&img, sizeof(img.data), "truncated ELF program headers");
	make_elf(&img);
	img.ph[0].p_filesz = TEXT_BYTES + 1; /* past the file's end */
	expect_refused(&img, sizeof(img.data), "outside the file");
	make_elf(&img);
	img.ph[0].p_offset = UINT64_MAX - 2;
	expect_refused(&img, sizeof(img.data), "outside the file");
	make_elf(&img);
	img.ph[0].p_paddr = 0x7000; /* the zero page */
	expect_refused(&img, sizeof(img.data), "address fsvm keeps");
	make_elf(&img);
	img.ph[0].p_paddr = UINT64_MAX - 0x1000; /* wraps */
	expect_refused(&img, sizeof(img.data), "address fsvm keeps");
	make_elf(&img);
	img.ph[0].p_paddr = 1ULL << 40; /* beyond RAM */
	expect_refused(&img, sizeof(img.data), "guest RAM too small");
	make_elf(&img);
	img.eh->e_entry = TEXT_PADDR + TEXT_BYTES; /* in the bss */
	expect_refused(&img, sizeof(img.data), "entry point outside");
	make_elf(&img);
	expect_refused(&img, 20, "not a 64-bit x86 ELF");
	assert_false(vmlinux_is_elf((const uint8_t *)"MZ\0\0", 4));
}

int main(void)
{
	const struct CMUnitTest vmlinux[] = {
		cmocka_unit_test(test_segments_land_at_their_physical_addresses),
		cmocka_unit_test(test_malformed_headers_are_refused),
	};
	return cmocka_run_group_tests(vmlinux, NULL, NULL);
}
