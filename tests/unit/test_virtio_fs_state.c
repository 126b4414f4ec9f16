/* Tests for a virtio-fs device's state in a snapshot (devices/virtio_fs.c):
 * a device on a real share, driven by FUSE requests as the guest sends
 * them (LOOKUP, OPEN, SETUPMAPPING), saved and restored into a second
 * device on the same share, whose node ids, handles and DAX window go on
 * as the first's; a cut state refused, the device as new again. */
#include "tests/unit/test_fuse_helpers.h"

#include <sys/mman.h>

#include "devices/virtio_fs.h"

#define WINDOW (8ULL << 20)
#define PAGE 4096ULL
#define MAP_AT (2ULL << 20) /* the writable mapping, from file page 1 */

struct share {
	char root[64];
	char path[96]; /* its file, "data": 4 pages, each its own letter */
};

static void share_make(struct share *s)
{
	snprintf(s->root, sizeof(s->root), "/tmp/fsvm-vfs-state-XXXXXX");
	assert_non_null(mkdtemp(s->root));
	snprintf(s->path, sizeof(s->path), "%s/data", s->root);
	int fd = open(s->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	for (int i = 0; i < 4; i++) {
		char page[PAGE];
		memset(page, 'a' + i, sizeof(page));
		assert_int_equal(write(fd, page, PAGE), (ssize_t)PAGE);
	}
	close(fd);
}

/* A device on the share, as new, its requests sent through f. */
static void device_make(struct virtio_fs *fs, struct fx *f,
			const struct share *s)
{
	struct fuse_server_config cfg = {.root = s->root, .cache = FUSE_CACHE_AUTO};
	assert_int_equal(virtio_fs_create(fs, "t", &cfg, 1, WINDOW, 64), 0);
	memset(f, 0, sizeof(*f));
	f->srv = fs->server;
}

static void device_destroy(struct virtio_fs *fs)
{
	fuse_server_destroy(fs->server);
	dax_window_destroy(&fs->dax);
	close(fs->queues.stop_fd);
}

static int setupmapping(struct fx *f, uint64_t nodeid, uint64_t fh,
			uint64_t moffset, uint64_t foffset, bool writable)
{
	struct fuse_setupmapping_in in = {
		.fh = fh, .foffset = foffset, .len = 2 * PAGE, .moffset = moffset,
		.flags = FUSE_SETUPMAPPING_FLAG_READ |
			 (writable ? FUSE_SETUPMAPPING_FLAG_WRITE : 0)};
	req_begin(FUSE_SETUPMAPPING, nodeid);
	req_add(&in, sizeof(in));
	return req_send(f);
}

/* The guest's session on the first device: data looked up and open for
 * writing, mapped through its handle at MAP_AT and by its inode at 0.
 * The device's state goes to *buf (the caller frees). */
static size_t session_saved(const struct share *s, uint64_t *nodeid,
			    uint64_t *fh, unsigned char **buf)
{
	struct virtio_fs fs;
	struct fx f;
	device_make(&fs, &f, s);
	assert_int_equal(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL), 0);
	*nodeid = fx_lookup_id(&f, FUSE_ROOT_ID, "data");
	assert_int_equal(fx_open(&f, *nodeid, O_RDWR, fh), 0);
	assert_int_equal(setupmapping(&f, *nodeid, *fh, MAP_AT, PAGE, true), 0);
	assert_int_equal(setupmapping(&f, *nodeid, UINT64_MAX, 0, 0, false), 0);
	assert_int_equal(fs.dax.base[MAP_AT], 'b');

	struct state_out out = {0};
	assert_int_equal(virtio_fs_save_state(&fs, &out), 0);
	size_t len;
	assert_int_equal(state_out_finish(&out, buf, &len), 0);
	device_destroy(&fs);
	return len;
}

static int restore(struct virtio_fs *fs, const unsigned char *buf, size_t len,
		   char *err)
{
	struct state_in in = state_in(buf, len);
	int ret = virtio_fs_restore_state(fs, &in, err, 256);
	if (!ret)
		assert_true(state_in_whole(&in));
	return ret;
}

/* Each test's: the first device's state and a second device, new. */
struct saved {
	struct share s;
	uint64_t nodeid, fh;
	unsigned char *buf;
	size_t len;
	struct virtio_fs fs;
	struct fx f;
};

static int saved_setup(void **state)
{
	static struct saved sv;
	share_make(&sv.s);
	sv.len = session_saved(&sv.s, &sv.nodeid, &sv.fh, &sv.buf);
	device_make(&sv.fs, &sv.f, &sv.s);
	*state = &sv;
	return 0;
}

static int saved_teardown(void **state)
{
	struct saved *sv = *state;
	device_destroy(&sv->fs);
	free(sv->buf);
	return nftw(sv->s.root, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_restored_device_goes_on(void **state)
{
	struct saved *sv = *state;
	struct virtio_fs *fs = &sv->fs;
	struct fx *f = &sv->f;
	char err[256];
	assert_int_equal(restore(fs, sv->buf, sv->len, err), 0);
	/* The node id and the handle answer. */
	struct fuse_attr attr;
	assert_int_equal(fx_getattr(f, sv->nodeid, &attr), 0);
	assert_int_equal(attr.size, 4 * PAGE);
	char got[4];
	assert_int_equal(fx_read(f, sv->fh, 2 * PAGE, sizeof(got), got), sizeof(got));
	assert_memory_equal(got, "cccc", sizeof(got));
	/* The mappings are in the window, the writable one the file's. */
	assert_int_equal(fs->dax.nr_maps, 2);
	assert_int_equal(fs->dax.base[0], 'a');
	assert_int_equal(fs->dax.base[PAGE], 'b');
	assert_int_equal(fs->dax.base[MAP_AT], 'b');
	assert_int_equal(fs->dax.base[MAP_AT + 2 * PAGE - 1], 'c');
	fs->dax.base[MAP_AT + 5] = 'W';
	int fd = open(sv->s.path, O_RDONLY | O_CLOEXEC);
	char c;
	assert_int_equal(pread(fd, &c, 1, PAGE + 5), 1);
	assert_int_equal(c, 'W');
	close(fd);
	/* And the guest goes on with them: REMOVEMAPPING, RELEASE. */
	struct fuse_removemapping_in rm = {.count = 1};
	struct fuse_removemapping_one one = {.moffset = MAP_AT, .len = 2 * PAGE};
	req_begin(FUSE_REMOVEMAPPING, sv->nodeid);
	req_add(&rm, sizeof(rm));
	req_add(&one, sizeof(one));
	assert_int_equal(req_send(f), 0);
	assert_int_equal(fs->dax.nr_maps, 1);
	assert_int_equal(fx_release(f, sv->fh), 0);
}

/* A state cut anywhere is refused, leaving the device as new: the same
 * device then takes the whole state. */
static void test_cut_state_refused(void **state)
{
	struct saved *sv = *state;
	struct virtio_fs *fs = &sv->fs;
	char err[256];
	for (size_t cut = 0; cut < sv->len; cut++) {
		err[0] = '\0';
		assert_true(restore(fs, sv->buf, cut, err) < 0);
		assert_true(err[0] != '\0' && !strchr(err, '\n'));
		assert_int_equal(fuse_server_inode_count(fs->server), 1);
		assert_int_equal(fuse_server_handle_count(fs->server), 0);
		assert_int_equal(fs->dax.nr_maps, 0);
		assert_int_equal(fs->dax.base[0], 0);
	}
	assert_int_equal(restore(fs, sv->buf, sv->len, err), 0);
	assert_int_equal(fs->dax.nr_maps, 2);

	/* A device whose window is not the saved one's. */
	struct virtio_fs other;
	struct fuse_server_config cfg = {.root = sv->s.root, .cache = FUSE_CACHE_AUTO};
	assert_int_equal(virtio_fs_create(&other, "t", &cfg, 1, 2 * WINDOW, 64), 0);
	assert_int_equal(restore(&other, sv->buf, sv->len, err), -EBADMSG);
	assert_int_equal(fuse_server_inode_count(other.server), 1);
	device_destroy(&other);
}

/* The file gone since the save: its node answers ESTALE, and its ranges
 * of the window stay scratch memory. */
static void test_vanished_file_leaves_its_range_unmapped(void **state)
{
	struct saved *sv = *state;
	struct virtio_fs *fs = &sv->fs;
	struct fx *f = &sv->f;
	assert_int_equal(unlink(sv->s.path), 0);
	char err[256];
	assert_int_equal(restore(fs, sv->buf, sv->len, err), 0);
	struct fuse_attr attr;
	assert_int_equal(fx_getattr(f, sv->nodeid, &attr), -ESTALE);
	assert_int_equal(fs->dax.nr_maps, 0);
	assert_int_equal(fs->dax.base[0], 0);
	assert_int_equal(fs->dax.base[MAP_AT], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_restored_device_goes_on, saved_setup,
						saved_teardown),
		cmocka_unit_test_setup_teardown(test_cut_state_refused, saved_setup,
						saved_teardown),
		cmocka_unit_test_setup_teardown(test_vanished_file_leaves_its_range_unmapped,
						saved_setup, saved_teardown),
	};
	return cmocka_run_group_tests_name("virtio_fs_state", tests, NULL, NULL);
}
