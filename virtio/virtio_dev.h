/* What a virtio device offers a transport: identity, features, queues,
 * config space, shared memory, and what happens at DRIVER_OK and reset.
 * Transports wrap a device; they never write into its table. */
#ifndef FSVM_VIRTIO_DEV_H
#define FSVM_VIRTIO_DEV_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "virtio/split_ring.h"

/* One queue as the device sees it once the driver is ready. */
struct virtio_queue {
	struct split_ring ring;
	int kick_fd; /* readable after the guest notified this queue */
	int call_fd; /* written to raise the queue's interrupt; -1: none */
	/* Where the transport keeps the interrupt's cause for a driver that
	 * reads it (virtio-mmio): bit 0, used buffer, is set before call_fd
	 * is written. NULL: none (MSI-X). */
	atomic_uint *int_status;
};

struct virtio_dev {
	uint16_t device_id;
	uint64_t features;     /* device and ring features offered */
	uint16_t num_queues;
	uint16_t queue_max_size;
	const void *config;    /* device-specific config space (read-only) */
	size_t config_len;
	/* A shared memory region (virtio 1.2, 2.10); size 0: none. */
	uint8_t shm_id;
	uint64_t shm_size;
	void *shm_hva;         /* host memory behind it, for a KVM slot */
	/* The driver set DRIVER_OK: queues are live. Returns 0 or -errno. */
	int (*activate)(void *opaque, struct virtio_queue *queues,
			unsigned int nr, uint64_t features);
	/* The driver reset the device: stop using every queue. */
	void (*reset)(void *opaque);
	/* The driver rang queue q's doorbell (q below num_queues, enabled or
	 * not): runs on the vCPU thread that rang it, under no transport
	 * lock, so a device may answer shallow requests right there (a round
	 * trip with no thread switch) and must check its own state. NULL:
	 * the transport writes the queue's kick_fd, through a KVM ioeventfd
	 * once the device is live. */
	void (*notify)(void *opaque, unsigned int q);
	void *opaque;
};

/* Raises the queue's interrupt if the guest asked for one. */
void virtio_queue_interrupt(struct virtio_queue *q);

#endif
