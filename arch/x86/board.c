/* The x86 machine fsvm builds, and the boot into its kernel. */
#include "arch/x86/board.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch/x86/memory_map.h"
#include "arch/x86/mptable.h"
#include "arch/x86/vmlinux.h"
#include "core/irq.h"
#include "core/kvm.h"
#include "core/vcpu.h"

/* Besides the consoles and the devices there are, what a boot need not
 * spend time on (each about a second of the lab's emulated boot, 2 s of
 * 13 together): the crypto self-tests (cryptomgr.notests), the IO-APIC
 * timer check (no_timer_check) and the TSC's watchdog and sync checks
 * (tsc=reliable: KVM's TSC is constant, and kvm-clock is the clock). */
#define BASE_CMDLINE                                                           \
	"console=ttyS1 8250.nr_uarts=2 reboot=k panic=-1 pci=noearly "         \
	"i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd "                   \
	"cryptomgr.notests no_timer_check tsc=reliable"

/* ISA IRQs no device uses (the UARTs have 3 and 4, the PIT 0, the i8042 1,
 * the RTC 8, the ACPI SCI 9), each on the I/O APIC pin of the same number.
 * Past seven virtio-mmio devices they are shared, which the Linux driver
 * allows. */
static const unsigned int virtio_mmio_irqs[] = {5, 6, 7, 10, 11, 14, 15};

int board_create(struct board *b, uint64_t mem, int mem_fd, unsigned int cpus,
		 enum board_virtio how, const char **why)
{
	struct vm *vm = &b->vm;
	bool mmio = how != BOARD_VIRTIO_PCI;
	b->how = how;
	int err = mem_fd < 0 ? guest_mem_init(&vm->mem, mem, RAM_LOW_LIMIT,
					      RAM_HIGH_START)
			     : guest_mem_init_file(&vm->mem, mem, RAM_LOW_LIMIT,
						   RAM_HIGH_START, mem_fd);
	if (err) {
		*why = "cannot allocate guest RAM";
		return err;
	}
	err = kvm_create_vm(vm, why);
	if (err)
		return err;
	err = irq_routing_init(vm);
	if (err) {
		*why = "cannot set up interrupt routing";
		return err;
	}
	vm->nr_vcpus = cpus;
	vm->vcpus = calloc(cpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		*why = "out of memory";
		return -ENOMEM;
	}
	/* 64-bit BARs (DAX windows) start above RAM and the 4 GiB line. */
	const struct guest_region *top = &vm->mem.regions[vm->mem.nr_regions - 1];
	uint64_t ram_end = top->gpa + top->size;
	const struct pci_windows win = {
		.mmio32_start = PCI_MMIO32_START,
		.mmio32_end = PCI_MMIO32_END,
		.mmio64_start = ram_end > RAM_HIGH_START ? ram_end : RAM_HIGH_START,
		.io_start = PCI_IO_START,
		.io_end = PCI_IO_END,
	};
	err = pci_host_init(&b->pci, &vm->pio, &vm->mmio, &win);
	b->virtio = (struct virtio_bus){
		.vm = vm,
		.pci = &b->pci,
		.mmio = mmio,
		.mmio_base = VIRTIO_MMIO_BASE,
		.irqs = virtio_mmio_irqs,
		.nr_irqs = sizeof(virtio_mmio_irqs) / sizeof(virtio_mmio_irqs[0]),
	};
	/* virtio-mmio devices cannot be probed: ACPI describes them, and an
	 * ACPI machine has a PM1 block. */
	if (!err && how == BOARD_VIRTIO_MMIO_ACPI)
		err = io_bus_register(&vm->pio, ACPI_PM_PORT, ACPI_PM_LEN,
				      acpi_pm_io, &b->acpi_pm);
	if (err)
		*why = "cannot register the PCI host bridge or the ACPI PM block";
	return err;
}

int board_load_kernel(struct board *b, const uint8_t *img, size_t size,
		      const char **why)
{
	if (vmlinux_is_elf(img, size))
		return vmlinux_load(&b->vm.mem, img, size, &b->zp, &b->ki, why);
	return bzimage_load(&b->vm.mem, img, size, &b->zp, &b->ki, why);
}

int board_check_kernel(const uint8_t *img, size_t size, const char **why)
{
	struct setup_header hdr;
	return vmlinux_is_elf(img, size) ? vmlinux_check(img, size, why)
					 : bzimage_check(img, size, &hdr, why);
}

int board_place_initrd(struct board *b, uint64_t size, uint64_t *gpa,
		       const char **why)
{
	return boot_place_initrd(&b->vm.mem, &b->ki, size, &b->zp, gpa, why);
}

static int write_acpi(struct board *b)
{
	struct acpi_mmio_dev devs[VIRTIO_BUS_MAX_DEVICES];
	for (unsigned int i = 0; i < b->virtio.nr_devices; i++) {
		const struct virtio_mmio *m = virtio_bus_mmio(&b->virtio, i);
		devs[i] = (struct acpi_mmio_dev){
			.base = m->base, .size = VIRTIO_MMIO_SIZE, .irq = m->irq};
	}
	return acpi_write(&b->vm.mem, b->vm.nr_vcpus, devs,
			  b->virtio.nr_devices);
}

/* The virtio-mmio devices as a kernel without ACPI learns of them:
 * "virtio_mmio.device=SIZE@BASE:IRQ" each; and no PCI bus to probe. */
static void mmio_devices_cmdline(const struct board *b, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, " pci=off");
	for (unsigned int i = 0; i < b->virtio.nr_devices && n < len; i++) {
		const struct virtio_mmio *m = virtio_bus_mmio(&b->virtio, i);
		n += (size_t)snprintf(buf + n, len - n,
				      " virtio_mmio.device=%#x@%#llx:%u",
				      VIRTIO_MMIO_SIZE,
				      (unsigned long long)m->base, m->irq);
	}
}

int board_boot(struct board *b, const char *extra, bool verbose,
	       const char **why)
{
	struct vm *vm = &b->vm;
	char devices[VIRTIO_BUS_MAX_DEVICES * 48];
	mmio_devices_cmdline(b, devices, sizeof(devices));
	char cmdline[BOOT_CMDLINE_MAX];
	snprintf(cmdline, sizeof(cmdline), "%s%s%s%s%s%s", BASE_CMDLINE,
		 b->how == BOARD_VIRTIO_PCI ? " acpi=off" : "",
		 b->how == BOARD_VIRTIO_MMIO_CMDLINE ? devices : "",
		 verbose ? "" : " quiet", extra ? " " : "", extra ? extra : "");
	int err = boot_set_cmdline(&vm->mem, &b->ki, cmdline, &b->zp, why);
	if (err)
		return err;
	boot_set_e820(&vm->mem, &b->zp);
	if (boot_write_tables(&vm->mem, &b->zp) < 0 ||
	    mptable_write(&vm->mem, vm->nr_vcpus) < 0 ||
	    (b->how == BOARD_VIRTIO_MMIO_ACPI && write_acpi(b) < 0)) {
		*why = "guest RAM too small for boot tables";
		return -ENOSPC;
	}
	err = board_create_vcpus(b, why);
	if (err)
		return err;
	err = boot_enter_kernel(&vm->vcpus[0], &b->ki);
	if (err)
		*why = "cannot set the boot CPU's registers";
	return err;
}

int board_create_vcpus(struct board *b, const char **why)
{
	for (unsigned int i = 0; i < b->vm.nr_vcpus; i++) {
		int err = vcpu_create(&b->vm, &b->vm.vcpus[i], i, why);
		if (err)
			return err;
	}
	return 0;
}
