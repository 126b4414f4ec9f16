/* File locks: POSIX ones as per-handle OFD locks, and flock(2). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>

#include "fs/fuse_internal.h"

/* A FUSE lock ends at an inclusive offset; OFFSET_MAX means "to the end
 * of the file", which struct flock says with length 0. OFD locks belong
 * to the open file description: one per FUSE handle, so two handles
 * conflict and one handle never conflicts with itself, as the guest's
 * per-open locks expect. */
static int to_flock(const struct fuse_file_lock *lk, struct flock *fl)
{
	if (lk->start > INT64_MAX || lk->end < lk->start ||
	    (lk->type != F_RDLCK && lk->type != F_WRLCK && lk->type != F_UNLCK))
		return -EINVAL;
	*fl = (struct flock){
		.l_type = (short)lk->type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)lk->start,
		.l_len = lk->end >= INT64_MAX ? 0 : (off_t)(lk->end - lk->start + 1),
	};
	return 0;
}

int fuse_getlk(struct fuse_req *req)
{
	const struct fuse_lk_in *in = (const void *)req->args;
	struct flock fl;
	int err = (in->lk_flags & FUSE_LK_FLOCK) ? -EINVAL : to_flock(&in->lk, &fl);

	if (err)
		return err;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return -EBADF;
	err = fcntl(h->fd, F_OFD_GETLK, &fl) ? -errno : 0;
	fuse_put_handle(req, h);
	if (err)
		return err;

	/* The holder is another handle, not a guest process: pid 0. */
	struct fuse_lk_out out = { .lk = { .type = (uint32_t)fl.l_type } };

	if (fl.l_type != F_UNLCK) {
		out.lk.start = (uint64_t)fl.l_start;
		out.lk.end = fl.l_len ? (uint64_t)(fl.l_start + fl.l_len - 1) : INT64_MAX;
	}
	return fuse_reply(req, &out, sizeof(out));
}

static int set_flock(int fd, uint32_t type, bool wait)
{
	int op = type == F_RDLCK ? LOCK_SH : type == F_WRLCK ? LOCK_EX :
		 type == F_UNLCK ? LOCK_UN : -1;

	if (op < 0)
		return -EINVAL;
	return flock(fd, op | (wait ? 0 : LOCK_NB)) ? -errno : 0;
}

/* SETLKW waits in the calling thread; other requests run on in others. */
static int set_lock(struct fuse_req *req, bool wait)
{
	const struct fuse_lk_in *in = (const void *)req->args;
	struct flock fl;
	bool is_flock = in->lk_flags & FUSE_LK_FLOCK;
	int err = is_flock ? 0 : to_flock(&in->lk, &fl);

	if (err)
		return err;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return -EBADF;
	if (is_flock)
		err = set_flock(h->fd, in->lk.type, wait);
	else if (fcntl(h->fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl))
		err = -errno;
	fuse_put_handle(req, h);
	return err;
}

int fuse_setlk(struct fuse_req *req)
{
	return set_lock(req, false);
}

int fuse_setlkw(struct fuse_req *req)
{
	return set_lock(req, true);
}
