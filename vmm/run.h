/* `fsvm run`: build the VM from the configuration, run it, and turn the way
 * it ended into an exit status. */
#ifndef FSVM_RUN_H
#define FSVM_RUN_H

#include "vmm/cli.h"

int fsvm_run(const struct fsvm_config *cfg);

#endif
