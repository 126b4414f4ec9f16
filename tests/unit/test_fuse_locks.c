/* FUSE server tests: POSIX locks between handles, and flock. */
#include <pthread.h>
#include <time.h>

#include "tests/unit/test_fuse_helpers.h"

static int lk_req(struct fx *f, uint32_t opcode, uint64_t fh, uint32_t type,
		  uint64_t start, uint64_t end, uint32_t lk_flags,
		  struct fuse_file_lock *got)
{
	struct fuse_lk_in in = { .fh = fh, .owner = 42,
				 .lk = { .start = start, .end = end, .type = type,
					 .pid = 1 },
				 .lk_flags = lk_flags };

	req_begin(opcode, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (!err && got) {
		struct fuse_lk_out out;

		assert_int_equal(fx_reply_len, sizeof(out));
		memcpy(&out, fx_reply, sizeof(out));
		*got = out.lk;
	}
	return err;
}

/* Two handles on one file, as two guest opens would have. */
static void open_twice(struct fx *f, uint64_t *a, uint64_t *b)
{
	fx_write_file(f, "f", "0123456789");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(f, id, O_RDWR, a), 0);
	assert_int_equal(fx_open(f, id, O_RDWR, b), 0);
}

static void posix_locks_conflict_between_handles(void **state)
{
	struct fx *f = *state;
	struct fuse_file_lock got;
	uint64_t a, b;

	open_twice(f, &a, &b);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 0, 99, 0, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLK, b, F_RDLCK, 50, 60, 0, NULL), -EAGAIN);
	/* Beyond the lock: fine. */
	assert_int_equal(lk_req(f, FUSE_SETLK, b, F_WRLCK, 100, 199, 0, NULL), 0);

	assert_int_equal(lk_req(f, FUSE_GETLK, b, F_RDLCK, 0, INT64_MAX, 0, &got), 0);
	assert_int_equal(got.type, F_WRLCK);
	assert_int_equal(got.start, 0);
	assert_int_equal(got.end, 99);
	assert_int_equal(got.pid, 0);
	/* A handle never conflicts with itself. */
	assert_int_equal(lk_req(f, FUSE_GETLK, a, F_WRLCK, 0, 99, 0, &got), 0);
	assert_int_equal(got.type, F_UNLCK);

	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_UNLCK, 0, INT64_MAX, 0, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLKW, b, F_WRLCK, 0, 99, 0, NULL), 0);

	/* A lock to the end of the file reports as such. */
	assert_int_equal(lk_req(f, FUSE_SETLK, b, F_RDLCK, 1000, INT64_MAX, 0, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_GETLK, a, F_WRLCK, 500, INT64_MAX, 0, &got), 0);
	assert_int_equal(got.type, F_RDLCK);
	assert_int_equal(got.start, 1000);
	assert_int_equal(got.end, INT64_MAX);
}

static void bad_locks_are_refused(void **state)
{
	struct fx *f = *state;
	struct fuse_file_lock got;
	uint64_t a, b;

	open_twice(f, &a, &b);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 10, 5, 0, NULL), -EINVAL);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, 7, 0, 5, 0, NULL), -EINVAL);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, UINT64_MAX, UINT64_MAX, 0, NULL), -EINVAL);
	assert_int_equal(lk_req(f, FUSE_SETLK, 555, F_WRLCK, 0, 5, 0, NULL), -EBADF);
	assert_int_equal(lk_req(f, FUSE_GETLK, 555, F_WRLCK, 0, 5, 0, &got), -EBADF);
	assert_int_equal(lk_req(f, FUSE_GETLK, a, F_WRLCK, 0, 5, FUSE_LK_FLOCK, &got), -EINVAL);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, 9, 0, 0, FUSE_LK_FLOCK, NULL), -EINVAL);
}

static void flock_conflicts_and_goes_with_release(void **state)
{
	struct fx *f = *state;
	uint64_t a, b;

	open_twice(f, &a, &b);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLK, b, F_RDLCK, 0, 0, FUSE_LK_FLOCK, NULL), -EWOULDBLOCK);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_UNLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLK, b, F_RDLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_RDLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 0, 0, FUSE_LK_FLOCK, NULL), -EWOULDBLOCK);

	/* RELEASE with FLOCK_UNLOCK lets go even while another request
	 * holds the handle (here: one we keep by hand). */
	struct handle *held = handle_get(&f->srv->handles, b);
	struct fuse_release_in rel = { .fh = b, .release_flags = FUSE_RELEASE_FLOCK_UNLOCK };

	req_begin(FUSE_RELEASE, FUSE_ROOT_ID);
	req_add(&rel, sizeof(rel));
	assert_int_equal(req_send(f), 0);
	assert_int_equal(lk_req(f, FUSE_SETLKW, a, F_WRLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	handle_put(&f->srv->handles, held);
}

/* A request that waits: its own reply buffer, and what its completion saw. */
struct pending {
	struct fuse_completion later;
	unsigned char out[sizeof(struct fuse_out_header) + 8];
	uint64_t unique;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;       /* completions seen */
	size_t len;
};

static void pending_done(void *opaque, uint64_t token, size_t len)
{
	struct pending *p = opaque;

	assert_int_equal(token, p->unique);
	pthread_mutex_lock(&p->lock);
	p->done++;
	p->len = len;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static int done_count(struct pending *p)
{
	pthread_mutex_lock(&p->lock);
	int done = p->done;
	pthread_mutex_unlock(&p->lock);
	return done;
}

/* Sends SETLKW for fh; returns what the server answered at once. */
static size_t start_setlkw(struct fx *f, struct pending *p, uint64_t fh,
			   uint32_t type, uint32_t lk_flags)
{
	struct fuse_lk_in in = { .fh = fh, .owner = 42,
				 .lk = { .start = 0, .end = 99, .type = type, .pid = 1 },
				 .lk_flags = lk_flags };
	struct fuse_in_header h = { .opcode = FUSE_SETLKW, .nodeid = FUSE_ROOT_ID,
				    .unique = ++f->unique,
				    .len = sizeof(h) + sizeof(in) };
	unsigned char buf[sizeof(h) + sizeof(in)];

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &in, sizeof(in));
	*p = (struct pending){ .later = { .done = pending_done, .opaque = p,
					  .token = h.unique },
			       .unique = h.unique };
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	struct iovec iv = { buf, sizeof(buf) }, ov = { p->out, sizeof(p->out) };

	return fuse_server_handle(f->srv, &iv, 1, &ov, 1, &p->later);
}

/* Waits (up to 10 s) for the request's answer; returns its error. */
static int finish(struct pending *p)
{
	struct timespec until;
	struct fuse_out_header oh;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&p->lock);
	while (!p->done && pthread_cond_timedwait(&p->cond, &p->lock, &until) == 0)
		;
	pthread_mutex_unlock(&p->lock);
	assert_int_equal(p->done, 1);
	assert_int_equal(p->len, sizeof(oh));
	memcpy(&oh, p->out, sizeof(oh));
	assert_int_equal(oh.len, sizeof(oh));
	assert_int_equal(oh.unique, p->unique);
	return oh.error;
}

static void interrupt(struct fx *f, uint64_t unique)
{
	struct fuse_interrupt_in in = { .unique = unique };

	req_begin(FUSE_INTERRUPT, 0);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_returned, 0); /* INTERRUPT itself has no reply */
}

/* The attack: two guest processes contend for one lock. The waiter must
 * not hold the queue, or the holder's unlock behind it never runs. */
static void waits_leave_the_queue_free(void **state)
{
	struct fx *f = *state;
	struct pending p;
	uint64_t a, b;

	open_twice(f, &a, &b);
	for (int flock_too = 0; flock_too < 2; flock_too++) {
		uint32_t fl = flock_too ? FUSE_LK_FLOCK : 0;
		assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 0, 99, fl, NULL), 0);
		assert_int_equal(start_setlkw(f, &p, b, F_WRLCK, fl), FUSE_DEFERRED);
		/* The queue goes on: other requests, then the unlock. */
		assert_int_equal(fx_getattr(f, FUSE_ROOT_ID, &(struct fuse_attr){ 0 }), 0);
		assert_int_equal(done_count(&p), 0);
		assert_int_equal(lk_req(f, FUSE_SETLK, a, F_UNLCK, 0, 99, fl, NULL), 0);
		assert_int_equal(finish(&p), 0);
		/* b holds it now. */
		assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 0, 99, fl, NULL),
				 flock_too ? -EWOULDBLOCK : -EAGAIN);
		assert_int_equal(lk_req(f, FUSE_SETLK, b, F_UNLCK, 0, 99, fl, NULL), 0);
	}
}

/* INTERRUPT ends the wait with EINTR; the lock stays with its holder. */
static void interrupt_ends_a_wait(void **state)
{
	struct fx *f = *state;
	struct pending p, other;
	struct fuse_file_lock got;
	uint64_t a, b;

	open_twice(f, &a, &b);
	assert_int_equal(lk_req(f, FUSE_SETLK, a, F_WRLCK, 0, 99, 0, NULL), 0);
	assert_int_equal(start_setlkw(f, &p, b, F_WRLCK, 0), FUSE_DEFERRED);
	assert_int_equal(start_setlkw(f, &other, b, F_RDLCK, FUSE_LK_FLOCK),
			 sizeof(struct fuse_out_header)); /* taken at once */
	interrupt(f, p.unique + 1000); /* no such wait: nothing happens */
	assert_int_equal(done_count(&p), 0);
	interrupt(f, p.unique);
	assert_int_equal(finish(&p), -EINTR);
	assert_int_equal(lk_req(f, FUSE_GETLK, b, F_WRLCK, 0, 99, 0, &got), 0);
	assert_int_equal(got.type, F_WRLCK);
}

/* A lock held outside the guest (another host process): the guest waits;
 * a reset drops the wait unanswered and at once; a session's end answers
 * it with EINTR. */
static void waits_end_with_the_session_or_the_device(void **state)
{
	struct fx *f = *state;
	struct pending p;
	uint64_t a, b;
	struct timespec t0, t1;

	open_twice(f, &a, &b);
	int host = open(fx_path(f, "f"), O_RDWR);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	assert_int_equal(fcntl(host, F_OFD_SETLK, &fl), 0);
	assert_int_equal(start_setlkw(f, &p, b, F_WRLCK, 0), FUSE_DEFERRED);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fuse_server_abandon_waits(f->srv);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	assert_int_equal(done_count(&p), 0);

	assert_int_equal(start_setlkw(f, &p, a, F_WRLCK, 0), FUSE_DEFERRED);
	req_begin(FUSE_DESTROY, FUSE_ROOT_ID);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(finish(&p), -EINTR);
	close(host);
}

/* Waits are capped: past the cap, or with no way to answer later, a
 * request that would wait fails with ENOLCK; the share goes on. */
static void waits_are_capped(void **state)
{
	struct fx *f = *state;
	static struct pending p[65];
	uint64_t holder, fh[65];

	fx_write_file(f, "f", "x");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(f, id, O_RDWR, &holder), 0);
	assert_int_equal(lk_req(f, FUSE_SETLK, holder, F_WRLCK, 0, 99, 0, NULL), 0);
	assert_int_equal(lk_req(f, FUSE_SETLKW, holder + 1000, F_WRLCK, 0, 99, 0, NULL), -EBADF);
	assert_int_equal(fx_open(f, id, O_RDWR, &fh[0]), 0);
	assert_int_equal(lk_req(f, FUSE_SETLKW, fh[0], F_WRLCK, 0, 99, 0, NULL), -ENOLCK);
	for (int i = 0; i < 65; i++) {
		if (i)
			assert_int_equal(fx_open(f, id, O_RDWR, &fh[i]), 0);
		size_t n = start_setlkw(f, &p[i], fh[i], F_WRLCK, 0);
		assert_int_equal(n, i < 64 ? FUSE_DEFERRED : sizeof(struct fuse_out_header));
	}
	struct fuse_out_header oh;
	memcpy(&oh, p[64].out, sizeof(oh));
	assert_int_equal(oh.error, -ENOLCK);
	assert_int_equal(fx_getattr(f, id, &(struct fuse_attr){ 0 }), 0);
	/* Unlocked, every wait ends, one after another. */
	assert_int_equal(lk_req(f, FUSE_SETLK, holder, F_UNLCK, 0, 99, 0, NULL), 0);
	bool unlocked[64] = { false };
	int left = 64;
	for (int polls = 0; left && polls < 10000; polls++) {
		for (int i = 0; i < 64; i++) {
			if (!done_count(&p[i]) || unlocked[i])
				continue;
			assert_int_equal(lk_req(f, FUSE_SETLK, fh[i], F_UNLCK, 0, 99, 0, NULL), 0);
			unlocked[i] = true;
			left--;
		}
		usleep(1000);
	}
	assert_int_equal(left, 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(finish(&p[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(posix_locks_conflict_between_handles),
		FX_TEST(bad_locks_are_refused),
		FX_TEST(flock_conflicts_and_goes_with_release),
		FX_TEST(waits_leave_the_queue_free),
		FX_TEST(interrupt_ends_a_wait),
		FX_TEST(waits_end_with_the_session_or_the_device),
		FX_TEST(waits_are_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
