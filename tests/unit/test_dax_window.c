/* Tests for the DAX window: reservation, file mappings in place, bounds. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/dax_window.h"

#define WINDOW (16ULL << 20)
#define PAGE 4096ULL
#define MAX_MAPS 64

static int temp_file(size_t len, char fill, int flags)
{
	char path[] = "/tmp/dax-test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	char *buf = malloc(len);
	memset(buf, fill, len);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	free(buf);
	if (flags != O_RDWR) {
		int ro = open(path, flags);
		close(fd);
		fd = ro;
	}
	unlink(path);
	return fd;
}

/* True if [p, p + len) is a mapping of some file in /proc/self/maps; its
 * permissions ("rw-s") go to perms if not NULL. */
static bool file_mapped_as(const void *p, size_t len, char perms[8])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], found_perms[8];
	bool found = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi,
			   found_perms, &ino) == 4 &&
		    lo <= (uintptr_t)p && (uintptr_t)p + len <= hi && ino) {
			found = true;
			if (perms)
				strcpy(perms, found_perms);
		}
	}
	fclose(f);
	return found;
}

static bool file_mapped(const void *p, size_t len)
{
	return file_mapped_as(p, len, NULL);
}

static void test_create_reserves_without_access(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	assert_non_null(w.base);
	assert_int_equal(w.size, WINDOW);
	assert_false(file_mapped(w.base, PAGE));
	dax_window_destroy(&w);
	assert_int_equal(dax_window_create(&w, 0, MAX_MAPS), -EINVAL);
	assert_int_equal(dax_window_create(&w, PAGE + 1, MAX_MAPS), -EINVAL);
}

static void test_read_mapping_shows_file(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(3 * PAGE, 'r', O_RDONLY);
	assert_int_equal(dax_window_map(&w, PAGE, 2 * PAGE, fd, PAGE, false), 0);
	assert_int_equal(w.base[PAGE], 'r');
	assert_int_equal(w.base[3 * PAGE - 1], 'r');
	assert_true(file_mapped(w.base + PAGE, 2 * PAGE));
	/* A read mapping of a read-only handle cannot become writable. */
	assert_int_equal(dax_window_map(&w, PAGE, PAGE, fd, 0, true), -EACCES);
	close(fd);
	dax_window_destroy(&w);
}

static void test_write_mapping_reaches_file(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(2 * PAGE, 'a', O_RDWR);
	assert_int_equal(dax_window_map(&w, 0, 2 * PAGE, fd, 0, true), 0);
	memcpy(w.base + PAGE + 10, "DAX", 3);
	char buf[3];
	assert_int_equal(pread(fd, buf, 3, (off_t)PAGE + 10), 3);
	assert_memory_equal(buf, "DAX", 3);
	close(fd);
	dax_window_destroy(&w);
}

static void test_remap_in_place_and_unmap(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int a = temp_file(PAGE, 'a', O_RDONLY), b = temp_file(PAGE, 'b', O_RDONLY);
	assert_int_equal(dax_window_map(&w, 8 * PAGE, PAGE, a, 0, false), 0);
	assert_int_equal(w.base[8 * PAGE], 'a');
	assert_int_equal(dax_window_map(&w, 8 * PAGE, PAGE, b, 0, false), 0);
	assert_int_equal(w.base[8 * PAGE], 'b');
	assert_int_equal(dax_window_unmap(&w, 8 * PAGE, PAGE), 0);
	assert_false(file_mapped(w.base + 8 * PAGE, PAGE));
	close(a);
	close(b);
	dax_window_destroy(&w);
}

/* The guest upgrades a read mapping by mapping the range again for write. */
static void test_read_mapping_upgraded_to_write(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(2 * PAGE, 'r', O_RDWR);
	char perms[8];
	assert_int_equal(dax_window_map(&w, 0, 2 * PAGE, fd, 0, false), 0);
	assert_true(file_mapped_as(w.base, 2 * PAGE, perms));
	assert_string_equal(perms, "rw-p"); /* private: see the next test */
	assert_int_equal(dax_window_map(&w, 0, 2 * PAGE, fd, 0, true), 0);
	assert_true(file_mapped_as(w.base, 2 * PAGE, perms));
	assert_string_equal(perms, "rw-s");
	assert_int_equal(w.nr_maps, 1);
	w.base[PAGE] = 'w';
	char c;
	assert_int_equal(pread(fd, &c, 1, (off_t)PAGE), 1);
	assert_int_equal(c, 'w');
	close(fd);
	dax_window_destroy(&w);
}

static void test_bounds_and_alignment(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(PAGE, 'x', O_RDONLY);
	assert_int_equal(dax_window_map(&w, WINDOW, PAGE, fd, 0, false), -EINVAL);
	assert_int_equal(dax_window_map(&w, WINDOW - PAGE, 2 * PAGE, fd, 0, false),
			 -EINVAL);
	assert_int_equal(dax_window_map(&w, UINT64_MAX - PAGE + 1, PAGE, fd, 0,
					false),
			 -EINVAL);
	assert_int_equal(dax_window_map(&w, 0, UINT64_MAX - PAGE + 1, fd, 0,
					false),
			 -EINVAL);
	assert_int_equal(dax_window_map(&w, 0, 0, fd, 0, false), -EINVAL);
	assert_int_equal(dax_window_map(&w, 1, PAGE, fd, 0, false), -EINVAL);
	assert_int_equal(dax_window_map(&w, 0, PAGE + 1, fd, 0, false), -EINVAL);
	assert_int_equal(dax_window_map(&w, 0, PAGE, fd, 1, false), -EINVAL);
	assert_int_equal(dax_window_map(&w, 0, PAGE, fd, UINT64_MAX - PAGE + 1,
					false),
			 -EINVAL);
	assert_int_equal(dax_window_unmap(&w, WINDOW - PAGE, 2 * PAGE), -EINVAL);
	assert_int_equal(dax_window_unmap(&w, 0, 0), -EINVAL);
	assert_int_equal(dax_window_unmap(&w, PAGE / 2, PAGE), -EINVAL);
	/* The whole window, exactly, is fine. */
	assert_int_equal(dax_window_unmap(&w, 0, WINDOW), 0);
	assert_int_equal(dax_window_map(&w, 0, PAGE, -1, 0, false), -EBADF);
	close(fd);
	dax_window_destroy(&w);
}

static void test_records_follow_unmaps(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(8 * PAGE, 'm', O_RDONLY);
	assert_int_equal(dax_window_map(&w, 0, 8 * PAGE, fd, 0, false), 0);
	assert_int_equal(w.nr_maps, 1);
	/* A hole in the middle leaves two records with matching offsets. */
	assert_int_equal(dax_window_unmap(&w, 2 * PAGE, 2 * PAGE), 0);
	assert_int_equal(w.nr_maps, 2);
	uint64_t total = 0;
	for (unsigned int i = 0; i < w.nr_maps; i++) {
		total += w.maps[i].len;
		assert_int_equal(w.maps[i].foffset, w.maps[i].moffset);
	}
	assert_int_equal(total, 6 * PAGE);
	/* Mapping over both pieces replaces them. */
	assert_int_equal(dax_window_map(&w, 0, 8 * PAGE, fd, 0, false), 0);
	assert_int_equal(w.nr_maps, 1);
	assert_int_equal(dax_window_unmap(&w, 0, 8 * PAGE), 0);
	assert_int_equal(w.nr_maps, 0);
	close(fd);
	dax_window_destroy(&w);
}

static void test_repair_after_host_truncate(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(4 * PAGE, 't', O_RDWR);
	assert_int_equal(dax_window_map(&w, 0, 4 * PAGE, fd, 0, false), 0);
	assert_int_equal(dax_window_repair(&w), 0); /* nothing to do yet */
	assert_int_equal(ftruncate(fd, (off_t)PAGE + 1), 0);
	assert_int_equal(dax_window_repair(&w), 1);
	/* Two pages of file remain mapped; past them, zeros, not SIGBUS. */
	assert_int_equal(w.base[0], 't');
	assert_int_equal(w.base[2 * PAGE], 0);
	assert_int_equal(w.base[4 * PAGE - 1], 0);
	assert_int_equal(w.nr_maps, 1);
	assert_int_equal(dax_window_repair(&w), 0);
	close(fd);
	dax_window_destroy(&w);
}

/* The watch notices a truncation by itself, and the file's pages come back
 * when it grows again. */
static void test_watch_follows_truncate_and_regrowth(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(4 * PAGE, 't', O_RDWR);
	assert_int_equal(dax_window_map(&w, PAGE, 4 * PAGE, fd, 0, false), 0);
	assert_int_equal(dax_window_watch_events(&w), 0); /* nothing pending */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(dax_window_watch_events(&w), 1);
	assert_int_equal(w.base[PAGE], 0);
	assert_int_equal(w.base[5 * PAGE - 1], 0);
	char page[PAGE];
	memset(page, 'u', sizeof(page));
	for (int i = 0; i < 3; i++)
		assert_int_equal(pwrite(fd, page, PAGE, (off_t)(i * PAGE)),
				 (ssize_t)PAGE);
	assert_int_equal(dax_window_watch_events(&w), 1);
	assert_int_equal(w.base[PAGE], 'u');
	assert_int_equal(w.base[4 * PAGE - 1], 'u');
	assert_int_equal(w.base[4 * PAGE], 0); /* the 4th page: still gone */
	assert_true(file_mapped(w.base + PAGE, 3 * PAGE));
	close(fd);
	dax_window_destroy(&w);
}

/* A guest request that grew the file gives its pages back at once, not
 * when the watch's event is read. */
static void test_file_grown_restores_pages_at_once(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(2 * PAGE, 'g', O_RDWR);
	assert_int_equal(dax_window_map(&w, 0, 2 * PAGE, fd, 0, true), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(dax_window_watch_events(&w), 1);
	assert_true(w.lost_pages);
	char page[PAGE];
	memset(page, 'h', sizeof(page));
	assert_int_equal(pwrite(fd, page, PAGE, 0), (ssize_t)PAGE);
	dax_window_file_grown(&w);
	assert_int_equal(w.base[0], 'h');
	assert_true(w.lost_pages); /* the second page is still gone */
	assert_int_equal(pwrite(fd, page, PAGE, (off_t)PAGE), (ssize_t)PAGE);
	dax_window_file_grown(&w);
	assert_int_equal(w.base[2 * PAGE - 1], 'h');
	assert_false(w.lost_pages);
	assert_int_equal(dax_window_watch_events(&w), 0); /* nothing left */
	close(fd);
	dax_window_destroy(&w);
}

/* Pages past the end when mapped are the guest's to grow into: an
 * extending write must not turn them into zero pages. */
static void test_growth_into_a_mapping_keeps_file_pages(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(PAGE, 'a', O_RDWR);
	assert_int_equal(dax_window_map(&w, 0, 4 * PAGE, fd, 0, true), 0);
	char page[PAGE];
	memset(page, 'b', sizeof(page));
	assert_int_equal(pwrite(fd, page, PAGE, (off_t)PAGE), (ssize_t)PAGE);
	assert_int_equal(dax_window_watch_events(&w), 0);
	assert_int_equal(w.base[PAGE], 'b');
	assert_true(file_mapped(w.base, 4 * PAGE));
	close(fd);
	dax_window_destroy(&w);
}

/* A write mapping gets its blocks when made, so a store into a hole cannot
 * meet a full disk later. */
static void test_write_mapping_allocates_holes(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(0, 0, O_RDWR);
	assert_int_equal(ftruncate(fd, (off_t)(4 * PAGE)), 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_blocks, 0);
	assert_int_equal(dax_window_map(&w, 0, 8 * PAGE, fd, 0, true), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_blocks * 512, 4 * PAGE); /* up to EOF only */
	assert_int_equal(st.st_size, 4 * PAGE);
	close(fd);
	dax_window_destroy(&w);
}

/* The whole window is mapped: msync says ENOMEM for any hole. */
static bool window_whole(const struct dax_window *w)
{
	return msync(w->base, w->size, MS_ASYNC) == 0;
}

/* A file whose ->mmap refuses (any sysfs attribute: ENODEV) fails the
 * mapping and leaves the window as it was: no hole for the VMM's next big
 * allocation (a thread stack, a table) to land in, where the guest would
 * read and write it. */
static void test_failed_mapping_leaves_no_hole(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int ok = temp_file(2 * PAGE, 'k', O_RDONLY);
	assert_int_equal(dax_window_map(&w, 0, 2 * PAGE, ok, 0, false), 0);
	int sysfs = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	assert_true(sysfs >= 0);

	assert_true(dax_window_map(&w, PAGE, PAGE, sysfs, 0, false) < 0);
	assert_true(dax_window_map(&w, 8 * PAGE, 4 * PAGE, sysfs, 0, false) < 0);
	assert_true(window_whole(&w));
	/* What was mapped before still is, and the records say so. */
	assert_int_equal(w.base[PAGE], 'k');
	assert_int_equal(w.nr_maps, 1);

	/* Big anonymous mappings go elsewhere, as they must. */
	for (int i = 0; i < 16; i++) {
		uint8_t *p = mmap(NULL, PAGE << i, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(p != MAP_FAILED);
		assert_true(p + (PAGE << i) <= w.base || p >= w.base + w.size);
		munmap(p, PAGE << i);
	}
	close(sysfs);
	close(ok);
	dax_window_destroy(&w);
}

/* The guest can read and write every window page, mapped or not, so KVM
 * never fails a vCPU on one: stores into unmapped space land in scratch
 * memory, stores into a read-only mapping in the guest's own copy of the
 * page, and neither reaches a file. */
static void test_stray_stores_stay_in_the_window(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(PAGE, 'f', O_RDONLY);

	assert_int_equal(w.base[5 * PAGE], 0);
	w.base[5 * PAGE] = 's';
	assert_int_equal(w.base[5 * PAGE], 's');
	assert_int_equal(dax_window_map(&w, 0, PAGE, fd, 0, false), 0);
	w.base[10] = 'g';
	char c;
	assert_int_equal(pread(fd, &c, 1, 10), 1);
	assert_int_equal(c, 'f');
	/* Removing a mapping gives back fresh scratch pages. */
	assert_int_equal(dax_window_unmap(&w, 0, 8 * PAGE), 0);
	assert_int_equal(w.base[10], 0);
	assert_int_equal(w.base[5 * PAGE], 0);
	close(fd);
	dax_window_destroy(&w);
}

/* A guest that touches a page past the end its file had when mapped (a
 * correct one never does) gets KVM's EFAULT: the repair then makes every
 * such page a zero page, so the vCPU goes on, and growth gives them back. */
static void test_repair_covers_pages_never_in_the_file(void **state)
{
	(void)state;
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	int fd = temp_file(PAGE, 'p', O_RDWR);
	assert_int_equal(dax_window_map(&w, 0, 4 * PAGE, fd, 0, true), 0);
	assert_int_equal(dax_window_repair(&w), 1);
	assert_int_equal(w.base[3 * PAGE], 0); /* no SIGBUS: a zero page */
	assert_int_equal(w.base[0], 'p');
	assert_int_equal(dax_window_repair(&w), 0); /* nothing more to do */
	assert_int_equal(ftruncate(fd, 4 * PAGE), 0);
	assert_int_equal(pwrite(fd, "g", 1, 3 * PAGE), 1);
	dax_window_file_grown(&w);
	assert_int_equal(w.base[3 * PAGE], 'g');
	close(fd);
	dax_window_destroy(&w);
}


/* --- snapshots --- */

/* Two host files by path, keyed 1 and 2, as a snapshot names them; a key
 * set in gone answers ESTALE, one in fail answers fail_err. */
struct files {
	char path[2][32];
	struct stat st[2];
	unsigned int gone, fail;
	int fail_err;
};

static void files_make(struct files *f, size_t len)
{
	*f = (struct files){0};
	for (int i = 0; i < 2; i++) {
		strcpy(f->path[i], "/tmp/dax-state.XXXXXX");
		int fd = mkstemp(f->path[i]);
		assert_true(fd >= 0);
		char *buf = malloc(len);
		for (size_t at = 0; at < len; at++)
			buf[at] = (char)('a' + i * 7 + at / PAGE);
		assert_int_equal(write(fd, buf, len), (ssize_t)len);
		free(buf);
		assert_int_equal(fstat(fd, &f->st[i]), 0);
		close(fd);
	}
}

static void files_remove(struct files *f)
{
	for (int i = 0; i < 2; i++)
		unlink(f->path[i]);
}

static int files_open(struct files *f, unsigned int key, bool writable)
{
	int fd = open(f->path[key - 1], (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static uint64_t key_of(void *opaque, int fd)
{
	struct files *f = opaque;
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	for (int i = 0; i < 2; i++)
		if (st.st_ino == f->st[i].st_ino && st.st_dev == f->st[i].st_dev)
			return (uint64_t)i + 1;
	return 0;
}

static int open_key(void *opaque, uint64_t key, bool writable)
{
	struct files *f = opaque;
	if (key < 1 || key > 2 || (f->gone & (1u << key)))
		return -ESTALE;
	if (f->fail & (1u << key))
		return f->fail_err;
	return files_open(f, (unsigned int)key, writable);
}

/* A window's state, saved into *buf (the caller frees). */
static size_t save(struct dax_window *w, struct files *f, unsigned char **buf)
{
	struct state_out out = {0};
	dax_window_save(w, &out, key_of, f);
	size_t len;
	assert_int_equal(state_out_finish(&out, buf, &len), 0);
	return len;
}

static int restore(struct dax_window *w, struct files *f,
		   const unsigned char *buf, size_t len, char *err)
{
	struct state_in in = state_in(buf, len);
	return dax_window_restore(w, &in, open_key, f, err, 256);
}

/* Nothing mapped, and every page scratch memory reading zeros. */
static void assert_window_new(struct dax_window *w)
{
	assert_int_equal(w->nr_maps, 0);
	assert_true(window_whole(w));
	assert_false(file_mapped(w->base, PAGE));
	assert_false(file_mapped(w->base + 8 * PAGE, PAGE));
	assert_int_equal(w->base[0], 0);
	assert_int_equal(w->base[8 * PAGE], 0);
}

/* The window saved with two files, file 1 read-only at 0 and file 2
 * writable at 8 pages from its second page. */
static size_t save_two(struct files *f, unsigned char **buf)
{
	struct dax_window w;
	assert_int_equal(dax_window_create(&w, WINDOW, MAX_MAPS), 0);
	files_make(f, 4 * PAGE);
	int a = files_open(f, 1, false), b = files_open(f, 2, true);
	assert_int_equal(dax_window_map(&w, 0, 2 * PAGE, a, 0, false), 0);
	assert_int_equal(dax_window_map(&w, 8 * PAGE, 2 * PAGE, b, PAGE, true), 0);
	close(a);
	close(b);
	size_t len = save(&w, f, buf);
	dax_window_destroy(&w);
	return len;
}

/* Each restore test's: the state save_two made and a new window. */
struct saved {
	struct files f;
	unsigned char *buf;
	size_t len;
	struct dax_window w;
};

static int saved_setup(void **state)
{
	static struct saved sv;
	sv.len = save_two(&sv.f, &sv.buf);
	assert_int_equal(dax_window_create(&sv.w, WINDOW, MAX_MAPS), 0);
	*state = &sv;
	return 0;
}

static int saved_teardown(void **state)
{
	struct saved *sv = *state;
	dax_window_destroy(&sv->w);
	free(sv->buf);
	files_remove(&sv->f);
	return 0;
}

static void test_restore_maps_the_saved_files(void **state)
{
	struct saved *sv = *state;
	struct files *f = &sv->f;
	struct dax_window *w = &sv->w;
	char err[256];
	assert_int_equal(restore(w, f, sv->buf, sv->len, err), 0);
	assert_int_equal(w->nr_maps, 2);

	char page[2 * PAGE];
	int a = files_open(f, 1, false), b = files_open(f, 2, true);
	assert_int_equal(pread(a, page, sizeof(page), 0), (ssize_t)sizeof(page));
	assert_memory_equal(w->base, page, sizeof(page));
	assert_int_equal(pread(b, page, sizeof(page), PAGE), (ssize_t)sizeof(page));
	assert_memory_equal(w->base + 8 * PAGE, page, sizeof(page));
	/* The writable one writes the file; the read-only one does not. */
	w->base[8 * PAGE + 3] = 'W';
	w->base[3] = 'R';
	char c;
	assert_int_equal(pread(b, &c, 1, PAGE + 3), 1);
	assert_int_equal(c, 'W');
	assert_int_equal(pread(a, &c, 1, 3), 1);
	assert_int_equal(c, 'a');
	/* And its size is followed, as a new mapping's. */
	assert_int_equal(ftruncate(b, PAGE), 0);
	assert_int_equal(dax_window_watch_events(w), 1);
	assert_int_equal(w->base[8 * PAGE], 0);
	close(a);
	close(b);
}

/* A file gone since the save leaves its range scratch memory; the rest
 * comes back. */
static void test_restore_leaves_a_vanished_file_unmapped(void **state)
{
	struct saved *sv = *state;
	struct files *f = &sv->f;
	struct dax_window *w = &sv->w;
	char err[256];
	unlink(f->path[0]);
	f->gone = 1u << 1;
	assert_int_equal(restore(w, f, sv->buf, sv->len, err), 0);
	assert_int_equal(w->nr_maps, 1);
	assert_false(file_mapped(w->base, PAGE));
	assert_int_equal(w->base[0], 0);
	assert_int_equal(w->base[2 * PAGE - 1], 0);
	assert_int_equal(w->base[8 * PAGE], 'a' + 7 + 1);
	assert_true(window_whole(w));
}

/* A file shorter than when saved: the pages the guest knew and the file
 * no longer has read zeros (no SIGBUS, no EFAULT for KVM), as after the
 * watch's event. */
static void test_restore_follows_a_file_shrunk_since(void **state)
{
	struct saved *sv = *state;
	struct files *f = &sv->f;
	struct dax_window *w = &sv->w;
	char err[256];
	int b = files_open(f, 2, true);
	assert_int_equal(ftruncate(b, 2 * PAGE), 0);
	assert_int_equal(restore(w, f, sv->buf, sv->len, err), 0);
	assert_int_equal(w->base[8 * PAGE], 'a' + 7 + 1);
	assert_int_equal(w->base[9 * PAGE], 0);
	/* Grown back, the file has its pages again. */
	assert_int_equal(pwrite(b, "g", 1, 3 * PAGE), 1);
	dax_window_file_grown(w);
	assert_int_equal(w->base[9 * PAGE], 0); /* the file's new zeros */
	assert_true(file_mapped(w->base + 9 * PAGE, PAGE));
	close(b);
}

static void put_map(struct state_out *o, uint64_t moffset, uint64_t len,
		    uint64_t foffset, uint64_t key, uint8_t writable)
{
	state_put_u64(o, moffset);
	state_put_u64(o, len);
	state_put_u64(o, foffset);
	state_put_u64(o, 4 * PAGE);
	state_put_u64(o, key);
	state_put_u8(o, writable);
}

/* A state made of count and the mappings given, each (moffset, len,
 * foffset, key, writable), restored into w. */
static int restore_made(struct dax_window *w, struct files *f, uint32_t count,
			const uint64_t (*maps)[5], unsigned int n)
{
	struct state_out out = {0};
	state_put_u32(&out, count);
	for (unsigned int i = 0; i < n; i++)
		put_map(&out, maps[i][0], maps[i][1], maps[i][2], maps[i][3],
			(uint8_t)maps[i][4]);
	unsigned char *buf;
	size_t len;
	assert_int_equal(state_out_finish(&out, &buf, &len), 0);
	char err[256];
	int ret = restore(w, f, buf, len, err);
	if (ret)
		assert_true(err[0] != '\0' && !strchr(err, '\n'));
	free(buf);
	return ret;
}

static void test_restore_refuses_hostile_state(void **state)
{
	struct saved *sv = *state;
	struct files *f = &sv->f;
	struct dax_window *w = &sv->w;
	char err[256];

	/* Cut at every length. */
	for (size_t cut = 0; cut < sv->len; cut++) {
		assert_int_equal(restore(w, f, sv->buf, cut, err), -EBADMSG);
		assert_window_new(w);
	}
	const uint64_t two_pages = 2 * PAGE;
	const uint64_t bad[][2][5] = {
		/* overlapping, either order */
		{{0, two_pages, 0, 1, 0}, {PAGE, two_pages, 0, 2, 0}},
		{{8 * PAGE, two_pages, 0, 1, 0}, {0, 9 * PAGE, 0, 2, 0}},
		/* past the window, or wrapping around */
		{{0, PAGE, 0, 1, 0}, {WINDOW - PAGE, two_pages, 0, 2, 0}},
		{{0, PAGE, 0, 1, 0}, {WINDOW, PAGE, 0, 2, 0}},
		{{0, PAGE, 0, 1, 0}, {PAGE, UINT64_MAX - PAGE + 1, 0, 2, 0}},
		/* unaligned, empty, a file offset past any file's */
		{{0, PAGE, 0, 1, 0}, {PAGE + 1, PAGE, 0, 2, 0}},
		{{0, PAGE, 0, 1, 0}, {PAGE, 0, 0, 2, 0}},
		{{0, PAGE, 0, 1, 0}, {PAGE, PAGE, 3, 2, 0}},
		{{0, PAGE, 0, 1, 0}, {PAGE, PAGE, (uint64_t)INT64_MAX & ~(PAGE - 1), 2, 0}},
		/* writable neither 0 nor 1 */
		{{0, PAGE, 0, 1, 0}, {PAGE, PAGE, 0, 2, 2}},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(restore_made(w, f, 2, bad[i], 2), -EBADMSG);
		assert_window_new(w);
	}
	/* More than max_maps, and a count the bytes do not hold. */
	uint64_t many[MAX_MAPS + 1][5];
	for (unsigned int i = 0; i < MAX_MAPS + 1; i++) {
		many[i][0] = i * PAGE;
		many[i][1] = PAGE;
		many[i][2] = 0;
		many[i][3] = 1 + i % 2;
		many[i][4] = 0;
	}
	assert_int_equal(restore_made(w, f, MAX_MAPS + 1, many, MAX_MAPS + 1), -EBADMSG);
	assert_window_new(w);
	assert_int_equal(restore_made(w, f, UINT32_MAX, many, 2), -EBADMSG);
	assert_window_new(w);
	/* max_maps itself fits: an unmap's split can make that many. */
	assert_int_equal(restore_made(w, f, MAX_MAPS, many, MAX_MAPS), 0);
	assert_int_equal(w->nr_maps, MAX_MAPS);
	dax_window_destroy(w);

	/* A failure after some mappings went in takes them out again: the
	 * second file cannot be opened. */
	assert_int_equal(dax_window_create(w, WINDOW, MAX_MAPS), 0);
	f->fail = 1u << 2;
	f->fail_err = -EMFILE;
	assert_int_equal(restore(w, f, sv->buf, sv->len, err), -EMFILE);
	assert_true(err[0] != '\0');
	assert_window_new(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_reserves_without_access),
		cmocka_unit_test(test_read_mapping_shows_file),
		cmocka_unit_test(test_write_mapping_reaches_file),
		cmocka_unit_test(test_remap_in_place_and_unmap),
		cmocka_unit_test(test_read_mapping_upgraded_to_write),
		cmocka_unit_test(test_bounds_and_alignment),
		cmocka_unit_test(test_records_follow_unmaps),
		cmocka_unit_test(test_repair_after_host_truncate),
		cmocka_unit_test(test_watch_follows_truncate_and_regrowth),
		cmocka_unit_test(test_file_grown_restores_pages_at_once),
		cmocka_unit_test(test_growth_into_a_mapping_keeps_file_pages),
		cmocka_unit_test(test_write_mapping_allocates_holes),
		cmocka_unit_test(test_failed_mapping_leaves_no_hole),
		cmocka_unit_test(test_stray_stores_stay_in_the_window),
		cmocka_unit_test(test_repair_covers_pages_never_in_the_file),
		cmocka_unit_test_setup_teardown(test_restore_maps_the_saved_files, saved_setup,
						saved_teardown),
		cmocka_unit_test_setup_teardown(test_restore_leaves_a_vanished_file_unmapped, saved_setup,
						saved_teardown),
		cmocka_unit_test_setup_teardown(test_restore_follows_a_file_shrunk_since, saved_setup,
						saved_teardown),
		cmocka_unit_test_setup_teardown(test_restore_refuses_hostile_state, saved_setup,
						saved_teardown),
	};
	return cmocka_run_group_tests_name("dax_window", tests, NULL, NULL);
}
