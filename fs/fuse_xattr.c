/* Extended attributes, through /proc/self/fd so no symlink is followed. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"

#define XATTR_USER_PREFIX "user."

/* The guest may change only user.* attributes. Running as root, anything
 * else would let it plant file capabilities (security.capability) or
 * trusted.* data that the host itself acts on. */
static int check_writable_name(const char *name)
{
	return strncmp(name, XATTR_USER_PREFIX, strlen(XATTR_USER_PREFIX)) ? -EPERM : 0;
}

int fuse_setxattr(struct fuse_req *req)
{
	const struct fuse_setxattr_in *in = (const void *)req->args;
	size_t off = FUSE_COMPAT_SETXATTR_IN_SIZE;
	const char *name;
	int err = fuse_args_string(req, &off, XATTR_NAME_MAX, &name);

	if (!err)
		err = check_writable_name(name);
	if (err)
		return err;
	if (in->size > XATTR_SIZE_MAX)
		return -E2BIG;
	if (in->size > req->args_len - off || (in->flags & ~(XATTR_CREATE | XATTR_REPLACE)))
		return -EINVAL;
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);

	if (!inode)
		return -ESTALE;
	/* The value may be larger than the copied arguments: copy it whole,
	 * once, as the host call wants it in one piece anyway. */
	void *value = malloc(in->size ? in->size : 1);

	if (!value) {
		err = -ENOMEM;
	} else {
		fuse_args_read(req, off, value, in->size);
		if (setxattr(confine_fd_path(inode->fd).s, name, value, in->size,
			     (int)in->flags))
			err = -errno;
		free(value);
	}
	fuse_put_inode(req, inode);
	return err;
}

/* With size 0 the guest asks how large the answer is; otherwise for the
 * answer itself, or ERANGE when it is larger than size. */
static int reply_sized(struct fuse_req *req, uint32_t size, size_t n,
		       const void *data)
{
	if (size == 0) {
		struct fuse_getxattr_out out = { .size = (uint32_t)n };

		return fuse_reply(req, &out, sizeof(out));
	}
	return fuse_reply(req, data, n);
}

/* How much of an answer the guest can take: what it asked for, capped by
 * the largest answer the host gives and by the room in the reply. */
static size_t answer_size(const struct fuse_req *req, uint32_t size, size_t max)
{
	size_t cap = size < max ? size : max;

	return cap < req->out_room ? cap : req->out_room;
}

/* GETXATTR (name) and LISTXATTR (name NULL): a size query when size is 0,
 * else the bytes, answered from the host file. */
static int xattr_query(struct fuse_req *req, uint32_t size, size_t max,
		       const char *name)
{
	size_t cap = answer_size(req, size, max);
	void *buf = malloc(cap ? cap : 1);
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);
	int err;

	if (!buf || !inode) {
		err = buf ? -ESTALE : -ENOMEM;
	} else {
		struct confine_fd_path path = confine_fd_path(inode->fd);
		void *dst = size ? buf : NULL;
		size_t room = size ? cap : 0;
		ssize_t n = name ? getxattr(path.s, name, dst, room)
				 : listxattr(path.s, dst, room);

		err = n < 0 ? -errno : reply_sized(req, size, (size_t)n, buf);
	}
	if (inode)
		fuse_put_inode(req, inode);
	free(buf);
	return err;
}

int fuse_getxattr(struct fuse_req *req)
{
	const struct fuse_getxattr_in *in = (const void *)req->args;
	size_t off = sizeof(*in);
	const char *name;
	int err = fuse_args_string(req, &off, XATTR_NAME_MAX, &name);

	if (err)
		return err;
	return xattr_query(req, in->size, XATTR_SIZE_MAX, name);
}

int fuse_listxattr(struct fuse_req *req)
{
	const struct fuse_getxattr_in *in = (const void *)req->args;

	return xattr_query(req, in->size, XATTR_LIST_MAX, NULL);
}

int fuse_removexattr(struct fuse_req *req)
{
	size_t off = 0;
	const char *name;
	int err = fuse_args_string(req, &off, XATTR_NAME_MAX, &name);

	if (!err)
		err = check_writable_name(name);
	if (err)
		return err;
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);

	if (!inode)
		return -ESTALE;
	if (removexattr(confine_fd_path(inode->fd).s, name))
		err = -errno;
	fuse_put_inode(req, inode);
	return err;
}
