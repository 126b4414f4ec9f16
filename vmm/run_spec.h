/* The guest's job description (command, terminal mode, shares, working
 * directory) as an initramfs archive appended to the initrd. */
#ifndef FSVM_RUN_SPEC_H
#define FSVM_RUN_SPEC_H

#include <stdbool.h>

#include "vmm/cpio.h"
#include "vmm/kernel_modules.h"

struct run_spec_mount {
	const char *tag;
	const char *mode; /* GUEST_MOUNT_* */
	const char *guest_path;
};

struct run_spec {
	char *const *argv;
	int argc;
	bool interactive;
	unsigned short rows, cols; /* the terminal's size; 0: unknown */
	bool dax;
	const char *cwd; /* NULL: none */
	bool cwd_required; /* the user named it: fail without it */
	const char *const *env; /* "NAME=VALUE" */
	unsigned int nr_env;
	/* user: run the command as uid/gid with HOME=home, USER=name. */
	bool user;
	unsigned int uid, gid;
	const char *home, *name;
	const struct run_spec_mount *mounts;
	unsigned int nr_mounts;
	const struct kernel_modules *modules; /* NULL or none: the initrd's */
	const char *const *net; /* GUEST_SPEC_NET's fields; none: no network */
	unsigned int nr_net;
};

/* Encodes spec as an archive (module files read from the host); 0, or a
 * negative errno (a module file that cannot be read among them). */
int run_spec_build(const struct run_spec *spec, struct cpio_buf *out);

#endif
