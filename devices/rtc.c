/* CMOS RTC: live BCD time registers, valid-RAM status, scratch CMOS. */
#include "devices/rtc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "devices/device.h"

#define RTC_SECONDS 0x00
#define RTC_MINUTES 0x02
#define RTC_HOURS 0x04
#define RTC_DAY_OF_WEEK 0x06
#define RTC_DAY_OF_MONTH 0x07
#define RTC_MONTH 0x08
#define RTC_YEAR 0x09
#define RTC_REG_A 0x0a
#define RTC_REG_B 0x0b
#define RTC_REG_C 0x0c
#define RTC_REG_D 0x0d
#define RTC_CENTURY 0x32
#define RTC_REG_A_DEFAULT 0x26 /* 32.768 kHz base, 1024 Hz; UIP clear */
#define RTC_REG_B_24H 0x02     /* 24-hour, BCD */
#define RTC_REG_D_VRT 0x80     /* battery good, RAM valid */

void rtc_init(struct rtc *rtc)
{
	memset(rtc, 0, sizeof(*rtc));
	pthread_mutex_init(&rtc->lock, NULL);
	rtc->cmos[RTC_REG_A] = RTC_REG_A_DEFAULT;
	rtc->cmos[RTC_REG_B] = RTC_REG_B_24H;
	rtc->cmos[RTC_REG_D] = RTC_REG_D_VRT;
}

static uint8_t bcd(int v)
{
	return (uint8_t)(((v / 10) << 4) | (v % 10));
}

static uint8_t rtc_read(struct rtc *rtc, uint8_t reg)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	switch (reg) {
	case RTC_SECONDS:
		return bcd(tm.tm_sec);
	case RTC_MINUTES:
		return bcd(tm.tm_min);
	case RTC_HOURS:
		return bcd(tm.tm_hour);
	case RTC_DAY_OF_WEEK:
		return bcd(tm.tm_wday + 1);
	case RTC_DAY_OF_MONTH:
		return bcd(tm.tm_mday);
	case RTC_MONTH:
		return bcd(tm.tm_mon + 1);
	case RTC_YEAR:
		return bcd(tm.tm_year % 100);
	case RTC_CENTURY:
		return bcd((tm.tm_year + 1900) / 100);
	case RTC_REG_C:
		return 0; /* no interrupt flags: we raise no RTC interrupts */
	default:
		return rtc->cmos[reg];
	}
}

void rtc_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
	    unsigned int size)
{
	struct rtc *rtc = opaque;
	(void)size;

	pthread_mutex_lock(&rtc->lock);
	if (offset == 0) {
		/* Bit 7 masks NMIs on real hardware; only the index matters. */
		if (is_write)
			rtc->index = data[0] & (RTC_CMOS_SIZE - 1);
		else
			data[0] = 0xff;
	} else if (is_write) {
		if (rtc->index != RTC_REG_C && rtc->index != RTC_REG_D)
			rtc->cmos[rtc->index] = data[0];
	} else {
		data[0] = rtc_read(rtc, rtc->index);
	}
	pthread_mutex_unlock(&rtc->lock);
}

static int rtc_add(struct machine *m)
{
	struct rtc *rtc = calloc(1, sizeof(*rtc));
	if (!rtc)
		return -ENOMEM;
	rtc_init(rtc);
	int err = io_bus_register(&m->vm->pio, RTC_PORT, RTC_NR_PORTS, rtc_io,
				  rtc);
	if (err)
		free(rtc);
	return err;
}


void rtc_save(struct rtc *rtc, struct state_out *out)
{
	pthread_mutex_lock(&rtc->lock);
	state_put_u8(out, rtc->index);
	state_put(out, rtc->cmos, sizeof(rtc->cmos));
	pthread_mutex_unlock(&rtc->lock);
}

int rtc_restore(struct rtc *rtc, struct state_in *in)
{
	uint8_t index = state_get_u8(in);
	uint8_t cmos[RTC_CMOS_SIZE];
	state_get(in, cmos, sizeof(cmos));
	if (in->short_read)
		return -EBADMSG;
	pthread_mutex_lock(&rtc->lock);
	rtc->index = index % RTC_CMOS_SIZE;
	/* C and D are the chip's, which no write changes. */
	cmos[RTC_REG_C] = rtc->cmos[RTC_REG_C];
	cmos[RTC_REG_D] = rtc->cmos[RTC_REG_D];
	memcpy(rtc->cmos, cmos, sizeof(cmos));
	pthread_mutex_unlock(&rtc->lock);
	return 0;
}

static int rtc_save_dev(void *dev, struct state_out *out)
{
	rtc_save(dev, out);
	return out->err;
}

static int rtc_restore_dev(void *dev, struct state_in *in, char *err,
			   size_t errlen)
{
	int ret = rtc_restore(dev, in);
	return ret ? log_refusal(ret, err, errlen, "its registers are cut short") : 0;
}

static const struct device_type rtc_type = {.name = "rtc",
					    .add = rtc_add,
					    .save = rtc_save_dev,
					    .restore = rtc_restore_dev};
DEVICE_REGISTER(rtc_type);
