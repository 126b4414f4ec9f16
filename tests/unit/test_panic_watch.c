/* Unit tests for vmm/panic_watch: spotting "Kernel panic - not syncing:" on the console. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/panic_watch.h"
#include "vmm/vm.h"

static const char init_panic[] =
	"junk\nKernel panic - not syncing: Attempted to kill init! "
	"exitcode=0x00000100\n";

static int setup_vm(void **state)
{
	*state = calloc(1, sizeof(struct vm));
	return *state ? 0 : -1;
}

static int teardown_vm(void **state)
{
	free(*state);
	return 0;
}

static void feed(struct vm *vm, const char *text)
{
	for (; *text; text++)
		panic_watch_byte(vm, (uint8_t)*text);
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
	memset(vm, 0, sizeof(*vm));
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
		panic_watch_byte(vm, 'A' + i % 26);
	assert_true(vm->panic_seen);
	assert_int_equal(strlen(vm->panic_line), cap - 1);
	for (size_t i = 0; i < cap - 1; i++)
		assert_int_equal(vm->panic_line[i], 'A' + i % 26);
	/* Nothing past the line in struct vm was touched. */
	assert_int_equal(vm->panic_match, sizeof("Kernel panic - not syncing: ") - 1);
}

#define VM_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup_vm, teardown_vm)

static void test_poweroff_stops_the_vm(void **state)
{
	struct vm *vm = *state;
	vm->stop_eventfd = eventfd(0, EFD_NONBLOCK);
	assert_true(vm->stop_eventfd >= 0);
	feed(vm, "[   1.0] reboot: Power down");
	assert_false(atomic_load(&vm->stopping));
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, 0);
	assert_string_equal(vm->stop_reason, "guest powered off");
	uint64_t wakeups;
	assert_int_equal(read(vm->stop_eventfd, &wakeups, sizeof(wakeups)), 8);
	close(vm->stop_eventfd);
}

/* Without ACPI, poweroff becomes a halt: the same clean end. */
static void test_halt_stops_the_vm(void **state)
{
	struct vm *vm = *state;
	vm->stop_eventfd = eventfd(0, EFD_NONBLOCK);
	assert_true(vm->stop_eventfd >= 0);
	feed(vm, "[   2.5] reboot: System halted");
	assert_false(atomic_load(&vm->stopping));
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
	assert_int_equal(vm->exit_status, 0);
	close(vm->stop_eventfd);
}

/* A NUL right after a whole needle must not step past its end. */
static void test_nul_after_match(void **state)
{
	struct vm *vm = *state;
	vm->stop_eventfd = eventfd(0, EFD_NONBLOCK);
	assert_true(vm->stop_eventfd >= 0);
	feed(vm, "reboot: Power down");
	panic_watch_byte(vm, '\0');
	panic_watch_byte(vm, '\0');
	feed(vm, "\n");
	assert_true(atomic_load(&vm->stopping));
	close(vm->stop_eventfd);
}

int main(void)
{
	const struct CMUnitTest panic_watch[] = {
		VM_TEST(test_init_panic_seen),
		VM_TEST(test_poweroff_stops_the_vm),
		VM_TEST(test_halt_stops_the_vm),
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
