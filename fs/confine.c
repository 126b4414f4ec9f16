/* Host file access that keeps the guest inside its share. */
#include "fs/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int confine_open_child(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
		/* openat2 refuses a mode without O_CREAT or O_TMPFILE. */
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_SYMLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

int confine_reopen(int proc_fd, int fd, int flags)
{
	int r = openat(proc_fd, confine_fd_name(fd).s, flags | O_CLOEXEC);

	return r < 0 ? -errno : r;
}

int confine_stat(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

struct confine_fd_name confine_fd_name(int fd)
{
	struct confine_fd_name n;

	snprintf(n.s, sizeof(n.s), "%d", fd);
	return n;
}

struct confine_fd_path confine_fd_path(int fd)
{
	struct confine_fd_path p;

	snprintf(p.s, sizeof(p.s), "/proc/self/fd/%d", fd);
	return p;
}
