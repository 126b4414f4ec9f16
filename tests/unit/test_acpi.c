/* Unit tests for vmm/acpi: follow the tables from the RSDP as a guest
 * would, check every checksum and link, find each virtio-mmio device in
 * the DSDT's AML, and drive the PM1 register block. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/acpi.h"
#include "arch/x86/fw_table.h"
#include "arch/x86/mptable.h"

#define RAM_SIZE 0x100000 /* the first MiB: where the tables live */
#define HEADER_LEN 36

struct ram {
	uint8_t *bytes;
	struct guest_mem mem;
};

static uint32_t le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static int setup(void **state)
{
	struct ram *r = calloc(1, sizeof(*r));
	r->bytes = calloc(1, RAM_SIZE);
	r->mem = (struct guest_mem){0};
	guest_mem_add(&r->mem, 0, RAM_SIZE, r->bytes);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct ram *r = *state;
	free(r->bytes);
	free(r);
	return 0;
}

/* A table at gpa with signature sig and a valid checksum. */
static const uint8_t *table(struct ram *r, uint64_t gpa, const char *sig)
{
	assert_true(gpa > 0 && gpa + HEADER_LEN < RAM_SIZE);
	const uint8_t *t = r->bytes + gpa;
	assert_memory_equal(t, sig, 4);
	assert_true(gpa + le32(t + 4) <= RAM_SIZE);
	assert_int_equal(fw_table_checksum(t, le32(t + 4)), 0);
	return t;
}

/* RSDP -> XSDT -> FADT (entry 0) and MADT (entry 1). */
static const uint8_t *xsdt_entry(struct ram *r, unsigned int i,
				 const char *sig)
{
	const uint8_t *rsdp = r->bytes + ACPI_TABLES_ADDR;
	assert_memory_equal(rsdp, "RSD PTR ", 8);
	assert_int_equal(fw_table_checksum(rsdp, 20), 0);
	assert_int_equal(rsdp[15], 2); /* ACPI 2.0+: the XSDT is used */
	assert_int_equal(le32(rsdp + 20), 36);
	assert_int_equal(fw_table_checksum(rsdp, 36), 0);
	const uint8_t *xsdt = table(r, le64(rsdp + 24), "XSDT");
	assert_int_equal(le32(xsdt + 4), HEADER_LEN + 2 * 8);
	return table(r, le64(xsdt + HEADER_LEN + 8 * i), sig);
}

/* Counts the LNRO0005 devices in the DSDT and checks device i's
 * resources: Memory32Fixed (base, 4 KiB) and an extended IRQ. */
static unsigned int dsdt_devices(struct ram *r, const uint64_t *base,
				 const unsigned int *irq)
{
	const uint8_t *fadt = xsdt_entry(r, 0, "FACP");
	const uint8_t *dsdt = table(r, le64(fadt + 140), "DSDT");
	assert_int_equal(le32(fadt + 40), le64(fadt + 140));
	uint32_t len = le32(dsdt + 4);
	unsigned int found = 0;
	for (uint32_t at = HEADER_LEN; at + 8 <= len; at++) {
		if (memcmp(dsdt + at, "LNRO0005", 8))
			continue;
		const uint8_t *mem = memchr(dsdt + at, 0x86, len - at);
		assert_non_null(mem);
		assert_int_equal(le32(mem + 4), base[found]);
		assert_int_equal(le32(mem + 8), 0x1000);
		assert_int_equal(mem[12], 0x89); /* extended interrupt */
		assert_int_equal(mem[16], 1);    /* one IRQ */
		assert_int_equal(le32(mem + 17), irq[found]);
		found++;
	}
	return found;
}

static void test_tables_link_and_sum(void **state)
{
	struct ram *r = *state;
	const struct acpi_mmio_dev devs[] = {{0xfed00000, 0x1000, 5},
					     {0xfed01000, 0x1000, 6}};
	assert_int_equal(acpi_write(&r->mem, 3, devs, 2), 0);
	const uint8_t *fadt = xsdt_entry(r, 0, "FACP");
	assert_int_equal(fadt[8], 6); /* revision */
	const uint8_t *facs = r->bytes + le32(fadt + 36);
	assert_memory_equal(facs, "FACS", 4);
	assert_int_equal((facs - r->bytes) % 64, 0);
	/* Not hardware-reduced, with the PM1 block and the SCI. */
	assert_int_equal(le32(fadt + 112) & (1u << 20), 0);
	assert_int_equal(le32(fadt + 56), ACPI_PM_PORT);
	assert_int_equal(le32(fadt + 64), ACPI_PM_PORT + 4);
	assert_int_equal(fadt[46], ACPI_SCI_IRQ);
	assert_int_equal(le32(fadt + 48), 0); /* no SMI: always ACPI mode */
	assert_int_equal(fadt[109] & 3, 3);   /* legacy devices, 8042 */

	const uint64_t base[] = {0xfed00000, 0xfed01000};
	const unsigned int irq[] = {5, 6};
	assert_int_equal(dsdt_devices(r, base, irq), 2);
}

static void test_madt(void **state)
{
	struct ram *r = *state;
	assert_int_equal(acpi_write(&r->mem, 4, NULL, 0), 0);
	const uint8_t *madt = xsdt_entry(r, 1, "APIC");
	assert_int_equal(le32(madt + 36), LAPIC_ADDR);
	assert_int_equal(le32(madt + 40), 1); /* PC-AT compatible */
	unsigned int cpus = 0, ioapics = 0;
	for (uint32_t at = 44; at < le32(madt + 4); at += madt[at + 1]) {
		assert_true(madt[at + 1] >= 2);
		if (madt[at] == 0) {
			assert_int_equal(madt[at + 3], cpus); /* APIC id */
			assert_int_equal(le32(madt + at + 4), 1);
			cpus++;
		} else if (madt[at] == 1) {
			assert_int_equal(le32(madt + at + 4), IOAPIC_ADDR);
			assert_int_equal(le32(madt + at + 8), 0); /* GSI base */
			ioapics++;
		}
	}
	assert_int_equal(cpus, 4);
	assert_int_equal(ioapics, 1);
	assert_int_equal(dsdt_devices(r, NULL, NULL), 0);
}

/* Enough devices that the DSDT's scope needs a two-byte PkgLength. */
static void test_many_devices(void **state)
{
	struct ram *r = *state;
	struct acpi_mmio_dev devs[ACPI_MAX_DEVS];
	uint64_t base[ACPI_MAX_DEVS];
	unsigned int irq[ACPI_MAX_DEVS];
	for (unsigned int i = 0; i < ACPI_MAX_DEVS; i++) {
		base[i] = 0xfed00000 + 0x1000 * i;
		irq[i] = 5 + i % 8;
		devs[i] = (struct acpi_mmio_dev){base[i], 0x1000, irq[i]};
	}
	assert_int_equal(acpi_write(&r->mem, 1, devs, ACPI_MAX_DEVS), 0);
	assert_int_equal(dsdt_devices(r, base, irq), ACPI_MAX_DEVS);
	const uint8_t *fadt = xsdt_entry(r, 0, "FACP");
	const uint8_t *dsdt = r->bytes + le32(fadt + 40);
	assert_int_equal(dsdt[HEADER_LEN], 0x10);                 /* Scope */
	assert_int_equal(dsdt[HEADER_LEN + 1] >> 6, 1);           /* 2 bytes */
	uint32_t pkglen = (dsdt[HEADER_LEN + 1] & 0xf) | dsdt[HEADER_LEN + 2] << 4;
	assert_int_equal(HEADER_LEN + 1 + pkglen, le32(dsdt + 4));
}

static void test_limits(void **state)
{
	struct ram *r = *state;
	struct acpi_mmio_dev devs[ACPI_MAX_DEVS + 1] = {0};
	assert_int_equal(acpi_write(&r->mem, 0, devs, 1), -EINVAL);
	assert_int_equal(acpi_write(&r->mem, MPTABLE_MAX_CPUS + 1, devs, 1),
			 -EINVAL);
	assert_int_equal(acpi_write(&r->mem, 1, devs, ACPI_MAX_DEVS + 1),
			 -EINVAL);
	struct guest_mem none = {0};
	assert_int_equal(acpi_write(&none, 1, devs, 1), -EFAULT);
}

static void test_pm_registers(void **state)
{
	(void)state;
	struct acpi_pm pm = {0};
	uint16_t v = 0xffff;
	acpi_pm_io(&pm, 0, false, (uint8_t *)&v, 2); /* status */
	assert_int_equal(v, 0);
	v = 0x0121;
	acpi_pm_io(&pm, 2, true, (uint8_t *)&v, 2); /* enable */
	v = 0;
	acpi_pm_io(&pm, 2, false, (uint8_t *)&v, 2);
	assert_int_equal(v, 0x0121);
	acpi_pm_io(&pm, 4, false, (uint8_t *)&v, 2); /* control */
	assert_int_equal(v, 1);                      /* SCI_EN */
	v = 0x2000;                                  /* SLP_EN: ignored */
	acpi_pm_io(&pm, 4, true, (uint8_t *)&v, 2);
	acpi_pm_io(&pm, 4, false, (uint8_t *)&v, 2);
	assert_int_equal(v, 1);
	uint8_t b = 0xff;
	acpi_pm_io(&pm, 1, false, &b, 1);
	assert_int_equal(b, 0);
	uint32_t l = 0xffffffff; /* wider than a register, or unaligned */
	acpi_pm_io(&pm, 0, false, (uint8_t *)&l, 4);
	assert_int_equal(l, 0);
	acpi_pm_io(&pm, 3, false, (uint8_t *)&v, 2);
	assert_int_equal(v, 0);
	assert_int_equal(pm.enable, 0x0121);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tables_link_and_sum, setup, teardown),
		cmocka_unit_test_setup_teardown(test_madt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test(test_pm_registers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
