/* The virtio-net device: Ethernet frames between the guest's queues and
 * one host file descriptor, read and written straight from and into guest
 * memory. Who is at the other end (passt on a socket, a tap device) is
 * the program's choice (vmm/network.c); the device knows only how frames
 * are framed on the descriptor. */
#ifndef FSVM_VIRTIO_NET_H
#define FSVM_VIRTIO_NET_H

#include <linux/virtio_net.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/virtio_dev.h"

/* The device type's name: its reports', and its options' key in the
 * machine (machine_options). */
#define VIRTIO_NET_DEVICE_NAME "virtio-net"

/* The biggest frame either way: a 64 KiB IP packet (TSO, or passt's
 * 65520-byte MTU) behind an Ethernet and a VLAN header. */
#define VIRTIO_NET_MAX_FRAME (14 + 4 + 65535)
#define VIRTIO_NET_QUEUE_SIZE 256

enum virtio_net_framing {
	/* A stream socket, each frame after its length as a 32-bit
	 * big-endian number: passt's --fd and QEMU's -netdev stream. */
	VIRTIO_NET_FRAMING_STREAM,
	/* A tap device opened with IFF_VNET_HDR and a 12-byte header: one
	 * frame per read or write, the guest's virtio-net header before it,
	 * so offloads (checksums, TSO) pass through both ways. */
	VIRTIO_NET_FRAMING_TAP,
};

/* The type's options: one device, on fd (non-blocking; the device's to
 * close from add on). */
struct virtio_net_options {
	int fd;
	enum virtio_net_framing framing;
	uint8_t mac[6];
	uint16_t mtu; /* offered to the guest (VIRTIO_NET_F_MTU) */
};

/* What the device counts, for -v and --json: frames and bytes each way,
 * and every frame dropped, by reason. */
enum virtio_net_counter {
	NET_RX_FRAMES,
	NET_RX_BYTES,
	NET_TX_FRAMES,
	NET_TX_BYTES,
	NET_RX_DROP_NO_ROOM,  /* larger than every buffer the guest posted */
	NET_RX_DROP_BAD_CHAIN, /* a receive chain outside RAM or unwritable */
	NET_TX_DROP_RUNT,      /* shorter than an Ethernet header */
	NET_TX_DROP_OVERSIZED, /* longer than the negotiated size */
	NET_TX_DROP_BAD_CHAIN, /* outside guest RAM, or writable */
	NET_TX_DROP_BACKEND,   /* the backend refused it (a tap's EINVAL) */
	NET_RING_ERRORS,       /* malformed rings: the queue stops */
	NET_BACKEND_ERRORS,    /* the backend failed or hung up */
	NET_NR_COUNTERS
};

struct net_rx;
struct net_tx;

struct virtio_net {
	struct virtio_dev dev;
	struct virtio_net_config config;
	int fd;
	enum virtio_net_framing framing;
	/* While live (DRIVER_OK to reset): the queues, what was negotiated,
	 * and the thread that moves frames both ways. */
	struct virtio_queue *rxq, *txq;
	bool mergeable, guest_csum;
	size_t max_tx_frame, max_rx_frame;
	pthread_t thread;
	bool running;
	int epoll_fd, stop_fd;
	uint32_t fd_events; /* what the thread waits for on fd */
	bool fd_watched;    /* fd is in the thread's epoll set */
	bool backend_dead;
	size_t tx_pad; /* what a stream owes for a frame a reset cut */
	uint32_t tx_pad_prefix; /* that frame's length, as it went */
	struct net_rx *rx;
	struct net_tx *tx;
	_Atomic uint64_t counts[NET_NR_COUNTERS];
};

/* Creates the device for fd; n->dev is then for a transport. */
int virtio_net_create(struct virtio_net *n,
		      const struct virtio_net_options *o);

/* The name of a counter, as -v and --json show it. */
const char *virtio_net_counter_name(enum virtio_net_counter c);

#endif
