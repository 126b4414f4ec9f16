/* Directory listing: OPENDIR, READDIR, READDIRPLUS, resumable at d_off. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"
#include "fs/iov.h"

int fuse_opendir(struct fuse_req *req)
{
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);

	if (!inode)
		return -ESTALE;
	int fd = inode->type == S_IFDIR ?
		 confine_reopen(req->srv->proc_fd, inode->fd, O_RDONLY | O_DIRECTORY) :
		 -ENOTDIR;
	enum host_fs_kind kind = inode->kind;

	fuse_put_inode(req, inode);
	if (fd < 0)
		return fd;

	struct fuse_open_out out = {
		.open_flags = req->srv->cache == FUSE_CACHE_ALWAYS ? FOPEN_CACHE_DIR : 0,
	};
	int err = handle_table_add(&req->srv->handles, fd, O_RDONLY | O_DIRECTORY,
				   kind, &out.fh);

	return err ? err : fuse_reply(req, &out, sizeof(out));
}

/* Room for the longest record: a fuse_direntplus and a NAME_MAX name. */
union dir_record {
	struct fuse_direntplus plus;
	unsigned char bytes[FUSE_DIRENT_ALIGN(sizeof(struct fuse_direntplus) + NAME_MAX)];
};

/* The directory being listed. */
struct listing {
	int fd;
	dev_t dev;
	enum host_fs_kind kind;
	bool plus; /* READDIRPLUS: entries come with their attributes */
};

/* For READDIRPLUS: counts a lookup of the entry, as the guest will keep
 * it. "." and ".." the guest skips without counting, and an entry that
 * vanished since the listing (or that is never shown) goes out as a bare
 * name: node id 0 tells the guest we have no attributes for it. */
static void lookup_entry(struct fuse_req *req, const struct listing *dir,
			 const char *name, struct fuse_entry_out *entry)
{
	struct stat st;

	memset(entry, 0, sizeof(*entry));
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return;
	int fd = confine_open_child(dir->fd, name, O_PATH, 0);

	if (fd < 0)
		return;
	if (confine_stat(fd, &st)) {
		close(fd);
		return;
	}
	/* fuse_add_entry() closes fd itself when it fails. */
	if (fuse_add_entry(req->srv, dir->dev, dir->kind, fd, &st, entry))
		memset(entry, 0, sizeof(*entry));
}

/* Writes one record at reply offset used, if it fits in room. Returns its
 * size, or 0 when it does not fit (and then nothing is counted). */
static size_t put_record(struct fuse_req *req, const struct listing *dir,
			 const struct dirent64 *d, size_t used, size_t room)
{
	bool plus = dir->plus;
	union dir_record rec;
	size_t namelen = strlen(d->d_name);
	size_t head = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
	size_t size = FUSE_DIRENT_ALIGN(head + namelen);
	struct fuse_dirent *dirent = plus ? &rec.plus.dirent : (void *)rec.bytes;

	if (size > room - used)
		return 0;
	memset(&rec, 0, sizeof(rec));
	if (plus)
		lookup_entry(req, dir, d->d_name, &rec.plus.entry_out);
	dirent->ino = d->d_ino;
	dirent->off = (uint64_t)d->d_off;
	dirent->namelen = (uint32_t)namelen;
	dirent->type = d->d_type;
	memcpy(dirent->name, d->d_name, namelen);
	iov_copy_to(req->out, req->out_cnt,
		    sizeof(struct fuse_out_header) + used, &rec, size);
	return size;
}

/* Lists from the guest's offset, a d_off cookie we handed out before (or
 * 0), until the reply is full. Entries read but not sent are read again
 * next time from the last cookie sent, so nothing is lost or doubled. */
static int read_dir(struct fuse_req *req, bool plus)
{
	const struct fuse_read_in *in = (const void *)req->args;
	_Alignas(8) char buf[8192];
	size_t room = in->size < req->out_room ? in->size : req->out_room;
	size_t used = 0;
	bool full = false;
	int err = 0;

	if (in->offset > INT64_MAX)
		return -EINVAL;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	if (!h->is_dir) {
		fuse_put_handle(req, h);
		return -ENOTDIR;
	}
	struct listing dir = { .fd = h->fd, .kind = h->kind, .plus = plus };
	struct stat st = { 0 };

	pthread_mutex_lock(&h->dir_lock);
	if (lseek(h->fd, (off_t)in->offset, SEEK_SET) < 0 || fstat(h->fd, &st) < 0)
		err = -errno;
	dir.dev = st.st_dev;
	while (!err && !full) {
		long n = syscall(SYS_getdents64, h->fd, buf, sizeof(buf));

		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		for (long pos = 0; pos < n && !full;) {
			const struct dirent64 *d = (const void *)(buf + pos);

			pos += d->d_reclen;
			/* Only a host FUSE file system could list a longer
			 * name; no guest could use it, and no record holds it. */
			if (strlen(d->d_name) > NAME_MAX)
				continue;
			size_t size = put_record(req, &dir, d, used, room);

			used += size;
			full = size == 0;
		}
	}
	pthread_mutex_unlock(&h->dir_lock);
	fuse_put_handle(req, h);
	/* What was sent stands even if a later read failed; an empty reply
	 * means the end, so a reply too small for one entry is an error. */
	if (used)
		return (int)used;
	return err ? err : full ? -ERANGE : 0;
}

int fuse_readdir(struct fuse_req *req)
{
	return read_dir(req, false);
}

int fuse_readdirplus(struct fuse_req *req)
{
	return read_dir(req, true);
}
