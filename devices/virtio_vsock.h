/* The virtio-vsock device (virtio 1.2, 5.10) with UNIX stream sockets on
 * the host's side, as Firecracker's "hybrid vsock". The host connects:
 * each connection accepted on a listening socket becomes a stream to one
 * port of the guest (what a runtime's exec needs: the host reaches a
 * service the guest runs). The guest may open one stream of its own, to
 * the one host port the options name, once (fsvm's stdin, which the
 * guest takes when it is ready for it); its other requests are refused. */
#ifndef FSVM_VIRTIO_VSOCK_H
#define FSVM_VIRTIO_VSOCK_H

#include <linux/virtio_vsock.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/virtio_dev.h"

/* The device type's name: its reports', and its options' key in the
 * machine (machine_options). */
#define VIRTIO_VSOCK_DEVICE_NAME "virtio-vsock"

#define VIRTIO_VSOCK_GUEST_CID 3 /* the first a guest may have */
#define VIRTIO_VSOCK_HOST_CID 2  /* VMADDR_CID_HOST */
#define VIRTIO_VSOCK_QUEUE_SIZE 256
#define VIRTIO_VSOCK_MAX_CONNS 64 /* a further connection is closed at once */
/* What the device holds of a stream's bytes from the guest that the host
 * has not read yet (the buf_alloc it advertises): two of the largest
 * packets Linux sends. */
#define VIRTIO_VSOCK_CONN_BUF (128u << 10)
/* The first host port a stream gets: below are the privileged ones. */
#define VIRTIO_VSOCK_FIRST_HOST_PORT 1024u

/* The type's options: one device, with a listener, a stream for the
 * guest to open, or both. */
struct virtio_vsock_options {
	/* An AF_UNIX stream socket, bound and listening (made before the
	 * jail and the filter, which allow no socket of fsvm's own), or -1;
	 * the device's from add on, and made non-blocking. */
	int listen_fd;
	/* The guest's port each host connection is a stream to. */
	uint32_t guest_port;
	/* A connected AF_UNIX stream socket the guest's connection to host
	 * port connect_port (below VIRTIO_VSOCK_FIRST_HOST_PORT) becomes,
	 * or -1; the device's from add on, and made non-blocking. */
	int connect_fd;
	uint32_t connect_port;
};

/* What the device counts, for -v and --json. rx: to the guest. */
enum virtio_vsock_counter {
	VSOCK_CONNECTIONS,	   /* streams: host connections offered, the guest's own taken */
	VSOCK_RX_BYTES,		   /* from the host sockets to the guest */
	VSOCK_TX_BYTES,		   /* from the guest to the host sockets */
	VSOCK_REFUSED_FULL,	   /* closed at once: VIRTIO_VSOCK_MAX_CONNS */
	VSOCK_REFUSED_BY_GUEST,	   /* the guest's RST to a request */
	VSOCK_GUEST_REQUESTS,	   /* the guest's own connections, refused */
	VSOCK_PROTOCOL_ERRORS,	   /* packets no stream may have: RST */
	VSOCK_TX_DROP_BAD_HEADER,  /* short, of another CID, len past the chain */
	VSOCK_TX_DROP_BAD_CHAIN,   /* outside guest RAM, or writable */
	VSOCK_RX_DROP_BAD_CHAIN,   /* a receive chain unfit for a header */
	VSOCK_RST_DROPPED,	   /* RSTs past the queue the guest let fill */
	VSOCK_RING_ERRORS,	   /* malformed rings: the queue stops */
	VSOCK_HOST_ERRORS,	   /* a host socket (or accept) failed */
	VSOCK_NR_COUNTERS
};

enum vsock_conn_state {
	VSOCK_CONN_FREE,
	VSOCK_CONN_CONNECTING, /* REQUEST owed or sent, no RESPONSE yet */
	VSOCK_CONN_ESTABLISHED,
	VSOCK_CONN_CLOSING, /* the host socket closed, the guest's RST owed */
};

/* One stream: a host socket and the guest's end, (host_port, guest_port). */
struct vsock_conn {
	enum vsock_conn_state state;
	int fd;
	uint32_t host_port, guest_port;
	/* Edge-triggered readiness, as last seen: set by epoll, cleared by
	 * EAGAIN. */
	bool readable, writable;
	bool request_owed, request_sent;
	bool response_owed; /* to the guest's REQUEST */
	bool credit_update_owed;
	bool host_eof;		  /* the host sent its last byte: SHUTDOWN sent */
	bool guest_done_sending;  /* its SHUTDOWN's SEND flag */
	bool guest_done_receiving; /* its SHUTDOWN's RCV flag */
	bool host_write_shut;	  /* shutdown(SHUT_WR) done */
	/* Credit (virtio 1.2, 5.10.6.3), counters that wrap: the guest's
	 * buffer, what it took of what we sent, and what we sent; what the
	 * guest sent, what of it the host took, and what of that we told
	 * the guest last. */
	uint32_t guest_buf_alloc, guest_fwd_cnt, to_guest;
	uint32_t from_guest, fwd_cnt, fwd_cnt_told;
	/* The guest's bytes the host socket could not take yet, in a ring
	 * of VIRTIO_VSOCK_CONN_BUF (allocated when first needed). */
	uint8_t *held;
	uint32_t held_start, held_len;
};

#define VSOCK_RST_QUEUE 64

struct vsock_scratch;

struct virtio_vsock {
	struct virtio_dev dev;
	struct virtio_vsock_config config;
	int listen_fd;
	uint32_t guest_port;
	/* The stream the guest may open, until it has (then -1). */
	int connect_fd;
	uint32_t connect_port;
	/* While live (DRIVER_OK to reset): the queues and the thread that
	 * serves them and every stream. */
	struct virtio_queue *rxq, *txq;
	pthread_t thread;
	bool running;
	int epoll_fd, stop_fd;
	struct vsock_conn conns[VIRTIO_VSOCK_MAX_CONNS];
	unsigned int nr_conns;
	unsigned int next_served; /* round robin of the streams' packets */
	uint32_t next_host_port;
	/* RSTs owed for no stream (the guest's requests, its packets for
	 * streams gone), until the guest posts receive buffers. */
	struct {
		uint32_t host_port, guest_port;
		uint16_t type;
	} rsts[VSOCK_RST_QUEUE];
	unsigned int rst_start, nr_rsts;
	struct vsock_scratch *scratch; /* the chain in hand */
	_Atomic uint64_t counts[VSOCK_NR_COUNTERS];
};

/* Creates the device on o's listening socket; v->dev is then for a
 * transport. */
int virtio_vsock_create(struct virtio_vsock *v,
			const struct virtio_vsock_options *o);

/* The name of a counter, as -v and --json show it. */
const char *virtio_vsock_counter_name(enum virtio_vsock_counter c);

#endif
