/* What one run was, for -v and --json: how it ended, its boot timeline,
 * what each device saw, the VMM's peak memory. The --json format is
 * documented in docs/json.md. */
#ifndef FSVM_SUMMARY_H
#define FSVM_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "core/exit_reason.h"
#include "core/timeline.h"
#include "devices/device.h"
#include "vmm/check.h"
#include "vmm/cli.h"
#include "vmm/kernel_report.h"

struct run_summary {
	FILE *out; /* where --json goes (opened before set-up); NULL: no --json */
	int status;
	const char *ended_by; /* NULL: fsvm_run has not said (set-up failed) */
	enum exit_reason reason; /* NONE: the command's status, or no failure */
	char message[256];       /* fsvm's line about the end; empty: none */
	/* What the checks before KVM found (vmm/check.h); NULL: not run. */
	const struct check *check;
	/* The boot timeline's marks, microseconds from launch; -1: not
	 * reached (core/timeline.h). */
	int64_t timeline_us[TL_NR_MARKS];
	struct device_report devices[DEVICE_MAX_INSTANCES];
	unsigned int nr_devices;
	long long peak_rss_bytes; /* -1: unknown */
	/* The guest kernel's oops or panic, as its console printed it;
	 * NULL: none. */
	const struct kernel_report *kernel;
};

/* An empty summary (nothing reached, nothing known) for out (NULL: no
 * --json). */
void summary_init(struct run_summary *s, FILE *out);

/* Takes the boot timeline as it stands (set-up done, or the guest gone). */
void summary_timeline(struct run_summary *s, const struct timeline *tl);

/* The guest stopped: its status and reason, what the devices saw and the
 * peak memory; with -v, logs each device's counters. */
void summary_end(struct run_summary *s, const struct vm *vm,
		 const struct machine *m);

/* Set-up (or the command line) failed with reason: kept unless one is
 * already. Returns EXIT_VMM_ERROR. */
int summary_failed(struct run_summary *s, enum exit_reason reason);

/* After fsvm_run returned status: fills in what a failed set-up left
 * unsaid and the peak memory, and writes the JSON object to s->out.
 * Returns 0, or -1 after one line on stderr. */
int summary_write_json(struct run_summary *s, int status,
		       const struct fsvm_config *cfg);

/* Where a seccomp violation's line goes in the summary it writes. */
#define SUMMARY_VIOLATION_SLOT "@SECCOMP-VIOLATION@"

/* The summary a seccomp violation writes, made before the filter (a
 * signal handler may make nothing): the run so far (its timeline to
 * set-up done; no device counters, no peak memory), ended by fsvm, 125,
 * reason seccomp, its message SUMMARY_VIOLATION_SLOT. Sets *before and
 * *after (malloc'd) to the text around the slot; returns 0 or -ENOMEM. */
int summary_render_violation(const struct run_summary *s, char **before,
			     char **after);

#endif
