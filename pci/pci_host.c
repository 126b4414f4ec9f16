/* PCI host bridge: config mechanism #1 and BAR-routed MMIO. */
#include "pci/pci_host.h"

#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#define CONFIG_ENABLE 0x80000000u
#define BRIDGE_VENDOR 0x8086 /* the i440FX host bridge guests know */
#define BRIDGE_DEVICE 0x1237
#define BRIDGE_CLASS 0x06000000 /* host bridge, revision 0 */

/* The device a config address selects, or NULL (bus != 0, function != 0). */
static struct pci_dev *pci_host_target(struct pci_host *host, uint32_t a,
				       unsigned int *reg)
{
	if (!(a & CONFIG_ENABLE) || ((a >> 16) & 0xff) || ((a >> 8) & 0x7))
		return NULL;
	*reg = a & 0xfc;
	return host->slots[(a >> 11) & 0x1f];
}

static void pci_host_config_addr_io(void *opaque, uint64_t offset,
				    bool is_write, uint8_t *data,
				    unsigned int size)
{
	struct pci_host *host = opaque;
	if (offset != 0 || size != 4) {
		/* Byte accesses to 0xcf8..0xcfb are not config cycles. */
		if (!is_write)
			memset(data, 0xff, size);
		return;
	}
	uint32_t a;
	if (is_write) {
		memcpy(&a, data, 4);
		atomic_store(&host->config_addr, a);
	} else {
		a = atomic_load(&host->config_addr);
		memcpy(data, &a, 4);
	}
}

static void pci_host_config_data_io(void *opaque, uint64_t offset,
				    bool is_write, uint8_t *data,
				    unsigned int size)
{
	struct pci_host *host = opaque;
	unsigned int reg;
	struct pci_dev *dev =
		pci_host_target(host, atomic_load(&host->config_addr), &reg);
	if (dev)
		pci_cfg_access(dev, reg + (unsigned int)offset, is_write, data,
			       size);
	else if (!is_write)
		memset(data, 0xff, size);
}

static void pci_host_route(struct pci_host *host, bool io, uint64_t addr,
			   bool is_write, uint8_t *data, unsigned int size)
{
	for (int slot = 0; slot < PCI_HOST_SLOTS; slot++) {
		struct pci_dev *dev = host->slots[slot];
		if (dev && pci_bar_access(dev, io, addr, is_write, data, size))
			return;
	}
	if (!is_write)
		memset(data, 0xff, size);
}

static void pci_host_mmio(void *opaque, uint64_t offset, bool is_write,
			  uint8_t *data, unsigned int size)
{
	struct pci_host *host = opaque;
	pci_host_route(host, false, host->win.mmio32_start + offset, is_write,
		       data, size);
}

static void pci_host_io(void *opaque, uint64_t offset, bool is_write,
			uint8_t *data, unsigned int size)
{
	struct pci_host *host = opaque;
	pci_host_route(host, true, host->win.io_start + offset, is_write, data,
		       size);
}

int pci_host_init(struct pci_host *host, struct io_bus *pio,
		  struct io_bus *mmio, const struct pci_windows *win)
{
	memset(host, 0, sizeof(*host));
	host->win = *win;
	host->next_mmio32 = win->mmio32_start;
	host->next_mmio64 = win->mmio64_start;
	host->next_io = win->io_start;
	pci_dev_init(&host->bridge, BRIDGE_VENDOR, BRIDGE_DEVICE, BRIDGE_CLASS,
		     0, 0);
	host->slots[0] = &host->bridge;
	int err = io_bus_register(pio, PCI_CONFIG_ADDR_PORT, 4,
				  pci_host_config_addr_io, host);
	if (!err)
		err = io_bus_register(pio, PCI_CONFIG_DATA_PORT, 4,
				      pci_host_config_data_io, host);
	if (!err)
		err = io_bus_register(mmio, win->mmio32_start,
				      win->mmio32_end - win->mmio32_start,
				      pci_host_mmio, host);
	if (!err)
		err = io_bus_register(pio, win->io_start,
				      win->io_end - win->io_start, pci_host_io,
				      host);
	return err;
}

int pci_host_add(struct pci_host *host, struct pci_dev *dev)
{
	for (int slot = 1; slot < PCI_HOST_SLOTS; slot++) {
		if (!host->slots[slot]) {
			host->slots[slot] = dev;
			return slot;
		}
	}
	return -ENOSPC;
}

uint64_t pci_host_alloc_mmio32(struct pci_host *host, uint64_t size)
{
	uint64_t addr = (host->next_mmio32 + size - 1) & ~(size - 1);
	if (addr + size > host->win.mmio32_end)
		return 0;
	host->next_mmio32 = addr + size;
	return addr;
}

uint64_t pci_host_alloc_mmio64(struct pci_host *host, uint64_t size)
{
	uint64_t addr = (host->next_mmio64 + size - 1) & ~(size - 1);
	host->next_mmio64 = addr + size;
	return addr;
}

uint16_t pci_host_alloc_io(struct pci_host *host, uint16_t size)
{
	uint64_t port = (host->next_io + size - 1) & ~(uint64_t)(size - 1);
	if (port + size > host->win.io_end)
		return 0;
	host->next_io = port + size;
	return (uint16_t)port;
}
