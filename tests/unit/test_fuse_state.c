/* Unit tests for fs/fuse_state: a share's FUSE state saved and restored
 * into a new server on the same folder, on real host files: node ids,
 * lookup counts and handles back as they were, files the host changed
 * meanwhile stale, caps, and hostile blobs refused. */
#include "tests/unit/test_fuse_helpers.h"

#include <sched.h>
#include <sys/mount.h>

#include "fs/fuse_state.h"

/* A second server on f's folder, as a restored snapshot would make. */
static struct fuse_server *new_server(struct fx *f)
{
	struct fuse_server *srv = NULL;

	assert_int_equal(fuse_server_create(&f->cfg, &srv), 0);
	return srv;
}

/* Saves f's server, restores that into a new one and makes it f's. */
static void save_and_swap(struct fx *f, struct fuse_server **old)
{
	unsigned char *blob = NULL;
	size_t len = 0;
	char err[256];

	assert_int_equal(fuse_server_save_state(f->srv, &blob, &len), 0);
	struct fuse_server *srv = new_server(f);

	assert_int_equal(fuse_server_restore_state(srv, blob, len, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	free(blob);
	*old = f->srv;
	f->srv = srv;
}

static uint64_t ino_of(struct fx *f, const char *rel)
{
	struct stat st;

	assert_int_equal(lstat(fx_path(f, rel), &st), 0);
	return st.st_ino;
}

static void nodes_handles_and_session_come_back(void **state)
{
	struct fx *f = *state;
	struct fuse_server *old;
	struct fuse_attr attr;
	uint64_t rw, ro, dir_fh;
	char buf[64];

	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	assert_int_equal(mkdir(fx_path(f, "d/e"), 0755), 0);
	fx_write_file(f, "a", "alpha");
	fx_write_file(f, "d/e/f", "nested bytes");
	assert_int_equal(symlink("a", fx_path(f, "d/l")), 0);
	uint64_t a = fx_lookup_id(f, FUSE_ROOT_ID, "a");
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");
	uint64_t e = fx_lookup_id(f, d, "e");
	uint64_t file = fx_lookup_id(f, e, "f");
	uint64_t link = fx_lookup_id(f, d, "l");

	assert_int_equal(fx_lookup_id(f, FUSE_ROOT_ID, "a"), a); /* count 2 */
	assert_int_equal(fx_open(f, file, O_RDWR, &rw), 0);
	assert_int_equal(fx_open(f, a, O_RDONLY, &ro), 0);
	assert_int_equal(fx_opendir(f, d, &dir_fh), 0);
	uint64_t flags = atomic_load(&f->srv->flags);

	save_and_swap(f, &old);
	assert_int_equal(atomic_load(&f->srv->flags), flags);
	assert_int_equal(fx_inodes(f), 6);
	assert_int_equal(fuse_server_handle_count(f->srv), 3);

	/* The same node ids are the same files. */
	const struct { uint64_t id; const char *rel; } nodes[] = {
		{ a, "a" }, { d, "d" }, { e, "d/e" }, { file, "d/e/f" },
		{ link, "d/l" },
	};
	for (size_t i = 0; i < ARRAY_LEN(nodes); i++) {
		assert_int_equal(fx_getattr(f, nodes[i].id, &attr), 0);
		assert_int_equal(attr.ino, ino_of(f, nodes[i].rel));
	}
	/* Its handles read, write and list their files. */
	assert_int_equal(fx_read(f, rw, 0, sizeof(buf), buf), 12);
	assert_memory_equal(buf, "nested bytes", 12);
	assert_int_equal(fx_read(f, ro, 0, sizeof(buf), buf), 5);
	assert_int_equal(fx_write(f, rw, 0, "NESTED", 6), 6);
	assert_int_equal(fx_read_file(f, "d/e/f", buf, sizeof(buf)), 12);
	assert_string_equal(buf, "NESTED bytes");
	assert_int_equal(fx_write(f, ro, 0, "x", 1), -EBADF);
	struct fuse_read_in rd = { .fh = dir_fh, .size = 4096 };
	req_begin(FUSE_READDIR, d);
	req_add(&rd, sizeof(rd));
	assert_int_equal(req_send(f), 0);
	assert_true(fx_reply_len > 0);

	/* The host's new file is there; new ids are new. */
	fx_write_file(f, "d/new", "new");
	uint64_t fresh = fx_lookup_id(f, d, "new");
	assert_true(fresh > link && fresh > file);
	uint64_t fh;
	assert_int_equal(fx_open(f, fresh, O_RDONLY, &fh), 0);
	assert_true(fh > dir_fh && fh > rw && fh > ro);

	/* Lookup counts came back: a's two forgets, then it is gone. */
	size_t inodes = fx_inodes(f);
	fx_forget(f, a, 1);
	assert_int_equal(fx_inodes(f), inodes);
	fx_forget(f, a, 1);
	assert_int_equal(fx_inodes(f), inodes - 1);
	assert_int_equal(fx_getattr(f, a, &attr), -ESTALE);
	assert_int_equal(fx_release(f, rw), 0);
	assert_int_equal(fx_release(f, rw), -EBADF);
	fuse_server_destroy(old);
}

/* Ids the old server handed out and the guest forgot are not handed out
 * again, and a never-initialized server's state is just that. */
static void forgotten_ids_stay_dead(void **state)
{
	struct fx *f = *state;
	struct fuse_server *old;
	uint64_t fh;

	fx_write_file(f, "a", "a");
	uint64_t a = fx_lookup_id(f, FUSE_ROOT_ID, "a");
	assert_int_equal(fx_open(f, a, O_RDONLY, &fh), 0);
	assert_int_equal(fx_release(f, fh), 0);
	fx_forget(f, a, 1);
	save_and_swap(f, &old);
	assert_int_equal(fx_inodes(f), 1);
	assert_true(fx_lookup_id(f, FUSE_ROOT_ID, "a") > a);
	assert_int_equal(fx_open(f, a + 1, O_RDONLY, &fh), 0);
	assert_true(fh > 1);
	fuse_server_destroy(old);

	/* Before INIT: nothing but that, and INIT works after. */
	struct fuse_server *blank = new_server(f), *restored = new_server(f);
	unsigned char *blob;
	size_t len;
	char err[256];

	assert_int_equal(fuse_server_save_state(blank, &blob, &len), 0);
	assert_int_equal(fuse_server_restore_state(restored, blob, len, err,
						   sizeof(err)), 0);
	free(blob);
	fuse_server_destroy(blank);
	old = f->srv;
	f->srv = restored;
	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL), 0);
	assert_int_equal(fx_lookup_id(f, FUSE_ROOT_ID, "a"), 2);
	fuse_server_destroy(old);
}

/* A file the host deleted and replaced after the save is not the guest's
 * node: that answers ESTALE (its handles too), the name looks up anew. */
static void a_replaced_file_is_stale(void **state)
{
	struct fx *f = *state;
	struct fuse_server *old;
	struct fuse_attr attr;
	uint64_t fh, dir_fh;
	char buf[16];

	fx_write_file(f, "x", "old");
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	uint64_t x = fx_lookup_id(f, FUSE_ROOT_ID, "x");
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");
	assert_int_equal(fx_open(f, x, O_RDWR, &fh), 0);
	assert_int_equal(fx_opendir(f, d, &dir_fh), 0);
	unsigned char *blob;
	size_t len;
	char err[256];

	assert_int_equal(fuse_server_save_state(f->srv, &blob, &len), 0);
	/* While the old server holds the old files, so their inode numbers
	 * cannot pass to the new ones. */
	assert_int_equal(unlink(fx_path(f, "x")), 0);
	fx_write_file(f, "x", "new file");
	assert_int_equal(rmdir(fx_path(f, "d")), 0);
	fx_write_file(f, "d", "now a file");
	struct fuse_server *srv = new_server(f);

	assert_int_equal(fuse_server_restore_state(srv, blob, len, err, sizeof(err)), 0);
	free(blob);
	old = f->srv;
	f->srv = srv;
	assert_int_equal(fx_inodes(f), 3);
	assert_int_equal(fx_getattr(f, x, &attr), -ESTALE);
	assert_int_equal(fx_getattr(f, d, &attr), -ESTALE);
	struct fuse_entry_out e;
	uint64_t again;

	assert_int_equal(fx_lookup(f, d, "y", &e), -ESTALE);
	assert_int_equal(fx_open(f, x, O_RDONLY, &again), -ESTALE);
	assert_int_equal(fx_opendir(f, d, &again), -ESTALE);
	assert_int_equal(fx_read(f, fh, 0, sizeof(buf), buf), -ESTALE);
	assert_int_equal(fx_write(f, fh, 0, "z", 1), -ESTALE);
	struct fuse_getattr_in ga = { .getattr_flags = FUSE_GETATTR_FH, .fh = fh };
	req_begin(FUSE_GETATTR, x);
	req_add(&ga, sizeof(ga));
	assert_int_equal(req_send(f), -ESTALE);

	/* The name is the new file's, under a new node id. */
	uint64_t now = fx_lookup_id(f, FUSE_ROOT_ID, "x");
	assert_true(now != x);
	assert_int_equal(fx_getattr(f, now, &attr), 0);
	assert_int_equal(attr.size, strlen("new file"));

	/* Stale nodes and handles still go when the guest lets them go. */
	assert_int_equal(fx_release(f, fh), 0);
	assert_int_equal(fx_release(f, dir_fh), 0);
	assert_int_equal(fuse_server_handle_count(f->srv), 0);
	fx_forget(f, x, 1);
	fx_forget(f, d, 1);
	assert_int_equal(fx_inodes(f), 2);
	fuse_server_destroy(old);
}

/* A file unlinked on the host while the guest held it cannot be named:
 * it is saved stale, and saved stale again from the restored server. */
static void an_unlinked_file_is_saved_stale(void **state)
{
	struct fx *f = *state;
	struct fuse_server *old;
	struct fuse_attr attr;
	uint64_t fh;

	fx_write_file(f, "gone", "bytes");
	uint64_t gone = fx_lookup_id(f, FUSE_ROOT_ID, "gone");
	assert_int_equal(fx_open(f, gone, O_RDONLY, &fh), 0);
	assert_int_equal(unlink(fx_path(f, "gone")), 0);
	save_and_swap(f, &old);
	fuse_server_destroy(old);
	assert_int_equal(fx_getattr(f, gone, &attr), -ESTALE);
	save_and_swap(f, &old);
	fuse_server_destroy(old);
	assert_int_equal(fx_inodes(f), 2);
	assert_int_equal(fx_getattr(f, gone, &attr), -ESTALE);
	assert_int_equal(fx_release(f, fh), 0);
}

/* A blob that holds more than the new server's caps is refused whole. */
static void caps_apply(void **state)
{
	struct fx *f = *state;
	unsigned char *blob;
	size_t len;
	char err[256];
	uint64_t fh;

	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%d", i);
		fx_write_file(f, name, "x");
		assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, name),
					 O_RDONLY, &fh), 0);
	}
	assert_int_equal(fuse_server_save_state(f->srv, &blob, &len), 0);
	struct fuse_server_config cfg = f->cfg;
	struct fuse_server *srv;

	cfg.max_inodes = 4; /* root and 3 */
	assert_int_equal(fuse_server_create(&cfg, &srv), 0);
	assert_int_equal(fuse_server_restore_state(srv, blob, len, err, sizeof(err)),
			 -ENFILE);
	assert_non_null(strstr(err, "cap"));
	assert_int_equal(fuse_server_inode_count(srv), 1);
	fuse_server_destroy(srv);
	cfg.max_inodes = 5;
	cfg.max_handles = 3;
	assert_int_equal(fuse_server_create(&cfg, &srv), 0);
	assert_int_equal(fuse_server_restore_state(srv, blob, len, err, sizeof(err)),
			 -ENFILE);
	fuse_server_destroy(srv);
	cfg.max_handles = 4;
	assert_int_equal(fuse_server_create(&cfg, &srv), 0);
	assert_int_equal(fuse_server_restore_state(srv, blob, len, err, sizeof(err)), 0);
	fuse_server_destroy(srv);
	free(blob);
}

/* Only a fresh server takes a state, and one with a session is left be. */
static void only_a_fresh_server_restores(void **state)
{
	struct fx *f = *state;
	unsigned char *blob;
	size_t len;
	char err[256];

	fx_write_file(f, "a", "a");
	uint64_t a = fx_lookup_id(f, FUSE_ROOT_ID, "a");
	assert_int_equal(fuse_server_save_state(f->srv, &blob, &len), 0);
	assert_int_equal(fuse_server_restore_state(f->srv, blob, len, err, sizeof(err)),
			 -EBUSY);
	assert_true(err[0]);
	assert_int_equal(fx_inodes(f), 2);
	struct fuse_attr attr;
	assert_int_equal(fx_getattr(f, a, &attr), 0);
	free(blob);
}

/* A realistic state to break: nested nodes, a symlink, handles. */
static void make_state(struct fx *f, unsigned char **blob, size_t *len)
{
	uint64_t fh;

	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	fx_write_file(f, "d/f", "file");
	assert_int_equal(symlink("f", fx_path(f, "d/l")), 0);
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");
	uint64_t file = fx_lookup_id(f, d, "f");
	fx_lookup_id(f, d, "l");
	assert_int_equal(fx_open(f, file, O_RDWR, &fh), 0);
	assert_int_equal(fx_opendir(f, d, &fh), 0);
	assert_int_equal(fuse_server_save_state(f->srv, blob, len), 0);
}

/* Restores buf into srv (made anew first if the last one took a state):
 * a refusal must say why and leave the server fresh. Returns the result. */
static int try_restore(struct fx *f, struct fuse_server **srv,
		       const unsigned char *buf, size_t len)
{
	char err[256];

	if (!*srv)
		*srv = new_server(f);
	int r = fuse_server_restore_state(*srv, buf, len, err, sizeof(err));

	if (r) {
		assert_true(r < 0);
		assert_true(err[0] != '\0');
		assert_null(strchr(err, '\n'));
		assert_int_equal(fuse_server_inode_count(*srv), 1);
		assert_int_equal(fuse_server_handle_count(*srv), 0);
	} else {
		fuse_server_destroy(*srv);
		*srv = NULL;
	}
	return r;
}

static void truncated_and_flipped_blobs(void **state)
{
	struct fx *f = *state;
	struct fuse_server *srv = NULL;
	unsigned char *blob;
	size_t len;

	make_state(f, &blob, &len);
	/* Cut anywhere, the blob is refused (exactly, with nothing after it). */
	for (size_t n = 0; n < len; n++) {
		unsigned char *cut = malloc(n ? n : 1);

		memcpy(cut, blob, n);
		assert_int_equal(try_restore(f, &srv, cut, n), -EBADMSG);
		free(cut);
	}
	assert_int_equal(try_restore(f, &srv, NULL, 0), -EBADMSG);
	unsigned char *longer = malloc(len + 1);
	memcpy(longer, blob, len);
	longer[len] = 0;
	assert_int_equal(try_restore(f, &srv, longer, len + 1), -EBADMSG);
	free(longer);

	/* Any byte flipped: refused with a line, or a state the server
	 * holds and lets go of; the header's fixed fields always refused. */
	for (size_t i = 0; i < len; i++) {
		for (unsigned bit = 1; bit < 0x100; bit <<= 1) {
			blob[i] ^= (unsigned char)bit;
			int r = try_restore(f, &srv, blob, len);

			if (i < 16 || (i >= 40 && i < 48))
				assert_true(r < 0);
			blob[i] ^= (unsigned char)bit;
		}
	}
	assert_int_equal(try_restore(f, &srv, blob, len), 0);
	free(blob);
	if (srv)
		fuse_server_destroy(srv);
}

/* --- hand-made blobs --- */

static unsigned char hand[1 << 14];
static size_t hand_len;

static void h_put(const void *p, size_t n)
{
	assert_true(hand_len + n <= sizeof(hand));
	memcpy(hand + hand_len, p, n);
	hand_len += n;
}

static void h32(uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8),
			       (unsigned char)(v >> 16), (unsigned char)(v >> 24) };
	h_put(b, 4);
}

static void h64(uint64_t v)
{
	h32((uint32_t)v);
	h32((uint32_t)(v >> 32));
}

static void h_header(uint32_t session, uint64_t next_node, uint64_t next_fh,
		     uint32_t inodes, uint32_t handles)
{
	hand_len = 0;
	h_put("fsvmFUSE", 8);
	h32(1);
	h32(session);
	h64(0);
	h64(next_node);
	h64(next_fh);
	h32(inodes);
	h32(handles);
}

static void h_inode(uint64_t id, uint64_t nlookup, const struct stat *st,
		    uint32_t flags, const char *path, size_t path_len)
{
	h64(id);
	h64(nlookup);
	h64(st->st_dev);
	h64(st->st_ino);
	h32(st->st_mode & S_IFMT);
	h32(flags);
	h32((uint32_t)path_len);
	h_put(path, path_len);
}

#define HANDLE_LEN 20 /* bytes of a handle's record */

static void h_handle(uint64_t fh, uint64_t nodeid, uint32_t flags)
{
	h64(fh);
	h64(nodeid);
	h32(flags);
}

/* One inode, "f", a regular file: as good as a blob gets by hand. */
static void h_good(struct stat *st, uint64_t id, const char *path,
		   uint32_t handles)
{
	h_header(1, 100, 100, 1, handles);
	h_inode(id, 1, st, 0, path, strlen(path));
}

static void expect_refused(struct fx *f, int code, const char *what)
{
	struct fuse_server *srv = NULL;
	int r = try_restore(f, &srv, hand, hand_len);

	if (r != code)
		fail_msg("%s: %d, not %d", what, r, code);
	if (srv)
		fuse_server_destroy(srv);
}

static void hand_made_bad_records(void **state)
{
	struct fx *f = *state;
	struct stat st, dir_st;
	char long_path[PATH_MAX + 1];
	struct fuse_server *srv = NULL;

	fx_write_file(f, "f", "file");
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	assert_int_equal(lstat(fx_path(f, "f"), &st), 0);
	assert_int_equal(lstat(fx_path(f, "d"), &dir_st), 0);

	h_good(&st, 5, "f", 0);
	assert_int_equal(try_restore(f, &srv, hand, hand_len), 0);

	h_header(0, 100, 100, 0, 0);
	hand[12] = 2;
	expect_refused(f, -EBADMSG, "unknown session bits");
	h_header(0, 100, 100, 1, 0);
	h_inode(5, 1, &st, 0, "f", 1);
	expect_refused(f, -EBADMSG, "inodes without a session");
	h_header(1, 100, 100, 0, 0);
	hand[8] = 2;
	expect_refused(f, -EBADMSG, "version 2");
	h_header(1, 100, 100, 0, 0);
	hand[16] = 0xff, hand[23] = 0x7f;
	expect_refused(f, -EINVAL, "flags never offered");
	h_header(1, 1, 100, 0, 0);
	expect_refused(f, -EBADMSG, "next node id 1");
	h_header(1, 100, 0, 0, 0);
	expect_refused(f, -EBADMSG, "next fh 0");
	h_header(1, UINT64_MAX, 100, 0, 0);
	expect_refused(f, -EBADMSG, "absurd next node id");
	h_header(1, 100, 100, UINT32_MAX, UINT32_MAX);
	expect_refused(f, -EBADMSG, "absurd counts");

	const uint64_t bad_ids[] = { 0, 1, INODE_SEALED, INODE_SEALED | 1, 100,
				     1ULL << 62 };
	for (size_t i = 0; i < ARRAY_LEN(bad_ids); i++) {
		h_good(&st, bad_ids[i], "f", 0);
		expect_refused(f, -EBADMSG, "a node id no lookup made");
	}
	h_header(1, 100, 100, 1, 0);
	h_inode(5, 0, &st, 0, "f", 1);
	expect_refused(f, -EBADMSG, "lookup count 0");
	h_header(1, 100, 100, 1, 0);
	h_inode(5 | INODE_SEALED, 1, &st, 0, "f", 1);
	expect_refused(f, -EBADMSG, "a sealed file");
	h_header(1, 100, 100, 1, 0);
	h_inode(5, 1, &st, 4, "f", 1);
	expect_refused(f, -EBADMSG, "unknown inode flags");
	h_header(1, 100, 100, 1, 0);
	h_inode(5, 1, &(struct stat){ .st_mode = 0170000 }, 0, "f", 1);
	expect_refused(f, -EBADMSG, "no such type");
	h_header(1, 100, 100, 1, 0);
	h_inode(5, 1, &st, 1, "f", 1);
	expect_refused(f, -EBADMSG, "a stale node with a path");

	const char *bad_paths[] = { "", "/f", "..", "../f", "d/../f", "./f",
				    "d//f", "d/", "d/.", "f\0g" };
	for (size_t i = 0; i < ARRAY_LEN(bad_paths); i++) {
		size_t n = strlen(bad_paths[i]) + (i == ARRAY_LEN(bad_paths) - 1 ? 2 : 0);

		h_header(1, 100, 100, 1, 0);
		h_inode(5, 1, &st, 0, bad_paths[i], n);
		expect_refused(f, -EBADMSG, bad_paths[i]);
	}
	memset(long_path, 'a', sizeof(long_path));
	h_header(1, 100, 100, 1, 0);
	h_inode(5, 1, &st, 0, long_path, PATH_MAX);
	expect_refused(f, -EBADMSG, "a path of PATH_MAX");
	h_header(1, 100, 100, 1, 0);
	h_inode(5, 1, &st, 0, "f", 1);
	hand_len -= 1;
	hand[hand_len - 4] = 200;
	expect_refused(f, -EBADMSG, "a path past the end");

	/* Twice the same id, twice the same file. */
	h_header(1, 100, 100, 2, 0);
	h_inode(5, 1, &st, 0, "f", 1);
	h_inode(5, 1, &dir_st, 0, "d", 1);
	expect_refused(f, -EBADMSG, "an id twice");
	h_header(1, 100, 100, 2, 0);
	h_inode(5, 1, &st, 0, "f", 1);
	h_inode(6, 1, &st, 0, "f", 1);
	expect_refused(f, -EBADMSG, "a file twice");

	/* Handles: after the file f (node 5), one or two of these. */
	const struct {
		uint64_t fh, nodeid;
		uint32_t flags;
		const char *what;
	} bad_handles[] = {
		{ 0, 5, O_RDONLY, "fh 0" },
		{ 100, 5, O_RDONLY, "fh past the next" },
		{ 7, 6, O_RDONLY, "a node not in the state" },
		{ 7, 5, O_RDONLY | O_DIRECTORY, "a file opened as a directory" },
		{ 7, FUSE_ROOT_ID, O_RDONLY, "a directory opened as a file" },
		{ 7, 5, O_RDONLY | O_PATH, "O_PATH" },
		{ 7, 5, O_ACCMODE, "access mode 3" },
		{ 7, 5, O_RDWR, "fh twice" }, /* after fh 7 read-only */
	};
	for (size_t i = 0; i < ARRAY_LEN(bad_handles); i++) {
		bool twice = i == ARRAY_LEN(bad_handles) - 1;

		h_good(&st, 5, "f", twice ? 2 : 1);
		if (twice)
			h_handle(7, 5, O_RDONLY);
		h_handle(bad_handles[i].fh, bad_handles[i].nodeid,
			 bad_handles[i].flags);
		expect_refused(f, -EBADMSG, bad_handles[i].what);
	}
	h_good(&st, 5, "f", 1);
	h_handle(7, 5, O_RDONLY);
	hand_len--;
	expect_refused(f, -EBADMSG, "a handle cut short");

	/* What the file's open flags may be, less what makes files. */
	h_good(&st, 5, "f", 2);
	h_handle(7, 5, O_RDWR | O_CREAT | O_TRUNC | O_EXCL | O_APPEND);
	h_handle(8, FUSE_ROOT_ID, O_RDONLY | O_DIRECTORY);
	assert_int_equal(try_restore(f, &srv, hand, hand_len), 0);

	/* A writable handle on a read-only share. */
	struct fuse_server_config cfg = f->cfg;
	char err[256];
	cfg.readonly = true;
	assert_int_equal(fuse_server_create(&cfg, &srv), 0);
	h_good(&st, 5, "f", 1);
	h_handle(7, 5, O_WRONLY);
	assert_int_equal(fuse_server_restore_state(srv, hand, hand_len, err,
						   sizeof(err)), -EROFS);
	assert_non_null(strstr(err, "read-only"));
	fuse_server_destroy(srv);
}

/* A pseudo file system's mount point comes back sealed; a plain
 * directory now where it was, or one now where a plain one was, stale. */
static void sealed_nodes_come_back_sealed(void **state)
{
	struct fx *f = *state;
	struct fuse_server *old;
	struct fuse_attr attr;
	struct fuse_entry_out e;

	NEEDS_ROOT();
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	assert_int_equal(mkdir(fx_path(f, "sys"), 0755), 0);
	assert_int_equal(mount("sysfs", fx_path(f, "sys"), "sysfs", 0, NULL), 0);
	/* A server whose root is in this mount namespace, which holds sys. */
	fuse_server_destroy(f->srv);
	f->srv = new_server(f);
	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL), 0);
	uint64_t sys = fx_lookup_id(f, FUSE_ROOT_ID, "sys");
	assert_true(sys & INODE_SEALED);
	save_and_swap(f, &old);
	fuse_server_destroy(old);
	assert_int_equal(fx_getattr(f, sys, &attr), 0);
	assert_int_equal(attr.mode, S_IFDIR | 0555);
	assert_int_equal(fx_lookup(f, sys, "kernel", &e), -ENOENT);
	assert_int_equal(fx_opendir(f, sys, &(uint64_t){0}), -EACCES);

	/* Nor may a blob open it: the handle would list sysfs. */
	char err[256];
	struct stat st;
	struct fuse_server *srv = new_server(f);

	assert_int_equal(lstat(fx_path(f, "sys"), &st), 0);
	h_header(1, 100, 100, 1, 1);
	h_inode(sys, 1, &st, 0, "sys", 3);
	h_handle(7, sys, O_RDONLY | O_DIRECTORY);
	assert_int_equal(fuse_server_restore_state(srv, hand, hand_len, err,
						   sizeof(err)), -EBADMSG);
	assert_int_equal(fuse_server_restore_state(srv, hand, hand_len - HANDLE_LEN,
						   err, sizeof(err)), -EBADMSG);
	hand[44] = 0; /* no handle */
	assert_int_equal(fuse_server_restore_state(srv, hand, hand_len - HANDLE_LEN,
						   err, sizeof(err)), 0);
	fuse_server_destroy(srv);
	assert_int_equal(umount2(fx_path(f, "sys"), MNT_DETACH), 0);
	/* Unmounted: the folder beneath is another file. */
	save_and_swap(f, &old);
	fuse_server_destroy(old);
	assert_int_equal(fx_getattr(f, sys, &attr), -ESTALE);
}

/* The device's DAX window names its files by node id: a file's node from
 * an fd of it, and the node's file opened again, for reading or writing;
 * an unknown, stale or forgotten node ESTALE. */
static void the_dax_window_names_files_by_node(void **state)
{
	struct fx *f = *state;
	struct fuse_server *old;
	uint64_t nodeid;
	char buf[16];

	fx_write_file(f, "m", "mapped bytes");
	fx_write_file(f, "n", "never looked up");
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	uint64_t m = fx_lookup_id(f, FUSE_ROOT_ID, "m");
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");
	int fd = open(fx_path(f, "m"), O_RDONLY | O_CLOEXEC);

	assert_int_equal(fuse_server_node_of_fd(f->srv, fd, &nodeid), 0);
	assert_int_equal(nodeid, m);
	close(fd);
	fd = open(fx_path(f, "n"), O_RDONLY | O_CLOEXEC);
	assert_int_equal(fuse_server_node_of_fd(f->srv, fd, &nodeid), -ENOENT);
	assert_int_equal(nodeid, 0);
	close(fd);

	fd = fuse_server_open_node(f->srv, m, false);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 6, 0), 6);
	assert_memory_equal(buf, "mapped", 6);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	fd = fuse_server_open_node(f->srv, m, true);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	close(fd);
	assert_int_equal(fuse_server_open_node(f->srv, d, false), -EISDIR);
	assert_int_equal(fuse_server_open_node(f->srv, 0, false), -ESTALE);
	assert_int_equal(fuse_server_open_node(f->srv, m + 100, false), -ESTALE);

	/* Gone before a restore: the node comes back stale. */
	assert_int_equal(unlink(fx_path(f, "m")), 0);
	save_and_swap(f, &old);
	fuse_server_destroy(old);
	assert_int_equal(fuse_server_open_node(f->srv, m, false), -ESTALE);
	/* A restore undone: the server is fresh, its nodes unknown. */
	fuse_server_forget_state(f->srv);
	assert_int_equal(fuse_server_inode_count(f->srv), 1);
	assert_int_equal(fuse_server_open_node(f->srv, d, false), -ESTALE);
	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL), 0);

	/* A read-only share opens nothing for writing. */
	struct fuse_server_config cfg = f->cfg;
	struct fuse_server *ro = NULL;

	cfg.readonly = true;
	assert_int_equal(fuse_server_create(&cfg, &ro), 0);
	old = f->srv;
	f->srv = ro;
	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL), 0);
	uint64_t n = fx_lookup_id(f, FUSE_ROOT_ID, "n");

	assert_int_equal(fuse_server_open_node(ro, n, true), -EROFS);
	fd = fuse_server_open_node(ro, n, false);
	assert_true(fd >= 0);
	close(fd);
	f->srv = old;
	fuse_server_destroy(ro);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(nodes_handles_and_session_come_back),
		FX_TEST(forgotten_ids_stay_dead),
		FX_TEST(a_replaced_file_is_stale),
		FX_TEST(an_unlinked_file_is_saved_stale),
		FX_TEST(caps_apply),
		FX_TEST(only_a_fresh_server_restores),
		FX_TEST(truncated_and_flipped_blobs),
		FX_TEST(hand_made_bad_records),
		FX_TEST(sealed_nodes_come_back_sealed),
		FX_TEST(the_dax_window_names_files_by_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
