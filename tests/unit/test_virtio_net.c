/* Unit tests for devices/virtio_net: the test plays the guest (real split
 * rings in a buffer of guest RAM, kicks and interrupts on eventfds) and
 * the host's end: passt on a stream socketpair, or, as root, a real tap
 * in a network namespace of its own. Frames both ways, in order and byte
 * for byte; mergeable buffers; hostile chains, rings and peers; a guest
 * that posts no buffers; resets in the middle of a frame. Run under ASan
 * and TSan too (make unit). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/virtio_net.h"
#include "tests/unit/needs_root.h"

#define RAM_SIZE (16u << 20)
#define QSIZE 256u
#define RXQ 0u
#define TXQ 1u
#define HDR_LEN 12u /* virtio_net_hdr_mrg_rxbuf */
/* Queue q's rings: desc, avail and used, 12 KiB per queue from 0. */
#define RING_AT(q, part) ((q) * 0x3000u + (part) * 0x1000u)
#define TX_AT 0x100000u /* a batch's transmit frames and tables, upward */
#define RX_AT 0xa00000u /* receive slot i at RX_AT + i * RX_BUF */
#define RX_BUF 4096u
#define CHAINS_AT 0xb00000u /* receive chains a case lays out itself */
#define BIG_MTU 65520u      /* passt's */
#define BIG_FRAME (BIG_MTU + 18u)
#define ETH_TYPE 0x88b5 /* local experimental: no stack answers it */
/* A frame in mergeable slots: 64 KiB and a header in 4 KiB buffers. */
#define MAX_SLOTS ((HDR_LEN + VIRTIO_NET_MAX_FRAME + RX_BUF - 1) / RX_BUF)

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
	uint16_t mtu;
	uint64_t features; /* beside VERSION_1 and the ring's */
	bool event_idx;
};

/* passt's: 64 KiB frames, mergeable buffers, its frames checksummed. */
static const struct config big = {
	BIG_MTU, (1ULL << VIRTIO_NET_F_MRG_RXBUF) | (1ULL << VIRTIO_NET_F_GUEST_CSUM),
	true};
/* An old driver's: Ethernet's MTU, one buffer a frame. */
static const struct config small = {1500, 0, false};
/* A tap's, with mergeable buffers and no offloads. */
static const struct config tap_cfg = {1500, 1ULL << VIRTIO_NET_F_MRG_RXBUF, false};

struct rig {
	const struct config *cfg;
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_net n;
	bool open, live;
	struct virtio_queue queues[2];
	int peer; /* the host's end: passt's socket, or the tap's packet socket */
	uint16_t avail_idx[2], used_seen[2], next_desc[2];
	uint64_t tx_next;
};

/* ---- the device ---- */

static void start(struct rig *r)
{
	for (unsigned int q = 0; q < 2; q++) {
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
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC) | r->cfg->features;
	if (r->cfg->event_idx)
		features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	assert_int_equal(r->n.dev.activate(r->n.dev.opaque, r->queues, 2, features), 0);
	r->live = true;
}

static void stop(struct rig *r)
{
	r->n.dev.reset(r->n.dev.opaque);
	r->live = false;
	for (unsigned int q = 0; q < 2; q++) {
		close(r->queues[q].kick_fd);
		close(r->queues[q].call_fd);
	}
}

static void device_open(struct rig *r, int fd, enum virtio_net_framing framing)
{
	struct virtio_net_options o = {.fd = fd, .framing = framing,
				       .mac = {2, 0, 0, 0, 0, 1},
				       .mtu = r->cfg->mtu};
	assert_int_equal(virtio_net_create(&r->n, &o), 0);
	r->open = true;
}

/* A device on a stream socket, started, with passt's end non-blocking. */
static void stream_open(struct rig *r)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv),
			 0);
	r->peer = sv[1];
	device_open(r, sv[0], VIRTIO_NET_FRAMING_STREAM);
	start(r);
}

/* The device has no destroy: fsvm's lasts as long as the process. */
static void device_close(struct rig *r)
{
	if (r->live)
		stop(r);
	if (r->open) {
		close(r->n.fd);
		close(r->n.epoll_fd);
		close(r->n.stop_fd);
		free(r->n.rx);
		free(r->n.tx);
		r->open = false;
	}
	if (r->peer >= 0)
		close(r->peer);
	r->peer = -1;
}

static void reopen(struct rig *r)
{
	device_close(r);
	stream_open(r);
}

static uint64_t count(struct rig *r, enum virtio_net_counter c)
{
	return atomic_load(&r->n.counts[c]);
}

static void wait_count(struct rig *r, enum virtio_net_counter c, uint64_t v)
{
	for (int ms = 0; ms < 5000 && count(r, c) < v; ms++)
		usleep(1000);
	if (count(r, c) < v)
		fail_msg("%s: %llu, not %llu", virtio_net_counter_name(c),
			 (unsigned long long)count(r, c), (unsigned long long)v);
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
	assert_int_equal(pthread_getcpuclockid(r->n.thread, &clock), 0);
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

/* Waits (30 s at most: ThreadSanitizer on a loaded machine is slow, and
 * a healthy device ends the wait at once) until queue q's used index is
 * want. */
static void drv_wait_used(struct rig *r, unsigned int q, uint16_t want)
{
	for (int ms = 0; ms < 30000 && drv_used_idx(r, q) != want; ms++)
		usleep(1000);
	if (drv_used_idx(r, q) != want)
		fail_msg("queue %u: used index %u, not %u", q, drv_used_idx(r, q),
			 want);
}

/* Room in the transmit area, 16-byte aligned (an indirect table's). */
static uint64_t drv_alloc(struct rig *r, size_t len)
{
	uint64_t at = r->tx_next;
	r->tx_next = (at + len + 15) & ~15ULL;
	assert_true(r->tx_next <= RX_AT);
	return at;
}

/* Puts a chain on queue q: in consecutive descriptors of the ring's
 * table, or in an indirect table that one of them points at. Returns its
 * head. */
static uint16_t drv_chain(struct rig *r, unsigned int q, const struct seg *s,
			  unsigned int nr, bool indirect)
{
	struct vring_desc *d = drv_desc(r, q);
	uint16_t head = r->next_desc[q] % QSIZE;
	if (indirect) {
		uint64_t at = drv_alloc(r, nr * sizeof(struct vring_desc));
		struct vring_desc *t = (void *)(r->ram + at);
		for (unsigned int i = 0; i < nr; i++)
			t[i] = (struct vring_desc){
				.addr = s[i].gpa, .len = s[i].len,
				.flags = (uint16_t)(s[i].flags |
						    (i + 1 < nr ? VRING_DESC_F_NEXT : 0)),
				.next = (uint16_t)(i + 1)};
		d[head] = (struct vring_desc){.addr = at,
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

/* Frame seq, len bytes: to the guest's MAC from another, a local type,
 * then bytes that say which frame and where in it. */
static void make_frame(uint8_t *f, size_t len, unsigned int seq)
{
	static const uint8_t eth[ETH_HLEN] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2,
					      ETH_TYPE >> 8, ETH_TYPE & 0xff};
	memcpy(f, eth, len < ETH_HLEN ? len : ETH_HLEN);
	for (size_t i = ETH_HLEN; i < len; i++)
		f[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void check_frame(const uint8_t *got, size_t got_len, size_t len,
			unsigned int seq)
{
	static uint8_t want[VIRTIO_NET_MAX_FRAME];
	assert_int_equal(got_len, len);
	make_frame(want, len, seq);
	assert_memory_equal(got, want, len);
}

/* Puts frame seq (len bytes) on the transmit queue behind a header, with
 * hdr's fields (zeros if NULL); the whole split into pieces descriptors
 * of about equal size (so a header may straddle several), in the ring or
 * through an indirect table. Returns the chain's head. */
static uint16_t drv_tx_hdr(struct rig *r, size_t len, unsigned int seq,
			   unsigned int pieces, bool indirect,
			   const struct virtio_net_hdr *hdr)
{
	static struct seg s[1024];
	size_t total = HDR_LEN + len;
	assert_true(pieces >= 1 && pieces <= 1024 && pieces <= total);
	uint64_t at = drv_alloc(r, total);
	memset(r->ram + at, 0, HDR_LEN);
	if (hdr)
		memcpy(r->ram + at, hdr, sizeof(*hdr));
	make_frame(r->ram + at + HDR_LEN, len, seq);
	size_t off = 0;
	for (unsigned int i = 0; i < pieces; i++) {
		size_t piece = total / pieces + (i < total % pieces);
		s[i] = (struct seg){at + off, (uint32_t)piece, 0};
		off += piece;
	}
	return drv_chain(r, TXQ, s, pieces, indirect);
}

static uint16_t drv_tx(struct rig *r, size_t len, unsigned int seq,
		       unsigned int pieces, bool indirect)
{
	return drv_tx_hdr(r, len, seq, pieces, indirect, NULL);
}

/* Checks that the transmit chains heads[0..nr) came back, each once (in
 * any order: a chain dropped goes back before the frames sent with it),
 * with nothing written, and takes them. */
static void drv_tx_done(struct rig *r, const uint16_t *heads, unsigned int nr)
{
	drv_wait_used(r, TXQ, (uint16_t)(r->used_seen[TXQ] + nr));
	bool back[QSIZE] = {false};
	for (unsigned int i = 0; i < nr; i++) {
		struct vring_used_elem e = drv_used(r, TXQ, r->used_seen[TXQ]++);
		assert_true(e.id < QSIZE && !back[e.id]);
		back[e.id] = true;
		assert_int_equal(e.len, 0);
	}
	for (unsigned int i = 0; i < nr; i++)
		assert_true(back[heads[i]]);
	r->tx_next = TX_AT;
}

/* Posts receive slot i: one writable 4 KiB buffer in descriptor i. */
static void drv_rx_post(struct rig *r, uint16_t slot)
{
	drv_desc(r, RXQ)[slot] = (struct vring_desc){
		.addr = RX_AT + (uint64_t)slot * RX_BUF, .len = RX_BUF,
		.flags = VRING_DESC_F_WRITE};
	drv_avail(r, RXQ, slot);
}

static void drv_rx_post_all(struct rig *r)
{
	for (uint16_t i = 0; i < QSIZE; i++)
		drv_rx_post(r, i);
	drv_publish(r, RXQ);
}

static bool drv_rx_ready(struct rig *r)
{
	return drv_used_idx(r, RXQ) != r->used_seen[RXQ];
}

/* Waits until n entries beyond those taken are in the receive used ring. */
static void drv_rx_wait(struct rig *r, uint16_t n)
{
	for (int ms = 0; ms < 5000; ms++) {
		if ((uint16_t)(drv_used_idx(r, RXQ) - r->used_seen[RXQ]) >= n)
			return;
		usleep(1000);
	}
	fail_msg("receive: %u entries, not %u",
		 (uint16_t)(drv_used_idx(r, RXQ) - r->used_seen[RXQ]), n);
}

/* Takes the next frame the device put in the receive slots, as a
 * mergeable driver does: its header in *hdr, its bytes in frame (room
 * for MAX_SLOTS slots). Every buffer but a frame's last is full. The
 * slots are posted again if repost. Returns the frame's length. */
static size_t drv_rx_take(struct rig *r, uint8_t *frame,
			  struct virtio_net_hdr_mrg_rxbuf *hdr, bool repost)
{
	drv_rx_wait(r, 1);
	struct vring_used_elem e = drv_used(r, RXQ, r->used_seen[RXQ]);
	assert_true(e.id < QSIZE);
	assert_in_range(e.len, HDR_LEN + ETH_HLEN, RX_BUF);
	memcpy(hdr, r->ram + RX_AT + (uint64_t)e.id * RX_BUF, HDR_LEN);
	uint16_t nb = hdr->num_buffers;
	assert_in_range(nb, 1, MAX_SLOTS);
	drv_rx_wait(r, nb);
	size_t len = 0;
	for (uint16_t k = 0; k < nb; k++) {
		e = drv_used(r, RXQ, (uint16_t)(r->used_seen[RXQ] + k));
		assert_true(e.id < QSIZE);
		if (k + 1 < nb)
			assert_int_equal(e.len, RX_BUF);
		else
			assert_in_range(e.len, k ? 1 : HDR_LEN + ETH_HLEN, RX_BUF);
		size_t skip = k ? 0 : HDR_LEN;
		memcpy(frame + len, r->ram + RX_AT + (uint64_t)e.id * RX_BUF + skip,
		       e.len - skip);
		len += e.len - skip;
		if (repost)
			drv_rx_post(r, (uint16_t)e.id);
	}
	r->used_seen[RXQ] = (uint16_t)(r->used_seen[RXQ] + nb);
	if (repost)
		drv_publish(r, RXQ);
	return len;
}

/* Takes the next frame and checks it is frame seq of len bytes, in
 * ceil((HDR_LEN + len) / RX_BUF) buffers, with a header of flags. */
static void drv_rx_expect(struct rig *r, size_t len, unsigned int seq,
			  uint8_t flags)
{
	static uint8_t got[MAX_SLOTS * RX_BUF];
	struct virtio_net_hdr_mrg_rxbuf hdr;
	size_t n = drv_rx_take(r, got, &hdr, true);
	check_frame(got, n, len, seq);
	assert_int_equal(hdr.num_buffers, (HDR_LEN + len + RX_BUF - 1) / RX_BUF);
	assert_int_equal(hdr.hdr.flags, flags);
	assert_int_equal(hdr.hdr.gso_type, VIRTIO_NET_HDR_GSO_NONE);
}

/* ---- passt's end ---- */

static void peer_read(struct rig *r, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		struct pollfd pfd = {.fd = r->peer, .events = POLLIN};
		if (poll(&pfd, 1, 5000) != 1)
			fail_msg("peer: %zu bytes still to come after 5 s", len);
		ssize_t got = read(r->peer, p, len);
		if (got < 0 && errno == EAGAIN)
			continue;
		assert_true(got > 0);
		p += got;
		len -= (size_t)got;
	}
}

/* The next frame on the stream, as passt parses it: a length it takes,
 * then that many bytes. */
static size_t peer_frame(struct rig *r, uint8_t *frame)
{
	uint32_t be;
	peer_read(r, &be, sizeof(be));
	uint32_t len = ntohl(be);
	assert_in_range(len, ETH_HLEN, VIRTIO_NET_MAX_FRAME);
	peer_read(r, frame, len);
	return len;
}

static void peer_expect(struct rig *r, size_t len, unsigned int seq)
{
	static uint8_t got[VIRTIO_NET_MAX_FRAME];
	check_frame(got, peer_frame(r, got), len, seq);
}

/* Nothing more comes from the device for 100 ms. */
static void peer_nothing(struct rig *r)
{
	struct pollfd pfd = {.fd = r->peer, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 100), 0);
}

static void peer_write(struct rig *r, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		struct pollfd pfd = {.fd = r->peer, .events = POLLOUT};
		if (poll(&pfd, 1, 5000) != 1)
			fail_msg("peer: the device took nothing for 5 s");
		ssize_t w = write(r->peer, p, len);
		if (w < 0 && errno == EAGAIN)
			continue;
		assert_true(w > 0);
		p += w;
		len -= (size_t)w;
	}
}

/* Frame seq of len bytes, after its length, as passt sends it. */
static size_t record(uint8_t *rec, size_t len, unsigned int seq)
{
	uint32_t be = htonl((uint32_t)len);
	memcpy(rec, &be, sizeof(be));
	make_frame(rec + sizeof(be), len, seq);
	return sizeof(be) + len;
}

static void peer_send(struct rig *r, size_t len, unsigned int seq)
{
	static uint8_t rec[4 + VIRTIO_NET_MAX_FRAME];
	peer_write(r, rec, record(rec, len, seq));
}

/* The bytes the device wrote that the peer has not read. */
static int peer_queued(struct rig *r)
{
	int n;
	assert_int_equal(ioctl(r->peer, SIOCINQ, &n), 0);
	return n;
}

/* Waits until the device has stopped writing to a peer that reads
 * nothing (what the peer holds stays the same for 100 ms). Returns it. */
static int peer_wait_full(struct rig *r)
{
	int was = -1, now = peer_queued(r);
	for (int ms = 0; ms < 5000 && (now <= 0 || now != was); ms += 100) {
		usleep(100 * 1000);
		was = now;
		now = peer_queued(r);
	}
	if (now <= 0 || now != was)
		fail_msg("the device still writes after 5 s (%d bytes)", now);
	return now;
}

/* ---- fixtures ---- */

static int setup(void **state)
{
	static struct rig r;
	memset(&r, 0, sizeof(r));
	r.cfg = *state;
	r.peer = -1;
	r.ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r.ram != MAP_FAILED);
	assert_int_equal(guest_mem_add(&r.mem, 0, RAM_SIZE, r.ram), 0);
	stream_open(&r);
	*state = &r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;
	device_close(r);
	return munmap(r->ram, RAM_SIZE);
}

/* ---- transmit ---- */

/* Frames in one descriptor, split across several (a header over three),
 * and through indirect tables, the largest passt takes among them: the
 * peer reads each as its length and the frame, in order; every chain
 * comes back and an interrupt says so; the counters add up. A burst of
 * 100 frames goes out in order too, and so do frames of 600 descriptors
 * each. */
static void test_tx_frames_in_order(void **state)
{
	struct rig *r = *state;
	static const struct {
		size_t len;
		unsigned int pieces;
		bool indirect;
	} f[] = {
		{60, 1, false},	      {1514, 1, false},    {BIG_FRAME, 1, false},
		{ETH_HLEN, 1, false}, {ETH_HLEN, 5, false}, {1514, 3, false},
		{9000, 7, true},      {BIG_FRAME, 17, false}, {BIG_FRAME, 64, true},
		{300, 2, true},	      {70, 82, true},
	};
	const unsigned int nr = sizeof(f) / sizeof(f[0]);
	uint16_t heads[100];
	uint64_t bytes = 0;
	for (unsigned int i = 0; i < nr; i++) {
		heads[i] = drv_tx(r, f[i].len, i, f[i].pieces, f[i].indirect);
		bytes += f[i].len;
	}
	drv_publish(r, TXQ);
	for (unsigned int i = 0; i < nr; i++)
		peer_expect(r, f[i].len, i);
	drv_tx_done(r, heads, nr);
	uint64_t calls;
	assert_int_equal(read(r->queues[TXQ].call_fd, &calls, sizeof(calls)),
			 sizeof(calls));
	assert_int_equal(count(r, NET_TX_FRAMES), nr);
	assert_int_equal(count(r, NET_TX_BYTES), bytes);

	for (unsigned int i = 0; i < 100; i++) {
		heads[i] = drv_tx(r, ETH_HLEN + i * 15, 100 + i, 1 + i % 3, i % 2);
		bytes += ETH_HLEN + i * 15;
	}
	drv_publish(r, TXQ);
	for (unsigned int i = 0; i < 100; i++)
		peer_expect(r, ETH_HLEN + i * 15, 100 + i);
	drv_tx_done(r, heads, 100);

	for (unsigned int i = 0; i < 3; i++)
		heads[i] = drv_tx(r, 1188, 200 + i, 600, true);
	drv_publish(r, TXQ);
	for (unsigned int i = 0; i < 3; i++)
		peer_expect(r, 1188, 200 + i);
	drv_tx_done(r, heads, 3);
	assert_int_equal(count(r, NET_TX_FRAMES), nr + 103);
	assert_int_equal(count(r, NET_TX_BYTES), bytes + 3 * 1188);
	assert_int_equal(count(r, NET_TX_DROP_BAD_CHAIN), 0);
	peer_nothing(r);
}

/* Chains that are no frame, among frames that are: each comes back
 * unwritten and counted by why, in order with the frames, and only the
 * frames reach the peer. */
static void test_tx_hostile_chains(void **state)
{
	struct rig *r = *state;
	uint16_t heads[16];
	unsigned int nr = 0;
	heads[nr++] = drv_tx(r, ETH_HLEN - 1, 0, 1, false); /* a runt */
	heads[nr++] = drv_tx(r, 0, 0, 1, false);	    /* a header alone */
	uint64_t at = drv_alloc(r, 64);
	struct seg empty = {at, 0, 0}; /* a zero-length descriptor only */
	heads[nr++] = drv_chain(r, TXQ, &empty, 1, false);
	struct seg empties[3] = {{at, 0, 0}, {at, 0, 0}, {at, 0, 0}};
	heads[nr++] = drv_chain(r, TXQ, empties, 3, true);
	heads[nr++] = drv_tx(r, 1519, 0, 2, false);	/* past MTU + 18 */
	heads[nr++] = drv_tx(r, 1518, 1, 1, false);	/* the largest */
	at = drv_alloc(r, HDR_LEN + 60);
	memset(r->ram + at, 0, HDR_LEN + 60);
	struct seg writable[2] = {{at, HDR_LEN + 60, 0},
				  {at, 64, VRING_DESC_F_WRITE}};
	heads[nr++] = drv_chain(r, TXQ, writable, 2, false);
	struct seg outside[2] = {{at, HDR_LEN, 0}, {RAM_SIZE + 0x10000, 60, 0}};
	heads[nr++] = drv_chain(r, TXQ, outside, 2, false);
	struct seg across_end = {RAM_SIZE - 30, HDR_LEN + 60, 0};
	heads[nr++] = drv_chain(r, TXQ, &across_end, 1, true);
	heads[nr++] = drv_tx(r, 60, 2, 1, false);
	drv_publish(r, TXQ);
	peer_expect(r, 1518, 1);
	peer_expect(r, 60, 2);
	drv_tx_done(r, heads, nr);
	peer_nothing(r);
	assert_int_equal(count(r, NET_TX_DROP_RUNT), 4);
	assert_int_equal(count(r, NET_TX_DROP_OVERSIZED), 1);
	assert_int_equal(count(r, NET_TX_DROP_BAD_CHAIN), 3);
	assert_int_equal(count(r, NET_TX_FRAMES), 2);
	assert_int_equal(count(r, NET_TX_BYTES), 1518 + 60);
	assert_int_equal(count(r, NET_RING_ERRORS), 0);
}

/* Posts a malformed chain of kind k on queue q. */
static void drv_malformed(struct rig *r, unsigned int q, int k)
{
	struct vring_desc *d = drv_desc(r, q);
	uint64_t at = drv_alloc(r, 4 * sizeof(struct vring_desc) + 64);
	uint16_t a = r->next_desc[q]++ % QSIZE, b = r->next_desc[q]++ % QSIZE;
	uint16_t flags = q == RXQ ? VRING_DESC_F_WRITE : 0;
	struct vring_desc *t = (void *)(r->ram + at);
	switch (k) {
	case 0: /* a loop */
		d[a] = (struct vring_desc){at, 32, VRING_DESC_F_NEXT | flags, b};
		d[b] = (struct vring_desc){at, 32, VRING_DESC_F_NEXT | flags, a};
		break;
	case 1: /* a loop in an indirect table */
		t[0] = (struct vring_desc){at, 32, VRING_DESC_F_NEXT | flags, 1};
		t[1] = (struct vring_desc){at, 32, VRING_DESC_F_NEXT | flags, 0};
		d[a] = (struct vring_desc){at, 2 * sizeof(*t), VRING_DESC_F_INDIRECT, 0};
		break;
	case 2: /* a device-readable buffer after a writable one */
		d[a] = (struct vring_desc){at, 32, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, b};
		d[b] = (struct vring_desc){at, 32, 0, 0};
		break;
	case 3: /* a next past the table */
		d[a] = (struct vring_desc){at, 32, VRING_DESC_F_NEXT | flags, QSIZE + 7};
		break;
	case 4: /* an indirect table in an indirect table */
		t[0] = (struct vring_desc){at, 2 * sizeof(*t), VRING_DESC_F_INDIRECT, 0};
		d[a] = (struct vring_desc){at, 2 * sizeof(*t), VRING_DESC_F_INDIRECT, 0};
		break;
	case 5: /* a head past the table */
		drv_avail(r, q, QSIZE + 1);
		return;
	}
	drv_avail(r, q, a);
}

/* A malformed chain between two frames: the frame before it goes out,
 * the ring is counted broken once and left alone (the frame after it
 * never goes, more kicks do nothing, the thread waits); a reset stops the
 * thread, and the device starts again as new. So for an index that
 * claims more chains than the ring has. */
static void test_tx_ring_errors(void **state)
{
	struct rig *r = *state;
	for (int k = 0; k <= 6; k++) {
		uint64_t errors = count(r, NET_RING_ERRORS);
		if (k < 6) {
			drv_tx(r, 60, 1, 1, false);
			drv_malformed(r, TXQ, k);
			drv_tx(r, 60, 2, 1, false);
			drv_publish(r, TXQ);
			peer_expect(r, 60, 1);
		} else {
			drv_tx(r, 60, 1, 1, false);
			drv_publish_more(r, TXQ, QSIZE);
		}
		wait_count(r, NET_RING_ERRORS, errors + 1);
		drv_publish(r, TXQ);
		peer_nothing(r);
		if (k == 0) /* each kind stops the queue the same way */
			assert_device_idle(r);
		assert_int_equal(count(r, NET_RING_ERRORS), errors + 1);
		stop(r);
		start(r);
		uint16_t head = drv_tx(r, 1514, 3, 2, true);
		drv_publish(r, TXQ);
		peer_expect(r, 1514, 3);
		drv_tx_done(r, &head, 1);
	}
}

/* The guest resets the device while passt, reading nothing, holds part
 * of a frame (Linux takes a stream's write in parts of about 36 KiB, so
 * the socket may fill in the middle of a 64 KiB frame): passt must still
 * find each frame's length where it looks for one. The rest of the cut
 * frame is owed and paid (its bytes as zeros, which passt drops), then
 * the frames of the new rings follow. */
static void test_reset_cuts_a_tx_frame(void **state)
{
	struct rig *r = *state;
	/* Where the socket fills depends on the frames' size: the first of
	 * these that it cuts. */
	static const size_t lens[] = {BIG_FRAME, 50000, 40000, 60000};
	static uint8_t frame[VIRTIO_NET_MAX_FRAME], want[VIRTIO_NET_MAX_FRAME];
	for (unsigned int s = 0; s < sizeof(lens) / sizeof(lens[0]); s++) {
		size_t len = lens[s];
		uint16_t heads[32];
		for (unsigned int i = 0; i < 32; i++)
			heads[i] = drv_tx(r, len, i, 1, false);
		drv_publish(r, TXQ);
		size_t got = (size_t)peer_wait_full(r);
		unsigned int whole = (unsigned int)(got / (4 + len));
		size_t sent = got % (4 + len); /* of the frame cut */
		/* The frames wholly written came back, and no other. */
		drv_tx_done(r, heads, whole);
		assert_int_equal(drv_used_idx(r, TXQ), whole);
		if (!sent) {
			reopen(r);
			continue;
		}
		stop(r);
		start(r);
		uint16_t head = drv_tx(r, 60, 999, 1, false);
		drv_publish(r, TXQ);
		for (unsigned int i = 0; i < whole; i++)
			peer_expect(r, len, i);
		assert_int_equal(peer_frame(r, frame), len);
		size_t kept = sent > 4 ? sent - 4 : 0;
		make_frame(want, len, whole);
		memset(want + kept, 0, len - kept);
		assert_memory_equal(frame, want, len);
		peer_expect(r, 60, 999);
		drv_tx_done(r, &head, 1);
		peer_nothing(r);
		return;
	}
	fail_msg("the socket cut no frame of these sizes");
}

/* ---- receive ---- */

/* Frames from passt in 4 KiB mergeable buffers: each in as many as it
 * needs (a 64 KiB frame in 17), every buffer but its last full, the
 * header's num_buffers saying how many and its frames checksummed; a
 * frame too big for the MTU is dropped and the next one comes; a peer
 * that writes a frame a few bytes at a time is read as well. */
static void test_rx_mergeable(void **state)
{
	struct rig *r = *state;
	static const size_t lens[] = {60,   1514, 4096 - HDR_LEN, 4097 - HDR_LEN,
				      BIG_FRAME, 65536, ETH_HLEN, 8000};
	const unsigned int nr = sizeof(lens) / sizeof(lens[0]);
	drv_rx_post_all(r);
	uint64_t bytes = 0;
	for (unsigned int i = 0; i < nr; i++) {
		peer_send(r, lens[i], i);
		bytes += lens[i];
	}
	for (unsigned int i = 0; i < nr; i++)
		drv_rx_expect(r, lens[i], i, VIRTIO_NET_HDR_F_DATA_VALID);
	assert_int_equal(count(r, NET_RX_FRAMES), nr);
	assert_int_equal(count(r, NET_RX_BYTES), bytes);

	peer_send(r, VIRTIO_NET_MAX_FRAME, 50); /* past passt's MTU */
	peer_send(r, 100, 51);
	drv_rx_expect(r, 100, 51, VIRTIO_NET_HDR_F_DATA_VALID);
	assert_int_equal(count(r, NET_RX_DROP_NO_ROOM), 1);

	static uint8_t rec[4 + 3000];
	size_t len = record(rec, 3000, 52);
	static const size_t cuts[] = {1, 2, 3, 4, 5, 1000, 2999, 3004};
	size_t from = 0;
	for (unsigned int i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		peer_write(r, rec + from, cuts[i] - from);
		from = cuts[i];
		usleep(10 * 1000);
		assert_true(drv_rx_ready(r) == (from == len));
	}
	assert_int_equal(from, len);
	drv_rx_expect(r, 3000, 52, VIRTIO_NET_HDR_F_DATA_VALID);
	assert_int_equal(count(r, NET_BACKEND_ERRORS), 0);
}

/* Posts a receive chain of a 12-byte header buffer and room bytes after
 * it, at slot i of the chains' area. */
static uint16_t drv_rx_chain(struct rig *r, unsigned int i, uint32_t room)
{
	uint64_t at = CHAINS_AT + (uint64_t)i * 0x10000;
	struct seg s[2] = {{at, HDR_LEN, VRING_DESC_F_WRITE},
			   {at + HDR_LEN, room, VRING_DESC_F_WRITE}};
	return drv_chain(r, RXQ, s, 2, false);
}

/* Takes the next receive chain, which holds one frame in chain i. */
static size_t drv_rx_chain_take(struct rig *r, uint16_t head, unsigned int i,
				uint8_t *frame)
{
	drv_rx_wait(r, 1);
	struct vring_used_elem e = drv_used(r, RXQ, r->used_seen[RXQ]++);
	assert_int_equal(e.id, head);
	assert_true(e.len >= HDR_LEN && e.len <= HDR_LEN + 0x10000);
	uint8_t *at = r->ram + CHAINS_AT + (uint64_t)i * 0x10000;
	struct virtio_net_hdr_mrg_rxbuf hdr;
	memcpy(&hdr, at, HDR_LEN);
	assert_int_equal(hdr.num_buffers, 1);
	assert_int_equal(hdr.hdr.flags, 0);
	memcpy(frame, at + HDR_LEN, e.len - HDR_LEN);
	return e.len - HDR_LEN;
}

/* Without mergeable buffers each frame takes one chain (here a header
 * buffer and the frame's): the largest the MTU allows fits, a larger one
 * is dropped. A chain too small for a frame drops that frame and is kept
 * for the next one that fits. */
static void test_rx_one_chain_a_frame(void **state)
{
	struct rig *r = *state;
	static uint8_t got[0x10000];
	uint16_t heads[4];
	for (unsigned int i = 0; i < 3; i++)
		heads[i] = drv_rx_chain(r, i, 1518);
	drv_publish(r, RXQ);
	peer_send(r, 60, 0);
	peer_send(r, 1518, 1);
	peer_send(r, 1519, 2);
	peer_send(r, 100, 3);
	check_frame(got, drv_rx_chain_take(r, heads[0], 0, got), 60, 0);
	check_frame(got, drv_rx_chain_take(r, heads[1], 1, got), 1518, 1);
	check_frame(got, drv_rx_chain_take(r, heads[2], 2, got), 100, 3);
	assert_int_equal(count(r, NET_RX_DROP_NO_ROOM), 1);

	heads[3] = drv_rx_chain(r, 3, 100);
	drv_publish(r, RXQ);
	peer_send(r, 200, 4);
	peer_send(r, 50, 5);
	check_frame(got, drv_rx_chain_take(r, heads[3], 3, got), 50, 5);
	assert_int_equal(count(r, NET_RX_DROP_NO_ROOM), 2);
	assert_int_equal(count(r, NET_RX_FRAMES), 4);
}

/* Receive chains the device cannot fill (read-only, outside RAM, too
 * small for a header) come back empty, counted, ahead of the frame they
 * were taken for, which lands in the good buffers, even one that spans
 * two with a bad chain between. */
static void test_rx_hostile_chains(void **state)
{
	struct rig *r = *state;
	static uint8_t got[MAX_SLOTS * RX_BUF];
	struct seg bad[5][2] = {
		{{CHAINS_AT, 64, 0}},
		{{RAM_SIZE + 0x1000, 4096, VRING_DESC_F_WRITE}},
		{{CHAINS_AT, 8, VRING_DESC_F_WRITE}},
		{{CHAINS_AT, 64, 0}, {CHAINS_AT + 64, 4096, VRING_DESC_F_WRITE}},
		{{RAM_SIZE - 100, 4096, VRING_DESC_F_WRITE}},
	};
	static const unsigned int segs[5] = {1, 1, 1, 2, 1};
	uint16_t heads[5];
	r->next_desc[RXQ] = 16; /* after the slots used below */
	for (unsigned int i = 0; i < 5; i++)
		heads[i] = drv_chain(r, RXQ, bad[i], segs[i], i == 3);
	drv_rx_post(r, 0);
	drv_publish(r, RXQ);
	peer_send(r, 100, 0);
	drv_rx_wait(r, 6);
	for (unsigned int i = 0; i < 5; i++) {
		struct vring_used_elem e = drv_used(r, RXQ, r->used_seen[RXQ]++);
		assert_int_equal(e.id, heads[i]);
		assert_int_equal(e.len, 0);
	}
	struct virtio_net_hdr_mrg_rxbuf hdr;
	check_frame(got, drv_rx_take(r, got, &hdr, false), 100, 0);
	assert_int_equal(hdr.num_buffers, 1);
	assert_int_equal(count(r, NET_RX_DROP_BAD_CHAIN), 5);

	drv_rx_post(r, 1);
	uint16_t between = drv_chain(r, RXQ, bad[0], 1, false);
	drv_rx_post(r, 2);
	drv_publish(r, RXQ);
	peer_send(r, 6000, 1);
	drv_rx_wait(r, 3);
	struct vring_used_elem e = drv_used(r, RXQ, r->used_seen[RXQ]++);
	assert_int_equal(e.id, between);
	assert_int_equal(e.len, 0);
	check_frame(got, drv_rx_take(r, got, &hdr, false), 6000, 1);
	assert_int_equal(hdr.num_buffers, 2);
	assert_int_equal(count(r, NET_RX_DROP_BAD_CHAIN), 6);
	assert_int_equal(count(r, NET_RING_ERRORS), 0);
}

/* A malformed receive chain stops the receive queue alone: the frame
 * waits in the socket, the thread waits, and frames still go out. After
 * a reset the frames that follow arrive. */
static void test_rx_ring_errors(void **state)
{
	struct rig *r = *state;
	for (int k = 0; k <= 5; k++) {
		uint64_t errors = count(r, NET_RING_ERRORS);
		r->next_desc[RXQ] = 16;
		drv_malformed(r, RXQ, k);
		drv_publish(r, RXQ);
		peer_send(r, 60, 0);
		wait_count(r, NET_RING_ERRORS, errors + 1);
		drv_publish(r, RXQ);
		if (k == 0) /* each kind stops the queue the same way */
			assert_device_idle(r);
		assert_int_equal(drv_used_idx(r, RXQ), 0);
		uint16_t head = drv_tx(r, 60, 1, 1, false);
		drv_publish(r, TXQ);
		peer_expect(r, 60, 1);
		drv_tx_done(r, &head, 1);
		assert_int_equal(count(r, NET_RING_ERRORS), errors + 1);
		stop(r);
		start(r);
		drv_rx_post_all(r);
		peer_send(r, 70, 2);
		/* The frame whose length was read for the old rings is read
		 * and dropped: the next one comes whole. */
		drv_rx_expect(r, 70, 2, VIRTIO_NET_HDR_F_DATA_VALID);
		assert_int_equal(count(r, NET_RX_FRAMES), 1);
		reopen(r);
	}
}

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &pages, &resident), 2);
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A guest that posts no receive buffers while passt sends: the device
 * stops reading, so passt's writes meet EAGAIN and nothing piles up in
 * fsvm, and its thread waits. Once the guest posts buffers every frame
 * comes, in order and whole. */
static void test_rx_no_buffers_pushes_back(void **state)
{
	struct rig *r = *state;
	enum { LEN = 1514, CAP = 64 << 20 };
	static uint8_t rec[4 + LEN], got[MAX_SLOTS * RX_BUF];
	long rss = rss_kib();
	unsigned int frames = 0;
	size_t part = 0, total = 0;
	for (;;) {
		if (!part)
			record(rec, LEN, frames);
		ssize_t w = write(r->peer, rec + part, sizeof(rec) - part);
		if (w < 0) {
			assert_int_equal(errno, EAGAIN);
			break;
		}
		total += (size_t)w;
		part += (size_t)w;
		if (part == sizeof(rec)) {
			part = 0;
			frames++;
		}
		if (total > CAP)
			fail_msg("passt wrote %zu bytes to a guest with no buffers",
				 total);
	}
	assert_true(frames > 0);
	assert_device_idle(r);
	assert_true(rss_kib() - rss < 4096);
	assert_int_equal(drv_used_idx(r, RXQ), 0);
	assert_int_equal(count(r, NET_RX_DROP_NO_ROOM), 0);

	unsigned int want = frames + (part ? 1 : 0), seen = 0;
	drv_rx_post_all(r);
	for (int ms = 0; seen < want && ms < 10000;) {
		if (part) {
			ssize_t w = write(r->peer, rec + part, sizeof(rec) - part);
			assert_true(w > 0 || errno == EAGAIN);
			if (w > 0 && (part += (size_t)w) == sizeof(rec))
				part = 0;
		}
		if (drv_rx_ready(r)) {
			struct virtio_net_hdr_mrg_rxbuf hdr;
			check_frame(got, drv_rx_take(r, got, &hdr, true), LEN, seen++);
		} else {
			usleep(1000);
			ms++;
		}
	}
	assert_int_equal(seen, want);
	assert_int_equal(count(r, NET_RX_FRAMES), want);
	assert_int_equal(count(r, NET_RX_DROP_NO_ROOM), 0);
}

/* A peer that sends a length no frame has: the backend is counted
 * failed, nothing reaches the guest, the thread waits, and the guest's
 * frames are taken and dropped so its queue never sticks. */
static void test_rx_impossible_lengths(void **state)
{
	struct rig *r = *state;
	static const uint32_t lens[] = {0, ETH_HLEN - 1, VIRTIO_NET_MAX_FRAME + 1,
					0xffffffff};
	static uint8_t junk[64];
	for (unsigned int i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		drv_rx_post_all(r);
		uint32_t be = htonl(lens[i]);
		peer_write(r, &be, sizeof(be));
		peer_write(r, junk, sizeof(junk));
		wait_count(r, NET_BACKEND_ERRORS, 1);
		assert_device_idle(r);
		assert_int_equal(drv_used_idx(r, RXQ), 0);
		uint16_t head = drv_tx(r, 60, 0, 1, false);
		drv_publish(r, TXQ);
		drv_tx_done(r, &head, 1);
		peer_nothing(r);
		assert_int_equal(count(r, NET_BACKEND_ERRORS), 1);
		reopen(r);
	}
}

/* passt closes its end while the device reads, while the guest has no
 * buffers (the device holds a frame's length), and while frames wait to
 * go out: what passt sent before comes, the backend is counted failed,
 * the guest's frames come back, and the thread waits, never spins. */
static void test_peer_closes(void **state)
{
	struct rig *r = *state;
	static uint8_t got[MAX_SLOTS * RX_BUF];
	struct virtio_net_hdr_mrg_rxbuf hdr;

	drv_rx_post_all(r);
	peer_send(r, 60, 0);
	peer_send(r, 5000, 1);
	close(r->peer);
	r->peer = -1;
	drv_rx_expect(r, 60, 0, VIRTIO_NET_HDR_F_DATA_VALID);
	drv_rx_expect(r, 5000, 1, VIRTIO_NET_HDR_F_DATA_VALID);
	wait_count(r, NET_BACKEND_ERRORS, 1);
	assert_device_idle(r);
	uint16_t head = drv_tx(r, 60, 2, 1, false);
	drv_publish(r, TXQ);
	drv_tx_done(r, &head, 1);

	reopen(r);
	for (unsigned int i = 0; i < 3; i++)
		peer_send(r, 1514, i);
	close(r->peer);
	r->peer = -1;
	usleep(50 * 1000);
	assert_device_idle(r);
	drv_rx_post_all(r);
	for (unsigned int i = 0; i < 3; i++)
		check_frame(got, drv_rx_take(r, got, &hdr, true), 1514, i);
	wait_count(r, NET_BACKEND_ERRORS, 1);
	assert_device_idle(r);

	reopen(r);
	uint16_t heads[32];
	for (unsigned int i = 0; i < 32; i++)
		heads[i] = drv_tx(r, BIG_FRAME, i, 1, false);
	drv_publish(r, TXQ);
	peer_wait_full(r);
	close(r->peer);
	r->peer = -1;
	drv_tx_done(r, heads, 32);
	wait_count(r, NET_BACKEND_ERRORS, 1);
	assert_device_idle(r);
}

/* ---- tap ---- */


/* A tap needs TUNSETOFFLOAD: a descriptor that is none (a seqpacket
 * socket takes one frame a read or write as a tap does, but no tap
 * ioctl) fails the start, and nothing runs. */
static void test_tap_start_needs_a_tap(void **state)
{
	struct rig *r = *state;
	device_close(r);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv),
			 0);
	r->peer = sv[1];
	device_open(r, sv[0], VIRTIO_NET_FRAMING_TAP);
	for (unsigned int q = 0; q < 2; q++) {
		r->queues[q] = (struct virtio_queue){.kick_fd = -1, .call_fd = -1};
		assert_int_equal(split_ring_init(&r->queues[q].ring, &r->mem, QSIZE,
						 RING_AT(q, 0), RING_AT(q, 1),
						 RING_AT(q, 2), false, true),
				 0);
	}
	assert_true(r->n.dev.activate(r->n.dev.opaque, r->queues, 2,
				      1ULL << VIRTIO_F_VERSION_1) < 0);
	assert_false(r->n.running);
	r->n.dev.reset(r->n.dev.opaque); /* a reset of a device not started */
}

struct tap_env {
	int tap, pkt;
	const char *failed;
	int err;
};

#define TAP_NAME "fsvmnet0"

/* Makes a tap in a network namespace of its own (as root), up, with no
 * IPv6 (whose solicitations would be frames nobody sent), and a packet
 * socket on it for the test's frames: the host's side. On a thread of its
 * own, because a network namespace is a thread's: the namespace lasts
 * while the descriptors do. */
static void *tap_env_make(void *arg)
{
	struct tap_env *e = arg;
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), TAP_NAME);
	int hdr = HDR_LEN, s = -1;
	e->failed = "unshare(CLONE_NEWNET)";
	if (unshare(CLONE_NEWNET) < 0)
		goto out;
	e->failed = "/dev/net/tun";
	e->tap = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (e->tap < 0 || ioctl(e->tap, TUNSETIFF, &ifr) < 0 ||
	    ioctl(e->tap, TUNSETVNETHDRSZ, &hdr) < 0)
		goto out;
	FILE *f = fopen("/proc/sys/net/ipv6/conf/" TAP_NAME "/disable_ipv6", "w");
	if (f) { /* none: a kernel without IPv6, nothing to quiet */
		fputs("1", f);
		fclose(f);
	}
	e->failed = "bringing " TAP_NAME " up";
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		goto out;
	ifr.ifr_flags |= IFF_UP | IFF_NOARP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		goto out;
	e->failed = "a packet socket on " TAP_NAME;
	e->pkt = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
			htons(ETH_TYPE));
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_TYPE),
				  .sll_ifindex = (int)if_nametoindex(TAP_NAME)};
	if (e->pkt < 0 || bind(e->pkt, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		goto out;
	e->failed = NULL;
out:
	e->err = errno;
	if (s >= 0)
		close(s);
	return NULL;
}

/* The next frame the tap's host side received (5 s at most). */
static size_t tap_recv(struct rig *r, uint8_t *frame, size_t room)
{
	struct pollfd pfd = {.fd = r->peer, .events = POLLIN};
	if (poll(&pfd, 1, 5000) != 1)
		fail_msg("no frame out of the tap in 5 s");
	ssize_t got = recv(r->peer, frame, room, 0);
	assert_true(got > 0);
	return (size_t)got;
}

/* A real tap: the guest's frames go out with their headers (one the tap
 * refuses, a GSO type that is none, is dropped and counted, the frames
 * after it go), and the host's frames come in with the tap's header and
 * the device's buffer count. */
static void test_tap_frames_both_ways(void **state)
{
	struct rig *r = *state;
	NEEDS_ROOT();
	device_close(r);
	struct tap_env e = {.tap = -1, .pkt = -1};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, tap_env_make, &e), 0);
	pthread_join(t, NULL);
	if (e.failed) {
		if (e.tap >= 0)
			close(e.tap);
		if (e.pkt >= 0)
			close(e.pkt);
		fail_msg("tap: %s: %s", e.failed, strerror(e.err));
	}
	r->peer = e.pkt;
	device_open(r, e.tap, VIRTIO_NET_FRAMING_TAP);
	start(r);

	static uint8_t got[MAX_SLOTS * RX_BUF];
	static const size_t lens[] = {60, 1514, 1518};
	struct virtio_net_hdr bad = {.gso_type = 0x77, .hdr_len = 14, .gso_size = 100};
	uint16_t heads[4];
	heads[0] = drv_tx(r, lens[0], 0, 1, false);
	heads[1] = drv_tx_hdr(r, 1000, 9, 2, false, &bad);
	heads[2] = drv_tx(r, lens[1], 1, 3, true);
	heads[3] = drv_tx(r, lens[2], 2, 1, false);
	drv_publish(r, TXQ);
	check_frame(got, tap_recv(r, got, sizeof(got)), lens[0], 0);
	check_frame(got, tap_recv(r, got, sizeof(got)), lens[1], 1);
	check_frame(got, tap_recv(r, got, sizeof(got)), lens[2], 2);
	drv_tx_done(r, heads, 4);
	assert_int_equal(count(r, NET_TX_DROP_BACKEND), 1);

	/* The host sends no more than its MTU allows (no VLAN header). */
	static const size_t in[] = {60, 1514, 1000};
	drv_rx_post_all(r);
	for (unsigned int i = 0; i < 3; i++) {
		make_frame(got, in[i], 10 + i);
		assert_int_equal(send(r->peer, got, in[i], 0), (ssize_t)in[i]);
	}
	for (unsigned int i = 0; i < 3; i++)
		drv_rx_expect(r, in[i], 10 + i, 0);
	assert_int_equal(count(r, NET_RX_FRAMES), 3);
	assert_int_equal(count(r, NET_BACKEND_ERRORS), 0);
}

int main(void)
{
	/* As fsvm (vmm/run.c): a write to a closed peer fails, not kills. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_tx_frames_in_order,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_tx_hostile_chains,
							 setup, teardown, (void *)&small),
		cmocka_unit_test_prestate_setup_teardown(test_tx_ring_errors,
							 setup, teardown, (void *)&small),
		cmocka_unit_test_prestate_setup_teardown(test_reset_cuts_a_tx_frame,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_rx_mergeable,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_rx_one_chain_a_frame,
							 setup, teardown, (void *)&small),
		cmocka_unit_test_prestate_setup_teardown(test_rx_hostile_chains,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_rx_ring_errors,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_rx_no_buffers_pushes_back,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_rx_impossible_lengths,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_peer_closes,
							 setup, teardown, (void *)&big),
		cmocka_unit_test_prestate_setup_teardown(test_tap_start_needs_a_tap,
							 setup, teardown, (void *)&tap_cfg),
		cmocka_unit_test_prestate_setup_teardown(test_tap_frames_both_ways,
							 setup, teardown, (void *)&tap_cfg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
