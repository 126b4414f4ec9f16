/* FUSE server tests: INIT, sessions, and requests on one inode. */
#include "tests/unit/test_fuse_helpers.h"

#include <sys/statvfs.h>
#include <sys/sysmacros.h>

static const uint64_t always_offered =
	FUSE_ASYNC_READ | FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS |
	FUSE_ATOMIC_O_TRUNC | FUSE_EXPORT_SUPPORT | FUSE_BIG_WRITES |
	FUSE_DONT_MASK | FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
	FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV_V2 | FUSE_MAX_PAGES |
	FUSE_INIT_EXT;

static void init_negotiates_with_a_full_guest(void **state)
{
	struct fx *f = *state;
	struct fuse_init_out out;

	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, &out), 0);
	assert_int_equal(out.major, 7);
	assert_int_equal(out.minor, 38);
	/* cache=auto, no write-back, no DAX. */
	assert_int_equal(out.flags, always_offered | FUSE_AUTO_INVAL_DATA);
	assert_int_equal(out.flags2, 0);
	assert_int_equal(out.max_readahead, 131072);
	assert_int_equal(out.max_write, 1 << 20);
	assert_int_equal(out.max_pages, 256);
	assert_int_equal(out.time_gran, 1);
	assert_int_equal(out.map_alignment, 0);
	assert_true(out.max_background > 0);
	assert_true(out.congestion_threshold <= out.max_background);
}

static void init_agrees_only_to_what_the_guest_offers(void **state)
{
	struct fx *f = *state;
	struct fuse_init_out out;

	assert_int_equal(fx_init(f, 37, FUSE_ASYNC_READ | FUSE_SPLICE_READ |
				 FUSE_POSIX_ACL, 0, &out), 0);
	assert_int_equal(out.minor, 37);
	assert_int_equal(out.flags, FUSE_ASYNC_READ);
	/* flags2 counts only with FUSE_INIT_EXT. */
	assert_int_equal(fx_init(f, 38, FUSE_ASYNC_READ, 0xffffffff, &out), 0);
	assert_int_equal(out.flags2, 0);
}

static void init_refuses_other_protocols(void **state)
{
	struct fx *f = *state;
	struct fuse_init_in in = { .major = 7, .minor = 38 };

	assert_int_equal(fx_init(f, 30, FX_GUEST_FLAGS, 0, NULL), -EPROTO);
	in.major = 8;
	req_begin(FUSE_INIT, 0);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -EPROTO);
	/* Shorter than the oldest fuse_init_in. */
	req_begin(FUSE_INIT, 0);
	req_add(&in, 12);
	assert_int_equal(req_send(f), -EINVAL);
	/* The 16-byte fuse_init_in of old guests is enough. */
	in.major = 7;
	req_begin(FUSE_INIT, 0);
	req_add(&in, 16);
	assert_int_equal(req_send(f), 0);
}

/* A 6.12 guest asks for FUSE_DIRECT_IO_ALLOW_MMAP: agreed only with
 * cache=none, the one mode whose files are direct I/O. */
static void init_allows_mmap_of_direct_io_files_only_with_cache_none(void **state)
{
	(void)state;
	static const enum fuse_cache_mode modes[] = {
		FUSE_CACHE_NONE, FUSE_CACHE_AUTO, FUSE_CACHE_ALWAYS };
	const uint32_t asked = FX_GUEST_FLAGS2 |
			       (uint32_t)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32);

	for (size_t i = 0; i < ARRAY_LEN(modes); i++) {
		struct fuse_server_config cfg = { .cache = modes[i] };
		struct fuse_init_out out;
		struct fx f;

		assert_int_equal(fx_start(&f, &cfg), 0);
		assert_int_equal(fx_init(&f, 41, FX_GUEST_FLAGS, asked, &out), 0);
		/* We speak 7.38 and say so; the flag stands on its own. */
		assert_int_equal(out.minor, 38);
		assert_int_equal(out.flags2 & (FUSE_DIRECT_IO_ALLOW_MMAP >> 32),
				 modes[i] == FUSE_CACHE_NONE ?
				 FUSE_DIRECT_IO_ALLOW_MMAP >> 32 : 0);
		/* Nothing else of 6.12's is taken (CREATE_SUPP_GROUP, the
		 * export and idmap bits): see fs/fuse_session.c. */
		assert_int_equal(out.flags2 & ~(uint32_t)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32), 0);
		/* A 6.1 guest (7.38) does not ask: not given. */
		assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, &out), 0);
		assert_int_equal(out.flags2, 0);
		fx_stop(&f);
	}
}

static void init_offers_writeback_and_dax_when_configured(void **state)
{
	(void)state;
	/* INIT only: no callback of the window is reached. */
	struct fuse_dax_ops dax = { .window_size = 1 << 30 };
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_ALWAYS,
					  .writeback = true, .dax = &dax };
	struct fuse_init_out out;
	struct fx f;

	assert_int_equal(fx_start(&f, &cfg), 0);
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, &out), 0);
	assert_int_equal(out.flags, always_offered | FUSE_WRITEBACK_CACHE |
			 FUSE_MAP_ALIGNMENT);
	assert_int_equal(out.flags2, FUSE_HAS_INODE_DAX >> 32);
	assert_int_equal(out.map_alignment, 12);

	/* dax=inode guests map the files we mark: regular ones from
	 * FUSE_DAX_MIN_FILE_SIZE up; smaller ones are read. */
	struct fuse_entry_out e;
	struct fuse_attr attr;

	fx_write_file(&f, "f", "x");
	assert_int_equal(truncate(fx_path(&f, "f"), FUSE_DAX_MIN_FILE_SIZE - 1), 0);
	fx_write_file(&f, "big", "x");
	assert_int_equal(truncate(fx_path(&f, "big"), FUSE_DAX_MIN_FILE_SIZE), 0);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "big", &e), 0);
	assert_true(e.attr.flags & FUSE_ATTR_DAX);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "f", &e), 0);
	assert_false(e.attr.flags & FUSE_ATTR_DAX);
	/* Grown to the size, it is marked from the next reply on. */
	assert_int_equal(truncate(fx_path(&f, "f"), FUSE_DAX_MIN_FILE_SIZE), 0);
	assert_int_equal(fx_getattr(&f, e.nodeid, &attr), 0);
	assert_true(attr.flags & FUSE_ATTR_DAX);
	assert_int_equal(fx_getattr(&f, FUSE_ROOT_ID, &attr), 0);
	assert_false(attr.flags & FUSE_ATTR_DAX);
	/* Without HAS_INODE_DAX asked for, nothing is marked. */
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, 0, &out), 0);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "big", &e), 0);
	assert_false(e.attr.flags & FUSE_ATTR_DAX);
	fx_stop(&f);

	/* A guest that caches nothing would READ a small file at every
	 * read: it maps every file. */
	cfg = (struct fuse_server_config){ .cache = FUSE_CACHE_NONE, .dax = &dax };
	assert_int_equal(fx_start(&f, &cfg), 0);
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, &out), 0);
	fx_write_file(&f, "f", "x");
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "f", &e), 0);
	assert_true(e.attr.flags & FUSE_ATTR_DAX);
	fx_stop(&f);

	/* Write-back needs a cache. */
	cfg = (struct fuse_server_config){ .cache = FUSE_CACHE_NONE, .writeback = true };
	assert_int_equal(fx_start(&f, &cfg), 0);
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, &out), 0);
	assert_int_equal(out.flags, always_offered);
	fx_stop(&f);
}

static void requests_before_init_fail(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { 0 };
	struct fuse_attr attr;
	struct fx f = { .cfg = cfg };

	snprintf(f.root, sizeof(f.root), "/tmp/fsvm-fuse-XXXXXX");
	assert_non_null(mkdtemp(f.root));
	f.cfg.root = f.root;
	assert_int_equal(fuse_server_create(&f.cfg, &f.srv), 0);
	assert_int_equal(fx_getattr(&f, FUSE_ROOT_ID, &attr), -EIO);
	fx_forget(&f, FUSE_ROOT_ID, 1);
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, 0, NULL), 0);
	assert_int_equal(fx_getattr(&f, FUSE_ROOT_ID, &attr), 0);
	fx_stop(&f);
}

static void create_rejects_bad_configs(void **state)
{
	(void)state;
	struct fuse_server_config cfg = { .root = "/nonexistent/fsvm" };
	struct fuse_server *srv;

	assert_int_equal(fuse_server_create(NULL, &srv), -EINVAL);
	assert_int_equal(fuse_server_create(&cfg, &srv), -ENOENT);
	cfg.root = "/etc/passwd";
	assert_int_equal(fuse_server_create(&cfg, &srv), -ENOTDIR);
	cfg.root = "/tmp";
	cfg.cache = 7;
	assert_int_equal(fuse_server_create(&cfg, &srv), -EINVAL);
	fuse_server_destroy(NULL);
}

static void destroy_and_reinit_end_the_session(void **state)
{
	struct fx *f = *state;
	struct fuse_attr attr;
	uint64_t fh;

	fx_write_file(f, "f", "x");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(f, id, O_RDONLY, &fh), 0);
	assert_int_equal(fx_inodes(f), 2);
	assert_int_equal(fuse_server_handle_count(f->srv), 1);

	req_begin(FUSE_DESTROY, FUSE_ROOT_ID);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fuse_server_handle_count(f->srv), 0);
	assert_int_equal(fx_getattr(f, FUSE_ROOT_ID, &attr), -EIO);

	/* A new INIT without DESTROY (a rebooted guest) also starts afresh. */
	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, 0, NULL), 0);
	id = fx_lookup_id(f, FUSE_ROOT_ID, "f");
	assert_int_equal(fx_inodes(f), 2);
	assert_int_equal(fx_init(f, 38, FX_GUEST_FLAGS, 0, NULL), 0);
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fx_getattr(f, id, &attr), -ESTALE);
}

static void lookup_reports_host_attributes(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;

	fx_write_file(f, "hello", "hello world");
	assert_int_equal(lstat(fx_path(f, "hello"), &st), 0);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "hello", &e), 0);
	assert_true(e.nodeid > FUSE_ROOT_ID);
	assert_int_equal(e.attr.ino, st.st_ino);
	assert_int_equal(e.attr.size, 11);
	assert_int_equal(e.attr.mode, st.st_mode);
	assert_int_equal(e.attr.nlink, 1);
	assert_int_equal(e.attr.mtime, st.st_mtim.tv_sec);
	assert_int_equal(e.attr.mtimensec, st.st_mtim.tv_nsec);
	assert_int_equal(e.entry_valid, 1);
	assert_int_equal(e.attr_valid, 1);
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "missing", &e), -ENOENT);
	/* A negative entry the guest keeps as long as a positive one. */
	assert_int_equal(e.nodeid, 0);
	assert_int_equal(e.entry_valid, 1);
}

static void lookups_are_counted_and_forget_frees(void **state)
{
	struct fx *f = *state;
	struct fuse_attr attr;

	fx_write_file(f, "a", "");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "a");

	assert_int_equal(fx_lookup_id(f, FUSE_ROOT_ID, "a"), id);
	assert_int_equal(fx_lookup_id(f, FUSE_ROOT_ID, "a"), id);
	assert_int_equal(fx_inodes(f), 2);
	fx_forget(f, id, 2);
	assert_int_equal(fx_inodes(f), 2);
	assert_int_equal(fx_getattr(f, id, &attr), 0);
	fx_forget(f, id, 1);
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fx_getattr(f, id, &attr), -ESTALE);

	/* Node ids are never reused. */
	uint64_t again = fx_lookup_id(f, FUSE_ROOT_ID, "a");

	assert_true(again > id);
	/* Forgetting too much frees; unknown ids and root are ignored. */
	fx_forget(f, again, 1000);
	fx_forget(f, 424242, 1);
	fx_forget(f, FUSE_ROOT_ID, UINT64_MAX);
	assert_int_equal(fx_inodes(f), 1);
	assert_int_equal(fx_getattr(f, FUSE_ROOT_ID, &attr), 0);
}

static void batch_forget_frees_the_listed(void **state)
{
	struct fx *f = *state;
	struct fuse_forget_one list[3];

	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		fx_write_file(f, name, "");
		list[i].nodeid = fx_lookup_id(f, FUSE_ROOT_ID, name);
		list[i].nlookup = 1;
	}
	fx_lookup_id(f, FUSE_ROOT_ID, "f2");
	assert_int_equal(fx_inodes(f), 4);

	/* count says 1000, three follow: the three are what counts. */
	struct fuse_batch_forget_in in = { .count = 1000 };

	req_begin(FUSE_BATCH_FORGET, 0);
	req_add(&in, sizeof(in));
	req_add(list, sizeof(list));
	req_add("junk", 4);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_returned, 0);
	assert_int_equal(fx_inodes(f), 2); /* f2 was looked up twice */
	in.count = 1;
	req_begin(FUSE_BATCH_FORGET, 0);
	req_add(&in, sizeof(in));
	req_add(&list[2], sizeof(list[2]));
	req_send(f);
	assert_int_equal(fx_inodes(f), 1);
}

static void getattr_by_inode_and_by_handle(void **state)
{
	struct fx *f = *state;
	struct fuse_attr attr;
	struct stat st;
	uint64_t fh;

	assert_int_equal(fx_getattr(f, FUSE_ROOT_ID, &attr), 0);
	assert_int_equal(stat(f->root, &st), 0);
	assert_int_equal(attr.ino, st.st_ino);
	assert_true(S_ISDIR(attr.mode));

	fx_write_file(f, "f", "12345");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(f, id, O_RDONLY, &fh), 0);
	struct fuse_getattr_in in = { .getattr_flags = FUSE_GETATTR_FH, .fh = fh };

	req_begin(FUSE_GETATTR, id);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
	struct fuse_attr_out out;

	memcpy(&out, fx_reply, sizeof(out));
	assert_int_equal(out.attr.size, 5);
	assert_int_equal(out.attr_valid, 1);
	in.fh = fh + 100;
	req_begin(FUSE_GETATTR, id);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -EBADF);
}

static int setattr(struct fx *f, uint64_t id, const struct fuse_setattr_in *in,
		   struct fuse_attr *attr)
{
	req_begin(FUSE_SETATTR, id);
	req_add(in, sizeof(*in));
	int err = req_send(f);

	if (!err) {
		struct fuse_attr_out out;

		assert_int_equal(fx_reply_len, sizeof(out));
		memcpy(&out, fx_reply, sizeof(out));
		*attr = out.attr;
	}
	return err;
}

static void setattr_changes_the_host_file(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_attr attr;
	struct stat st;

	fx_write_file(f, "f", "0123456789");
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	struct fuse_setattr_in in = { .valid = FATTR_MODE, .mode = S_IFREG | 0604 };

	assert_int_equal(setattr(f, id, &in, &attr), 0);
	assert_int_equal(attr.mode, S_IFREG | 0604);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_mode, S_IFREG | 0604);

	in = (struct fuse_setattr_in){ .valid = FATTR_UID | FATTR_GID,
				       .uid = 1234, .gid = 5678 };
	assert_int_equal(setattr(f, id, &in, &attr), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 5678);
	assert_int_equal(attr.uid, 1234);

	in = (struct fuse_setattr_in){ .valid = FATTR_SIZE, .size = 4 };
	assert_int_equal(setattr(f, id, &in, &attr), 0);
	assert_int_equal(attr.size, 4);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_size, 4);

	in = (struct fuse_setattr_in){ .valid = FATTR_ATIME | FATTR_MTIME,
				       .atime = 1000000000, .atimensec = 5,
				       .mtime = 1200000000, .mtimensec = 7 };
	assert_int_equal(setattr(f, id, &in, &attr), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_atim.tv_sec, 1000000000);
	assert_int_equal(st.st_atim.tv_nsec, 5);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_int_equal(st.st_mtim.tv_nsec, 7);

	/* NOW for mtime only; atime stays; ctime alone changes nothing. */
	in = (struct fuse_setattr_in){ .valid = FATTR_MTIME | FATTR_MTIME_NOW };
	assert_int_equal(setattr(f, id, &in, &attr), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_atim.tv_sec, 1000000000);
	assert_true(st.st_mtim.tv_sec > 1600000000);
	in = (struct fuse_setattr_in){ .valid = FATTR_CTIME, .ctime = 5 };
	assert_int_equal(setattr(f, id, &in, &attr), 0);
}

static void setattr_size_through_a_handle(void **state)
{
	struct fx *f = *state;
	struct fuse_attr attr;
	struct stat st;
	uint64_t fh;

	fx_write_file(f, "f", "0123456789");
	assert_int_equal(chmod(fx_path(f, "f"), 06755), 0);
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(fx_open(f, id, O_RDWR, &fh), 0);
	struct fuse_setattr_in in = { .valid = FATTR_SIZE | FATTR_FH |
					       FATTR_KILL_SUIDGID,
				      .fh = fh, .size = 3 };

	assert_int_equal(setattr(f, id, &in, &attr), 0);
	assert_int_equal(stat(fx_path(f, "f"), &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(st.st_mode & 07777, 0755);
	in.fh = 999;
	assert_int_equal(setattr(f, id, &in, &attr), -EBADF);
}

static void setattr_refuses_what_linux_refuses(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;
	struct fuse_attr attr;

	assert_int_equal(symlink("target", fx_path(f, "l")), 0);
	assert_int_equal(mkdir(fx_path(f, "d"), 0755), 0);
	uint64_t l = fx_lookup_id(f, FUSE_ROOT_ID, "l");
	uint64_t d = fx_lookup_id(f, FUSE_ROOT_ID, "d");
	struct fuse_setattr_in in = { .valid = FATTR_MODE, .mode = 0600 };

	assert_int_equal(setattr(f, l, &in, &attr), -EOPNOTSUPP);
	in = (struct fuse_setattr_in){ .valid = FATTR_SIZE, .size = 0 };
	assert_int_equal(setattr(f, d, &in, &attr), -EISDIR);
	assert_int_equal(setattr(f, l, &in, &attr), -EINVAL);
	in = (struct fuse_setattr_in){ .valid = FATTR_SIZE, .size = UINT64_MAX };
	assert_int_equal(setattr(f, d, &in, &attr), -EINVAL);
	/* Times and owner of a symlink itself are fine. */
	in = (struct fuse_setattr_in){ .valid = FATTR_MTIME | FATTR_UID,
				       .mtime = 12345, .uid = 77 };
	assert_int_equal(setattr(f, l, &in, &attr), 0);
	struct stat st;

	assert_int_equal(lstat(fx_path(f, "l"), &st), 0);
	assert_int_equal(st.st_mtime, 12345);
	assert_int_equal(st.st_uid, 77);
}

static int access_as(struct fx *f, uint64_t id, uint32_t uid, uint32_t gid,
		     uint32_t mask)
{
	struct fuse_access_in in = { .mask = mask };

	req_begin(FUSE_ACCESS, id);
	req_creds(uid, gid);
	req_add(&in, sizeof(in));
	return req_send(f);
}

static void access_checks_mode_bits(void **state)
{
	NEEDS_ROOT();
	struct fx *f = *state;

	fx_write_file(f, "f", "");
	assert_int_equal(chmod(fx_path(f, "f"), 0640), 0);
	assert_int_equal(chown(fx_path(f, "f"), 1000, 2000), 0);
	uint64_t id = fx_lookup_id(f, FUSE_ROOT_ID, "f");

	assert_int_equal(access_as(f, id, 0, 0, R_OK | W_OK), 0);
	assert_int_equal(access_as(f, id, 0, 0, X_OK), -EACCES);
	assert_int_equal(access_as(f, id, 1000, 1, R_OK | W_OK), 0);
	assert_int_equal(access_as(f, id, 1001, 2000, R_OK), 0);
	assert_int_equal(access_as(f, id, 1001, 2000, W_OK), -EACCES);
	assert_int_equal(access_as(f, id, 1001, 1, R_OK), -EACCES);
	assert_int_equal(access_as(f, id, 1001, 1, F_OK), 0);
	assert_int_equal(access_as(f, FUSE_ROOT_ID, 0, 0, X_OK), 0);
}

static void readlink_returns_the_text(void **state)
{
	struct fx *f = *state;

	assert_int_equal(symlink("/etc/passwd", fx_path(f, "l")), 0);
	fx_write_file(f, "f", "");
	uint64_t l = fx_lookup_id(f, FUSE_ROOT_ID, "l");

	req_begin(FUSE_READLINK, l);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_reply_len, strlen("/etc/passwd"));
	assert_memory_equal(fx_reply, "/etc/passwd", fx_reply_len);
	req_begin(FUSE_READLINK, fx_lookup_id(f, FUSE_ROOT_ID, "f"));
	assert_int_equal(req_send(f), -EINVAL);
	/* No room for the text: an error, not a cut link. */
	req_begin(FUSE_READLINK, l);
	fx_out_room = sizeof(struct fuse_out_header) + 4;
	assert_int_equal(req_send(f), -ERANGE);
}

static void statfs_and_syncfs(void **state)
{
	struct fx *f = *state;
	struct fuse_statfs_out out;
	struct statvfs sv;

	req_begin(FUSE_STATFS, FUSE_ROOT_ID);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fx_reply_len, sizeof(out));
	memcpy(&out, fx_reply, sizeof(out));
	assert_int_equal(statvfs(f->root, &sv), 0);
	assert_int_equal(out.st.bsize, sv.f_bsize);
	assert_int_equal(out.st.frsize, sv.f_frsize);
	assert_int_equal(out.st.namelen, sv.f_namemax);
	assert_int_equal(out.st.blocks, sv.f_blocks);

	struct fuse_syncfs_in in = { 0 };

	req_begin(FUSE_SYNCFS, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), 0);
}

/* Every request is counted, one we do not serve too (as -v reports it):
 * Python's isatty() on each file it opens sends an IOCTL. */
static void requests_are_counted_served_or_not(void **state)
{
	struct fx *f = *state;
	struct fuse_ioctl_in in = { .cmd = 0x5401 /* TCGETS */ };
	uint64_t statfs = fuse_server_count(f->srv, FUSE_STATFS);

	req_begin(FUSE_STATFS, FUSE_ROOT_ID);
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fuse_server_count(f->srv, FUSE_STATFS), statfs + 1);
	assert_null(fuse_opcode_name(FUSE_IOCTL));
	req_begin(FUSE_IOCTL, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -ENOSYS);
	req_begin(FUSE_IOCTL, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(f), -ENOSYS);
	assert_int_equal(fuse_server_count(f->srv, FUSE_IOCTL), 2);
}

/* Timeouts and open flags per cache mode. */
static void cache_modes(void **state)
{
	(void)state;
	static const struct {
		enum fuse_cache_mode mode;
		uint64_t timeout;
		uint32_t open_flags, dir_flags;
	} modes[] = {
		{ FUSE_CACHE_NONE, 0, FOPEN_DIRECT_IO, 0 },
		{ FUSE_CACHE_AUTO, 1, 0, 0 },
		{ FUSE_CACHE_ALWAYS, 86400, FOPEN_KEEP_CACHE, FOPEN_CACHE_DIR },
	};

	for (size_t i = 0; i < ARRAY_LEN(modes); i++) {
		struct fuse_server_config cfg = { .cache = modes[i].mode };
		struct fuse_entry_out e;
		struct fuse_open_out o;
		struct fuse_open_in in = { .flags = O_RDONLY };
		struct fx f;

		assert_int_equal(fx_start(&f, &cfg), 0);
		fx_write_file(&f, "f", "");
		assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "f", &e), 0);
		assert_int_equal(e.entry_valid, modes[i].timeout);
		assert_int_equal(e.attr_valid, modes[i].timeout);
		/* A missing name: a negative entry kept as long, or with no
		 * cache at all a plain ENOENT. */
		req_begin(FUSE_LOOKUP, FUSE_ROOT_ID);
		req_str("missing");
		if (modes[i].timeout) {
			assert_int_equal(req_send(&f), 0);
			struct fuse_entry_out neg;
			memcpy(&neg, fx_reply, sizeof(neg));
			assert_int_equal(neg.nodeid, 0);
			assert_int_equal(neg.entry_valid, modes[i].timeout);
		} else {
			assert_int_equal(req_send(&f), -ENOENT);
		}
		req_begin(FUSE_OPEN, e.nodeid);
		req_add(&in, sizeof(in));
		assert_int_equal(req_send(&f), 0);
		memcpy(&o, fx_reply, sizeof(o));
		assert_int_equal(o.open_flags, modes[i].open_flags);
		req_begin(FUSE_OPENDIR, FUSE_ROOT_ID);
		req_add(&in, sizeof(in));
		assert_int_equal(req_send(&f), 0);
		memcpy(&o, fx_reply, sizeof(o));
		assert_int_equal(o.open_flags, modes[i].dir_flags);
		fx_stop(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(init_negotiates_with_a_full_guest),
		FX_TEST(init_agrees_only_to_what_the_guest_offers),
		FX_TEST(init_refuses_other_protocols),
		cmocka_unit_test(init_allows_mmap_of_direct_io_files_only_with_cache_none),
		cmocka_unit_test(init_offers_writeback_and_dax_when_configured),
		cmocka_unit_test(requests_before_init_fail),
		cmocka_unit_test(create_rejects_bad_configs),
		FX_TEST(destroy_and_reinit_end_the_session),
		FX_TEST(lookup_reports_host_attributes),
		FX_TEST(lookups_are_counted_and_forget_frees),
		FX_TEST(batch_forget_frees_the_listed),
		FX_TEST(getattr_by_inode_and_by_handle),
		FX_TEST(setattr_changes_the_host_file),
		FX_TEST(setattr_size_through_a_handle),
		FX_TEST(setattr_refuses_what_linux_refuses),
		FX_TEST(access_checks_mode_bits),
		FX_TEST(readlink_returns_the_text),
		FX_TEST(statfs_and_syncfs),
		FX_TEST(requests_are_counted_served_or_not),
		cmocka_unit_test(cache_modes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
