/* Spots the kernel's panic and power-off messages on the console: a guest
 * that panicked is reported as such, not as a plain reboot, and one that
 * powers off (no ACPI: its CPUs would just halt) ends the VM, with 0 before
 * the command started, after it with 125 once its vCPUs have stopped (the
 * command can print the same line). vm_console_powered_off() decides. */
#ifndef FSVM_PANIC_WATCH_H
#define FSVM_PANIC_WATCH_H

#include <stdint.h>

/* serial on_tx callback; opaque is the struct vm. */
void panic_watch_byte(void *opaque, uint8_t byte);

#endif
