/* libFuzzer target: the virtio-blk device on an image in a private tmpfs,
 * through its real io_uring, driven as a hostile guest would: requests of
 * every type with sectors, lengths, ranges and flags from the input, laid
 * out right or wrong (data of the other direction, no status, many
 * pieces, indirect tables), raw chains (malformed, unreachable,
 * zero-length), hostile headers, indices claiming chains never made,
 * resets with requests in flight, and the host shrinking the image under
 * the guest. The device's thread is let run until it waits with nothing
 * in flight after every operation, so an input runs the same way each
 * time. */
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devices/virtio_blk.h"
#include "tests/fuzz/harness.h"

/*
 * Input: a configuration byte, then operations back to back.
 * Configuration: bit 0 EVENT_IDX, bit 1 indirect descriptors (without, an
 * indirect descriptor breaks the ring), bit 2 a read-only disk, bit 3 no
 * discard, bits 4-5 the queues less one, bit 6 O_DIRECT.
 * An operation's first byte: bits 0-3 its kind, bits 4-7 its argument a;
 * its queue is a % the queues.
 *   0 a request: a byte of type (below 7 one of IN, OUT, FLUSH, GET_ID,
 *     DISCARD, WRITE_ZEROES and 99; else the byte itself), a 16-bit
 *     sector (with a & 8, 64 bits), a byte of data sectors, a byte of
 *     pieces (% 8 + 1), a byte of options (bit 0 in an indirect table,
 *     bit 1 data of the other direction, bit 2 no status, bit 3 a byte of
 *     range flags follows, bit 4 not published, bit 5 a data length off
 *     a sector by the next byte, bit 6 the data at a byte's offset);
 *   1 a raw chain of a % 8 + 1 descriptors: a byte of options (bit 0 in
 *     an indirect table, bit 1 a head from the byte after the
 *     descriptors), then per descriptor a byte of flags (bit 0 writable, bit 1 INDIRECT, bit 2 a
 *     next from the byte after, bit 3 an address of 4 bytes anywhere
 *     rather than 2 in the buffer area, bit 4 NEXT on the last), the
 *     address and a 16-bit length;
 *   2 publishes the queue and kicks it; with a & 8, claims the next byte
 *     more chains than were made;
 *   3 writes the next byte's count of bytes that follow into the header
 *     area at a 12-bit offset (two bytes);
 *   4 a reset, then (a & 8 clear) a start with the next byte as the
 *     configuration's bits 0-1;
 *   5 the host cuts the image to a & 7 eighths of its size, or back
 *     (a & 7 == 0);
 *   6-15 nothing.
 * After each operation the device runs until its thread waits with no
 * request in flight. Checked: that it waits (no busy loop), a broken ring
 * counted once a queue, nothing left in flight by a reset, the image
 * never grown past the disk and a read-only image's bytes never changed, and while the guest's buffers lie in their areas, no queue
 * hands back more chains than were published, each with a head the ring
 * has.
 */
#define RAM_SIZE 0x40000
#define QSIZE 32
#define MAX_QUEUES 4
#define RING_AT(q) ((uint64_t)(q) * 0x1000) /* desc, avail +0x200, used +0x300 */
#define TABLES_AT 0x4000
#define TABLES_END 0x8000
#define HDRS_AT 0x8000 /* a request's header, range and status, 64 bytes */
#define HDRS_LEN 0x1000
#define BUF_AT 0x10000
#define DISK_SIZE ((1u << 20) + 100u)
#define MAX_OPS 64
#define SETTLE_NS (2ULL * 1000 * 1000 * 1000)

static const uint32_t types[7] = {VIRTIO_BLK_T_IN,      VIRTIO_BLK_T_OUT,
				  VIRTIO_BLK_T_FLUSH,   VIRTIO_BLK_T_GET_ID,
				  VIRTIO_BLK_T_DISCARD, VIRTIO_BLK_T_WRITE_ZEROES,
				  99};

static uint8_t *ram;
static struct guest_mem mem;
static char image[128];
static struct virtio_blk b;
static struct virtio_queue queues[MAX_QUEUES];
static unsigned int nr_queues, starts;
static bool live, tame;
static int device_tid;
static off_t image_size; /* as the host last set it */
static bool host_cut;     /* this input had the host cut the image */
/* Per queue: chains made available, the highest index published, the
 * next descriptor to fill. */
static uint16_t avail_idx[MAX_QUEUES], published[MAX_QUEUES], next_desc[MAX_QUEUES];
static uint64_t table_at, hdr_at;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(image, sizeof(image), "%s/disk", scratch_share());
	pin_to_this_cpu(); /* a device thread seen asleep is idle */
	ram = guarded_alloc(RAM_SIZE);
	if (guest_mem_add(&mem, 0, RAM_SIZE, ram))
		abort();
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static bool idle(void)
{
	return !atomic_load(&b.in_flight);
}

/* Lets the device finish: asleep with nothing in flight, seen on both
 * sides of the look at its thread (it counts a request in flight before
 * it goes to the ring, and out after its completion). */
static void settle(void)
{
	if (!live)
		return;
	uint64_t start = now_ns();
	while (!(idle() && thread_waits_in_epoll(device_tid) && idle())) {
		fuzz_assert(now_ns() - start < SETTLE_NS,
			    "the device has not settled for 2 s: a busy loop or a request that never ends");
		sched_yield();
	}
}

/* The device started with *features: its thread is the one it makes. */
static int activate(void *features)
{
	return b.dev.activate(b.dev.opaque, queues, nr_queues,
			      *(const uint64_t *)features & b.dev.features);
}

static void start(uint8_t cfg)
{
	for (unsigned int q = 0; q < nr_queues; q++) {
		queues[q] = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
		memset(ram + RING_AT(q), 0, 0x1000);
		if (queues[q].kick_fd < 0 || queues[q].call_fd < 0 ||
		    split_ring_init(&queues[q].ring, &mem, QSIZE, RING_AT(q),
				    RING_AT(q) + 0x200, RING_AT(q) + 0x300,
				    cfg & 1, cfg & 2))
			abort();
		avail_idx[q] = published[q] = next_desc[q] = 0;
	}
	table_at = TABLES_AT;
	hdr_at = HDRS_AT;
	tame = true;
	/* What a transport lets through: the features offered. */
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (cfg & 1 ? 1ULL << VIRTIO_RING_F_EVENT_IDX : 0) |
			    (cfg & 2 ? 1ULL << VIRTIO_RING_F_INDIRECT_DESC : 0);
	device_tid = started_thread(activate, &features);
	live = true;
	starts++;
}

/* The used ring of queue q, while the guest's buffers kept off the rings:
 * no more chains back than published, each a head of the ring. */
static void check_used(unsigned int q)
{
	const struct vring_used *used = (const void *)(ram + RING_AT(q) + 0x300);
	uint16_t idx = __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE);
	fuzz_assert(idx <= published[q], "queue %u: %u chains back of %u", q,
		    idx, published[q]);
	for (uint16_t i = 0; i < idx && i < QSIZE; i++)
		fuzz_assert(used->ring[i].id < QSIZE, "queue %u: used head %u", q,
			    used->ring[i].id);
}

static void stop(void)
{
	if (!live)
		return;
	settle();
	if (tame)
		for (unsigned int q = 0; q < nr_queues; q++)
			check_used(q);
	b.dev.reset(b.dev.opaque);
	live = false;
	fuzz_assert(idle(), "a reset left %u requests in flight",
		    atomic_load(&b.in_flight));
	for (unsigned int q = 0; q < nr_queues; q++) {
		close(queues[q].kick_fd);
		close(queues[q].call_fd);
	}
	uint64_t errors = atomic_load(&b.counts[BLK_RING_ERRORS]);
	fuzz_assert(errors <= (uint64_t)nr_queues * starts,
		    "%llu ring errors in %u starts of %u queues",
		    (unsigned long long)errors, starts, nr_queues);
}

static void publish(unsigned int q, uint16_t extra)
{
	struct vring_avail *avail = (void *)(ram + RING_AT(q) + 0x200);
	uint16_t idx = (uint16_t)(avail_idx[q] + extra);
	/* The most ever published: the device may have taken chains under
	 * an index that claimed more than a later one. */
	if (idx > published[q])
		published[q] = idx;
	__atomic_store_n(&avail->idx, idx, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(queues[q].kick_fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

struct seg {
	uint64_t addr;
	uint32_t len;
	uint16_t flags; /* WRITE, INDIRECT, and NEXT forced on the last */
	bool next_given;
	uint16_t next;
};

/* Puts segs on queue q as a chain, in the ring's descriptors or in an
 * indirect table; makes it available with head (or its own). */
static void put_chain(unsigned int q, const struct seg *s, unsigned int nr,
		      bool indirect, const uint16_t *head_given)
{
	struct vring_desc *ring_desc = (void *)(ram + RING_AT(q));
	struct vring_desc *d = ring_desc;
	uint16_t head = next_desc[q] % QSIZE, at = head;
	uint64_t table = 0;
	if (indirect) {
		if (table_at + nr * sizeof(*d) > TABLES_END)
			table_at = TABLES_AT;
		table = table_at;
		table_at += nr * sizeof(*d);
		d = (void *)(ram + table);
		at = 0;
	}
	for (unsigned int i = 0; i < nr; i++) {
		uint16_t next = s[i].next_given ? s[i].next
						: (uint16_t)((at + 1) % (table ? nr : QSIZE));
		uint16_t more = i + 1 < nr ? VRING_DESC_F_NEXT : 0;
		d[at] = (struct vring_desc){.addr = s[i].addr, .len = s[i].len,
					    .flags = (uint16_t)(s[i].flags | more),
					    .next = next};
		at = (uint16_t)((at + 1) % QSIZE);
	}
	if (table) {
		ring_desc[head] = (struct vring_desc){
			.addr = table, .len = nr * sizeof(*d),
			.flags = VRING_DESC_F_INDIRECT};
		next_desc[q]++;
	} else {
		next_desc[q] = (uint16_t)(next_desc[q] + nr);
	}
	struct vring_avail *avail = (void *)(ram + RING_AT(q) + 0x200);
	avail->ring[avail_idx[q]++ % QSIZE] = head_given ? *head_given : head;
}

/* A request as the input says (above). */
static void request(struct input *in, unsigned int q, uint8_t a)
{
	static struct seg s[12];
	uint8_t t = get8(in);
	uint32_t type = t < 7 ? types[t] : t;
	uint64_t sector = a & 8 ? get64(in) : get16(in);
	uint32_t len = get8(in) * 512u;
	unsigned int pieces = get8(in) % 8 + 1;
	uint8_t opts = get8(in);
	uint32_t range_flags = opts & 8 ? get8(in) : 0;
	if (opts & 32)
		len += get8(in);
	uint64_t data = BUF_AT + (opts & 64 ? get8(in) : 0);
	if (hdr_at + 64 > HDRS_AT + HDRS_LEN)
		hdr_at = HDRS_AT;
	uint64_t hdr = hdr_at;
	hdr_at += 64;
	struct virtio_blk_outhdr h = {.type = type, .sector = sector};
	struct virtio_blk_discard_write_zeroes range = {
		.sector = sector, .num_sectors = len / 512, .flags = range_flags};
	memcpy(ram + hdr, &h, sizeof(h));
	memcpy(ram + hdr + 16, &range, sizeof(range));
	unsigned int nr = 0;
	bool ranges = type == VIRTIO_BLK_T_DISCARD || type == VIRTIO_BLK_T_WRITE_ZEROES;
	s[nr++] = (struct seg){.addr = hdr, .len = ranges ? 32 : 16};
	bool writable = type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_GET_ID;
	if (opts & 2)
		writable = !writable;
	for (unsigned int i = 0; !ranges && len && i < pieces; i++) {
		uint32_t piece = len / pieces + (i < len % pieces);
		s[nr++] = (struct seg){.addr = data, .len = piece,
				       .flags = writable ? VRING_DESC_F_WRITE : 0};
		data += piece;
	}
	if (!(opts & 4))
		s[nr++] = (struct seg){.addr = hdr + 32, .len = 1,
				       .flags = VRING_DESC_F_WRITE};
	put_chain(q, s, nr, opts & 1, NULL);
	if (!(opts & 16))
		publish(q, 0);
}

/* A raw chain of nr descriptors, as the input says (above). */
static void raw_chain(struct input *in, unsigned int q, unsigned int nr)
{
	static struct seg s[8];
	uint8_t opts = get8(in);
	for (unsigned int i = 0; i < nr; i++) {
		uint8_t flags = get8(in);
		s[i] = (struct seg){
			.flags = (uint16_t)((flags & 1 ? VRING_DESC_F_WRITE : 0) |
					    (flags & 2 ? VRING_DESC_F_INDIRECT : 0) |
					    (flags & 16 ? VRING_DESC_F_NEXT : 0))};
		/* An indirect table the input did not write is whatever the
		 * device wrote in the buffers: addresses anywhere. */
		if (flags & 2)
			tame = false;
		if (flags & 4) {
			s[i].next_given = true;
			s[i].next = get8(in);
		}
		if (flags & 8) {
			s[i].addr = get32(in);
			tame = false;
		} else {
			s[i].addr = BUF_AT + get16(in) * 2u;
		}
		s[i].len = get16(in);
	}
	uint16_t head = opts & 2 ? get8(in) : 0;
	put_chain(q, s, nr, opts & 1, opts & 2 ? &head : NULL);
}

static void run_op(struct input *in)
{
	uint8_t op = get8(in), a = op >> 4;
	unsigned int q = a % nr_queues;
	switch (op & 15) {
	case 0:
		if (live)
			request(in, q, a);
		break;
	case 1:
		if (live)
			raw_chain(in, q, a % 8 + 1u);
		break;
	case 2: {
		uint16_t extra = a & 8 ? get8(in) : 0;
		if (live)
			publish(q, extra);
		break;
	}
	case 3: {
		uint16_t at = get16(in) % HDRS_LEN;
		size_t len = get8(in);
		len = len < in->left ? len : in->left;
		len = len < HDRS_LEN - at ? len : HDRS_LEN - at;
		memcpy(ram + HDRS_AT + at, in->p, len);
		in->p += len;
		in->left -= len;
		break;
	}
	case 4: {
		uint8_t cfg = a & 8 ? 0 : get8(in);
		stop();
		if (!(a & 8))
			start(cfg);
		break;
	}
	case 5:
		host_cut = true;
		image_size = a & 7 ? (off_t)DISK_SIZE * (a & 7) / 8 : DISK_SIZE;
		if (truncate(image, image_size))
			abort();
		break;
	default:
		break;
	}
	settle();
}

static uint64_t image_hash(void)
{
	static uint8_t buf[DISK_SIZE];
	int fd = open(image, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (got < 0)
		abort();
	close(fd);
	uint64_t h = 1469598103934665603ULL;
	for (ssize_t i = 0; i < got; i++)
		h = (h ^ buf[i]) * 1099511628211ULL;
	return h;
}

static off_t size_now(void)
{
	struct stat st;
	if (stat(image, &st))
		abort();
	return st.st_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resources before = resources_now();
	struct input in = {data, size};
	uint8_t cfg = get8(&in);
	memset(ram, 0, RAM_SIZE);
	/* The same image for every input: zeros, then whatever seeds the
	 * reads see. */
	image_size = DISK_SIZE;
	host_cut = false;
	if (truncate(image, 0) < 0 && errno != ENOENT)
		abort();
	int fd = open(image, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, DISK_SIZE) || pwrite(fd, "fsvm", 4, 4096) != 4)
		abort();
	close(fd);
	uint64_t hash = image_hash();
	struct virtio_blk_disk d = {.size = DISK_SIZE, .readonly = cfg & 4,
				    .discard = !(cfg & 4) && !(cfg & 8),
				    .direct = cfg & 64, .serial = "fuzz"};
	int flags = (cfg & 4 ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	d.fd = open(image, flags | (d.direct ? O_DIRECT : 0));
	if (d.fd < 0) /* a file system without O_DIRECT: the checks alone */
		d.fd = open(image, flags);
	nr_queues = ((cfg >> 4) & 3) + 1u;
	if (d.fd < 0 || virtio_blk_create(&b, &d, nr_queues))
		abort();
	starts = 0;
	start(cfg);
	for (int ops = 0; ops < MAX_OPS && in.left; ops++)
		run_op(&in);
	stop();
	virtio_blk_destroy(&b);
	/* A write may grow an image the host cut, but not past the disk. */
	off_t now = size_now();
	fuzz_assert(now == image_size ||
			    (now > image_size && now <= DISK_SIZE / 512 * 512),
		    "the image is %lld bytes, the host made it %lld",
		    (long long)now, (long long)image_size);
	fuzz_assert(!(cfg & 4) || host_cut || image_hash() == hash,
		    "a read-only image changed");
	resources_check("fuzz_virtio_blk", before);
	return 0;
}
