/* Minimal i8042: self-test, configuration byte, and the reset line. */
#include "devices/i8042.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "devices/device.h"

#define I8042_STATUS_OBF 0x01
#define I8042_STATUS_SYS 0x04
#define I8042_STATUS_UNLOCKED 0x10
#define I8042_CMD_READ_CTR 0x20
#define I8042_CMD_WRITE_CTR 0x60
#define I8042_CMD_SELF_TEST 0xaa
#define I8042_CMD_PULSE_RESET 0xfe
#define I8042_SELF_TEST_OK 0x55

void i8042_init(struct i8042 *kbc, void (*on_reset)(void *opaque),
		void *opaque)
{
	memset(kbc, 0, sizeof(*kbc));
	pthread_mutex_init(&kbc->lock, NULL);
	kbc->on_reset = on_reset;
	kbc->opaque = opaque;
}

static void i8042_reply(struct i8042 *kbc, uint8_t byte)
{
	kbc->out = byte;
	kbc->out_full = true;
}

void i8042_data_io(void *opaque, uint64_t offset, bool is_write,
		   uint8_t *data, unsigned int size)
{
	struct i8042 *kbc = opaque;
	(void)offset;
	(void)size;

	pthread_mutex_lock(&kbc->lock);
	if (!is_write) {
		data[0] = kbc->out;
		kbc->out_full = false;
	} else if (kbc->pending_cmd == I8042_CMD_WRITE_CTR) {
		kbc->ctr = data[0];
		kbc->pending_cmd = 0;
	}
	/* Bytes for the (absent) keyboard itself are dropped. */
	pthread_mutex_unlock(&kbc->lock);
}

void i8042_cmd_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
		  unsigned int size)
{
	struct i8042 *kbc = opaque;
	bool reset = false;
	(void)offset;
	(void)size;

	pthread_mutex_lock(&kbc->lock);
	if (!is_write) {
		data[0] = I8042_STATUS_SYS | I8042_STATUS_UNLOCKED |
			  (kbc->out_full ? I8042_STATUS_OBF : 0);
	} else {
		switch (data[0]) {
		case I8042_CMD_READ_CTR:
			i8042_reply(kbc, kbc->ctr);
			break;
		case I8042_CMD_WRITE_CTR:
			kbc->pending_cmd = data[0];
			break;
		case I8042_CMD_SELF_TEST:
			i8042_reply(kbc, I8042_SELF_TEST_OK);
			break;
		case I8042_CMD_PULSE_RESET:
			reset = true;
			break;
		default:
			break;
		}
	}
	pthread_mutex_unlock(&kbc->lock);
	if (reset && kbc->on_reset)
		kbc->on_reset(kbc->opaque);
}

static void on_guest_reset(void *opaque)
{
	vm_stop_unexpected(opaque, EXIT_REASON_GUEST_RESET, "rebooted");
}

static int i8042_add(struct machine *m)
{
	struct i8042 *kbc = calloc(1, sizeof(*kbc));
	if (!kbc)
		return -ENOMEM;
	i8042_init(kbc, on_guest_reset, m->vm);
	int err = io_bus_register(&m->vm->pio, I8042_DATA_PORT, 1,
				  i8042_data_io, kbc);
	if (!err)
		err = io_bus_register(&m->vm->pio, I8042_CMD_PORT, 1,
				      i8042_cmd_io, kbc);
	return err; /* on failure set-up ends: a port may still point here */
}


void i8042_save(struct i8042 *kbc, struct state_out *out)
{
	pthread_mutex_lock(&kbc->lock);
	const uint8_t state[] = {kbc->ctr, kbc->out, kbc->out_full, kbc->pending_cmd};
	state_put(out, state, sizeof(state));
	pthread_mutex_unlock(&kbc->lock);
}

int i8042_restore(struct i8042 *kbc, struct state_in *in)
{
	uint8_t state[4];
	state_get(in, state, sizeof(state));
	if (in->short_read)
		return -EBADMSG;
	pthread_mutex_lock(&kbc->lock);
	kbc->ctr = state[0];
	kbc->out = state[1];
	kbc->out_full = state[2] != 0;
	kbc->pending_cmd = state[3];
	pthread_mutex_unlock(&kbc->lock);
	return 0;
}

static int i8042_save_dev(void *dev, struct state_out *out)
{
	i8042_save(dev, out);
	return out->err;
}

static int i8042_restore_dev(void *dev, struct state_in *in, char *err,
			     size_t errlen)
{
	int ret = i8042_restore(dev, in);
	return ret ? log_refusal(ret, err, errlen, "its registers are cut short") : 0;
}

static const struct device_type i8042_type = {.name = "i8042",
					      .add = i8042_add,
					      .save = i8042_save_dev,
					      .restore = i8042_restore_dev};
DEVICE_REGISTER(i8042_type);
