/* Unit tests for devices/virtio_fs and its queue engine
 * (devices/virtio_fs_queues): FUSE requests put in real split rings
 * in guest memory, the device's workers answering each once (a deep
 * queue's with their helpers), two request queues of one share at once,
 * a reset in the middle of a batch, and doorbells that run requests on
 * the ringing thread (writeback aside), resets among them. Run under ASan
 * and TSan too (make unit). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/virtio_fs.h"
#include "fs/fuse_internal.h" /* fuse_server_inode_count */

#define RAM_SIZE (4u << 20)
#define QSIZE 256u
#define SLOT 4096u /* one request: its in part, then 2 KiB for the reply */
#define SLOTS_AT 0x10000u /* QSIZE slots per request queue from here */
#define BIG_AT 0x300000u /* a request too big for a slot (past them all) */
#define NRQ 2u /* request queues, after the high-priority queue 0 */
#define NR_FILES 50

/* The test plays the guest, which meets the device only through the
 * rings' ordering rules (fences around plain stores), which TSan cannot
 * see: races with the guest side's functions are not reported. Races
 * between the device's own threads still are. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:wait_all\nrace:reply\nrace:put\nrace:kick\nrace:batch\n"
	       "race:start_queues\nrace:ring\nrace:used_idx\n";
}

struct rig {
	char root[64];
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_fs fs;
	struct virtio_queue queues[1 + NRQ];
	uint16_t avail_idx[1 + NRQ];
	uint64_t unique[1 + NRQ]; /* q << 32 upwards: told apart by queue */
};

/* Queue q's rings: desc, avail and used, 12 KiB per queue from 0. */
static uint64_t ring_gpa(unsigned int q, unsigned int part)
{
	return q * 0x3000u + part * 0x1000u;
}

static void start_queues(struct rig *r)
{
	for (unsigned int q = 0; q < 1 + NRQ; q++) {
		struct virtio_queue *vq = &r->queues[q];
		*vq = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
		assert_true(vq->kick_fd >= 0 && vq->call_fd >= 0);
		memset(r->ram + ring_gpa(q, 0), 0, 0x3000);
		assert_int_equal(split_ring_init(&vq->ring, &r->mem, QSIZE,
						 ring_gpa(q, 0), ring_gpa(q, 1),
						 ring_gpa(q, 2), false, false),
				 0);
	}
	for (unsigned int q = 0; q < 1 + NRQ; q++) {
		r->avail_idx[q] = 0;
		r->unique[q] = (uint64_t)q << 32;
	}
	assert_int_equal(r->fs.dev.activate(r->fs.dev.opaque, r->queues,
					    1 + NRQ, r->fs.dev.features),
			 0);
}

static void stop_queues(struct rig *r)
{
	r->fs.dev.reset(r->fs.dev.opaque);
	for (unsigned int q = 0; q < 1 + NRQ; q++) {
		close(r->queues[q].kick_fd);
		close(r->queues[q].call_fd);
	}
}

/* Request i of a batch on request queue q: its slot. */
static uint64_t slot_gpa(unsigned int q, unsigned int i)
{
	return SLOTS_AT + ((q - 1) * QSIZE + i) * SLOT;
}

/* Puts request i of a batch on request queue q, its header and args at in,
 * its reply in slot i. */
static void put_at(struct rig *r, unsigned int q, unsigned int i, uint64_t in,
		   uint32_t opcode, uint64_t nodeid, const void *args,
		   size_t len)
{
	uint64_t out = slot_gpa(q, i) + SLOT / 2;
	struct fuse_in_header h = {.len = (uint32_t)(sizeof(h) + len),
				   .opcode = opcode, .unique = ++r->unique[q],
				   .nodeid = nodeid, .pid = 1};
	memcpy(r->ram + in, &h, sizeof(h));
	memcpy(r->ram + in + sizeof(h), args, len);
	struct vring_desc *desc = (void *)(r->ram + ring_gpa(q, 0));
	uint16_t d = (uint16_t)(2 * i % QSIZE);
	desc[d] = (struct vring_desc){.addr = in, .len = h.len,
				      .flags = VRING_DESC_F_NEXT,
				      .next = (uint16_t)(d + 1)};
	desc[d + 1] = (struct vring_desc){.addr = out, .len = SLOT / 2,
					  .flags = VRING_DESC_F_WRITE};
	struct vring_avail *avail = (void *)(r->ram + ring_gpa(q, 1));
	avail->ring[r->avail_idx[q]++ % QSIZE] = d;
}

/* Request i of a batch, in slot i: header, args, then room for the reply. */
static void put(struct rig *r, unsigned int q, unsigned int i, uint32_t opcode,
		uint64_t nodeid, const void *args, size_t len)
{
	put_at(r, q, i, slot_gpa(q, i), opcode, nodeid, args, len);
}

/* Publishes what was put on queue q and kicks it. */
static void kick(struct rig *r, unsigned int q)
{
	struct vring_avail *avail = (void *)(r->ram + ring_gpa(q, 1));
	__atomic_store_n(&avail->idx, r->avail_idx[q], __ATOMIC_RELEASE);
	uint64_t one = 1;
	assert_int_equal(write(r->queues[q].kick_fd, &one, sizeof(one)),
			 sizeof(one));
}

/* Waits (5 s at most) until every request put on queue q has come back. */
static void wait_all(struct rig *r, unsigned int q)
{
	struct vring_used *used = (void *)(r->ram + ring_gpa(q, 2));
	for (int ms = 0; ms < 5000; ms++) {
		if (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == r->avail_idx[q])
			return;
		usleep(1000);
	}
	fail_msg("queue %u: only %u of %u requests answered", q,
		 __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE), r->avail_idx[q]);
}

/* The reply in slot i of queue q: its header, and a pointer to what
 * follows. */
static struct fuse_out_header reply(struct rig *r, unsigned int q,
				    unsigned int i, const void **body)
{
	struct fuse_out_header h;
	const uint8_t *out = r->ram + slot_gpa(q, i) + SLOT / 2;
	memcpy(&h, out, sizeof(h));
	*body = out + sizeof(h);
	return h;
}

static void init_session(struct rig *r)
{
	struct fuse_init_in in = {.major = FUSE_KERNEL_VERSION, .minor = 38,
				  .max_readahead = 1 << 20};
	put(r, 1, 0, FUSE_INIT, 0, &in, sizeof(in));
	kick(r, 1);
	wait_all(r, 1);
	const void *body;
	assert_int_equal(reply(r, 1, 0, &body).error, 0);
}

static int setup(void **state)
{
	static struct rig r;
	memset(&r, 0, sizeof(r));
	snprintf(r.root, sizeof(r.root), "/tmp/fsvm-vfs-XXXXXX");
	assert_non_null(mkdtemp(r.root));
	for (int i = 0; i < NR_FILES; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/f%d", r.root, i);
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		assert_true(fd >= 0 && write(fd, "data", 4) == 4);
		close(fd);
	}
	r.ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r.ram != MAP_FAILED);
	r.mem = (struct guest_mem){0};
	assert_int_equal(guest_mem_add(&r.mem, 0, RAM_SIZE, r.ram), 0);
	struct fuse_server_config cfg = {.root = r.root, .cache = FUSE_CACHE_AUTO};
	assert_int_equal(virtio_fs_create(&r.fs, "t", &cfg, NRQ, 0, 0), 0);
	start_queues(&r);
	init_session(&r);
	*state = &r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;
	stop_queues(r);
	fuse_server_destroy(r->fs.server);
	close(r->fs.queues.stop_fd);
	munmap(r->ram, RAM_SIZE);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->root);
	return system(cmd);
}

/* A batch of lookups of the files, one of a missing name and getattrs of
 * the root on queue q: every request comes back once, answered right. */
static void batch(struct rig *r, unsigned int q, unsigned int n)
{
	uint64_t first = r->unique[q] + 1;
	uint16_t from = r->avail_idx[q];
	for (unsigned int i = 0; i < n; i++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "f%u", i % (NR_FILES + 1));
		struct fuse_getattr_in ga = {0};
		if (i % 3 == 2)
			put(r, q, i, FUSE_GETATTR, FUSE_ROOT_ID, &ga, sizeof(ga));
		else
			put(r, q, i, FUSE_LOOKUP, FUSE_ROOT_ID, name, (size_t)len + 1);
	}
	kick(r, q);
	wait_all(r, q);
	struct vring_used *used = (void *)(r->ram + ring_gpa(q, 2));
	bool seen[QSIZE] = {false};
	for (uint16_t u = from; u != r->avail_idx[q]; u++) {
		uint32_t head = used->ring[u % QSIZE].id;
		assert_true(head < QSIZE && head % 2 == 0 && !seen[head]);
		seen[head] = true;
	}
	for (unsigned int i = 0; i < n; i++) {
		const void *body;
		struct fuse_out_header h = reply(r, q, i, &body);
		assert_int_equal(h.unique, first + i);
		assert_int_equal(h.error, 0);
		if (i % 3 == 2)
			continue;
		struct fuse_entry_out e;
		memcpy(&e, body, sizeof(e));
		/* f50 is the missing name: a negative entry. */
		if (i % (NR_FILES + 1) == NR_FILES)
			assert_int_equal(e.nodeid, 0);
		else
			assert_int_not_equal(e.nodeid, 0);
	}
}

static void test_every_request_answered_once(void **state)
{
	struct rig *r = *state;
	for (int round = 0; round < 20; round++)
		batch(r, 1, QSIZE / 2);
}

/* A deep queue on the worker: each request with more behind it goes to a
 * helper thread (the last of a batch stays), each still answered once and
 * right; a lone request never leaves the worker. */
static void test_deep_queue_shared_with_helpers(void **state)
{
	struct rig *r = *state;
	uint64_t before = atomic_load(&r->fs.queues.requests_on_helpers);
	for (int round = 0; round < 20; round++)
		batch(r, 1, QSIZE / 2);
	uint64_t helped =
		atomic_load(&r->fs.queues.requests_on_helpers) - before;
	assert_true(helped > 0);
	assert_true(helped <= 20 * (QSIZE / 2 - 1));
	before = atomic_load(&r->fs.queues.requests_on_helpers);
	for (int round = 0; round < 20; round++)
		batch(r, 1, 1);
	assert_int_equal(atomic_load(&r->fs.queues.requests_on_helpers),
			 before);
}

struct queue_load {
	struct rig *r;
	unsigned int q;
};

static void *load_queue(void *arg)
{
	struct queue_load *l = arg;
	for (int round = 0; round < 20; round++)
		batch(l->r, l->q, QSIZE / 2);
	return NULL;
}

/* A 6.12 guest sends each CPU's requests down its own queue: one share's
 * lookups (which count inodes) and getattrs on both request queues at
 * once, each answered once and right, each queue's requests counted. */
static void test_two_request_queues_at_once(void **state)
{
	struct rig *r = *state;
	uint64_t before = atomic_load(&r->fs.queues.queue_requests[1]);
	struct queue_load loads[NRQ];
	pthread_t threads[NRQ];
	for (unsigned int k = 0; k < NRQ; k++) {
		loads[k] = (struct queue_load){.r = r, .q = 1 + k};
		assert_int_equal(pthread_create(&threads[k], NULL, load_queue,
						&loads[k]),
				 0);
	}
	for (unsigned int k = 0; k < NRQ; k++)
		pthread_join(threads[k], NULL);
	assert_int_equal(atomic_load(&r->fs.queues.queue_requests[1]) - before,
			 20 * QSIZE / 2);
	assert_int_equal(atomic_load(&r->fs.queues.queue_requests[2]),
			 20 * QSIZE / 2);
	assert_int_equal(atomic_load(&r->fs.queues.queue_requests[0]), 0);
	/* Each file a batch looks up is one inode, from either queue, beside
	 * the root. */
	bool looked_up[NR_FILES] = {false};
	size_t files = 0;
	for (unsigned int i = 0; i < QSIZE / 2; i++) {
		unsigned int f = i % (NR_FILES + 1);
		if (i % 3 != 2 && f < NR_FILES && !looked_up[f]) {
			looked_up[f] = true;
			files++;
		}
	}
	assert_int_equal(fuse_server_inode_count(r->fs.server), 1 + files);
}

/* A reset while a batch runs waits for the request in hand and stops the
 * workers; the device then starts again as new. */
static void test_reset_in_the_middle(void **state)
{
	struct rig *r = *state;
	for (int round = 0; round < 10; round++) {
		for (unsigned int i = 0; i < QSIZE / 2; i++) {
			struct fuse_getattr_in ga = {0};
			put(r, 1, i, FUSE_GETATTR, FUSE_ROOT_ID, &ga, sizeof(ga));
		}
		kick(r, 1);
		stop_queues(r);
		start_queues(r);
		init_session(r);
		batch(r, 1, 30);
	}
}

/* Publishes what was put on queue q and rings its doorbell as a vCPU
 * does: the device's notify, on this thread. */
static void ring(struct rig *r, unsigned int q)
{
	struct vring_avail *avail = (void *)(r->ram + ring_gpa(q, 1));
	__atomic_store_n(&avail->idx, r->avail_idx[q], __ATOMIC_RELEASE);
	r->fs.dev.notify(r->fs.dev.opaque, q);
}

static uint16_t used_idx(struct rig *r, unsigned int q)
{
	struct vring_used *used = (void *)(r->ram + ring_gpa(q, 2));
	return __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE);
}

static bool kicked(struct rig *r, unsigned int q)
{
	uint64_t n;
	return read(r->queues[q].kick_fd, &n, sizeof(n)) == sizeof(n);
}

/* A doorbell with a request or two behind it is answered before the
 * doorbell returns, on the ringing thread, with no kick for the worker;
 * past VIRTIO_FS_INLINE_BUDGET requests the rest go to the worker. */
static void test_doorbell_runs_requests_in_place(void **state)
{
	struct rig *r = *state;
	struct fuse_getattr_in ga = {0};
	for (unsigned int n = 1; n <= 2; n++) {
		uint16_t before = used_idx(r, 1);
		for (unsigned int i = 0; i < n; i++)
			put(r, 1, i, FUSE_GETATTR, FUSE_ROOT_ID, &ga, sizeof(ga));
		ring(r, 1);
		assert_int_equal((uint16_t)(used_idx(r, 1) - before), n);
		assert_false(kicked(r, 1));
		const void *body;
		assert_int_equal(reply(r, 1, n - 1, &body).error, 0);
	}
	/* A deep batch: the budget here, the rest on the worker. The
	 * worker may take the kick before this thread looks, so the kick is
	 * seen through its work: every request answered. */
	uint16_t before = used_idx(r, 1);
	unsigned int deep = 4 * VIRTIO_FS_INLINE_BUDGET;
	for (unsigned int i = 0; i < deep; i++)
		put(r, 1, i, FUSE_GETATTR, FUSE_ROOT_ID, &ga, sizeof(ga));
	ring(r, 1);
	assert_true((uint16_t)(used_idx(r, 1) - before) >=
		    VIRTIO_FS_INLINE_BUDGET);
	wait_all(r, 1);
	assert_int_equal((uint16_t)(used_idx(r, 1) - before), deep);
	/* Doorbells of a queue past the device's, and of the idle
	 * high-priority queue, do nothing. */
	r->fs.dev.notify(r->fs.dev.opaque, 1 + NRQ);
	r->fs.dev.notify(r->fs.dev.opaque, 0);
	assert_int_equal(used_idx(r, 0), 0);
}

static uint64_t in_place(struct rig *r)
{
	return atomic_load(&r->fs.queues.requests_in_place);
}

/* Rings one request on queue 1 and waits for its answer: its header, and
 * what follows in body (up to len bytes). */
static struct fuse_out_header ring_one(struct rig *r, uint32_t opcode,
				       uint64_t nodeid, const void *args,
				       size_t len, void *body, size_t body_len)
{
	put(r, 1, 0, opcode, nodeid, args, len);
	ring(r, 1);
	wait_all(r, 1);
	const void *at;
	struct fuse_out_header h = reply(r, 1, 0, &at);
	memcpy(body, at, body_len);
	return h;
}

/* Writes size bytes of c at offset through handle fh of nodeid, as page
 * cache writeback (FUSE_WRITE_CACHE) or not, with a GETATTR of the file
 * behind it on the same doorbell: the size the GETATTR saw. */
static uint64_t write_then_getattr(struct rig *r, uint64_t nodeid,
				   uint64_t fh, bool writeback,
				   uint64_t offset, const char *c, size_t size)
{
	struct fuse_write_in in = {
		.fh = fh, .offset = offset, .size = (uint32_t)size,
		.write_flags = writeback ? FUSE_WRITE_CACHE : 0};
	uint8_t *args = malloc(sizeof(in) + size);
	assert_non_null(args);
	memcpy(args, &in, sizeof(in));
	for (size_t k = 0; k < size; k++)
		args[sizeof(in) + k] = (uint8_t)c[k % strlen(c)];
	put_at(r, 1, 0, BIG_AT, FUSE_WRITE, nodeid, args, sizeof(in) + size);
	free(args);
	struct fuse_getattr_in ga = {0};
	put(r, 1, 1, FUSE_GETATTR, nodeid, &ga, sizeof(ga));
	ring(r, 1);
	wait_all(r, 1);
	const void *body;
	struct fuse_write_out wo;
	assert_int_equal(reply(r, 1, 0, &body).error, 0);
	memcpy(&wo, body, sizeof(wo));
	assert_int_equal(wo.size, size);
	struct fuse_attr_out ao;
	assert_int_equal(reply(r, 1, 1, &body).error, 0);
	memcpy(&ao, body, sizeof(ao));
	return ao.attr.size;
}

/* Streaming writeback (VIRTIO_FS_WRITEBACK_TO_WORKER bytes or more) goes
 * to the worker even from an idle ring, and so does what follows it on
 * that doorbell; a WRITE a caller waits for, or a small file's pages
 * written back at close, runs in place. Each lands in the file, in order. */
static void test_writeback_goes_to_the_worker(void **state)
{
	struct rig *r = *state;
	struct fuse_entry_out e;
	assert_int_equal(ring_one(r, FUSE_LOOKUP, FUSE_ROOT_ID, "f1", 3, &e,
				  sizeof(e)).error,
			 0);
	struct fuse_open_in oi = {.flags = O_RDWR};
	struct fuse_open_out oo;
	assert_int_equal(ring_one(r, FUSE_OPEN, e.nodeid, &oi, sizeof(oi), &oo,
				  sizeof(oo)).error,
			 0);
	const size_t big = VIRTIO_FS_WRITEBACK_TO_WORKER;

	uint64_t before = in_place(r);
	assert_int_equal(write_then_getattr(r, e.nodeid, oo.fh, false, 0,
					    "sync", 4), 4);
	assert_int_equal(in_place(r), before + 2);
	assert_int_equal(write_then_getattr(r, e.nodeid, oo.fh, true, 4,
					    "back", 4), 8);
	assert_int_equal(in_place(r), before + 4);
	assert_int_equal(write_then_getattr(r, e.nodeid, oo.fh, false, 8,
					    "large", big), 8 + big);
	assert_int_equal(in_place(r), before + 6);
	/* The GETATTR behind the writeback saw it done: the worker ran both,
	 * in order. */
	assert_int_equal(write_then_getattr(r, e.nodeid, oo.fh, true, 8 + big,
					    "stream", big), 8 + 2 * big);
	assert_int_equal(in_place(r), before + 6);

	char path[128], got[16] = {0};
	snprintf(path, sizeof(path), "%s/f1", r->root);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, got, 13, 0), 13);
	assert_string_equal(got, "syncbacklarge");
	assert_int_equal(pread(fd, got, 6, (off_t)(8 + big)), 6);
	assert_memory_equal(got, "stream", 6);
	close(fd);
}

struct bell_ringer {
	struct rig *r;
	atomic_bool stop;
};

static void *ring_bells(void *arg)
{
	struct bell_ringer *b = arg;
	while (!atomic_load(&b->stop))
		for (unsigned int q = 0; q <= 1 + NRQ; q++)
			b->r->fs.dev.notify(b->r->fs.dev.opaque, q);
	return NULL;
}

/* Another vCPU rings every doorbell without pause while the driver
 * resets the device and starts it again, and requests run: none is lost
 * or answered twice, and nothing runs on a stopped device. */
static void test_doorbells_during_resets(void **state)
{
	struct rig *r = *state;
	struct bell_ringer b = {.r = r};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, ring_bells, &b), 0);
	for (int round = 0; round < 10; round++) {
		batch(r, 1, QSIZE / 4);
		stop_queues(r);
		start_queues(r);
		init_session(r);
	}
	batch(r, 2, QSIZE / 4);
	atomic_store(&b.stop, true);
	pthread_join(t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_request_answered_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_deep_queue_shared_with_helpers,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_request_queues_at_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_in_the_middle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_doorbell_runs_requests_in_place,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_writeback_goes_to_the_worker,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_doorbells_during_resets,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
