/* Unit tests for vmm/panic_watch: spotting "Kernel panic - not syncing:" and
 * the power-off lines on the console, and what a power-off line does before
 * and after the guest init's mark. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <string.h>

#include <cmocka.h>

#include "core/vcpu.h"
#include "core/vm.h"
#include "vmm/panic_watch.h"

#define NR_VCPUS 2

static const char init_panic[] =
	"junk\nKernel panic - not syncing: Attempted to kill init! "
	"exitcode=0x00000100\n";

/* The console's watch of the VM under test (fed by feed()). */
static struct panic_watch watch;

/* A VM whose vCPUs have no threads: tests set what each last reported. */
static int setup_vm(void **state)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -1;
	*state = vm;
	watch = (struct panic_watch){.vm = vm};
	pthread_mutex_init(&vm->stop_lock, NULL);
	vm->stop_eventfd = eventfd(0, EFD_NONBLOCK);
	vm->halt_check_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	vm->nr_vcpus = NR_VCPUS;
	vm->vcpus = calloc(NR_VCPUS, sizeof(*vm->vcpus));
	return vm->stop_eventfd < 0 || vm->halt_check_fd < 0 || !vm->vcpus
		       ? -1
		       : 0;
}

static int teardown_vm(void **state)
{
	struct vm *vm = *state;
	close(vm->stop_eventfd);
	close(vm->halt_check_fd);
	pthread_mutex_destroy(&vm->stop_lock);
	free(vm->vcpus);
	free(vm);
	return 0;
}

/* Whether the main loop's checks of the vCPUs have been started. */
static bool halt_checks_armed(struct vm *vm)
{
	struct itimerspec its;
	assert_int_equal(timerfd_gettime(vm->halt_check_fd, &its), 0);
	return its.it_value.tv_sec || its.it_value.tv_nsec;
}

static void set_vcpus_stopped(struct vm *vm, bool stopped)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		atomic_store(&vm->vcpus[i].stopped_for_good, stopped);
}

static void feed(struct vm *vm, const char *text)
{
	assert_ptr_equal(watch.vm, vm);
	for (; *text; text++)
		panic_watch_byte(&watch, (uint8_t)*text);
}

static void test_init_panic_seen(void **state)
{
	struct vm *vm = *state;
	feed(vm, init_panic);
	assert_true(vm->panic_seen);
	assert_string_equal(vm->panic_line,
			    "Attempted to kill init! exitcode=0x00000100");
}

static void test_not_seen_before_end_of_line(void **state)
{
	struct vm *vm = *state;
	feed(vm, "Kernel panic - not syncing: VFS: Unable to mount root");
	assert_false(vm->panic_seen);
	feed(vm, " fs\r\n");
	assert_true(vm->panic_seen);
	assert_string_equal(vm->panic_line, "VFS: Unable to mount root fs");
}

static void test_prefixed_console_line(void **state)
{
	struct vm *vm = *state;
	feed(vm, "[    1.234567] Kernel panic - not syncing: Fatal exception\n");
	assert_true(vm->panic_seen);
	assert_string_equal(vm->panic_line, "Fatal exception");
}

static void test_near_misses_ignored(void **state)
{
	struct vm *vm = *state;
	feed(vm, "Kernel panic - not syncing\n"
		 "kernel panic - not syncing: lower case\n"
		 "Kernel Panic - not syncing: capital P\n"
		 "Kernel panic - not syncing:no space\n"
		 "Kernel panic - syncing: nope\n"
		 "Kernel panic -  not syncing: two spaces\n");
	assert_false(vm->panic_seen);
	assert_string_equal(vm->panic_line, "");
}

static void test_restarts_after_partial_match(void **state)
{
	struct vm *vm = *state;
	/* A mismatching 'K' may itself start the needle. */
	feed(vm, "KKernel panic - not syncing: one\n");
	assert_true(vm->panic_seen);
	assert_string_equal(vm->panic_line, "one");
	vm->panic_seen = false;
	watch.panic_match = 0;
	vm->panic_line[0] = '\0';
	feed(vm, "Kernel pKernel panic - not syncing: two\n");
	assert_true(vm->panic_seen);
	assert_string_equal(vm->panic_line, "two");
}

static void test_later_text_ignored(void **state)
{
	struct vm *vm = *state;
	feed(vm, init_panic);
	feed(vm, "more\nKernel panic - not syncing: second\n");
	assert_string_equal(vm->panic_line,
			    "Attempted to kill init! exitcode=0x00000100");
}

static void test_long_line_truncated(void **state)
{
	struct vm *vm = *state;
	const size_t cap = sizeof(vm->panic_line);
	feed(vm, "Kernel panic - not syncing: ");
	for (size_t i = 0; i < 3 * cap; i++)
		panic_watch_byte(&watch, 'A' + i % 26);
	assert_true(vm->panic_seen);
	assert_int_equal(strlen(vm->panic_line), cap - 1);
	for (size_t i = 0; i < cap - 1; i++)
		assert_int_equal(vm->panic_line[i], 'A' + i % 26);
	/* The watch stays past the needle: the rest is the line, cut. */
	assert_int_equal(watch.panic_match, sizeof("Kernel panic - not syncing: ") - 1);
}

#define VM_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup_vm, teardown_vm)

/* Before the mark only the kernel and the user's own init speak. */
static void test_poweroff_stops_the_vm(void **state)
{
	struct vm *vm = *state;
	feed(vm, "[   1.0] reboot: Power down");
	assert_false(atomic_load(&vm->stopping));
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, 0);
	assert_string_equal(vm->stop_reason, "guest powered off");
	uint64_t wakeups;
	assert_int_equal(read(vm->stop_eventfd, &wakeups, sizeof(wakeups)), 8);
	assert_false(halt_checks_armed(vm));
}

/* Without ACPI, poweroff becomes a halt: the same clean end. */
static void test_halt_stops_the_vm(void **state)
{
	struct vm *vm = *state;
	feed(vm, "[   2.5] reboot: System halted");
	assert_false(atomic_load(&vm->stopping));
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, 0);
}

/* Newer kernels name the fallback: the same clean end. */
static void test_halt_instead_of_poweroff_stops_the_vm(void **state)
{
	struct vm *vm = *state;
	feed(vm, "[  20.1] reboot: Power off not available: System halted instead");
	assert_false(atomic_load(&vm->stopping));
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, 0);
}

/* A panicked kernel reboots into a 125: no power-off line makes it 0. */
static void test_poweroff_after_panic_ignored(void **state)
{
	struct vm *vm = *state;
	feed(vm, init_panic);
	feed(vm, "reboot: Power down\n");
	assert_false(atomic_load(&vm->stopping));
}

/* After the mark the command can print the line (or write it to
 * /dev/kmsg): it only starts checks of the vCPUs, which are running. */
static void test_forged_poweroff_after_mark(void **state)
{
	struct vm *vm = *state;
	atomic_store(&vm->command_started, true);
	feed(vm, "reboot: Power down\n[  9.1] reboot: System halted\r\n");
	assert_false(atomic_load(&vm->stopping));
	assert_true(halt_checks_armed(vm));
	vcpus_check_halted(vm);
	vcpus_check_halted(vm);
	assert_false(atomic_load(&vm->stopping));
}

/* One vCPU still running is a guest still running. */
static void test_one_running_vcpu_keeps_the_vm(void **state)
{
	struct vm *vm = *state;
	atomic_store(&vm->command_started, true);
	feed(vm, "reboot: System halted\n");
	atomic_store(&vm->vcpus[NR_VCPUS - 1].stopped_for_good, true);
	vcpus_check_halted(vm);
	assert_false(atomic_load(&vm->stopping));
}

/* The kernel's own line, after the mark, and then its CPUs stop: 125. */
static void test_real_poweroff_after_mark(void **state)
{
	struct vm *vm = *state;
	atomic_store(&vm->command_started, true);
	feed(vm, "[  9.1] reboot: System halted\r\n");
	vcpus_check_halted(vm); /* the line comes before the CPUs stop */
	assert_false(atomic_load(&vm->stopping));
	set_vcpus_stopped(vm, true);
	vcpus_check_halted(vm);
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, EXIT_VMM_ERROR);
	assert_string_equal(vm->stop_reason,
			    "guest powered off before its command reported a status");
}

/* The command's panic line neither ends the VM nor arms the checks, and
 * does not hide a real power-off after it (still 125). */
static void test_forged_panic_after_mark(void **state)
{
	struct vm *vm = *state;
	atomic_store(&vm->command_started, true);
	feed(vm, "Kernel panic - not syncing: x\n");
	assert_false(atomic_load(&vm->stopping));
	assert_false(halt_checks_armed(vm));
	feed(vm, "reboot: System halted\n");
	assert_false(atomic_load(&vm->stopping));
	assert_true(halt_checks_armed(vm));
	set_vcpus_stopped(vm, true);
	vcpus_check_halted(vm);
	assert_int_equal(vm->exit_status, EXIT_VMM_ERROR);
}

/* A NUL right after a whole needle must not step past its end. */
static void test_nul_after_match(void **state)
{
	struct vm *vm = *state;
	feed(vm, "reboot: Power down");
	panic_watch_byte(&watch, '\0');
	panic_watch_byte(&watch, '\0');
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
}

int main(void)
{
	const struct CMUnitTest panic_watch[] = {
		VM_TEST(test_init_panic_seen),
		VM_TEST(test_poweroff_stops_the_vm),
		VM_TEST(test_halt_stops_the_vm),
		VM_TEST(test_halt_instead_of_poweroff_stops_the_vm),
		VM_TEST(test_poweroff_after_panic_ignored),
		VM_TEST(test_forged_poweroff_after_mark),
		VM_TEST(test_one_running_vcpu_keeps_the_vm),
		VM_TEST(test_real_poweroff_after_mark),
		VM_TEST(test_forged_panic_after_mark),
		VM_TEST(test_not_seen_before_end_of_line),
		VM_TEST(test_prefixed_console_line),
		VM_TEST(test_near_misses_ignored),
		VM_TEST(test_restarts_after_partial_match),
		VM_TEST(test_later_text_ignored),
		VM_TEST(test_long_line_truncated),
		VM_TEST(test_nul_after_match),
	};
	return cmocka_run_group_tests(panic_watch, NULL, NULL);
}
