/* The shares a run serves, from the command line to what the machine and
 * the guest need: each folder checked and resolved, its tag, its FUSE
 * policy (cache mode, writeback, DAX) and its caps on host resources, and
 * where the guest mounts it. */
#ifndef FSVM_SHARES_H
#define FSVM_SHARES_H

#include <limits.h>

#include "devices/virtio_fs.h"
#include "vmm/cli.h"
#include "vmm/run_spec.h"

#define SHARES_MAX (1 + CLI_MAX_SHARES) /* the root, then each --share */

struct shares {
	struct virtio_fs_share specs[SHARES_MAX];
	struct run_spec_mount mounts[SHARES_MAX];
	unsigned int nr;
	uint64_t dax_size; /* per share; 0: no DAX */
	char host[SHARES_MAX][PATH_MAX];
	char tag[SHARES_MAX][16];
};

/* Whether host can be a share (what names it: "--root", "--share"): a
 * folder, not a pseudo file system; its absolute path into resolved
 * (PATH_MAX). On error logs why and returns a negative errno. */
int shares_check_folder(const char *what, const char *host, char *resolved);

/* Plans every share cfg names; on error logs why and returns -1. */
int shares_plan(struct shares *s, const struct fsvm_config *cfg);

#endif
