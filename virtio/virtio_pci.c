/* virtio-pci modern transport (virtio 1.x, 4.1) with MSI-X. */
#include "virtio/virtio_pci.h"

#include <errno.h>
#include <linux/pci_regs.h>
#include <linux/virtio_pci.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>

#include "core/irq.h"
#include "core/kvm.h"
#include "core/log.h"

/* BAR 0 layout. */
#define BAR0_COMMON 0x0000
#define BAR0_ISR 0x1000
#define BAR0_DEVICE 0x2000
#define BAR0_MSIX_TABLE 0x4000
#define BAR0_MSIX_PBA 0x5000
#define BAR0_SIZE 0x8000
/* The doorbells are ports, not memory: a port write exits with its port
 * and value, where a write to an MMIO page makes KVM fetch and decode the
 * guest's instruction first (AMD without decode assists, nested KVM). */
#define NOTIFY_BAR 1
#define NOTIFY_MULTIPLIER 4
#define NOTIFY_BAR_SIZE (VIRTIO_TRANSPORT_MAX_QUEUES * NOTIFY_MULTIPLIER)
#define SHM_BAR 2

#define VIRTIO_PCI_VENDOR 0x1af4
#define VIRTIO_PCI_DEVICE_BASE 0x1040
#define VIRTIO_PCI_REVISION 1
#define PCI_CLASS_STORAGE_OTHER_REV 0x01800000

/* The shared memory BAR is guest RAM-like: a KVM memory slot over the
 * device's host memory at the BAR's address, present only while the
 * guest has memory decoding on (it turns it off to size and move BARs). */
static void shm_slot_sync(struct virtio_pci *vp)
{
	if (!vp->t.dev->shm_size)
		return;
	bool decode = vp->pci.cfg[PCI_COMMAND] & PCI_COMMAND_MEMORY;
	uint64_t want = decode ? vp->pci.bars[SHM_BAR].addr : 0;
	if (want == vp->shm_gpa)
		return;
	if (vp->shm_gpa)
		kvm_set_memslot(vp->vm, vp->shm_slot, vp->shm_gpa, 0,
				vp->t.dev->shm_hva);
	vp->shm_gpa = 0;
	if (!want)
		return;
	int err = kvm_set_memslot(vp->vm, vp->shm_slot, want,
				  vp->t.dev->shm_size, vp->t.dev->shm_hva);
	if (err)
		log_error("virtio-pci: cannot map the shared memory BAR at 0x%llx: %s",
			  (unsigned long long)want, strerror(-err));
	else
		vp->shm_gpa = want;
}

/* --- MSI-X: each vector is an irqfd on its own GSI, live while unmasked. */

static bool msix_enabled(const struct virtio_pci *vp, bool *fn_masked)
{
	uint16_t ctrl;
	memcpy(&ctrl, &vp->pci.cfg[vp->msix_cap + PCI_MSIX_FLAGS], 2);
	*fn_masked = ctrl & PCI_MSIX_FLAGS_MASKALL;
	return ctrl & PCI_MSIX_FLAGS_ENABLE;
}

static void msix_update_vector(struct virtio_pci *vp, unsigned int v)
{
	bool fn_masked;
	bool enabled = msix_enabled(vp, &fn_masked);
	const struct msix_entry *e = &vp->msix[v];
	bool live = enabled && !fn_masked &&
		    !(e->ctrl & PCI_MSIX_ENTRY_CTRL_MASKBIT);

	if (live) {
		uint64_t addr = ((uint64_t)e->addr_hi << 32) | e->addr_lo;
		int err = irq_set_msi_route(vp->vm, vp->vector_gsi[v], addr,
					    e->data);
		if (err)
			log_error("virtio-pci: MSI route for vector %u: %s", v,
				  strerror(-err));
	}
	if (live == vp->vector_live[v])
		return;
	/* A signal sent while masked stays in the eventfd and is delivered
	 * as soon as the irqfd is assigned again. */
	int err = irq_irqfd(vp->vm, vp->vector_fd[v], vp->vector_gsi[v], live);
	if (err)
		log_error("virtio-pci: irqfd for vector %u: %s", v,
			  strerror(-err));
	else
		vp->vector_live[v] = live;
}

static void msix_table_access(struct virtio_pci *vp, uint64_t off,
			      bool is_write, uint8_t *data, unsigned int size)
{
	unsigned int v = (unsigned int)(off / PCI_MSIX_ENTRY_SIZE);
	unsigned int field = (unsigned int)(off % PCI_MSIX_ENTRY_SIZE);
	if (v >= vp->nr_vectors || size != 4 || field % 4) {
		if (!is_write)
			memset(data, 0, size);
		return;
	}
	uint32_t *word = (uint32_t *)&vp->msix[v] + field / 4;
	if (!is_write) {
		memcpy(data, word, 4);
		return;
	}
	memcpy(word, data, 4);
	if (field == PCI_MSIX_ENTRY_VECTOR_CTRL)
		vp->msix[v].ctrl &= PCI_MSIX_ENTRY_CTRL_MASKBIT;
	msix_update_vector(vp, v);
}

static void virtio_pci_cfg_written(struct pci_dev *pci, unsigned int off,
				   unsigned int size)
{
	struct virtio_pci *vp = pci->opaque;
	unsigned int flags = vp->msix_cap + PCI_MSIX_FLAGS;
	if (off <= PCI_COMMAND && off + size > PCI_COMMAND)
		shm_slot_sync(vp);
	if (off > flags + 1 || off + size <= flags)
		return;
	for (unsigned int v = 0; v < vp->nr_vectors; v++)
		msix_update_vector(vp, v);
}

/* --- the transport's part of the life cycle: doorbells and vectors. */

static void queue_doorbells(struct virtio_pci *vp, uint64_t base, bool assign)
{
	virtio_transport_doorbells(&vp->t, vp->vm, true, base,
				   NOTIFY_MULTIPLIER, 2, assign);
}

static void ops_doorbells(struct virtio_transport *t, bool assign)
{
	struct virtio_pci *vp = t->opaque;
	queue_doorbells(vp, vp->pci.bars[NOTIFY_BAR].addr, assign);
}

static int ops_call_fd(struct virtio_transport *t, unsigned int q)
{
	struct virtio_pci *vp = t->opaque;
	return vp->qvector[q] < vp->nr_vectors ? vp->vector_fd[vp->qvector[q]]
					       : -1;
}

static void ops_reset(struct virtio_transport *t)
{
	struct virtio_pci *vp = t->opaque;
	vp->config_vector = VIRTIO_MSI_NO_VECTOR;
	for (unsigned int q = 0; q < VIRTIO_TRANSPORT_MAX_QUEUES; q++)
		vp->qvector[q] = VIRTIO_MSI_NO_VECTOR;
}

static const struct virtio_transport_ops pci_ops = {
	.doorbells = ops_doorbells, .call_fd = ops_call_fd, .reset = ops_reset};

/* --- the common configuration structure. */

static void common_read(struct virtio_pci *vp, uint64_t off, uint8_t *data,
			unsigned int size)
{
	struct virtio_transport *t = &vp->t;
	/* config_generation stays 0: the device config never changes. */
	struct virtio_pci_common_cfg c = {0};
	c.device_feature_select = t->device_feature_select;
	c.device_feature = virtio_transport_device_features(t);
	c.guest_feature_select = t->driver_feature_select;
	c.guest_feature = virtio_transport_driver_features(t);
	c.msix_config = vp->config_vector;
	c.num_queues = t->dev->num_queues;
	c.device_status = t->status;
	c.queue_select = (uint16_t)t->queue_select;
	const struct ring_setup *q = virtio_transport_selected(t);
	if (q) {
		c.queue_size = q->size;
		c.queue_msix_vector = vp->qvector[t->queue_select];
		c.queue_enable = q->enabled;
		c.queue_notify_off = (uint16_t)t->queue_select;
		c.queue_desc_lo = (uint32_t)q->desc;
		c.queue_desc_hi = (uint32_t)(q->desc >> 32);
		c.queue_avail_lo = (uint32_t)q->avail;
		c.queue_avail_hi = (uint32_t)(q->avail >> 32);
		c.queue_used_lo = (uint32_t)q->used;
		c.queue_used_hi = (uint32_t)(q->used >> 32);
	}
	if (off + size > sizeof(c)) {
		memset(data, 0, size);
		return;
	}
	memcpy(data, (uint8_t *)&c + off, size);
}

/* A write the spec forbids, or to a read-only field, is ignored. */
static void common_write(struct virtio_pci *vp, uint64_t off,
			 const uint8_t *data, unsigned int size)
{
	struct virtio_transport *t = &vp->t;
	uint32_t v = 0;
	memcpy(&v, data, size < 4 ? size : 4);

	switch (off) {
	case offsetof(struct virtio_pci_common_cfg, device_feature_select):
		t->device_feature_select = v;
		break;
	case offsetof(struct virtio_pci_common_cfg, guest_feature_select):
		t->driver_feature_select = v;
		break;
	case offsetof(struct virtio_pci_common_cfg, guest_feature):
		virtio_transport_set_driver_features(t, v);
		break;
	case offsetof(struct virtio_pci_common_cfg, msix_config):
		vp->config_vector = (uint16_t)v;
		break;
	case offsetof(struct virtio_pci_common_cfg, device_status):
		virtio_transport_set_status(t, (uint8_t)v);
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_select):
		t->queue_select = (uint16_t)v;
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_size):
		virtio_transport_set_queue_size(t, v);
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_msix_vector):
		/* Read at DRIVER_OK; a vector past the table is none. */
		if (virtio_transport_selected(t) &&
		    virtio_transport_setting_up(t))
			vp->qvector[t->queue_select] =
				(uint16_t)v < vp->nr_vectors
					? (uint16_t)v
					: VIRTIO_MSI_NO_VECTOR;
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_enable):
		/* The driver never writes 0 here (4.1.4.3.2). */
		if (v == 1)
			virtio_transport_set_queue_enabled(t, true);
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_desc_lo):
	case offsetof(struct virtio_pci_common_cfg, queue_desc_hi):
		virtio_transport_set_ring(t, RING_DESC, off % 8, v);
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_avail_lo):
	case offsetof(struct virtio_pci_common_cfg, queue_avail_hi):
		virtio_transport_set_ring(t, RING_AVAIL, off % 8, v);
		break;
	case offsetof(struct virtio_pci_common_cfg, queue_used_lo):
	case offsetof(struct virtio_pci_common_cfg, queue_used_hi):
		virtio_transport_set_ring(t, RING_USED, off % 8, v);
		break;
	default:
		break; /* read-only or unknown */
	}
}

static void virtio_pci_bar_access(struct pci_dev *pci, int bar, uint64_t off,
				  bool is_write, uint8_t *data,
				  unsigned int size)
{
	struct virtio_pci *vp = pci->opaque;
	if (bar == NOTIFY_BAR) {
		if (is_write)
			virtio_transport_notify(&vp->t,
						(uint32_t)(off / NOTIFY_MULTIPLIER));
		else
			memset(data, 0, size);
		return;
	}
	if (bar != 0 || size > 8) {
		if (!is_write)
			memset(data, 0xff, size);
		return;
	}
	if (off < BAR0_ISR) {
		if (is_write)
			common_write(vp, off - BAR0_COMMON, data, size);
		else
			common_read(vp, off - BAR0_COMMON, data, size);
	} else if (off < BAR0_DEVICE) {
		/* ISR status serves INTx, which the device lacks (no interrupt
		 * pin): with MSI-X no cause is ever set, so it reads 0. */
		if (!is_write)
			memset(data, 0, size);
	} else if (off < BAR0_MSIX_TABLE) {
		const struct virtio_dev *dev = vp->t.dev;
		uint64_t o = off - BAR0_DEVICE;
		if (!is_write) {
			memset(data, 0, size);
			if (o < dev->config_len)
				memcpy(data, (const uint8_t *)dev->config + o,
				       o + size <= dev->config_len
					       ? size
					       : dev->config_len - o);
		}
	} else if (off < BAR0_MSIX_PBA) {
		msix_table_access(vp, off - BAR0_MSIX_TABLE, is_write, data,
				  size);
	} else if (!is_write) {
		memset(data, 0, size); /* PBA: nothing pending we track */
	}
}

static void virtio_pci_bar_moved(struct pci_dev *pci, int bar,
				 uint64_t old_addr)
{
	struct virtio_pci *vp = pci->opaque;
	if (bar == SHM_BAR) {
		shm_slot_sync(vp);
		return;
	}
	if (bar != NOTIFY_BAR || !vp->t.active)
		return;
	queue_doorbells(vp, old_addr, false);
	queue_doorbells(vp, vp->pci.bars[NOTIFY_BAR].addr, true);
}

/* --- capabilities. */

static void add_virtio_cap(struct virtio_pci *vp, uint8_t type, uint32_t off,
			   uint32_t len)
{
	struct virtio_pci_cap cap = {
		.cap_vndr = PCI_CAP_ID_VNDR, .cap_len = sizeof(cap),
		.cfg_type = type, .bar = 0, .offset = off, .length = len};
	pci_dev_add_cap(&vp->pci, &cap, sizeof(cap));
}

static void add_caps(struct virtio_pci *vp)
{
	const struct virtio_dev *dev = vp->t.dev;
	add_virtio_cap(vp, VIRTIO_PCI_CAP_COMMON_CFG, BAR0_COMMON,
		       sizeof(struct virtio_pci_common_cfg));
	struct virtio_pci_notify_cap notify = {
		.cap = {.cap_vndr = PCI_CAP_ID_VNDR, .cap_len = sizeof(notify),
			.cfg_type = VIRTIO_PCI_CAP_NOTIFY_CFG,
			.bar = NOTIFY_BAR, .offset = 0,
			.length = dev->num_queues * NOTIFY_MULTIPLIER},
		.notify_off_multiplier = NOTIFY_MULTIPLIER};
	pci_dev_add_cap(&vp->pci, &notify, sizeof(notify));
	add_virtio_cap(vp, VIRTIO_PCI_CAP_ISR_CFG, BAR0_ISR, 1);
	if (dev->config_len)
		add_virtio_cap(vp, VIRTIO_PCI_CAP_DEVICE_CFG, BAR0_DEVICE,
			       (uint32_t)dev->config_len);
	if (dev->shm_size) {
		struct virtio_pci_cap64 shm = {
			.cap = {.cap_vndr = PCI_CAP_ID_VNDR,
				.cap_len = sizeof(shm),
				.cfg_type = VIRTIO_PCI_CAP_SHARED_MEMORY_CFG,
				.bar = SHM_BAR, .id = dev->shm_id, .offset = 0,
				.length = (uint32_t)dev->shm_size},
			.offset_hi = 0,
			.length_hi = (uint32_t)(dev->shm_size >> 32)};
		pci_dev_add_cap(&vp->pci, &shm, sizeof(shm));
	}
	uint8_t msix[12] = {PCI_CAP_ID_MSIX, 0};
	uint16_t flags = (uint16_t)(vp->nr_vectors - 1);
	uint32_t table = BAR0_MSIX_TABLE, pba = BAR0_MSIX_PBA; /* BIR 0 */
	memcpy(&msix[PCI_MSIX_FLAGS], &flags, 2);
	memcpy(&msix[PCI_MSIX_TABLE], &table, 4);
	memcpy(&msix[PCI_MSIX_PBA], &pba, 4);
	vp->msix_cap = pci_dev_add_cap(&vp->pci, msix, sizeof(msix));
	uint16_t wmask = PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL;
	memcpy(&vp->pci.wmask[vp->msix_cap + PCI_MSIX_FLAGS], &wmask, 2);
}

int virtio_pci_init(struct virtio_pci *vp, struct vm *vm,
		    struct pci_host *host, const struct virtio_dev *dev)
{
	memset(vp, 0, sizeof(*vp));
	int err = virtio_transport_init(&vp->t, dev, &vm->mem, &pci_ops, vp,
					"virtio-pci");
	if (err)
		return err;
	vp->vm = vm;
	vp->nr_vectors = dev->num_queues + 1u;
	for (unsigned int v = 0; v < vp->nr_vectors; v++) {
		vp->msix[v].ctrl = PCI_MSIX_ENTRY_CTRL_MASKBIT;
		vp->vector_gsi[v] = irq_alloc_msi_gsi(vm);
		vp->vector_fd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (vp->vector_gsi[v] < 0 || vp->vector_fd[v] < 0)
			return vp->vector_gsi[v] < 0 ? vp->vector_gsi[v] : -errno;
	}

	pci_dev_init(&vp->pci, VIRTIO_PCI_VENDOR,
		     (uint16_t)(VIRTIO_PCI_DEVICE_BASE + dev->device_id),
		     PCI_CLASS_STORAGE_OTHER_REV | VIRTIO_PCI_REVISION,
		     VIRTIO_PCI_VENDOR, dev->device_id);
	vp->pci.opaque = vp;
	vp->pci.bar_access = virtio_pci_bar_access;
	vp->pci.cfg_written = virtio_pci_cfg_written;
	vp->pci.bar_moved = virtio_pci_bar_moved;
	if (dev->notify) {
		/* Its doorbells run requests: not under the register lock. */
		vp->pci.unlocked_bar = NOTIFY_BAR;
		vp->pci.unlocked_off = 0;
		vp->pci.unlocked_len = NOTIFY_BAR_SIZE;
	}
	uint64_t bar0 = pci_host_alloc_mmio32(host, BAR0_SIZE);
	uint16_t doorbells = pci_host_alloc_io(host, NOTIFY_BAR_SIZE);
	if (!bar0 || !doorbells)
		return -ENOSPC;
	pci_dev_set_bar(&vp->pci, 0, bar0, BAR0_SIZE, false, false);
	pci_dev_set_io_bar(&vp->pci, NOTIFY_BAR, doorbells, NOTIFY_BAR_SIZE);
	if (dev->shm_size) {
		uint64_t shm = pci_host_alloc_mmio64(host, dev->shm_size);
		pci_dev_set_bar(&vp->pci, SHM_BAR, shm, dev->shm_size, true, true);
		vp->shm_slot = kvm_alloc_memslot(vm);
	}
	add_caps(vp);
	int slot = pci_host_add(host, &vp->pci);
	return slot < 0 ? slot : 0;
}

void virtio_pci_save(struct virtio_pci *vp, struct state_out *out)
{
	pthread_mutex_lock(&vp->pci.lock);
	pci_dev_save(&vp->pci, out);
	state_put_u32(out, vp->nr_vectors);
	for (unsigned int v = 0; v < vp->nr_vectors; v++) {
		const struct msix_entry *e = &vp->msix[v];
		state_put_u32(out, e->addr_lo);
		state_put_u32(out, e->addr_hi);
		state_put_u32(out, e->data);
		state_put_u32(out, e->ctrl);
	}
	state_put_u16(out, vp->config_vector);
	for (unsigned int q = 0; q < vp->t.dev->num_queues; q++)
		state_put_u16(out, vp->qvector[q]);
	virtio_transport_save(&vp->t, out);
	pthread_mutex_unlock(&vp->pci.lock);
}

int virtio_pci_restore(struct virtio_pci *vp, struct state_in *in, char *err,
		       size_t errlen)
{
	pthread_mutex_lock(&vp->pci.lock);
	pci_dev_restore(&vp->pci, in);
	int ret = 0;
	if (state_get_u32(in) != vp->nr_vectors) {
		ret = log_refusal(-EBADMSG, err, errlen,
				  "virtio-pci: another number of MSI-X vectors than the device's");
		goto out;
	}
	/* Each entry as the guest writes it, so its route and irqfd follow. */
	for (unsigned int v = 0; v < vp->nr_vectors; v++)
		for (unsigned int field = 0; field < PCI_MSIX_ENTRY_SIZE; field += 4) {
			uint32_t word = state_get_u32(in);
			msix_table_access(vp, v * PCI_MSIX_ENTRY_SIZE + field, true,
					  (uint8_t *)&word, 4);
		}
	vp->config_vector = state_get_u16(in);
	for (unsigned int q = 0; q < vp->t.dev->num_queues; q++) {
		uint16_t v = state_get_u16(in);
		vp->qvector[q] = v < vp->nr_vectors ? v : VIRTIO_MSI_NO_VECTOR;
	}
	if (in->short_read) {
		ret = log_refusal(-EBADMSG, err, errlen, "virtio-pci: its state is cut short");
		goto out;
	}
	ret = virtio_transport_restore(&vp->t, in, err, errlen);
out:
	if (ret)
		virtio_transport_set_status(&vp->t, 0);
	pthread_mutex_unlock(&vp->pci.lock);
	return ret;
}
