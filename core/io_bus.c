/* Address-range dispatch for port I/O and MMIO exits. */
#include "core/io_bus.h"

#include <errno.h>

int io_bus_register(struct io_bus *bus, uint64_t base, uint64_t len,
		    io_handler_fn handler, void *opaque)
{
	if (len == 0 || base + len < base)
		return -EINVAL;
	if (bus->nr_ranges == IO_BUS_MAX_RANGES)
		return -ENOSPC;
	for (unsigned int i = 0; i < bus->nr_ranges; i++) {
		const struct io_range *r = &bus->ranges[i];
		if (base < r->base + r->len && r->base < base + len)
			return -EEXIST;
	}
	bus->ranges[bus->nr_ranges++] = (struct io_range){
		.base = base, .len = len, .handler = handler, .opaque = opaque};
	return 0;
}

bool io_bus_dispatch(const struct io_bus *bus, uint64_t addr, bool is_write,
		     uint8_t *data, unsigned int size)
{
	for (unsigned int i = 0; i < bus->nr_ranges; i++) {
		const struct io_range *r = &bus->ranges[i];
		if (addr >= r->base && addr - r->base < r->len) {
			r->handler(r->opaque, addr - r->base, is_write, data,
				   size);
			return true;
		}
	}
	return false;
}
