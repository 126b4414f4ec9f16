/* Unit tests for devices/virtio_blk: the test plays the guest (real split
 * rings in a buffer of guest RAM, kicks and interrupts on eventfds) on a
 * real image in a temporary file, through a real io_uring. Reads and
 * writes checked against the file; flush, discard (the file's blocks
 * freed), write zeroes, GET_ID; a read-only disk; O_DIRECT; hostile
 * requests and rings; several queues at once; a request that never ends
 * on one queue while another goes on (a socket as the disk); resets with
 * requests in flight. Run under ASan and TSan too (make unit). */
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/virtio_blk.h"

#define RAM_SIZE (64u << 20)
#define QSIZE 256u
#define MAX_QUEUES 4u
/* Queue q's rings: desc, avail and used, 12 KiB per queue from 0. */
#define RING_AT(q, part) ((q) * 0x3000u + (part) * 0x1000u)
/* Per request slot (queue, head): its header and range, its status
 * byte, its indirect table. */
#define SLOT(q, head) ((q) * QSIZE + (head))
#define HDR_AT(q, head) (0x10000u + SLOT(q, head) * 32u)
#define STATUS_AT(q, head) (0x30000u + SLOT(q, head))
#define TABLE_DESCS 160u
#define TABLE_AT(q, head) (0x100000u + SLOT(q, head) * TABLE_DESCS * 16u)
#define DATA_AT 0x400000u /* data buffers, to the end of RAM */
#define DISK_SIZE ((16u << 20) + 100u) /* a trailing partial sector */
#define CAPACITY ((uint64_t)DISK_SIZE / 512u)
#define NOT_RAM (1ULL << 40)

/* The test plays the guest, which meets the device only through the
 * rings' ordering rules (fences around plain stores), which TSan cannot
 * see: races with the driver side's functions (drv_*) are not reported.
 * Races between the device's thread and its reset still are. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:drv_\n";
}

struct config {
	bool readonly, direct, socket, event_idx;
	const char *serial;
	unsigned int queues;
};

static const struct config plain = {.event_idx = true, .queues = 2,
				    .serial = "fsvm-disk-1"};
static const struct config four = {.queues = 4};
static const struct config ro = {.readonly = true, .queues = 1};
static const struct config direct = {.direct = true, .event_idx = true,
				     .queues = 1};
/* The disk is one end of a socket pair: a read waits until the test
 * writes, so a request can be made to last as long as a test likes. */
static const struct config sock = {.socket = true, .queues = 2};

struct rig {
	const struct config *cfg;
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_blk b;
	bool open, live;
	struct virtio_queue queues[MAX_QUEUES];
	char path[64];
	int file; /* the test's own view of the image */
	int peer; /* with a socket as the disk, its other end */
	uint16_t avail_idx[MAX_QUEUES], used_seen[MAX_QUEUES];
	uint16_t next_desc[MAX_QUEUES];
};

/* ---- the device ---- */

static void start(struct rig *r)
{
	for (unsigned int q = 0; q < r->cfg->queues; q++) {
		struct virtio_queue *vq = &r->queues[q];
		*vq = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
		assert_true(vq->kick_fd >= 0 && vq->call_fd >= 0);
		memset(r->ram + RING_AT(q, 0), 0, 0x3000);
		assert_int_equal(split_ring_init(&vq->ring, &r->mem, QSIZE,
						 RING_AT(q, 0), RING_AT(q, 1),
						 RING_AT(q, 2), r->cfg->event_idx, true),
				 0);
		r->avail_idx[q] = r->used_seen[q] = r->next_desc[q] = 0;
	}
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	if (r->cfg->event_idx)
		features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	assert_int_equal(r->b.dev.activate(r->b.dev.opaque, r->queues,
					   r->cfg->queues, features),
			 0);
	r->live = true;
}

static void stop(struct rig *r)
{
	r->b.dev.reset(r->b.dev.opaque);
	r->live = false;
	assert_int_equal(atomic_load(&r->b.in_flight), 0);
	for (unsigned int q = 0; q < r->cfg->queues; q++) {
		close(r->queues[q].kick_fd);
		close(r->queues[q].call_fd);
	}
}

static void device_open(struct rig *r, const struct config *cfg)
{
	r->cfg = cfg;
	struct virtio_blk_disk d = {.size = DISK_SIZE, .readonly = cfg->readonly,
				    .direct = cfg->direct,
				    .discard = !cfg->readonly && !cfg->socket};
	if (cfg->serial)
		snprintf(d.serial, sizeof(d.serial), "%s", cfg->serial);
	if (cfg->socket) {
		int sv[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		d.fd = sv[0];
		r->peer = sv[1];
		d.size = 1 << 20;
	} else {
		int flags = (cfg->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC |
			    (cfg->direct ? O_DIRECT : 0);
		d.fd = open(r->path, flags);
		assert_true(d.fd >= 0);
	}
	assert_int_equal(virtio_blk_create(&r->b, &d, cfg->queues), 0);
	snprintf(r->b.name, sizeof(r->b.name), "vda"); /* add names it */
	r->open = true;
	start(r);
}

static void device_close(struct rig *r)
{
	if (r->live)
		stop(r);
	if (r->open)
		virtio_blk_destroy(&r->b);
	r->open = false;
	if (r->peer >= 0)
		close(r->peer);
	r->peer = -1;
}

static int setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->peer = -1;
	r->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(r->ram != MAP_FAILED);
	assert_int_equal(guest_mem_add(&r->mem, 0, RAM_SIZE, r->ram), 0);
	snprintf(r->path, sizeof(r->path), "/tmp/fsvm-blk-XXXXXX");
	r->file = mkstemp(r->path);
	assert_true(r->file >= 0);
	assert_int_equal(ftruncate(r->file, DISK_SIZE), 0);
	device_open(r, *state);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;
	device_close(r);
	close(r->file);
	unlink(r->path);
	munmap(r->ram, RAM_SIZE);
	free(r);
	return 0;
}

static uint64_t count(struct rig *r, enum virtio_blk_counter c)
{
	return atomic_load(&r->b.counts[c]);
}

/* ---- the guest: rings and requests ---- */

struct seg {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;
};

static struct vring_used *drv_used_ring(struct rig *r, unsigned int q)
{
	return (void *)(r->ram + RING_AT(q, 2));
}

static uint16_t drv_used_idx(struct rig *r, unsigned int q)
{
	return __atomic_load_n(&drv_used_ring(r, q)->idx, __ATOMIC_ACQUIRE);
}

static void drv_avail(struct rig *r, unsigned int q, uint16_t head)
{
	struct vring_avail *avail = (void *)(r->ram + RING_AT(q, 1));
	avail->ring[r->avail_idx[q]++ % QSIZE] = head;
}

/* Publishes what was put on queue q, claiming extra more chains than that
 * (a hostile index), and kicks it. */
static void drv_publish_more(struct rig *r, unsigned int q, uint16_t extra)
{
	struct vring_avail *avail = (void *)(r->ram + RING_AT(q, 1));
	__atomic_store_n(&avail->idx, (uint16_t)(r->avail_idx[q] + extra),
			 __ATOMIC_RELEASE);
	uint64_t one = 1;
	assert_int_equal(write(r->queues[q].kick_fd, &one, sizeof(one)),
			 sizeof(one));
}

static void drv_publish(struct rig *r, unsigned int q)
{
	drv_publish_more(r, q, 0);
}

/* Puts a chain on queue q, in consecutive descriptors of the ring's table
 * or in the head's indirect table. Returns its head. */
static uint16_t drv_chain(struct rig *r, unsigned int q, const struct seg *s,
			  unsigned int nr, bool indirect)
{
	struct vring_desc *d = (void *)(r->ram + RING_AT(q, 0));
	uint16_t head = r->next_desc[q] % QSIZE;
	if (indirect) {
		assert_true(nr <= TABLE_DESCS);
		struct vring_desc *t = (void *)(r->ram + TABLE_AT(q, head));
		for (unsigned int i = 0; i < nr; i++)
			t[i] = (struct vring_desc){
				.addr = s[i].gpa, .len = s[i].len,
				.flags = (uint16_t)(s[i].flags |
						    (i + 1 < nr ? VRING_DESC_F_NEXT : 0)),
				.next = (uint16_t)(i + 1)};
		d[head] = (struct vring_desc){.addr = TABLE_AT(q, head),
					      .len = nr * sizeof(struct vring_desc),
					      .flags = VRING_DESC_F_INDIRECT};
		r->next_desc[q]++;
	} else {
		for (unsigned int i = 0; i < nr; i++) {
			uint16_t at = r->next_desc[q]++ % QSIZE;
			d[at] = (struct vring_desc){
				.addr = s[i].gpa, .len = s[i].len,
				.flags = (uint16_t)(s[i].flags |
						    (i + 1 < nr ? VRING_DESC_F_NEXT : 0)),
				.next = (uint16_t)((at + 1) % QSIZE)};
		}
	}
	drv_avail(r, q, head);
	return head;
}

/* A request as a driver lays it out: the header (with range when
 * range_len), data in pieces of about equal size, then the status byte
 * (set to 0xff, which no answer is). */
struct req {
	uint32_t type;
	uint64_t sector;
	uint64_t data;
	uint32_t len;
	unsigned int pieces; /* 0: one */
	bool indirect;
	bool misdirected; /* data buffers of the other direction */
	struct virtio_blk_discard_write_zeroes range;
	uint32_t range_len; /* bytes of ranges after the header */
};

/* A read, write or any type with data: len bytes at data, in pieces. */
static struct req rw(uint32_t type, uint64_t sector, uint64_t data, uint32_t len,
		     unsigned int pieces, bool indirect)
{
	return (struct req){.type = type, .sector = sector, .data = data,
			    .len = len, .pieces = pieces, .indirect = indirect};
}

static uint16_t drv_request(struct rig *r, unsigned int q, struct req req)
{
	const struct req *rq = &req;
	static struct seg s[TABLE_DESCS];
	uint16_t head = r->next_desc[q] % QSIZE;
	struct virtio_blk_outhdr hdr = {.type = rq->type, .sector = rq->sector};
	memcpy(r->ram + HDR_AT(q, head), &hdr, sizeof(hdr));
	unsigned int nr = 0;
	s[nr++] = (struct seg){HDR_AT(q, head), sizeof(hdr), 0};
	if (rq->range_len) {
		memcpy(r->ram + HDR_AT(q, head) + 16, &rq->range, sizeof(rq->range));
		s[nr++] = (struct seg){HDR_AT(q, head) + 16, rq->range_len, 0};
	}
	bool writable = rq->type == VIRTIO_BLK_T_IN || rq->type == VIRTIO_BLK_T_GET_ID;
	if (rq->misdirected)
		writable = !writable;
	unsigned int pieces = rq->pieces ? rq->pieces : 1;
	uint64_t off = 0;
	for (unsigned int i = 0; rq->len && i < pieces; i++) {
		uint32_t piece = rq->len / pieces + (i < rq->len % pieces);
		s[nr++] = (struct seg){rq->data + off, piece,
				       writable ? VRING_DESC_F_WRITE : 0};
		off += piece;
	}
	r->ram[STATUS_AT(q, head)] = 0xff;
	s[nr++] = (struct seg){STATUS_AT(q, head), 1, VRING_DESC_F_WRITE};
	assert_int_equal(drv_chain(r, q, s, nr, rq->indirect), head);
	return head;
}

/* The next answer on queue q: its head, used length and status. Waits
 * 30 s at most: TSan on a loaded machine is slow, and a healthy device
 * ends the wait at once. */
struct answer {
	uint16_t head;
	uint32_t len;
	uint8_t status;
};

static struct answer drv_next(struct rig *r, unsigned int q)
{
	for (int ms = 0; ms < 30000 && drv_used_idx(r, q) == r->used_seen[q]; ms++)
		usleep(1000);
	if (drv_used_idx(r, q) == r->used_seen[q])
		fail_msg("queue %u: no answer after %u", q, r->used_seen[q]);
	struct vring_used_elem e = drv_used_ring(r, q)->ring[r->used_seen[q]++ % QSIZE];
	assert_true(e.id < QSIZE);
	return (struct answer){(uint16_t)e.id, e.len, r->ram[STATUS_AT(q, e.id)]};
}

/* The request at head comes back next with status and used length. */
static void drv_expect(struct rig *r, unsigned int q, uint16_t head,
		       uint8_t status, uint32_t len)
{
	struct answer a = drv_next(r, q);
	assert_int_equal(a.head, head);
	assert_int_equal(a.len, len);
	if (len)
		assert_int_equal(a.status, status);
}

/* One request, published and answered. */
static void drv_do(struct rig *r, unsigned int q, struct req rq,
		   uint8_t status, uint32_t len)
{
	uint16_t head = drv_request(r, q, rq);
	drv_publish(r, q);
	drv_expect(r, q, head, status, len);
}

/* Answers to n requests in any order, each once and OK, the reads'
 * lengths data + status. */
static void drv_all_ok(struct rig *r, unsigned int q, unsigned int n,
		       uint32_t len)
{
	bool seen[QSIZE] = {false};
	for (unsigned int i = 0; i < n; i++) {
		struct answer a = drv_next(r, q);
		assert_false(seen[a.head]);
		seen[a.head] = true;
		assert_int_equal(a.status, VIRTIO_BLK_S_OK);
		assert_int_equal(a.len, len);
	}
}

static uint8_t drv_byte(struct rig *r, uint64_t gpa)
{
	return r->ram[gpa];
}

static bool drv_equal(struct rig *r, uint64_t gpa, const void *p, size_t len)
{
	return !memcmp(r->ram + gpa, p, len);
}

static void drv_set(struct rig *r, uint64_t gpa, int byte, size_t len)
{
	memset(r->ram + gpa, byte, len);
}

static void drv_put(struct rig *r, uint64_t gpa, const void *p, size_t len)
{
	memcpy(r->ram + gpa, p, len);
}

static void drv_fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static bool drv_filled(const uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 9)))
			return false;
	return true;
}

static bool file_filled(struct rig *r, uint64_t at, size_t len, unsigned int seed)
{
	static uint8_t buf[4 << 20];
	assert_true(len <= sizeof(buf));
	assert_int_equal(pread(r->file, buf, len, (off_t)at), (ssize_t)len);
	return drv_filled(buf, len, seed);
}

static bool file_zeros(struct rig *r, uint64_t at, size_t len)
{
	static uint8_t buf[4 << 20];
	assert_int_equal(pread(r->file, buf, len, (off_t)at), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

static void file_fill(struct rig *r, uint64_t at, size_t len, unsigned int seed)
{
	static uint8_t buf[4 << 20];
	drv_fill(buf, len, seed);
	assert_int_equal(pwrite(r->file, buf, len, (off_t)at), (ssize_t)len);
	assert_int_equal(fsync(r->file), 0);
}

static long long file_blocks(struct rig *r)
{
	struct stat st;
	assert_int_equal(fstat(r->file, &st), 0);
	return (long long)st.st_blocks;
}

/* ---- the cases ---- */

/* Writes in one and in many buffers (through an indirect table) land in
 * the file; reads bring them back byte for byte, the used length their
 * data and the status; the last sector is the disk's. */
static void test_read_write_round_trip(void **state)
{
	struct rig *r = *state;
	assert_int_equal(r->b.config.capacity, CAPACITY);
	uint64_t f = r->b.dev.features;
	assert_true(f & (1ULL << VIRTIO_BLK_F_FLUSH) && f & (1ULL << VIRTIO_BLK_F_MQ) &&
		    f & (1ULL << VIRTIO_BLK_F_DISCARD) &&
		    f & (1ULL << VIRTIO_BLK_F_WRITE_ZEROES));
	assert_false(f & (1ULL << VIRTIO_BLK_F_RO));
	drv_fill(r->ram + DATA_AT, 192 << 10, 1);
	drv_fill(r->ram + DATA_AT + (1 << 20), 64 << 10, 2);
	drv_request(r, 0, rw(VIRTIO_BLK_T_OUT, 100, DATA_AT, 192 << 10, 3, false));
	drv_request(r, 0, rw(VIRTIO_BLK_T_OUT, 1000, DATA_AT + (1 << 20), 64 << 10, 16, true));
	drv_publish(r, 0);
	drv_all_ok(r, 0, 2, 1);
	assert_true(file_filled(r, 100 * 512, 192 << 10, 1));
	assert_true(file_filled(r, 1000 * 512, 64 << 10, 2));
	assert_int_equal(count(r, BLK_WRITES), 2);
	assert_int_equal(count(r, BLK_BYTES_WRITTEN), 256 << 10);

	uint64_t in = DATA_AT + (4 << 20);
	drv_do(r, 1, rw(VIRTIO_BLK_T_IN, 100, in, 192 << 10, 5, false),
	       VIRTIO_BLK_S_OK, (192 << 10) + 1);
	assert_true(drv_filled(r->ram + in, 192 << 10, 1));
	drv_do(r, 1, rw(VIRTIO_BLK_T_IN, 1000, in, 64 << 10, 128, true),
	       VIRTIO_BLK_S_OK, (64 << 10) + 1);
	assert_true(drv_filled(r->ram + in, 64 << 10, 2));
	assert_int_equal(count(r, BLK_READS), 2);
	assert_int_equal(count(r, BLK_BYTES_READ), 256 << 10);

	/* The last whole sector is the disk's; the partial one is not. */
	drv_fill(r->ram + DATA_AT, 512, 3);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, CAPACITY - 1, DATA_AT, 512, 1, false),
	       VIRTIO_BLK_S_OK, 1);
	assert_true(file_filled(r, (CAPACITY - 1) * 512, 512, 3));
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, CAPACITY, in, 512, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	assert_int_equal(count(r, BLK_ERR_RANGE), 1);
}

static void test_flush(void **state)
{
	struct rig *r = *state;
	drv_fill(r->ram + DATA_AT, 4096, 4);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 8, DATA_AT, 4096, 1, false),
	       VIRTIO_BLK_S_OK, 1);
	drv_do(r, 0, rw(VIRTIO_BLK_T_FLUSH, 0, 0, 0, 1, false), VIRTIO_BLK_S_OK, 1);
	assert_int_equal(count(r, BLK_FLUSHES), 1);
	assert_true(file_filled(r, 8 * 512, 4096, 4));
}

static struct req range_req(uint32_t type, uint64_t sector, uint32_t sectors,
			    uint32_t flags)
{
	return (struct req){.type = type,
			    .range = {.sector = sector, .num_sectors = sectors,
				      .flags = flags},
			    .range_len = sizeof(struct virtio_blk_discard_write_zeroes)};
}

/* A discard punches the range out of the file: its blocks are freed, it
 * reads back as zeros, the rest of the file stays. */
static void test_discard_frees_blocks(void **state)
{
	struct rig *r = *state;
	file_fill(r, 0, 4 << 20, 5);
	long long before = file_blocks(r);
	struct req d = range_req(VIRTIO_BLK_T_DISCARD, 1024, 4096, 0);
	drv_do(r, 0, d, VIRTIO_BLK_S_OK, 1);
	assert_int_equal(count(r, BLK_DISCARDS), 1);
	assert_true(file_blocks(r) <= before - 4096 + 64);
	assert_true(file_zeros(r, 1024 * 512, 2 << 20));
	assert_true(file_filled(r, 0, 512 << 10, 5));
}

/* Write zeroes without UNMAP zeroes in place; with it, punches (the
 * blocks go). Both read back as zeros. */
static void test_write_zeroes(void **state)
{
	struct rig *r = *state;
	file_fill(r, 0, 4 << 20, 6);
	struct req z = range_req(VIRTIO_BLK_T_WRITE_ZEROES, 0, 2048, 0);
	drv_do(r, 0, z, VIRTIO_BLK_S_OK, 1);
	assert_true(file_zeros(r, 0, 1 << 20));
	long long before = file_blocks(r);
	z = range_req(VIRTIO_BLK_T_WRITE_ZEROES, 4096, 2048,
		      VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	drv_do(r, 1, z, VIRTIO_BLK_S_OK, 1);
	assert_true(file_zeros(r, 4096 * 512, 1 << 20));
	assert_true(file_blocks(r) <= before - 2048 + 64);
	assert_true(file_filled(r, 1 << 20, 1 << 20, 6) ||
		    !file_zeros(r, 1 << 20, 1 << 20));
	assert_int_equal(count(r, BLK_WRITE_ZEROES), 2);
}

/* The serial, NUL-padded to 20 bytes, or as much as the buffer takes;
 * none: 20 NULs. */
static void test_get_id(void **state)
{
	struct rig *r = *state;
	char want[20] = "fsvm-disk-1";
	drv_set(r, DATA_AT, 0xee, 64);
	drv_do(r, 0, rw(VIRTIO_BLK_T_GET_ID, 0, DATA_AT, 20, 1, false),
	       VIRTIO_BLK_S_OK, 21);
	assert_true(drv_equal(r, DATA_AT, want, 20));
	drv_set(r, DATA_AT, 0xee, 64);
	drv_do(r, 0, rw(VIRTIO_BLK_T_GET_ID, 0, DATA_AT, 4, 1, false),
	       VIRTIO_BLK_S_OK, 5);
	assert_true(drv_equal(r, DATA_AT, want, 4));
	assert_int_equal(drv_byte(r, DATA_AT + 4), 0xee);
	drv_do(r, 0, rw(VIRTIO_BLK_T_GET_ID, 0, DATA_AT, 512, 1, false),
	       VIRTIO_BLK_S_OK, 21);
	assert_int_equal(count(r, BLK_GET_ID), 3);

	device_close(r);
	device_open(r, &four);
	drv_set(r, DATA_AT, 0xee, 64);
	drv_do(r, 3, rw(VIRTIO_BLK_T_GET_ID, 0, DATA_AT, 20, 1, false),
	       VIRTIO_BLK_S_OK, 21);
	memset(want, 0, sizeof(want));
	assert_true(drv_equal(r, DATA_AT, want, 20));
}

/* A read-only disk says so, refuses every change with IOERR, and its
 * file stays as it was; reads go on. */
static void test_read_only(void **state)
{
	struct rig *r = *state;
	device_close(r);
	file_fill(r, 0, 1 << 20, 7);
	device_open(r, &ro);
	uint64_t f = r->b.dev.features;
	assert_true(f & (1ULL << VIRTIO_BLK_F_RO));
	assert_false(f & (1ULL << VIRTIO_BLK_F_DISCARD));
	drv_fill(r->ram + DATA_AT, 4096, 8);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 0, DATA_AT, 4096, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	struct req d = range_req(VIRTIO_BLK_T_DISCARD, 0, 8, 0);
	drv_do(r, 0, d, VIRTIO_BLK_S_IOERR, 1);
	d = range_req(VIRTIO_BLK_T_WRITE_ZEROES, 0, 8, 0);
	drv_do(r, 0, d, VIRTIO_BLK_S_IOERR, 1);
	assert_int_equal(count(r, BLK_ERR_READONLY), 3);
	assert_int_equal(count(r, BLK_WRITES), 0);
	assert_true(file_filled(r, 0, 1 << 20, 7));
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, 0, DATA_AT, 4096, 1, false),
	       VIRTIO_BLK_S_OK, 4097);
	assert_true(drv_filled(r->ram + DATA_AT, 4096, 7));
	drv_do(r, 0, rw(VIRTIO_BLK_T_FLUSH, 0, 0, 0, 1, false), VIRTIO_BLK_S_OK, 1);
}

/* O_DIRECT: aligned buffers go through; a buffer off 512 fails cleanly. */
static void test_direct(void **state)
{
	struct rig *r = *state;
	drv_fill(r->ram + DATA_AT, 64 << 10, 9);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 64, DATA_AT, 64 << 10, 4, false),
	       VIRTIO_BLK_S_OK, 1);
	assert_true(file_filled(r, 64 * 512, 64 << 10, 9));
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, 64, DATA_AT + (1 << 20), 64 << 10, 1, false),
	       VIRTIO_BLK_S_OK, (64 << 10) + 1);
	assert_true(drv_filled(r->ram + DATA_AT + (1 << 20), 64 << 10, 9));
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 0, DATA_AT + 100, 4096, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, 0, DATA_AT, 4096, 3, false),
	       VIRTIO_BLK_S_IOERR, 1);
	assert_int_equal(count(r, BLK_ERR_MISALIGNED), 2);
	assert_true(file_zeros(r, 0, 4096));
}

/* Requests a guest must not make: each answered with an error, or given
 * back empty when it has no status byte to carry one, and none reaches
 * the file; the queue goes on. */
static void test_hostile_requests(void **state)
{
	struct rig *r = *state;
	uint64_t in = DATA_AT;
	drv_fill(r->ram + DATA_AT, 1 << 20, 10);
	/* Past the capacity, overflowing it, crossing its end. */
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, CAPACITY, in, 512, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, UINT64_MAX, in, 512, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, UINT64_MAX / 512, in, 512, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, CAPACITY - 1, in, 1024, 1, false),
	       VIRTIO_BLK_S_IOERR, 1);
	assert_int_equal(count(r, BLK_ERR_RANGE), 4);
	/* Not whole sectors; buffers of the wrong direction; too many. */
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, 0, in, 100, 1, false), VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, (struct req){.type = VIRTIO_BLK_T_IN, .data = in, .len = 512,
				   .misdirected = true},
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, (struct req){.type = VIRTIO_BLK_T_OUT, .data = in, .len = 512,
				   .misdirected = true},
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, (struct req){.type = VIRTIO_BLK_T_FLUSH, .data = in, .len = 512},
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, (struct req){.type = VIRTIO_BLK_T_GET_ID, .data = in, .len = 20,
				   .misdirected = true},
	       VIRTIO_BLK_S_IOERR, 1);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 0, in, 129 * 512, 129, true),
	       VIRTIO_BLK_S_IOERR, 1);
	/* Ranges: two of them, too long, past the end, flags not theirs. */
	struct req d = range_req(VIRTIO_BLK_T_DISCARD, 0, 8, 0);
	d.range_len = 32;
	drv_do(r, 0, d, VIRTIO_BLK_S_IOERR, 1);
	d = range_req(VIRTIO_BLK_T_WRITE_ZEROES, 0, (1u << 22) + 1, 0);
	drv_do(r, 0, d, VIRTIO_BLK_S_IOERR, 1);
	assert_int_equal(count(r, BLK_ERR_MALFORMED), 8);
	d = range_req(VIRTIO_BLK_T_DISCARD, CAPACITY - 4, 8, 0);
	drv_do(r, 0, d, VIRTIO_BLK_S_IOERR, 1);
	d = range_req(VIRTIO_BLK_T_DISCARD, 0xffffffffffffff00ULL, 0x100, 0);
	drv_do(r, 0, d, VIRTIO_BLK_S_IOERR, 1);
	assert_int_equal(count(r, BLK_ERR_RANGE), 6);
	d = range_req(VIRTIO_BLK_T_DISCARD, 0, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	drv_do(r, 0, d, VIRTIO_BLK_S_UNSUPP, 1);
	d = range_req(VIRTIO_BLK_T_WRITE_ZEROES, 0, 8, 2);
	drv_do(r, 0, d, VIRTIO_BLK_S_UNSUPP, 1);
	/* Types it does not know. */
	const uint32_t unknown[] = {2, 99, VIRTIO_BLK_T_SECURE_ERASE,
				    VIRTIO_BLK_T_OUT | 0x80000000u};
	for (unsigned int i = 0; i < 4; i++)
		drv_do(r, 0, rw(unknown[i], 0, in, 512, 1, false), VIRTIO_BLK_S_UNSUPP, 1);
	assert_int_equal(count(r, BLK_UNSUPPORTED), 6);

	/* No status byte to answer in: a header too short, a status that is
	 * read-only or of no length at all, a buffer outside RAM. */
	struct seg s[3] = {{HDR_AT(0, 0), 8, 0}, {STATUS_AT(0, 0), 1, VRING_DESC_F_WRITE}};
	uint16_t head = drv_chain(r, 0, s, 2, false);
	drv_publish(r, 0);
	drv_expect(r, 0, head, 0, 0);
	struct virtio_blk_outhdr out = {.type = VIRTIO_BLK_T_OUT};
	drv_put(r, HDR_AT(0, 1), &out, sizeof(out));
	s[0] = (struct seg){HDR_AT(0, 1), 16, 0};
	s[1] = (struct seg){in, 512, 0};
	s[2] = (struct seg){STATUS_AT(0, 1), 1, 0};
	head = drv_chain(r, 0, s, 3, true);
	drv_publish(r, 0);
	drv_expect(r, 0, head, 0, 0);
	s[2] = (struct seg){STATUS_AT(0, 1), 0, VRING_DESC_F_WRITE};
	head = drv_chain(r, 0, s, 3, false);
	drv_publish(r, 0);
	drv_expect(r, 0, head, 0, 0);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 0, NOT_RAM, 512, 1, false), 0, 0);
	drv_do(r, 0, rw(VIRTIO_BLK_T_IN, 0, NOT_RAM, 512, 1, false), 0, 0);
	assert_int_equal(count(r, BLK_BAD_CHAINS), 5);
	/* A read whose status is cut off: the last byte of its data is
	 * taken for the status, which leaves the data short of a sector. */
	struct virtio_blk_outhdr rd = {.type = VIRTIO_BLK_T_IN};
	drv_put(r, HDR_AT(0, 2), &rd, sizeof(rd));
	s[0] = (struct seg){HDR_AT(0, 2), 16, 0};
	s[1] = (struct seg){in, 512, VRING_DESC_F_WRITE};
	s[2] = (struct seg){STATUS_AT(0, 2), 0, VRING_DESC_F_WRITE};
	head = drv_chain(r, 0, s, 3, false);
	drv_publish(r, 0);
	struct answer a = drv_next(r, 0);
	assert_int_equal(a.head, head);
	assert_int_equal(a.len, 1);
	assert_int_equal(drv_byte(r, in + 511), VIRTIO_BLK_S_IOERR);

	assert_int_equal(count(r, BLK_WRITES) + count(r, BLK_READS), 0);
	assert_int_equal(count(r, BLK_RING_ERRORS), 0);
	assert_true(file_zeros(r, 0, 1 << 20));
	assert_true(file_zeros(r, (CAPACITY - 8) * 512, 4096));
	drv_fill(r->ram + in, 512, 10);
	drv_do(r, 0, rw(VIRTIO_BLK_T_OUT, 0, in, 512, 1, false), VIRTIO_BLK_S_OK, 1);
	assert_true(file_filled(r, 0, 512, 10));
}

/* A malformed ring stops its own queue only, counted once; a chain posted
 * again while in flight is one too. A reset brings both back. */
static void test_ring_errors(void **state)
{
	struct rig *r = *state;
	drv_fill(r->ram + DATA_AT, 4096, 11);
	drv_request(r, 0, rw(VIRTIO_BLK_T_OUT, 0, DATA_AT, 4096, 1, false));
	drv_publish_more(r, 0, 300);
	for (int ms = 0; ms < 5000 && count(r, BLK_RING_ERRORS) < 1; ms++)
		usleep(1000);
	assert_int_equal(count(r, BLK_RING_ERRORS), 1);
	drv_do(r, 1, rw(VIRTIO_BLK_T_OUT, 8, DATA_AT, 4096, 1, false),
	       VIRTIO_BLK_S_OK, 1);
	uint16_t head = drv_request(r, 1, rw(VIRTIO_BLK_T_OUT, 16, DATA_AT, 4096, 1, false));
	drv_avail(r, 1, head);
	drv_publish(r, 1);
	for (int ms = 0; ms < 5000 && count(r, BLK_RING_ERRORS) < 2; ms++)
		usleep(1000);
	assert_int_equal(count(r, BLK_RING_ERRORS), 2);
	stop(r);
	start(r);
	for (unsigned int q = 0; q < 2; q++)
		drv_do(r, q, rw(VIRTIO_BLK_T_IN, 8, DATA_AT + (1 << 20), 4096, 1, false),
		       VIRTIO_BLK_S_OK, 4097);
	assert_true(drv_filled(r->ram + DATA_AT + (1 << 20), 4096, 11));
	assert_int_equal(count(r, BLK_RING_ERRORS), 2);
}

/* Four queues, each with 64 writes and then 64 reads in flight at once:
 * every one answered once, every byte where it belongs. */
static void test_queues_in_flight(void **state)
{
	struct rig *r = *state;
	enum { N = 64, LEN = 16 << 10 };
	for (unsigned int q = 0; q < 4; q++) {
		for (unsigned int i = 0; i < N; i++) {
			uint64_t at = DATA_AT + (uint64_t)(q * N + i) * LEN;
			drv_fill(r->ram + at, LEN, q * N + i);
			drv_request(r, q, rw(VIRTIO_BLK_T_OUT, (q * N + i) * (LEN / 512), at, LEN, i % 4 + 1, true));
		}
	}
	for (unsigned int q = 0; q < 4; q++)
		drv_publish(r, q);
	for (unsigned int q = 0; q < 4; q++)
		drv_all_ok(r, q, N, 1);
	for (unsigned int i = 0; i < 4 * N; i++)
		assert_true(file_filled(r, (uint64_t)i * LEN, LEN, i));
	drv_set(r, DATA_AT, 0, 4 * N * LEN);
	for (unsigned int q = 0; q < 4; q++) {
		for (unsigned int i = 0; i < N; i++)
			drv_request(r, q, rw(VIRTIO_BLK_T_IN, (q * N + i) * (LEN / 512), DATA_AT + (uint64_t)(q * N + i) * LEN, LEN, 2, true));
		drv_publish(r, q);
	}
	for (unsigned int q = 0; q < 4; q++)
		drv_all_ok(r, q, N, LEN + 1);
	for (unsigned int i = 0; i < 4 * N; i++)
		assert_true(drv_filled(r->ram + DATA_AT + (uint64_t)i * LEN, LEN, i));
	assert_int_equal(count(r, BLK_WRITES), 4 * N);
	assert_int_equal(count(r, BLK_READS), 4 * N);
}

/* A reset with hundreds of big requests posted returns with none left in
 * the ring, and after it nothing of the guest's is touched: not the used
 * rings, not the status bytes, not the read buffers. The device then
 * starts again on new rings. */
static void test_reset_with_requests_in_flight(void **state)
{
	struct rig *r = *state;
	enum { N = 200, LEN = 128 << 10 };
	static uint8_t before[0x40000];
	file_fill(r, 0, 4 << 20, 12);
	for (unsigned int i = 0; i < N; i++) {
		uint64_t at = DATA_AT + (uint64_t)(i % 64) * LEN;
		drv_request(r, 0, rw(VIRTIO_BLK_T_OUT, (uint64_t)(i % 120) * 256, at, LEN, 8, true));
		drv_request(r, 1, rw(VIRTIO_BLK_T_IN, (uint64_t)(i % 32) * 256, DATA_AT + (16 << 20) + (uint64_t)(i % 64) * LEN, LEN, 8, true));
	}
	drv_publish(r, 0);
	drv_publish(r, 1);
	stop(r);
	drv_set(r, DATA_AT + (16 << 20), 0x5a, 64 * LEN);
	memcpy(before, r->ram, sizeof(before));
	usleep(200 * 1000);
	assert_memory_equal(before, r->ram, sizeof(before));
	for (size_t i = 0; i < 64 * LEN; i++)
		if (r->ram[DATA_AT + (16 << 20) + i] != 0x5a)
			fail_msg("a read buffer changed after the reset, at %zu", i);
	start(r);
	drv_do(r, 1, rw(VIRTIO_BLK_T_IN, 0, DATA_AT, 4096, 1, false),
	       VIRTIO_BLK_S_OK, 4097);
}

/* A read that waits (nothing to read on the socket yet) holds up neither
 * the requests behind it on its queue nor another queue's: they are
 * answered first, it when its data comes, with that data. A reset while
 * one waits cancels it and returns. */
static void test_slow_request_holds_up_nothing(void **state)
{
	struct rig *r = *state;
	uint16_t slow = drv_request(r, 0, rw(VIRTIO_BLK_T_IN, 0, DATA_AT, 4096, 1, false));
	drv_publish(r, 0);
	uint16_t id = drv_request(r, 0, rw(VIRTIO_BLK_T_GET_ID, 0, DATA_AT + 8192, 20, 1, false));
	drv_publish(r, 0);
	drv_expect(r, 0, id, VIRTIO_BLK_S_OK, 21);
	drv_fill(r->ram + DATA_AT + 16384, 4096, 13);
	drv_do(r, 1, rw(VIRTIO_BLK_T_OUT, 0, DATA_AT + 16384, 4096, 1, false),
	       VIRTIO_BLK_S_OK, 1);
	static uint8_t got[4096];
	assert_int_equal(read(r->peer, got, sizeof(got)), sizeof(got));
	assert_true(drv_filled(got, sizeof(got), 13));
	assert_int_equal(drv_used_idx(r, 0), 1);
	assert_int_equal(atomic_load(&r->b.in_flight), 1);

	drv_fill(got, sizeof(got), 14);
	assert_int_equal(write(r->peer, got, sizeof(got)), sizeof(got));
	drv_expect(r, 0, slow, VIRTIO_BLK_S_OK, 4097);
	assert_true(drv_filled(r->ram + DATA_AT, 4096, 14));

	drv_request(r, 0, rw(VIRTIO_BLK_T_IN, 0, DATA_AT, 4096, 1, false));
	drv_request(r, 1, rw(VIRTIO_BLK_T_IN, 0, DATA_AT + 4096, 4096, 1, false));
	drv_publish(r, 0);
	drv_publish(r, 1);
	for (int ms = 0; ms < 5000 && atomic_load(&r->b.in_flight) < 2; ms++)
		usleep(1000);
	stop(r);
	assert_int_equal(drv_used_idx(r, 0), 2);
	assert_int_equal(drv_used_idx(r, 1), 1);
	start(r);
	drv_do(r, 1, rw(VIRTIO_BLK_T_GET_ID, 0, DATA_AT, 20, 1, false),
	       VIRTIO_BLK_S_OK, 21);
}

/* A device that cannot be: no queues, or too many; the fd is closed. */
static void test_create_refuses(void **state)
{
	(void)state;
	struct virtio_blk b;
	for (unsigned int queues = 0; queues <= 17; queues += 17) {
		struct virtio_blk_disk d = {.fd = eventfd(0, EFD_CLOEXEC), .size = 4096};
		assert_int_equal(virtio_blk_create(&b, &d, queues), -EINVAL);
		assert_int_equal(fcntl(d.fd, F_GETFD), -1);
	}
}

#define CASE(test, cfg) \
	cmocka_unit_test_prestate_setup_teardown(test, setup, teardown, (void *)&(cfg))

int main(void)
{
	const struct CMUnitTest tests[] = {
		CASE(test_read_write_round_trip, plain),
		CASE(test_flush, plain),
		CASE(test_discard_frees_blocks, plain),
		CASE(test_write_zeroes, plain),
		CASE(test_get_id, plain),
		CASE(test_read_only, plain),
		CASE(test_direct, direct),
		CASE(test_hostile_requests, plain),
		CASE(test_ring_errors, plain),
		CASE(test_queues_in_flight, four),
		CASE(test_reset_with_requests_in_flight, plain),
		CASE(test_slow_request_holds_up_nothing, sock),
		cmocka_unit_test(test_create_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
