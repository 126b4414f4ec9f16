/* Unit tests for vmm/check: what a run would fail on before KVM, each
 * problem named with its reason, all of them, against real files. */
#include <elf.h>
#include <errno.h>
#include <limits.h>
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

#include "vmm/check.h"

static char top[PATH_MAX];
static char path_buf[16][PATH_MAX + 64];
static unsigned int nr_paths;

/* top/rel, kept for the case. */
static const char *at_top(const char *rel)
{
	char *p = path_buf[nr_paths++ % 16];
	snprintf(p, PATH_MAX + 64, "%s/%s", top, rel);
	return p;
}

static const char *put(const char *rel, const void *data, size_t len)
{
	const char *path = at_top(rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

/* The smallest file the board takes as an x86-64 ELF kernel: its header
 * and one program header (the check reads no further). */
static const char *elf_kernel(const char *rel)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph;
	} k = {0};
	memcpy(k.eh.e_ident, ELFMAG, SELFMAG);
	k.eh.e_ident[EI_CLASS] = ELFCLASS64;
	k.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	k.eh.e_type = ET_EXEC;
	k.eh.e_machine = EM_X86_64;
	k.eh.e_phoff = sizeof(k.eh);
	k.eh.e_phentsize = sizeof(k.ph);
	k.eh.e_phnum = 1;
	return put(rel, &k, sizeof(k));
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/fsvm-check.XXXXXX");
	assert_non_null(mkdtemp(top));
	assert_int_equal(mkdir(at_top("share"), 0755), 0);
	nr_paths = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

/* A run of the given kernel and initrd, the root and one share. */
static struct fsvm_config good_config(void)
{
	static struct fsvm_config cfg;
	cfg = (struct fsvm_config){.root = "/", .cpus = 1, .mem = 512ULL << 20,
				   .guest_kernel = "6.12"};
	cfg.kernel = elf_kernel("vmlinux");
	cfg.initrd = put("initrd", "070701", 6);
	cfg.shares[0] = (struct cli_share){.host = at_top("share")};
	cfg.nr_shares = 1;
	return cfg;
}

static void test_good_config_has_no_problem(void **state)
{
	(void)state;
	struct fsvm_config cfg = good_config();
	static struct check c;
	assert_int_equal(check_run(&cfg, &c), 0);
}

/* Every problem, not just the first, each with its reason and line. */
static void test_every_problem_named(void **state)
{
	(void)state;
	struct fsvm_config cfg = good_config();
	cfg.shares[0].host = at_top("no-such-share");
	cfg.root = put("not-a-folder", "x", 1);
	cfg.kernel = at_top("no-such-kernel");
	cfg.initrd = put("text-initrd", "hello, world\n", 13);
	cfg.uid_map[0] = (struct cli_id_map){.guest = 1, .host = 1000, .count = 1};
	cfg.nr_uid_maps = 1;
	cfg.disks[0] = (struct cli_disk){.path = at_top("no-such-disk")};
	cfg.nr_disks = 1;
	static struct check c;
	assert_int_equal(check_run(&cfg, &c), 6);
	static const struct {
		enum exit_reason reason;
		const char *words;
	} want[] = {
		{EXIT_REASON_BAD_IDS, "guest root (0) must be mapped"},
		{EXIT_REASON_BAD_KERNEL, "no-such-kernel: cannot open the kernel"},
		{EXIT_REASON_BAD_KERNEL, "text-initrd: not an initramfs"},
		{EXIT_REASON_BAD_SHARE, "--root: "},
		{EXIT_REASON_BAD_SHARE, "no-such-share (No such file or directory)"},
		{EXIT_REASON_BAD_DISK, "no-such-disk: cannot open it"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(c.problems[i].reason, want[i].reason);
		if (!strstr(c.problems[i].message, want[i].words))
			fail_msg("problem %zu: [%s] does not say [%s]", i,
				 c.problems[i].message, want[i].words);
	}
	assert_non_null(strstr(c.problems[3].message, "not a directory"));
}

/* No guest folder: one problem naming it, not a missing kernel and a
 * missing initramfs as well. */
static void test_missing_guest_folder_once(void **state)
{
	(void)state;
	struct fsvm_config cfg = good_config();
	cfg.kernel = cfg.initrd = NULL;
	cfg.guest_kernel = at_top("no-such-guest");
	static struct check c;
	assert_int_equal(check_run(&cfg, &c), 1);
	assert_int_equal(c.problems[0].reason, EXIT_REASON_BAD_KERNEL);
	assert_non_null(strstr(c.problems[0].message, "no-such-guest"));
	assert_non_null(strstr(c.problems[0].message, "no such folder"));
	/* Both files given: the folder is not needed. */
	cfg = good_config();
	cfg.guest_kernel = at_top("no-such-guest");
	assert_int_equal(check_run(&cfg, &c), 0);
}

/* Formats: a kernel the board does not boot, a truncated one, and the
 * initramfs forms the kernel unpacks (zero padding first included). */
static void test_formats(void **state)
{
	(void)state;
	struct fsvm_config cfg = good_config();
	static uint8_t junk[8192];
	memset(junk, 'j', sizeof(junk));
	cfg.kernel = put("junk", junk, sizeof(junk));
	static struct check c;
	assert_int_equal(check_run(&cfg, &c), 1);
	assert_non_null(strstr(c.problems[0].message, "not a bzImage"));
	cfg.kernel = put("short-elf", ELFMAG "\2\1", SELFMAG + 2);
	assert_int_equal(check_run(&cfg, &c), 1);
	assert_non_null(strstr(c.problems[0].message, "not a 64-bit x86 ELF kernel"));
	cfg.kernel = elf_kernel("vmlinux");
	static const struct {
		const char *name;
		const char *bytes;
		size_t len;
	} initrds[] = {
		{"gzip", "\x1f\x8b\x08\x00", 4},
		{"zstd", "\x28\xb5\x2f\xfd", 4},
		{"xz", "\xfd" "7zXZ\0", 6},
		{"cpio-crc", "070702", 6},
		{"padded", "\0\0\0\0" "070701", 10},
	};
	for (size_t i = 0; i < sizeof(initrds) / sizeof(initrds[0]); i++) {
		cfg.initrd = put(initrds[i].name, initrds[i].bytes, initrds[i].len);
		if (check_run(&cfg, &c))
			fail_msg("%s initrd: %s", initrds[i].name, c.problems[0].message);
	}
	cfg.initrd = put("empty", "", 0);
	assert_int_equal(check_run(&cfg, &c), 1);
	assert_non_null(strstr(c.problems[0].message, "not a non-empty file"));
}

static void test_network_and_pseudo_share(void **state)
{
	(void)state;
	struct fsvm_config cfg = good_config();
	cfg.net = (struct cli_net){.mode = CLI_NET_TAP, .tap = "fsvmnosuch0"};
	cfg.shares[0].host = "/proc";
	static struct check c;
	assert_int_equal(check_run(&cfg, &c), 2);
	assert_int_equal(c.problems[0].reason, EXIT_REASON_BAD_SHARE);
	assert_non_null(strstr(c.problems[0].message, "pseudo file system"));
	assert_int_equal(c.problems[1].reason, EXIT_REASON_BAD_NETWORK);
	assert_non_null(strstr(c.problems[1].message, "tap:fsvmnosuch0: no such network interface"));
}

#define CASE(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		CASE(test_good_config_has_no_problem),
		CASE(test_every_problem_named),
		CASE(test_missing_guest_folder_once),
		CASE(test_formats),
		CASE(test_network_and_pseudo_share),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
