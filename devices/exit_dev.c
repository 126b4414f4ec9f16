/* Exit device: guest-reported exit status and the user-space-reached mark. */
#include "devices/exit_dev.h"

#include <errno.h>
#include <stdlib.h>

#include "devices/device.h"
#include "vmm/core/log.h"

void exit_dev_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
		 unsigned int size)
{
	struct exit_dev *dev = opaque;
	(void)size;

	if (!is_write) {
		data[0] = 0;
		return;
	}
	if (offset == EXIT_DEV_REG_STATUS && dev->on_exit)
		dev->on_exit(dev->opaque, data[0]);
	else if (offset == EXIT_DEV_REG_MARK && dev->on_mark)
		dev->on_mark(dev->opaque);
}

static void on_guest_exit(void *opaque, uint8_t status)
{
	vm_stop(opaque, status, NULL);
}

static void on_guest_mark(void *opaque)
{
	struct vm *vm = opaque;
	atomic_store(&vm->command_started, true);
	log_info("guest user space started at %.1f ms", vm_elapsed_ms(vm));
}

static int exit_dev_add(struct machine *m)
{
	struct exit_dev *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	*dev = (struct exit_dev){
		.on_exit = on_guest_exit, .on_mark = on_guest_mark, .opaque = m->vm};
	int err = io_bus_register(&m->vm->pio, EXIT_DEV_PORT, EXIT_DEV_LEN,
				  exit_dev_io, dev);
	if (err)
		free(dev);
	return err;
}

static const struct device_type exit_dev_type = {.name = "exit device",
						 .add = exit_dev_add};
DEVICE_REGISTER(exit_dev_type);
