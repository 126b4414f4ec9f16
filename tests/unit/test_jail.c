/* The jail, as a compromised fsvm meets it: after set-up, with fsvm's
 * identity taken, no host path outside the shares opens, no fd fsvm held
 * climbs out of its share, /proc/self/mem and the rest of procfs are not
 * there, the host's pseudo file systems inside a share are covered, a
 * read-only share is read-only to fsvm itself, and what the file server
 * needs (the shares, reopening through /proc/self/fd) still works. Each
 * case runs in a child: a jail is for the rest of a process's life. */
#include <cap-ng.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "tests/unit/test_fuse_helpers.h"
#include "tests/unit/child.h"
#include "vmm/capabilities.h"
#include "vmm/identity.h"
#include "vmm/jail.h"

static char scratch[] = "/tmp/fsvm-jail-XXXXXX";
static char rw[PATH_MAX], ro[PATH_MAX], outside[PATH_MAX],
	secret[PATH_MAX + 16];

static int group_setup(void **state)
{
	(void)state;
	fx_scratch_shares(scratch, rw, ro, outside);
	snprintf(secret, sizeof(secret), "%s/secret", outside);
	/* Guest root may be nobody here (root without SUDO_UID). */
	assert_int_equal(chmod(scratch, 0755), 0);
	assert_int_equal(chmod(rw, 0777), 0);
	char path[PATH_MAX + 16];
	/* Writable by anyone, so that only a read-only mount refuses. */
	snprintf(path, sizeof(path), "%s/data", rw);
	fx_host_file(path, "shared", 0666);
	snprintf(path, sizeof(path), "%s/pseudo", rw);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/pseudo-file", rw);
	fx_host_file(path, "", 0644);
	snprintf(path, sizeof(path), "%s/data", ro);
	fx_host_file(path, "read only", 0666);
	fx_host_file(secret, "secret", 0644);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(scratch, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* What fsvm does before it locks itself in: takes the guest's identity
 * (a user namespace of its own: no root needed to run this test). */
static void take_identity(void)
{
	struct fsvm_config cfg = {0};
	struct identity id;
	const char *why = NULL;
	CHILD_CHECK(identity_plan(&cfg, &id, &why) == 0);
	CHILD_CHECK(identity_assume(&id, &why) == 0);
}

static void read_is(int dir, const char *name, const char *want)
{
	char buf[64] = "";
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(read(fd, buf, sizeof(buf) - 1) == (ssize_t)strlen(want));
	CHILD_CHECK(!strcmp(buf, want));
	close(fd);
}

static bool same_dir(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void jailed(void *arg)
{
	(void)arg;
	/* fsvm plans its jail before it takes the guest's ids: as root those
	 * may not reach the shares by path, and the test makes it so. */
	bool root = geteuid() == 0;
	if (!root)
		take_identity();
	/* A pseudo file system mounted inside a share, as a host's / has
	 * them, and a pseudo file on a file (a test hides a binary so),
	 * made in a namespace of the child's own. */
	char pseudo[PATH_MAX + 16];
	CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	snprintf(pseudo, sizeof(pseudo), "%s/pseudo", rw);
	CHILD_CHECK(mount("/proc", pseudo, NULL, MS_BIND | MS_REC, NULL) == 0);
	snprintf(pseudo, sizeof(pseudo), "%s/pseudo-file", rw);
	CHILD_CHECK(mount("/proc/self/status", pseudo, NULL, MS_BIND, NULL) == 0);

	/* What fsvm holds when set-up is done: the shares' roots, a FUSE
	 * server's /proc/self/fd, and a directory fd it did not open. */
	int rw_fd = open(rw, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int ro_fd = open(ro, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int inherited = open(outside, O_RDONLY | O_DIRECTORY);
	CHILD_CHECK(rw_fd >= 0 && ro_fd >= 0 && proc_fd >= 0 && inherited >= 0);
	struct stat above;
	CHILD_CHECK(stat(scratch, &above) == 0);

	struct jail_share shares[] = {{rw, false}, {ro, true}};
	struct jail *jail;
	const char *why = NULL;
	CHILD_CHECK(jail_prepare(shares, 2, &jail, &why) == 0);
	if (root) {
		/* Above the shares, a folder guest root (host nobody) may not
		 * enter, as root's 0700 home. */
		CHILD_CHECK(chmod(scratch, 0700) == 0);
		take_identity();
		CHILD_CHECK(access(rw, F_OK) < 0 && errno == EACCES);
	}
	bool unavailable;
	int err = jail_enter(jail, &unavailable, &why);
	jail_free(jail);
	if (err)
		fprintf(stderr, "child: jail: %s: %s\n", why, strerror(-err));
	CHILD_CHECK(err == 0);

	/* The host's files are gone, by path and by /proc. */
	CHILD_CHECK(open(secret, O_RDONLY) < 0 && errno == ENOENT);
	CHILD_CHECK(open("/etc/passwd", O_RDONLY) < 0 && errno == ENOENT);
	CHILD_CHECK(open("/proc/self/mem", O_RDWR) < 0 && errno == ENOENT);
	CHILD_CHECK(open("/proc/1/root", O_PATH) < 0 && errno == ENOENT);
	CHILD_CHECK(open("/proc/self/mountinfo", O_RDONLY) < 0);
	/* The inherited directory fd was closed. */
	CHILD_CHECK(fcntl(inherited, F_GETFD) < 0 && errno == EBADF);
	/* ".." from a share's root stays in the jail, not in scratch. */
	int up = openat(rw_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	CHILD_CHECK(up >= 0 && fstat(up, &st) == 0);
	CHILD_CHECK(st.st_dev != above.st_dev || st.st_ino != above.st_ino);
	CHILD_CHECK(openat(up, "../../../outside/secret", O_RDONLY) < 0);
	CHILD_CHECK(same_dir(up, "/shares"));
	/* ".." from /proc/self/fd leads to no process's files. */
	int proc_up = openat(proc_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(proc_up >= 0);
	CHILD_CHECK(openat(proc_up, "mem", O_RDONLY) < 0 && errno == ENOENT);
	CHILD_CHECK(openat(proc_up, "status", O_RDONLY) < 0);
	/* The pseudo file system in the share is an empty directory. */
	int cover = openat(rw_fd, "pseudo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(cover >= 0);
	CHILD_CHECK(openat(cover, "self", O_PATH) < 0 && errno == ENOENT);
	CHILD_CHECK(openat(cover, "x", O_CREAT | O_WRONLY, 0644) < 0 &&
		    errno == EROFS);
	/* The pseudo file on a file is an empty, read-only file. */
	char byte;
	int file = openat(rw_fd, "pseudo-file", O_RDONLY | O_CLOEXEC);
	CHILD_CHECK(file >= 0 && read(file, &byte, 1) == 0);
	close(file);
	CHILD_CHECK(openat(rw_fd, "pseudo-file", O_WRONLY | O_CLOEXEC) < 0 &&
		    errno == EROFS);
	/* The jail's own root takes nothing new. */
	CHILD_CHECK(mkdir("/x", 0755) < 0 && errno == EROFS);

	/* What the file server does still works: the shares, read and
	 * written, and reopening an O_PATH fd by number. */
	read_is(rw_fd, "data", "shared");
	read_is(ro_fd, "data", "read only");
	int made = openat(rw_fd, "made", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	CHILD_CHECK(made >= 0);
	close(made);
	char name[16];
	snprintf(name, sizeof(name), "%d", rw_fd);
	int again = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(again >= 0 && same_dir(again, "/shares/0"));
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", rw_fd);
	read_is(open(path, O_PATH | O_DIRECTORY), "data", "shared");
	/* A read-only share is read-only to fsvm too, not only to the
	 * guest's requests. */
	CHILD_CHECK(openat(ro_fd, "data", O_WRONLY) < 0 && errno == EROFS);
	CHILD_CHECK(openat(ro_fd, "new", O_CREAT | O_WRONLY, 0644) < 0 &&
		    errno == EROFS);
}

static void test_jail_holds_only_the_shares(void **state)
{
	(void)state;
	int rc = in_child(jailed, NULL);
	assert_int_equal(chmod(scratch, 0755), 0);
	assert_int_equal(rc, 0);
}

/* The shares may be / itself (a kernel developer's default): the host's
 * /proc, /sys and /dev in it are covered. */
static void jailed_host_root(void *arg)
{
	(void)arg;
	take_identity();
	int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(root_fd >= 0);
	struct jail_share shares[] = {{"/", true}};
	struct jail *jail;
	bool unavailable;
	const char *why = NULL;
	CHILD_CHECK(jail_prepare(shares, 1, &jail, &why) == 0);
	CHILD_CHECK(jail_enter(jail, &unavailable, &why) == 0);
	jail_free(jail);
	CHILD_CHECK(openat(root_fd, "etc/hostname", O_RDONLY) >= 0);
	CHILD_CHECK(openat(root_fd, "proc/self/mem", O_RDONLY) < 0 &&
		    errno == ENOENT);
	CHILD_CHECK(openat(root_fd, "proc/1/root", O_PATH) < 0 && errno == ENOENT);
	CHILD_CHECK(openat(root_fd, "sys/kernel", O_PATH) < 0 && errno == ENOENT);
	CHILD_CHECK(openat(root_fd, "dev/null", O_PATH) < 0 && errno == ENOENT);
	char data[PATH_MAX + 16];
	snprintf(data, sizeof(data), "%s/data", rw + 1);
	read_is(root_fd, data, "shared");
	CHILD_CHECK(openat(root_fd, data, O_WRONLY) < 0 && errno == EROFS);
}

static void test_jail_covers_the_hosts_own_state(void **state)
{
	(void)state;
	assert_int_equal(in_child(jailed_host_root, NULL), 0);
}

static void dropped(void *arg)
{
	(void)arg;
	take_identity();
	CHILD_CHECK(capabilities_drop(false) == 0);
	CHILD_CHECK(capng_get_caps_process() == 0);
	CHILD_CHECK(capng_have_capability(CAPNG_EFFECTIVE, CAP_CHOWN));
	CHILD_CHECK(capng_have_capability(CAPNG_EFFECTIVE, CAP_DAC_OVERRIDE));
	CHILD_CHECK(capng_have_capability(CAPNG_EFFECTIVE, CAP_FOWNER));
	CHILD_CHECK(!capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN));
	CHILD_CHECK(!capng_have_capability(CAPNG_EFFECTIVE, CAP_MKNOD));
	CHILD_CHECK(!capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_PTRACE));
	CHILD_CHECK(!capng_have_capability(CAPNG_BOUNDING_SET, CAP_SYS_ADMIN));
	/* Without CAP_SYS_ADMIN, no new mount namespace: no way to undo
	 * a jail. */
	CHILD_CHECK(unshare(CLONE_NEWNS) < 0 && errno == EPERM);
}

static void test_capabilities_are_the_file_servers(void **state)
{
	(void)state;
	assert_int_equal(in_child(dropped, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jail_holds_only_the_shares),
		cmocka_unit_test(test_jail_covers_the_hosts_own_state),
		cmocka_unit_test(test_capabilities_are_the_file_servers),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
