/* Placing virtio devices on the machine's transport. */
#include "virtio/virtio_bus.h"

#include <errno.h>

int virtio_bus_add(struct virtio_bus *bus, const struct virtio_dev *dev)
{
	unsigned int i = bus->nr_devices;
	if (i == VIRTIO_BUS_MAX_DEVICES)
		return -ENOSPC;
	int err;
	if (!bus->mmio) {
		err = virtio_pci_init(&bus->transports[i].pci, bus->vm, bus->pci,
				      dev);
	} else {
		struct virtio_mmio *m = &bus->transports[i].mmio;
		uint64_t shm = dev->shm_size ? pci_host_alloc_mmio64(
						       bus->pci, dev->shm_size)
					     : 0;
		err = virtio_mmio_init(m, bus->vm, dev,
				       bus->mmio_base + i * VIRTIO_MMIO_SIZE,
				       bus->irqs[i % bus->nr_irqs], shm);
		if (!err)
			err = virtio_mmio_plug(m);
	}
	if (!err)
		bus->nr_devices++;
	return err;
}

const struct virtio_mmio *virtio_bus_mmio(const struct virtio_bus *bus,
					  unsigned int i)
{
	return &bus->transports[i].mmio;
}
