/* The registered device types and the devices they added. */
#include "devices/device.h"

#include <errno.h>
#include <string.h>

#include "core/log.h"

/* Defined by the linker around the section DEVICE_REGISTER fills. */
extern const struct device_type *const __start_fsvm_devices[];
extern const struct device_type *const __stop_fsvm_devices[];

const void *machine_options(const struct machine *m, const char *type)
{
	/* A type without options this run (no --net) leaves a gap. */
	for (unsigned int i = 0; i < DEVICE_MAX_OPTIONS; i++)
		if (m->options[i].type && !strcmp(m->options[i].type, type))
			return m->options[i].options;
	return NULL;
}

int machine_add_device(struct machine *m, const struct device_type *type,
		       void *dev)
{
	if (m->nr_devices == DEVICE_MAX_INSTANCES)
		return -ENOSPC;
	m->devices[m->nr_devices].type = type;
	m->devices[m->nr_devices].dev = dev;
	m->nr_devices++;
	return 0;
}

int devices_add_all(struct machine *m)
{
	for (const struct device_type *const *t = __start_fsvm_devices;
	     t < __stop_fsvm_devices; t++) {
		int err = (*t)->add(m);
		if (err)
			return log_setup_error((*t)->name, "cannot add the device", err);
	}
	return 0;
}

void device_report_add(struct device_report *r, const char *name,
		       uint64_t value)
{
	if (r->nr_counts < DEVICE_REPORT_MAX_COUNTS)
		r->counts[r->nr_counts++] = (typeof(r->counts[0])){name, value};
}

unsigned int devices_report(const struct machine *m,
			    struct device_report *out, unsigned int max)
{
	unsigned int n = 0;
	for (unsigned int i = 0; i < m->nr_devices && n < max; i++) {
		if (!m->devices[i].type->report)
			continue;
		out[n] = (struct device_report){.type = m->devices[i].type->name};
		m->devices[i].type->report(m->devices[i].dev, &out[n++]);
	}
	return n;
}

unsigned int devices_repair_memory(void *opaque)
{
	const struct machine *m = opaque;
	unsigned int repaired = 0;
	for (unsigned int i = 0; i < m->nr_devices; i++)
		if (m->devices[i].type->repair_memory)
			repaired += m->devices[i].type->repair_memory(
				m->devices[i].dev);
	return repaired;
}

int devices_can_snapshot(const struct machine *m, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < m->nr_devices; i++) {
		const struct device_type *t = m->devices[i].type;
		if (!t->save && !t->stateless) {
			snprintf(err, errlen,
				 "a snapshot cannot hold a %s device yet", t->name);
			return -ENOTSUP;
		}
	}
	return 0;
}
