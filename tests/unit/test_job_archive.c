/* Unit tests for guest/job_archive.c: a restored VM's job, archived as
 * vmm/cpio.c writes it, unpacked under a folder; anything else refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest/job_archive.h"
#include "vmm/cpio.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_job_archive.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void read_back(const char *name, char *buf, size_t size)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* fsvm's job: a folder, files in it and below, an empty one. */
static void job(struct cpio_buf *b)
{
	assert_int_equal(cpio_add(b, "fsvm", S_IFDIR | 0755, NULL, 0), 0);
	assert_int_equal(cpio_add(b, "fsvm/argv", S_IFREG | 0644, "cat\0/x\0", 7), 0);
	assert_int_equal(cpio_add(b, "fsvm/deep/cwd", S_IFREG | 0644, "/proj", 5), 0);
	assert_int_equal(cpio_add(b, "fsvm/cwd-required", S_IFREG | 0644, NULL, 0), 0);
	assert_int_equal(cpio_finish(b), 0);
}

static void test_unpacks_the_job(void **state)
{
	(void)state;
	struct cpio_buf b = {0};
	job(&b);
	assert_int_equal(job_archive_unpack(b.data, b.len, dir), 0);
	char buf[64];
	read_back("fsvm/argv", buf, sizeof(buf));
	assert_memory_equal(buf, "cat\0/x\0", 7);
	read_back("fsvm/deep/cwd", buf, sizeof(buf));
	assert_string_equal(buf, "/proj");
	read_back("fsvm/cwd-required", buf, sizeof(buf));
	assert_string_equal(buf, "");
	cpio_free(&b);
}

/* Every cut of a good archive is refused, before or after its files. */
static void test_every_cut_refused(void **state)
{
	(void)state;
	struct cpio_buf b = {0};
	job(&b);
	for (size_t len = 0; len < b.len; len++) {
		teardown(NULL);
		assert_int_equal(mkdir(dir, 0700), 0);
		assert_int_equal(job_archive_unpack(b.data, len, dir), -1);
	}
	cpio_free(&b);
}

static void expect_refused(const char *name, mode_t mode, const char *data,
			   size_t len)
{
	struct cpio_buf b = {0};
	assert_int_equal(cpio_add(&b, name, mode, data, len), 0);
	assert_int_equal(cpio_finish(&b), 0);
	assert_int_equal(job_archive_unpack(b.data, b.len, dir), -1);
	cpio_free(&b);
}

static void test_names_and_kinds_refused(void **state)
{
	(void)state;
	expect_refused("../escape", S_IFREG | 0644, "x", 1);
	expect_refused("fsvm/../../escape", S_IFREG | 0644, "x", 1);
	expect_refused("/etc/passwd", S_IFREG | 0644, "x", 1);
	expect_refused("", S_IFREG | 0644, "x", 1);
	expect_refused("a//b", S_IFREG | 0644, "x", 1);
	expect_refused("./a", S_IFREG | 0644, "x", 1);
	expect_refused("link", S_IFLNK | 0777, "/etc", 4);
	expect_refused("dev", S_IFCHR | 0600, NULL, 0);
	expect_refused("fifo", S_IFIFO | 0600, NULL, 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/../escape", dir);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_bad_headers_refused(void **state)
{
	(void)state;
	struct cpio_buf b = {0};
	job(&b);
	char *copy = malloc(b.len);
	assert_non_null(copy);
	/* Not hexadecimal: the mode field of the first entry. */
	memcpy(copy, b.data, b.len);
	copy[6 + 8 + 3] = 'G';
	assert_int_equal(job_archive_unpack(copy, b.len, dir), -1);
	/* A file size past the archive's end: the second entry's. */
	memcpy(copy, b.data, b.len);
	char *second = memmem(copy + 6, b.len - 6, "070701", 6);
	assert_non_null(second);
	memcpy(second + 6 + 6 * 8, "7FFFFFFF", 8);
	assert_int_equal(job_archive_unpack(copy, b.len, dir), -1);
	/* A name size past the end, and one whose last byte is not its NUL. */
	memcpy(copy, b.data, b.len);
	memcpy(copy + 6 + 11 * 8, "FFFFFFFF", 8);
	assert_int_equal(job_archive_unpack(copy, b.len, dir), -1);
	memcpy(copy, b.data, b.len);
	memcpy(copy + 6 + 11 * 8, "00000002", 8); /* "fs": no NUL */
	assert_int_equal(job_archive_unpack(copy, b.len, dir), -1);
	/* No trailer. */
	assert_int_equal(job_archive_unpack(b.data, b.len - 124, dir), -1);
	free(copy);
	cpio_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unpacks_the_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_cut_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_and_kinds_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_headers_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
