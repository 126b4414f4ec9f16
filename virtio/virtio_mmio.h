/* virtio-mmio transport (virtio 1.2, 4.2; version 2 registers only): one
 * 4 KiB register page, queue doorbells through KVM ioeventfds (or, for a
 * device with its own notify, exits that reach it unlocked), and one
 * edge-triggered ISA interrupt raised through a KVM irqfd. A shared memory
 * region (DAX window) is a KVM memory slot at a fixed address. */
#ifndef FSVM_VIRTIO_MMIO_H
#define FSVM_VIRTIO_MMIO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"
#include "virtio/virtio_dev.h"
#include "virtio/virtio_transport.h"

#define VIRTIO_MMIO_SIZE 0x1000

struct virtio_mmio {
	struct vm *vm;
	struct virtio_transport t;
	pthread_mutex_t lock;
	uint64_t base;     /* guest-physical address of the register page */
	unsigned int irq;  /* ISA IRQ, the same I/O APIC pin */
	int irq_fd;        /* irqfd on irq: every queue's call_fd */
	uint64_t shm_gpa;  /* where the shared memory region is; 0: none */
	bool plugged;      /* on the MMIO bus and wired into KVM */
	bool warned;       /* a bad access was logged: later ones are not */

	/* InterruptStatus: virtio_queue_interrupt() sets bit 0 before it
	 * writes the irqfd, so the driver's handler always finds the cause;
	 * InterruptACK clears it. */
	atomic_uint int_status;
	uint32_t shm_select;
};

/* Sets up the transport's registers for dev at base with the given IRQ,
 * and dev's shared memory region (if any) at shm_gpa. Makes no KVM call,
 * so unit tests can drive the registers through virtio_mmio_access(). */
int virtio_mmio_init(struct virtio_mmio *m, struct vm *vm,
		     const struct virtio_dev *dev, uint64_t base,
		     unsigned int irq, uint64_t shm_gpa);

/* Puts the register page on the VM's MMIO bus, connects the interrupt and
 * maps the shared memory region. */
int virtio_mmio_plug(struct virtio_mmio *m);

/* The register page's bus handler (offset within the page). */
void virtio_mmio_access(void *opaque, uint64_t off, bool is_write,
			uint8_t *data, unsigned int size);

/* For a snapshot (docs/snapshot.md): the registers and the life cycle's
 * state; the device must be quiescent. */
void virtio_mmio_save(struct virtio_mmio *m, struct state_out *out);
/* Into a transport as initialised (plugged or not): 0, or -EBADMSG with a
 * line in err (the device reset). */
int virtio_mmio_restore(struct virtio_mmio *m, struct state_in *in, char *err,
			size_t errlen);

#endif
