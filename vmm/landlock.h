/* The jail's second wall (Landlock): after set-up, what fsvm itself may
 * open, make or remove by path is beneath its shares only, read-only
 * shares read-only, nothing executable. It holds where the mount
 * namespace jail (vmm/jail.h) cannot be made, and inside it should that
 * ever leak. */
#ifndef FSVM_LANDLOCK_H
#define FSVM_LANDLOCK_H

#include <stdbool.h>

struct landlock_share {
	const char *path; /* where fsvm reaches the share now */
	bool readonly;
	bool devices; /* may make device nodes (:dev) */
};

/* Restricts this thread and those it starts later. Returns 0; -EOPNOTSUPP
 * when the kernel has no Landlock that fsvm can use (none, or ABI 1, which
 * would refuse renames across folders), nothing changed; or -errno with
 * *why. */
int landlock_shares(const struct landlock_share *shares, unsigned int n,
		    const char **why);

#endif
