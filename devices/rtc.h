/* MC146818 CMOS real-time clock at ports 0x70/0x71: the host's UTC time,
 * so the guest's rtc_cmos driver finds a working clock at once. */
#ifndef FSVM_RTC_H
#define FSVM_RTC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/state_blob.h"

#define RTC_PORT 0x70
#define RTC_NR_PORTS 2
#define RTC_CMOS_SIZE 128

struct rtc {
	pthread_mutex_t lock;
	uint8_t index;
	uint8_t cmos[RTC_CMOS_SIZE];
};

void rtc_init(struct rtc *rtc);
void rtc_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
	    unsigned int size);

/* For a snapshot: the index and the CMOS bytes (the time registers are
 * the host's clock's whenever read, so a restored guest reads now). */
void rtc_save(struct rtc *rtc, struct state_out *out);
int rtc_restore(struct rtc *rtc, struct state_in *in);

#endif
