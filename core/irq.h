/* Interrupts, in one place: legacy ISA lines, and for devices that live
 * outside the vCPU threads MSI routes in KVM's GSI table and irqfds that
 * raise them. */
#ifndef FSVM_IRQ_H
#define FSVM_IRQ_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"

/* Sets the level of a legacy (ISA) interrupt line. */
void irq_set_line(struct vm *vm, unsigned int irq, bool level);

/* Starts the VM's GSI table with the interrupt controller's routes. */
int irq_routing_init(struct vm *vm);
/* Frees the table of a VM that goes away before its process does (tests). */
void irq_routing_destroy(struct vm *vm);
/* Reserves a GSI for an MSI vector (above the interrupt controller's). */
int irq_alloc_msi_gsi(struct vm *vm);
/* Points gsi at the MSI message (address, data) and commits the table. */
int irq_set_msi_route(struct vm *vm, int gsi, uint64_t addr, uint32_t data);
/* Connects (or disconnects) an eventfd to raise gsi when written. */
int irq_irqfd(struct vm *vm, int fd, int gsi, bool assign);

#endif
