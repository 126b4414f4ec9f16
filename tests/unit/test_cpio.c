/* Unit tests for vmm/cpio and vmm/run_spec: newc archives parsed back and checked by cpio(1). */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest/protocol.h"
#include "vmm/cpio.h"
#include "vmm/run_spec.h"

#define NEWC_HEADER_LEN 110
#define NEWC_FIELDS 13
#define MAX_ENTRIES 64
#define TRAILER "TRAILER!!!"

enum { F_INO, F_MODE, F_UID, F_GID, F_NLINK, F_MTIME, F_FILESIZE, F_DEVMAJOR,
       F_DEVMINOR, F_RDEVMAJOR, F_RDEVMINOR, F_NAMESIZE, F_CHECK };

struct entry {
	const char *name; /* points into the archive */
	unsigned long field[NEWC_FIELDS];
	const char *data;
};

struct archive {
	struct entry e[MAX_ENTRIES];
	size_t n; /* entries before the trailer */
};

static const char shell_argv_packed[] = "sh\0-c\0echo 'a b' \"q\"";
static char *const shell_argv[] = {"sh", "-c", "echo 'a b' \"q\""};

static unsigned long hex8(const char *p)
{
	unsigned long v = 0;
	for (int i = 0; i < 8; i++) {
		assert_true(isxdigit((unsigned char)p[i]));
		v = v * 16 + (unsigned long)(isdigit((unsigned char)p[i]) ?
				p[i] - '0' : toupper((unsigned char)p[i]) - 'A' + 10);
	}
	return v;
}

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static void expect_zero_padding(const char *buf, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		assert_int_equal(buf[i], 0);
}

/* Parses one header at *off; returns true for the trailer. */
static bool parse_entry(const char *buf, size_t len, size_t *off,
			struct entry *e)
{
	size_t at = *off;
	assert_true(at + NEWC_HEADER_LEN <= len);
	assert_memory_equal(buf + at, "070701", 6);
	for (int f = 0; f < NEWC_FIELDS; f++)
		e->field[f] = hex8(buf + at + 6 + 8 * f);
	size_t namesize = e->field[F_NAMESIZE];
	size_t name_at = at + NEWC_HEADER_LEN;
	assert_true(namesize >= 2 && name_at + namesize <= len);
	e->name = buf + name_at;
	assert_int_equal(e->name[namesize - 1], '\0');
	assert_int_equal(strlen(e->name), namesize - 1);
	size_t data_at = align4(name_at + namesize);
	expect_zero_padding(buf, name_at + namesize, data_at);
	size_t end = data_at + e->field[F_FILESIZE];
	assert_true(align4(end) <= len);
	e->data = buf + data_at;
	expect_zero_padding(buf, end, align4(end));
	assert_int_equal(e->field[F_CHECK], 0); /* newc: no checksum */
	*off = align4(end);
	return !strcmp(e->name, TRAILER);
}

/* Parses a whole archive: it must end exactly after the trailer. */
static void parse_archive(const struct cpio_buf *b, struct archive *a)
{
	size_t off = 0;
	struct entry trailer;
	a->n = 0;
	assert_int_equal(b->len % 4, 0);
	for (;;) {
		assert_true(a->n < MAX_ENTRIES);
		if (parse_entry(b->data, b->len, &off, &a->e[a->n]))
			break;
		a->n++;
	}
	trailer = a->e[a->n];
	assert_int_equal(trailer.field[F_FILESIZE], 0);
	assert_int_equal(off, b->len);
}

static const struct entry *find(const struct archive *a, const char *name)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->e[i].name, name))
			return &a->e[i];
	return NULL;
}

static void expect_names(const struct archive *a, const char *const *names,
			 size_t n)
{
	assert_int_equal(a->n, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(a->e[i].name, names[i]);
}

static void expect_file(const struct archive *a, const char *name,
			const void *data, size_t len)
{
	const struct entry *e = find(a, name);
	assert_non_null(e);
	assert_int_equal(e->field[F_MODE], S_IFREG | 0644);
	assert_int_equal(e->field[F_FILESIZE], len);
	assert_int_equal(e->field[F_NLINK], 1);
	assert_memory_equal(e->data, data, len);
}

static void build_spec(const struct run_spec *spec, struct cpio_buf *b,
		       struct archive *a)
{
	*b = (struct cpio_buf){0};
	assert_int_equal(run_spec_build(spec, b), 0);
	parse_archive(b, a);
}

static void test_spec_interactive_command(void **state)
{
	(void)state;
	struct run_spec spec = {.argv = shell_argv, .argc = 3,
				.interactive = true, .rows = 50, .cols = 132};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	/* The signals file: the terminal's new sizes come that way. */
	expect_names(&a, (const char *const[]){GUEST_SPEC_DIR, GUEST_SPEC_ARGV,
					       GUEST_SPEC_SIGNALS, GUEST_SPEC_TTY}, 4);
	assert_string_equal(GUEST_SPEC_ARGV, "fsvm/argv");
	assert_int_equal(a.e[0].field[F_MODE], S_IFDIR | 0755);
	assert_int_equal(a.e[0].field[F_FILESIZE], 0);
	expect_file(&a, "fsvm/argv", shell_argv_packed,
		    sizeof(shell_argv_packed));
	expect_file(&a, "fsvm/tty", "50 132", 6); /* the terminal's size */
	/* Distinct inodes, or the kernel would hard-link the entries. */
	assert_int_not_equal(a.e[0].field[F_INO], a.e[1].field[F_INO]);
	assert_int_not_equal(a.e[1].field[F_INO], a.e[2].field[F_INO]);
	cpio_free(&b);
}

static void test_spec_without_argv(void **state)
{
	(void)state;
	struct run_spec spec = {.argc = 0, .interactive = true};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_names(&a, (const char *const[]){"fsvm", "fsvm/signals", "fsvm/tty"}, 3);
	expect_file(&a, "fsvm/tty", "", 0); /* size unknown */
	cpio_free(&b);
}

/* A streamed stdin is one marker file; without one there is none. */
static void test_spec_stdin_stream(void **state)
{
	(void)state;
	struct run_spec spec = {.argv = shell_argv, .argc = 3, .stdin_stream = true};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_names(&a, (const char *const[]){"fsvm", GUEST_SPEC_ARGV,
					       GUEST_SPEC_STDIN}, 3);
	expect_file(&a, GUEST_SPEC_STDIN, "1", 1);
	cpio_free(&b);
	spec.stdin_stream = false;
	build_spec(&spec, &b, &a);
	assert_null(find(&a, GUEST_SPEC_STDIN));
	cpio_free(&b);
}

static void test_spec_not_interactive(void **state)
{
	(void)state;
	struct run_spec spec = {.argv = shell_argv, .argc = 1};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_names(&a, (const char *const[]){"fsvm", "fsvm/argv"}, 2);
	expect_file(&a, "fsvm/argv", "sh", 3);
	cpio_free(&b);
}

static void test_spec_empty_argument_kept(void **state)
{
	(void)state;
	char *const argv[] = {"printf", "", "x"};
	struct run_spec spec = {.argv = argv, .argc = 3};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_file(&a, "fsvm/argv", "printf\0\0x", 10);
	cpio_free(&b);
}

static void test_spec_cwd_and_mounts(void **state)
{
	(void)state;
	const struct run_spec_mount mounts[] = {
		{GUEST_ROOT_TAG, GUEST_MOUNT_OVERLAY, "/"},
		{"share1", GUEST_MOUNT_RO, "/data x"},
	};
	struct run_spec spec = {.cwd = "/home/u v", .mounts = mounts,
				.nr_mounts = 2};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_names(&a, (const char *const[]){"fsvm", GUEST_SPEC_CWD,
					       GUEST_SPEC_MOUNTS}, 3);
	expect_file(&a, GUEST_SPEC_CWD, "/home/u v", 9); /* no NUL */
	static const char packed[] = "root\0overlay\0/\0share1\0ro\0/data x";
	expect_file(&a, GUEST_SPEC_MOUNTS, packed, sizeof(packed));
	cpio_free(&b);
}

static void test_spec_env_user_and_required_cwd(void **state)
{
	(void)state;
	const char *const env[] = {"A=1", "B=x y\nz", "C="};
	struct run_spec spec = {.cwd = "/w", .cwd_required = true, .env = env,
				.nr_env = 3, .user = true, .uid = 1000,
				.gid = 100, .home = "/home/u", .name = "u"};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_names(&a, (const char *const[]){"fsvm", GUEST_SPEC_CWD,
					       GUEST_SPEC_CWD_REQUIRED,
					       GUEST_SPEC_ENV, GUEST_SPEC_USER},
		     5);
	static const char packed_env[] = "A=1\0B=x y\nz\0C=";
	expect_file(&a, GUEST_SPEC_ENV, packed_env, sizeof(packed_env));
	static const char packed_user[] = "1000\0" "100\0/home/u\0u";
	expect_file(&a, GUEST_SPEC_USER, packed_user, sizeof(packed_user));
	cpio_free(&b);
}

/* A container's job after fsvm run's: its user (no home or name: the
 * new root's passwd has them), host name, own mounts (four fields each),
 * the copies of the host files it binds, masked and read-only paths, the
 * process's fields and, last, that signals are forwarded. */
static void test_spec_container(void **state)
{
	(void)state;
	/* A host file's bytes as they are, a NUL among them. */
	char host_file[] = "/tmp/fsvm-test-cpio-file-XXXXXX";
	static const char hosts[] = "127.0.0.1 box\n\0::1 box\n";
	int fd = mkstemp(host_file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, hosts, sizeof(hosts)), (ssize_t)sizeof(hosts));
	close(fd);
	const char *fsmounts[] = {
		"proc", "proc", "/proc", "",
		GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "0", "/etc/hosts", "ro",
		GUEST_FSMOUNT_SHARE, "share0", "/data", "rw,nosuid",
	};
	const char *files[] = {host_file};
	const char *masked[] = {"/proc/kcore"};
	const char *readonly[] = {"/proc/sys", "/proc/bus"};
	const char *process[] = {"umask=22", "env=exact"};
	struct container_job job = {
		.hostname = "box", .uid = 1000, .gid = 100,
		.fsmounts = fsmounts, .nr_fsmounts = 3,
		.files = files, .nr_files = 1,
		.masked = masked, .nr_masked = 1,
		.readonly = readonly, .nr_readonly = 2,
		.process = process, .nr_process = 2,
		.forward_signals = true,
	};
	const struct run_spec_mount root[] = {{GUEST_ROOT_TAG, GUEST_MOUNT_RW, "/"}};
	struct run_spec spec = {.argv = shell_argv, .argc = 1, .cwd = "/",
				.mounts = root, .nr_mounts = 1, .container = &job};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	unlink(host_file);
	expect_names(&a, (const char *const[]){
		"fsvm", GUEST_SPEC_ARGV, GUEST_SPEC_SIGNALS, GUEST_SPEC_CWD,
		GUEST_SPEC_MOUNTS, GUEST_SPEC_USER, GUEST_SPEC_HOSTNAME,
		GUEST_SPEC_FSMOUNTS, GUEST_SPEC_FILES, GUEST_SPEC_FILES "0",
		GUEST_SPEC_MASKED, GUEST_SPEC_READONLY, GUEST_SPEC_PROCESS}, 13);
	static const char user[] = "1000\0" "100\0\0";
	expect_file(&a, GUEST_SPEC_USER, user, sizeof(user)); /* "uid\0gid\0\0\0" */
	expect_file(&a, GUEST_SPEC_HOSTNAME, "box", 3);     /* no NUL */
	static const char packed_fsmounts[] =
		"proc\0proc\0/proc\0\0"
		"bind\0fsvm/files/0\0/etc/hosts\0ro\0"
		"virtiofs\0share0\0/data\0rw,nosuid";
	expect_file(&a, GUEST_SPEC_FSMOUNTS, packed_fsmounts, sizeof(packed_fsmounts));
	const struct entry *d = find(&a, GUEST_SPEC_FILES);
	assert_non_null(d);
	assert_int_equal(d->field[F_MODE], S_IFDIR | 0755);
	assert_int_equal(d->field[F_FILESIZE], 0);
	expect_file(&a, GUEST_SPEC_FILES "0", hosts, sizeof(hosts));
	expect_file(&a, GUEST_SPEC_MASKED, "/proc/kcore", 12);
	static const char packed_readonly[] = "/proc/sys\0/proc/bus";
	expect_file(&a, GUEST_SPEC_READONLY, packed_readonly, sizeof(packed_readonly));
	static const char packed_process[] = "umask=22\0env=exact";
	expect_file(&a, GUEST_SPEC_PROCESS, packed_process, sizeof(packed_process));
	expect_file(&a, GUEST_SPEC_SIGNALS, "1", 1);
	/* The root alone in the shares' list: the rest are fsmounts. */
	static const char packed_root[] = "root\0rw\0/";
	expect_file(&a, GUEST_SPEC_MOUNTS, packed_root, sizeof(packed_root));
	cpio_free(&b);
}

/* The least container: the mount list is there, empty (the new root
 * gets none of the init's own), and nothing else is. */
static void test_spec_container_minimal(void **state)
{
	(void)state;
	struct container_job job = {.uid = 0, .gid = 0};
	struct run_spec spec = {.argv = shell_argv, .argc = 1, .container = &job};
	struct cpio_buf b;
	struct archive a;
	build_spec(&spec, &b, &a);
	expect_names(&a, (const char *const[]){"fsvm", GUEST_SPEC_ARGV,
					       GUEST_SPEC_USER, GUEST_SPEC_FSMOUNTS}, 4);
	static const char user[] = "0\0" "0\0\0";
	expect_file(&a, GUEST_SPEC_USER, user, sizeof(user));
	expect_file(&a, GUEST_SPEC_FSMOUNTS, "", 0);
	assert_null(find(&a, GUEST_SPEC_SIGNALS));
	assert_null(find(&a, GUEST_SPEC_HOSTNAME));
	cpio_free(&b);
}

/* A file to bind that cannot be read fails the build. */
static void test_spec_container_missing_file(void **state)
{
	(void)state;
	const char *files[] = {"/nonexistent/fsvm-test-hosts"};
	struct container_job job = {.files = files, .nr_files = 1};
	struct run_spec spec = {.argv = shell_argv, .argc = 1, .container = &job};
	struct cpio_buf b = {0};
	assert_int_equal(run_spec_build(&spec, &b), -ENOENT);
	cpio_free(&b);
}

/* Runs a shell command on the archive in a temporary file; returns its
 * output (at most size - 1 bytes) and length. */
static size_t run_on_archive(const struct cpio_buf *b, const char *cmd_fmt,
			     char *out, size_t size)
{
	char path[] = "/tmp/fsvm-test-cpio-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b->data, b->len), (ssize_t)b->len);
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), cmd_fmt, path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, size - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	unlink(path);
	assert_int_equal(status, 0);
	return n;
}

static void test_spec_accepted_by_cpio_tool(void **state)
{
	(void)state;
	struct run_spec spec = {.argv = shell_argv, .argc = 3,
				.interactive = true, .rows = 50, .cols = 132};
	struct cpio_buf b = {0};
	assert_int_equal(run_spec_build(&spec, &b), 0);
	char out[256];
	run_on_archive(&b, "cpio -it --quiet < %s", out, sizeof(out));
	assert_string_equal(out, "fsvm\nfsvm/argv\nfsvm/signals\nfsvm/tty\n");
	size_t n = run_on_archive(&b, "cpio -i --quiet --to-stdout fsvm/argv < %s",
				  out, sizeof(out));
	assert_int_equal(n, sizeof(shell_argv_packed));
	assert_memory_equal(out, shell_argv_packed, n);
	cpio_free(&b);
}

/* Every name length and data length modulo 4, so every padding case. */
static void test_cpio_padding(void **state)
{
	(void)state;
	static const char data[] = "0123456789";
	struct cpio_buf b = {0};
	char names[8][16];
	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "%.*s", i + 1, "abcdefgh");
		assert_int_equal(cpio_add(&b, names[i], S_IFREG | 0600, data,
					  (size_t)i), 0);
		assert_int_equal(b.len % 4, 0);
	}
	assert_int_equal(cpio_finish(&b), 0);
	struct archive a;
	parse_archive(&b, &a);
	assert_int_equal(a.n, 8);
	for (int i = 0; i < 8; i++) {
		assert_string_equal(a.e[i].name, names[i]);
		assert_int_equal(a.e[i].field[F_MODE], S_IFREG | 0600);
		assert_int_equal(a.e[i].field[F_FILESIZE], i);
		assert_memory_equal(a.e[i].data, data, (size_t)i);
	}
	cpio_free(&b);
}

static void test_cpio_large_entry_grows_buffer(void **state)
{
	(void)state;
	const size_t len = 100003;
	char *data = malloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)(i * 13);
	struct cpio_buf b = {0};
	assert_int_equal(cpio_add(&b, "big", S_IFREG | 0644, data, len), 0);
	assert_int_equal(cpio_add(&b, "after", S_IFREG | 0644, "x", 1), 0);
	assert_int_equal(cpio_finish(&b), 0);
	assert_true(b.cap >= b.len);
	struct archive a;
	parse_archive(&b, &a);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.e[0].field[F_FILESIZE], len);
	assert_memory_equal(a.e[0].data, data, len);
	assert_memory_equal(a.e[1].data, "x", 1);
	free(data);
	cpio_free(&b);
}

static void test_cpio_free_resets(void **state)
{
	(void)state;
	struct cpio_buf b = {0};
	assert_int_equal(cpio_add(&b, "x", S_IFDIR | 0755, NULL, 0), 0);
	assert_non_null(b.data);
	cpio_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	cpio_free(&b); /* twice is harmless */
}

int main(void)
{
	const struct CMUnitTest cpio[] = {
		cmocka_unit_test(test_spec_interactive_command),
		cmocka_unit_test(test_spec_without_argv),
		cmocka_unit_test(test_spec_stdin_stream),
		cmocka_unit_test(test_spec_not_interactive),
		cmocka_unit_test(test_spec_empty_argument_kept),
		cmocka_unit_test(test_spec_cwd_and_mounts),
		cmocka_unit_test(test_spec_env_user_and_required_cwd),
		cmocka_unit_test(test_spec_container),
		cmocka_unit_test(test_spec_container_minimal),
		cmocka_unit_test(test_spec_container_missing_file),
		cmocka_unit_test(test_spec_accepted_by_cpio_tool),
		cmocka_unit_test(test_cpio_padding),
		cmocka_unit_test(test_cpio_large_entry_grows_buffer),
		cmocka_unit_test(test_cpio_free_resets),
	};
	return cmocka_run_group_tests(cpio, NULL, NULL);
}
