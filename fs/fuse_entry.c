/* Requests on one inode: LOOKUP, FORGET, GETATTR, SETATTR, ACCESS, READLINK. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"

/* Opens dir's parent (O_PATH), if it is in the share. A directory the
 * guest knows may have been moved out of the share on the host since:
 * its parent is then outside, and not the guest's to see. */
static int open_parent(struct fuse_req *req, struct inode *dir)
{
	struct inode *root = req->srv->inodes.root;
	struct stat root_st = { .st_dev = root->dev, .st_ino = root->ino };

	/* Root's parent is outside: there ".." is root again. */
	int fd = dir == root ? fcntl(dir->fd, F_DUPFD_CLOEXEC, 0)
			     : openat(dir->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || dir == root)
		return fd < 0 ? -errno : fd;
	int below = confine_below(fd, &root_st);

	if (below == 1)
		return fd;
	close(fd);
	return below < 0 ? below : -ENOENT;
}

/* Opens (O_PATH) what name names in dir. "." and ".." reach us only from
 * the guest's NFS export code (we offer EXPORT_SUPPORT): "." is dir
 * itself, ".." its parent within the share. */
static int open_entry(struct fuse_req *req, struct inode *dir, const char *name)
{
	if (dir->type != S_IFDIR)
		return -ENOTDIR;
	if (!strcmp(name, "..")) {
		return open_parent(req, dir);
	} else if (!strcmp(name, ".")) {
		int fd = fcntl(dir->fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if (strchr(name, '/'))
		return -EINVAL;
	return confine_open_child(dir->fd, name, O_PATH, 0);
}

int fuse_lookup(struct fuse_req *req)
{
	size_t off = 0;
	const char *name;
	int err = fuse_args_string(req, &off, NAME_MAX, &name);

	if (err)
		return err;
	struct inode *dir = fuse_inode(req, req->hdr.nodeid);

	if (!dir)
		return -ESTALE;
	/* Nothing of a pseudo file system is shown below its mount point. */
	int fd = dir->kind == HOST_FS_PSEUDO ? -ENOENT : open_entry(req, dir, name);
	dev_t dir_dev = dir->dev;
	enum host_fs_kind dir_kind = dir->kind;

	fuse_put_inode(req, dir);
	struct fuse_entry_out entry;
	uint64_t timeout = fuse_cache_timeout(req->srv);

	/* A name that is not there, for as long as names that are stay
	 * cached: node id 0 lets the guest keep the negative entry (PATH
	 * searches, .gitignore probes, imports ask again and again). */
	if (fd == -ENOENT && timeout) {
		entry = (struct fuse_entry_out){.entry_valid = timeout};
		return fuse_reply(req, &entry, sizeof(entry));
	}
	if (fd < 0)
		return fd;

	struct stat st;

	err = confine_stat(fd, &st);
	if (err) {
		close(fd);
		return err;
	}
	err = fuse_add_entry(req->srv, dir_dev, dir_kind, fd, &st, &entry);
	return err ? err : fuse_reply(req, &entry, sizeof(entry));
}

int fuse_forget(struct fuse_req *req)
{
	const struct fuse_forget_in *in = (const void *)req->args;

	inode_table_forget(&req->srv->inodes, req->hdr.nodeid, in->nlookup);
	return 0;
}

int fuse_batch_forget(struct fuse_req *req)
{
	const struct fuse_batch_forget_in *in = (const void *)req->args;
	size_t off = sizeof(*in);

	/* count is the guest's word: the entries actually sent bound it. */
	for (uint32_t i = 0; i < in->count; i++, off += sizeof(struct fuse_forget_one)) {
		struct fuse_forget_one one;

		if (fuse_args_read(req, off, &one, sizeof(one)) < sizeof(one))
			break;
		inode_table_forget(&req->srv->inodes, one.nodeid, one.nlookup);
	}
	return 0;
}

static int reply_attr(struct fuse_req *req, enum host_fs_kind kind,
		      const struct stat *st)
{
	struct fuse_attr_out out = { .attr_valid = fuse_cache_timeout(req->srv) };

	fuse_fill_attr(req->srv, kind, st, &out.attr);
	return fuse_reply(req, &out, sizeof(out));
}

int fuse_getattr(struct fuse_req *req)
{
	const struct fuse_getattr_in *in = (const void *)req->args;
	struct stat st;
	enum host_fs_kind kind;
	int err;

	if (in->getattr_flags & FUSE_GETATTR_FH) {
		struct handle *h = fuse_handle(req, in->fh);

		if (!h)
			return fuse_handle_missing(req, in->fh);
		err = fstat(h->fd, &st) ? -errno : 0;
		kind = h->kind;
		fuse_put_handle(req, h);
	} else {
		struct inode *inode = fuse_inode(req, req->hdr.nodeid);

		if (!inode)
			return -ESTALE;
		err = confine_stat(inode->fd, &st);
		kind = inode->kind;
		fuse_put_inode(req, inode);
	}
	return err ? err : reply_attr(req, kind, &st);
}

/* Truncates through the guest's handle when it names one, else through a
 * write-only reopen of the inode. */
static int set_size(struct fuse_req *req, struct inode *inode, struct handle *h,
		    const struct fuse_setattr_in *in)
{
	int fd = h ? h->fd : -1;
	int err = 0;

	if (in->size > INT64_MAX)
		return -EINVAL;
	if (!h) {
		if (inode->type != S_IFREG)
			return inode->type == S_IFDIR ? -EISDIR : -EINVAL;
		fd = confine_reopen(req->srv->proc_fd, inode->fd, O_WRONLY);
		if (fd < 0)
			return fd;
	}
	if (in->valid & FATTR_KILL_SUIDGID)
		err = fuse_kill_suidgid(fd);
	if (!err && ftruncate(fd, (off_t)in->size))
		err = -errno;
	if (!h)
		close(fd);
	return err;
}

static struct timespec setattr_time(uint32_t valid, uint32_t set, uint32_t now,
				    uint64_t sec, uint32_t nsec)
{
	if (!(valid & set))
		return (struct timespec){ .tv_nsec = UTIME_OMIT };
	if (valid & now)
		return (struct timespec){ .tv_nsec = UTIME_NOW };
	return (struct timespec){ .tv_sec = (time_t)sec, .tv_nsec = nsec };
}

/* The mode SETATTR asks for, less set-ID bits for a fallback owner or
 * group: the file's now, which it keeps until the chown that may follow,
 * and that chown's. A chown alone needs nothing: the host's own takes
 * set-user-ID and group-executable set-group-ID from all but directories. */
static int setattr_mode(struct fuse_req *req, const struct inode *inode,
			const struct fuse_setattr_in *in, mode_t *mode)
{
	struct stat st;

	*mode = in->mode & 07777;
	if (!(*mode & (S_ISUID | S_ISGID)))
		return 0;
	int err = confine_stat(inode->fd, &st);

	if (err)
		return err;
	*mode = fuse_drop_fallback_setid(req->srv, inode->type, *mode,
					 st.st_uid, st.st_gid);
	*mode = fuse_drop_fallback_setid(req->srv, inode->type, *mode,
					 in->valid & FATTR_UID ? in->uid : st.st_uid,
					 in->valid & FATTR_GID ? in->gid : st.st_gid);
	return 0;
}

/* In the order the kernel's own setattr works: mode, owner, size, times.
 * ctime follows from the others; lock_owner matters to no host call. */
static int apply_setattr(struct fuse_req *req, struct inode *inode,
			 struct handle *h, const struct fuse_setattr_in *in)
{
	int err;

	if (in->valid & FATTR_MODE) {
		mode_t mode;

		/* Linux has no symlink permissions to change. */
		if (inode->type == S_IFLNK)
			return -EOPNOTSUPP;
		err = setattr_mode(req, inode, in, &mode);
		if (err)
			return err;
		if (fchmodat(req->srv->proc_fd, confine_fd_name(inode->fd).s,
			     mode, 0))
			return -errno;
	}
	if (in->valid & (FATTR_UID | FATTR_GID)) {
		uid_t uid = in->valid & FATTR_UID ? in->uid : (uid_t)-1;
		gid_t gid = in->valid & FATTR_GID ? in->gid : (gid_t)-1;

		if (fchownat(inode->fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	if (in->valid & FATTR_SIZE) {
		err = set_size(req, inode, h, in);
		if (err)
			return err;
	}
	if (in->valid & (FATTR_ATIME | FATTR_MTIME)) {
		struct timespec times[2] = {
			setattr_time(in->valid, FATTR_ATIME, FATTR_ATIME_NOW,
				     in->atime, in->atimensec),
			setattr_time(in->valid, FATTR_MTIME, FATTR_MTIME_NOW,
				     in->mtime, in->mtimensec),
		};

		if (utimensat(inode->fd, "", times,
			      AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	return 0;
}

int fuse_setattr(struct fuse_req *req)
{
	const struct fuse_setattr_in *in = (const void *)req->args;
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);
	struct handle *h = NULL;
	struct stat st;
	int err;

	if (!inode)
		return -ESTALE;
	if (in->valid & FATTR_FH) {
		h = fuse_handle(req, in->fh);
		if (!h) {
			fuse_put_inode(req, inode);
			return fuse_handle_missing(req, in->fh);
		}
	}
	err = apply_setattr(req, inode, h, in);
	if (!err)
		err = confine_stat(inode->fd, &st);
	enum host_fs_kind kind = inode->kind;
	if (h)
		fuse_put_handle(req, h);
	fuse_put_inode(req, inode);
	return err ? err : reply_attr(req, kind, &st);
}

/* The guest mounts with default_permissions and checks access itself, so
 * this is a courtesy: owner, primary group and other bits against the
 * caller's uid and gid (we are not told supplementary groups or ACLs). */
int fuse_access(struct fuse_req *req)
{
	const struct fuse_access_in *in = (const void *)req->args;
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);
	struct stat st;

	if (!inode)
		return -ESTALE;
	int err = confine_stat(inode->fd, &st);

	fuse_put_inode(req, inode);
	if (err)
		return err;
	if ((in->mask & W_OK) && req->srv->readonly)
		return -EROFS;

	unsigned want = in->mask & (R_OK | W_OK | X_OK);
	unsigned have;

	if (req->hdr.uid == 0)
		/* Root passes everything but executing a file nobody may. */
		have = R_OK | W_OK |
		       ((S_ISDIR(st.st_mode) || (st.st_mode & 0111)) ? X_OK : 0);
	else if (req->hdr.uid == st.st_uid)
		have = (st.st_mode >> 6) & 7;
	else if (req->hdr.gid == st.st_gid)
		have = (st.st_mode >> 3) & 7;
	else
		have = st.st_mode & 7;
	return (want & ~have) ? -EACCES : 0;
}

int fuse_readlink(struct fuse_req *req)
{
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);
	char target[PATH_MAX];

	if (!inode)
		return -ESTALE;
	if (inode->type != S_IFLNK) {
		fuse_put_inode(req, inode);
		return -EINVAL;
	}
	ssize_t n = readlinkat(inode->fd, "", target, sizeof(target));
	int err = n < 0 ? -errno : 0;

	fuse_put_inode(req, inode);
	return err ? err : fuse_reply(req, target, (size_t)n);
}
