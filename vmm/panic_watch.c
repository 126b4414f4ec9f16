/* Console scanner for "Kernel panic - not syncing: <reason>". */
#include "vmm/panic_watch.h"

#include <string.h>

#include "vmm/vm.h"

static const char panic_needle[] = "Kernel panic - not syncing: ";

void panic_watch_byte(void *opaque, uint8_t byte)
{
	struct vm *vm = opaque;
	const unsigned int needle_len = sizeof(panic_needle) - 1;

	if (vm->panic_seen)
		return;
	if (vm->panic_match < needle_len) {
		/* The needle has no repeated prefix, so a mismatch restarts. */
		if (byte == (uint8_t)panic_needle[vm->panic_match])
			vm->panic_match++;
		else
			vm->panic_match = byte == (uint8_t)panic_needle[0];
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
