/* Unit tests for vmm/mptable: parse back the MP floating pointer and configuration table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/mptable.h"

#define RAM_SIZE 0x100000 /* the first MiB: where the table lives */
#define MPF_LEN 16
#define MPC_HEADER_LEN 44
#define MPC_CPU_LEN 20
#define MPC_OTHER_LEN 8
#define ISA_IRQS 16

enum { MP_PROCESSOR, MP_BUS, MP_IOAPIC, MP_INTSRC, MP_LINTSRC };

/* What a walk over the table's entries found. */
struct mp_summary {
	unsigned int cpus, buses, ioapics, intsrcs, lintsrcs, entries;
	unsigned int bsp_count;
	uint8_t ioapic_id;
	uint32_t ioapic_addr;
	uint16_t isa_irq_seen; /* bit n: ISA IRQ n routed to pin n */
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint8_t byte_sum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum += p[i];
	return sum;
}

static int setup_ram(void **state)
{
	uint8_t *ram = calloc(1, RAM_SIZE);
	if (!ram)
		return -1;
	*state = ram;
	return 0;
}

static int teardown_ram(void **state)
{
	free(*state);
	return 0;
}

static struct guest_mem ram_mem(uint8_t *ram, uint64_t size)
{
	struct guest_mem mem = {0};
	assert_int_equal(guest_mem_add(&mem, 0, size, ram), 0);
	return mem;
}

/* Checks the floating pointer; returns the configuration table. */
static const uint8_t *check_floating(const uint8_t *ram)
{
	const uint8_t *mpf = ram + MPTABLE_ADDR;
	assert_memory_equal(mpf, "_MP_", 4);
	assert_int_equal(mpf[8], 1); /* length in 16-byte units */
	assert_int_equal(mpf[9], 4); /* spec 1.4 */
	assert_int_equal(byte_sum(mpf, MPF_LEN), 0);
	assert_int_equal(mpf[11], 0); /* feature 1: a table, no default config */
	uint32_t physptr = le32(mpf + 4);
	assert_true(physptr >= MPTABLE_ADDR + MPF_LEN);
	assert_true(physptr < RAM_SIZE - MPC_HEADER_LEN);
	return ram + physptr;
}

static void check_cpu(const uint8_t *e, unsigned int index,
		      struct mp_summary *s)
{
	assert_int_equal(e[1], index); /* APIC ids 0..n-1, in order */
	assert_true(e[3] & 1);         /* enabled */
	if (e[3] & 2)
		s->bsp_count++;
	assert_int_equal(!!(e[3] & 2), index == 0);
	s->cpus++;
}

static void check_intsrc(const uint8_t *e, struct mp_summary *s)
{
	assert_int_equal(e[1], 0); /* INT, not NMI/ExtINT */
	assert_int_equal(e[4], 0); /* ISA bus */
	assert_int_equal(e[6], s->ioapic_id);
	assert_int_equal(e[5], e[7]); /* IRQ n on pin n */
	assert_true(e[5] < ISA_IRQS);
	s->isa_irq_seen |= (uint16_t)(1u << e[5]);
	s->intsrcs++;
}

/* Walks every entry, checking each against the processor count. */
static struct mp_summary walk_entries(const uint8_t *mpc)
{
	struct mp_summary s = {0};
	uint16_t len = le16(mpc + 4);
	const uint8_t *e = mpc + MPC_HEADER_LEN, *end = mpc + len;
	while (e < end) {
		s.entries++;
		switch (e[0]) {
		case MP_PROCESSOR:
			check_cpu(e, s.cpus, &s);
			e += MPC_CPU_LEN;
			continue;
		case MP_BUS:
			assert_memory_equal(e + 2, "ISA   ", 6);
			s.buses++;
			break;
		case MP_IOAPIC:
			s.ioapic_id = e[1];
			assert_true(e[3] & 1); /* usable */
			s.ioapic_addr = le32(e + 4);
			s.ioapics++;
			break;
		case MP_INTSRC:
			check_intsrc(e, &s);
			break;
		case MP_LINTSRC:
			assert_int_equal(e[6], 0xff); /* every local APIC */
			s.lintsrcs++;
			break;
		default:
			fail_msg("unknown MP entry type %u", e[0]);
		}
		e += MPC_OTHER_LEN;
	}
	assert_ptr_equal(e, end); /* no entry runs past the table */
	return s;
}

static void check_table(const uint8_t *ram, unsigned int n, int written)
{
	const uint8_t *mpc = check_floating(ram);
	assert_memory_equal(mpc, "PCMP", 4);
	uint16_t len = le16(mpc + 4);
	assert_int_equal(mpc[6], 4);
	assert_int_equal(byte_sum(mpc, len), 0);
	assert_int_equal(le32(mpc + 36), LAPIC_ADDR);
	assert_int_equal(le16(mpc + 40), 0); /* no extended table */
	assert_int_equal(written, (mpc - (ram + MPTABLE_ADDR)) + len);

	struct mp_summary s = walk_entries(mpc);
	assert_int_equal(le16(mpc + 34), s.entries);
	assert_int_equal(s.cpus, n);
	assert_int_equal(s.bsp_count, 1);
	assert_int_equal(s.buses, 1);
	assert_int_equal(s.ioapics, 1);
	assert_int_equal(s.ioapic_id, n); /* after the last local APIC */
	assert_int_equal(s.ioapic_addr, IOAPIC_ADDR);
	assert_int_equal(s.intsrcs, ISA_IRQS);
	assert_int_equal(s.isa_irq_seen, 0xffff);
	assert_int_equal(s.lintsrcs, 2);
}

static void write_and_check(uint8_t *ram, unsigned int n)
{
	struct guest_mem mem = ram_mem(ram, RAM_SIZE);
	memset(ram, 0xee, RAM_SIZE); /* stale bytes must not leak in */
	int written = mptable_write(&mem, n);
	assert_true(written > 0);
	check_table(ram, n, written);
}

static void test_one_cpu(void **state)
{
	write_and_check(*state, 1);
}

static void test_two_cpus(void **state)
{
	write_and_check(*state, 2);
}

static void test_max_cpus(void **state)
{
	write_and_check(*state, MPTABLE_MAX_CPUS);
}

static void test_table_stays_in_bios_area(void **state)
{
	struct guest_mem mem = ram_mem(*state, RAM_SIZE);
	int written = mptable_write(&mem, MPTABLE_MAX_CPUS);
	assert_true(written > 0);
	assert_true(MPTABLE_ADDR + (unsigned int)written <= RAM_SIZE);
	assert_int_equal(MPTABLE_ADDR % 16, 0); /* floating pointer alignment */
}

static void test_rejects_bad_cpu_counts(void **state)
{
	uint8_t *ram = *state;
	struct guest_mem mem = ram_mem(ram, RAM_SIZE);
	memset(ram, 0, RAM_SIZE);
	assert_int_equal(mptable_write(&mem, 0), -EINVAL);
	assert_int_equal(mptable_write(&mem, MPTABLE_MAX_CPUS + 1), -EINVAL);
	assert_int_equal(ram[MPTABLE_ADDR], 0); /* nothing written */
}

static void test_needs_ram_at_table(void **state)
{
	struct guest_mem mem = ram_mem(*state, MPTABLE_ADDR + 64);
	assert_int_equal(mptable_write(&mem, 1), -EFAULT);
}

int main(void)
{
	const struct CMUnitTest mptable[] = {
		cmocka_unit_test(test_one_cpu),
		cmocka_unit_test(test_two_cpus),
		cmocka_unit_test(test_max_cpus),
		cmocka_unit_test(test_table_stays_in_bios_area),
		cmocka_unit_test(test_rejects_bad_cpu_counts),
		cmocka_unit_test(test_needs_ram_at_table),
	};
	return cmocka_run_group_tests(mptable, setup_ram, teardown_ram);
}
