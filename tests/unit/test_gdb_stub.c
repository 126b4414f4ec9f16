/* Unit tests for core/gdb_stub (gdb's remote protocol) against a fake
 * target, and arch/x86/gdb_regs (the x86-64 register file gdb reads). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/gdb_regs.h"
#include "core/arch.h"
#include "core/gdb_stub.h"

#define THREADS 2
#define MEM_BASE 0x10000u
#define MEM_SIZE 0x3000u
/* The middle page is not mapped, as a hole in the guest's tables. */
#define HOLE_START (MEM_BASE + 0x1000u)
#define HOLE_END (MEM_BASE + 0x2000u)

struct fake {
	char out[16384];
	size_t out_len;
	uint8_t regs[THREADS][X86_GDB_REGS_SIZE];
	uint8_t mem[MEM_SIZE];
	enum gdb_action actions[THREADS];
	struct gdb_debug dbg;
	int resumes, interrupts, detaches, kills;
};

static int fake_send(void *t, const char *buf, size_t len)
{
	struct fake *f = t;
	assert_true(f->out_len + len <= sizeof(f->out));
	memcpy(f->out + f->out_len, buf, len);
	f->out_len += len;
	return 0;
}

static unsigned int fake_nr_threads(void *t)
{
	(void)t;
	return THREADS;
}

static int fake_read_regs(void *t, unsigned int thread, uint8_t *regs)
{
	struct fake *f = t;
	assert_true(thread < THREADS);
	memcpy(regs, f->regs[thread], X86_GDB_REGS_SIZE);
	return 0;
}

static int fake_write_regs(void *t, unsigned int thread, const uint8_t *regs)
{
	struct fake *f = t;
	assert_true(thread < THREADS);
	memcpy(f->regs[thread], regs, X86_GDB_REGS_SIZE);
	return 0;
}

static bool mapped(uint64_t addr, size_t len)
{
	for (uint64_t a = addr; a < addr + len; a++)
		if (a < MEM_BASE || a >= MEM_BASE + MEM_SIZE ||
		    (a >= HOLE_START && a < HOLE_END))
			return false;
	return true;
}

static int fake_read_mem(void *t, unsigned int thread, uint64_t addr,
			 void *buf, size_t len)
{
	struct fake *f = t;
	(void)thread;
	if (!mapped(addr, len))
		return -14;
	memcpy(buf, f->mem + (addr - MEM_BASE), len);
	return 0;
}

static int fake_write_mem(void *t, unsigned int thread, uint64_t addr,
			  const void *buf, size_t len)
{
	struct fake *f = t;
	(void)thread;
	if (!mapped(addr, len))
		return -14;
	memcpy(f->mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static void fake_resume(void *t, const enum gdb_action *actions,
			const struct gdb_debug *dbg)
{
	struct fake *f = t;
	memcpy(f->actions, actions, sizeof(f->actions));
	f->dbg = *dbg;
	f->resumes++;
}

static void fake_interrupt(void *t)
{
	((struct fake *)t)->interrupts++;
}

static void fake_detach(void *t)
{
	((struct fake *)t)->detaches++;
}

static void fake_kill(void *t)
{
	((struct fake *)t)->kills++;
}

static const struct gdb_target_ops fake_ops = {
	.send = fake_send,
	.nr_threads = fake_nr_threads,
	.read_regs = fake_read_regs,
	.write_regs = fake_write_regs,
	.read_mem = fake_read_mem,
	.write_mem = fake_write_mem,
	.resume = fake_resume,
	.interrupt = fake_interrupt,
	.detach = fake_detach,
	.kill = fake_kill,
};

struct session {
	struct fake fake;
	struct gdb_stub stub;
	char reply[16384];
};

static int setup(void **state)
{
	struct session *s = calloc(1, sizeof(*s));
	struct gdb_stop why = {.kind = GDB_STOP_INTERRUPT, .signal = 5};
	for (unsigned int i = 0; i < MEM_SIZE; i++)
		s->fake.mem[i] = (uint8_t)i;
	gdb_stub_init(&s->stub, &fake_ops, &s->fake, &why);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static void send_raw(struct session *s, const char *bytes, size_t len)
{
	s->fake.out_len = 0;
	gdb_stub_input(&s->stub, bytes, len);
}

/* Frames body as gdb does and sends it. */
static void send_packet(struct session *s, const char *body, size_t len)
{
	char frame[8192];
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum += (uint8_t)body[i];
	frame[0] = '$';
	memcpy(frame + 1, body, len);
	snprintf(frame + 1 + len, sizeof(frame) - 1 - len, "#%02x", sum);
	send_raw(s, frame, len + 4);
}

/* The reply's body, its framing and checksum checked; NULL: none. An
 * ack comes first unless no-ack mode is on. */
static const char *reply_body(struct session *s, bool ack)
{
	const char *p = s->fake.out, *end = p + s->fake.out_len;
	if (ack) {
		assert_true(p < end);
		assert_int_equal(*p, '+');
		p++;
	}
	if (p == end)
		return NULL;
	assert_int_equal(*p, '$');
	const char *hash = memchr(p, '#', (size_t)(end - p));
	assert_non_null(hash);
	assert_int_equal(end - hash, 3);
	uint8_t sum = 0;
	for (const char *c = p + 1; c < hash; c++)
		sum += (uint8_t)*c;
	char want[3];
	snprintf(want, sizeof(want), "%02x", sum);
	assert_memory_equal(hash + 1, want, 2);
	memcpy(s->reply, p + 1, (size_t)(hash - p - 1));
	s->reply[hash - p - 1] = '\0';
	return s->reply;
}

static const char *ask(struct session *s, const char *body)
{
	send_packet(s, body, strlen(body));
	return reply_body(s, !s->stub.no_ack);
}

/* Continues, then the target stops for stop: the stop reply. */
static const char *continue_until(struct session *s, struct gdb_stop stop)
{
	send_packet(s, "c", 1);
	s->fake.out_len = 0;
	gdb_stub_stopped(&s->stub, &stop);
	return reply_body(s, false);
}

static void test_framing_and_acks(void **state)
{
	struct session *s = *state;
	assert_string_equal(ask(s, "?"), "T05thread:1;");
	/* A bad checksum is NAKed and not answered. */
	send_raw(s, "$?#00", 5);
	assert_int_equal(s->fake.out_len, 1);
	assert_int_equal(s->fake.out[0], '-');
	/* A NAK of our reply sends it again. */
	ask(s, "qC");
	assert_string_equal(s->reply, "QC1");
	send_raw(s, "-", 1);
	assert_string_equal(reply_body(s, false), "QC1");
	/* Unknown packets get the empty reply. */
	assert_string_equal(ask(s, "vMustReplyEmpty"), "");
	assert_string_equal(ask(s, "qTStatus"), "");
	/* After QStartNoAckMode, no acks either way. */
	send_packet(s, "QStartNoAckMode", 15);
	assert_string_equal(reply_body(s, true), "OK");
	assert_true(s->stub.no_ack);
	assert_string_equal(ask(s, "qAttached"), "1");
	/* Two packets in one read, split anywhere. */
	send_raw(s, "$qC#b4$qC", 9);
	send_raw(s, "#b4", 3);
	assert_string_equal(reply_body(s, false), "QC1");
}

static void test_garbage_never_crashes(void **state)
{
	struct session *s = *state;
	char junk[3 * GDB_PACKET_MAX];
	/* A packet longer than any we take is NAKed. */
	junk[0] = '$';
	memset(junk + 1, 'A', sizeof(junk) - 4);
	memcpy(junk + sizeof(junk) - 3, "#00", 3);
	send_raw(s, junk, sizeof(junk));
	assert_int_equal(s->fake.out_len, 1);
	assert_int_equal(s->fake.out[0], '-');
	srand(1);
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < 64; i++)
			junk[i] = (char)(rand() & 0xff);
		send_raw(s, junk, 64);
	}
	/* Malformed arguments are errors, not crashes. */
	static const char *bad[] = {
		"mzz,4", "m10000", "M10000,2:1", "M10000,2:123", "X10000,5:ab",
		"p", "pffffffffffff", "P0=12", "Z0", "Z1,10000", "Z2,10001,2",
		"Z2,10000,3", "Hx1", "Hg9", "T9", "vCont;x", "vCont;c:zz",
		"qXfer:features:read:target.xml:zz", "G00",
	};
	gdb_stub_init(&s->stub, &fake_ops, &s->fake,
		      &(struct gdb_stop){.signal = 5});
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *r = ask(s, bad[i]);
		assert_non_null(r);
		assert_int_equal(r[0], 'E');
	}
	assert_int_equal(s->fake.resumes, 0);
	assert_string_equal(ask(s, "Z9,10000,1"), "");
}

static void test_supported_and_threads(void **state)
{
	struct session *s = *state;
	const char *r = ask(s, "qSupported:multiprocess+;swbreak+;hwbreak+");
	assert_non_null(strstr(r, "PacketSize=1000"));
	assert_non_null(strstr(r, "qXfer:features:read+"));
	assert_non_null(strstr(r, "QStartNoAckMode+"));
	assert_string_equal(ask(s, "qfThreadInfo"), "m1,2");
	assert_string_equal(ask(s, "qsThreadInfo"), "l");
	assert_string_equal(ask(s, "Hg2"), "OK");
	assert_string_equal(ask(s, "qC"), "QC2");
	assert_string_equal(ask(s, "Hg0"), "OK");
	assert_string_equal(ask(s, "qC"), "QC1");
	assert_string_equal(ask(s, "T2"), "OK");
	assert_string_equal(ask(s, "Hc-1"), "OK");
	/* "vCPU 1" in hex */
	assert_string_equal(ask(s, "qThreadExtraInfo,2"), "764350552031");
}

static void test_target_xml(void **state)
{
	struct session *s = *state;
	const char *xml = arch_gdb_target_xml();
	/* Longer than a packet: in parts, as gdb reads it. */
	char whole[8192] = "";
	const char *r;
	do {
		char q[64];
		snprintf(q, sizeof(q), "qXfer:features:read:target.xml:%zx,ffff",
			 strlen(whole));
		r = ask(s, q);
		assert_true(r[0] == 'm' || r[0] == 'l');
		assert_true(strlen(whole) + strlen(r + 1) < sizeof(whole));
		strcat(whole, r + 1);
	} while (r[0] == 'm');
	assert_string_equal(whole, xml);
	assert_non_null(strstr(xml, "<architecture>i386:x86-64</architecture>"));
	assert_non_null(strstr(xml, "org.gnu.gdb.i386.core"));
	assert_non_null(strstr(xml, "org.gnu.gdb.i386.sse"));
	assert_non_null(strstr(xml, "name=\"fs_base\""));
	r = ask(s, "qXfer:features:read:target.xml:10,20");
	assert_int_equal(r[0], 'm');
	assert_int_equal(strlen(r + 1), 0x20);
	assert_memory_equal(r + 1, xml + 0x10, 0x20);
	assert_string_equal(ask(s, "qXfer:features:read:other.xml:0,10"), "E00");
}

static void known_state(struct kvm_regs *regs, struct kvm_sregs *sregs,
			struct kvm_fpu *fpu)
{
	*regs = (struct kvm_regs){.rax = 0x1122334455667788, .rbx = 2,
				  .rbp = 0xbbbb, .rsp = 0x5555, .r15 = 15,
				  .rip = 0xffffffff81000000,
				  .rflags = 0x246};
	*sregs = (struct kvm_sregs){.cs = {.selector = 0x10},
				    .ss = {.selector = 0x18},
				    .fs = {.base = 0x7f0000001000},
				    .gs = {.base = 0xffff888000000000},
				    .cr0 = 0x80050033, .cr3 = 0x1000,
				    .cr4 = 0x20, .efer = 0xd01};
	*fpu = (struct kvm_fpu){.fcw = 0x37f, .fsw = 0, .ftwx = 0x01,
				.last_ip = 0x1234567890, .mxcsr = 0x1f80};
	/* st0 = 1.0: integer bit set, exponent 0x3fff: a valid number. */
	fpu->fpr[0][7] = 0x80;
	fpu->fpr[0][8] = 0xff;
	fpu->fpr[0][9] = 0x3f;
	fpu->xmm[0][0] = 0xaa;
	fpu->xmm[15][15] = 0xbb;
}

static uint64_t at(const uint8_t *file, size_t off, size_t size)
{
	uint64_t v = 0;
	memcpy(&v, file + off, size);
	return v;
}

static void test_register_layout(void **state)
{
	(void)state;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
	uint8_t file[X86_GDB_REGS_SIZE];
	known_state(&regs, &sregs, &fpu);
	x86_gdb_pack(file, &regs, &sregs, &fpu);
	assert_int_equal(arch_gdb_regs_size(), 600);
	assert_true(at(file, 0, 8) == 0x1122334455667788);
	assert_int_equal(at(file, 8, 8), 2);       /* rbx */
	assert_int_equal(at(file, 48, 8), 0xbbbb); /* rbp: gdb's 6 */
	assert_int_equal(at(file, 56, 8), 0x5555); /* rsp: gdb's 7 */
	assert_int_equal(at(file, 120, 8), 15);    /* r15 */
	assert_true(at(file, 128, 8) == 0xffffffff81000000);
	assert_int_equal(at(file, 136, 4), 0x246); /* eflags */
	assert_int_equal(at(file, 140, 4), 0x10);  /* cs */
	assert_int_equal(at(file, 144, 4), 0x18);  /* ss */
	assert_int_equal(file[164 + 9], 0x3f);     /* st0's exponent */
	assert_int_equal(at(file, 244, 4), 0x37f); /* fctrl */
	/* ftag: st0 valid (0), the rest empty (3). */
	assert_int_equal(at(file, 252, 4), 0xfffc);
	assert_int_equal(at(file, 256, 4), 0x12);       /* fiseg */
	assert_int_equal(at(file, 260, 4), 0x34567890); /* fioff */
	assert_int_equal(file[276], 0xaa);              /* xmm0 */
	assert_int_equal(file[276 + 15 * 16 + 15], 0xbb); /* xmm15 */
	assert_int_equal(at(file, 532, 4), 0x1f80);       /* mxcsr */
	assert_true(at(file, 536, 8) == 0x7f0000001000); /* fs_base */
	assert_true(at(file, 544, 8) == 0xffff888000000000);
	assert_int_equal(at(file, 552, 8), 0x80050033); /* cr0 */
	assert_int_equal(at(file, 568, 8), 0x1000);     /* cr3 */
	assert_int_equal(at(file, 592, 8), 0xd01);      /* efer */

	size_t off, size;
	assert_true(arch_gdb_reg(X86_GDB_RIP, &off, &size));
	assert_int_equal(off, 128);
	assert_int_equal(size, 8);
	assert_true(arch_gdb_reg(X86_GDB_ST0 + 7, &off, &size));
	assert_int_equal(off, 164 + 70);
	assert_int_equal(size, 10);
	assert_true(arch_gdb_reg(X86_GDB_EFER, &off, &size));
	assert_int_equal(off + size, 600);
	assert_false(arch_gdb_reg(X86_GDB_NR_REGS, &off, &size));

	/* And back: the same sets. */
	struct kvm_regs r2 = {0};
	struct kvm_sregs s2 = sregs;
	struct kvm_fpu f2 = {0};
	s2.cs.selector = s2.ss.selector = 0;
	s2.cr0 = s2.efer = s2.fs.base = 0;
	x86_gdb_unpack(file, &r2, &s2, &f2);
	assert_memory_equal(&r2, &regs, sizeof(regs));
	assert_memory_equal(&s2, &sregs, sizeof(sregs));
	assert_memory_equal(&f2, &fpu, sizeof(fpu));
}

static void test_g_and_p_packets(void **state)
{
	struct session *s = *state;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
	known_state(&regs, &sregs, &fpu);
	x86_gdb_pack(s->fake.regs[1], &regs, &sregs, &fpu);
	assert_string_equal(ask(s, "Hg2"), "OK");
	const char *g = ask(s, "g");
	assert_int_equal(strlen(g), 1200);
	assert_memory_equal(g, "8877665544332211", 16);
	assert_memory_equal(g + 2 * 128, "00000081ffffffff", 16);
	assert_memory_equal(g + 2 * 136, "46020000", 8);
	assert_string_equal(ask(s, "p10"), "00000081ffffffff");
	assert_string_equal(ask(s, "p11"), "46020000");
	assert_string_equal(ask(s, "p41"), "E22"); /* no register 65 */
	assert_string_equal(ask(s, "P10=0100000000000000"), "OK");
	assert_int_equal(at(s->fake.regs[1], 128, 8), 1);
	assert_int_equal(at(s->fake.regs[0], 128, 8), 0); /* thread 1's */
	/* G writes the whole file back. */
	char G[1 + 1200 + 1];
	G[0] = 'G';
	memcpy(G + 1, ask(s, "g"), 1200);
	G[1201] = '\0';
	memcpy(G + 1, "ff", 2);
	assert_string_equal(ask(s, G), "OK");
	assert_int_equal(s->fake.regs[1][0], 0xff);
}

static void test_memory(void **state)
{
	struct session *s = *state;
	assert_string_equal(ask(s, "m10000,4"), "00010203");
	/* Up to the hole, and across it. */
	assert_string_equal(ask(s, "m10ffe,2"), "feff");
	assert_string_equal(ask(s, "m10ffe,4"), "E14");
	assert_string_equal(ask(s, "m0,4"), "E14");
	assert_string_equal(ask(s, "M10000,2:abcd"), "OK");
	assert_string_equal(ask(s, "m10000,3"), "abcd02");
	assert_string_equal(ask(s, "M11000,1:00"), "E14");
	/* X: binary, '}' escapes the next byte ^ 0x20 ('#' is }\x03). */
	const char x[] = "X10004,3:}\x03" "a}]";
	send_packet(s, x, sizeof(x) - 1);
	assert_string_equal(reply_body(s, true), "OK");
	assert_string_equal(ask(s, "m10004,3"), "23617d");
	assert_string_equal(ask(s, "X10004,0:"), "OK");
	/* A long read is cut to what a packet holds. */
	assert_int_equal(strlen(ask(s, "m12000,1000")), GDB_PACKET_MAX);
}

static void test_breakpoints(void **state)
{
	struct session *s = *state;
	assert_string_equal(ask(s, "Z0,10010,1"), "OK");
	assert_int_equal(s->fake.mem[0x10], 0xcc);
	assert_string_equal(ask(s, "Z0,10010,1"), "OK"); /* twice is once */
	assert_string_equal(ask(s, "z0,10010,1"), "OK");
	assert_int_equal(s->fake.mem[0x10], 0x10);
	/* Four debug registers: a fifth point is refused. */
	assert_string_equal(ask(s, "Z1,10020,1"), "OK");
	assert_string_equal(ask(s, "Z2,10040,8"), "OK");
	assert_string_equal(ask(s, "Z3,10050,4"), "OK");
	/* Unmapped: a software breakpoint takes a debug register. */
	assert_string_equal(ask(s, "Z0,11000,1"), "OK");
	assert_string_equal(ask(s, "Z4,10060,2"), "E28");
	assert_string_equal(ask(s, "Z0,11008,1"), "E28");
	assert_string_equal(ask(s, "Z0,10030,1"), "OK");

	assert_int_equal(s->fake.resumes, 0);
	send_packet(s, "c", 1);
	assert_null(reply_body(s, true)); /* the reply is the stop */
	assert_int_equal(s->fake.resumes, 1);
	const struct gdb_debug *d = &s->fake.dbg;
	assert_int_equal(d->hw[0].type, GDB_POINT_EXEC);
	assert_int_equal(d->hw[0].addr, 0x10020);
	assert_int_equal(d->hw[1].type, GDB_POINT_WRITE);
	assert_int_equal(d->hw[1].len, 8);
	assert_int_equal(d->hw[2].type, GDB_POINT_READ);
	assert_int_equal(d->hw[3].type, GDB_POINT_EXEC);
	assert_int_equal(d->hw[3].addr, 0x11000);
	assert_int_equal(d->nr_sw, 1);
	assert_int_equal(d->sw[0], 0x10030);
	assert_int_equal(s->fake.actions[0], GDB_CONTINUE);
	assert_int_equal(s->fake.actions[1], GDB_CONTINUE);

	/* Each stop says why. */
	s->fake.out_len = 0;
	gdb_stub_stopped(&s->stub, &(struct gdb_stop){.kind = GDB_STOP_HW,
						      .thread = 1, .slot = 1});
	assert_string_equal(reply_body(s, false), "T05thread:2;watch:10040;");
	assert_string_equal(ask(s, "qC"), "QC2");
	assert_string_equal(continue_until(s, (struct gdb_stop){.kind = GDB_STOP_HW,
								.slot = 2}),
			    "T05thread:1;rwatch:10050;");
	assert_string_equal(continue_until(s, (struct gdb_stop){.kind = GDB_STOP_HW,
								.slot = 3}),
			    "T05thread:1;swbreak:;");
	assert_string_equal(continue_until(s, (struct gdb_stop){.kind = GDB_STOP_HW}),
			    "T05thread:1;hwbreak:;");
	assert_string_equal(continue_until(s, (struct gdb_stop){.kind = GDB_STOP_SWBREAK,
								.thread = 1}),
			    "T05thread:2;swbreak:;");
	assert_string_equal(ask(s, "?"), "T05thread:2;swbreak:;");

	/* Removing frees the slot for another. */
	assert_string_equal(ask(s, "z2,10040,8"), "OK");
	assert_string_equal(ask(s, "Z4,10060,2"), "OK");
	/* Detaching takes every breakpoint out of memory. */
	assert_string_equal(ask(s, "D"), "OK");
	assert_int_equal(s->fake.detaches, 1);
	assert_int_equal(s->fake.mem[0x30], 0x30);
	assert_true(gdb_stub_over(&s->stub));
}

static void test_resume_and_interrupt(void **state)
{
	struct session *s = *state;
	assert_string_equal(ask(s, "vCont?"), "vCont;c;C;s;S");
	send_packet(s, "vCont;s:2;c", 11);
	assert_int_equal(s->fake.actions[0], GDB_CONTINUE);
	assert_int_equal(s->fake.actions[1], GDB_STEP);
	/* While it runs only Ctrl-C counts. */
	send_packet(s, "g", 1);
	assert_int_equal(s->fake.out_len, 1); /* the ack alone */
	send_raw(s, "\x03", 1);
	assert_int_equal(s->fake.interrupts, 1);
	assert_string_equal(reply_body(s, false), "T02thread:1;");
	/* A stop after the interrupt is not reported twice. */
	s->fake.out_len = 0;
	gdb_stub_stopped(&s->stub, &(struct gdb_stop){.kind = GDB_STOP_STEP});
	assert_int_equal(s->fake.out_len, 0);
	/* vCont naming one thread alone holds the other. */
	send_packet(s, "vCont;s:1", 9);
	assert_int_equal(s->fake.actions[0], GDB_STEP);
	assert_int_equal(s->fake.actions[1], GDB_HOLD);
	s->fake.out_len = 0;
	gdb_stub_stopped(&s->stub, &(struct gdb_stop){.kind = GDB_STOP_STEP});
	assert_string_equal(reply_body(s, false), "T05thread:1;");
	/* s steps the Hc thread; C's signal is dropped. */
	assert_string_equal(ask(s, "Hc2"), "OK");
	send_packet(s, "s", 1);
	assert_int_equal(s->fake.actions[0], GDB_HOLD);
	assert_int_equal(s->fake.actions[1], GDB_STEP);
	gdb_stub_stopped(&s->stub, &(struct gdb_stop){.kind = GDB_STOP_STEP});
	send_packet(s, "C0b", 3);
	assert_int_equal(s->fake.actions[0], GDB_CONTINUE);
	/* The VM's end reaches a waiting gdb. */
	s->fake.out_len = 0;
	gdb_stub_exited(&s->stub, 3);
	assert_string_equal(reply_body(s, false), "W03");
	assert_true(gdb_stub_over(&s->stub));
}

static void test_kill(void **state)
{
	struct session *s = *state;
	assert_string_equal(ask(s, "Z0,10010,1"), "OK");
	send_packet(s, "k", 1);
	assert_int_equal(s->fake.kills, 1);
	assert_int_equal(s->fake.mem[0x10], 0x10);
	assert_true(gdb_stub_over(&s->stub));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_framing_and_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_never_crashes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_supported_and_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_target_xml, setup, teardown),
		cmocka_unit_test(test_register_layout),
		cmocka_unit_test_setup_teardown(test_g_and_p_packets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_breakpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_and_interrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
