/* VM lifecycle: how it stopped, with which status, and why. */
#include "core/vm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/log.h"

#define HALT_CHECK_NS (100 * 1000 * 1000)

int vm_init(struct vm *vm)
{
	*vm = (struct vm){.kvm_fd = -1, .vm_fd = -1, .halt_check_fd = -1};
	clock_gettime(CLOCK_MONOTONIC, &vm->launched);
	timeline_init(&vm->timeline, &vm->launched);
	pthread_mutex_init(&vm->stop_lock, NULL);
	vm->stop_eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return vm->stop_eventfd < 0 ? -errno : 0;
}

bool vm_stop(struct vm *vm, int status, enum exit_reason reason,
	     const char *reason_fmt, ...)
{
	pthread_mutex_lock(&vm->stop_lock);
	bool first = !atomic_load(&vm->stopping);
	if (first) {
		vm->exit_status = status;
		vm->end_reason = reason;
		vm->stop_reason[0] = '\0';
		if (reason_fmt) {
			va_list ap;
			va_start(ap, reason_fmt);
			vsnprintf(vm->stop_reason, sizeof(vm->stop_reason),
				  reason_fmt, ap);
			va_end(ap);
		}
		atomic_store(&vm->stopping, true);
		uint64_t one = 1;
		if (write(vm->stop_eventfd, &one, sizeof(one)) < 0)
			perror("fsvm: eventfd");
	}
	pthread_mutex_unlock(&vm->stop_lock);
	return first;
}

void vm_stop_unexpected(struct vm *vm, enum exit_reason reason,
			const char *what)
{
	if (vm->panic_seen)
		vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_GUEST_PANIC,
			"guest kernel panicked: %s", vm->panic_line);
	else
		vm_stop(vm, EXIT_VMM_ERROR, reason,
			"guest %s before its command reported a status", what);
}

void vm_guest_exited(struct vm *vm, uint8_t status)
{
	if (atomic_load(&vm->kernel_oopsed))
		vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_GUEST_PANIC,
			"guest kernel oopsed (its command's status was %u)",
			status);
	else
		vm_stop(vm, status, EXIT_REASON_NONE, NULL);
}

void vm_console_powered_off(struct vm *vm)
{
	if (!atomic_load(&vm->command_started)) {
		/* Only the kernel and the user's own init have spoken. A
		 * panicked kernel is rebooting: that ends the VM, with 125. */
		if (!vm->panic_seen)
			vm_stop(vm, 0, EXIT_REASON_GUEST_POWEROFF,
				"guest powered off");
		return;
	}
	/* The kernel prints the line before it stops the CPUs, so the checks
	 * go on until they have stopped; for ever if the command wrote it. */
	const struct itimerspec every = {
		.it_value = {.tv_nsec = HALT_CHECK_NS},
		.it_interval = {.tv_nsec = HALT_CHECK_NS},
	};
	if (timerfd_settime(vm->halt_check_fd, 0, &every, NULL) < 0)
		log_error("cannot watch for the guest halting: %s",
			  strerror(errno));
}

double vm_elapsed_ms(const struct vm *vm)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - vm->launched.tv_sec) * 1e3 +
	       (double)(now.tv_nsec - vm->launched.tv_nsec) / 1e6;
}
