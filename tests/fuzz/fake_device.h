/* A virtio device for the transport fuzzers: it holds a transport to what
 * it promises a device, and serves the queues the guest kicks as a real
 * device's worker would, touching every buffer it is handed. */
#ifndef FSVM_FUZZ_FAKE_DEVICE_H
#define FSVM_FUZZ_FAKE_DEVICE_H

#include <stdbool.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <stdint.h>

#include "core/guest_mem.h"
#include "virtio/virtio_dev.h"

#define FAKE_MAX_QUEUES 64
/* Feature shorthands for the devices the targets offer. */
#define RING_FEATURES ((1ULL << VIRTIO_RING_F_EVENT_IDX) | \
		       (1ULL << VIRTIO_RING_F_INDIRECT_DESC))
#define VERSION_1 (1ULL << VIRTIO_F_VERSION_1)

struct fake_device {
	struct virtio_dev dev; /* what the transport is given */
	const struct guest_mem *mem; /* where every buffer must lie */
	uint8_t config[24];
	/* From activation to reset: the queues it runs on, as handed over. */
	bool active;
	struct virtio_queue *queues;
	struct split_ring given[FAKE_MAX_QUEUES];
	bool broken[FAKE_MAX_QUEUES]; /* a malformed ring: ignored until reset */
	/* The next start fails, as a device's that cannot start its threads. */
	bool refuse_start;
	struct desc_chain chain;
};

/* A device with num_queues queues of up to queue_max_size entries offering
 * features, and a shared memory region of shm_size bytes at shm_hva. */
void fake_device_init(struct fake_device *f, const struct guest_mem *mem,
		      uint16_t num_queues, uint16_t queue_max_size,
		      uint64_t features, uint64_t shm_size, void *shm_hva);

/* After every guest access: the rings it runs on have not moved. */
void fake_device_check(const struct fake_device *f);

/* Runs what the guest made available on every queue it kicked. */
void fake_device_serve(struct fake_device *f);

#endif
