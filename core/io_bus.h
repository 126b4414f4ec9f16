/* Dispatch of guest port-I/O and MMIO accesses to the device that owns the
 * address. Registration happens before the vCPUs start. */
#ifndef FSVM_IO_BUS_H
#define FSVM_IO_BUS_H

#include <stdbool.h>
#include <stdint.h>

/* data holds size bytes (little-endian): filled by the device on a read. */
typedef void (*io_handler_fn)(void *opaque, uint64_t offset, bool is_write,
			      uint8_t *data, unsigned int size);

struct io_range {
	uint64_t base;
	uint64_t len;
	io_handler_fn handler;
	void *opaque;
};

#define IO_BUS_MAX_RANGES 32

struct io_bus {
	struct io_range ranges[IO_BUS_MAX_RANGES];
	unsigned int nr_ranges;
};

int io_bus_register(struct io_bus *bus, uint64_t base, uint64_t len,
		    io_handler_fn handler, void *opaque);

/* Returns false when nothing claims addr; reads of unclaimed addresses
 * should then see all ones, as on real hardware. */
bool io_bus_dispatch(const struct io_bus *bus, uint64_t addr, bool is_write,
		     uint8_t *data, unsigned int size);

#endif
