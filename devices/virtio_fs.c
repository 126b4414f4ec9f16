/* virtio-fs device: each queue's ring is drained by the vCPU that rang its
 * doorbell (a few requests) or by the queue's worker thread and, on a deep
 * queue, its helpers, running each request through the FUSE server with
 * zero copies. */
#include "devices/virtio_fs.h"

#include <errno.h>
#include <limits.h>
#include <linux/fuse.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "devices/device.h"

struct virtio_fs_worker;

struct virtio_fs_helper {
	struct virtio_fs_worker *w;
	pthread_t thread;
	struct desc_chain *chain; /* its buffer; the request while busy */
	bool busy;
};

struct virtio_fs_worker {
	struct virtio_fs *fs;
	struct virtio_queue *queue;
	unsigned int index;
	pthread_t thread;
	/* Held while the ring is drained: by the worker, or by the vCPU
	 * that rang the doorbell and found the ring free. Guards chain,
	 * handed_over and broken. */
	pthread_mutex_t run_lock;
	struct desc_chain *chain;
	/* chain is writeback a vCPU popped and left to the worker. */
	bool handed_over;
	bool broken; /* a malformed ring: ignored until the driver resets us */
	/* Used ring and interrupt: whoever drains, the helpers and the
	 * threads that finish waiting requests (fs/fuse_wait.c) all return
	 * chains. */
	pthread_mutex_t push_lock;
	/* Hand-offs to the helpers: their busy flags and chain buffers. */
	pthread_mutex_t hand_lock;
	pthread_cond_t hand_cond;
	bool stopping;
	struct virtio_fs_helper helpers[VIRTIO_FS_HELPERS];
	unsigned int nr_helpers; /* started so far */
};

static void virtio_fs_push(struct virtio_fs_worker *w, uint16_t head,
			   size_t len)
{
	pthread_mutex_lock(&w->push_lock);
	split_ring_push(&w->queue->ring, head, (uint32_t)len);
	virtio_queue_interrupt(w->queue);
	pthread_mutex_unlock(&w->push_lock);
}

/* fuse_completion: a request that waited is answered. */
static void virtio_fs_complete(void *opaque, uint64_t head, size_t len)
{
	virtio_fs_push(opaque, (uint16_t)head, len);
}

/* Runs the request in c and returns its chain, unless it waits. */
static void virtio_fs_run(struct virtio_fs_worker *w, const struct desc_chain *c)
{
	struct fuse_completion later = {
		.done = virtio_fs_complete, .opaque = w, .token = c->head};
	size_t len = c->unreachable
			     ? fuse_server_fail(w->fs->server, c->readable,
						c->nr_readable, c->writable,
						c->nr_writable, -EFAULT)
			     : fuse_server_handle(w->fs->server, c->readable,
						  c->nr_readable, c->writable,
						  c->nr_writable, &later);
	/* A waiting request keeps its chain until answered. */
	if (len != FUSE_DEFERRED)
		virtio_fs_push(w, c->head, len);
}

static void *virtio_fs_helper_main(void *arg)
{
	struct virtio_fs_helper *h = arg;
	struct virtio_fs_worker *w = h->w;

	pthread_mutex_lock(&w->hand_lock);
	for (;;) {
		while (!h->busy && !w->stopping)
			pthread_cond_wait(&w->hand_cond, &w->hand_lock);
		if (!h->busy)
			break;
		pthread_mutex_unlock(&w->hand_lock);
		virtio_fs_run(w, h->chain);
		atomic_fetch_add_explicit(&w->fs->requests_on_helpers, 1,
					  memory_order_relaxed);
		pthread_mutex_lock(&w->hand_lock);
		h->busy = false;
	}
	pthread_mutex_unlock(&w->hand_lock);
	return NULL;
}

/* Starts helper k with the worker's chain in hand, under hand_lock. */
static bool virtio_fs_start_helper(struct virtio_fs_worker *w, unsigned int k)
{
	struct virtio_fs_helper *h = &w->helpers[k];
	struct desc_chain *spare = malloc(sizeof(*spare));
	if (!spare)
		return false;
	*h = (struct virtio_fs_helper){.w = w, .chain = w->chain, .busy = true};
	if (pthread_create(&h->thread, NULL, virtio_fs_helper_main, h)) {
		free(spare);
		return false;
	}
	w->chain = spare;
	w->nr_helpers = k + 1;
	return true;
}

/* Gives the chain in hand to an idle helper, swapping buffers (a new
 * helper if all are busy and there is room); false when it stays. */
static bool virtio_fs_hand_off(struct virtio_fs_worker *w)
{
	bool handed = false;
	pthread_mutex_lock(&w->hand_lock);
	for (unsigned int k = 0; k < w->nr_helpers && !handed; k++) {
		struct virtio_fs_helper *h = &w->helpers[k];
		if (h->busy)
			continue;
		struct desc_chain *spare = h->chain;
		h->chain = w->chain;
		w->chain = spare;
		h->busy = handed = true;
		pthread_cond_broadcast(&w->hand_cond);
	}
	/* Threads running short only costs speed: the worker runs it. */
	if (!handed && w->nr_helpers < w->fs->helpers_per_queue)
		handed = virtio_fs_start_helper(w, w->nr_helpers);
	pthread_mutex_unlock(&w->hand_lock);
	return handed;
}

/* Whether the guest posted requests not yet taken. */
static bool requests_waiting(const struct split_ring *ring)
{
	return split_ring_avail_idx(ring) != ring->last_avail;
}

/* Runs the available requests under run_lock: all of them on the worker,
 * with its helpers taking those that have more behind them; in place, on
 * a vCPU, at most VIRTIO_FS_INLINE_BUDGET and no streaming writeback,
 * which the guest does not wait for: the vCPU goes back to the guest and
 * the worker writes it beside. Returns false when requests are left, with
 * the guest's notifications still off, for the worker. */
static bool virtio_fs_drain(struct virtio_fs_worker *w, bool in_place)
{
	struct virtio_queue *q = w->queue;
	if (w->broken || !q->ring.size)
		return true; /* stopped, or the driver left it disabled */
	if (w->handed_over) {
		if (in_place)
			return false;
		w->handed_over = false;
		virtio_fs_run(w, w->chain);
	}
	/* Queue 0 carries FORGETs, which never wait on the host. */
	bool helped = !in_place && w->index > 0;
	unsigned int budget = in_place ? VIRTIO_FS_INLINE_BUDGET : UINT_MAX;
	do {
		split_ring_set_notification(&q->ring, false);
		int got;
		while ((got = split_ring_pop(&q->ring, w->chain)) > 0) {
			const struct desc_chain *c = w->chain;
			atomic_fetch_add_explicit(&w->fs->queue_requests[w->index],
						  1, memory_order_relaxed);
			if (in_place && !c->unreachable &&
			    fuse_request_is_writeback(c->readable,
						      c->nr_readable,
						      VIRTIO_FS_WRITEBACK_TO_WORKER)) {
				w->handed_over = true;
				return false;
			}
			if (helped && requests_waiting(&q->ring) &&
			    virtio_fs_hand_off(w))
				continue;
			virtio_fs_run(w, w->chain);
			if (in_place)
				atomic_fetch_add_explicit(&w->fs->requests_in_place,
							  1, memory_order_relaxed);
			if (--budget == 0)
				return false;
		}
		if (got < 0) {
			log_error("virtio-fs: queue %u: bad descriptor chain (%s); queue stopped",
				  w->index, strerror(-got));
			w->broken = true;
			return true;
		}
	} while (split_ring_set_notification(&q->ring, true));
	return true;
}

static void *virtio_fs_worker_main(void *arg)
{
	struct virtio_fs_worker *w = arg;
	struct pollfd fds[2] = {
		{.fd = w->queue->kick_fd, .events = POLLIN},
		{.fd = w->fs->stop_fd, .events = POLLIN},
	};

	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("virtio-fs: poll: %s", strerror(errno));
			break;
		}
		if (fds[1].revents)
			break;
		uint64_t kicks;
		if (read(w->queue->kick_fd, &kicks, sizeof(kicks)) < 0 &&
		    errno != EAGAIN)
			break;
		pthread_mutex_lock(&w->run_lock);
		virtio_fs_drain(w, false);
		pthread_mutex_unlock(&w->run_lock);
	}
	return NULL;
}

/* The guest rang queue q, on its vCPU: a ring that nobody drains is
 * drained right here (virtio_fs_drain says how far), which saves the
 * thread switch to the worker and back that a shallow queue pays on
 * every request. A deeper queue, writeback, or a queue already being
 * drained goes to the worker, so one vCPU never serves a long batch. */
static void virtio_fs_notify(void *opaque, unsigned int q)
{
	struct virtio_fs *fs = opaque;
	pthread_rwlock_rdlock(&fs->running);
	if (q < fs->nr_workers) {
		struct virtio_fs_worker *w = &fs->workers[q];
		bool done = false;
		if (pthread_mutex_trylock(&w->run_lock) == 0) {
			done = virtio_fs_drain(w, true);
			pthread_mutex_unlock(&w->run_lock);
		}
		uint64_t one = 1;
		if (!done && write(w->queue->kick_fd, &one, sizeof(one)) < 0)
			log_error("virtio-fs: kick queue %u: %s", q,
				  strerror(errno));
	}
	pthread_rwlock_unlock(&fs->running);
}

/* Ends a worker's helpers once each has finished its request. */
static void virtio_fs_stop_helpers(struct virtio_fs_worker *w)
{
	pthread_mutex_lock(&w->hand_lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->hand_cond);
	pthread_mutex_unlock(&w->hand_lock);
	for (unsigned int k = 0; k < w->nr_helpers; k++) {
		pthread_join(w->helpers[k].thread, NULL);
		free(w->helpers[k].chain);
	}
	w->nr_helpers = 0;
}

/* What a worker holds once its threads are gone. */
static void virtio_fs_release_worker(struct virtio_fs_worker *w)
{
	pthread_mutex_destroy(&w->run_lock);
	pthread_mutex_destroy(&w->push_lock);
	pthread_mutex_destroy(&w->hand_lock);
	pthread_cond_destroy(&w->hand_cond);
	free(w->chain);
}

/* Under the running lock, held for writing. */
static void virtio_fs_stop_workers(struct virtio_fs *fs)
{
	if (!fs->workers)
		return;
	uint64_t one = 1;
	if (write(fs->stop_fd, &one, sizeof(one)) < 0)
		log_error("virtio-fs: stop: %s", strerror(errno));
	for (unsigned int i = 0; i < fs->nr_workers; i++) {
		pthread_join(fs->workers[i].thread, NULL);
		virtio_fs_stop_helpers(&fs->workers[i]);
	}
	/* No request runs nor starts a wait any more; the rings go once
	 * none waits. */
	fuse_server_abandon_waits(fs->server);
	for (unsigned int i = 0; i < fs->nr_workers; i++)
		virtio_fs_release_worker(&fs->workers[i]);
	uint64_t drain;
	if (read(fs->stop_fd, &drain, sizeof(drain)) < 0 && errno != EAGAIN)
		log_error("virtio-fs: stop: %s", strerror(errno));
	free(fs->workers);
	fs->workers = NULL;
	fs->nr_workers = 0;
}

static int virtio_fs_start_workers(struct virtio_fs *fs,
				   struct virtio_queue *queues, unsigned int nr)
{
	fs->workers = calloc(nr, sizeof(*fs->workers));
	if (!fs->workers)
		return -ENOMEM;
	for (unsigned int i = 0; i < nr; i++) {
		struct virtio_fs_worker *w = &fs->workers[i];
		*w = (struct virtio_fs_worker){.fs = fs, .queue = &queues[i],
					       .index = i};
		pthread_mutex_init(&w->run_lock, NULL);
		pthread_mutex_init(&w->push_lock, NULL);
		pthread_mutex_init(&w->hand_lock, NULL);
		pthread_cond_init(&w->hand_cond, NULL);
		w->chain = malloc(sizeof(*w->chain));
		int err = w->chain ? -pthread_create(&w->thread, NULL,
						     virtio_fs_worker_main, w)
				   : -ENOMEM;
		if (err) {
			virtio_fs_release_worker(w);
			virtio_fs_stop_workers(fs);
			return err;
		}
		fs->nr_workers = i + 1;
	}
	return 0;
}

/* Activation and reset hold the running lock for writing: no doorbell
 * runs requests while the workers and the rings change. */
static int virtio_fs_activate(void *opaque, struct virtio_queue *queues,
			      unsigned int nr, uint64_t features)
{
	struct virtio_fs *fs = opaque;
	(void)features;
	pthread_rwlock_wrlock(&fs->running);
	int err = virtio_fs_start_workers(fs, queues, nr);
	pthread_rwlock_unlock(&fs->running);
	return err;
}

static int dax_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable)
{
	return dax_window_map(opaque, moffset, len, fd, foffset, writable);
}

static int dax_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	return dax_window_unmap(opaque, moffset, len);
}

static void dax_file_grown(void *opaque)
{
	dax_window_file_grown(opaque);
}

struct fuse_dax_ops virtio_fs_dax_ops(struct dax_window *w)
{
	return (struct fuse_dax_ops){.map = dax_map,
				     .unmap = dax_unmap,
				     .file_grown = dax_file_grown,
				     .window_size = w->size,
				     .opaque = w};
}

static void virtio_fs_reset(void *opaque)
{
	struct virtio_fs *fs = opaque;
	pthread_rwlock_wrlock(&fs->running);
	virtio_fs_stop_workers(fs);
	pthread_rwlock_unlock(&fs->running);
}

int virtio_fs_create(struct virtio_fs *fs, const char *tag,
		     const struct fuse_server_config *cfg,
		     unsigned int nr_request_queues, uint64_t dax_size,
		     unsigned int dax_max_maps)
{
	memset(fs, 0, sizeof(*fs));
	if (strlen(tag) > sizeof(fs->config.tag) || nr_request_queues == 0 ||
	    nr_request_queues > VIRTIO_FS_MAX_REQUEST_QUEUES)
		return -EINVAL;
	memcpy(fs->config.tag, tag, strlen(tag));
	fs->config.num_request_queues = nr_request_queues;
	fs->helpers_per_queue = VIRTIO_FS_HELPERS;
	fs->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fs->stop_fd < 0)
		return -errno;
	/* Doorbells read-lock it all the time: a reset must not starve. */
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->running, &attr);
	pthread_rwlockattr_destroy(&attr);
	struct fuse_server_config server_cfg = *cfg;
	if (dax_size) {
		int err = dax_window_create(&fs->dax, dax_size, dax_max_maps);
		if (err)
			return err;
		fs->dax_ops = virtio_fs_dax_ops(&fs->dax);
		server_cfg.dax = &fs->dax_ops;
	}
	int err = fuse_server_create(&server_cfg, &fs->server);
	if (err)
		return err;

	fs->dev = (struct virtio_dev){
		.device_id = VIRTIO_ID_FS,
		.features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
			    (1ULL << VIRTIO_RING_F_EVENT_IDX),
		/* Queue 0 is the high-priority queue (FORGET, INTERRUPT). */
		.num_queues = (uint16_t)(1 + nr_request_queues),
		.queue_max_size = VIRTIO_FS_QUEUE_SIZE,
		.config = &fs->config,
		.config_len = sizeof(fs->config),
		.shm_id = VIRTIO_FS_SHMCAP_ID_CACHE,
		.shm_size = dax_size,
		.shm_hva = fs->dax.base,
		.activate = virtio_fs_activate,
		.reset = virtio_fs_reset,
		.notify = virtio_fs_notify,
		.opaque = fs,
	};
	return 0;
}

/* A host file under DAX mappings changed size. */
static void on_dax_watch(void *opaque, uint32_t events)
{
	(void)events;
	struct virtio_fs *fs = opaque;
	unsigned int changed = dax_window_watch_events(&fs->dax);
	if (changed)
		log_info("%.*s: %u DAX mapping(s) followed a host file's new size",
			 (int)sizeof(fs->config.tag), fs->config.tag, changed);
}

/* KVM could not back a guest page: a DAX page whose host file shrank,
 * before the file's watch told us. */
static unsigned int virtio_fs_repair_memory(void *dev)
{
	struct virtio_fs *fs = dev;
	unsigned int repaired = fs->dax.base ? dax_window_repair(&fs->dax) : 0;
	if (repaired)
		log_error("warning: %.*s: %u DAX mapping(s) reached past the end of files truncated on the host; those pages now read as zeros",
			  (int)sizeof(fs->config.tag), fs->config.tag, repaired);
	return repaired;
}

/* The data path, counted even at 0: READ/WRITE, or DAX mappings instead. */
static bool always_reported(uint32_t op)
{
	return op == FUSE_READ || op == FUSE_WRITE || op == FUSE_SETUPMAPPING ||
	       op == FUSE_REMOVEMAPPING;
}

/* -v, once the vCPUs have stopped: where each queue's requests stand. A
 * guest that stalled on the share shows whether its requests reached the
 * device (posted, not taken: a doorbell nobody acted on) and came back
 * (taken, not answered: in hand, or waiting on a lock). */
static void log_queue_states(struct virtio_fs *fs)
{
	if (pthread_rwlock_tryrdlock(&fs->running))
		return; /* a reset in progress: no rings to speak of */
	for (unsigned int i = 0; i < fs->nr_workers; i++) {
		struct virtio_fs_worker *w = &fs->workers[i];
		struct split_ring *ring = &w->queue->ring;
		if (!ring->size)
			continue;
		if (pthread_mutex_trylock(&w->run_lock)) {
			log_info("%.*s queue %u: being drained",
				 (int)sizeof(fs->config.tag), fs->config.tag, i);
			continue;
		}
		uint16_t posted = split_ring_avail_idx(ring);
		uint16_t taken = ring->last_avail;
		pthread_mutex_lock(&w->push_lock);
		uint16_t answered = ring->used_idx;
		pthread_mutex_unlock(&w->push_lock);
		bool handed_over = w->handed_over;
		pthread_mutex_unlock(&w->run_lock);
		log_info("%.*s queue %u: %u posted and not taken, %u taken and not answered%s",
			 (int)sizeof(fs->config.tag), fs->config.tag, i,
			 (uint16_t)(posted - taken), (uint16_t)(taken - answered),
			 handed_over ? " (one left for the worker)" : "");
	}
	pthread_rwlock_unlock(&fs->running);
}

/* Every request the guest made of the share, by opcode: the round trips
 * an operation costs, and the data path. */
static void virtio_fs_report(void *dev, struct device_report *out)
{
	struct virtio_fs *fs = dev;

	snprintf(out->name, sizeof(out->name), "%.*s",
		 (int)sizeof(fs->config.tag), fs->config.tag);
	out->what = "requests";
	uint64_t unnamed = 0; /* opcodes we do not serve, all together */
	for (uint32_t op = 0; op < FUSE_OPCODE_LIMIT; op++) {
		uint64_t count = fuse_server_count(fs->server, op);
		const char *name = fuse_opcode_name(op);
		if (!name)
			unnamed += count;
		else if (count || always_reported(op))
			device_report_add(out, name, count);
	}
	if (unnamed)
		device_report_add(out, "other", unnamed);
	/* -v only: how the requests spread over the queues (one per vCPU
	 * with a multiqueue guest) and how many ran on the vCPU that rang or
	 * on a helper, which no counter of the report holds. */
	char line[256];
	int n = snprintf(line, sizeof(line), "%.*s requests per queue: hiprio %llu, request",
			 (int)sizeof(fs->config.tag), fs->config.tag,
			 (unsigned long long)atomic_load_explicit(
				 &fs->queue_requests[0], memory_order_relaxed));
	for (unsigned int q = 1;
	     q <= fs->config.num_request_queues && n < (int)sizeof(line); q++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %llu",
			      (unsigned long long)atomic_load_explicit(
				      &fs->queue_requests[q],
				      memory_order_relaxed));
	log_info("%s", line);
	log_info("%.*s requests run in place: %llu, on helper threads: %llu",
		 (int)sizeof(fs->config.tag), fs->config.tag,
		 (unsigned long long)atomic_load_explicit(
			 &fs->requests_in_place, memory_order_relaxed),
		 (unsigned long long)atomic_load_explicit(
			 &fs->requests_on_helpers, memory_order_relaxed));
	log_queue_states(fs);
}

static const struct device_type virtio_fs_type;

/* One device per share, in the order given (the root first), with a
 * request queue per vCPU: Linux 6.11+ sends each CPU's requests down a
 * queue of its own (older guests use the first only). */
static int virtio_fs_add(struct machine *m)
{
	const struct virtio_fs_options *o =
		machine_options(m, VIRTIO_FS_DEVICE_NAME);
	if (!o)
		return 0; /* a machine with no shares */
	unsigned int queues = m->vm->nr_vcpus;
	if (queues > VIRTIO_FS_MAX_REQUEST_QUEUES)
		queues = VIRTIO_FS_MAX_REQUEST_QUEUES;
	if (queues == 0)
		queues = 1;
	for (unsigned int i = 0; i < o->nr_shares; i++) {
		const struct virtio_fs_share *s = &o->shares[i];
		struct virtio_fs *fs = calloc(1, sizeof(*fs));
		if (!fs)
			return -ENOMEM;
		int err = virtio_fs_create(fs, s->tag, &s->fuse, queues, s->dax_size,
					   s->dax_max_maps);
		if (!err)
			err = virtio_bus_add(m->virtio, &fs->dev);
		if (!err && fs->dax.base)
			err = event_loop_add(m->loop, fs->dax.watch_fd, EPOLLIN,
					     on_dax_watch, fs);
		if (!err)
			err = machine_add_device(m, &virtio_fs_type, fs);
		if (err)
			return err;
	}
	return 0;
}

static const struct device_type virtio_fs_type = {
	.name = VIRTIO_FS_DEVICE_NAME,
	.add = virtio_fs_add,
	.report = virtio_fs_report,
	.repair_memory = virtio_fs_repair_memory,
};
DEVICE_REGISTER(virtio_fs_type);
