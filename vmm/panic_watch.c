/* Console scanner for the kernel's last words: "Kernel panic - not
 * syncing: <reason>", "reboot: Power down" and "reboot: System halted"
 * (6.x: "reboot: Power off not available: System halted instead"). */
#include "vmm/panic_watch.h"

#include <string.h>


static const char panic_needle[] = "Kernel panic - not syncing: ";
/* Printed just before the CPUs stop for good. Without ACPI the kernel has
 * no way to power off and halts instead, so poweroff shows as the second. */
static const char poweroff_needle[] = "reboot: Power down";
static const char halt_needle[] = "reboot: System halted";
/* Linux 6.2 and later say so when a poweroff falls back to a halt. */
static const char fallback_needle[] = "reboot: Power off not available";

/* Advances a match of needle (which has no repeated prefix, so a mismatch
 * restarts); true when the whole needle has been seen, and the next byte
 * starts a new match (a NUL would otherwise step past the needle's end). */
static bool needle_step(const char *needle, unsigned int *match, uint8_t byte)
{
	if (needle[*match] == '\0')
		*match = 0;
	if (byte == (uint8_t)needle[*match])
		(*match)++;
	else
		*match = byte == (uint8_t)needle[0];
	return needle[*match] == '\0';
}

void panic_watch_byte(void *opaque, uint8_t byte)
{
	struct panic_watch *w = opaque;
	struct vm *vm = w->vm;
	const unsigned int needle_len = sizeof(panic_needle) - 1;

	if (w->poweroff_seen && byte == '\n') {
		/* The end of the kernel's line, so ours starts on its own. */
		w->poweroff_seen = false;
		vm_console_powered_off(vm);
		return;
	}
	/* Even after a panic line: after the mark that can be the command's
	 * text, which must not hide a real power-off. */
	if (needle_step(poweroff_needle, &w->poweroff_match, byte) |
	    needle_step(halt_needle, &w->halt_match, byte) |
	    needle_step(fallback_needle, &w->fallback_match, byte)) {
		w->poweroff_seen = true;
		return;
	}
	if (vm->panic_seen)
		return;
	if (w->panic_match < needle_len) {
		needle_step(panic_needle, &w->panic_match, byte);
		return;
	}
	size_t len = strlen(vm->panic_line);
	if (byte == '\n' || byte == '\r' || len + 1 == sizeof(vm->panic_line)) {
		vm->panic_seen = true;
		return;
	}
	vm->panic_line[len] = (char)byte;
	vm->panic_line[len + 1] = '\0';
}
