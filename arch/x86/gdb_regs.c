/* gdb's view of an x86-64 vCPU (core/arch.h): the target description,
 * the register file in its numbering from KVM's regs, sregs and FPU
 * state, virtual addresses through KVM_TRANSLATE, int3, and the debug
 * registers behind KVM_SET_GUEST_DEBUG. */
#include "arch/x86/gdb_regs.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/arch.h"
#include "core/gdb_stub.h"
#include "core/vcpu.h"

#define BP_VECTOR 3
#define DB_VECTOR 1
#define DR7_GE (1u << 9)
#define DR7_FIXED (1u << 10)

/* gdb's amd64 registers (its 64bit-core.xml and 64bit-sse.xml), the
 * segment bases it knows (64bit-segments.xml) and the control registers
 * and EFER as a feature of our own, as QEMU shows them. Numbered in
 * order: 0-15 the general registers, 16 rip, 17 eflags, 18-23 segments,
 * 24-31 st0-7, 32-39 the x87 control words, 40-55 xmm0-15, 56 mxcsr,
 * 57-58 fs_base and gs_base, 59-64 cr0, cr2, cr3, cr4, cr8 and efer. */
static const char target_xml[] =
	"<?xml version=\"1.0\"?>\n"
	"<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
	"<target version=\"1.0\">\n"
	"<architecture>i386:x86-64</architecture>\n"
	"<feature name=\"org.gnu.gdb.i386.core\">\n"
	"<flags id=\"i386_eflags\" size=\"4\">\n"
	"<field name=\"CF\" start=\"0\" end=\"0\"/>\n"
	"<field name=\"\" start=\"1\" end=\"1\"/>\n"
	"<field name=\"PF\" start=\"2\" end=\"2\"/>\n"
	"<field name=\"AF\" start=\"4\" end=\"4\"/>\n"
	"<field name=\"ZF\" start=\"6\" end=\"6\"/>\n"
	"<field name=\"SF\" start=\"7\" end=\"7\"/>\n"
	"<field name=\"TF\" start=\"8\" end=\"8\"/>\n"
	"<field name=\"IF\" start=\"9\" end=\"9\"/>\n"
	"<field name=\"DF\" start=\"10\" end=\"10\"/>\n"
	"<field name=\"OF\" start=\"11\" end=\"11\"/>\n"
	"<field name=\"NT\" start=\"14\" end=\"14\"/>\n"
	"<field name=\"RF\" start=\"16\" end=\"16\"/>\n"
	"<field name=\"VM\" start=\"17\" end=\"17\"/>\n"
	"<field name=\"AC\" start=\"18\" end=\"18\"/>\n"
	"<field name=\"VIF\" start=\"19\" end=\"19\"/>\n"
	"<field name=\"VIP\" start=\"20\" end=\"20\"/>\n"
	"<field name=\"ID\" start=\"21\" end=\"21\"/>\n"
	"</flags>\n"
	"<reg name=\"rax\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rbx\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rcx\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rdx\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rsi\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rdi\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rbp\" bitsize=\"64\" type=\"data_ptr\"/>\n"
	"<reg name=\"rsp\" bitsize=\"64\" type=\"data_ptr\"/>\n"
	"<reg name=\"r8\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r9\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r10\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r11\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r12\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r13\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r14\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r15\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rip\" bitsize=\"64\" type=\"code_ptr\"/>\n"
	"<reg name=\"eflags\" bitsize=\"32\" type=\"i386_eflags\"/>\n"
	"<reg name=\"cs\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"ss\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"ds\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"es\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"fs\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"gs\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"st0\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st1\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st2\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st3\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st4\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st5\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st6\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st7\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"fctrl\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fstat\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"ftag\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fiseg\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fioff\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"foseg\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fooff\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fop\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"</feature>\n"
	"<feature name=\"org.gnu.gdb.i386.sse\">\n"
	"<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>\n"
	"<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>\n"
	"<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>\n"
	"<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>\n"
	"<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>\n"
	"<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>\n"
	"<union id=\"vec128\">\n"
	"<field name=\"v4_float\" type=\"v4f\"/>\n"
	"<field name=\"v2_double\" type=\"v2d\"/>\n"
	"<field name=\"v16_int8\" type=\"v16i8\"/>\n"
	"<field name=\"v8_int16\" type=\"v8i16\"/>\n"
	"<field name=\"v4_int32\" type=\"v4i32\"/>\n"
	"<field name=\"v2_int64\" type=\"v2i64\"/>\n"
	"<field name=\"uint128\" type=\"uint128\"/>\n"
	"</union>\n"
	"<flags id=\"i386_mxcsr\" size=\"4\">\n"
	"<field name=\"IE\" start=\"0\" end=\"0\"/>\n"
	"<field name=\"DE\" start=\"1\" end=\"1\"/>\n"
	"<field name=\"ZE\" start=\"2\" end=\"2\"/>\n"
	"<field name=\"OE\" start=\"3\" end=\"3\"/>\n"
	"<field name=\"UE\" start=\"4\" end=\"4\"/>\n"
	"<field name=\"PE\" start=\"5\" end=\"5\"/>\n"
	"<field name=\"DAZ\" start=\"6\" end=\"6\"/>\n"
	"<field name=\"IM\" start=\"7\" end=\"7\"/>\n"
	"<field name=\"DM\" start=\"8\" end=\"8\"/>\n"
	"<field name=\"ZM\" start=\"9\" end=\"9\"/>\n"
	"<field name=\"OM\" start=\"10\" end=\"10\"/>\n"
	"<field name=\"UM\" start=\"11\" end=\"11\"/>\n"
	"<field name=\"PM\" start=\"12\" end=\"12\"/>\n"
	"<field name=\"FZ\" start=\"13\" end=\"13\"/>\n"
	"</flags>\n"
	"<reg name=\"xmm0\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm1\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm2\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm3\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm4\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm5\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm6\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm7\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm8\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm9\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm10\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm11\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm12\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm13\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm14\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm15\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"mxcsr\" bitsize=\"32\" type=\"i386_mxcsr\" group=\"vector\"/>\n"
	"</feature>\n"
	"<feature name=\"org.gnu.gdb.i386.segments\">\n"
	"<reg name=\"fs_base\" bitsize=\"64\" type=\"int\"/>\n"
	"<reg name=\"gs_base\" bitsize=\"64\" type=\"int\"/>\n"
	"</feature>\n"
	"<feature name=\"org.fsvm.gdb.x86.sys\">\n"
	"<reg name=\"cr0\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	"<reg name=\"cr2\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	"<reg name=\"cr3\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	"<reg name=\"cr4\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	"<reg name=\"cr8\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	"<reg name=\"efer\" bitsize=\"64\" type=\"int\" group=\"system\"/>\n"
	"</feature>\n"
	"</target>\n";

struct reg_span {
	uint16_t offset, size;
};

static struct reg_span reg_span(unsigned int regno)
{
	static const struct {
		unsigned int first, last, offset, size;
	} blocks[] = {
		{0, 15, 0, 8},     /* rax ... r15 */
		{16, 16, 128, 8},  /* rip */
		{17, 23, 136, 4},  /* eflags, cs ss ds es fs gs */
		{24, 31, 164, 10}, /* st0-7 */
		{32, 39, 244, 4},  /* fctrl ... fop */
		{40, 55, 276, 16}, /* xmm0-15 */
		{56, 56, 532, 4},  /* mxcsr */
		{57, 64, 536, 8},  /* fs_base, gs_base, cr0 ... efer */
	};
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (regno >= blocks[i].first && regno <= blocks[i].last)
			return (struct reg_span){
				(uint16_t)(blocks[i].offset +
					   (regno - blocks[i].first) *
						   blocks[i].size),
				(uint16_t)blocks[i].size};
	return (struct reg_span){0, 0};
}

const char *arch_gdb_target_xml(void)
{
	return target_xml;
}

size_t arch_gdb_regs_size(void)
{
	return X86_GDB_REGS_SIZE;
}

bool arch_gdb_reg(unsigned int regno, size_t *offset, size_t *size)
{
	struct reg_span s = reg_span(regno);
	*offset = s.offset;
	*size = s.size;
	return s.size != 0;
}

const uint8_t *arch_gdb_break_insn(size_t *len)
{
	static const uint8_t int3 = 0xcc;
	*len = 1;
	return &int3;
}

static void put(uint8_t *file, unsigned int regno, uint64_t v)
{
	struct reg_span s = reg_span(regno);
	memcpy(file + s.offset, &v, s.size < 8 ? s.size : 8); /* little-endian */
}

static uint64_t get(const uint8_t *file, unsigned int regno)
{
	struct reg_span s = reg_span(regno);
	uint64_t v = 0;
	memcpy(&v, file + s.offset, s.size < 8 ? s.size : 8);
	return v;
}

/* The x87 tag of one register, from its contents (what FXSAVE's abridged
 * tag leaves out): 0 valid, 1 zero, 2 special. */
static unsigned int x87_tag(const uint8_t *raw)
{
	unsigned int exponent = (unsigned int)(raw[9] & 0x7f) << 8 | raw[8];
	bool integer = raw[7] & 0x80;
	uint64_t mantissa;
	memcpy(&mantissa, raw, sizeof(mantissa));
	if (exponent == 0x7fff)
		return 2;
	if (exponent == 0)
		return mantissa == 0 ? 1 : 2;
	return integer ? 0 : 2;
}

/* gdb's full tag word from FXSAVE's abridged one: a set bit per physical
 * register that is not empty (the registers are stored from ST0 = TOP). */
static uint16_t x87_full_tag(const struct kvm_fpu *fpu)
{
	unsigned int top = (fpu->fsw >> 11) & 7;
	uint16_t tag = 0;
	for (unsigned int phys = 0; phys < 8; phys++) {
		unsigned int t = 3;
		if (fpu->ftwx & (1u << phys))
			t = x87_tag(fpu->fpr[(phys + 8 - top) % 8]);
		tag |= (uint16_t)(t << (2 * phys));
	}
	return tag;
}

static uint8_t x87_abridged_tag(uint16_t tag)
{
	uint8_t abridged = 0;
	for (unsigned int phys = 0; phys < 8; phys++)
		if (((tag >> (2 * phys)) & 3) != 3)
			abridged |= (uint8_t)(1u << phys);
	return abridged;
}

void x86_gdb_pack(uint8_t *out, const struct kvm_regs *regs,
		  const struct kvm_sregs *sregs, const struct kvm_fpu *fpu)
{
	const uint64_t gprs[16] = {
		regs->rax, regs->rbx, regs->rcx, regs->rdx, regs->rsi,
		regs->rdi, regs->rbp, regs->rsp, regs->r8,  regs->r9,
		regs->r10, regs->r11, regs->r12, regs->r13, regs->r14,
		regs->r15};
	const struct kvm_segment *segs[6] = {&sregs->cs, &sregs->ss,
					     &sregs->ds, &sregs->es,
					     &sregs->fs, &sregs->gs};
	memset(out, 0, X86_GDB_REGS_SIZE);
	for (unsigned int i = 0; i < 16; i++)
		put(out, X86_GDB_RAX + i, gprs[i]);
	put(out, X86_GDB_RIP, regs->rip);
	put(out, X86_GDB_EFLAGS, regs->rflags);
	for (unsigned int i = 0; i < 6; i++)
		put(out, X86_GDB_CS + i, segs[i]->selector);
	for (unsigned int i = 0; i < 8; i++)
		memcpy(out + reg_span(X86_GDB_ST0 + i).offset, fpu->fpr[i], 10);
	const uint64_t x87[8] = {fpu->fcw,
				 fpu->fsw,
				 x87_full_tag(fpu),
				 fpu->last_ip >> 32,
				 (uint32_t)fpu->last_ip,
				 fpu->last_dp >> 32,
				 (uint32_t)fpu->last_dp,
				 fpu->last_opcode};
	for (unsigned int i = 0; i < 8; i++)
		put(out, X86_GDB_FCTRL + i, x87[i]);
	for (unsigned int i = 0; i < 16; i++)
		memcpy(out + reg_span(X86_GDB_XMM0 + i).offset, fpu->xmm[i], 16);
	put(out, X86_GDB_MXCSR, fpu->mxcsr);
	put(out, X86_GDB_FS_BASE, sregs->fs.base);
	put(out, X86_GDB_GS_BASE, sregs->gs.base);
	const uint64_t sys[6] = {sregs->cr0, sregs->cr2, sregs->cr3,
				 sregs->cr4, sregs->cr8, sregs->efer};
	for (unsigned int i = 0; i < 6; i++)
		put(out, X86_GDB_CR0 + i, sys[i]);
}

void x86_gdb_unpack(const uint8_t *in, struct kvm_regs *regs,
		    struct kvm_sregs *sregs, struct kvm_fpu *fpu)
{
	__u64 *gprs[16] = {&regs->rax, &regs->rbx, &regs->rcx, &regs->rdx,
			      &regs->rsi, &regs->rdi, &regs->rbp, &regs->rsp,
			      &regs->r8,  &regs->r9,  &regs->r10, &regs->r11,
			      &regs->r12, &regs->r13, &regs->r14, &regs->r15};
	struct kvm_segment *segs[6] = {&sregs->cs, &sregs->ss, &sregs->ds,
				       &sregs->es, &sregs->fs, &sregs->gs};
	for (unsigned int i = 0; i < 16; i++)
		*gprs[i] = get(in, X86_GDB_RAX + i);
	regs->rip = get(in, X86_GDB_RIP);
	/* eflags is 32 bits in gdb's file; the upper half is reserved. */
	regs->rflags = get(in, X86_GDB_EFLAGS);
	for (unsigned int i = 0; i < 6; i++)
		segs[i]->selector = (uint16_t)get(in, X86_GDB_CS + i);
	for (unsigned int i = 0; i < 8; i++)
		memcpy(fpu->fpr[i], in + reg_span(X86_GDB_ST0 + i).offset, 10);
	fpu->fcw = (uint16_t)get(in, X86_GDB_FCTRL);
	fpu->fsw = (uint16_t)get(in, X86_GDB_FCTRL + 1);
	fpu->ftwx = x87_abridged_tag((uint16_t)get(in, X86_GDB_FCTRL + 2));
	fpu->last_ip = get(in, X86_GDB_FCTRL + 3) << 32 |
		       get(in, X86_GDB_FCTRL + 4);
	fpu->last_dp = get(in, X86_GDB_FCTRL + 5) << 32 |
		       get(in, X86_GDB_FCTRL + 6);
	fpu->last_opcode = (uint16_t)get(in, X86_GDB_FCTRL + 7);
	for (unsigned int i = 0; i < 16; i++)
		memcpy(fpu->xmm[i], in + reg_span(X86_GDB_XMM0 + i).offset, 16);
	fpu->mxcsr = (uint32_t)get(in, X86_GDB_MXCSR);
	sregs->fs.base = get(in, X86_GDB_FS_BASE);
	sregs->gs.base = get(in, X86_GDB_GS_BASE);
	__u64 *sys[6] = {&sregs->cr0, &sregs->cr2, &sregs->cr3,
			    &sregs->cr4, &sregs->cr8, &sregs->efer};
	for (unsigned int i = 0; i < 6; i++)
		*sys[i] = get(in, X86_GDB_CR0 + i);
}

static int get_state(struct vcpu *vcpu, struct kvm_regs *regs,
		     struct kvm_sregs *sregs, struct kvm_fpu *fpu)
{
	if (ioctl(vcpu->fd, KVM_GET_REGS, regs) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_SREGS, sregs) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_FPU, fpu) < 0)
		return -errno;
	return 0;
}

int arch_gdb_get_regs(struct vcpu *vcpu, uint8_t *file)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
	int err = get_state(vcpu, &regs, &sregs, &fpu);
	if (!err)
		x86_gdb_pack(file, &regs, &sregs, &fpu);
	return err;
}

/* Each set is written back only if gdb changed it: setting sregs again
 * (a segment's selector without its descriptor) is not without effect. */
int arch_gdb_set_regs(struct vcpu *vcpu, const uint8_t *file)
{
	struct kvm_regs regs, old_regs;
	struct kvm_sregs sregs, old_sregs;
	struct kvm_fpu fpu, old_fpu;
	int err = get_state(vcpu, &old_regs, &old_sregs, &old_fpu);
	if (err)
		return err;
	regs = old_regs;
	sregs = old_sregs;
	fpu = old_fpu;
	x86_gdb_unpack(file, &regs, &sregs, &fpu);
	if ((memcmp(&regs, &old_regs, sizeof(regs)) &&
	     ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0) ||
	    (memcmp(&sregs, &old_sregs, sizeof(sregs)) &&
	     ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0) ||
	    (memcmp(&fpu, &old_fpu, sizeof(fpu)) &&
	     ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0))
		return -errno;
	return 0;
}

/* KVM walks the guest's tables as the vCPU would (its CR3, 4 or 5 levels,
 * large pages; the identity without paging). */
int arch_gdb_translate(struct vcpu *vcpu, uint64_t gva, uint64_t *gpa)
{
	struct kvm_translation tr = {.linear_address = gva};
	if (ioctl(vcpu->fd, KVM_TRANSLATE, &tr) < 0)
		return -errno;
	if (!tr.valid)
		return -EFAULT;
	*gpa = tr.physical_address;
	return 0;
}

/* DR7's R/W and LEN fields of one point (Intel SDM 17.2.4). */
static uint64_t dr7_bits(const struct gdb_hw_point *p, unsigned int slot)
{
	static const unsigned int rw[] = {
		[GDB_POINT_EXEC] = 0,
		[GDB_POINT_WRITE] = 1,
		[GDB_POINT_READ] = 3, /* reads alone cannot be watched */
		[GDB_POINT_ACCESS] = 3,
	};
	unsigned int len = p->type == GDB_POINT_EXEC ? 0
			   : p->len == 2		? 1
			   : p->len == 4		? 3
			   : p->len == 8		? 2
							: 0;
	return (2ull << (2 * slot)) | /* G: enabled */
	       ((uint64_t)(rw[p->type] | len << 2) << (16 + 4 * slot));
}

int arch_gdb_set_debug(struct vcpu *vcpu, const struct gdb_debug *dbg,
		       bool step, uint32_t supported)
{
	struct kvm_guest_debug d = {0};
	if (dbg && dbg->nr_sw)
		d.control |= KVM_GUESTDBG_USE_SW_BP;
	d.arch.debugreg[7] = DR7_FIXED | DR7_GE;
	for (unsigned int i = 0; dbg && i < GDB_HW_POINTS; i++) {
		if (dbg->hw[i].type == GDB_POINT_NONE)
			continue;
		d.control |= KVM_GUESTDBG_USE_HW_BP;
		d.arch.debugreg[i] = dbg->hw[i].addr;
		d.arch.debugreg[7] |= dr7_bits(&dbg->hw[i], i);
	}
	/* A step runs the next instruction, not an interrupt handler. */
	if (step)
		d.control |= KVM_GUESTDBG_SINGLESTEP |
			     (supported & KVM_GUESTDBG_BLOCKIRQ);
	if (d.control)
		d.control |= KVM_GUESTDBG_ENABLE;
	return ioctl(vcpu->fd, KVM_SET_GUEST_DEBUG, &d) < 0 ? -errno : 0;
}

/* The guest's own #BP or #DB goes back to it, as KVM took it: injected
 * where it was raised (KVM knows the int3's length). */
static void reinject(struct vcpu *vcpu, unsigned int vector)
{
	struct kvm_vcpu_events ev;
	if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return;
	ev.exception.injected = 1;
	ev.exception.nr = (uint8_t)vector;
	ev.exception.has_error_code = 0;
	ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, &ev);
}

bool arch_gdb_debug_exit(struct vcpu *vcpu, const struct gdb_debug *dbg,
			 bool stepping, struct gdb_stop *stop)
{
	const struct kvm_debug_exit_arch *x = &vcpu->run->debug.arch;
	if (x->exception == BP_VECTOR) {
		for (unsigned int i = 0; i < dbg->nr_sw; i++)
			if (dbg->sw[i] == x->pc) {
				stop->kind = GDB_STOP_SWBREAK;
				return true;
			}
	} else if (x->exception == DB_VECTOR) {
		for (unsigned int i = 0; i < GDB_HW_POINTS; i++)
			if ((x->dr6 & (1u << i)) &&
			    dbg->hw[i].type != GDB_POINT_NONE) {
				stop->kind = GDB_STOP_HW;
				stop->slot = i;
				return true;
			}
		/* A stepping vCPU's #DB that no debug register explains is
		 * the step's (DR6.BS is not relied on). */
		if (stepping) {
			stop->kind = GDB_STOP_STEP;
			return true;
		}
	}
	reinject(vcpu, x->exception);
	return false;
}
