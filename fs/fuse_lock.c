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
		return fuse_handle_missing(req, in->fh);
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

static int to_lock_op(const struct fuse_lk_in *in, struct fuse_lock_op *op)
{
	*op = (struct fuse_lock_op){ .is_flock = in->lk_flags & FUSE_LK_FLOCK };
	if (!op->is_flock)
		return to_flock(&in->lk, &op->fl);
	op->flock_op = in->lk.type == F_RDLCK ? LOCK_SH :
		       in->lk.type == F_WRLCK ? LOCK_EX :
		       in->lk.type == F_UNLCK ? LOCK_UN : -1;
	return op->flock_op < 0 ? -EINVAL : 0;
}

/* Takes the lock if nobody holds a conflicting one; -EAGAIN if not. */
static int try_lock(int fd, const struct fuse_lock_op *op)
{
	struct flock fl = op->fl;
	int r = op->is_flock ? flock(fd, op->flock_op | LOCK_NB)
			     : fcntl(fd, F_OFD_SETLK, &fl);

	return r ? errno == EWOULDBLOCK ? -EAGAIN : -errno : 0;
}

/* SETLKW that cannot take its lock at once waits on a thread of its own
 * (fs/fuse_wait.c): the queue goes on, and the unlock that ends the wait
 * can arrive on it. */
static int set_lock(struct fuse_req *req, bool wait)
{
	const struct fuse_lk_in *in = (const void *)req->args;
	struct fuse_lock_op op;
	int err = to_lock_op(in, &op);

	if (err)
		return err;
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	err = try_lock(h->fd, &op);
	if (err == -EAGAIN && wait) {
		err = req->later ? fuse_wait_start(&req->srv->waits,
						   &req->srv->handles, h, &op,
						   req->hdr.unique, req->out,
						   req->out_cnt, req->later)
				 : -ENOLCK;
		if (err == 0)
			return FUSE_REPLY_LATER; /* the wait holds h now */
	}
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
