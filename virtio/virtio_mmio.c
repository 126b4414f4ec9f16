/* virtio-mmio transport, version 2 (virtio 1.2, 4.2.2). */
#include "virtio/virtio_mmio.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vmm/core/irq.h"
#include "vmm/core/kvm.h"
#include "vmm/core/log.h"

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

static struct ring_setup *selected_queue(struct virtio_mmio *m)
{
	return m->queue_select < m->dev->num_queues ? &m->rings[m->queue_select]
						     : NULL;
}

/* A region id the device lacks reads as length (and base) -1 (4.2.2). */
static uint64_t shm_reg(const struct virtio_mmio *m, uint64_t value)
{
	return m->dev->shm_size && m->shm_select == m->dev->shm_id ? value
								   : ~0ULL;
}

/* All queues share one doorbell register: KVM tells them apart by the
 * value written, the queue's index. */
static void queue_doorbells(struct virtio_mmio *m, bool assign)
{
	if (!m->plugged)
		return; /* off the bus (unit tests): all via queue_notify() */
	for (unsigned int q = 0; q < m->dev->num_queues; q++) {
		if (!m->rings[q].enabled)
			continue;
		int err = kvm_set_doorbell(m->vm,
					   m->base + VIRTIO_MMIO_QUEUE_NOTIFY,
					   REG_SIZE, q, m->queues[q].kick_fd,
					   assign);
		if (err)
			log_error("virtio-mmio: ioeventfd for queue %u: %s", q,
				  strerror(-err));
	}
}

/* A doorbell that reached us as an exit (no ioeventfd yet): forward it. */
static void queue_notify(struct virtio_mmio *m, uint32_t q)
{
	uint64_t one = 1;
	if (q < m->dev->num_queues && m->rings[q].enabled &&
	    write(m->queues[q].kick_fd, &one, sizeof(one)) < 0)
		log_error("virtio-mmio: kick queue %u: %s", q, strerror(errno));
}

static void virtio_mmio_reset(struct virtio_mmio *m)
{
	if (m->active) {
		m->dev->reset(m->dev->opaque);
		queue_doorbells(m, false);
		m->active = false;
	}
	for (unsigned int q = 0; q < m->dev->num_queues; q++) {
		m->rings[q] = (struct ring_setup){
			.size = m->dev->queue_max_size};
		uint64_t drain;
		while (read(m->queues[q].kick_fd, &drain, sizeof(drain)) > 0)
			;
	}
	atomic_store(&m->int_status, 0);
	m->device_feature_select = m->driver_feature_select = 0;
	m->driver_features = 0;
	m->queue_select = m->shm_select = 0;
	m->status = 0;
}

/* DRIVER_OK: every queue interrupts through the one irqfd; the device
 * starts on its rings, then doorbells (until then they exit and are
 * forwarded). Any failure leaves the device in DEVICE_NEEDS_RESET. */
static void virtio_mmio_activate(struct virtio_mmio *m)
{
	for (unsigned int q = 0; q < m->dev->num_queues; q++)
		m->queues[q].call_fd = m->rings[q].enabled ? m->irq_fd : -1;
	m->active = virtio_device_start(m->dev, &m->vm->mem, m->rings,
					m->queues, m->driver_features,
					&m->status, "virtio-mmio");
	if (m->active)
		queue_doorbells(m, true);
}

static uint32_t reg_read(struct virtio_mmio *m, uint64_t off)
{
	const struct ring_setup *q = selected_queue(m);
	switch (off) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		return MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:
		return MMIO_VERSION;
	case VIRTIO_MMIO_DEVICE_ID:
		return m->dev->device_id;
	case VIRTIO_MMIO_VENDOR_ID:
		return MMIO_VENDOR;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		return virtio_feature_word(m->dev->features,
					   m->device_feature_select);
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return q ? m->dev->queue_max_size : 0;
	case VIRTIO_MMIO_QUEUE_READY:
		return q && q->enabled;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return atomic_load(&m->int_status);
	case VIRTIO_MMIO_STATUS:
		return m->status;
	case VIRTIO_MMIO_SHM_LEN_LOW:
	case VIRTIO_MMIO_SHM_LEN_HIGH:
		return half(shm_reg(m, m->dev->shm_size),
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

/* The ring address registers: low word first, high word 4 bytes on. */
static uint64_t *ring_addr(struct ring_setup *q, uint64_t off)
{
	switch (off & ~4ULL) {
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
		return &q->desc;
	case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
		return &q->avail;
	case VIRTIO_MMIO_QUEUE_USED_LOW:
		return &q->used;
	default:
		return NULL;
	}
}

/* Returns false for a write the spec forbids or that names nothing. */
static bool reg_write(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	struct ring_setup *q = selected_queue(m);
	/* Ring layout may change only while the queue is not ready. */
	bool q_writable = q && !q->enabled && !m->active;
	uint64_t *addr;

	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		m->device_feature_select = v;
		return true;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		m->driver_feature_select = v;
		return true;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		if (m->status & VIRTIO_CONFIG_S_FEATURES_OK)
			return false;
		virtio_set_feature_word(&m->driver_features,
					m->driver_feature_select, v);
		return true;
	case VIRTIO_MMIO_QUEUE_SEL:
		m->queue_select = v;
		return true;
	case VIRTIO_MMIO_QUEUE_NUM:
		if (!q_writable || !virtio_queue_size_ok(m->dev, v))
			return false;
		q->size = (uint16_t)v;
		return true;
	case VIRTIO_MMIO_QUEUE_READY:
		if (!q || m->active || v > 1)
			return false;
		q->enabled = v;
		return true;
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		queue_notify(m, v);
		return true;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		atomic_fetch_and(&m->int_status, ~v);
		return true;
	case VIRTIO_MMIO_STATUS:
		if (v == 0)
			virtio_mmio_reset(m);
		else if (v > 0xff)
			return false;
		else if (virtio_status_write(m->dev, &m->status, (uint8_t)v,
					     m->driver_features))
			virtio_mmio_activate(m);
		return true;
	case VIRTIO_MMIO_SHM_SEL:
		m->shm_select = v;
		return true;
	default:
		addr = q_writable ? ring_addr(q, off) : NULL;
		if (!addr)
			return false; /* read-only, legacy or reserved */
		virtio_set_half(addr, off & 4, v);
		return true;
	}
}

/* Device config space: read-only, in 8, 16 or 32-bit aligned accesses. */
static bool config_access(struct virtio_mmio *m, uint64_t off, bool is_write,
			  uint8_t *data, unsigned int size)
{
	if (is_write || (size != 1 && size != 2 && size != 4) || off % size)
		return false;
	if (off < m->dev->config_len && size <= m->dev->config_len - off)
		memcpy(data, (const uint8_t *)m->dev->config + off, size);
	return true;
}

void virtio_mmio_access(void *opaque, uint64_t off, bool is_write,
			uint8_t *data, unsigned int size)
{
	struct virtio_mmio *m = opaque;
	bool ok;
	if (!is_write)
		memset(data, 0, size);
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
	if (dev->num_queues == 0 || dev->num_queues > VIRTIO_MMIO_MAX_QUEUES ||
	    (dev->shm_size && !shm_gpa))
		return -EINVAL;
	pthread_mutex_init(&m->lock, NULL);
	m->vm = vm;
	m->dev = dev;
	m->base = base;
	m->irq = irq;
	m->shm_gpa = shm_gpa;
	m->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->irq_fd < 0)
		return -errno;
	for (unsigned int q = 0; q < dev->num_queues; q++) {
		m->queues[q].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		m->queues[q].call_fd = -1;
		m->queues[q].int_status = &m->int_status;
		if (m->queues[q].kick_fd < 0)
			return -errno;
	}
	virtio_mmio_reset(m);
	return 0;
}

int virtio_mmio_plug(struct virtio_mmio *m)
{
	struct vm *vm = m->vm;
	int err = irq_irqfd(vm, m->irq_fd, (int)m->irq, true);
	if (!err && m->dev->shm_size)
		err = kvm_set_memslot(vm, kvm_alloc_memslot(vm), m->shm_gpa,
				      m->dev->shm_size, m->dev->shm_hva);
	if (!err)
		err = io_bus_register(&vm->mmio, m->base, VIRTIO_MMIO_SIZE,
				      virtio_mmio_access, m);
	m->plugged = !err;
	return err;
}
