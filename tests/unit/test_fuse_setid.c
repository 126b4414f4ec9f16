/* FUSE server tests: no set-ID file of an identity the user did not map.
 * Started as root without $SUDO_UID, guest root is host nobody, shared
 * with others on the host: a set-user-ID or set-group-ID file of theirs
 * would let anyone there run as them. The share here is told so (guest
 * id 0, host id 65534); guest id 1000 stands for a user the user mapped.
 * Run as host root without a namespace, fsvm sees the guest's ids. */
#include "tests/unit/test_fuse_helpers.h"

#define NOBODY 65534u
#define MAPPED 1000u

static int fallback_setup(void **state)
{
	static struct fx f;
	struct fuse_server_config cfg = {
		.cache = FUSE_CACHE_AUTO,
		.fallback_uid = { .set = true, .guest = 0, .host = NOBODY },
		.fallback_gid = { .set = true, .guest = 0, .host = NOBODY },
	};

	assert_int_equal(fx_start(&f, &cfg), 0);
	*state = &f;
	return 0;
}

/* A test in a share whose guest root is the fallback identity. */
#define FALLBACK_TEST(fn) \
	cmocka_unit_test_setup_teardown(fn, fallback_setup, fx_teardown)

static mode_t host_mode(struct fx *f, const char *rel)
{
	struct stat st;

	assert_int_equal(lstat(fx_path(f, rel), &st), 0);
	return st.st_mode & 07777;
}

/* Makes name in the root as uid:gid with CREATE, MKNOD or MKDIR; returns
 * the mode the reply shows (type bits included). */
static uint32_t make_as(struct fx *f, uint32_t opcode, uint32_t uid,
			uint32_t gid, const char *name, uint32_t mode)
{
	struct fuse_create_in create = { .flags = O_RDWR, .mode = mode };
	struct fuse_mknod_in mknod = { .mode = mode };
	struct fuse_mkdir_in mkdir = { .mode = mode };
	struct fuse_entry_out e;

	req_begin(opcode, FUSE_ROOT_ID);
	req_creds(uid, gid);
	if (opcode == FUSE_CREATE)
		req_add(&create, sizeof(create));
	else if (opcode == FUSE_MKNOD)
		req_add(&mknod, sizeof(mknod));
	else
		req_add(&mkdir, sizeof(mkdir));
	req_str(name);
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	if (opcode == FUSE_CREATE) {
		struct fuse_open_out o;

		memcpy(&o, fx_reply + sizeof(e), sizeof(o));
		assert_int_equal(fx_release(f, o.fh), 0);
	}
	return e.attr.mode;
}

static uint32_t chmod_req(struct fx *f, const char *rel, uint32_t valid,
			  uint32_t mode, uint32_t uid)
{
	struct fuse_setattr_in in = { .valid = valid, .mode = mode, .uid = uid };
	struct fuse_attr_out out;

	req_begin(FUSE_SETATTR, fx_lookup_id(f, FUSE_ROOT_ID, rel));
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
	memcpy(&out, fx_reply, sizeof(out));
	return out.attr.mode;
}

static void create_drops_set_id_of_the_fallback(void **state)
{
	NEEDS_ROOT(); /* files for other owners */
	struct fx *f = *state;

	assert_int_equal(make_as(f, FUSE_CREATE, 0, 0, "both", S_IFREG | 06755),
			 S_IFREG | 0755);
	assert_int_equal(host_mode(f, "both"), 0755);
	/* Each bit goes with its own id. */
	assert_int_equal(make_as(f, FUSE_CREATE, MAPPED, 0, "uid", S_IFREG | 06755),
			 S_IFREG | 04755);
	assert_int_equal(make_as(f, FUSE_CREATE, 0, MAPPED, "gid", S_IFREG | 06755),
			 S_IFREG | 02755);
	assert_int_equal(make_as(f, FUSE_CREATE, MAPPED, MAPPED, "mapped",
				 S_IFREG | 06755), S_IFREG | 06755);
	assert_int_equal(host_mode(f, "mapped"), 06755);
	/* Without a user namespace fsvm sees the host's id. */
	assert_int_equal(make_as(f, FUSE_CREATE, NOBODY, NOBODY, "nobody",
				 S_IFREG | 04755), S_IFREG | 0755);
	/* Opening an existing file changes nothing of its mode. */
	assert_int_equal(chmod(fx_path(f, "mapped"), 06755), 0);
	assert_int_equal(make_as(f, FUSE_CREATE, 0, 0, "mapped", S_IFREG | 0600),
			 S_IFREG | 06755);
}

static void tmpfile_and_mknod_drop_it_too(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_create_in in = { .flags = O_RDWR, .mode = S_IFREG | 04755 };
	struct fuse_entry_out e;
	struct fuse_open_out o;

	req_begin(FUSE_TMPFILE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("/");
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	memcpy(&o, fx_reply + sizeof(e), sizeof(o));
	assert_int_equal(e.attr.mode, S_IFREG | 0755);
	assert_int_equal(fx_release(f, o.fh), 0);

	assert_int_equal(make_as(f, FUSE_MKNOD, 0, 0, "reg", S_IFREG | 06755),
			 S_IFREG | 0755);
	assert_int_equal(host_mode(f, "reg"), 0755);
	assert_int_equal(make_as(f, FUSE_MKNOD, 0, 0, "fifo", S_IFIFO | 02644),
			 S_IFIFO | 0644);
	assert_int_equal(make_as(f, FUSE_MKNOD, MAPPED, MAPPED, "mapped",
				 S_IFREG | 06755), S_IFREG | 06755);
}

/* A directory's set-group-ID passes its group on to new files, and runs
 * nothing: it stays. */
static void directories_keep_theirs(void **state)
{
	struct fx *f = *state;

	assert_int_equal(make_as(f, FUSE_MKDIR, 0, 0, "d", 02755), S_IFDIR | 02755);
	assert_int_equal(host_mode(f, "d"), 02755);
	assert_int_equal(chmod_req(f, "d", FATTR_MODE, S_IFDIR | 02775, 0),
			 S_IFDIR | 02775);
}

static void chmod_drops_set_id_of_the_fallback(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;

	fx_write_file(f, "root", "x");
	assert_int_equal(chmod_req(f, "root", FATTR_MODE, S_IFREG | 04755, 0),
			 S_IFREG | 0755);
	assert_int_equal(chmod_req(f, "root", FATTR_MODE, S_IFREG | 02755, 0),
			 S_IFREG | 0755);
	assert_int_equal(host_mode(f, "root"), 0755);
	fx_write_file(f, "mapped", "x");
	assert_int_equal(chown(fx_path(f, "mapped"), MAPPED, MAPPED), 0);
	assert_int_equal(chmod_req(f, "mapped", FATTR_MODE, S_IFREG | 06755, 0),
			 S_IFREG | 06755);
	assert_int_equal(host_mode(f, "mapped"), 06755);
}

/* A chown in the same SETATTR: neither the owner before (the file's
 * until the chown) nor the one after may be the fallback. A chown alone
 * is the host's to clear. */
static void chown_keeps_no_set_id_for_the_fallback(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct stat st;

	fx_write_file(f, "to-root", "x");
	assert_int_equal(chown(fx_path(f, "to-root"), MAPPED, MAPPED), 0);
	assert_int_equal(chmod_req(f, "to-root", FATTR_MODE | FATTR_UID,
				   S_IFREG | 04755, 0), S_IFREG | 0755);
	assert_int_equal(stat(fx_path(f, "to-root"), &st), 0);
	assert_int_equal(st.st_uid, 0);

	fx_write_file(f, "from-root", "x");
	assert_int_equal(chmod_req(f, "from-root", FATTR_MODE | FATTR_UID,
				   S_IFREG | 04755, MAPPED), S_IFREG | 0755);

	fx_write_file(f, "chown", "x");
	assert_int_equal(chown(fx_path(f, "chown"), MAPPED, MAPPED), 0);
	assert_int_equal(chmod(fx_path(f, "chown"), 06755), 0);
	assert_int_equal(chmod_req(f, "chown", FATTR_UID | FATTR_GID, 0, 0),
			 S_IFREG | 0755);
	assert_int_equal(host_mode(f, "chown"), 0755);
}

/* A share told of no fallback (--host-root, or ids the user mapped)
 * keeps every bit the guest sets. */
static void without_a_fallback_bits_stay(void **state)
{
	struct fx *f = *state;

	assert_int_equal(make_as(f, FUSE_CREATE, 0, 0, "made", S_IFREG | 06755),
			 S_IFREG | 06755);
	assert_int_equal(host_mode(f, "made"), 06755);
	fx_write_file(f, "chmod", "x");
	assert_int_equal(chmod_req(f, "chmod", FATTR_MODE, S_IFREG | 04755, 0),
			 S_IFREG | 04755);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FALLBACK_TEST(create_drops_set_id_of_the_fallback),
		FALLBACK_TEST(tmpfile_and_mknod_drop_it_too),
		FALLBACK_TEST(directories_keep_theirs),
		FALLBACK_TEST(chmod_drops_set_id_of_the_fallback),
		FALLBACK_TEST(chown_keeps_no_set_id_for_the_fallback),
		FX_TEST(without_a_fallback_bits_stay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
