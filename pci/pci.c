/* PCI configuration space: header, BAR sizing and moves, capabilities. */
#include "pci/pci.h"

#include <linux/pci_regs.h>
#include <string.h>

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

void pci_dev_init(struct pci_dev *dev, uint16_t vendor, uint16_t device,
		  uint32_t class_rev, uint16_t subsys_vendor,
		  uint16_t subsys_id)
{
	pthread_mutex_init(&dev->lock, NULL);
	memset(dev->cfg, 0, sizeof(dev->cfg));
	memset(dev->wmask, 0, sizeof(dev->wmask));
	memset(dev->bars, 0, sizeof(dev->bars));
	put16(&dev->cfg[PCI_VENDOR_ID], vendor);
	put16(&dev->cfg[PCI_DEVICE_ID], device);
	put32(&dev->cfg[PCI_CLASS_REVISION], class_rev);
	put16(&dev->cfg[PCI_SUBSYSTEM_VENDOR_ID], subsys_vendor);
	put16(&dev->cfg[PCI_SUBSYSTEM_ID], subsys_id);
	dev->cfg[PCI_HEADER_TYPE] = PCI_HEADER_TYPE_NORMAL;
	put16(&dev->wmask[PCI_COMMAND],
	      PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |
		      PCI_COMMAND_INTX_DISABLE);
	dev->wmask[PCI_INTERRUPT_LINE] = 0xff;
	dev->next_cap = PCI_CAP_START;
	dev->last_cap_next = &dev->cfg[PCI_CAPABILITY_LIST];
}

/* The BAR's registers as the guest reads them: address and type bits. */
static void pci_bar_store(struct pci_dev *dev, int idx)
{
	const struct pci_bar *bar = &dev->bars[idx];
	uint32_t type = bar->io ? PCI_BASE_ADDRESS_SPACE_IO
				: (bar->is64 ? PCI_BASE_ADDRESS_MEM_TYPE_64 : 0) |
					  (bar->prefetch ? PCI_BASE_ADDRESS_MEM_PREFETCH : 0);
	put32(&dev->cfg[PCI_BASE_ADDRESS_0 + 4 * idx], (uint32_t)bar->addr | type);
	if (bar->is64)
		put32(&dev->cfg[PCI_BASE_ADDRESS_0 + 4 * (idx + 1)],
		      (uint32_t)(bar->addr >> 32));
}

void pci_dev_set_bar(struct pci_dev *dev, int bar, uint64_t addr,
		     uint64_t size, bool is64, bool prefetch)
{
	dev->bars[bar] = (struct pci_bar){.addr = addr, .size = size,
					  .is64 = is64, .prefetch = prefetch};
	pci_bar_store(dev, bar);
}

void pci_dev_set_io_bar(struct pci_dev *dev, int bar, uint16_t port,
			uint16_t size)
{
	dev->bars[bar] = (struct pci_bar){.addr = port, .size = size, .io = true};
	pci_bar_store(dev, bar);
}

unsigned int pci_dev_add_cap(struct pci_dev *dev, const void *data,
			     unsigned int len)
{
	unsigned int off = dev->next_cap;
	if (off + len > PCI_CFG_SIZE)
		return 0;
	memcpy(&dev->cfg[off], data, len);
	dev->cfg[off + PCI_CAP_LIST_NEXT] = 0;
	*dev->last_cap_next = (uint8_t)off;
	dev->last_cap_next = &dev->cfg[off + PCI_CAP_LIST_NEXT];
	dev->cfg[PCI_STATUS] |= PCI_STATUS_CAP_LIST;
	dev->next_cap = (uint8_t)((off + len + 3) & ~3u);
	return off;
}

static void pci_cfg_read(struct pci_dev *dev, unsigned int off,
			 uint8_t *data, unsigned int size)
{
	if (off >= PCI_CFG_SIZE || size > PCI_CFG_SIZE - off) {
		memset(data, 0xff, size);
		return;
	}
	memcpy(data, &dev->cfg[off], size);
}

/* A BAR register write: sizing (all ones) reads back the size mask;
 * anything else moves the BAR. */
static void pci_bar_write(struct pci_dev *dev, unsigned int reg,
			  uint32_t value)
{
	int idx = (int)(reg - PCI_BASE_ADDRESS_0) / 4;
	bool high = false;
	if (idx > 0 && dev->bars[idx - 1].is64) {
		idx--;
		high = true;
	}
	struct pci_bar *bar = &dev->bars[idx];
	if (!bar->size)
		return; /* unimplemented BARs read as zero */
	/* BARs are at least 16 bytes (4 for ports): the size mask also drops
	 * the type bits the guest wrote. */
	uint64_t mask = ~(bar->size - 1);
	uint64_t addr = bar->addr;
	if (high)
		addr = (addr & 0xffffffffULL) | ((uint64_t)value << 32);
	else
		addr = (addr & ~0xffffffffULL) | value;
	addr &= mask;
	/* Ports are 16 bits: the upper half of an I/O BAR reads as zero. */
	addr &= bar->io ? 0xffffULL : bar->is64 ? ~0ULL : 0xffffffffULL;

	uint64_t old = bar->addr;
	bar->addr = addr;
	pci_bar_store(dev, idx);
	if (old != addr && dev->bar_moved)
		dev->bar_moved(dev, idx, old);
}

static void pci_cfg_write(struct pci_dev *dev, unsigned int off,
			  const uint8_t *data, unsigned int size)
{
	if (off >= PCI_CFG_SIZE || size > PCI_CFG_SIZE - off)
		return;
	if (off >= PCI_BASE_ADDRESS_0 && off <= PCI_BASE_ADDRESS_5 + 3) {
		if (size == 4 && off % 4 == 0) {
			uint32_t v;
			memcpy(&v, data, 4);
			pci_bar_write(dev, off, v);
		}
		return;
	}
	for (unsigned int i = 0; i < size; i++) {
		uint8_t m = dev->wmask[off + i];
		dev->cfg[off + i] = (uint8_t)((dev->cfg[off + i] & ~m) |
					      (data[i] & m));
	}
	if (dev->cfg_written)
		dev->cfg_written(dev, off, size);
}

static bool pci_bar_lookup(const struct pci_dev *dev, bool io, uint64_t addr,
			   int *bar, uint64_t *off)
{
	if (!(dev->cfg[PCI_COMMAND] & (io ? PCI_COMMAND_IO : PCI_COMMAND_MEMORY)))
		return false;
	for (int i = 0; i < PCI_BAR_COUNT; i++) {
		const struct pci_bar *b = &dev->bars[i];
		if (b->size && b->io == io && addr >= b->addr &&
		    addr - b->addr < b->size) {
			*bar = i;
			*off = addr - b->addr;
			return true;
		}
	}
	return false;
}

void pci_cfg_access(struct pci_dev *dev, unsigned int off, bool is_write,
		    uint8_t *data, unsigned int size)
{
	pthread_mutex_lock(&dev->lock);
	if (is_write)
		pci_cfg_write(dev, off, data, size);
	else
		pci_cfg_read(dev, off, data, size);
	pthread_mutex_unlock(&dev->lock);
}

bool pci_bar_access(struct pci_dev *dev, bool io, uint64_t addr,
		    bool is_write, uint8_t *data, unsigned int size)
{
	if (!dev->bar_access)
		return false; /* set before the device is plugged, never after */
	int bar;
	uint64_t off;
	pthread_mutex_lock(&dev->lock);
	bool hit = pci_bar_lookup(dev, io, addr, &bar, &off);
	bool unlocked = hit && bar == dev->unlocked_bar &&
			off >= dev->unlocked_off &&
			off - dev->unlocked_off < dev->unlocked_len;
	if (hit && !unlocked)
		dev->bar_access(dev, bar, off, is_write, data, size);
	pthread_mutex_unlock(&dev->lock);
	if (unlocked)
		dev->bar_access(dev, bar, off, is_write, data, size);
	return hit;
}

void pci_dev_save(const struct pci_dev *dev, struct state_out *out)
{
	state_put(out, dev->cfg, sizeof(dev->cfg));
}

void pci_dev_restore(struct pci_dev *dev, struct state_in *in)
{
	uint8_t cfg[PCI_CFG_SIZE];
	state_get(in, cfg, sizeof(cfg));
	if (in->short_read)
		return;
	for (unsigned int reg = PCI_BASE_ADDRESS_0; reg <= PCI_BASE_ADDRESS_5; reg += 4)
		pci_cfg_write(dev, reg, cfg + reg, 4);
	for (unsigned int off = 0; off < PCI_CFG_SIZE; off++)
		if (off < PCI_BASE_ADDRESS_0 || off > PCI_BASE_ADDRESS_5 + 3)
			pci_cfg_write(dev, off, cfg + off, 1);
}
