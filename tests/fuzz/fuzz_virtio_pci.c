/* libFuzzer target: virtio-pci as a guest reaches it, through the vCPU's
 * way in (the port-I/O and MMIO buses): the host bridge's config ports,
 * config space with BAR sizing and moves, BAR 0 (common config, ISR,
 * device config, MSI-X table and PBA) and the doorbells' I/O BAR at any
 * offset and size, DRIVER_OK and reset, against two devices of different
 * shapes. Behind them is a real, empty KVM VM (irq routing, irqfds,
 * ioeventfds, memory slots work on any KVM, PVM included), made once and
 * kept: each input ends with the devices reset and their config put back,
 * as a driver would, and checked to be as new. */
#include <linux/pci_regs.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/x86/memory_map.h"
#include "core/arch.h"
#include "core/irq.h"
#include "core/kvm.h"
#include "pci/pci_host.h"
#include "tests/fuzz/fake_device.h"
#include "tests/fuzz/harness.h"
#include "virtio/virtio_pci.h"

/*
 * Input: operations back to back. An operation's first byte says what:
 * bits 0-2 the kind, bit 3 the device (in slot 1 or 2), bits 4-5 the
 * access size (1, 2, 4 or 8 bytes; port I/O and config space take 4 for
 * 8), bit 6 a write (for kinds 0 and 6), bit 7 the doorbells (kind 0).
 *   0 port I/O: a byte, the port from 0xcf4 (to 0xd03), or with bit 7 a
 *     16-bit offset from where the device's notify BAR is now (past its
 *     end is whatever lies there); then for a write 4 bytes of value;
 *   1 config write: a byte, the register; then 4 bytes of value. The
 *     harness selects it through 0xcf8 and writes 0xcfc + register % 4;
 *   2 config read: a byte, the register;
 *   3 BAR 0 write: a 16-bit offset from where the device's BAR 0 is now
 *     (past its end is whatever lies there), then 8 bytes of value;
 *   4 BAR 0 read: a 16-bit offset;
 *   5 guest RAM write: a 16-bit offset, a length byte, that many bytes;
 *   6 MMIO anywhere in the 32-bit PCI window: a 32-bit offset from its
 *     start, then for a write 8 bytes of value;
 *   7 the device serves the queues the guest kicked.
 */
#define RAM_SIZE 0x10000
#define MMIO64_START 0x100000000ULL
#define SHM_SIZE (2ULL << 20)
#define DEVICES 2
#define CONFIG_ENABLE 0x80000000u


static const struct {
	uint16_t queues, max_size;
	uint64_t features, shm_size;
} shapes[DEVICES] = {
	{3, 256, VERSION_1 | RING_FEATURES, SHM_SIZE}, /* as virtio-fs */
	{1, 16, VERSION_1, 0},
};

static struct vm vm;
static struct pci_host host;
static struct fake_device fakes[DEVICES];
static struct virtio_pci transports[DEVICES];
static uint8_t *ram;

/* What a driver learns of each device from its config space at start. */
static struct {
	unsigned int slot;
	uint8_t config[PCI_CFG_SIZE];
	uint32_t bar_sized[PCI_BAR_COUNT]; /* what sizing reads back */
	unsigned int msix_cap, msix_vectors;
	uint64_t msix_table; /* offset in BAR 0 */
	uint64_t common;     /* offset of the common config in BAR 0 */
	unsigned int notify_bar; /* the doorbells' I/O BAR */
} dev_info[DEVICES];

static uint32_t pio_read(uint16_t port, unsigned int size)
{
	uint32_t v = 0;
	bus_access(&vm.pio, port, false, &v, size);
	return v;
}

static void pio_write(uint16_t port, uint32_t v, unsigned int size)
{
	bus_access(&vm.pio, port, true, &v, size);
}

/* Config space of device d, as a driver reaches it; the guest's own
 * choice in 0xcf8 is kept. */
static uint32_t cfg_read(unsigned int d, unsigned int reg, unsigned int size)
{
	uint32_t saved = pio_read(PCI_CONFIG_ADDR_PORT, 4);
	pio_write(PCI_CONFIG_ADDR_PORT,
		  CONFIG_ENABLE | dev_info[d].slot << 11 | (reg & 0xfc), 4);
	uint32_t v = pio_read((uint16_t)(PCI_CONFIG_DATA_PORT + (reg & 3)), size);
	pio_write(PCI_CONFIG_ADDR_PORT, saved, 4);
	return v;
}

static void cfg_write(unsigned int d, unsigned int reg, uint32_t v,
		      unsigned int size)
{
	uint32_t saved = pio_read(PCI_CONFIG_ADDR_PORT, 4);
	pio_write(PCI_CONFIG_ADDR_PORT,
		  CONFIG_ENABLE | dev_info[d].slot << 11 | (reg & 0xfc), 4);
	pio_write((uint16_t)(PCI_CONFIG_DATA_PORT + (reg & 3)), v, size);
	pio_write(PCI_CONFIG_ADDR_PORT, saved, 4);
}

/* Where BAR 0 of device d is now, as its register says. */
static uint64_t bar0(unsigned int d)
{
	return cfg_read(d, PCI_BASE_ADDRESS_0, 4) & PCI_BASE_ADDRESS_MEM_MASK;
}

static void bar0_write(unsigned int d, uint64_t off, uint64_t v,
		       unsigned int size)
{
	bus_access(&vm.mmio, bar0(d) + off, true, &v, size);
}

static uint64_t bar0_read(unsigned int d, uint64_t off, unsigned int size)
{
	uint64_t v = 0;
	bus_access(&vm.mmio, bar0(d) + off, false, &v, size);
	return v;
}

/* Where device d's doorbells start now: a port. */
static uint16_t notify_port(unsigned int d)
{
	unsigned int reg = PCI_BASE_ADDRESS_0 + 4 * dev_info[d].notify_bar;
	return (uint16_t)(cfg_read(d, reg, 4) & PCI_BASE_ADDRESS_IO_MASK);
}

/* Reads device d's config space and capabilities, as a driver does. */
static void learn_device(unsigned int d, unsigned int slot)
{
	dev_info[d].slot = slot;
	for (unsigned int reg = 0; reg < PCI_CFG_SIZE; reg += 4) {
		uint32_t v = cfg_read(d, reg, 4);
		memcpy(&dev_info[d].config[reg], &v, 4);
	}
	const uint8_t *c = dev_info[d].config;
	for (unsigned int at = c[PCI_CAPABILITY_LIST], n = 0; at && n < 48;
	     at = c[at + 1], n++) {
		uint32_t off;
		memcpy(&off, &c[at + offsetof(struct virtio_pci_cap, offset)], 4);
		if (c[at] == PCI_CAP_ID_MSIX) {
			uint16_t flags;
			uint32_t table;
			memcpy(&flags, &c[at + PCI_MSIX_FLAGS], 2);
			memcpy(&table, &c[at + PCI_MSIX_TABLE], 4);
			dev_info[d].msix_cap = at;
			dev_info[d].msix_vectors = (flags & PCI_MSIX_FLAGS_QSIZE) + 1u;
			dev_info[d].msix_table = table & PCI_MSIX_TABLE_OFFSET;
		} else if (c[at] == PCI_CAP_ID_VNDR &&
			   c[at + offsetof(struct virtio_pci_cap, cfg_type)] ==
				   VIRTIO_PCI_CAP_COMMON_CFG) {
			dev_info[d].common = off;
		} else if (c[at] == PCI_CAP_ID_VNDR &&
			   c[at + offsetof(struct virtio_pci_cap, cfg_type)] ==
				   VIRTIO_PCI_CAP_NOTIFY_CFG) {
			dev_info[d].notify_bar =
				c[at + offsetof(struct virtio_pci_cap, bar)];
		}
	}
	if (!dev_info[d].msix_cap || dev_info[d].notify_bar >= PCI_BAR_COUNT ||
	    !(c[PCI_BASE_ADDRESS_0 + 4 * dev_info[d].notify_bar] &
	      PCI_BASE_ADDRESS_SPACE_IO))
		abort();
	/* Sizing, with decoding off as a driver does it: the size mask and
	 * the type bits, or 0 for a BAR not there. */
	for (unsigned int b = 0; b < PCI_BAR_COUNT; b++) {
		unsigned int reg = PCI_BASE_ADDRESS_0 + 4 * b;
		uint32_t was = cfg_read(d, reg, 4);
		cfg_write(d, reg, 0xffffffff, 4);
		dev_info[d].bar_sized[b] = cfg_read(d, reg, 4);
		cfg_write(d, reg, was, 4);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	const char *why = "";
	vm.kvm_fd = vm.vm_fd = -1;
	vm.mem = (struct guest_mem){0};
	ram = guarded_alloc(RAM_SIZE);
	int err = kvm_open(&vm, &why);
	if (!err)
		err = guest_mem_add(&vm.mem, 0, RAM_SIZE, ram);
	if (!err)
		err = kvm_create_vm(&vm, &why);
	if (!err)
		err = irq_routing_init(&vm);
	const struct pci_windows win = {
		.mmio32_start = PCI_MMIO32_START, .mmio32_end = PCI_MMIO32_END,
		.mmio64_start = MMIO64_START,
		.io_start = PCI_IO_START, .io_end = PCI_IO_END};
	if (!err)
		err = pci_host_init(&host, &vm.pio, &vm.mmio, &win);
	for (unsigned int d = 0; !err && d < DEVICES; d++) {
		void *shm = shapes[d].shm_size ? guarded_alloc(shapes[d].shm_size)
					       : NULL;
		fake_device_init(&fakes[d], &vm.mem, shapes[d].queues,
				 shapes[d].max_size, shapes[d].features,
				 shapes[d].shm_size, shm);
		err = virtio_pci_init(&transports[d], &vm, &host, &fakes[d].dev);
	}
	if (err) {
		fprintf(stderr, "fuzz_virtio_pci: cannot set up a VM: %s (%s)\n",
			strerror(-err), why);
		exit(1);
	}
	for (unsigned int d = 0; d < DEVICES; d++)
		learn_device(d, d + 1);
	return 0;
}

static const unsigned int widths[4] = {1, 2, 4, 8};

/* Runs the operation at p (left bytes there); returns its length, or 0
 * when the input ends inside it. */
static size_t run_op(const uint8_t *p, size_t left)
{
	uint8_t op = p[0];
	unsigned int d = (op >> 3) & 1, width = widths[(op >> 4) & 3];
	unsigned int narrow = width == 8 ? 4 : width;
	bool is_write = op & 0x40;
	uint64_t v = 0;

	switch (op & 7) {
	case 0: {
		bool doorbells = op & 0x80;
		size_t len = (doorbells ? 3 : 2) + (is_write ? 4 : 0);
		if (left < len)
			return 0;
		if (is_write)
			memcpy(&v, p + len - 4, 4);
		uint16_t port = (uint16_t)(0xcf4 + p[1] % 16);
		if (doorbells)
			port = (uint16_t)(notify_port(d) + le16_at(p + 1));
		bus_access(&vm.pio, port, is_write, &v, narrow);
		return len;
	}
	case 1:
		if (left < 6)
			return 0;
		memcpy(&v, p + 2, 4);
		cfg_write(d, p[1], (uint32_t)v, narrow);
		return 6;
	case 2:
		if (left < 2)
			return 0;
		cfg_read(d, p[1], narrow);
		return 2;
	case 3:
		if (left < 11)
			return 0;
		memcpy(&v, p + 3, 8);
		bar0_write(d, le16_at(p + 1), v, width);
		return 11;
	case 4:
		if (left < 3)
			return 0;
		bar0_read(d, le16_at(p + 1), width);
		return 3;
	case 5: {
		if (left < 4 || left - 4 < p[3])
			return 0;
		uint16_t off = le16_at(p + 1);
		memcpy(ram + off, p + 4, p[3] < RAM_SIZE - off ? p[3] : RAM_SIZE - off);
		return 4 + (size_t)p[3];
	}
	case 6: {
		size_t len = 5 + (is_write ? 8 : 0);
		uint32_t off;
		if (left < len)
			return 0;
		memcpy(&off, p + 1, 4);
		if (is_write)
			memcpy(&v, p + 5, 8);
		bus_access(&vm.mmio, PCI_MMIO32_START + off, is_write, &v, width);
		return len;
	}
	default:
		fake_device_serve(&fakes[d]);
		return 1;
	}
}

/* The device a driver finds after its own reset: stopped, status 0, the
 * config space as at start once the driver has put back what it may
 * change (command, BARs, interrupt line, MSI-X control) and every MSI-X
 * entry masked. BARs size as at start. */
static void reset_device(unsigned int d)
{
	const uint8_t *was = dev_info[d].config;
	uint32_t word;

	/* Decoding off to size and place the BARs; every BAR but 0 at 0
	 * while decoding is on for the reset, so no memory slot comes and
	 * goes (each change costs KVM a grace period). */
	cfg_write(d, PCI_COMMAND, 0, 2);
	for (unsigned int b = 0; b < PCI_BAR_COUNT; b++) {
		unsigned int reg = PCI_BASE_ADDRESS_0 + 4 * b;
		cfg_write(d, reg, 0xffffffff, 4);
		uint32_t sized = cfg_read(d, reg, 4);
		fuzz_assert(sized == dev_info[d].bar_sized[b],
			    "device %u: BAR %u sizes as %#x, not %#x", d, b,
			    sized, dev_info[d].bar_sized[b]);
		memcpy(&word, &was[reg], 4);
		cfg_write(d, reg, b == 0 ? word : 0, 4);
	}
	cfg_write(d, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
	uint64_t status = offsetof(struct virtio_pci_common_cfg, device_status);
	bar0_write(d, dev_info[d].common + status, 0, 1);
	fuzz_assert(bar0_read(d, dev_info[d].common + status, 1) == 0 &&
		    !fakes[d].active,
		    "device %u: a reset left it running", d);
	cfg_write(d, dev_info[d].msix_cap + PCI_MSIX_FLAGS, 0, 2);
	for (unsigned int v = 0; v < dev_info[d].msix_vectors; v++) {
		uint64_t entry = dev_info[d].msix_table + v * PCI_MSIX_ENTRY_SIZE;
		for (unsigned int field = 0; field < PCI_MSIX_ENTRY_SIZE; field += 4)
			bar0_write(d, entry + field,
				   field == PCI_MSIX_ENTRY_VECTOR_CTRL
					   ? PCI_MSIX_ENTRY_CTRL_MASKBIT
					   : 0,
				   4);
		fuzz_assert(bar0_read(d, entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 4) ==
				    PCI_MSIX_ENTRY_CTRL_MASKBIT &&
			    bar0_read(d, entry + PCI_MSIX_ENTRY_DATA, 4) == 0,
			    "device %u: MSI-X entry %u does not read back", d, v);
	}
	cfg_write(d, PCI_COMMAND, 0, 2);
	for (unsigned int reg = PCI_BASE_ADDRESS_1; reg <= PCI_BASE_ADDRESS_5;
	     reg += 4) {
		memcpy(&word, &was[reg], 4);
		cfg_write(d, reg, word, 4);
	}
	cfg_write(d, PCI_INTERRUPT_LINE, was[PCI_INTERRUPT_LINE], 1);
	cfg_write(d, PCI_COMMAND, was[PCI_COMMAND] | was[PCI_COMMAND + 1] << 8, 2);
	for (unsigned int reg = 0; reg < PCI_CFG_SIZE; reg += 4) {
		word = cfg_read(d, reg, 4);
		fuzz_assert(!memcmp(&word, &was[reg], 4),
			    "device %u: config %#x reads %#x after a reset", d,
			    reg, word);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resources before = resources_now();
	memset(ram, 0, RAM_SIZE);
	size_t len;
	for (size_t pos = 0; pos < size; pos += len) {
		len = run_op(data + pos, size - pos);
		if (!len)
			break;
		for (unsigned int d = 0; d < DEVICES; d++)
			fake_device_check(&fakes[d]);
	}
	pio_write(PCI_CONFIG_ADDR_PORT, 0, 4);
	for (unsigned int d = 0; d < DEVICES; d++)
		reset_device(d);
	resources_check("fuzz_virtio_pci", before);
	return 0;
}
