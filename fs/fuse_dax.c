/* DAX window requests: checked here, done by the device's fuse_dax_ops. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/confine.h"

#include "fs/fuse_internal.h"

/* The guest kernel sends at most a page of ranges per REMOVEMAPPING. */
#define FUSE_REMOVEMAPPING_MAX (FUSE_PAGE_SIZE / sizeof(struct fuse_removemapping_one))

/* [off, off + len) is non-empty, page-aligned and inside [0, limit). The
 * window checks its own ranges again (it guards memory, whoever calls);
 * here the check makes a REMOVEMAPPING all or nothing. */
static bool range_fits(uint64_t off, uint64_t len, uint64_t limit)
{
	return len && off % FUSE_DAX_ALIGN == 0 && len % FUSE_DAX_ALIGN == 0 &&
	       off <= limit && len <= limit - off;
}

static int setupmapping_by_inode(struct fuse_req *req,
				 const struct fuse_setupmapping_in *in,
				 bool writable)
{
	const struct fuse_dax_ops *dax = req->srv->dax;
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);
	if (!inode)
		return -ESTALE;
	int err = 0;
	int fd = -1;
	if (inode->type != S_IFREG)
		err = -EINVAL;
	else if (inode->kind != HOST_FS_MAPPABLE)
		err = -EOPNOTSUPP;
	else if ((fd = confine_reopen(req->srv->proc_fd, inode->fd,
				      writable ? O_RDWR : O_RDONLY)) < 0)
		err = fd;
	else
		err = dax->map(dax->opaque, in->moffset, in->len, fd,
			       in->foffset, writable);
	/* The mapping holds its own reference to the file. */
	if (fd >= 0)
		close(fd);
	fuse_put_inode(req, inode);
	return err < 0 ? err : 0;
}

int fuse_setupmapping(struct fuse_req *req)
{
	const struct fuse_setupmapping_in *in = (const void *)req->args;
	const struct fuse_dax_ops *dax = req->srv->dax;
	bool writable = in->flags & FUSE_SETUPMAPPING_FLAG_WRITE;

	if (!dax)
		return -ENOSYS;
	if ((in->flags & ~(FUSE_SETUPMAPPING_FLAG_WRITE | FUSE_SETUPMAPPING_FLAG_READ)) ||
	    !range_fits(in->moffset, in->len, dax->window_size) ||
	    !range_fits(in->foffset, in->len, INT64_MAX))
		return -EINVAL;
	if (writable && req->srv->readonly)
		return -EROFS;
	/* Linux's client maps by inode, with no handle (fh = -1): it did
	 * its own permission checks when the file was opened. */
	if (in->fh == UINT64_MAX)
		return setupmapping_by_inode(req, in, writable);
	struct handle *h = fuse_handle(req, in->fh);

	if (!h)
		return fuse_handle_missing(req, in->fh);
	int err;

	if (h->is_dir)
		err = -EINVAL;
	else if (h->kind != HOST_FS_MAPPABLE)
		err = -EOPNOTSUPP;
	else if (writable && !h->writable)
		err = -EACCES;
	else
		err = dax->map(dax->opaque, in->moffset, in->len, h->fd, in->foffset,
			       writable);
	fuse_put_handle(req, h);
	return err < 0 ? err : 0;
}

int fuse_removemapping(struct fuse_req *req)
{
	const struct fuse_removemapping_in *in = (const void *)req->args;
	const struct fuse_dax_ops *dax = req->srv->dax;
	struct fuse_removemapping_one ranges[FUSE_REMOVEMAPPING_MAX];
	size_t bytes = (size_t)in->count * sizeof(ranges[0]);

	if (!dax)
		return -ENOSYS;
	/* Copied once, then checked whole before anything is unmapped: the
	 * guest can change its buffers at any time, and a bad range should
	 * change nothing. */
	if (in->count == 0 || in->count > FUSE_REMOVEMAPPING_MAX ||
	    fuse_args_read(req, sizeof(*in), ranges, bytes) < bytes)
		return -EINVAL;
	for (uint32_t i = 0; i < in->count; i++) {
		if (!range_fits(ranges[i].moffset, ranges[i].len, dax->window_size))
			return -EINVAL;
	}
	for (uint32_t i = 0; i < in->count; i++) {
		int err = dax->unmap(dax->opaque, ranges[i].moffset, ranges[i].len);

		if (err < 0)
			return err;
	}
	return 0;
}
