/* virtio-pci (modern) transport: common/ISR/device-config capabilities
 * and the MSI-X table in BAR 0, one vector per queue routed through KVM
 * irqfds, and queue doorbells as ports in I/O BAR 1: KVM ioeventfds or,
 * for a device with its own notify, port exits that reach it unlocked. */
#ifndef FSVM_VIRTIO_PCI_H
#define FSVM_VIRTIO_PCI_H

#include <stdbool.h>

#include "core/vm.h"
#include "pci/pci.h"
#include "pci/pci_host.h"
#include "virtio/virtio_dev.h"
#include "virtio/virtio_transport.h"

#define VIRTIO_PCI_MAX_VECTORS (VIRTIO_TRANSPORT_MAX_QUEUES + 1)

struct msix_entry {
	uint32_t addr_lo, addr_hi, data, ctrl;
};

/* Guarded by pci.lock, which pci/pci.c holds across every callback
 * (config cycles and BAR accesses alike): the transport has no lock of its
 * own, so a BAR move and DRIVER_OK or a reset are one after the other. */
struct virtio_pci {
	struct pci_dev pci;
	struct vm *vm;
	struct virtio_transport t;

	uint16_t config_vector;
	/* MSI-X vector per queue */
	uint16_t qvector[VIRTIO_TRANSPORT_MAX_QUEUES];

	unsigned int nr_vectors;
	struct msix_entry msix[VIRTIO_PCI_MAX_VECTORS];
	int vector_gsi[VIRTIO_PCI_MAX_VECTORS];
	int vector_fd[VIRTIO_PCI_MAX_VECTORS];
	bool vector_live[VIRTIO_PCI_MAX_VECTORS]; /* irqfd assigned */
	unsigned int msix_cap; /* config-space offset of the MSI-X cap */
	unsigned int shm_slot; /* KVM memory slot of the shared memory BAR */
	uint64_t shm_gpa;      /* where that slot is now; 0: not mapped */
};

/* Creates the transport for dev and plugs it into the host bridge. */
int virtio_pci_init(struct virtio_pci *vp, struct vm *vm,
		    struct pci_host *host, const struct virtio_dev *dev);

/* For a snapshot (docs/snapshot.md): config space, MSI-X table, vectors
 * and the life cycle's state; the device must be quiescent. */
void virtio_pci_save(struct virtio_pci *vp, struct state_out *out);
/* Into a transport as initialised, what save wrote, each part through
 * the checks the guest's writes meet: 0, or -EBADMSG with a line in err
 * (the device reset). */
int virtio_pci_restore(struct virtio_pci *vp, struct state_in *in, char *err,
		       size_t errlen);

#endif
