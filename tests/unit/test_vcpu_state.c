/* Tests for a vCPU's and the VM's KVM state (arch/x86/snapshot_state.c)
 * on a real KVM VM: a real-mode guest that programs the PIT, then counts
 * and reads a port, is stopped at a port read halfway, settled, saved with
 * its memory, and restored into a fresh VM "an hour later", where it runs
 * to the end as an uninterrupted run does, its timers and clocks carried
 * and moved forward. Then hostile blobs: cut short, counts and lengths
 * flipped, another version, another host's CPU: each refused with a line.
 * /dev/kvm is required: without it these tests fail. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "arch/x86/memory_map.h"
#include "arch/x86/snapshot_state.h"
#include "core/arch.h"
#include "core/kvm.h"
#include "core/vcpu.h"

#define RAM_SIZE (2u << 20)
#define CODE_GPA 0x1000
#define DATA_GPA 0x2000
#define PORT_READ 0x12 /* each read gives READ_VALUE */
#define PORT_DONE 0x11
#define READ_VALUE 7
#define COUNT 100
#define STOP_AT 50 /* the read the first VM stops at */
#define PIT_COUNT 0x2e9b
#define APIC_LVTT 0x320
#define APIC_TMICT 0x380
#define APIC_TDCR 0x3e0
#define LVTT_VALUE 0x200ec /* periodic, vector 0xec */
#define TMICT_VALUE 0x12345678
#define MSR_IA32_TSC 0x10
#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01
#define PVCLOCK_GPA 0x3000
#define SYSTEM_TIME_VALUE (PVCLOCK_GPA | 1) /* enabled */
#define HOUR_NS (3600ull * 1000000000ull)

/* Real mode: the PIT's channel 0 in mode 2, then bx counts to COUNT,
 * dx sums a port read each time, both stored at DATA_GPA; then the done
 * port and a loop. */
static const uint8_t guest_code[] = {
	0xb0, 0x34,		/* mov al, 0x34 (channel 0, lo/hi, mode 2) */
	0xe6, 0x43,		/* out 0x43, al */
	0xb0, PIT_COUNT & 0xff, /* mov al, low byte */
	0xe6, 0x40,		/* out 0x40, al */
	0xb0, PIT_COUNT >> 8,	/* mov al, high byte */
	0xe6, 0x40,		/* out 0x40, al */
	0x31, 0xdb,		/* xor bx, bx */
	0x31, 0xd2,		/* xor dx, dx */
	/* loop: */
	0x43,			/* inc bx */
	0xe5, PORT_READ,	/* in ax, PORT_READ */
	0x01, 0xc2,		/* add dx, ax */
	0x89, 0x1e, 0x00, 0x20, /* mov [0x2000], bx */
	0x89, 0x16, 0x02, 0x20, /* mov [0x2002], dx */
	0x83, 0xfb, COUNT,	/* cmp bx, COUNT */
	0x75, 0xee,		/* jne loop */
	0xe6, PORT_DONE,	/* out PORT_DONE, al */
	0xeb, 0xfe,		/* jmp $ */
};

struct rig {
	struct vm vm;
	struct vcpu vcpu;
	unsigned int reads;
};

static void rig_make(struct rig *r)
{
	*r = (struct rig){.vm = {.kvm_fd = -1, .vm_fd = -1}};
	const char *why = "";
	int err = kvm_open(&r->vm, &why);
	if (err)
		fail_msg("a KVM VM is required: %s (%s)", why, strerror(-err));
	assert_int_equal(guest_mem_init(&r->vm.mem, RAM_SIZE, RAM_LOW_LIMIT,
					RAM_HIGH_START),
			 0);
	err = kvm_create_vm(&r->vm, &why);
	if (!err) {
		r->vm.nr_vcpus = 1;
		err = vcpu_create(&r->vm, &r->vcpu, 0, &why);
	}
	if (err)
		fail_msg("%s (%s)", why, strerror(-err));
}

static void rig_destroy(struct rig *r)
{
	munmap(r->vcpu.run, (size_t)r->vm.vcpu_mmap_size);
	close(r->vcpu.fd);
	close(r->vm.vm_fd);
	close(r->vm.kvm_fd);
	arch_vm_destroy(&r->vm);
	guest_mem_destroy(&r->vm.mem);
}

/* The guest's code in RAM and its CPU at it, in real mode. */
static void rig_boot(struct rig *r)
{
	assert_int_equal(guest_write(&r->vm.mem, CODE_GPA, guest_code,
				     sizeof(guest_code)),
			 0);
	struct kvm_sregs sregs;
	assert_int_equal(ioctl(r->vcpu.fd, KVM_GET_SREGS, &sregs), 0);
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	assert_int_equal(ioctl(r->vcpu.fd, KVM_SET_SREGS, &sregs), 0);
	struct kvm_regs regs = {.rip = CODE_GPA, .rflags = 2};
	assert_int_equal(ioctl(r->vcpu.fd, KVM_SET_REGS, &regs), 0);
}

/* Runs to the done port (false) or to read number stop_at (true), its
 * value given, the exit not yet completed. */
static bool rig_run(struct rig *r, unsigned int stop_at)
{
	struct kvm_run *run = r->vcpu.run;
	for (;;) {
		if (ioctl(r->vcpu.fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			fail_msg("KVM_RUN: %s", strerror(errno));
		}
		if (run->exit_reason != KVM_EXIT_IO)
			fail_msg("unexpected exit %u", run->exit_reason);
		if (run->io.port == PORT_DONE)
			return false;
		assert_int_equal(run->io.port, PORT_READ);
		assert_int_equal(run->io.direction, KVM_EXIT_IO_IN);
		uint16_t value = READ_VALUE;
		memcpy((uint8_t *)run + run->io.data_offset, &value, sizeof(value));
		if (++r->reads == stop_at)
			return true;
	}
}

static uint32_t lapic_reg(const struct kvm_lapic_state *l, unsigned int off)
{
	uint32_t v;
	memcpy(&v, &l->regs[off], sizeof(v));
	return v;
}

static uint64_t get_msr(struct rig *r, uint32_t index)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = {.h.nmsrs = 1, .e.index = index};
	assert_int_equal(ioctl(r->vcpu.fd, KVM_GET_MSRS, &m), 1);
	return m.e.data;
}

struct saved {
	struct rig ref; /* run to the end without a stop */
	unsigned char *vcpu_blob, *vm_blob;
	size_t vcpu_len, vm_len;
	uint8_t *ram;
	uint64_t tsc, kvmclock;
	uint32_t tsc_khz;
};

/* The first VM: its LAPIC timer and kvmclock MSR set, run to read
 * STOP_AT, settled and saved, then gone. */
static int setup_saved(void **state)
{
	struct saved *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	rig_make(&s->ref);
	rig_boot(&s->ref);
	assert_false(rig_run(&s->ref, 0));

	struct rig a;
	rig_make(&a);
	rig_boot(&a);
	struct kvm_lapic_state lapic;
	assert_int_equal(ioctl(a.vcpu.fd, KVM_GET_LAPIC, &lapic), 0);
	uint32_t v = LVTT_VALUE;
	memcpy(&lapic.regs[APIC_LVTT], &v, 4);
	v = 0xb; /* divide by 1 */
	memcpy(&lapic.regs[APIC_TDCR], &v, 4);
	v = TMICT_VALUE;
	memcpy(&lapic.regs[APIC_TMICT], &v, 4);
	assert_int_equal(ioctl(a.vcpu.fd, KVM_SET_LAPIC, &lapic), 0);
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = {.h.nmsrs = 1,
	       .e = {.index = MSR_KVM_SYSTEM_TIME_NEW, .data = SYSTEM_TIME_VALUE}};
	assert_int_equal(ioctl(a.vcpu.fd, KVM_SET_MSRS, &m), 1);

	assert_true(rig_run(&a, STOP_AT));
	assert_int_equal(vcpu_settle(&a.vcpu), 0);
	assert_int_equal(arch_vcpu_save_state(&a.vcpu, &s->vcpu_blob,
					      &s->vcpu_len),
			 0);
	assert_int_equal(arch_vm_save_state(&a.vm, &s->vm_blob, &s->vm_len), 0);
	s->tsc = get_msr(&a, MSR_IA32_TSC);
	struct kvm_clock_data clock;
	assert_int_equal(ioctl(a.vm.vm_fd, KVM_GET_CLOCK, &clock), 0);
	s->kvmclock = clock.clock;
	s->tsc_khz = (uint32_t)ioctl(a.vcpu.fd, KVM_GET_TSC_KHZ, 0);
	s->ram = malloc(RAM_SIZE);
	assert_non_null(s->ram);
	memcpy(s->ram, a.vm.mem.base, RAM_SIZE);
	rig_destroy(&a);
	*state = s;
	return 0;
}

static int teardown_saved(void **state)
{
	struct saved *s = *state;
	rig_destroy(&s->ref);
	free(s->vcpu_blob);
	free(s->vm_blob);
	free(s->ram);
	free(s);
	return 0;
}

/* The VM blob as if saved an hour ago: its clock part (the last) has the
 * host's realtime then. */
static unsigned char *hour_ago(const struct saved *s)
{
	unsigned char *b = malloc(s->vm_len);
	assert_non_null(b);
	memcpy(b, s->vm_blob, s->vm_len);
	struct kvm_clock_data clock;
	unsigned char *at = b + s->vm_len - sizeof(clock);
	memcpy(&clock, at, sizeof(clock));
	assert_true(clock.flags & KVM_CLOCK_REALTIME);
	clock.realtime -= HOUR_NS;
	memcpy(at, &clock, sizeof(clock));
	return b;
}

static void test_restore_runs_on_to_the_end(void **state)
{
	struct saved *s = *state;
	struct rig b;
	rig_make(&b);
	memcpy(b.vm.mem.base, s->ram, RAM_SIZE);
	char err[256] = "";
	unsigned char *vm_blob = hour_ago(s);
	int r = arch_vm_restore_state(&b.vm, vm_blob, s->vm_len, err, sizeof(err));
	free(vm_blob);
	if (r)
		fail_msg("VM state: %s", err);
	r = arch_vcpu_restore_state(&b.vcpu, s->vcpu_blob, s->vcpu_len, err,
				    sizeof(err));
	if (r)
		fail_msg("vCPU state: %s", err);

	/* Carried: the PIT the guest programmed, the LAPIC timer and the
	 * kvmclock MSR the host set; the clocks an hour on, never back. */
	struct kvm_pit_state2 pit;
	assert_int_equal(ioctl(b.vm.vm_fd, KVM_GET_PIT2, &pit), 0);
	assert_int_equal(pit.channels[0].count, PIT_COUNT);
	assert_int_equal(pit.channels[0].mode, 2);
	struct kvm_lapic_state lapic;
	assert_int_equal(ioctl(b.vcpu.fd, KVM_GET_LAPIC, &lapic), 0);
	assert_int_equal(lapic_reg(&lapic, APIC_LVTT), LVTT_VALUE);
	assert_int_equal(lapic_reg(&lapic, APIC_TDCR), 0xb);
	assert_int_equal(lapic_reg(&lapic, APIC_TMICT), TMICT_VALUE);
	assert_int_equal(get_msr(&b, MSR_KVM_SYSTEM_TIME_NEW), SYSTEM_TIME_VALUE);
	struct kvm_clock_data clock;
	assert_int_equal(ioctl(b.vm.vm_fd, KVM_GET_CLOCK, &clock), 0);
	assert_true(clock.clock >= s->kvmclock + HOUR_NS);
	assert_true(clock.clock < s->kvmclock + HOUR_NS + 600 * 1000000000ull);
	/* PVM runs its guests on the host's own TSC, which KVM cannot move
	 * there: run-all runs this test on a KVM that runs guests (the lab's). */
	assert_true(get_msr(&b, MSR_IA32_TSC) >= s->tsc + 3600ull * s->tsc_khz * 1000);

	/* The read it stopped at was completed before the save: the rest
	 * of the count runs as in one go. */
	b.reads = STOP_AT;
	assert_false(rig_run(&b, 0));
	assert_int_equal(b.reads, COUNT);
	struct kvm_regs got, want;
	assert_int_equal(ioctl(b.vcpu.fd, KVM_GET_REGS, &got), 0);
	assert_int_equal(ioctl(s->ref.vcpu.fd, KVM_GET_REGS, &want), 0);
	assert_int_equal(got.rbx, COUNT);
	assert_int_equal(got.rdx, COUNT * READ_VALUE);
	assert_int_equal(got.rax, want.rax);
	assert_int_equal(got.rip, want.rip);
	assert_int_equal(got.rflags, want.rflags);
	assert_memory_equal(b.vm.mem.base + DATA_GPA,
			    s->ref.vm.mem.base + DATA_GPA, 4);
	/* Elsewhere RAM is the uninterrupted run's, but for the kvmclock's
	 * page, which KVM writes (the reference has no kvmclock). */
	uint32_t pvclock_version;
	memcpy(&pvclock_version, b.vm.mem.base + PVCLOCK_GPA, 4);
	assert_true(pvclock_version != 0);
	assert_memory_equal(b.vm.mem.base, s->ref.vm.mem.base, PVCLOCK_GPA);
	assert_memory_equal(b.vm.mem.base + PVCLOCK_GPA + 4096,
			    s->ref.vm.mem.base + PVCLOCK_GPA + 4096,
			    RAM_SIZE - PVCLOCK_GPA - 4096);
	rig_destroy(&b);
}

/* Refused by the parser and by a restore into a fresh VM, a line said. */
static void assert_vcpu_refused(const unsigned char *buf, size_t len,
				const char *says)
{
	struct vcpu_state st;
	char err[256] = "";
	assert_int_equal(vcpu_state_parse(buf, len, &st, err, sizeof(err)),
			 -EINVAL);
	assert_true(err[0] && !strchr(err, '\n'));
	if (says && !strstr(err, says))
		fail_msg("'%s' does not say '%s'", err, says);
}

static void assert_vm_refused(const unsigned char *buf, size_t len,
			      const char *says)
{
	struct vm_state st;
	char err[256] = "";
	assert_int_equal(vm_state_parse(buf, len, &st, err, sizeof(err)), -EINVAL);
	assert_true(err[0] && !strchr(err, '\n'));
	if (says && !strstr(err, says))
		fail_msg("'%s' does not say '%s'", err, says);
}

static void test_cut_short_refused(void **state)
{
	struct saved *s = *state;
	struct vcpu_state vst;
	struct vm_state mst;
	char err[256];
	assert_int_equal(vcpu_state_parse(s->vcpu_blob, s->vcpu_len, &vst, err,
					  sizeof(err)),
			 0);
	assert_int_equal(vm_state_parse(s->vm_blob, s->vm_len, &mst, err,
					sizeof(err)),
			 0);
	/* Each prefix in a buffer of its own size, so ASan sees a read past. */
	for (size_t len = 0; len < s->vcpu_len; len++) {
		unsigned char *b = malloc(len ? len : 1);
		memcpy(b, s->vcpu_blob, len);
		assert_vcpu_refused(b, len, NULL);
		free(b);
	}
	for (size_t len = 0; len < s->vm_len; len++) {
		unsigned char *b = malloc(len ? len : 1);
		memcpy(b, s->vm_blob, len);
		assert_vm_refused(b, len, NULL);
		free(b);
	}
}

/* Each count and length of the blob, in turn, with a bit flipped or
 * ones: number of parts, every part's length, the MSRs' count. */
static void test_flipped_counts_refused(void **state)
{
	struct saved *s = *state;
	unsigned char *b = malloc(s->vcpu_len);
	const uint32_t masks[] = {1, 0x80, 0x8000, 0x80000000u, 0xffffffffu};
	size_t fields[64], nr = 0, msr_count = 0;
	fields[nr++] = 12;
	for (size_t off = 16; off < s->vcpu_len && nr < 64;) {
		uint32_t tag, len;
		memcpy(&tag, s->vcpu_blob + off, 4);
		memcpy(&len, s->vcpu_blob + off + 4, 4);
		fields[nr++] = off + 4;
		if (tag == 7) /* the MSRs: a count first */
			msr_count = off + 8;
		off += 8 + len;
	}
	assert_true(msr_count);
	fields[nr++] = msr_count;
	for (size_t f = 0; f < nr; f++) {
		for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
			memcpy(b, s->vcpu_blob, s->vcpu_len);
			uint32_t v;
			memcpy(&v, b + fields[f], 4);
			v ^= masks[m];
			memcpy(b + fields[f], &v, 4);
			assert_vcpu_refused(b, s->vcpu_len, NULL);
		}
	}
	memcpy(b, s->vcpu_blob, s->vcpu_len);
	b[16] = 99; /* the first part's tag */
	assert_vcpu_refused(b, s->vcpu_len, "unknown tag 99");
	free(b);
}

static void test_other_version_refused(void **state)
{
	struct saved *s = *state;
	unsigned char *b = malloc(s->vcpu_len);
	memcpy(b, s->vcpu_blob, s->vcpu_len);
	b[8] = 2;
	assert_vcpu_refused(b, s->vcpu_len, "version 2, this fsvm reads 1");
	b[8] = 1;
	b[0] = 'X';
	assert_vcpu_refused(b, s->vcpu_len, "no header");
	free(b);
	b = malloc(s->vm_len);
	memcpy(b, s->vm_blob, s->vm_len);
	b[9] = 1;
	assert_vm_refused(b, s->vm_len, "version 257");
	free(b);
}

/* Another host's blob: parsed, then refused at the restore, naming what
 * differs, and nothing set. */
static void test_other_host_refused(void **state)
{
	struct saved *s = *state;
	struct rig b;
	rig_make(&b);
	unsigned char *blob = malloc(s->vcpu_len);
	const struct {
		size_t off; /* in the host part, the blob's first */
		uint8_t xor;
		const char *says;
	} cases[] = {
		{0, 0x20, "vendor"},
		{12 + 0, 0x10, "family/model"}, /* the model's low nibble */
		{12 + 1, 0x01, "family/model"},
		{20, 0x80, "XSAVE features"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(blob, s->vcpu_blob, s->vcpu_len);
		blob[24 + cases[i].off] ^= cases[i].xor;
		char err[256] = "";
		struct vcpu_state st;
		assert_int_equal(vcpu_state_parse(blob, s->vcpu_len, &st, err,
						  sizeof(err)),
				 0);
		assert_int_equal(arch_vcpu_restore_state(&b.vcpu, blob, s->vcpu_len,
							 err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, cases[i].says))
			fail_msg("'%s' does not say '%s'", err, cases[i].says);
	}
	/* A stepping of its own is the same CPU for a snapshot. */
	memcpy(blob, s->vcpu_blob, s->vcpu_len);
	struct snapshot_host saved, here;
	struct vcpu_state st;
	char err[256];
	assert_int_equal(vcpu_state_parse(blob, s->vcpu_len, &st, err, sizeof(err)), 0);
	saved = here = st.host;
	saved.signature ^= 1;
	assert_int_equal(snapshot_host_match(&saved, &here, err, sizeof(err)), 0);
	saved.xsave_size += 64;
	assert_int_equal(snapshot_host_match(&saved, &here, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "XSAVE area"));

	/* And a VM blob whose irqchip parts are swapped is no VM state. */
	free(blob);
	blob = malloc(s->vm_len);
	memcpy(blob, s->vm_blob, s->vm_len);
	blob[16 + 8] = KVM_IRQCHIP_IOAPIC; /* the PIC master's chip_id */
	char line[256] = "";
	assert_int_equal(arch_vm_restore_state(&b.vm, blob, s->vm_len, line,
					       sizeof(line)),
			 -EINVAL);
	assert_non_null(strstr(line, "irqchip"));
	free(blob);
	rig_destroy(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restore_runs_on_to_the_end),
		cmocka_unit_test(test_cut_short_refused),
		cmocka_unit_test(test_flipped_counts_refused),
		cmocka_unit_test(test_other_version_refused),
		cmocka_unit_test(test_other_host_refused),
	};
	return cmocka_run_group_tests(tests, setup_saved, teardown_saved);
}
