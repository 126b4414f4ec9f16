/* Request arguments: names and strings from the copy, bulk data in place. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "fs/fuse_internal.h"
#include "fs/iov.h"

size_t fuse_args_read(const struct fuse_req *req, size_t off, void *dst,
		      size_t len)
{
	if (off >= req->args_len)
		return 0;
	if (len > req->args_len - off)
		len = req->args_len - off;
	return iov_copy_from(req->in, req->in_cnt,
			     sizeof(struct fuse_in_header) + off, dst, len);
}

int fuse_args_string(const struct fuse_req *req, size_t *off, size_t max_len,
		     const char **s)
{
	if (*off >= req->args_copied)
		return -EINVAL;
	const char *start = (const char *)req->args + *off;
	size_t room = req->args_copied - *off;
	const char *nul = memchr(start, '\0', room <= max_len ? room : max_len + 1);

	if (!nul)
		return room > max_len ? -ENAMETOOLONG : -EINVAL;
	if (nul == start)
		return -EINVAL;
	*off += (size_t)(nul - start) + 1;
	*s = start;
	return 0;
}

int fuse_args_name(const struct fuse_req *req, size_t *off, const char **name)
{
	int err = fuse_args_string(req, off, NAME_MAX, name);

	if (err)
		return err;
	/* One component that stays in its directory: "a/b" would walk,
	 * "." and ".." name the directory or leave it. */
	if (strchr(*name, '/') || !strcmp(*name, ".") || !strcmp(*name, ".."))
		return -EINVAL;
	return 0;
}

int fuse_args_dir_entry(struct fuse_req *req, size_t *off, const char **name,
			struct inode **dir)
{
	int err = fuse_args_name(req, off, name);

	if (err)
		return err;
	*dir = fuse_inode(req, req->hdr.nodeid);
	return *dir ? 0 : -ESTALE;
}
