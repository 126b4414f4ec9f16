/* Unit tests for devices/virtio_vsock: the test plays the guest's driver
 * (real split rings in a buffer of guest RAM, kicks and interrupts on
 * eventfds) and the host's clients, which connect to the device's
 * listening socket. A connection becomes a REQUEST the guest answers;
 * then bytes both ways, in order and byte for byte, under both sides'
 * credit; shutdowns each way, RSTs, hostile chains and headers, the
 * connection cap, resets, and the device under fsvm's system-call filter.
 * Run under ASan and TSan too (make unit). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/device.h"
#include "devices/virtio_vsock.h"
#include "vmm/seccomp.h"

#define RAM_SIZE (16u << 20)
#define QSIZE 256u
#define RXQ 0u
#define TXQ 1u
#define EVQ 2u
#define NR_Q 3u
#define HDR_LEN ((uint32_t)sizeof(struct virtio_vsock_hdr))
/* Queue q's rings: desc, avail and used, 12 KiB per queue from 0. */
#define RING_AT(q, part) ((q) * 0x3000u + (part) * 0x1000u)
#define TX_AT 0x100000u /* the guest's packets, upward */
#define TX_END 0xa00000u
#define RX_AT 0xa00000u /* receive slot i at RX_AT + i * RX_SLOT */
#define RX_SLOT 0x2000u
#define RX_ROOM 4096u /* Linux's receive buffer, after its header */
#define RX_SLOTS 128u /* two descriptors each: 2i and 2i + 1 */
#define CHAINS_AT 0xc00000u /* chains a case lays out itself */
#define GUEST_PORT 5123u
#define CONNECT_PORT 1000u /* the host port the guest may open a stream to */
#define GUEST_CID VIRTIO_VSOCK_GUEST_CID
#define HOST_CID VIRTIO_VSOCK_HOST_CID
#define CONN_BUF VIRTIO_VSOCK_CONN_BUF

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
	bool event_idx;
	bool one_desc_rx; /* receive buffers as 6.2+ posts them: one each */
};

/* Linux 6.1's driver: two descriptors a receive buffer, no EVENT_IDX. */
static const struct config linux61 = {false, false};
/* A newer one's: one descriptor a buffer, EVENT_IDX. */
static const struct config linux612 = {true, true};

struct rig {
	const struct config *cfg;
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_vsock v;
	bool open, live;
	int listen_fd;
	int connect_peer; /* the host's end of the stream the guest may open */
	struct sockaddr_un addr;
	socklen_t addr_len;
	struct virtio_queue queues[NR_Q];
	uint16_t avail_idx[NR_Q], used_seen[NR_Q], next_desc[NR_Q];
	uint64_t tx_next;
};

/* A packet the guest took from its receive queue. */
struct pkt {
	struct virtio_vsock_hdr h;
	uint16_t op;
	uint32_t src_port, dst_port, len, flags, buf_alloc, fwd_cnt;
	uint8_t data[RX_ROOM];
};

/* The guest's end of one stream, as its driver keeps it. */
struct gstream {
	uint32_t port;	    /* the device's (host) port */
	uint32_t buf_alloc; /* the guest's buffer */
	uint32_t got;	    /* bytes received (and consumed at once) */
	uint32_t got_told;  /* the fwd_cnt the device last heard */
	uint32_t sent;	    /* bytes sent */
	uint32_t dev_buf_alloc, dev_fwd_cnt;
};

/* ---- the device ---- */

static void queues_open(struct rig *r)
{
	for (unsigned int q = 0; q < NR_Q; q++) {
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
	r->tx_next = TX_AT;
}

static void activate(struct rig *r)
{
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	if (r->cfg->event_idx)
		features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	assert_int_equal(features & ~r->v.dev.features, 0);
	assert_int_equal(r->v.dev.activate(r->v.dev.opaque, r->queues, NR_Q,
					   features),
			 0);
	r->live = true;
}

static void stop(struct rig *r)
{
	r->v.dev.reset(r->v.dev.opaque);
	r->live = false;
	for (unsigned int q = 0; q < NR_Q; q++) {
		close(r->queues[q].kick_fd);
		close(r->queues[q].call_fd);
	}
}

static void drv_rx_post_all(struct rig *r);

static void start(struct rig *r)
{
	queues_open(r);
	activate(r);
	drv_rx_post_all(r);
}

/* A listening socket in the abstract namespace (nothing to remove). */
static void listener_open(struct rig *r)
{
	static unsigned int seq;
	r->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->listen_fd >= 0);
	r->addr = (struct sockaddr_un){.sun_family = AF_UNIX};
	int n = snprintf(r->addr.sun_path + 1, sizeof(r->addr.sun_path) - 1,
			 "fsvm-vsock-test-%d-%u", (int)getpid(), seq++);
	r->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	assert_int_equal(bind(r->listen_fd, (struct sockaddr *)&r->addr, r->addr_len), 0);
	assert_int_equal(listen(r->listen_fd, 128), 0);
}

static void device_open(struct rig *r)
{
	listener_open(r);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	r->connect_peer = sv[0];
	struct virtio_vsock_options o = {.listen_fd = r->listen_fd,
					 .guest_port = GUEST_PORT,
					 .connect_fd = sv[1],
					 .connect_port = CONNECT_PORT};
	assert_int_equal(virtio_vsock_create(&r->v, &o), 0);
	r->open = true;
}

/* The device has no destroy: fsvm's lasts as long as the process. */
static void device_close(struct rig *r)
{
	if (r->live)
		stop(r);
	if (r->open) {
		close(r->v.listen_fd);
		if (r->v.connect_fd >= 0)
			close(r->v.connect_fd);
		close(r->connect_peer);
		close(r->v.epoll_fd);
		close(r->v.stop_fd);
		free(r->v.scratch);
		r->open = false;
	}
}

static uint64_t count(struct rig *r, enum virtio_vsock_counter c)
{
	return atomic_load(&r->v.counts[c]);
}

static void wait_count(struct rig *r, enum virtio_vsock_counter c, uint64_t n)
{
	for (int ms = 0; ms < 5000 && count(r, c) < n; ms++)
		usleep(1000);
	if (count(r, c) < n)
		fail_msg("%s: %llu, not %llu", virtio_vsock_counter_name(c),
			 (unsigned long long)count(r, c), (unsigned long long)n);
}

static uint64_t cpu_ns(clockid_t clock)
{
	struct timespec t;
	assert_int_equal(clock_gettime(clock, &t), 0);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The device's thread waits: it takes no CPU over 200 ms (a busy loop
 * takes most of them). */
static void assert_device_idle(struct rig *r)
{
	clockid_t clock;
	assert_int_equal(pthread_getcpuclockid(r->v.thread, &clock), 0);
	uint64_t before = cpu_ns(clock);
	usleep(200 * 1000);
	uint64_t ran = cpu_ns(clock) - before;
	if (ran > 30 * 1000 * 1000)
		fail_msg("the device's thread ran %llu ms of 200: a busy loop",
			 (unsigned long long)(ran / 1000000));
}

/* ---- the guest: rings and buffers ---- */

struct seg {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;
};

static struct vring_desc *drv_desc(struct rig *r, unsigned int q)
{
	return (void *)(r->ram + RING_AT(q, 0));
}

static uint16_t drv_used_idx(struct rig *r, unsigned int q)
{
	struct vring_used *used = (void *)(r->ram + RING_AT(q, 2));
	return __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE);
}

static struct vring_used_elem drv_used(struct rig *r, unsigned int q, uint16_t i)
{
	struct vring_used *used = (void *)(r->ram + RING_AT(q, 2));
	return used->ring[i % QSIZE];
}

static void drv_avail(struct rig *r, unsigned int q, uint16_t head)
{
	struct vring_avail *avail = (void *)(r->ram + RING_AT(q, 1));
	avail->ring[r->avail_idx[q]++ % QSIZE] = head;
}

static void drv_publish(struct rig *r, unsigned int q)
{
	struct vring_avail *avail = (void *)(r->ram + RING_AT(q, 1));
	__atomic_store_n(&avail->idx, r->avail_idx[q], __ATOMIC_RELEASE);
	uint64_t one = 1;
	assert_int_equal(write(r->queues[q].kick_fd, &one, sizeof(one)),
			 sizeof(one));
}

/* Puts a chain on queue q in consecutive descriptors of the ring's
 * table; returns its head. */
static uint16_t drv_chain(struct rig *r, unsigned int q, const struct seg *s,
			  unsigned int nr)
{
	struct vring_desc *d = drv_desc(r, q);
	uint16_t head = r->next_desc[q] % QSIZE;
	for (unsigned int i = 0; i < nr; i++) {
		uint16_t at = r->next_desc[q]++ % QSIZE;
		d[at] = (struct vring_desc){
			.addr = s[i].gpa, .len = s[i].len,
			.flags = (uint16_t)(s[i].flags |
					    (i + 1 < nr ? VRING_DESC_F_NEXT : 0)),
			.next = (uint16_t)((at + 1) % QSIZE)};
	}
	drv_avail(r, q, head);
	return head;
}

/* Posts receive slot i: a header descriptor and a 4 KiB one (Linux 6.1),
 * or both in one (6.2 on), at descriptors 2i and 2i + 1. */
static void drv_rx_post(struct rig *r, uint16_t slot)
{
	struct vring_desc *d = drv_desc(r, RXQ);
	uint64_t at = RX_AT + (uint64_t)slot * RX_SLOT;
	uint16_t head = (uint16_t)(2 * slot);
	if (r->cfg->one_desc_rx) {
		d[head] = (struct vring_desc){at, HDR_LEN + RX_ROOM, VRING_DESC_F_WRITE, 0};
	} else {
		d[head] = (struct vring_desc){at, HDR_LEN,
					      VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
					      (uint16_t)(head + 1)};
		d[head + 1] = (struct vring_desc){at + HDR_LEN, RX_ROOM,
						  VRING_DESC_F_WRITE, 0};
	}
	drv_avail(r, RXQ, head);
}

static void drv_rx_post_all(struct rig *r)
{
	for (uint16_t i = 0; i < RX_SLOTS; i++)
		drv_rx_post(r, i);
	drv_publish(r, RXQ);
}

/* Takes the next receive entry if there is one, checks its frame (the
 * device's addresses, a length the header says), and posts its slot
 * again if repost. */
static bool drv_rx_poll(struct rig *r, struct pkt *p, bool repost)
{
	if (drv_used_idx(r, RXQ) == r->used_seen[RXQ])
		return false;
	struct vring_used_elem e = drv_used(r, RXQ, r->used_seen[RXQ]++);
	assert_true(e.id < 2 * RX_SLOTS && e.id % 2 == 0);
	assert_in_range(e.len, HDR_LEN, HDR_LEN + RX_ROOM);
	const uint8_t *at = r->ram + RX_AT + (uint64_t)(e.id / 2) * RX_SLOT;
	memcpy(&p->h, at, HDR_LEN);
	p->op = le16toh(p->h.op);
	p->src_port = le32toh(p->h.src_port);
	p->dst_port = le32toh(p->h.dst_port);
	p->len = le32toh(p->h.len);
	p->flags = le32toh(p->h.flags);
	p->buf_alloc = le32toh(p->h.buf_alloc);
	p->fwd_cnt = le32toh(p->h.fwd_cnt);
	assert_int_equal(le64toh(p->h.src_cid), HOST_CID);
	assert_int_equal(le64toh(p->h.dst_cid), GUEST_CID);
	assert_int_equal(e.len, HDR_LEN + p->len);
	memcpy(p->data, at + HDR_LEN, p->len);
	if (repost) {
		drv_rx_post(r, (uint16_t)(e.id / 2));
		drv_publish(r, RXQ);
	}
	return true;
}

/* Waits (5 s at most) for the next receive entry. */
static void drv_rx_next(struct rig *r, struct pkt *p)
{
	for (int ms = 0; ms < 5000; ms++) {
		if (drv_rx_poll(r, p, true))
			return;
		usleep(1000);
	}
	fail_msg("no packet for the guest in 5 s");
}

/* Nothing for the guest for 100 ms. */
static void drv_rx_nothing(struct rig *r)
{
	usleep(100 * 1000);
	struct pkt p;
	if (drv_rx_poll(r, &p, true))
		fail_msg("op %u (%u bytes) for the guest, where nothing should come",
			 p.op, p.len);
}

/* Room in the transmit area, 16-byte aligned. */
static uint64_t drv_alloc(struct rig *r, size_t len)
{
	uint64_t at = r->tx_next;
	r->tx_next = (at + len + 15) & ~15ULL;
	assert_true(r->tx_next <= TX_END);
	return at;
}

/* Waits until every transmit chain posted came back, unwritten, and
 * frees the transmit area. */
static void drv_tx_wait(struct rig *r)
{
	for (int ms = 0; ms < 5000 && drv_used_idx(r, TXQ) != r->avail_idx[TXQ]; ms++)
		usleep(1000);
	assert_int_equal(drv_used_idx(r, TXQ), r->avail_idx[TXQ]);
	for (; r->used_seen[TXQ] != r->avail_idx[TXQ]; r->used_seen[TXQ]++)
		assert_int_equal(drv_used(r, TXQ, r->used_seen[TXQ]).len, 0);
	r->tx_next = TX_AT;
}

/* Posts a packet: the header in one descriptor, len bytes of payload in
 * another (after pad bytes the header does not count). Not published. */
static void drv_tx_put(struct rig *r, const struct virtio_vsock_hdr *h,
		       const void *payload, size_t len)
{
	uint64_t at = drv_alloc(r, HDR_LEN + len);
	memcpy(r->ram + at, h, HDR_LEN);
	struct seg s[2] = {{at, HDR_LEN, 0}, {at + HDR_LEN, (uint32_t)len, 0}};
	if (len)
		memcpy(r->ram + at + HDR_LEN, payload, len);
	drv_chain(r, TXQ, s, len ? 2 : 1);
}

static struct virtio_vsock_hdr hdr_to_host(uint32_t host_port, uint16_t op)
{
	return (struct virtio_vsock_hdr){
		.src_cid = htole64(GUEST_CID), .dst_cid = htole64(HOST_CID),
		.src_port = htole32(GUEST_PORT), .dst_port = htole32(host_port),
		.type = htole16(VIRTIO_VSOCK_TYPE_STREAM), .op = htole16(op)};
}

/* A packet of stream s, with the guest's credit, sent and taken. */
static void gs_send(struct rig *r, struct gstream *s, uint16_t op,
		    uint32_t flags, const void *payload, size_t len)
{
	struct virtio_vsock_hdr h = hdr_to_host(s->port, op);
	h.len = htole32((uint32_t)len);
	h.flags = htole32(flags);
	h.buf_alloc = htole32(s->buf_alloc);
	h.fwd_cnt = htole32(s->got);
	s->got_told = s->got;
	if (op == VIRTIO_VSOCK_OP_RW)
		s->sent += (uint32_t)len;
	drv_tx_put(r, &h, payload, len);
	drv_publish(r, TXQ);
	drv_tx_wait(r);
}

/* What the guest may still send on s: the device's credit. */
static uint32_t gs_credit(const struct gstream *s)
{
	return s->dev_buf_alloc - (s->sent - s->dev_fwd_cnt);
}

/* A packet of s the guest took: the device's credit, and for bytes that
 * the device never sent more than the guest had room for. */
static void gs_take(struct gstream *s, const struct pkt *p)
{
	assert_int_equal(p->dst_port, GUEST_PORT);
	assert_int_equal(p->src_port, s->port);
	assert_int_equal(le16toh(p->h.type), VIRTIO_VSOCK_TYPE_STREAM);
	s->dev_buf_alloc = p->buf_alloc;
	s->dev_fwd_cnt = p->fwd_cnt;
	assert_int_equal(p->buf_alloc, CONN_BUF);
	if (p->op == VIRTIO_VSOCK_OP_RW) {
		uint32_t room = s->buf_alloc - (s->got - s->got_told);
		if (p->len > room)
			fail_msg("the device sent %u bytes to a guest with room for %u",
				 p->len, room);
		s->got += p->len;
	}
}

/* The next packet, which must be op on s. */
static void gs_expect(struct rig *r, struct gstream *s, uint16_t op,
		      struct pkt *p)
{
	drv_rx_next(r, p);
	if (p->op != op)
		fail_msg("op %u from the device, not %u", p->op, op);
	gs_take(s, p);
}

/* ---- the host's clients ---- */

static int host_connect(struct rig *r)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&r->addr, r->addr_len), 0);
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return fd;
}

static uint8_t pattern(uint32_t at, unsigned int way)
{
	return (uint8_t)(at * 31 + (at >> 11) + way * 77);
}

static void fill(uint8_t *buf, uint32_t from, size_t len, unsigned int way)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(from + (uint32_t)i, way);
}

static void check(const uint8_t *buf, uint32_t from, size_t len, unsigned int way)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(from + (uint32_t)i, way))
			fail_msg("byte %u of the stream: %u, not %u",
				 from + (unsigned int)i, buf[i],
				 pattern(from + (uint32_t)i, way));
}

static void host_write(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		if (poll(&pfd, 1, 5000) != 1)
			fail_msg("host: the device took nothing for 5 s");
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EAGAIN)
			continue;
		assert_true(w > 0);
		p += w;
		len -= (size_t)w;
	}
}

static void host_read(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 5000) != 1)
			fail_msg("host: %zu bytes still to come after 5 s", len);
		ssize_t got = read(fd, p, len);
		if (got < 0 && errno == EAGAIN)
			continue;
		if (got <= 0)
			fail_msg("host: the stream ended with %zu bytes to come", len);
		p += got;
		len -= (size_t)got;
	}
}

/* The device closed (or shut down) its end: the host reads the end. */
static void host_expect_eof(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, 5000) != 1)
		fail_msg("host: no end of the stream in 5 s");
	char c;
	ssize_t got = read(fd, &c, 1);
	if (got != 0 && !(got < 0 && errno == ECONNRESET))
		fail_msg("host: %zd from a stream that should have ended", got);
}

static void host_nothing(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 100), 0);
}

/* A host connection, offered to the guest as a REQUEST to its port from
 * a host port of the device's own, which the guest answers with
 * buf_alloc of room. */
static int connect_stream(struct rig *r, struct gstream *s, uint32_t buf_alloc)
{
	int fd = host_connect(r);
	struct pkt p;
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	assert_int_equal(le16toh(p.h.type), VIRTIO_VSOCK_TYPE_STREAM);
	assert_int_equal(p.dst_port, GUEST_PORT);
	assert_true(p.src_port >= VIRTIO_VSOCK_FIRST_HOST_PORT);
	assert_int_equal(p.len, 0);
	assert_int_equal(p.flags, 0);
	assert_int_equal(p.fwd_cnt, 0);
	*s = (struct gstream){.port = p.src_port, .buf_alloc = buf_alloc};
	gs_take(s, &p);
	gs_send(r, s, VIRTIO_VSOCK_OP_RESPONSE, 0, NULL, 0);
	return fd;
}

/* ---- fixtures ---- */

static int setup(void **state)
{
	static struct rig r;
	memset(&r, 0, sizeof(r));
	r.cfg = *state;
	r.ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r.ram != MAP_FAILED);
	assert_int_equal(guest_mem_add(&r.mem, 0, RAM_SIZE, r.ram), 0);
	device_open(&r);
	start(&r);
	*state = &r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;
	device_close(r);
	return munmap(r->ram, RAM_SIZE);
}

/* ---- streams ---- */

/* Moves to_host bytes from the guest and to_guest bytes from the host
 * at once, as both ends of a stream do: the host writes what its socket
 * takes and reads (unless host_reads is false until the guest is
 * stuck), the guest sends what the device's credit allows in packets
 * of up to chunk bytes, takes what comes and tells the device once it
 * consumed half its buffer. Every byte arrives in order; the device
 * keeps to the guest's credit (gs_take). */
static void pump(struct rig *r, struct gstream *s, int fd, uint32_t to_host,
		 uint32_t to_guest, size_t chunk, bool host_reads)
{
	static uint8_t buf[1 << 16];
	uint32_t written = 0, read_back = 0, sent0 = s->sent, got0 = s->got;
	unsigned int still_rounds = 0;
	for (int rounds = 0; rounds < 200000; rounds++) {
		bool moved = false;
		if (written < to_guest) {
			size_t n = to_guest - written < sizeof(buf) ? to_guest - written
								    : sizeof(buf);
			fill(buf, written, n, 1);
			ssize_t w = write(fd, buf, n);
			assert_true(w > 0 || errno == EAGAIN);
			if (w > 0) {
				written += (uint32_t)w;
				moved = true;
			}
		}
		struct pkt p;
		while (drv_rx_poll(r, &p, true)) {
			uint32_t at = s->got - got0;
			gs_take(s, &p);
			assert_true(p.op == VIRTIO_VSOCK_OP_RW ||
				    p.op == VIRTIO_VSOCK_OP_CREDIT_UPDATE);
			check(p.data, at, p.len, 1);
			moved = true;
		}
		if (s->got - s->got_told >= s->buf_alloc / 2)
			gs_send(r, s, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, NULL, 0);
		for (int k = 0; k < 8 && s->sent - sent0 < to_host && gs_credit(s); k++) {
			uint32_t n = to_host - (s->sent - sent0);
			if (n > chunk)
				n = (uint32_t)chunk;
			if (n > gs_credit(s))
				n = gs_credit(s);
			fill(buf, s->sent - sent0, n, 2);
			gs_send(r, s, VIRTIO_VSOCK_OP_RW, 0, buf, n);
			moved = true;
		}
		if (!host_reads && !moved && ++still_rounds == 100) {
			/* The host read nothing: the device took what the
			 * guest's credit allowed, holds what the host socket
			 * would not take, and waits. */
			assert_int_equal(gs_credit(s), 0);
			assert_true(s->sent - sent0 < to_host);
			assert_device_idle(r);
			drv_rx_nothing(r);
			host_reads = true;
		}
		if (host_reads && read_back < to_host) {
			ssize_t got = read(fd, buf, sizeof(buf));
			assert_true(got > 0 || errno == EAGAIN);
			if (got > 0) {
				check(buf, read_back, (size_t)got, 2);
				read_back += (uint32_t)got;
				moved = true;
			}
		}
		if (written == to_guest && read_back == to_host &&
		    s->got - got0 == to_guest)
			return;
		if (moved)
			still_rounds = 0;
		else
			usleep(200);
	}
	fail_msg("stream stuck: host wrote %u of %u and read %u of %u, the guest got %u",
		 written, to_guest, read_back, to_host, s->got - got0);
}

/* A host connection is a REQUEST to the guest's port; answered, bytes go
 * both ways: a few, then 4 MiB each way at once in Linux 6.1's 4 KiB
 * packets and in 64 KiB ones, every byte in order. The counters add up. */
static void test_stream_both_ways(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = connect_stream(r, &s, 256 << 10);
	assert_int_equal(count(r, VSOCK_CONNECTIONS), 1);

	host_write(fd, "hello", 5);
	struct pkt p;
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	assert_int_equal(p.len, 5);
	assert_memory_equal(p.data, "hello", 5);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "world!", 6);
	char got[6];
	host_read(fd, got, 6);
	assert_memory_equal(got, "world!", 6);
	uint32_t before_host = s.sent, before_guest = s.got;

	pump(r, &s, fd, 4 << 20, 4 << 20, 4096, true);
	pump(r, &s, fd, 4 << 20, 4 << 20, 64 << 10, true);
	assert_int_equal(count(r, VSOCK_TX_BYTES), before_host + (8u << 20));
	assert_int_equal(count(r, VSOCK_RX_BYTES), before_guest + (8u << 20));
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 0);
	assert_device_idle(r);
	close(fd);
}

/* Streams at once are each their own: what one host writes goes to its
 * stream only, in its order, each from its own host port. */
static void test_streams_apart(void **state)
{
	struct rig *r = *state;
	enum { N = 8 };
	struct gstream s[N];
	int fd[N];
	for (unsigned int i = 0; i < N; i++) {
		fd[i] = connect_stream(r, &s[i], 64 << 10);
		for (unsigned int j = 0; j < i; j++)
			assert_int_not_equal(s[i].port, s[j].port);
	}
	for (unsigned int i = 0; i < N; i++) {
		uint8_t msg[100];
		memset(msg, 'a' + (int)i, sizeof(msg));
		host_write(fd[i], msg, sizeof(msg));
	}
	uint32_t seen[N] = {0};
	for (unsigned int total = 0; total < N * 100;) {
		struct pkt p;
		drv_rx_next(r, &p);
		assert_int_equal(p.op, VIRTIO_VSOCK_OP_RW);
		unsigned int i = 0;
		while (i < N && s[i].port != p.src_port)
			i++;
		assert_true(i < N);
		gs_take(&s[i], &p);
		for (uint32_t k = 0; k < p.len; k++)
			assert_int_equal(p.data[k], 'a' + (int)i);
		seen[i] += p.len;
		total += p.len;
	}
	for (unsigned int i = 0; i < N; i++) {
		assert_int_equal(seen[i], 100);
		char c = (char)('A' + i);
		gs_send(r, &s[i], VIRTIO_VSOCK_OP_RW, 0, &c, 1);
	}
	for (unsigned int i = 0; i < N; i++) {
		char c;
		host_read(fd[i], &c, 1);
		assert_int_equal(c, 'A' + (int)i);
		close(fd[i]);
	}
}

/* The guest's buffer is the limit: with room for 1000 bytes it gets 1000
 * of the host's 5000 and nothing more, however long it waits (and the
 * device's thread waits too); each credit it gives (an update, its own
 * packet's fwd_cnt, a larger buffer) lets exactly that much more come. */
static void test_guest_credit(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = connect_stream(r, &s, 1000);
	static uint8_t data[5000];
	fill(data, 0, sizeof(data), 1);
	host_write(fd, data, sizeof(data));
	struct pkt p;
	uint32_t at = 0;
	while (s.got < 1000) {
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
		check(p.data, at, p.len, 1);
		at += p.len;
	}
	assert_int_equal(s.got, 1000);
	drv_rx_nothing(r);
	assert_device_idle(r);
	drv_rx_nothing(r);

	gs_send(r, &s, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, NULL, 0);
	while (s.got < 2000) {
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
		check(p.data, at, p.len, 1);
		at += p.len;
	}
	assert_int_equal(s.got, 2000);
	drv_rx_nothing(r);

	/* Credit rides on the guest's data too. */
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "x", 1);
	while (s.got < 3000) {
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
		check(p.data, at, p.len, 1);
		at += p.len;
	}
	drv_rx_nothing(r);

	s.buf_alloc = 1 << 20;
	gs_send(r, &s, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, NULL, 0);
	while (s.got < 5000) {
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
		check(p.data, at, p.len, 1);
		at += p.len;
	}
	drv_rx_nothing(r);

	/* A guest that claims to have consumed more than it got gets
	 * nothing more. */
	s.got += 100000;
	gs_send(r, &s, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, NULL, 0);
	host_write(fd, data, 10);
	drv_rx_nothing(r);
	close(fd);
}

/* Our credit: the device says CONN_BUF and counts what the host took;
 * once half of it is free again the guest is told, unasked, and asked
 * (CREDIT_REQUEST) it answers with what it has. A host that reads
 * nothing: the device takes what the guest's credit allows and holds it,
 * the transmit ring never stalls, and the guest's credit runs out; once
 * the host reads, every byte comes, in order, and the credit comes back. */
static void test_device_credit(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = connect_stream(r, &s, 256 << 10);
	assert_int_equal(s.dev_buf_alloc, CONN_BUF);
	assert_int_equal(gs_credit(&s), CONN_BUF);
	static uint8_t buf[CONN_BUF];
	fill(buf, 0, CONN_BUF / 2, 2);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, buf, CONN_BUF / 2);
	struct pkt p;
	gs_expect(r, &s, VIRTIO_VSOCK_OP_CREDIT_UPDATE, &p);
	assert_int_equal(p.fwd_cnt, CONN_BUF / 2);
	host_read(fd, buf, CONN_BUF / 2);
	check(buf, 0, CONN_BUF / 2, 2);

	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, buf, 10);
	host_read(fd, buf, 10);
	drv_rx_nothing(r); /* 10 bytes are no reason to tell */
	gs_send(r, &s, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0, NULL, 0);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_CREDIT_UPDATE, &p);
	assert_int_equal(p.fwd_cnt, CONN_BUF / 2 + 10);
	drv_rx_nothing(r);
	close(fd);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, &p);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RST, 0, NULL, 0);

	/* Pushed back, with the guest's data held. */
	fd = connect_stream(r, &s, 256 << 10);
	pump(r, &s, fd, 4 << 20, 0, 64 << 10, false);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 0);
	close(fd);
}

/* The host ends its writing: the guest gets a SHUTDOWN that says the
 * device sends no more, and still sends; then the guest ends its own: the
 * host reads the end of the stream, and the guest gets the RST that ends
 * a stream. */
static void test_host_shuts_down_first(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = connect_stream(r, &s, 64 << 10);
	host_write(fd, "bye", 3);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	struct pkt p;
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	assert_int_equal(p.len, 3);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, &p);
	assert_int_equal(p.flags, VIRTIO_VSOCK_SHUTDOWN_SEND);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "still", 5);
	char got[5];
	host_read(fd, got, 5);
	assert_memory_equal(got, "still", 5);
	drv_rx_nothing(r);
	gs_send(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, VIRTIO_VSOCK_SHUTDOWN_SEND, NULL, 0);
	host_expect_eof(fd);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RST, &p);
	drv_rx_nothing(r);
	assert_device_idle(r);
	close(fd);
}

/* The guest ends its writing first: after every byte it sent, the host
 * reads the end, and still writes to the guest; then the host closes:
 * a SHUTDOWN, and the RST. A guest that closes (SHUTDOWN both ways)
 * gets its last bytes to the host, then the RST, and the host its end. */
static void test_guest_shuts_down_first(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = connect_stream(r, &s, 64 << 10);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "last", 4);
	gs_send(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, VIRTIO_VSOCK_SHUTDOWN_SEND, NULL, 0);
	char got[4];
	host_read(fd, got, 4);
	assert_memory_equal(got, "last", 4);
	host_expect_eof(fd);
	host_write(fd, "more", 4);
	struct pkt p;
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	assert_memory_equal(p.data, "more", 4);
	/* Bytes after the guest said it sends no more break the stream. */
	close(fd);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, &p);
	assert_int_equal(p.flags, VIRTIO_VSOCK_SHUTDOWN_SEND);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RST, &p);
	drv_rx_nothing(r);

	fd = connect_stream(r, &s, 64 << 10);
	host_write(fd, "unread", 6);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "end", 3);
	gs_send(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN,
		VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV, NULL, 0);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RST, &p);
	host_read(fd, got, 3);
	assert_memory_equal(got, "end", 3);
	host_expect_eof(fd);
	drv_rx_nothing(r);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 0);
	close(fd);
}

/* The guest's RST ends a stream at once (the host reads the end, nothing
 * is sent back); an RST in answer to the REQUEST (nobody listens on the
 * port) closes the host's connection too, counted. */
static void test_guest_rst(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = connect_stream(r, &s, 64 << 10);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RST, 0, NULL, 0);
	host_expect_eof(fd);
	drv_rx_nothing(r);
	close(fd);

	fd = host_connect(r);
	struct pkt p;
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	s = (struct gstream){.port = p.src_port};
	gs_send(r, &s, VIRTIO_VSOCK_OP_RST, 0, NULL, 0);
	host_expect_eof(fd);
	drv_rx_nothing(r);
	assert_int_equal(count(r, VSOCK_REFUSED_BY_GUEST), 1);
	assert_device_idle(r);
	close(fd);
}

/* A host that goes while the guest has not answered yet: once the guest
 * accepts, it reads the end of the stream. One that goes on an open
 * stream, and then the guest's bytes meet a closed socket: an RST. */
static void test_host_goes(void **state)
{
	struct rig *r = *state;
	int fd = host_connect(r);
	struct pkt p;
	drv_rx_next(r, &p);
	close(fd);
	assert_device_idle(r);
	struct gstream s = {.port = p.src_port, .buf_alloc = 4096};
	gs_send(r, &s, VIRTIO_VSOCK_OP_RESPONSE, 0, NULL, 0);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, &p);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "lost", 4);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RST, &p);
	drv_rx_nothing(r);
	assert_int_equal(count(r, VSOCK_HOST_ERRORS), 1);
	assert_device_idle(r);
}

/* Sends a raw packet h with len payload bytes described, pay of them
 * there. */
static void drv_tx_raw(struct rig *r, struct virtio_vsock_hdr h, uint32_t len,
		       size_t pay)
{
	static uint8_t zeros[256];
	h.len = htole32(len);
	drv_tx_put(r, &h, zeros, pay);
	drv_publish(r, TXQ);
	drv_tx_wait(r);
}

/* The next packet is an RST for host port port from guest port gport,
 * of type. */
static void drv_expect_rst(struct rig *r, uint32_t port, uint32_t gport,
			   uint16_t type)
{
	struct pkt p;
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_RST);
	assert_int_equal(p.src_port, port);
	assert_int_equal(p.dst_port, gport);
	assert_int_equal(le16toh(p.h.type), type);
}

/* Hostile packets on a stream, each on a fresh one: a length past the
 * chain (dropped, counted, the stream reset), an unknown op, no op, a
 * REQUEST, a second RESPONSE, a SHUTDOWN of unknown flags, a control
 * packet with a payload (counted as protocol errors): each an RST, the
 * host's end closed. */
static void test_hostile_packets_on_a_stream(void **state)
{
	struct rig *r = *state;
	static const struct {
		uint16_t op;
		uint32_t len, flags;
		size_t pay;
	} bad[] = {
		{VIRTIO_VSOCK_OP_RW, 100, 0, 99},
		{VIRTIO_VSOCK_OP_RW, 0xffffffff, 0, 10},
		{99, 0, 0, 0},
		{VIRTIO_VSOCK_OP_INVALID, 0, 0, 0},
		{VIRTIO_VSOCK_OP_REQUEST, 0, 0, 0},
		{VIRTIO_VSOCK_OP_RESPONSE, 0, 0, 0},
		{VIRTIO_VSOCK_OP_SHUTDOWN, 0, 4, 0},
		{VIRTIO_VSOCK_OP_CREDIT_UPDATE, 5, 0, 5},
	};
	uint64_t errors = 0;
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gstream s;
		int fd = connect_stream(r, &s, 4096);
		struct virtio_vsock_hdr h = hdr_to_host(s.port, bad[i].op);
		h.flags = htole32(bad[i].flags);
		drv_tx_raw(r, h, bad[i].len, bad[i].pay);
		drv_expect_rst(r, s.port, GUEST_PORT, VIRTIO_VSOCK_TYPE_STREAM);
		host_expect_eof(fd);
		drv_rx_nothing(r);
		close(fd);
		errors += i >= 2;
		assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), errors);
	}
	assert_int_equal(count(r, VSOCK_TX_DROP_BAD_HEADER), 2);
}

/* Chains that are no packet, each with an RST of port's: one too short
 * for its header, one with a writable buffer, one with a buffer outside
 * RAM. */
static void drv_tx_no_packets(struct rig *r, uint32_t port)
{
	uint64_t at = drv_alloc(r, 64);
	struct virtio_vsock_hdr h = hdr_to_host(port, VIRTIO_VSOCK_OP_RST);
	memcpy(r->ram + at, &h, HDR_LEN);
	struct seg short_one = {at, HDR_LEN - 1, 0};
	struct seg writable[2] = {{at, HDR_LEN, 0}, {at + 64, 16, VRING_DESC_F_WRITE}};
	struct seg outside[2] = {{at, HDR_LEN, 0}, {RAM_SIZE + 0x1000, 16, 0}};
	drv_chain(r, TXQ, &short_one, 1);
	drv_chain(r, TXQ, writable, 2);
	drv_chain(r, TXQ, outside, 2);
	drv_publish(r, TXQ);
	drv_tx_wait(r);
}

/* Hostile packets for no stream, or none of ours: a REQUEST (the guest
 * connects to nothing) and data for a stream that is not there get an
 * RST; so does a socket type we never offered, on a stream that goes on
 * as if nothing was sent; forged addresses, chains too short for a
 * header, writable or outside RAM get nothing back, counted; an RST for
 * nothing is not answered. */
static void test_hostile_packets_for_no_stream(void **state)
{
	struct rig *r = *state;
	const uint32_t first = VIRTIO_VSOCK_FIRST_HOST_PORT;
	drv_tx_raw(r, hdr_to_host(first, VIRTIO_VSOCK_OP_REQUEST), 0, 0);
	drv_expect_rst(r, first, GUEST_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	assert_int_equal(count(r, VSOCK_GUEST_REQUESTS), 1);
	struct virtio_vsock_hdr h = hdr_to_host(77, VIRTIO_VSOCK_OP_REQUEST);
	h.src_port = htole32(4444);
	drv_tx_raw(r, h, 0, 0);
	drv_expect_rst(r, 77, 4444, VIRTIO_VSOCK_TYPE_STREAM);
	drv_tx_raw(r, hdr_to_host(9999, VIRTIO_VSOCK_OP_RW), 3, 3);
	drv_expect_rst(r, 9999, GUEST_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	drv_tx_raw(r, hdr_to_host(9999, VIRTIO_VSOCK_OP_RST), 0, 0);
	drv_rx_nothing(r);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 0);

	struct gstream s;
	int fd = connect_stream(r, &s, 4096);
	h = hdr_to_host(s.port, VIRTIO_VSOCK_OP_RW);
	h.type = htole16(VIRTIO_VSOCK_TYPE_SEQPACKET);
	drv_tx_raw(r, h, 4, 4);
	drv_expect_rst(r, s.port, GUEST_PORT, VIRTIO_VSOCK_TYPE_SEQPACKET);
	h.type = htole16(77);
	drv_tx_raw(r, h, 0, 0);
	drv_expect_rst(r, s.port, GUEST_PORT, 77);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 2);
	h = hdr_to_host(s.port, VIRTIO_VSOCK_OP_RW);
	h.src_cid = htole64(GUEST_CID + 1);
	drv_tx_raw(r, h, 4, 4);
	h = hdr_to_host(s.port, VIRTIO_VSOCK_OP_RW);
	h.dst_cid = htole64(GUEST_CID);
	drv_tx_raw(r, h, 4, 4);
	h = hdr_to_host(s.port, VIRTIO_VSOCK_OP_RST);
	h.src_cid = htole64(0xffffffffffffffffULL);
	drv_tx_raw(r, h, 0, 0);
	assert_int_equal(count(r, VSOCK_TX_DROP_BAD_HEADER), 3);

	drv_tx_no_packets(r, s.port);
	assert_int_equal(count(r, VSOCK_TX_DROP_BAD_HEADER), 4);
	assert_int_equal(count(r, VSOCK_TX_DROP_BAD_CHAIN), 2);
	drv_rx_nothing(r);

	/* The stream never noticed. */
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "ok", 2);
	char got[2];
	host_read(fd, got, 2);
	assert_memory_equal(got, "ok", 2);
	host_write(fd, "ok", 2);
	struct pkt p;
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	assert_int_equal(count(r, VSOCK_RING_ERRORS), 0);
	close(fd);
}

/* The guest's REQUEST to the port the options name gets a RESPONSE and
 * the connected socket they gave: the host's bytes and their end reach
 * the guest, the guest's the host. It may open it once: a second
 * REQUEST, or one to another port below the host's own, is refused. */
static void test_guest_opens_its_stream(void **state)
{
	struct rig *r = *state;
	int fd = r->connect_peer;
	struct gstream s = {.port = CONNECT_PORT, .buf_alloc = 64 << 10};
	gs_send(r, &s, VIRTIO_VSOCK_OP_REQUEST, 0, NULL, 0);
	struct pkt p;
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RESPONSE, &p);
	assert_int_equal(p.len, 0);
	assert_int_equal(count(r, VSOCK_CONNECTIONS), 1);
	assert_int_equal(count(r, VSOCK_GUEST_REQUESTS), 0);

	host_write(fd, "stdin", 5);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	assert_int_equal(p.len, 5);
	assert_memory_equal(p.data, "stdin", 5);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "back", 4);
	char got[4];
	host_read(fd, got, 4);
	assert_memory_equal(got, "back", 4);
	pump(r, &s, fd, 1 << 20, 4 << 20, 4096, true);

	/* A second socket of the guest's (another port of its own). */
	struct virtio_vsock_hdr h = hdr_to_host(CONNECT_PORT, VIRTIO_VSOCK_OP_REQUEST);
	h.src_port = htole32(GUEST_PORT + 1);
	drv_tx_raw(r, h, 0, 0);
	drv_expect_rst(r, CONNECT_PORT, GUEST_PORT + 1, VIRTIO_VSOCK_TYPE_STREAM);
	h = hdr_to_host(CONNECT_PORT - 1, VIRTIO_VSOCK_OP_REQUEST);
	drv_tx_raw(r, h, 0, 0);
	drv_expect_rst(r, CONNECT_PORT - 1, GUEST_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	assert_int_equal(count(r, VSOCK_GUEST_REQUESTS), 2);

	/* The host's end: SHUTDOWN, and the stream ends once the guest's
	 * end does too. */
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, &p);
	assert_int_equal(p.flags, VIRTIO_VSOCK_SHUTDOWN_SEND);
	gs_send(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, VIRTIO_VSOCK_SHUTDOWN_SEND, NULL, 0);
	host_expect_eof(fd);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RST, &p);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 0);
}

/* Data before the guest answered the REQUEST breaks the stream: an RST,
 * and the host's end closed. */
static void test_data_before_response(void **state)
{
	struct rig *r = *state;
	int fd = host_connect(r);
	struct pkt p;
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	drv_tx_raw(r, hdr_to_host(p.src_port, VIRTIO_VSOCK_OP_RW), 4, 4);
	drv_expect_rst(r, p.src_port, GUEST_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	host_expect_eof(fd);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 1);
	close(fd);
}

/* Receive chains the device cannot write a header into (read-only, too
 * small, outside RAM) come back empty, counted, and the REQUEST goes in
 * the first good one. */
static void test_hostile_rx_chains(void **state)
{
	struct rig *r = *state;
	stop(r);
	queues_open(r);
	activate(r);
	struct seg bad[4][2] = {
		{{CHAINS_AT, 64, 0}},
		{{CHAINS_AT, HDR_LEN - 1, VRING_DESC_F_WRITE}},
		{{RAM_SIZE + 0x1000, 4096, VRING_DESC_F_WRITE}},
		{{CHAINS_AT, 64, 0}, {CHAINS_AT + 64, 4096, VRING_DESC_F_WRITE}},
	};
	static const unsigned int segs[4] = {1, 1, 1, 2};
	uint16_t heads[4];
	for (unsigned int i = 0; i < 4; i++)
		heads[i] = drv_chain(r, RXQ, bad[i], segs[i]);
	drv_rx_post(r, 100); /* its descriptors lie past the chains' */
	drv_publish(r, RXQ);
	int fd = host_connect(r);
	for (int ms = 0; ms < 5000 && drv_used_idx(r, RXQ) != 5; ms++)
		usleep(1000);
	assert_int_equal(drv_used_idx(r, RXQ), 5);
	for (unsigned int i = 0; i < 4; i++) {
		struct vring_used_elem e = drv_used(r, RXQ, r->used_seen[RXQ]++);
		assert_int_equal(e.id, heads[i]);
		assert_int_equal(e.len, 0);
	}
	struct pkt p;
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	assert_int_equal(count(r, VSOCK_RX_DROP_BAD_CHAIN), 4);
	close(fd);
}

/* Restarts the device with one receive buffer posted, taken by the
 * REQUEST of a stream the guest then accepts: the guest has no buffers. */
static int stream_without_buffers(struct rig *r, struct gstream *s,
				  uint32_t buf_alloc)
{
	stop(r);
	queues_open(r);
	activate(r);
	drv_rx_post(r, 0);
	drv_publish(r, RXQ);
	int fd = host_connect(r);
	struct pkt p;
	for (int ms = 0; ms < 5000 && !drv_rx_poll(r, &p, false); ms++)
		usleep(1000);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	*s = (struct gstream){.port = p.src_port, .buf_alloc = buf_alloc};
	gs_take(s, &p);
	gs_send(r, s, VIRTIO_VSOCK_OP_RESPONSE, 0, NULL, 0);
	return fd;
}

/* A guest that posts no receive buffers while the host writes: the
 * device reads nothing, so the host's writes meet EAGAIN and nothing
 * piles up in fsvm, and its thread waits. Once the guest posts buffers
 * every byte comes, in order. */
static void test_no_rx_buffers_pushes_back(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = stream_without_buffers(r, &s, 64 << 20);
	static uint8_t buf[1 << 16];
	uint32_t written = 0;
	for (;;) {
		fill(buf, written, sizeof(buf), 1);
		ssize_t w = write(fd, buf, sizeof(buf));
		if (w < 0) {
			assert_int_equal(errno, EAGAIN);
			break;
		}
		written += (uint32_t)w;
		if (written > (32u << 20))
			fail_msg("the host wrote %u bytes to a guest with no buffers",
				 written);
	}
	assert_true(written > 0);
	assert_device_idle(r);
	assert_int_equal(count(r, VSOCK_RX_BYTES), 0);
	drv_rx_post_all(r);
	struct pkt p;
	while (s.got < written) {
		uint32_t at = s.got;
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
		check(p.data, at, p.len, 1);
	}
	assert_int_equal(s.got, written);
	drv_rx_nothing(r);
	close(fd);
}

/* A guest that sends more than the device's credit: its whole buffer is
 * taken (a host that reads nothing holds it in its socket), a byte more
 * resets the stream: the host reads what came before it, then the end,
 * and the RST waits for a receive buffer, as nothing else does. */
static void test_device_credit_overrun(void **state)
{
	struct rig *r = *state;
	struct gstream s;
	int fd = stream_without_buffers(r, &s, 4096);
	static uint8_t buf[CONN_BUF];
	fill(buf, 0, CONN_BUF, 2);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, buf, CONN_BUF / 2);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, buf + CONN_BUF / 2, CONN_BUF / 2);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 0);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, buf, 1);
	assert_int_equal(count(r, VSOCK_PROTOCOL_ERRORS), 1);
	host_read(fd, buf, CONN_BUF);
	check(buf, 0, CONN_BUF, 2);
	host_expect_eof(fd);
	assert_device_idle(r);
	drv_rx_post_all(r);
	drv_expect_rst(r, s.port, GUEST_PORT, VIRTIO_VSOCK_TYPE_STREAM);
	drv_rx_nothing(r);
	close(fd);
}

/* 64 streams at most: the 65th connection is closed at once, counted,
 * and the guest hears nothing of it; once a stream ends there is room
 * for the next. */
static void test_65th_connection_refused(void **state)
{
	struct rig *r = *state;
	enum { MAX = VIRTIO_VSOCK_MAX_CONNS };
	int fds[MAX];
	struct gstream s[MAX];
	for (unsigned int i = 0; i < MAX; i++)
		fds[i] = connect_stream(r, &s[i], 4096);
	int extra = host_connect(r);
	host_expect_eof(extra);
	close(extra);
	wait_count(r, VSOCK_REFUSED_FULL, 1);
	drv_rx_nothing(r);
	assert_int_equal(count(r, VSOCK_CONNECTIONS), MAX);

	gs_send(r, &s[7], VIRTIO_VSOCK_OP_RST, 0, NULL, 0);
	host_expect_eof(fds[7]);
	close(fds[7]);
	fds[7] = connect_stream(r, &s[7], 4096);
	for (unsigned int i = 0; i < MAX; i++) {
		host_write(fds[i], "x", 1);
		struct pkt p;
		drv_rx_next(r, &p);
		assert_int_equal(p.op, VIRTIO_VSOCK_OP_RW);
		assert_int_equal(p.src_port, s[i].port);
		host_nothing(fds[i]);
	}
	for (unsigned int i = 0; i < MAX; i++)
		close(fds[i]);
	assert_int_equal(count(r, VSOCK_REFUSED_FULL), 1);
}

/* A reset ends every stream: established ones, one the guest has not
 * answered, one not offered yet (the host reads the end of each); the
 * thread is gone. A connection made while the device is stopped waits
 * for the next start, and its stream works with a port never used. */
static void test_reset_closes_streams(void **state)
{
	struct rig *r = *state;
	struct gstream a, b;
	int fa = connect_stream(r, &a, 4096), fb = connect_stream(r, &b, 4096);
	gs_send(r, &a, VIRTIO_VSOCK_OP_RW, 0, "held?", 5);
	int fc = host_connect(r);
	struct pkt p;
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	/* No buffers for the fourth's REQUEST. */
	stop(r);
	queues_open(r);
	activate(r);
	int fd = host_connect(r);
	usleep(50 * 1000);
	stop(r);
	for (int f = 0; f < 4; f++) {
		int which = f == 0 ? fa : f == 1 ? fb : f == 2 ? fc : fd;
		if (which == fa) {
			char got[5];
			host_read(fa, got, 5);
		}
		host_expect_eof(which);
		close(which);
	}

	int late = host_connect(r);
	start(r);
	drv_rx_next(r, &p);
	assert_int_equal(p.op, VIRTIO_VSOCK_OP_REQUEST);
	assert_true(p.src_port != a.port && p.src_port != b.port);
	struct gstream s = {.port = p.src_port, .buf_alloc = 4096};
	gs_take(&s, &p);
	gs_send(r, &s, VIRTIO_VSOCK_OP_RESPONSE, 0, NULL, 0);
	host_write(late, "again", 5);
	gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
	assert_memory_equal(p.data, "again", 5);
	close(late);
}

/* A listening socket is what the device takes: not a connected one, a
 * datagram one, or no socket; nor the port that is none. A machine that
 * gives it no options (no listener) gets no device. */
static void test_options_checked(void **state)
{
	struct rig *r = *state;
	struct machine bare = {0};
	assert_int_equal(devices_add_all(&bare), 0);
	for (unsigned int i = 0; i < bare.nr_devices; i++)
		assert_string_not_equal(bare.devices[i].type->name,
					VIRTIO_VSOCK_DEVICE_NAME);
	struct virtio_vsock v;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct virtio_vsock_options o = {.listen_fd = sv[0], .guest_port = 1,
					 .connect_fd = -1};
	assert_int_equal(virtio_vsock_create(&v, &o), -EINVAL);
	close(sv[0]);
	close(sv[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	o.listen_fd = sv[0];
	assert_int_equal(virtio_vsock_create(&v, &o), -EINVAL);
	close(sv[0]);
	close(sv[1]);
	int efd = eventfd(0, EFD_CLOEXEC);
	o.listen_fd = efd;
	assert_int_equal(virtio_vsock_create(&v, &o), -ENOTSOCK);
	close(efd);
	o = (struct virtio_vsock_options){.listen_fd = r->listen_fd,
					  .guest_port = UINT32_MAX, .connect_fd = -1};
	assert_int_equal(virtio_vsock_create(&v, &o), -EINVAL);
	/* The guest's stream: a connected stream socket, at a port below
	 * the device's own; and a device with neither is refused. */
	o = (struct virtio_vsock_options){.listen_fd = -1, .connect_fd = -1};
	assert_int_equal(virtio_vsock_create(&v, &o), -EINVAL);
	o.connect_fd = r->listen_fd;
	o.connect_port = 1;
	assert_int_equal(virtio_vsock_create(&v, &o), -EINVAL);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	o.connect_fd = sv[0];
	o.connect_port = VIRTIO_VSOCK_FIRST_HOST_PORT;
	assert_int_equal(virtio_vsock_create(&v, &o), -EINVAL);
	close(sv[0]);
	close(sv[1]);
}

/* The sanitizers' runtimes make calls fsvm does not (ASan's thread start
 * asks for the CPU affinity): built with them, as test_seccomp is not,
 * this case is left out. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define FILTER_CASE 1
/* Under fsvm's system-call filter (vmm/seccomp.c), as the device runs in
 * fsvm: a stream is accepted, carries bytes both ways and ends with a
 * shutdown each way. In a child, which the filter cannot leave; what
 * the filter does not allow the test to do (a socket, a connect, an
 * eventfd) is done before it. */
static void test_under_the_filter(void **state)
{
	struct rig *r = *state;
	stop(r);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A failure aborts the child, not a second cmocka run. */
		setenv("CMOCKA_TEST_ABORT", "1", 1);
		queues_open(r);
		int fd = host_connect(r);
		if (seccomp_lock_down(false, NULL))
			_exit(100);
		activate(r);
		drv_rx_post_all(r);
		struct pkt p;
		drv_rx_next(r, &p);
		struct gstream s = {.port = p.src_port, .buf_alloc = 4096};
		gs_take(&s, &p);
		gs_send(r, &s, VIRTIO_VSOCK_OP_RESPONSE, 0, NULL, 0);
		host_write(fd, "in", 2);
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RW, &p);
		gs_send(r, &s, VIRTIO_VSOCK_OP_RW, 0, "out", 3);
		char got[3];
		host_read(fd, got, 3);
		assert_int_equal(shutdown(fd, SHUT_WR), 0);
		gs_expect(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, &p);
		gs_send(r, &s, VIRTIO_VSOCK_OP_SHUTDOWN, VIRTIO_VSOCK_SHUTDOWN_SEND, NULL, 0);
		host_expect_eof(fd);
		gs_expect(r, &s, VIRTIO_VSOCK_OP_RST, &p);
		stop(r);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the child died of signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) == 100)
		fail_msg("the filter could not be loaded");
	if (WEXITSTATUS(status) == 125)
		fail_msg("a call the filter forbids (the child's stderr names it)");
	assert_int_equal(WEXITSTATUS(status), 0);
}
#endif

int main(void)
{
	/* As fsvm (vmm/run.c): a write to a closed peer fails, not kills. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_stream_both_ways,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_stream_both_ways,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_streams_apart,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_guest_credit,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_device_credit,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_host_shuts_down_first,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_guest_shuts_down_first,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_guest_rst,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_host_goes,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_hostile_packets_on_a_stream,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_hostile_packets_for_no_stream,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_guest_opens_its_stream,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_guest_opens_its_stream,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_data_before_response,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_hostile_rx_chains,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_no_rx_buffers_pushes_back,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_no_rx_buffers_pushes_back,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_device_credit_overrun,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_65th_connection_refused,
							 setup, teardown, (void *)&linux61),
		cmocka_unit_test_prestate_setup_teardown(test_reset_closes_streams,
							 setup, teardown, (void *)&linux612),
		cmocka_unit_test_prestate_setup_teardown(test_options_checked,
							 setup, teardown, (void *)&linux61),
#ifdef FILTER_CASE
		cmocka_unit_test_prestate_setup_teardown(test_under_the_filter,
							 setup, teardown, (void *)&linux612),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
