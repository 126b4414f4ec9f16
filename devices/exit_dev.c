/* Exit device: guest-reported exit status and boot marks. */
#include "devices/exit_dev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/timeline.h"
#include "devices/device.h"

void exit_dev_io(void *opaque, uint64_t offset, bool is_write, uint8_t *data,
		 unsigned int size)
{
	struct exit_dev *dev = opaque;

	if (!is_write) {
		memset(data, 0, size);
		if (offset == EXIT_DEV_REG_JOB && size == 1) {
			unsigned int at = atomic_fetch_add(&dev->job_read, 1);
			if (at < dev->job_len)
				data[0] = dev->job[at];
		} else if (offset == EXIT_DEV_REG_JOB_LEN && size == 4) {
			memcpy(data, &dev->job_len, sizeof(dev->job_len));
		}
		return;
	}
	if (offset == EXIT_DEV_REG_STATUS && dev->on_exit)
		dev->on_exit(dev->opaque, data[0]);
	else if (offset == EXIT_DEV_REG_MARK && dev->on_mark)
		dev->on_mark(dev->opaque, data[0], atomic_load(&dev->clock_us));
	else if (offset == EXIT_DEV_REG_CLOCK && size == 4) {
		uint32_t v;
		memcpy(&v, data, sizeof(v));
		atomic_store(&dev->clock_us, v);
	}
}

static void on_guest_exit(void *opaque, uint8_t status)
{
	vm_guest_exited(opaque, status);
}

static void on_guest_mark(void *opaque, uint8_t mark, uint32_t clock_us)
{
	struct vm *vm = opaque;
	struct timeline *tl = &vm->timeline;
	switch (mark) {
	case GUEST_MARK_COMMAND:
		atomic_store(&vm->command_started, true);
		timeline_mark(tl, TL_COMMAND_START);
		break;
	case GUEST_MARK_INIT:
		/* The guest's clock started with its kernel: so many
		 * microseconds before now (if the guest tells the truth;
		 * timeline_mark_at() refuses a time before launch). */
		if (clock_us)
			timeline_mark_at(tl, TL_KERNEL_ENTRY,
					 timeline_now_us(tl) - clock_us);
		timeline_mark(tl, TL_INIT_START);
		break;
	case GUEST_MARK_MODULES:
		timeline_mark(tl, TL_MODULES_LOADED);
		break;
	case GUEST_MARK_ROOT:
		timeline_mark(tl, TL_ROOT_MOUNTED);
		break;
	case GUEST_MARK_COMMAND_EXIT:
		timeline_mark(tl, TL_COMMAND_EXIT);
		break;
	case GUEST_MARK_KERNEL_OOPSED:
		atomic_store(&vm->kernel_oopsed, true);
		break;
	case GUEST_MARK_SNAPSHOT:
		/* Only where fsvm asked for one: a guest's mark is no order. */
		if (vm->snapshot_point && vm_stop(vm, 0, EXIT_REASON_NONE, NULL))
			atomic_store(&vm->snapshot_reached, true);
		break;
	default:
		break; /* not ours to know: ignored */
	}
}

static int exit_dev_add(struct machine *m)
{
	struct exit_dev *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	const struct exit_dev_options *o = machine_options(m, EXIT_DEV_NAME);
	*dev = (struct exit_dev){.on_exit = on_guest_exit,
				 .on_mark = on_guest_mark,
				 .opaque = m->vm,
				 .job = o ? o->job : NULL,
				 .job_len = o && o->job ? o->job_len : 0};
	int err = io_bus_register(&m->vm->pio, EXIT_DEV_PORT, EXIT_DEV_LEN,
				  exit_dev_io, dev);
	if (err)
		free(dev);
	return err;
}

/* Nothing of it outlives a snapshot: the marks are the run's, and a
 * restored VM's job is its own. */
static const struct device_type exit_dev_type = {.name = EXIT_DEV_NAME,
						 .add = exit_dev_add,
						 .stateless = true};
DEVICE_REGISTER(exit_dev_type);
