/* /dev/kvm, VM creation, interrupt controllers, memory slots, doorbells. */
#include "core/kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/arch.h"
#include "core/log.h"

static const struct {
	int cap;
	const char *name;
} required_caps[] = {
	{KVM_CAP_IRQCHIP, "in-kernel irqchip"},
	{KVM_CAP_USER_MEMORY, "user memory"},
	{KVM_CAP_IMMEDIATE_EXIT, "immediate exit"},
	{KVM_CAP_IOEVENTFD, "ioeventfd"},
	{KVM_CAP_IRQFD, "irqfd"},
};

int kvm_open(struct vm *vm, const char **why)
{
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		int err = -errno;
		if (err == -ENOENT)
			*why = "no /dev/kvm: this host has no KVM (load kvm_intel or kvm_amd)";
		else if (err == -EACCES || err == -EPERM)
			*why = "no permission to open /dev/kvm (join the kvm group or run as root)";
		else
			*why = "cannot open /dev/kvm";
		return err;
	}
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		*why = "unsupported KVM API version";
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(required_caps) / sizeof(required_caps[0]);
	     i++) {
		if (!kvm_has(vm, required_caps[i].cap)) {
			*why = required_caps[i].name;
			return -ENOTSUP;
		}
	}
	vm->vcpu_mmap_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->vcpu_mmap_size <= 0) {
		*why = "KVM_GET_VCPU_MMAP_SIZE failed";
		return -ENOTSUP;
	}
	return 0;
}

int kvm_create_vm(struct vm *vm, const char **why)
{
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		*why = "KVM_CREATE_VM failed";
		return -errno;
	}
	int err = arch_vm_init(vm, why);
	if (err)
		return err;
	for (unsigned int i = 0; i < vm->mem.nr_regions; i++) {
		const struct guest_region *r = &vm->mem.regions[i];
		err = kvm_set_memslot(vm, kvm_alloc_memslot(vm), r->gpa,
				      r->size, r->hva);
		if (err) {
			*why = "KVM_SET_USER_MEMORY_REGION failed";
			return err;
		}
	}
	return 0;
}

bool kvm_has(const struct vm *vm, int cap)
{
	return ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, cap) > 0;
}

unsigned int kvm_alloc_memslot(struct vm *vm)
{
	return atomic_fetch_add(&vm->next_memslot, 1);
}

int kvm_set_memslot(struct vm *vm, unsigned int slot, uint64_t gpa,
		    uint64_t size, void *hva)
{
	struct kvm_userspace_memory_region region = {
		.slot = slot,
		.guest_phys_addr = gpa,
		.memory_size = size,
		.userspace_addr = (uint64_t)(uintptr_t)hva,
	};
	return ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0
		       ? -errno
		       : 0;
}

int kvm_set_doorbell(struct vm *vm, bool pio, uint64_t addr,
		     unsigned int len, int64_t match, int fd, bool assign)
{
	struct kvm_ioeventfd ev = {.addr = addr, .len = len, .fd = fd,
				   .flags = (pio ? KVM_IOEVENTFD_FLAG_PIO : 0) |
					    (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN)};
	if (match >= 0) {
		ev.datamatch = (uint64_t)match;
		ev.flags |= KVM_IOEVENTFD_FLAG_DATAMATCH;
	}
	return ioctl(vm->vm_fd, KVM_IOEVENTFD, &ev) < 0 ? -errno : 0;
}
