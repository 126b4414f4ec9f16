/* fsvm's host identity after set-up: guest root is an unprivileged host
 * user in a user namespace of fsvm's own, files the guest makes belong to
 * the mapped ids, guest ids without a host id own nothing, and the host's
 * other files are out of reach. Each case runs in a child process, as the
 * identity is for the rest of a process's life. */
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "tests/unit/test_fuse_helpers.h"
#include "tests/unit/child.h"
#include "vmm/identity.h"

/* Where the children make files: everyone may write there. */
static char scratch[] = "/tmp/fsvm-identity-XXXXXX";

static int group_setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(scratch));
	assert_int_equal(chmod(scratch, 0777), 0);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(scratch, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* Runs fn in a child (cmocka's asserts there end the child with status
 * 1); returns the child's exit status. */
static uint32_t expected_root_uid(void)
{
	return geteuid() ? geteuid() : 65534; /* no SUDO_UID in the tests */
}

struct take {
	struct fsvm_config cfg;
	const char *file; /* made after taking the identity */
};

static void take_identity(void *arg)
{
	struct take *t = arg;
	struct identity id;
	const char *why = NULL;

	CHILD_CHECK(identity_plan(&t->cfg, &id, &why) == 0);
	CHILD_CHECK(identity_assume(&id, &why) == 0);
	/* Root of our namespace, but nobody's root on the host. */
	CHILD_CHECK(getuid() == 0 && geteuid() == 0);
	CHILD_CHECK(open("/etc/shadow", O_RDONLY) < 0 && errno == EACCES);
	CHILD_CHECK(mknod("/tmp/fsvm-identity-null", S_IFCHR | 0666,
			  makedev(1, 3)) < 0);
	int fd = open(t->file, O_CREAT | O_WRONLY | O_EXCL, 0644);
	CHILD_CHECK(fd >= 0);
	/* Its own file may be set-user-ID: to an id it owns. */
	CHILD_CHECK(fchmod(fd, 04755) == 0);
	/* A guest id with no host id owns nothing. */
	CHILD_CHECK(fchown(fd, 4242, (gid_t)-1) < 0 && errno == EINVAL);
	close(fd);
}

static void guest_root_is_an_unprivileged_host_user(void **state)
{
	(void)state;
	char path[128];
	struct take t = { .cfg = { .command = CLI_RUN }, .file = path };
	struct stat st;

	snprintf(path, sizeof(path), "%s/made-by-guest-root", scratch);
	assert_int_equal(in_child(take_identity, &t), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, expected_root_uid());
	assert_int_equal(st.st_mode & 07777, 04755);
}

/* More ids than one's own: root may map them (an unprivileged user
 * needs newuidmap and /etc/subuid, which the tests do not assume). */
static void chown_within_the_map(void *arg)
{
	const char *file = arg;
	struct fsvm_config cfg = { .command = CLI_RUN, .nr_uid_maps = 1,
				   .nr_gid_maps = 1 };
	struct identity id;
	const char *why = NULL;

	cfg.uid_map[0] = (struct cli_id_map){ 0, 200000, 2000 };
	cfg.gid_map[0] = (struct cli_id_map){ 0, 200000, 2000 };
	CHILD_CHECK(identity_plan(&cfg, &id, &why) == 0);
	CHILD_CHECK(identity_assume(&id, &why) == 0);
	int fd = open(file, O_CREAT | O_WRONLY | O_EXCL, 0644);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(fchown(fd, 1000, 1000) == 0);
	CHILD_CHECK(fchown(fd, 2000, 1000) < 0 && errno == EINVAL);
	close(fd);
}

static void root_maps_many_ids(void **state)
{
	(void)state;
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/made-in-map", scratch);
	if (geteuid() != 0) {
		/* Unprivileged, such a map needs newuidmap: refused here. */
		assert_int_equal(in_child(chown_within_the_map, path), 1);
		return;
	}
	assert_int_equal(in_child(chown_within_the_map, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 201000);
	assert_int_equal(st.st_gid, 201000);
}

static void plans_that_cannot_be(void **state)
{
	(void)state;
	struct fsvm_config cfg = { .command = CLI_RUN, .nr_uid_maps = 1 };
	struct identity id;
	const char *why = NULL;

	cfg.uid_map[0] = (struct cli_id_map){ 1000, 1000, 1 };
	assert_int_equal(identity_plan(&cfg, &id, &why), -EINVAL);
	assert_non_null(strstr(why, "guest root"));
	cfg = (struct fsvm_config){ .command = CLI_RUN, .host_root = true };
	assert_int_equal(identity_plan(&cfg, &id, &why), geteuid() ? -EPERM : 0);
	if (geteuid() == 0)
		assert_true(id.host_root);
}

/* The FUSE server in the namespace: a file made for guest root belongs to
 * the mapped host user; one made for a guest id without a host id fails
 * with EOVERFLOW and leaves nothing behind. */
static void fuse_create_as(void *arg)
{
	(void)arg;
	struct fsvm_config cfg = { .command = CLI_RUN };
	struct fuse_server_config scfg = { .cache = FUSE_CACHE_AUTO,
					   .root = scratch };
	struct identity id;
	const char *why = NULL;
	struct fx f = { .unique = 0 };

	CHILD_CHECK(identity_plan(&cfg, &id, &why) == 0);
	CHILD_CHECK(identity_assume(&id, &why) == 0);
	snprintf(f.root, sizeof(f.root), "%s", scratch);
	CHILD_CHECK(fuse_server_create(&scfg, &f.srv) == 0);
	CHILD_CHECK(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL) == 0);

	struct fuse_create_in in = { .flags = O_WRONLY, .mode = S_IFREG | 0644 };
	req_begin(FUSE_CREATE, FUSE_ROOT_ID);
	req_creds(4242, 4242);
	req_add(&in, sizeof(in));
	req_str("by-4242");
	CHILD_CHECK(req_send(&f) == -EOVERFLOW);
	req_begin(FUSE_CREATE, FUSE_ROOT_ID);
	req_add(&in, sizeof(in));
	req_str("by-root");
	CHILD_CHECK(req_send(&f) == 0);
	struct fuse_mkdir_in mk = { .mode = 0755 };
	req_begin(FUSE_MKDIR, FUSE_ROOT_ID);
	req_creds(4242, 4242);
	req_add(&mk, sizeof(mk));
	req_str("dir-by-4242");
	CHILD_CHECK(req_send(&f) == -EOVERFLOW);
	/* The guest's exec opens with O_NOATIME, refused for a file that is
	 * not ours: opened without it. */
	uint64_t node = fx_lookup_id(&f, FUSE_ROOT_ID, "not-mine");
	struct fuse_open_in op = { .flags = O_RDONLY | O_NOATIME };
	req_begin(FUSE_OPEN, node);
	req_add(&op, sizeof(op));
	CHILD_CHECK(req_send(&f) == 0);
	fuse_server_destroy(f.srv);
}

static void guest_ids_without_host_ids_own_nothing(void **state)
{
	(void)state;
	char path[128];
	struct stat st;

	char mine[128];
	snprintf(mine, sizeof(mine), "%s/not-mine", scratch);
	int fd = open(mine, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(in_child(fuse_create_as, NULL), 0);
	snprintf(path, sizeof(path), "%s/by-root", scratch);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, expected_root_uid());
	snprintf(path, sizeof(path), "%s/by-4242", scratch);
	assert_int_equal(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/dir-by-4242", scratch);
	assert_int_equal(lstat(path, &st), -1);
}

/* Started as root without $SUDO_UID, guest root is host nobody, and the
 * share is told that identity is a fallback: what guest root makes is
 * never set-ID, nor is its file after a SETATTR whose chown (to a guest id
 * without a host id) fails after its chmod. */
static void fuse_setid_as_fallback(void *arg)
{
	(void)arg;
	struct fsvm_config cfg = { .command = CLI_RUN };
	struct fuse_server_config scfg = {
		.cache = FUSE_CACHE_AUTO, .root = scratch,
	};
	struct identity id;
	const char *why = NULL;
	struct fx f = { .unique = 0 };
	struct fuse_entry_out e;

	/* As fsvm does: the fallback is the plan's. */
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	CHILD_CHECK(identity_plan(&cfg, &id, &why) == 0);
	CHILD_CHECK(id.fallback_uid.set && id.fallback_uid.guest == 0 &&
		    id.fallback_uid.host == 65534);
	CHILD_CHECK(id.fallback_gid.set && id.fallback_gid.host == 65534);
	scfg.fallback_uid = id.fallback_uid;
	scfg.fallback_gid = id.fallback_gid;
	CHILD_CHECK(identity_assume(&id, &why) == 0);
	snprintf(f.root, sizeof(f.root), "%s", scratch);
	CHILD_CHECK(fuse_server_create(&scfg, &f.srv) == 0);
	CHILD_CHECK(fx_init(&f, 38, FX_GUEST_FLAGS, FX_GUEST_FLAGS2, NULL) == 0);

	struct fuse_mknod_in mk = { .mode = S_IFREG | 06755 };
	req_begin(FUSE_MKNOD, FUSE_ROOT_ID);
	req_add(&mk, sizeof(mk));
	req_str("set-id-by-root");
	CHILD_CHECK(req_send(&f) == 0);
	memcpy(&e, fx_reply, sizeof(e));
	CHILD_CHECK(e.attr.mode == (S_IFREG | 0755));
	struct fuse_setattr_in sa = { .valid = FATTR_MODE | FATTR_UID,
				      .mode = S_IFREG | 04755, .uid = 4242 };
	req_begin(FUSE_SETATTR, e.nodeid);
	req_add(&sa, sizeof(sa));
	CHILD_CHECK(req_send(&f) == -EINVAL);
	fuse_server_destroy(f.srv);
}

/* Nobody is a fallback only where the user named no one. */
static void named_ids_are_no_fallback(void **state)
{
	(void)state;
	NEEDS_ROOT(); /* else guest root is the caller, no fallback */
	struct fsvm_config cfg = { .command = CLI_RUN };
	struct identity id;
	const char *why = NULL;

	setenv("SUDO_UID", "4242", 1);
	setenv("SUDO_GID", "4242", 1);
	assert_int_equal(identity_plan(&cfg, &id, &why), 0);
	assert_false(id.fallback_uid.set || id.fallback_gid.set);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	cfg.uid_map[0] = (struct cli_id_map){ .guest = 0, .host = 65534, .count = 1 };
	cfg.nr_uid_maps = 1;
	assert_int_equal(identity_plan(&cfg, &id, &why), 0);
	assert_false(id.fallback_uid.set);
	assert_true(id.fallback_gid.set); /* no --gid-map: still nobody */
}

static void guest_root_as_nobody_makes_no_set_id_files(void **state)
{
	(void)state;
	NEEDS_ROOT(); /* else guest root is the caller, no fallback */
	char path[128];
	struct stat st;

	assert_int_equal(in_child(fuse_setid_as_fallback, NULL), 0);
	snprintf(path, sizeof(path), "%s/set-id-by-root", scratch);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_mode & 07777, 0755);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(guest_root_is_an_unprivileged_host_user),
		cmocka_unit_test(root_maps_many_ids),
		cmocka_unit_test(plans_that_cannot_be),
		cmocka_unit_test(guest_ids_without_host_ids_own_nothing),
		cmocka_unit_test(named_ids_are_no_fallback),
		cmocka_unit_test(guest_root_as_nobody_makes_no_set_id_files),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
