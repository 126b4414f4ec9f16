/* Who fsvm is on the host once set-up is done. Unless asked to stay host
 * root, it moves into a user namespace of its own whose id maps are the
 * guest's ids on the host: guest root is an unprivileged host user, the
 * host kernel itself refuses what that user may not do (another user's
 * files, device nodes, set-id files for ids it does not own), and the
 * ids the guest sees and sets are translated both ways by the kernel. */
#ifndef FSVM_IDENTITY_H
#define FSVM_IDENTITY_H

#include <stdbool.h>

#include "fs/fuse_server.h"
#include "vmm/cli.h"

struct identity {
	bool host_root; /* stay as we are: root, ids unchanged */
	bool user;      /* --user: uid[0] and gid[0] are the command's ids */
	struct cli_id_map uid[CLI_MAX_ID_MAPS];
	unsigned int nr_uid;
	struct cli_id_map gid[CLI_MAX_ID_MAPS];
	unsigned int nr_gid;
	/* Guest root's (--user: the user's) uid and gid fell back to
	 * nobody, whom the user did not name (root without $SUDO_UID). */
	struct fuse_fallback_id fallback_uid, fallback_gid;
};

/* The maps from the configuration, or the default: guest root is the
 * calling user (started as root: $SUDO_UID/$SUDO_GID, else nobody).
 * Returns 0, or -EPERM with *why when --host-root is asked of a
 * non-root fsvm. */
int identity_plan(const struct fsvm_config *cfg, struct identity *id,
		  const char **why);

/* --user: the user's home folder and name (from the password database;
 * $HOME and "" when it has no entry), valid until the next call. */
void identity_user_home(const struct identity *id, const char **home,
			const char **name);

/* Takes on the planned identity: the process must have one thread. Once
 * done, the process is root in its user namespace (it owns the files of
 * mapped ids, and nothing else). If user namespaces are not available, an
 * unprivileged fsvm goes on as itself and a root one becomes the map's
 * user for guest root, ids unmapped (said with -v). Returns 0 or -errno
 * with *why. */
int identity_assume(const struct identity *id, const char **why);

#endif
