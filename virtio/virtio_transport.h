/* What the virtio-pci and virtio-mmio transports do alike: feature words,
 * the driver's queue set-up, the device status rules, and mapping the
 * rings at DRIVER_OK. Callers hold their transport's lock. */
#ifndef FSVM_VIRTIO_TRANSPORT_H
#define FSVM_VIRTIO_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/virtio_dev.h"
#include "vmm/core/guest_mem.h"

/* One queue's rings as the driver programs them before DRIVER_OK: their
 * size, guest addresses and whether the queue is enabled. */
struct ring_setup {
	uint16_t size;
	bool enabled;
	uint64_t desc, avail, used;
};

/* 32-bit word sel of a feature set; 0 past the second word. */
uint32_t virtio_feature_word(uint64_t features, uint32_t sel);
/* Sets word sel of *features; ignored past the second word. */
void virtio_set_feature_word(uint64_t *features, uint32_t sel, uint32_t v);
/* Sets the low or high half of a 64-bit ring address. */
void virtio_set_half(uint64_t *v, bool high, uint32_t half);
/* A size the driver may give a queue: a power of two up to the maximum
 * (split rings). */
bool virtio_queue_size_ok(const struct virtio_dev *dev, uint32_t size);

/* The driver wrote a non-zero status (zero is a reset, the transport's
 * job). Bits only accumulate, as the driver may never clear one;
 * FEATURES_OK sticks only for offered features including VERSION_1 (no
 * legacy drivers); NEEDS_RESET is the device's. Returns true when the
 * device is to start: DRIVER_OK newly set on top of FEATURES_OK. */
bool virtio_status_write(const struct virtio_dev *dev, uint8_t *status,
			 uint8_t written, uint64_t driver_features);

/* DRIVER_OK: maps the rings of every enabled queue with the negotiated
 * features (a disabled one is left with size 0) and starts the device on
 * them; the transport has set each call_fd. On failure, says why and sets
 * NEEDS_RESET in *status. Returns true when the device runs. */
bool virtio_device_start(const struct virtio_dev *dev,
			 const struct guest_mem *mem,
			 const struct ring_setup *cfg,
			 struct virtio_queue *queues, uint64_t features,
			 uint8_t *status, const char *transport);

#endif
