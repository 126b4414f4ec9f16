/* Bookkeeping shared by the virtio transports (virtio 1.2, 2.1-2.2, 3.1). */
#include "virtio/virtio_transport.h"

#include <linux/virtio_config.h>
#include <string.h>

#include "vmm/core/log.h"

uint32_t virtio_feature_word(uint64_t features, uint32_t sel)
{
	return sel < 2 ? (uint32_t)(features >> (32 * sel)) : 0;
}

void virtio_set_feature_word(uint64_t *features, uint32_t sel, uint32_t v)
{
	if (sel >= 2)
		return;
	uint64_t mask = 0xffffffffULL << (32 * sel);
	*features = (*features & ~mask) | ((uint64_t)v << (32 * sel));
}

void virtio_set_half(uint64_t *v, bool high, uint32_t half)
{
	if (high)
		*v = (*v & 0xffffffffULL) | ((uint64_t)half << 32);
	else
		*v = (*v & ~0xffffffffULL) | half;
}

bool virtio_queue_size_ok(const struct virtio_dev *dev, uint32_t size)
{
	return size && size <= dev->queue_max_size && !(size & (size - 1));
}

bool virtio_status_write(const struct virtio_dev *dev, uint8_t *status,
			 uint8_t written, uint64_t driver_features)
{
	uint8_t added = written & (uint8_t)~*status &
			(uint8_t)~VIRTIO_CONFIG_S_NEEDS_RESET;
	if ((added & VIRTIO_CONFIG_S_FEATURES_OK) &&
	    ((driver_features & ~dev->features) ||
	     !(driver_features & (1ULL << VIRTIO_F_VERSION_1))))
		added &= (uint8_t)~VIRTIO_CONFIG_S_FEATURES_OK;
	*status |= added;
	return (added & VIRTIO_CONFIG_S_DRIVER_OK) &&
	       (*status & VIRTIO_CONFIG_S_FEATURES_OK);
}

static int queues_map(const struct virtio_dev *dev, const struct guest_mem *mem,
		      const struct ring_setup *cfg,
		      struct virtio_queue *queues, uint64_t features,
		      const char *transport)
{
	bool event_idx = features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
	bool indirect = features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	for (unsigned int q = 0; q < dev->num_queues; q++) {
		if (!cfg[q].enabled) {
			/* No rings (size 0): the device must not touch it. */
			memset(&queues[q].ring, 0, sizeof(queues[q].ring));
			continue;
		}
		int err = split_ring_init(&queues[q].ring, mem, cfg[q].size,
				     cfg[q].desc, cfg[q].avail, cfg[q].used,
				     event_idx, indirect);
		if (err) {
			log_error("%s: queue %u has bad rings: %s", transport,
				  q, strerror(-err));
			return err;
		}
	}
	return 0;
}

bool virtio_device_start(const struct virtio_dev *dev,
			 const struct guest_mem *mem,
			 const struct ring_setup *cfg,
			 struct virtio_queue *queues, uint64_t features,
			 uint8_t *status, const char *transport)
{
	int err = queues_map(dev, mem, cfg, queues, features, transport);
	if (!err) {
		err = dev->activate(dev->opaque, queues, dev->num_queues,
				    features);
		if (err)
			log_error("%s: device %u failed to start: %s",
				  transport, dev->device_id, strerror(-err));
	}
	if (err)
		*status |= VIRTIO_CONFIG_S_NEEDS_RESET;
	return !err;
}
