/* Kernel developers' mode: the modules that go with a --kernel. From a
 * build tree (the kernel's folder or one of the four above it holds
 * modules.order) or from --modules DIR, as `make modules_install
 * INSTALL_MOD_PATH=DIR` left them (DIR/lib/modules/VERSION). fsvm hands
 * the guest init the few it needs to mount the shares (virtio, FUSE,
 * virtio-fs, overlay: each one the kernel has as a module), and shares an
 * installed tree read-only at /lib/modules/VERSION for the rest. */
#ifndef FSVM_KERNEL_MODULES_H
#define FSVM_KERNEL_MODULES_H

#include <limits.h>
#include <stdbool.h>

#include "vmm/cli.h"

#define KERNEL_MODULES_MAX 16

struct kernel_modules {
	char root[PATH_MAX];  /* the build tree, or DIR/lib/modules/VERSION */
	char version[128];    /* the kernel release; "" if unknown */
	bool installed;       /* root is an installed tree (shareable) */
	bool net;             /* the network's modules too (--net) */
	unsigned int nr;      /* modules to load, in order */
	char path[KERNEL_MODULES_MAX][PATH_MAX]; /* each on the host */
	char name[KERNEL_MODULES_MAX][64];       /* each file's name */
};

/* Finds the modules for cfg's kernel: 0 with km->nr == 0 and km->root
 * empty when there is no tree (the default guest, a lone bzImage), 0
 * with the tree found, or -1 after one line saying what is wrong with
 * --modules. */
int kernel_modules_find(const struct fsvm_config *cfg,
			struct kernel_modules *km);

#endif
