/* virtio-mmio transport, version 2 (virtio 1.2, 4.2.2). */
#include "virtio/virtio_mmio.h"

#include <errno.h>
#include <linux/virtio_mmio.h>
#include <string.h>
#include <sys/eventfd.h>

#include "core/irq.h"
#include "core/kvm.h"
#include "core/log.h"

/* MagicValue is "virt" read as a little-endian word; the UAPI header only
 * names the register. */
#define MMIO_MAGIC 0x74726976
#define MMIO_VERSION 2
#define MMIO_VENDOR 0x4d565346 /* "FSVM" */
#define REG_SIZE 4

static uint32_t half(uint64_t v, bool high)
{
	return (uint32_t)(v >> (high ? 32 : 0));
}

/* Guest mistakes and attacks alike are ignored; the first one is told. */
static void bad_access(struct virtio_mmio *m, uint64_t off, bool is_write,
		       unsigned int size)
{
	if (m->warned)
		return;
	m->warned = true;
	log_error("virtio-mmio at 0x%llx: ignored a %u-byte %s at offset 0x%llx (further ones silently)",
		  (unsigned long long)m->base, size,
		  is_write ? "write" : "read", (unsigned long long)off);
}

/* A region id the device lacks reads as length (and base) -1 (4.2.2). */
static uint64_t shm_reg(const struct virtio_mmio *m, uint64_t value)
{
	const struct virtio_dev *dev = m->t.dev;
	return dev->shm_size && m->shm_select == dev->shm_id ? value : ~0ULL;
}

/* --- the transport's part of the life cycle: one doorbell register, one
 * interrupt. */

static void ops_doorbells(struct virtio_transport *t, bool assign)
{
	struct virtio_mmio *m = t->opaque;
	if (m->plugged) /* off the bus (unit tests), every kick exits */
		virtio_transport_doorbells(t, m->vm, false,
					   m->base + VIRTIO_MMIO_QUEUE_NOTIFY,
					   0, REG_SIZE, assign);
}

static int ops_call_fd(struct virtio_transport *t, unsigned int q)
{
	(void)q;
	return ((struct virtio_mmio *)t->opaque)->irq_fd;
}

static void ops_reset(struct virtio_transport *t)
{
	struct virtio_mmio *m = t->opaque;
	atomic_store(&m->int_status, 0);
	m->shm_select = 0;
}

static const struct virtio_transport_ops mmio_ops = {
	.doorbells = ops_doorbells, .call_fd = ops_call_fd, .reset = ops_reset};
static uint32_t reg_read(struct virtio_mmio *m, uint64_t off)
{
	struct virtio_transport *t = &m->t;
	const struct ring_setup *q = virtio_transport_selected(t);
	switch (off) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		return MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:
		return MMIO_VERSION;
	case VIRTIO_MMIO_DEVICE_ID:
		return t->dev->device_id;
	case VIRTIO_MMIO_VENDOR_ID:
		return MMIO_VENDOR;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		return virtio_transport_device_features(t);
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return q ? t->dev->queue_max_size : 0;
	case VIRTIO_MMIO_QUEUE_READY:
		return q && q->enabled;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return atomic_load(&m->int_status);
	case VIRTIO_MMIO_STATUS:
		return t->status;
	case VIRTIO_MMIO_SHM_LEN_LOW:
	case VIRTIO_MMIO_SHM_LEN_HIGH:
		return half(shm_reg(m, t->dev->shm_size),
			    off == VIRTIO_MMIO_SHM_LEN_HIGH);
	case VIRTIO_MMIO_SHM_BASE_LOW:
	case VIRTIO_MMIO_SHM_BASE_HIGH:
		return half(shm_reg(m, m->shm_gpa),
			    off == VIRTIO_MMIO_SHM_BASE_HIGH);
	case VIRTIO_MMIO_CONFIG_GENERATION:
		return 0; /* the config space never changes */
	default:
		return 0; /* write-only or reserved */
	}
}

/* Returns false for a write the spec forbids or that names nothing. */
static bool reg_write(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	struct virtio_transport *t = &m->t;
	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		t->device_feature_select = v;
		return true;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		t->driver_feature_select = v;
		return true;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		return virtio_transport_set_driver_features(t, v);
	case VIRTIO_MMIO_QUEUE_SEL:
		t->queue_select = v;
		return true;
	case VIRTIO_MMIO_QUEUE_NUM:
		return virtio_transport_set_queue_size(t, v);
	case VIRTIO_MMIO_QUEUE_READY:
		/* 0 stops using the queue (4.2.2.2), before DRIVER_OK. */
		return v <= 1 && virtio_transport_set_queue_enabled(t, v);
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		virtio_transport_notify(t, v);
		return true;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		atomic_fetch_and(&m->int_status, ~v);
		return true;
	case VIRTIO_MMIO_STATUS:
		if (v > 0xff)
			return false;
		virtio_transport_set_status(t, (uint8_t)v);
		return true;
	case VIRTIO_MMIO_SHM_SEL:
		m->shm_select = v;
		return true;
	/* The ring addresses: low word first, high word 4 bytes on. */
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		return virtio_transport_set_ring(t, RING_DESC, off & 4, v);
	case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
	case VIRTIO_MMIO_QUEUE_AVAIL_HIGH:
		return virtio_transport_set_ring(t, RING_AVAIL, off & 4, v);
	case VIRTIO_MMIO_QUEUE_USED_LOW:
	case VIRTIO_MMIO_QUEUE_USED_HIGH:
		return virtio_transport_set_ring(t, RING_USED, off & 4, v);
	default:
		return false; /* read-only, legacy or reserved */
	}
}

/* Device config space: read-only, in 8, 16 or 32-bit aligned accesses. */
static bool config_access(struct virtio_mmio *m, uint64_t off, bool is_write,
			  uint8_t *data, unsigned int size)
{
	if (is_write || (size != 1 && size != 2 && size != 4) || off % size)
		return false;
	if (off < m->t.dev->config_len && size <= m->t.dev->config_len - off)
		memcpy(data, (const uint8_t *)m->t.dev->config + off, size);
	return true;
}

void virtio_mmio_access(void *opaque, uint64_t off, bool is_write,
			uint8_t *data, unsigned int size)
{
	struct virtio_mmio *m = opaque;
	bool ok;
	if (!is_write)
		memset(data, 0, size);
	if (is_write && off == VIRTIO_MMIO_QUEUE_NOTIFY && size == REG_SIZE &&
	    m->t.dev->notify) {
		/* Its doorbells run requests: not under the register lock. */
		uint32_t q;
		memcpy(&q, data, REG_SIZE);
		virtio_transport_notify(&m->t, q);
		return;
	}
	pthread_mutex_lock(&m->lock);
	if (off >= VIRTIO_MMIO_SIZE || size > VIRTIO_MMIO_SIZE - off) {
		ok = false;
	} else if (off >= VIRTIO_MMIO_CONFIG) {
		ok = config_access(m, off - VIRTIO_MMIO_CONFIG, is_write, data,
				   size);
	} else if (size != REG_SIZE || off % REG_SIZE) {
		ok = false; /* registers are 32-bit and aligned only */
	} else if (is_write) {
		uint32_t v;
		memcpy(&v, data, REG_SIZE);
		ok = reg_write(m, off, v);
	} else {
		uint32_t v = reg_read(m, off);
		memcpy(data, &v, REG_SIZE);
		ok = true;
	}
	if (!ok)
		bad_access(m, off, is_write, size);
	pthread_mutex_unlock(&m->lock);
}

int virtio_mmio_init(struct virtio_mmio *m, struct vm *vm,
		     const struct virtio_dev *dev, uint64_t base,
		     unsigned int irq, uint64_t shm_gpa)
{
	memset(m, 0, sizeof(*m));
	if (dev->shm_size && !shm_gpa)
		return -EINVAL;
	int err = virtio_transport_init(&m->t, dev, &vm->mem, &mmio_ops, m,
					"virtio-mmio");
	if (err)
		return err;
	pthread_mutex_init(&m->lock, NULL);
	m->vm = vm;
	m->base = base;
	m->irq = irq;
	m->shm_gpa = shm_gpa;
	m->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->irq_fd < 0)
		return -errno;
	for (unsigned int q = 0; q < dev->num_queues; q++)
		m->t.queues[q].int_status = &m->int_status;
	return 0;
}

int virtio_mmio_plug(struct virtio_mmio *m)
{
	struct vm *vm = m->vm;
	int err = irq_irqfd(vm, m->irq_fd, (int)m->irq, true);
	if (!err && m->t.dev->shm_size)
		err = kvm_set_memslot(vm, kvm_alloc_memslot(vm), m->shm_gpa,
				      m->t.dev->shm_size, m->t.dev->shm_hva);
	if (!err)
		err = io_bus_register(&vm->mmio, m->base, VIRTIO_MMIO_SIZE,
				      virtio_mmio_access, m);
	m->plugged = !err;
	return err;
}

void virtio_mmio_save(struct virtio_mmio *m, struct state_out *out)
{
	pthread_mutex_lock(&m->lock);
	state_put_u32(out, atomic_load(&m->int_status));
	state_put_u32(out, m->shm_select);
	virtio_transport_save(&m->t, out);
	pthread_mutex_unlock(&m->lock);
}

int virtio_mmio_restore(struct virtio_mmio *m, struct state_in *in, char *err,
			size_t errlen)
{
	pthread_mutex_lock(&m->lock);
	/* Only the cause the device raises: used buffers. */
	atomic_store(&m->int_status, state_get_u32(in) & VIRTIO_MMIO_INT_VRING);
	m->shm_select = state_get_u32(in);
	int ret = virtio_transport_restore(&m->t, in, err, errlen);
	if (ret)
		atomic_store(&m->int_status, 0);
	pthread_mutex_unlock(&m->lock);
	return ret;
}
