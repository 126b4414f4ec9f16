/* Verbosity switch shared by every module's diagnostics. */
#include "vmm/core/log.h"

bool log_verbose;
