/* What of the host fsvm can reach once set-up is done: only its shares.
 * It moves into a mount namespace of its own whose root is an empty,
 * read-only tmpfs holding the shares (bind mounts of their folders, the
 * read-only ones read-only, the host's pseudo file systems inside them
 * covered) and /proc/self/fd, which reopening O_PATH fds needs; the rest
 * of procfs (/proc/self/mem among it) is not there. Every directory fd
 * fsvm holds is moved onto the jail's mounts, so none leads back into
 * the host's tree: even code that has taken fsvm over reaches no other
 * file of the user's. */
#ifndef FSVM_JAIL_H
#define FSVM_JAIL_H

#include <stdbool.h>

struct jail_share {
	const char *host; /* absolute, symlinks resolved */
	bool readonly;
};

#define JAIL_MAX_SHARES 64

struct jail;

/* Before fsvm takes the guest's ids, which may not reach the shares by
 * path (root's 0700 home, guest root host nobody): plans the jail for
 * shares (kept by the caller until jail_free) and, if fsvm may (root),
 * copies the shares' mounts now. Returns 0 with *jail, or -errno with
 * *why. */
int jail_prepare(const struct jail_share *shares, unsigned int n,
		 struct jail **jail, const char **why);

/* Enters the jail. The process must have one thread and CAP_SYS_ADMIN
 * over its mount namespace (root, or root of its own user namespace).
 * Returns 0, or -errno with *why; *unavailable when it could not make a
 * mount namespace, and nothing changed. */
int jail_enter(struct jail *jail, bool *unavailable, const char **why);

void jail_free(struct jail *jail);

/* Where share i is inside the jail. */
#define JAIL_SHARE_FMT "/shares/%u"

#endif
