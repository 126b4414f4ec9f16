/* Where virtio devices go: each on the transport the machine uses, as a
 * PCI function behind the host bridge or as a virtio-mmio register page
 * in the board's range with an IRQ from its list. Devices add themselves
 * here without knowing which. */
#ifndef FSVM_VIRTIO_BUS_H
#define FSVM_VIRTIO_BUS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"
#include "pci/pci_host.h"
#include "virtio/virtio_dev.h"
#include "virtio/virtio_mmio.h"
#include "virtio/virtio_pci.h"

#define VIRTIO_BUS_MAX_DEVICES 16

struct virtio_bus {
	struct vm *vm;
	struct pci_host *pci; /* its 64-bit window holds virtio-mmio shm too */
	bool mmio;
	uint64_t mmio_base;        /* register pages, VIRTIO_MMIO_SIZE apart */
	const unsigned int *irqs;  /* shared round robin past their number */
	unsigned int nr_irqs;
	unsigned int nr_devices;
	union {
		struct virtio_pci pci;
		struct virtio_mmio mmio;
	} transports[VIRTIO_BUS_MAX_DEVICES];
};

/* Puts dev on the bus's transport; -ENOSPC when the bus is full. A
 * virtio-mmio device's shared memory region takes guest-physical space
 * from the same allocator as 64-bit PCI BARs, so the two never overlap. */
int virtio_bus_add(struct virtio_bus *bus, const struct virtio_dev *dev);

/* Device i's virtio-mmio transport (for the firmware tables). */
const struct virtio_mmio *virtio_bus_mmio(const struct virtio_bus *bus,
					  unsigned int i);

#endif
