/* Unit tests for vmm/vm: the first stop wins, its reason, the wake-up eventfd, panics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/vm.h"

static int setup_vm(void **state)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -1;
	pthread_mutex_init(&vm->stop_lock, NULL);
	vm->stop_eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*state = vm;
	return vm->stop_eventfd < 0 ? -1 : 0;
}

static int teardown_vm(void **state)
{
	struct vm *vm = *state;
	close(vm->stop_eventfd);
	pthread_mutex_destroy(&vm->stop_lock);
	free(vm);
	return 0;
}

/* The eventfd's counter, read (and so reset); 0 when never written. */
static uint64_t wakeups(struct vm *vm)
{
	uint64_t n = 0;
	if (read(vm->stop_eventfd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

static void test_stop_records_status_and_reason(void **state)
{
	struct vm *vm = *state;
	assert_false(atomic_load(&vm->stopping));
	assert_int_equal(wakeups(vm), 0);
	vm_stop(vm, 3, EXIT_REASON_GUEST_RESET, "vcpu %d: %s", 1, "triple fault");
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, 3);
	assert_int_equal(vm->end_reason, EXIT_REASON_GUEST_RESET);
	assert_string_equal(vm->stop_reason, "vcpu 1: triple fault");
	assert_int_equal(wakeups(vm), 1);
}

static void test_first_stop_wins(void **state)
{
	struct vm *vm = *state;
	vm_stop(vm, 0, EXIT_REASON_NONE, NULL);
	vm_stop(vm, EXIT_TIMEOUT, EXIT_REASON_TIMEOUT, "timed out");
	vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VMM_FAILED, "error");
	assert_int_equal(vm->exit_status, 0);
	assert_int_equal(vm->end_reason, EXIT_REASON_NONE);
	assert_string_equal(vm->stop_reason, "");
	assert_int_equal(wakeups(vm), 1); /* woken once */
}

static void test_long_reason_truncated(void **state)
{
	struct vm *vm = *state;
	char *reason = malloc(1000);
	memset(reason, 'r', 999);
	reason[999] = '\0';
	vm_stop(vm, 1, EXIT_REASON_VMM_FAILED, "%s", reason);
	assert_int_equal(strlen(vm->stop_reason), sizeof(vm->stop_reason) - 1);
	free(reason);
}

static void test_unexpected_stop_reports_panic(void **state)
{
	struct vm *vm = *state;
	vm->panic_seen = true;
	strcpy(vm->panic_line, "Attempted to kill init!");
	vm_stop_unexpected(vm, EXIT_REASON_GUEST_RESET, "rebooted");
	assert_int_equal(vm->exit_status, EXIT_VMM_ERROR);
	assert_int_equal(vm->end_reason, EXIT_REASON_GUEST_PANIC);
	assert_string_equal(vm->stop_reason,
			    "guest kernel panicked: Attempted to kill init!");
}

static void test_unexpected_stop_without_panic(void **state)
{
	struct vm *vm = *state;
	vm_stop_unexpected(vm, EXIT_REASON_GUEST_POWEROFF, "shut down");
	assert_int_equal(vm->exit_status, EXIT_VMM_ERROR);
	assert_int_equal(vm->end_reason, EXIT_REASON_GUEST_POWEROFF);
	assert_string_equal(vm->stop_reason,
			    "guest shut down before its command reported a status");
}

static void test_guest_exit_status(void **state)
{
	struct vm *vm = *state;
	vm_guest_exited(vm, 3);
	assert_int_equal(vm->exit_status, 3);
	assert_string_equal(vm->stop_reason, "");
}

/* A kernel that oopsed while the command ran: 125, whatever the command's
 * status, and the line says both. */
static void test_guest_exit_after_oops(void **state)
{
	struct vm *vm = *state;
	atomic_store(&vm->kernel_oopsed, true);
	vm_guest_exited(vm, 0);
	assert_int_equal(vm->exit_status, 125);
	assert_int_equal(vm->end_reason, EXIT_REASON_GUEST_PANIC);
	assert_string_equal(vm->stop_reason,
			    "guest kernel oopsed (its command's status was 0)");
}

static void test_elapsed_ms(void **state)
{
	struct vm *vm = *state;
	clock_gettime(CLOCK_MONOTONIC, &vm->launched);
	vm->launched.tv_sec -= 2; /* launched two seconds ago */
	double ms = vm_elapsed_ms(vm);
	assert_true(ms >= 2000.0);
	assert_true(ms < 62000.0);
}

#define VM_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup_vm, teardown_vm)

int main(void)
{
	const struct CMUnitTest vm[] = {
		VM_TEST(test_stop_records_status_and_reason),
		VM_TEST(test_first_stop_wins),
		VM_TEST(test_long_reason_truncated),
		VM_TEST(test_unexpected_stop_reports_panic),
		VM_TEST(test_unexpected_stop_without_panic),
		VM_TEST(test_guest_exit_status),
		VM_TEST(test_guest_exit_after_oops),
		VM_TEST(test_elapsed_ms),
	};
	return cmocka_run_group_tests(vm, NULL, NULL);
}
