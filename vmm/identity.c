/* The host identity fsvm takes on after set-up: a user namespace whose id
 * maps are the guest's ids on the host. */
#include "vmm/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"

/* Who nobody is on Debian and most other systems. */
#define NOBODY_ID 65534u

/* A number from the environment, or fallback. */
static uint32_t env_id(const char *name, uint32_t fallback)
{
	const char *s = getenv(name);
	char *end;
	if (!s || !*s)
		return fallback;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	return errno || *end || v >= UINT32_MAX ? fallback : (uint32_t)v;
}

/* The user guest root is by default: the caller; started as root, the
 * user who ran sudo, else nobody, so that root is never the default. */
static void default_user(uint32_t *uid, uint32_t *gid)
{
	if (geteuid() != 0) {
		*uid = geteuid();
		*gid = getegid();
		return;
	}
	*uid = env_id("SUDO_UID", 0);
	*gid = env_id("SUDO_GID", 0);
	if (*uid == 0 || *gid == 0)
		*uid = *gid = NOBODY_ID;
}

static bool maps_guest_root(const struct cli_id_map *m, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (m[i].guest == 0)
			return true;
	return false;
}

int identity_plan(const struct fsvm_config *cfg, struct identity *id,
		  const char **why)
{
	*id = (struct identity){.host_root = cfg->host_root, .user = cfg->user};
	if (cfg->host_root) {
		*why = "--host-root: fsvm is not running as root";
		return geteuid() == 0 ? 0 : -EPERM;
	}
	uint32_t uid, gid;
	default_user(&uid, &gid);
	/* --user: the command runs as this user's own ids, which are the
	 * same ids on the host; guest root is then nobody here. */
	uint32_t guest_uid = cfg->user ? uid : 0, guest_gid = cfg->user ? gid : 0;
	id->uid[0] = (struct cli_id_map){.guest = guest_uid, .host = uid, .count = 1};
	id->gid[0] = (struct cli_id_map){.guest = guest_gid, .host = gid, .count = 1};
	id->nr_uid = id->nr_gid = 1;
	if (uid == NOBODY_ID && geteuid() == 0 && !cfg->nr_uid_maps)
		id->fallback_uid = (struct fuse_fallback_id){
			.set = true, .guest = guest_uid, .host = uid};
	if (gid == NOBODY_ID && geteuid() == 0 && !cfg->nr_gid_maps)
		id->fallback_gid = (struct fuse_fallback_id){
			.set = true, .guest = guest_gid, .host = gid};
	if (cfg->user)
		return 0;
	if (cfg->nr_uid_maps) {
		memcpy(id->uid, cfg->uid_map, sizeof(id->uid));
		id->nr_uid = cfg->nr_uid_maps;
	}
	if (cfg->nr_gid_maps) {
		memcpy(id->gid, cfg->gid_map, sizeof(id->gid));
		id->nr_gid = cfg->nr_gid_maps;
	}
	/* The command runs as guest root: it must be someone on the host. */
	if (!maps_guest_root(id->uid, id->nr_uid) ||
	    !maps_guest_root(id->gid, id->nr_gid)) {
		*why = "--uid-map/--gid-map: guest root (0) must be mapped";
		return -EINVAL;
	}
	return 0;
}

void identity_user_home(const struct identity *id, const char **home,
			const char **name)
{
	static struct passwd pw;
	static char buf[4096];
	struct passwd *found = NULL;
	getpwuid_r(id->uid[0].host, &pw, buf, sizeof(buf), &found);
	const char *env_home = getenv("HOME");
	*home = found && found->pw_dir[0] == '/' ? found->pw_dir
		: env_home && env_home[0] == '/' ? env_home
						  : "/";
	*name = found ? found->pw_name : "";
}

/* The host id guest root is (with --user, the user's). */
static uint32_t root_of(const struct cli_id_map *m, unsigned int n)
{
	if (n == 1 && m[0].guest != 0)
		return m[0].host;
	for (unsigned int i = 0; i < n; i++)
		if (m[i].guest == 0)
			return m[i].host;
	return NOBODY_ID;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int err = n < 0 ? -errno : (size_t)n == strlen(text) ? 0 : -EIO;
	close(fd);
	return err;
}

static int write_map(pid_t pid, const char *which,
		     const struct cli_id_map *m, unsigned int n)
{
	char path[64], text[CLI_MAX_ID_MAPS * 40] = "";
	size_t len = 0;
	for (unsigned int i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%u %u %u\n", m[i].guest, m[i].host,
					m[i].count);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
	return write_file(path, text);
}

/* One line mapping guest root to ourselves: an unprivileged process may
 * write that itself (after giving up setgroups). */
static bool only_self(const struct identity *id)
{
	return id->nr_uid == 1 && id->uid[0].host == geteuid() &&
	       id->uid[0].count == 1 && id->nr_gid == 1 &&
	       id->gid[0].host == getegid() && id->gid[0].count == 1;
}

/* Runs newuidmap or newgidmap (setuid helpers reading /etc/subuid and
 * /etc/subgid) for pid's namespace. */
static int run_helper(const char *helper, pid_t pid,
		      const struct cli_id_map *m, unsigned int n)
{
	char args[2 + 3 * CLI_MAX_ID_MAPS][16];
	char *argv[3 + 3 * CLI_MAX_ID_MAPS] = {(char *)helper};
	int argc = 1;
	snprintf(args[0], sizeof(args[0]), "%d", (int)pid);
	argv[argc++] = args[0];
	for (unsigned int i = 0; i < n; i++) {
		snprintf(args[1 + 3 * i], 16, "%u", m[i].guest);
		snprintf(args[2 + 3 * i], 16, "%u", m[i].host);
		snprintf(args[3 + 3 * i], 16, "%u", m[i].count);
		for (int k = 1; k <= 3; k++)
			argv[argc++] = args[k + 3 * i];
	}
	argv[argc] = NULL;
	pid_t child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		execvp(helper, argv);
		_exit(127);
	}
	int st;
	if (waitpid(child, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EPERM;
}

/* In the helper process, still outside the namespace: writes its maps. */
static int write_maps(pid_t pid, const struct identity *id)
{
	char path[64];
	if (geteuid() == 0) {
		int err = write_map(pid, "uid_map", id->uid, id->nr_uid);
		return err ? err : write_map(pid, "gid_map", id->gid, id->nr_gid);
	}
	if (only_self(id)) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		int err = write_file(path, "deny");
		if (!err)
			err = write_map(pid, "uid_map", id->uid, id->nr_uid);
		return err ? err : write_map(pid, "gid_map", id->gid, id->nr_gid);
	}
	int err = run_helper("newuidmap", pid, id->uid, id->nr_uid);
	return err ? err : run_helper("newgidmap", pid, id->gid, id->nr_gid);
}

/* Enters a new user namespace; a helper forked first, still outside it,
 * writes the maps (a process cannot write a map of more than its own id
 * for itself). Returns 0, -ENOSYS-like errors from unshare, or -EPERM
 * when the maps could not be written. */
static int enter_namespace(const struct identity *id, bool *unavailable)
{
	int sync[2];
	*unavailable = false;
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -errno;
	pid_t helper = fork();
	if (helper < 0) {
		int err = -errno;
		close(sync[0]);
		close(sync[1]);
		return err;
	}
	if (helper == 0) {
		char go;
		close(sync[1]);
		if (read(sync[0], &go, 1) != 1 || go != 'y')
			_exit(0);
		_exit(write_maps(getppid(), id) ? 1 : 0);
	}
	close(sync[0]);
	int err = unshare(CLONE_NEWUSER) < 0 ? -errno : 0;
	*unavailable = err != 0;
	if (write(sync[1], err ? "n" : "y", 1) != 1 && !err)
		err = -errno;
	close(sync[1]);
	int st;
	if (waitpid(helper, &st, 0) < 0 && !err)
		err = -errno;
	else if (!err && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		err = -EPERM;
	return err;
}

/* Becomes user uid, group gid (and no other groups where that is ours to
 * decide), leaving root's privileges. */
static int become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		return -errno;
	if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}

int identity_assume(const struct identity *id, const char **why)
{
	if (id->host_root)
		return 0;
	bool unavailable;
	int err = enter_namespace(id, &unavailable);
	if (!err) {
		/* Root of the namespace: guest root, on the host the map's.
		 * With --user, the one mapped user; a change of uid in the
		 * namespace from an unmapped one keeps its capabilities. */
		err = id->user ? become(id->uid[0].guest, id->gid[0].guest)
			       : become(0, 0);
		*why = "cannot become root of the user namespace";
		return err;
	}
	if (!unavailable) {
		*why = geteuid() == 0 || only_self(id)
			       ? "cannot write the user namespace's id maps"
			       : "cannot write the user namespace's id maps (maps beyond your own ids need newuidmap/newgidmap and /etc/subuid, /etc/subgid)";
		return err;
	}
	log_info("no user namespace (%s): guest ids are host ids, and guest root is uid %u",
		 strerror(-err), geteuid() ? geteuid() : root_of(id->uid, id->nr_uid));
	if (geteuid() != 0)
		return 0;
	err = become(root_of(id->uid, id->nr_uid), root_of(id->gid, id->nr_gid));
	*why = "cannot give up root's privileges";
	return err;
}
