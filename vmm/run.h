/* `fsvm run`: build the VM from the configuration, run it, and turn the way
 * it ended into an exit status. */
#ifndef FSVM_RUN_H
#define FSVM_RUN_H

#include "vmm/cli.h"
#include "vmm/summary.h"

/* Runs the VM cfg describes; returns fsvm's exit status, with what the
 * run was in *sum. */
int fsvm_run(const struct fsvm_config *cfg, struct run_summary *sum);

/* Runs cfg's command in a VM restored from snap (fsvm run --restore),
 * its RAM mapped from mem_fd; cfg is the snapshot's flags with the
 * restore's (cli_parse_restore). */
struct snapshot;
int fsvm_restore(const struct fsvm_config *cfg, const struct snapshot *snap,
		 int mem_fd, struct run_summary *sum);

#endif
