/* The virtio-net device: one receive and one transmit queue, served by one
 * thread of its own between DRIVER_OK and reset, which moves frames
 * between the guest's buffers and the backend's descriptor with readv and
 * writev on guest memory: no frame is copied in fsvm. The guest is
 * hostile: every chain is checked, frames over the negotiated size are
 * dropped and counted, and a guest that posts no receive buffers only
 * stops its own traffic (the thread stops reading the backend, whose
 * socket or tap queue then pushes back). */
#include "devices/virtio_net.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_tun.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/log.h"
#include "devices/device.h"
#include "fs/iov.h"

#define RXQ 0
#define TXQ 1
#define HDR_LEN sizeof(struct virtio_net_hdr_mrg_rxbuf) /* VERSION_1 */
#define PREFIX_LEN 4 /* a stream frame's length */
#define NET_IOV_MAX 1024 /* the kernel's UIO_MAXIOV */
/* Receive chains one frame may fill: a 64 KiB frame in the guest's
 * smallest mergeable buffers (1.5 KiB) takes 44. */
#define RX_MAX_CHAINS 64
/* Frames sent in one writev: one. passt reads its socket assuming every
 * frame arrives whole (a frame it reads only part of it waits for once,
 * and the last bytes of a read shorter than a length it drops), and
 * the kernel queues a stream write in buffers of about 72 KiB: a frame
 * written alone goes in one, whole or not at all, while a batch is cut
 * anywhere. Measured: 32 a writev lost passt's framing within 40 MB of
 * an upload (the connection reset); one a writev, as QEMU writes, never. */
#define TX_BATCH 1

/* The frame being received: the chains that hold it and where in them. */
struct net_rx {
	uint8_t prefix[PREFIX_LEN]; /* stream: the next frame's length */
	unsigned int prefix_got;
	uint32_t frame_len; /* stream: 0 while reading a prefix */
	size_t frame_got;
	bool discarding; /* no room for it anywhere: read and drop it */
	/* The receive chains taken and not yet filled. */
	unsigned int nr_chains;
	uint16_t heads[RX_MAX_CHAINS];
	size_t room[RX_MAX_CHAINS]; /* each chain's writable bytes */
	int chain_iovs[RX_MAX_CHAINS]; /* and buffers */
	struct iovec iov[NET_IOV_MAX]; /* their writable buffers, in order */
	int nr_iov;
	struct iovec view[NET_IOV_MAX + 1];
	struct desc_chain chain; /* scratch for split_ring_pop */
};

/* Frames taken from the transmit queue and not yet all written. */
struct net_tx {
	unsigned int nr, done; /* frames in the batch, frames pushed */
	uint16_t heads[TX_BATCH];
	size_t ends[TX_BATCH]; /* where each frame ends in the batch's bytes */
	uint32_t prefixes[TX_BATCH];
	struct iovec iov[NET_IOV_MAX];
	int nr_iov, first_iov; /* first_iov: the next not fully written */
	size_t sent;
	struct desc_chain chain;
};

static const char *const counter_names[NET_NR_COUNTERS] = {
	[NET_RX_FRAMES] = "rx_frames",
	[NET_RX_BYTES] = "rx_bytes",
	[NET_TX_FRAMES] = "tx_frames",
	[NET_TX_BYTES] = "tx_bytes",
	[NET_RX_DROP_NO_ROOM] = "rx_dropped_no_room",
	[NET_RX_DROP_BAD_CHAIN] = "rx_dropped_bad_chain",
	[NET_TX_DROP_RUNT] = "tx_dropped_runt",
	[NET_TX_DROP_OVERSIZED] = "tx_dropped_oversized",
	[NET_TX_DROP_BAD_CHAIN] = "tx_dropped_bad_chain",
	[NET_TX_DROP_BACKEND] = "tx_dropped_by_backend",
	[NET_RING_ERRORS] = "ring_errors",
	[NET_BACKEND_ERRORS] = "backend_errors",
};

const char *virtio_net_counter_name(enum virtio_net_counter c)
{
	return c < NET_NR_COUNTERS ? counter_names[c] : NULL;
}

static void count(struct virtio_net *n, enum virtio_net_counter c,
		  uint64_t v)
{
	atomic_fetch_add_explicit(&n->counts[c], v, memory_order_relaxed);
}

/* A malformed ring: the queue is left alone until the driver resets the
 * device (its ring size 0 stops every walk below). */
static void ring_broken(struct virtio_net *n, struct virtio_queue *q,
			const char *which, int err)
{
	log_error("virtio-net: %s queue: bad descriptor chain (%s); queue stopped",
		  which, strerror(-err));
	count(n, NET_RING_ERRORS, 1);
	q->ring.size = 0;
}

static void backend_failed(struct virtio_net *n, const char *what, int err)
{
	if (!n->backend_dead)
		log_error("virtio-net: backend %s%s%s; the guest's network is down",
			  what, err ? ": " : "", err ? strerror(err) : "");
	count(n, NET_BACKEND_ERRORS, 1);
	n->backend_dead = true;
}

/* ---- receive ---- */

/* Takes receive chains until those held hold need bytes (one chain unless
 * the buffers are mergeable). Chains stay held until a frame fills them,
 * so no chain is ever handed back out of order. 1: enough held; 0: the
 * guest has not posted enough yet (it will notify when it posts more);
 * -ENOSPC: no posting could hold it; -EIO: the ring is broken. */
static int rx_gather(struct virtio_net *n, size_t need)
{
	struct net_rx *rx = n->rx;
	struct split_ring *ring = &n->rxq->ring;
	size_t have = 0;
	for (unsigned int i = 0; i < rx->nr_chains; i++)
		have += rx->room[i];
	while (have < need) {
		if (!ring->size)
			return -EIO;
		if (rx->nr_chains == RX_MAX_CHAINS ||
		    (rx->nr_chains && !n->mergeable) ||
		    rx->nr_chains >= ring->size)
			return -ENOSPC;
		int got = split_ring_pop(ring, &rx->chain);
		if (got < 0) {
			ring_broken(n, n->rxq, "receive", got);
			return -EIO;
		}
		if (got == 0) {
			if (split_ring_notify_on_more(ring))
				continue;
			return 0;
		}
		const struct desc_chain *c = &rx->chain;
		size_t room = iov_length(c->writable, c->nr_writable);
		if (c->unreachable || c->nr_readable || room < HDR_LEN ||
		    rx->nr_iov + c->nr_writable > NET_IOV_MAX) {
			/* No receive buffer we can fill: back to the guest
			 * empty, ahead of the frame, which it drops. */
			count(n, NET_RX_DROP_BAD_CHAIN, 1);
			split_ring_push(ring, c->head, 0);
			continue;
		}
		rx->heads[rx->nr_chains] = c->head;
		rx->room[rx->nr_chains] = room;
		rx->chain_iovs[rx->nr_chains] = c->nr_writable;
		rx->nr_chains++;
		memcpy(&rx->iov[rx->nr_iov], c->writable,
		       (size_t)c->nr_writable * sizeof(struct iovec));
		rx->nr_iov += c->nr_writable;
		have += room;
	}
	return 1;
}

/* The frame in hand (len bytes after the header) is in the guest's
 * buffers: its header goes in front and the chains it filled go back to
 * the guest; the rest stay held for the next frame. */
static void rx_complete(struct virtio_net *n, size_t len,
			const struct virtio_net_hdr *backend_hdr)
{
	struct net_rx *rx = n->rx;
	size_t total = HDR_LEN + len;
	unsigned int used = 0;
	int used_iovs = 0;
	for (size_t left = total; left && used < rx->nr_chains; used++) {
		left -= left < rx->room[used] ? left : rx->room[used];
		used_iovs += rx->chain_iovs[used];
	}
	struct virtio_net_hdr_mrg_rxbuf hdr = {.num_buffers = (uint16_t)used};
	if (backend_hdr)
		hdr.hdr = *backend_hdr;
	else if (n->guest_csum)
		hdr.hdr.flags = VIRTIO_NET_HDR_F_DATA_VALID;
	iov_copy_to(rx->iov, rx->nr_iov, 0, &hdr, HDR_LEN);
	size_t left = total;
	for (unsigned int i = 0; i < used; i++) {
		size_t put = left < rx->room[i] ? left : rx->room[i];
		split_ring_push(&n->rxq->ring, rx->heads[i], (uint32_t)put);
		left -= put;
	}
	rx->nr_chains -= used;
	memmove(rx->heads, rx->heads + used, rx->nr_chains * sizeof(rx->heads[0]));
	memmove(rx->room, rx->room + used, rx->nr_chains * sizeof(rx->room[0]));
	memmove(rx->chain_iovs, rx->chain_iovs + used,
		rx->nr_chains * sizeof(rx->chain_iovs[0]));
	rx->nr_iov -= used_iovs;
	memmove(rx->iov, rx->iov + used_iovs, (size_t)rx->nr_iov * sizeof(rx->iov[0]));
	count(n, NET_RX_FRAMES, 1);
	count(n, NET_RX_BYTES, len);
}

/* The iovecs that read the rest of the frame in hand and, for a stream,
 * the next frame's length: one readv a frame. */
static int rx_view(struct virtio_net *n, size_t skip, size_t len,
		   void *scratch, size_t scratch_len)
{
	struct net_rx *rx = n->rx;
	int cnt = 0;
	if (scratch) {
		rx->view[cnt++] = (struct iovec){scratch, scratch_len};
	} else {
		size_t got;
		cnt = iov_view(rx->view, NET_IOV_MAX, rx->iov, rx->nr_iov, skip,
			       len, &got);
	}
	if (n->framing == VIRTIO_NET_FRAMING_STREAM)
		rx->view[cnt++] = (struct iovec){rx->prefix, PREFIX_LEN};
	return cnt;
}

/* A read of the backend gave nothing: dry for now, or the end of it. */
static void rx_read_failed(struct virtio_net *n, ssize_t r)
{
	if (r == 0)
		backend_failed(n, "closed the connection", 0);
	else if (errno != EAGAIN && errno != EINTR)
		backend_failed(n, "failed", errno);
}

/* Reads stream frames into the guest's buffers until the socket is dry
 * or the guest's buffers run out. Returns true when it stopped for want
 * of buffers (the guest will notify, or its ring is broken). */
static bool rx_stream(struct virtio_net *n, bool *pushed)
{
	static uint8_t discard[VIRTIO_NET_MAX_FRAME]; /* only this thread's */
	struct net_rx *rx = n->rx;
	for (;;) {
		if (rx->prefix_got < PREFIX_LEN) {
			ssize_t r = read(n->fd, rx->prefix + rx->prefix_got,
					 PREFIX_LEN - rx->prefix_got);
			if (r <= 0) {
				rx_read_failed(n, r);
				return false;
			}
			rx->prefix_got += (unsigned int)r;
			continue;
		}
		if (!rx->frame_len) {
			uint32_t be;
			memcpy(&be, rx->prefix, sizeof(be));
			uint32_t len = __builtin_bswap32(be);
			if (len < ETH_HLEN || len > VIRTIO_NET_MAX_FRAME) {
				backend_failed(n, "sent a frame of impossible length", 0);
				return false;
			}
			rx->frame_len = len;
			rx->frame_got = 0;
			rx->discarding = len > n->max_rx_frame;
			if (rx->discarding)
				count(n, NET_RX_DROP_NO_ROOM, 1);
		}
		if (!rx->discarding) {
			int got = rx_gather(n, HDR_LEN + rx->frame_len);
			if (got == 0 || got == -EIO)
				return true;
			if (got == -ENOSPC) {
				rx->discarding = true;
				count(n, NET_RX_DROP_NO_ROOM, 1);
			}
		}
		size_t left = rx->frame_len - rx->frame_got;
		int cnt = rx_view(n, HDR_LEN + rx->frame_got, left,
				  rx->discarding ? discard : NULL, left);
		ssize_t r = readv(n->fd, rx->view, cnt);
		if (r <= 0) {
			rx_read_failed(n, r);
			return false;
		}
		if ((size_t)r < left) {
			rx->frame_got += (size_t)r;
			continue;
		}
		rx->prefix_got = (unsigned int)((size_t)r - left);
		if (!rx->discarding) {
			rx_complete(n, rx->frame_len, NULL);
			*pushed = true;
		}
		rx->frame_len = 0;
	}
}

/* Reads tap frames: each read needs room for the largest frame. */
static bool rx_tap(struct virtio_net *n, bool *pushed)
{
	static uint8_t discard[HDR_LEN + VIRTIO_NET_MAX_FRAME];
	struct net_rx *rx = n->rx;
	for (;;) {
		int got = rx_gather(n, HDR_LEN + n->max_rx_frame);
		if (got == 0 || got == -EIO)
			return true;
		bool dropping = got == -ENOSPC;
		ssize_t r = dropping ? read(n->fd, discard, sizeof(discard))
				     : readv(n->fd, rx->iov, rx->nr_iov);
		if (r <= 0) {
			rx_read_failed(n, r);
			return false;
		}
		if (dropping) {
			count(n, NET_RX_DROP_NO_ROOM, 1);
			continue;
		}
		if ((size_t)r < HDR_LEN + ETH_HLEN)
			continue; /* nothing the guest could take */
		struct virtio_net_hdr hdr;
		iov_copy_from(rx->iov, rx->nr_iov, 0, &hdr, sizeof(hdr));
		rx_complete(n, (size_t)r - HDR_LEN, &hdr);
		*pushed = true;
	}
}

/* The backend is readable or the guest posted buffers: receive what
 * fits, then interrupt the guest once. Returns true while waiting for
 * buffers. */
static bool rx_run(struct virtio_net *n)
{
	if (n->backend_dead)
		return false;
	if (!n->rxq->ring.size)
		return true;
	bool pushed = false;
	bool starved = n->framing == VIRTIO_NET_FRAMING_STREAM ? rx_stream(n, &pushed)
								: rx_tap(n, &pushed);
	if (pushed)
		virtio_queue_interrupt(n->rxq);
	return starved;
}

/* ---- transmit ---- */

/* Takes one chain into the batch; false when the ring is empty or the
 * batch full. A chain that is no frame goes straight back, counted. */
static bool tx_take(struct virtio_net *n)
{
	struct net_tx *tx = n->tx;
	struct split_ring *ring = &n->txq->ring;
	struct desc_chain *c = &tx->chain;
	while (tx->nr < TX_BATCH && ring->size) {
		int room = NET_IOV_MAX - tx->nr_iov - 1;
		int got = split_ring_pop(ring, c);
		if (got <= 0) {
			if (got < 0)
				ring_broken(n, n->txq, "transmit", got);
			return false;
		}
		if (c->nr_readable > room && tx->nr) {
			split_ring_unpop(ring, 1); /* the next batch's */
			return false;
		}
		size_t len = iov_length(c->readable, c->nr_readable);
		enum virtio_net_counter drop = NET_NR_COUNTERS;
		if (c->unreachable || c->nr_writable || c->nr_readable > room)
			drop = NET_TX_DROP_BAD_CHAIN;
		else if (len < HDR_LEN + ETH_HLEN)
			drop = NET_TX_DROP_RUNT;
		else if (len - HDR_LEN > n->max_tx_frame)
			drop = NET_TX_DROP_OVERSIZED;
		if (drop != NET_NR_COUNTERS) {
			count(n, drop, 1);
			split_ring_push(ring, c->head, 0);
			continue;
		}
		size_t start = tx->nr ? tx->ends[tx->nr - 1] : 0, frame;
		if (n->framing == VIRTIO_NET_FRAMING_STREAM) {
			/* passt takes the bare frame after its length. */
			tx->prefixes[tx->nr] = __builtin_bswap32((uint32_t)(len - HDR_LEN));
			tx->iov[tx->nr_iov++] = (struct iovec){&tx->prefixes[tx->nr],
								PREFIX_LEN};
			tx->nr_iov += iov_view(&tx->iov[tx->nr_iov], room, c->readable,
					       c->nr_readable, HDR_LEN, len, &frame);
			frame += PREFIX_LEN;
		} else {
			memcpy(&tx->iov[tx->nr_iov], c->readable,
			       (size_t)c->nr_readable * sizeof(struct iovec));
			tx->nr_iov += c->nr_readable;
			frame = len;
		}
		tx->heads[tx->nr] = c->head;
		tx->ends[tx->nr++] = start + frame;
		count(n, NET_TX_FRAMES, 1);
		count(n, NET_TX_BYTES, len - HDR_LEN);
	}
	return false;
}

/* Returns the frames written (or dropped) to the guest. */
static void tx_push_done(struct virtio_net *n)
{
	struct net_tx *tx = n->tx;
	struct split_ring *ring = &n->txq->ring;
	while (tx->done < tx->nr && tx->ends[tx->done] <= tx->sent) {
		/* A ring that broke after the frame was taken (size 0) takes
		 * nothing back. */
		if (ring->size)
			split_ring_push(ring, tx->heads[tx->done], 0);
		tx->done++;
	}
	if (tx->done == tx->nr) {
		tx->nr = tx->done = 0;
		tx->nr_iov = tx->first_iov = 0;
		tx->sent = 0;
	}
}

/* Advances the batch's iovecs past bytes just written. */
static void tx_advance(struct net_tx *tx, size_t bytes)
{
	tx->sent += bytes;
	while (bytes && tx->first_iov < tx->nr_iov) {
		struct iovec *v = &tx->iov[tx->first_iov];
		size_t step = bytes < v->iov_len ? bytes : v->iov_len;
		v->iov_base = (uint8_t *)v->iov_base + step;
		v->iov_len -= step;
		bytes -= step;
		if (!v->iov_len)
			tx->first_iov++;
	}
}

/* Writes the batch: a stream takes it in one writev (and may take part of
 * it); a tap one frame per write. Returns false when the backend is full
 * (wait until it is writable). */
static bool tx_write(struct virtio_net *n)
{
	struct net_tx *tx = n->tx;
	while (tx->done < tx->nr) {
		int cnt = tx->nr_iov - tx->first_iov;
		if (n->framing == VIRTIO_NET_FRAMING_TAP) {
			size_t start = tx->done ? tx->ends[tx->done - 1] : 0;
			size_t end = tx->ends[tx->done], seen = 0;
			for (cnt = 0; seen < end - start; cnt++)
				seen += tx->iov[tx->first_iov + cnt].iov_len;
		}
		ssize_t w = writev(n->fd, &tx->iov[tx->first_iov], cnt);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return false;
		if (w < 0 && n->framing == VIRTIO_NET_FRAMING_TAP &&
		    (errno == EINVAL || errno == EIO)) {
			/* The kernel refused the guest's header (a bad GSO
			 * request), or the tap is down for now: that frame
			 * only. */
			count(n, NET_TX_DROP_BACKEND, 1);
			w = (ssize_t)(tx->ends[tx->done] -
				      (tx->done ? tx->ends[tx->done - 1] : 0));
		} else if (w < 0) {
			backend_failed(n, "failed", errno);
			tx->sent = tx->ends[tx->nr - 1];
			tx_push_done(n);
			return true;
		}
		tx_advance(tx, (size_t)w);
		tx_push_done(n);
	}
	return true;
}

/* The guest notified the transmit queue, or the backend became writable:
 * sends every frame posted. Returns true while waiting for the backend. */
static bool tx_run(struct virtio_net *n)
{
	static const uint8_t zeros[4096];
	struct split_ring *ring = &n->txq->ring;
	bool blocked = false;
	while (n->tx_pad && !n->backend_dead) {
		/* The rest of the cut frame's length if the cut fell in it
		 * (zeros there would be read as another length), then zeros
		 * for its bytes. */
		size_t frame = __builtin_bswap32(n->tx_pad_prefix);
		const void *from = zeros;
		size_t len = n->tx_pad < sizeof(zeros) ? n->tx_pad : sizeof(zeros);
		if (n->tx_pad > frame) {
			len = n->tx_pad - frame;
			from = (const uint8_t *)&n->tx_pad_prefix + PREFIX_LEN - len;
		}
		ssize_t w = write(n->fd, from, len);
		if (w < 0 && errno == EAGAIN)
			return true;
		if (w < 0 && errno != EINTR)
			backend_failed(n, "failed", errno);
		else if (w > 0)
			n->tx_pad -= (size_t)w;
	}
	do {
		if (!ring->size)
			break;
		split_ring_set_notification(ring, false);
		for (;;) {
			if (n->tx->done == n->tx->nr)
				tx_take(n);
			if (n->tx->nr == 0)
				break;
			if (n->backend_dead) {
				/* Nowhere to send: the guest's frames are
				 * taken and dropped, its queue never stuck. */
				n->tx->sent = n->tx->ends[n->tx->nr - 1];
				tx_push_done(n);
			} else if (!tx_write(n)) {
				blocked = true;
				break;
			}
			virtio_queue_interrupt(n->txq);
		}
		virtio_queue_interrupt(n->txq);
	} while (!blocked && ring->size && split_ring_set_notification(ring, true));
	return blocked;
}

/* ---- the thread ---- */

static void drain(int fd)
{
	uint64_t v;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_error("virtio-net: eventfd: %s", strerror(errno));
}

/* Waits on the backend for what the frames in hand need: input unless
 * the guest has no buffers, output while a batch waits. */
static void watch_backend(struct virtio_net *n, bool rx_starved,
			  bool tx_blocked)
{
	uint32_t want = n->backend_dead ? 0
					: (rx_starved ? 0 : EPOLLIN) |
						  (tx_blocked ? EPOLLOUT : 0);
	if (!want) {
		/* A hung-up descriptor reports EPOLLHUP whatever is asked,
		 * dead or with a guest that has no buffers to read it into:
		 * waited on for nothing, it leaves the set. */
		if (n->fd_watched &&
		    epoll_ctl(n->epoll_fd, EPOLL_CTL_DEL, n->fd, NULL) == 0)
			n->fd_watched = false;
		return;
	}
	if (n->fd_watched && want == n->fd_events)
		return;
	struct epoll_event ev = {.events = want, .data.u32 = 3};
	if (epoll_ctl(n->epoll_fd, n->fd_watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
		      n->fd, &ev) == 0) {
		n->fd_events = want;
		n->fd_watched = true;
	} else {
		log_error("virtio-net: epoll_ctl: %s", strerror(errno));
	}
}

static void *virtio_net_main(void *arg)
{
	struct virtio_net *n = arg;
	bool rx_starved = rx_run(n), tx_blocked = tx_run(n);
	watch_backend(n, rx_starved, tx_blocked);
	for (;;) {
		struct epoll_event evs[4];
		int nr = epoll_wait(n->epoll_fd, evs, 4, -1);
		if (nr < 0 && errno != EINTR) {
			log_error("virtio-net: epoll_wait: %s", strerror(errno));
			return NULL;
		}
		bool rx = false, tx = false;
		for (int i = 0; i < nr; i++) {
			switch (evs[i].data.u32) {
			case 0:
				return NULL; /* reset */
			case 1:
				drain(n->rxq->kick_fd);
				rx = true;
				break;
			case 2:
				drain(n->txq->kick_fd);
				tx = true;
				break;
			default:
				rx = rx || (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR));
				tx = tx || (evs[i].events & EPOLLOUT);
			}
		}
		if (tx)
			tx_blocked = tx_run(n);
		if (rx)
			rx_starved = rx_run(n);
		watch_backend(n, rx_starved, tx_blocked);
	}
}

/* What a tap may hand us, from what the guest takes: TUNSETOFFLOAD. */
static int tap_offloads(const struct virtio_net *n, uint64_t features)
{
	unsigned int off = 0;
	if (features & (1ULL << VIRTIO_NET_F_GUEST_CSUM)) {
		off |= TUN_F_CSUM;
		if (features & (1ULL << VIRTIO_NET_F_GUEST_TSO4))
			off |= TUN_F_TSO4;
		if (features & (1ULL << VIRTIO_NET_F_GUEST_TSO6))
			off |= TUN_F_TSO6;
		if (features & (1ULL << VIRTIO_NET_F_GUEST_ECN))
			off |= TUN_F_TSO_ECN;
	}
	return ioctl(n->fd, TUNSETOFFLOAD, off) < 0 ? -errno : 0;
}

static void unwatch_kicks(struct virtio_net *n)
{
	epoll_ctl(n->epoll_fd, EPOLL_CTL_DEL, n->rxq->kick_fd, NULL);
	epoll_ctl(n->epoll_fd, EPOLL_CTL_DEL, n->txq->kick_fd, NULL);
}

static bool has(uint64_t features, unsigned int bit)
{
	return features & (1ULL << bit);
}

static int virtio_net_activate(void *opaque, struct virtio_queue *queues,
			       unsigned int nr, uint64_t features)
{
	struct virtio_net *n = opaque;
	if (nr != 2)
		return -EINVAL;
	n->rxq = &queues[RXQ];
	n->txq = &queues[TXQ];
	n->mergeable = has(features, VIRTIO_NET_F_MRG_RXBUF);
	n->guest_csum = has(features, VIRTIO_NET_F_GUEST_CSUM);
	bool guest_tso = n->guest_csum && (has(features, VIRTIO_NET_F_GUEST_TSO4) ||
					   has(features, VIRTIO_NET_F_GUEST_TSO6));
	bool host_tso = has(features, VIRTIO_NET_F_CSUM) &&
			(has(features, VIRTIO_NET_F_HOST_TSO4) ||
			 has(features, VIRTIO_NET_F_HOST_TSO6));
	size_t mtu_frame = (size_t)n->config.mtu + ETH_HLEN + 4;
	n->max_tx_frame = host_tso ? VIRTIO_NET_MAX_FRAME : mtu_frame;
	n->max_rx_frame = guest_tso ? VIRTIO_NET_MAX_FRAME : mtu_frame;
	if (n->framing == VIRTIO_NET_FRAMING_TAP) {
		int err = tap_offloads(n, features);
		if (err)
			return err;
	}
	/* A stream's framing outlives a reset: the rest of a frame that
	 * went to the old rings is read and dropped. */
	struct net_rx *rx = n->rx;
	rx->nr_chains = 0;
	rx->nr_iov = 0;
	rx->discarding = rx->frame_len != 0;
	if (n->fd_watched) {
		struct epoll_event off = {.events = 0, .data.u32 = 3};
		epoll_ctl(n->epoll_fd, EPOLL_CTL_MOD, n->fd, &off);
	}
	n->fd_events = 0;
	struct epoll_event rx_kick = {.events = EPOLLIN, .data.u32 = 1};
	struct epoll_event tx_kick = {.events = EPOLLIN, .data.u32 = 2};
	if (epoll_ctl(n->epoll_fd, EPOLL_CTL_ADD, n->rxq->kick_fd, &rx_kick) < 0)
		return -errno;
	if (epoll_ctl(n->epoll_fd, EPOLL_CTL_ADD, n->txq->kick_fd, &tx_kick) < 0) {
		int err = -errno;
		epoll_ctl(n->epoll_fd, EPOLL_CTL_DEL, n->rxq->kick_fd, NULL);
		return err;
	}
	int err = -pthread_create(&n->thread, NULL, virtio_net_main, n);
	if (err) {
		unwatch_kicks(n);
		return err;
	}
	n->running = true;
	return 0;
}

static void virtio_net_reset(void *opaque)
{
	struct virtio_net *n = opaque;
	if (!n->running)
		return;
	uint64_t one = 1;
	if (write(n->stop_fd, &one, sizeof(one)) < 0)
		log_error("virtio-net: stop: %s", strerror(errno));
	pthread_join(n->thread, NULL);
	drain(n->stop_fd);
	unwatch_kicks(n);
	n->running = false;
	/* The frames in hand went with the rings. One a stream took in part
	 * is finished (its length, then zeros, which passt drops as a bad
	 * frame): the framing of the frames after it holds. */
	struct net_tx *tx = n->tx;
	if (tx->done < tx->nr && tx->sent > (tx->done ? tx->ends[tx->done - 1] : 0)) {
		n->tx_pad = tx->ends[tx->done] - tx->sent;
		n->tx_pad_prefix = tx->prefixes[tx->done];
	}
	tx->nr = tx->done = 0;
	tx->nr_iov = tx->first_iov = 0;
	tx->sent = 0;
}

static uint64_t offered_features(enum virtio_net_framing framing)
{
	uint64_t f = (1ULL << VIRTIO_F_VERSION_1) |
		     (1ULL << VIRTIO_RING_F_EVENT_IDX) |
		     (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
		     (1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_MTU) |
		     (1ULL << VIRTIO_NET_F_STATUS) |
		     (1ULL << VIRTIO_NET_F_MRG_RXBUF) |
		     /* The device's frames are checksummed (passt's, or
		      * the tap's DATA_VALID), and it takes the guest's
		      * partial ones: passt ends the guest's TCP and UDP
		      * and never reads their checksums, a tap completes
		      * them. */
		     (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
		     (1ULL << VIRTIO_NET_F_CSUM);
	/* A tap segments and coalesces in the host kernel. passt's frames
	 * are as big as its 65520-byte MTU already. */
	if (framing == VIRTIO_NET_FRAMING_TAP)
		f |= (1ULL << VIRTIO_NET_F_HOST_TSO4) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO6) |
		     (1ULL << VIRTIO_NET_F_HOST_ECN) |
		     (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
		     (1ULL << VIRTIO_NET_F_GUEST_TSO6) |
		     (1ULL << VIRTIO_NET_F_GUEST_ECN);
	return f;
}

int virtio_net_create(struct virtio_net *n, const struct virtio_net_options *o)
{
	memset(n, 0, sizeof(*n));
	n->fd = o->fd;
	n->framing = o->framing;
	if (o->mtu < 68) /* IPv4's least; 16 bits is at most 65535 */
		return -EINVAL;
	memcpy(n->config.mac, o->mac, sizeof(n->config.mac));
	n->config.status = VIRTIO_NET_S_LINK_UP;
	n->config.max_virtqueue_pairs = 1;
	n->config.mtu = o->mtu;
	n->rx = calloc(1, sizeof(*n->rx));
	n->tx = calloc(1, sizeof(*n->tx));
	/* The thread's wait set, made once: system calls a reset and a
	 * DRIVER_OK after the seccomp filter need not make. */
	n->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	n->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (!n->rx || !n->tx || n->stop_fd < 0 || n->epoll_fd < 0)
		return -ENOMEM;
	struct epoll_event stop = {.events = EPOLLIN, .data.u32 = 0};
	struct epoll_event backend = {.events = 0, .data.u32 = 3};
	if (epoll_ctl(n->epoll_fd, EPOLL_CTL_ADD, n->stop_fd, &stop) < 0 ||
	    epoll_ctl(n->epoll_fd, EPOLL_CTL_ADD, n->fd, &backend) < 0)
		return -errno;
	n->fd_watched = true;
	n->dev = (struct virtio_dev){
		.device_id = VIRTIO_ID_NET,
		.features = offered_features(o->framing),
		.num_queues = 2,
		.queue_max_size = VIRTIO_NET_QUEUE_SIZE,
		.config = &n->config,
		.config_len = sizeof(n->config),
		.activate = virtio_net_activate,
		.reset = virtio_net_reset,
		.opaque = n,
	};
	return 0;
}

static void virtio_net_report(void *dev, struct device_report *out)
{
	struct virtio_net *n = dev;
	snprintf(out->name, sizeof(out->name), "eth0");
	out->what = "frames";
	for (unsigned int c = 0; c < NET_NR_COUNTERS; c++) {
		uint64_t v = atomic_load_explicit(&n->counts[c], memory_order_relaxed);
		/* Drops and errors only when there were some. */
		if (v || c <= NET_TX_BYTES)
			device_report_add(out, counter_names[c], v);
	}
}

static const struct device_type virtio_net_type;

static int virtio_net_add(struct machine *m)
{
	const struct virtio_net_options *o =
		machine_options(m, VIRTIO_NET_DEVICE_NAME);
	if (!o)
		return 0; /* --net none */
	struct virtio_net *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	int err = virtio_net_create(n, o);
	if (!err)
		err = virtio_bus_add(m->virtio, &n->dev);
	if (!err)
		err = machine_add_device(m, &virtio_net_type, n);
	return err;
}

static const struct device_type virtio_net_type = {
	.name = VIRTIO_NET_DEVICE_NAME,
	.add = virtio_net_add,
	.report = virtio_net_report,
};
DEVICE_REGISTER(virtio_net_type);
