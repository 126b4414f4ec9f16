/* A podman image as the guest's root: podman asked for the image and its
 * mount, the config applied to the run, and the watcher that unmounts. */
#include "vmm/image.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"

#define IMAGE_INSPECT_MAX (16 << 20) /* an image's inspect: its history too */
#define IMAGE_FILE_MAX (4 << 20)     /* an etc/passwd or etc/group read */
/* Ids the image's files may have: a distribution's (as podman leaves
 * them), as many as fsvm's own namespace holds from 0 on. */
#define IMAGE_IDS 65536

/* obj.key as a string: "" when absent or null; NULL when not a string. */
static const char *string_member(struct json_object *obj, const char *key)
{
	struct json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) || !v)
		return "";
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v)
							 : NULL;
}

/* obj.key, a list of strings (absent or null: none), into list. */
static int string_list(struct json_object *obj, const char *key,
		       const char **list, unsigned int max, unsigned int *nr,
		       char *err, size_t errlen)
{
	struct json_object *v;
	*nr = 0;
	if (!json_object_object_get_ex(obj, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return log_reason(err, errlen, "image config: %s: not a list", key);
	size_t n = json_object_array_length(v);
	if (n > max)
		return log_reason(err, errlen, "image config: %s: over %u entries", key, max);
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(v, i);
		if (!json_object_is_type(s, json_type_string))
			return log_reason(err, errlen, "image config: %s[%zu]: not a string",
				   key, i);
		list[(*nr)++] = json_object_get_string(s);
	}
	return 0;
}

int image_config_parse(const char *text, size_t len, struct image_config *c,
		       char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		return log_reason(err, errlen, "image config: out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	c->json = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	json_tokener_free(tok);
	bool one = jerr == json_tokener_success &&
		   json_object_is_type(c->json, json_type_array) &&
		   json_object_array_length(c->json) == 1;
	struct json_object *image = one ? json_object_array_get_idx(c->json, 0) : NULL,
			   *config;
	if (!json_object_is_type(image, json_type_object))
		return log_reason(err, errlen, "podman image inspect: not a list of one image (%s)",
			   jerr != json_tokener_success ? json_tokener_error_desc(jerr)
							: "another shape");
	c->id = string_member(image, "Id");
	if (!c->id || !*c->id || strchr(c->id, '/'))
		return log_reason(err, errlen, "podman image inspect: no image Id");
	/* An image built FROM scratch with nothing set may have no Config. */
	if (!json_object_object_get_ex(image, "Config", &config) || !config)
		config = image;
	if (!json_object_is_type(config, json_type_object))
		return log_reason(err, errlen, "image config: Config: not an object");
	c->user = string_member(config, "User");
	c->workdir = string_member(config, "WorkingDir");
	if (!c->user || !c->workdir)
		return log_reason(err, errlen, "image config: User and WorkingDir are strings");
	if (*c->workdir && c->workdir[0] != '/')
		return log_reason(err, errlen, "image config: WorkingDir '%s': not an absolute path",
			   c->workdir);
	if (string_list(config, "Env", c->env, CLI_MAX_ENV, &c->nr_env, err, errlen) ||
	    string_list(config, "Entrypoint", c->entrypoint, IMAGE_MAX_ARGS,
			&c->nr_entrypoint, err, errlen) ||
	    string_list(config, "Cmd", c->cmd, IMAGE_MAX_ARGS, &c->nr_cmd, err, errlen))
		return -EINVAL;
	for (unsigned int i = 0; i < c->nr_env; i++)
		if (c->env[i][0] == '=' || !strchr(c->env[i], '='))
			return log_reason(err, errlen, "image config: Env[%u] '%s': not NAME=VALUE",
				   i, c->env[i]);
	return 0;
}

void image_config_free(struct image_config *c)
{
	json_object_put(c->json);
	c->json = NULL;
}

/* A file of the image's tree, its links resolved inside it, as text
 * (malloc'd); NULL when it cannot be read. */
static char *read_in_root(int root_fd, const char *path)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	char *text = fd < 0 ? NULL : malloc(IMAGE_FILE_MAX + 1);
	ssize_t n = 0, got;
	while (text && n < IMAGE_FILE_MAX &&
	       (got = read(fd, text + n, IMAGE_FILE_MAX - (size_t)n)) > 0)
		n += got;
	if (fd >= 0)
		close(fd);
	if (text)
		text[n] = '\0';
	return text;
}

static bool parse_id(const char *s, size_t len, unsigned int *id)
{
	char buf[16], *end;
	if (!len || len >= sizeof(buf) || s[0] < '0' || s[0] > '9')
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	unsigned long v = strtoul(buf, &end, 10);
	if (errno || *end || v >= UINT32_MAX)
		return false;
	*id = (unsigned int)v;
	return true;
}

/* In a passwd or group file of the tree, the entry whose name (or, by_id,
 * whose id) is key: its id (third field) and, for passwd, its group
 * (fourth). false when there is none. */
static bool find_entry(int root_fd, const char *file, const char *key,
		       size_t key_len, bool by_id, unsigned int *id,
		       unsigned int *group)
{
	char *text = read_in_root(root_fd, file);
	bool found = false;
	for (char *line = text, *next; line && *line && !found; line = next) {
		next = strchrnul(line, '\n');
		if (*next)
			*next++ = '\0';
		char *field[4];
		int n = 0;
		for (char *p = line; n < 4; p++) {
			field[n++] = p;
			if (!*(p = strchrnul(p, ':')))
				break;
			*p = '\0';
		}
		unsigned int entry_id, entry_group = 0, wanted;
		if (n < 3 || !parse_id(field[2], strlen(field[2]), &entry_id) ||
		    (group && (n < 4 || !parse_id(field[3], strlen(field[3]), &entry_group))))
			continue;
		found = by_id ? parse_id(key, key_len, &wanted) && entry_id == wanted
			      : strlen(field[0]) == key_len &&
					!memcmp(field[0], key, key_len);
		if (found)
			*id = entry_id;
		if (found && group)
			*group = entry_group;
	}
	free(text);
	return found;
}

/* docker's User: NAME or UID, then :GROUP or :GID; without a group, the
 * user's passwd entry's (0 for a uid without one). */
static int resolve_user(const char *user, int root_fd, unsigned int *uid,
			unsigned int *gid, char *err, size_t errlen)
{
	const char *colon = strchr(user, ':');
	size_t ulen = colon ? (size_t)(colon - user) : strlen(user);
	bool numeric = parse_id(user, ulen, uid);
	*gid = 0;
	if (!find_entry(root_fd, "/etc/passwd", user, ulen, numeric, uid, gid) &&
	    !(numeric && parse_id(user, ulen, uid)))
		return log_reason(err, errlen, "image config: User '%s': no such user in the image's /etc/passwd",
			   user);
	if (!colon)
		return 0;
	const char *group = colon + 1;
	if (parse_id(group, strlen(group), gid) ||
	    find_entry(root_fd, "/etc/group", group, strlen(group), false, gid, NULL))
		return 0;
	return log_reason(err, errlen, "image config: User '%s': no such group in the image's /etc/group",
		   user);
}

/* How many ids from 0 on this process's user namespace has, at most
 * IMAGE_IDS: the run of its maps' inside ids from 0. */
static unsigned int ids_from_zero(const char *map_file)
{
	FILE *f = fopen(map_file, "re");
	unsigned long inside, outside, count, end = 0;
	bool grew = true;
	while (f && grew && end < IMAGE_IDS) {
		grew = false;
		rewind(f);
		while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
			if (inside <= end && inside + count > end) {
				end = inside + count;
				grew = true;
			}
	}
	if (f)
		fclose(f);
	return end < IMAGE_IDS ? (unsigned int)end : IMAGE_IDS;
}

static int check_workdir(int root_fd, const char *dir, char *err, size_t errlen)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, root_fd, dir, &how, sizeof(how));
	if (fd < 0)
		return log_reason(err, errlen, "image config: WorkingDir %s: %s in the image",
			   dir, strerror(errno));
	close(fd);
	return 0;
}

int image_config_apply(const struct image_config *c, int root_fd,
		       struct fsvm_config *cfg, char **argv, char *err,
		       size_t errlen)
{
	/* The image's variables first: the init sets them in order, so
	 * --env's win. */
	if (c->nr_env + cfg->nr_env > CLI_MAX_ENV)
		return log_reason(err, errlen, "--image: with the image's Env, over %d variables",
			   CLI_MAX_ENV);
	memmove(cfg->env + c->nr_env, cfg->env, cfg->nr_env * sizeof(cfg->env[0]));
	memcpy(cfg->env, c->env, c->nr_env * sizeof(c->env[0]));
	cfg->nr_env += c->nr_env;

	if (!cfg->cwd) {
		cfg->cwd = *c->workdir ? c->workdir : "/";
		if (check_workdir(root_fd, cfg->cwd, err, errlen))
			return -EINVAL;
	}

	unsigned int argc = 0;
	if (cfg->entrypoint && *cfg->entrypoint)
		argv[argc++] = (char *)cfg->entrypoint;
	for (unsigned int i = 0; !cfg->entrypoint && i < c->nr_entrypoint; i++)
		argv[argc++] = (char *)c->entrypoint[i];
	if (cfg->guest_argc > IMAGE_MAX_ARGS)
		return log_reason(err, errlen, "--image: over %d words in the command",
			   IMAGE_MAX_ARGS);
	for (int i = 0; i < cfg->guest_argc; i++)
		argv[argc++] = cfg->guest_argv[i];
	for (unsigned int i = 0; !cfg->guest_argc && !cfg->entrypoint && i < c->nr_cmd; i++)
		argv[argc++] = (char *)c->cmd[i];
	argv[argc] = NULL;
	cfg->guest_argv = argv;
	cfg->guest_argc = (int)argc;

	if (!cfg->user && *c->user) {
		if (resolve_user(c->user, root_fd, &cfg->run_as_uid,
				 &cfg->run_as_gid, err, errlen))
			return -EINVAL;
		cfg->run_as = true;
	}
	/* The image's files are owned by the ids podman keeps them as: the
	 * guest's are the same host ids (within fsvm's namespace), as a
	 * container's are, unless the flags say otherwise. */
	if (!cfg->user && !cfg->host_root && !cfg->nr_uid_maps && !cfg->nr_gid_maps) {
		cfg->uid_map[0] = (struct cli_id_map){.count = ids_from_zero("/proc/self/uid_map")};
		cfg->gid_map[0] = (struct cli_id_map){.count = ids_from_zero("/proc/self/gid_map")};
		cfg->nr_uid_maps = cfg->nr_gid_maps = 1;
	}
	return 0;
}

/* Runs podman with args, stdin and (without out) stdout /dev/null. Its
 * stdout, NUL-terminated, in *out (malloc'd, at most max bytes); on
 * failure, the last line of its stderr in why. Its exit status, or a
 * negative errno. */
static int podman(const char *const *args, char **out, size_t max, char *why,
		  size_t whylen)
{
	int pipefd[2], errfd = memfd_create("podman-stderr", MFD_CLOEXEC);
	if (errfd < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
		int err = -errno;
		snprintf(why, whylen, "cannot run podman: %s", strerror(-err));
		if (errfd >= 0)
			close(errfd);
		return err;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
		    dup2(out ? pipefd[1] : null, STDOUT_FILENO) < 0 ||
		    dup2(errfd, STDERR_FILENO) < 0)
			_exit(126);
		execvp("podman", (char *const *)args);
		dprintf(STDERR_FILENO, "cannot run podman: %s%s\n", strerror(errno),
			errno == ENOENT ? " (tools/deps installs Debian's)" : "");
		_exit(127);
	}
	int err = pid < 0 ? -errno : 0, status = 0;
	if (err)
		snprintf(why, whylen, "cannot run podman: %s", strerror(-err));
	close(pipefd[1]);
	size_t len = 0;
	char *text = out && !err ? malloc(max + 1) : NULL;
	ssize_t n;
	while (text && len < max && (n = read(pipefd[0], text + len, max - len)) != 0)
		if (n > 0)
			len += (size_t)n;
		else if (errno != EINTR)
			break;
	close(pipefd[0]);
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!err)
		err = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (!err && out && (!text || len == max)) {
		err = -ENOMEM;
		snprintf(why, whylen, "its answer is over %zu bytes, or out of memory", max);
	}
	if (err > 0) {
		char buf[4096];
		ssize_t got = pread(errfd, buf, sizeof(buf) - 1, 0);
		buf[got > 0 ? got : 0] = '\0';
		/* podman's own last word: its "Error: ..." line. */
		char *end = buf + strlen(buf);
		while (end > buf && end[-1] == '\n')
			*--end = '\0';
		char *last = strrchr(buf, '\n');
		snprintf(why, whylen, "%s", last ? last + 1 : *buf ? buf : "no message");
	}
	close(errfd);
	if (text && !err) {
		text[len] = '\0';
		*out = text;
	} else {
		free(text);
	}
	return err;
}

/* The watcher: mounts the image, writes its folder (or why not) on
 * report, waits until fsvm's end of release closes (fsvm ended, however
 * it ended), unmounts it, and exits, closing report. */
static void watch(const char *id, int release, int report)
{
	/* Not ended with fsvm by a terminal's ^C or a hang-up: it outlives
	 * fsvm to unmount (podman inherits this, so its unmount runs to its
	 * end too). */
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE,
				      SIGTSTP, SIGTTIN, SIGTTOU};
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		signal(signals[i], SIG_IGN);
	prctl(PR_SET_NAME, "fsvm-image");
	char why[512], *path = NULL;
	const char *mount[] = {"podman", "image", "mount", id, NULL};
	int st = podman(mount, &path, PATH_MAX, why, sizeof(why));
	if (st || path[0] != '/' || !strchr(path, '\n')) {
		dprintf(report, "podman image mount: %s", st ? why : "no folder in its answer");
		_exit(1);
	}
	if (write(report, path, strlen(path)) < 0)
		st = -errno; /* fsvm is gone: unmount at once */
	free(path);
	char c;
	ssize_t n;
	while (!st && ((n = read(release, &c, 1)) > 0 || (n < 0 && errno == EINTR)))
		;
	const char *unmount[] = {"podman", "image", "unmount", id, NULL};
	if ((st = podman(unmount, NULL, 0, why, sizeof(why))))
		log_error("podman image unmount %s: %s (it stays mounted)", id, why);
	_exit(st ? 1 : 0);
}

/* The watcher's answer: the folder podman mounted the image on. */
static int read_mount(struct image *img, char *why, size_t whylen)
{
	char answer[PATH_MAX + 512];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(answer) - 1 && !memchr(answer, '\n', len) &&
	       ((n = read(img->unmounted_fd, answer + len, sizeof(answer) - 1 - len)) > 0 ||
		(n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	answer[len] = '\0';
	char *nl = strchr(answer, '\n');
	if (answer[0] != '/' || !nl) {
		snprintf(why, whylen, "%.512s", len ? answer : "its watcher ended");
		return -1;
	}
	*nl = '\0';
	if ((size_t)(nl - answer) >= sizeof(img->root)) {
		snprintf(why, whylen, "podman image mount: its folder's name is too long");
		return -1;
	}
	memcpy(img->root, answer, (size_t)(nl - answer) + 1);
	return 0;
}

/* A watcher of the image's mount, forked while fsvm is one thread that
 * holds nothing but its standard streams. */
static int start_watcher(struct image *img, char *why, size_t whylen)
{
	int release[2], report[2];
	if (pipe2(release, O_CLOEXEC) < 0)
		return snprintf(why, whylen, "cannot start its watcher: %s", strerror(errno)), -1;
	if (pipe2(report, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "cannot start its watcher: %s", strerror(errno));
		close(release[0]);
		close(release[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(release[1]);
		close(report[0]);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		watch(img->config.id, release[0], report[1]);
	}
	if (pid < 0)
		snprintf(why, whylen, "cannot start its watcher: %s", strerror(errno));
	close(release[0]);
	close(report[1]);
	img->release_fd = release[1];
	img->unmounted_fd = report[0];
	return pid < 0 ? -1 : read_mount(img, why, whylen);
}

int image_open(const struct fsvm_config *cfg, struct image *img)
{
	char why[1024], *inspect = NULL;
	const char *ref = cfg->image;
	memset(img, 0, sizeof(*img));
	img->release_fd = img->unmounted_fd = -1;
	if (geteuid() != 0)
		return log_setup_error("--image",
				       "podman mounts images for root only: run fsvm as root, or as `podman unshare fsvm run --image ...` with rootless podman",
				       0), -1;
	const char *exists[] = {"podman", "image", "exists", ref, NULL};
	int st = podman(exists, NULL, 0, why, sizeof(why));
	if (st == 1) {
		snprintf(why, sizeof(why), "no image %s in podman's store; podman pull %s",
			 ref, ref);
		return log_setup_error("--image", why, 0), -1;
	}
	const char *inspect_args[] = {"podman", "image", "inspect", ref, NULL};
	if (!st)
		st = podman(inspect_args, &inspect, IMAGE_INSPECT_MAX, why, sizeof(why));
	if (st)
		return log_setup_error("--image", why, st < 0 ? st : 0), -1;
	st = image_config_parse(inspect, strlen(inspect), &img->config, why, sizeof(why));
	free(inspect);
	if (st)
		return log_setup_error(ref, why, 0), -1;
	if (start_watcher(img, why, sizeof(why)))
		return log_setup_error(ref, why, 0), -1;
	img->cfg = *cfg;
	img->cfg.root = img->root;
	int root_fd = open(img->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return log_setup_error(img->root, "cannot open the image's mount", -errno), -1;
	st = image_config_apply(&img->config, root_fd, &img->cfg, img->argv, why,
				sizeof(why));
	close(root_fd);
	if (st)
		return log_setup_error(ref, why, 0), -1;
	log_info("image %s (%.12s) mounted on %s", ref, img->config.id, img->root);
	return 0;
}

void image_close(struct image *img)
{
	if (img->release_fd >= 0)
		close(img->release_fd);
	char buf[256];
	ssize_t n;
	while (img->unmounted_fd >= 0 &&
	       ((n = read(img->unmounted_fd, buf, sizeof(buf))) > 0 ||
		(n < 0 && errno == EINTR)))
		;
	if (img->unmounted_fd >= 0)
		close(img->unmounted_fd);
	img->release_fd = img->unmounted_fd = -1;
	image_config_free(&img->config);
}
