/* The life cycle every virtio transport shares (virtio 1.2, 2.1-2.2, 3.1). */
#include "virtio/virtio_transport.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/kvm.h"
#include "core/log.h"

static void reset(struct virtio_transport *t)
{
	if (t->active) {
		/* The device first: it returns once no request of its runs;
		 * then the doorbells go, and below the kicks left. */
		t->dev->reset(t->dev->opaque);
		t->ops->doorbells(t, false);
		t->active = false;
	}
	for (unsigned int q = 0; q < t->dev->num_queues; q++) {
		t->rings[q] =
			(struct ring_setup){.size = t->dev->queue_max_size};
		t->queues[q].call_fd = -1;
		uint64_t drain;
		while (read(t->queues[q].kick_fd, &drain, sizeof(drain)) > 0)
			;
	}
	t->device_feature_select = t->driver_feature_select = 0;
	t->driver_features = 0;
	t->queue_select = 0;
	t->status = 0;
	t->ops->reset(t);
}

int virtio_transport_init(struct virtio_transport *t,
			  const struct virtio_dev *dev,
			  const struct guest_mem *mem,
			  const struct virtio_transport_ops *ops,
			  void *opaque, const char *name)
{
	memset(t, 0, sizeof(*t));
	if (dev->num_queues == 0 ||
	    dev->num_queues > VIRTIO_TRANSPORT_MAX_QUEUES)
		return -EINVAL;
	t->dev = dev;
	t->mem = mem;
	t->ops = ops;
	t->opaque = opaque;
	t->name = name;
	for (unsigned int q = 0; q < dev->num_queues; q++) {
		t->queues[q].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (t->queues[q].kick_fd < 0)
			return -errno;
	}
	reset(t);
	return 0;
}

/* Word sel of a feature set; 0 past the second (no feature is above 63). */
static uint32_t feature_word(uint64_t features, uint32_t sel)
{
	return sel < 2 ? (uint32_t)(features >> (32 * sel)) : 0;
}

uint32_t virtio_transport_device_features(const struct virtio_transport *t)
{
	return feature_word(t->dev->features, t->device_feature_select);
}

uint32_t virtio_transport_driver_features(const struct virtio_transport *t)
{
	return feature_word(t->driver_features, t->driver_feature_select);
}

bool virtio_transport_set_driver_features(struct virtio_transport *t,
					  uint32_t word)
{
	uint32_t sel = t->driver_feature_select;
	if (t->status & VIRTIO_CONFIG_S_FEATURES_OK)
		return false; /* negotiation is over until a reset */
	if (sel < 2) {
		uint64_t mask = 0xffffffffULL << (32 * sel);
		t->driver_features = (t->driver_features & ~mask) |
				     ((uint64_t)word << (32 * sel));
	}
	return true;
}

/* The rings of every enabled queue, with the negotiated features; a
 * disabled one is left with size 0, which the device must not touch. */
static int map_rings(struct virtio_transport *t)
{
	bool event_idx = t->driver_features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
	bool indirect =
		t->driver_features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	for (unsigned int q = 0; q < t->dev->num_queues; q++) {
		const struct ring_setup *r = &t->rings[q];
		struct split_ring *ring = &t->queues[q].ring;
		if (!r->enabled) {
			memset(ring, 0, sizeof(*ring));
			continue;
		}
		int err = split_ring_init(ring, t->mem, r->size, r->desc,
					  r->avail, r->used, event_idx,
					  indirect);
		if (err) {
			log_error("%s: queue %u has bad rings: %s", t->name, q,
				  strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Where a running queue's rings stood, for a restore. */
struct ring_position {
	uint16_t last_avail, used_idx, signalled;
	bool signalled_valid;
};

/* DRIVER_OK: interrupts first, the device started on its rings (from
 * their start, or at, from a snapshot), then doorbells. Any failure leaves
 * the device in DEVICE_NEEDS_RESET. */
static void start(struct virtio_transport *t, const struct ring_position *at)
{
	for (unsigned int q = 0; q < t->dev->num_queues; q++)
		t->queues[q].call_fd =
			t->rings[q].enabled ? t->ops->call_fd(t, q) : -1;
	int err = map_rings(t);
	for (unsigned int q = 0; at && !err && q < t->dev->num_queues; q++) {
		struct split_ring *ring = &t->queues[q].ring;
		ring->last_avail = at[q].last_avail;
		ring->used_idx = at[q].used_idx;
		ring->signalled = at[q].signalled;
		ring->signalled_valid = at[q].signalled_valid;
	}
	if (!err) {
		err = t->dev->activate(t->dev->opaque, t->queues,
				       t->dev->num_queues, t->driver_features);
		if (err)
			log_error("%s: device %u failed to start: %s", t->name,
				  t->dev->device_id, strerror(-err));
	}
	if (err) {
		t->status |= VIRTIO_CONFIG_S_NEEDS_RESET;
		return;
	}
	t->active = true;
	t->ops->doorbells(t, true);
}

static bool features_acceptable(const struct virtio_transport *t)
{
	return !(t->driver_features & ~t->dev->features) &&
	       (t->driver_features & (1ULL << VIRTIO_F_VERSION_1));
}

void virtio_transport_set_status(struct virtio_transport *t, uint8_t status)
{
	if (status == 0) {
		reset(t);
		return;
	}
	uint8_t added = status & (uint8_t)~t->status &
			(uint8_t)~VIRTIO_CONFIG_S_NEEDS_RESET;
	if ((added & VIRTIO_CONFIG_S_FEATURES_OK) && !features_acceptable(t))
		added &= (uint8_t)~VIRTIO_CONFIG_S_FEATURES_OK;
	t->status |= added;
	/* A driver that gave up (FAILED) resets before it tries again. */
	if ((added & VIRTIO_CONFIG_S_DRIVER_OK) &&
	    (t->status & VIRTIO_CONFIG_S_FEATURES_OK) &&
	    !(t->status & VIRTIO_CONFIG_S_FAILED))
		start(t, NULL);
}

struct ring_setup *virtio_transport_selected(struct virtio_transport *t)
{
	return t->queue_select < t->dev->num_queues
		       ? &t->rings[t->queue_select]
		       : NULL;
}

bool virtio_transport_setting_up(const struct virtio_transport *t)
{
	/* Not only while the device runs: after a failed start too, the
	 * queues stay as the device was given them until a reset. */
	return !(t->status & VIRTIO_CONFIG_S_DRIVER_OK);
}

/* The selected queue if its set-up may change, and its rings too when
 * layout is set. */
static struct ring_setup *to_set_up(struct virtio_transport *t, bool layout)
{
	struct ring_setup *r = virtio_transport_selected(t);
	if (!r || !virtio_transport_setting_up(t) || (layout && r->enabled))
		return NULL;
	return r;
}

bool virtio_transport_set_queue_size(struct virtio_transport *t,
				     uint32_t size)
{
	struct ring_setup *r = to_set_up(t, true);
	if (!r || !size || size > t->dev->queue_max_size ||
	    (size & (size - 1)))
		return false;
	r->size = (uint16_t)size;
	return true;
}

bool virtio_transport_set_ring(struct virtio_transport *t,
			       enum ring_part part, bool high, uint32_t half)
{
	struct ring_setup *r = to_set_up(t, true);
	if (!r)
		return false;
	uint64_t *addr = part == RING_DESC    ? &r->desc
			 : part == RING_AVAIL ? &r->avail
					      : &r->used;
	if (high)
		*addr = (*addr & 0xffffffffULL) | ((uint64_t)half << 32);
	else
		*addr = (*addr & ~0xffffffffULL) | half;
	return true;
}

bool virtio_transport_set_queue_enabled(struct virtio_transport *t,
					bool enabled)
{
	struct ring_setup *r = to_set_up(t, false);
	if (!r)
		return false;
	r->enabled = enabled;
	return true;
}

void virtio_transport_notify(struct virtio_transport *t, uint32_t q)
{
	if (t->dev->notify) {
		/* No lock, no ring state: the device keeps its own. */
		if (q < t->dev->num_queues)
			t->dev->notify(t->dev->opaque, q);
		return;
	}
	uint64_t one = 1;
	if (q < t->dev->num_queues && t->rings[q].enabled &&
	    write(t->queues[q].kick_fd, &one, sizeof(one)) < 0)
		log_error("%s: kick queue %u: %s", t->name, q, strerror(errno));
}

void virtio_transport_doorbells(const struct virtio_transport *t,
				struct vm *vm, bool pio, uint64_t addr,
				uint64_t stride, unsigned int len, bool assign)
{
	/* A device that answers on the ringing vCPU needs every doorbell
	 * to exit to it. */
	if (t->dev->notify)
		return;
	for (unsigned int q = 0; q < t->dev->num_queues; q++) {
		if (!t->rings[q].enabled)
			continue;
		int err = kvm_set_doorbell(vm, pio, addr + q * stride, len,
					   stride ? -1 : (int64_t)q,
					   t->queues[q].kick_fd, assign);
		if (err)
			log_error("%s: doorbell for queue %u: %s", t->name, q,
				  strerror(-err));
	}
}

void virtio_transport_save(const struct virtio_transport *t,
			   struct state_out *out)
{
	state_put_u16(out, t->dev->num_queues);
	state_put_u8(out, t->status);
	state_put_u8(out, t->active);
	state_put_u32(out, t->device_feature_select);
	state_put_u32(out, t->driver_feature_select);
	state_put_u32(out, t->queue_select);
	state_put_u64(out, t->driver_features);
	for (unsigned int q = 0; q < t->dev->num_queues; q++) {
		const struct ring_setup *r = &t->rings[q];
		const struct split_ring *ring = &t->queues[q].ring;
		state_put_u16(out, r->size);
		state_put_u8(out, r->enabled);
		state_put_u64(out, r->desc);
		state_put_u64(out, r->avail);
		state_put_u64(out, r->used);
		state_put_u16(out, ring->last_avail);
		state_put_u16(out, ring->used_idx);
		state_put_u16(out, ring->signalled);
		state_put_u8(out, ring->signalled_valid);
	}
}

/* The driver's writes, as it made them: false for one the device refused. */
static bool replay_queue(struct virtio_transport *t, unsigned int q,
			 const struct ring_setup *r)
{
	t->queue_select = q;
	const uint64_t addr[] = {r->desc, r->avail, r->used};
	bool ok = virtio_transport_set_queue_size(t, r->size);
	for (enum ring_part part = RING_DESC; part <= RING_USED; part++)
		ok = ok && virtio_transport_set_ring(t, part, false, (uint32_t)addr[part]) &&
		     virtio_transport_set_ring(t, part, true, (uint32_t)(addr[part] >> 32));
	return ok && virtio_transport_set_queue_enabled(t, r->enabled);
}

static int refuse(struct virtio_transport *t, char *err, size_t errlen,
		  const char *why)
{
	reset(t);
	return log_refusal(-EBADMSG, err, errlen, "%s: %s", t->name, why);
}

int virtio_transport_restore(struct virtio_transport *t, struct state_in *in,
			     char *err, size_t errlen)
{
	unsigned int nr = t->dev->num_queues;
	if (state_get_u16(in) != nr)
		return refuse(t, err, errlen, "another number of queues than the device's");
	uint8_t status = state_get_u8(in);
	bool active = state_get_u8(in);
	uint32_t device_select = state_get_u32(in), driver_select = state_get_u32(in);
	uint32_t queue_select = state_get_u32(in);
	uint64_t features = state_get_u64(in);
	struct ring_setup rings[VIRTIO_TRANSPORT_MAX_QUEUES];
	struct ring_position at[VIRTIO_TRANSPORT_MAX_QUEUES];
	for (unsigned int q = 0; q < nr; q++) {
		rings[q].size = state_get_u16(in);
		rings[q].enabled = state_get_u8(in);
		rings[q].desc = state_get_u64(in);
		rings[q].avail = state_get_u64(in);
		rings[q].used = state_get_u64(in);
		at[q].last_avail = state_get_u16(in);
		at[q].used_idx = state_get_u16(in);
		at[q].signalled = state_get_u16(in);
		at[q].signalled_valid = state_get_u8(in);
	}
	if (in->short_read)
		return refuse(t, err, errlen, "its state is cut short");

	const uint8_t setup = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			      VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_FAILED;
	virtio_transport_set_status(t, status & (VIRTIO_CONFIG_S_ACKNOWLEDGE |
						 VIRTIO_CONFIG_S_DRIVER));
	for (uint32_t word = 0; word < 2; word++) {
		t->driver_feature_select = word;
		virtio_transport_set_driver_features(t, (uint32_t)(features >> (32 * word)));
	}
	virtio_transport_set_status(t, status & setup);
	if (t->status != (status & setup))
		return refuse(t, err, errlen, "a status or features the device does not take");
	for (unsigned int q = 0; q < nr; q++)
		if (!replay_queue(t, q, &rings[q]))
			return refuse(t, err, errlen, "a queue set-up the device does not take");
	t->device_feature_select = device_select;
	t->driver_feature_select = driver_select;
	t->queue_select = queue_select;
	/* Not running is any status: DRIVER_OK before FEATURES_OK starts
	 * nothing, nor does a driver that gave up, nor a failed start. */
	const uint8_t ran = VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK;
	if (active && ((status & ran) != ran ||
		       (status & (VIRTIO_CONFIG_S_FAILED | VIRTIO_CONFIG_S_NEEDS_RESET))))
		return refuse(t, err, errlen, "running, and its status says otherwise");
	t->status = status;
	if (active) {
		start(t, at);
		if (!t->active)
			return refuse(t, err, errlen, "the device would not start on its rings");
	}
	return 0;
}
