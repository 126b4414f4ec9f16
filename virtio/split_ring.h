/* Split virtqueue engine: walks descriptor chains the guest made available,
 * translating every buffer through the guest-memory accessor, and returns
 * them as used. Every index and descriptor is treated as hostile. */
#ifndef FSVM_SPLIT_RING_H
#define FSVM_SPLIT_RING_H

#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/guest_mem.h"

#define SPLIT_RING_MAX_SIZE 32768
/* Enough for a 1 MiB FUSE request in 4 KiB pages plus its headers. */
#define DESC_CHAIN_MAX_SEGS 1024

struct split_ring {
	const struct guest_mem *mem;
	uint16_t size;
	bool event_idx;     /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool indirect;      /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t *used_event;  /* guest: interrupt me past this used index */
	uint16_t *avail_event; /* device: notify me past this avail index */
	uint16_t last_avail; /* next available entry to take */
	uint16_t used_idx;   /* our copy of used->idx */
	uint16_t signalled;  /* used_idx at the last interrupt */
	bool signalled_valid;
};

/* One descriptor chain: device-readable buffers first, then writable. */
struct desc_chain {
	uint16_t head;
	/* A buffer lay outside guest RAM and is left out: the request can only
	 * be failed. The guest's own direct I/O does that with a buffer in a
	 * DAX window (a mapped file's page), so it must not break the queue. */
	bool unreachable;
	int nr_readable;
	int nr_writable;
	struct iovec readable[DESC_CHAIN_MAX_SEGS];
	struct iovec writable[DESC_CHAIN_MAX_SEGS];
};

/* Validates and maps the rings at the given guest addresses. */
int split_ring_init(struct split_ring *q, const struct guest_mem *mem,
		    uint16_t size, uint64_t desc_gpa, uint64_t avail_gpa,
		    uint64_t used_gpa, bool event_idx, bool indirect);

/* Takes the next available chain. Returns 1 with *chain filled, 0 when the
 * ring is empty, or a negative errno for a malformed ring or chain (the
 * device must then stop using the queue). A buffer outside guest RAM is
 * not malformed: see desc_chain.unreachable. */
int split_ring_pop(struct split_ring *q, struct desc_chain *chain);

/* Returns a chain to the guest with len bytes written into it. */
void split_ring_push(struct split_ring *q, uint16_t head, uint32_t len);

/* True when the guest wants an interrupt for what was pushed since the
 * last one (honours EVENT_IDX / VRING_AVAIL_F_NO_INTERRUPT). */
bool split_ring_should_interrupt(struct split_ring *q);

/* Asks the guest not to notify (while draining) or to notify again. With
 * enable, returns true if buffers arrived meanwhile (drain again). */
bool split_ring_set_notification(struct split_ring *q, bool enable);

/* Gives back the last n chains taken and not pushed: the next pops take
 * them again (a receive queue that took buffers for a frame that did not
 * come, or did not fit). n must not exceed the chains taken since. */
void split_ring_unpop(struct split_ring *q, uint16_t n);

/* Asks the guest to notify once it posts buffers beyond those it has
 * posted now, taken or not: a receive queue whose buffers are too few for
 * the next frame waits for more. Returns true if more came meanwhile. */
bool split_ring_notify_on_more(struct split_ring *q);

/* The guest's available index as it stands: how many chains it has posted
 * (modulo 2^16), taken or not. */
uint16_t split_ring_avail_idx(const struct split_ring *q);

#endif
