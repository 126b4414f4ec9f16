/* Verbosity switch shared by every module's diagnostics. */
#include "vmm/log.h"

bool log_verbose;
