/* The virtio-fs device: FUSE requests taken straight from the guest's
 * virtqueues and run by the FUSE server against one host folder, with the
 * reply written straight back into guest memory. It knows no transport:
 * its struct virtio_dev goes to virtio-pci or virtio-mmio. */
#ifndef FSVM_VIRTIO_FS_H
#define FSVM_VIRTIO_FS_H

#include <linux/virtio_fs.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/dax_window.h"
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

#define VIRTIO_FS_MAX_REQUEST_QUEUES 16
#define VIRTIO_FS_QUEUE_SIZE 1024
/* Requests a doorbell runs on the vCPU that rang it before the rest go
 * to the queue's worker: a shallow queue (one synchronous caller, a
 * stat, a 4 KiB read) saves two thread switches per round trip, while
 * a deeper one, and writeback, which no caller waits for, still overlap
 * the guest with the host. Four, after the
 * virtio-fs developers' finding that a pool pays off past 3 outstanding
 * requests (docs/PERFORMANCE.md, Where a request runs). */
#define VIRTIO_FS_INLINE_BUDGET 4
/* Page-cache writeback of this many bytes or more goes to the worker even
 * from an idle ring: streaming writeback, which no caller waits for, so
 * the vCPU goes on dirtying pages. A smaller one (a small file's pages,
 * written back at close while the caller waits) runs in place. */
#define VIRTIO_FS_WRITEBACK_TO_WORKER (64u << 10)
/* A request queue's worker hands the request it took to one of up to this
 * many helper threads when more wait behind it, so one that waits on the
 * host (uncached data, fsync) does not hold up the rest. Started the first
 * time a queue is that deep: a shallow guest never has one. */
#define VIRTIO_FS_HELPERS 3

struct virtio_fs_worker;

struct virtio_fs {
	struct virtio_dev dev;
	struct virtio_fs_config config;
	struct fuse_server *server;
	struct dax_window dax; /* size 0: no DAX */
	struct fuse_dax_ops dax_ops; /* the window, as the server sees it */
	/* Doorbells hold it for reading while they run requests; activation
	 * and reset for writing, while the workers and rings change. */
	pthread_rwlock_t running;
	struct virtio_fs_worker *workers; /* one per queue while active */
	unsigned int nr_workers;
	/* Helpers each request queue may start: VIRTIO_FS_HELPERS, or 0 for
	 * the worker alone (bench/queue_depth measures one against the
	 * other). */
	unsigned int helpers_per_queue;
	int stop_fd;
	/* Requests taken from each queue (0: high priority), for -v: how a
	 * multiqueue guest spreads its load. */
	_Atomic uint64_t queue_requests[1 + VIRTIO_FS_MAX_REQUEST_QUEUES];
	_Atomic uint64_t requests_in_place; /* of them, run by a doorbell */
	_Atomic uint64_t requests_on_helpers; /* and by a worker's helper */
};

/* Creates the device for one share, exported under tag, with a DAX
 * window of dax_size bytes (0: none) holding at most dax_max_maps
 * mappings; fs->dev is then for a transport. */
int virtio_fs_create(struct virtio_fs *fs, const char *tag,
		     const struct fuse_server_config *cfg,
		     unsigned int nr_request_queues, uint64_t dax_size,
		     unsigned int dax_max_maps);

/* The window as a FUSE server's DAX operations. */
struct fuse_dax_ops virtio_fs_dax_ops(struct dax_window *w);

#endif
