/* FUSE server tests: file requests, checked on the host. */
#include "tests/unit/test_fuse_helpers.h"

#include <sys/sysmacros.h>

static void write_then_read_back(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	char buf[64];
	uint64_t fh;

	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "f", O_RDWR, 0644, &e, &fh), 0);
	assert_true(S_ISREG(e.attr.mode));
	assert_int_equal(fuse_server_handle_count(f->srv), 1);
	assert_int_equal(fx_write(f, fh, 0, "hello, world", 12), 12);
	assert_int_equal(fx_write(f, fh, 7, "there", 5), 5);
	fx_read_file(f, "f", buf, sizeof(buf));
	assert_string_equal(buf, "hello, there");

	memset(buf, 0, sizeof(buf));
	assert_int_equal(fx_read(f, fh, 7, 100, buf), 5);
	assert_string_equal(buf, "there");
	assert_int_equal(fx_read(f, fh, 100, 10, buf), 0);
	assert_int_equal(fx_release(f, fh), 0);
	assert_int_equal(fuse_server_handle_count(f->srv), 0);
	assert_int_equal(fx_release(f, fh), -EBADF);
	assert_int_equal(fx_read(f, fh, 0, 1, buf), -EBADF);
}

static void a_megabyte_each_way(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t fh;
	static unsigned char data[FUSE_MAX_TRANSFER], back[FUSE_MAX_TRANSFER];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 31 + i / 4096);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "big", O_RDWR, 0644, &e, &fh), 0);
	assert_int_equal(fx_write(f, fh, 0, data, sizeof(data)), sizeof(data));
	assert_int_equal(fx_read(f, fh, 0, sizeof(back), back), sizeof(back));
	assert_memory_equal(data, back, sizeof(data));

	int fd = open(fx_path(f, "big"), O_RDONLY);

	assert_int_equal(read(fd, back, sizeof(back)), sizeof(back));
	close(fd);
	assert_memory_equal(data, back, sizeof(data));
}

static void read_is_limited_by_the_reply_room(void **state)
{
	struct fx *f = *state;
	char buf[16];
	uint64_t fh;

	fx_write_file(f, "f", "0123456789abcdef");
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "f"), O_RDONLY, &fh), 0);
	fx_out_room = sizeof(struct fuse_out_header) + 6;
	assert_int_equal(fx_read(f, fh, 2, 4096, buf), 6);
	assert_memory_equal(buf, "234567", 6);
	/* Room for the header alone: an empty read. */
	fx_out_room = sizeof(struct fuse_out_header);
	assert_int_equal(fx_read(f, fh, 0, 4096, buf), 0);
	/* Offsets past what off_t holds. */
	assert_int_equal(fx_read(f, fh, (uint64_t)INT64_MAX + 1, 1, buf), -EINVAL);
}

static void write_must_carry_its_data(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	char buf[16];
	uint64_t fh;

	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "f", O_RDWR, 0644, &e, &fh), 0);
	/* Says 10, carries 4. */
	struct fuse_write_in in = { .fh = fh, .size = 10 };

	req_begin(FUSE_WRITE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_add("abcd", 4);
	assert_int_equal(req_send(f), -EINVAL);
	/* Says 2, carries 4: two are written. */
	in.size = 2;
	req_begin(FUSE_WRITE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_add("abcd", 4);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_read_file(f, "f", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "ab");
	assert_int_equal(fx_write(f, fh, (uint64_t)INT64_MAX + 1, "x", 1), -EINVAL);
	assert_int_equal(fx_write(f, fh + 1, 0, "x", 1), -EBADF);
}

static void write_on_a_read_only_handle_fails(void **state)
{
	struct fx *f = *state;
	uint64_t fh;

	fx_write_file(f, "f", "x");
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "f"), O_RDONLY, &fh), 0);
	assert_int_equal(fx_write(f, fh, 0, "y", 1), -EBADF);
}

static void write_kills_suid_when_asked(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct stat st;
	uint64_t fh;

	fx_write_file(f, "f", "x");
	assert_int_equal(chmod(fx_path(f, "f"), 06755), 0);
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "f"), O_WRONLY, &fh), 0);
	assert_int_equal(fx_write(f, fh, 0, "y", 1), 1);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 06755);

	struct fuse_write_in in = { .fh = fh, .size = 1,
				    .write_flags = FUSE_WRITE_KILL_SUIDGID };

	req_begin(FUSE_WRITE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_add("z", 1);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);

	/* Set-group-ID without group execute is not a privilege: it stays. */
	assert_int_equal(chmod(fx_path(f, "f"), 02744), 0);
	req_begin(FUSE_WRITE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_add("z", 1);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 02744);
}

static void open_truncates_and_refuses_non_files(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct stat st;
	uint64_t fh;

	fx_write_file(f, "f", "something");
	assert_int_equal(chmod(fx_path(f, "f"), 04755), 0);
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	assert_int_equal(mkfifo(fx_path(f, "fifo"), 0644), 0);
	assert_int_equal(mknod(fx_path(f, "null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");
	struct fuse_open_in in = { .flags = O_WRONLY | O_TRUNC,
				   .open_flags = FUSE_OPEN_KILL_SUIDGID };

	req_begin(FUSE_OPEN, id);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_mode & 07777, 0755);

	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "d"), O_RDONLY, &fh), -EISDIR);
	/* A FIFO would block us, a device node reach the host's device. */
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "fifo"), O_RDONLY, &fh), -EACCES);
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "null"), O_RDWR, &fh), -EACCES);
	assert_int_equal(fx_open(f, 31337, O_RDONLY, &fh), -ESTALE);
}

static void create_opens_an_existing_file_unless_exclusive(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;
	char buf[16];
	uint64_t fh;

	fx_write_file(f, "f", "keep");
	assert_int_equal(chown(fx_path(f, "f"), 7, 7), 0);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "f", O_RDWR | O_EXCL, 0600, &e, &fh), -EEXIST);

	struct fuse_create_in in = { .flags = O_RDWR, .mode = S_IFREG | 0600 };

	req_begin(FUSE_CREATE, FUSE_ROOT_ID);
	req_creds(1000, 1000);
	req_add(&in, sizeof(in));
	req_str("f");
	assert_int_equal(req_send(f), 0);
	/* Opened, not taken over: owner and mode stay. */
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_uid, 7);
	assert_int_equal(st.st_mode & 0777, 0644);
	fx_read_file(f, "f", buf, sizeof(buf));
	assert_string_equal(buf, "keep");

	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	assert_int_equal(mkfifo(fx_path(f, "fifo"), 0644), 0);
	assert_int_equal(symlink("/etc/passwd", fx_path(f, "l")), 0);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "d", O_RDONLY, 0600, &e, &fh), -EISDIR);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "fifo", O_RDONLY, 0600, &e, &fh), -EACCES);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "l", O_RDWR, 0600, &e, &fh), -ELOOP);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "l", O_RDWR | O_EXCL, 0600, &e, &fh), -EEXIST);
	assert_int_equal(lstat(fx_path(f, "l"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

static void create_counts_a_lookup(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t fh;

	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "f", O_WRONLY, 0600, &e, &fh), 0);
	assert_int_equal(fx_inodes(f), 2);
	assert_int_equal(fx_release(f, fh), 0);
	fx_forget(f, e.nodeid, 1);
	assert_int_equal(fx_inodes(f), 1);
}

static void tmpfile_is_nameless_until_linked(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_create_in in = { .flags = O_RDWR, .mode = S_IFREG | 0640 };
	struct fuse_entry_out e;
	struct fuse_open_out o;
	struct stat st;
	char buf[16];

	req_begin(FUSE_TMPFILE, FUSE_ROOT_ID);
	req_creds(1000, 1000);
	req_add(&in, sizeof(in));
	req_str("/"); /* what Linux 6.1 sends as the name */
	assert_int_equal(req_send(f), 0);
	memcpy(&e, fx_reply, sizeof(e));
	memcpy(&o, fx_reply + sizeof(e), sizeof(o));
	assert_int_equal(e.attr.nlink, 0);
	assert_int_equal(e.attr.uid, 1000);
	assert_int_equal(e.attr.mode, S_IFREG | 0640);
	assert_int_equal(fx_write(f, o.fh, 0, "tmp", 3), 3);

	struct fuse_link_in link = { .oldnodeid = e.nodeid };

	req_begin(FUSE_LINK, FUSE_ROOT_ID);
	req_add(&link, sizeof(link));
	req_str("now-named");
	assert_int_equal(req_send(f), 0);
	fx_read_file(f, "now-named", buf, sizeof(buf));
	assert_string_equal(buf, "tmp");
	assert_int_equal(stat(fx_path(f, "now-named"), &st), 0);
	assert_int_equal(st.st_uid, 1000);
}

static void many_handles_on_one_file(void **state)
{
	struct fx *f = *state;
	static uint64_t fh[500];

	fx_write_file(f, "f", "x");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	for (size_t i = 0; i < ARRAY_LEN(fh); i++) {
		assert_int_equal(fx_open(f, id, O_RDONLY, &fh[i]), 0);
		/* Never reused: each is new. */
		assert_true(i == 0 || fh[i] > fh[i - 1]);
	}
	assert_int_equal(fuse_server_handle_count(f->srv), ARRAY_LEN(fh));
	for (size_t i = 0; i < ARRAY_LEN(fh); i += 2)
		assert_int_equal(fx_release(f, fh[i]), 0);
	char c;

	for (size_t i = 1; i < ARRAY_LEN(fh); i += 2) {
		assert_int_equal(fx_read(f, fh[i], 0, 1, &c), 1);
		assert_int_equal(fx_release(f, fh[i]), 0);
	}
	assert_int_equal(fuse_server_handle_count(f->srv), 0);
}

static void flush_and_fsync(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t fh;

	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "f", O_RDWR, 0644, &e, &fh), 0);
	struct fuse_flush_in fl = { .fh = fh };

	/* The guest stops sending FLUSH after its first ENOSYS. */
	req_begin(FUSE_FLUSH, e.nodeid);
	req_add(&fl, sizeof(fl));
	assert_int_equal(req_send(f), -ENOSYS);

	struct fuse_fsync_in fs = { .fh = fh };

	req_begin(FUSE_FSYNC, e.nodeid);
	req_add(&fs, sizeof(fs));
	assert_int_equal(req_send(f), 0);
	fs.fsync_flags = FUSE_FSYNC_FDATASYNC;
	req_begin(FUSE_FSYNC, e.nodeid);
	req_add(&fs, sizeof(fs));
	assert_int_equal(req_send(f), 0);
	fs.fh = 0;
	req_begin(FUSE_FSYNC, e.nodeid);
	req_add(&fs, sizeof(fs));
	assert_int_equal(req_send(f), -EBADF);
}

static int fallocate_req(struct fx *f, uint64_t fh, uint64_t off, uint64_t len,
			 uint32_t mode)
{
	struct fuse_fallocate_in in = { .fh = fh, .offset = off, .length = len,
					.mode = mode };

	req_begin(FUSE_FALLOCATE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	return req_send(f);
}

static int lseek_req(struct fx *f, uint64_t fh, uint64_t off, uint32_t whence,
		     uint64_t *pos)
{
	struct fuse_lseek_in in = { .fh = fh, .offset = off, .whence = whence };

	req_begin(FUSE_LSEEK, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	int err = req_send(f);

	if (!err) {
		struct fuse_lseek_out out;

		assert_int_equal(fx_reply_len, sizeof(out));
		memcpy(&out, fx_reply, sizeof(out));
		*pos = out.offset;
	}
	return err;
}

static void fallocate_and_seek_data_and_holes(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;
	uint64_t fh, pos;

	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "f", O_RDWR, 0644, &e, &fh), 0);
	assert_int_equal(fallocate_req(f, fh, 0, 1 << 20, 0), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_size, 1 << 20);
	assert_true(st.st_blocks * 512 >= 1 << 20);
	assert_int_equal(fallocate_req(f, fh, 0, 1 << 20,
				       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), 0);
	assert_int_equal(fallocate_req(f, fh, (uint64_t)INT64_MAX + 1, 1, 0), -EINVAL);
	assert_int_equal(fallocate_req(f, fh + 9, 0, 1, 0), -EBADF);

	/* A hole, then 4 KiB of data at 1 MiB. */
	assert_int_equal(fx_write(f, fh, 1 << 20, "data", 4), 4);
	assert_int_equal(lseek_req(f, fh, 0, SEEK_DATA, &pos), 0);
	assert_int_equal(pos, 1 << 20);
	assert_int_equal(lseek_req(f, fh, 0, SEEK_HOLE, &pos), 0);
	assert_int_equal(pos, 0);
	assert_int_equal(lseek_req(f, fh, (1 << 20) + 1, SEEK_HOLE, &pos), 0);
	assert_int_equal(pos, (1 << 20) + 4);
	assert_int_equal(lseek_req(f, fh, (1 << 20) + 8, SEEK_DATA, &pos), -ENXIO);
	assert_int_equal(lseek_req(f, fh, 0, SEEK_SET, &pos), -EINVAL);
	assert_int_equal(lseek_req(f, fh, 0, SEEK_END, &pos), -EINVAL);
}

static void copy_file_range_between_handles(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t src, dst;
	char buf[32];

	fx_write_file(f, "src", "0123456789");
	assert_int_equal(fx_open(f, fx_lookup_id(f, FUSE_ROOT_ID, "src"), O_RDONLY, &src), 0);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "dst", O_RDWR, 0644, &e, &dst), 0);
	struct fuse_copy_file_range_in in = { .fh_in = src, .off_in = 2,
					      .nodeid_out = e.nodeid,
					      .fh_out = dst, .off_out = 1, .len = 5 };

	req_begin(FUSE_COPY_FILE_RANGE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
	struct fuse_write_out out;

	memcpy(&out, fx_reply, sizeof(out));
	assert_int_equal(out.size, 5);
	assert_int_equal(fx_read_file(f, "dst", buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "\0" "23456", 6);

	in.flags = 1;
	req_begin(FUSE_COPY_FILE_RANGE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -EINVAL);
	in.flags = 0;
	in.fh_out = 999;
	req_begin(FUSE_COPY_FILE_RANGE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -EBADF);
	/* Into the read-only handle. */
	in.fh_out = src;
	in.fh_in = dst;
	req_begin(FUSE_COPY_FILE_RANGE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -EBADF);
}

static void writeback_opens_write_only_files_readable(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO, .writeback = true };
	struct fuse_open_in in = { .flags = O_WRONLY | O_APPEND };
	struct fuse_open_out o;
	char buf[8];
	struct fx f;

	assert_int_equal(fx_start(&f, &cfg), 0);
	fx_write_file(&f, "f", "abc");
	req_begin(FUSE_OPEN, fx_lookup_id(&f, FUSE_ROOT_ID, "f"));
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(&f), 0);
	memcpy(&o, fx_reply, sizeof(o));
	/* The guest's page cache reads what it writes around... */
	assert_int_equal(fx_read(&f, o.fh, 0, 3, buf), 3);
	/* ...and places appends itself: the offset holds. */
	assert_int_equal(fx_write(&f, o.fh, 1, "X", 1), 1);
	fx_read_file(&f, "f", buf, sizeof(buf));
	assert_string_equal(buf, "aXc");
	fx_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(write_then_read_back),
		FX_TEST(a_megabyte_each_way),
		FX_TEST(read_is_limited_by_the_reply_room),
		FX_TEST(write_must_carry_its_data),
		FX_TEST(write_on_a_read_only_handle_fails),
		FX_TEST(write_kills_suid_when_asked),
		FX_TEST(open_truncates_and_refuses_non_files),
		FX_TEST(create_opens_an_existing_file_unless_exclusive),
		FX_TEST(create_counts_a_lookup),
		FX_TEST(tmpfile_is_nameless_until_linked),
		FX_TEST(many_handles_on_one_file),
		FX_TEST(flush_and_fsync),
		FX_TEST(fallocate_and_seek_data_and_holes),
		FX_TEST(copy_file_range_between_handles),
		cmocka_unit_test(writeback_opens_write_only_files_readable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
