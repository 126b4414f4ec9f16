/* The exit device: one I/O port through which the guest init hands back
 * its command's exit status, and marks the moment user space started. */
#ifndef FSVM_EXIT_DEV_H
#define FSVM_EXIT_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "guest/protocol.h"

struct exit_dev {
	void (*on_exit)(void *opaque, uint8_t status);
	void (*on_mark)(void *opaque);
	void *opaque;
};

void exit_dev_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
		 unsigned int size);

#endif
