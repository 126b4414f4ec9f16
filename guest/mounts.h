/* Guest-side storage set-up: load the kernel modules the shares (and the
 * network) need and mount the virtio-fs shares, the root one becoming the
 * new root. */
#ifndef FSVM_GUEST_MOUNTS_H
#define FSVM_GUEST_MOUNTS_H

#include <stdbool.h>

/* Loads the modules listed in the initramfs, with network those of the
 * network device too; built-in ones just fail. */
void load_modules(bool network);

/* Mounts the shares listed in the spec and switches root into the first.
 * Returns 0, or -1 after printing why. */
int mount_shares(void);

#endif
