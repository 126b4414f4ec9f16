/* MP table builder: processors, ISA bus, I/O APIC, interrupt sources. */
#include "arch/x86/mptable.h"

#include <errno.h>
#include <string.h>

#include "arch/x86/fw_table.h"

/* The MP spec's structures: not part of any UAPI header. */
struct mpf_floating {
	char signature[4];
	uint32_t physptr;
	uint8_t length; /* in 16-byte units */
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t feature[5];
} __attribute__((packed));

struct mpc_header {
	char signature[4];
	uint16_t length;
	uint8_t spec_rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oem_ptr;
	uint16_t oem_size;
	uint16_t entry_count;
	uint32_t lapic_addr;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

struct mpc_cpu {
	uint8_t type, apic_id, apic_ver, cpu_flags;
	uint32_t signature, features, reserved[2];
} __attribute__((packed));

struct mpc_bus {
	uint8_t type, bus_id;
	char bus_type[6];
} __attribute__((packed));

struct mpc_ioapic {
	uint8_t type, apic_id, apic_ver, flags;
	uint32_t addr;
} __attribute__((packed));

struct mpc_intsrc {
	uint8_t type, irq_type;
	uint16_t irq_flags;
	uint8_t src_bus, src_irq, dst_apic, dst_irq;
} __attribute__((packed));

enum { MP_PROCESSOR, MP_BUS, MP_IOAPIC, MP_INTSRC, MP_LINTSRC };
enum { MP_INT = 0, MP_NMI = 1, MP_EXTINT = 3 };
#define CPU_ENABLED 1
#define CPU_BOOTPROCESSOR 2
#define LAPIC_VERSION 0x14
#define IOAPIC_VERSION 0x11
#define CPU_SIGNATURE 0x600 /* family 6 */
#define CPU_FEATURES 0x201  /* FPU, APIC */
#define ISA_BUS_ID 0
#define ISA_IRQS 16
#define ALL_LAPICS 0xff

int mptable_write(const struct guest_mem *mem, unsigned int nr_cpus)
{
	if (nr_cpus == 0 || nr_cpus > MPTABLE_MAX_CPUS)
		return -EINVAL;
	size_t entries = nr_cpus + 2 + ISA_IRQS + 2;
	size_t table_len = sizeof(struct mpc_header) +
			   nr_cpus * sizeof(struct mpc_cpu) +
			   sizeof(struct mpc_bus) + sizeof(struct mpc_ioapic) +
			   (ISA_IRQS + 2) * sizeof(struct mpc_intsrc);
	size_t total = sizeof(struct mpf_floating) + table_len;
	uint8_t *base = guest_ptr(mem, MPTABLE_ADDR, total);
	if (!base)
		return -EFAULT;
	memset(base, 0, total);

	struct mpf_floating *mpf = (struct mpf_floating *)base;
	uint8_t *table = base + sizeof(*mpf);
	struct mpc_header *hdr = (struct mpc_header *)table;
	uint8_t *p = table + sizeof(*hdr);
	uint8_t ioapic_id = (uint8_t)nr_cpus;

	for (unsigned int i = 0; i < nr_cpus; i++) {
		struct mpc_cpu cpu = {
			.type = MP_PROCESSOR, .apic_id = (uint8_t)i,
			.apic_ver = LAPIC_VERSION,
			.cpu_flags = CPU_ENABLED | (i == 0 ? CPU_BOOTPROCESSOR : 0),
			.signature = CPU_SIGNATURE, .features = CPU_FEATURES,
		};
		memcpy(p, &cpu, sizeof(cpu));
		p += sizeof(cpu);
	}
	struct mpc_bus bus = {.type = MP_BUS, .bus_id = ISA_BUS_ID};
	memcpy(bus.bus_type, "ISA   ", 6);
	memcpy(p, &bus, sizeof(bus));
	p += sizeof(bus);
	struct mpc_ioapic ioapic = {.type = MP_IOAPIC, .apic_id = ioapic_id,
				    .apic_ver = IOAPIC_VERSION, .flags = 1,
				    .addr = IOAPIC_ADDR};
	memcpy(p, &ioapic, sizeof(ioapic));
	p += sizeof(ioapic);
	/* ISA IRQ n arrives on I/O APIC pin n: KVM's default GSI routing. */
	for (uint8_t irq = 0; irq < ISA_IRQS; irq++) {
		struct mpc_intsrc src = {.type = MP_INTSRC, .irq_type = MP_INT,
					 .src_bus = ISA_BUS_ID, .src_irq = irq,
					 .dst_apic = ioapic_id, .dst_irq = irq};
		memcpy(p, &src, sizeof(src));
		p += sizeof(src);
	}
	/* The legacy PIC on LINT0 and NMI on LINT1 of every local APIC. */
	struct mpc_intsrc lint[2] = {
		{.type = MP_LINTSRC, .irq_type = MP_EXTINT,
		 .dst_apic = ALL_LAPICS, .dst_irq = 0},
		{.type = MP_LINTSRC, .irq_type = MP_NMI,
		 .dst_apic = ALL_LAPICS, .dst_irq = 1},
	};
	memcpy(p, lint, sizeof(lint));

	memcpy(hdr->signature, "PCMP", 4);
	hdr->length = (uint16_t)table_len;
	hdr->spec_rev = 4;
	memcpy(hdr->oem, "FSVM    ", 8);
	memcpy(hdr->product, "FSVM MPTABLE", 12);
	hdr->entry_count = (uint16_t)entries;
	hdr->lapic_addr = LAPIC_ADDR;
	hdr->checksum = fw_table_checksum(table, table_len);

	memcpy(mpf->signature, "_MP_", 4);
	mpf->physptr = MPTABLE_ADDR + sizeof(*mpf);
	mpf->length = 1;
	mpf->spec_rev = 4;
	mpf->checksum = fw_table_checksum(mpf, sizeof(*mpf));
	return (int)total;
}
