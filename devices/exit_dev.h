/* The exit device: I/O ports through which the guest init hands back its
 * command's exit status and marks the steps of its boot. */
#ifndef FSVM_EXIT_DEV_H
#define FSVM_EXIT_DEV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "guest/protocol.h"

struct exit_dev {
	void (*on_exit)(void *opaque, uint8_t status);
	/* mark: the byte the guest wrote (any value: the guest is hostile);
	 * clock_us: the last EXIT_DEV_REG_CLOCK it wrote, 0 if none. */
	void (*on_mark)(void *opaque, uint8_t mark, uint32_t clock_us);
	void *opaque;
	atomic_uint clock_us;
	/* A restored VM's job (GUEST_SPEC_SNAPSHOT), read a byte at a time
	 * from EXIT_DEV_REG_JOB: fsvm's, in the order written; NULL: none. */
	const unsigned char *job;
	uint32_t job_len;
	atomic_uint job_read; /* bytes read so far (past job_len: zeros) */
};

/* The exit device's options in the machine (machine_options). */
#define EXIT_DEV_NAME "exit device"
struct exit_dev_options {
	const unsigned char *job; /* a restored VM's job archive, or NULL */
	uint32_t job_len;
};

void exit_dev_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
		 unsigned int size);

#endif
