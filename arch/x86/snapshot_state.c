/* Snapshot state for x86 (core/arch.h): each vCPU's and the VM's KVM
 * state to and from the blobs arch/x86/snapshot_state.h describes, and
 * the host a restore needs. */
#include "arch/x86/snapshot_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "arch/x86/arch_vm.h"
#include "core/arch.h"
#include "core/kvm.h"
#include "core/log.h"
#include "core/vcpu.h"

#define MSR_IA32_TSC 0x10
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define HEADER_LEN 16
#define PART_HEADER_LEN 8
#define HOST_PART_LEN 32
#define MSR_ENTRY_LEN 16
/* CPUID 1 EAX without the stepping and type: family and model. */
#define SIGNATURE_FAMILY_MODEL 0x0fff0ff0u

static const char vcpu_magic[8] = "FSVMCPU";
static const char vm_magic[8] = "FSVMVM";

enum vcpu_part {
	VCPU_HOST = 1,
	VCPU_REGS,
	VCPU_SREGS,
	VCPU_SREGS2,
	VCPU_XSAVE,
	VCPU_XCRS,
	VCPU_MSRS,
	VCPU_LAPIC,
	VCPU_EVENTS,
	VCPU_MP_STATE,
	VCPU_DEBUGREGS,
	VCPU_NR_PARTS
};

static const char *const vcpu_part_names[VCPU_NR_PARTS] = {
	[VCPU_HOST] = "host",	    [VCPU_REGS] = "regs",
	[VCPU_SREGS] = "sregs",	    [VCPU_SREGS2] = "sregs2",
	[VCPU_XSAVE] = "XSAVE",	    [VCPU_XCRS] = "XCRs",
	[VCPU_MSRS] = "MSRs",	    [VCPU_LAPIC] = "LAPIC",
	[VCPU_EVENTS] = "events",   [VCPU_MP_STATE] = "MP state",
	[VCPU_DEBUGREGS] = "debug registers",
};

enum vm_part {
	VM_PIC_MASTER = 1,
	VM_PIC_SLAVE,
	VM_IOAPIC,
	VM_PIT,
	VM_CLOCK,
	VM_NR_PARTS
};

static const char *const vm_part_names[VM_NR_PARTS] = {
	[VM_PIC_MASTER] = "PIC master", [VM_PIC_SLAVE] = "PIC slave",
	[VM_IOAPIC] = "IOAPIC",		[VM_PIT] = "PIT",
	[VM_CLOCK] = "clock",
};

struct part {
	const void *data; /* NULL: absent */
	size_t len;
};

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* parts[tag] for each tag from 1 to nr - 1 that is present. */
static int blob_write(const char *magic, const struct part *parts,
		      unsigned int nr, unsigned char **buf, size_t *len)
{
	size_t total = HEADER_LEN;
	uint32_t present = 0;
	for (unsigned int tag = 1; tag < nr; tag++) {
		if (parts[tag].data) {
			total += PART_HEADER_LEN + parts[tag].len;
			present++;
		}
	}
	unsigned char *p = malloc(total);
	if (!p)
		return -ENOMEM;
	memcpy(p, magic, 8);
	put_le32(p + 8, SNAPSHOT_STATE_VERSION);
	put_le32(p + 12, present);
	size_t off = HEADER_LEN;
	for (unsigned int tag = 1; tag < nr; tag++) {
		if (!parts[tag].data)
			continue;
		put_le32(p + off, tag);
		put_le32(p + off + 4, (uint32_t)parts[tag].len);
		memcpy(p + off + PART_HEADER_LEN, parts[tag].data,
		       parts[tag].len);
		off += PART_HEADER_LEN + parts[tag].len;
	}
	*buf = p;
	*len = total;
	return 0;
}

/* Splits a blob into parts[tag], each tag known and present once, every
 * length within the blob and nothing after the last part. */
static int blob_read(const char *what, const char *magic,
		     const unsigned char *buf, size_t len, struct part *parts,
		     unsigned int nr, const char *const *names, char *err,
		     size_t errlen)
{
	memset(parts, 0, nr * sizeof(*parts));
	if (len < HEADER_LEN || memcmp(buf, magic, 8))
		return log_reason(err, errlen, "%s: no header (not an fsvm %s blob)",
				  what, what);
	uint32_t version = get_le32(buf + 8);
	if (version != SNAPSHOT_STATE_VERSION)
		return log_reason(err, errlen, "%s: version %u, this fsvm reads %u",
				  what, version, SNAPSHOT_STATE_VERSION);
	uint32_t count = get_le32(buf + 12);
	if (count >= nr)
		return log_reason(err, errlen, "%s: %u parts, at most %u", what,
				  count, nr - 1);
	size_t off = HEADER_LEN;
	for (uint32_t i = 0; i < count; i++) {
		if (len - off < PART_HEADER_LEN)
			return log_reason(err, errlen, "%s: part %u of %u is cut short",
					  what, i + 1, count);
		uint32_t tag = get_le32(buf + off);
		uint32_t plen = get_le32(buf + off + 4);
		off += PART_HEADER_LEN;
		if (tag == 0 || tag >= nr)
			return log_reason(err, errlen, "%s: part %u has unknown tag %u",
					  what, i + 1, tag);
		if (plen > len - off)
			return log_reason(err, errlen,
					  "%s: %s part's length %u runs past the end",
					  what, names[tag], plen);
		if (parts[tag].data)
			return log_reason(err, errlen, "%s: %s part twice", what,
					  names[tag]);
		parts[tag] = (struct part){.data = buf + off, .len = plen};
		off += plen;
	}
	if (off != len)
		return log_reason(err, errlen, "%s: %zu bytes after the last part",
				  what, len - off);
	return 0;
}

/* A part that is one linux/kvm.h struct. */
static int take(const struct part *parts, unsigned int tag,
		const char *const *names, const char *what, void *dst,
		size_t size, char *err, size_t errlen)
{
	const struct part *p = &parts[tag];
	if (!p->data)
		return log_reason(err, errlen, "%s: no %s part", what, names[tag]);
	if (p->len != size)
		return log_reason(err, errlen, "%s: %s part is %zu bytes, not %zu",
				  what, names[tag], p->len, size);
	memcpy(dst, p->data, size);
	return 0;
}

#define VCPU_TAKE(tag, dst)                                                    \
	take(parts, tag, vcpu_part_names, "vCPU state", dst, sizeof(*(dst)),  \
	     err, errlen)

int vcpu_state_parse(const unsigned char *buf, size_t len,
		     struct vcpu_state *st, char *err, size_t errlen)
{
	struct part parts[VCPU_NR_PARTS];
	*st = (struct vcpu_state){0};
	int r = blob_read("vCPU state", vcpu_magic, buf, len, parts,
			  VCPU_NR_PARTS, vcpu_part_names, err, errlen);
	if (r)
		return r;

	const struct part *host = &parts[VCPU_HOST];
	if (!host->data || host->len != HOST_PART_LEN)
		return log_reason(err, errlen,
				  "vCPU state: no host part of %u bytes",
				  HOST_PART_LEN);
	const unsigned char *h = host->data;
	memcpy(st->host.vendor, h, sizeof(st->host.vendor));
	st->host.signature = get_le32(h + 12);
	st->host.xsave_size = get_le32(h + 16);
	st->host.xcr0_mask = get_le64(h + 20);
	st->tsc_khz = get_le32(h + 28);
	if (st->host.xsave_size < sizeof(struct kvm_xsave) ||
	    st->host.xsave_size > SNAPSHOT_MAX_XSAVE)
		return log_reason(err, errlen,
				  "vCPU state: host part's XSAVE size %u is out of range",
				  st->host.xsave_size);

	if (parts[VCPU_SREGS].data && parts[VCPU_SREGS2].data)
		return log_reason(err, errlen, "vCPU state: both sregs and sregs2 parts");
	st->has_sregs2 = parts[VCPU_SREGS2].data;
	r = st->has_sregs2 ? VCPU_TAKE(VCPU_SREGS2, &st->sregs2)
			   : VCPU_TAKE(VCPU_SREGS, &st->sregs);
	if (!r)
		r = VCPU_TAKE(VCPU_REGS, &st->regs);
	if (!r)
		r = VCPU_TAKE(VCPU_LAPIC, &st->lapic);
	if (!r)
		r = VCPU_TAKE(VCPU_EVENTS, &st->events);
	if (!r)
		r = VCPU_TAKE(VCPU_MP_STATE, &st->mp_state);
	if (!r)
		r = VCPU_TAKE(VCPU_DEBUGREGS, &st->debugregs);
	st->has_xcrs = parts[VCPU_XCRS].data;
	if (!r && st->has_xcrs)
		r = VCPU_TAKE(VCPU_XCRS, &st->xcrs);
	if (r)
		return r;
	if (st->has_xcrs && st->xcrs.nr_xcrs > KVM_MAX_XCRS)
		return log_reason(err, errlen, "vCPU state: %u XCRs, at most %u",
				  st->xcrs.nr_xcrs, KVM_MAX_XCRS);

	const struct part *xsave = &parts[VCPU_XSAVE];
	if (!xsave->data || xsave->len != st->host.xsave_size)
		return log_reason(err, errlen,
				  "vCPU state: no XSAVE part of the host part's %u bytes",
				  st->host.xsave_size);
	st->xsave = xsave->data;

	const struct part *msrs = &parts[VCPU_MSRS];
	if (!msrs->data || msrs->len < 4)
		return log_reason(err, errlen, "vCPU state: no MSRs part");
	st->nr_msrs = get_le32(msrs->data);
	if (st->nr_msrs > SNAPSHOT_MAX_MSRS ||
	    msrs->len != 4 + (size_t)st->nr_msrs * MSR_ENTRY_LEN)
		return log_reason(err, errlen,
				  "vCPU state: MSRs part of %zu bytes cannot hold its %u MSRs",
				  msrs->len, st->nr_msrs);
	st->msrs = (const unsigned char *)msrs->data + 4;
	return 0;
}

#define VM_TAKE(tag, dst)                                                      \
	take(parts, tag, vm_part_names, "VM state", dst, sizeof(*(dst)), err, \
	     errlen)

int vm_state_parse(const unsigned char *buf, size_t len, struct vm_state *st,
		   char *err, size_t errlen)
{
	struct part parts[VM_NR_PARTS];
	*st = (struct vm_state){0};
	int r = blob_read("VM state", vm_magic, buf, len, parts, VM_NR_PARTS,
			  vm_part_names, err, errlen);
	if (!r)
		r = VM_TAKE(VM_PIC_MASTER, &st->pic_master);
	if (!r)
		r = VM_TAKE(VM_PIC_SLAVE, &st->pic_slave);
	if (!r)
		r = VM_TAKE(VM_IOAPIC, &st->ioapic);
	if (!r)
		r = VM_TAKE(VM_PIT, &st->pit);
	if (!r)
		r = VM_TAKE(VM_CLOCK, &st->clock);
	if (r)
		return r;
	/* KVM_SET_IRQCHIP goes by the chip's id: each part must be its own. */
	if (st->pic_master.chip_id != KVM_IRQCHIP_PIC_MASTER ||
	    st->pic_slave.chip_id != KVM_IRQCHIP_PIC_SLAVE ||
	    st->ioapic.chip_id != KVM_IRQCHIP_IOAPIC)
		return log_reason(err, errlen,
				  "VM state: an irqchip part holds another chip");
	return 0;
}

int snapshot_host_match(const struct snapshot_host *saved,
			const struct snapshot_host *here, char *err,
			size_t errlen)
{
	if (memcmp(saved->vendor, here->vendor, sizeof(saved->vendor)))
		return log_reason(err, errlen,
				  "host CPU: the snapshot's vendor is '%.12s', this host's '%.12s'",
				  saved->vendor, here->vendor);
	if ((saved->signature ^ here->signature) & SIGNATURE_FAMILY_MODEL)
		return log_reason(err, errlen,
				  "host CPU: the snapshot's family/model signature is %#x, this host's %#x",
				  saved->signature, here->signature);
	if (saved->xcr0_mask != here->xcr0_mask)
		return log_reason(err, errlen,
				  "host CPU: the snapshot's XSAVE features are %#llx, this host's %#llx",
				  (unsigned long long)saved->xcr0_mask,
				  (unsigned long long)here->xcr0_mask);
	if (saved->xsave_size != here->xsave_size)
		return log_reason(err, errlen,
				  "host CPU: the snapshot's XSAVE area is %u bytes, this host's %u",
				  saved->xsave_size, here->xsave_size);
	return 0;
}

static int xsave2_size(struct vm *vm)
{
	return ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2);
}

/* This host as KVM shows it to the guest (the CPUID it supports, which
 * arch_vcpu_init() gives every vCPU). */
static void host_of(struct vm *vm, struct snapshot_host *h)
{
	const struct arch_vm *a = vm->arch;
	const struct kvm_cpuid_entry2 *vendor = x86_supported_cpuid(a, 0, 0);
	const struct kvm_cpuid_entry2 *sig = x86_supported_cpuid(a, 1, 0);
	const struct kvm_cpuid_entry2 *xs = x86_supported_cpuid(a, 0xd, 0);
	*h = (struct snapshot_host){0};
	if (vendor) {
		memcpy(h->vendor, &vendor->ebx, 4);
		memcpy(h->vendor + 4, &vendor->edx, 4);
		memcpy(h->vendor + 8, &vendor->ecx, 4);
	}
	if (sig)
		h->signature = sig->eax;
	if (xs)
		h->xcr0_mask = xs->eax | (uint64_t)xs->edx << 32;
	int size = xsave2_size(vm);
	h->xsave_size = size > (int)sizeof(struct kvm_xsave)
				? (uint32_t)size
				: sizeof(struct kvm_xsave);
}

static int kvm_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

/* The err line of an ioctl that failed. */
static int failed(int e, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, strerror(-e));
	return e;
}

static struct kvm_msrs *msrs_alloc(uint32_t n)
{
	return calloc(1, sizeof(struct kvm_msrs) +
				 n * sizeof(struct kvm_msr_entry));
}

/* Every MSR of KVM's list this vCPU reads, as the MSRs part (a count, then
 * the entries). KVM_GET_MSRS stops at the first it cannot read (one this
 * CPU lacks): that one is left out and the rest read on. */
static int save_msrs(struct vcpu *vcpu, unsigned char **part, size_t *len)
{
	struct kvm_msr_list probe = {.nmsrs = 0};
	if (ioctl(vcpu->vm->kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 &&
	    errno != E2BIG)
		return -errno;
	uint32_t n = probe.nmsrs;
	if (n > SNAPSHOT_MAX_MSRS)
		return -E2BIG;
	struct kvm_msr_list *list =
		malloc(sizeof(*list) + n * sizeof(list->indices[0]));
	struct kvm_msrs *msrs = msrs_alloc(n);
	unsigned char *out = malloc(4 + (size_t)n * MSR_ENTRY_LEN);
	int err = -ENOMEM;
	if (!list || !msrs || !out)
		goto out;
	list->nmsrs = n;
	err = kvm_ioctl(vcpu->vm->kvm_fd, KVM_GET_MSR_INDEX_LIST, list);
	uint32_t kept = 0;
	for (uint32_t i = 0; !err && i < n;) {
		msrs->nmsrs = n - i;
		for (uint32_t j = 0; j < n - i; j++)
			msrs->entries[j] = (struct kvm_msr_entry){
				.index = list->indices[i + j]};
		int got = ioctl(vcpu->fd, KVM_GET_MSRS, msrs);
		if (got < 0) {
			err = -errno;
			break;
		}
		memcpy(out + 4 + (size_t)kept * MSR_ENTRY_LEN, msrs->entries,
		       (size_t)got * MSR_ENTRY_LEN);
		kept += (uint32_t)got;
		i += (uint32_t)got + 1; /* past the one it could not read */
	}
	if (!err) {
		put_le32(out, kept);
		*part = out;
		*len = 4 + (size_t)kept * MSR_ENTRY_LEN;
		out = NULL;
	}
out:
	free(list);
	free(msrs);
	free(out);
	return err;
}

int arch_vcpu_save_state(struct vcpu *vcpu, unsigned char **buf, size_t *len)
{
	struct vm *vm = vcpu->vm;
	if (!kvm_has(vm, KVM_CAP_XSAVE) || !kvm_has(vm, KVM_CAP_VCPU_EVENTS) ||
	    !kvm_has(vm, KVM_CAP_DEBUGREGS))
		return -ENOTSUP;
	struct vcpu_state st = {.has_sregs2 = kvm_has(vm, KVM_CAP_SREGS2),
				.has_xcrs = kvm_has(vm, KVM_CAP_XCRS)};
	host_of(vm, &st.host);
	int fd = vcpu->fd;
	unsigned char *xsave = calloc(1, st.host.xsave_size);
	unsigned char *msrs = NULL;
	size_t msrs_len = 0;
	if (!xsave)
		return -ENOMEM;
	int khz = ioctl(fd, KVM_GET_TSC_KHZ, 0);
	int err = khz < 0 ? -errno : 0;
	st.tsc_khz = (uint32_t)khz;
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_REGS, &st.regs);
	if (!err)
		err = st.has_sregs2 ? kvm_ioctl(fd, KVM_GET_SREGS2, &st.sregs2)
				    : kvm_ioctl(fd, KVM_GET_SREGS, &st.sregs);
	if (!err)
		err = kvm_ioctl(fd, xsave2_size(vm) > 0 ? KVM_GET_XSAVE2
							 : KVM_GET_XSAVE,
				xsave);
	if (!err && st.has_xcrs)
		err = kvm_ioctl(fd, KVM_GET_XCRS, &st.xcrs);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_LAPIC, &st.lapic);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_VCPU_EVENTS, &st.events);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_MP_STATE, &st.mp_state);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_DEBUGREGS, &st.debugregs);
	if (!err)
		err = save_msrs(vcpu, &msrs, &msrs_len);
	if (!err) {
		unsigned char host[HOST_PART_LEN];
		memcpy(host, st.host.vendor, sizeof(st.host.vendor));
		put_le32(host + 12, st.host.signature);
		put_le32(host + 16, st.host.xsave_size);
		put_le64(host + 20, st.host.xcr0_mask);
		put_le32(host + 28, st.tsc_khz);
		struct part parts[VCPU_NR_PARTS] = {
			[VCPU_HOST] = {host, sizeof(host)},
			[VCPU_REGS] = {&st.regs, sizeof(st.regs)},
			[VCPU_XSAVE] = {xsave, st.host.xsave_size},
			[VCPU_MSRS] = {msrs, msrs_len},
			[VCPU_LAPIC] = {&st.lapic, sizeof(st.lapic)},
			[VCPU_EVENTS] = {&st.events, sizeof(st.events)},
			[VCPU_MP_STATE] = {&st.mp_state, sizeof(st.mp_state)},
			[VCPU_DEBUGREGS] = {&st.debugregs, sizeof(st.debugregs)},
		};
		if (st.has_sregs2)
			parts[VCPU_SREGS2] = (struct part){&st.sregs2,
							   sizeof(st.sregs2)};
		else
			parts[VCPU_SREGS] = (struct part){&st.sregs,
							  sizeof(st.sregs)};
		if (st.has_xcrs)
			parts[VCPU_XCRS] = (struct part){&st.xcrs, sizeof(st.xcrs)};
		err = blob_write(vcpu_magic, parts, VCPU_NR_PARTS, buf, len);
	}
	free(xsave);
	free(msrs);
	return err;
}

/* The guest calibrated its clocks against the TSC's rate when it booted:
 * on a host whose TSC runs at another, KVM must scale it. */
static int restore_tsc_khz(struct vcpu *vcpu, uint32_t khz, char *err,
			   size_t errlen)
{
	int here = ioctl(vcpu->fd, KVM_GET_TSC_KHZ, 0);
	if (here < 0)
		return failed(-errno, err, errlen, "TSC frequency");
	if ((uint32_t)here == khz)
		return 0;
	if (!kvm_has(vcpu->vm, KVM_CAP_TSC_CONTROL))
		return log_reason(err, errlen,
				  "TSC frequency: the snapshot's is %u kHz, this host's %d kHz, and its KVM cannot scale it",
				  khz, here);
	if (ioctl(vcpu->fd, KVM_SET_TSC_KHZ, (unsigned long)khz) < 0)
		return failed(-errno, err, errlen, "TSC frequency");
	return 0;
}

/* Cycles of a TSC at khz in ns, without overflowing for years of ns. */
static uint64_t ns_to_cycles(uint64_t ns, uint32_t khz)
{
	return ns / 1000000 * khz + ns % 1000000 * khz / 1000000;
}

static int set_msrs(struct vcpu *vcpu, struct kvm_msrs *msrs, char *err,
		    size_t errlen)
{
	int set = ioctl(vcpu->fd, KVM_SET_MSRS, msrs);
	if (set < 0)
		return failed(-errno, err, errlen, "MSRs");
	if ((uint32_t)set < msrs->nmsrs)
		return log_reason(err, errlen, "MSRs: KVM refused MSR %#x",
				  msrs->entries[set].index);
	return 0;
}

/* The order of QEMU's kvm_arch_put_registers, for the same reasons:
 * special registers first (EFER, CR4 and the APIC base decide what the
 * rest may hold), the LAPIC after the MP state and the APIC base, and the
 * TSC deadline after the LAPIC (setting the LAPIC disarms its timer) and
 * after the TSC it counts in. */
int arch_vcpu_restore_state(struct vcpu *vcpu, const unsigned char *buf,
			    size_t len, char *err, size_t errlen)
{
	struct vm *vm = vcpu->vm;
	struct vcpu_state st;
	int r = vcpu_state_parse(buf, len, &st, err, errlen);
	if (r)
		return r;
	struct snapshot_host here;
	host_of(vm, &here);
	r = snapshot_host_match(&st.host, &here, err, errlen);
	if (r)
		return r;
	if (st.has_sregs2 && !kvm_has(vm, KVM_CAP_SREGS2))
		return log_reason(err, errlen, "sregs2: this host's KVM has no KVM_SET_SREGS2");
	if (st.has_xcrs && !kvm_has(vm, KVM_CAP_XCRS))
		return log_reason(err, errlen, "XCRs: this host's KVM has no KVM_SET_XCRS");
	r = restore_tsc_khz(vcpu, st.tsc_khz, err, errlen);
	if (r)
		return r;

	/* KVM_SET_XSAVE reads the whole area: a copy, aligned. */
	unsigned char *xsave = malloc(st.host.xsave_size);
	struct kvm_msrs *msrs = msrs_alloc(st.nr_msrs);
	struct kvm_msrs *late = msrs_alloc(st.nr_msrs);
	r = -ENOMEM;
	if (!xsave || !msrs || !late) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(xsave, st.xsave, st.host.xsave_size);
	for (uint32_t i = 0; i < st.nr_msrs; i++) {
		struct kvm_msr_entry e;
		memcpy(&e, st.msrs + (size_t)i * MSR_ENTRY_LEN, sizeof(e));
		if (e.index == MSR_IA32_TSC)
			e.data += ns_to_cycles(vm->arch->restore_advance_ns,
					       st.tsc_khz);
		if (e.index == MSR_IA32_TSC_DEADLINE)
			late->entries[late->nmsrs++] = e;
		else
			msrs->entries[msrs->nmsrs++] = e;
	}
	/* What a vCPU fresh from KVM_GET_VCPU_EVENTS carries is set, with
	 * the pending NMI and SIPI vector that GET does not flag. */
	st.events.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING |
			   KVM_VCPUEVENT_VALID_SIPI_VECTOR;

	int fd = vcpu->fd;
	if ((r = st.has_sregs2 ? kvm_ioctl(fd, KVM_SET_SREGS2, &st.sregs2)
			       : kvm_ioctl(fd, KVM_SET_SREGS, &st.sregs)))
		failed(r, err, errlen, st.has_sregs2 ? "sregs2" : "sregs");
	else if ((r = kvm_ioctl(fd, KVM_SET_REGS, &st.regs)))
		failed(r, err, errlen, "regs");
	else if ((r = kvm_ioctl(fd, KVM_SET_XSAVE, xsave)))
		failed(r, err, errlen, "XSAVE");
	else if (st.has_xcrs && (r = kvm_ioctl(fd, KVM_SET_XCRS, &st.xcrs)))
		failed(r, err, errlen, "XCRs");
	else if ((r = set_msrs(vcpu, msrs, err, errlen)))
		;
	else if ((r = kvm_ioctl(fd, KVM_SET_VCPU_EVENTS, &st.events)))
		failed(r, err, errlen, "vCPU events");
	else if ((r = kvm_ioctl(fd, KVM_SET_MP_STATE, &st.mp_state)))
		failed(r, err, errlen, "MP state");
	else if ((r = kvm_ioctl(fd, KVM_SET_LAPIC, &st.lapic)))
		failed(r, err, errlen, "LAPIC");
	else if ((r = set_msrs(vcpu, late, err, errlen)))
		;
	else if ((r = kvm_ioctl(fd, KVM_SET_DEBUGREGS, &st.debugregs)))
		failed(r, err, errlen, "debug registers");
out:
	free(xsave);
	free(msrs);
	free(late);
	return r;
}

int arch_vm_save_state(struct vm *vm, unsigned char **buf, size_t *len)
{
	struct vm_state st = {
		.pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER,
		.pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE,
		.ioapic.chip_id = KVM_IRQCHIP_IOAPIC,
	};
	int fd = vm->vm_fd;
	int err = kvm_ioctl(fd, KVM_GET_IRQCHIP, &st.pic_master);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_IRQCHIP, &st.pic_slave);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_IRQCHIP, &st.ioapic);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_PIT2, &st.pit);
	if (!err)
		err = kvm_ioctl(fd, KVM_GET_CLOCK, &st.clock);
	if (err)
		return err;
	/* A KVM without KVM_CLOCK_REALTIME: the host's time now, a few µs
	 * after the clock's reading. */
	if (!(st.clock.flags & KVM_CLOCK_REALTIME)) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		st.clock.realtime = (uint64_t)now.tv_sec * 1000000000u +
				    (uint64_t)now.tv_nsec;
		st.clock.flags |= KVM_CLOCK_REALTIME;
	}
	struct part parts[VM_NR_PARTS] = {
		[VM_PIC_MASTER] = {&st.pic_master, sizeof(st.pic_master)},
		[VM_PIC_SLAVE] = {&st.pic_slave, sizeof(st.pic_slave)},
		[VM_IOAPIC] = {&st.ioapic, sizeof(st.ioapic)},
		[VM_PIT] = {&st.pit, sizeof(st.pit)},
		[VM_CLOCK] = {&st.clock, sizeof(st.clock)},
	};
	return blob_write(vm_magic, parts, VM_NR_PARTS, buf, len);
}

/* Guest time on restore: the guest jumps forward to now, as if it had run
 * all along, and never back. The kvmclock is set to the saved reading plus
 * the host's realtime that passed since (KVM adds it itself with
 * KVM_CLOCK_REALTIME, at the moment it sets the clock); a host whose
 * realtime is behind the snapshot's adds nothing, so the guest's clock
 * only stands still. Its wall clock is its boot time plus the kvmclock, so
 * it reads the host's time again rather than lagging by the pause. Every
 * vCPU's TSC moves forward as far (restore_advance_ns, arch_vcpu_restore_
 * state), so that a guest whose clocksource is the TSC (Linux prefers it
 * to kvm-clock on a constant TSC) agrees with its kvmclock; one
 * TSC-deadline timer due in the pause fires at once, as on a machine that
 * ran through it. So the VM's state is restored before its vCPUs'. */
int arch_vm_restore_state(struct vm *vm, const unsigned char *buf, size_t len,
			  char *err, size_t errlen)
{
	struct vm_state st;
	int r = vm_state_parse(buf, len, &st, err, errlen);
	if (r)
		return r;
	int fd = vm->vm_fd;
	if ((r = kvm_ioctl(fd, KVM_SET_IRQCHIP, &st.pic_master)))
		return failed(r, err, errlen, "PIC master");
	if ((r = kvm_ioctl(fd, KVM_SET_IRQCHIP, &st.pic_slave)))
		return failed(r, err, errlen, "PIC slave");
	if ((r = kvm_ioctl(fd, KVM_SET_IRQCHIP, &st.ioapic)))
		return failed(r, err, errlen, "IOAPIC");
	if ((r = kvm_ioctl(fd, KVM_SET_PIT2, &st.pit)))
		return failed(r, err, errlen, "PIT");

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u +
			  (uint64_t)now.tv_nsec;
	uint64_t advance = now_ns > st.clock.realtime
				   ? now_ns - st.clock.realtime
				   : 0;
	struct kvm_clock_data clock = {.clock = st.clock.clock};
	int adjust = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_ADJUST_CLOCK);
	if (adjust > 0 && (adjust & KVM_CLOCK_REALTIME)) {
		clock.flags = KVM_CLOCK_REALTIME;
		clock.realtime = st.clock.realtime;
	} else {
		clock.clock += advance;
	}
	if ((r = kvm_ioctl(fd, KVM_SET_CLOCK, &clock)))
		return failed(r, err, errlen, "clock");
	vm->arch->restore_advance_ns = advance;
	return 0;
}
