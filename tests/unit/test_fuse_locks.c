/* FUSE server tests: POSIX locks between handles, and flock. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(posix_locks_conflict_between_handles),
		FX_TEST(bad_locks_are_refused),
		FX_TEST(flock_conflicts_and_goes_with_release),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
