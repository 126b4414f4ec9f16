/* Virtual CPUs: creation (the architecture sets each one up) and the
 * thread that runs each one and dispatches its exits. */
#ifndef FSVM_VCPU_H
#define FSVM_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "core/vm.h"

/* Interrupts a vCPU's KVM_RUN (its handler does nothing). */
#define SIG_VCPU_KICK SIGUSR1

struct vcpu {
	struct vm *vm;
	unsigned int id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	/* What the vCPU found when last kicked: it had stopped for good. */
	atomic_bool stopped_for_good;
};

/* Creates vCPU id, set up by arch_vcpu_init(); the board gives the boot
 * CPU its entry state. */
int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned int id,
		const char **why);

int vcpu_start(struct vcpu *vcpu);

/* Completes the exit a stopped vCPU last left KVM_RUN with (a port or
 * MMIO read's data into its registers, a string I/O's next step) without
 * running the guest further: KVM_RUN with immediate_exit, which finishes
 * the pending operation and returns EINTR (the KVM API doc, "kvm_run").
 * Until then the vCPU's state is not the guest's: a snapshot calls this,
 * after the exit was handled, before arch_vcpu_save_state(). */
int vcpu_settle(struct vcpu *vcpu);

/* The console said the guest halted, after the mark (called by the main
 * loop on each tick of vm->halt_check_fd): ends the VM with 125 when every
 * vCPU had stopped for good at the last kick, and kicks them all to look
 * again. */
void vcpus_check_halted(struct vm *vm);

/* Forces a vCPU out of KVM_RUN (after vm_stop) and waits for its thread. */
void vcpu_kick_and_join(struct vcpu *vcpu);

/* After the vCPUs are joined, says on stderr where each was and what it
 * waited for: what a guest that timed out was stuck on. */
void vcpus_report(struct vm *vm);

#endif
