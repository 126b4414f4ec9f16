/* The guest-physical memory map of fsvm's x86 machine, in one place.
 *
 *   0x00000000  RAM: boot data below 1 MiB (GDT, zero page, stack, page
 *               tables, command line), the EBDA and BIOS area reserved
 *               from 0x9fc00, firmware tables at 0xe0000 (ACPI) and
 *               0xf0000 (MP table), the kernel from 1 MiB
 *   0xc0000000  PCI hole: 32-bit BARs, up to the I/O APIC
 *   0xfec00000  I/O APIC
 *   0xfed00000  virtio-mmio register pages, one per share
 *   0xfee00000  local APIC
 *   0xfffbc000  KVM's identity-map page and TSS (Intel only, unused by AMD)
 *   4 GiB       RAM past the hole, then 64-bit BARs and virtio-mmio shared
 *               memory (DAX windows), above RAM */
#ifndef FSVM_X86_MEMORY_MAP_H
#define FSVM_X86_MEMORY_MAP_H

/* Below 1 MiB: what the loader writes for the 64-bit entry. */
#define BOOT_GDT_ADDR 0x500
#define BOOT_ZERO_PAGE_ADDR 0x7000
#define BOOT_STACK_ADDR 0x8ff0
#define BOOT_PML4_ADDR 0x9000
#define BOOT_PDPT_ADDR 0xa000
#define BOOT_PD_ADDR 0xb000 /* four page directories: 4 GiB identity map */
#define BOOT_CMDLINE_ADDR 0x20000
#define BOOT_CMDLINE_MAX 0x10000
#define BOOT_EBDA_ADDR 0x9fc00 /* from here to 1 MiB: reserved in e820 */
#define BIOS_AREA_ADDR 0xa0000
#define ACPI_TABLES_ADDR 0xe0000
#define MPTABLE_ADDR 0xf0000 /* in the BIOS area Linux scans */
#define BOOT_HIGH_MEM 0x100000

/* RAM stops at the PCI hole and goes on at 4 GiB. */
#define RAM_LOW_LIMIT 0xc0000000ULL
#define RAM_HIGH_START 0x100000000ULL

/* 32-bit BARs live in the hole, under the I/O APIC. */
#define PCI_MMIO32_START RAM_LOW_LIMIT
#define PCI_MMIO32_END IOAPIC_ADDR

#define IOAPIC_ADDR 0xfec00000ULL
/* Between the I/O APIC and the local APIC, clear of RAM and of the PCI
 * window; nothing else lives there (no HPET). */
#define VIRTIO_MMIO_BASE 0xfed00000ULL
#define LAPIC_ADDR 0xfee00000ULL

/* Ports for I/O BARs (virtio-pci doorbells), above the legacy devices
 * and the ACPI PM block, as firmware places them. */
#define PCI_IO_START 0xc000
#define PCI_IO_END 0x10000

#define KVM_IDENTITY_MAP_ADDR 0xfffbc000ULL
#define KVM_TSS_ADDR 0xfffbd000ULL

#endif
