/* Unit tests for vmm/boot: bzImage, initrd, cmdline, e820, page tables, entry state. */
#include <asm/e820.h>
#include <asm/processor-flags.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/boot.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define PAGE 0x1000ULL
#define HDR_OFFSET 0x1f1
#define HDR_END (HDR_OFFSET + sizeof(struct setup_header))
#define KERNEL_BYTES 0x2000
#define PREF_ADDR 0x1000000ULL
#define INIT_SIZE 0x400000U
#define INITRD_MAX 0x7fffffffU
#define EBDA_HOLE (BOOT_HIGH_MEM - BOOT_EBDA_ADDR)

struct image {
	uint8_t *data;
	size_t size;
	size_t setup_size;
};

static struct setup_header good_header(void)
{
	return (struct setup_header){
		.setup_sects = 4,
		.syssize = KERNEL_BYTES / 16,
		.boot_flag = 0xaa55,
		/* jmp rel8 over the header: 0x202 + rel8 == end of header */
		.jump = 0xeb | (uint16_t)((HDR_END - 0x202) << 8),
		.header = 0x53726448, /* "HdrS" */
		.version = 0x020f,
		.loadflags = LOADED_HIGH,
		.kernel_alignment = 0x200000,
		.relocatable_kernel = 1,
		.xloadflags = XLF_KERNEL_64,
		.pref_address = PREF_ADDR,
		.init_size = INIT_SIZE,
		.cmdline_size = 2048,
		.initrd_addr_max = INITRD_MAX,
	};
}

static uint8_t kernel_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

/* A bzImage: boot sector and setup sectors (header at 0x1f1), then
 * kernel_bytes of protected-mode kernel. hdr->syssize is left as given. */
static struct image make_image(const struct setup_header *hdr,
			       size_t kernel_bytes)
{
	struct image img;
	size_t sects = hdr->setup_sects ? hdr->setup_sects : 4;
	img.setup_size = (sects + 1) * 512;
	img.size = img.setup_size + kernel_bytes;
	img.data = calloc(1, img.size);
	assert_non_null(img.data);
	memcpy(img.data + HDR_OFFSET, hdr, sizeof(*hdr));
	for (size_t i = 0; i < kernel_bytes; i++)
		img.data[img.setup_size + i] = kernel_byte(i);
	return img;
}

static struct guest_mem new_mem(uint64_t size)
{
	struct guest_mem mem;
	assert_int_equal(guest_mem_init(&mem, size, RAM_LOW_LIMIT, RAM_HIGH_START), 0);
	return mem;
}

static struct guest_mem small_mem(uint8_t *buf, uint64_t size)
{
	struct guest_mem mem = {0};
	assert_int_equal(guest_mem_add(&mem, 0, size, buf), 0);
	return mem;
}

static int load_header(const struct guest_mem *mem,
		       const struct setup_header *hdr, struct boot_params *zp,
		       struct kernel_info *ki, const char **why)
{
	struct image img = make_image(hdr, KERNEL_BYTES);
	int ret = bzimage_load(mem, img.data, img.size, zp, ki, why);
	free(img.data);
	return ret;
}

/* Loads the good image into mem; the kernel info every later step needs. */
static struct kernel_info load_good(const struct guest_mem *mem,
				    struct boot_params *zp)
{
	struct setup_header hdr = good_header();
	struct kernel_info ki;
	const char *why = NULL;
	assert_int_equal(load_header(mem, &hdr, zp, &ki, &why), 0);
	return ki;
}

static void expect_rejected(const struct setup_header *hdr, int err,
			    const char *reason_word)
{
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp;
	struct kernel_info ki;
	const char *why = NULL;
	assert_int_equal(load_header(&mem, hdr, &zp, &ki, &why), err);
	assert_non_null(why);
	assert_non_null(strstr(why, reason_word));
	guest_mem_destroy(&mem);
}

static void test_load_copies_kernel(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(512 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	assert_int_equal(ki.load_addr, PREF_ADDR);
	assert_int_equal(ki.entry, PREF_ADDR + 0x200);
	assert_int_equal(ki.end, PREF_ADDR + INIT_SIZE);
	assert_int_equal(ki.cmdline_max, 2048);
	assert_int_equal(ki.initrd_max, INITRD_MAX);
	const uint8_t *k = guest_ptr(&mem, PREF_ADDR, KERNEL_BYTES + 1);
	assert_non_null(k);
	for (size_t i = 0; i < KERNEL_BYTES; i++)
		assert_int_equal(k[i], kernel_byte(i));
	assert_int_equal(k[KERNEL_BYTES], 0); /* nothing past the kernel */
	guest_mem_destroy(&mem);
}

static void test_load_fills_zero_page(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(512 * MIB);
	struct boot_params zp;
	memset(&zp, 0xcc, sizeof(zp));
	load_good(&mem, &zp);
	assert_int_equal(zp.hdr.header, 0x53726448);
	assert_int_equal(zp.hdr.version, 0x020f);
	assert_int_equal(zp.hdr.boot_flag, 0xaa55);
	assert_int_equal(zp.hdr.init_size, INIT_SIZE);
	assert_int_equal(zp.hdr.type_of_loader, 0xff);
	assert_true(zp.hdr.loadflags & CAN_USE_HEAP);
	assert_true(zp.hdr.loadflags & LOADED_HIGH);
	assert_int_equal(zp.hdr.heap_end_ptr, 0xfe00);
	assert_int_equal(zp.hdr.code32_start, PREF_ADDR);
	/* Everything outside the header starts out zero. */
	assert_int_equal(zp.e820_entries, 0);
	assert_int_equal(zp.ext_ramdisk_image, 0);
	assert_int_equal(zp.screen_info.orig_video_mode, 0);
	guest_mem_destroy(&mem);
}

static void test_load_non_relocatable_at_1m(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	hdr.relocatable_kernel = 0;
	struct boot_params zp;
	struct kernel_info ki;
	const char *why;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	assert_int_equal(ki.load_addr, 0x100000);
	assert_int_equal(ki.entry, 0x100200);
	assert_int_equal(zp.hdr.code32_start, 0x100000);
	assert_int_equal(*(uint8_t *)guest_ptr(&mem, 0x100001, 1),
			 kernel_byte(1));
	guest_mem_destroy(&mem);
}

static void test_load_low_pref_address_at_1m(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	hdr.pref_address = 0x80000;
	struct boot_params zp;
	struct kernel_info ki;
	const char *why;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	assert_int_equal(ki.load_addr, 0x100000);
	guest_mem_destroy(&mem);
}

static void test_load_zero_setup_sects_means_four(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	hdr.setup_sects = 0;
	struct boot_params zp;
	struct kernel_info ki;
	const char *why;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	const uint8_t *k = guest_ptr(&mem, PREF_ADDR, KERNEL_BYTES);
	assert_int_equal(k[0], kernel_byte(0));
	assert_int_equal(k[KERNEL_BYTES - 1], kernel_byte(KERNEL_BYTES - 1));
	guest_mem_destroy(&mem);
}

/* Only the header's own length (from the jump at 0x200) is read: a
 * header that ends before pref_address leaves it, and init_size, zero. */
static void test_load_honours_header_length(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	hdr.jump = 0xeb | ((0x258 - 0x202) << 8);
	struct boot_params zp;
	struct kernel_info ki;
	const char *why;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	assert_int_equal(zp.hdr.pref_address, 0);
	assert_int_equal(zp.hdr.init_size, 0);
	assert_int_equal(zp.hdr.cmdline_size, 2048); /* at 0x238: inside */
	assert_int_equal(ki.load_addr, 0x100000);
	assert_int_equal(ki.end, 0x100000 + KERNEL_BYTES);
	guest_mem_destroy(&mem);
}

static void test_load_end_covers_kernel_when_init_size_small(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	hdr.init_size = 0x100;
	hdr.cmdline_size = 0;
	struct boot_params zp;
	struct kernel_info ki;
	const char *why;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	assert_int_equal(ki.end, PREF_ADDR + KERNEL_BYTES);
	assert_int_equal(ki.cmdline_max, 255); /* protocol default */
	guest_mem_destroy(&mem);
}

static void test_load_rejects_too_small(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	struct image img = make_image(&hdr, KERNEL_BYTES);
	struct boot_params zp;
	struct kernel_info ki;
	const char *why = NULL;
	/* An exact-size heap copy lets ASan catch any read past the end. */
	size_t size = sizeof(struct boot_params) - 1;
	uint8_t *small = malloc(size);
	memcpy(small, img.data, size);
	assert_int_equal(bzimage_load(&mem, small, size, &zp, &ki, &why),
			 -ENOEXEC);
	assert_non_null(strstr(why, "too small"));
	free(small);
	free(img.data);
	guest_mem_destroy(&mem);
}

static void test_load_rejects_bad_boot_flag(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.boot_flag = 0x55aa;
	expect_rejected(&hdr, -ENOEXEC, "not a bzImage");
}

static void test_load_rejects_bad_hdrs_magic(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.header = 0x53726449;
	expect_rejected(&hdr, -ENOEXEC, "not a bzImage");
}

static void test_load_rejects_short_jump_hiding_magic(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.jump = 0x00eb; /* header would end at 0x202, before "HdrS" */
	expect_rejected(&hdr, -ENOEXEC, "not a bzImage");
}

static void test_load_rejects_old_protocol(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.version = 0x020b;
	expect_rejected(&hdr, -ENOEXEC, "older than 2.12");
}

static void test_load_accepts_protocol_2_12(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	hdr.version = 0x020c;
	struct boot_params zp;
	struct kernel_info ki;
	const char *why;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	guest_mem_destroy(&mem);
}

static void test_load_rejects_no_64bit_entry(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.xloadflags = XLF_CAN_BE_LOADED_ABOVE_4G;
	expect_rejected(&hdr, -ENOEXEC, "64-bit");
}

static void test_load_rejects_truncated_kernel(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.syssize = KERNEL_BYTES / 16 + 1;
	expect_rejected(&hdr, -ENOEXEC, "truncated");
}

static void test_load_rejects_empty_kernel(void **state)
{
	(void)state;
	struct setup_header hdr = good_header();
	hdr.syssize = 0;
	expect_rejected(&hdr, -ENOEXEC, "truncated");
}

static void test_load_rejects_setup_past_end_of_file(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct setup_header hdr = good_header();
	struct image img = make_image(&hdr, KERNEL_BYTES);
	/* Claim more setup sectors than the file holds. */
	img.data[HDR_OFFSET] = 40;
	struct boot_params zp;
	struct kernel_info ki;
	const char *why = NULL;
	assert_int_equal(bzimage_load(&mem, img.data, img.size, &zp, &ki, &why),
			 -ENOEXEC);
	assert_non_null(strstr(why, "truncated"));
	free(img.data);
	guest_mem_destroy(&mem);
}

static void test_load_rejects_ram_too_small(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(32 * MIB);
	struct setup_header hdr = good_header();
	hdr.init_size = 16 * MIB + 1; /* load at 16 MiB: one byte too many */
	struct boot_params zp;
	struct kernel_info ki;
	const char *why = NULL;
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), -ENOMEM);
	assert_non_null(strstr(why, "too small"));
	assert_int_equal(*(uint8_t *)guest_ptr(&mem, PREF_ADDR, 1), 0);
	hdr.init_size = 16 * MIB; /* exactly fits */
	assert_int_equal(load_header(&mem, &hdr, &zp, &ki, &why), 0);
	assert_int_equal(ki.end, 32 * MIB);
	guest_mem_destroy(&mem);
}

static void expect_initrd_within(const struct boot_params *zp, uint64_t gpa,
				 uint64_t size, uint64_t top,
				 const struct kernel_info *ki)
{
	assert_int_equal(gpa % PAGE, 0);
	assert_true(gpa >= ki->end);
	assert_true(gpa + size <= top);
	assert_true(gpa + size > top - PAGE); /* as high as possible */
	assert_int_equal(zp->hdr.ramdisk_image, gpa);
	assert_int_equal(zp->hdr.ramdisk_size, size);
	assert_int_equal(zp->ext_ramdisk_image, 0);
	assert_int_equal(zp->ext_ramdisk_size, 0);
}

static void test_initrd_at_top_of_low_ram(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(512 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	const uint64_t size = MIB + 123;
	uint64_t gpa = 0;
	const char *why = NULL;
	assert_int_equal(boot_place_initrd(&mem, &ki, size, &zp, &gpa, &why), 0);
	expect_initrd_within(&zp, gpa, size, 512 * MIB, &ki);
	assert_non_null(guest_ptr(&mem, gpa, size));
	guest_mem_destroy(&mem);
}

static void test_initrd_below_initrd_max(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(512 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	ki.initrd_max = 256 * MIB - 1;
	const uint64_t size = 3 * PAGE;
	uint64_t gpa;
	const char *why;
	assert_int_equal(boot_place_initrd(&mem, &ki, size, &zp, &gpa, &why), 0);
	assert_int_equal(gpa, 256 * MIB - 3 * PAGE); /* last byte at the max */
	expect_initrd_within(&zp, gpa, size, 256 * MIB, &ki);
	guest_mem_destroy(&mem);
}

static void test_initrd_with_4g_ram_stays_below_2g(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(4 * GIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	const uint64_t size = 10 * MIB + 1;
	uint64_t gpa;
	const char *why;
	assert_int_equal(boot_place_initrd(&mem, &ki, size, &zp, &gpa, &why), 0);
	expect_initrd_within(&zp, gpa, size, (uint64_t)INITRD_MAX + 1, &ki);
	guest_mem_destroy(&mem);
}

static void test_initrd_fills_space_above_kernel(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(512 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	const uint64_t room = 512 * MIB - ki.end; /* ki.end is page-aligned */
	uint64_t gpa = 0;
	const char *why = NULL;
	assert_int_equal(boot_place_initrd(&mem, &ki, room, &zp, &gpa, &why), 0);
	assert_int_equal(gpa, ki.end);
	assert_int_equal(boot_place_initrd(&mem, &ki, room + 1, &zp, &gpa, &why),
			 -ENOMEM);
	assert_non_null(strstr(why, "initrd"));
	guest_mem_destroy(&mem);
}

static void test_initrd_larger_than_ram(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	uint64_t gpa = 0x1234;
	const char *why = NULL;
	assert_int_equal(boot_place_initrd(&mem, &ki, 64 * MIB + 1, &zp, &gpa,
					   &why), -ENOMEM);
	assert_int_equal(boot_place_initrd(&mem, &ki, 1ULL << 40, &zp, &gpa,
					   &why), -ENOMEM);
	assert_int_equal(gpa, 0x1234);
	assert_int_equal(zp.hdr.ramdisk_image, 0);
	guest_mem_destroy(&mem);
}

static void test_cmdline_written(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	const char line[] = "console=ttyS0 quiet panic=-1";
	const char *why = NULL;
	zp.ext_cmd_line_ptr = 7;
	assert_int_equal(boot_set_cmdline(&mem, &ki, line, &zp, &why), 0);
	assert_int_equal(zp.hdr.cmd_line_ptr, BOOT_CMDLINE_ADDR);
	assert_int_equal(zp.ext_cmd_line_ptr, 0);
	assert_memory_equal(guest_ptr(&mem, BOOT_CMDLINE_ADDR, sizeof(line)),
			    line, sizeof(line));
	guest_mem_destroy(&mem);
}

static char *repeat_char(char c, size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void test_cmdline_too_long(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	const char *why = NULL;
	/* cmdline_size counts characters without the NUL (boot.rst). */
	char *fits = repeat_char('a', ki.cmdline_max);
	char *too_long = repeat_char('b', ki.cmdline_max + 1);
	assert_int_equal(boot_set_cmdline(&mem, &ki, fits, &zp, &why), 0);
	assert_int_equal(strlen(guest_ptr(&mem, BOOT_CMDLINE_ADDR, 1)),
			 ki.cmdline_max);
	assert_int_equal(boot_set_cmdline(&mem, &ki, too_long, &zp, &why),
			 -E2BIG);
	assert_non_null(strstr(why, "too long"));
	free(fits);
	free(too_long);
	guest_mem_destroy(&mem);
}

static void test_cmdline_capped_by_loader_area(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp;
	struct kernel_info ki = load_good(&mem, &zp);
	ki.cmdline_max = 1 << 20; /* kernel allows more than the loader has */
	const char *why = NULL;
	char *line = repeat_char('c', BOOT_CMDLINE_MAX);
	assert_int_equal(boot_set_cmdline(&mem, &ki, line, &zp, &why), -E2BIG);
	line[BOOT_CMDLINE_MAX - 1] = '\0';
	assert_int_equal(boot_set_cmdline(&mem, &ki, line, &zp, &why), 0);
	free(line);
	guest_mem_destroy(&mem);
}

static void test_cmdline_needs_ram(void **state)
{
	(void)state;
	static uint8_t low[BOOT_CMDLINE_ADDR];
	struct guest_mem mem = small_mem(low, sizeof(low));
	struct kernel_info ki = {.cmdline_max = 2048};
	struct boot_params zp = {0};
	const char *why = NULL;
	assert_int_equal(boot_set_cmdline(&mem, &ki, "x", &zp, &why), -ENOMEM);
	assert_non_null(why);
	assert_int_equal(zp.hdr.cmd_line_ptr, 0);
}

static void expect_e820(const struct boot_params *zp, unsigned int i,
			uint64_t addr, uint64_t size, uint32_t type)
{
	assert_true(i < zp->e820_entries);
	assert_int_equal(zp->e820_table[i].addr, addr);
	assert_int_equal(zp->e820_table[i].size, size);
	assert_int_equal(zp->e820_table[i].type, type);
}

static uint64_t e820_ram_bytes(const struct boot_params *zp)
{
	uint64_t total = 0;
	for (unsigned int i = 0; i < zp->e820_entries; i++)
		if (zp->e820_table[i].type == E820_RAM)
			total += zp->e820_table[i].size;
	return total;
}

static void test_e820_512m(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(512 * MIB);
	struct boot_params zp = {.e820_entries = 9};
	boot_set_e820(&mem, &zp);
	assert_int_equal(zp.e820_entries, 3);
	expect_e820(&zp, 0, 0, BOOT_EBDA_ADDR, E820_RAM);
	expect_e820(&zp, 1, BOOT_EBDA_ADDR, EBDA_HOLE, E820_RESERVED);
	expect_e820(&zp, 2, BOOT_HIGH_MEM, 512 * MIB - BOOT_HIGH_MEM, E820_RAM);
	assert_int_equal(BOOT_EBDA_ADDR, 0x9fc00);
	assert_int_equal(BOOT_HIGH_MEM, 0x100000);
	guest_mem_destroy(&mem);
}

static void test_e820_4g(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(4 * GIB);
	struct boot_params zp = {0};
	boot_set_e820(&mem, &zp);
	assert_int_equal(zp.e820_entries, 4);
	expect_e820(&zp, 0, 0, BOOT_EBDA_ADDR, E820_RAM);
	expect_e820(&zp, 1, BOOT_EBDA_ADDR, EBDA_HOLE, E820_RESERVED);
	expect_e820(&zp, 2, BOOT_HIGH_MEM, RAM_LOW_LIMIT - BOOT_HIGH_MEM,
		    E820_RAM);
	expect_e820(&zp, 3, RAM_HIGH_START, 4 * GIB - RAM_LOW_LIMIT,
		    E820_RAM);
	guest_mem_destroy(&mem);
}

static void test_e820_total_ram(void **state)
{
	(void)state;
	const uint64_t sizes[] = {64 * MIB, 512 * MIB, RAM_LOW_LIMIT,
				  4 * GIB + 2 * MIB};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct guest_mem mem = new_mem(sizes[i]);
		struct boot_params zp = {0};
		boot_set_e820(&mem, &zp);
		assert_int_equal(e820_ram_bytes(&zp), sizes[i] - EBDA_HOLE);
		/* Sorted and disjoint. */
		for (unsigned int j = 1; j < zp.e820_entries; j++)
			assert_true(zp.e820_table[j - 1].addr +
					    zp.e820_table[j - 1].size <=
				    zp.e820_table[j].addr);
		guest_mem_destroy(&mem);
	}
}

static void test_e820_region_above_1m_only(void **state)
{
	(void)state;
	static uint8_t buf[0x1000];
	struct guest_mem mem = {0};
	assert_int_equal(guest_mem_add(&mem, 0x200000, sizeof(buf), buf), 0);
	struct boot_params zp = {0};
	boot_set_e820(&mem, &zp);
	assert_int_equal(zp.e820_entries, 1);
	expect_e820(&zp, 0, 0x200000, sizeof(buf), E820_RAM);
}

static const uint64_t *guest_u64(const struct guest_mem *mem, uint64_t gpa,
				 size_t count)
{
	const uint64_t *p = guest_ptr(mem, gpa, count * sizeof(uint64_t));
	assert_non_null(p);
	return p;
}

static void test_tables_identity_map(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	/* Stale bytes where the tables go must not survive. */
	memset(guest_ptr(&mem, BOOT_PML4_ADDR, 6 * PAGE), 0xff, 6 * PAGE);
	struct boot_params zp = {0};
	assert_int_equal(boot_write_tables(&mem, &zp), 0);
	const uint64_t *pml4 = guest_u64(&mem, BOOT_PML4_ADDR, 512);
	const uint64_t *pdpt = guest_u64(&mem, BOOT_PDPT_ADDR, 512);
	const uint64_t *pd = guest_u64(&mem, BOOT_PD_ADDR, 4 * 512);
	assert_int_equal(pml4[0], BOOT_PDPT_ADDR | 0x3);
	for (int i = 1; i < 512; i++)
		assert_int_equal(pml4[i], 0);
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(pdpt[i], (BOOT_PD_ADDR + i * PAGE) | 0x3);
	for (int i = 4; i < 512; i++)
		assert_int_equal(pdpt[i], 0);
	/* 2 MiB pages (PS), present, writable, mapping va == pa. */
	assert_int_equal(pd[0], 0x83);
	assert_int_equal(pd[1], 0x200083);
	assert_int_equal(pd[511], (511ULL << 21) | 0x83);
	assert_int_equal(pd[512], GIB | 0x83);
	assert_int_equal(pd[1536], 3 * GIB | 0x83);
	assert_int_equal(pd[2047], (4 * GIB - 2 * MIB) | 0x83);
	guest_mem_destroy(&mem);
}

static void test_tables_zero_page_copied(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp;
	load_good(&mem, &zp);
	boot_set_e820(&mem, &zp);
	zp.hdr.cmd_line_ptr = BOOT_CMDLINE_ADDR;
	assert_int_equal(boot_write_tables(&mem, &zp), 0);
	/* Written before the page tables: they must not overlap it. */
	assert_memory_equal(guest_ptr(&mem, BOOT_ZERO_PAGE_ADDR, sizeof(zp)),
			    &zp, sizeof(zp));
	guest_mem_destroy(&mem);
}

static void test_tables_need_ram(void **state)
{
	(void)state;
	static uint8_t low[BOOT_PD_ADDR + 2 * PAGE]; /* two PDs short */
	struct guest_mem mem = small_mem(low, sizeof(low));
	struct boot_params zp = {0};
	assert_int_equal(boot_write_tables(&mem, &zp), -EFAULT);
}

/* Decodes the access byte and flags of a GDT descriptor into the fields
 * KVM's segment uses, so the table and the registers can be compared. */
static void expect_descriptor_matches(uint64_t desc,
				      const struct kvm_segment *seg)
{
	assert_int_equal((desc >> 40) & 0xf, seg->type);
	assert_int_equal((desc >> 44) & 1, seg->s);
	assert_int_equal((desc >> 45) & 3, seg->dpl);
	assert_int_equal((desc >> 47) & 1, seg->present);
	assert_int_equal((desc >> 53) & 1, seg->l);
	assert_int_equal((desc >> 54) & 1, seg->db);
	assert_int_equal((desc >> 55) & 1, seg->g);
}

static void test_tables_gdt_matches_sregs(void **state)
{
	(void)state;
	struct guest_mem mem = new_mem(64 * MIB);
	struct boot_params zp = {0};
	assert_int_equal(boot_write_tables(&mem, &zp), 0);
	struct kvm_sregs sregs = {0};
	boot_sregs(&sregs);
	const uint64_t *gdt = guest_u64(&mem, BOOT_GDT_ADDR, 4);
	assert_int_equal(sregs.gdt.base, BOOT_GDT_ADDR);
	assert_int_equal(sregs.gdt.limit, 4 * 8 - 1);
	assert_int_equal(gdt[0], 0);
	assert_int_equal(gdt[1], 0);
	assert_int_equal(gdt[BOOT_CODE_SEL / 8], 0x00af9b000000ffffULL);
	assert_int_equal(gdt[BOOT_DATA_SEL / 8], 0x00cf93000000ffffULL);
	expect_descriptor_matches(gdt[sregs.cs.selector / 8], &sregs.cs);
	expect_descriptor_matches(gdt[sregs.ds.selector / 8], &sregs.ds);
	guest_mem_destroy(&mem);
}

static void test_sregs_long_mode(void **state)
{
	(void)state;
	struct kvm_sregs sregs;
	memset(&sregs, 0xff, sizeof(sregs));
	boot_sregs(&sregs);
	assert_true(sregs.cr0 & X86_CR0_PE);
	assert_true(sregs.cr0 & X86_CR0_PG);
	assert_true(sregs.cr4 & X86_CR4_PAE);
	assert_int_equal(sregs.cr3, BOOT_PML4_ADDR);
	assert_int_equal(sregs.efer & ((1 << 8) | (1 << 10)),
			 (1 << 8) | (1 << 10)); /* LME, LMA */
	assert_int_equal(sregs.cs.selector, BOOT_CODE_SEL);
	assert_int_equal(sregs.cs.l, 1);
	assert_int_equal(sregs.cs.db, 0);
	assert_int_equal(sregs.cs.present, 1);
	assert_int_equal(sregs.cs.type & 0x8, 0x8); /* code */
	const struct kvm_segment *data[] = {&sregs.ds, &sregs.es, &sregs.fs,
					    &sregs.gs, &sregs.ss};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(data[i]->selector, BOOT_DATA_SEL);
		assert_int_equal(data[i]->type & 0xa, 0x2); /* data, writable */
		assert_int_equal(data[i]->present, 1);
		assert_int_equal(data[i]->base, 0);
	}
	assert_int_equal(sregs.tr.present, 1);
	assert_int_equal(sregs.tr.type, 0xb);
	assert_int_equal(sregs.idt.limit, 0);
}

static void test_regs_entry(void **state)
{
	(void)state;
	struct kernel_info ki = {.entry = PREF_ADDR + 0x200};
	struct kvm_regs regs;
	memset(&regs, 0xff, sizeof(regs));
	boot_regs(&regs, &ki);
	assert_int_equal(regs.rip, PREF_ADDR + 0x200);
	assert_int_equal(regs.rsi, BOOT_ZERO_PAGE_ADDR);
	assert_int_equal(regs.rsp, BOOT_STACK_ADDR);
	assert_int_equal(regs.rflags, X86_EFLAGS_FIXED); /* IF clear */
	assert_int_equal(regs.rax, 0);
	assert_int_equal(regs.rdi, 0);
	assert_int_equal(regs.rbp, 0);
}

int main(void)
{
	const struct CMUnitTest boot[] = {
		cmocka_unit_test(test_load_copies_kernel),
		cmocka_unit_test(test_load_fills_zero_page),
		cmocka_unit_test(test_load_non_relocatable_at_1m),
		cmocka_unit_test(test_load_low_pref_address_at_1m),
		cmocka_unit_test(test_load_zero_setup_sects_means_four),
		cmocka_unit_test(test_load_honours_header_length),
		cmocka_unit_test(test_load_end_covers_kernel_when_init_size_small),
		cmocka_unit_test(test_load_rejects_too_small),
		cmocka_unit_test(test_load_rejects_bad_boot_flag),
		cmocka_unit_test(test_load_rejects_bad_hdrs_magic),
		cmocka_unit_test(test_load_rejects_short_jump_hiding_magic),
		cmocka_unit_test(test_load_rejects_old_protocol),
		cmocka_unit_test(test_load_accepts_protocol_2_12),
		cmocka_unit_test(test_load_rejects_no_64bit_entry),
		cmocka_unit_test(test_load_rejects_truncated_kernel),
		cmocka_unit_test(test_load_rejects_empty_kernel),
		cmocka_unit_test(test_load_rejects_setup_past_end_of_file),
		cmocka_unit_test(test_load_rejects_ram_too_small),
		cmocka_unit_test(test_initrd_at_top_of_low_ram),
		cmocka_unit_test(test_initrd_below_initrd_max),
		cmocka_unit_test(test_initrd_with_4g_ram_stays_below_2g),
		cmocka_unit_test(test_initrd_fills_space_above_kernel),
		cmocka_unit_test(test_initrd_larger_than_ram),
		cmocka_unit_test(test_cmdline_written),
		cmocka_unit_test(test_cmdline_too_long),
		cmocka_unit_test(test_cmdline_capped_by_loader_area),
		cmocka_unit_test(test_cmdline_needs_ram),
		cmocka_unit_test(test_e820_512m),
		cmocka_unit_test(test_e820_4g),
		cmocka_unit_test(test_e820_total_ram),
		cmocka_unit_test(test_e820_region_above_1m_only),
		cmocka_unit_test(test_tables_identity_map),
		cmocka_unit_test(test_tables_zero_page_copied),
		cmocka_unit_test(test_tables_need_ram),
		cmocka_unit_test(test_tables_gdt_matches_sregs),
		cmocka_unit_test(test_sregs_long_mode),
		cmocka_unit_test(test_regs_entry),
	};
	return cmocka_run_group_tests(boot, NULL, NULL);
}
