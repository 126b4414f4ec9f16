/* Unit tests for core/timeline: first mark wins, times from the guest
 * are bounded, the print shows only what was reached. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/timeline.h"

static void started_ago(struct timeline *tl, long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec -= ms / 1000;
	t.tv_nsec -= (ms % 1000) * 1000000;
	if (t.tv_nsec < 0) {
		t.tv_nsec += 1000000000;
		t.tv_sec--;
	}
	timeline_init(tl, &t);
}

static void test_first_mark_wins(void **state)
{
	(void)state;
	struct timeline tl;
	started_ago(&tl, 2000);
	for (int i = 0; i < TL_NR_MARKS; i++)
		assert_true(atomic_load(&tl.us[i]) < 0);
	timeline_mark_at(&tl, TL_FIRST_RUN, 1000);
	timeline_mark(&tl, TL_FIRST_RUN);
	assert_int_equal(atomic_load(&tl.us[TL_FIRST_RUN]), 1000);
	timeline_mark(&tl, TL_VMM_EXIT);
	assert_true(atomic_load(&tl.us[TL_VMM_EXIT]) >= 2000000);
}

/* A time reckoned from the guest's word is refused outside [0, now]. */
static void test_bounds(void **state)
{
	(void)state;
	struct timeline tl;
	started_ago(&tl, 1000);
	timeline_mark_at(&tl, TL_KERNEL_ENTRY, -5);
	timeline_mark_at(&tl, TL_KERNEL_ENTRY, 3600LL * 1000000);
	assert_true(atomic_load(&tl.us[TL_KERNEL_ENTRY]) < 0);
	timeline_mark_at(&tl, TL_NR_MARKS, 10);
	timeline_mark_at(&tl, (enum timeline_mark)-1, 10);
	timeline_mark_at(&tl, TL_KERNEL_ENTRY, 500000);
	assert_int_equal(atomic_load(&tl.us[TL_KERNEL_ENTRY]), 500000);
	assert_string_equal(timeline_name(TL_NR_MARKS), "?");
}

static void test_print_shows_the_marks_reached(void **state)
{
	(void)state;
	struct timeline tl;
	started_ago(&tl, 3000);
	timeline_mark_at(&tl, TL_FIRST_RUN, 250000);
	timeline_mark_at(&tl, TL_INIT_START, 1750000);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	timeline_print(&tl, f);
	fclose(f);
	assert_non_null(strstr(buf, "  250.0     +250.0  first KVM_RUN\n"));
	assert_non_null(strstr(buf, " 1750.0    +1500.0  init start\n"));
	assert_null(strstr(buf, "root mounted"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest timeline[] = {
		cmocka_unit_test(test_first_mark_wins),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_print_shows_the_marks_reached),
	};
	return cmocka_run_group_tests(timeline, NULL, NULL);
}
