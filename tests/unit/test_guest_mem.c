/* Unit tests for vmm/guest_mem: region bookkeeping, guest_ptr bounds, RAM layout. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/guest_mem.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)
#define REGION_SIZE 0x10000ULL
/* An x86-like hole for devices below 4 GiB. */
#define HOLE_START 0xc0000000ULL
#define HOLE_END 0x100000000ULL

static uint8_t buf_a[REGION_SIZE], buf_b[REGION_SIZE], buf_c[REGION_SIZE];

static struct guest_mem empty_mem(void)
{
	return (struct guest_mem){0};
}

/* RAM at [0, 64K) and [128K, 192K), then [192K, 256K) right after the
 * second: a hole between the first two, no gap between the last two. */
static struct guest_mem three_regions(void)
{
	struct guest_mem mem = empty_mem();
	assert_int_equal(guest_mem_add(&mem, 0, REGION_SIZE, buf_a), 0);
	assert_int_equal(guest_mem_add(&mem, 0x20000, REGION_SIZE, buf_b), 0);
	assert_int_equal(guest_mem_add(&mem, 0x30000, REGION_SIZE, buf_c), 0);
	return mem;
}

static void test_add_rejects_zero_size(void **state)
{
	(void)state;
	struct guest_mem mem = empty_mem();
	assert_int_equal(guest_mem_add(&mem, 0x1000, 0, buf_a), -EINVAL);
	assert_int_equal(mem.nr_regions, 0);
}

static void test_add_rejects_wrap(void **state)
{
	(void)state;
	struct guest_mem mem = empty_mem();
	assert_int_equal(guest_mem_add(&mem, UINT64_MAX - 0xfff, 0x2000, buf_a),
			 -EINVAL);
	assert_int_equal(guest_mem_add(&mem, UINT64_MAX, 2, buf_a), -EINVAL);
	assert_int_equal(guest_mem_add(&mem, 1, UINT64_MAX, buf_a), -EINVAL);
	assert_int_equal(mem.nr_regions, 0);
	/* The highest region whose end is representable is fine. */
	assert_int_equal(guest_mem_add(&mem, UINT64_MAX - 0x1fff, 0x1000, buf_a),
			 0);
}

static void test_add_rejects_overlap(void **state)
{
	(void)state;
	struct guest_mem mem = empty_mem();
	assert_int_equal(guest_mem_add(&mem, 0x1000, 0x2000, buf_a), 0);
	assert_int_equal(guest_mem_add(&mem, 0x1000, 0x2000, buf_b), -EEXIST);
	assert_int_equal(guest_mem_add(&mem, 0x0, 0x1001, buf_b), -EEXIST);
	assert_int_equal(guest_mem_add(&mem, 0x2fff, 0x1000, buf_b), -EEXIST);
	assert_int_equal(guest_mem_add(&mem, 0x1800, 0x100, buf_b), -EEXIST);
	assert_int_equal(guest_mem_add(&mem, 0x0, 0x10000, buf_b), -EEXIST);
	assert_int_equal(mem.nr_regions, 1);
	/* Touching either end is not an overlap. */
	assert_int_equal(guest_mem_add(&mem, 0x0, 0x1000, buf_b), 0);
	assert_int_equal(guest_mem_add(&mem, 0x3000, 0x1000, buf_c), 0);
	assert_int_equal(mem.nr_regions, 3);
}

static void test_add_rejects_when_full(void **state)
{
	(void)state;
	struct guest_mem mem = empty_mem();
	for (uint64_t i = 0; i < GUEST_MEM_MAX_REGIONS; i++)
		assert_int_equal(guest_mem_add(&mem, i * 0x1000, 0x1000, buf_a),
				 0);
	assert_int_equal(guest_mem_add(&mem, 0x100000, 0x1000, buf_a), -ENOSPC);
	assert_int_equal(mem.nr_regions, GUEST_MEM_MAX_REGIONS);
}

static void test_add_records_region(void **state)
{
	(void)state;
	struct guest_mem mem = empty_mem();
	assert_int_equal(guest_mem_add(&mem, 0x5000, 0x3000, buf_b), 0);
	assert_int_equal(mem.nr_regions, 1);
	assert_int_equal(mem.regions[0].gpa, 0x5000);
	assert_int_equal(mem.regions[0].size, 0x3000);
	assert_ptr_equal(mem.regions[0].hva, buf_b);
}

static void test_ptr_inside_regions(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	assert_ptr_equal(guest_ptr(&mem, 0, 1), buf_a);
	assert_ptr_equal(guest_ptr(&mem, 0, REGION_SIZE), buf_a);
	assert_ptr_equal(guest_ptr(&mem, 0x1234, 16), buf_a + 0x1234);
	assert_ptr_equal(guest_ptr(&mem, REGION_SIZE - 1, 1),
			 buf_a + REGION_SIZE - 1);
	assert_ptr_equal(guest_ptr(&mem, 0x20000, 1), buf_b);
	assert_ptr_equal(guest_ptr(&mem, 0x2ffff, 1), buf_b + REGION_SIZE - 1);
	assert_ptr_equal(guest_ptr(&mem, 0x30000, REGION_SIZE), buf_c);
}

static void test_ptr_past_the_end(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	assert_null(guest_ptr(&mem, 0, REGION_SIZE + 1));
	assert_null(guest_ptr(&mem, REGION_SIZE - 1, 2));
	assert_null(guest_ptr(&mem, REGION_SIZE, 1));
	assert_null(guest_ptr(&mem, 0x40000, 1));
	assert_null(guest_ptr(&mem, 0x3ffff, 2));
}

static void test_ptr_zero_length(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	assert_ptr_equal(guest_ptr(&mem, 0, 0), buf_a);
	assert_ptr_equal(guest_ptr(&mem, REGION_SIZE - 1, 0),
			 buf_a + REGION_SIZE - 1);
	/* One past the end of a region is outside it, even for len 0. */
	assert_null(guest_ptr(&mem, REGION_SIZE, 0));
	assert_null(guest_ptr(&mem, 0x40000, 0));
	assert_null(guest_ptr(&mem, UINT64_MAX, 0));
}

static void test_ptr_in_hole(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	assert_null(guest_ptr(&mem, 0x18000, 1));
	assert_null(guest_ptr(&mem, 0x1ffff, 1));
	assert_null(guest_ptr(&mem, 0x1ffff, 2)); /* hole into region b */
}

static void test_ptr_straddling_regions(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	/* b and c are contiguous in guest-physical space but not on the host. */
	assert_null(guest_ptr(&mem, 0x2ffff, 2));
	assert_null(guest_ptr(&mem, 0x20000, 2 * REGION_SIZE));
	assert_null(guest_ptr(&mem, 0, 0x40000));
}

static void test_ptr_length_overflow(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	assert_null(guest_ptr(&mem, 0x100, UINT64_MAX));
	assert_null(guest_ptr(&mem, 0x20010, UINT64_MAX - 0xf));
	assert_null(guest_ptr(&mem, UINT64_MAX, 1));
	assert_null(guest_ptr(&mem, UINT64_MAX, UINT64_MAX));
}

static void test_ptr_near_top_of_address_space(void **state)
{
	(void)state;
	struct guest_mem mem = empty_mem();
	const uint64_t top = UINT64_MAX - 0x1fff; /* region [top, top+4K) */
	assert_int_equal(guest_mem_add(&mem, top, 0x1000, buf_a), 0);
	assert_ptr_equal(guest_ptr(&mem, top + 0xfff, 1), buf_a + 0xfff);
	assert_ptr_equal(guest_ptr(&mem, top, 0x1000), buf_a);
	assert_null(guest_ptr(&mem, top + 8, UINT64_MAX - 7));
	assert_null(guest_ptr(&mem, top + 0xfff, 0x1001));
	assert_null(guest_ptr(&mem, UINT64_MAX - 0xf, 0x10));
}

static void test_write_read_round_trip(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	const char msg[] = "hello, guest";
	char back[sizeof(msg)] = {0};
	assert_int_equal(guest_write(&mem, 0x20100, msg, sizeof(msg)), 0);
	assert_memory_equal(buf_b + 0x100, msg, sizeof(msg));
	assert_int_equal(guest_read(&mem, back, 0x20100, sizeof(back)), 0);
	assert_memory_equal(back, msg, sizeof(msg));
}

static void test_write_read_efault(void **state)
{
	(void)state;
	struct guest_mem mem = three_regions();
	uint8_t data[4] = {1, 2, 3, 4}, back[4] = {9, 9, 9, 9};
	memset(buf_a, 0, REGION_SIZE);
	assert_int_equal(guest_write(&mem, REGION_SIZE - 2, data, 4), -EFAULT);
	assert_int_equal(buf_a[REGION_SIZE - 2], 0); /* nothing half-written */
	assert_int_equal(guest_write(&mem, 0x18000, data, 4), -EFAULT);
	assert_int_equal(guest_write(&mem, 0x2fffe, data, 4), -EFAULT);
	assert_int_equal(guest_read(&mem, back, 0x18000, 4), -EFAULT);
	assert_int_equal(guest_read(&mem, back, 0x3fffd, 4), -EFAULT);
	assert_int_equal(guest_read(&mem, back, UINT64_MAX - 1, 4), -EFAULT);
	assert_memory_equal(back, ((uint8_t[]){9, 9, 9, 9}), 4);
}

static void test_init_below_low_limit(void **state)
{
	(void)state;
	struct guest_mem mem;
	assert_int_equal(guest_mem_init(&mem, 64 * MIB, HOLE_START, HOLE_END), 0);
	assert_non_null(mem.base);
	/* 2 MiB-aligned, so guest huge pages can be host huge pages. */
	assert_int_equal((uintptr_t)mem.base % (2 * MIB), 0);
	assert_int_equal(mem.ram_size, 64 * MIB);
	assert_int_equal(mem.nr_regions, 1);
	assert_int_equal(mem.regions[0].gpa, 0);
	assert_int_equal(mem.regions[0].size, 64 * MIB);
	assert_ptr_equal(mem.regions[0].hva, mem.base);
	assert_ptr_equal(guest_ptr(&mem, 64 * MIB - 1, 1),
			 mem.base + 64 * MIB - 1);
	assert_null(guest_ptr(&mem, 64 * MIB, 1));
	uint32_t v = 0xdeadbeef, back = 0;
	assert_int_equal(guest_write(&mem, 64 * MIB - 4, &v, 4), 0);
	assert_int_equal(guest_read(&mem, &back, 64 * MIB - 4, 4), 0);
	assert_int_equal(back, v);
	guest_mem_destroy(&mem);
	assert_null(mem.base);
	assert_int_equal(mem.nr_regions, 0);
}

static void test_init_exactly_low_limit(void **state)
{
	(void)state;
	struct guest_mem mem;
	assert_int_equal(guest_mem_init(&mem, HOLE_START, HOLE_START, HOLE_END), 0);
	assert_int_equal(mem.nr_regions, 1);
	assert_int_equal(mem.regions[0].size, HOLE_START);
	assert_null(guest_ptr(&mem, HOLE_END, 1));
	guest_mem_destroy(&mem);
}

static void test_init_above_low_limit(void **state)
{
	(void)state;
	struct guest_mem mem;
	const uint64_t ram = 4 * GIB + 16 * MIB;
	const uint64_t high = ram - HOLE_START;
	assert_int_equal(guest_mem_init(&mem, ram, HOLE_START, HOLE_END), 0);
	assert_int_equal(mem.ram_size, ram);
	assert_int_equal(mem.nr_regions, 2);
	assert_int_equal(mem.regions[0].gpa, 0);
	assert_int_equal(mem.regions[0].size, HOLE_START);
	assert_int_equal(mem.regions[1].gpa, HOLE_END);
	assert_int_equal(mem.regions[1].size, high);
	assert_ptr_equal(mem.regions[1].hva, mem.base + HOLE_START);

	/* The PCI hole is not RAM, and nothing may cross into it. */
	assert_null(guest_ptr(&mem, HOLE_START, 1));
	assert_null(guest_ptr(&mem, HOLE_END - 1, 1));
	assert_null(guest_ptr(&mem, HOLE_START - 1, 2));
	assert_ptr_equal(guest_ptr(&mem, HOLE_END, 1),
			 mem.base + HOLE_START);
	assert_ptr_equal(guest_ptr(&mem, HOLE_END + high - 1, 1),
			 mem.base + ram - 1);
	assert_null(guest_ptr(&mem, HOLE_END + high, 1));

	/* High RAM is mapped right after low RAM. */
	const uint8_t mark = 0xa5;
	assert_int_equal(guest_write(&mem, HOLE_END, &mark, 1), 0);
	assert_int_equal(mem.base[HOLE_START], mark);
	guest_mem_destroy(&mem);
}

static void test_init_zero_size_fails(void **state)
{
	(void)state;
	struct guest_mem mem;
	assert_true(guest_mem_init(&mem, 0, HOLE_START, HOLE_END) < 0);
	assert_null(mem.base);
	assert_int_equal(mem.nr_regions, 0);
	guest_mem_destroy(&mem); /* harmless after a failed init */
}

int main(void)
{
	const struct CMUnitTest guest_mem[] = {
		cmocka_unit_test(test_add_rejects_zero_size),
		cmocka_unit_test(test_add_rejects_wrap),
		cmocka_unit_test(test_add_rejects_overlap),
		cmocka_unit_test(test_add_rejects_when_full),
		cmocka_unit_test(test_add_records_region),
		cmocka_unit_test(test_ptr_inside_regions),
		cmocka_unit_test(test_ptr_past_the_end),
		cmocka_unit_test(test_ptr_zero_length),
		cmocka_unit_test(test_ptr_in_hole),
		cmocka_unit_test(test_ptr_straddling_regions),
		cmocka_unit_test(test_ptr_length_overflow),
		cmocka_unit_test(test_ptr_near_top_of_address_space),
		cmocka_unit_test(test_write_read_round_trip),
		cmocka_unit_test(test_write_read_efault),
		cmocka_unit_test(test_init_below_low_limit),
		cmocka_unit_test(test_init_exactly_low_limit),
		cmocka_unit_test(test_init_above_low_limit),
		cmocka_unit_test(test_init_zero_size_fails),
	};
	return cmocka_run_group_tests(guest_mem, NULL, NULL);
}
