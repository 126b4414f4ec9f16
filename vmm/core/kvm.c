/* /dev/kvm, VM creation, interrupt controllers and memory slots. */
#include "vmm/core/kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vmm/core/log.h"

#define KVM_TSS_ADDR 0xfffbd000
#define KVM_IDENTITY_MAP_ADDR 0xfffbc000
#define KVM_MAX_CPUID_ENTRIES 256

static const struct {
	int cap;
	const char *name;
} required_caps[] = {
	{KVM_CAP_IRQCHIP, "in-kernel irqchip"},
	{KVM_CAP_USER_MEMORY, "user memory"},
	{KVM_CAP_EXT_CPUID, "KVM_GET_SUPPORTED_CPUID"},
	{KVM_CAP_IMMEDIATE_EXIT, "immediate exit"},
	{KVM_CAP_IOEVENTFD, "ioeventfd"},
	{KVM_CAP_IRQFD, "irqfd"},
	{KVM_CAP_PIT2, "in-kernel PIT"},
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
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, required_caps[i].cap) <=
		    0) {
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

static bool cpuinfo_has_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	size_t flen = strlen(flag);
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		for (char *p = strstr(line, flag); p; p = strstr(p + 1, flag))
			if (p[-1] == ' ' && (p[flen] == ' ' || p[flen] == '\n'))
				found = true;
		break;
	}
	fclose(f);
	return found;
}

bool kvm_runs_stock_kernels(const char **why)
{
	if (access("/sys/module/kvm_pvm", F_OK) == 0) {
		*why = "this host's KVM is PVM, which cannot run a stock Linux kernel; "
		       "run fsvm inside the lab (tools/lab -- ./fsvm run ...) or on a host with VMX/SVM";
		return false;
	}
	if (!cpuinfo_has_flag("vmx") && !cpuinfo_has_flag("svm")) {
		*why = "this CPU shows no VMX/SVM: KVM cannot run a stock Linux kernel here";
		return false;
	}
	return true;
}

static int kvm_get_supported_cpuid(struct vm *vm)
{
	struct kvm_cpuid2 *cpuid =
		calloc(1, sizeof(*cpuid) + KVM_MAX_CPUID_ENTRIES *
						   sizeof(struct kvm_cpuid_entry2));
	if (!cpuid)
		return -ENOMEM;
	cpuid->nent = KVM_MAX_CPUID_ENTRIES;
	if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) < 0) {
		int err = -errno;
		free(cpuid);
		return err;
	}
	vm->cpuid = cpuid;
	return 0;
}

int kvm_create_vm(struct vm *vm, const char **why)
{
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		*why = "KVM_CREATE_VM failed";
		return -errno;
	}
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR) < 0) {
		*why = "KVM_SET_TSS_ADDR failed";
		return -errno;
	}
	uint64_t identity = KVM_IDENTITY_MAP_ADDR;
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &identity) < 0) {
		*why = "KVM_SET_IDENTITY_MAP_ADDR failed";
		return -errno;
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		*why = "KVM_CREATE_IRQCHIP failed";
		return -errno;
	}
	struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		*why = "KVM_CREATE_PIT2 failed";
		return -errno;
	}
	for (unsigned int i = 0; i < vm->mem.nr_regions; i++) {
		const struct guest_region *r = &vm->mem.regions[i];
		int err = kvm_set_memslot(vm, kvm_alloc_memslot(vm), r->gpa,
					  r->size, r->hva);
		if (err) {
			*why = "KVM_SET_USER_MEMORY_REGION failed";
			return err;
		}
	}
	int err = kvm_get_supported_cpuid(vm);
	if (err)
		*why = "KVM_GET_SUPPORTED_CPUID failed";
	return err;
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

void kvm_irq_line(struct vm *vm, unsigned int irq, bool level)
{
	struct kvm_irq_level line = {.irq = irq, .level = level};
	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &line) < 0)
		log_error("KVM_IRQ_LINE %u: %s", irq, strerror(errno));
}
