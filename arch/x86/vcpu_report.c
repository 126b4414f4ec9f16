/* Where a guest that never finished was (core/arch.h): each vCPU's place,
 * whether it waited for an interrupt, its local APIC timer and the
 * interrupts it had pending; the I/O APIC's pins. Read after the vCPU
 * threads are joined, so KVM's state holds still. */
#include "core/arch.h"

#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/vcpu.h"

#define RFLAGS_IF (1u << 9)
#define MSR_IA32_TSC 0x10
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define APIC_SPIV 0xf0
#define APIC_SPIV_ENABLED (1u << 8)
#define APIC_ISR 0x100
#define APIC_IRR 0x200
#define APIC_LVTT 0x320
#define APIC_TMICT 0x380
#define APIC_TMCCT 0x390
#define APIC_LVT_MASKED (1u << 16)

/* Appends to a line that may already be full (then it stays cut). */
struct line {
	char *buf;
	size_t len, n;
};

__attribute__((format(printf, 2, 3))) static void add(struct line *l,
						      const char *fmt, ...)
{
	if (l->n >= l->len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(l->buf + l->n, l->len - l->n, fmt, ap);
	va_end(ap);
	l->n += n > 0 ? (size_t)n : 0;
}

static uint32_t apic_reg(const struct kvm_lapic_state *s, unsigned int off)
{
	uint32_t v;
	memcpy(&v, &s->regs[off], sizeof(v));
	return v;
}

/* The vectors set in one of the APIC's 256-bit registers (IRR, ISR). */
static void add_vectors(struct line *l, const char *name,
			const struct kvm_lapic_state *s, unsigned int base)
{
	add(l, ", %s", name);
	bool any = false;
	for (int v = 255; v >= 0; v--)
		if (apic_reg(s, base + (unsigned int)(v / 32) * 0x10) &
		    (1u << (v % 32))) {
			add(l, "%s0x%x", any ? "," : " ", (unsigned int)v);
			any = true;
		}
	if (!any)
		add(l, " none");
}

static int get_msrs(int fd, uint64_t *tsc, uint64_t *deadline)
{
	union {
		struct kvm_msrs h;
		char room[sizeof(struct kvm_msrs) +
			  2 * sizeof(struct kvm_msr_entry)];
	} m = {.h.nmsrs = 2};
	m.h.entries[0].index = MSR_IA32_TSC;
	m.h.entries[1].index = MSR_IA32_TSC_DEADLINE;
	if (ioctl(fd, KVM_GET_MSRS, &m) != 2)
		return -1;
	*tsc = m.h.entries[0].data;
	*deadline = m.h.entries[1].data;
	return 0;
}

/* The local APIC timer: a guest waiting in HLT for a tick that is not
 * armed, or long overdue, waits for ever. */
static void add_timer(struct line *l, int fd, const struct kvm_lapic_state *s)
{
	uint32_t lvtt = apic_reg(s, APIC_LVTT);
	add(l, "; timer %s", lvtt & APIC_LVT_MASKED ? "masked, " : "");
	switch ((lvtt >> 17) & 3) {
	case 2: {
		uint64_t tsc, deadline;
		int khz = ioctl(fd, KVM_GET_TSC_KHZ);
		if (get_msrs(fd, &tsc, &deadline) < 0)
			add(l, "TSC deadline (unreadable)");
		else if (!deadline)
			add(l, "TSC deadline, not armed");
		else if (khz <= 0)
			add(l, "TSC deadline %#llx, TSC %#llx",
			    (unsigned long long)deadline,
			    (unsigned long long)tsc);
		else
			add(l, "TSC deadline, %s %.1f ms",
			    deadline > tsc ? "due in" : "overdue by",
			    (double)(deadline > tsc ? deadline - tsc
						    : tsc - deadline) /
				    khz);
		break;
	}
	case 0:
	case 1: {
		uint32_t initial = apic_reg(s, APIC_TMICT);
		const char *mode = (lvtt >> 17) & 1 ? "periodic" : "one-shot";
		if (!initial)
			add(l, "%s, not armed", mode);
		else
			add(l, "%s, count %u of %u", mode,
			    apic_reg(s, APIC_TMCCT), initial);
		break;
	}
	default:
		add(l, "in a reserved mode");
	}
	add(l, " (vector 0x%x)", lvtt & 0xff);
}

static const char *mp_state_name(uint32_t state)
{
	switch (state) {
	case KVM_MP_STATE_RUNNABLE:
		return "running";
	case KVM_MP_STATE_HALTED:
		return "halted";
	case KVM_MP_STATE_UNINITIALIZED:
	case KVM_MP_STATE_INIT_RECEIVED:
		return "never started (waiting for INIT/SIPI)";
	case KVM_MP_STATE_SIPI_RECEIVED:
		return "starting";
	default:
		return "in an unknown state";
	}
}

void arch_vcpu_report(struct vcpu *vcpu, char *buf, size_t len)
{
	struct line l = {.buf = buf, .len = len};
	struct kvm_mp_state mp;
	struct kvm_regs regs;
	buf[0] = '\0';
	if (ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0) {
		add(&l, "state unreadable");
		return;
	}
	add(&l, "%s, interrupts %s, at RIP %#llx", mp_state_name(mp.mp_state),
	    regs.rflags & RFLAGS_IF ? "on" : "off",
	    (unsigned long long)regs.rip);
	struct kvm_vcpu_events ev;
	if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) == 0) {
		if (ev.interrupt.injected)
			add(&l, ", injecting vector 0x%x", ev.interrupt.nr);
		if (ev.nmi.pending || ev.nmi.injected)
			add(&l, ", NMI pending");
		if (ev.exception.injected || ev.exception.pending)
			add(&l, ", exception %u pending", ev.exception.nr);
	}
	struct kvm_lapic_state apic;
	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &apic) < 0)
		return;
	if (!(apic_reg(&apic, APIC_SPIV) & APIC_SPIV_ENABLED))
		add(&l, "; local APIC disabled");
	add_timer(&l, vcpu->fd, &apic);
	add_vectors(&l, "interrupts requested", &apic, APIC_IRR);
	add_vectors(&l, "in service", &apic, APIC_ISR);
}

void arch_vm_report(struct vm *vm, char *buf, size_t len)
{
	struct line l = {.buf = buf, .len = len};
	struct kvm_irqchip chip = {.chip_id = KVM_IRQCHIP_IOAPIC};
	buf[0] = '\0';
	if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip) < 0) {
		add(&l, "I/O APIC unreadable");
		return;
	}
	const struct kvm_ioapic_state *io = &chip.chip.ioapic;
	add(&l, "I/O APIC pins in use:");
	bool any = false;
	for (unsigned int pin = 0; pin < KVM_IOAPIC_NUM_PINS; pin++) {
		const typeof(io->redirtbl[0].fields) *f = &io->redirtbl[pin].fields;
		bool raised = io->irr & (1u << pin);
		if (f->mask && !raised)
			continue;
		add(&l, "%s %u (vector 0x%x, %s%s%s%s)", any ? "," : "", pin,
		    f->vector, f->trig_mode ? "level" : "edge",
		    f->mask ? ", masked" : "",
		    f->remote_irr ? ", awaiting EOI" : "",
		    raised ? ", raised" : "");
		any = true;
	}
	if (!any)
		add(&l, " none");
}
