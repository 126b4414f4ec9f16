/* A share never shows a pseudo file system: a sysfs mounted inside the
 * share is an empty, sealed directory; a sysfs file bind-mounted there is
 * not there at all; DAX marks only files of ordinary file systems. The
 * mounts live in a mount namespace of the test's own (a user namespace
 * too when not run as root), so the host sees none of them. */
#include <sched.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#include "fs/host_fs.h"
#include "test_fuse_helpers.h"

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Mount namespace (and, unprivileged, a user and network namespace, which
 * let us mount sysfs): mounts made here stay here. */
static int private_mounts(void **state)
{
	(void)state;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int flags = CLONE_NEWNS | (uid ? CLONE_NEWUSER | CLONE_NEWNET : 0);
	char map[64];

	assert_int_equal(unshare(flags), 0);
	if (uid) {
		snprintf(map, sizeof(map), "0 %u 1", uid);
		assert_int_equal(write_file("/proc/self/uid_map", map), 0);
		assert_int_equal(write_file("/proc/self/setgroups", "deny"), 0);
		snprintf(map, sizeof(map), "0 %u 1", gid);
		assert_int_equal(write_file("/proc/self/gid_map", map), 0);
	}
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	return 0;
}

static struct fx fx;

/* A writable share holding sys/ (a sysfs), online (a sysfs file bound
 * over a plain one), t/ (a tmpfs) and plain files. */
static int share_setup(void **state)
{
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO };

	assert_int_equal(fx_start(&fx, &cfg), 0);
	assert_int_equal(mkdir(fx_path(&fx, "sys"), 0755), 0);
	assert_int_equal(mount("sysfs", fx_path(&fx, "sys"), "sysfs", 0, NULL), 0);
	assert_int_equal(mkdir(fx_path(&fx, "t"), 0755), 0);
	assert_int_equal(mount("tmpfs", fx_path(&fx, "t"), "tmpfs", 0, NULL), 0);
	fx_write_file(&fx, "t/file", "on tmpfs");
	fx_write_file(&fx, "online", "not sysfs");
	char src[512];
	snprintf(src, sizeof(src), "%s/sys/devices/system/cpu/online", fx.root);
	assert_int_equal(mount(src, fx_path(&fx, "online"), NULL, MS_BIND, NULL), 0);
	*state = &fx;
	return 0;
}

static int share_teardown(void **state)
{
	(void)state;
	const char *mounts[] = { "online", "t", "sys" };
	for (size_t i = 0; i < ARRAY_LEN(mounts); i++)
		assert_int_equal(umount2(fx_path(&fx, mounts[i]), MNT_DETACH), 0);
	fx_stop(&fx);
	return 0;
}

static void mount_point_is_sealed(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e, inner;
	struct fuse_attr attr;
	uint64_t fh;

	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "sys", &e), 0);
	assert_true(e.nodeid & INODE_SEALED);
	/* An empty directory of root's: nothing of sysfs's own. */
	assert_int_equal(e.attr.mode, S_IFDIR | 0555);
	assert_int_equal(e.attr.nlink, 2);
	assert_int_equal(e.attr.uid, 0);
	assert_int_equal(fx_getattr(f, e.nodeid, &attr), 0);
	assert_int_equal(attr.mode, S_IFDIR | 0555);

	/* Nothing inside can be named, listed, made or changed. */
	assert_int_equal(fx_lookup(f, e.nodeid, "kernel", &inner), -ENOENT);
	assert_int_equal(fx_lookup(f, e.nodeid, "..", &inner), -ENOENT);
	assert_int_equal(fx_opendir(f, e.nodeid, &fh), -EACCES);
	assert_int_equal(fx_open(f, e.nodeid, O_RDONLY, &fh), -EACCES);
	assert_int_equal(fx_mkdir(f, e.nodeid, "x", 0755, &inner), -EACCES);
	assert_int_equal(fx_create(f, e.nodeid, "x", O_WRONLY, 0644, &inner, &fh),
			 -EACCES);
	req_begin(FUSE_STATFS, e.nodeid);
	assert_int_equal(req_send(f), -EACCES);
	req_begin(FUSE_READLINK, e.nodeid);
	assert_int_equal(req_send(f), -EACCES);
	struct fuse_setattr_in sa = { .valid = FATTR_MODE, .mode = 0777 };
	req_begin(FUSE_SETATTR, e.nodeid);
	req_add(&sa, sizeof(sa));
	assert_int_equal(req_send(f), -EACCES);

	/* Nor can anything be moved or linked into it. */
	fx_write_file(f, "mine", "x");
	struct fuse_rename_in rn = { .newdir = e.nodeid };
	req_begin(FUSE_RENAME, FUSE_ROOT_ID);
	req_add(&rn, sizeof(rn));
	req_str("mine");
	req_str("mine");
	assert_int_equal(req_send(f), -EACCES);
	struct fuse_link_in ln = { .oldnodeid = fx_lookup_id(f, FUSE_ROOT_ID, "mine") };
	req_begin(FUSE_LINK, e.nodeid);
	req_add(&ln, sizeof(ln));
	req_str("mine");
	assert_int_equal(req_send(f), -EACCES);

	/* The guest may forget it like any other inode. */
	size_t before = fx_inodes(f);
	fx_forget(f, e.nodeid, 1);
	assert_int_equal(fx_inodes(f), before - 1);
}

static void pseudo_files_are_not_there(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;

	/* The name exists on the host, but what it shows is sysfs's. */
	assert_int_equal(fx_lookup(f, FUSE_ROOT_ID, "online", &e), -ENOENT);

	/* READDIRPLUS lists the name, with no attributes or node id. */
	uint64_t fh;
	assert_int_equal(fx_opendir(f, FUSE_ROOT_ID, &fh), 0);
	struct fuse_read_in rd = { .fh = fh, .size = 8192 };
	req_begin(FUSE_READDIRPLUS, FUSE_ROOT_ID);
	req_add(&rd, sizeof(rd));
	assert_int_equal(req_send(f), 0);
	bool seen_online = false, seen_sys = false;
	for (size_t off = 0; off < fx_reply_len;) {
		const struct fuse_direntplus *d = (const void *)(fx_reply + off);
		const char *name = d->dirent.name;
		size_t len = d->dirent.namelen;
		if (len == 6 && !memcmp(name, "online", 6)) {
			seen_online = true;
			assert_int_equal(d->entry_out.nodeid, 0);
		}
		if (len == 3 && !memcmp(name, "sys", 3)) {
			seen_sys = true;
			assert_true(d->entry_out.nodeid & INODE_SEALED);
			assert_int_equal(d->entry_out.attr.mode, S_IFDIR | 0555);
		}
		off += FUSE_DIRENTPLUS_SIZE(d);
	}
	assert_true(seen_online && seen_sys);
	assert_int_equal(fx_release(f, fh), 0);
}

/* Mounts a hugetlbfs at a scratch folder (outside the share) holding
 * one 2 MiB file: a pseudo file system whose files O_TRUNC empties, as
 * it empties a tracefs buffer, but private to the test's namespace. */
static void mount_hugetlbfs(char *dir, char *file, size_t size)
{
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mount("hugetlbfs", dir, "hugetlbfs", 0, NULL), 0);
	snprintf(file, size, "%s/buffer", dir);
	int fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0666);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 2 << 20), 0);
	close(fd);
}

/* CREATE of a name a pseudo file is bound over opens nothing with the
 * guest's flags: it is refused from an O_PATH look at the file, before
 * O_TRUNC could empty it. */
static void create_never_opens_pseudo_files(void **state)
{
	NEEDS_ROOT(); /* hugetlbfs mounts only in the host's namespace */
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct stat st;
	uint64_t fh;
	char huge[] = "/tmp/fsvm-huge-XXXXXX", file[64];

	mount_hugetlbfs(huge, file, sizeof(file));
	fx_write_file(f, "buffer", "plain");
	assert_int_equal(mount(file, fx_path(f, "buffer"), NULL, MS_BIND, NULL), 0);

	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "buffer", O_WRONLY | O_TRUNC,
				   0644, &e, &fh), -EACCES);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_size, 2 << 20);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "online", O_RDWR | O_TRUNC,
				   0644, &e, &fh), -EACCES);
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "online", O_RDONLY, 0644,
				   &e, &fh), -EACCES);
	/* With O_EXCL the name is taken, as on the host. */
	assert_int_equal(fx_create(f, FUSE_ROOT_ID, "buffer", O_WRONLY | O_EXCL,
				   0644, &e, &fh), -EEXIST);
	assert_int_equal(fuse_server_handle_count(f->srv), 0);

	assert_int_equal(umount2(fx_path(f, "buffer"), MNT_DETACH), 0);
	assert_int_equal(umount2(huge, MNT_DETACH), 0);
	assert_int_equal(rmdir(huge), 0);
}

static void kinds_of_host_file_systems(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *path;
		enum host_fs_kind kind;
	} known[] = {
		{ "/proc", HOST_FS_PSEUDO },
		{ "/sys", HOST_FS_PSEUDO },
		{ "/proc/self/fd", HOST_FS_PSEUDO },
	};
	for (size_t i = 0; i < ARRAY_LEN(known); i++) {
		int fd = open(known[i].path, O_PATH | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(host_fs_kind(fd), known[i].kind);
		close(fd);
	}
	int fd = open(fx_path(f, "t/file"), O_PATH | O_CLOEXEC);
	assert_int_equal(host_fs_kind(fd), HOST_FS_MAPPABLE);
	close(fd);

	/* devtmpfs calls itself tmpfs; where /dev is one, it is still the
	 * host's devices. */
	FILE *m = fopen("/proc/self/mounts", "re");
	char dev[64], dir[256], type[64];
	bool devtmpfs = false;
	while (fscanf(m, "%63s %255s %63s %*[^\n]", dev, dir, type) == 3)
		devtmpfs |= !strcmp(dir, "/dev") && !strcmp(type, "devtmpfs");
	fclose(m);
	fd = open("/dev", O_PATH | O_CLOEXEC);
	assert_int_equal(host_fs_kind(fd) == HOST_FS_PSEUDO, devtmpfs);
	close(fd);

	/* A pseudo file system is never a share's root. */
	struct fuse_server *srv;
	struct fuse_server_config cfg = { .root = "/proc", .cache = FUSE_CACHE_AUTO };
	assert_int_equal(fuse_server_create(&cfg, &srv), -EPERM);
	cfg.root = fx_path(f, "sys");
	assert_int_equal(fuse_server_create(&cfg, &srv), -EPERM);
}

static int dax_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable)
{
	(void)opaque; (void)moffset; (void)len; (void)fd; (void)foffset;
	(void)writable;
	return 0;
}

static int dax_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	(void)opaque; (void)moffset; (void)len;
	return 0;
}

static void dax_file_grown(void *opaque)
{
	(void)opaque;
}

/* Only files of ordinary file systems are marked for DAX; a guest that
 * asks to map a sealed inode anyway is refused. */
static void dax_only_where_mappable(void **state)
{
	(void)state;
	static const struct fuse_dax_ops dax = { .map = dax_map, .unmap = dax_unmap,
						 .file_grown = dax_file_grown,
						 .window_size = 1 << 30 };
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_AUTO, .dax = &dax };
	struct fx f;
	struct fuse_entry_out e;

	assert_int_equal(fx_start(&f, &cfg), 0);
	assert_int_equal(mkdir(fx_path(&f, "t"), 0755), 0);
	assert_int_equal(mount("tmpfs", fx_path(&f, "t"), "tmpfs", 0, NULL), 0);
	fx_write_file(&f, "t/file", "x");
	assert_int_equal(truncate(fx_path(&f, "t/file"), FUSE_DAX_MIN_FILE_SIZE), 0);
	assert_int_equal(mkdir(fx_path(&f, "sys"), 0755), 0);
	assert_int_equal(mount("sysfs", fx_path(&f, "sys"), "sysfs", 0, NULL), 0);

	uint64_t t = fx_lookup_id(&f, FUSE_ROOT_ID, "t");
	assert_int_equal(fx_lookup(&f, t, "file", &e), 0);
	assert_true(e.attr.flags & FUSE_ATTR_DAX);
	assert_int_equal(fx_lookup(&f, FUSE_ROOT_ID, "sys", &e), 0);
	assert_false(e.attr.flags & FUSE_ATTR_DAX);
	struct fuse_setupmapping_in in = { .fh = UINT64_MAX, .len = 4096,
					   .flags = FUSE_SETUPMAPPING_FLAG_READ };
	req_begin(FUSE_SETUPMAPPING, e.nodeid);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(&f), -EACCES);

	assert_int_equal(umount2(fx_path(&f, "sys"), MNT_DETACH), 0);
	assert_int_equal(umount2(fx_path(&f, "t"), MNT_DETACH), 0);
	fx_stop(&f);
}

/* A CREATE that opens a file bound over its name (a mount point of
 * another file system) files its handle under that file's kind, not its
 * directory's: an overlayfs file in a tmpfs folder is not for DAX. */
static void create_handles_have_their_files_kind(void **state)
{
	(void)state;
	static const struct fuse_dax_ops dax = { .map = dax_map, .unmap = dax_unmap,
						 .file_grown = dax_file_grown,
						 .window_size = 1 << 30 };
	struct fuse_server_config cfg = { .cache = FUSE_CACHE_NONE, .dax = &dax };
	struct fx f;
	struct fuse_entry_out e;
	uint64_t plain_fh, new_fh;
	char ovl[] = "/tmp/fsvm-ovl-XXXXXX", path[128], opts[512];

	assert_non_null(mkdtemp(ovl));
	static const char *const layers[] = { "lower", "upper", "work", "merged" };
	for (size_t i = 0; i < ARRAY_LEN(layers); i++) {
		snprintf(path, sizeof(path), "%s/%s", ovl, layers[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	snprintf(opts, sizeof(opts), "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
		 ovl, ovl, ovl);
	snprintf(path, sizeof(path), "%s/merged", ovl);
	assert_int_equal(mount("overlay", path, "overlay", 0, opts), 0);
	snprintf(path, sizeof(path), "%s/merged/file", ovl);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(fx_start(&f, &cfg), 0);
	assert_int_equal(mkdir(fx_path(&f, "t"), 0755), 0);
	assert_int_equal(mount("tmpfs", fx_path(&f, "t"), "tmpfs", 0, NULL), 0);
	fx_write_file(&f, "t/plain", "on tmpfs");
	assert_int_equal(mount(path, fx_path(&f, "t/plain"), NULL, MS_BIND, NULL), 0);
	uint64_t t = fx_lookup_id(&f, FUSE_ROOT_ID, "t");

	assert_int_equal(fx_create(&f, t, "plain", O_RDWR, 0644, &e, &plain_fh), 0);
	assert_false(e.attr.flags & FUSE_ATTR_DAX);
	assert_int_equal(fx_create(&f, t, "new", O_RDWR, 0644, &e, &new_fh), 0);
	assert_true(e.attr.flags & FUSE_ATTR_DAX);
	struct fuse_setupmapping_in in = { .len = 4096,
					   .flags = FUSE_SETUPMAPPING_FLAG_READ };
	in.fh = plain_fh;
	req_begin(FUSE_SETUPMAPPING, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(&f), -EOPNOTSUPP);
	in.fh = new_fh;
	req_begin(FUSE_SETUPMAPPING, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	assert_int_equal(req_send(&f), 0);
	assert_int_equal(fx_release(&f, plain_fh), 0);
	assert_int_equal(fx_release(&f, new_fh), 0);

	assert_int_equal(umount2(fx_path(&f, "t/plain"), MNT_DETACH), 0);
	assert_int_equal(umount2(fx_path(&f, "t"), MNT_DETACH), 0);
	fx_stop(&f);
	snprintf(path, sizeof(path), "%s/merged", ovl);
	assert_int_equal(umount2(path, MNT_DETACH), 0);
	nftw(ovl, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(mount_point_is_sealed, share_setup,
						share_teardown),
		cmocka_unit_test_setup_teardown(pseudo_files_are_not_there,
						share_setup, share_teardown),
		cmocka_unit_test_setup_teardown(create_never_opens_pseudo_files,
						share_setup, share_teardown),
		cmocka_unit_test_setup_teardown(kinds_of_host_file_systems,
						share_setup, share_teardown),
		cmocka_unit_test(dax_only_where_mappable),
		cmocka_unit_test(create_handles_have_their_files_kind),
	};

	return cmocka_run_group_tests(tests, private_mounts, NULL);
}
