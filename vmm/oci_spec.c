/* config.json to fsvm's options and the guest's container job. */
#include "vmm/oci_spec.h"

#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/guest_mem.h"
#include "core/log.h"
#include "guest/protocol.h"

#define OCI_CONFIG_MAX_BYTES (4 << 20)
#define OCI_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* Ids a container without a user namespace keeps: its root is the
 * caller's root, as under runc, and so are the ids a distribution uses. */
#define OCI_IDENTITY_IDS 65536

/* obj.key of the given type: 1 found, 0 absent (or null), -EINVAL wrong
 * type (err says which). */
static int member(struct json_object *obj, const char *key,
		  enum json_type type, struct json_object **out,
		  const char *where, char *err, size_t errlen)
{
	*out = NULL;
	struct json_object *v;
	if (!obj || !json_object_object_get_ex(obj, key, &v) || !v)
		return 0;
	if (json_object_get_type(v) != type &&
	    !(type == json_type_double && json_object_is_type(v, json_type_int)))
		return log_reason(err, errlen, "config.json: %s%s: expected %s", where,
			   key, json_type_to_name(type));
	*out = v;
	return 1;
}

static const char *string_at(struct json_object *array, size_t i)
{
	struct json_object *v = json_object_array_get_idx(array, i);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v)
							 : NULL;
}

/* A string the bundle's config made, kept until cli_free. */
static const char *own(struct oci_bundle *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *own(struct oci_bundle *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : cli_own(&b->cfg, s);
}

static int read_json(const char *path, struct json_object **out, char *err,
		     size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return log_reason(err, errlen, "%s: %s", path, strerror(errno));
	char *text = malloc(OCI_CONFIG_MAX_BYTES + 1);
	size_t len = text ? fread(text, 1, OCI_CONFIG_MAX_BYTES + 1, f) : 0;
	fclose(f);
	if (!text || len > OCI_CONFIG_MAX_BYTES) {
		free(text);
		return log_reason(err, errlen, "%s: over 4 MiB, or out of memory", path);
	}
	struct json_tokener *tok = json_tokener_new();
	if (!tok) {
		free(text);
		return log_reason(err, errlen, "%s: out of memory", path);
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	*out = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && text[end] && strchr(" \t\r\n", text[end]))
		end++;
	free(text);
	if (jerr != json_tokener_success || !*out || end != len ||
	    !json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
		return log_reason(err, errlen, "%s: not a JSON object (%s)", path,
			   jerr != json_tokener_success
				   ? json_tokener_error_desc(jerr)
				   : "text after it");
	}
	return 0;
}

/* 1.0.x to 1.2.x: the versions whose fields are read here. */
static int check_version(struct json_object *config, char *err, size_t errlen)
{
	struct json_object *v;
	int found = member(config, "ociVersion", json_type_string, &v, "", err,
			   errlen);
	if (found < 0)
		return found;
	const char *version = found ? json_object_get_string(v) : "";
	unsigned int major, minor;
	char rest;
	if (!found || sscanf(version, "%u.%u%c", &major, &minor, &rest) < 2 ||
	    major != 1 || minor > 2)
		return log_reason(err, errlen,
			   "config.json: ociVersion '%s' is not one fsvm knows (1.0 to 1.2)",
			   version);
	return 0;
}

static int load_root(struct oci_bundle *b, char *err, size_t errlen)
{
	struct json_object *root, *path, *ro;
	int err_ = member(b->config, "root", json_type_object, &root, "", err,
			  errlen);
	if (err_ <= 0)
		return err_ < 0 ? err_ : log_reason(err, errlen, "config.json: no root");
	if ((err_ = member(root, "path", json_type_string, &path, "root.", err,
			   errlen)) <= 0)
		return err_ < 0 ? err_ : log_reason(err, errlen, "config.json: no root.path");
	if ((err_ = member(root, "readonly", json_type_boolean, &ro, "root.",
			   err, errlen)) < 0)
		return err_;
	const char *p = json_object_get_string(path);
	char joined[PATH_MAX * 2];
	snprintf(joined, sizeof(joined), "%s%s%s", p[0] == '/' ? "" : b->bundle,
		 p[0] == '/' ? "" : "/", p);
	struct stat st;
	if (!realpath(joined, b->rootfs) || stat(b->rootfs, &st) < 0)
		return log_reason(err, errlen, "root.path %s: %s", joined, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return log_reason(err, errlen, "root.path %s: not a directory", joined);
	b->cfg.root = b->rootfs;
	b->job.root_readonly = ro && json_object_get_boolean(ro);
	b->cfg.rw_root = !b->job.root_readonly;
	return 0;
}

static int openat2_in_root(int root, const char *path, int flags)
{
	struct open_how how = {.flags = (unsigned long long)flags,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
}

/* runc's check at create: the program is there, in the root file system
 * and on the process's PATH, and may be run. 1 found, 0 absent, -errno. */
static int find_program(int root, const char *cwd, const char *name,
			const char *path)
{
	char candidate[PATH_MAX];
	int result = 0;
	for (const char *dir = path; result <= 0 && dir;) {
		const char *end = strchr(dir, ':');
		int dirlen = end ? (int)(end - dir) : (int)strlen(dir);
		if (strchr(name, '/'))
			snprintf(candidate, sizeof(candidate), "%s/%s",
				 name[0] == '/' ? "" : cwd, name);
		else
			snprintf(candidate, sizeof(candidate), "%.*s/%s", dirlen,
				 dir, name);
		int fd = openat2_in_root(root, candidate, O_PATH | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			result = st.st_mode & 0111 ? 1 : -EACCES;
		if (fd >= 0)
			close(fd);
		dir = strchr(name, '/') || !end ? NULL : end + 1;
	}
	return result;
}

static int check_program(struct oci_bundle *b, const char *name, char *err,
			 size_t errlen)
{
	const char *path = OCI_DEFAULT_PATH;
	for (unsigned int i = 0; i < b->cfg.nr_env; i++)
		if (!strncmp(b->cfg.env[i], "PATH=", 5))
			path = b->cfg.env[i] + 5;
	int root = open(b->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int found = root < 0 ? -errno : find_program(root, b->cfg.cwd, name, path);
	if (root >= 0)
		close(root);
	if (found == 0)
		return log_reason(err, errlen,
			   "process.args[0] '%s': not found in the root file system%s",
			   name, strchr(name, '/') ? "" : " (on its PATH)");
	if (found < 0)
		return log_reason(err, errlen, "process.args[0] '%s': %s", name,
			   found == -EACCES ? "not executable" : strerror(-found));
	return 0;
}

static int add_process_field(struct oci_bundle *b, const char *field)
{
	if (!field || b->job.nr_process == OCI_MAX_PROCESS_FIELDS)
		return -ENOMEM;
	b->process[b->job.nr_process++] = field;
	return 0;
}

static const struct {
	const char *name;
	int resource;
} rlimits[] = {
	{"RLIMIT_AS", RLIMIT_AS},         {"RLIMIT_CORE", RLIMIT_CORE},
	{"RLIMIT_CPU", RLIMIT_CPU},       {"RLIMIT_DATA", RLIMIT_DATA},
	{"RLIMIT_FSIZE", RLIMIT_FSIZE},   {"RLIMIT_LOCKS", RLIMIT_LOCKS},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
	{"RLIMIT_NICE", RLIMIT_NICE},     {"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_NPROC", RLIMIT_NPROC},   {"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO}, {"RLIMIT_RTTIME", RLIMIT_RTTIME},
	{"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING}, {"RLIMIT_STACK", RLIMIT_STACK},
};

static const char *limit_text(struct oci_bundle *b, struct json_object *v)
{
	uint64_t n = (uint64_t)json_object_get_uint64(v);
	return n == (uint64_t)RLIM_INFINITY ? "unlimited" : own(b, "%llu", (unsigned long long)n);
}

static int load_rlimits(struct oci_bundle *b, struct json_object *list,
			char *err, size_t errlen)
{
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		struct json_object *r = json_object_array_get_idx(list, i), *type,
				   *hard, *soft;
		if (member(r, "type", json_type_string, &type, "process.rlimits[].", err, errlen) <= 0 ||
		    member(r, "hard", json_type_int, &hard, "process.rlimits[].", err, errlen) <= 0 ||
		    member(r, "soft", json_type_int, &soft, "process.rlimits[].", err, errlen) <= 0)
			return log_reason(err, errlen, "config.json: process.rlimits[%zu]: needs type, hard and soft", i);
		const char *name = json_object_get_string(type);
		size_t k = 0;
		while (k < sizeof(rlimits) / sizeof(rlimits[0]) &&
		       strcmp(rlimits[k].name, name))
			k++;
		if (k == sizeof(rlimits) / sizeof(rlimits[0]))
			return log_reason(err, errlen, "config.json: process.rlimits: unknown type '%s'", name);
		if (add_process_field(b, own(b, "rlimit=%d,%s,%s", rlimits[k].resource,
					     limit_text(b, soft), limit_text(b, hard))))
			return log_reason(err, errlen, "config.json: process: too many rlimits");
	}
	return 0;
}

/* One capability set as a mask; a name this host's libcap-ng does not
 * know (a newer kernel's) is left out, as runc does. */
static unsigned long long cap_mask(struct json_object *list)
{
	unsigned long long mask = 0;
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		const char *name = string_at(list, i);
		if (!name)
			continue;
		if (!strncasecmp(name, "CAP_", 4))
			name += 4;
		int cap = capng_name_to_capability(name);
		if (cap >= 0 && cap < 64)
			mask |= 1ULL << cap;
	}
	return mask;
}

static int load_capabilities(struct oci_bundle *b, struct json_object *caps,
			     char *err, size_t errlen)
{
	static const char *const sets[] = {"bounding", "effective", "permitted",
					   "inheritable", "ambient"};
	unsigned long long mask[5];
	for (size_t i = 0; i < 5; i++) {
		struct json_object *list;
		if (member(caps, sets[i], json_type_array, &list,
			   "process.capabilities.", err, errlen) < 0)
			return -EINVAL;
		mask[i] = cap_mask(list);
	}
	return add_process_field(b, own(b, "caps=%llx,%llx,%llx,%llx,%llx", mask[0],
					mask[1], mask[2], mask[3], mask[4]));
}

static int load_user(struct oci_bundle *b, struct json_object *user,
		     char *err, size_t errlen)
{
	struct json_object *uid, *gid, *umask, *groups;
	if (member(user, "uid", json_type_int, &uid, "process.user.", err, errlen) < 0 ||
	    member(user, "gid", json_type_int, &gid, "process.user.", err, errlen) < 0 ||
	    member(user, "umask", json_type_int, &umask, "process.user.", err, errlen) < 0 ||
	    member(user, "additionalGids", json_type_array, &groups, "process.user.", err, errlen) < 0)
		return -EINVAL;
	int64_t u = uid ? json_object_get_int64(uid) : 0;
	int64_t g = gid ? json_object_get_int64(gid) : 0;
	if (u < 0 || u >= UINT32_MAX || g < 0 || g >= UINT32_MAX)
		return log_reason(err, errlen, "config.json: process.user: ids are 0 to 4294967294");
	b->job.uid = (unsigned int)u;
	b->job.gid = (unsigned int)g;
	if (umask && add_process_field(b, own(b, "umask=%llo", (unsigned long long)
					      (json_object_get_int64(umask) & 0777))))
		return -ENOMEM;
	if (groups && json_object_array_length(groups)) {
		char list[4096] = "groups=";
		size_t len = strlen(list);
		for (size_t i = 0; i < json_object_array_length(groups); i++) {
			int64_t id = json_object_get_int64(json_object_array_get_idx(groups, i));
			if (id < 0 || id >= UINT32_MAX || len + 12 >= sizeof(list))
				return log_reason(err, errlen, "config.json: process.user.additionalGids: bad or too many");
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%lld",
						i ? "," : "", (long long)id);
		}
		if (add_process_field(b, own(b, "%s", list)))
			return -ENOMEM;
	}
	return 0;
}

static int load_process(struct oci_bundle *b, char *err, size_t errlen)
{
	struct json_object *p, *args, *env, *cwd, *terminal, *user, *caps,
		*rlim, *nnp;
	int found = member(b->config, "process", json_type_object, &p, "", err,
			   errlen);
	if (found <= 0)
		return found < 0 ? found : log_reason(err, errlen, "config.json: no process");
	if (member(p, "args", json_type_array, &args, "process.", err, errlen) < 0 ||
	    member(p, "env", json_type_array, &env, "process.", err, errlen) < 0 ||
	    member(p, "cwd", json_type_string, &cwd, "process.", err, errlen) < 0 ||
	    member(p, "terminal", json_type_boolean, &terminal, "process.", err, errlen) < 0 ||
	    member(p, "user", json_type_object, &user, "process.", err, errlen) < 0 ||
	    member(p, "capabilities", json_type_object, &caps, "process.", err, errlen) < 0 ||
	    member(p, "rlimits", json_type_array, &rlim, "process.", err, errlen) < 0 ||
	    member(p, "noNewPrivileges", json_type_boolean, &nnp, "process.", err, errlen) < 0)
		return -EINVAL;
	size_t argc = args ? json_object_array_length(args) : 0;
	if (!argc)
		return log_reason(err, errlen, "config.json: process.args: empty (nothing to run)");
	char **argv = calloc(argc + 1, sizeof(*argv));
	if (!argv || !cli_own(&b->cfg, (char *)argv))
		return -ENOMEM;
	for (size_t i = 0; i < argc; i++)
		if (!(argv[i] = (char *)string_at(args, i)))
			return log_reason(err, errlen, "config.json: process.args[%zu]: not a string", i);
	b->cfg.guest_argv = argv;
	b->cfg.guest_argc = (int)argc;
	for (size_t i = 0; env && i < json_object_array_length(env); i++) {
		const char *var = string_at(env, i);
		if (!var || !strchr(var, '=') || var[0] == '=')
			return log_reason(err, errlen, "config.json: process.env[%zu]: not NAME=VALUE", i);
		if (b->cfg.nr_env == CLI_MAX_ENV)
			return log_reason(err, errlen, "config.json: process.env: over %d variables", CLI_MAX_ENV);
		b->cfg.env[b->cfg.nr_env++] = var;
	}
	b->cfg.cwd = cwd ? json_object_get_string(cwd) : "/";
	if (b->cfg.cwd[0] != '/')
		return log_reason(err, errlen, "config.json: process.cwd '%s': not an absolute path", b->cfg.cwd);
	b->terminal = terminal && json_object_get_boolean(terminal);
	if ((user && load_user(b, user, err, errlen)) ||
	    (caps && load_capabilities(b, caps, err, errlen)) ||
	    load_rlimits(b, rlim, err, errlen))
		return -EINVAL;
	if ((nnp && json_object_get_boolean(nnp) &&
	     add_process_field(b, "no_new_privs=1")) ||
	    add_process_field(b, "env=exact"))
		return log_reason(err, errlen, "config.json: process: too many settings");
	return check_program(b, argv[0], err, errlen);
}

/* Mount options a share or a copied file keeps: how it is mounted, not
 * how the host made its bind (which the guest does not do). */
static const char *share_options(struct oci_bundle *b, struct json_object *opts,
				 bool *readonly)
{
	static const char *const kept[] = {"ro", "rw", "nosuid", "nodev", "noexec",
					   "relatime", "norelatime", "noatime",
					   "strictatime", "nodiratime"};
	char buf[256] = "";
	size_t len = 0;
	*readonly = false;
	for (size_t i = 0; opts && i < json_object_array_length(opts); i++) {
		const char *o = string_at(opts, i);
		for (size_t k = 0; o && k < sizeof(kept) / sizeof(kept[0]); k++)
			if (!strcmp(o, kept[k]) && len + strlen(o) + 2 < sizeof(buf))
				len += (size_t)snprintf(buf + len, sizeof(buf) - len,
							"%s%s", len ? "," : "", o);
		*readonly = *readonly || (o && !strcmp(o, "ro"));
	}
	return own(b, "%s", buf);
}

/* A file system's options as given, less crun's own (podman passes
 * tmpcopyup for a tmpfs volume) and the host-side relabelling and id
 * mapping, which mean nothing to the guest's kernel. */
static const char *all_options(struct oci_bundle *b, struct json_object *opts)
{
	static const char *const host_only[] = {"tmpcopyup", "notmpcopyup",
						"copy-symlink", "idmap", "ridmap",
						"z", "Z", "U"};
	char buf[1024] = "";
	size_t len = 0;
	for (size_t i = 0; opts && i < json_object_array_length(opts); i++) {
		const char *o = string_at(opts, i);
		for (size_t k = 0; o && k < sizeof(host_only) / sizeof(host_only[0]); k++)
			if (!strcmp(o, host_only[k]))
				o = NULL;
		if (o && len + strlen(o) + 2 < sizeof(buf))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
						len ? "," : "", o);
	}
	return own(b, "%s", buf);
}

static int add_fsmount(struct oci_bundle *b, const char *type,
		       const char *source, const char *dest, const char *options)
{
	if (!type || !source || !options)
		return -ENOMEM;
	const char **f = &b->fsmounts[4 * b->job.nr_fsmounts++];
	f[0] = type, f[1] = source, f[2] = dest, f[3] = options;
	return 0;
}

/* The host's own state bound in (rootless podman binds /sys, devices):
 * the guest's own of the same kind, never the host's. NULL: none. */
static const char *guest_own_fs(const char *source)
{
	static const struct {
		const char *prefix, *type;
	} kinds[] = {{"/sys/fs/cgroup", "cgroup2"}, {"/sys", "sysfs"},
		     {"/proc", "proc"},            {"/dev/mqueue", "mqueue"},
		     {"/dev/pts", "devpts"},       {"/dev/shm", "tmpfs"}};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(source, kinds[i].prefix))
			return kinds[i].type;
	return NULL;
}

static int load_bind(struct oci_bundle *b, const char *source, const char *dest,
		     struct json_object *opts, char *err, size_t errlen)
{
	char host[PATH_MAX], joined[PATH_MAX * 2];
	struct stat st;
	bool readonly;
	/* The spec: a bind's relative source is in the bundle. */
	snprintf(joined, sizeof(joined), "%s%s%s", source[0] == '/' ? "" : b->bundle,
		 source[0] == '/' ? "" : "/", source);
	if (!realpath(joined, host) || stat(host, &st) < 0)
		return log_reason(err, errlen, "mount %s: %s", source, strerror(errno));
	const char *own_fs = guest_own_fs(host);
	/* A container's /dev/shm is its own memory, not a folder to serve. */
	if (!strcmp(dest, "/dev/shm"))
		own_fs = "tmpfs";
	if (own_fs)
		return add_fsmount(b, own_fs, own_fs, dest,
				   !strcmp(own_fs, "tmpfs")
					   ? "nosuid,nodev,noexec,mode=1777"
					   : share_options(b, opts, &readonly));
	/* The guest's own of the nodes the init makes in a tmpfs /dev (as
	 * runc does); no host device reaches a VM. */
	static const char *const own_devices[] = {"/dev/null", "/dev/zero", "/dev/full",
						  "/dev/random", "/dev/urandom", "/dev/tty"};
	for (size_t i = 0; S_ISCHR(st.st_mode) && i < sizeof(own_devices) / sizeof(own_devices[0]); i++)
		if (!strcmp(host, own_devices[i]))
			return add_fsmount(b, GUEST_FSMOUNT_BIND, own_devices[i], dest,
					   share_options(b, opts, &readonly));
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		return log_reason(err, errlen, "mount %s: a host device cannot be passed into a VM (/dev/null, zero, full, random, urandom and tty are the guest's own)", source);
	if (S_ISREG(st.st_mode)) {
		if (st.st_size > OCI_MAX_FILE_BIND)
			return log_reason(err, errlen, "mount %s: a file bound into a VM is copied, and this one is over 1 MiB (bind its folder)", source);
		unsigned int n = b->job.nr_files;
		b->files[b->job.nr_files++] = own(b, "%s", host);
		return add_fsmount(b, GUEST_FSMOUNT_BIND,
				   own(b, GUEST_SPEC_FILES "%u", n), dest,
				   share_options(b, opts, &readonly));
	}
	if (!S_ISDIR(st.st_mode))
		return log_reason(err, errlen, "mount %s: only folders, files and /dev's character devices can be bound into a VM", source);
	if (b->cfg.nr_shares == CLI_MAX_SHARES)
		return log_reason(err, errlen, "mount %s: more than %d folders to share", source, CLI_MAX_SHARES);
	const char *options = share_options(b, opts, &readonly);
	unsigned int n = b->cfg.nr_shares++;
	b->cfg.shares[n] = (struct cli_share){.host = own(b, "%s", host),
					      .guest = dest,
					      .readonly = readonly};
	return add_fsmount(b, GUEST_FSMOUNT_SHARE, own(b, GUEST_SHARE_TAG_FMT, n),
			   dest, options);
}

static bool has_option(struct json_object *opts, const char *name)
{
	for (size_t i = 0; opts && i < json_object_array_length(opts); i++) {
		const char *o = string_at(opts, i);
		if (o && !strcmp(o, name))
			return true;
	}
	return false;
}

static int load_mounts(struct oci_bundle *b, char *err, size_t errlen)
{
	static const char *const guest_types[] = {"proc", "sysfs", "tmpfs",
						  "devpts", "mqueue", "cgroup2",
						  "devtmpfs", "ramfs"};
	struct json_object *mounts;
	if (member(b->config, "mounts", json_type_array, &mounts, "", err, errlen) < 0)
		return -EINVAL;
	size_t n = mounts ? json_object_array_length(mounts) : 0;
	if (n > OCI_MAX_MOUNTS)
		return log_reason(err, errlen, "config.json: over %d mounts", OCI_MAX_MOUNTS);
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(mounts, i), *d,
				   *t, *s, *o;
		if (member(m, "destination", json_type_string, &d, "mounts[].", err, errlen) <= 0)
			return log_reason(err, errlen, "config.json: mounts[%zu]: no destination", i);
		if (member(m, "type", json_type_string, &t, "mounts[].", err, errlen) < 0 ||
		    member(m, "source", json_type_string, &s, "mounts[].", err, errlen) < 0 ||
		    member(m, "options", json_type_array, &o, "mounts[].", err, errlen) < 0)
			return -EINVAL;
		const char *dest = json_object_get_string(d);
		const char *type = t ? json_object_get_string(t) : "";
		const char *source = s ? json_object_get_string(s) : type;
		if (dest[0] != '/')
			return log_reason(err, errlen, "mount %s: the destination is not an absolute path", dest);
		if (!strcmp(type, "bind") || has_option(o, "bind") || has_option(o, "rbind")) {
			if (load_bind(b, source, dest, o, err, errlen))
				return -EINVAL;
			continue;
		}
		if (!strcmp(type, "cgroup"))
			type = "cgroup2"; /* the guest's cgroups are its own */
		size_t k = 0;
		while (k < sizeof(guest_types) / sizeof(guest_types[0]) &&
		       strcmp(type, guest_types[k]))
			k++;
		if (k == sizeof(guest_types) / sizeof(guest_types[0]))
			return log_reason(err, errlen, "mount %s: type '%s' cannot be mounted in a VM (binds and the kernel's own file systems can)", dest, type);
		if (add_fsmount(b, type, source, dest, all_options(b, o)))
			return -ENOMEM;
	}
	return 0;
}

static int load_paths(struct json_object *linux_, const char *key, const char **list, unsigned int *nr,
		      char *err, size_t errlen)
{
	struct json_object *paths;
	if (member(linux_, key, json_type_array, &paths, "linux.", err, errlen) < 0)
		return -EINVAL;
	for (size_t i = 0; paths && i < json_object_array_length(paths); i++) {
		const char *p = string_at(paths, i);
		if (!p || p[0] != '/' || *nr == OCI_MAX_MOUNTS)
			return log_reason(err, errlen, "config.json: linux.%s: bad or over %d paths", key, OCI_MAX_MOUNTS);
		list[(*nr)++] = p;
	}
	return 0;
}

/* The ids below 0 that the caller's own user namespace has. */
static uint32_t own_ids(const char *map_file)
{
	FILE *f = fopen(map_file, "re");
	unsigned long inside, outside, count, found = 1;
	while (f && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		if (inside == 0)
			found = count;
	if (f)
		fclose(f);
	return found < OCI_IDENTITY_IDS ? (uint32_t)found : OCI_IDENTITY_IDS;
}

static int load_id_maps(struct json_object *linux_, const char *key, struct cli_id_map *maps,
			unsigned int *nr, char *err, size_t errlen)
{
	struct json_object *list;
	if (member(linux_, key, json_type_array, &list, "linux.", err, errlen) < 0)
		return -EINVAL;
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		struct json_object *m = json_object_array_get_idx(list, i), *c,
				   *h, *s;
		if (member(m, "containerID", json_type_int, &c, "", err, errlen) <= 0 ||
		    member(m, "hostID", json_type_int, &h, "", err, errlen) <= 0 ||
		    member(m, "size", json_type_int, &s, "", err, errlen) <= 0 ||
		    *nr == CLI_MAX_ID_MAPS)
			return log_reason(err, errlen, "config.json: linux.%s[%zu]: needs containerID, hostID and size (at most %d maps)", key, i, CLI_MAX_ID_MAPS);
		maps[(*nr)++] = (struct cli_id_map){
			.guest = (uint32_t)json_object_get_int64(c),
			.host = (uint32_t)json_object_get_int64(h),
			.count = (uint32_t)json_object_get_int64(s)};
	}
	return 0;
}

static int load_namespaces(struct oci_bundle *b, struct json_object *linux_,
			   char *err, size_t errlen)
{
	struct json_object *list;
	bool user = false;
	if (member(linux_, "namespaces", json_type_array, &list, "linux.", err, errlen) < 0)
		return -EINVAL;
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		struct json_object *ns = json_object_array_get_idx(list, i), *t, *p;
		if (member(ns, "type", json_type_string, &t, "linux.namespaces[].", err, errlen) <= 0 ||
		    member(ns, "path", json_type_string, &p, "linux.namespaces[].", err, errlen) < 0)
			return log_reason(err, errlen, "config.json: linux.namespaces[%zu]: no type", i);
		const char *type = json_object_get_string(t);
		user = user || !strcmp(type, "user");
		if (!strcmp(type, "network") && p)
			b->netns = json_object_get_string(p);
		else if (p && strcmp(type, "user"))
			return log_reason(err, errlen, "config.json: linux.namespaces: joining the %s namespace at %s: each fsvm container is a VM of its own, sharing none", type, json_object_get_string(p));
	}
	if (user)
		return load_id_maps(linux_, "uidMappings", b->cfg.uid_map, &b->cfg.nr_uid_maps, err, errlen) ||
		       load_id_maps(linux_, "gidMappings", b->cfg.gid_map, &b->cfg.nr_gid_maps, err, errlen)
			       ? -EINVAL : 0;
	/* No user namespace: the container's ids are the caller's. */
	b->cfg.uid_map[0] = (struct cli_id_map){.count = own_ids("/proc/self/uid_map")};
	b->cfg.gid_map[0] = (struct cli_id_map){.count = own_ids("/proc/self/gid_map")};
	b->cfg.nr_uid_maps = b->cfg.nr_gid_maps = 1;
	return 0;
}

static bool has_annotation(const struct oci_bundle *b, const char *key)
{
	struct json_object *ann, *v;
	return json_object_object_get_ex(b->config, "annotations", &ann) &&
	       json_object_object_get_ex(ann, key, &v);
}

/* linux.resources: the VM's size. A CPU quota is that many vCPUs, a
 * memory limit the guest's RAM; io.fsvm.cpus and .mem say otherwise. */
static int load_resources(struct oci_bundle *b, struct json_object *linux_,
			  char *err, size_t errlen)
{
	struct json_object *res, *mem, *cpu, *limit, *quota, *period;
	if (member(linux_, "resources", json_type_object, &res, "linux.", err, errlen) < 0 ||
	    member(res, "memory", json_type_object, &mem, "linux.resources.", err, errlen) < 0 ||
	    member(res, "cpu", json_type_object, &cpu, "linux.resources.", err, errlen) < 0 ||
	    member(mem, "limit", json_type_int, &limit, "linux.resources.memory.", err, errlen) < 0 ||
	    member(cpu, "quota", json_type_int, &quota, "linux.resources.cpu.", err, errlen) < 0 ||
	    member(cpu, "period", json_type_int, &period, "linux.resources.cpu.", err, errlen) < 0)
		return -EINVAL;
	if (has_annotation(b, "io.fsvm.mem") || has_annotation(b, "io.fsvm.memory"))
		limit = NULL;
	if (has_annotation(b, "io.fsvm.cpus"))
		quota = NULL;
	if (limit && json_object_get_int64(limit) > 0) {
		uint64_t bytes = (uint64_t)json_object_get_int64(limit) &
				 ~(GUEST_PAGE_SIZE - 1);
		if (bytes < CLI_MIN_MEM)
			return log_reason(err, errlen, "linux.resources.memory.limit: %llu bytes is below a VM's 64 MiB", (unsigned long long)bytes);
		b->cfg.mem = bytes < CLI_MAX_MEM ? bytes : CLI_MAX_MEM;
	}
	if (quota && period && json_object_get_int64(quota) > 0 &&
	    json_object_get_int64(period) > 0) {
		int64_t q = json_object_get_int64(quota), p = json_object_get_int64(period);
		int64_t cpus = (q + p - 1) / p;
		b->cfg.cpus = (unsigned int)(cpus < 1 ? 1 : cpus > 64 ? 64 : cpus);
	}
	return 0;
}

#define OCI_MAX_ANNOTATIONS 32

/* io.fsvm.OPTION annotations: fsvm run's options that shape the VM, as
 * "--OPTION=VALUE" words for cli_parse (which then derives what follows
 * from them, as from flags: --microvm's guest and transport). The words
 * are malloc'd; *nr of them after "fsvm run". */
static int annotation_args(struct oci_bundle *b, char **args, int *nr,
			   char *err, size_t errlen)
{
	static const char *const allowed[] = {
		"cpus", "mem", "memory", "guest-kernel", "kernel", "initrd",
		"modules", "append", "cache", "dax", "transport", "microvm",
		"timeout"};
	struct json_object *ann;
	*nr = 0;
	int found = member(b->config, "annotations", json_type_object, &ann, "", err, errlen);
	if (found <= 0)
		return found;
	json_object_object_foreach(ann, key, value)
	{
		if (strncmp(key, "io.fsvm.", 8))
			continue;
		const char *name = key + 8;
		size_t k = 0;
		while (k < sizeof(allowed) / sizeof(allowed[0]) && strcmp(name, allowed[k]))
			k++;
		if (k == sizeof(allowed) / sizeof(allowed[0]) ||
		    !json_object_is_type(value, json_type_string))
			return log_reason(err, errlen, "annotation %s: not one fsvm takes (io.fsvm.cpus, .mem, .guest-kernel, .kernel, ...), or not a string", key);
		const char *text = json_object_get_string(value);
		bool flag = cli_option_kind(name, &(bool){false}) == 0;
		if (flag && strcmp(text, "true") && strcmp(text, "false"))
			return log_reason(err, errlen, "annotation %s: 'true' or 'false'", key);
		if (flag && !strcmp(text, "false"))
			continue;
		if (*nr == OCI_MAX_ANNOTATIONS)
			return log_reason(err, errlen, "annotations: over %d of fsvm's", OCI_MAX_ANNOTATIONS);
		if ((flag ? asprintf(&args[*nr], "--%s", name)
			  : asprintf(&args[*nr], "--%s=%s", name, text)) < 0)
			return -ENOMEM;
		++*nr;
	}
	return 0;
}

/* fsvm run's defaults, under the annotations' options. */
static int parse_options(struct oci_bundle *b, char *err, size_t errlen)
{
	char *args[2 + OCI_MAX_ANNOTATIONS + 1] = {"fsvm", "run"};
	int nr = 0;
	char msg[256];
	int e = annotation_args(b, args + 2, &nr, err, errlen);
	if (!e && (e = cli_parse(2 + nr, args, &b->cfg, msg, sizeof(msg))))
		log_reason(err, errlen, "annotations: %s", msg);
	/* Kept after cli_parse, which starts cfg (and what it owns) anew. */
	for (int i = 0; i < nr; i++)
		if (e)
			free(args[2 + i]);
		else if (!cli_own(&b->cfg, args[2 + i]))
			e = -ENOMEM;
	return e ? -EINVAL : 0;
}

static int reject_hooks(struct oci_bundle *b, char *err, size_t errlen)
{
	struct json_object *hooks;
	int found = member(b->config, "hooks", json_type_object, &hooks, "", err, errlen);
	if (found <= 0)
		return found;
	json_object_object_foreach(hooks, kind, list)
	{
		if (json_object_is_type(list, json_type_array) &&
		    json_object_array_length(list))
			return log_reason(err, errlen, "config.json: hooks.%s: fsvm runs no hooks", kind);
	}
	return 0;
}

int oci_bundle_load(const char *dir, struct oci_bundle *b, char *err,
		    size_t errlen)
{
	memset(b, 0, sizeof(*b));
	if (!realpath(dir, b->bundle))
		return log_reason(err, errlen, "bundle %s: %s", dir, strerror(errno));
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/config.json", b->bundle);
	if (read_json(path, &b->config, err, errlen) ||
	    check_version(b->config, err, errlen) || reject_hooks(b, err, errlen) ||
	    parse_options(b, err, errlen) || load_root(b, err, errlen))
		return -EINVAL;
	struct json_object *linux_, *hostname, *cgroups;
	if (member(b->config, "linux", json_type_object, &linux_, "", err, errlen) < 0 ||
	    member(b->config, "hostname", json_type_string, &hostname, "", err, errlen) < 0 ||
	    member(linux_, "cgroupsPath", json_type_string, &cgroups, "linux.", err, errlen) < 0)
		return -EINVAL;
	b->cfg.container = &b->job;
	b->job.hostname = hostname ? json_object_get_string(hostname) : NULL;
	b->cgroups_path = cgroups ? json_object_get_string(cgroups) : NULL;
	b->job.forward_signals = true;
	if (load_mounts(b, err, errlen) || load_namespaces(b, linux_, err, errlen) ||
	    load_resources(b, linux_, err, errlen) ||
	    load_paths(linux_, "maskedPaths", b->masked, &b->job.nr_masked, err, errlen) ||
	    load_paths(linux_, "readonlyPaths", b->readonly, &b->job.nr_readonly, err, errlen) ||
	    load_process(b, err, errlen))
		return -EINVAL;
	b->job.fsmounts = b->fsmounts;
	b->job.files = b->files;
	b->job.masked = b->masked;
	b->job.readonly = b->readonly;
	b->job.process = b->process;
	return 0;
}

int oci_process_load(const char *path, const char *rootfs, struct oci_bundle *b,
		     char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	char *defaults[] = {"fsvm", "run", NULL};
	struct json_object *process;
	if (cli_parse(2, defaults, &b->cfg, err, errlen) ||
	    read_json(path, &process, err, errlen))
		return -EINVAL;
	/* What load_process reads: a config whose process this is. */
	b->config = json_object_new_object();
	if (!b->config || json_object_object_add(b->config, "process", process)) {
		json_object_put(process);
		return log_reason(err, errlen, "%s: out of memory", path);
	}
	snprintf(b->rootfs, sizeof(b->rootfs), "%s", rootfs);
	b->cfg.container = &b->job;
	int e = load_process(b, err, errlen);
	b->job.process = b->process;
	return e;
}

char *oci_bundle_annotations(const struct oci_bundle *b)
{
	struct json_object *ann = NULL;
	if (b->config)
		json_object_object_get_ex(b->config, "annotations", &ann);
	return strdup(ann ? json_object_to_json_string_ext(ann, JSON_C_TO_STRING_PLAIN)
			  : "{}");
}

void oci_bundle_free(struct oci_bundle *b)
{
	cli_free(&b->cfg);
	json_object_put(b->config);
	b->config = NULL;
}
