/* Tests for the virtio-pci transport on a real KVM VM (no vCPUs), driven as
 * a guest drives it: config cycles through the host bridge's ports, BAR 0
 * accesses through the MMIO bus and the doorbells, an I/O BAR, through the
 * port bus. What the transport asks of KVM (doorbell ioeventfds, MSI-X
 * irqfds, the DAX memory slot) is checked in KVM itself. Then a move of
 * the doorbells' BAR on one thread races DRIVER_OK and reset on another.
 * Last, the life cycle's cases that virtio-mmio must pass alike
 * (virtio_lifecycle.h). /dev/kvm is required: without it these tests
 * fail. */
#include <errno.h>
#include <linux/pci_regs.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "arch/x86/memory_map.h"
#include "core/arch.h"
#include "core/irq.h"
#include "core/kvm.h"
#include "pci/pci_host.h"
#include "tests/unit/virtio_lifecycle.h"
#include "virtio/virtio_pci.h"

#define RAM_SIZE (16ULL << 20)
#define MMIO64_START (1ULL << 32)
#define CONFIG_ENABLE 0x80000000u
#define DEVICE_ID 26
#define NR_QUEUES 2
#define NR_VECTORS (NR_QUEUES + 1)
#define MAX_SIZE 256
#define SHM_ID 1
#define SHM_SIZE (2ULL << 20)
#define FEATURES ((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_RING_F_EVENT_IDX))
#define OK_STATUS (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | \
		   VIRTIO_CONFIG_S_FEATURES_OK)
#define CC(field) offsetof(struct virtio_pci_common_cfg, field)
/* Where BAR 0 held the doorbells before they became ports. */
#define OLD_BAR0_NOTIFY 0x3000

/* Where the capabilities say each structure is. */
struct layout {
	uint32_t common, common_len;
	uint32_t notify, notify_len, notify_mult;
	uint8_t notify_bar;
	uint32_t isr, device, device_len;
	uint64_t shm_offset, shm_len;
	uint8_t shm_bar;
	unsigned int msix_cap;
	uint32_t msix_table, msix_pba;
	unsigned int nr_vectors;
};

struct rig {
	struct vm vm;
	struct pci_host host;
	uint8_t config[8];
	void *shm;
	struct virtio_dev dev;
	unsigned int activations, resets;
	uint64_t activated_features;
	int start_error; /* what fake_activate() returns */
	unsigned int notified[NR_QUEUES + 1]; /* fake_notify() calls, by queue */
	unsigned int notified_locked; /* ...made holding the device's lock */
	struct virtio_pci vp;
	unsigned int slot;
	uint64_t bar0;
	uint16_t io_bar; /* the doorbells' BAR, a port */
	struct layout l;
	unsigned int probe_slot; /* a memory slot for memory probes */
	void *probe_page;
};

static int fake_activate(void *opaque, struct virtio_queue *queues,
			 unsigned int nr, uint64_t features)
{
	struct rig *r = opaque;
	(void)queues;
	(void)nr;
	r->activations++;
	r->activated_features = features;
	return r->start_error;
}

static void fake_reset(void *opaque)
{
	((struct rig *)opaque)->resets++;
}

static void fake_notify(void *opaque, unsigned int q)
{
	struct rig *r = opaque;
	assert_true(q < NR_QUEUES);
	r->notified[q]++;
	if (pthread_mutex_trylock(&r->vp.pci.lock) == 0)
		pthread_mutex_unlock(&r->vp.pci.lock);
	else
		r->notified_locked++;
}

/* --- the guest's side: config cycles and BAR accesses. */

static void config_select(struct rig *r, unsigned int slot, unsigned int reg)
{
	uint32_t a = CONFIG_ENABLE | slot << 11 | (reg & 0xfc);
	assert_true(io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT, true,
				    (uint8_t *)&a, 4));
}

static uint32_t slot_rd(struct rig *r, unsigned int slot, unsigned int reg,
			unsigned int size)
{
	uint32_t v = 0;
	config_select(r, slot, reg);
	assert_true(io_bus_dispatch(&r->vm.pio, PCI_CONFIG_DATA_PORT + (reg & 3),
				    false, (uint8_t *)&v, size));
	return v;
}

static uint32_t cfg_rd(struct rig *r, unsigned int reg, unsigned int size)
{
	return slot_rd(r, r->slot, reg, size);
}

static void cfg_wr(struct rig *r, unsigned int reg, uint32_t v,
		   unsigned int size)
{
	config_select(r, r->slot, reg);
	assert_true(io_bus_dispatch(&r->vm.pio, PCI_CONFIG_DATA_PORT + (reg & 3),
				    true, (uint8_t *)&v, size));
}

static void cfg_read_block(struct rig *r, unsigned int reg, void *buf,
			   unsigned int len)
{
	for (unsigned int i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)cfg_rd(r, reg + i, 1);
}

static void decode(struct rig *r, uint16_t space, bool on)
{
	uint16_t cmd = (uint16_t)cfg_rd(r, PCI_COMMAND, 2);
	cmd = on ? cmd | space : cmd & ~space;
	cfg_wr(r, PCI_COMMAND, cmd, 2);
}

static void memory_decode(struct rig *r, bool on)
{
	decode(r, PCI_COMMAND_MEMORY, on);
}

static void io_decode(struct rig *r, bool on)
{
	decode(r, PCI_COMMAND_IO, on);
}

/* The register of the BAR the notify capability names. */
static unsigned int io_bar_reg(struct rig *r)
{
	return PCI_BASE_ADDRESS_0 + 4u * r->l.notify_bar;
}

/* As Linux moves a BAR: decoding off, size it, program it, decoding on. */
static void move_bar0(struct rig *r, uint64_t addr)
{
	memory_decode(r, false);
	cfg_wr(r, PCI_BASE_ADDRESS_0, 0xffffffff, 4);
	assert_int_equal(cfg_rd(r, PCI_BASE_ADDRESS_0, 4), 0xffff8000);
	cfg_wr(r, PCI_BASE_ADDRESS_0, (uint32_t)addr, 4);
	memory_decode(r, true);
	r->bar0 = addr;
}

/* The same for the doorbells' 256 ports: I/O decoding off, sizing reads
 * back the mask in the low 16 bits with the I/O space bit. */
static void move_io_bar(struct rig *r, uint16_t port)
{
	io_decode(r, false);
	cfg_wr(r, io_bar_reg(r), 0xffffffff, 4);
	assert_int_equal(cfg_rd(r, io_bar_reg(r), 4), 0x0000ff01);
	cfg_wr(r, io_bar_reg(r), port, 4);
	io_decode(r, true);
	r->io_bar = port;
}

/* An MMIO access; false when nothing on the bus claims the address. */
static bool mmio(struct rig *r, uint64_t addr, bool is_write, void *data,
		 unsigned int size)
{
	return io_bus_dispatch(&r->vm.mmio, addr, is_write, data, size);
}

/* A port access; false when nothing on the bus claims the port. */
static bool pio(struct rig *r, uint16_t port, bool is_write, void *data,
		unsigned int size)
{
	return io_bus_dispatch(&r->vm.pio, port, is_write, data, size);
}

/* The guest's doorbell write: v at off in the notify structure. */
static void notify_wr(struct rig *r, uint32_t off, uint16_t v)
{
	assert_true(pio(r, (uint16_t)(r->io_bar + r->l.notify + off), true, &v,
			2));
}

static uint32_t bar_rd(struct rig *r, uint64_t off, unsigned int size)
{
	uint32_t v = 0;
	assert_true(mmio(r, r->bar0 + off, false, &v, size));
	return v;
}

static void bar_wr(struct rig *r, uint64_t off, uint32_t v, unsigned int size)
{
	assert_true(mmio(r, r->bar0 + off, true, &v, size));
}

static uint32_t common_rd(struct rig *r, size_t field, unsigned int size)
{
	return bar_rd(r, r->l.common + field, size);
}

static void common_wr(struct rig *r, size_t field, uint32_t v,
		      unsigned int size)
{
	bar_wr(r, r->l.common + field, v, size);
}

static void set_status(struct rig *r, uint8_t status)
{
	common_wr(r, CC(device_status), status, 1);
}

static uint8_t status(struct rig *r)
{
	return (uint8_t)common_rd(r, CC(device_status), 1);
}

static void set_features(struct rig *r, uint64_t features)
{
	for (uint32_t sel = 0; sel < 2; sel++) {
		common_wr(r, CC(guest_feature_select), sel, 4);
		common_wr(r, CC(guest_feature), (uint32_t)(features >> (32 * sel)),
			  4);
	}
}

static void negotiate(struct rig *r, uint64_t features)
{
	set_status(r, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	set_status(r, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	set_features(r, features);
	set_status(r, OK_STATUS);
}

static uint64_t ring_gpa(uint32_t q)
{
	return 0x10000 * (q + 1);
}

static void setup_queue(struct rig *r, uint32_t q, uint16_t size,
			uint16_t vector)
{
	common_wr(r, CC(queue_select), q, 2);
	common_wr(r, CC(queue_size), size, 2);
	common_wr(r, CC(queue_msix_vector), vector, 2);
	common_wr(r, CC(queue_desc_lo), (uint32_t)ring_gpa(q), 4);
	common_wr(r, CC(queue_desc_hi), 0, 4);
	common_wr(r, CC(queue_avail_lo), (uint32_t)ring_gpa(q) + 0x4000, 4);
	common_wr(r, CC(queue_avail_hi), 0, 4);
	common_wr(r, CC(queue_used_lo), (uint32_t)ring_gpa(q) + 0x8000, 4);
	common_wr(r, CC(queue_used_hi), 0, 4);
	common_wr(r, CC(queue_enable), 1, 2);
}

/* The Linux driver's order: features, each queue on vector q + 1 (vector
 * 0 for config changes), DRIVER_OK. */
static void start(struct rig *r)
{
	negotiate(r, FEATURES);
	common_wr(r, CC(msix_config), 0, 2);
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		setup_queue(r, q, 64, (uint16_t)(q + 1));
	set_status(r, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
}

/* --- KVM's side: what the transport registered. */

/* True if KVM turns a 2-byte guest write at addr (a port when io, else
 * guest-physical) into a signal of queue q's kick eventfd. Asked by
 * taking that ioeventfd away (KVM says ENOENT when there is none,
 * cheaply) and putting it back. */
static bool ioeventfd_at(struct rig *r, bool io, uint64_t addr, uint32_t q)
{
	int fd = r->vp.t.queues[q].kick_fd;
	int err = kvm_set_doorbell(&r->vm, io, addr, 2, -1, fd, false);
	if (!err)
		assert_int_equal(kvm_set_doorbell(&r->vm, io, addr, 2, -1, fd,
						  true),
				 0);
	else
		assert_int_equal(err, -ENOENT);
	return !err;
}

/* The same for queue q's doorbell port with the doorbells' BAR at
 * io_bar. */
static bool doorbell_at(struct rig *r, uint16_t io_bar, uint32_t q)
{
	return ioeventfd_at(r, true,
			    io_bar + r->l.notify + q * r->l.notify_mult, q);
}

/* True if a KVM memory slot covers gpa: another one there is refused. */
static bool memslot_at(struct rig *r, uint64_t gpa)
{
	int err = kvm_set_memslot(&r->vm, r->probe_slot, gpa, 4096,
				  r->probe_page);
	if (!err)
		assert_int_equal(kvm_set_memslot(&r->vm, r->probe_slot, gpa, 0,
						 r->probe_page),
				 0);
	else
		assert_int_equal(err, -EEXIST);
	return err == -EEXIST;
}

/* How many times the eventfd fd was signalled since last asked. */
static uint64_t signals(int fd)
{
	uint64_t n = 0;
	return read(fd, &n, sizeof(n)) == sizeof(n) ? n : 0;
}

/* --- set-up: a VM, the host bridge, one virtio-pci device. */

static void find_layout(struct rig *r)
{
	struct layout *l = &r->l;
	memset(l, 0, sizeof(*l));
	assert_true(cfg_rd(r, PCI_STATUS, 2) & PCI_STATUS_CAP_LIST);
	unsigned int seen = 0;
	for (unsigned int at = cfg_rd(r, PCI_CAPABILITY_LIST, 1); at;
	     at = cfg_rd(r, at + PCI_CAP_LIST_NEXT, 1)) {
		assert_true(at >= PCI_CAP_START && at < PCI_CFG_SIZE && at % 4 == 0);
		assert_true(++seen < 16); /* no loop */
		if (cfg_rd(r, at, 1) == PCI_CAP_ID_MSIX) {
			l->msix_cap = at;
			l->nr_vectors = (cfg_rd(r, at + PCI_MSIX_FLAGS, 2) &
					 PCI_MSIX_FLAGS_QSIZE) + 1;
			l->msix_table = cfg_rd(r, at + PCI_MSIX_TABLE, 4);
			l->msix_pba = cfg_rd(r, at + PCI_MSIX_PBA, 4);
			continue;
		}
		assert_int_equal(cfg_rd(r, at, 1), PCI_CAP_ID_VNDR);
		struct virtio_pci_cap64 cap;
		cfg_read_block(r, at, &cap, sizeof(cap));
		if (cap.cap.cfg_type != VIRTIO_PCI_CAP_SHARED_MEMORY_CFG &&
		    cap.cap.cfg_type != VIRTIO_PCI_CAP_NOTIFY_CFG)
			assert_int_equal(cap.cap.bar, 0);
		switch (cap.cap.cfg_type) {
		case VIRTIO_PCI_CAP_COMMON_CFG:
			l->common = cap.cap.offset;
			l->common_len = cap.cap.length;
			break;
		case VIRTIO_PCI_CAP_NOTIFY_CFG:
			/* The doorbells are ports: an I/O BAR. */
			assert_true(cap.cap.bar < PCI_BAR_COUNT);
			l->notify_bar = cap.cap.bar;
			assert_true(cfg_rd(r, io_bar_reg(r), 4) &
				    PCI_BASE_ADDRESS_SPACE_IO);
			l->notify = cap.cap.offset;
			l->notify_len = cap.cap.length;
			l->notify_mult = cfg_rd(r, at + VIRTIO_PCI_NOTIFY_CAP_MULT, 4);
			break;
		case VIRTIO_PCI_CAP_ISR_CFG:
			l->isr = cap.cap.offset;
			break;
		case VIRTIO_PCI_CAP_DEVICE_CFG:
			l->device = cap.cap.offset;
			l->device_len = cap.cap.length;
			break;
		case VIRTIO_PCI_CAP_SHARED_MEMORY_CFG:
			assert_int_equal(cap.cap.cap_len, sizeof(cap));
			assert_int_equal(cap.cap.id, SHM_ID);
			l->shm_bar = cap.cap.bar;
			l->shm_offset = cap.cap.offset |
					(uint64_t)cap.offset_hi << 32;
			l->shm_len = cap.cap.length |
				     (uint64_t)cap.length_hi << 32;
			break;
		default:
			fail_msg("unexpected virtio capability %u",
				 cap.cap.cfg_type);
		}
	}
}

static int setup_device(void **state, void (*notify)(void *, unsigned int))
{
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->vm.kvm_fd = r->vm.vm_fd = -1;
	const char *why = "";
	int err = kvm_open(&r->vm, &why);
	if (err)
		fail_msg("a KVM VM is required: %s (%s)", why,
			 strerror(-err));
	assert_int_equal(guest_mem_init(&r->vm.mem, RAM_SIZE, RAM_LOW_LIMIT, RAM_HIGH_START), 0);
	err = kvm_create_vm(&r->vm, &why);
	if (err)
		fail_msg("%s (%s)", why, strerror(-err));
	assert_int_equal(irq_routing_init(&r->vm), 0);
	const struct pci_windows win = {
		.mmio32_start = PCI_MMIO32_START, .mmio32_end = PCI_MMIO32_END,
		.mmio64_start = MMIO64_START,
		.io_start = PCI_IO_START, .io_end = PCI_IO_END};
	assert_int_equal(pci_host_init(&r->host, &r->vm.pio, &r->vm.mmio, &win),
			 0);

	memcpy(r->config, "tag!\x01\x02\x03\x04", sizeof(r->config));
	r->shm = mmap(NULL, SHM_SIZE, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(r->shm != MAP_FAILED);
	r->dev = (struct virtio_dev){
		.device_id = DEVICE_ID, .features = FEATURES,
		.num_queues = NR_QUEUES, .queue_max_size = MAX_SIZE,
		.config = r->config, .config_len = sizeof(r->config),
		.shm_id = SHM_ID, .shm_size = SHM_SIZE, .shm_hva = r->shm,
		.activate = fake_activate, .reset = fake_reset,
		.notify = notify, .opaque = r};
	assert_int_equal(virtio_pci_init(&r->vp, &r->vm, &r->host, &r->dev), 0);

	r->probe_slot = kvm_alloc_memslot(&r->vm);
	r->probe_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r->probe_page != MAP_FAILED);

	/* Firmware's part: find the device, enable memory and I/O
	 * decoding. */
	for (r->slot = 0; r->slot < PCI_HOST_SLOTS; r->slot++)
		if (slot_rd(r, r->slot, PCI_VENDOR_ID, 2) == 0x1af4)
			break;
	assert_true(r->slot < PCI_HOST_SLOTS);
	r->bar0 = cfg_rd(r, PCI_BASE_ADDRESS_0, 4) & PCI_BASE_ADDRESS_MEM_MASK;
	memory_decode(r, true);
	io_decode(r, true);
	find_layout(r);
	r->io_bar = (uint16_t)(cfg_rd(r, io_bar_reg(r), 4) &
			       PCI_BASE_ADDRESS_IO_MASK);
	*state = r;
	return 0;
}

static int setup(void **state)
{
	return setup_device(state, NULL);
}

static int setup_with_notify(void **state)
{
	return setup_device(state, fake_notify);
}

static int teardown(void **state)
{
	struct rig *r = *state;
	for (unsigned int v = 0; v < NR_VECTORS; v++)
		close(r->vp.vector_fd[v]);
	for (unsigned int q = 0; q < NR_QUEUES; q++)
		close(r->vp.t.queues[q].kick_fd);
	close(r->vm.vm_fd);
	close(r->vm.kvm_fd);
	irq_routing_destroy(&r->vm);
	arch_vm_destroy(&r->vm);
	guest_mem_destroy(&r->vm.mem);
	munmap(r->probe_page, 4096);
	munmap(r->shm, SHM_SIZE);
	free(r);
	return 0;
}

/* --- identity, capabilities, BARs. */

static void test_bus_scan(void **state)
{
	struct rig *r = *state;
	assert_int_equal(slot_rd(r, 0, PCI_VENDOR_ID, 2), 0x8086);
	assert_int_equal(slot_rd(r, 0, PCI_CLASS_DEVICE, 2), 0x0600);
	assert_int_equal(r->slot, 1);
	assert_int_equal(cfg_rd(r, PCI_DEVICE_ID, 2), 0x1040 + DEVICE_ID);
	assert_int_equal(cfg_rd(r, PCI_REVISION_ID, 1), 1);
	assert_int_equal(cfg_rd(r, PCI_SUBSYSTEM_VENDOR_ID, 2), 0x1af4);
	assert_int_equal(cfg_rd(r, PCI_SUBSYSTEM_ID, 2), DEVICE_ID);
	assert_int_equal(cfg_rd(r, PCI_HEADER_TYPE, 1), PCI_HEADER_TYPE_NORMAL);
	/* Nothing in the other slots, other functions or other buses. */
	assert_int_equal(slot_rd(r, 2, PCI_VENDOR_ID, 4), 0xffffffff);
	assert_int_equal(slot_rd(r, 31, PCI_VENDOR_ID, 4), 0xffffffff);
	uint32_t a = CONFIG_ENABLE | 1 << 11 | 1 << 8, v = 0;
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT, true, (uint8_t *)&a, 4);
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_DATA_PORT, false, (uint8_t *)&v, 4);
	assert_int_equal(v, 0xffffffff);
	a = CONFIG_ENABLE | 1 << 16 | 1 << 11;
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT, true, (uint8_t *)&a, 4);
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_DATA_PORT, false, (uint8_t *)&v, 4);
	assert_int_equal(v, 0xffffffff);
	/* Without the enable bit there is no config cycle. */
	a = 1 << 11;
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT, true, (uint8_t *)&a, 4);
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_DATA_PORT, false, (uint8_t *)&v, 4);
	assert_int_equal(v, 0xffffffff);
	/* The address register reads back; its bytes are no config cycle. */
	a = 0;
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT, false, (uint8_t *)&a, 4);
	assert_int_equal(a, 1 << 11);
	uint8_t b = 0x80;
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT + 3, true, &b, 1);
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT + 1, false, &b, 1);
	assert_int_equal(b, 0xff);
	io_bus_dispatch(&r->vm.pio, PCI_CONFIG_ADDR_PORT, false, (uint8_t *)&a, 4);
	assert_int_equal(a, 1 << 11);
}

static void test_capabilities(void **state)
{
	struct rig *r = *state;
	const struct layout *l = &r->l;
	assert_int_equal(l->common_len, sizeof(struct virtio_pci_common_cfg));
	assert_int_equal(l->notify_mult, 4);
	assert_int_equal(l->notify_len, NR_QUEUES * l->notify_mult);
	assert_int_equal(l->notify_bar, 1);
	/* The doorbells fit in their 256 ports. */
	assert_true(l->notify + l->notify_len <= 0x100);
	assert_int_not_equal(l->isr, l->common);
	assert_int_equal(l->device_len, sizeof(r->config));
	assert_int_equal(l->shm_bar, 2);
	assert_int_equal(l->shm_offset, 0);
	assert_int_equal(l->shm_len, SHM_SIZE);
	assert_int_not_equal(l->msix_cap, 0);
	assert_int_equal(l->nr_vectors, NR_VECTORS);
	assert_int_equal(l->msix_table & PCI_MSIX_TABLE_BIR, 0);
	assert_int_equal(l->msix_pba & PCI_MSIX_PBA_BIR, 0);
	/* Every other structure fits in BAR 0 (32 KiB). */
	uint32_t ends[] = {l->common + l->common_len, l->isr + 1,
			   l->device + l->device_len,
			   l->msix_table + NR_VECTORS * PCI_MSIX_ENTRY_SIZE};
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		assert_true(ends[i] <= 0x8000);
	/* MSI-X starts disabled, every vector masked. */
	assert_int_equal(cfg_rd(r, l->msix_cap + PCI_MSIX_FLAGS, 2) &
				 (PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL),
			 0);
}

static void test_bar_sizing_and_move(void **state)
{
	struct rig *r = *state;
	/* BAR 0: 32 KiB, 32-bit, in the 32-bit window. */
	assert_true(r->bar0 >= PCI_MMIO32_START && r->bar0 < PCI_MMIO32_END);
	assert_int_equal(cfg_rd(r, PCI_BASE_ADDRESS_0, 4) & 0xf, 0);
	uint64_t old = r->bar0;
	move_bar0(r, 0xd0000000);
	assert_int_equal(cfg_rd(r, PCI_BASE_ADDRESS_0, 4), 0xd0000000);
	assert_int_equal(bar_rd(r, r->l.common + CC(num_queues), 2), NR_QUEUES);
	/* The old place is nobody's: all ones. */
	uint32_t v = 0;
	assert_true(mmio(r, old + r->l.common + CC(num_queues), false, &v, 2));
	assert_int_equal(v, 0xffff);
	/* Decoding off: nothing answers, not even at the BAR. */
	memory_decode(r, false);
	v = 0;
	mmio(r, r->bar0 + r->l.common + CC(num_queues), false, &v, 2);
	assert_int_equal(v, 0xffff);
	memory_decode(r, true);
	/* Low address bits are the BAR's own: ignored on write. */
	cfg_wr(r, PCI_BASE_ADDRESS_0, 0xd0001234, 4);
	assert_int_equal(cfg_rd(r, PCI_BASE_ADDRESS_0, 4), 0xd0000000);

	/* BAR 2: the 64-bit prefetchable shared memory BAR, sized as a pair. */
	uint32_t lo = cfg_rd(r, PCI_BASE_ADDRESS_2, 4);
	assert_int_equal(lo & 0xf, PCI_BASE_ADDRESS_MEM_TYPE_64 |
					   PCI_BASE_ADDRESS_MEM_PREFETCH);
	uint64_t shm = (lo & PCI_BASE_ADDRESS_MEM_MASK) |
		       (uint64_t)cfg_rd(r, PCI_BASE_ADDRESS_3, 4) << 32;
	assert_true(shm >= MMIO64_START);
	memory_decode(r, false);
	cfg_wr(r, PCI_BASE_ADDRESS_2, 0xffffffff, 4);
	cfg_wr(r, PCI_BASE_ADDRESS_3, 0xffffffff, 4);
	uint64_t mask = (cfg_rd(r, PCI_BASE_ADDRESS_2, 4) &
			 PCI_BASE_ADDRESS_MEM_MASK) |
			(uint64_t)cfg_rd(r, PCI_BASE_ADDRESS_3, 4) << 32;
	assert_int_equal(~mask + 1, SHM_SIZE);
	cfg_wr(r, PCI_BASE_ADDRESS_2, (uint32_t)shm, 4);
	cfg_wr(r, PCI_BASE_ADDRESS_3, (uint32_t)(shm >> 32), 4);
	assert_int_equal(cfg_rd(r, PCI_BASE_ADDRESS_3, 4), shm >> 32);

	/* BARs 4 and 5 are not implemented: they read as zero. */
	const unsigned int unused[] = {PCI_BASE_ADDRESS_4, PCI_BASE_ADDRESS_5};
	for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++) {
		cfg_wr(r, unused[i], 0xffffffff, 4);
		assert_int_equal(cfg_rd(r, unused[i], 4), 0);
	}
}

static void test_io_bar_sizing_and_move(void **state)
{
	struct rig *r = *state;
	unsigned int reg = io_bar_reg(r);
	/* The doorbells' BAR: 256 ports, aligned, in the port window. */
	assert_true(r->io_bar >= PCI_IO_START &&
		    r->io_bar + 0x100 <= PCI_IO_END);
	assert_int_equal(r->io_bar % 0x100, 0);
	assert_int_equal(cfg_rd(r, reg, 4),
			 r->io_bar | PCI_BASE_ADDRESS_SPACE_IO);
	negotiate(r, FEATURES);
	setup_queue(r, 1, 64, 2);
	uint16_t old = r->io_bar;
	move_io_bar(r, 0xe000);
	assert_int_equal(cfg_rd(r, reg, 4), 0xe000 | PCI_BASE_ADDRESS_SPACE_IO);
	notify_wr(r, 1 * r->l.notify_mult, 1);
	assert_int_equal(signals(r->vp.t.queues[1].kick_fd), 1);
	/* A doorbell reads as zero. */
	uint16_t v = 0xffff;
	assert_true(pio(r, r->io_bar + r->l.notify, false, &v, 2));
	assert_int_equal(v, 0);
	/* The old ports are nobody's: all ones, and a write rings nothing. */
	uint16_t at = (uint16_t)(old + r->l.notify + 1 * r->l.notify_mult);
	assert_true(pio(r, at, false, &v, 2));
	assert_int_equal(v, 0xffff);
	v = 1;
	assert_true(pio(r, at, true, &v, 2));
	assert_int_equal(signals(r->vp.t.queues[1].kick_fd), 0);
	/* I/O decoding off: nothing answers, not even at the BAR. */
	io_decode(r, false);
	notify_wr(r, 1 * r->l.notify_mult, 1);
	assert_int_equal(signals(r->vp.t.queues[1].kick_fd), 0);
	v = 0;
	assert_true(pio(r, r->io_bar + r->l.notify, false, &v, 2));
	assert_int_equal(v, 0xffff);
	io_decode(r, true);
	/* Bits 1:0 are the BAR's own, and ports have 16 bits: the upper
	 * half reads as zero. */
	cfg_wr(r, reg, 0xabcde103, 4);
	assert_int_equal(cfg_rd(r, reg, 4), 0xe100 | PCI_BASE_ADDRESS_SPACE_IO);
}

/* Ports and memory are apart, though a guest may give a memory BAR an
 * address that is also a port. Each space also has its own decoding. */
static void test_bar_spaces_apart(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	setup_queue(r, 0, 64, 1);
	/* No address the MMIO bus routes is a port number, so the device is
	 * asked itself: the doorbells' port is no memory address of theirs. */
	uint16_t q = 0;
	assert_false(pci_bar_access(&r->vp.pci, false, r->io_bar + r->l.notify,
				    true, (uint8_t *)&q, 2));
	assert_int_equal(signals(r->vp.t.queues[0].kick_fd), 0);
	/* BAR 0 at 0x8000 spans ports 0xc000 to 0xffff: its MSI-X table is
	 * at 0xc000, where the doorbells are too, its PBA at 0xd000. */
	move_bar0(r, 0x8000);
	move_io_bar(r, 0xc000);
	struct virtio_pci before;
	memcpy(&before, &r->vp, sizeof(before));
	uint32_t v = 0xfee00000;
	assert_true(pio(r, 0xc000, true, &v, 4));
	assert_int_equal(signals(r->vp.t.queues[0].kick_fd), 1);
	assert_memory_equal(&before, &r->vp, sizeof(before));
	v = 0;
	assert_true(pio(r, 0xd000, false, &v, 4));
	assert_int_equal(v, 0xffffffff);
	/* As memory, 0xd000 is BAR 0's PBA. */
	v = 0xffffffff;
	assert_true(pci_bar_access(&r->vp.pci, false, 0xd000, false,
				   (uint8_t *)&v, 4));
	assert_int_equal(v, 0);
	/* Memory decoding off leaves the doorbells ringing... */
	memory_decode(r, false);
	notify_wr(r, 0, 0);
	assert_int_equal(signals(r->vp.t.queues[0].kick_fd), 1);
	memory_decode(r, true);
	/* ...and I/O decoding off leaves BAR 0 answering. */
	io_decode(r, false);
	v = 0xffffffff;
	assert_true(pci_bar_access(&r->vp.pci, false, 0xd000, false,
				   (uint8_t *)&v, 4));
	assert_int_equal(v, 0);
}

/* --- the common configuration and the device's life. */

static void test_features(void **state)
{
	struct rig *r = *state;
	common_wr(r, CC(device_feature_select), 0, 4);
	assert_int_equal(common_rd(r, CC(device_feature), 4), (uint32_t)FEATURES);
	common_wr(r, CC(device_feature_select), 1, 4);
	assert_int_equal(common_rd(r, CC(device_feature), 4), FEATURES >> 32);
	common_wr(r, CC(device_feature_select), 2, 4);
	assert_int_equal(common_rd(r, CC(device_feature), 4), 0);
	/* A legacy driver (no VERSION_1) is refused FEATURES_OK. */
	negotiate(r, 1ULL << VIRTIO_RING_F_EVENT_IDX);
	assert_false(status(r) & VIRTIO_CONFIG_S_FEATURES_OK);
	set_status(r, 0);
	/* So is one that takes a feature it was not offered. */
	negotiate(r, FEATURES | (1ULL << VIRTIO_RING_F_INDIRECT_DESC));
	assert_false(status(r) & VIRTIO_CONFIG_S_FEATURES_OK);
	set_status(r, 0);
	negotiate(r, FEATURES);
	assert_int_equal(status(r), OK_STATUS);
	common_wr(r, CC(guest_feature_select), 1, 4);
	assert_int_equal(common_rd(r, CC(guest_feature), 4), FEATURES >> 32);
	/* Frozen after FEATURES_OK. */
	common_wr(r, CC(guest_feature), 0, 4);
	assert_int_equal(common_rd(r, CC(guest_feature), 4), FEATURES >> 32);
}

static void test_queue_setup_and_driver_ok(void **state)
{
	struct rig *r = *state;
	assert_int_equal(common_rd(r, CC(num_queues), 2), NR_QUEUES);
	common_wr(r, CC(queue_select), 1, 2);
	assert_int_equal(common_rd(r, CC(queue_size), 2), MAX_SIZE);
	assert_int_equal(common_rd(r, CC(queue_enable), 2), 0);
	assert_int_equal(common_rd(r, CC(queue_notify_off), 2), 1);
	assert_int_equal(common_rd(r, CC(queue_msix_vector), 2),
			 VIRTIO_MSI_NO_VECTOR);
	start(r);
	assert_int_equal(status(r), OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(r->activations, 1);
	assert_int_equal(r->activated_features, FEATURES);
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		common_wr(r, CC(queue_select), q, 2);
		assert_int_equal(common_rd(r, CC(queue_size), 2), 64);
		assert_int_equal(common_rd(r, CC(queue_enable), 2), 1);
		assert_int_equal(common_rd(r, CC(queue_msix_vector), 2), q + 1);
		assert_int_equal(common_rd(r, CC(queue_used_lo), 4),
				 ring_gpa(q) + 0x8000);
		const struct virtio_queue *vq = &r->vp.t.queues[q];
		assert_int_equal(vq->ring.size, 64);
		assert_true(vq->ring.event_idx);
		assert_ptr_equal(vq->ring.desc, r->vm.mem.base + ring_gpa(q));
		assert_int_equal(vq->call_fd, r->vp.vector_fd[q + 1]);
		/* Its doorbell is KVM's now. */
		assert_true(doorbell_at(r, r->io_bar, q));
	}
	/* DRIVER_OK again starts nothing more. */
	set_status(r, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(r->activations, 1);
	/* The doorbells follow their BAR's move, not BAR 0's. */
	uint16_t old = r->io_bar;
	move_io_bar(r, 0xe000);
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		assert_true(doorbell_at(r, r->io_bar, q));
		assert_false(doorbell_at(r, old, q));
	}
	move_bar0(r, 0xd0000000);
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		assert_true(doorbell_at(r, r->io_bar, q));
}

static void test_kick_before_driver_ok(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	setup_queue(r, 1, 64, 2);
	/* No ioeventfd before DRIVER_OK: the write exits and is forwarded. */
	assert_false(doorbell_at(r, r->io_bar, 1));
	notify_wr(r, 1 * r->l.notify_mult, 1);
	assert_int_equal(signals(r->vp.t.queues[1].kick_fd), 1);
	/* A queue never enabled and one that does not exist: nothing. */
	notify_wr(r, 0, 0);
	assert_int_equal(signals(r->vp.t.queues[0].kick_fd), 0);
	notify_wr(r, NR_QUEUES * r->l.notify_mult, NR_QUEUES);
	notify_wr(r, 0xfc, 0);
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		assert_int_equal(signals(r->vp.t.queues[q].kick_fd), 0);
	/* A reset forgets pending kicks. */
	notify_wr(r, 1 * r->l.notify_mult, 1);
	set_status(r, 0);
	assert_int_equal(signals(r->vp.t.queues[1].kick_fd), 0);
}

/* A device with its own notify (virtio-fs runs requests on the vCPU that
 * rang): each doorbell exits, before DRIVER_OK, after it and after a BAR
 * move, and reaches the device without the device's lock, which a request
 * must not hold up; KVM holds no ioeventfd and no kick eventfd moves. */
static void test_doorbells_to_the_device(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	setup_queue(r, 1, 64, 2);
	notify_wr(r, 1 * r->l.notify_mult, 1);
	assert_int_equal(r->notified[1], 1);
	set_status(r, 0);
	start(r);
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		assert_false(doorbell_at(r, r->io_bar, q));
		notify_wr(r, q * r->l.notify_mult, (uint16_t)q);
		assert_int_equal(signals(r->vp.t.queues[q].kick_fd), 0);
	}
	assert_int_equal(r->notified[0], 1);
	assert_int_equal(r->notified[1], 2);
	/* Past the queues' doorbells, or where BAR 0 had them: no queue to
	 * notify. */
	notify_wr(r, NR_QUEUES * r->l.notify_mult, NR_QUEUES);
	notify_wr(r, 0xfc, 0);
	bar_wr(r, OLD_BAR0_NOTIFY, 0, 2);
	assert_int_equal(r->notified[0] + r->notified[1], 3);
	move_io_bar(r, 0xe000);
	assert_false(doorbell_at(r, r->io_bar, 0));
	notify_wr(r, 0, 0);
	assert_int_equal(r->notified[0], 2);
	assert_int_equal(r->notified_locked, 0);
	/* BAR 0's registers still work. */
	assert_int_equal(status(r), OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
}

/* BAR 0's old doorbells are device config now, past its end: they read
 * 0, ring nothing before DRIVER_OK and are no ioeventfd after it. */
static void test_no_doorbells_in_bar0(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		setup_queue(r, q, 64, (uint16_t)(q + 1));
	for (uint32_t off = 0; off < 0x1000; off += r->l.notify_mult) {
		bar_wr(r, OLD_BAR0_NOTIFY + off, off / r->l.notify_mult, 2);
		assert_int_equal(bar_rd(r, OLD_BAR0_NOTIFY + off, 4), 0);
	}
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		assert_int_equal(signals(r->vp.t.queues[q].kick_fd), 0);
	set_status(r, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(r->activations, 1);
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		assert_false(ioeventfd_at(r, false,
					  r->bar0 + OLD_BAR0_NOTIFY +
						  q * r->l.notify_mult,
					  q));
		assert_true(doorbell_at(r, r->io_bar, q));
	}
}

static void test_reset(void **state)
{
	struct rig *r = *state;
	start(r);
	set_status(r, 0);
	assert_int_equal(r->resets, 1);
	assert_int_equal(status(r), 0);
	assert_int_equal(common_rd(r, CC(msix_config), 2), VIRTIO_MSI_NO_VECTOR);
	common_wr(r, CC(guest_feature_select), 0, 4);
	assert_int_equal(common_rd(r, CC(guest_feature), 4), 0);
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		common_wr(r, CC(queue_select), q, 2);
		assert_int_equal(common_rd(r, CC(queue_enable), 2), 0);
		assert_int_equal(common_rd(r, CC(queue_size), 2), MAX_SIZE);
		assert_int_equal(common_rd(r, CC(queue_desc_lo), 4), 0);
		assert_int_equal(common_rd(r, CC(queue_msix_vector), 2),
				 VIRTIO_MSI_NO_VECTOR);
		assert_false(doorbell_at(r, r->io_bar, q));
	}
	/* A reset of a device never started tells it nothing. */
	set_status(r, 0);
	assert_int_equal(r->resets, 1);
	/* And it starts again. */
	start(r);
	assert_int_equal(r->activations, 2);
	assert_true(doorbell_at(r, r->io_bar, 0));
}

static void test_bad_rings_need_reset(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	setup_queue(r, 0, 64, 1);
	common_wr(r, CC(queue_select), 1, 2);
	common_wr(r, CC(queue_desc_lo), (uint32_t)RAM_SIZE, 4); /* not RAM */
	common_wr(r, CC(queue_enable), 1, 2);
	set_status(r, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(r->activations, 0);
	assert_true(status(r) & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_false(doorbell_at(r, r->io_bar, 0));
	set_status(r, 0);
	assert_int_equal(status(r), 0);
}

/* --- interrupts. */

static void msix_entry_wr(struct rig *r, unsigned int v, unsigned int field,
			  uint32_t value)
{
	bar_wr(r, (r->l.msix_table & PCI_MSIX_TABLE_OFFSET) +
			  v * PCI_MSIX_ENTRY_SIZE + field,
	       value, 4);
}

static uint32_t msix_entry_rd(struct rig *r, unsigned int v, unsigned int field)
{
	return bar_rd(r, (r->l.msix_table & PCI_MSIX_TABLE_OFFSET) +
				 v * PCI_MSIX_ENTRY_SIZE + field,
		      4);
}

static void msix_flags(struct rig *r, uint16_t set)
{
	uint16_t flags = (uint16_t)cfg_rd(r, r->l.msix_cap + PCI_MSIX_FLAGS, 2);
	flags &= (uint16_t)~(PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	cfg_wr(r, r->l.msix_cap + PCI_MSIX_FLAGS, flags | set, 2);
}

/* True if KVM takes the vector's signals: with its irqfd assigned, KVM
 * consumes the eventfd's count as it injects the MSI; masked, the count
 * stays for later. */
static bool vector_live(struct rig *r, unsigned int v)
{
	int fd = r->vp.vector_fd[v];
	signals(fd);
	uint64_t one = 1;
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	return signals(fd) == 0;
}

static void test_msix(void **state)
{
	struct rig *r = *state;
	/* Every vector starts masked. */
	for (unsigned int v = 0; v < NR_VECTORS; v++)
		assert_int_equal(msix_entry_rd(r, v, PCI_MSIX_ENTRY_VECTOR_CTRL),
				 PCI_MSIX_ENTRY_CTRL_MASKBIT);
	msix_entry_wr(r, 1, PCI_MSIX_ENTRY_LOWER_ADDR, 0xfee00000);
	msix_entry_wr(r, 1, PCI_MSIX_ENTRY_UPPER_ADDR, 0);
	msix_entry_wr(r, 1, PCI_MSIX_ENTRY_DATA, 0x4041);
	assert_int_equal(msix_entry_rd(r, 1, PCI_MSIX_ENTRY_DATA), 0x4041);
	assert_int_equal(msix_entry_rd(r, 1, PCI_MSIX_ENTRY_LOWER_ADDR),
			 0xfee00000);
	/* Unmasked but MSI-X off: not live. Reserved control bits drop. */
	msix_entry_wr(r, 1, PCI_MSIX_ENTRY_VECTOR_CTRL, 0xfffffffe);
	assert_int_equal(msix_entry_rd(r, 1, PCI_MSIX_ENTRY_VECTOR_CTRL), 0);
	assert_false(vector_live(r, 1));
	msix_flags(r, PCI_MSIX_FLAGS_ENABLE);
	assert_true(vector_live(r, 1));
	assert_false(vector_live(r, 0)); /* still masked itself */
	/* Function mask, then the entry's own mask. */
	msix_flags(r, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	assert_false(vector_live(r, 1));
	msix_flags(r, PCI_MSIX_FLAGS_ENABLE);
	assert_true(vector_live(r, 1));
	msix_entry_wr(r, 1, PCI_MSIX_ENTRY_VECTOR_CTRL,
		      PCI_MSIX_ENTRY_CTRL_MASKBIT);
	assert_false(vector_live(r, 1));
	msix_entry_wr(r, 1, PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
	assert_true(vector_live(r, 1));
	msix_flags(r, 0);
	assert_false(vector_live(r, 1));
	/* The pending bits read as zero; nothing is pending. */
	assert_int_equal(bar_rd(r, r->l.msix_pba & PCI_MSIX_PBA_OFFSET, 4), 0);
	/* The table size is the device's, not the guest's. */
	cfg_wr(r, r->l.msix_cap + PCI_MSIX_FLAGS, 0x07ff, 2);
	assert_int_equal(cfg_rd(r, r->l.msix_cap + PCI_MSIX_FLAGS, 2) &
				 PCI_MSIX_FLAGS_QSIZE,
			 NR_VECTORS - 1);
}

static void test_msix_hostile(void **state)
{
	struct rig *r = *state;
	uint32_t table = r->l.msix_table & PCI_MSIX_TABLE_OFFSET;
	struct virtio_pci before;
	memcpy(&before, &r->vp, sizeof(before));
	/* Past the last vector, unaligned, or not 32 bits: reads 0. */
	bar_wr(r, table + NR_VECTORS * PCI_MSIX_ENTRY_SIZE, 0, 4);
	assert_int_equal(bar_rd(r, table + NR_VECTORS * PCI_MSIX_ENTRY_SIZE, 4), 0);
	bar_wr(r, table + 0x7fc, 0, 4);
	bar_wr(r, table + 2, 0x12345678, 4);
	bar_wr(r, table + PCI_MSIX_ENTRY_VECTOR_CTRL, 0, 2);
	bar_wr(r, table + PCI_MSIX_ENTRY_VECTOR_CTRL, 0, 1);
	assert_int_equal(bar_rd(r, table + PCI_MSIX_ENTRY_VECTOR_CTRL, 2), 0);
	assert_int_equal(bar_rd(r, table + 1, 4), 0);
	assert_memory_equal(&before, &r->vp, sizeof(before));
}

static void test_isr(void **state)
{
	struct rig *r = *state;
	/* With MSI-X nothing sets a cause: it reads 0, and writes do nothing. */
	start(r);
	assert_int_equal(bar_rd(r, r->l.isr, 1), 0);
	bar_wr(r, r->l.isr, 0xff, 1);
	assert_int_equal(bar_rd(r, r->l.isr, 1), 0);
	assert_int_equal(bar_rd(r, r->l.isr, 4), 0);
}

static void test_device_config(void **state)
{
	struct rig *r = *state;
	assert_int_equal(bar_rd(r, r->l.device + 1, 1), 'a');
	uint16_t w = (uint16_t)bar_rd(r, r->l.device + 2, 2);
	assert_memory_equal(&w, "g!", 2);
	assert_int_equal(bar_rd(r, r->l.device + 4, 4), 0x04030201);
	/* Straddling the end: what there is, then zeros; past it: zeros. */
	assert_int_equal(bar_rd(r, r->l.device + 6, 4), 0x0403);
	assert_int_equal(bar_rd(r, r->l.device + 8, 4), 0);
	assert_int_equal(bar_rd(r, r->l.device + 0xffc, 4), 0);
	/* Read-only. */
	bar_wr(r, r->l.device, 0, 4);
	assert_memory_equal(r->config, "tag!", 4);
}

/* --- the shared memory (DAX) BAR: a KVM memory slot while decoded. */

static uint64_t shm_bar(struct rig *r)
{
	return (cfg_rd(r, PCI_BASE_ADDRESS_2, 4) & PCI_BASE_ADDRESS_MEM_MASK) |
	       (uint64_t)cfg_rd(r, PCI_BASE_ADDRESS_3, 4) << 32;
}

static void test_shm_bar_follows_decoding(void **state)
{
	struct rig *r = *state;
	uint64_t at = shm_bar(r);
	assert_true(memslot_at(r, at));
	assert_true(memslot_at(r, at + SHM_SIZE - 4096));
	assert_false(memslot_at(r, at + SHM_SIZE));
	/* Sizing and moving happen with decoding off: nothing mapped. */
	memory_decode(r, false);
	assert_false(memslot_at(r, at));
	cfg_wr(r, PCI_BASE_ADDRESS_2, 0xffffffff, 4);
	cfg_wr(r, PCI_BASE_ADDRESS_3, 0xffffffff, 4);
	uint64_t to = at + 4 * SHM_SIZE;
	cfg_wr(r, PCI_BASE_ADDRESS_2, (uint32_t)to, 4);
	cfg_wr(r, PCI_BASE_ADDRESS_3, (uint32_t)(to >> 32), 4);
	assert_false(memslot_at(r, to));
	memory_decode(r, true);
	assert_true(memslot_at(r, to));
	assert_false(memslot_at(r, at));
	/* Moved while decoded (a guest may): the slot follows. */
	cfg_wr(r, PCI_BASE_ADDRESS_3, (uint32_t)(at >> 32) + 1, 4);
	uint64_t now = shm_bar(r);
	assert_true(memslot_at(r, now));
	assert_false(memslot_at(r, to));
}

/* --- hostile accesses: nothing changes, nothing breaks. */

static void expect_ignored(struct rig *r, uint64_t off, bool is_write,
			   unsigned int size)
{
	struct virtio_pci before;
	memcpy(&before, &r->vp, sizeof(before));
	uint8_t data[8];
	memset(data, 0xa5, sizeof(data));
	assert_true(mmio(r, r->bar0 + off, is_write, data, size));
	assert_memory_equal(&before, &r->vp, sizeof(before));
}

static void test_hostile_bar0(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	const struct layout *l = &r->l;
	/* Read-only fields. */
	expect_ignored(r, l->common + CC(device_feature), true, 4);
	expect_ignored(r, l->common + CC(num_queues), true, 2);
	expect_ignored(r, l->common + CC(config_generation), true, 1);
	expect_ignored(r, l->common + CC(queue_notify_off), true, 2);
	expect_ignored(r, l->isr, true, 1);
	expect_ignored(r, l->device, true, 4);
	/* Past the common structure, between structures, past the PBA. */
	expect_ignored(r, l->common + l->common_len, true, 4);
	expect_ignored(r, l->common + 0xffc, true, 4);
	expect_ignored(r, l->common + l->common_len - 2, false, 8);
	expect_ignored(r, (l->msix_pba & PCI_MSIX_PBA_OFFSET) + 0x800, true, 8);
	expect_ignored(r, 0x7ffc, true, 4);
	/* Odd sizes read what fits, zeros beyond. */
	uint32_t v = 0xffffffff;
	assert_true(mmio(r, r->bar0 + l->common + CC(num_queues), false, &v, 3));
	assert_int_equal(v, 0xff000000 | (uint32_t)OK_STATUS << 16 | NR_QUEUES);
	/* Wider than any access a vCPU makes: all ones, nothing written. */
	uint8_t wide[16];
	memset(wide, 0, sizeof(wide));
	assert_true(mmio(r, r->bar0 + l->common, false, wide, sizeof(wide)));
	for (size_t i = 0; i < sizeof(wide); i++)
		assert_int_equal(wide[i], 0xff);
	struct virtio_pci before;
	memcpy(&before, &r->vp, sizeof(before));
	assert_true(mmio(r, r->bar0 + l->common + CC(device_status), true,
			 wide, sizeof(wide)));
	assert_memory_equal(&before, &r->vp, sizeof(before));
}

static void test_hostile_queue_select(void **state)
{
	struct rig *r = *state;
	negotiate(r, FEATURES);
	struct virtio_pci before;
	memcpy(&before, &r->vp, sizeof(before));
	const uint16_t selects[] = {NR_QUEUES, VIRTIO_TRANSPORT_MAX_QUEUES,
				    0xffff};
	for (size_t i = 0; i < sizeof(selects) / sizeof(selects[0]); i++) {
		common_wr(r, CC(queue_select), selects[i], 2);
		assert_int_equal(common_rd(r, CC(queue_size), 2), 0);
		assert_int_equal(common_rd(r, CC(queue_enable), 2), 0);
		setup_queue(r, selects[i], 64, 1);
		assert_int_equal(common_rd(r, CC(queue_desc_lo), 4), 0);
	}
	assert_memory_equal(r->vp.t.rings, before.t.rings,
			    sizeof(before.t.rings));
	assert_memory_equal(r->vp.qvector, before.qvector, sizeof(before.qvector));
	/* Sizes a split ring cannot have. */
	common_wr(r, CC(queue_select), 0, 2);
	const uint16_t sizes[] = {0, 3, 100, MAX_SIZE + 1, MAX_SIZE * 2, 0xffff};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		common_wr(r, CC(queue_size), sizes[i], 2);
	assert_int_equal(common_rd(r, CC(queue_size), 2), MAX_SIZE);
	/* A vector past the table means none. */
	common_wr(r, CC(queue_msix_vector), NR_VECTORS, 2);
	assert_int_equal(common_rd(r, CC(queue_msix_vector), 2),
			 VIRTIO_MSI_NO_VECTOR);
}

static void test_hostile_after_driver_ok(void **state)
{
	struct rig *r = *state;
	start(r);
	struct virtio_pci before;
	memcpy(&before, &r->vp, sizeof(before));
	/* Ring set-up of a live device, enabled queue or not. */
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		setup_queue(r, q, 32, 0);
		common_wr(r, CC(queue_enable), 0, 2);
	}
	/* Clearing status bits, or DRIVER_OK again: no change. */
	set_status(r, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	set_status(r, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	set_status(r, VIRTIO_CONFIG_S_NEEDS_RESET | OK_STATUS |
			      VIRTIO_CONFIG_S_DRIVER_OK);
	before.t.queue_select = r->vp.t.queue_select;
	assert_memory_equal(&before, &r->vp, sizeof(before));
	assert_int_equal(r->activations, 1);
	assert_int_equal(status(r), OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
}

static void test_hostile_config_space(void **state)
{
	struct rig *r = *state;
	uint8_t cfg[PCI_CFG_SIZE];
	cfg_read_block(r, 0, cfg, sizeof(cfg));
	/* Identity, header, status and the capabilities are read-only. */
	const unsigned int regs[] = {PCI_VENDOR_ID, PCI_CLASS_REVISION,
				     PCI_HEADER_TYPE, PCI_STATUS,
				     PCI_CAPABILITY_LIST, PCI_SUBSYSTEM_VENDOR_ID,
				     PCI_CAP_START, 0xfc};
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		cfg_wr(r, regs[i], 0x5a5a5a5a, 4);
	for (unsigned int off = PCI_CAP_START; off < PCI_CFG_SIZE; off += 4)
		if (off != r->l.msix_cap)
			cfg_wr(r, off, 0xffffffff, 4);
	/* BAR writes narrower than 32 bits are ignored. */
	cfg_wr(r, PCI_BASE_ADDRESS_0, 0x1234, 2);
	cfg_wr(r, PCI_BASE_ADDRESS_0 + 2, 0x1234, 2);
	cfg_wr(r, PCI_BASE_ADDRESS_0 + 3, 0x12, 1);
	cfg_wr(r, io_bar_reg(r), 0xd000, 2);
	cfg_wr(r, io_bar_reg(r) + 1, 0xd0, 1);
	uint8_t now[PCI_CFG_SIZE];
	cfg_read_block(r, 0, now, sizeof(now));
	assert_memory_equal(cfg, now, sizeof(cfg));
	/* Accesses running past the 256 bytes: all ones, nothing written. */
	assert_int_equal(cfg_rd(r, 0xff, 4), 0xffffffff);
	cfg_wr(r, 0xfe, 0, 4);
	cfg_read_block(r, 0, now, sizeof(now));
	assert_memory_equal(cfg, now, sizeof(cfg));
}

/* --- the race: a move of the doorbells' BAR on one vCPU, DRIVER_OK or
 * reset on another, let go together. Each move goes to a fresh port, so a
 * doorbell left behind anywhere stays there to be found. */

#define RACE_MOVES 200
#define RACE_SIZING_PORT 0xff00 /* where sizing puts the BAR */

struct race {
	struct rig *r;
	atomic_uint moves_wanted; /* the driver lets the mover go */
	atomic_uint moves_done;
};

/* Move i's port; 0 is where the BAR starts, the window's first. Ports
 * have room for 256 BARs of 256: the moves go round them all but the
 * sizing port. */
static uint16_t race_port(unsigned int i)
{
	return (uint16_t)(0x100 * ((PCI_IO_START / 0x100 + i) % 0xff));
}

/* The two sides on CPUs of their own, when there are two: the race is
 * theirs to run at once, not by turns on one CPU. */
static void pin_to_cpu(unsigned int nth)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) ||
	    CPU_COUNT(&allowed) < 2)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || nth--)
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		assert_int_equal(pthread_setaffinity_np(pthread_self(),
							sizeof(one), &one),
				 0);
		return;
	}
}

static void wait_for(atomic_uint *counter, unsigned int value)
{
	while (atomic_load(counter) < value)
		sched_yield();
}

/* Linux's way: I/O decoding off, size, program, decoding back on. */
static void *race_mover(void *arg)
{
	struct race *race = arg;
	struct rig *r = race->r;
	pin_to_cpu(1);
	for (unsigned int i = 1; i <= RACE_MOVES; i++) {
		wait_for(&race->moves_wanted, i);
		io_decode(r, false);
		cfg_wr(r, io_bar_reg(r), 0xffffffff, 4);
		cfg_rd(r, io_bar_reg(r), 4);
		cfg_wr(r, io_bar_reg(r), race_port(i), 4);
		io_decode(r, true);
		atomic_store(&race->moves_done, i);
	}
	return NULL;
}

/* Odd moves race DRIVER_OK (the set-up before it done on a still BAR),
 * even moves race a reset of the device that just started. BAR 0 stays
 * put: no write of the driver's is lost. */
static void *race_driver(void *arg)
{
	struct race *race = arg;
	struct rig *r = race->r;
	pin_to_cpu(0);
	for (unsigned int i = 1; i <= RACE_MOVES; i++) {
		wait_for(&race->moves_done, i - 1);
		if (i % 2 == 0) {
			atomic_store(&race->moves_wanted, i);
			set_status(r, 0);
			continue;
		}
		set_status(r, 0);
		set_status(r, VIRTIO_CONFIG_S_ACKNOWLEDGE |
				      VIRTIO_CONFIG_S_DRIVER);
		common_wr(r, CC(guest_feature_select), 1, 4);
		common_wr(r, CC(guest_feature), FEATURES >> 32, 4);
		set_status(r, OK_STATUS);
		for (uint32_t q = 0; q < NR_QUEUES; q++) {
			common_wr(r, CC(queue_select), q, 2);
			common_wr(r, CC(queue_desc_lo), (uint32_t)ring_gpa(q),
				  4);
			common_wr(r, CC(queue_avail_lo),
				  (uint32_t)ring_gpa(q) + 0x4000, 4);
			common_wr(r, CC(queue_used_lo),
				  (uint32_t)ring_gpa(q) + 0x8000, 4);
			common_wr(r, CC(queue_enable), 1, 2);
		}
		atomic_store(&race->moves_wanted, i);
		set_status(r, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	}
	return NULL;
}

/* Doorbells are in KVM exactly at their BAR's ports while the device
 * runs, and nowhere the BAR ever was otherwise. */
static void expect_doorbells_only_at_io_bar(struct rig *r)
{
	bool active = r->vp.t.active;
	for (unsigned int i = 0; i <= RACE_MOVES + 1; i++) {
		uint16_t at = i <= RACE_MOVES ? race_port(i) : RACE_SIZING_PORT;
		for (uint32_t q = 0; q < NR_QUEUES; q++)
			if (doorbell_at(r, at, q) !=
			    (active && at == r->io_bar))
				fail_msg("queue %u: doorbell %s at port 0x%x (BAR at 0x%x, device %s)",
					 q, active && at == r->io_bar ? "missing" : "left",
					 at, r->io_bar,
					 active ? "running" : "reset");
	}
}

static void test_bar_move_races_driver_ok(void **state)
{
	struct rig *r = *state;
	assert_int_equal(r->io_bar, race_port(0));
	struct race race = {.r = r};
	pthread_t mover, driver;
	assert_int_equal(pthread_create(&driver, NULL, race_driver, &race), 0);
	assert_int_equal(pthread_create(&mover, NULL, race_mover, &race), 0);
	pthread_join(mover, NULL);
	pthread_join(driver, NULL);
	r->io_bar = (uint16_t)(cfg_rd(r, io_bar_reg(r), 4) &
			       PCI_BASE_ADDRESS_IO_MASK);
	assert_int_equal(r->io_bar, race_port(RACE_MOVES));
	print_message("%u moves, %u activations, %u resets\n", RACE_MOVES,
		      r->activations, r->resets);
	assert_true(r->activations > 0);
	expect_doorbells_only_at_io_bar(r);
	/* And the device is still sound: reset, start, move. */
	set_status(r, 0);
	expect_doorbells_only_at_io_bar(r);
	start(r);
	assert_true(r->vp.t.active);
	expect_doorbells_only_at_io_bar(r);
	move_io_bar(r, race_port(1));
	expect_doorbells_only_at_io_bar(r);
}

/* --- snapshots. */

static void save(struct rig *r, unsigned char **buf, size_t *len)
{
	struct state_out out = {0};
	virtio_pci_save(&r->vp, &out);
	assert_int_equal(state_out_finish(&out, buf, len), 0);
}

/* A device the driver moved, enabled and started, saved and restored into
 * a device as new on another VM: the same registers, its shared memory
 * and doorbells where the guest put them, its vectors live, started once;
 * any cut of the state is refused. */
static void test_snapshot_restore(void **state)
{
	struct rig *a = *state;
	move_bar0(a, PCI_MMIO32_START + 0x4000000);
	move_io_bar(a, 0xd000);
	uint64_t shm = shm_bar(a) + 4 * SHM_SIZE;
	memory_decode(a, false);
	cfg_wr(a, PCI_BASE_ADDRESS_2, (uint32_t)shm, 4);
	cfg_wr(a, PCI_BASE_ADDRESS_3, (uint32_t)(shm >> 32), 4);
	memory_decode(a, true);
	io_decode(a, true);
	msix_entry_wr(a, 1, PCI_MSIX_ENTRY_LOWER_ADDR, 0xfee00000);
	msix_entry_wr(a, 1, PCI_MSIX_ENTRY_DATA, 0x4041);
	msix_entry_wr(a, 1, PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
	msix_flags(a, PCI_MSIX_FLAGS_ENABLE);
	start(a);
	assert_true(a->vp.t.active);
	a->vp.t.queues[1].ring.last_avail = a->vp.t.queues[1].ring.used_idx = 3;
	unsigned char *buf;
	size_t len;
	save(a, &buf, &len);

	void *other;
	assert_int_equal(setup(&other), 0);
	struct rig *b = other;
	char err[256];
	for (size_t n = 0; n < len; n += 97) {
		struct state_in in = state_in(buf, n);
		assert_int_equal(virtio_pci_restore(&b->vp, &in, err, sizeof(err)), -EBADMSG);
		assert_false(b->vp.t.active);
		assert_int_equal(b->activations, 0);
	}
	teardown(&other);
	assert_int_equal(setup(&other), 0);
	b = other;
	struct state_in in = state_in(buf, len);
	assert_int_equal(virtio_pci_restore(&b->vp, &in, err, sizeof(err)), 0);
	assert_true(state_in_whole(&in));
	assert_memory_equal(b->vp.pci.cfg, a->vp.pci.cfg, PCI_CFG_SIZE);
	b->bar0 = a->bar0; /* where the guest knows its registers are */
	b->io_bar = a->io_bar;
	assert_int_equal(b->activations, 1);
	assert_int_equal(status(b), OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(b->vp.t.queues[1].ring.last_avail, 3);
	assert_int_equal(b->vp.qvector[1], 2);
	assert_int_equal(msix_entry_rd(b, 1, PCI_MSIX_ENTRY_DATA), 0x4041);
	assert_true(vector_live(b, 1));
	assert_false(vector_live(b, 0));
	assert_int_equal(shm_bar(b), shm);
	assert_true(memslot_at(b, shm));
	assert_false(memslot_at(b, shm - 4 * SHM_SIZE)); /* not where it began */
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		assert_true(doorbell_at(b, 0xd000, q));
	teardown(&other);
	free(buf);
}

/* --- the life cycle's cases shared with virtio-mmio. */

static void lc_set_status(void *r, uint8_t s)
{
	set_status(r, s);
}

static uint8_t lc_status(void *r)
{
	return status(r);
}

static void lc_set_features(void *r, uint64_t features)
{
	set_features(r, features);
}

static void lc_select_queue(void *r, uint32_t q)
{
	common_wr(r, CC(queue_select), q, 2);
}

static void lc_set_queue_size(void *r, uint32_t size)
{
	common_wr(r, CC(queue_size), size, 2);
}

static void lc_set_ring(void *r, enum ring_part part, uint64_t gpa)
{
	size_t lo = part == RING_DESC    ? CC(queue_desc_lo)
		    : part == RING_AVAIL ? CC(queue_avail_lo)
					 : CC(queue_used_lo);
	common_wr(r, lo, (uint32_t)gpa, 4);
	common_wr(r, lo + 4, (uint32_t)(gpa >> 32), 4);
}

static void lc_enable_queue(void *r)
{
	common_wr(r, CC(queue_enable), 1, 2);
}

static void lc_kick(void *arg, uint32_t q)
{
	struct rig *r = arg;
	notify_wr(r, q * r->l.notify_mult, (uint16_t)q);
}

static struct lifecycle_rig lifecycle_rig(void *state)
{
	struct rig *r = state;
	return (struct lifecycle_rig){r, &r->vp.t, &r->activations, &r->resets,
				      &r->start_error};
}

#define PCI_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		PCI_TEST(test_bus_scan),
		PCI_TEST(test_capabilities),
		PCI_TEST(test_bar_sizing_and_move),
		PCI_TEST(test_io_bar_sizing_and_move),
		PCI_TEST(test_bar_spaces_apart),
		PCI_TEST(test_features),
		PCI_TEST(test_queue_setup_and_driver_ok),
		PCI_TEST(test_kick_before_driver_ok),
		cmocka_unit_test_setup_teardown(test_doorbells_to_the_device,
						setup_with_notify, teardown),
		PCI_TEST(test_no_doorbells_in_bar0),
		PCI_TEST(test_reset),
		PCI_TEST(test_bad_rings_need_reset),
		PCI_TEST(test_msix),
		PCI_TEST(test_msix_hostile),
		PCI_TEST(test_isr),
		PCI_TEST(test_device_config),
		PCI_TEST(test_shm_bar_follows_decoding),
		PCI_TEST(test_hostile_bar0),
		PCI_TEST(test_hostile_queue_select),
		PCI_TEST(test_hostile_after_driver_ok),
		PCI_TEST(test_hostile_config_space),
		PCI_TEST(test_bar_move_races_driver_ok),
		PCI_TEST(test_snapshot_restore),
		LIFECYCLE_TESTS(PCI_TEST),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
