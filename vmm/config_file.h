/* `fsvm run --config FILE`: options from a JSON object whose keys are the
 * options' long names, applied through the same handlers as the flags. */
#ifndef FSVM_CONFIG_FILE_H
#define FSVM_CONFIG_FILE_H

#include <stddef.h>

#include "vmm/cli.h"

/* Applies path's options to cfg. -EINVAL with one line in err ("FILE: key
 * 'cpus': ...") for a file that cannot be read, is not JSON, or has a key
 * that is unknown, of the wrong type or with a bad value. */
int config_file_load(const char *path, struct fsvm_config *cfg, char *err,
		     size_t errlen);

#endif
