/* PCI host bridge: config mechanism #1 and BAR-routed MMIO. */
#include "devices/pci_host.h"

#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#define CONFIG_ENABLE 0x80000000u
#define BRIDGE_VENDOR 0x8086 /* the i440FX host bridge guests know */
#define BRIDGE_DEVICE 0x1237
#define BRIDGE_CLASS 0x06000000 /* host bridge, revision 0 */

/* The device addressed by config_addr, or NULL (bus != 0, function != 0). */
static struct pci_dev *pci_host_target(struct pci_host *host,
				       unsigned int *reg)
{
	uint32_t a = host->config_addr;
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
	pthread_mutex_lock(&host->lock);
	if (is_write)
		memcpy(&host->config_addr, data, 4);
	else
		memcpy(data, &host->config_addr, 4);
	pthread_mutex_unlock(&host->lock);
}

static void pci_host_config_data_io(void *opaque, uint64_t offset,
				    bool is_write, uint8_t *data,
				    unsigned int size)
{
	struct pci_host *host = opaque;
	unsigned int reg;

	pthread_mutex_lock(&host->lock);
	struct pci_dev *dev = pci_host_target(host, &reg);
	if (!dev) {
		if (!is_write)
			memset(data, 0xff, size);
	} else if (is_write) {
		pci_cfg_write(dev, reg + (unsigned int)offset, data, size);
	} else {
		pci_cfg_read(dev, reg + (unsigned int)offset, data, size);
	}
	pthread_mutex_unlock(&host->lock);
}

static void pci_host_mmio(void *opaque, uint64_t offset, bool is_write,
			  uint8_t *data, unsigned int size)
{
	struct pci_host *host = opaque;
	uint64_t addr = PCI_MMIO32_START + offset;

	pthread_mutex_lock(&host->lock);
	for (int slot = 0; slot < PCI_HOST_SLOTS; slot++) {
		struct pci_dev *dev = host->slots[slot];
		int bar;
		uint64_t off;
		if (dev && dev->bar_access &&
		    pci_dev_bar_lookup(dev, addr, &bar, &off)) {
			pthread_mutex_unlock(&host->lock);
			dev->bar_access(dev, bar, off, is_write, data, size);
			return;
		}
	}
	pthread_mutex_unlock(&host->lock);
	if (!is_write)
		memset(data, 0xff, size);
}

int pci_host_init(struct pci_host *host, struct io_bus *pio,
		  struct io_bus *mmio, uint64_t mmio64_start)
{
	memset(host, 0, sizeof(*host));
	pthread_mutex_init(&host->lock, NULL);
	host->next_mmio32 = PCI_MMIO32_START;
	host->next_mmio64 = mmio64_start;
	pci_dev_init(&host->bridge, BRIDGE_VENDOR, BRIDGE_DEVICE, BRIDGE_CLASS,
		     0, 0);
	host->slots[0] = &host->bridge;
	int err = io_bus_register(pio, PCI_CONFIG_ADDR_PORT, 4,
				  pci_host_config_addr_io, host);
	if (!err)
		err = io_bus_register(pio, PCI_CONFIG_DATA_PORT, 4,
				      pci_host_config_data_io, host);
	if (!err)
		err = io_bus_register(mmio, PCI_MMIO32_START,
				      PCI_MMIO32_END - PCI_MMIO32_START,
				      pci_host_mmio, host);
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
	if (addr + size > PCI_MMIO32_END)
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
