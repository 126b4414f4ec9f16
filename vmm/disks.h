/* --disk: the images and block devices given to the guest, opened and
 * locked at set-up for the virtio-blk devices (devices/virtio_blk.h). */
#ifndef FSVM_DISKS_H
#define FSVM_DISKS_H

#include "devices/virtio_blk.h"
#include "vmm/cli.h"

/* Opens, sizes and locks each of cfg's disks into *o, a request queue per
 * vCPU. A missing, unreadable or locked image is one line and a negative
 * errno, with nothing left open. */
int disks_open(struct virtio_blk_options *o, const struct fsvm_config *cfg);

/* Whether disks_open would take d (vmm/check.h): 0, or a negative errno
 * after the same one line. */
int disks_check(const struct cli_disk *d);

/* Closes what disks_open opened and the devices did not take. */
void disks_close(struct virtio_blk_options *o);

#endif
