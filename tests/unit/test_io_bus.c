/* Unit tests for vmm/io_bus: range registration and dispatch of port/MMIO accesses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/io_bus.h"

/* What the last access to a device looked like. */
struct device {
	int calls;
	uint64_t offset;
	bool is_write;
	unsigned int size;
	uint8_t written[8];
	uint8_t reply;
};

static void device_io(void *opaque, uint64_t offset, bool is_write,
		      uint8_t *data, unsigned int size)
{
	struct device *d = opaque;
	d->calls++;
	d->offset = offset;
	d->is_write = is_write;
	d->size = size;
	if (is_write)
		memcpy(d->written, data, size);
	else
		memset(data, d->reply, size);
}

static bool access_bus(const struct io_bus *bus, uint64_t addr, bool is_write,
		       uint8_t *data, unsigned int size)
{
	return io_bus_dispatch(bus, addr, is_write, data, size);
}

static void test_dispatch_offset_relative_to_base(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device dev = {.reply = 0x42};
	assert_int_equal(io_bus_register(&bus, 0x3f8, 8, device_io, &dev), 0);
	uint8_t data[4] = {0x11, 0x22, 0x33, 0x44};
	assert_true(access_bus(&bus, 0x3fa, true, data, 2));
	assert_int_equal(dev.calls, 1);
	assert_int_equal(dev.offset, 2);
	assert_true(dev.is_write);
	assert_int_equal(dev.size, 2);
	assert_memory_equal(dev.written, data, 2);

	uint8_t in[4] = {0};
	assert_true(access_bus(&bus, 0x3f8, false, in, 4));
	assert_int_equal(dev.offset, 0);
	assert_false(dev.is_write);
	assert_int_equal(dev.size, 4);
	assert_memory_equal(in, ((uint8_t[]){0x42, 0x42, 0x42, 0x42}), 4);
}

static void test_range_boundaries(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device dev = {0};
	uint8_t v = 0;
	assert_int_equal(io_bus_register(&bus, 0x70, 2, device_io, &dev), 0);
	assert_false(access_bus(&bus, 0x6f, false, &v, 1));
	assert_true(access_bus(&bus, 0x70, false, &v, 1));
	assert_true(access_bus(&bus, 0x71, false, &v, 1));
	assert_int_equal(dev.offset, 1);
	assert_false(access_bus(&bus, 0x72, false, &v, 1));
	assert_int_equal(dev.calls, 2);
}

static void test_unclaimed_returns_false(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device dev = {0};
	uint8_t data[2] = {0xab, 0xcd};
	assert_false(access_bus(&bus, 0x80, false, data, 2));
	assert_int_equal(io_bus_register(&bus, 0x60, 1, device_io, &dev), 0);
	assert_false(access_bus(&bus, 0x61, false, data, 2));
	assert_false(access_bus(&bus, UINT64_MAX, true, data, 1));
	assert_int_equal(dev.calls, 0);
	/* The caller fills in all-ones: dispatch leaves the data alone. */
	assert_int_equal(data[0], 0xab);
	assert_int_equal(data[1], 0xcd);
}

static void test_each_range_reaches_its_device(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device a = {.reply = 1}, b = {.reply = 2}, c = {.reply = 3};
	assert_int_equal(io_bus_register(&bus, 0x3f8, 8, device_io, &a), 0);
	assert_int_equal(io_bus_register(&bus, 0x2f8, 8, device_io, &b), 0);
	assert_int_equal(io_bus_register(&bus, 0xfec00000, 0x1000, device_io,
					 &c), 0);
	uint8_t v;
	assert_true(access_bus(&bus, 0x2ff, false, &v, 1));
	assert_int_equal(v, 2);
	assert_int_equal(b.offset, 7);
	assert_true(access_bus(&bus, 0x3f8, false, &v, 1));
	assert_int_equal(v, 1);
	assert_true(access_bus(&bus, 0xfec00ff0, false, &v, 1));
	assert_int_equal(v, 3);
	assert_int_equal(c.offset, 0xff0);
	assert_int_equal(a.calls + b.calls + c.calls, 3);
}

static void test_register_rejects_overlap(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device dev = {0};
	assert_int_equal(io_bus_register(&bus, 0x100, 0x10, device_io, &dev), 0);
	assert_int_equal(io_bus_register(&bus, 0x100, 0x10, device_io, &dev),
			 -EEXIST);
	assert_int_equal(io_bus_register(&bus, 0xf8, 0x9, device_io, &dev),
			 -EEXIST);
	assert_int_equal(io_bus_register(&bus, 0x10f, 0x1, device_io, &dev),
			 -EEXIST);
	assert_int_equal(io_bus_register(&bus, 0x104, 0x2, device_io, &dev),
			 -EEXIST);
	assert_int_equal(io_bus_register(&bus, 0x0, 0x1000, device_io, &dev),
			 -EEXIST);
	assert_int_equal(bus.nr_ranges, 1);
	/* Adjacent on either side is fine. */
	assert_int_equal(io_bus_register(&bus, 0xf0, 0x10, device_io, &dev), 0);
	assert_int_equal(io_bus_register(&bus, 0x110, 0x10, device_io, &dev), 0);
	assert_int_equal(bus.nr_ranges, 3);
}

static void test_register_rejects_empty_and_wrapping(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device dev = {0};
	assert_int_equal(io_bus_register(&bus, 0x100, 0, device_io, &dev),
			 -EINVAL);
	assert_int_equal(io_bus_register(&bus, UINT64_MAX, 2, device_io, &dev),
			 -EINVAL);
	assert_int_equal(io_bus_register(&bus, UINT64_MAX - 0xf, 0x20,
					 device_io, &dev), -EINVAL);
	assert_int_equal(bus.nr_ranges, 0);
}

static void test_register_rejects_when_full(void **state)
{
	(void)state;
	struct io_bus bus = {0};
	struct device dev = {0};
	for (uint64_t i = 0; i < IO_BUS_MAX_RANGES; i++)
		assert_int_equal(io_bus_register(&bus, i * 4, 4, device_io,
						 &dev), 0);
	assert_int_equal(io_bus_register(&bus, 0x1000, 4, device_io, &dev),
			 -ENOSPC);
	/* The last range registered still dispatches. */
	uint8_t v;
	assert_true(access_bus(&bus, (IO_BUS_MAX_RANGES - 1) * 4 + 3, false,
			       &v, 1));
	assert_int_equal(dev.offset, 3);
}

int main(void)
{
	const struct CMUnitTest io_bus[] = {
		cmocka_unit_test(test_dispatch_offset_relative_to_base),
		cmocka_unit_test(test_range_boundaries),
		cmocka_unit_test(test_unclaimed_returns_false),
		cmocka_unit_test(test_each_range_reaches_its_device),
		cmocka_unit_test(test_register_rejects_overlap),
		cmocka_unit_test(test_register_rejects_empty_and_wrapping),
		cmocka_unit_test(test_register_rejects_when_full),
	};
	return cmocka_run_group_tests(io_bus, NULL, NULL);
}
