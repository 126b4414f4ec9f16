/* Encodes the guest's job for guest/init.c (see guest/protocol.h). */
#include "vmm/run_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "guest/protocol.h"

/* Joins strings, each NUL-terminated, into one malloc'd buffer. */
static char *pack(const char *const *strs, size_t n, size_t *len)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += strlen(strs[i]) + 1;
	char *buf = malloc(total ? total : 1);
	if (!buf)
		return NULL;
	char *p = buf;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(strs[i]) + 1;
		memcpy(p, strs[i], l);
		p += l;
	}
	*len = total;
	return buf;
}

static int add_packed(struct cpio_buf *out, const char *name,
		      const char *const *strs, size_t n)
{
	size_t len;
	char *data = pack(strs, n, &len);
	if (!data)
		return -ENOMEM;
	int err = cpio_add(out, name, S_IFREG | 0644, data, len);
	free(data);
	return err;
}

/* Reads a whole host file into the archive as name. */
static int add_file(struct cpio_buf *out, const char *name, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	char *data = NULL;
	int err = fstat(fd, &st) < 0 ? -errno : 0;
	if (!err && !(data = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	size_t done = 0;
	while (!err && done < (size_t)st.st_size) {
		ssize_t n = read(fd, data + done, (size_t)st.st_size - done);
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	close(fd);
	if (!err)
		err = cpio_add(out, name, S_IFREG | 0644, data, done);
	free(data);
	return err;
}

static int add_modules(struct cpio_buf *out, const struct kernel_modules *km)
{
	int err = cpio_add(out, GUEST_SPEC_MODULES, S_IFDIR | 0755, NULL, 0);
	size_t len = 0;
	char order[KERNEL_MODULES_MAX * sizeof(km->name[0])];
	for (unsigned int i = 0; !err && i < km->nr; i++) {
		char name[sizeof(GUEST_SPEC_MODULES) + sizeof(km->name[0])];
		snprintf(name, sizeof(name), GUEST_SPEC_MODULES "%s", km->name[i]);
		err = add_file(out, name, km->path[i]);
		if (err)
			log_setup_error(km->path[i], "cannot read the module", err);
		len += (size_t)snprintf(order + len, sizeof(order) - len, "%s\n",
					km->name[i]);
	}
	if (!err)
		err = cpio_add(out, GUEST_SPEC_MODULES_ORDER, S_IFREG | 0644,
			       order, len);
	return err;
}

/* The copies of the host files a container binds, as files/0, files/1... */
static int add_container_files(struct cpio_buf *out,
			       const struct container_job *c)
{
	int err = cpio_add(out, GUEST_SPEC_FILES, S_IFDIR | 0755, NULL, 0);
	for (unsigned int i = 0; !err && i < c->nr_files; i++) {
		char name[sizeof(GUEST_SPEC_FILES) + 16];
		snprintf(name, sizeof(name), GUEST_SPEC_FILES "%u", i);
		if ((err = add_file(out, name, c->files[i])))
			log_setup_error(c->files[i], "cannot read the file to bind",
					err);
	}
	return err;
}

static int add_container(struct cpio_buf *out, const struct container_job *c)
{
	char uid[16], gid[16];
	snprintf(uid, sizeof(uid), "%u", c->uid);
	snprintf(gid, sizeof(gid), "%u", c->gid);
	/* No home or name: the init finds them in the new root's passwd. */
	const char *user[] = {uid, gid, "", ""};
	int err = add_packed(out, GUEST_SPEC_USER, user, 4);
	if (!err && c->hostname)
		err = cpio_add(out, GUEST_SPEC_HOSTNAME, S_IFREG | 0644,
			       c->hostname, strlen(c->hostname));
	if (!err)
		err = add_packed(out, GUEST_SPEC_FSMOUNTS, c->fsmounts,
				 4 * c->nr_fsmounts);
	if (!err && c->nr_files)
		err = add_container_files(out, c);
	if (!err && c->nr_masked)
		err = add_packed(out, GUEST_SPEC_MASKED, c->masked, c->nr_masked);
	if (!err && c->nr_readonly)
		err = add_packed(out, GUEST_SPEC_READONLY, c->readonly,
				 c->nr_readonly);
	if (!err && c->nr_process)
		err = add_packed(out, GUEST_SPEC_PROCESS, c->process,
				 c->nr_process);
	if (!err && c->exec)
		err = cpio_add(out, GUEST_SPEC_EXEC, S_IFREG | 0644, "1", 1);
	return err;
}

int run_spec_build(const struct run_spec *spec, struct cpio_buf *out)
{
	int err = cpio_add(out, GUEST_SPEC_DIR, S_IFDIR | 0755, NULL, 0);
	if (!err && spec->argc)
		err = add_packed(out, GUEST_SPEC_ARGV,
				 (const char *const *)spec->argv,
				 (size_t)spec->argc);
	/* Signals for a container's command, a terminal's new sizes. */
	if (!err && (spec->interactive ||
		     (spec->container && spec->container->forward_signals)))
		err = cpio_add(out, GUEST_SPEC_SIGNALS, S_IFREG | 0644, "1", 1);
	if (!err && spec->stdin_stream)
		err = cpio_add(out, GUEST_SPEC_STDIN, S_IFREG | 0644, "1", 1);
	if (!err && spec->snapshot)
		err = cpio_add(out, GUEST_SPEC_SNAPSHOT, S_IFREG | 0644, "1", 1);
	if (!err && spec->interactive) {
		char size[16] = "";
		if (spec->rows && spec->cols)
			snprintf(size, sizeof(size), "%u %u", spec->rows,
				 spec->cols);
		err = cpio_add(out, GUEST_SPEC_TTY, S_IFREG | 0644, size,
			       strlen(size));
	}
	if (!err && spec->dax)
		err = cpio_add(out, GUEST_SPEC_DAX, S_IFREG | 0644, "1", 1);
	if (!err && spec->cwd)
		err = cpio_add(out, GUEST_SPEC_CWD, S_IFREG | 0644, spec->cwd,
			       strlen(spec->cwd));
	if (!err && spec->cwd && spec->cwd_required)
		err = cpio_add(out, GUEST_SPEC_CWD_REQUIRED, S_IFREG | 0644,
			       "1", 1);
	if (!err && spec->nr_env)
		err = add_packed(out, GUEST_SPEC_ENV, spec->env, spec->nr_env);
	if (!err && spec->user) {
		char uid[16], gid[16];
		snprintf(uid, sizeof(uid), "%u", spec->uid);
		snprintf(gid, sizeof(gid), "%u", spec->gid);
		const char *fields[] = {uid, gid, spec->home, spec->name};
		err = add_packed(out, GUEST_SPEC_USER, fields, 4);
	}
	if (!err && spec->nr_mounts) {
		const char **fields = calloc(3 * spec->nr_mounts, sizeof(*fields));
		if (!fields)
			return -ENOMEM;
		for (unsigned int i = 0; i < spec->nr_mounts; i++) {
			fields[3 * i] = spec->mounts[i].tag;
			fields[3 * i + 1] = spec->mounts[i].mode;
			fields[3 * i + 2] = spec->mounts[i].guest_path;
		}
		err = add_packed(out, GUEST_SPEC_MOUNTS, fields,
				 3 * spec->nr_mounts);
		free(fields);
	}
	if (!err && spec->nr_net)
		err = add_packed(out, GUEST_SPEC_NET, spec->net, spec->nr_net);
	if (!err && spec->modules && spec->modules->nr)
		err = add_modules(out, spec->modules);
	if (!err && spec->container)
		err = add_container(out, spec->container);
	if (!err)
		err = cpio_finish(out);
	return err;
}
