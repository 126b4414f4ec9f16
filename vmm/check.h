/* What a run would fail on that can be known without KVM: the shares'
 * folders, the kernel and initramfs (readable, of a known format) and
 * the guest folder they come from, the kernel's modules, the id maps,
 * the disks and the network's backend. `fsvm run --check` is this alone;
 * every run does it before it opens /dev/kvm, so a host without KVM still
 * names a missing share. */
#ifndef FSVM_CHECK_H
#define FSVM_CHECK_H

#include "core/exit_reason.h"
#include "vmm/cli.h"

#define CHECK_MAX_PROBLEMS 32

struct check_problem {
	enum exit_reason reason;
	char message[256]; /* the line printed, without "fsvm: " */
};

struct check {
	struct check_problem problems[CHECK_MAX_PROBLEMS];
	unsigned int nr; /* problems found (past the array's: counted only) */
};

/* Checks everything cfg names, logging each problem as one line; returns
 * how many there were (0: none). */
unsigned int check_run(const struct fsvm_config *cfg, struct check *c);

#endif
