/* FUSE server test fixtures: a scratch share, requests over iovecs. */
#ifndef FSVM_TEST_FUSE_HELPERS_H
#define FSVM_TEST_FUSE_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fuse_internal.h"
#include "fs/fuse_server.h"
#include "tests/unit/needs_root.h"

/* Big enough for a 1 MiB WRITE or READ plus headers. */
#define FX_BUF_SIZE (FUSE_MAX_TRANSFER + 8192)

struct fx {
	char root[64];
	struct fuse_server *srv;
	struct fuse_server_config cfg;
	uint64_t unique;
};

/* One request at a time is built in fx_in and answered into fx_out. */
static _Alignas(8) unsigned char fx_in[FX_BUF_SIZE];
static size_t fx_in_len;
static _Alignas(8) unsigned char fx_out[FX_BUF_SIZE];
/* Room the next request gets for its reply (reset to the whole buffer). */
static size_t fx_out_room = FX_BUF_SIZE;
/* The last reply: its header, payload and payload length. */
static struct fuse_out_header fx_hdr;
static unsigned char *const fx_reply = fx_out + sizeof(struct fuse_out_header);
static size_t fx_reply_len;
static size_t fx_returned; /* what fuse_server_handle() returned */
/* How requests that must wait are answered; NULL: they fail (ENOLCK). */
static const struct fuse_completion *fx_later;

static inline void req_begin(uint32_t opcode, uint64_t nodeid)
{
	struct fuse_in_header h = { .opcode = opcode, .nodeid = nodeid,
				    .uid = 0, .gid = 0, .pid = 1 };

	memcpy(fx_in, &h, sizeof(h));
	fx_in_len = sizeof(h);
}

static inline void req_add(const void *p, size_t n)
{
	assert_true(fx_in_len + n <= sizeof(fx_in));
	memcpy(fx_in + fx_in_len, p, n);
	fx_in_len += n;
}

static inline void req_str(const char *s)
{
	req_add(s, strlen(s) + 1);
}

/* Sets the caller's uid and gid in the request being built. */
static inline void req_creds(uint32_t uid, uint32_t gid)
{
	struct fuse_in_header *h = (void *)fx_in;

	h->uid = uid;
	h->gid = gid;
}

/* Sends in[0..in_len) split into three iovecs, with the reply split in
 * two, at points that move with every request so that every test runs
 * the iovec helpers across boundaries. Returns what the server returned. */
static inline size_t fx_send_raw(struct fx *f, size_t in_len)
{
	size_t a = in_len * (f->unique % 5 + 1) / 7;
	size_t b = a + (in_len - a) * (f->unique % 3 + 1) / 4;
	struct iovec in[3] = {
		{ fx_in, a }, { fx_in + a, b - a }, { fx_in + b, in_len - b },
	};
	size_t cut = (f->unique * 7) % 29;

	if (cut > fx_out_room)
		cut = fx_out_room;
	struct iovec out[2] = {
		{ fx_out, cut }, { fx_out + cut, fx_out_room - cut },
	};

	memset(fx_out, 0xa5, sizeof(struct fuse_out_header));
	fx_returned = fuse_server_handle(f->srv, in, 3, out, 2, fx_later);
	return fx_returned;
}

/* Finishes and sends the request built with req_begin/req_add; checks the
 * reply header and returns its error (0 or -errno). */
static inline int req_send(struct fx *f)
{
	struct fuse_in_header *h = (void *)fx_in;

	h->len = (uint32_t)fx_in_len;
	h->unique = ++f->unique;
	size_t n = fx_send_raw(f, fx_in_len);

	fx_out_room = FX_BUF_SIZE;
	if (n == 0) {
		fx_reply_len = 0;
		return 0;
	}
	assert_true(n >= sizeof(fx_hdr));
	memcpy(&fx_hdr, fx_out, sizeof(fx_hdr));
	assert_int_equal(fx_hdr.len, n);
	assert_int_equal(fx_hdr.unique, f->unique);
	assert_true(fx_hdr.error <= 0);
	if (fx_hdr.error)
		assert_int_equal(n, sizeof(fx_hdr));
	fx_reply_len = n - sizeof(fx_hdr);
	return fx_hdr.error;
}

static inline int fx_init(struct fx *f, uint32_t minor, uint32_t flags,
			  uint32_t flags2, struct fuse_init_out *out)
{
	if (out)
		memset(out, 0, sizeof(*out));
	struct fuse_init_in in = { .major = 7, .minor = minor,
				   .max_readahead = 131072, .flags = flags,
				   .flags2 = flags2 };

	req_begin(FUSE_INIT, 0);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (!err && out) {
		assert_int_equal(fx_reply_len, sizeof(*out));
		memcpy(out, fx_reply, sizeof(*out));
	}
	return err;
}

/* Everything a 6.1 guest offers. */
#define FX_GUEST_FLAGS 0xffffffffu
#define FX_GUEST_FLAGS2 ((uint32_t)((FUSE_SECURITY_CTX | FUSE_HAS_INODE_DAX) >> 32))

static inline int fx_start(struct fx *f, const struct fuse_server_config *cfg)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/fsvm-fuse-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	f->cfg = *cfg;
	f->cfg.root = f->root;
	assert_int_equal(fuse_server_create(&f->cfg, &f->srv), 0);
	return fx_init(f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL);
}

static inline int fx_rm(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(path);
}

/* A host file at path holding text, with exactly mode. */
static inline void fx_host_file(const char *path, const char *text,
				mode_t mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

/* For the tests of what fsvm reaches once locked in (the jail, Landlock):
 * a fresh folder (scratch, a mkdtemp template) holding two shares, rw/
 * and ro/, and outside/, none of them shared; each path PATH_MAX long. */
static inline void fx_scratch_shares(char *scratch, char *rw, char *ro,
				     char *outside)
{
	assert_non_null(mkdtemp(scratch));
	snprintf(rw, PATH_MAX, "%s/rw", scratch);
	snprintf(ro, PATH_MAX, "%s/ro", scratch);
	snprintf(outside, PATH_MAX, "%s/outside", scratch);
	assert_int_equal(mkdir(rw, 0755), 0);
	assert_int_equal(mkdir(ro, 0755), 0);
	assert_int_equal(mkdir(outside, 0755), 0);
}

static inline void fx_stop(struct fx *f)
{
	fuse_server_destroy(f->srv);
	nftw(f->root, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* cmocka set-up and tear-down with a default, writable, cache=auto share. */
static inline int fx_setup(void **state)
{
	static struct fx f;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO };

	assert_int_equal(fx_start(&f, &cfg), 0);
	*state = &f;
	return 0;
}

static inline int fx_teardown(void **state)
{
	fx_stop(*state);
	return 0;
}

/* A test that runs in the default share. */
#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)


/* The host path of rel inside the share (one static buffer, reused). */
static inline const char *fx_path(struct fx *f, const char *rel)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	return path;
}

static inline void fx_write_file(struct fx *f, const char *rel, const char *text)
{
	int fd = open(fx_path(f, rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Reads a host file into buf (NUL-terminated); returns its length. */
static inline size_t fx_read_file(struct fx *f, const char *rel, char *buf,
				  size_t size)
{
	int fd = open(fx_path(f, rel), O_RDONLY);

	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, size - 1);

	assert_true(n >= 0);
	buf[n] = 0;
	close(fd);
	return (size_t)n;
}

/* --- one call per request, each returning the reply's error. Outputs
 * start zeroed: the compiler cannot tell that a failed assert never
 * returns, and would warn of them as maybe uninitialised. --- */

static inline int fx_lookup(struct fx *f, uint64_t parent, const char *name,
			    struct fuse_entry_out *e)
{
	memset(e, 0, sizeof(*e));
	req_begin(FUSE_LOOKUP, parent);
	req_str(name);
	int err = req_send(f);

	if (!err) {
		assert_int_equal(fx_reply_len, sizeof(*e));
		memcpy(e, fx_reply, sizeof(*e));
		/* Node id 0: no such name, as the kernel reads it (a negative
		 * entry it may keep for entry_valid). */
		if (!e->nodeid)
			return -ENOENT;
	}
	return err;
}

static inline uint64_t fx_lookup_id(struct fx *f, uint64_t parent, const char *name)
{
	struct fuse_entry_out e;

	assert_int_equal(fx_lookup(f, parent, name, &e), 0);
	return e.nodeid;
}

static inline void fx_forget(struct fx *f, uint64_t nodeid, uint64_t n)
{
	struct fuse_forget_in in = { .nlookup = n };

	req_begin(FUSE_FORGET, nodeid);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_returned, 0);
}

static inline int fx_getattr(struct fx *f, uint64_t nodeid, struct fuse_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	struct fuse_getattr_in in = { 0 };

	req_begin(FUSE_GETATTR, nodeid);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (!err) {
		struct fuse_attr_out out;

		assert_int_equal(fx_reply_len, sizeof(out));
		memcpy(&out, fx_reply, sizeof(out));
		*attr = out.attr;
	}
	return err;
}

static inline int fx_open(struct fx *f, uint64_t nodeid, uint32_t flags,
			  uint64_t *fh)
{
	*fh = 0;
	struct fuse_open_in in = { .flags = flags };

	req_begin(FUSE_OPEN, nodeid);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (!err) {
		struct fuse_open_out out;

		assert_int_equal(fx_reply_len, sizeof(out));
		memcpy(&out, fx_reply, sizeof(out));
		*fh = out.fh;
	}
	return err;
}

static inline int fx_create(struct fx *f, uint64_t parent, const char *name,
			    uint32_t flags, uint32_t mode,
			    struct fuse_entry_out *e, uint64_t *fh)
{
	memset(e, 0, sizeof(*e));
	*fh = 0;
	struct fuse_create_in in = { .flags = flags, .mode = S_IFREG | mode };

	req_begin(FUSE_CREATE, parent);
	req_add(&in, sizeof(in));
	req_str(name);
	int err = req_send(f);

	if (!err) {
		struct fuse_open_out o;

		assert_int_equal(fx_reply_len, sizeof(*e) + sizeof(o));
		memcpy(e, fx_reply, sizeof(*e));
		memcpy(&o, fx_reply + sizeof(*e), sizeof(o));
		*fh = o.fh;
	}
	return err;
}

static inline int fx_release(struct fx *f, uint64_t fh)
{
	struct fuse_release_in in = { .fh = fh };

	req_begin(FUSE_RELEASE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	return req_send(f);
}

/* Returns -errno or the bytes read into buf. */
static inline int fx_read(struct fx *f, uint64_t fh, uint64_t off,
			  uint32_t size, void *buf)
{
	struct fuse_read_in in = { .fh = fh, .offset = off, .size = size };

	req_begin(FUSE_READ, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (err)
		return err;
	memcpy(buf, fx_reply, fx_reply_len);
	return (int)fx_reply_len;
}

/* Returns -errno or the bytes the server says it wrote. */
static inline int fx_write(struct fx *f, uint64_t fh, uint64_t off,
			   const void *data, uint32_t len)
{
	struct fuse_write_in in = { .fh = fh, .offset = off, .size = len };

	req_begin(FUSE_WRITE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_add(data, len);
	int err = req_send(f);

	if (err)
		return err;
	struct fuse_write_out out;

	assert_int_equal(fx_reply_len, sizeof(out));
	memcpy(&out, fx_reply, sizeof(out));
	return (int)out.size;
}

static inline int fx_mkdir(struct fx *f, uint64_t parent, const char *name,
			   uint32_t mode, struct fuse_entry_out *e)
{
	memset(e, 0, sizeof(*e));
	struct fuse_mkdir_in in = { .mode = mode };

	req_begin(FUSE_MKDIR, parent);
	req_add(&in, sizeof(in));
	req_str(name);
	int err = req_send(f);

	if (!err) {
		assert_int_equal(fx_reply_len, sizeof(*e));
		memcpy(e, fx_reply, sizeof(*e));
	}
	return err;
}

static inline int fx_opendir(struct fx *f, uint64_t nodeid, uint64_t *fh)
{
	*fh = 0;
	struct fuse_open_in in = { .flags = O_RDONLY };

	req_begin(FUSE_OPENDIR, nodeid);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (!err) {
		struct fuse_open_out out;

		memcpy(&out, fx_reply, sizeof(out));
		*fh = out.fh;
	}
	return err;
}

static inline size_t fx_inodes(struct fx *f)
{
	return fuse_server_inode_count(f->srv);
}

#endif
