/* Encodes the guest's job for guest/init.c (see guest/protocol.h). */
#include "vmm/run_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int run_spec_build(const struct run_spec *spec, struct cpio_buf *out)
{
	int err = cpio_add(out, GUEST_SPEC_DIR, S_IFDIR | 0755, NULL, 0);
	if (!err && spec->argc)
		err = add_packed(out, GUEST_SPEC_ARGV,
				 (const char *const *)spec->argv,
				 (size_t)spec->argc);
	if (!err && spec->interactive)
		err = cpio_add(out, GUEST_SPEC_TTY, S_IFREG | 0644, "1", 1);
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
	if (!err)
		err = cpio_finish(out);
	return err;
}
