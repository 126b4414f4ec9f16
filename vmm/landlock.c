/* Landlock rules for the shares (vmm/landlock.h): one ruleset handling
 * every file-system right of ABI 2, one rule beneath each share. */
#include "vmm/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ABI 2 (Linux 5.19): REFER, without which ABI 1 refuses every rename
 * and link across folders. Later rights (truncate, device ioctls) stay
 * unhandled, that is allowed, on kernels that have them. */
#define LANDLOCK_ABI_NEEDED 2
#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_DEVICES (LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK)
#define FS_ALL                                                                  \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | FS_READ | \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |        \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |            \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |            \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |          \
	 LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER)

/* What fsvm may do beneath a share: never execute (it never runs a
 * share's files), device nodes only for a :dev share. */
static __u64 share_rights(const struct landlock_share *s)
{
	if (s->readonly)
		return FS_READ;
	__u64 rights = FS_ALL & ~LANDLOCK_ACCESS_FS_EXECUTE;
	return s->devices ? rights : rights & ~FS_DEVICES;
}

static int add_rule(int ruleset, const struct landlock_share *s)
{
	int fd = open(s->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct landlock_path_beneath_attr rule = {.allowed_access = share_rights(s),
						  .parent_fd = fd};
	int err = syscall(SYS_landlock_add_rule, ruleset,
			  LANDLOCK_RULE_PATH_BENEATH, &rule, 0)
			  ? -errno
			  : 0;
	close(fd);
	return err;
}

/* Root of its namespace may restrict itself as it is; anyone else first
 * gives up gaining privileges (seccomp's filter asks that anyway). */
static int restrict_self(int ruleset)
{
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) == 0)
		return 0;
	if (errno != EPERM || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return syscall(SYS_landlock_restrict_self, ruleset, 0) ? -errno : 0;
}

int landlock_shares(const struct landlock_share *shares, unsigned int n,
		    const char **why)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < LANDLOCK_ABI_NEEDED)
		return -EOPNOTSUPP;
	struct landlock_ruleset_attr attr = {.handled_access_fs = FS_ALL};
	int ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset < 0) {
		*why = "cannot make a Landlock ruleset";
		return -errno;
	}
	int err = 0;
	for (unsigned int i = 0; !err && i < n; i++)
		if ((err = add_rule(ruleset, &shares[i])))
			*why = shares[i].path;
	if (!err && (err = restrict_self(ruleset)))
		*why = "cannot restrict itself with Landlock";
	close(ruleset);
	return err;
}
