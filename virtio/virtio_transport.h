/* A virtio device's life as its driver leads it (virtio 1.2, 2.1, 3.1),
 * once for every transport: the device status rules, feature
 * negotiation, the driver's queue set-up, starting the device at
 * DRIVER_OK and stopping it at reset. A transport keeps its register
 * layout, its doorbells and its interrupts (struct virtio_transport_ops),
 * and calls in here for every register that moves the life cycle. Every
 * value comes from the guest and is checked here. Callers hold their
 * transport's lock. */
#ifndef FSVM_VIRTIO_TRANSPORT_H
#define FSVM_VIRTIO_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/guest_mem.h"
#include "core/state_blob.h"
#include "core/vm.h"
#include "virtio/virtio_dev.h"

#define VIRTIO_TRANSPORT_MAX_QUEUES 64

/* One queue's rings as the driver programs them before DRIVER_OK: their
 * size, guest addresses and whether the queue is enabled. */
struct ring_setup {
	uint16_t size;
	bool enabled;
	uint64_t desc, avail, used;
};

enum ring_part { RING_DESC, RING_AVAIL, RING_USED };

struct virtio_transport;

/* What differs between transports beyond their registers. */
struct virtio_transport_ops {
	/* Hands the enabled queues' doorbells to KVM (assign) or takes them
	 * back; until then a doorbell write exits and is forwarded with
	 * virtio_transport_notify(). */
	void (*doorbells)(struct virtio_transport *t, bool assign);
	/* The eventfd that raises enabled queue q's interrupt; -1: none. */
	int (*call_fd)(struct virtio_transport *t, unsigned int q);
	/* After a reset (the device stopped): the transport's own registers
	 * (interrupt vectors or cause, selectors) go back to their start. */
	void (*reset)(struct virtio_transport *t);
};

struct virtio_transport {
	const struct virtio_dev *dev;
	const struct guest_mem *mem;
	const struct virtio_transport_ops *ops;
	void *opaque;     /* the transport's own, for ops */
	const char *name; /* "virtio-pci", "virtio-mmio": for messages */

	uint32_t device_feature_select;
	uint32_t driver_feature_select;
	uint64_t driver_features;
	uint32_t queue_select;
	uint8_t status;
	bool active; /* DRIVER_OK seen and the device started */
	struct ring_setup rings[VIRTIO_TRANSPORT_MAX_QUEUES];
	struct virtio_queue queues[VIRTIO_TRANSPORT_MAX_QUEUES];
};

/* Makes every queue's kick eventfd and resets the transport. Returns 0,
 * or -EINVAL for a device with no queues or too many, or -errno. */
int virtio_transport_init(struct virtio_transport *t,
			  const struct virtio_dev *dev,
			  const struct guest_mem *mem,
			  const struct virtio_transport_ops *ops,
			  void *opaque, const char *name);

/* The device's and the driver's features at their selectors' words. */
uint32_t virtio_transport_device_features(const struct virtio_transport *t);
uint32_t virtio_transport_driver_features(const struct virtio_transport *t);

/* The setters return false for a write the spec does not allow then, or
 * a value the device cannot take; such a write changes nothing. */

/* Word driver_feature_select of the driver's features, before
 * FEATURES_OK only. */
bool virtio_transport_set_driver_features(struct virtio_transport *t,
					  uint32_t word);

/* The driver writes the device status. 0 resets: the device stops (its
 * requests in flight end first) and every register is as at start.
 * Otherwise bits only accumulate: the driver never clears one, nor sets
 * NEEDS_RESET; FEATURES_OK sticks only for offered features including
 * VERSION_1 (no legacy drivers); DRIVER_OK on top of FEATURES_OK starts
 * the device unless the driver gave up on it (FAILED), and a device that
 * cannot start on the driver's rings needs a reset. */
void virtio_transport_set_status(struct virtio_transport *t, uint8_t status);

/* The queue queue_select names; NULL past the device's queues. */
struct ring_setup *virtio_transport_selected(struct virtio_transport *t);

/* True until the driver sets DRIVER_OK: queues may be set up until then,
 * and again only after a reset. */
bool virtio_transport_setting_up(const struct virtio_transport *t);

/* The selected queue's set-up, while setting up. Its size (a power of
 * two up to the device's maximum, split rings) and ring addresses only
 * while it is not enabled. */
bool virtio_transport_set_queue_size(struct virtio_transport *t,
				     uint32_t size);
bool virtio_transport_set_ring(struct virtio_transport *t,
			       enum ring_part part, bool high, uint32_t half);
bool virtio_transport_set_queue_enabled(struct virtio_transport *t,
					bool enabled);

/* A doorbell write that exited (no KVM doorbell yet, or none for a
 * device with its own notify): kicks queue q if the driver enabled it,
 * or hands q to the device's notify. The one call here made without the
 * transport's lock, and only for a device with notify. */
void virtio_transport_notify(struct virtio_transport *t, uint32_t q);

/* For a snapshot (docs/snapshot.md): the status, the negotiated features,
 * the selectors, each queue's set-up and where its rings stand. The
 * device must be quiescent: no chain taken and not yet returned. */
void virtio_transport_save(const struct virtio_transport *t,
			   struct state_out *out);
/* Into a transport as new, what save wrote: the driver's set-up replayed
 * through the checks its register writes meet, then, if the device was
 * running, its start on rings that go on where they stood. Returns 0, or
 * -EBADMSG with a line in err and the transport as new again. */
int virtio_transport_restore(struct virtio_transport *t, struct state_in *in,
			     char *err, size_t errlen);

/* For ops->doorbells (nothing for a device with notify): queue q's
 * doorbell is a len-byte write at addr + q * stride, a port when pio;
 * with stride 0 all queues share one register and KVM tells them apart
 * by the value written, the queue's index. */
void virtio_transport_doorbells(const struct virtio_transport *t,
				struct vm *vm, bool pio, uint64_t addr,
				uint64_t stride, unsigned int len, bool assign);

#endif
