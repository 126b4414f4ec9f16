/* FUSE server tests: extended attributes, checked on the host. */
#include "tests/unit/test_fuse_helpers.h"

#include <linux/limits.h>
#include <sys/xattr.h>

static int setxattr_req(struct fx *f, uint64_t id, const char *name,
			const void *value, uint32_t size, uint32_t flags)
{
	struct fuse_setxattr_in in = { .size = size, .flags = flags };

	req_begin(FUSE_SETXATTR, id);
	req_add(&in, FUSE_COMPAT_SETXATTR_IN_SIZE);
	req_str(name);
	req_add(value, size);
	return req_send(f);
}

static int getxattr_req(struct fx *f, uint32_t opcode, uint64_t id,
			const char *name, uint32_t size)
{
	struct fuse_getxattr_in in = { .size = size };

	req_begin(opcode, id);
	req_add(&in, sizeof(in));
	if (name)
		req_str(name);
	return req_send(f);
}

/* Whether the share's file system keeps user.* attributes on files. */
static bool host_has_user_xattrs(struct fx *f)
{
	fx_write_file(f, "probe", "");
	return setxattr(fx_path(f, "probe"), "user.probe", "1", 1, 0) == 0 ||
	       errno != ENOTSUP;
}

static void user_xattrs_round_trip(void **state)
{
	struct fx *f = *state;
	char buf[64];

	fx_write_file(f, "f", "");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");
	int err = setxattr_req(f, id, "user.colour", "blue", 4, 0);

	if (!host_has_user_xattrs(f)) {
		/* The server passes the host's answer on. */
		assert_int_equal(err, -ENOTSUP);
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal(getxattr(fx_path(f, "f"), "user.colour", buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "blue", 4);

	/* Size 0 asks the size; too small a size gets ERANGE. */
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, id, "user.colour", 0), 0);
	struct fuse_getxattr_out out;

	assert_int_equal(fx_reply_len, sizeof(out));
	memcpy(&out, fx_reply, sizeof(out));
	assert_int_equal(out.size, 4);
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, id, "user.colour", 3), -ERANGE);
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, id, "user.colour", 64), 0);
	assert_int_equal(fx_reply_len, 4);
	assert_memory_equal(fx_reply, "blue", 4);
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, id, "user.none", 64), -ENODATA);

	assert_int_equal(getxattr_req(f, FUSE_LISTXATTR, id, NULL, 0), 0);
	memcpy(&out, fx_reply, sizeof(out));
	assert_int_equal(out.size, sizeof("user.colour"));
	assert_int_equal(getxattr_req(f, FUSE_LISTXATTR, id, NULL, 4), -ERANGE);
	assert_int_equal(getxattr_req(f, FUSE_LISTXATTR, id, NULL, 64), 0);
	assert_int_equal(fx_reply_len, sizeof("user.colour"));
	assert_memory_equal(fx_reply, "user.colour", sizeof("user.colour"));

	assert_int_equal(setxattr_req(f, id, "user.colour", "red", 3, XATTR_CREATE), -EEXIST);
	assert_int_equal(setxattr_req(f, id, "user.other", "red", 3, XATTR_REPLACE), -ENODATA);
	assert_int_equal(setxattr_req(f, id, "user.empty", "", 0, 0), 0);
	assert_int_equal(getxattr(fx_path(f, "f"), "user.empty", buf, sizeof(buf)), 0);

	req_begin(FUSE_REMOVEXATTR, id);
	req_str("user.colour");
	assert_int_equal(req_send(f), 0);
	assert_int_equal(getxattr(fx_path(f, "f"), "user.colour", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENODATA);
}

static void large_values_cross_iovecs(void **state)
{
	struct fx *f = *state;
	static char value[XATTR_SIZE_MAX + 1], back[XATTR_SIZE_MAX];

	fx_write_file(f, "f", "");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	for (size_t i = 0; i < 3000; i++)
		value[i] = (char)('a' + i % 26);
	int err = setxattr_req(f, id, "user.big", value, 3000, 0);

	if (!host_has_user_xattrs(f)) {
		assert_int_equal(err, -ENOTSUP);
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal(getxattr(fx_path(f, "f"), "user.big", back, sizeof(back)), 3000);
	assert_memory_equal(back, value, 3000);
	assert_int_equal(setxattr_req(f, id, "user.big", value, XATTR_SIZE_MAX + 1, 0), -E2BIG);
}

static void only_user_attributes_may_change(void **state)
{
	struct fx *f = *state;

	fx_write_file(f, "f", "");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(setxattr_req(f, id, "security.capability", "x", 1, 0), -EPERM);
	assert_int_equal(setxattr_req(f, id, "trusted.overlay.opaque", "y", 1, 0), -EPERM);
	assert_int_equal(setxattr_req(f, id, "user", "y", 1, 0), -EPERM);
	req_begin(FUSE_REMOVEXATTR, id);
	req_str("trusted.x");
	assert_int_equal(req_send(f), -EPERM);
}

static void malformed_xattr_requests(void **state)
{
	struct fx *f = *state;
	struct fuse_setxattr_in in = { .size = 100 };

	fx_write_file(f, "f", "");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	/* Claims 100 bytes of value, carries 3. */
	req_begin(FUSE_SETXATTR, id);
	req_add(&in, FUSE_COMPAT_SETXATTR_IN_SIZE);
	req_str("user.x");
	req_add("abc", 3);
	assert_int_equal(req_send(f), -EINVAL);
	assert_int_equal(setxattr_req(f, id, "user.x", "a", 1, 0x100), -EINVAL);
	assert_int_equal(setxattr_req(f, id, "", "a", 1, 0), -EINVAL);
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, id, "", 10), -EINVAL);

	char longname[XATTR_NAME_MAX + 8];

	memset(longname, 'u', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, id, longname, 10), -ENAMETOOLONG);
	assert_int_equal(getxattr_req(f, FUSE_GETXATTR, 1234567, "user.x", 10), -ESTALE);
	assert_int_equal(getxattr_req(f, FUSE_LISTXATTR, 1234567, NULL, 10), -ESTALE);
}

static void symlink_xattrs_are_the_links_own(void **state)
{
	struct fx *f = *state;
	bool supported = host_has_user_xattrs(f);

	fx_write_file(f, "target", "");
	if (supported)
		assert_int_equal(setxattr(fx_path(f, "target"), "user.secret", "s", 1, 0), 0);
	assert_int_equal(symlink("target", fx_path(f, "l")), 0);
	uint64_t l = fx_lookup_id(f, FUSE_ROOT_ID, "l");
	int err = getxattr_req(f, FUSE_GETXATTR, l, "user.secret", 10);

	/* Not followed: the link itself has no such attribute. */
	assert_int_equal(err, supported ? -ENODATA : -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(user_xattrs_round_trip),
		FX_TEST(large_values_cross_iovecs),
		FX_TEST(only_user_attributes_may_change),
		FX_TEST(malformed_xattr_requests),
		FX_TEST(symlink_xattrs_are_the_links_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
