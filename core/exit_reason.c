/* The exit reasons' codes, as --json writes them. */
#include "core/exit_reason.h"

#include <stddef.h>

static const char *const keys[EXIT_REASON_COUNT] = {
	[EXIT_REASON_NONE] = NULL,
	[EXIT_REASON_BAD_USAGE] = "bad_usage",
	[EXIT_REASON_BAD_CONFIG] = "bad_config",
	[EXIT_REASON_BAD_KERNEL] = "bad_kernel",
	[EXIT_REASON_BAD_SHARE] = "bad_share",
	[EXIT_REASON_BAD_IDS] = "bad_ids",
	[EXIT_REASON_BAD_DISK] = "bad_disk",
	[EXIT_REASON_BAD_NETWORK] = "bad_network",
	[EXIT_REASON_BAD_IMAGE] = "bad_image",
	[EXIT_REASON_BAD_SNAPSHOT] = "bad_snapshot",
	[EXIT_REASON_NO_KVM] = "no_kvm",
	[EXIT_REASON_KVM_UNUSABLE] = "kvm_unusable",
	[EXIT_REASON_OOM] = "oom",
	[EXIT_REASON_SANDBOX] = "sandbox",
	[EXIT_REASON_SETUP_FAILED] = "setup_failed",
	[EXIT_REASON_GUEST_PANIC] = "guest_panic",
	[EXIT_REASON_GUEST_RESET] = "guest_reset",
	[EXIT_REASON_GUEST_POWEROFF] = "guest_poweroff",
	[EXIT_REASON_VCPU_FAILED] = "vcpu_failed",
	[EXIT_REASON_GDB] = "gdb",
	[EXIT_REASON_SECCOMP] = "seccomp",
	[EXIT_REASON_TIMEOUT] = "timeout",
	[EXIT_REASON_SIGNAL] = "signal",
	[EXIT_REASON_ESCAPE_KEY] = "escape_key",
	[EXIT_REASON_VMM_FAILED] = "vmm_failed",
	[EXIT_REASON_SNAPSHOT_FAILED] = "snapshot_failed",
};

const char *exit_reason_key(enum exit_reason reason)
{
	return (unsigned int)reason < EXIT_REASON_COUNT ? keys[reason] : NULL;
}
