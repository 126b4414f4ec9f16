/* virtio-fs's queue engine: who runs the FUSE requests of a live device's
 * queues. Four kinds of thread do: the vCPU that rang a doorbell, for the
 * first few of a shallow queue; each queue's worker for the rest, the
 * high-priority queue's (FORGET, INTERRUPT) and each request queue's; and
 * on a deep request queue its worker's helpers. Each request goes through
 * the FUSE server, its reply straight back into the guest's ring. */
#ifndef FSVM_VIRTIO_FS_QUEUES_H
#define FSVM_VIRTIO_FS_QUEUES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/fuse_server.h"
#include "virtio/virtio_dev.h"

/* Request queues a device may have, after the high-priority one. */
#define VIRTIO_FS_MAX_REQUEST_QUEUES 16
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

/* One device's queues and the threads that serve them. */
struct virtio_fs_queues {
	struct fuse_server *server; /* the device's, while live */
	/* Doorbells hold it for reading while they run requests; start and
	 * stop for writing, while the workers and rings change. */
	pthread_rwlock_t running;
	struct virtio_fs_worker *workers; /* one per queue while live */
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

/* Readies qs, with no queue live yet; 0 or -errno. */
int virtio_fs_queues_init(struct virtio_fs_queues *qs);

/* DRIVER_OK: a worker for each of the nr queues (queue 0 the high-priority
 * one), running their requests through server; the queues and server stay
 * qs's until virtio_fs_queues_stop. 0, or -errno with none started. */
int virtio_fs_queues_start(struct virtio_fs_queues *qs,
			   struct fuse_server *server,
			   struct virtio_queue *queues, unsigned int nr);

/* Reset: waits for the requests in hand, ends every thread and drops the
 * requests still waiting on a lock, unanswered; nothing runs until the
 * next start. */
void virtio_fs_queues_stop(struct virtio_fs_queues *qs);

/* The guest rang queue q's doorbell (any q), on the vCPU thread that rang
 * it: runs a few requests here, or wakes the queue's worker. */
void virtio_fs_queues_notify(struct virtio_fs_queues *qs, unsigned int q);

/* With the vCPUs stopped (no doorbell comes): whether every live queue
 * has nothing posted and not taken, nothing taken and not answered (in
 * hand, left for the worker, or waiting on a lock). */
bool virtio_fs_queues_idle(struct virtio_fs_queues *qs);

/* -v, once the vCPUs have stopped: logs where each live queue's requests
 * stand, each line under name. */
void virtio_fs_queues_log_states(struct virtio_fs_queues *qs,
				 const char *name);

#endif
