/* FUSE server tests: directory listing, paging, READDIRPLUS lookups. */
#include "tests/unit/test_fuse_helpers.h"

#include <dirent.h>
#include <limits.h>

#define MANY 300

/* Sends READDIR(PLUS) and returns its error; the records are in fx_reply. */
static int readdir_req(struct fx *f, uint32_t opcode, uint64_t fh, uint64_t off,
		       uint32_t size)
{
	struct fuse_read_in in = { .fh = fh, .offset = off, .size = size };

	req_begin(opcode, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	return req_send(f);
}

struct listing {
	int seen[MANY];   /* how often each "eNNN" came back */
	int dots;         /* "." and ".." */
	int calls;
	uint64_t lookups; /* node ids handed out by READDIRPLUS */
	uint64_t ids[MANY];
};

/* Checks one record's shape and counts it; returns its size. */
static size_t take_record(const unsigned char *p, size_t left, bool plus,
			  struct listing *l, uint64_t *next_off)
{
	struct fuse_direntplus dp;
	size_t head = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
	const struct fuse_dirent *d;

	assert_true(left >= head);
	memcpy(&dp, p, plus ? sizeof(dp) : sizeof(dp.dirent));
	d = plus ? &dp.dirent : (const struct fuse_dirent *)&dp;
	size_t size = FUSE_DIRENT_ALIGN(head + d->namelen);

	assert_true(size <= left);
	assert_true(d->namelen > 0 && d->namelen <= NAME_MAX);
	char name[NAME_MAX + 1] = { 0 };

	memcpy(name, p + head, d->namelen);
	*next_off = d->off;
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		l->dots++;
		/* The guest does not count these: neither may we. */
		if (plus)
			assert_int_equal(dp.entry_out.nodeid, 0);
		return size;
	}
	int n;

	assert_int_equal(sscanf(name, "e%d", &n), 1);
	assert_true(n >= 0 && n < MANY);
	l->seen[n]++;
	assert_int_equal(d->type, DT_REG);
	if (plus) {
		assert_true(dp.entry_out.nodeid > FUSE_ROOT_ID);
		assert_int_equal(dp.entry_out.attr.ino, d->ino);
		assert_int_equal(dp.entry_out.attr.size, 3);
		assert_true(S_ISREG(dp.entry_out.attr.mode));
		l->ids[n] = dp.entry_out.nodeid;
		l->lookups++;
	}
	return size;
}

/* Lists the whole directory in replies of at most size bytes. */
static void list_all(struct fx *f, uint64_t fh, bool plus, uint32_t size,
		     struct listing *l)
{
	uint32_t opcode = plus ? FUSE_READDIRPLUS : FUSE_READDIR;
	uint64_t off = 0;

	memset(l, 0, sizeof(*l));
	for (;;) {
		assert_int_equal(readdir_req(f, opcode, fh, off, size), 0);
		assert_true(fx_reply_len <= size);
		if (fx_reply_len == 0)
			break;
		l->calls++;
		for (size_t pos = 0; pos < fx_reply_len;)
			pos += take_record(fx_reply + pos, fx_reply_len - pos, plus, l, &off);
	}
}

static uint64_t make_many(struct fx *f)
{
	char name[16];
	uint64_t fh;

	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "e%03d", i);
		fx_write_file(f, name, "abc");
	}
	assert_int_equal(fx_opendir(f, FUSE_ROOT_ID, &fh), 0);
	return fh;
}

static void readdir_pages_through_everything_once(void **state)
{
	struct fx *f = *state;
	static struct listing l;
	uint64_t fh = make_many(f);

	list_all(f, fh, false, 512, &l);
	assert_true(l.calls > 10);
	assert_int_equal(l.dots, 2);
	for (int i = 0; i < MANY; i++)
		assert_int_equal(l.seen[i], 1);
	/* Plain READDIR counts no lookups. */
	assert_int_equal(fx_inodes(f), 1);
}

static void readdir_resumes_at_any_offset_it_gave(void **state)
{
	struct fx *f = *state;
	static unsigned char first[4096];
	uint64_t fh = make_many(f);
	uint64_t off = 0;

	/* Walk a few pages in, then ask for the same page twice. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(readdir_req(f, FUSE_READDIR, fh, off, 300), 0);
		size_t pos = 0;

		while (pos < fx_reply_len) {
			struct fuse_dirent d;

			memcpy(&d, fx_reply + pos, sizeof(d));
			off = d.off;
			pos += FUSE_DIRENT_SIZE(&d);
		}
	}
	assert_int_equal(readdir_req(f, FUSE_READDIR, fh, off, 300), 0);
	size_t len = fx_reply_len;

	memcpy(first, fx_reply, len);
	assert_int_equal(readdir_req(f, FUSE_READDIR, fh, off, 300), 0);
	assert_int_equal(fx_reply_len, len);
	assert_memory_equal(fx_reply, first, len);
}

static void readdirplus_counts_lookups_and_forget_frees(void **state)
{
	struct fx *f = *state;
	static struct listing l;
	uint64_t fh = make_many(f);

	list_all(f, fh, true, 1024, &l);
	assert_int_equal(l.dots, 2);
	for (int i = 0; i < MANY; i++)
		assert_int_equal(l.seen[i], 1);
	assert_int_equal(l.lookups, MANY);
	assert_int_equal(fx_inodes(f), 1 + MANY);

	/* A second listing counts a second lookup of the same inodes. */
	static struct listing again;

	list_all(f, fh, true, 4096, &again);
	assert_int_equal(fx_inodes(f), 1 + MANY);
	for (int i = 0; i < MANY; i++) {
		assert_int_equal(again.ids[i], l.ids[i]);
		fx_forget(f, l.ids[i], 1);
	}
	assert_int_equal(fx_inodes(f), 1 + MANY);
	for (int i = 0; i < MANY; i++)
		fx_forget(f, l.ids[i], 1);
	assert_int_equal(fx_inodes(f), 1);
}

static void an_entry_that_does_not_fit_is_not_counted(void **state)
{
	struct fx *f = *state;
	uint64_t fh;

	fx_write_file(f, "only", "abc");
	assert_int_equal(fx_opendir(f, FUSE_ROOT_ID, &fh), 0);
	/* Room for one direntplus record at most ("." or ".." or "only"). */
	uint32_t one = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET_DIRENTPLUS + 4);
	uint64_t off = 0;
	int entries = 0;

	for (;;) {
		assert_int_equal(readdir_req(f, FUSE_READDIRPLUS, fh, off, one), 0);
		if (fx_reply_len == 0)
			break;
		struct fuse_direntplus dp;

		memcpy(&dp, fx_reply, sizeof(dp));
		assert_int_equal(fx_reply_len, FUSE_DIRENTPLUS_SIZE(&dp));
		off = dp.dirent.off;
		entries++;
	}
	assert_int_equal(entries, 3);
	assert_int_equal(fx_inodes(f), 2);
	/* Too small for any entry: an error, never an empty "end". */
	assert_int_equal(readdir_req(f, FUSE_READDIRPLUS, fh, 0, 20), -ERANGE);
	assert_int_equal(readdir_req(f, FUSE_READDIR, fh, 0, 8), -ERANGE);
	fx_out_room = sizeof(struct fuse_out_header) + 8;
	assert_int_equal(readdir_req(f, FUSE_READDIR, fh, 0, 4096), -ERANGE);
	assert_int_equal(fx_inodes(f), 2);
}

static void empty_directory_and_handle_errors(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	static struct listing l;
	uint64_t fh, file_fh;

	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, "d", 0755, &e), 0);
	assert_int_equal(fx_opendir(f, e.nodeid, &fh), 0);
	list_all(f, fh, true, 4096, &l);
	assert_int_equal(l.dots, 2);
	assert_int_equal(l.calls, 1);

	fx_write_file(f, "file", "abc");
	uint64_t file = fx_lookup_id(f, FUSE_ROOT_ID, "file");

	assert_int_equal(fx_opendir(f, file, &file_fh), -ENOTDIR);
	assert_int_equal(fx_open(f, file, O_RDONLY, &file_fh), 0);
	assert_int_equal(readdir_req(f, FUSE_READDIR, file_fh, 0, 4096), -ENOTDIR);
	assert_int_equal(readdir_req(f, FUSE_READDIR, 777, 0, 4096), -EBADF);
	assert_int_equal(readdir_req(f, FUSE_READDIR, fh, (uint64_t)INT64_MAX + 1, 4096), -EINVAL);
	assert_int_equal(fx_opendir(f, 8888, &file_fh), -ESTALE);

	struct fuse_fsync_in sync = { .fh = fh };

	req_begin(FUSE_FSYNCDIR, e.nodeid);
	req_add(&sync, sizeof(sync));
	assert_int_equal(req_send(f), 0);

	struct fuse_release_in rel = { .fh = fh };

	req_begin(FUSE_RELEASEDIR, e.nodeid);
	req_add(&rel, sizeof(rel));
	assert_int_equal(req_send(f), 0);
	req_begin(FUSE_RELEASEDIR, e.nodeid);
	req_add(&rel, sizeof(rel));
	assert_int_equal(req_send(f), -EBADF);
	assert_int_equal(readdir_req(f, FUSE_READDIR, fh, 0, 4096), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(readdir_pages_through_everything_once),
		FX_TEST(readdir_resumes_at_any_offset_it_gave),
		FX_TEST(readdirplus_counts_lookups_and_forget_frees),
		FX_TEST(an_entry_that_does_not_fit_is_not_counted),
		FX_TEST(empty_directory_and_handle_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
