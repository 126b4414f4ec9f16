/* Spots the kernel's panic and power-off messages on the console: a guest
 * that panicked is reported as such, not as a plain reboot, and one that
 * powers off (no ACPI: its CPUs would just halt) ends the VM, with 0 before
 * the command started, after it with 125 once its vCPUs have stopped (the
 * command can print the same line). vm_console_powered_off() decides. */
#ifndef FSVM_PANIC_WATCH_H
#define FSVM_PANIC_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"

/* How far each line has matched so far; the panic line itself goes into
 * the VM (vm->panic_line), for the message of its end. */
struct panic_watch {
	struct vm *vm;
	unsigned int panic_match;
	unsigned int poweroff_match;
	unsigned int halt_match;
	unsigned int fallback_match;
	bool poweroff_seen; /* the rest of its line is still to come */
};

/* serial on_tx callback; opaque is the struct panic_watch. */
void panic_watch_byte(void *opaque, uint8_t byte);

#endif
