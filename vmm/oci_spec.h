/* An OCI bundle (a folder with config.json and a root file system) as an
 * fsvm run: the runtime spec's fields turned into fsvm's options and a
 * container job for the guest init. docs/OCI.md says what is taken, what
 * is ignored inside a VM, and what is refused. */
#ifndef FSVM_OCI_SPEC_H
#define FSVM_OCI_SPEC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "vmm/cli.h"
#include "vmm/run_spec.h"

#define OCI_MAX_MOUNTS 64
#define OCI_MAX_PROCESS_FIELDS 64
#define OCI_MAX_FILE_BIND (1 << 20) /* a file bind is carried as a copy */

struct json_object;

struct oci_bundle {
	struct fsvm_config cfg;
	struct container_job job;
	char bundle[PATH_MAX]; /* the folder, absolute */
	char rootfs[PATH_MAX];
	bool terminal;             /* process.terminal: a console socket's pty */
	const char *netns;         /* a network namespace's path; NULL: none */
	const char *cgroups_path;  /* linux.cgroupsPath; NULL: none */
	struct json_object *config; /* the strings above point into it */
	const char *fsmounts[4 * OCI_MAX_MOUNTS];
	const char *files[OCI_MAX_MOUNTS];
	const char *masked[OCI_MAX_MOUNTS], *readonly[OCI_MAX_MOUNTS];
	const char *process[OCI_MAX_PROCESS_FIELDS];
};

/* Reads dir/config.json into *b. A bundle fsvm cannot run (no config, bad
 * JSON, an unknown ociVersion, no root file system, a process that is not
 * there or not executable, a mount or namespace a VM cannot have) is
 * -EINVAL with one line in err. oci_bundle_free after success or failure. */
int oci_bundle_load(const char *dir, struct oci_bundle *b, char *err,
		    size_t errlen);
void oci_bundle_free(struct oci_bundle *b);

/* `exec --process FILE`: the process (a config.json's "process" object)
 * into b's cfg (guest_argv, env, cwd), job (uid, gid, process fields)
 * and terminal, the program checked in rootfs. As oci_bundle_load's. */
int oci_process_load(const char *path, const char *rootfs, struct oci_bundle *b,
		     char *err, size_t errlen);

/* config.json's annotations as JSON text (malloc'd; "{}" when none). */
char *oci_bundle_annotations(const struct oci_bundle *b);

#endif
