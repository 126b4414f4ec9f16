/* libFuzzer target: the virtio-vsock device driven as a hostile guest and
 * hostile host clients would: chains made from the input (malformed,
 * unreachable, zero-length, indirect) and packets of any header on real
 * split rings in a small guest RAM, receive buffers posted at random,
 * clients that connect, write, read, shut down and hang up, resets in
 * the middle of it all. The device's thread is let run until it waits
 * after every operation, so an input runs the same way each time. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "devices/virtio_vsock.h"
#include "tests/fuzz/harness.h"

/*
 * Input: a configuration byte (bit 0 EVENT_IDX, bit 1 indirect
 * descriptors: without, an indirect descriptor breaks the ring), then
 * operations back to back. An operation's first byte: bits 0-3 its kind,
 * bits 4-7 its argument a.
 *   0, 1 a raw chain on the transmit (0) or receive (1) queue of a % 4 + 1
 *     descriptors: per descriptor a byte of flags (bit 0 the other
 *     direction than the queue's, bit 1 INDIRECT, bit 2 a next from the
 *     byte after, bit 3 an address of 4 bytes anywhere rather than 2 in
 *     the raw area), the address and a 16-bit length; published;
 *   2 publishes the transmit (a & 1 clear) or receive queue and kicks
 *     it; with a & 2, claims the next byte more chains than were made;
 *   3 the guest sends a packet on the stream of client a % 8 (the host
 *     port it was offered): an op byte, a flags byte, its buffer (16
 *     bits, times 16), how far its fwd_cnt lags what it got (a signed
 *     byte: ahead when negative) and a 16-bit payload length (at most
 *     64 KiB); with a & 8 a byte of forgeries follows (bit 0 len one
 *     more than the payload, bit 1 another type, bit 2 another source
 *     CID, bit 3 another guest port, bit 4 a destination port from the
 *     next 4 bytes);
 *   4 a client connects (8 at most, ever);
 *   5 client a % 8 writes a 16-bit count of bytes (what its socket takes);
 *   6 client a % 8 reads what is there;
 *   7 client a % 8 shuts its writing down (a & 8), or closes;
 *   8 the guest takes what came in its receive buffers, and posts them
 *     again;
 *   9 the guest posts the next byte's count (% 16 + 1) of receive buffers;
 *   10 the next byte's count of bytes that follow go in the raw area at
 *     the 16-bit offset before them;
 *   11 a reset, then (a & 1 clear) a start;
 *   12-15 nothing.
 * After each operation the device runs until its thread waits. Checked:
 * that it waits (no busy loop); no queue hands back more chains than were
 * published, a transmit chain with nothing written; the device's streams
 * add up (no more held than its credit, no more than 64); and while the
 * guest's buffers keep to their areas, every packet in a receive buffer
 * has the device's addresses and a length its entry says, a stream's
 * bytes never go past the guest's buffer and (while no raw chain took
 * some) reach it in order, and (while no raw chain was sent) the guest's
 * reach the host in order.
 */
#define RXQ 0 /* the device's queues */
#define TXQ 1
#define NR_Q 3
#define RAM_SIZE 0x40000
#define QSIZE 64
#define RING_AT(q) ((uint64_t)(q) * 0x1000) /* desc, avail +0x400, used +0x600 */
#define TABLES_AT 0x3000
#define TABLES_END 0x4000
#define SLOTS_AT 0x4000 /* standard receive buffers */
#define SLOT_SIZE 0x1100
#define NR_SLOTS 16	 /* descriptors 2i and 2i + 1 */
#define SLOT_ROOM 4096
#define PKTS_AT 0x16000 /* the guest's packets */
#define PKTS_END 0x28000
#define RAW_AT 0x28000 /* the raw chains' buffers */
#define RAW_SIZE (RAM_SIZE - RAW_AT)
#define HDR_LEN sizeof(struct virtio_vsock_hdr)
#define GUEST_PORT 1234
#define CONNECT_PORT 1000 /* the stream the guest may open */
#define MAX_CLIENTS 8
#define MAX_OPS 96
#define SETTLE_NS (2ULL * 1000 * 1000 * 1000)

static uint8_t *ram;
static struct guest_mem mem;
static struct virtio_vsock v;
static struct virtio_queue queues[NR_Q];
static bool live, tame, raw_tx, raw_rx;
static int device_tid;
/* Per queue: chains made available, the highest index published, the
 * next descriptor to fill, the used entries the guest took. */
static uint16_t avail_idx[NR_Q], published[NR_Q], next_desc[NR_Q], taken[NR_Q];
static uint64_t table_at, pkt_at;
static bool slot_posted[NR_SLOTS];

/* A client and its stream, as the host and the guest each see it. */
static struct client {
	int fd;		       /* -1: none, or closed */
	uint32_t port;	       /* the host port its stream was offered */
	uint32_t written;      /* bytes it wrote */
	uint32_t read;	       /* bytes it read */
	uint32_t guest_got;    /* bytes the guest got */
	uint32_t guest_sent;   /* bytes the guest sent */
	uint64_t guest_limit;  /* the most the guest ever let it have */
} clients[MAX_CLIENTS];
static unsigned int nr_clients;

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

/* What the device keeps of its streams adds up, looked at while its
 * thread waits. */
static void check_streams(void)
{
	unsigned int used = 0;
	for (unsigned int i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		const struct vsock_conn *c = &v.conns[i];
		if (c->state == VSOCK_CONN_FREE)
			continue;
		used++;
		if (c->state == VSOCK_CONN_CLOSING)
			continue; /* its socket and bytes went: only its RST is left */
		fuzz_assert(c->held_len <= VIRTIO_VSOCK_CONN_BUF &&
				    c->held_len == c->from_guest - c->fwd_cnt,
			    "stream %u holds %u of the guest's bytes, %u unwritten",
			    c->host_port, c->held_len, c->from_guest - c->fwd_cnt);
		fuzz_assert(c->from_guest - c->fwd_cnt_told <= VIRTIO_VSOCK_CONN_BUF,
			    "stream %u took %u bytes past what it told",
			    c->host_port, c->from_guest - c->fwd_cnt_told);
	}
	fuzz_assert(used == v.nr_conns && used <= VIRTIO_VSOCK_MAX_CONNS,
		    "%u streams in use, %u counted", used, v.nr_conns);
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
	check_streams();
}

static void publish(unsigned int q, uint16_t extra)
{
	struct vring_avail *avail = (void *)(ram + RING_AT(q) + 0x400);
	uint16_t idx = (uint16_t)(avail_idx[q] + extra);
	/* The most ever published: the device may have taken chains under
	 * an index that claimed more than a later one. */
	if ((uint16_t)(idx - published[q]) < 0x8000)
		published[q] = idx;
	__atomic_store_n(&avail->idx, idx, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(queues[q].kick_fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static void make_available(unsigned int q, uint16_t head)
{
	struct vring_avail *avail = (void *)(ram + RING_AT(q) + 0x400);
	avail->ring[avail_idx[q]++ % QSIZE] = head;
}

/* Receive slot s: a header descriptor and a 4 KiB one, as Linux 6.1
 * posts them. */
static void post_slot(unsigned int s)
{
	struct vring_desc *d = (void *)(ram + RING_AT(RXQ));
	uint64_t at = SLOTS_AT + (uint64_t)s * SLOT_SIZE;
	d[2 * s] = (struct vring_desc){at, HDR_LEN, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
				       (uint16_t)(2 * s + 1)};
	d[2 * s + 1] = (struct vring_desc){at + HDR_LEN, SLOT_ROOM, VRING_DESC_F_WRITE, 0};
	slot_posted[s] = true;
	make_available(RXQ, (uint16_t)(2 * s));
}

/* The device started with *features: its thread is the one it makes. */
static int activate(void *features)
{
	return v.dev.activate(v.dev.opaque, queues, NR_Q,
			      *(const uint64_t *)features & v.dev.features);
}

static void start(uint8_t cfg)
{
	for (unsigned int q = 0; q < NR_Q; q++) {
		queues[q] = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
		memset(ram + RING_AT(q), 0, 0x1000);
		if (queues[q].kick_fd < 0 || queues[q].call_fd < 0 ||
		    split_ring_init(&queues[q].ring, &mem, QSIZE, RING_AT(q),
				    RING_AT(q) + 0x400, RING_AT(q) + 0x600,
				    cfg & 1, cfg & 2))
			abort();
		avail_idx[q] = published[q] = taken[q] = 0;
	}
	/* Raw receive chains take the descriptors after the slots'. */
	next_desc[RXQ] = 2 * NR_SLOTS;
	next_desc[TXQ] = 0;
	memset(slot_posted, 0, sizeof(slot_posted));
	table_at = TABLES_AT;
	pkt_at = PKTS_AT;
	tame = true;
	/* What a transport lets through: the features offered. */
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (cfg & 1 ? 1ULL << VIRTIO_RING_F_EVENT_IDX : 0) |
			    (cfg & 2 ? 1ULL << VIRTIO_RING_F_INDIRECT_DESC : 0);
	device_tid = started_thread(activate, &features);
	live = true;
	for (unsigned int s = 0; s < 8; s++)
		post_slot(s);
	publish(RXQ, 0);
}

/* The used ring of queue q, while the guest's buffers kept to their
 * areas: no more chains back than published, a transmit chain with
 * nothing written. */
static void check_used(unsigned int q)
{
	const struct vring_used *used = (const void *)(ram + RING_AT(q) + 0x600);
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
	v.dev.reset(v.dev.opaque);
	live = false;
	for (unsigned int q = 0; q < NR_Q; q++) {
		close(queues[q].kick_fd);
		close(queues[q].call_fd);
	}
	/* Every stream went: what the guest knew of them too. */
	for (unsigned int i = 0; i < nr_clients; i++)
		clients[i].port = 0;
}

static struct client *client_of_port(uint32_t port)
{
	for (unsigned int i = 0; i < nr_clients; i++)
		if (port && clients[i].port == port)
			return &clients[i];
	return NULL;
}

/* The byte at offset at of a stream's way (1: to the guest, 2: to the
 * host). */
static uint8_t pattern(uint32_t at, uint32_t port, unsigned int way)
{
	return (uint8_t)(at * 13 + port * 7 + way);
}

/* The guest takes what the device put in its receive buffers, checking
 * each packet while the buffers kept to their areas, and posts the
 * slots again. */
static void take_received(void)
{
	const struct vring_used *used = (const void *)(ram + RING_AT(RXQ) + 0x600);
	uint16_t idx = __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE);
	bool reposted = false;
	for (; taken[RXQ] != idx; taken[RXQ]++) {
		const struct vring_used_elem *e = &used->ring[taken[RXQ] % QSIZE];
		if (!tame || e->id >= 2 * NR_SLOTS || e->id % 2)
			continue;
		unsigned int s = e->id / 2;
		if (!slot_posted[s])
			continue;
		slot_posted[s] = false;
		post_slot(s);
		reposted = true;
		if (!e->len)
			continue;
		const uint8_t *at = ram + SLOTS_AT + (uint64_t)s * SLOT_SIZE;
		struct virtio_vsock_hdr h;
		memcpy(&h, at, HDR_LEN);
		uint32_t len = le32toh(h.len);
		uint16_t op = le16toh(h.op);
		fuzz_assert(e->len >= HDR_LEN && e->len == HDR_LEN + len &&
				    len <= SLOT_ROOM,
			    "a receive entry of %u bytes, a header of %u", e->len, len);
		fuzz_assert(le64toh(h.src_cid) == VIRTIO_VSOCK_HOST_CID &&
				    le64toh(h.dst_cid) == VIRTIO_VSOCK_GUEST_CID,
			    "a packet from CID %llu to %llu",
			    (unsigned long long)le64toh(h.src_cid),
			    (unsigned long long)le64toh(h.dst_cid));
		fuzz_assert(op == VIRTIO_VSOCK_OP_REQUEST || op == VIRTIO_VSOCK_OP_RST ||
				    op == VIRTIO_VSOCK_OP_SHUTDOWN ||
				    op == VIRTIO_VSOCK_OP_RW ||
				    op == VIRTIO_VSOCK_OP_CREDIT_UPDATE ||
				    (op == VIRTIO_VSOCK_OP_RESPONSE &&
				     le32toh(h.src_port) == CONNECT_PORT),
			    "op %u from the device", op);
		fuzz_assert(op == VIRTIO_VSOCK_OP_RW || !len,
			    "op %u with %u bytes", op, len);
		struct client *c = client_of_port(le32toh(h.src_port));
		if (op == VIRTIO_VSOCK_OP_REQUEST) {
			/* Ports go in connection order: the client's. */
			unsigned int i = le32toh(h.src_port) - VIRTIO_VSOCK_FIRST_HOST_PORT;
			fuzz_assert(i < nr_clients && !clients[i].port,
				    "a REQUEST from port %u, %u clients",
				    le32toh(h.src_port), nr_clients);
			fuzz_assert(le32toh(h.dst_port) == GUEST_PORT,
				    "a REQUEST to port %u", le32toh(h.dst_port));
			clients[i].port = le32toh(h.src_port);
			clients[i].guest_got = clients[i].guest_sent = 0;
			clients[i].guest_limit = 0;
			continue;
		}
		if (op != VIRTIO_VSOCK_OP_RW || !c || le32toh(h.dst_port) != GUEST_PORT)
			continue;
		for (uint32_t k = 0; k < len && !raw_rx; k++)
			fuzz_assert(at[HDR_LEN + k] ==
					    pattern(c->guest_got + k, c->port, 1),
				    "byte %u to the guest on port %u out of order",
				    c->guest_got + k, c->port);
		c->guest_got += len;
		fuzz_assert(raw_tx || c->guest_got <= c->guest_limit,
			    "port %u: the guest got %u bytes, let have %llu",
			    c->port, c->guest_got, (unsigned long long)c->guest_limit);
	}
	if (reposted)
		publish(RXQ, 0);
}

/* A raw chain of nr descriptors on queue q, as the input says (above). */
static void raw_chain(struct input *in, unsigned int q, unsigned int nr)
{
	struct vring_desc *d = (void *)(ram + RING_AT(q));
	/* Receive chains keep off the slots' descriptors. */
	uint16_t first = q == RXQ ? 2 * NR_SLOTS : 0;
	uint16_t span = QSIZE - first;
	uint16_t head = (uint16_t)(first + (next_desc[q] - first) % span);
	for (unsigned int i = 0; i < nr; i++) {
		uint16_t at = (uint16_t)(first + (next_desc[q]++ - first) % span);
		uint8_t flags = get8(in);
		uint16_t f = (uint16_t)(((q == RXQ) ^ (flags & 1) ? VRING_DESC_F_WRITE : 0) |
					(flags & 2 ? VRING_DESC_F_INDIRECT : 0) |
					(i + 1 < nr ? VRING_DESC_F_NEXT : 0));
		/* An indirect table the input did not write is whatever the
		 * device wrote there: addresses anywhere. */
		if (flags & 2)
			tame = false;
		uint16_t next = (uint16_t)(first + (next_desc[q] - first) % span);
		if (flags & 4) {
			/* A receive chain may go on into a slot's. */
			next = get8(in);
			tame = tame && q == TXQ;
		}
		uint64_t addr;
		if (flags & 8) {
			addr = get32(in);
			tame = false;
		} else {
			addr = RAW_AT + get16(in) % RAW_SIZE;
		}
		d[at] = (struct vring_desc){.addr = addr, .len = get16(in),
					    .flags = f, .next = next};
	}
	if (q == TXQ)
		raw_tx = true;
	else
		raw_rx = true;
	make_available(q, head);
	publish(q, 0);
}

/* The guest's packet on client i's stream (above). */
static void guest_packet(struct input *in, unsigned int i, bool forge)
{
	struct client *c = &clients[i % MAX_CLIENTS];
	uint16_t op = get8(in);
	uint32_t flags = get8(in);
	uint32_t buf_alloc = (uint32_t)get16(in) << 4;
	int8_t lag = (int8_t)get8(in);
	uint32_t len = get16(in);
	uint8_t forgery = forge ? get8(in) : 0;
	if (len > 0x10000)
		len = 0x10000;
	uint32_t fwd = c->guest_got - (uint32_t)(int32_t)lag;
	struct virtio_vsock_hdr h = {
		.src_cid = htole64(forgery & 4 ? 7 : VIRTIO_VSOCK_GUEST_CID),
		.dst_cid = htole64(VIRTIO_VSOCK_HOST_CID),
		.src_port = htole32(forgery & 8 ? GUEST_PORT + 1 : GUEST_PORT),
		.dst_port = htole32(forgery & 32   ? CONNECT_PORT
				    : forgery & 16 ? get32(in)
						   : c->port),
		.len = htole32(len + (forgery & 1)),
		.type = htole16(forgery & 2 ? VIRTIO_VSOCK_TYPE_SEQPACKET
					    : VIRTIO_VSOCK_TYPE_STREAM),
		.op = htole16(op),
		.flags = htole32(flags),
		.buf_alloc = htole32(buf_alloc),
		.fwd_cnt = htole32(fwd),
	};
	if (pkt_at + HDR_LEN + len > PKTS_END)
		pkt_at = PKTS_AT;
	uint64_t at = pkt_at;
	pkt_at += (HDR_LEN + len + 15) & ~15u;
	memcpy(ram + at, &h, HDR_LEN);
	bool rw = op == VIRTIO_VSOCK_OP_RW && !forgery;
	for (uint32_t k = 0; k < len; k++)
		ram[at + HDR_LEN + k] = pattern(c->guest_sent + k, c->port, 2);
	/* What the guest lets the device send it, at most: fwd_cnt and
	 * buf_alloc of any packet of its stream (the device keeps to the
	 * latest; the most is a bound that wraps or claims never lower). A
	 * packet to another port may land on another stream: its bytes and
	 * credit are then none of the checks' business. */
	if (forgery & 48)
		raw_tx = true;
	if (!forgery && (uint64_t)fwd + buf_alloc > c->guest_limit)
		c->guest_limit = (uint64_t)fwd + buf_alloc;
	if (rw)
		c->guest_sent += len;
	struct vring_desc *d = (void *)(ram + RING_AT(TXQ));
	uint16_t a = next_desc[TXQ]++ % QSIZE, b = next_desc[TXQ]++ % QSIZE;
	d[a] = (struct vring_desc){at, HDR_LEN, len ? VRING_DESC_F_NEXT : 0, b};
	d[b] = (struct vring_desc){at + HDR_LEN, len, 0, 0};
	make_available(TXQ, a);
	publish(TXQ, 0);
}

/* Client i reads what is there; while no raw chain went out, the bytes
 * are its stream's, in order. */
static void client_read(struct client *c)
{
	static uint8_t buf[1 << 17];
	if (c->fd < 0)
		return;
	ssize_t got = read(c->fd, buf, sizeof(buf));
	if (got <= 0)
		return;
	for (ssize_t k = 0; k < got && !raw_tx && tame; k++)
		fuzz_assert(buf[k] == pattern(c->read + (uint32_t)k, c->port, 2),
			    "byte %u to the host on port %u out of order",
			    c->read + (uint32_t)k, c->port);
	c->read += (uint32_t)got;
}

static void client_write(struct client *c, uint16_t len)
{
	static uint8_t buf[0x10000];
	if (c->fd < 0 || !c->port)
		return; /* its stream's bytes start once it is offered */
	for (uint32_t k = 0; k < len; k++)
		buf[k] = pattern(c->written + k, c->port, 1);
	ssize_t w = write(c->fd, buf, len);
	if (w > 0)
		c->written += (uint32_t)w;
}

static int listener(void)
{
	static const struct sockaddr_un addr = {.sun_family = AF_UNIX,
						.sun_path = "\0fsvm-fuzz-vsock"};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 17);
	if (fd < 0 || bind(fd, (const struct sockaddr *)&addr, len) ||
	    listen(fd, MAX_CLIENTS))
		abort();
	return fd;
}

static void client_connect(int listen_fd)
{
	if (nr_clients == MAX_CLIENTS)
		return;
	struct sockaddr_un addr;
	socklen_t len = sizeof(addr);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || getsockname(listen_fd, (struct sockaddr *)&addr, &len) ||
	    connect(fd, (struct sockaddr *)&addr, len))
		abort();
	clients[nr_clients++] = (struct client){.fd = fd};
}

static void run_op(struct input *in, int listen_fd)
{
	uint8_t op = get8(in), a = op >> 4;
	struct client *c = &clients[a % MAX_CLIENTS];
	bool exists = a % MAX_CLIENTS < nr_clients;
	switch (op & 15) {
	case 0:
	case 1:
		if (live)
			raw_chain(in, op & 1 ? RXQ : TXQ, a % 4 + 1u);
		break;
	case 2: {
		uint16_t extra = a & 2 ? get8(in) : 0;
		/* Chains claimed again: receive slots filled twice before
		 * the guest looks, packets sent twice. */
		if (extra && a & 1)
			tame = false;
		else if (extra)
			raw_tx = true;
		if (live)
			publish(a & 1 ? RXQ : TXQ, extra);
		break;
	}
	case 3:
		if (live && exists)
			guest_packet(in, a % MAX_CLIENTS, a & 8);
		break;
	case 4:
		client_connect(listen_fd);
		break;
	case 5: {
		uint16_t len = get16(in);
		if (exists)
			client_write(c, len);
		break;
	}
	case 6:
		if (exists)
			client_read(c);
		break;
	case 7:
		if (exists && c->fd >= 0 && a & 8) {
			shutdown(c->fd, SHUT_WR);
		} else if (exists && c->fd >= 0) {
			close(c->fd);
			c->fd = -1;
		}
		break;
	case 8:
		if (live)
			take_received();
		break;
	case 9: {
		unsigned int n = get8(in) % 16 + 1;
		for (unsigned int s = 0; live && s < NR_SLOTS && n; s++)
			if (!slot_posted[s]) {
				post_slot(s);
				n--;
			}
		if (live)
			publish(RXQ, 0);
		break;
	}
	case 10: {
		uint16_t at = get16(in) % RAW_SIZE;
		uint8_t len = get8(in);
		size_t have = len < in->left ? len : in->left;
		if (have > RAW_SIZE - at)
			have = RAW_SIZE - at;
		memcpy(ram + RAW_AT + at, in->p, have);
		in->p += have;
		in->left -= have;
		break;
	}
	case 11:
		stop();
		if (!(a & 1))
			start(0);
		break;
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
	memset(ram, 0, RAM_SIZE);
	memset(clients, 0, sizeof(clients));
	nr_clients = 0;
	raw_tx = raw_rx = false;
	int listen_fd = listener(), sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	struct virtio_vsock_options o = {.listen_fd = listen_fd, .guest_port = GUEST_PORT,
					 .connect_fd = sv[1], .connect_port = CONNECT_PORT};
	if (virtio_vsock_create(&v, &o))
		abort();
	start(cfg);
	for (int ops = 0; ops < MAX_OPS && in.left; ops++)
		run_op(&in, listen_fd);
	stop();
	close(v.listen_fd);
	if (v.connect_fd >= 0)
		close(v.connect_fd);
	close(sv[0]);
	close(v.epoll_fd);
	close(v.stop_fd);
	free(v.scratch);
	for (unsigned int i = 0; i < nr_clients; i++)
		if (clients[i].fd >= 0)
			close(clients[i].fd);
	resources_check("fuzz_virtio_vsock", before);
	return 0;
}
