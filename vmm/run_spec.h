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

/* What a container's config asks of the guest beyond `fsvm run`'s job
 * (vmm/oci_spec.c fills it; guest/protocol.h says what each part means). */
struct container_job {
	const char *hostname; /* NULL: the kernel's */
	bool root_readonly;   /* the root share read-only, no overlay */
	unsigned int uid, gid; /* the process's user */
	const char **fsmounts; /* GUEST_SPEC_FSMOUNTS: four fields a mount */
	unsigned int nr_fsmounts; /* mounts, not fields */
	const char **files; /* host files carried as GUEST_SPEC_FILES 0, 1, ... */
	unsigned int nr_files;
	const char **masked, **readonly;
	unsigned int nr_masked, nr_readonly;
	const char **process; /* GUEST_SPEC_PROCESS's "KEY=VALUE" fields */
	unsigned int nr_process;
	bool forward_signals; /* fsvm's signals go to the command */
	/* `fsvm oci exec` into it: a listening socket, virtio-vsock's. */
	bool exec;
	int exec_listen_fd;
};

struct run_spec {
	char *const *argv;
	int argc;
	bool interactive;
	bool stdin_stream; /* the command's stdin comes over vsock */
	bool snapshot; /* a snapshot's boot: GUEST_SPEC_SNAPSHOT */
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
	const struct container_job *container; /* NULL: not a container */
};

/* Encodes spec as an archive (module files read from the host); 0, or a
 * negative errno (a module file that cannot be read among them). */
int run_spec_build(const struct run_spec *spec, struct cpio_buf *out);

#endif
