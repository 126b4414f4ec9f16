/* The x86 side of the core (core/arch.h): the host's KVM, the VM's
 * in-kernel PIC, I/O APIC and PIT and their interrupt routes, port I/O
 * exits, and each vCPU's CPUID and local APIC. */
#include "core/arch.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "arch/x86/arch_vm.h"
#include "arch/x86/memory_map.h"
#include "core/kvm.h"
#include "core/vcpu.h"

#define KVM_MAX_CPUID_ENTRIES 256
#define RFLAGS_IF (1u << 9)
#define CPUID_HYPERVISOR_BIT (1u << 31)
#define CPUID_TSC_DEADLINE_BIT (1u << 24)
#define APIC_LVT_LINT0 0x350
#define APIC_LVT_LINT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7
#define PIC_IRQS 16
#define PIC_CASCADE_IRQ 2

static bool cpuinfo_has_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	size_t flen = strlen(flag);
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		for (char *p = strstr(line, flag); p; p = strstr(p + 1, flag))
			if (p[-1] == ' ' && (p[flen] == ' ' || p[flen] == '\n'))
				found = true;
		break;
	}
	fclose(f);
	return found;
}

bool arch_runs_stock_kernels(const char **why)
{
	if (access("/sys/module/kvm_pvm", F_OK) == 0) {
		*why = "this host's KVM is PVM, which cannot run a stock Linux kernel; "
		       "run fsvm inside the lab (tools/lab -- ./fsvm run ...) or on a host with VMX/SVM";
		return false;
	}
	if (!cpuinfo_has_flag("vmx") && !cpuinfo_has_flag("svm")) {
		*why = "this CPU shows no VMX/SVM: KVM cannot run a stock Linux kernel here";
		return false;
	}
	return true;
}

static int kvm_get_supported_cpuid(struct vm *vm)
{
	struct kvm_cpuid2 *cpuid =
		calloc(1, sizeof(*cpuid) + KVM_MAX_CPUID_ENTRIES *
						   sizeof(struct kvm_cpuid_entry2));
	if (!cpuid)
		return -ENOMEM;
	cpuid->nent = KVM_MAX_CPUID_ENTRIES;
	if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) < 0) {
		int err = -errno;
		free(cpuid);
		return err;
	}
	vm->arch->cpuid = cpuid;
	return 0;
}

const struct kvm_cpuid_entry2 *x86_supported_cpuid(const struct arch_vm *a,
						   uint32_t function,
						   uint32_t index)
{
	for (unsigned int i = 0; i < a->cpuid->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &a->cpuid->entries[i];
		if (e->function == function &&
		    (!(e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) ||
		     e->index == index))
			return e;
	}
	return NULL;
}

int arch_vm_init(struct vm *vm, const char **why)
{
	if (!kvm_has(vm, KVM_CAP_EXT_CPUID) || !kvm_has(vm, KVM_CAP_PIT2)) {
		*why = "KVM lacks KVM_GET_SUPPORTED_CPUID or the in-kernel PIT";
		return -ENOTSUP;
	}
	vm->arch = calloc(1, sizeof(*vm->arch));
	if (!vm->arch) {
		*why = "out of memory";
		return -ENOMEM;
	}
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR) < 0) {
		*why = "KVM_SET_TSS_ADDR failed";
		return -errno;
	}
	uint64_t identity = KVM_IDENTITY_MAP_ADDR;
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &identity) < 0) {
		*why = "KVM_SET_IDENTITY_MAP_ADDR failed";
		return -errno;
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		*why = "KVM_CREATE_IRQCHIP failed";
		return -errno;
	}
	struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		*why = "KVM_CREATE_PIT2 failed";
		return -errno;
	}
	int err = kvm_get_supported_cpuid(vm);
	if (err)
		*why = "KVM_GET_SUPPORTED_CPUID failed";
	return err;
}

/* Each ISA IRQ on both PICs (but the cascade) and the I/O APIC's pins, as
 * KVM's default table has them. */
unsigned int arch_irq_routes(struct kvm_irq_routing *table)
{
	for (unsigned int gsi = 0; gsi < KVM_IOAPIC_NUM_PINS; gsi++) {
		if (gsi < PIC_IRQS && gsi != PIC_CASCADE_IRQ)
			table->entries[table->nr++] = (struct kvm_irq_routing_entry){
				.gsi = gsi,
				.type = KVM_IRQ_ROUTING_IRQCHIP,
				.u.irqchip = {.irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER
								: KVM_IRQCHIP_PIC_SLAVE,
					      .pin = gsi % 8},
			};
		table->entries[table->nr++] = (struct kvm_irq_routing_entry){
			.gsi = gsi,
			.type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip = {.irqchip = KVM_IRQCHIP_IOAPIC, .pin = gsi},
		};
	}
	return KVM_IOAPIC_NUM_PINS;
}

void arch_vm_destroy(struct vm *vm)
{
	if (vm->arch)
		free(vm->arch->cpuid);
	free(vm->arch);
	vm->arch = NULL;
}

static unsigned int order_base_2(unsigned int n)
{
	unsigned int shift = 0;
	while ((1u << shift) < n)
		shift++;
	return shift;
}

/* CPUID as KVM supports it, with this vCPU's APIC id and the topology of
 * nr_vcpus single-threaded cores in one package. KVM leaves the TSC-deadline
 * bit to us: without it Linux runs its tick off the APIC's count register. */
static int vcpu_set_cpuid(struct vcpu *vcpu)
{
	const struct kvm_cpuid2 *supported = vcpu->vm->arch->cpuid;
	size_t bytes = sizeof(*supported) +
		       supported->nent * sizeof(supported->entries[0]);
	struct kvm_cpuid2 *cpuid = malloc(bytes);
	if (!cpuid)
		return -ENOMEM;
	memcpy(cpuid, supported, bytes);

	unsigned int n = vcpu->vm->nr_vcpus;
	bool tsc_deadline = kvm_has(vcpu->vm, KVM_CAP_TSC_DEADLINE_TIMER);
	for (unsigned int i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0x0000ffff) | (vcpu->id << 24) |
				 ((n & 0xff) << 16);
			e->ecx |= CPUID_HYPERVISOR_BIT;
			if (tsc_deadline)
				e->ecx |= CPUID_TSC_DEADLINE_BIT;
			break;
		case 0xb:
		case 0x1f:
			e->edx = vcpu->id;
			if (e->index == 0) {
				e->eax = 0;
				e->ebx = 1;
				e->ecx = (1u << 8) | 0;
			} else if (e->index == 1) {
				e->eax = order_base_2(n);
				e->ebx = n;
				e->ecx = (2u << 8) | 1;
			} else {
				e->eax = e->ebx = 0;
				e->ecx = e->index;
			}
			break;
		default:
			break;
		}
	}
	int err = ioctl(vcpu->fd, KVM_SET_CPUID2, cpuid) < 0 ? -errno : 0;
	free(cpuid);
	return err;
}

/* LINT0 takes the legacy PIC (ExtINT), LINT1 NMIs, as firmware leaves it. */
static int vcpu_set_lint(struct vcpu *vcpu)
{
	struct kvm_lapic_state lapic;
	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) < 0)
		return -errno;
	uint32_t *lint0 = (uint32_t *)&lapic.regs[APIC_LVT_LINT0];
	uint32_t *lint1 = (uint32_t *)&lapic.regs[APIC_LVT_LINT1];
	*lint0 = (*lint0 & ~0x700u) | (APIC_MODE_EXTINT << 8);
	*lint1 = (*lint1 & ~0x700u) | (APIC_MODE_NMI << 8);
	return ioctl(vcpu->fd, KVM_SET_LAPIC, &lapic) < 0 ? -errno : 0;
}

/* Port I/O goes to the VM's port bus; a read nothing answers is all ones,
 * as on a bus nobody drives. */
static void vcpu_handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;

	for (uint32_t i = 0; i < run->io.count; i++) {
		if (!io_bus_dispatch(&vcpu->vm->pio, run->io.port, is_write,
				     data, run->io.size) &&
		    !is_write)
			memset(data, 0xff, run->io.size);
		data += run->io.size;
	}
}

bool arch_vcpu_handle_exit(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	if (run->exit_reason == KVM_EXIT_IO) {
		vcpu_handle_io(vcpu);
		return true;
	}
	vm_stop(vcpu->vm, EXIT_VMM_ERROR, EXIT_REASON_VCPU_FAILED,
		"vCPU %u: unexpected KVM exit %u",
		vcpu->id, run->exit_reason);
	return false;
}

/* Not running, with interrupts off: only an NMI or INIT could wake it. So
 * the kernel leaves every CPU once it has halted the machine (power-off
 * without ACPI halts too); an idle CPU halts with interrupts on. */
bool arch_vcpu_stopped_for_good(struct vcpu *vcpu)
{
	struct kvm_mp_state mp;
	struct kvm_regs regs;
	return ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp) == 0 &&
	       mp.mp_state != KVM_MP_STATE_RUNNABLE &&
	       ioctl(vcpu->fd, KVM_GET_REGS, &regs) == 0 &&
	       !(regs.rflags & RFLAGS_IF);
}

int arch_vcpu_init(struct vcpu *vcpu, const char **why)
{
	int err = vcpu_set_cpuid(vcpu);
	if (err) {
		*why = "KVM_SET_CPUID2 failed";
		return err;
	}
	err = vcpu_set_lint(vcpu);
	if (err)
		*why = "cannot program the local APIC";
	return err;
}
