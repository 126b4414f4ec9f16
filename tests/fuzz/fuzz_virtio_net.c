/* libFuzzer target: the virtio-net device on a stream socket, driven as a
 * hostile guest and a hostile passt would: chains made from the input
 * (malformed, unreachable, zero-length, oversized, indirect) on real split
 * rings in a small guest RAM, receive buffers posted at random, bytes and
 * frames from the socket's other end, resets in the middle of it all. The
 * device's thread is let run until it waits after every operation, so an
 * input runs the same way each time. A tap is not fuzzed: its start needs
 * TUNSETOFFLOAD, which only a real tap takes (tests/unit/test_virtio_net.c
 * drives one as root). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "devices/virtio_net.h"
#include "tests/fuzz/harness.h"

/*
 * Input: a configuration byte, then operations back to back.
 * Configuration: bit 0 mergeable receive buffers, bit 1 GUEST_CSUM, bit 2
 * EVENT_IDX, bit 3 indirect descriptors (without, an indirect descriptor
 * breaks the ring), bits 4-5 the MTU (68, 1500, 9000 or 65520), bit 6 a
 * small send buffer on the device's socket (so its writes stop in the
 * middle of frames), bit 7 the tap framing on a seqpacket socket (its
 * start must fail, and the input ends there).
 * An operation's first byte: bits 0-3 its kind, bits 4-7 its argument a.
 *   0, 1 a chain on the transmit (0) or receive (1) queue of a % 8 + 1
 *     descriptors: a byte of options (bit 0 in an indirect table, bit 1
 *     a head from the next byte, bit 2 made available but not published
 *     or kicked), then per descriptor a byte of flags (bit 0 the other
 *     direction than the queue's, bit 1 INDIRECT, bit 2 a next from the
 *     byte after, bit 3 an address of 4 bytes anywhere rather than 2
 *     (3 times them past the buffers' start), bit 4 NEXT on the last,
 *     bit 5 64 KiB more length), the address and a 16-bit length;
 *   2 publishes the transmit (a & 1 clear) or receive queue and kicks
 *     it; with a & 2, claims the next byte more chains than were made;
 *   3 passt sends a frame of a 16-bit length (with a & 1, 64 KiB more),
 *     with a & 2 only the part the next byte says (of 255);
 *   4 passt sends the next byte's count of bytes that follow;
 *   5 passt reads what the device sent, and parses it;
 *   6 passt hangs up (a & 1: shuts down its writing only);
 *   7 a reset, then (a & 1 clear) a start with the next byte as the
 *     configuration's bits 0-3;
 *   8-15 nothing.
 * After each operation the device runs until its thread waits. Checked:
 * that it waits (no busy loop), every length it sends is one a frame may
 * have, it sends no more frames than it took, it counts a broken ring
 * once, and while the guest's buffers lie in its buffer area, no queue
 * hands back more chains than were published, a transmit chain with
 * nothing written.
 */
#define RXQ 0 /* the device's queues */
#define TXQ 1
#define RAM_SIZE 0x40000
#define QSIZE 32
#define RING_AT(q) ((uint64_t)(q) * 0x1000) /* desc, avail +0x200, used +0x300 */
#define TABLES_AT 0x2000
#define TABLES_END 0x4000
#define BUF_AT 0x4000
#define MAX_OPS 64
#define SETTLE_NS (2ULL * 1000 * 1000 * 1000)

static const uint16_t mtus[4] = {68, 1500, 9000, 65520};

static uint8_t *ram;
static struct guest_mem mem;
static struct virtio_net n;
static struct virtio_queue queues[2];
static bool live, tame;
static int peer = -1;
static int device_tid;
static unsigned int starts;
/* Per queue: chains made available, the highest index published, the
 * next descriptor to fill. */
static uint16_t avail_idx[2], published[2], next_desc[2];
static uint64_t table_at;

/* What passt made of the device's stream so far. */
static struct {
	uint8_t len[4];
	unsigned int len_got;
	uint32_t left; /* of the frame being read */
	uint64_t frames;
} stream;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* As fsvm (vmm/run.c): a write to a closed peer fails, not kills. */
	signal(SIGPIPE, SIG_IGN);
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

static void settle(void)
{
	if (!live)
		return;
	uint64_t start = now_ns();
	while (!thread_waits_in_epoll(device_tid)) {
		fuzz_assert(now_ns() - start < SETTLE_NS,
			    "the device's thread has not waited for 2 s: a busy loop");
		sched_yield();
	}
}

/* The device started with *features: its thread is the one it makes. */
static int activate(void *features)
{
	return n.dev.activate(n.dev.opaque, queues, 2,
			      *(const uint64_t *)features & n.dev.features);
}

static void start(uint8_t cfg)
{
	for (unsigned int q = 0; q < 2; q++) {
		queues[q] = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
		memset(ram + RING_AT(q), 0, 0x1000);
		if (queues[q].kick_fd < 0 || queues[q].call_fd < 0 ||
		    split_ring_init(&queues[q].ring, &mem, QSIZE, RING_AT(q),
				    RING_AT(q) + 0x200, RING_AT(q) + 0x300,
				    cfg & 4, cfg & 8))
			abort();
		avail_idx[q] = published[q] = next_desc[q] = 0;
	}
	table_at = TABLES_AT;
	tame = true;
	/* What a transport lets through: the features offered. */
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (cfg & 1 ? 1ULL << VIRTIO_NET_F_MRG_RXBUF : 0) |
			    (cfg & 2 ? 1ULL << VIRTIO_NET_F_GUEST_CSUM : 0) |
			    (cfg & 4 ? 1ULL << VIRTIO_RING_F_EVENT_IDX : 0) |
			    (cfg & 8 ? 1ULL << VIRTIO_RING_F_INDIRECT_DESC : 0);
	device_tid = started_thread(activate, &features);
	live = true;
	starts++;
}

/* The used ring of queue q, while the guest's buffers kept off the rings:
 * no more chains back than published, a transmit chain with nothing
 * written. */
static void check_used(unsigned int q)
{
	const struct vring_used *used = (const void *)(ram + RING_AT(q) + 0x300);
	uint16_t idx = __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE);
	fuzz_assert(idx <= published[q], "queue %u: %u chains back of %u", q,
		    idx, published[q]);
	for (uint16_t i = 0; i < idx && i < QSIZE; i++) {
		const struct vring_used_elem *e = &used->ring[i];
		fuzz_assert(e->id < QSIZE, "queue %u: used head %u", q, e->id);
		fuzz_assert(q == RXQ || e->len == 0,
			    "transmit chain %u came back with %u bytes", e->id,
			    e->len);
	}
}

static void stop(void)
{
	if (!live)
		return;
	settle();
	if (tame)
		for (unsigned int q = 0; q < 2; q++)
			check_used(q);
	n.dev.reset(n.dev.opaque);
	live = false;
	for (unsigned int q = 0; q < 2; q++) {
		close(queues[q].kick_fd);
		close(queues[q].call_fd);
	}
	/* Each queue counts its ring broken once a start. */
	uint64_t errors = atomic_load(&n.counts[NET_RING_ERRORS]);
	fuzz_assert(errors <= 2ULL * starts, "%llu ring errors in %u starts",
		    (unsigned long long)errors, starts);
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

/* A chain of nr descriptors on queue q, as the input says (above). */
static void chain(struct input *in, unsigned int q, unsigned int nr)
{
	uint8_t opts = get8(in);
	struct vring_desc *ring_desc = (void *)(ram + RING_AT(q));
	struct vring_desc *d = ring_desc;
	uint16_t head = next_desc[q] % QSIZE, at = head;
	uint64_t table = 0;
	if (opts & 1) {
		if (table_at + nr * sizeof(*d) > TABLES_END)
			table_at = TABLES_AT;
		table = table_at;
		table_at += nr * sizeof(*d);
		d = (void *)(ram + table);
		at = 0;
	}
	for (unsigned int i = 0; i < nr; i++) {
		uint8_t flags = get8(in);
		uint16_t f = (uint16_t)(((q == RXQ) ^ (flags & 1) ? VRING_DESC_F_WRITE : 0) |
					(flags & 2 ? VRING_DESC_F_INDIRECT : 0) |
					(i + 1 < nr || flags & 16 ? VRING_DESC_F_NEXT : 0));
		/* An indirect table the input did not write is whatever the
		 * device wrote in the buffers: addresses anywhere. */
		if (flags & 2)
			tame = false;
		uint16_t next = (uint16_t)((at + 1) % (table ? nr : QSIZE));
		if (flags & 4)
			next = get8(in);
		uint64_t addr;
		if (flags & 8) {
			addr = get32(in);
			tame = false;
		} else {
			addr = BUF_AT + get16(in) * 3u;
		}
		uint32_t len = get16(in) + (flags & 32 ? 0x10000u : 0);
		d[at] = (struct vring_desc){.addr = addr, .len = len, .flags = f,
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
	if (opts & 2)
		head = get8(in);
	struct vring_avail *avail = (void *)(ram + RING_AT(q) + 0x200);
	avail->ring[avail_idx[q]++ % QSIZE] = head;
	if (!(opts & 4))
		publish(q, 0);
}

/* Writes what the socket takes of buf, as a non-blocking passt would. */
static void peer_send(const void *buf, size_t len)
{
	if (peer >= 0 && write(peer, buf, len) < 0 && errno != EAGAIN &&
	    errno != EPIPE)
		abort();
}

/* Reads what the device had sent when it last waited, and parses it as
 * passt does. Only that: what the device writes as the read makes room
 * is left for the next read, or how much one read gets would be up to
 * the scheduler. Returns whether there was anything. */
static bool peer_read(void)
{
	static uint8_t buf[1 << 18];
	int queued;
	if (peer < 0 || ioctl(peer, SIOCINQ, &queued) < 0 || queued <= 0)
		return false;
	ssize_t got = read(peer, buf, (size_t)queued < sizeof(buf) ? (size_t)queued
								   : sizeof(buf));
	if (got > 0) {
		for (ssize_t i = 0; i < got;) {
			if (stream.left) {
				size_t take = (size_t)(got - i) < stream.left
						      ? (size_t)(got - i)
						      : stream.left;
				stream.left -= (uint32_t)take;
				i += (ssize_t)take;
				continue;
			}
			stream.len[stream.len_got++] = buf[i++];
			if (stream.len_got < 4)
				continue;
			uint32_t be;
			memcpy(&be, stream.len, sizeof(be));
			uint32_t len = ntohl(be);
			fuzz_assert(len >= 14 && len <= n.config.mtu + 18u,
				    "the device sent a frame of %u bytes (MTU %u)",
				    len, n.config.mtu);
			stream.len_got = 0;
			stream.left = len;
			stream.frames++;
			fuzz_assert(stream.frames <=
					    atomic_load(&n.counts[NET_TX_FRAMES]),
				    "the device sent more frames than it took");
		}
	}
	return got > 0;
}

static void run_op(struct input *in)
{
	static uint8_t rec[4 + 0x20000];
	uint8_t op = get8(in), a = op >> 4;
	switch (op & 15) {
	case 0:
	case 1:
		if (live)
			chain(in, op & 1 ? RXQ : TXQ, a % 8 + 1u);
		break;
	case 2: {
		uint16_t extra = a & 2 ? get8(in) : 0;
		if (live)
			publish(a & 1 ? RXQ : TXQ, extra);
		break;
	}
	case 3: {
		uint32_t len = get16(in) + (a & 1 ? 0x10000u : 0);
		uint32_t be = htonl(len);
		memcpy(rec, &be, sizeof(be));
		for (uint32_t i = 0; i < len; i++)
			rec[4 + i] = (uint8_t)(i * 7 + len);
		size_t part = 4 + (size_t)len;
		if (a & 2)
			part = part * get8(in) / 255;
		peer_send(rec, part);
		break;
	}
	case 4: {
		uint8_t len = get8(in);
		size_t have = len < in->left ? len : in->left;
		peer_send(in->p, have);
		in->p += have;
		in->left -= have;
		break;
	}
	case 5:
		peer_read();
		break;
	case 6:
		if (peer >= 0 && a & 1) {
			shutdown(peer, SHUT_WR);
		} else if (peer >= 0) {
			close(peer);
			peer = -1;
		}
		break;
	case 7: {
		uint8_t cfg = a & 1 ? 0 : get8(in);
		stop();
		if (!(a & 1))
			start(cfg);
		break;
	}
	default:
		break;
	}
	settle();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resources before = resources_now();
	struct input in = {data, size};
	uint8_t cfg = get8(&in);
	int sv[2];
	int type = cfg & 128 ? SOCK_SEQPACKET : SOCK_STREAM;
	if (socketpair(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (cfg & 64) {
		int small = 4096;
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	}
	peer = sv[1];
	memset(&stream, 0, sizeof(stream));
	memset(ram, 0, RAM_SIZE);
	struct virtio_net_options o = {
		.fd = sv[0], .mtu = mtus[(cfg >> 4) & 3], .mac = {2, 0, 0, 0, 0, 1},
		.framing = cfg & 128 ? VIRTIO_NET_FRAMING_TAP : VIRTIO_NET_FRAMING_STREAM};
	if (virtio_net_create(&n, &o))
		abort();
	starts = 0;
	if (cfg & 128) {
		/* No tap, no start: nothing may run. */
		for (unsigned int q = 0; q < 2; q++)
			if (split_ring_init(&queues[q].ring, &mem, QSIZE, RING_AT(q),
					    RING_AT(q) + 0x200, RING_AT(q) + 0x300,
					    false, false))
				abort();
		fuzz_assert(n.dev.activate(n.dev.opaque, queues, 2,
					   1ULL << VIRTIO_F_VERSION_1) < 0 &&
				    !n.running,
			    "a tap started on a socket");
	} else {
		start(cfg);
		for (int ops = 0; ops < MAX_OPS && in.left; ops++)
			run_op(&in);
		while (peer_read())
			settle();
		stop();
	}
	close(n.fd);
	close(n.epoll_fd);
	close(n.stop_fd);
	free(n.rx);
	free(n.tx);
	if (peer >= 0)
		close(peer);
	peer = -1;
	resources_check("fuzz_virtio_net", before);
	return 0;
}
