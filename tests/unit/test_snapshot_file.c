/* Unit tests for core/snapshot_file: what is written reads back whole,
 * and a file cut short, changed, or made by another fsvm is refused with
 * a line that names the part. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/snapshot_file.h"

#define PRODUCER "fsvm test"

static unsigned char *made(size_t *len)
{
	struct snapshot_writer w;
	snapshot_writer_init(&w, PRODUCER, 1u << 30);
	snapshot_add(&w, "vcpu.0", "registers", 9);
	snapshot_add(&w, "empty", "", 0);
	unsigned char big[5000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	snapshot_add(&w, "fs.root", big, sizeof(big));
	assert_int_equal(w.out.err, 0);
	/* What snapshot_write puts in the file: the header finished. */
	char dir[] = "/tmp/test_snapshot_file.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(snapshot_write(&w, dfd, "state"), 0);
	snapshot_writer_fini(&w);
	int fd = openat(dfd, "state", O_RDONLY);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	unsigned char *buf = malloc(*len);
	assert_int_equal(read(fd, buf, *len), (ssize_t)*len);
	close(fd);
	unlinkat(dfd, "state", 0);
	close(dfd);
	rmdir(dir);
	return buf;
}

static int parse_copy(const unsigned char *buf, size_t len, char *err, size_t errlen)
{
	unsigned char *copy = malloc(len ? len : 1);
	memcpy(copy, buf, len);
	struct snapshot s;
	int ret = snapshot_parse(&s, copy, len, PRODUCER, err, errlen);
	if (ret)
		free(copy);
	else
		snapshot_fini(&s);
	return ret;
}

static void test_round_trip(void **state)
{
	(void)state;
	size_t len;
	unsigned char *buf = made(&len);
	struct snapshot s;
	char err[256] = "";
	assert_int_equal(snapshot_parse(&s, buf, len, PRODUCER, err, sizeof(err)), 0);
	assert_int_equal(s.count, 3);
	assert_int_equal(s.memory_size, 1u << 30);
	const struct snapshot_section *v = snapshot_find(&s, "vcpu.0");
	assert_non_null(v);
	assert_int_equal(v->len, 9);
	assert_memory_equal(v->data, "registers", 9);
	assert_int_equal(snapshot_find(&s, "empty")->len, 0);
	const struct snapshot_section *f = snapshot_find(&s, "fs.root");
	assert_int_equal(f->len, 5000);
	assert_int_equal(f->data[4999], (unsigned char)(4999 * 7));
	assert_null(snapshot_find(&s, "vcpu.1"));
	snapshot_fini(&s);
}

/* Every length short of the whole file is refused, and so is one more byte. */
static void test_cut_short(void **state)
{
	(void)state;
	size_t len;
	unsigned char *buf = made(&len);
	char err[256];
	for (size_t n = 0; n < len; n++) {
		err[0] = 0;
		assert_int_equal(parse_copy(buf, n, err, sizeof(err)), -EBADMSG);
		assert_true(strncmp(err, "state: ", 7) == 0);
	}
	unsigned char *longer = calloc(1, len + 8);
	memcpy(longer, buf, len);
	assert_int_equal(parse_copy(longer, len + 8, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "state: 8 bytes after its last section");
	free(longer);
	free(buf);
}

/* Any one byte changed is caught: by a checksum or a check of its own. */
static void test_every_byte_flipped(void **state)
{
	(void)state;
	size_t len;
	unsigned char *buf = made(&len);
	char err[256];
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0x10;
		int ret = parse_copy(buf, len, err, sizeof(err));
		if (!(ret == -EBADMSG || ret == -EPROTO))
			fail_msg("byte %zu of %zu changed: %d", i, len, ret);
		buf[i] ^= 0x10;
	}
	/* A section's data changed: its name in the line. */
	buf[len - 1] ^= 1;
	assert_int_equal(parse_copy(buf, len, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "state: section fs.root: its checksum is wrong");
	free(buf);
}

static void test_other_producer_or_format(void **state)
{
	(void)state;
	size_t len;
	unsigned char *buf = made(&len);
	struct snapshot s;
	char err[256];
	unsigned char *copy = malloc(len);
	memcpy(copy, buf, len);
	assert_int_equal(snapshot_parse(&s, copy, len, "fsvm 2.0", err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "state: made by 'fsvm test', this is 'fsvm 2.0'");
	free(copy);
	memcpy(buf, "NOTASNAP", 8);
	assert_int_equal(parse_copy(buf, len, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "state: not an fsvm snapshot (no FSVMSNAP at its start)");
	free(buf);
}

static void test_writer_refuses(void **state)
{
	(void)state;
	struct snapshot_writer w;
	snapshot_writer_init(&w, PRODUCER, 0);
	snapshot_add(&w, "a", "x", 1);
	snapshot_add(&w, "a", "y", 1);
	assert_int_equal(w.out.err, -EINVAL); /* a name twice */
	snapshot_writer_fini(&w);
	snapshot_writer_init(&w, PRODUCER, 0);
	snapshot_add(&w, "bad/name", "x", 1);
	assert_int_equal(w.out.err, -EINVAL);
	assert_int_equal(snapshot_write(&w, AT_FDCWD, "unused"), -EINVAL);
	snapshot_writer_fini(&w);
	snapshot_writer_init(&w, "a producer name longer than the header keeps", 0);
	assert_int_equal(w.out.err, -ENAMETOOLONG);
	snapshot_writer_fini(&w);
}

static void test_load_refuses_other_files(void **state)
{
	(void)state;
	struct snapshot s;
	char err[256];
	assert_int_equal(snapshot_load(&s, AT_FDCWD, "/nonexistent/state", PRODUCER, err,
				       sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/state: No such file or directory");
	assert_int_equal(snapshot_load(&s, AT_FDCWD, "/dev/null", PRODUCER, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "/dev/null: not a regular file of at most 64 MiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_cut_short),
		cmocka_unit_test(test_every_byte_flipped),
		cmocka_unit_test(test_other_producer_or_format),
		cmocka_unit_test(test_writer_refuses),
		cmocka_unit_test(test_load_refuses_other_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
