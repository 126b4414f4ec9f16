/* Reply building (attributes, entries, timeouts) and request references. */
#include <errno.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"
#include "fs/iov.h"

size_t fuse_reply_header(const struct iovec *out, int out_cnt, uint64_t unique,
			 int result)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh) + (result > 0 ? (uint32_t)result : 0),
		.error = result < 0 ? result : 0,
		.unique = unique,
	};
	iov_copy_to(out, out_cnt, 0, &oh, sizeof(oh));
	return oh.len;
}

int fuse_reply(struct fuse_req *req, const void *data, size_t len)
{
	if (len > req->out_room)
		return -ERANGE;
	iov_copy_to(req->out, req->out_cnt, sizeof(struct fuse_out_header),
		    data, len);
	return (int)len;
}

/* The guest decodes rdev with the kernel's new_decode_dev(). */
static uint32_t encode_rdev(dev_t dev)
{
	uint32_t maj = major(dev), min = minor(dev);

	return (min & 0xff) | (maj << 8) | ((min & ~0xffu) << 12);
}

void fuse_fill_attr(const struct fuse_server *srv, enum host_fs_kind kind,
		    const struct stat *st, struct fuse_attr *attr)
{
	/* A sealed mount point: an empty directory of root's, nothing of the
	 * pseudo file system's own (its link count is the host's number of
	 * processes, for one). */
	if (kind == HOST_FS_PSEUDO) {
		*attr = (struct fuse_attr){
			.ino = st->st_ino, .mode = S_IFDIR | 0555, .nlink = 2,
			.blksize = FUSE_PAGE_SIZE,
		};
		return;
	}
	*attr = (struct fuse_attr){
		.ino = st->st_ino,
		.size = (uint64_t)st->st_size,
		.blocks = (uint64_t)st->st_blocks,
		.atime = (uint64_t)st->st_atim.tv_sec,
		.mtime = (uint64_t)st->st_mtim.tv_sec,
		.ctime = (uint64_t)st->st_ctim.tv_sec,
		.atimensec = (uint32_t)st->st_atim.tv_nsec,
		.mtimensec = (uint32_t)st->st_mtim.tv_nsec,
		.ctimensec = (uint32_t)st->st_ctim.tv_nsec,
		.mode = st->st_mode,
		.nlink = (uint32_t)st->st_nlink,
		.uid = st->st_uid,
		.gid = st->st_gid,
		.rdev = encode_rdev(st->st_rdev),
		/* DAX in the guest needs page-sized blocks (it sets
		 * i_blkbits from this); 9p and NFS report far larger. */
		.blksize = srv->dax ? FUSE_PAGE_SIZE : (uint32_t)st->st_blksize,
	};
	/* The guest (mounted with dax=inode) maps the files we mark: those
	 * of ordinary file systems, when there is a window, but small ones
	 * where the guest caches what it reads (without a cache each read
	 * would be a READ). A file that crosses the size keeps the mode its
	 * inode began with until the guest drops the inode (Linux marks it
	 * not to be cached). */
	if (S_ISREG(st->st_mode) && kind == HOST_FS_MAPPABLE &&
	    (srv->cache == FUSE_CACHE_NONE ||
	     (uint64_t)st->st_size >= FUSE_DAX_MIN_FILE_SIZE) &&
	    fuse_negotiated(srv, FUSE_HAS_INODE_DAX))
		attr->flags |= FUSE_ATTR_DAX;
}

uint64_t fuse_cache_timeout(const struct fuse_server *srv)
{
	switch (srv->cache) {
	case FUSE_CACHE_NONE:
		return 0;
	case FUSE_CACHE_AUTO:
		return 1;
	case FUSE_CACHE_ALWAYS:
		break;
	}
	return 86400;
}

int fuse_file_kind(dev_t dir_dev, enum host_fs_kind dir_kind, int fd,
		   const struct stat *st)
{
	return st->st_dev == dir_dev ? (int)dir_kind : host_fs_kind(fd);
}

int fuse_add_entry(struct fuse_server *srv, dev_t dir_dev,
		   enum host_fs_kind dir_kind, int fd, const struct stat *st,
		   struct fuse_entry_out *entry)
{
	int kind = fuse_file_kind(dir_dev, dir_kind, fd, st);
	if (kind == HOST_FS_PSEUDO && !S_ISDIR(st->st_mode))
		kind = -ENOENT;
	if (kind < 0) {
		close(fd);
		return kind;
	}
	uint64_t nodeid;
	int err = inode_table_add_lookup(&srv->inodes, fd, st, kind, &nodeid);

	if (err)
		return err;
	/* Node ids are never reused, so generation can stay 0. */
	*entry = (struct fuse_entry_out){
		.nodeid = nodeid,
		.entry_valid = fuse_cache_timeout(srv),
		.attr_valid = fuse_cache_timeout(srv),
	};
	fuse_fill_attr(srv, kind, st, &entry->attr);
	return 0;
}

struct inode *fuse_inode(struct fuse_req *req, uint64_t nodeid)
{
	struct inode *inode = inode_get(&req->srv->inodes, nodeid);

	if (inode && inode->fd < 0) {
		inode_put(&req->srv->inodes, inode);
		return NULL;
	}
	return inode;
}

void fuse_put_inode(struct fuse_req *req, struct inode *inode)
{
	inode_put(&req->srv->inodes, inode);
}

struct handle *fuse_handle(struct fuse_req *req, uint64_t fh)
{
	struct handle *h = handle_get(&req->srv->handles, fh);

	if (h && h->fd < 0) {
		handle_put(&req->srv->handles, h);
		return NULL;
	}
	return h;
}

int fuse_handle_missing(struct fuse_req *req, uint64_t fh)
{
	struct handle *h = handle_get(&req->srv->handles, fh);

	if (!h)
		return -EBADF;
	handle_put(&req->srv->handles, h);
	return -ESTALE;
}

void fuse_put_handle(struct fuse_req *req, struct handle *h)
{
	handle_put(&req->srv->handles, h);
}

void fuse_unmake(int dir_fd, const char *name, const struct stat *st)
{
	struct stat now;

	if (fstatat(dir_fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now.st_dev == st->st_dev && now.st_ino == st->st_ino)
		unlinkat(dir_fd, name, S_ISDIR(now.st_mode) ? AT_REMOVEDIR : 0);
}

static bool is_fallback(const struct fuse_fallback_id *fallback, uint32_t id)
{
	return fallback->set && (id == fallback->guest || id == fallback->host);
}

mode_t fuse_drop_fallback_setid(const struct fuse_server *srv, mode_t type,
				mode_t mode, uid_t owner, gid_t group)
{
	/* A directory's set-group-ID only passes its group on to new files,
	 * each of which comes through here; neither bit runs anything. */
	if (type == S_IFDIR)
		return mode;
	if (is_fallback(&srv->fallback_uid, owner))
		mode &= ~S_ISUID;
	if (is_fallback(&srv->fallback_gid, group))
		mode &= ~S_ISGID;
	return mode;
}

int fuse_adopt_new(struct fuse_req *req, int parent_fd, int fd, mode_t mode,
		   struct stat *st)
{
	struct stat parent;
	uid_t uid = req->hdr.uid;
	gid_t gid = req->hdr.gid;
	uid_t owner = st->st_uid;
	gid_t group = st->st_gid;
	mode_t want = mode & 07777;
	bool changed = false;
	int err = confine_stat(parent_fd, &parent);

	if (err)
		return err;
	/* In a set-group-ID directory the host already gave the file the
	 * directory's group (and a new directory the bit): keep both. */
	if (parent.st_mode & S_ISGID) {
		gid = parent.st_gid;
		if (S_ISDIR(st->st_mode))
			want |= S_ISGID;
	}
	/* As root, or root of fsvm's user namespace, the file can be the
	 * caller's; a guest id with no host id (EINVAL) owns nothing here;
	 * and an fsvm without either (EPERM) owns all it makes. */
	if (st->st_uid != uid || st->st_gid != gid) {
		if (!fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
			changed = true;
			owner = uid;
			group = gid;
		} else if (errno == EINVAL) {
			return -EOVERFLOW;
		} else if (errno != EPERM) {
			return -errno;
		}
	}
	want = fuse_drop_fallback_setid(req->srv, st->st_mode & S_IFMT, want,
					owner, group);
	/* The host's umask may have taken permission bits, and the file was
	 * made without set-ID bits: put back what the guest may have. */
	if (!S_ISLNK(st->st_mode) &&
	    ((st->st_mode & 0777) != (want & 0777) || (want & 07000))) {
		if (fchmodat(req->srv->proc_fd, confine_fd_name(fd).s, want, 0))
			return -errno;
		changed = true;
	}
	return changed ? confine_stat(fd, st) : 0;
}
