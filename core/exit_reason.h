/* Why `fsvm run` ended, as a stable code for --json's exit.reason (CI
 * tells failures apart by it; docs/json.md lists what produces each). */
#ifndef FSVM_EXIT_REASON_H
#define FSVM_EXIT_REASON_H

enum exit_reason {
	EXIT_REASON_NONE, /* the command reported its status, or nothing failed */
	/* Set-up: what the user gave. */
	EXIT_REASON_BAD_USAGE,
	EXIT_REASON_BAD_CONFIG,
	EXIT_REASON_BAD_KERNEL,
	EXIT_REASON_BAD_SHARE,
	EXIT_REASON_BAD_IDS,
	EXIT_REASON_BAD_DISK,
	EXIT_REASON_BAD_NETWORK,
	EXIT_REASON_BAD_IMAGE,
	EXIT_REASON_BAD_SNAPSHOT,
	/* Set-up: the host. */
	EXIT_REASON_NO_KVM,
	EXIT_REASON_KVM_UNUSABLE,
	EXIT_REASON_OOM,
	EXIT_REASON_SANDBOX,
	EXIT_REASON_SETUP_FAILED,
	/* The run. */
	EXIT_REASON_GUEST_PANIC,
	EXIT_REASON_GUEST_RESET,
	EXIT_REASON_GUEST_POWEROFF,
	EXIT_REASON_VCPU_FAILED,
	EXIT_REASON_GDB,
	EXIT_REASON_SECCOMP,
	EXIT_REASON_TIMEOUT,
	EXIT_REASON_SIGNAL,
	EXIT_REASON_ESCAPE_KEY,
	EXIT_REASON_VMM_FAILED,
	EXIT_REASON_SNAPSHOT_FAILED,
	EXIT_REASON_COUNT
};

/* The code as --json writes it ("bad_usage", ...); NULL for NONE. */
const char *exit_reason_key(enum exit_reason reason);

#endif
