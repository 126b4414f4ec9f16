/* virtio-fs's queue engine: each queue's ring is drained by the vCPU that
 * rang its doorbell (a few requests) or by the queue's worker thread and,
 * on a deep request queue, its helpers, running each request through the
 * FUSE server with zero copies. */
#include "devices/virtio_fs_queues.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"

struct virtio_fs_helper {
	struct virtio_fs_worker *w;
	pthread_t thread;
	struct desc_chain *chain; /* its buffer; the request while busy */
	bool busy;
};

struct virtio_fs_worker {
	struct virtio_fs_queues *qs; /* the device's, this one among them */
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
			     ? fuse_server_fail(w->qs->server, c->readable,
						c->nr_readable, c->writable,
						c->nr_writable, -EFAULT)
			     : fuse_server_handle(w->qs->server, c->readable,
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
		atomic_fetch_add_explicit(&w->qs->requests_on_helpers, 1,
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
	if (!handed && w->nr_helpers < w->qs->helpers_per_queue)
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
			atomic_fetch_add_explicit(&w->qs->queue_requests[w->index],
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
				atomic_fetch_add_explicit(&w->qs->requests_in_place,
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
		{.fd = w->qs->stop_fd, .events = POLLIN},
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
static void virtio_fs_stop_workers(struct virtio_fs_queues *qs)
{
	if (!qs->workers)
		return;
	uint64_t one = 1;
	if (write(qs->stop_fd, &one, sizeof(one)) < 0)
		log_error("virtio-fs: stop: %s", strerror(errno));
	for (unsigned int i = 0; i < qs->nr_workers; i++) {
		pthread_join(qs->workers[i].thread, NULL);
		virtio_fs_stop_helpers(&qs->workers[i]);
	}
	/* No request runs nor starts a wait any more; the rings go once
	 * none waits. */
	fuse_server_abandon_waits(qs->server);
	for (unsigned int i = 0; i < qs->nr_workers; i++)
		virtio_fs_release_worker(&qs->workers[i]);
	uint64_t drain;
	if (read(qs->stop_fd, &drain, sizeof(drain)) < 0 && errno != EAGAIN)
		log_error("virtio-fs: stop: %s", strerror(errno));
	free(qs->workers);
	qs->workers = NULL;
	qs->nr_workers = 0;
}

static int virtio_fs_start_workers(struct virtio_fs_queues *qs,
				   struct virtio_queue *queues, unsigned int nr)
{
	qs->workers = calloc(nr, sizeof(*qs->workers));
	if (!qs->workers)
		return -ENOMEM;
	for (unsigned int i = 0; i < nr; i++) {
		struct virtio_fs_worker *w = &qs->workers[i];
		*w = (struct virtio_fs_worker){.qs = qs, .queue = &queues[i],
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
			virtio_fs_stop_workers(qs);
			return err;
		}
		qs->nr_workers = i + 1;
	}
	return 0;
}

int virtio_fs_queues_init(struct virtio_fs_queues *qs)
{
	*qs = (struct virtio_fs_queues){.helpers_per_queue = VIRTIO_FS_HELPERS};
	qs->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (qs->stop_fd < 0)
		return -errno;
	/* Doorbells read-lock it all the time: a reset must not starve. */
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&qs->running, &attr);
	pthread_rwlockattr_destroy(&attr);
	return 0;
}

/* Start and stop hold the running lock for writing: no doorbell runs
 * requests while the workers and the rings change. */
int virtio_fs_queues_start(struct virtio_fs_queues *qs,
			   struct fuse_server *server,
			   struct virtio_queue *queues, unsigned int nr)
{
	pthread_rwlock_wrlock(&qs->running);
	qs->server = server;
	int err = virtio_fs_start_workers(qs, queues, nr);
	pthread_rwlock_unlock(&qs->running);
	return err;
}

void virtio_fs_queues_stop(struct virtio_fs_queues *qs)
{
	pthread_rwlock_wrlock(&qs->running);
	virtio_fs_stop_workers(qs);
	pthread_rwlock_unlock(&qs->running);
}

/* The guest rang queue q, on its vCPU: a ring that nobody drains is
 * drained right here (virtio_fs_drain says how far), which saves the
 * thread switch to the worker and back that a shallow queue pays on
 * every request. A deeper queue, writeback, or a queue already being
 * drained goes to the worker, so one vCPU never serves a long batch. */
void virtio_fs_queues_notify(struct virtio_fs_queues *qs, unsigned int q)
{
	pthread_rwlock_rdlock(&qs->running);
	if (q < qs->nr_workers) {
		struct virtio_fs_worker *w = &qs->workers[q];
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
	pthread_rwlock_unlock(&qs->running);
}

/* -v, once the vCPUs have stopped: where each queue's requests stand. A
 * guest that stalled on the share shows whether its requests reached the
 * device (posted, not taken: a doorbell nobody acted on) and came back
 * (taken, not answered: in hand, or waiting on a lock). */
void virtio_fs_queues_log_states(struct virtio_fs_queues *qs,
				 const char *name)
{
	if (pthread_rwlock_tryrdlock(&qs->running))
		return; /* a reset in progress: no rings to speak of */
	for (unsigned int i = 0; i < qs->nr_workers; i++) {
		struct virtio_fs_worker *w = &qs->workers[i];
		struct split_ring *ring = &w->queue->ring;
		if (!ring->size)
			continue;
		if (pthread_mutex_trylock(&w->run_lock)) {
			log_info("%s queue %u: being drained", name, i);
			continue;
		}
		uint16_t posted = split_ring_avail_idx(ring);
		uint16_t taken = ring->last_avail;
		pthread_mutex_lock(&w->push_lock);
		uint16_t answered = ring->used_idx;
		pthread_mutex_unlock(&w->push_lock);
		bool handed_over = w->handed_over;
		pthread_mutex_unlock(&w->run_lock);
		log_info("%s queue %u: %u posted and not taken, %u taken and not answered%s",
			 name, i, (uint16_t)(posted - taken),
			 (uint16_t)(taken - answered),
			 handed_over ? " (one left for the worker)" : "");
	}
	pthread_rwlock_unlock(&qs->running);
}

bool virtio_fs_queues_idle(struct virtio_fs_queues *qs)
{
	if (pthread_rwlock_tryrdlock(&qs->running))
		return false; /* a reset in progress */
	bool idle = true;
	for (unsigned int i = 0; idle && i < qs->nr_workers; i++) {
		struct virtio_fs_worker *w = &qs->workers[i];
		struct split_ring *ring = &w->queue->ring;
		if (!ring->size)
			continue;
		if (pthread_mutex_trylock(&w->run_lock)) {
			idle = false; /* being drained */
			break;
		}
		pthread_mutex_lock(&w->push_lock);
		idle = !w->handed_over && !requests_waiting(ring) &&
		       ring->used_idx == ring->last_avail;
		pthread_mutex_unlock(&w->push_lock);
		pthread_mutex_unlock(&w->run_lock);
	}
	pthread_rwlock_unlock(&qs->running);
	return idle;
}
