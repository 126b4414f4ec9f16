/* The virtio-vsock device: a receive, a transmit and an event queue,
 * served by one thread of its own between DRIVER_OK and reset, which
 * relays streams between the guest and host UNIX stream sockets. Each
 * connection accepted on the listening socket is offered to the guest
 * (OP_REQUEST to its port), and the guest's one request to the port the
 * options name gets their connected socket; once answered, bytes go both
 * ways under the
 * credit protocol: host bytes are read straight into the guest's receive
 * buffers, never more than the guest has room for, and the guest's are
 * written straight from its buffers, what the host socket cannot take yet
 * held in a bounded buffer whose size is the credit we give. The guest is
 * hostile: every chain and header field is checked, and a stream that
 * breaks the protocol is reset. No call blocks: every socket is
 * non-blocking and epoll says when to try again. */
#include "devices/virtio_vsock.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/log.h"
#include "devices/device.h"
#include "fs/iov.h"

#define RXQ 0
#define TXQ 1
#define NR_QUEUES 3 /* and the event queue, whose buffers stay the guest's */
#define HDR_LEN sizeof(struct virtio_vsock_hdr)
/* The most a packet to the guest carries: Linux's own largest. */
#define MAX_PAYLOAD (64u << 10)
/* Chains a queue serves before the thread looks at its other work. */
#define BUDGET VIRTIO_VSOCK_QUEUE_SIZE

/* The thread's epoll tags; a stream's is CONN_TAG + its slot. */
enum { TAG_STOP, TAG_RX_KICK, TAG_TX_KICK, TAG_LISTENER, CONN_TAG };

/* The chain in hand and a view into its buffers. */
struct vsock_scratch {
	struct desc_chain chain;
	struct iovec view[DESC_CHAIN_MAX_SEGS];
};

static const char *const counter_names[VSOCK_NR_COUNTERS] = {
	[VSOCK_CONNECTIONS] = "connections",
	[VSOCK_RX_BYTES] = "rx_bytes",
	[VSOCK_TX_BYTES] = "tx_bytes",
	[VSOCK_REFUSED_FULL] = "refused_too_many",
	[VSOCK_REFUSED_BY_GUEST] = "refused_by_guest",
	[VSOCK_GUEST_REQUESTS] = "guest_requests_refused",
	[VSOCK_PROTOCOL_ERRORS] = "protocol_errors",
	[VSOCK_TX_DROP_BAD_HEADER] = "tx_dropped_bad_header",
	[VSOCK_TX_DROP_BAD_CHAIN] = "tx_dropped_bad_chain",
	[VSOCK_RX_DROP_BAD_CHAIN] = "rx_dropped_bad_chain",
	[VSOCK_RST_DROPPED] = "rst_dropped",
	[VSOCK_RING_ERRORS] = "ring_errors",
	[VSOCK_HOST_ERRORS] = "host_errors",
};

const char *virtio_vsock_counter_name(enum virtio_vsock_counter c)
{
	return c < VSOCK_NR_COUNTERS ? counter_names[c] : NULL;
}

static void count(struct virtio_vsock *v, enum virtio_vsock_counter c,
		  uint64_t n)
{
	atomic_fetch_add_explicit(&v->counts[c], n, memory_order_relaxed);
}

/* A malformed ring: the queue is left alone until the driver resets the
 * device (its ring size 0 stops every walk below). */
static void ring_broken(struct virtio_vsock *v, struct virtio_queue *q,
			const char *which, int err)
{
	log_error("virtio-vsock: %s queue: bad descriptor chain (%s); queue stopped",
		  which, strerror(-err));
	count(v, VSOCK_RING_ERRORS, 1);
	q->ring.size = 0;
}

/* ---- streams ---- */

/* How much more the guest takes on c: its buffer less what it has not
 * consumed yet. A guest that claims to have consumed more than it got
 * gets nothing. */
static uint32_t guest_credit(const struct vsock_conn *c)
{
	uint32_t in_flight = c->to_guest - c->guest_fwd_cnt;
	return in_flight >= c->guest_buf_alloc ? 0 : c->guest_buf_alloc - in_flight;
}

static bool can_read_host(const struct vsock_conn *c)
{
	return c->state == VSOCK_CONN_ESTABLISHED && c->readable &&
	       !c->host_eof && !c->guest_done_receiving && guest_credit(c) > 0;
}

/* Something for the guest on c: a receive buffer's worth of work. */
static bool wants_rx(const struct vsock_conn *c)
{
	switch (c->state) {
	case VSOCK_CONN_CONNECTING:
		return c->request_owed;
	case VSOCK_CONN_ESTABLISHED:
		return c->response_owed || c->credit_update_owed ||
		       can_read_host(c);
	case VSOCK_CONN_CLOSING:
		return true; /* its RST */
	default:
		return false;
	}
}

/* The host side goes. With tell_guest the slot stays until its RST is
 * in a receive buffer (so none is ever dropped); a stream the guest never
 * heard of, or reset by the guest, just ends. */
static void conn_close(struct virtio_vsock *v, struct vsock_conn *c,
		       bool tell_guest)
{
	close(c->fd);
	c->fd = -1;
	free(c->held);
	c->held = NULL;
	if (tell_guest && c->request_sent) {
		c->state = VSOCK_CONN_CLOSING;
		return;
	}
	c->state = VSOCK_CONN_FREE;
	v->nr_conns--;
}

/* A stream that broke the protocol, or whose host socket failed. */
static void conn_reset(struct virtio_vsock *v, struct vsock_conn *c)
{
	conn_close(v, c, true);
}

static void host_failed(struct virtio_vsock *v, struct vsock_conn *c,
			const char *what, int err)
{
	log_info("virtio-vsock: stream of host port %u: %s: %s", c->host_port,
		 what, strerror(err));
	count(v, VSOCK_HOST_ERRORS, 1);
	conn_reset(v, c);
}

/* Both ways are over (the guest sent its last byte and the host has it;
 * the host sent its last, or the guest takes no more): the RST that
 * ends a virtio-vsock stream. */
static void conn_maybe_done(struct virtio_vsock *v, struct vsock_conn *c)
{
	if (c->state != VSOCK_CONN_ESTABLISHED)
		return;
	if (c->guest_done_sending && !c->held_len && !c->host_write_shut) {
		/* ENOTCONN: the host went already, which reading finds. */
		shutdown(c->fd, SHUT_WR);
		c->host_write_shut = true;
	}
	if (c->host_write_shut && (c->host_eof || c->guest_done_receiving))
		conn_close(v, c, true);
}

/* The host took n more of the guest's bytes. The guest is told once it
 * has not heard of half a buffer's worth: one out of credit waits with the
 * whole buffer in flight, so it always hears in the end. */
static void host_took(struct virtio_vsock *v, struct vsock_conn *c, size_t n)
{
	c->fwd_cnt += (uint32_t)n;
	count(v, VSOCK_TX_BYTES, n);
	if (c->fwd_cnt - c->fwd_cnt_told >= VIRTIO_VSOCK_CONN_BUF / 2)
		c->credit_update_owed = true;
}

/* Writes what c holds of the guest's bytes while the host takes them. */
static void flush_held(struct virtio_vsock *v, struct vsock_conn *c)
{
	while (c->held_len && c->writable) {
		uint32_t first = VIRTIO_VSOCK_CONN_BUF - c->held_start;
		if (first > c->held_len)
			first = c->held_len;
		struct iovec iov[2] = {{c->held + c->held_start, first},
				       {c->held, c->held_len - first}};
		ssize_t w = writev(c->fd, iov, iov[1].iov_len ? 2 : 1);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			c->writable = false;
			break;
		}
		if (w < 0) {
			host_failed(v, c, "write", errno);
			return;
		}
		c->held_start = (c->held_start + (uint32_t)w) % VIRTIO_VSOCK_CONN_BUF;
		c->held_len -= (uint32_t)w;
		host_took(v, c, (size_t)w);
	}
	conn_maybe_done(v, c);
}

/* The guest's len bytes after ch's header: to the host socket if it
 * takes them, the rest held (credit keeps that within our buffer). */
static void to_host(struct virtio_vsock *v, struct vsock_conn *c,
		    const struct desc_chain *ch, size_t len)
{
	struct iovec *view = v->scratch->view;
	c->from_guest += (uint32_t)len;
	size_t done = 0;
	if (!c->held_len && c->writable) {
		size_t span;
		int cnt = iov_view(view, DESC_CHAIN_MAX_SEGS, ch->readable,
				   ch->nr_readable, HDR_LEN, len, &span);
		ssize_t w;
		do
			w = writev(c->fd, view, cnt);
		while (w < 0 && errno == EINTR);
		if (w < 0 && errno == EAGAIN) {
			c->writable = false;
		} else if (w < 0) {
			host_failed(v, c, "write", errno);
			return;
		} else {
			done = (size_t)w;
			host_took(v, c, done);
		}
	}
	if (done == len)
		return;
	if (!c->held && !(c->held = malloc(VIRTIO_VSOCK_CONN_BUF))) {
		host_failed(v, c, "holding the guest's bytes", ENOMEM);
		return;
	}
	uint32_t end = (c->held_start + c->held_len) % VIRTIO_VSOCK_CONN_BUF;
	size_t rest = len - done, first = VIRTIO_VSOCK_CONN_BUF - end;
	if (first > rest)
		first = rest;
	iov_copy_from(ch->readable, ch->nr_readable, HDR_LEN + done,
		      c->held + end, first);
	iov_copy_from(ch->readable, ch->nr_readable, HDR_LEN + done + first,
		      c->held, rest - first);
	c->held_len += (uint32_t)rest;
}

/* The stream of a guest's packet: one it has heard of (a stream whose
 * REQUEST has not gone out is no business of its). */
static struct vsock_conn *conn_find(struct virtio_vsock *v, uint32_t host_port,
				    uint32_t guest_port)
{
	for (unsigned int i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = &v->conns[i];
		if (c->state != VSOCK_CONN_FREE && c->request_sent &&
		    c->host_port == host_port && c->guest_port == guest_port)
			return c;
	}
	return NULL;
}

/* A free slot for a stream on host socket fd, watched from now on; NULL
 * (fd closed) when there is none. */
static struct vsock_conn *conn_new(struct virtio_vsock *v, int fd)
{
	if (v->nr_conns == VIRTIO_VSOCK_MAX_CONNS) {
		close(fd);
		count(v, VSOCK_REFUSED_FULL, 1);
		return NULL;
	}
	unsigned int slot = 0;
	while (v->conns[slot].state != VSOCK_CONN_FREE)
		slot++;
	/* Edge-triggered: waited on once for good, no epoll_ctl as
	 * interest changes; readiness is kept in readable and writable,
	 * first assumed and then tried. */
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				 .data.u32 = CONN_TAG + slot};
	if (epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		log_error("virtio-vsock: epoll_ctl: %s", strerror(errno));
		count(v, VSOCK_HOST_ERRORS, 1);
		close(fd);
		return NULL;
	}
	struct vsock_conn *c = &v->conns[slot];
	*c = (struct vsock_conn){.fd = fd, .readable = true, .writable = true};
	v->nr_conns++;
	count(v, VSOCK_CONNECTIONS, 1);
	return c;
}

/* The next host port no stream has. */
static uint32_t new_host_port(struct virtio_vsock *v)
{
	for (;;) {
		uint32_t port = v->next_host_port;
		/* -1 is VMADDR_PORT_ANY, no port. */
		if (++v->next_host_port == UINT32_MAX)
			v->next_host_port = VIRTIO_VSOCK_FIRST_HOST_PORT;
		bool taken = false;
		for (unsigned int i = 0; i < VIRTIO_VSOCK_MAX_CONNS && !taken; i++)
			taken = v->conns[i].state != VSOCK_CONN_FREE &&
				v->conns[i].host_port == port;
		if (!taken)
			return port;
	}
}

/* Takes every connection waiting on the listener; each becomes a stream
 * whose REQUEST the guest gets with the next receive buffer. */
static void accept_all(struct virtio_vsock *v)
{
	for (;;) {
		int fd = accept4(v->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0) {
			/* Out of fds, say: what waits is taken when the next
			 * connection wakes us (edge-triggered). */
			if (errno != EAGAIN) {
				log_error("virtio-vsock: accept: %s", strerror(errno));
				count(v, VSOCK_HOST_ERRORS, 1);
			}
			return;
		}
		struct vsock_conn *c = conn_new(v, fd);
		if (!c)
			continue;
		c->state = VSOCK_CONN_CONNECTING;
		c->host_port = new_host_port(v);
		c->guest_port = v->guest_port;
		c->request_owed = true;
	}
}

/* The guest's REQUEST h for no stream: the one it may open becomes a
 * stream, answered with the next receive buffer; false for any other. */
static bool guest_opens(struct virtio_vsock *v, const struct virtio_vsock_hdr *h)
{
	if (v->connect_fd < 0 || le32toh(h->dst_port) != v->connect_port)
		return false;
	int fd = v->connect_fd;
	v->connect_fd = -1; /* once: the stream's, or closed */
	struct vsock_conn *c = conn_new(v, fd);
	if (!c)
		return false;
	c->state = VSOCK_CONN_ESTABLISHED;
	c->host_port = v->connect_port;
	c->guest_port = le32toh(h->src_port);
	c->request_sent = true; /* the guest knows this stream */
	c->response_owed = true;
	c->guest_buf_alloc = le32toh(h->buf_alloc);
	c->guest_fwd_cnt = le32toh(h->fwd_cnt);
	return true;
}

/* ---- from the guest (transmit) ---- */

/* An RST for a packet of no stream, if there is room to remember it. */
static void rst_reply(struct virtio_vsock *v, const struct virtio_vsock_hdr *h)
{
	if (le16toh(h->op) == VIRTIO_VSOCK_OP_RST)
		return; /* never one for an RST: two devices would ping-pong */
	if (v->nr_rsts == VSOCK_RST_QUEUE) {
		count(v, VSOCK_RST_DROPPED, 1);
		return;
	}
	unsigned int i = (v->rst_start + v->nr_rsts++) % VSOCK_RST_QUEUE;
	v->rsts[i].host_port = le32toh(h->dst_port);
	v->rsts[i].guest_port = le32toh(h->src_port);
	v->rsts[i].type = le16toh(h->type);
}

/* Whether packet h (len bytes after it in ch) is one c may get now, and
 * what it does. */
static bool conn_packet(struct virtio_vsock *v, struct vsock_conn *c,
			const struct virtio_vsock_hdr *h, uint32_t len,
			const struct desc_chain *ch)
{
	uint16_t op = le16toh(h->op);
	uint32_t flags = le32toh(h->flags);
	if (op != VIRTIO_VSOCK_OP_RW && len)
		return false;
	/* Every packet carries the guest's credit. */
	c->guest_buf_alloc = le32toh(h->buf_alloc);
	c->guest_fwd_cnt = le32toh(h->fwd_cnt);
	bool established = c->state == VSOCK_CONN_ESTABLISHED;
	switch (op) {
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (c->state != VSOCK_CONN_CONNECTING)
			return false;
		c->state = VSOCK_CONN_ESTABLISHED;
		return true;
	case VIRTIO_VSOCK_OP_RW: {
		/* Credit: no more than our buffer less what the guest knows
		 * is still in it. */
		uint64_t unconsumed = (uint32_t)(c->from_guest - c->fwd_cnt_told);
		if (!established || c->guest_done_sending ||
		    unconsumed + len > VIRTIO_VSOCK_CONN_BUF)
			return false;
		if (len)
			to_host(v, c, ch, len);
		return true;
	}
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		if (!established ||
		    (flags & ~(uint32_t)(VIRTIO_VSOCK_SHUTDOWN_RCV |
					 VIRTIO_VSOCK_SHUTDOWN_SEND)))
			return false;
		if (flags & VIRTIO_VSOCK_SHUTDOWN_SEND)
			c->guest_done_sending = true;
		if (flags & VIRTIO_VSOCK_SHUTDOWN_RCV)
			c->guest_done_receiving = true;
		return true;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		return true;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		c->credit_update_owed = true;
		return true;
	default: /* a REQUEST on a stream, or no operation at all */
		return false;
	}
}

/* One packet from the guest. */
static void tx_packet(struct virtio_vsock *v, const struct desc_chain *ch)
{
	if (ch->unreachable || ch->nr_writable) {
		count(v, VSOCK_TX_DROP_BAD_CHAIN, 1);
		return;
	}
	size_t total = iov_length(ch->readable, ch->nr_readable);
	struct virtio_vsock_hdr h;
	if (total < HDR_LEN) {
		count(v, VSOCK_TX_DROP_BAD_HEADER, 1);
		return;
	}
	iov_copy_from(ch->readable, ch->nr_readable, 0, &h, HDR_LEN);
	uint32_t len = le32toh(h.len);
	/* Forged addresses get nothing back, not even an RST. */
	if (le64toh(h.src_cid) != VIRTIO_VSOCK_GUEST_CID ||
	    le64toh(h.dst_cid) != VIRTIO_VSOCK_HOST_CID) {
		count(v, VSOCK_TX_DROP_BAD_HEADER, 1);
		return;
	}
	struct vsock_conn *c = conn_find(v, le32toh(h.dst_port), le32toh(h.src_port));
	if (len > total - HDR_LEN) {
		/* Bytes a stream lost: it cannot go on. */
		count(v, VSOCK_TX_DROP_BAD_HEADER, 1);
		if (c && c->state != VSOCK_CONN_CLOSING)
			conn_reset(v, c);
		return;
	}
	uint16_t op = le16toh(h.op);
	if (le16toh(h.type) != VIRTIO_VSOCK_TYPE_STREAM) {
		/* A socket of a type we never offered: refused, as Linux
		 * refuses one, in its own type; a stream of ours is not it. */
		count(v, VSOCK_PROTOCOL_ERRORS, 1);
		rst_reply(v, &h);
		return;
	}
	if (!c) {
		if (op == VIRTIO_VSOCK_OP_REQUEST && !len && guest_opens(v, &h))
			return;
		if (op == VIRTIO_VSOCK_OP_REQUEST)
			count(v, VSOCK_GUEST_REQUESTS, 1);
		else if (op < VIRTIO_VSOCK_OP_REQUEST ||
			 op > VIRTIO_VSOCK_OP_CREDIT_REQUEST)
			count(v, VSOCK_PROTOCOL_ERRORS, 1);
		/* Else a packet for a stream that just ended: normal. */
		rst_reply(v, &h);
		return;
	}
	if (c->state == VSOCK_CONN_CLOSING)
		return; /* its RST is on its way */
	if (op == VIRTIO_VSOCK_OP_RST) {
		if (c->state == VSOCK_CONN_CONNECTING)
			count(v, VSOCK_REFUSED_BY_GUEST, 1);
		conn_close(v, c, false);
		return;
	}
	if (!conn_packet(v, c, &h, len, ch)) {
		count(v, VSOCK_PROTOCOL_ERRORS, 1);
		conn_reset(v, c);
		return;
	}
	if (c->state == VSOCK_CONN_ESTABLISHED)
		conn_maybe_done(v, c);
}

/* Takes the guest's packets, up to BUDGET; returns true when more may
 * wait. Every chain goes back at once: what the host cannot take yet is
 * held, so one slow host socket never stalls the other streams. */
static bool tx_run(struct virtio_vsock *v)
{
	struct split_ring *ring = &v->txq->ring;
	struct desc_chain *ch = &v->scratch->chain;
	unsigned int served = 0;
	do {
		if (!ring->size)
			return false;
		split_ring_set_notification(ring, false);
		for (;;) {
			if (served == BUDGET) {
				virtio_queue_interrupt(v->txq);
				return true;
			}
			int got = split_ring_pop(ring, ch);
			if (got < 0)
				ring_broken(v, v->txq, "transmit", got);
			if (got <= 0)
				break;
			tx_packet(v, ch);
			split_ring_push(ring, ch->head, 0);
			served++;
		}
		virtio_queue_interrupt(v->txq);
	} while (ring->size && split_ring_set_notification(ring, true));
	return false;
}

/* ---- to the guest (receive) ---- */

/* Takes the next receive chain a header fits in. 1: in the scratch
 * chain; 0: none yet (the guest notifies when it posts more); -EIO: the
 * ring is broken. Chains unfit go back empty. */
static int rx_take(struct virtio_vsock *v, bool *pushed)
{
	struct split_ring *ring = &v->rxq->ring;
	struct desc_chain *ch = &v->scratch->chain;
	for (;;) {
		if (!ring->size)
			return -EIO;
		int got = split_ring_pop(ring, ch);
		if (got < 0) {
			ring_broken(v, v->rxq, "receive", got);
			return -EIO;
		}
		if (got == 0) {
			if (split_ring_notify_on_more(ring))
				continue;
			return 0;
		}
		if (!ch->unreachable && !ch->nr_readable &&
		    iov_length(ch->writable, ch->nr_writable) >= HDR_LEN)
			return 1;
		count(v, VSOCK_RX_DROP_BAD_CHAIN, 1);
		split_ring_push(ring, ch->head, 0);
		*pushed = true;
	}
}

/* Gives the chain in hand back with a header and len bytes after it. */
static void rx_push(struct virtio_vsock *v, const struct virtio_vsock_hdr *h,
		    size_t len)
{
	struct desc_chain *ch = &v->scratch->chain;
	iov_copy_to(ch->writable, ch->nr_writable, 0, h, HDR_LEN);
	split_ring_push(&v->rxq->ring, ch->head, (uint32_t)(HDR_LEN + len));
}

static struct virtio_vsock_hdr hdr_for(uint32_t host_port, uint32_t guest_port,
				       uint16_t type, uint16_t op)
{
	return (struct virtio_vsock_hdr){
		.src_cid = htole64(VIRTIO_VSOCK_HOST_CID),
		.dst_cid = htole64(VIRTIO_VSOCK_GUEST_CID),
		.src_port = htole32(host_port),
		.dst_port = htole32(guest_port),
		.type = htole16(type),
		.op = htole16(op),
	};
}

/* A packet of c's, with our credit: what the host has taken so far. */
static void rx_push_conn(struct virtio_vsock *v, struct vsock_conn *c,
			 uint16_t op, uint32_t flags, size_t len)
{
	struct virtio_vsock_hdr h = hdr_for(c->host_port, c->guest_port,
					    VIRTIO_VSOCK_TYPE_STREAM, op);
	h.len = htole32((uint32_t)len);
	h.flags = htole32(flags);
	h.buf_alloc = htole32(VIRTIO_VSOCK_CONN_BUF);
	h.fwd_cnt = htole32(c->fwd_cnt);
	c->fwd_cnt_told = c->fwd_cnt;
	c->credit_update_owed = false;
	rx_push(v, &h, len);
}

/* Fills the chain in hand with c's next packet; false when c had none
 * after all (its socket had nothing: the chain is for someone else). */
static bool rx_conn(struct virtio_vsock *v, struct vsock_conn *c)
{
	struct vsock_scratch *s = v->scratch;
	if (c->state == VSOCK_CONN_CLOSING) {
		rx_push_conn(v, c, VIRTIO_VSOCK_OP_RST, 0, 0);
		c->state = VSOCK_CONN_FREE;
		v->nr_conns--;
		return true;
	}
	if (c->state == VSOCK_CONN_CONNECTING) {
		rx_push_conn(v, c, VIRTIO_VSOCK_OP_REQUEST, 0, 0);
		c->request_owed = false;
		c->request_sent = true;
		return true;
	}
	if (c->response_owed) { /* before any byte of the stream */
		rx_push_conn(v, c, VIRTIO_VSOCK_OP_RESPONSE, 0, 0);
		c->response_owed = false;
		return true;
	}
	size_t room = iov_length(s->chain.writable, s->chain.nr_writable) - HDR_LEN;
	uint32_t credit = guest_credit(c);
	size_t want = room < credit ? room : credit;
	if (want > MAX_PAYLOAD)
		want = MAX_PAYLOAD;
	while (want && can_read_host(c)) {
		size_t span;
		int cnt = iov_view(s->view, DESC_CHAIN_MAX_SEGS, s->chain.writable,
				   s->chain.nr_writable, HDR_LEN, want, &span);
		ssize_t got = readv(c->fd, s->view, cnt);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN) {
			c->readable = false;
			break;
		}
		if (got < 0) {
			/* The host's connection broke: the RST goes in this
			 * chain. */
			host_failed(v, c, "read", errno);
			return rx_conn(v, c);
		}
		if (got == 0) {
			c->host_eof = true;
			rx_push_conn(v, c, VIRTIO_VSOCK_OP_SHUTDOWN,
				     VIRTIO_VSOCK_SHUTDOWN_SEND, 0);
			conn_maybe_done(v, c);
			return true;
		}
		c->to_guest += (uint32_t)got;
		count(v, VSOCK_RX_BYTES, (uint64_t)got);
		rx_push_conn(v, c, VIRTIO_VSOCK_OP_RW, 0, (size_t)got);
		return true;
	}
	/* No bytes (or no room for any in this chain): our credit, owed or
	 * not, serves as well as anything. */
	if (c->credit_update_owed || (can_read_host(c) && !want)) {
		rx_push_conn(v, c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);
		return true;
	}
	return false;
}

/* The next stream with something for the guest, round robin. */
static struct vsock_conn *next_wanting_rx(struct virtio_vsock *v)
{
	for (unsigned int k = 0; k < VIRTIO_VSOCK_MAX_CONNS; k++) {
		unsigned int i = (v->next_served + k) % VIRTIO_VSOCK_MAX_CONNS;
		if (wants_rx(&v->conns[i])) {
			v->next_served = (i + 1) % VIRTIO_VSOCK_MAX_CONNS;
			return &v->conns[i];
		}
	}
	return NULL;
}

/* Puts what the guest is owed in its receive buffers (RSTs for no stream
 * first, then a packet a stream in turn), up to BUDGET; returns true when
 * more may wait. With no buffers it waits for the guest to post some, and
 * the host sockets are not read: they push back. */
static bool rx_run(struct virtio_vsock *v)
{
	struct split_ring *ring = &v->rxq->ring;
	bool pushed = false, more = false;
	for (unsigned int served = 0;; served++) {
		struct vsock_conn *c = NULL;
		if (!v->nr_rsts && !(c = next_wanting_rx(v)))
			break;
		if (served == BUDGET) {
			more = true;
			break;
		}
		if (rx_take(v, &pushed) <= 0)
			break;
		if (c) {
			if (!rx_conn(v, c)) {
				split_ring_unpop(ring, 1);
				continue;
			}
		} else {
			struct virtio_vsock_hdr h = hdr_for(
				v->rsts[v->rst_start].host_port,
				v->rsts[v->rst_start].guest_port,
				v->rsts[v->rst_start].type, VIRTIO_VSOCK_OP_RST);
			rx_push(v, &h, 0);
			v->rst_start = (v->rst_start + 1) % VSOCK_RST_QUEUE;
			v->nr_rsts--;
		}
		pushed = true;
	}
	if (pushed)
		virtio_queue_interrupt(v->rxq);
	return more;
}

/* ---- the thread ---- */

static void drain(int fd)
{
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_error("virtio-vsock: eventfd: %s", strerror(errno));
}

/* Everything that can move now; true when a budget ran out first. */
static bool serve(struct virtio_vsock *v)
{
	bool more = tx_run(v);
	for (unsigned int i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		if (v->conns[i].state == VSOCK_CONN_ESTABLISHED)
			flush_held(v, &v->conns[i]);
	return rx_run(v) || more;
}

static void *virtio_vsock_main(void *arg)
{
	struct virtio_vsock *v = arg;
	if (v->listen_fd >= 0)
		accept_all(v);
	bool more = serve(v);
	for (;;) {
		struct epoll_event evs[16];
		int nr = epoll_wait(v->epoll_fd, evs, 16, more ? 0 : -1);
		if (nr < 0 && errno != EINTR) {
			log_error("virtio-vsock: epoll_wait: %s", strerror(errno));
			return NULL;
		}
		bool listener = false;
		for (int i = 0; i < nr; i++) {
			uint32_t tag = evs[i].data.u32, e = evs[i].events;
			if (tag == TAG_STOP)
				return NULL; /* reset */
			if (tag == TAG_RX_KICK) {
				drain(v->rxq->kick_fd);
			} else if (tag == TAG_TX_KICK) {
				drain(v->txq->kick_fd);
			} else if (tag == TAG_LISTENER) {
				listener = true;
			} else {
				/* An error or hang-up is found by the read or
				 * write it lets through. */
				struct vsock_conn *c = &v->conns[tag - CONN_TAG];
				if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
					c->readable = true;
				if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
					c->writable = true;
			}
		}
		if (listener)
			accept_all(v);
		more = serve(v);
	}
}

static void unwatch_kicks(struct virtio_vsock *v)
{
	epoll_ctl(v->epoll_fd, EPOLL_CTL_DEL, v->rxq->kick_fd, NULL);
	epoll_ctl(v->epoll_fd, EPOLL_CTL_DEL, v->txq->kick_fd, NULL);
}

static int virtio_vsock_activate(void *opaque, struct virtio_queue *queues,
				 unsigned int nr, uint64_t features)
{
	struct virtio_vsock *v = opaque;
	(void)features; /* the ring's, which split_ring applies */
	if (nr != NR_QUEUES)
		return -EINVAL;
	v->rxq = &queues[RXQ];
	v->txq = &queues[TXQ];
	struct epoll_event rx_kick = {.events = EPOLLIN, .data.u32 = TAG_RX_KICK};
	struct epoll_event tx_kick = {.events = EPOLLIN, .data.u32 = TAG_TX_KICK};
	if (epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->rxq->kick_fd, &rx_kick) < 0)
		return -errno;
	if (epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->txq->kick_fd, &tx_kick) < 0) {
		int err = -errno;
		epoll_ctl(v->epoll_fd, EPOLL_CTL_DEL, v->rxq->kick_fd, NULL);
		return err;
	}
	int err = -pthread_create(&v->thread, NULL, virtio_vsock_main, v);
	if (err) {
		unwatch_kicks(v);
		return err;
	}
	v->running = true;
	return 0;
}

/* The guest's driver is gone with its rings: so are its streams, and
 * every host socket is closed (a VIRTIO_VSOCK_EVENT_TRANSPORT_RESET is
 * for a driver that stays, whose streams the host dropped: never here). */
static void virtio_vsock_reset(void *opaque)
{
	struct virtio_vsock *v = opaque;
	if (!v->running)
		return;
	uint64_t one = 1;
	if (write(v->stop_fd, &one, sizeof(one)) < 0)
		log_error("virtio-vsock: stop: %s", strerror(errno));
	pthread_join(v->thread, NULL);
	drain(v->stop_fd);
	unwatch_kicks(v);
	v->running = false;
	for (unsigned int i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = &v->conns[i];
		if (c->fd >= 0)
			close(c->fd);
		free(c->held);
		v->conns[i] = (struct vsock_conn){.state = VSOCK_CONN_FREE, .fd = -1};
	}
	v->nr_conns = 0;
	v->nr_rsts = v->rst_start = 0;
}

/* A socket o names, checked once: a stream socket of AF_UNIX that
 * listens (or, for the guest's stream, does not), made non-blocking. */
static int check_socket(int fd, bool listener)
{
	int domain, type, listening;
	socklen_t len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0)
		return -errno;
	if (domain != AF_UNIX || type != SOCK_STREAM || !listening != !listener)
		return -EINVAL;
	/* No call may block the thread: a connection that went between
	 * the wake-up and accept4 leaves nothing to take. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int virtio_vsock_create(struct virtio_vsock *v,
			const struct virtio_vsock_options *o)
{
	memset(v, 0, sizeof(*v));
	v->listen_fd = o->listen_fd;
	v->guest_port = o->guest_port;
	v->connect_fd = o->connect_fd;
	v->connect_port = o->connect_port;
	v->stop_fd = v->epoll_fd = -1;
	if ((o->listen_fd < 0 && o->connect_fd < 0) ||
	    (o->listen_fd >= 0 && o->guest_port == UINT32_MAX) || /* VMADDR_PORT_ANY */
	    (o->connect_fd >= 0 && o->connect_port >= VIRTIO_VSOCK_FIRST_HOST_PORT))
		return -EINVAL;
	int err = o->listen_fd >= 0 ? check_socket(o->listen_fd, true) : 0;
	if (!err && o->connect_fd >= 0)
		err = check_socket(o->connect_fd, false);
	if (err)
		return err;
	v->config.guest_cid = htole64(VIRTIO_VSOCK_GUEST_CID);
	v->next_host_port = VIRTIO_VSOCK_FIRST_HOST_PORT;
	for (unsigned int i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		v->conns[i].fd = -1;
	v->scratch = malloc(sizeof(struct vsock_scratch));
	/* The thread's wait set, made once: system calls a reset and a
	 * DRIVER_OK after the seccomp filter need not make. */
	v->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	v->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (!v->scratch || v->stop_fd < 0 || v->epoll_fd < 0)
		return -ENOMEM;
	struct epoll_event stop = {.events = EPOLLIN, .data.u32 = TAG_STOP};
	/* Edge-triggered: connections that wait while we are out of fds
	 * do not wake the thread again and again. */
	struct epoll_event listener = {.events = EPOLLIN | EPOLLET,
				       .data.u32 = TAG_LISTENER};
	if (epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->stop_fd, &stop) < 0 ||
	    (v->listen_fd >= 0 &&
	     epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, v->listen_fd, &listener) < 0))
		return -errno;
	v->dev = (struct virtio_dev){
		.device_id = VIRTIO_ID_VSOCK,
		.features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_EVENT_IDX) |
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC),
		.num_queues = NR_QUEUES,
		.queue_max_size = VIRTIO_VSOCK_QUEUE_SIZE,
		.config = &v->config,
		.config_len = sizeof(v->config),
		.activate = virtio_vsock_activate,
		.reset = virtio_vsock_reset,
		.opaque = v,
	};
	return 0;
}

static void virtio_vsock_report(void *dev, struct device_report *out)
{
	struct virtio_vsock *v = dev;
	snprintf(out->name, sizeof(out->name), "cid%u", VIRTIO_VSOCK_GUEST_CID);
	out->what = "streams";
	for (unsigned int c = 0; c < VSOCK_NR_COUNTERS; c++) {
		uint64_t n = atomic_load_explicit(&v->counts[c], memory_order_relaxed);
		/* Refusals, drops and errors only when there were some. */
		if (n || c <= VSOCK_TX_BYTES)
			device_report_add(out, counter_names[c], n);
	}
}

static const struct device_type virtio_vsock_type;

static int virtio_vsock_add(struct machine *m)
{
	const struct virtio_vsock_options *o =
		machine_options(m, VIRTIO_VSOCK_DEVICE_NAME);
	if (!o)
		return 0; /* no stream to serve: no device */
	struct virtio_vsock *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int err = virtio_vsock_create(v, o);
	if (!err)
		err = virtio_bus_add(m->virtio, &v->dev);
	if (!err)
		err = machine_add_device(m, &virtio_vsock_type, v);
	return err;
}

static const struct device_type virtio_vsock_type = {
	.name = VIRTIO_VSOCK_DEVICE_NAME,
	.add = virtio_vsock_add,
	.report = virtio_vsock_report,
};
DEVICE_REGISTER(virtio_vsock_type);
