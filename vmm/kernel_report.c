/* Reads the kernel console line by line for crash reports
 * (vmm/kernel_report.h). */
#include "vmm/kernel_report.h"

#include <stdio.h>
#include <string.h>

/* First lines of a report. Lock-up reports ("BUG: soft lockup", "BUG:
 * workqueue lockup") and WARNINGs are left out: an emulated or overloaded
 * host makes those of a healthy guest, which goes on. */
static const char *const report_starts[] = {
	"BUG: kernel NULL pointer dereference",
	"BUG: unable to handle",
	"BUG: KASAN:",
	"BUG: KFENCE:",
	"kernel BUG at ",
	"general protection fault",
	"Oops: ",
	"Kernel panic - not syncing: ",
};

/* Frames that only report: the crash is below them. */
static const char *const machinery[] = {
	"dump_stack", "dump_stack_lvl", "panic", "vpanic", "show_stack",
};

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* The line without its "[    1.234567] " time stamp (CONFIG_PRINTK_TIME). */
static const char *message(const char *line)
{
	if (line[0] != '[')
		return line;
	const char *end = strchr(line, ']');
	if (!end)
		return line;
	return end[1] == ' ' ? end + 2 : end + 1;
}

static bool is_report_start(const char *msg)
{
	for (size_t i = 0; i < sizeof(report_starts) / sizeof(report_starts[0]); i++)
		if (starts_with(msg, report_starts[i]))
			return true;
	return false;
}

static bool is_machinery(const char *frame)
{
	size_t len = strcspn(frame, "+ ");
	for (size_t i = 0; i < sizeof(machinery) / sizeof(machinery[0]); i++)
		if (strlen(machinery[i]) == len && !strncmp(frame, machinery[i], len))
			return true;
	return false;
}

static void keep_text(struct kernel_report *r, const char *msg)
{
	size_t len = strlen(msg);
	if (r->text_len + len + 2 > sizeof(r->text)) {
		r->truncated = true;
		return;
	}
	memcpy(r->text + r->text_len, msg, len);
	r->text_len += len;
	r->text[r->text_len++] = '\n';
	r->text[r->text_len] = '\0';
}

/* A backtrace line: " func+0x1/0x2", " ? func+0x1/0x2" (a guess, left
 * out), " <TASK>", " </IRQ>" (stack boundaries, left out). */
static void take_frame(struct kernel_report *r, const char *msg)
{
	while (*msg == ' ' || *msg == '\t')
		msg++;
	if (!*msg || *msg == '<' || starts_with(msg, "? "))
		return;
	if (r->skipping && is_machinery(msg))
		return;
	r->skipping = false;
	if (r->nr_frames < KERNEL_REPORT_FRAMES)
		snprintf(r->frames[r->nr_frames++], sizeof(r->frames[0]), "%s",
			 msg);
}

static void take_line(struct kernel_report *r, const char *line)
{
	const char *msg = message(line);
	if (!r->in_report && is_report_start(msg)) {
		r->in_report = true;
		if (!r->seen) {
			r->seen = true;
			r->skipping = true;
			snprintf(r->headline, sizeof(r->headline), "%s", msg);
		}
	}
	if (!r->in_report)
		return;
	keep_text(r, msg);
	/* The kernel's own (code segment 0x10), not a user RIP a trace shows. */
	if (starts_with(msg, "RIP: 0010:") && !r->rip[0])
		snprintf(r->rip, sizeof(r->rip), "%s", msg);
	if (starts_with(msg, "Call Trace:")) {
		r->in_trace = true;
		return;
	}
	/* "---[ end trace ... ]---", "---[ end Kernel panic - ... ]---" */
	if (starts_with(msg, "---[ end ")) {
		r->in_report = r->in_trace = false;
		r->first_done = true;
		return;
	}
	if (r->in_trace && !r->first_done && (msg[0] == ' ' || msg[0] == '\t'))
		take_frame(r, msg);
	else if (r->in_trace && msg[0] != ' ')
		r->in_trace = false; /* registers or the next section */
}

void kernel_report_byte(struct kernel_report *r, uint8_t byte)
{
	if (byte == '\r')
		return;
	if (byte != '\n') {
		/* A longer line is cut: its head says what it is. */
		if (r->line_len + 1 < sizeof(r->line))
			r->line[r->line_len++] = (char)byte;
		return;
	}
	r->line[r->line_len] = '\0';
	take_line(r, r->line);
	r->line_len = 0;
}

void kernel_report_backtrace(const struct kernel_report *r, char *buf,
			     size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned int i = 0; i < r->nr_frames && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? " < " : "",
				 r->frames[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}
