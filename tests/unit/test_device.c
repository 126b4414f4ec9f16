/* Unit tests for devices/device: types registered with DEVICE_REGISTER are
 * all added, each finds the options the machine gives it by its name, a
 * failing one fails set-up, and the devices they add are reported and
 * asked to repair memory. This binary's own two types are
 * the only ones registered (no device file is linked in). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "devices/device.h"

static int adds, reports, fail_with;
static int dev_a = 1, dev_b = 2;
static const int *options_seen; /* what type one's add found */

static void count_report(void *dev, struct device_report *out)
{
	(void)dev;
	snprintf(out->name, sizeof(out->name), "a");
	reports++;
}

static unsigned int repair(void *dev)
{
	return (unsigned int)*(int *)dev;
}

static const struct device_type type_one, type_two;

static int add_one(struct machine *m)
{
	adds++;
	options_seen = machine_options(m, "one");
	return machine_add_device(m, &type_one, &dev_a);
}

/* Adds two devices, or fails. */
static int add_two(struct machine *m)
{
	adds++;
	if (fail_with)
		return fail_with;
	int err = machine_add_device(m, &type_two, &dev_b);
	return err ? err : machine_add_device(m, &type_two, &dev_b);
}

static const struct device_type type_one = {
	.name = "one", .add = add_one, .report = count_report};
static const struct device_type type_two = {
	.name = "two", .add = add_two, .repair_memory = repair};
DEVICE_REGISTER(type_one);
DEVICE_REGISTER(type_two);

static int reset(void **state)
{
	(void)state;
	adds = reports = fail_with = 0;
	options_seen = NULL;
	return 0;
}

static void test_every_registered_type_is_added(void **state)
{
	(void)state;
	struct machine m = {0};
	assert_int_equal(devices_add_all(&m), 0);
	assert_int_equal(adds, 2);
	assert_int_equal(m.nr_devices, 3);
	struct device_report out[4];
	assert_int_equal(devices_report(&m, out, 4), 1);
	assert_int_equal(reports, 1); /* type two has no report */
	assert_string_equal(out[0].type, "one");
	assert_int_equal(devices_repair_memory(&m), 2 * 2);
}

/* A type finds its own options, not another's; none given: NULL. */
static void test_options_found_by_type_name(void **state)
{
	(void)state;
	static const int mine = 7, theirs = 8;
	struct machine m = {.options = {{"two", &theirs}, {"one", &mine}}};
	assert_int_equal(devices_add_all(&m), 0);
	assert_ptr_equal(options_seen, &mine);
	assert_null(machine_options(&m, "three"));
	struct machine bare = {0};
	assert_int_equal(devices_add_all(&bare), 0);
	assert_null(options_seen);
}

static void test_a_failing_type_fails_set_up(void **state)
{
	(void)state;
	struct machine m = {0};
	fail_with = -ENOMEM;
	assert_int_equal(devices_add_all(&m), -ENOMEM);
}

static void test_machine_is_capped(void **state)
{
	(void)state;
	struct machine m = {0};
	for (unsigned int i = 0; i < DEVICE_MAX_INSTANCES; i++)
		assert_int_equal(machine_add_device(&m, &type_one, &dev_a), 0);
	assert_int_equal(machine_add_device(&m, &type_one, &dev_a), -ENOSPC);
	assert_int_equal(m.nr_devices, DEVICE_MAX_INSTANCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_every_registered_type_is_added, reset),
		cmocka_unit_test_setup(test_options_found_by_type_name, reset),
		cmocka_unit_test_setup(test_a_failing_type_fails_set_up, reset),
		cmocka_unit_test_setup(test_machine_is_capped, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
