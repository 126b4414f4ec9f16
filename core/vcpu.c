/* vCPU creation and the run loop: each vCPU a thread that dispatches its
 * exits to the I/O buses (the architecture's own exits to core/arch.h). */
#include "core/vcpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/arch.h"
#include "core/gdb_server.h"
#include "core/log.h"

static void vcpu_kick_handler(int sig)
{
	(void)sig;
}

/* The kick signal only has to interrupt KVM_RUN (which never restarts):
 * its handler does nothing, and the system calls of the requests a vCPU
 * runs for a device restart after it. */
static void install_kick_handler(void)
{
	struct sigaction sa = {.sa_handler = vcpu_kick_handler,
			       .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIG_VCPU_KICK, &sa, NULL);
}

int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned int id,
		const char **why)
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
	return arch_vcpu_init(vcpu, why);
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
	case KVM_EXIT_MMIO:
		vcpu_handle_mmio(vcpu);
		return true;
	case KVM_EXIT_DEBUG: /* a breakpoint, watchpoint or step (--gdb) */
		return gdb_vcpu_debug_exit(vcpu);
	case KVM_EXIT_SHUTDOWN:
		vm_stop_unexpected(vm, EXIT_REASON_GUEST_RESET,
				   "triple-faulted (CPU reset)");
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		switch (run->system_event.type) {
		case KVM_SYSTEM_EVENT_SHUTDOWN:
			vm_stop_unexpected(vm, EXIT_REASON_GUEST_POWEROFF, "powered off");
			break;
		case KVM_SYSTEM_EVENT_RESET:
			vm_stop_unexpected(vm, EXIT_REASON_GUEST_RESET, "rebooted");
			break;
		default:
			vm_stop_unexpected(vm, EXIT_REASON_GUEST_PANIC, "crashed");
			break;
		}
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VCPU_FAILED,
			"vCPU %u: KVM could not enter the guest (reason 0x%llx)",
			vcpu->id,
			(unsigned long long)run->fail_entry
				.hardware_entry_failure_reason);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VCPU_FAILED,
			"vCPU %u: KVM internal error (suberror %u)", vcpu->id,
			run->internal.suberror);
		return false;
	default:
		return arch_vcpu_handle_exit(vcpu);
	}
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;

	sigset_t kick;
	sigemptyset(&kick);
	sigaddset(&kick, SIG_VCPU_KICK);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);

	if (vcpu->id == 0)
		timeline_mark(&vm->timeline, TL_FIRST_RUN);
	while (!atomic_load(&vm->stopping)) {
		/* With --gdb, stopped here while gdb has the world stopped. */
		if (vm->gdb && !gdb_vcpu_checkpoint(vcpu))
			break;
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR) {
				/* Kicked: maybe by vcpus_check_halted(). */
				atomic_store(&vcpu->stopped_for_good,
					     arch_vcpu_stopped_for_good(vcpu));
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
				vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VCPU_FAILED,
					"vCPU %u: the guest touched memory the host cannot back",
					vcpu->id);
			else
				vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VCPU_FAILED,
					"vCPU %u: KVM_RUN: %s", vcpu->id,
					strerror(errno));
			break;
		}
		if (!vcpu_handle_exit(vcpu))
			break;
	}
	if (vm->gdb)
		gdb_vcpu_gone(vcpu);
	return NULL;
}

int vcpu_start(struct vcpu *vcpu)
{
	int err = pthread_create(&vcpu->thread, NULL, vcpu_thread, vcpu);
	vcpu->started = err == 0;
	return -err;
}

int vcpu_settle(struct vcpu *vcpu)
{
	vcpu->run->immediate_exit = 1;
	int err = ioctl(vcpu->fd, KVM_RUN, 0) < 0 ? -errno : -EIO;
	vcpu->run->immediate_exit = 0;
	return err == -EINTR ? 0 : err;
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
		vm_stop_unexpected(vm, EXIT_REASON_GUEST_POWEROFF, "powered off");
}

void vcpu_kick_and_join(struct vcpu *vcpu)
{
	if (!vcpu->started)
		return;
	/* immediate_exit covers a kick that lands before KVM_RUN starts. */
	vcpu->run->immediate_exit = 1;
	if (vcpu->vm->gdb)
		gdb_server_release(vcpu->vm);
	pthread_kill(vcpu->thread, SIG_VCPU_KICK);
	pthread_join(vcpu->thread, NULL);
	vcpu->started = false;
}

void vcpus_report(struct vm *vm)
{
	char line[1024];
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		arch_vcpu_report(&vm->vcpus[i], line, sizeof(line));
		fprintf(stderr, "fsvm: vCPU %u: %s\n", i, line);
	}
	arch_vm_report(vm, line, sizeof(line));
	fprintf(stderr, "fsvm: %s\n", line);
}
