/* Unit tests for devices/rtc: CMOS index/data ports, status registers and live BCD time. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "devices/rtc.h"

#define REG_SECONDS 0x00
#define REG_MINUTES 0x02
#define REG_HOURS 0x04
#define REG_WEEKDAY 0x06
#define REG_MDAY 0x07
#define REG_MONTH 0x08
#define REG_YEAR 0x09
#define REG_A 0x0a
#define REG_B 0x0b
#define REG_C 0x0c
#define REG_D 0x0d
#define REG_CENTURY 0x32

static struct rtc dev;

static int setup_rtc(void **state)
{
	(void)state;
	rtc_init(&dev);
	return 0;
}

static void select_reg(uint8_t index)
{
	rtc_io(&dev, 0, true, &index, 1);
}

static uint8_t read_reg(uint8_t index)
{
	uint8_t v = 0;
	select_reg(index);
	rtc_io(&dev, 1, false, &v, 1);
	return v;
}

static void write_reg(uint8_t index, uint8_t v)
{
	select_reg(index);
	rtc_io(&dev, 1, true, &v, 1);
}

/* Decodes a BCD byte, failing the test if it is not valid BCD. */
static int from_bcd(uint8_t v)
{
	assert_true((v & 0x0f) <= 9);
	assert_true((v >> 4) <= 9);
	return (v >> 4) * 10 + (v & 0x0f);
}

/* The clock as the registers tell it, in seconds since the epoch. */
static time_t read_clock(int *weekday)
{
	struct tm tm = {0};
	tm.tm_sec = from_bcd(read_reg(REG_SECONDS));
	tm.tm_min = from_bcd(read_reg(REG_MINUTES));
	tm.tm_hour = from_bcd(read_reg(REG_HOURS));
	tm.tm_mday = from_bcd(read_reg(REG_MDAY));
	tm.tm_mon = from_bcd(read_reg(REG_MONTH)) - 1;
	tm.tm_year = from_bcd(read_reg(REG_CENTURY)) * 100 +
		     from_bcd(read_reg(REG_YEAR)) - 1900;
	*weekday = from_bcd(read_reg(REG_WEEKDAY));
	assert_in_range(tm.tm_sec, 0, 59);
	assert_in_range(tm.tm_min, 0, 59);
	assert_in_range(tm.tm_hour, 0, 23);
	assert_in_range(tm.tm_mday, 1, 31);
	assert_in_range(tm.tm_mon, 0, 11);
	assert_in_range(*weekday, 1, 7);
	return timegm(&tm);
}

static bool clock_close_to_now(void)
{
	int weekday;
	time_t before = time(NULL);
	time_t clock = read_clock(&weekday);
	time_t after = time(NULL);
	struct tm tm;
	gmtime_r(&clock, &tm);
	assert_int_equal(weekday, tm.tm_wday + 1); /* Sunday is 1 */
	/* A minute's slack covers a register set read across a rollover. */
	return clock >= before - 60 && clock <= after + 60;
}

static void test_time_matches_host_utc(void **state)
{
	(void)state;
	/* A second try covers a read straddling midnight or New Year. */
	assert_true(clock_close_to_now() || clock_close_to_now());
}

static void test_status_registers(void **state)
{
	(void)state;
	assert_int_equal(read_reg(REG_D), 0x80);     /* VRT: RAM and time valid */
	assert_int_equal(read_reg(REG_A) & 0x80, 0); /* UIP clear */
	assert_int_equal(read_reg(REG_A), 0x26);
	assert_int_equal(read_reg(REG_B) & 0x06, 0x02); /* 24h, BCD */
	assert_int_equal(read_reg(REG_C), 0);
}

static void test_status_c_and_d_not_writable(void **state)
{
	(void)state;
	write_reg(REG_D, 0x00);
	write_reg(REG_C, 0xf0);
	assert_int_equal(read_reg(REG_D), 0x80);
	assert_int_equal(read_reg(REG_C), 0);
}

static void test_scratch_cmos_round_trip(void **state)
{
	(void)state;
	write_reg(0x40, 0x5a);
	write_reg(0x7f, 0xa5);
	write_reg(0x0e, 0x11);
	assert_int_equal(read_reg(0x40), 0x5a);
	assert_int_equal(read_reg(0x7f), 0xa5);
	assert_int_equal(read_reg(0x0e), 0x11);
	assert_int_equal(read_reg(0x41), 0); /* neighbours untouched */
	write_reg(REG_B, 0x06);
	assert_int_equal(read_reg(REG_B), 0x06);
}

/* Saved and restored into a chip as new: its CMOS bytes and index, the
 * time still the host's now; C and D stay the chip's; cut short: refused. */
static void test_snapshot_restore(void **state)
{
	(void)state;
	write_reg(0x40, 0x5a);
	write_reg(REG_B, 0x06);
	select_reg(0x40);
	struct state_out o = {0};
	rtc_save(&dev, &o);
	unsigned char *buf;
	size_t len;
	assert_int_equal(state_out_finish(&o, &buf, &len), 0);
	buf[1 + REG_C] = 0xff;
	buf[1 + REG_D] = 0;
	rtc_init(&dev);
	for (size_t n = 0; n < len; n++) {
		struct state_in cut = state_in(buf, n);
		assert_int_equal(rtc_restore(&dev, &cut), -EBADMSG);
	}
	assert_int_equal(read_reg(0x40), 0);
	struct state_in whole = state_in(buf, len);
	assert_int_equal(rtc_restore(&dev, &whole), 0);
	assert_true(state_in_whole(&whole));
	uint8_t v;
	rtc_io(&dev, 1, false, &v, 1); /* at the saved index */
	assert_int_equal(v, 0x5a);
	assert_int_equal(read_reg(REG_B), 0x06);
	assert_int_equal(read_reg(REG_C), 0);
	assert_int_equal(read_reg(REG_D), 0x80);
	write_reg(REG_B, 0x02);
	assert_true(clock_close_to_now());
	free(buf);
}

static void test_index_masks_to_7_bits(void **state)
{
	(void)state;
	write_reg(0x40, 0x77);
	/* Bit 7 of the index (NMI disable) does not select another byte. */
	assert_int_equal(read_reg(0x80 | 0x40), 0x77);
	assert_int_equal(read_reg(0x80 | REG_D), 0x80);
	write_reg(0x80 | 0x7f, 0x3c);
	assert_int_equal(read_reg(0x7f), 0x3c);
}

static void test_index_port_reads_ff(void **state)
{
	(void)state;
	uint8_t v = 0;
	select_reg(0x40);
	rtc_io(&dev, 0, false, &v, 1);
	assert_int_equal(v, 0xff);
}

int main(void)
{
	const struct CMUnitTest rtc[] = {
		cmocka_unit_test_setup(test_time_matches_host_utc, setup_rtc),
		cmocka_unit_test_setup(test_status_registers, setup_rtc),
		cmocka_unit_test_setup(test_status_c_and_d_not_writable, setup_rtc),
		cmocka_unit_test_setup(test_scratch_cmos_round_trip, setup_rtc),
		cmocka_unit_test_setup(test_index_masks_to_7_bits, setup_rtc),
		cmocka_unit_test_setup(test_index_port_reads_ff, setup_rtc),
		cmocka_unit_test_setup(test_snapshot_restore, setup_rtc),
	};
	return cmocka_run_group_tests(rtc, NULL, NULL);
}
