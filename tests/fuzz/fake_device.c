/* The transport fuzzers' device: the checks of what a device is promised,
 * and a worker that uses every buffer it is handed. */
#include "tests/fuzz/fake_device.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/harness.h"

static bool in_ram(const struct guest_mem *mem, const void *p, uint64_t len)
{
	const uint8_t *b = p;
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->regions[i];
		if (b >= r->hva && len <= r->size &&
		    (uint64_t)(b - r->hva) <= r->size - len)
			return true;
	}
	return false;
}

static bool has(uint64_t features, unsigned int bit)
{
	return features & (1ULL << bit);
}

/* A live queue's rings lie in guest RAM with the negotiated layout, each
 * with the 16-bit event field after it. */
static void check_rings(const struct fake_device *f, unsigned int q,
			const struct split_ring *vq, uint64_t features)
{
	uint16_t n = vq->size;
	fuzz_assert(n <= f->dev.queue_max_size && !(n & (n - 1)),
		    "queue %u of size %u", q, n);
	fuzz_assert(vq->mem == f->mem, "queue %u in other memory", q);
	fuzz_assert(in_ram(f->mem, vq->desc, sizeof(struct vring_desc) * n) &&
		    in_ram(f->mem, vq->avail,
			   sizeof(struct vring_avail) + 2ULL * n + 2) &&
		    in_ram(f->mem, vq->used,
			   sizeof(struct vring_used) +
				   sizeof(struct vring_used_elem) * n + 2),
		    "queue %u has rings outside guest RAM", q);
	fuzz_assert(vq->event_idx == has(features, VIRTIO_RING_F_EVENT_IDX) &&
		    vq->indirect == has(features, VIRTIO_RING_F_INDIRECT_DESC),
		    "queue %u does not follow the features", q);
}

static int fake_activate(void *opaque, struct virtio_queue *queues,
			 unsigned int nr, uint64_t features)
{
	struct fake_device *f = opaque;
	fuzz_assert(!f->active, "activated twice without a reset");
	if (f->refuse_start) {
		f->refuse_start = false;
		return -EAGAIN;
	}
	fuzz_assert(nr == f->dev.num_queues, "%u queues of %u", nr,
		    f->dev.num_queues);
	fuzz_assert(!(features & ~f->dev.features) &&
		    has(features, VIRTIO_F_VERSION_1),
		    "started with features %#llx", (unsigned long long)features);
	for (unsigned int q = 0; q < nr; q++) {
		fuzz_assert(queues[q].kick_fd >= 0, "queue %u has no doorbell", q);
		if (queues[q].ring.size)
			check_rings(f, q, &queues[q].ring, features);
		f->given[q] = queues[q].ring;
		f->broken[q] = false;
	}
	f->queues = queues;
	f->active = true;
	return 0;
}

static void fake_reset(void *opaque)
{
	struct fake_device *f = opaque;
	fuzz_assert(f->active, "reset without an activation");
	f->active = false;
	f->queues = NULL;
}

void fake_device_init(struct fake_device *f, const struct guest_mem *mem,
		      uint16_t num_queues, uint16_t queue_max_size,
		      uint64_t features, uint64_t shm_size, void *shm_hva)
{
	memset(f, 0, sizeof(*f));
	f->mem = mem;
	for (unsigned int i = 0; i < sizeof(f->config); i++)
		f->config[i] = (uint8_t)(0xc0 + i);
	f->dev = (struct virtio_dev){
		.device_id = 26, .features = features, .num_queues = num_queues,
		.queue_max_size = queue_max_size, .config = f->config,
		.config_len = sizeof(f->config), .shm_id = 0,
		.shm_size = shm_size, .shm_hva = shm_hva,
		.activate = fake_activate, .reset = fake_reset, .opaque = f};
}

void fake_device_check(const struct fake_device *f)
{
	if (!f->active)
		return;
	for (unsigned int q = 0; q < f->dev.num_queues; q++) {
		const struct split_ring *now = &f->queues[q].ring;
		const struct split_ring *was = &f->given[q];
		fuzz_assert(now->mem == was->mem && now->size == was->size &&
			    now->desc == was->desc && now->avail == was->avail &&
			    now->used == was->used &&
			    now->used_event == was->used_event &&
			    now->avail_event == was->avail_event &&
			    now->event_idx == was->event_idx &&
			    now->indirect == was->indirect,
			    "live queue %u changed under the device", q);
	}
}

/* Where the bytes read from guest buffers go, so the reads stay. */
static volatile uint8_t read_sum;

/* Reads what the driver wrote, fills what it gave to be written; returns
 * the bytes written. */
static uint32_t use_chain(const struct fake_device *f,
			  const struct desc_chain *c)
{
	uint64_t written = 0;
	fuzz_assert(c->nr_readable <= DESC_CHAIN_MAX_SEGS &&
		    c->nr_writable <= DESC_CHAIN_MAX_SEGS,
		    "chain of %d+%d buffers", c->nr_readable, c->nr_writable);
	for (int i = 0; i < c->nr_readable; i++) {
		const struct iovec *v = &c->readable[i];
		fuzz_assert(in_ram(f->mem, v->iov_base, v->iov_len),
			    "readable buffer %d outside guest RAM", i);
		for (size_t b = 0; b < v->iov_len; b++)
			read_sum += ((const uint8_t *)v->iov_base)[b];
	}
	for (int i = 0; i < c->nr_writable; i++) {
		const struct iovec *v = &c->writable[i];
		fuzz_assert(in_ram(f->mem, v->iov_base, v->iov_len),
			    "writable buffer %d outside guest RAM", i);
		memset(v->iov_base, 0x5a, v->iov_len);
		written += v->iov_len;
	}
	return written > UINT32_MAX ? UINT32_MAX : (uint32_t)written;
}

/* As the virtio-fs worker drains a queue: notifications off while it
 * runs, and again if buffers came meanwhile. */
static void drain(struct fake_device *f, unsigned int q)
{
	struct virtio_queue *queue = &f->queues[q];
	do {
		split_ring_set_notification(&queue->ring, false);
		int got;
		while ((got = split_ring_pop(&queue->ring, &f->chain)) > 0) {
			/* A chain with a buffer out of reach is answered
			 * too (virtio-fs fails it): its other buffers are
			 * used all the same. */
			split_ring_push(&queue->ring, f->chain.head,
				   use_chain(f, &f->chain));
			virtio_queue_interrupt(queue);
		}
		if (got < 0) {
			f->broken[q] = true;
			return;
		}
	} while (split_ring_set_notification(&queue->ring, true));
}

void fake_device_serve(struct fake_device *f)
{
	if (!f->active)
		return;
	for (unsigned int q = 0; q < f->dev.num_queues; q++) {
		uint64_t kicks;
		if (read(f->queues[q].kick_fd, &kicks, sizeof(kicks)) ==
			    sizeof(kicks) &&
		    f->queues[q].ring.size && !f->broken[q])
			drain(f, q);
	}
}
