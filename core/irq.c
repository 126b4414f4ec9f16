/* Legacy IRQ lines, the KVM GSI routing table (the interrupt controller's
 * routes, then MSI routes) and irqfd. */
#include "core/irq.h"

#include <errno.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/arch.h"
#include "core/log.h"

#define MAX_GSI 1024

struct irq_routing {
	pthread_mutex_t lock;
	struct kvm_irq_routing *table;
	unsigned int first_msi_gsi;
	unsigned int nr_msi;
};

/* KVM_SET_GSI_ROUTING replaces KVM's default table, so ours starts with
 * the interrupt controller's own routes (core/arch.h); MSIs go above. */
int irq_routing_init(struct vm *vm)
{
	struct irq_routing *routing = calloc(1, sizeof(*routing));
	if (!routing)
		return -ENOMEM;
	pthread_mutex_init(&routing->lock, NULL);
	routing->table = calloc(1, sizeof(*routing->table) +
					   MAX_GSI * 2 * sizeof(routing->table->entries[0]));
	if (!routing->table) {
		free(routing);
		return -ENOMEM;
	}
	vm->irq_routing = routing;
	routing->first_msi_gsi = arch_irq_routes(routing->table);
	return 0;
}

void irq_routing_destroy(struct vm *vm)
{
	struct irq_routing *routing = vm->irq_routing;
	if (!routing)
		return;
	pthread_mutex_destroy(&routing->lock);
	free(routing->table);
	free(routing);
	vm->irq_routing = NULL;
}

int irq_alloc_msi_gsi(struct vm *vm)
{
	struct irq_routing *routing = vm->irq_routing;
	pthread_mutex_lock(&routing->lock);
	int gsi = -ENOSPC;
	if (routing->first_msi_gsi + routing->nr_msi < MAX_GSI) {
		gsi = (int)(routing->first_msi_gsi + routing->nr_msi++);
		struct kvm_irq_routing_entry *e =
			&routing->table->entries[routing->table->nr++];
		memset(e, 0, sizeof(*e));
		e->gsi = (uint32_t)gsi;
		e->type = KVM_IRQ_ROUTING_MSI;
	}
	pthread_mutex_unlock(&routing->lock);
	return gsi;
}

int irq_set_msi_route(struct vm *vm, int gsi, uint64_t addr, uint32_t data)
{
	struct irq_routing *routing = vm->irq_routing;
	int err = -ENOENT;
	pthread_mutex_lock(&routing->lock);
	for (uint32_t i = 0; i < routing->table->nr; i++) {
		struct kvm_irq_routing_entry *e = &routing->table->entries[i];
		if (e->gsi != (uint32_t)gsi || e->type != KVM_IRQ_ROUTING_MSI)
			continue;
		e->u.msi.address_lo = (uint32_t)addr;
		e->u.msi.address_hi = (uint32_t)(addr >> 32);
		e->u.msi.data = data;
		err = ioctl(vm->vm_fd, KVM_SET_GSI_ROUTING, routing->table) < 0
			      ? -errno
			      : 0;
		break;
	}
	pthread_mutex_unlock(&routing->lock);
	return err;
}

int irq_irqfd(struct vm *vm, int fd, int gsi, bool assign)
{
	struct kvm_irqfd irqfd = {.fd = (uint32_t)fd, .gsi = (uint32_t)gsi,
				  .flags = assign ? 0 : KVM_IRQFD_FLAG_DEASSIGN};
	return ioctl(vm->vm_fd, KVM_IRQFD, &irqfd) < 0 ? -errno : 0;
}

void irq_set_line(struct vm *vm, unsigned int irq, bool level)
{
	struct kvm_irq_level line = {.irq = irq, .level = level};
	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &line) < 0)
		log_error("KVM_IRQ_LINE %u: %s", irq, strerror(errno));
}
