/* Exit device: guest-reported exit status and the user-space-reached mark. */
#include "devices/exit_dev.h"

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
