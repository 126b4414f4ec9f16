/* fsvm's x86 machine: RAM around the PCI hole, KVM's in-kernel PIC, I/O
 * APIC and PIT, a PCI host bridge, the plan for virtio devices (PCI, or
 * virtio-mmio pages and IRQs that ACPI or the kernel command line
 * describes), and the boot CPU entering a bzImage the 64-bit way. Layout:
 * arch/x86/memory_map.h. */
#ifndef FSVM_X86_BOARD_H
#define FSVM_X86_BOARD_H

#include <asm/bootparam.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/boot.h"
#include "core/vm.h"
#include "pci/pci_host.h"
#include "virtio/virtio_bus.h"

/* How the guest finds its virtio devices. */
enum board_virtio {
	BOARD_VIRTIO_PCI,
	BOARD_VIRTIO_MMIO_ACPI,    /* ACPI tables (Debian's kernels) */
	BOARD_VIRTIO_MMIO_CMDLINE, /* virtio_mmio.device= (kernels without ACPI) */
};

struct board {
	struct vm vm;
	enum board_virtio how;
	struct pci_host pci;
	struct virtio_bus virtio;
	struct acpi_pm acpi_pm;
	struct kernel_info ki;
	struct boot_params zp;
};

/* Builds the machine on an opened KVM (vm->kvm_fd): mem bytes of RAM
 * (mem_fd's, a snapshot's memory file, or new when -1), cpus vCPUs,
 * virtio devices found as how says. On error *why says what failed. */
int board_create(struct board *b, uint64_t mem, int mem_fd, unsigned int cpus,
		 enum board_virtio how, const char **why);

/* Copies a kernel into RAM: a bzImage's, or an ELF vmlinux's segments. */
int board_load_kernel(struct board *b, const uint8_t *img, size_t size,
		      const char **why);

/* Whether img is a kernel board_load_kernel takes (a bzImage or an ELF
 * vmlinux for x86-64, all there), without loading it. */
int board_check_kernel(const uint8_t *img, size_t size, const char **why);

/* Where an initrd of size bytes goes (after board_load_kernel). */
int board_place_initrd(struct board *b, uint64_t size, uint64_t *gpa,
		       const char **why);

/* Once every device is added: the kernel command line (the board's own,
 * quiet unless verbose, then extra), the firmware tables, and each vCPU,
 * the boot CPU at the kernel's entry. */
int board_boot(struct board *b, const char *extra, bool verbose,
	       const char **why);

/* Instead of board_boot, for a snapshot's restore: the vCPUs, made as
 * the snapshot's were, for their saved state. */
int board_create_vcpus(struct board *b, const char **why);

#endif
