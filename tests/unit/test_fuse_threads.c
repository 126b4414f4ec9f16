/* FUSE server tests: many threads at once, counts right at the end. */
#include "tests/unit/test_fuse_helpers.h"

#include <pthread.h>

#define THREADS 4
#define ROUNDS 300
#define FILES 8

/* One thread's own request and reply buffers. */
struct worker {
	struct fx *f;
	int id;
	uint64_t unique;
	_Alignas(8) unsigned char in[512];
	_Alignas(8) unsigned char out[8192];
	size_t in_len;
};

static void w_begin(struct worker *w, uint32_t opcode, uint64_t nodeid)
{
	struct fuse_in_header h = { .opcode = opcode, .nodeid = nodeid,
				    .unique = ++w->unique };

	memcpy(w->in, &h, sizeof(h));
	w->in_len = sizeof(h);
}

static void w_add(struct worker *w, const void *p, size_t n)
{
	memcpy(w->in + w->in_len, p, n);
	w->in_len += n;
}

/* Returns the reply's error; the payload follows the header in w->out. */
static int w_send(struct worker *w)
{
	struct fuse_out_header oh;

	((struct fuse_in_header *)w->in)->len = (uint32_t)w->in_len;
	struct iovec in = { w->in, w->in_len }, out = { w->out, sizeof(w->out) };
	size_t n = fuse_server_handle(w->f->srv, &in, 1, &out, 1, NULL);

	if (n == 0)
		return 0;
	memcpy(&oh, w->out, sizeof(oh));
	return oh.error;
}

static uint64_t w_lookup(struct worker *w, const char *name)
{
	struct fuse_entry_out e;

	w_begin(w, FUSE_LOOKUP, FUSE_ROOT_ID);
	w_add(w, name, strlen(name) + 1);
	if (w_send(w))
		return 0;
	memcpy(&e, w->out + sizeof(struct fuse_out_header), sizeof(e));
	return e.nodeid;
}

static void w_forget(struct worker *w, uint64_t nodeid)
{
	struct fuse_forget_in in = { .nlookup = 1 };

	w_begin(w, FUSE_FORGET, nodeid);
	w_add(w, &in, sizeof(in));
	w_send(w);
}

/* Looks up, opens, reads and closes the shared files, and forgets them. */
static void *reader(void *arg)
{
	struct worker *w = arg;
	char name[16];

	for (int r = 0; r < ROUNDS; r++) {
		snprintf(name, sizeof(name), "f%d", (r + w->id) % FILES);
		uint64_t id = w_lookup(w, name);

		if (!id)
			return "lookup failed";
		struct fuse_open_in open = { .flags = O_RDONLY };
		struct fuse_open_out o;

		w_begin(w, FUSE_OPEN, id);
		w_add(w, &open, sizeof(open));
		if (w_send(w))
			return "open failed";
		memcpy(&o, w->out + sizeof(struct fuse_out_header), sizeof(o));

		struct fuse_read_in read = { .fh = o.fh, .size = 64 };

		w_begin(w, FUSE_READ, id);
		w_add(w, &read, sizeof(read));
		if (w_send(w) || memcmp(w->out + sizeof(struct fuse_out_header), "shared", 6))
			return "read failed";

		struct fuse_release_in rel = { .fh = o.fh };

		w_begin(w, FUSE_RELEASE, id);
		w_add(w, &rel, sizeof(rel));
		if (w_send(w))
			return "release failed";
		w_forget(w, id);
	}
	return NULL;
}

/* Lists the directory with READDIRPLUS and forgets what it was given,
 * while the readers work on the same inodes. */
static void *lister(void *arg)
{
	struct worker *w = arg;
	struct fuse_open_in open = { .flags = O_RDONLY };
	struct fuse_open_out o;

	w_begin(w, FUSE_OPENDIR, FUSE_ROOT_ID);
	w_add(w, &open, sizeof(open));
	if (w_send(w))
		return "opendir failed";
	memcpy(&o, w->out + sizeof(struct fuse_out_header), sizeof(o));
	for (int r = 0; r < ROUNDS / 10; r++) {
		struct fuse_read_in in = { .fh = o.fh, .size = sizeof(w->out) - 16 };
		uint64_t ids[FILES + 2];
		int n = 0;

		w_begin(w, FUSE_READDIRPLUS, FUSE_ROOT_ID);
		w_add(w, &in, sizeof(in));
		if (w_send(w))
			return "readdirplus failed";
		struct fuse_out_header oh;

		memcpy(&oh, w->out, sizeof(oh));
		for (size_t pos = sizeof(oh); pos < oh.len;) {
			struct fuse_direntplus dp;

			memcpy(&dp, w->out + pos, sizeof(dp));
			if (dp.entry_out.nodeid && n < FILES + 2)
				ids[n++] = dp.entry_out.nodeid;
			pos += FUSE_DIRENTPLUS_SIZE(&dp);
		}
		for (int i = 0; i < n; i++)
			w_forget(w, ids[i]);
	}
	struct fuse_release_in rel = { .fh = o.fh };

	w_begin(w, FUSE_RELEASEDIR, FUSE_ROOT_ID);
	w_add(w, &rel, sizeof(rel));
	return w_send(w) ? "releasedir failed" : NULL;
}

static void concurrent_requests_keep_counts_right(void **state)
{
	struct fx *f = *state;
	static struct worker workers[THREADS + 1];
	pthread_t threads[THREADS + 1];
	char name[16];

	for (int i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fx_write_file(f, name, "shared");
	}
	for (int i = 0; i <= THREADS; i++) {
		workers[i] = (struct worker){ .f = f, .id = i };
		assert_int_equal(pthread_create(&threads[i], NULL,
						i < THREADS ? reader : lister,
						&workers[i]), 0);
	}
	for (int i = 0; i <= THREADS; i++) {
		void *failure;

		assert_int_equal(pthread_join(threads[i], &failure), 0);
		if (failure)
			fail_msg("thread %d: %s", i, (char *)failure);
	}
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fuse_server_handle_count(f->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(concurrent_requests_keep_counts_right),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
