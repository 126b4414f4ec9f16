/* The guest kernel's crash reports (an oops, a BUG, a panic) as its
 * console printed them: the headline, the first frames of the backtrace
 * and the whole text, for the line fsvm ends with and for --json. The
 * kernel prints them at full verbosity even when booted quiet
 * (console_verbose() in die() and panic()). */
#ifndef FSVM_KERNEL_REPORT_H
#define FSVM_KERNEL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KERNEL_REPORT_TEXT_MAX (32 << 10)
#define KERNEL_REPORT_LINE_MAX 256
#define KERNEL_REPORT_FRAMES 6

struct kernel_report {
	bool seen;       /* a report began */
	bool in_report;  /* between its first line and its end */
	bool in_trace;   /* after "Call Trace:" */
	bool skipping;   /* frames of the reporting machinery (panic, dump_stack) */
	bool first_done; /* the first report ended: its frames are all taken */
	char headline[KERNEL_REPORT_LINE_MAX]; /* the first report's first line */
	char rip[KERNEL_REPORT_LINE_MAX];      /* its "RIP:" line; empty: none */
	char frames[KERNEL_REPORT_FRAMES][KERNEL_REPORT_LINE_MAX];
	unsigned int nr_frames;
	char text[KERNEL_REPORT_TEXT_MAX]; /* every report's lines, NUL-ended */
	size_t text_len;
	bool truncated;
	char line[KERNEL_REPORT_LINE_MAX]; /* the console line being read */
	size_t line_len;
};

/* One console byte (serial on_tx order). Never fails: past its caps a
 * report is cut short, and says so. */
void kernel_report_byte(struct kernel_report *r, uint8_t byte);

/* The frames as one line, "f1+0x1/0x2 < f2+0x3/0x4 < ...", into buf. */
void kernel_report_backtrace(const struct kernel_report *r, char *buf,
			     size_t len);

#endif
