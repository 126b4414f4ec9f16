/* Just enough of the i8042 keyboard controller for Linux to find it fast
 * and to reset the machine through it (reboot=k). */
#ifndef FSVM_I8042_H
#define FSVM_I8042_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/state_blob.h"

#define I8042_DATA_PORT 0x60
#define I8042_CMD_PORT 0x64

struct i8042 {
	pthread_mutex_t lock;
	uint8_t ctr;          /* controller configuration byte */
	uint8_t out;          /* pending output byte */
	bool out_full;
	uint8_t pending_cmd;  /* command waiting for its data byte */
	void (*on_reset)(void *opaque);
	void *opaque;
};

void i8042_init(struct i8042 *kbc, void (*on_reset)(void *opaque),
		void *opaque);
/* Handlers for the data port (0x60) and command/status port (0x64). */
void i8042_data_io(void *opaque, uint64_t offset, bool is_write,
		   uint8_t *data, unsigned int size);
void i8042_cmd_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
		  unsigned int size);

/* For a snapshot: the configuration byte, the output buffer and a
 * command waiting for its data. */
void i8042_save(struct i8042 *kbc, struct state_out *out);
int i8042_restore(struct i8042 *kbc, struct state_in *in);

#endif
