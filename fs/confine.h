/* Host file access that keeps the guest inside its share. */
#ifndef FSVM_CONFINE_H
#define FSVM_CONFINE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Opens name, one component, below dirfd with openat2: RESOLVE_BENEATH and
 * no symlinks or magic links anywhere, so a trailing symlink is opened
 * itself (with O_PATH|O_NOFOLLOW) or refused. Returns an fd or -errno. */
int confine_open_child(int dirfd, const char *name, int flags, mode_t mode);

/* As confine_open_child, for a relative path of any number of components
 * (none of them a symlink), and never without openat2 (-ENOSYS): a path
 * that walks needs RESOLVE_BENEATH to stay below dirfd. */
int confine_open_path(int dirfd, const char *path, int flags);

/* Opens the file an O_PATH fd names, for I/O, through proc_fd (an open
 * /proc/self/fd): the path is the fd itself, so nothing is resolved anew.
 * The caller refuses symlinks first. Returns an fd or -errno. */
int confine_reopen(int proc_fd, int fd, int flags);

/* True (1) if the directory open at fd is root or lies below it, walking
 * up through "..": a directory the host moved out of the share is not, so
 * its parent is out of the guest's reach. Returns 1, 0 or -errno. */
int confine_below(int fd, const struct stat *root);

/* lstat of what an O_PATH fd names. Returns 0 or -errno. */
int confine_stat(int fd, struct stat *st);

/* The name of fd inside /proc/self/fd, for the *at() calls that take no
 * AT_EMPTY_PATH (chmod, link). */
struct confine_fd_name {
	char s[16];
};
struct confine_fd_name confine_fd_name(int fd);

/* "/proc/self/fd/N" for fd, for the xattr calls, which have no *at()
 * form: they act on what fd names, a symlink included. */
struct confine_fd_path {
	char s[32];
};
struct confine_fd_path confine_fd_path(int fd);

#endif
