/* libFuzzer target: the virtio-mmio register page, driven as the vCPU
 * drives it (through the MMIO bus, any offset and size), for four devices
 * of different shapes, up to DRIVER_OK with rings in a small guest RAM and
 * queues kicked and served. The transport makes no KVM call until
 * virtio_mmio_plug(), which the target never calls. */
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fake_device.h"
#include "tests/fuzz/harness.h"
#include "virtio/virtio_mmio.h"
#include "vmm/io_bus.h"

/*
 * Input: operations back to back. An operation's first byte says what:
 * bits 0-2 the kind, bits 3-4 the device (its register page is at
 * BASE + device * 4 KiB), bits 5-7 the access size minus one.
 *   0 read: a 16-bit offset from the device's page (past its end is the
 *     next page, or nothing);
 *   1 write: the same, then 8 bytes whose first size are written;
 *   2, 6, 7 register write: a byte, the register's index (offset 4 times
 *     it), then the 32-bit value;
 *   3 guest RAM write: bit 3 picks the low or high region, then a 16-bit
 *     offset, a length byte and that many bytes (rings and buffers);
 *   4 the device serves the queues the guest kicked;
 *   5 register read: a byte, the register's index.
 * After each operation every device is checked: its status moved only as
 * the spec lets a driver move it, a live device's rings stayed, nothing
 * was started twice or reset unstarted, and every buffer the device was
 * handed lay in guest RAM.
 */
#define BASE 0xfed00000ULL
#define DEVICES 4
#define RAM_SIZE 0x10000
#define HIGH_RAM_GPA 0x100000000ULL
#define SHM_GPA 0x200000000ULL
#define SHM_SIZE (2ULL << 20)
#define IRQ 5

#define RING_FEATURES ((1ULL << VIRTIO_RING_F_EVENT_IDX) | \
		       (1ULL << VIRTIO_RING_F_INDIRECT_DESC))
#define VERSION_1 (1ULL << VIRTIO_F_VERSION_1)

static const struct {
	uint16_t queues, max_size;
	uint64_t features, shm_size;
} shapes[DEVICES] = {
	{2, 256, VERSION_1 | RING_FEATURES, SHM_SIZE}, /* as virtio-fs */
	{1, 1, VERSION_1, 0},
	{FAKE_MAX_QUEUES, 1024, VERSION_1 | RING_FEATURES, SHM_SIZE},
	{3, 8, VERSION_1 | (1ULL << VIRTIO_RING_F_INDIRECT_DESC), 0},
};

static struct vm vm;
static struct io_bus bus;
static struct fake_device fakes[DEVICES];
static struct virtio_mmio transports[DEVICES];
static uint8_t *ram[2];

static uint32_t reg_read(unsigned int d, uint32_t off)
{
	uint32_t v;
	virtio_mmio_access(&transports[d], off, false, (uint8_t *)&v, 4);
	return v;
}

static void reg_write(unsigned int d, uint32_t off, uint32_t v)
{
	virtio_mmio_access(&transports[d], off, true, (uint8_t *)&v, 4);
}

#define LIVE (VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK)

/* Device d after an operation: status_was before it; written says whether
 * the operation was a register write of value v to Status. */
static void check_device(unsigned int d, uint8_t status_was, bool written,
			 uint32_t v)
{
	const struct fake_device *f = &fakes[d];
	uint32_t status = reg_read(d, VIRTIO_MMIO_STATUS);
	uint8_t added = (uint8_t)(status & ~status_was);

	fake_device_check(f);
	fuzz_assert(status <= 0xff, "device %u: status %#x", d, status);
	if (written && v == 0) {
		fuzz_assert(status == 0 && !f->active &&
			    reg_read(d, VIRTIO_MMIO_INTERRUPT_STATUS) == 0,
			    "device %u: a reset left status %#x", d, status);
	} else if (written && v <= 0xff) {
		fuzz_assert((status & status_was) == status_was &&
			    !(added & ~(v | VIRTIO_CONFIG_S_NEEDS_RESET)),
			    "device %u: status %#x after %#x written to %#x", d,
			    status, v, status_was);
	} else {
		fuzz_assert(status == status_was,
			    "device %u: status %#x moved to %#x", d, status_was,
			    status);
	}
	uint64_t agreed = transports[d].driver_features;
	fuzz_assert(!(status & VIRTIO_CONFIG_S_FEATURES_OK) ||
		    (!(agreed & ~f->dev.features) && (agreed & VERSION_1)),
		    "device %u: features %#llx accepted", d,
		    (unsigned long long)agreed);
	fuzz_assert(!f->active || ((status & LIVE) == LIVE &&
				   !(status & VIRTIO_CONFIG_S_NEEDS_RESET)),
		    "device %u: running with status %#x", d, status);
	fuzz_assert(!(reg_read(d, VIRTIO_MMIO_INTERRUPT_STATUS) &
		      ~VIRTIO_MMIO_INT_VRING),
		    "device %u: an interrupt cause it never raises", d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	vm.mem = (struct guest_mem){.memfd = -1};
	ram[0] = guarded_alloc(RAM_SIZE);
	ram[1] = guarded_alloc(RAM_SIZE);
	static uint8_t shm_stand_in[1];
	if (guest_mem_add(&vm.mem, 0, RAM_SIZE, ram[0]) ||
	    guest_mem_add(&vm.mem, HIGH_RAM_GPA, RAM_SIZE, ram[1]))
		abort();
	for (unsigned int d = 0; d < DEVICES; d++) {
		uint64_t base = BASE + d * VIRTIO_MMIO_SIZE;
		fake_device_init(&fakes[d], &vm.mem, shapes[d].queues,
				 shapes[d].max_size, shapes[d].features,
				 shapes[d].shm_size, shm_stand_in);
		if (virtio_mmio_init(&transports[d], &vm, &fakes[d].dev, base,
				     IRQ, shapes[d].shm_size ? SHM_GPA : 0) ||
		    io_bus_register(&bus, base, VIRTIO_MMIO_SIZE,
				    virtio_mmio_access, &transports[d]))
			abort();
	}
	return 0;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* A write to Status: which device, and the value. */
struct status_write {
	unsigned int device; /* DEVICES: none */
	uint32_t value;
};

/* An aligned 32-bit write at offset off from device d's page is one to
 * Status if it lands there (maybe on a later device's page). */
static struct status_write status_write_at(unsigned int d, uint32_t off,
					   unsigned int width,
					   const uint8_t *value)
{
	struct status_write w = {.device = d + off / VIRTIO_MMIO_SIZE};
	if (w.device >= DEVICES || off % VIRTIO_MMIO_SIZE != VIRTIO_MMIO_STATUS ||
	    width != 4)
		return (struct status_write){.device = DEVICES};
	memcpy(&w.value, value, 4);
	return w;
}

/* Runs the operation at p (left bytes there); returns its length, or 0
 * when the input ends inside it. */
static size_t run_op(const uint8_t *p, size_t left, struct status_write *w)
{
	uint8_t op = p[0];
	unsigned int d = (op >> 3) & 3, width = (op >> 5) + 1;
	uint64_t page = BASE + d * VIRTIO_MMIO_SIZE;
	uint64_t v = 0;

	*w = (struct status_write){.device = DEVICES};
	switch (op & 7) {
	case 0:
		if (left < 3)
			return 0;
		bus_access(&bus, page + get16(p + 1), false, &v, width);
		return 3;
	case 1:
		if (left < 11)
			return 0;
		memcpy(&v, p + 3, 8);
		bus_access(&bus, page + get16(p + 1), true, &v, width);
		*w = status_write_at(d, get16(p + 1), width, p + 3);
		return 11;
	case 3: {
		if (left < 4 || left - 4 < p[3])
			return 0;
		uint16_t off = get16(p + 1);
		memcpy(ram[(op >> 3) & 1] + off, p + 4,
		       p[3] < RAM_SIZE - off ? p[3] : RAM_SIZE - off);
		return 4 + (size_t)p[3];
	}
	case 4:
		fake_device_serve(&fakes[d]);
		return 1;
	case 5:
		if (left < 2)
			return 0;
		bus_access(&bus, page + 4u * p[1], false, &v, 4);
		return 2;
	default:
		if (left < 6)
			return 0;
		memcpy(&v, p + 2, 4);
		bus_access(&bus, page + 4u * p[1], true, &v, 4);
		*w = status_write_at(d, 4u * p[1], 4, p + 2);
		return 6;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resources before = resources_now();
	memset(ram[0], 0, RAM_SIZE);
	memset(ram[1], 0, RAM_SIZE);
	size_t len;
	for (size_t pos = 0; pos < size; pos += len) {
		uint8_t status_was[DEVICES];
		for (unsigned int d = 0; d < DEVICES; d++)
			status_was[d] = (uint8_t)reg_read(d, VIRTIO_MMIO_STATUS);
		struct status_write w;
		len = run_op(data + pos, size - pos, &w);
		if (!len)
			break;
		for (unsigned int d = 0; d < DEVICES; d++)
			check_device(d, status_was[d], w.device == d, w.value);
	}
	/* The next input finds every device as new: the driver resets it. */
	for (unsigned int d = 0; d < DEVICES; d++) {
		reg_write(d, VIRTIO_MMIO_STATUS, 0);
		check_device(d, 0, true, 0);
	}
	resources_check("fuzz_virtio_mmio", before);
	return 0;
}
