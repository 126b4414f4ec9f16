/* What one run was, for -v and --json: how it ended, when set-up and the
 * guest finished, what each device saw, the VMM's peak memory. One struct,
 * so a richer boot timeline adds entries here and nowhere else. The
 * --json format is documented in docs/json.md. */
#ifndef FSVM_SUMMARY_H
#define FSVM_SUMMARY_H

#include <stdio.h>

#include "devices/device.h"
#include "vmm/cli.h"

#define SUMMARY_MAX_EVENTS 16

struct run_summary {
	int status;
	const char *ended_by; /* NULL: fsvm_run has not said (set-up failed) */
	char reason[256];     /* fsvm's line about the end; empty: none */
	/* Boot timeline: named moments, milliseconds from fsvm's start. */
	struct {
		const char *name;
		double ms;
	} events[SUMMARY_MAX_EVENTS];
	unsigned int nr_events;
	struct device_report devices[DEVICE_MAX_INSTANCES];
	unsigned int nr_devices;
	long long peak_rss_bytes; /* -1: unknown */
};

/* Records a moment of the boot timeline. */
void summary_event(struct run_summary *s, const char *name, double ms);

/* The guest stopped: its status and reason, what the devices saw and the
 * peak memory; with -v, logs each device's counters. */
void summary_end(struct run_summary *s, const struct vm *vm,
		 const struct machine *m);

/* After fsvm_run returned status: fills in what a failed set-up left
 * unsaid and the peak memory, and writes the JSON object to out (stdout,
 * or the --json=FILE opened before set-up). Returns 0, or -1 after one
 * line on stderr. */
int summary_write_json(struct run_summary *s, int status,
		       const struct fsvm_config *cfg, FILE *out);

#endif
