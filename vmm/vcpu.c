/* vCPU creation, CPUID and entry state, and the run loop. */
#include "vmm/vcpu.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/log.h"

#define SIG_VCPU_KICK SIGUSR1
#define RFLAGS_IF (1u << 9)
#define CPUID_HYPERVISOR_BIT (1u << 31)
#define APIC_LVT_LINT0 0x350
#define APIC_LVT_LINT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7
#define FPU_DEFAULT_FCW 0x37f
#define SSE_DEFAULT_MXCSR 0x1f80

static unsigned int order_base_2(unsigned int n)
{
	unsigned int shift = 0;
	while ((1u << shift) < n)
		shift++;
	return shift;
}

/* CPUID as KVM supports it, with this vCPU's APIC id and the topology of
 * nr_vcpus single-threaded cores in one package. */
static int vcpu_set_cpuid(struct vcpu *vcpu)
{
	const struct kvm_cpuid2 *supported = vcpu->vm->cpuid;
	size_t bytes = sizeof(*supported) +
		       supported->nent * sizeof(supported->entries[0]);
	struct kvm_cpuid2 *cpuid = malloc(bytes);
	if (!cpuid)
		return -ENOMEM;
	memcpy(cpuid, supported, bytes);

	unsigned int n = vcpu->vm->nr_vcpus;
	for (unsigned int i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0x0000ffff) | (vcpu->id << 24) |
				 ((n & 0xff) << 16);
			e->ecx |= CPUID_HYPERVISOR_BIT;
			break;
		case 0xb:
		case 0x1f:
			e->edx = vcpu->id;
			if (e->index == 0) {
				e->eax = 0;
				e->ebx = 1;
				e->ecx = (1u << 8) | 0;
			} else if (e->index == 1) {
				e->eax = order_base_2(n);
				e->ebx = n;
				e->ecx = (2u << 8) | 1;
			} else {
				e->eax = e->ebx = 0;
				e->ecx = e->index;
			}
			break;
		default:
			break;
		}
	}
	int err = ioctl(vcpu->fd, KVM_SET_CPUID2, cpuid) < 0 ? -errno : 0;
	free(cpuid);
	return err;
}

/* LINT0 takes the legacy PIC (ExtINT), LINT1 NMIs, as firmware leaves it. */
static int vcpu_set_lint(struct vcpu *vcpu)
{
	struct kvm_lapic_state lapic;
	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) < 0)
		return -errno;
	uint32_t *lint0 = (uint32_t *)&lapic.regs[APIC_LVT_LINT0];
	uint32_t *lint1 = (uint32_t *)&lapic.regs[APIC_LVT_LINT1];
	*lint0 = (*lint0 & ~0x700u) | (APIC_MODE_EXTINT << 8);
	*lint1 = (*lint1 & ~0x700u) | (APIC_MODE_NMI << 8);
	return ioctl(vcpu->fd, KVM_SET_LAPIC, &lapic) < 0 ? -errno : 0;
}

static int vcpu_set_boot_state(struct vcpu *vcpu, const struct kernel_info *ki)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu = {.fcw = FPU_DEFAULT_FCW,
			      .mxcsr = SSE_DEFAULT_MXCSR};

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	boot_sregs(&sregs);
	boot_regs(&regs, ki);
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0)
		return -errno;
	return 0;
}

static void vcpu_kick_handler(int sig)
{
	(void)sig;
}

/* The kick signal only has to interrupt KVM_RUN: its handler does nothing. */
static void install_kick_handler(void)
{
	struct sigaction sa = {.sa_handler = vcpu_kick_handler};
	sigemptyset(&sa.sa_mask);
	sigaction(SIG_VCPU_KICK, &sa, NULL);
}

int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned int id,
		const struct kernel_info *ki, const char **why)
{
	/* Set up with the vCPUs, not when they start: by then the seccomp
	 * filter allows no sigaction. */
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_kick_handler);
	*vcpu = (struct vcpu){.vm = vm, .id = id, .fd = -1};
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, id);
	if (vcpu->fd < 0) {
		*why = "KVM_CREATE_VCPU failed";
		return -errno;
	}
	vcpu->run = mmap(NULL, (size_t)vm->vcpu_mmap_size,
			 PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		vcpu->run = NULL;
		*why = "cannot map the vCPU run area";
		return -errno;
	}
	int err = vcpu_set_cpuid(vcpu);
	if (err) {
		*why = "KVM_SET_CPUID2 failed";
		return err;
	}
	err = vcpu_set_lint(vcpu);
	if (err) {
		*why = "cannot program the local APIC";
		return err;
	}
	/* Application processors wait for INIT/SIPI from the boot CPU. */
	if (id == 0) {
		err = vcpu_set_boot_state(vcpu, ki);
		if (err)
			*why = "cannot set the boot CPU's registers";
	}
	return err;
}

static void vcpu_handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;

	for (uint32_t i = 0; i < run->io.count; i++) {
		if (!io_bus_dispatch(&vcpu->vm->pio, run->io.port, is_write,
				     data, run->io.size) &&
		    !is_write)
			memset(data, 0xff, run->io.size);
		data += run->io.size;
	}
}

static void vcpu_handle_mmio(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	if (!io_bus_dispatch(&vcpu->vm->mmio, run->mmio.phys_addr,
			     run->mmio.is_write, run->mmio.data, run->mmio.len) &&
	    !run->mmio.is_write)
		memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
}

/* Handles one exit; returns false when this vCPU must stop. */
static bool vcpu_handle_exit(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;
	struct kvm_run *run = vcpu->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu_handle_io(vcpu);
		return true;
	case KVM_EXIT_MMIO:
		vcpu_handle_mmio(vcpu);
		return true;
	case KVM_EXIT_SHUTDOWN:
		vm_stop_unexpected(vm, "triple-faulted (CPU reset)");
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		switch (run->system_event.type) {
		case KVM_SYSTEM_EVENT_SHUTDOWN:
			vm_stop_unexpected(vm, "powered off");
			break;
		case KVM_SYSTEM_EVENT_RESET:
			vm_stop_unexpected(vm, "rebooted");
			break;
		default:
			vm_stop_unexpected(vm, "crashed");
			break;
		}
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		vm_stop(vm, EXIT_VMM_ERROR,
			"vCPU %u: KVM could not enter the guest (reason 0x%llx)",
			vcpu->id,
			(unsigned long long)run->fail_entry
				.hardware_entry_failure_reason);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		vm_stop(vm, EXIT_VMM_ERROR,
			"vCPU %u: KVM internal error (suberror %u)", vcpu->id,
			run->internal.suberror);
		return false;
	default:
		vm_stop(vm, EXIT_VMM_ERROR, "vCPU %u: unexpected KVM exit %u",
			vcpu->id, run->exit_reason);
		return false;
	}
}

/* Not running, with interrupts off: only an NMI or INIT could wake it. So
 * the kernel leaves every CPU once it has halted the machine (power-off
 * without ACPI halts too); an idle CPU halts with interrupts on. */
static bool vcpu_is_stopped_for_good(struct vcpu *vcpu)
{
	struct kvm_mp_state mp;
	struct kvm_regs regs;
	return ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp) == 0 &&
	       mp.mp_state != KVM_MP_STATE_RUNNABLE &&
	       ioctl(vcpu->fd, KVM_GET_REGS, &regs) == 0 &&
	       !(regs.rflags & RFLAGS_IF);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;

	sigset_t kick;
	sigemptyset(&kick);
	sigaddset(&kick, SIG_VCPU_KICK);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);

	while (!atomic_load(&vm->stopping)) {
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR) {
				/* Kicked: maybe by vcpus_check_halted(). */
				atomic_store(&vcpu->stopped_for_good,
					     vcpu_is_stopped_for_good(vcpu));
				continue;
			}
			if (errno == EAGAIN)
				continue;
			/* KVM could not back a guest page: the only guest
			 * memory that can vanish is a DAX page whose host
			 * file shrank under it. Repaired, the vCPU goes on. */
			if (errno == EFAULT && vm->repair_memory &&
			    vm->repair_memory(vm->repair_opaque))
				continue;
			if (errno == EFAULT)
				vm_stop(vm, EXIT_VMM_ERROR,
					"vCPU %u: the guest touched memory the host cannot back",
					vcpu->id);
			else
				vm_stop(vm, EXIT_VMM_ERROR,
					"vCPU %u: KVM_RUN: %s", vcpu->id,
					strerror(errno));
			break;
		}
		if (!vcpu_handle_exit(vcpu))
			break;
	}
	return NULL;
}

int vcpu_start(struct vcpu *vcpu)
{
	int err = pthread_create(&vcpu->thread, NULL, vcpu_thread, vcpu);
	vcpu->started = err == 0;
	return -err;
}

void vcpus_check_halted(struct vm *vm)
{
	bool all_stopped = true;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];
		all_stopped &= atomic_load(&vcpu->stopped_for_good);
		if (vcpu->started)
			pthread_kill(vcpu->thread, SIG_VCPU_KICK);
	}
	if (all_stopped)
		vm_stop_unexpected(vm, "powered off");
}

void vcpu_kick_and_join(struct vcpu *vcpu)
{
	if (!vcpu->started)
		return;
	/* immediate_exit covers a kick that lands before KVM_RUN starts. */
	vcpu->run->immediate_exit = 1;
	pthread_kill(vcpu->thread, SIG_VCPU_KICK);
	pthread_join(vcpu->thread, NULL);
	vcpu->started = false;
}

void vcpu_destroy(struct vcpu *vcpu)
{
	if (vcpu->run)
		munmap(vcpu->run, (size_t)vcpu->vm->vcpu_mmap_size);
	if (vcpu->fd >= 0)
		close(vcpu->fd);
	vcpu->run = NULL;
	vcpu->fd = -1;
}
