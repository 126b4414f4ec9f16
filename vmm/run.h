/* `fsvm run`: build the VM from the configuration, run it, and turn the way
 * it ended into an exit status. */
#ifndef FSVM_RUN_H
#define FSVM_RUN_H

#include "vmm/cli.h"
#include "vmm/summary.h"

/* Runs the VM cfg describes; returns fsvm's exit status, with what the
 * run was in *sum. */
int fsvm_run(const struct fsvm_config *cfg, struct run_summary *sum);

#endif
