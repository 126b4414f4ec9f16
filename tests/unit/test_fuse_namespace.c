/* FUSE server tests: creating, linking, removing, renaming names. */
#include "tests/unit/test_fuse_helpers.h"

#include <stdio.h>
#include <sys/sysmacros.h>

static int mknod_req(struct fx *f, uint64_t parent, const char *name,
		     uint32_t mode, uint32_t rdev, struct fuse_entry_out *e)
{
	struct fuse_mknod_in in = { .mode = mode, .rdev = rdev };

	req_begin(FUSE_MKNOD, parent);
	req_add(&in, sizeof(in));
	req_str(name);
	int err = req_send(f);

	if (!err)
		memcpy(e, fx_reply, sizeof(*e));
	return err;
}

static void mkdir_creates_with_guest_owner_and_mode(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_mkdir_in in = { .mode = 0777, .umask = 022 };
	struct fuse_entry_out e;
	struct stat st;

	req_begin(FUSE_MKDIR, FUSE_ROOT_ID);
	req_creds(1234, 5678);
	req_add(&in, sizeof(in));
	req_str("d");
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	assert_int_equal(stat(fx_path(f, "d"), &st), 0);
	assert_int_equal(st.st_mode, S_IFDIR | 0755);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 5678);
	assert_int_equal(e.attr.mode, st.st_mode);
	assert_int_equal(e.attr.ino, st.st_ino);
	assert_int_equal(fx_inodes(f), 2);
	/* Already there. */
	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, "d", 0755, &e), -EEXIST);
	/* And in the new directory. */
	assert_int_equal(fx_mkdir(f, fx_lookup_id(f, FUSE_ROOT_ID, "d"), "sub", 0700, &e), 0);
	assert_int_equal(stat(fx_path(f, "d/sub"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
}

static void host_umask_does_not_take_guest_bits(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;
	mode_t old = umask(077);

	assert_int_equal(fx_mkdir(f, FUSE_ROOT_ID, "d", 01777, &e), 0);
	umask(old);
	assert_int_equal(stat(fx_path(f, "d"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 01777);
}

static void setgid_directories_pass_their_group_on(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;
	uint64_t fh;

	assert_int_equal(mkdir(fx_path(f, "shared"), 0775), 0);
	assert_int_equal(chown(fx_path(f, "shared"), 0, 4242), 0);
	assert_int_equal(chmod(fx_path(f, "shared"), 02775), 0);
	uint64_t dir = fx_lookup_id(f, FUSE_ROOT_ID, "shared");
	struct fuse_mkdir_in in = { .mode = 0755 };

	req_begin(FUSE_MKDIR, dir);
	req_creds(1000, 1000);
	req_add(&in, sizeof(in));
	req_str("sub");
	assert_int_equal(req_send(f), 0);
	assert_int_equal(stat(fx_path(f, "shared/sub"), &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 4242);
	assert_int_equal(st.st_mode & 07777, 02755);

	struct fuse_create_in cin = { .flags = O_RDWR, .mode = S_IFREG | 04755 };

	req_begin(FUSE_CREATE, dir);
	req_creds(1000, 1000);
	req_add(&cin, sizeof(cin));
	req_str("file");
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	memcpy(&fh, fx_reply + sizeof(e) + offsetof(struct fuse_open_out, fh), sizeof(fh));
	assert_int_equal(stat(fx_path(f, "shared/file"), &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 4242);
	/* The chown to the caller must not have cost the set-user-ID bit. */
	assert_int_equal(st.st_mode & 07777, 04755);
	assert_int_equal(e.attr.mode, st.st_mode);
	assert_int_equal(fx_release(f, fh), 0);
}

/* A device node on the host opens the host's device to whoever reaches
 * it there: refused unless the share asks for them. */
static void mknod_makes_fifos_not_devices(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;

	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "fifo", S_IFIFO | 0640, 0, &e), 0);
	assert_int_equal(stat(fx_path(f, "fifo"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_true(S_ISFIFO(e.attr.mode));
	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "sock", S_IFSOCK | 0600, 0, &e), 0);
	/* /dev/mem and /dev/sda, for one. */
	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "mem", S_IFCHR | 0666, (1 << 8) | 1, &e), -EPERM);
	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "sda", S_IFBLK | 0666, (8 << 8), &e), -EPERM);
	assert_int_equal(lstat(fx_path(f, "mem"), &st), -1);
	assert_int_equal(lstat(fx_path(f, "sda"), &st), -1);
}

static int devices_setup(void **state)
{
	static struct fx f;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO, .devices = true };

	assert_int_equal(fx_start(&f, &cfg), 0);
	*state = &f;
	return 0;
}

static void mknod_makes_devices_where_asked(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;
	/* The guest encodes 1:3 with new_encode_dev(). */
	uint32_t null_dev = (1 << 8) | 3;

	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "null", S_IFCHR | 0600, null_dev, &e), 0);
	assert_int_equal(lstat(fx_path(f, "null"), &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(major(st.st_rdev), 1);
	assert_int_equal(minor(st.st_rdev), 3);
	assert_int_equal(e.attr.rdev, null_dev);

	/* A minor over 255 uses the split encoding, both ways. */
	uint32_t big = (0x12345 & 0xff) | (259 << 8) | ((0x12345 & ~0xffu) << 12);

	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "blk", S_IFBLK | 0600, big, &e), 0);
	assert_int_equal(lstat(fx_path(f, "blk"), &st), 0);
	assert_int_equal(major(st.st_rdev), 259);
	assert_int_equal(minor(st.st_rdev), 0x12345);
	assert_int_equal(e.attr.rdev, big);
	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "reg", S_IFREG | 0600, 0, &e), 0);
	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "dir", S_IFDIR | 0700, 0, &e), -EINVAL);
	assert_int_equal(mknod_req(f, FUSE_ROOT_ID, "lnk", S_IFLNK | 0700, 0, &e), -EINVAL);
}

static int symlink_req(struct fx *f, uint64_t parent, const char *name,
		       const char *target, struct fuse_entry_out *e)
{
	req_begin(FUSE_SYMLINK, parent);
	req_str(name);
	req_str(target);
	int err = req_send(f);

	if (!err)
		memcpy(e, fx_reply, sizeof(*e));
	return err;
}

static void symlink_stores_the_target_as_text(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_entry_out e;
	char buf[64];
	struct stat st;

	req_begin(FUSE_SYMLINK, FUSE_ROOT_ID);
	req_creds(55, 66);
	req_str("l");
	req_str("../../etc/shadow");
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	assert_true(S_ISLNK(e.attr.mode));
	ssize_t n = readlink(fx_path(f, "l"), buf, sizeof(buf));

	assert_int_equal(n, strlen("../../etc/shadow"));
	assert_memory_equal(buf, "../../etc/shadow", (size_t)n);
	assert_int_equal(lstat(fx_path(f, "l"), &st), 0);
	assert_int_equal(st.st_uid, 55);
	assert_int_equal(st.st_gid, 66);
	/* Missing or empty target. */
	req_begin(FUSE_SYMLINK, FUSE_ROOT_ID);
	req_str("m");
	assert_int_equal(req_send(f), -EINVAL);
	assert_int_equal(symlink_req(f, FUSE_ROOT_ID, "m", "", &e), -EINVAL);
}

static void link_adds_a_name_to_the_same_inode(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;

	fx_write_file(f, "a", "data");
	assert_int_equal(symlink("/etc/passwd", fx_path(f, "sym")), 0);
	uint64_t a = fx_lookup_id(f, FUSE_ROOT_ID, "a");
	struct fuse_link_in in = { .oldnodeid = a };

	req_begin(FUSE_LINK, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("b");
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	assert_int_equal(e.nodeid, a);
	assert_int_equal(e.attr.nlink, 2);
	assert_int_equal(stat(fx_path(f, "b"), &st), 0);
	assert_int_equal(st.st_nlink, 2);

	/* A symlink is linked itself, never its target. */
	in.oldnodeid = fx_lookup_id(f, FUSE_ROOT_ID, "sym");
	req_begin(FUSE_LINK, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("sym2");
	assert_int_equal(req_send(f), 0);
	assert_int_equal(lstat(fx_path(f, "sym2"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	in.oldnodeid = 77777;
	req_begin(FUSE_LINK, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("c");
	assert_int_equal(req_send(f), -ESTALE);
}

static int remove_req(struct fx *f, uint32_t opcode, uint64_t parent, const char *name)
{
	req_begin(opcode, parent);
	req_str(name);
	return req_send(f);
}

static void unlink_and_rmdir_remove_on_the_host(void **state)
{
	struct fx *f = *state;
	struct stat st;

	fx_write_file(f, "f", "");
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	assert_int_equal(mkdir(fx_path(f, "full"), 0755), 0);
	fx_write_file(f, "full/x", "");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(remove_req(f, FUSE_UNLINK, FUSE_ROOT_ID, "f"), 0);
	assert_int_equal(lstat(fx_path(f, "f"), &st), -1);
	/* The guest still holds the inode until it forgets it. */
	struct fuse_attr attr;

	assert_int_equal(fx_getattr(f, id, &attr), 0);
	assert_int_equal(attr.nlink, 0);
	assert_int_equal(remove_req(f, FUSE_UNLINK, FUSE_ROOT_ID, "d"), -EISDIR);
	assert_int_equal(remove_req(f, FUSE_RMDIR, FUSE_ROOT_ID, "d"), 0);
	assert_int_equal(lstat(fx_path(f, "d"), &st), -1);
	assert_int_equal(remove_req(f, FUSE_RMDIR, FUSE_ROOT_ID, "full"), -ENOTEMPTY);
	assert_int_equal(remove_req(f, FUSE_UNLINK, FUSE_ROOT_ID, "nothing"), -ENOENT);
}

static int rename_req(struct fx *f, uint64_t dir, const char *from,
		      uint64_t newdir, const char *to, uint32_t flags, bool v2)
{
	if (v2) {
		struct fuse_rename2_in in = { .newdir = newdir, .flags = flags };

		req_begin(FUSE_RENAME2, dir);
		req_add(&in, sizeof(in));
	} else {
		struct fuse_rename_in in = { .newdir = newdir };

		req_begin(FUSE_RENAME, dir);
		req_add(&in, sizeof(in));
	}
	req_str(from);
	req_str(to);
	return req_send(f);
}

static void rename_moves_replaces_and_exchanges(void **state)
{
	struct fx *f = *state;
	char buf[16];
	struct stat st;

	fx_write_file(f, "a", "A");
	fx_write_file(f, "b", "B");
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");

	assert_int_equal(rename_req(f, FUSE_ROOT_ID, "a", d, "a2", 0, false), 0);
	fx_read_file(f, "d/a2", buf, sizeof(buf));
	assert_string_equal(buf, "A");
	assert_int_equal(lstat(fx_path(f, "a"), &st), -1);

	assert_int_equal(rename_req(f, d, "a2", FUSE_ROOT_ID, "b", RENAME_NOREPLACE, true), -EEXIST);
	assert_int_equal(rename_req(f, d, "a2", FUSE_ROOT_ID, "b", RENAME_EXCHANGE, true), 0);
	fx_read_file(f, "b", buf, sizeof(buf));
	assert_string_equal(buf, "A");
	fx_read_file(f, "d/a2", buf, sizeof(buf));
	assert_string_equal(buf, "B");

	/* Plain RENAME2 replaces, like RENAME. */
	assert_int_equal(rename_req(f, d, "a2", FUSE_ROOT_ID, "b", 0, true), 0);
	fx_read_file(f, "b", buf, sizeof(buf));
	assert_string_equal(buf, "B");

	assert_int_equal(rename_req(f, FUSE_ROOT_ID, "b", FUSE_ROOT_ID, "c", RENAME_WHITEOUT, true), -EINVAL);
	assert_int_equal(rename_req(f, FUSE_ROOT_ID, "b", FUSE_ROOT_ID, "c", 0x80, true), -EINVAL);
	assert_int_equal(rename_req(f, FUSE_ROOT_ID, "b", 4444, "c", 0, false), -ESTALE);
	assert_int_equal(rename_req(f, FUSE_ROOT_ID, "b", FUSE_ROOT_ID, "..", 0, false), -EINVAL);
	assert_int_equal(rename_req(f, FUSE_ROOT_ID, "..", FUSE_ROOT_ID, "x", 0, false), -EINVAL);
	/* Only one name. */
	struct fuse_rename_in in = { .newdir = FUSE_ROOT_ID };

	req_begin(FUSE_RENAME, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("b");
	assert_int_equal(req_send(f), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(mkdir_creates_with_guest_owner_and_mode),
		FX_TEST(host_umask_does_not_take_guest_bits),
		FX_TEST(setgid_directories_pass_their_group_on),
		FX_TEST(mknod_makes_fifos_not_devices),
		cmocka_unit_test_setup_teardown(mknod_makes_devices_where_asked,
						devices_setup, fx_teardown),
		FX_TEST(symlink_stores_the_target_as_text),
		FX_TEST(link_adds_a_name_to_the_same_inode),
		FX_TEST(unlink_and_rmdir_remove_on_the_host),
		FX_TEST(rename_moves_replaces_and_exchanges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
