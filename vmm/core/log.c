/* Verbosity switch shared by every module's diagnostics. */
#include "vmm/core/log.h"

#include <string.h>

bool log_verbose;

int log_setup_error(const char *what, const char *why, int err)
{
	if (err)
		log_error("%s: %s (%s)", what, why, strerror(-err));
	else
		log_error("%s: %s", what, why);
	return -1;
}
