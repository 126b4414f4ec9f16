/* A container's mounts, as runc makes them: the list in order in the new
 * root (mount(8)'s options as mount(2)'s flags and data, a bind's flags
 * by a remount, propagation by calls of its own), the device nodes of a
 * tmpfs /dev, then masked and read-only paths. */
#include "guest/container_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "guest/mounts.h"
#include "guest/protocol.h"
#include "guest/spec.h"

#define DEV "/dev"
#define FIELDS_PER_MOUNT 4
/* The flags a bind takes from its source: its own need a remount. */
#define BIND_REMOUNT_FLAGS                                                     \
	(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME |           \
	 MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME)

static const struct {
	const char *name;
	unsigned long set, clear;
} flag_options[] = {
	{"defaults", 0, 0},
	{"ro", MS_RDONLY, 0},
	{"rw", 0, MS_RDONLY},
	{"nosuid", MS_NOSUID, 0},
	{"suid", 0, MS_NOSUID},
	{"nodev", MS_NODEV, 0},
	{"dev", 0, MS_NODEV},
	{"noexec", MS_NOEXEC, 0},
	{"exec", 0, MS_NOEXEC},
	{"sync", MS_SYNCHRONOUS, 0},
	{"async", 0, MS_SYNCHRONOUS},
	{"dirsync", MS_DIRSYNC, 0},
	{"relatime", MS_RELATIME, 0},
	{"norelatime", 0, MS_RELATIME},
	{"strictatime", MS_STRICTATIME, 0},
	{"nostrictatime", 0, MS_STRICTATIME},
	{"noatime", MS_NOATIME, 0},
	{"atime", 0, MS_NOATIME},
	{"nodiratime", MS_NODIRATIME, 0},
	{"diratime", 0, MS_NODIRATIME},
	{"lazytime", MS_LAZYTIME, 0},
	{"nolazytime", 0, MS_LAZYTIME},
	{"silent", MS_SILENT, 0},
	{"loud", 0, MS_SILENT},
	{"bind", MS_BIND, 0},
	{"rbind", MS_BIND | MS_REC, 0},
	{"remount", MS_REMOUNT, 0},
};

static const struct {
	const char *name;
	unsigned long flags;
} propagation_options[] = {
	{"private", MS_PRIVATE},
	{"rprivate", MS_PRIVATE | MS_REC},
	{"slave", MS_SLAVE},
	{"rslave", MS_SLAVE | MS_REC},
	{"shared", MS_SHARED},
	{"rshared", MS_SHARED | MS_REC},
	{"unbindable", MS_UNBINDABLE},
	{"runbindable", MS_UNBINDABLE | MS_REC},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool is_option(const char *item, size_t len, const char *name)
{
	return strlen(name) == len && !memcmp(item, name, len);
}

/* One flag or propagation option: true if item is one. */
static bool take_flag(const char *item, size_t len, struct mount_options *out,
		      const char **why)
{
	for (size_t i = 0; i < COUNT(flag_options); i++)
		if (is_option(item, len, flag_options[i].name)) {
			out->flags |= flag_options[i].set;
			out->flags &= ~flag_options[i].clear;
			return true;
		}
	for (size_t i = 0; i < COUNT(propagation_options); i++)
		if (is_option(item, len, propagation_options[i].name)) {
			if (out->nr_propagation == MOUNT_MAX_PROPAGATION)
				*why = "too many propagation options";
			else
				out->propagation[out->nr_propagation++] =
					propagation_options[i].flags;
			return true;
		}
	return false;
}

const char *mount_options_parse(char *options, struct mount_options *out)
{
	const char *why = NULL;
	char *data_end = options; /* the data so far, never past item */
	*out = (struct mount_options){0};
	for (char *item = options, *next; item && !why; item = next) {
		char *comma = strchr(item, ',');
		size_t len = comma ? (size_t)(comma - item) : strlen(item);
		next = comma ? comma + 1 : NULL;
		if (!len || take_flag(item, len, out, &why))
			continue;
		if (data_end != options)
			*data_end++ = ',';
		memmove(data_end, item, len);
		data_end += len;
	}
	*data_end = '\0';
	if (!why && data_end - options >= MOUNT_DATA_MAX)
		why = "the file-system options are longer than a page";
	out->data = options;
	return why;
}

static bool is_path(const char *path)
{
	return path[0] == '/' && strlen(path) < PATH_MAX;
}

/* A bind's source of the job's own: GUEST_SPEC_FILES then a file name. */
static const char *job_file_name(const char *source)
{
	size_t prefix = sizeof(GUEST_SPEC_FILES) - 1;
	if (strncmp(source, GUEST_SPEC_FILES, prefix))
		return NULL;
	return source + prefix;
}

static const char *check_mount(struct container_mount *m)
{
	if (!*m->type)
		return "no type";
	if (!is_path(m->destination))
		return "the destination is not an absolute path";
	m->bind = !strcmp(m->type, GUEST_FSMOUNT_BIND) ||
		  (m->options.flags & MS_BIND);
	if (!m->bind)
		return !strcmp(m->type, GUEST_FSMOUNT_SHARE) && !*m->source
			       ? "no share tag"
			       : NULL;
	m->options.flags |= MS_BIND;
	if (*m->options.data)
		return "a bind takes no file-system options";
	if ((m->job_file = job_file_name(m->source))) {
		const char *name = m->job_file;
		return !*name || strchr(name, '/') || !strcmp(name, ".") ||
				       !strcmp(name, "..") || strlen(name) > NAME_MAX
			       ? "not a file of the job's"
			       : NULL;
	}
	return is_path(m->source) ? NULL : "the source is not an absolute path";
}

int container_mounts_parse(char **fields, int count, struct container_mounts *c)
{
	if (count % FIELDS_PER_MOUNT ||
	    count / FIELDS_PER_MOUNT > CONTAINER_MAX_MOUNTS) {
		dprintf(STDERR_FILENO,
			"fsvm-init: mounts: %d fields, not four a mount for at most %d mounts\n",
			count, CONTAINER_MAX_MOUNTS);
		return -1;
	}
	c->nr_mounts = 0;
	for (int i = 0; i < count; i += FIELDS_PER_MOUNT) {
		struct container_mount *m = &c->mounts[c->nr_mounts++];
		*m = (struct container_mount){.type = fields[i],
					      .source = fields[i + 1],
					      .destination = fields[i + 2],
					      .job_file_tree = -1};
		const char *why = mount_options_parse(fields[i + 3], &m->options);
		if (!why)
			why = check_mount(m);
		if (why) {
			dprintf(STDERR_FILENO, "fsvm-init: mount %.64s on %.256s: %s\n",
				m->type, m->destination, why);
			return -1;
		}
	}
	return 0;
}

static int read_paths(const char *path, const char *what, char *buf,
		      size_t size, char **list)
{
	int n = spec_read_fields(path, what, buf, size, list, CONTAINER_MAX_PATHS);
	for (int i = 0; i < n; i++)
		if (!is_path(list[i])) {
			dprintf(STDERR_FILENO,
				"fsvm-init: %s: %.256s: not an absolute path\n",
				what, list[i]);
			return -1;
		}
	return n;
}

/* A detached copy of the mount at path, to attach where the new root
 * wants it once path is out of reach. */
static int take_tree(const char *path)
{
	return open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
}

int container_mounts_prepare(struct container_mounts *c)
{
	static char list[1 << 18], masked[1 << 16], readonly[1 << 16];
	static char *fields[FIELDS_PER_MOUNT * CONTAINER_MAX_MOUNTS + 1];
	int n = spec_read_fields("/" GUEST_SPEC_FSMOUNTS, "mounts", list,
				 sizeof(list), fields,
				 FIELDS_PER_MOUNT * CONTAINER_MAX_MOUNTS);
	if (n < 0 || container_mounts_parse(fields, n, c) < 0 ||
	    (c->nr_masked = read_paths("/" GUEST_SPEC_MASKED, "masked paths",
				       masked, sizeof(masked), c->masked)) < 0 ||
	    (c->nr_readonly = read_paths("/" GUEST_SPEC_READONLY,
					 "read-only paths", readonly,
					 sizeof(readonly), c->readonly)) < 0)
		return -1;
	for (unsigned int i = 0; i < c->nr_mounts; i++) {
		struct container_mount *m = &c->mounts[i];
		char path[sizeof("/" GUEST_SPEC_FILES) + NAME_MAX];
		if (!m->job_file)
			continue;
		snprintf(path, sizeof(path), "/" GUEST_SPEC_FILES "%s", m->job_file);
		if ((m->job_file_tree = take_tree(path)) < 0) {
			dprintf(STDERR_FILENO, "fsvm-init: mount bind on %s: %s: %s\n",
				m->destination, path, strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < c->nr_masked; i++)
		if ((c->null_trees[i] = take_tree(DEV "/null")) < 0) {
			dprintf(STDERR_FILENO, "fsvm-init: masked paths: " DEV "/null: %s\n",
				strerror(errno));
			return -1;
		}
	c->has_console = stat(GUEST_STDOUT_TTY, &c->console) == 0 &&
			 S_ISCHR(c->console.st_mode);
	return 0;
}

static int mount_failed(const char *type, const char *target)
{
	dprintf(STDERR_FILENO, "fsvm-init: mount %s on %s: %s\n", type, target,
		strerror(errno));
	return -1;
}

/* A missing destination: a folder, or an empty file for a file's bind. */
static int make_destination(const struct container_mount *m)
{
	struct stat st;
	if (stat(m->destination, &st) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	bool file = m->job_file != NULL;
	if (m->bind && !m->job_file) {
		if (stat(m->source, &st) < 0)
			return -1;
		file = !S_ISDIR(st.st_mode);
	}
	if (!file)
		return mkdir_p(m->destination);
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", m->destination);
	*strrchr(parent, '/') = '\0';
	if (*parent && mkdir_p(parent) < 0)
		return -1;
	int fd = open(m->destination, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* The entry's mount itself. */
static int attach(struct container_mount *m)
{
	const char *dest = m->destination;
	unsigned long flags = m->options.flags;
	const char *data = *m->options.data ? m->options.data : NULL;
	if (flags & MS_REMOUNT)
		return mount(m->source, dest, m->bind ? NULL : m->type, flags, data);
	if (m->job_file) {
		/* Its symbolic links followed, as mount(2) follows them. */
		int err = move_mount(m->job_file_tree, "", AT_FDCWD, dest,
				     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS);
		close(m->job_file_tree);
		m->job_file_tree = -1;
		return err;
	}
	if (m->bind)
		return mount(m->source, dest, NULL, flags & (MS_BIND | MS_REC), NULL);
	if (!strcmp(m->type, GUEST_FSMOUNT_SHARE))
		return mount_share(m->source, dest, flags, data);
	return mount(m->source, dest, m->type, flags, data);
}

/* What mount(8) does with one entry: the mount, a bind's own flags by a
 * remount, then each propagation change. */
static int mount_one(struct container_mount *m)
{
	const char *dest = m->destination;
	unsigned long flags = m->options.flags;
	if (!(flags & MS_REMOUNT) && make_destination(m) < 0) {
		dprintf(STDERR_FILENO,
			"fsvm-init: mount %s on %s: cannot make the mount point: %s\n",
			m->type, dest, strerror(errno));
		return -1;
	}
	if (attach(m) < 0)
		return mount_failed(m->type, dest);
	if (m->bind && !(flags & MS_REMOUNT) && (flags & BIND_REMOUNT_FLAGS) &&
	    mount(NULL, dest, NULL,
		  MS_REMOUNT | MS_BIND | (flags & BIND_REMOUNT_FLAGS), NULL) < 0)
		return mount_failed(m->type, dest);
	for (unsigned int i = 0; i < m->options.nr_propagation; i++)
		if (mount(NULL, dest, NULL, m->options.propagation[i], NULL) < 0)
			return mount_failed(m->type, dest);
	return 0;
}

static int dev_failed(const char *name)
{
	dprintf(STDERR_FILENO, "fsvm-init: " DEV "/%s: %s\n", name, strerror(errno));
	return -1;
}

static int make_node(const char *name, mode_t mode, dev_t rdev)
{
	char path[64];
	snprintf(path, sizeof(path), DEV "/%s", name);
	/* chmod: the init's umask would take bits off. */
	if ((mknod(path, S_IFCHR | mode, rdev) < 0 && errno != EEXIST) ||
	    chmod(path, mode) < 0)
		return dev_failed(name);
	return 0;
}

/* A tmpfs /dev gets what runc puts in one: its nodes and links, and the
 * init's console as /dev/console (the command's stdio is already open). */
static int populate_dev(const struct container_mounts *c)
{
	static const struct {
		const char *name;
		unsigned int major, minor;
	} nodes[] = {
		{"null", 1, 3},    {"zero", 1, 5},	{"full", 1, 7},
		{"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
	};
	static const struct {
		const char *name, *target;
	} links[] = {
		{"ptmx", "pts/ptmx"},		{"fd", "/proc/self/fd"},
		{"stdin", "/proc/self/fd/0"},	{"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"},
	};
	for (size_t i = 0; i < COUNT(nodes); i++)
		if (make_node(nodes[i].name, 0666,
			      makedev(nodes[i].major, nodes[i].minor)) < 0)
			return -1;
	for (size_t i = 0; i < COUNT(links); i++) {
		char path[64];
		snprintf(path, sizeof(path), DEV "/%s", links[i].name);
		if (symlink(links[i].target, path) < 0 && errno != EEXIST)
			return dev_failed(links[i].name);
	}
	return c->has_console ? make_node("console", c->console.st_mode & 07777,
					  c->console.st_rdev)
			      : 0;
}

/* A masked file gets the init's /dev/null over it, a folder an empty
 * read-only tmpfs. */
static int mask(const char *path, int null_tree)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return errno == ENOENT ? 0 : mount_failed("bind", path);
	if (S_ISDIR(st.st_mode))
		return mount("tmpfs", path, "tmpfs",
			     MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0
			       ? mount_failed("tmpfs", path)
			       : 0;
	return move_mount(null_tree, "", AT_FDCWD, path,
			  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS) < 0
		       ? mount_failed("bind", path)
		       : 0;
}

/* The flags a read-only remount keeps, as runc keeps them. */
static unsigned long kept_flags(const char *path)
{
	static const struct {
		unsigned long st, ms;
	} kept[] = {
		{ST_NOSUID, MS_NOSUID},	      {ST_NODEV, MS_NODEV},
		{ST_NOEXEC, MS_NOEXEC},	      {ST_NOATIME, MS_NOATIME},
		{ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME},
	};
	struct statvfs sv;
	unsigned long flags = 0;
	if (statvfs(path, &sv) < 0)
		return 0;
	for (size_t i = 0; i < COUNT(kept); i++)
		if (sv.f_flag & kept[i].st)
			flags |= kept[i].ms;
	return flags;
}

static int make_readonly(const char *path)
{
	if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errno == ENOENT ? 0 : mount_failed("bind", path);
	if (mount(NULL, path, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(path), NULL) < 0)
		return mount_failed("bind", path);
	return 0;
}

int container_mounts_apply(struct container_mounts *c)
{
	int err = 0;
	for (unsigned int i = 0; !err && i < c->nr_mounts; i++) {
		const struct container_mount *m = &c->mounts[i];
		err = mount_one(&c->mounts[i]);
		/* While /dev is fresh: later entries mount inside it. */
		if (!err && !m->bind && !strcmp(m->type, "tmpfs") &&
		    !strcmp(m->destination, DEV))
			err = populate_dev(c);
	}
	for (int i = 0; !err && i < c->nr_masked; i++)
		err = mask(c->masked[i], c->null_trees[i]);
	for (int i = 0; !err && i < c->nr_readonly; i++)
		err = make_readonly(c->readonly[i]);
	for (unsigned int i = 0; i < c->nr_mounts; i++)
		if (c->mounts[i].job_file_tree >= 0)
			close(c->mounts[i].job_file_tree);
	for (int i = 0; i < c->nr_masked; i++)
		close(c->null_trees[i]);
	return err;
}
