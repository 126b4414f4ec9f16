/* Landlock over the shares, as a compromised fsvm meets it: nothing
 * outside a share opens, a read-only share is read-only, nothing runs;
 * inside a writable share the file server's every operation works,
 * reopening through /proc/self/fd too. Each case runs in a child:
 * Landlock is for the rest of a process's life. */
#include <sys/sysmacros.h>

#include "tests/unit/test_fuse_helpers.h"
#include "tests/unit/child.h"
#include "vmm/landlock.h"

static char scratch[] = "/tmp/fsvm-landlock-XXXXXX";
static char rw[PATH_MAX], ro[PATH_MAX], outside[PATH_MAX];

static int group_setup(void **state)
{
	(void)state;
	fx_scratch_shares(scratch, rw, ro, outside);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/sub", rw);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/data", rw);
	fx_host_file(path, "x", 0755);
	snprintf(path, sizeof(path), "%s/data", ro);
	fx_host_file(path, "x", 0666);
	snprintf(path, sizeof(path), "%s/secret", outside);
	fx_host_file(path, "x", 0666);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(scratch, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void walled(void *arg)
{
	(void)arg;
	int rw_fd = open(rw, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int ro_fd = open(ro, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int data = openat(rw_fd, "data", O_PATH | O_CLOEXEC);
	CHILD_CHECK(rw_fd >= 0 && ro_fd >= 0 && proc_fd >= 0 && data >= 0);
	struct landlock_share shares[] = {{rw, false, false}, {ro, true, false}};
	const char *why = NULL;
	int err = landlock_shares(shares, 2, &why);
	if (err)
		fprintf(stderr, "child: landlock: %s: %s\n", why, strerror(-err));
	CHILD_CHECK(err == 0);

	/* Outside the shares: nothing, by path or by an fd held from before. */
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/secret", outside);
	CHILD_CHECK(open(path, O_RDONLY) < 0 && errno == EACCES);
	CHILD_CHECK(open("/etc/passwd", O_RDONLY) < 0 && errno == EACCES);
	CHILD_CHECK(open("/proc/self/mem", O_RDWR) < 0 && errno == EACCES);
	CHILD_CHECK(open(scratch, O_RDONLY | O_DIRECTORY) < 0 && errno == EACCES);
	CHILD_CHECK(openat(rw_fd, "../outside/secret", O_RDONLY) < 0 &&
		    errno == EACCES);
	/* A read-only share is read, never written. */
	CHILD_CHECK(openat(ro_fd, "data", O_RDONLY | O_CLOEXEC) >= 0);
	CHILD_CHECK(openat(ro_fd, "data", O_WRONLY) < 0 && errno == EACCES);
	CHILD_CHECK(mkdirat(ro_fd, "new", 0755) < 0 && errno == EACCES);
	/* A writable share takes what the file server does. */
	int made = openat(rw_fd, "made", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	CHILD_CHECK(made >= 0);
	close(made);
	CHILD_CHECK(mkdirat(rw_fd, "dir", 0755) == 0);
	CHILD_CHECK(symlinkat("data", rw_fd, "link") == 0);
	CHILD_CHECK(renameat(rw_fd, "made", rw_fd, "sub/moved") == 0);
	CHILD_CHECK(linkat(rw_fd, "sub/moved", rw_fd, "hard", 0) == 0);
	CHILD_CHECK(unlinkat(rw_fd, "hard", 0) == 0);
	CHILD_CHECK(unlinkat(rw_fd, "dir", AT_REMOVEDIR) == 0);
	CHILD_CHECK(mknodat(rw_fd, "null", S_IFCHR | 0666, makedev(1, 3)) < 0 &&
		    errno == EACCES);
	/* Reopening an O_PATH fd by number, as every FUSE open does. */
	char name[16];
	snprintf(name, sizeof(name), "%d", data);
	CHILD_CHECK(openat(proc_fd, name, O_RDWR | O_CLOEXEC) >= 0);
	/* Nothing runs, not even a share's own executable file. */
	snprintf(path, sizeof(path), "%s/data", rw);
	pid_t pid = fork();
	if (pid == 0) {
		execl(path, path, (char *)NULL);
		_exit(errno == EACCES ? 0 : 1);
	}
	int st;
	CHILD_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0);
}

static void test_landlock_holds_to_the_shares(void **state)
{
	(void)state;
	assert_int_equal(in_child(walled, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_landlock_holds_to_the_shares),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
