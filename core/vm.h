/* The virtual machine: KVM handles, guest memory, I/O buses, vCPUs, and the
 * one place that decides how and why the VM stopped. */
#ifndef FSVM_VM_H
#define FSVM_VM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/exit_reason.h"
#include "core/guest_mem.h"
#include "core/io_bus.h"
#include "core/timeline.h"

/* Exit statuses of `fsvm run` beyond the guest command's own. */
#define EXIT_TIMEOUT 124
#define EXIT_VMM_ERROR 125

struct arch_vm;
struct vcpu;
struct irq_routing;
struct gdb_server;

struct vm {
	int kvm_fd;
	int vm_fd;
	int vcpu_mmap_size;
	struct arch_vm *arch; /* the architecture's own state (core/arch.h) */
	struct guest_mem mem;
	struct io_bus pio;
	struct io_bus mmio;
	unsigned int nr_vcpus;
	struct vcpu *vcpus;
	struct irq_routing *irq_routing; /* GSI table, see vmm/irq.c */
	struct gdb_server *gdb; /* --gdb's stub, or NULL (core/gdb_server.h) */
	atomic_uint next_memslot;
	/* KVM could not back a guest page: fix what can be fixed (DAX pages
	 * past a truncated file's end); returns how many fixes were made. */
	unsigned int (*repair_memory)(void *opaque);
	void *repair_opaque;

	atomic_bool stopping;
	pthread_mutex_t stop_lock;
	int exit_status;
	enum exit_reason end_reason; /* NONE: the guest reported its status */
	char stop_reason[256]; /* empty: the guest reported its status */
	int stop_eventfd;      /* readable once the VM has stopped */

	struct timespec launched; /* process start, for boot timings */
	struct timeline timeline; /* its steps, from launched (-v) */
	/* The kernel's panic line, as the console showed it (panic_watch). */
	char panic_line[160];
	bool panic_seen;
	/* The exit device's mark: the guest init is starting the command, so
	 * from now on only the exit device gives the VM a status. */
	atomic_bool command_started;
	/* The init said the kernel oopsed: the VM ends with 125, not with
	 * the command's status. */
	atomic_bool kernel_oopsed;
	/* --snapshot-to: the init's GUEST_MARK_SNAPSHOT stops the VM to be
	 * saved (snapshot_reached), where any other run ignores it. */
	bool snapshot_point;
	atomic_bool snapshot_reached;
	/* The main loop's timerfd, armed when the console says the guest
	 * powered off after the mark: each tick looks at the vCPUs. */
	int halt_check_fd;
};

/* Starts a VM with nothing in it (no KVM yet), its clock running from
 * now. Returns 0 or a negative errno. */
int vm_init(struct vm *vm);

/* Records why the VM stops (the first caller wins: true for it) and wakes
 * the main loop: its status, the reason's code and line (printed unless
 * NULL). */
bool vm_stop(struct vm *vm, int status, enum exit_reason reason,
	     const char *reason_fmt, ...) __attribute__((format(printf, 4, 5)));

/* The guest reset (reason GUEST_RESET) or shut down (GUEST_POWEROFF)
 * without reporting a status: a panic if the console showed one. */
void vm_stop_unexpected(struct vm *vm, enum exit_reason reason,
			const char *what);

/* The guest init reported its command's status: the VM ends with it, or
 * with 125 if the init said the kernel had oopsed. */
void vm_guest_exited(struct vm *vm, uint8_t status);

/* The console showed the kernel's power-off (or halt) line. Before the
 * mark it ends the VM with 0 (unless the kernel panicked); after it the
 * line may be the command's own text, so it only starts the vCPU checks
 * (vcpus_check_halted). */
void vm_console_powered_off(struct vm *vm);

/* Milliseconds since launch, for -v timings. */
double vm_elapsed_ms(const struct vm *vm);

#endif
