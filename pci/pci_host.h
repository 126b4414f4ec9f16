/* The PCI host bridge: configuration mechanism #1 (ports 0xcf8/0xcfc) on
 * bus 0, and dispatch of MMIO in the PCI window to the owning BAR. */
#ifndef FSVM_PCI_HOST_H
#define FSVM_PCI_HOST_H

#include <stdatomic.h>

#include "pci/pci.h"
#include "vmm/core/io_bus.h"

#define PCI_HOST_SLOTS 32
#define PCI_CONFIG_ADDR_PORT 0xcf8
#define PCI_CONFIG_DATA_PORT 0xcfc

/* The bridge takes no lock: each device's own lock is held for every
 * access routed to it, config_addr is one atomic word, and the slots are
 * filled at set-up, before the vCPUs start. */
struct pci_host {
	atomic_uint config_addr; /* what the guest last wrote to 0xcf8 */
	struct pci_dev bridge;
	struct pci_dev *slots[PCI_HOST_SLOTS];
	uint64_t mmio32_start, mmio32_end; /* the board's window for BARs */
	uint64_t next_mmio32;
	uint64_t next_mmio64;
};

/* Registers the config ports and the MMIO window [mmio32_start,
 * mmio32_end) for 32-bit BARs on the buses; 64-bit BARs go from
 * mmio64_start (above RAM) up. */
int pci_host_init(struct pci_host *host, struct io_bus *pio,
		  struct io_bus *mmio, uint64_t mmio32_start,
		  uint64_t mmio32_end, uint64_t mmio64_start);
/* Plugs dev into the next free slot; returns the slot or -ENOSPC. */
int pci_host_add(struct pci_host *host, struct pci_dev *dev);
/* Hands out naturally aligned space for a 32-bit BAR. */
uint64_t pci_host_alloc_mmio32(struct pci_host *host, uint64_t size);
/* The same above 4 GiB, for large 64-bit BARs (size a power of two). */
uint64_t pci_host_alloc_mmio64(struct pci_host *host, uint64_t size);

#endif
