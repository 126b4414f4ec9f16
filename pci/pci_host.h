/* The PCI host bridge: configuration mechanism #1 (ports 0xcf8/0xcfc) on
 * bus 0, and dispatch of MMIO in the PCI window to the owning BAR. */
#ifndef FSVM_PCI_HOST_H
#define FSVM_PCI_HOST_H

#include <stdatomic.h>

#include "core/io_bus.h"
#include "pci/pci.h"

#define PCI_HOST_SLOTS 32
#define PCI_CONFIG_ADDR_PORT 0xcf8
#define PCI_CONFIG_DATA_PORT 0xcfc

/* Where the board puts BARs: 32-bit memory BARs in [mmio32_start,
 * mmio32_end), 64-bit ones from mmio64_start (above RAM) up, I/O BARs in
 * ports [io_start, io_end). */
struct pci_windows {
	uint64_t mmio32_start, mmio32_end;
	uint64_t mmio64_start;
	uint64_t io_start, io_end;
};

/* The bridge takes no lock: each device's own lock is held for every
 * access routed to it, config_addr is one atomic word, and the slots are
 * filled at set-up, before the vCPUs start. */
struct pci_host {
	atomic_uint config_addr; /* what the guest last wrote to 0xcf8 */
	struct pci_dev bridge;
	struct pci_dev *slots[PCI_HOST_SLOTS];
	struct pci_windows win;
	uint64_t next_mmio32;
	uint64_t next_mmio64;
	uint64_t next_io;
};

/* Registers the config ports and the windows on the buses. */
int pci_host_init(struct pci_host *host, struct io_bus *pio,
		  struct io_bus *mmio, const struct pci_windows *win);
/* Plugs dev into the next free slot; returns the slot or -ENOSPC. */
int pci_host_add(struct pci_host *host, struct pci_dev *dev);
/* Hands out naturally aligned space for a 32-bit BAR. */
uint64_t pci_host_alloc_mmio32(struct pci_host *host, uint64_t size);
/* The same above 4 GiB, for large 64-bit BARs (size a power of two). */
uint64_t pci_host_alloc_mmio64(struct pci_host *host, uint64_t size);
/* Naturally aligned ports for an I/O BAR; 0 when the window is full. */
uint16_t pci_host_alloc_io(struct pci_host *host, uint16_t size);

#endif
