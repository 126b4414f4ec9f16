/* FUSE server tests: a hostile guest (escapes, bogus ids, bad requests). */
#include "tests/unit/test_fuse_helpers.h"

#include <limits.h>

static void names_cannot_walk_out(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t fh;

	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");

	/* "." is the directory, ".." its parent, and root's parent is root. */
	assert_int_equal(fx_lookup_id(f, d, "."), d);
	assert_int_equal(fx_lookup_id(f, d, ".."), FUSE_ROOT_ID);
	assert_int_equal(fx_lookup_id(f, FUSE_ROOT_ID, ".."), FUSE_ROOT_ID);
	assert_int_equal(fx_lookup_id(f, FUSE_ROOT_ID, "."), FUSE_ROOT_ID);

	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "d/..", &e), -EINVAL);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "../..", &e), -EINVAL);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "/etc", &e), -EINVAL);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "", &e), -EINVAL);
	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, "..", 0755, &e), -EINVAL);
	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, ".", 0755, &e), -EINVAL);
	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, "a/b", 0755, &e), -EINVAL);
	assert_int_equal(fx_create(f, d, "../escaped", O_RDWR, 0644, &e, &fh), -EINVAL);
	req_begin(FUSE_UNLINK, d);
	req_str("..");
	assert_int_equal(req_send(f), -EINVAL);
	req_begin(FUSE_RMDIR, FUSE_ROOT_ID);
	req_str(".");
	assert_int_equal(req_send(f), -EINVAL);
}

static void names_are_bounded(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	char name[NAME_MAX + 2];

	memset(name, 'n', sizeof(name));
	name[NAME_MAX] = 0;
	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, name, 0755, &e), 0);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, name, &e), 0);
	name[NAME_MAX] = 'n';
	name[NAME_MAX + 1] = 0;
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, name, &e), -ENAMETOOLONG);
	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, name, 0755, &e), -ENAMETOOLONG);

	/* No NUL before the request ends. */
	req_begin(FUSE_LOOKUP, FUSE_ROOT_ID);
	req_add("abc", 3);
	assert_int_equal(req_send(f), -EINVAL);
	/* Far too long and unterminated, past what is copied at all. */
	static char huge[8000];

	memset(huge, 'x', sizeof(huge));
	req_begin(FUSE_LOOKUP, FUSE_ROOT_ID);
	req_add(huge, sizeof(huge));
	assert_int_equal(req_send(f), -ENAMETOOLONG);
	/* A NUL inside the name ends it: "ab" is looked up. */
	req_begin(FUSE_LOOKUP, FUSE_ROOT_ID);
	req_add("ab\0cd", 6);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(((const struct fuse_entry_out *)fx_reply)->nodeid, 0);
	/* No args at all. */
	req_begin(FUSE_LOOKUP, FUSE_ROOT_ID);
	assert_int_equal(req_send(f), -EINVAL);
	/* A symlink target of PATH_MAX bytes is one too many. */
	static char target[PATH_MAX + 1];

	memset(target, 't', PATH_MAX);
	req_begin(FUSE_SYMLINK, FUSE_ROOT_ID);
	req_str("l");
	req_str(target);
	assert_int_equal(req_send(f), -ENAMETOOLONG);
}

static void symlinks_are_never_followed(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t fh;

	assert_int_equal(symlink("/etc/passwd", fx_path(f, "passwd")), 0);
	assert_int_equal(symlink("/etc", fx_path(f, "etc")), 0);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "passwd", &e), 0);
	assert_true(S_ISLNK(e.attr.mode));
	assert_int_equal(e.attr.size, strlen("/etc/passwd"));
	assert_int_equal(fx_open(f, e.nodeid, O_RDONLY, &fh), -ELOOP);
	req_begin(FUSE_READLINK, e.nodeid);
	assert_int_equal(req_send(f), 0);
	assert_memory_equal(fx_reply, "/etc/passwd", fx_reply_len);

	/* A symlink to a directory is no directory to us. */
	uint64_t etc = fx_lookup_id(f, FUSE_ROOT_ID, "etc");

	assert_int_equal(fx_lookup(f, etc, "passwd", &e), -ENOTDIR);
	assert_int_equal(fx_lookup(f, etc, ".", &e), -ENOTDIR);
	assert_int_equal(fx_lookup(f, etc, "..", &e), -ENOTDIR);
	assert_int_equal(fx_opendir(f, etc, &fh), -ENOTDIR);
	assert_int_equal(fx_mkdir(f, etc, "x", 0755, &e), -ENOTDIR);
	assert_int_equal(fx_create(f, etc, "x", O_RDWR, 0644, &e, &fh), -ENOTDIR);
	req_begin(FUSE_UNLINK, etc);
	req_str("passwd");
	assert_int_equal(req_send(f), -ENOTDIR);

	/* Creating over a symlink neither follows nor replaces it. */
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "passwd", O_WRONLY | O_TRUNC, 0644, &e, &fh), -ELOOP);
	struct stat st;

	assert_int_equal(stat("/etc/passwd", &st), 0);
	assert_true(st.st_size > 0);
}

static void unknown_node_ids_and_handles(void **state)
{
	struct fx *f = *state;
	/* Ids with the top bit set name sealed inodes: those are refused before
	 * anything looks them up (checked in test_fuse_pseudo). */
	static const uint64_t bogus[] = { 0, 999999, INODE_SEALED - 1 };
	struct fuse_entry_out e;
	struct fuse_attr attr;
	char buf[8];
	uint64_t fh;

	for (size_t i = 0; i < ARRAY_LEN(bogus); i++) {
		assert_int_equal(fx_getattr(f, bogus[i], &attr), -ESTALE);
		assert_int_equal(fx_lookup(f, bogus[i], "x", &e), -ESTALE);
		assert_int_equal(fx_open(f, bogus[i], O_RDONLY, &fh), -ESTALE);
		assert_int_equal(fx_mkdir(f, bogus[i], "x", 0755, &e), -ESTALE);
		assert_int_equal(fx_opendir(f, bogus[i], &fh), -ESTALE);
		req_begin(FUSE_STATFS, bogus[i]);
		assert_int_equal(req_send(f), -ESTALE);
		req_begin(FUSE_READLINK, bogus[i]);
		assert_int_equal(req_send(f), -ESTALE);
		assert_int_equal(fx_read(f, bogus[i], 0, 1, buf), -EBADF);
		assert_int_equal(fx_write(f, bogus[i], 0, "x", 1), -EBADF);
		assert_int_equal(fx_release(f, bogus[i]), -EBADF);
	}
}

/* Sends raw bytes as a request; returns the reply header (error 1 if
 * there was none). */
static struct fuse_out_header send_bytes(struct fx *f, const void *p, size_t n)
{
	struct fuse_out_header h = { .error = 1 };

	memcpy(fx_in, p, n);
	if (fx_send_raw(f, n) >= sizeof(h))
		memcpy(&h, fx_out, sizeof(h));
	return h;
}

static void truncated_and_inconsistent_headers(void **state)
{
	struct fx *f = *state;
	struct fuse_in_header h = { .opcode = FUSE_GETATTR, .unique = 77,
				    .nodeid = FUSE_ROOT_ID };
	unsigned char buf[sizeof(h) + sizeof(struct fuse_getattr_in) + 8] = { 0 };

	/* Nothing, or less than a header: EINVAL, unique unknown (0). */
	struct fuse_out_header r = send_bytes(f, buf, 0);

	assert_int_equal(r.error, -EINVAL);
	assert_int_equal(r.len, sizeof(r));
	assert_int_equal(r.unique, 0);
	h.len = sizeof(buf);
	memcpy(buf, &h, sizeof(h));
	r = send_bytes(f, buf, sizeof(h) - 1);
	assert_int_equal(r.error, -EINVAL);
	assert_int_equal(r.unique, 0);

	/* len claims more than was sent. */
	h.len = sizeof(h) + sizeof(struct fuse_getattr_in);
	memcpy(buf, &h, sizeof(h));
	r = send_bytes(f, buf, sizeof(h) + 4);
	assert_int_equal(r.error, -EINVAL);
	assert_int_equal(r.unique, 77);
	/* len shorter than a header. */
	h.len = 8;
	memcpy(buf, &h, sizeof(h));
	r = send_bytes(f, buf, sizeof(buf));
	assert_int_equal(r.error, -EINVAL);
	/* len shorter than what was sent: the rest is ignored... */
	h.len = sizeof(h) + sizeof(struct fuse_getattr_in);
	memcpy(buf, &h, sizeof(h));
	r = send_bytes(f, buf, sizeof(buf));
	assert_int_equal(r.error, 0);
	assert_int_equal(r.len, sizeof(r) + sizeof(struct fuse_attr_out));
	/* ...even when that cuts the fixed arguments short. */
	h.len = sizeof(h) + 4;
	memcpy(buf, &h, sizeof(h));
	r = send_bytes(f, buf, sizeof(buf));
	assert_int_equal(r.error, -EINVAL);
}

static void unknown_opcodes_get_enosys(void **state)
{
	struct fx *f = *state;
	static const uint32_t opcodes[] = {
		0, 7, 19, FUSE_BMAP, FUSE_IOCTL, FUSE_POLL, FUSE_NOTIFY_REPLY, 52,
		CUSE_INIT, FUSE_INIT_BSWAP_RESERVED, UINT32_MAX,
	};

	for (size_t i = 0; i < ARRAY_LEN(opcodes); i++) {
		req_begin(opcodes[i], FUSE_ROOT_ID);
		req_add("0123456789abcdef0123456789abcdef", 32);
		assert_int_equal(req_send(f), -ENOSYS);
	}
}

static void tiny_reply_buffers(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;

	fx_write_file(f, "f", "x");
	/* No room for a header: nothing is done, nothing is written. */
	fx_out_room = sizeof(struct fuse_out_header) - 1;
	memset(fx_out, 0x5a, sizeof(fx_out));
	req_begin(FUSE_LOOKUP, FUSE_ROOT_ID);
	req_str("f");
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_returned, 0);
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fx_out[sizeof(struct fuse_out_header)], 0x5a);

	/* Room for a header only: an error that fits, and no lookup that
	 * the guest would never learn of. */
	fx_out_room = sizeof(struct fuse_out_header);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "f", &e), -EINVAL);
	assert_int_equal(fx_inodes(f), 1);
	fx_out_room = sizeof(struct fuse_out_header) + sizeof(e) - 1;
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "f", &e), -EINVAL);
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fx_out[sizeof(struct fuse_out_header) + sizeof(e)], 0x5a);

	/* No out iovecs at all. */
	req_begin(FUSE_GETATTR, FUSE_ROOT_ID);
	struct fuse_getattr_in in = { 0 };

	req_add(&in, sizeof(in));
	((struct fuse_in_header *)fx_in)->len = (uint32_t)fx_in_len;
	struct iovec iov = { fx_in, fx_in_len };

	assert_int_equal(fuse_server_handle(f->srv, &iov, 1, NULL, 0, NULL), 0);
	assert_int_equal(fuse_server_handle(f->srv, &iov, -5, &iov, -1, NULL), 0);
}

/* Every request that would change the share, on a read-only one. */
static void read_only_share_refuses_every_change(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO, .readonly = true };
	struct fuse_entry_out e;
	struct stat before, after;
	char buf[8];
	uint64_t fh;
	struct fx f;

	assert_int_equal(fx_start(&f, &cfg), 0);
	fx_write_file(&f, "f", "ro");
	assert_int_equal(mkdir(fx_path(&f, "d"), 0755), 0);
	assert_int_equal(stat(fx_path(&f, "f"), &before), 0);
	uint64_t id = fx_lookup_id(&f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(&f, id, O_RDONLY, &fh), 0);

	/* Fixed arguments big enough for any of them, then two names. */
	static const uint32_t changes[] = {
		FUSE_SETATTR, FUSE_WRITE, FUSE_CREATE, FUSE_MKDIR, FUSE_MKNOD,
		FUSE_SYMLINK, FUSE_LINK, FUSE_UNLINK, FUSE_RMDIR, FUSE_RENAME,
		FUSE_RENAME2, FUSE_SETXATTR, FUSE_REMOVEXATTR, FUSE_FALLOCATE,
		FUSE_COPY_FILE_RANGE, FUSE_TMPFILE,
		/* No change, but a lock held on the host (dpkg's lock file,
		 * say) blocks the host: locks stay in the guest's kernel. */
		FUSE_GETLK, FUSE_SETLK, FUSE_SETLKW,
	};
	unsigned char args[128] = { 0 };

	for (size_t i = 0; i < ARRAY_LEN(changes); i++) {
		req_begin(changes[i], FUSE_ROOT_ID);
		req_add(args, sizeof(args));
		req_str("f");
		req_str("d");
		assert_int_equal(req_send(&f), -EROFS);
	}
	assert_int_equal(fx_open(&f, id, O_WRONLY, &fh), -EROFS);
	assert_int_equal(fx_open(&f, id, O_RDWR, &fh), -EROFS);
	assert_int_equal(fx_open(&f, id, O_RDONLY | O_TRUNC, &fh), -EROFS);
	assert_int_equal(fx_write(&f, fh, 0, "x", 1), -EROFS);
	struct fuse_access_in acc = { .mask = W_OK };

	req_begin(FUSE_ACCESS, id);
	req_add(&acc, sizeof(acc));
	assert_int_equal(req_send(&f), -EROFS);

	/* Reading still works, and nothing changed. */
	assert_int_equal(fx_open(&f, id, O_RDONLY, &fh), 0);
	struct fuse_lk_in lk = { .fh = fh, .lk = { .end = 9, .type = F_RDLCK } };
	req_begin(FUSE_SETLK, id);
	req_add(&lk, sizeof(lk));
	assert_int_equal(req_send(&f), -EROFS);
	assert_int_equal(fx_read(&f, fh, 0, 8, buf), 2);
	assert_int_equal(stat(fx_path(&f, "f"), &after), 0);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "d", &e), 0);
	/* A new session (it ends this one) is not offered host locks. */
	struct fuse_init_out init;
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, &init), 0);
	assert_false(init.flags & (FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS));
	fx_stop(&f);
}

/* --- DAX mapping requests, against a fake window --- */

struct dax_call {
	bool map;
	uint64_t moffset, len, foffset;
	int fd;
	bool writable;
};

static struct dax_call dax_calls[16];
static int dax_ncalls;

static int fake_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		    uint64_t foffset, bool writable)
{
	assert_ptr_equal(opaque, dax_calls);
	assert_true(dax_ncalls < (int)ARRAY_LEN(dax_calls));
	dax_calls[dax_ncalls++] = (struct dax_call){ true, moffset, len, foffset,
						     fd, writable };
	return 0;
}

static int fake_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	assert_ptr_equal(opaque, dax_calls);
	assert_true(dax_ncalls < (int)ARRAY_LEN(dax_calls));
	dax_calls[dax_ncalls++] = (struct dax_call){ false, moffset, len, 0, -1, false };
	return moffset == 0x666000 ? -EIO : 0;
}

static int grown_calls;

static void fake_file_grown(void *opaque)
{
	assert_ptr_equal(opaque, dax_calls);
	grown_calls++;
}

#define WINDOW (64ull << 20)
static const struct fuse_dax_ops fake_dax = {
	.map = fake_map, .unmap = fake_unmap, .file_grown = fake_file_grown,
	.window_size = WINDOW, .opaque = dax_calls,
};

static int setupmapping(struct fx *f, uint64_t fh, uint64_t foffset,
			uint64_t len, uint64_t flags, uint64_t moffset)
{
	struct fuse_setupmapping_in in = { .fh = fh, .foffset = foffset,
					   .len = len, .flags = flags,
					   .moffset = moffset };

	req_begin(FUSE_SETUPMAPPING, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	return req_send(f);
}

static int removemapping(struct fx *f, uint32_t count,
			 const struct fuse_removemapping_one *ranges, size_t n)
{
	struct fuse_removemapping_in in = { .count = count };

	req_begin(FUSE_REMOVEMAPPING, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_add(ranges, n * sizeof(*ranges));
	return req_send(f);
}

static void dax_mappings_are_checked(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_ALWAYS, .dax = &fake_dax };
	const uint64_t W = FUSE_SETUPMAPPING_FLAG_WRITE, R = FUSE_SETUPMAPPING_FLAG_READ;
	const uint64_t MB2 = 2 << 20;
	uint64_t ro, rw, dir;
	struct fx f;

	dax_ncalls = 0;
	assert_int_equal(fx_start(&f, &cfg), 0);
	fx_write_file(&f, "f", "dax");
	uint64_t id = fx_lookup_id(&f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(&f, id, O_RDONLY, &ro), 0);
	assert_int_equal(fx_open(&f, id, O_RDWR, &rw), 0);
	assert_int_equal(fx_opendir(&f, FUSE_ROOT_ID, &dir), 0);

	assert_int_equal(setupmapping(&f, rw, MB2, MB2, R | W, WINDOW - MB2), 0);
	assert_int_equal(dax_ncalls, 1);
	assert_true(dax_calls[0].map);
	assert_int_equal(dax_calls[0].moffset, WINDOW - MB2);
	assert_int_equal(dax_calls[0].len, MB2);
	assert_int_equal(dax_calls[0].foffset, MB2);
	assert_true(dax_calls[0].writable);
	assert_true(dax_calls[0].fd >= 0);
	assert_int_equal(setupmapping(&f, ro, 0, 4096, R, 0), 0);
	assert_false(dax_calls[1].writable);

	/* Refused, all without a call. */
	assert_int_equal(setupmapping(&f, ro, 0, MB2, R | W, 0), -EACCES);
	assert_int_equal(setupmapping(&f, 4242, 0, MB2, R, 0), -EBADF);
	assert_int_equal(setupmapping(&f, dir, 0, MB2, R, 0), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, MB2, R, WINDOW - MB2 + 4096), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, MB2, R, WINDOW), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, 8192, R, UINT64_MAX - 4095), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, UINT64_MAX - 4095, R, 8192), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, UINT64_MAX - 4095, 8192, R, 0), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, (uint64_t)INT64_MAX - 4095, 8192, R, 0), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, MB2, R, 100), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 100, MB2, R, 0), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, 100, R, 0), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, 0, R, 0), -EINVAL);
	assert_int_equal(setupmapping(&f, rw, 0, MB2, 4, 0), -EINVAL);
	assert_int_equal(dax_ncalls, 2);

	struct fuse_removemapping_one ranges[3] = {
		{ 0, MB2 }, { WINDOW - MB2, MB2 }, { MB2, WINDOW },
	};

	assert_int_equal(removemapping(&f, 2, ranges, 2), 0);
	assert_int_equal(dax_ncalls, 4);
	assert_false(dax_calls[2].map);
	assert_int_equal(dax_calls[3].moffset, WINDOW - MB2);
	/* A bad range anywhere unmaps nothing. */
	assert_int_equal(removemapping(&f, 3, ranges, 3), -EINVAL);
	/* More ranges claimed than sent, none, or more than a page's worth. */
	assert_int_equal(removemapping(&f, 3, ranges, 2), -EINVAL);
	assert_int_equal(removemapping(&f, 0, ranges, 0), -EINVAL);
	assert_int_equal(removemapping(&f, UINT32_MAX, ranges, 2), -EINVAL);
	assert_int_equal(dax_ncalls, 4);
	/* The device's error comes back. */
	ranges[0].moffset = 0x666000;
	ranges[0].len = 4096;
	assert_int_equal(removemapping(&f, 1, ranges, 1), -EIO);
	fx_stop(&f);

	/* Read-only share: no writable mappings. */
	cfg.readonly = true;
	assert_int_equal(fx_start(&f, &cfg), 0);
	fx_write_file(&f, "f", "dax");
	assert_int_equal(fx_open(&f, fx_lookup_id(&f, FUSE_ROOT_ID, "f"), O_RDONLY, &ro), 0);
	assert_int_equal(setupmapping(&f, ro, 0, MB2, R | W, 0), -EROFS);
	assert_int_equal(setupmapping(&f, ro, 0, MB2, R, 0), 0);
	fx_stop(&f);
}

/* Requests that can make a file longer tell the window, before the reply;
 * reads and failed writes do not. */
static void dax_window_hears_of_growth(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_ALWAYS, .dax = &fake_dax };
	struct fx f;
	uint64_t fh;
	char buf[8];

	grown_calls = 0;
	assert_int_equal(fx_start(&f, &cfg), 0);
	fx_write_file(&f, "f", "dax");
	assert_int_equal(fx_open(&f, fx_lookup_id(&f, FUSE_ROOT_ID, "f"), O_RDWR, &fh), 0);
	assert_int_equal(fx_read(&f, fh, 0, sizeof(buf), buf), 3);
	assert_int_equal(grown_calls, 0);
	assert_int_equal(fx_write(&f, fh, 3, "more", 4), 4);
	assert_int_equal(grown_calls, 1);
	assert_int_equal(fx_write(&f, 4242, 0, "x", 1), -EBADF);
	assert_int_equal(grown_calls, 1);
	fx_stop(&f);
}

/* A request with a buffer out of reach is answered with the error and not
 * run: a MKDIR makes nothing; a FORGET gets no answer and forgets nothing. */
static void unreachable_requests_are_failed_not_run(void **state)
{
	struct fx *f = *state;
	struct fuse_mkdir_in in = { .mode = 0755 };
	struct iovec iov_in = { fx_in, 0 }, iov_out = { fx_out, sizeof(fx_out) };

	req_begin(FUSE_MKDIR, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("never");
	((struct fuse_in_header *)fx_in)->len = (uint32_t)fx_in_len;
	((struct fuse_in_header *)fx_in)->unique = 77;
	iov_in.iov_len = fx_in_len;
	assert_int_equal(fuse_server_fail(f->srv, &iov_in, 1, &iov_out, 1, -EFAULT),
			 sizeof(struct fuse_out_header));
	memcpy(&fx_hdr, fx_out, sizeof(fx_hdr));
	assert_int_equal(fx_hdr.error, -EFAULT);
	assert_int_equal(fx_hdr.unique, 77);
	struct stat st;
	assert_int_equal(stat(fx_path(f, "never"), &st), -1);

	fx_write_file(f, "kept", "x");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "kept");
	struct fuse_forget_in forget = { .nlookup = 1 };
	req_begin(FUSE_FORGET, id);
	req_add(&forget, sizeof(forget));
	((struct fuse_in_header *)fx_in)->len = (uint32_t)fx_in_len;
	iov_in.iov_len = fx_in_len;
	assert_int_equal(fuse_server_fail(f->srv, &iov_in, 1, &iov_out, 1, -EFAULT), 0);
	struct fuse_attr attr;
	assert_int_equal(fx_getattr(f, id, &attr), 0);
}

static void dax_requests_without_a_window(void **state)
{
	struct fx *f = *state;
	struct fuse_removemapping_one one = { 0, 4096 };
	uint64_t fh;

	fx_write_file(f, "f", "x");
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "f"), O_RDONLY, &fh), 0);
	assert_int_equal(setupmapping(f, fh, 0, 4096, FUSE_SETUPMAPPING_FLAG_READ, 0), -ENOSYS);
	assert_int_equal(removemapping(f, 1, &one, 1), -ENOSYS);
}

/* The host moves a directory the guest knows out of the share: its ".."
 * is then outside, and the guest must not reach it. One moved inside the
 * share keeps its new parent. */
static void dotdot_never_leaves_the_share(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	char outside[] = "/tmp/fsvm-outside-XXXXXX", moved[128], from[512];

	assert_int_equal(mkdir(fx_path(f, "a"), 0755), 0);
	assert_int_equal(mkdir(fx_path(f, "a/b"), 0755), 0);
	assert_int_equal(mkdir(fx_path(f, "c"), 0755), 0);
	uint64_t a = fx_lookup_id(f, FUSE_ROOT_ID, "a");
	uint64_t b = fx_lookup_id(f, a, "b");
	uint64_t c = fx_lookup_id(f, FUSE_ROOT_ID, "c");

	assert_int_equal(fx_lookup(f, b, "..", &e), 0);
	assert_int_equal(e.nodeid, a);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "..", &e), 0);
	assert_int_equal(e.nodeid, FUSE_ROOT_ID);

	/* fx_path has one buffer: copy the first path. */
	snprintf(from, sizeof(from), "%s", fx_path(f, "a/b"));
	assert_int_equal(rename(from, fx_path(f, "c/b")), 0);
	assert_int_equal(fx_lookup(f, b, "..", &e), 0);
	assert_int_equal(e.nodeid, c);

	assert_non_null(mkdtemp(outside));
	snprintf(moved, sizeof(moved), "%s/b", outside);
	assert_int_equal(rename(fx_path(f, "c/b"), moved), 0);
	assert_int_equal(fx_lookup(f, b, "..", &e), -ENOENT);
	/* Back in, deeper: its parent is the guest's again. */
	assert_int_equal(mkdir(fx_path(f, "c/b2"), 0755), 0);
	assert_int_equal(rename(moved, fx_path(f, "c/b2/b")), 0);
	assert_int_equal(fx_lookup(f, b, "..", &e), 0);
	assert_int_equal(e.nodeid, fx_lookup_id(f, c, "b2"));
	assert_int_equal(rmdir(outside), 0);
}

/* Each share's guest holds at most so many inodes and open files (each a
 * host fd): past that, ENFILE; what it gives back can be taken again. */
static void inodes_and_handles_are_capped(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO,
					  .max_inodes = 8, .max_handles = 4 };
	struct fuse_entry_out e;
	uint64_t fh[5];
	char name[16];
	struct fx f;

	assert_int_equal(fx_start(&f, &cfg), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fx_write_file(&f, name, "x");
	}
	/* Root is one of the eight. */
	for (int i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, name, &e), 0);
	}
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "f7", &e), -ENFILE);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "f0", &e), 0); /* known */
	uint64_t f1 = fx_lookup_id(&f, FUSE_ROOT_ID, "f1");
	for (int i = 0; i < 4; i++)
		assert_int_equal(fx_open(&f, f1, O_RDONLY, &fh[i]), 0);
	assert_int_equal(fx_open(&f, f1, O_RDONLY, &fh[4]), -ENFILE);
	assert_int_equal(fx_opendir(&f, FUSE_ROOT_ID, &fh[4]), -ENFILE);
	assert_int_equal(fx_release(&f, fh[0]), 0);
	assert_int_equal(fx_open(&f, f1, O_RDONLY, &fh[0]), 0);
	fx_forget(&f, fx_lookup_id(&f, FUSE_ROOT_ID, "f2"), 2);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "f7", &e), 0);
	assert_int_equal(fx_inodes(&f), 8);
	fx_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(names_cannot_walk_out),
		FX_TEST(names_are_bounded),
		FX_TEST(symlinks_are_never_followed),
		FX_TEST(unknown_node_ids_and_handles),
		FX_TEST(truncated_and_inconsistent_headers),
		FX_TEST(unknown_opcodes_get_enosys),
		FX_TEST(tiny_reply_buffers),
		cmocka_unit_test(read_only_share_refuses_every_change),
		cmocka_unit_test(dax_mappings_are_checked),
		cmocka_unit_test(dax_window_hears_of_growth),
		FX_TEST(dax_requests_without_a_window),
		FX_TEST(unreachable_requests_are_failed_not_run),
		FX_TEST(dotdot_never_leaves_the_share),
		cmocka_unit_test(inodes_and_handles_are_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
