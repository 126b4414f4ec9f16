/* ACPI 6.4 tables: RSDP, XSDT, FADT, FACS, MADT and a DSDT in AML. */
#include "arch/x86/acpi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/fw_table.h"
#include "arch/x86/mptable.h"

/* The spec's structures: not part of any UAPI header. */
struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));

struct acpi_rsdp {
	char signature[8];
	uint8_t checksum; /* of the first 20 bytes (ACPI 1.0) */
	char oem_id[6];
	uint8_t revision;
	uint32_t rsdt_addr;
	uint32_t length;
	uint64_t xsdt_addr;
	uint8_t ext_checksum;
	uint8_t reserved[3];
} __attribute__((packed));

/* Generic Address Structure. */
struct acpi_gas {
	uint8_t space_id, bit_width, bit_offset, access_size;
	uint64_t address;
} __attribute__((packed));

struct acpi_fadt {
	struct acpi_header h;
	uint32_t firmware_ctrl, dsdt;
	uint8_t reserved0, pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable, acpi_disable, s4bios_req, pstate_cnt;
	uint32_t pm1a_evt_blk, pm1b_evt_blk, pm1a_cnt_blk, pm1b_cnt_blk;
	uint32_t pm2_cnt_blk, pm_tmr_blk, gpe0_blk, gpe1_blk;
	uint8_t pm1_evt_len, pm1_cnt_len, pm2_cnt_len, pm_tmr_len;
	uint8_t gpe0_blk_len, gpe1_blk_len, gpe1_base, cst_cnt;
	uint16_t p_lvl2_lat, p_lvl3_lat, flush_size, flush_stride;
	uint8_t duty_offset, duty_width, day_alrm, mon_alrm, century;
	uint16_t iapc_boot_arch;
	uint8_t reserved1;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_version;
	uint64_t x_firmware_ctrl, x_dsdt;
	struct acpi_gas x_pm1a_evt_blk, x_pm1b_evt_blk, x_pm1a_cnt_blk;
	struct acpi_gas x_pm1b_cnt_blk, x_pm2_cnt_blk, x_pm_tmr_blk;
	struct acpi_gas x_gpe0_blk, x_gpe1_blk, sleep_control, sleep_status;
	uint64_t hypervisor_id;
} __attribute__((packed));

struct acpi_facs {
	char signature[4];
	uint32_t length;
	uint32_t hardware_signature, waking_vector, global_lock, flags;
	uint64_t x_waking_vector;
	uint8_t version, reserved[3];
	uint32_t ospm_flags;
	uint8_t reserved2[24];
} __attribute__((packed));

struct acpi_madt {
	struct acpi_header h;
	uint32_t lapic_addr;
	uint32_t flags;
} __attribute__((packed));

struct madt_lapic {
	uint8_t type, length, uid, apic_id;
	uint32_t flags;
} __attribute__((packed));

struct madt_ioapic {
	uint8_t type, length, id, reserved;
	uint32_t addr, gsi_base;
} __attribute__((packed));

#define FADT_REVISION 6
#define FADT_MINOR 4
#define FADT_WBINVD (1u << 0)
#define FADT_PWR_BUTTON (1u << 4) /* no fixed-hardware buttons */
#define FADT_SLP_BUTTON (1u << 5)
#define FADT_FIX_RTC (1u << 6)    /* no RTC wake event */
#define BOOT_ARCH_LEGACY_DEVICES (1u << 0)
#define BOOT_ARCH_8042 (1u << 1)
#define GAS_SYSTEM_IO 1
#define GAS_ACCESS_WORD 2
#define MADT_PCAT_COMPAT 1 /* there are 8259 PICs too */
#define MADT_LAPIC 0
#define MADT_IOAPIC 1
#define LAPIC_ENABLED 1
#define PM1_EVT_LEN 4
#define PM1_CNT_LEN 2
#define PM1_EN_OFF 2
#define PM1_CNT_OFF 4
#define PM1_SCI_EN 1

/* AML (ACPI 6.4, 20.2): names are 4-character segments. */
#define AML_NAME "\x08"
#define AML_STRING "\x0d"
#define AML_BYTE "\x0a"
#define AML_BUFFER "\x11"
#define AML_SCOPE 0x10
#define AML_EXT 0x5b
#define AML_DEVICE 0x82
/* Resource descriptors (6.4.3). */
#define RES_MEMORY32_FIXED 0x86
#define RES_EXT_IRQ 0x89
#define RES_END 0x79
#define RES_RW 1
/* Consumer, edge, active high, shared (the Linux driver shares it). */
#define RES_IRQ_FLAGS 0x0b

static void header(struct acpi_header *h, const char *sig, uint32_t len,
		   uint8_t rev)
{
	memcpy(h->signature, sig, 4);
	h->length = len;
	h->revision = rev;
	memcpy(h->oem_id, "FSVM  ", 6);
	memcpy(h->oem_table_id, "FSVM    ", 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, "FSVM", 4);
	h->creator_revision = 1;
	h->checksum = fw_table_checksum(h, len);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* An AML PkgLength for body bytes that follow it (20.2.4). */
static size_t aml_pkglen(uint8_t *p, size_t body)
{
	size_t n = body + 1 < 0x40 ? 1 : body + 2 < 0x1000 ? 2 : 3;
	size_t v = body + n;
	if (n == 1) {
		p[0] = (uint8_t)v;
		return 1;
	}
	p[0] = (uint8_t)(((n - 1) << 6) | (v & 0xf));
	for (size_t i = 1; i < n; i++)
		p[i] = (uint8_t)(v >> (4 + 8 * (i - 1)));
	return n;
}

static size_t put(uint8_t *p, const void *src, size_t len)
{
	memcpy(p, src, len);
	return len;
}

/* Wraps body (already at p + room) in an opcode and a PkgLength; room is
 * what the caller left in front of it, enough for both. */
static size_t aml_package(uint8_t *p, size_t room, const uint8_t *op,
			  size_t op_len, size_t body)
{
	uint8_t head[8];
	size_t n = put(head, op, op_len);
	n += aml_pkglen(head + n, body);
	memmove(p + n, p + room, body);
	memcpy(p, head, n);
	return n + body;
}

/* Device(Vnnn) { _HID "LNRO0005", _UID n, _CRS: the page and the IRQ }. */
static size_t aml_mmio_device(uint8_t *p, unsigned int i,
			      const struct acpi_mmio_dev *d)
{
	static const uint8_t device_op[] = {AML_EXT, AML_DEVICE};
	uint8_t crs[] = {
		RES_MEMORY32_FIXED, 9, 0, RES_RW, 0, 0, 0, 0, 0, 0, 0, 0,
		RES_EXT_IRQ, 6, 0, RES_IRQ_FLAGS, 1, 0, 0, 0, 0,
		RES_END, 0,
	};
	put32(&crs[4], (uint32_t)d->base);
	put32(&crs[8], d->size);
	put32(&crs[17], d->irq);

	const size_t room = 8;
	uint8_t *b = p + room;
	char name[5];
	snprintf(name, sizeof(name), "V%03u", i);
	size_t n = put(b, name, 4);
	/* The string's NUL is part of the encoding. */
	n += put(b + n, AML_NAME "_HID" AML_STRING "LNRO0005",
		 sizeof(AML_NAME "_HID" AML_STRING "LNRO0005"));
	n += put(b + n, AML_NAME "_UID" AML_BYTE, 6);
	b[n++] = (uint8_t)i;
	n += put(b + n, AML_NAME "_CRS" AML_BUFFER, 6);
	n += aml_pkglen(b + n, 2 + sizeof(crs));
	n += put(b + n, AML_BYTE, 1);
	b[n++] = sizeof(crs);
	n += put(b + n, crs, sizeof(crs));
	return aml_package(p, room, device_op, sizeof(device_op), n);
}

/* DefinitionBlock: Scope(\_SB) { the devices }. */
static size_t dsdt_write(uint8_t *p, const struct acpi_mmio_dev *devs,
			 unsigned int nr_devs)
{
	static const uint8_t scope_op[] = {AML_SCOPE};
	const size_t room = 8;
	uint8_t *b = p + sizeof(struct acpi_header) + room;
	size_t n = put(b, "\\_SB_", 5);
	for (unsigned int i = 0; i < nr_devs; i++)
		n += aml_mmio_device(b + n, i, &devs[i]);
	size_t len = sizeof(struct acpi_header) +
		     aml_package(p + sizeof(struct acpi_header), room, scope_op,
				 sizeof(scope_op), n);
	header((struct acpi_header *)p, "DSDT", (uint32_t)len, 2);
	return len;
}

static struct acpi_gas pm_gas(uint32_t port, uint8_t len)
{
	return (struct acpi_gas){.space_id = GAS_SYSTEM_IO,
				 .bit_width = (uint8_t)(8 * len),
				 .access_size = GAS_ACCESS_WORD,
				 .address = port};
}

static void fadt_write(struct acpi_fadt *f, uint32_t facs, uint32_t dsdt)
{
	f->firmware_ctrl = facs;
	f->dsdt = dsdt;
	f->x_dsdt = dsdt;
	f->sci_int = ACPI_SCI_IRQ;
	/* smi_cmd 0: always in ACPI mode, no transition. */
	f->pm1a_evt_blk = ACPI_PM_PORT;
	f->pm1a_cnt_blk = ACPI_PM_PORT + PM1_CNT_OFF;
	f->pm1_evt_len = PM1_EVT_LEN;
	f->pm1_cnt_len = PM1_CNT_LEN;
	f->x_pm1a_evt_blk = pm_gas(ACPI_PM_PORT, PM1_EVT_LEN);
	f->x_pm1a_cnt_blk = pm_gas(ACPI_PM_PORT + PM1_CNT_OFF, PM1_CNT_LEN);
	f->iapc_boot_arch = BOOT_ARCH_LEGACY_DEVICES | BOOT_ARCH_8042;
	f->flags = FADT_WBINVD | FADT_PWR_BUTTON | FADT_SLP_BUTTON |
		   FADT_FIX_RTC;
	f->minor_version = FADT_MINOR;
	memcpy(&f->hypervisor_id, "FSVM", 4);
	header(&f->h, "FACP", sizeof(*f), FADT_REVISION);
}

static size_t madt_write(uint8_t *p, unsigned int nr_cpus)
{
	size_t len = sizeof(struct acpi_madt);
	for (unsigned int i = 0; i < nr_cpus; i++) {
		struct madt_lapic l = {.type = MADT_LAPIC, .length = sizeof(l),
				       .uid = (uint8_t)i, .apic_id = (uint8_t)i,
				       .flags = LAPIC_ENABLED};
		memcpy(p + len, &l, sizeof(l));
		len += sizeof(l);
	}
	/* The I/O APIC id the MP table gives it; ISA IRQs map to its pins
	 * one to one (no overrides), as in the MP table. */
	struct madt_ioapic io = {.type = MADT_IOAPIC, .length = sizeof(io),
				 .id = (uint8_t)nr_cpus, .addr = IOAPIC_ADDR};
	memcpy(p + len, &io, sizeof(io));
	len += sizeof(io);
	struct acpi_madt *m = (struct acpi_madt *)p;
	m->lapic_addr = LAPIC_ADDR;
	m->flags = MADT_PCAT_COMPAT;
	header(&m->h, "APIC", (uint32_t)len, 5);
	return len;
}

static uint32_t align(uint32_t v, uint32_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int acpi_write(const struct guest_mem *mem, unsigned int nr_cpus,
	       const struct acpi_mmio_dev *devs, unsigned int nr_devs)
{
	if (nr_cpus == 0 || nr_cpus > MPTABLE_MAX_CPUS ||
	    nr_devs > ACPI_MAX_DEVS)
		return -EINVAL;
	uint8_t *base = guest_ptr(mem, ACPI_TABLES_ADDR, ACPI_TABLES_MAX);
	if (!base)
		return -EFAULT;
	memset(base, 0, ACPI_TABLES_MAX);

	/* RSDP, XSDT, FACS (64-byte aligned), FADT, MADT, DSDT. */
	uint32_t xsdt = align(sizeof(struct acpi_rsdp), 16);
	uint32_t xsdt_len = sizeof(struct acpi_header) + 2 * sizeof(uint64_t);
	uint32_t facs = align(xsdt + xsdt_len, 64);
	uint32_t fadt = align(facs + sizeof(struct acpi_facs), 16);
	uint32_t madt = align(fadt + sizeof(struct acpi_fadt), 16);
	uint32_t dsdt = align(madt + (uint32_t)madt_write(base + madt, nr_cpus),
			      16);
	dsdt_write(base + dsdt, devs, nr_devs);

	struct acpi_facs *fs = (struct acpi_facs *)(base + facs);
	memcpy(fs->signature, "FACS", 4);
	fs->length = sizeof(*fs);
	fs->version = 2;
	fadt_write((struct acpi_fadt *)(base + fadt), ACPI_TABLES_ADDR + facs,
		   ACPI_TABLES_ADDR + dsdt);

	uint64_t entries[2] = {ACPI_TABLES_ADDR + fadt, ACPI_TABLES_ADDR + madt};
	memcpy(base + xsdt + sizeof(struct acpi_header), entries,
	       sizeof(entries));
	header((struct acpi_header *)(base + xsdt), "XSDT", xsdt_len, 1);

	struct acpi_rsdp *rsdp = (struct acpi_rsdp *)base;
	memcpy(rsdp->signature, "RSD PTR ", 8);
	memcpy(rsdp->oem_id, "FSVM  ", 6);
	rsdp->revision = 2;
	rsdp->length = sizeof(*rsdp);
	rsdp->xsdt_addr = ACPI_TABLES_ADDR + xsdt;
	rsdp->checksum = fw_table_checksum(rsdp, 20);
	rsdp->ext_checksum = fw_table_checksum(rsdp, sizeof(*rsdp));
	return 0;
}

void acpi_pm_io(void *opaque, uint64_t off, bool is_write, uint8_t *data,
		unsigned int size)
{
	struct acpi_pm *pm = opaque;
	uint16_t v = 0;
	if (size > 2 || off % size) {
		if (!is_write)
			memset(data, 0, size);
		return;
	}
	if (is_write) {
		memcpy(&v, data, size);
		if (off == PM1_EN_OFF && size == 2)
			pm->enable = v;
		return; /* status bits are never set; control is fixed */
	}
	if (off == PM1_EN_OFF && size == 2)
		v = pm->enable;
	else if (off == PM1_CNT_OFF)
		v = PM1_SCI_EN;
	memcpy(data, &v, size);
}
