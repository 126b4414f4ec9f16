/* `fsvm run`'s config files: JSON objects whose keys are the options' long
 * names, applied through the same handlers as the flags. */
#ifndef FSVM_CONFIG_FILE_H
#define FSVM_CONFIG_FILE_H

#include <stddef.h>

#include "vmm/cli.h"

/* Applies, in order: the default file ($FSVM_CONFIG, which must exist,
 * else ~/.config/fsvm/config.json when there is one), then config
 * (--config FILE; NULL: none), then with profile (--profile NAME; NULL:
 * none) that entry of their "profiles", from each file that has it.
 * -EINVAL with one line in err ("FILE: key 'cpus': ...", "FILE: line 3:
 * ...") for a file that cannot be read, is not strict JSON (comments,
 * trailing commas, a key twice), or has a key that is unknown, of the
 * wrong type or with a bad value; and for a profile none of them has. */
int config_file_load(const char *config, const char *profile,
		     struct fsvm_config *cfg, char *err, size_t errlen);

#endif
