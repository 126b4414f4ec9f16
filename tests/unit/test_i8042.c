/* Unit tests for devices/i8042: self-test, configuration byte and the reset command. */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "devices/i8042.h"

#define STATUS_OBF 0x01
#define STATUS_SYS 0x04
#define STATUS_UNLOCKED 0x10
#define CMD_READ_CTR 0x20
#define CMD_WRITE_CTR 0x60
#define CMD_SELF_TEST 0xaa
#define CMD_PULSE_RESET 0xfe

static void count_reset(void *opaque)
{
	(*(int *)opaque)++;
}

static void command(struct i8042 *kbc, uint8_t cmd)
{
	i8042_cmd_io(kbc, 0, true, &cmd, 1);
}

static uint8_t status(struct i8042 *kbc)
{
	uint8_t v = 0;
	i8042_cmd_io(kbc, 0, false, &v, 1);
	return v;
}

static void put_data(struct i8042 *kbc, uint8_t v)
{
	i8042_data_io(kbc, 0, true, &v, 1);
}

static uint8_t get_data(struct i8042 *kbc)
{
	uint8_t v = 0;
	i8042_data_io(kbc, 0, false, &v, 1);
	return v;
}

static int setup_kbc(void **state)
{
	static struct i8042 kbc;
	static int resets;
	resets = 0;
	i8042_init(&kbc, count_reset, &resets);
	*state = &kbc;
	return 0;
}

static int resets_of(struct i8042 *kbc)
{
	return *(int *)kbc->opaque;
}

static void test_initial_status(void **state)
{
	struct i8042 *kbc = *state;
	assert_int_equal(status(kbc), STATUS_SYS | STATUS_UNLOCKED);
}

static void test_self_test(void **state)
{
	struct i8042 *kbc = *state;
	command(kbc, CMD_SELF_TEST);
	assert_int_equal(status(kbc), STATUS_SYS | STATUS_UNLOCKED | STATUS_OBF);
	assert_int_equal(status(kbc) & STATUS_OBF, STATUS_OBF); /* not consumed */
	assert_int_equal(get_data(kbc), 0x55);
	assert_int_equal(status(kbc) & STATUS_OBF, 0);
}

static void test_ctr_round_trip(void **state)
{
	struct i8042 *kbc = *state;
	command(kbc, CMD_WRITE_CTR);
	assert_int_equal(status(kbc) & STATUS_OBF, 0);
	put_data(kbc, 0x47);
	command(kbc, CMD_READ_CTR);
	assert_true(status(kbc) & STATUS_OBF);
	assert_int_equal(get_data(kbc), 0x47);
	assert_int_equal(status(kbc) & STATUS_OBF, 0);
}

static void test_data_without_command_is_dropped(void **state)
{
	struct i8042 *kbc = *state;
	command(kbc, CMD_WRITE_CTR);
	put_data(kbc, 0x11);
	put_data(kbc, 0x22); /* the command took only one byte */
	command(kbc, CMD_READ_CTR);
	assert_int_equal(get_data(kbc), 0x11);
}

static void test_pulse_reset_calls_on_reset(void **state)
{
	struct i8042 *kbc = *state;
	command(kbc, CMD_SELF_TEST);
	command(kbc, 0xad); /* disable keyboard: no reset */
	command(kbc, CMD_READ_CTR);
	assert_int_equal(resets_of(kbc), 0);
	command(kbc, CMD_PULSE_RESET);
	assert_int_equal(resets_of(kbc), 1);
	command(kbc, CMD_PULSE_RESET);
	assert_int_equal(resets_of(kbc), 2);
}

/* Saved between a command and its data byte, restored into a controller
 * as new: the byte completes the command there; cut short: refused. */
static void test_snapshot_restore(void **state)
{
	struct i8042 *kbc = *state;
	command(kbc, CMD_WRITE_CTR);
	struct state_out o = {0};
	i8042_save(kbc, &o);
	unsigned char *buf;
	size_t len;
	assert_int_equal(state_out_finish(&o, &buf, &len), 0);
	static struct i8042 other;
	i8042_init(&other, NULL, NULL);
	for (size_t n = 0; n < len; n++) {
		struct state_in cut = state_in(buf, n);
		assert_int_equal(i8042_restore(&other, &cut), -EBADMSG);
	}
	struct state_in whole = state_in(buf, len);
	assert_int_equal(i8042_restore(&other, &whole), 0);
	assert_true(state_in_whole(&whole));
	put_data(&other, 0x45);
	command(&other, CMD_READ_CTR);
	assert_int_equal(get_data(&other), 0x45);
	free(buf);
}

static void test_reset_without_callback(void **state)
{
	(void)state;
	struct i8042 kbc;
	i8042_init(&kbc, NULL, NULL);
	command(&kbc, CMD_PULSE_RESET);
	assert_int_equal(status(&kbc), STATUS_SYS | STATUS_UNLOCKED);
}

int main(void)
{
	const struct CMUnitTest i8042[] = {
		cmocka_unit_test_setup(test_initial_status, setup_kbc),
		cmocka_unit_test_setup(test_self_test, setup_kbc),
		cmocka_unit_test_setup(test_ctr_round_trip, setup_kbc),
		cmocka_unit_test_setup(test_data_without_command_is_dropped,
				       setup_kbc),
		cmocka_unit_test_setup(test_pulse_reset_calls_on_reset, setup_kbc),
		cmocka_unit_test(test_reset_without_callback),
		cmocka_unit_test_setup(test_snapshot_restore, setup_kbc),
	};
	return cmocka_run_group_tests(i8042, NULL, NULL);
}
