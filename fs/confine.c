/* Host file access that keeps the guest inside its share. */
#include "fs/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* openat2 below dirfd, never through a symlink or magic link; an fd or
 * -1 with errno set. */
static long open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
		/* openat2 refuses a mode without O_CREAT or O_TMPFILE. */
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_SYMLINKS,
	};
	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int confine_open_child(int dirfd, const char *name, int flags, mode_t mode)
{
	long fd = open_beneath(dirfd, name, flags, mode);

	/* Kernels before 5.6 (and valgrind) lack openat2. For one component,
	 * which is all the guest may name, O_NOFOLLOW is the same guard. */
	if (fd < 0 && errno == ENOSYS && !strchr(name, '/'))
		fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd < 0 ? -errno : (int)fd;
}

int confine_open_path(int dirfd, const char *path, int flags)
{
	long fd = open_beneath(dirfd, path, flags, 0);

	return fd < 0 ? -errno : (int)fd;
}

int confine_reopen(int proc_fd, int fd, int flags)
{
	int r = openat(proc_fd, confine_fd_name(fd).s, flags | O_CLOEXEC);

	return r < 0 ? -errno : r;
}

/* Deeper than any real tree: a walk this long is a loop (a bind mount of
 * a directory inside itself) and counts as outside. */
#define CONFINE_MAX_DEPTH 4096

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int confine_below(int fd, const struct stat *root)
{
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	int result = 0;

	if (cur < 0)
		return -errno;
	for (int depth = 0; depth < CONFINE_MAX_DEPTH; depth++) {
		struct stat st, up_st;

		if (fstat(cur, &st) < 0) {
			result = -errno;
			break;
		}
		if (same_file(&st, root)) {
			result = 1;
			break;
		}
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (up < 0) {
			result = -errno;
			break;
		}
		close(cur);
		cur = up;
		if (fstat(cur, &up_st) < 0) {
			result = -errno;
			break;
		}
		if (same_file(&up_st, &st))
			break; /* "/" is its own parent: root was not on the way */
	}
	close(cur);
	return result;
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
