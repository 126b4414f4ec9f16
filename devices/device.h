/* Devices register themselves: each device file names its type once with
 * DEVICE_REGISTER, and set-up adds every registered type to the machine
 * (devices_add_all). Adding a device is one file and that one line.
 *
 * The types sit in one linker section, found through the symbols the
 * linker defines around it; fsvm links the device objects themselves (not
 * from an archive, which would drop what no one calls). */
#ifndef FSVM_DEVICE_H
#define FSVM_DEVICE_H

#include <stdint.h>

#include "core/event_loop.h"
#include "core/state_blob.h"
#include "core/vm.h"
#include "virtio/virtio_bus.h"

#define DEVICE_MAX_INSTANCES 32
#define DEVICE_MAX_OPTIONS 8 /* types a machine gives options to */

struct device_type;

#define DEVICE_REPORT_MAX_COUNTS 64 /* a virtio-fs share: one per FUSE opcode */

/* What a device saw while the guest ran, for -v and --json: named
 * counters under a name (a share's tag). */
struct device_report {
	const char *type; /* the device type's name */
	char name[40];
	const char *what; /* what the counters count, e.g. "requests" */
	struct {
		const char *name;
		uint64_t value;
	} counts[DEVICE_REPORT_MAX_COUNTS];
	unsigned int nr_counts;
};

/* What devices are added to: the VM with its buses, the transport for
 * virtio devices, the main loop, and what the user asked of each device
 * type. */
struct machine {
	struct vm *vm;
	struct virtio_bus *virtio;
	struct event_loop *loop;
	/* Each type's options, under its name (a NULL type is a gap):
	 * what they hold is for the type's own header to say, and for its
	 * add to read (machine_options). */
	struct {
		const char *type;
		const void *options;
	} options[DEVICE_MAX_OPTIONS];
	/* The devices added, each with its type (for report and repair). */
	struct {
		const struct device_type *type;
		void *dev;
	} devices[DEVICE_MAX_INSTANCES];
	unsigned int nr_devices;
};

struct device_type {
	const char *name;
	/* Adds this type's devices to m (none, one or several), each with
	 * machine_add_device; a negative errno fails set-up. */
	int (*add)(struct machine *m);
	/* Optional. After the guest stopped: what the device saw. */
	void (*report)(void *dev, struct device_report *out);
	/* Optional. KVM could not back a guest page: fix what is this
	 * device's to fix; returns how many fixes were made. */
	unsigned int (*repair_memory)(void *dev);
	/* For a snapshot (docs/snapshot.md), both or neither: the device's
	 * own state, its transport's being the bus's, taken with the vCPUs
	 * stopped (save may wait for requests in hand to finish); and back
	 * into a device as added, before its transport's restore starts it,
	 * with a line in err on failure. A type with neither is refused a
	 * snapshot, unless it keeps nothing a restored VM needs. */
	int (*save)(void *dev, struct state_out *out);
	int (*restore)(void *dev, struct state_in *in, char *err, size_t errlen);
	bool stateless;
};

#define DEVICE_REGISTER(type)                                                  \
	static const struct device_type *const device_type_ptr_##type          \
		__attribute__((used, section("fsvm_devices"))) = &(type)

/* The options m gives the type named type; NULL: none. */
const void *machine_options(const struct machine *m, const char *type);

/* Records dev, of type, as part of the machine; -ENOSPC when full. */
int machine_add_device(struct machine *m, const struct device_type *type,
		       void *dev);

/* Adds every registered device type to m. No type depends on another's
 * devices, so their order (the link order) does not matter. */
int devices_add_all(struct machine *m);

/* Adds a counter to a report; past DEVICE_REPORT_MAX_COUNTS it is dropped. */
void device_report_add(struct device_report *r, const char *name,
		       uint64_t value);

/* Fills out (up to max) with the report of each device that makes one;
 * returns how many. */
unsigned int devices_report(const struct machine *m,
			    struct device_report *out, unsigned int max);

/* Whether a snapshot can hold every device of m: 0, or -ENOTSUP with a
 * line in err naming the first that cannot. */
int devices_can_snapshot(const struct machine *m, char *err, size_t errlen);

/* vm->repair_memory for a machine (opaque). */
unsigned int devices_repair_memory(void *opaque);

#endif
