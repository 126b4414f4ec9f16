/* The virtio-fs device: FUSE requests taken straight from the guest's
 * virtqueues and run by the FUSE server against one host folder, with the
 * reply written straight back into guest memory. It knows no transport:
 * its struct virtio_dev goes to virtio-pci or virtio-mmio. */
#ifndef FSVM_VIRTIO_FS_H
#define FSVM_VIRTIO_FS_H

#include <linux/virtio_fs.h>

#include "core/dax_window.h"
#include "core/state_blob.h"
#include "devices/virtio_fs_queues.h"
#include "fs/fuse_server.h"
#include "virtio/virtio_dev.h"

/* The device type's name: its reports', and its options' key in the
 * machine (machine_options). */
#define VIRTIO_FS_DEVICE_NAME "virtio-fs"

/* One share as the machine is to serve it: a device of its own. */
struct virtio_fs_share {
	const char *tag;
	struct fuse_server_config fuse;
	uint64_t dax_size; /* 0: no DAX window */
	unsigned int dax_max_maps;
};

/* The type's options: the shares, in the order their devices are added
 * (the root first). */
struct virtio_fs_options {
	const struct virtio_fs_share *shares;
	unsigned int nr_shares;
};

#define VIRTIO_FS_QUEUE_SIZE 1024

struct virtio_fs {
	struct virtio_dev dev;
	struct virtio_fs_config config;
	struct fuse_server *server;
	struct dax_window dax; /* size 0: no DAX */
	struct fuse_dax_ops dax_ops; /* the window, as the server sees it */
	struct virtio_fs_queues queues; /* who runs the requests */
};

/* Creates the device for one share, exported under tag, with a DAX
 * window of dax_size bytes (0: none) holding at most dax_max_maps
 * mappings; fs->dev is then for a transport. */
int virtio_fs_create(struct virtio_fs *fs, const char *tag,
		     const struct fuse_server_config *cfg,
		     unsigned int nr_request_queues, uint64_t dax_size,
		     unsigned int dax_max_maps);

/* For a snapshot (docs/snapshot.md): the share's FUSE state, then its
 * DAX window's mappings, each file named by the node id the guest holds
 * for it; the transport's state is its own (virtio_transport_save). The
 * device must be quiescent: the vCPUs stopped and no request in hand on
 * any queue or waiting on a lock (the queues keep no count of those: the
 * caller waits for them to drain). Returns 0 or -errno. */
int virtio_fs_save_state(struct virtio_fs *fs, struct state_out *out);
/* Into a device as new (created on the same share, with a window of the
 * same size, its queues not started), what save wrote. Returns 0, or
 * -errno with a line in err and the device as new again. */
int virtio_fs_restore_state(struct virtio_fs *fs, struct state_in *in,
			    char *err, size_t errlen);

/* The window as a FUSE server's DAX operations. */
struct fuse_dax_ops virtio_fs_dax_ops(struct dax_window *w);

#endif
