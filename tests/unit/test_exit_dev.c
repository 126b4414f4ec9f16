/* Unit tests for devices/exit_dev: the guest's exit-status and user-space-mark port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "devices/exit_dev.h"

struct seen {
	int exits, marks;
	uint8_t status, mark;
	uint32_t clock_us;
};

static void on_exit_cb(void *opaque, uint8_t status)
{
	struct seen *s = opaque;
	s->exits++;
	s->status = status;
}

static void on_mark_cb(void *opaque, uint8_t mark, uint32_t clock_us)
{
	struct seen *s = opaque;
	s->marks++;
	s->mark = mark;
	s->clock_us = clock_us;
}

static void put(struct exit_dev *dev, uint64_t reg, uint8_t v)
{
	exit_dev_io(dev, reg, true, &v, 1);
}

static void test_status_reaches_on_exit(void **state)
{
	(void)state;
	struct seen s = {0};
	struct exit_dev dev = {.on_exit = on_exit_cb, .on_mark = on_mark_cb,
			       .opaque = &s};
	put(&dev, EXIT_DEV_REG_STATUS, 42);
	assert_int_equal(s.exits, 1);
	assert_int_equal(s.status, 42);
	put(&dev, EXIT_DEV_REG_STATUS, 255);
	assert_int_equal(s.exits, 2);
	assert_int_equal(s.status, 255);
	put(&dev, EXIT_DEV_REG_STATUS, 0);
	assert_int_equal(s.status, 0);
	assert_int_equal(s.marks, 0);
}

static void test_mark_reaches_on_mark(void **state)
{
	(void)state;
	struct seen s = {0};
	struct exit_dev dev = {.on_exit = on_exit_cb, .on_mark = on_mark_cb,
			       .opaque = &s};
	put(&dev, EXIT_DEV_REG_MARK, 7);
	assert_int_equal(s.mark, 7);
	assert_int_equal(s.clock_us, 0);
	put(&dev, EXIT_DEV_REG_MARK, 0);
	assert_int_equal(s.marks, 2);
	assert_int_equal(s.mark, 0);
	assert_int_equal(s.exits, 0);
}

/* The guest's clock travels with the marks after it, whole words only. */
static void test_clock_goes_with_the_marks(void **state)
{
	(void)state;
	struct seen s = {0};
	struct exit_dev dev = {.on_exit = on_exit_cb, .on_mark = on_mark_cb,
			       .opaque = &s};
	uint8_t word[4] = {0x78, 0x56, 0x34, 0x12};
	exit_dev_io(&dev, EXIT_DEV_REG_CLOCK, true, word, 4);
	put(&dev, EXIT_DEV_REG_MARK, GUEST_MARK_INIT);
	assert_int_equal(s.mark, GUEST_MARK_INIT);
	assert_int_equal(s.clock_us, 0x12345678);
	/* A byte, or a word off the register, changes nothing. */
	put(&dev, EXIT_DEV_REG_CLOCK, 9);
	exit_dev_io(&dev, EXIT_DEV_REG_CLOCK + 1, true, word, 4);
	put(&dev, EXIT_DEV_REG_MARK, GUEST_MARK_ROOT);
	assert_int_equal(s.clock_us, 0x12345678);
	assert_int_equal(s.marks, 2);
	assert_int_equal(s.exits, 0);
}

static void test_reads_give_zero(void **state)
{
	(void)state;
	struct seen s = {0};
	struct exit_dev dev = {.on_exit = on_exit_cb, .on_mark = on_mark_cb,
			       .opaque = &s};
	for (uint64_t reg = 0; reg < EXIT_DEV_LEN; reg++) {
		uint8_t v = 0xff;
		exit_dev_io(&dev, reg, false, &v, 1);
		assert_int_equal(v, 0);
	}
	uint8_t word[4] = {0xff, 0xff, 0xff, 0xff};
	exit_dev_io(&dev, EXIT_DEV_REG_CLOCK, false, word, 4);
	assert_int_equal(word[0] | word[1] | word[2] | word[3], 0);
	assert_int_equal(s.exits + s.marks, 0);
}

static void test_missing_callbacks_are_ignored(void **state)
{
	(void)state;
	struct exit_dev dev = {0};
	put(&dev, EXIT_DEV_REG_STATUS, 1);
	put(&dev, EXIT_DEV_REG_MARK, 1);
	struct seen s = {0};
	struct exit_dev only_exit = {.on_exit = on_exit_cb, .opaque = &s};
	put(&only_exit, EXIT_DEV_REG_MARK, 1); /* not routed to on_exit */
	assert_int_equal(s.exits, 0);
}

int main(void)
{
	const struct CMUnitTest exit_dev[] = {
		cmocka_unit_test(test_status_reaches_on_exit),
		cmocka_unit_test(test_mark_reaches_on_mark),
		cmocka_unit_test(test_clock_goes_with_the_marks),
		cmocka_unit_test(test_reads_give_zero),
		cmocka_unit_test(test_missing_callbacks_are_ignored),
	};
	return cmocka_run_group_tests(exit_dev, NULL, NULL);
}
