/* Regular-file requests: OPEN, CREATE, READ, WRITE (zero copy) and the rest. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"
#include "fs/iov.h"

/* The guest's open flags, fit for the host: nothing that creates, follows
 * or grabs a tty, and no O_DIRECT, whose alignment rules guest buffers
 * need not meet. With a write-back cache or a DAX window the guest may
 * read or map a file it opened write-only, and appends are placed by the
 * guest: a host O_APPEND would move its writes. */
static int host_open_flags(const struct fuse_server *srv, uint32_t guest)
{
	int flags = (int)guest & (O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK |
				  O_SYNC | O_DSYNC | O_NOATIME | O_LARGEFILE);

	if (fuse_negotiated(srv, FUSE_WRITEBACK_CACHE) || srv->dax) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
	}
	if (fuse_negotiated(srv, FUSE_WRITEBACK_CACHE))
		flags &= ~O_APPEND;
	return flags;
}

static uint32_t open_reply_flags(const struct fuse_server *srv)
{
	switch (srv->cache) {
	case FUSE_CACHE_NONE:
		return FOPEN_DIRECT_IO;
	case FUSE_CACHE_AUTO:
		/* The page cache stays while attributes show the file
		 * unchanged: FUSE_AUTO_INVAL_DATA does that in the guest. */
		return 0;
	case FUSE_CACHE_ALWAYS:
		break;
	}
	return FOPEN_KEEP_CACHE;
}

static bool opens_for_writing(uint32_t guest_flags)
{
	return (guest_flags & O_ACCMODE) != O_RDONLY;
}

int fuse_kill_suidgid(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	/* Set-group-ID without group execute means mandatory locking, not
	 * privilege: the kernel leaves it, and so do we. */
	mode_t kill = S_ISUID | ((st.st_mode & S_IXGRP) ? S_ISGID : 0);

	if (!(st.st_mode & kill))
		return 0;
	return fchmod(fd, st.st_mode & 07777 & ~kill) ? -errno : 0;
}

/* Anything but a regular file the guest opens itself: directories with
 * OPENDIR, device nodes, FIFOs and sockets in its own kernel, so refusing
 * them keeps host devices out of reach and a FIFO from blocking us. */
int fuse_open_regular(struct fuse_server *srv, int fd, mode_t type, int flags)
{
	if (type != S_IFREG)
		return type == S_IFDIR ? -EISDIR : type == S_IFLNK ? -ELOOP : -EACCES;
	int r = confine_reopen(srv->proc_fd, fd, flags);
	/* The guest's exec asks for O_NOATIME, which only a file's owner (or
	 * root) may: for anyone else's file atime is the host's to keep. */
	if (r == -EPERM && (flags & O_NOATIME))
		r = confine_reopen(srv->proc_fd, fd, flags & ~O_NOATIME);
	return r;
}

static int add_handle(struct fuse_req *req, int fd, int flags,
		      enum host_fs_kind kind, struct fuse_open_out *out)
{
	*out = (struct fuse_open_out){ .open_flags = open_reply_flags(req->srv) };
	return handle_table_add(&req->srv->handles, fd, flags, kind, &out->fh);
}

int fuse_open(struct fuse_req *req)
{
	const struct fuse_open_in *in = (const void *)req->args;

	if (req->srv->readonly && (opens_for_writing(in->flags) || (in->flags & O_TRUNC)))
		return -EROFS;
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);

	if (!inode)
		return -ESTALE;
	int flags = host_open_flags(req->srv, in->flags);
	int fd = fuse_open_regular(req->srv, inode->fd, inode->type, flags);
	enum host_fs_kind kind = inode->kind;

	fuse_put_inode(req, inode);
	if (fd < 0)
		return fd;

	int err = 0;
	struct fuse_open_out out;

	if ((in->open_flags & FUSE_OPEN_KILL_SUIDGID) && (in->flags & O_TRUNC))
		err = fuse_kill_suidgid(fd);
	if (err) {
		close(fd);
		return err;
	}
	err = add_handle(req, fd, flags, kind, &out);
	return err ? err : fuse_reply(req, &out, sizeof(out));
}

/* CREATE and TMPFILE both answer with an entry and an open handle. */
struct create_reply {
	struct fuse_entry_out entry;
	struct fuse_open_out open;
};

/* Files fd (open with flags, taken over) under a handle and counts a
 * lookup of it; a file we created (as name in dir, or nameless: NULL)
 * first gets the caller's owner and mode, or goes again. */
static int reply_create(struct fuse_req *req, struct inode *dir, int fd,
			int flags, bool created, const char *name, mode_t mode)
{
	struct create_reply out;
	struct stat st;
	/* An O_PATH fd of exactly the file opened, whatever its name does. */
	int path_fd = confine_reopen(req->srv->proc_fd, fd, O_PATH);
	int err = path_fd < 0 ? path_fd : confine_stat(path_fd, &st);

	if (!err && created) {
		err = fuse_adopt_new(req, dir->fd, path_fd, mode, &st);
		if (err && name)
			fuse_unmake(dir->fd, name, &st);
	}
	/* The file's own: an existing one may be a mount point of another
	 * file system than its directory's. */
	int kind = err ? err : fuse_file_kind(dir->dev, dir->kind, path_fd, &st);

	if (kind < 0) {
		if (path_fd >= 0)
			close(path_fd);
		close(fd);
		return kind;
	}
	err = add_handle(req, fd, flags, kind, &out.open);
	if (err) {
		close(path_fd);
		return err;
	}
	/* Last, so that a failure leaves no lookup the guest cannot forget. */
	err = fuse_add_entry(req->srv, dir->dev, dir->kind, path_fd, &st,
			     &out.entry);
	if (err) {
		handle_table_remove(&req->srv->handles, out.open.fh);
		return err;
	}
	return fuse_reply(req, &out, sizeof(out));
}

/* Opens the file that already has name in dir with the guest's flags,
 * unless it lives on a pseudo file system (bound over the name): there
 * the open itself acts (O_TRUNC empties a tracefs buffer), so the file is
 * only looked at, through an O_PATH fd, which is then what is opened. */
static int open_existing(struct fuse_req *req, struct inode *dir,
			 const char *name, int flags)
{
	struct stat st;
	int path_fd = confine_open_child(dir->fd, name, O_PATH, 0);

	if (path_fd < 0)
		return path_fd;
	int err = confine_stat(path_fd, &st);
	int kind = err ? err : fuse_file_kind(dir->dev, dir->kind, path_fd, &st);
	int fd = kind < 0 ? kind
		 : kind == HOST_FS_PSEUDO ? -EACCES
		 : fuse_open_regular(req->srv, path_fd, st.st_mode & S_IFMT, flags);

	close(path_fd);
	return fd;
}

/* Creates name, or opens it if it exists and the guest did not ask for
 * O_EXCL. Creation is tried first, with O_EXCL, so that we know whether
 * the file is new: only a new file may be given the caller's owner. */
static int create_or_open(struct fuse_req *req, struct inode *dir,
			  const char *name, int flags, mode_t mode, bool exclusive,
			  bool *created)
{
	int fd = confine_open_child(dir->fd, name, flags | O_CREAT | O_EXCL,
				    fuse_mode_to_make(mode));

	*created = fd >= 0;
	if (fd != -EEXIST || exclusive)
		return fd;
	return open_existing(req, dir, name, flags);
}

int fuse_create(struct fuse_req *req)
{
	const struct fuse_create_in *in = (const void *)req->args;
	size_t off = sizeof(*in);
	const char *name;
	struct inode *dir;
	bool created;
	int err = fuse_args_dir_entry(req, &off, &name, &dir);

	if (err)
		return err;
	mode_t mode = in->mode & ~in->umask & 07777;
	int flags = host_open_flags(req->srv, in->flags);
	int fd = create_or_open(req, dir, name, flags, mode, in->flags & O_EXCL,
				&created);

	if (fd < 0)
		err = fd;
	else
		err = reply_create(req, dir, fd, flags, created, name, mode);
	fuse_put_inode(req, dir);
	return err;
}

/* The name TMPFILE carries is a placeholder ("/" in Linux 6.1): unused. */
int fuse_tmpfile(struct fuse_req *req)
{
	const struct fuse_create_in *in = (const void *)req->args;
	struct inode *dir = fuse_inode(req, req->hdr.nodeid);
	int err;

	if (!dir)
		return -ESTALE;
	mode_t mode = in->mode & ~in->umask & 07777;
	int flags = host_open_flags(req->srv, in->flags);
	int fd = confine_open_child(dir->fd, ".", flags | O_TMPFILE,
				    fuse_mode_to_make(mode));

	if (fd < 0)
		err = fd;
	else
		err = reply_create(req, dir, fd, flags, true, NULL, mode);
	fuse_put_inode(req, dir);
	return err;
}

int fuse_read(struct fuse_req *req)
{
	const struct fuse_read_in *in = (const void *)req->args;
	struct iovec view[IOV_MAX];
	size_t len;

	if (in->offset > INT64_MAX)
		return -EINVAL;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	/* Straight into the guest's buffers, after the reply header; as much
	 * as asked for and as fits. */
	int cnt = iov_view(view, IOV_MAX, req->out, req->out_cnt,
			   sizeof(struct fuse_out_header),
			   in->size < req->out_room ? in->size : req->out_room, &len);
	ssize_t n = preadv(h->fd, view, cnt, (off_t)in->offset);
	int err = n < 0 ? -errno : (int)n;

	fuse_put_handle(req, h);
	return err;
}

int fuse_write(struct fuse_req *req)
{
	const struct fuse_write_in *in = (const void *)req->args;
	struct iovec view[IOV_MAX];
	size_t len;

	/* The data must all be there, in the request itself. */
	if (in->size > req->args_len - sizeof(*in) || in->offset > INT64_MAX)
		return -EINVAL;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	int err = 0;

	if (in->write_flags & FUSE_WRITE_KILL_SUIDGID)
		err = fuse_kill_suidgid(h->fd);
	if (!err) {
		/* Straight from the guest's buffers into the file. */
		int cnt = iov_view(view, IOV_MAX, req->in, req->in_cnt,
				   sizeof(struct fuse_in_header) + sizeof(*in),
				   in->size, &len);
		ssize_t n = pwritev(h->fd, view, cnt, (off_t)in->offset);

		err = n < 0 ? -errno : 0;
		len = n < 0 ? 0 : (size_t)n;
	}
	fuse_put_handle(req, h);
	if (err)
		return err;

	struct fuse_write_out out = { .size = (uint32_t)len };

	return fuse_reply(req, &out, sizeof(out));
}

/* POSIX locks go with the guest's SETLK unlock on close, and data is
 * written through: there is nothing to flush but the handle to check. */
/* RELEASE and RELEASEDIR. */
int fuse_release(struct fuse_req *req)
{
	const struct fuse_release_in *in = (const void *)req->args;

	if (in->release_flags & FUSE_RELEASE_FLOCK_UNLOCK) {
		struct handle *h = fuse_handle(req, in->fh);

		/* Other requests may still hold the fd open a moment: the
		 * guest's flock must go now, not when they finish. */
		if (h) {
			flock(h->fd, LOCK_UN);
			fuse_put_handle(req, h);
		}
	}
	return handle_table_remove(&req->srv->handles, in->fh);
}

/* FSYNC and FSYNCDIR. */
int fuse_fsync(struct fuse_req *req)
{
	const struct fuse_fsync_in *in = (const void *)req->args;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	int r = (in->fsync_flags & FUSE_FSYNC_FDATASYNC) ? fdatasync(h->fd)
							  : fsync(h->fd);
	int err = r ? -errno : 0;

	fuse_put_handle(req, h);
	return err;
}

int fuse_fallocate(struct fuse_req *req)
{
	const struct fuse_fallocate_in *in = (const void *)req->args;

	if (in->offset > INT64_MAX || in->length > INT64_MAX)
		return -EINVAL;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	int err = fallocate(h->fd, (int)in->mode, (off_t)in->offset,
			    (off_t)in->length) ? -errno : 0;

	fuse_put_handle(req, h);
	return err;
}

int fuse_lseek(struct fuse_req *req)
{
	const struct fuse_lseek_in *in = (const void *)req->args;

	/* The guest places its own file position; it asks only for these. */
	if ((in->whence != SEEK_DATA && in->whence != SEEK_HOLE) ||
	    in->offset > INT64_MAX)
		return -EINVAL;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	off_t pos = lseek(h->fd, (off_t)in->offset, (int)in->whence);
	int err = pos < 0 ? -errno : 0;

	fuse_put_handle(req, h);
	if (err)
		return err;

	struct fuse_lseek_out out = { .offset = (uint64_t)pos };

	return fuse_reply(req, &out, sizeof(out));
}

int fuse_copy_file_range(struct fuse_req *req)
{
	const struct fuse_copy_file_range_in *in = (const void *)req->args;

	if (in->flags || in->off_in > INT64_MAX || in->off_out > INT64_MAX)
		return -EINVAL;
	struct handle *src = fuse_handle(req, in->fh_in);
	struct handle *dst = fuse_handle(req, in->fh_out);
	int err = 0;
	ssize_t n = 0;

	if (!src || !dst) {
		err = fuse_handle_missing(req, src ? in->fh_out : in->fh_in);
	} else {
		off_t off_in = (off_t)in->off_in, off_out = (off_t)in->off_out;
		/* The reply counts in 32 bits; the guest asks again for more. */
		size_t len = in->len < UINT32_MAX ? in->len : UINT32_MAX;

		n = copy_file_range(src->fd, &off_in, dst->fd, &off_out, len, 0);
		if (n < 0)
			err = -errno;
	}
	if (src)
		fuse_put_handle(req, src);
	if (dst)
		fuse_put_handle(req, dst);
	if (err)
		return err;

	struct fuse_write_out out = { .size = (uint32_t)n };

	return fuse_reply(req, &out, sizeof(out));
}
