/* Name changes: MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR, RENAME(2). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"

/* Counts a lookup of the file fd names (O_PATH, taken over), now in dir,
 * and replies with its entry. */
static int reply_entry(struct fuse_req *req, const struct inode *dir, int fd,
		       struct stat *st)
{
	struct fuse_entry_out entry;
	int err = fuse_add_entry(req->srv, dir->dev, dir->kind, fd, st, &entry);

	return err ? err : fuse_reply(req, &entry, sizeof(entry));
}

/* Finishes creating name in dir: gives it the caller's owner and mode and
 * replies with its entry. */
static int reply_created(struct fuse_req *req, struct inode *dir,
			 const char *name, mode_t mode)
{
	int fd = confine_open_child(dir->fd, name, O_PATH, 0);
	struct stat st;

	if (fd < 0)
		return fd;
	int err = confine_stat(fd, &st);

	if (!err) {
		err = fuse_adopt_new(req, dir->fd, fd, mode, &st);
		if (err)
			fuse_unmake(dir->fd, name, &st);
	}
	if (err) {
		close(fd);
		return err;
	}
	return reply_entry(req, dir, fd, &st);
}

/* The guest encodes rdev with the kernel's new_encode_dev(). */
static dev_t decode_rdev(uint32_t rdev)
{
	return makedev((rdev & 0xfff00) >> 8, (rdev & 0xff) | ((rdev >> 12) & 0xfff00));
}

int fuse_mknod(struct fuse_req *req)
{
	const struct fuse_mknod_in *in = (const void *)req->args;
	size_t off = sizeof(*in);
	const char *name;
	struct inode *dir;

	switch (in->mode & S_IFMT) {
	case S_IFREG: case S_IFIFO: case S_IFSOCK:
		break;
	case S_IFCHR: case S_IFBLK:
		/* A device node on the host is a door to that device for
		 * whoever can reach it there: only where the share asks. */
		if (!req->srv->devices)
			return -EPERM;
		break;
	default:
		return -EINVAL;
	}
	int err = fuse_args_dir_entry(req, &off, &name, &dir);

	if (err)
		return err;
	mode_t mode = in->mode & ~in->umask & 07777;

	if (mknodat(dir->fd, name, (in->mode & S_IFMT) | fuse_mode_to_make(mode),
		    decode_rdev(in->rdev)))
		err = -errno;
	else
		err = reply_created(req, dir, name, mode);
	fuse_put_inode(req, dir);
	return err;
}

int fuse_mkdir(struct fuse_req *req)
{
	const struct fuse_mkdir_in *in = (const void *)req->args;
	size_t off = sizeof(*in);
	const char *name;
	struct inode *dir;
	int err = fuse_args_dir_entry(req, &off, &name, &dir);

	if (err)
		return err;
	mode_t mode = in->mode & ~in->umask & 07777;

	if (mkdirat(dir->fd, name, mode))
		err = -errno;
	else
		err = reply_created(req, dir, name, mode);
	fuse_put_inode(req, dir);
	return err;
}

/* The target is only text to the host: it is stored, never followed. */
int fuse_symlink(struct fuse_req *req)
{
	size_t off = 0;
	const char *name, *target;
	int err = fuse_args_name(req, &off, &name);

	if (!err)
		err = fuse_args_string(req, &off, PATH_MAX - 1, &target);
	if (err)
		return err;
	struct inode *dir = fuse_inode(req, req->hdr.nodeid);

	if (!dir)
		return -ESTALE;
	if (symlinkat(target, dir->fd, name))
		err = -errno;
	else
		err = reply_created(req, dir, name, 0777);
	fuse_put_inode(req, dir);
	return err;
}

int fuse_link(struct fuse_req *req)
{
	const struct fuse_link_in *in = (const void *)req->args;
	size_t off = sizeof(*in);
	const char *name;
	int err = fuse_args_name(req, &off, &name);

	if (err)
		return err;
	struct inode *dir = fuse_inode(req, req->hdr.nodeid);
	struct inode *old = fuse_inode(req, in->oldnodeid);
	int fd = -1;

	if (!dir || !old) {
		err = -ESTALE;
		goto out;
	}
	if (old->kind == HOST_FS_PSEUDO) {
		err = -EACCES;
		goto out;
	}
	/* Linking through /proc/self/fd needs no CAP_DAC_READ_SEARCH, unlike
	 * AT_EMPTY_PATH, and links a symlink itself, not its target. */
	if (linkat(req->srv->proc_fd, confine_fd_name(old->fd).s, dir->fd, name,
		   AT_SYMLINK_FOLLOW) ||
	    (fd = fcntl(old->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		err = -errno;
		goto out;
	}
	struct stat st;

	err = confine_stat(fd, &st);
	if (err)
		close(fd);
	else
		err = reply_entry(req, dir, fd, &st);
out:
	if (old)
		fuse_put_inode(req, old);
	if (dir)
		fuse_put_inode(req, dir);
	return err;
}

static int remove_name(struct fuse_req *req, int flags)
{
	size_t off = 0;
	const char *name;
	int err = fuse_args_name(req, &off, &name);

	if (err)
		return err;
	struct inode *dir = fuse_inode(req, req->hdr.nodeid);

	if (!dir)
		return -ESTALE;
	err = unlinkat(dir->fd, name, flags) ? -errno : 0;
	fuse_put_inode(req, dir);
	return err;
}

int fuse_unlink(struct fuse_req *req)
{
	return remove_name(req, 0);
}

int fuse_rmdir(struct fuse_req *req)
{
	return remove_name(req, AT_REMOVEDIR);
}

/* Both names follow the fixed argument of arg_size bytes. */
static int rename_names(struct fuse_req *req, size_t arg_size, uint64_t newdir,
			unsigned flags)
{
	size_t off = arg_size;
	const char *old_name, *new_name;
	int err = fuse_args_name(req, &off, &old_name);

	if (!err)
		err = fuse_args_name(req, &off, &new_name);
	if (err)
		return err;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	struct inode *old_dir = fuse_inode(req, req->hdr.nodeid);
	struct inode *new_dir = fuse_inode(req, newdir);

	if (!old_dir || !new_dir)
		err = -ESTALE;
	else if (new_dir->kind == HOST_FS_PSEUDO)
		err = -EACCES;
	else if (renameat2(old_dir->fd, old_name, new_dir->fd, new_name, flags))
		err = -errno;
	if (old_dir)
		fuse_put_inode(req, old_dir);
	if (new_dir)
		fuse_put_inode(req, new_dir);
	return err;
}

int fuse_rename(struct fuse_req *req)
{
	const struct fuse_rename_in *in = (const void *)req->args;

	return rename_names(req, sizeof(*in), in->newdir, 0);
}

int fuse_rename2(struct fuse_req *req)
{
	const struct fuse_rename2_in *in = (const void *)req->args;

	return rename_names(req, sizeof(*in), in->newdir, in->flags);
}
