/* ACPI tables, for a guest whose devices cannot be probed: virtio-mmio
 * devices are described in the DSDT as LNRO0005, the id the Linux driver
 * matches (the command-line alternative, CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES,
 * is off in Debian's kernels). A full (not hardware-reduced) ACPI machine
 * keeps the legacy PIC, PIT and ISA interrupts the guest uses without
 * ACPI; it needs a PM1 register block, which acpi_pm_io() serves. */
#ifndef FSVM_ACPI_H
#define FSVM_ACPI_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/memory_map.h"
#include "core/guest_mem.h"

/* From ACPI_TABLES_ADDR, in the BIOS area (reserved in the e820 map) where
 * Linux looks for the RSDP, below the MP table. */
#define ACPI_TABLES_MAX 0x4000
/* PM1a event (status, enable) and control registers, in I/O ports. */
#define ACPI_PM_PORT 0x600
#define ACPI_PM_LEN 6
/* The SCI: never raised, but the guest claims the IRQ. */
#define ACPI_SCI_IRQ 9
#define ACPI_MAX_DEVS 16

/* A virtio-mmio device for the DSDT. */
struct acpi_mmio_dev {
	uint64_t base;
	uint32_t size;
	unsigned int irq;
};

/* Writes RSDP, XSDT, FADT, FACS, MADT (nr_cpus local APICs and the I/O
 * APIC) and a DSDT with the devices. Returns 0 or a negative errno. */
int acpi_write(const struct guest_mem *mem, unsigned int nr_cpus,
	       const struct acpi_mmio_dev *devs, unsigned int nr_devs);

/* The PM1 block: status reads 0, enable keeps what the guest wrote, and
 * control says SCI_EN (the machine is always in ACPI mode). */
struct acpi_pm {
	uint16_t enable;
};
void acpi_pm_io(void *opaque, uint64_t off, bool is_write, uint8_t *data,
		unsigned int size);

#endif
