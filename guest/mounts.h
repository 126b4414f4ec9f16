/* Guest-side storage set-up: load the kernel modules the shares (and the
 * network) need and mount the virtio-fs shares, the root one becoming the
 * new root. */
#ifndef FSVM_GUEST_MOUNTS_H
#define FSVM_GUEST_MOUNTS_H

#include <stdbool.h>

/* Loads the modules listed in the initramfs, with network those of the
 * network device too; built-in ones just fail. */
void load_modules(bool network, bool vsock);

/* What mount(2) reads of its data: a page. */
#define MOUNT_DATA_MAX 4096

/* Mounts the shares listed in the spec and switches root into the first,
 * with the init's /dev, /proc and /sys and a fresh /run. Returns 0, or -1
 * after printing why. */
int mount_shares(void);

/* A container's root: mounts the one share the spec lists where
 * switch_root() takes it, and nothing else. 0, or -1 after one line. */
int mount_container_root(void);

/* Makes the mounted root the root (the initramfs stays below it,
 * unreachable). 0, or -1 after one line. */
int switch_root(void);

/* Mounts the virtio-fs share tag on target with flags (and always
 * nosuid) and file-system data (NULL: none), dax=inode added with a DAX
 * window. 0, or -1 with errno set and nothing printed. */
int mount_share(const char *tag, const char *target, unsigned long flags,
		const char *data);

/* mkdir -p, 0755; path shorter than PATH_MAX. */
int mkdir_p(const char *path);

#endif
