/* `fsvm run --env-file FILE`: variables for the command, in docker's
 * format (docker run --env-file). */
#ifndef FSVM_ENV_FILE_H
#define FSVM_ENV_FILE_H

#include <stddef.h>

#include "vmm/cli.h"

/* Adds each NAME=VALUE line of path to cfg's environment as --env would
 * (NAME alone: this process's value, if it has one); blank lines and
 * lines starting with '#' are skipped, leading blanks ignored, the value
 * taken as it is (no quotes, no expansion). -EINVAL with one line in err
 * ("--env-file FILE:LINE: ...") for a file that cannot be read or a line
 * that is not NAME=VALUE or NAME. */
int env_file_load(const char *path, struct fsvm_config *cfg, char *err,
		  size_t errlen);

#endif
