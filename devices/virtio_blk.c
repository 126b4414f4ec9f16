/* The virtio-blk device: a disk's request queues, served by one thread of
 * its own between DRIVER_OK and reset, which hands every read, write,
 * flush, discard and write zeroes to an io_uring as a request on guest
 * memory (readv and writev on the guest's buffers: no data is copied in
 * fsvm) and answers each when its completion comes, in whatever order
 * they come. So a slow request holds up neither a vCPU (doorbells are KVM
 * ioeventfds) nor another queue, nor the requests behind it on its own.
 *
 * The guest is hostile: every chain is checked before the host sees it,
 * a bad request gets VIRTIO_BLK_S_IOERR, a chain with no status byte to
 * answer in comes back empty, a malformed ring stops only its queue, each
 * counted. The ring itself is locked down at create (before the seccomp
 * filter, which cannot see what an io_uring does): only the disk, as its
 * one registered file, and only the five operations the device makes. */
#include "devices/virtio_blk.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "devices/device.h"
#include "fs/iov.h"

#define SECTOR 512u
#define HDR_LEN sizeof(struct virtio_blk_outhdr)
#define SEGMENT_LEN sizeof(struct virtio_blk_discard_write_zeroes)
/* Discard and write zeroes: one range a request, up to 2 GiB, in 4 KiB
 * (the host's pages and file system blocks) so the guest's ranges free
 * whole blocks. */
#define MAX_RANGE_SECTORS (1u << 22)
#define RANGE_ALIGN_SECTORS 8u
/* The thread's epoll keys: its stop, the ring's completions, then queue
 * q's kick as FIRST_KICK + q. */
#define KEY_STOP 0u
#define KEY_DONE 1u
#define FIRST_KICK 2u
/* A completion that answers no request: the reset's cancel. */
#define NO_REQUEST 0

/* A request in the ring. Its slot is its chain's head, which the guest
 * may not post again until it is answered. */
struct blk_req {
	bool busy;
	bool punching; /* a write zeroes redone as a hole (no ZERO_RANGE) */
	uint16_t queue; /* its queue's index */
	uint16_t head;
	uint32_t type;
	uint8_t *status;
	uint64_t offset; /* bytes */
	uint64_t len;    /* bytes of data, or of the range */
	int nr_iov;
	struct iovec iov[VIRTIO_BLK_SEG_MAX];
};

struct blk_queue {
	struct virtio_queue *vq;
	bool watched; /* its kick is in the thread's wait set */
	bool pushed;  /* answers since its last interrupt */
	struct blk_req reqs[VIRTIO_BLK_QUEUE_SIZE];
};

static const char *const counter_names[BLK_NR_COUNTERS] = {
	[BLK_READS] = "reads",
	[BLK_WRITES] = "writes",
	[BLK_FLUSHES] = "flushes",
	[BLK_DISCARDS] = "discards",
	[BLK_WRITE_ZEROES] = "write_zeroes",
	[BLK_GET_ID] = "get_id",
	[BLK_BYTES_READ] = "bytes_read",
	[BLK_BYTES_WRITTEN] = "bytes_written",
	[BLK_ERR_RANGE] = "errors_out_of_range",
	[BLK_ERR_MALFORMED] = "errors_malformed",
	[BLK_ERR_READONLY] = "errors_read_only",
	[BLK_ERR_MISALIGNED] = "errors_misaligned",
	[BLK_ERR_HOST] = "errors_host",
	[BLK_UNSUPPORTED] = "unsupported",
	[BLK_BAD_CHAINS] = "bad_chains",
	[BLK_RING_ERRORS] = "ring_errors",
};

const char *virtio_blk_counter_name(enum virtio_blk_counter c)
{
	return c < BLK_NR_COUNTERS ? counter_names[c] : NULL;
}

static void count(struct virtio_blk *b, enum virtio_blk_counter c, uint64_t v)
{
	atomic_fetch_add_explicit(&b->counts[c], v, memory_order_relaxed);
}

/* A malformed ring: the queue is left alone until the driver resets the
 * device (its ring size 0 stops every walk and push below). */
static void ring_broken(struct virtio_blk *b, struct blk_queue *q, int err)
{
	log_error("virtio-blk: %s: queue %u: bad descriptor chain (%s); queue stopped",
		  b->name, (unsigned int)(q - b->queues), strerror(-err));
	count(b, BLK_RING_ERRORS, 1);
	q->vq->ring.size = 0;
}

/* ---- answers ---- */

/* Writes the status and hands the chain back with what the guest got:
 * data bytes written into its buffers, and the status. */
static void answer(struct blk_queue *q, uint16_t head, uint8_t *status,
		   uint8_t value, size_t data_written)
{
	struct split_ring *ring = &q->vq->ring;
	if (!ring->size)
		return;
	*status = value;
	split_ring_push(ring, head, (uint32_t)data_written + 1);
	q->pushed = true;
}

static uint8_t refuse(struct virtio_blk *b, enum virtio_blk_counter why)
{
	count(b, why, 1);
	return why == BLK_UNSUPPORTED ? VIRTIO_BLK_S_UNSUPP : VIRTIO_BLK_S_IOERR;
}

/* ---- requests into the ring ---- */

static int fallocate_mode(const struct blk_req *r)
{
	if (r->type == VIRTIO_BLK_T_WRITE_ZEROES && !r->punching)
		return FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
	return FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
}

/* Queues r's operation on the disk (registered file 0). There is always
 * an entry: the ring has one for every request slot. */
static void prepare(struct virtio_blk *b, struct blk_req *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(b->uring);
	switch (r->type) {
	case VIRTIO_BLK_T_IN:
		io_uring_prep_readv(sqe, 0, r->iov, (unsigned int)r->nr_iov,
				    r->offset);
		break;
	case VIRTIO_BLK_T_OUT:
		io_uring_prep_writev(sqe, 0, r->iov, (unsigned int)r->nr_iov,
				     r->offset);
		break;
	case VIRTIO_BLK_T_FLUSH:
		/* The data and what reading it back needs (its blocks). */
		io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
		break;
	default:
		io_uring_prep_fallocate(sqe, 0, fallocate_mode(r), r->offset,
					r->len);
		break;
	}
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, r);
}

/* Room in the ring's submission queue for one more, submitting what is
 * queued if it is full. */
static bool ring_has_room(struct virtio_blk *b)
{
	if (io_uring_sq_space_left(b->uring))
		return true;
	io_uring_submit(b->uring);
	return io_uring_sq_space_left(b->uring) != 0;
}

/* The data buffers: readable ones after the header (OUT), or writable
 * ones before the status (IN), at most VIRTIO_BLK_SEG_MAX. */
static bool take_data(struct blk_req *r, const struct iovec *iov, int cnt,
		      size_t skip, size_t len)
{
	size_t got;
	r->nr_iov = iov_view(r->iov, VIRTIO_BLK_SEG_MAX, iov, cnt, skip, len,
			     &got);
	r->len = got;
	return got == len;
}

static bool aligned(const struct blk_req *r)
{
	for (int i = 0; i < r->nr_iov; i++)
		if ((uintptr_t)r->iov[i].iov_base % SECTOR ||
		    r->iov[i].iov_len % SECTOR)
			return false;
	return true;
}

/* Sectors [sector, sector + sectors) lie on the disk. */
static bool in_range(const struct virtio_blk *b, uint64_t sector,
		     uint64_t sectors)
{
	uint64_t capacity = b->config.capacity;
	return sector <= capacity && sectors <= capacity - sector;
}

/* A read or a write: whole sectors on the disk, in buffers the device
 * may take (their number, and O_DIRECT's alignment). */
static enum virtio_blk_counter check_rw(struct virtio_blk *b,
					struct blk_req *r,
					const struct desc_chain *c,
					size_t readable, size_t writable,
					uint64_t sector)
{
	bool in = r->type == VIRTIO_BLK_T_IN;
	if (in ? readable != HDR_LEN : writable != 1)
		return BLK_ERR_MALFORMED;
	if (in ? !take_data(r, c->writable, c->nr_writable, 0, writable - 1)
	       : !take_data(r, c->readable, c->nr_readable, HDR_LEN,
			    readable - HDR_LEN))
		return BLK_ERR_MALFORMED;
	if (r->len % SECTOR)
		return BLK_ERR_MALFORMED;
	if (!in_range(b, sector, r->len / SECTOR))
		return BLK_ERR_RANGE;
	if (b->disk.direct && !aligned(r))
		return BLK_ERR_MISALIGNED;
	r->offset = sector * SECTOR;
	return BLK_NR_COUNTERS;
}

/* A discard or write zeroes: one range on the disk, with no flag but a
 * write zeroes' UNMAP. */
static enum virtio_blk_counter check_range(struct virtio_blk *b,
					   struct blk_req *r,
					   const struct desc_chain *c,
					   size_t readable, size_t writable)
{
	if (readable != HDR_LEN + SEGMENT_LEN || writable != 1)
		return BLK_ERR_MALFORMED;
	struct virtio_blk_discard_write_zeroes seg;
	iov_copy_from(c->readable, c->nr_readable, HDR_LEN, &seg, sizeof(seg));
	uint32_t allowed = r->type == VIRTIO_BLK_T_WRITE_ZEROES
				   ? VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP
				   : 0;
	if (seg.flags & ~allowed)
		return BLK_UNSUPPORTED;
	if (seg.num_sectors > MAX_RANGE_SECTORS)
		return BLK_ERR_MALFORMED;
	if (!in_range(b, seg.sector, seg.num_sectors))
		return BLK_ERR_RANGE;
	r->punching = seg.flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP;
	r->offset = seg.sector * SECTOR;
	r->len = (uint64_t)seg.num_sectors * SECTOR;
	return BLK_NR_COUNTERS;
}

/* GET_ID, answered in place: the serial, NUL-padded to the id's 20 bytes
 * (all NULs without one), as much as the buffers take. */
static void get_id(struct virtio_blk *b, struct blk_queue *q,
		   const struct desc_chain *c, uint8_t *status,
		   size_t readable, size_t writable)
{
	if (readable != HDR_LEN) {
		answer(q, c->head, status, refuse(b, BLK_ERR_MALFORMED), 0);
		return;
	}
	char id[VIRTIO_BLK_ID_BYTES] = {0};
	memcpy(id, b->disk.serial, strnlen(b->disk.serial, sizeof(id)));
	size_t room = writable - 1;
	size_t put = iov_copy_to(c->writable, c->nr_writable, 0, id,
				 room < sizeof(id) ? room : sizeof(id));
	count(b, BLK_GET_ID, 1);
	answer(q, c->head, status, VIRTIO_BLK_S_OK, put);
}

/* Serves the chain in c: answered now (GET_ID, a refusal) or handed to
 * the ring. */
static void take_request(struct virtio_blk *b, struct blk_queue *q,
			 const struct desc_chain *c)
{
	size_t readable = iov_length(c->readable, c->nr_readable);
	size_t writable = iov_length(c->writable, c->nr_writable);
	if (c->unreachable || readable < HDR_LEN || !writable) {
		/* Nowhere to answer, or a buffer left out that may have
		 * been where the status was meant to go. */
		count(b, BLK_BAD_CHAINS, 1);
		split_ring_push(&q->vq->ring, c->head, 0);
		q->pushed = true;
		return;
	}
	const struct iovec *last = &c->writable[c->nr_writable - 1];
	uint8_t *status = (uint8_t *)last->iov_base + last->iov_len - 1;
	struct virtio_blk_outhdr hdr;
	iov_copy_from(c->readable, c->nr_readable, 0, &hdr, sizeof(hdr));

	struct blk_req *r = &q->reqs[c->head];
	r->type = hdr.type;
	enum virtio_blk_counter refused = BLK_NR_COUNTERS;
	bool writes = r->type == VIRTIO_BLK_T_OUT ||
		      r->type == VIRTIO_BLK_T_DISCARD ||
		      r->type == VIRTIO_BLK_T_WRITE_ZEROES;
	bool ranges = r->type == VIRTIO_BLK_T_DISCARD ||
		      r->type == VIRTIO_BLK_T_WRITE_ZEROES;
	if (writes && b->disk.readonly)
		refused = BLK_ERR_READONLY;
	else if (ranges && !b->disk.discard)
		refused = BLK_UNSUPPORTED;
	else if (r->type == VIRTIO_BLK_T_IN || r->type == VIRTIO_BLK_T_OUT)
		refused = check_rw(b, r, c, readable, writable, hdr.sector);
	else if (ranges)
		refused = check_range(b, r, c, readable, writable);
	else if (r->type == VIRTIO_BLK_T_FLUSH)
		refused = readable == HDR_LEN && writable == 1 ? BLK_NR_COUNTERS
							      : BLK_ERR_MALFORMED;
	else if (r->type != VIRTIO_BLK_T_GET_ID)
		refused = BLK_UNSUPPORTED;
	if (refused != BLK_NR_COUNTERS) {
		answer(q, c->head, status, refuse(b, refused), 0);
		return;
	}
	if (r->type == VIRTIO_BLK_T_GET_ID) {
		get_id(b, q, c, status, readable, writable);
		return;
	}
	if (r->len == 0 && r->type != VIRTIO_BLK_T_FLUSH) {
		answer(q, c->head, status, VIRTIO_BLK_S_OK, 0); /* nothing to do */
		return;
	}
	r->busy = true;
	r->queue = (uint16_t)(q - b->queues);
	r->head = c->head;
	r->status = status;
	atomic_fetch_add_explicit(&b->in_flight, 1, memory_order_relaxed);
	prepare(b, r);
}

/* Takes queue q's requests until its ring is empty or broken, or the
 * ring has no room (then its completions bring the thread back). */
static void queue_run(struct virtio_blk *b, struct blk_queue *q)
{
	struct split_ring *ring = &q->vq->ring;
	do {
		if (!ring->size)
			return;
		split_ring_set_notification(ring, false);
		for (;;) {
			if (!ring_has_room(b))
				return;
			int got = split_ring_pop(ring, b->chain);
			if (got < 0)
				ring_broken(b, q, got);
			if (got <= 0)
				break;
			if (q->reqs[b->chain->head].busy) {
				/* A chain posted again before its answer. */
				ring_broken(b, q, -EBUSY);
				break;
			}
			take_request(b, q, b->chain);
		}
	} while (ring->size && split_ring_set_notification(ring, true));
}

/* ---- completions ---- */

static enum virtio_blk_counter served(uint32_t type)
{
	switch (type) {
	case VIRTIO_BLK_T_IN:
		return BLK_READS;
	case VIRTIO_BLK_T_OUT:
		return BLK_WRITES;
	case VIRTIO_BLK_T_FLUSH:
		return BLK_FLUSHES;
	case VIRTIO_BLK_T_DISCARD:
		return BLK_DISCARDS;
	default:
		return BLK_WRITE_ZEROES;
	}
}

/* r's operation ended with res: its answer, unless a write zeroes the
 * host cannot zero in place is redone as a hole (which reads as zeros). */
static void complete(struct virtio_blk *b, struct blk_req *r, int res)
{
	if (res == -EOPNOTSUPP && r->type == VIRTIO_BLK_T_WRITE_ZEROES &&
	    !r->punching) {
		r->punching = true;
		prepare(b, r);
		return;
	}
	r->busy = false;
	atomic_fetch_sub_explicit(&b->in_flight, 1, memory_order_relaxed);
	uint8_t status = VIRTIO_BLK_S_OK;
	bool data = r->type == VIRTIO_BLK_T_IN || r->type == VIRTIO_BLK_T_OUT;
	if (res == -EOPNOTSUPP)
		status = refuse(b, BLK_UNSUPPORTED);
	else if (res < 0 || (data && (uint64_t)res != r->len))
		status = refuse(b, BLK_ERR_HOST); /* a short one too */
	if (status == VIRTIO_BLK_S_OK) {
		count(b, served(r->type), 1);
		if (data)
			count(b, r->type == VIRTIO_BLK_T_IN ? BLK_BYTES_READ
							    : BLK_BYTES_WRITTEN,
			      r->len);
	}
	size_t read = r->type == VIRTIO_BLK_T_IN && res > 0 ? (size_t)res : 0;
	answer(&b->queues[r->queue], r->head, r->status, status, read);
}

/* Answers every completion the ring holds; with drop (a reset), only
 * frees their slots: the rings are going away. */
static void reap(struct virtio_blk *b, bool drop)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;
	io_uring_for_each_cqe(b->uring, head, cqe)
	{
		seen++;
		struct blk_req *r = io_uring_cqe_get_data(cqe);
		if (r == NO_REQUEST)
			continue;
		if (!drop) {
			complete(b, r, cqe->res);
			continue;
		}
		r->busy = false;
		atomic_fetch_sub_explicit(&b->in_flight, 1, memory_order_relaxed);
	}
	io_uring_cq_advance(b->uring, seen);
}

/* ---- the thread ---- */

static void drain(int fd)
{
	uint64_t v;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_error("virtio-blk: eventfd: %s", strerror(errno));
}

/* Answers what completed, takes what was posted, hands it all to the
 * host, and interrupts each queue answered once. */
static void serve(struct virtio_blk *b)
{
	reap(b, false);
	for (unsigned int i = 0; i < b->nr_queues; i++)
		queue_run(b, &b->queues[i]);
	int err = io_uring_submit(b->uring);
	if (err < 0 && err != -EINTR)
		/* Left in the ring; tried again at the next wake-up. */
		log_error("virtio-blk: %s: io_uring_submit: %s", b->name,
			  strerror(-err));
	for (unsigned int i = 0; i < b->nr_queues; i++) {
		struct blk_queue *q = &b->queues[i];
		if (q->pushed && q->vq->ring.size)
			virtio_queue_interrupt(q->vq);
		q->pushed = false;
	}
}

/* A reset: every request still in the ring is cancelled (those not yet
 * started) or waited for (those the host is doing), and reaped, before
 * the rings and buffers they point into go back to the guest. */
static void quiesce(struct virtio_blk *b)
{
	if (!atomic_load_explicit(&b->in_flight, memory_order_relaxed))
		return;
	if (ring_has_room(b)) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(b->uring);
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		sqe->flags |= IOSQE_FIXED_FILE; /* the ring's rule */
		io_uring_sqe_set_data(sqe, NO_REQUEST);
	}
	const struct timespec moment = {.tv_nsec = 1000 * 1000};
	while (atomic_load_explicit(&b->in_flight, memory_order_relaxed)) {
		int err = io_uring_submit_and_wait(b->uring, 1);
		if (err < 0 && err != -EINTR)
			nanosleep(&moment, NULL); /* the host short of memory */
		reap(b, true);
	}
}

/* Waits on the kicks and the ring's completions with epoll, as the other
 * devices wait on theirs: the completions signal an eventfd registered
 * with the ring, so one epoll_wait sleeps on both, and the ring is only
 * entered to submit. */
static void *virtio_blk_main(void *arg)
{
	struct virtio_blk *b = arg;
	for (;;) {
		serve(b);
		struct epoll_event evs[FIRST_KICK + VIRTIO_BLK_MAX_QUEUES];
		int nr = epoll_wait(b->epoll_fd, evs, FIRST_KICK + b->nr_queues, -1);
		if (nr < 0 && errno != EINTR) {
			log_error("virtio-blk: %s: epoll_wait: %s", b->name,
				  strerror(errno));
			break;
		}
		bool stop = false;
		for (int i = 0; i < nr; i++) {
			uint32_t key = evs[i].data.u32;
			if (key == KEY_STOP)
				stop = true;
			else if (key == KEY_DONE)
				drain(b->done_fd);
			else
				drain(b->queues[key - FIRST_KICK].vq->kick_fd);
		}
		if (stop)
			break;
	}
	quiesce(b);
	return NULL;
}

static void unwatch_kicks(struct virtio_blk *b)
{
	for (unsigned int i = 0; i < b->nr_queues; i++) {
		struct blk_queue *q = &b->queues[i];
		if (q->watched)
			epoll_ctl(b->epoll_fd, EPOLL_CTL_DEL, q->vq->kick_fd, NULL);
		q->watched = false;
	}
}

static int virtio_blk_activate(void *opaque, struct virtio_queue *queues,
			       unsigned int nr, uint64_t features)
{
	struct virtio_blk *b = opaque;
	(void)features; /* the ring's are the transport's to apply */
	if (nr != b->nr_queues)
		return -EINVAL;
	int err = 0;
	for (unsigned int i = 0; i < nr && !err; i++) {
		struct blk_queue *q = &b->queues[i];
		q->vq = &queues[i];
		q->pushed = false;
		if (!queues[i].ring.size)
			continue; /* left disabled by the driver */
		struct epoll_event kick = {.events = EPOLLIN,
					   .data.u32 = FIRST_KICK + i};
		if (epoll_ctl(b->epoll_fd, EPOLL_CTL_ADD, q->vq->kick_fd, &kick) < 0)
			err = -errno;
		else
			q->watched = true;
	}
	if (!err)
		err = -pthread_create(&b->thread, NULL, virtio_blk_main, b);
	if (err) {
		unwatch_kicks(b);
		return err;
	}
	b->running = true;
	return 0;
}

static void virtio_blk_reset(void *opaque)
{
	struct virtio_blk *b = opaque;
	if (!b->running)
		return;
	uint64_t one = 1;
	if (write(b->stop_fd, &one, sizeof(one)) < 0)
		log_error("virtio-blk: stop: %s", strerror(errno));
	pthread_join(b->thread, NULL);
	drain(b->stop_fd);
	unwatch_kicks(b);
	b->running = false;
}

/* ---- set-up ---- */

/* The ring may do only what the device asks of it: the five operations,
 * on the disk alone (registered file 0, required), and nothing may be
 * registered once it runs. The seccomp filter cannot see inside an
 * io_uring; this is its filter. liburing 2.3 as Debian builds it exports
 * no wrappers for these two registrations. */
static int lock_down_ring(struct io_uring *ring)
{
	static const uint8_t ops[] = {IORING_OP_READV, IORING_OP_WRITEV,
				      IORING_OP_FSYNC, IORING_OP_FALLOCATE,
				      IORING_OP_ASYNC_CANCEL};
	struct io_uring_restriction rules[sizeof(ops) + 1];
	memset(rules, 0, sizeof(rules));
	for (size_t i = 0; i < sizeof(ops); i++)
		rules[i] = (struct io_uring_restriction){
			.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = ops[i]};
	rules[sizeof(ops)] = (struct io_uring_restriction){
		.opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED,
		.sqe_flags = IOSQE_FIXED_FILE};
	if (syscall(__NR_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_RESTRICTIONS, rules, sizeof(rules) / sizeof(rules[0])) < 0 ||
	    syscall(__NR_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* The ring, with an entry for every request slot of every queue (so
 * submissions never wait for room) and, by io_uring's default, twice as
 * many for completions (so none overflows). */
static int make_ring(struct virtio_blk *b)
{
	b->uring = calloc(1, sizeof(*b->uring));
	if (!b->uring)
		return -ENOMEM;
	int err = io_uring_queue_init(b->nr_queues * VIRTIO_BLK_QUEUE_SIZE,
				      b->uring,
				      IORING_SETUP_R_DISABLED |
					      IORING_SETUP_SUBMIT_ALL);
	if (err) {
		free(b->uring);
		b->uring = NULL;
		return err;
	}
	err = io_uring_register_files(b->uring, &b->disk.fd, 1);
	if (!err)
		err = io_uring_register_eventfd(b->uring, b->done_fd);
	if (!err)
		err = lock_down_ring(b->uring);
	return err;
}

static uint64_t offered_features(const struct virtio_blk_disk *d)
{
	uint64_t f = (1ULL << VIRTIO_F_VERSION_1) |
		     (1ULL << VIRTIO_RING_F_EVENT_IDX) |
		     (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
		     (1ULL << VIRTIO_BLK_F_SEG_MAX) |
		     (1ULL << VIRTIO_BLK_F_BLK_SIZE) |
		     /* The host's page cache is a write-back cache. */
		     (1ULL << VIRTIO_BLK_F_FLUSH) | (1ULL << VIRTIO_BLK_F_MQ);
	if (d->readonly)
		f |= 1ULL << VIRTIO_BLK_F_RO;
	else if (d->discard)
		f |= (1ULL << VIRTIO_BLK_F_DISCARD) |
		     (1ULL << VIRTIO_BLK_F_WRITE_ZEROES);
	return f;
}

static void fill_config(struct virtio_blk *b)
{
	b->config = (struct virtio_blk_config){
		.capacity = b->disk.size / SECTOR,
		.seg_max = VIRTIO_BLK_SEG_MAX,
		.blk_size = SECTOR,
		.num_queues = (uint16_t)b->nr_queues,
		.max_discard_sectors = MAX_RANGE_SECTORS,
		.max_discard_seg = 1,
		.discard_sector_alignment = RANGE_ALIGN_SECTORS,
		.max_write_zeroes_sectors = MAX_RANGE_SECTORS,
		.max_write_zeroes_seg = 1,
		/* A write zeroes with UNMAP punches a hole. */
		.write_zeroes_may_unmap = 1,
	};
}

int virtio_blk_create(struct virtio_blk *b, const struct virtio_blk_disk *d,
		      unsigned int num_queues)
{
	memset(b, 0, sizeof(*b));
	b->disk = *d;
	b->disk.serial[sizeof(b->disk.serial) - 1] = '\0';
	b->nr_queues = num_queues;
	b->done_fd = b->epoll_fd = b->stop_fd = -1;
	if (!num_queues || num_queues > VIRTIO_BLK_MAX_QUEUES) {
		close(d->fd);
		return -EINVAL;
	}
	fill_config(b);
	/* The thread's wait set, made once: system calls a reset and a
	 * DRIVER_OK after the seccomp filter need not make. */
	b->queues = calloc(num_queues, sizeof(*b->queues));
	b->chain = calloc(1, sizeof(*b->chain));
	b->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	b->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	b->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	int err = 0;
	if (!b->queues || !b->chain || b->done_fd < 0 || b->stop_fd < 0 ||
	    b->epoll_fd < 0)
		err = -ENOMEM;
	struct epoll_event stop = {.events = EPOLLIN, .data.u32 = KEY_STOP};
	struct epoll_event done = {.events = EPOLLIN, .data.u32 = KEY_DONE};
	if (!err && (epoll_ctl(b->epoll_fd, EPOLL_CTL_ADD, b->stop_fd, &stop) < 0 ||
		     epoll_ctl(b->epoll_fd, EPOLL_CTL_ADD, b->done_fd, &done) < 0))
		err = -errno;
	if (!err)
		err = make_ring(b);
	if (err) {
		virtio_blk_destroy(b);
		return err;
	}
	b->dev = (struct virtio_dev){
		.device_id = VIRTIO_ID_BLOCK,
		.features = offered_features(d),
		.num_queues = (uint16_t)num_queues,
		.queue_max_size = VIRTIO_BLK_QUEUE_SIZE,
		.config = &b->config,
		.config_len = sizeof(b->config),
		.activate = virtio_blk_activate,
		.reset = virtio_blk_reset,
		.opaque = b,
	};
	return 0;
}

void virtio_blk_destroy(struct virtio_blk *b)
{
	if (b->uring) {
		io_uring_queue_exit(b->uring);
		free(b->uring);
	}
	const int fds[] = {b->disk.fd, b->done_fd, b->epoll_fd, b->stop_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(b->queues);
	free(b->chain);
	memset(b, 0, sizeof(*b));
	b->disk.fd = b->done_fd = b->epoll_fd = b->stop_fd = -1;
}

static void virtio_blk_report(void *dev, struct device_report *out)
{
	struct virtio_blk *b = dev;
	snprintf(out->name, sizeof(out->name), "%s", b->name);
	out->what = "requests";
	for (unsigned int c = 0; c < BLK_NR_COUNTERS; c++) {
		uint64_t v = atomic_load_explicit(&b->counts[c], memory_order_relaxed);
		/* Errors only when there were some. */
		if (v || c <= BLK_BYTES_WRITTEN)
			device_report_add(out, counter_names[c], v);
	}
}

static const struct device_type virtio_blk_type;

/* One device per disk. From here on the disks' fds are the devices':
 * those after a failure are closed too. */
static int virtio_blk_add(struct machine *m)
{
	const struct virtio_blk_options *o =
		machine_options(m, VIRTIO_BLK_DEVICE_NAME);
	if (!o)
		return 0;
	int err = o->nr_disks > VIRTIO_BLK_MAX_DISKS ? -EINVAL : 0;
	for (unsigned int i = 0; i < o->nr_disks && i < VIRTIO_BLK_MAX_DISKS; i++) {
		struct virtio_blk *b = err ? NULL : calloc(1, sizeof(*b));
		if (!b) {
			close(o->disks[i].fd);
			err = err ?: -ENOMEM;
			continue;
		}
		err = virtio_blk_create(b, &o->disks[i], o->num_queues);
		if (err) {
			log_error("virtio-blk: vd%c: cannot create it: %s",
				  'a' + i, strerror(-err));
			free(b);
			continue;
		}
		snprintf(b->name, sizeof(b->name), "vd%c", 'a' + i);
		err = virtio_bus_add(m->virtio, &b->dev);
		if (err) {
			virtio_blk_destroy(b);
			free(b);
			continue;
		}
		/* On the bus now: it lives as long as fsvm, even if this
		 * fails set-up. */
		err = machine_add_device(m, &virtio_blk_type, b);
	}
	return err;
}

static const struct device_type virtio_blk_type = {
	.name = VIRTIO_BLK_DEVICE_NAME,
	.add = virtio_blk_add,
	.report = virtio_blk_report,
};
DEVICE_REGISTER(virtio_blk_type);
