/* gdb's remote serial protocol (gdb's manual, "Remote Protocol"): framing
 * ($data#sum, acks until QStartNoAckMode, binary escapes), the packets an
 * all-stop gdb 13 sends a bare-metal target, and the breakpoint table. */
#include "core/gdb_stub.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/arch.h"

/* Error replies: gdb shows the number only; these follow errno. */
#define REPLY_EFAULT "E14"
#define REPLY_EINVAL "E22"
#define REPLY_ENOSPC "E28"

static const char hex_digits[] = "0123456789abcdef";

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void hex_encode(char *out, const uint8_t *in, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex_digits[in[i] >> 4];
		out[2 * i + 1] = hex_digits[in[i] & 0xf];
	}
}

/* Exactly 2 * len hex digits into len bytes. */
static bool hex_decode(uint8_t *out, const char *in, size_t in_len,
		       size_t len)
{
	if (in_len != 2 * len)
		return false;
	for (size_t i = 0; i < len; i++) {
		int hi = hex_value(in[2 * i]), lo = hex_value(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* A hex number at *p, up to 16 digits; *p moves past it. */
static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	*v = 0;
	while (*p < end && hex_value(**p) >= 0 && *p - s < 16)
		*v = *v << 4 | (uint64_t)hex_value(*(*p)++);
	return *p > s && (*p == end || hex_value(**p) < 0);
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

static void send_raw(struct gdb_stub *stub, const char *buf, size_t len)
{
	if (stub->send_failed)
		return;
	if (stub->ops->send(stub->target, buf, len) < 0)
		stub->send_failed = true;
}

/* One packet; binary bytes gdb would take for framing are escaped. */
static void send_packet_bin(struct gdb_stub *stub, const char *data,
			    size_t len, bool escape)
{
	char *o = stub->out;
	uint8_t sum = 0;
	size_t n = 0;
	o[n++] = '$';
	for (size_t i = 0; i < len && n < sizeof(stub->out) - 4; i++) {
		char c = data[i];
		if (escape && (c == '$' || c == '#' || c == '}' || c == '*')) {
			o[n++] = '}';
			sum += '}';
			c ^= 0x20;
		}
		o[n++] = c;
		sum += (uint8_t)c;
	}
	o[n++] = '#';
	o[n++] = hex_digits[sum >> 4];
	o[n++] = hex_digits[sum & 0xf];
	stub->out_len = n;
	send_raw(stub, o, n);
}

static void reply(struct gdb_stub *stub, const char *text)
{
	send_packet_bin(stub, text, strlen(text), false);
}

/* Bytes as hex: the reply to g, p, m and qThreadExtraInfo. */
static void reply_hex(struct gdb_stub *stub, const uint8_t *bytes, size_t len)
{
	char hex[GDB_PACKET_MAX + 1];
	if (len > GDB_PACKET_MAX / 2)
		len = GDB_PACKET_MAX / 2;
	hex_encode(hex, bytes, len);
	hex[2 * len] = '\0';
	reply(stub, hex);
}

static unsigned int nr_threads(struct gdb_stub *stub)
{
	return stub->ops->nr_threads(stub->target);
}


/* A thread id: vCPU index + 1 (0 is any, -1 all, which Hg/Hc map to the
 * first thread). Fills *thread with the vCPU index. */
static bool parse_thread(struct gdb_stub *stub, const char *p,
			 const char *end, unsigned int *thread)
{
	if (end - p == 2 && p[0] == '-' && p[1] == '1') {
		*thread = 0;
		return true;
	}
	uint64_t id;
	if (!parse_hex(&p, end, &id) || id > nr_threads(stub))
		return false;
	*thread = id ? (unsigned int)id - 1 : 0;
	return true;
}

static void stop_reply(struct gdb_stub *stub, const struct gdb_stop *stop)
{
	char buf[96];
	unsigned int tid = stop->thread + 1;
	const struct gdb_hw_point *hw = &stub->hw[stop->slot % GDB_HW_POINTS];
	const char *watch = NULL;
	switch (stop->kind) {
	case GDB_STOP_INTERRUPT:
		snprintf(buf, sizeof(buf), "T%02xthread:%x;", stop->signal, tid);
		break;
	case GDB_STOP_SWBREAK:
		snprintf(buf, sizeof(buf), "T05thread:%x;swbreak:;", tid);
		break;
	case GDB_STOP_HW:
		if (hw->type == GDB_POINT_WRITE)
			watch = "watch";
		else if (hw->type == GDB_POINT_READ)
			watch = "rwatch";
		else if (hw->type == GDB_POINT_ACCESS)
			watch = "awatch";
		if (watch)
			snprintf(buf, sizeof(buf), "T05thread:%x;%s:%" PRIx64 ";",
				 tid, watch, hw->addr);
		else
			snprintf(buf, sizeof(buf), "T05thread:%x;%s:;", tid,
				 hw->for_z0 ? "swbreak" : "hwbreak");
		break;
	default:
		snprintf(buf, sizeof(buf), "T05thread:%x;", tid);
		break;
	}
	reply(stub, buf);
}

static void read_registers(struct gdb_stub *stub)
{
	uint8_t regs[GDB_REGS_MAX];
	if (stub->ops->read_regs(stub->target, stub->g_thread, regs) < 0)
		reply(stub, REPLY_EFAULT);
	else
		reply_hex(stub, regs, arch_gdb_regs_size());
}

static void write_registers(struct gdb_stub *stub, const char *p,
			    const char *end)
{
	uint8_t regs[GDB_REGS_MAX];
	size_t size = arch_gdb_regs_size();
	if (!hex_decode(regs, p, (size_t)(end - p), size)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	reply(stub, stub->ops->write_regs(stub->target, stub->g_thread, regs) < 0
			    ? REPLY_EFAULT
			    : "OK");
}

/* p N and P N=VALUE: one register, in the register file's place. */
static void one_register(struct gdb_stub *stub, const char *p,
			 const char *end, bool write)
{
	uint64_t regno;
	size_t off, size;
	uint8_t regs[GDB_REGS_MAX];
	if (!parse_hex(&p, end, &regno) || regno > UINT32_MAX ||
	    (write ? !expect(&p, end, '=') : p != end)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	/* An unknown register is an error, which gdb takes as unavailable. */
	if (!arch_gdb_reg((unsigned int)regno, &off, &size) ||
	    stub->ops->read_regs(stub->target, stub->g_thread, regs) < 0) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	if (!write) {
		reply_hex(stub, regs + off, size);
		return;
	}
	if (!hex_decode(regs + off, p, (size_t)(end - p), size)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	reply(stub, stub->ops->write_regs(stub->target, stub->g_thread, regs) < 0
			    ? REPLY_EFAULT
			    : "OK");
}

/* ADDR,LEN and what follows it (':' for writes). */
static bool parse_addr_len(const char **p, const char *end, uint64_t *addr,
			   uint64_t *len)
{
	return parse_hex(p, end, addr) && expect(p, end, ',') &&
	       parse_hex(p, end, len);
}

static void read_memory(struct gdb_stub *stub, const char *p, const char *end)
{
	uint64_t addr, len;
	uint8_t data[GDB_PACKET_MAX / 2];
	if (!parse_addr_len(&p, end, &addr, &len) || p != end) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	/* gdb splits reads to fit PacketSize; a longer one is cut short. */
	if (len > sizeof(data))
		len = sizeof(data);
	if (stub->ops->read_mem(stub->target, stub->g_thread, addr, data, len) < 0)
		reply(stub, REPLY_EFAULT);
	else
		reply_hex(stub, data, len);
}

/* M (hex) and X (binary, '}' escapes already resolved by the caller). */
static void write_memory(struct gdb_stub *stub, const char *p,
			 const char *end, bool binary)
{
	uint64_t addr, len;
	uint8_t data[GDB_PACKET_MAX];
	if (!parse_addr_len(&p, end, &addr, &len) || !expect(&p, end, ':') ||
	    len > sizeof(data)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	if (binary) {
		size_t n = 0;
		for (; p < end && n < sizeof(data); p++)
			data[n++] = (uint8_t)(*p == '}' && p + 1 < end
						      ? *++p ^ 0x20
						      : *p);
		if (n != len) {
			reply(stub, REPLY_EINVAL);
			return;
		}
	} else if (!hex_decode(data, p, (size_t)(end - p), len)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	if (len && stub->ops->write_mem(stub->target, stub->g_thread, addr,
					data, len) < 0) {
		reply(stub, REPLY_EFAULT);
		return;
	}
	reply(stub, "OK");
}

static struct gdb_sw_breakpoint *find_sw(struct gdb_stub *stub, uint64_t addr)
{
	for (unsigned int i = 0; i < GDB_SW_BREAKPOINTS; i++)
		if (stub->sw[i].used && stub->sw[i].addr == addr)
			return &stub->sw[i];
	return NULL;
}

static int find_hw(struct gdb_stub *stub, enum gdb_point_type type,
		   uint64_t addr, unsigned int len, bool for_z0)
{
	for (int i = 0; i < GDB_HW_POINTS; i++) {
		const struct gdb_hw_point *h = &stub->hw[i];
		if (h->type == type && h->addr == addr && h->len == len &&
		    h->for_z0 == for_z0)
			return i;
	}
	return -1;
}

static const char *add_hw(struct gdb_stub *stub, enum gdb_point_type type,
			  uint64_t addr, unsigned int len, bool for_z0)
{
	if (find_hw(stub, type, addr, len, for_z0) >= 0)
		return "OK";
	int free_slot = find_hw(stub, GDB_POINT_NONE, 0, 0, false);
	if (free_slot < 0)
		return REPLY_ENOSPC;
	stub->hw[free_slot] = (struct gdb_hw_point){
		.type = type, .addr = addr, .len = len, .for_z0 = for_z0};
	return "OK";
}

/* A software breakpoint is the arch's trap instruction over the code; one
 * at an address not mapped yet (the kernel's, before it has its page
 * tables) takes a debug register instead. */
static const char *add_sw(struct gdb_stub *stub, uint64_t addr)
{
	if (find_sw(stub, addr) || find_hw(stub, GDB_POINT_EXEC, addr, 1, true) >= 0)
		return "OK";
	struct gdb_sw_breakpoint *bp = NULL;
	for (unsigned int i = 0; !bp && i < GDB_SW_BREAKPOINTS; i++)
		if (!stub->sw[i].used)
			bp = &stub->sw[i];
	if (!bp)
		return REPLY_ENOSPC;
	size_t len;
	const uint8_t *insn = arch_gdb_break_insn(&len);
	if (stub->ops->read_mem(stub->target, stub->g_thread, addr, bp->saved,
				len) < 0 ||
	    stub->ops->write_mem(stub->target, stub->g_thread, addr, insn, len) <
		    0)
		return add_hw(stub, GDB_POINT_EXEC, addr, 1, true);
	bp->addr = addr;
	bp->used = true;
	return "OK";
}

static void remove_sw(struct gdb_stub *stub, struct gdb_sw_breakpoint *bp)
{
	size_t len;
	arch_gdb_break_insn(&len);
	/* Memory that went away with the breakpoint in it leaves nothing to
	 * put back. */
	stub->ops->write_mem(stub->target, stub->g_thread, bp->addr, bp->saved,
			     len);
	bp->used = false;
}

static void remove_all_points(struct gdb_stub *stub)
{
	for (unsigned int i = 0; i < GDB_SW_BREAKPOINTS; i++)
		if (stub->sw[i].used)
			remove_sw(stub, &stub->sw[i]);
	memset(stub->hw, 0, sizeof(stub->hw));
}

/* Z/z TYPE,ADDR,KIND: KIND is the length of a watchpoint. */
static void breakpoint(struct gdb_stub *stub, const char *p, const char *end,
		       bool insert)
{
	uint64_t type, addr, kind;
	if (!parse_hex(&p, end, &type) || !expect(&p, end, ',') ||
	    !parse_addr_len(&p, end, &addr, &kind)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	/* Conditions and commands for the target to run (";cond") are
	 * gdb's to evaluate: not offered, so never sent. */
	if (type == 0) {
		if (insert) {
			reply(stub, add_sw(stub, addr));
			return;
		}
		struct gdb_sw_breakpoint *bp = find_sw(stub, addr);
		int slot = find_hw(stub, GDB_POINT_EXEC, addr, 1, true);
		if (bp)
			remove_sw(stub, bp);
		else if (slot >= 0)
			stub->hw[slot] = (struct gdb_hw_point){0};
		reply(stub, "OK");
		return;
	}
	static const enum gdb_point_type types[] = {
		[1] = GDB_POINT_EXEC,
		[2] = GDB_POINT_WRITE,
		[3] = GDB_POINT_READ,
		[4] = GDB_POINT_ACCESS,
	};
	if (type > 4) {
		reply(stub, ""); /* not supported: gdb says so */
		return;
	}
	unsigned int len = type == 1 ? 1 : (unsigned int)kind;
	/* The debug registers watch 1, 2, 4 or 8 aligned bytes. */
	if ((len != 1 && len != 2 && len != 4 && len != 8) || addr % len) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	if (insert) {
		reply(stub, add_hw(stub, types[type], addr, len, false));
		return;
	}
	int slot = find_hw(stub, types[type], addr, len, false);
	if (slot >= 0)
		stub->hw[slot] = (struct gdb_hw_point){0};
	reply(stub, "OK");
}

static void resume(struct gdb_stub *stub, const enum gdb_action *actions)
{
	struct gdb_debug dbg = {0};
	memcpy(dbg.hw, stub->hw, sizeof(dbg.hw));
	for (unsigned int i = 0; i < GDB_SW_BREAKPOINTS; i++)
		if (stub->sw[i].used)
			dbg.sw[dbg.nr_sw++] = stub->sw[i].addr;
	stub->running = true;
	stub->ops->resume(stub->target, actions, &dbg);
}

/* c, s, C and S: a signal means nothing to a VM and is dropped, and so
 * is an address to resume at (gdb's jump sets the pc itself). s steps
 * the Hc thread alone. */
static void resume_all(struct gdb_stub *stub, bool step)
{
	enum gdb_action actions[nr_threads(stub)];
	for (unsigned int i = 0; i < nr_threads(stub); i++)
		actions[i] = step ? (i == stub->c_thread ? GDB_STEP : GDB_HOLD)
				  : GDB_CONTINUE;
	resume(stub, actions);
}

/* vCont;ACTION[:TID];...: each thread takes the leftmost action naming
 * it (or naming none); threads no action names stay stopped. */
static void vcont(struct gdb_stub *stub, const char *p, const char *end)
{
	unsigned int n = nr_threads(stub);
	enum gdb_action actions[n];
	bool set[n];
	for (unsigned int i = 0; i < n; i++) {
		actions[i] = GDB_HOLD;
		set[i] = false;
	}
	while (p < end) {
		if (!expect(&p, end, ';') || p >= end) {
			reply(stub, REPLY_EINVAL);
			return;
		}
		char a = *p++;
		enum gdb_action action;
		if (a == 'c' || a == 'C')
			action = GDB_CONTINUE;
		else if (a == 's' || a == 'S')
			action = GDB_STEP;
		else {
			reply(stub, REPLY_EINVAL);
			return;
		}
		uint64_t sig;
		if ((a == 'C' || a == 'S') && !parse_hex(&p, end, &sig)) {
			reply(stub, REPLY_EINVAL);
			return;
		}
		const char *next = memchr(p, ';', (size_t)(end - p));
		if (!next)
			next = end;
		bool all = true;
		unsigned int thread = 0;
		if (p < next) {
			if (!expect(&p, next, ':') ||
			    !parse_thread(stub, p, next, &thread)) {
				reply(stub, REPLY_EINVAL);
				return;
			}
			all = next - p == 2 && p[0] == '-';
		}
		for (unsigned int i = 0; i < n; i++)
			if ((all || i == thread) && !set[i]) {
				actions[i] = action;
				set[i] = true;
			}
		p = next;
	}
	resume(stub, actions);
}

/* qXfer:features:read:ANNEX:OFFSET,LENGTH, for target.xml. */
static void read_features(struct gdb_stub *stub, const char *p,
			  const char *end)
{
	static const char annex[] = "target.xml:";
	uint64_t off, len;
	if ((size_t)(end - p) < sizeof(annex) - 1 ||
	    memcmp(p, annex, sizeof(annex) - 1)) {
		reply(stub, "E00"); /* no such annex */
		return;
	}
	p += sizeof(annex) - 1;
	if (!parse_addr_len(&p, end, &off, &len) || p != end) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	const char *xml = arch_gdb_target_xml();
	size_t size = strlen(xml);
	char buf[GDB_PACKET_MAX];
	if (off > size)
		off = size;
	/* Room for the 'm' or 'l' and for escapes. */
	if (len > sizeof(buf) / 2 - 1)
		len = sizeof(buf) / 2 - 1;
	if (len > size - off)
		len = size - off;
	buf[0] = off + len < size ? 'm' : 'l';
	memcpy(buf + 1, xml + off, len);
	send_packet_bin(stub, buf, len + 1, true);
}

static void thread_info(struct gdb_stub *stub)
{
	char buf[GDB_PACKET_MAX];
	size_t n = 0;
	buf[n++] = 'm';
	for (unsigned int i = 0; i < nr_threads(stub) && n < sizeof(buf) - 12; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%x",
				      i ? "," : "", i + 1);
	buf[n] = '\0';
	reply(stub, buf);
}

static void thread_extra_info(struct gdb_stub *stub, const char *p,
			      const char *end)
{
	unsigned int thread;
	if (!parse_thread(stub, p, end, &thread)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	char text[32];
	int n = snprintf(text, sizeof(text), "vCPU %u", thread);
	reply_hex(stub, (const uint8_t *)text, (size_t)n);
}

static bool starts(const char *p, const char *end, const char *prefix)
{
	size_t n = strlen(prefix);
	return (size_t)(end - p) >= n && !memcmp(p, prefix, n);
}

static void query(struct gdb_stub *stub, const char *p, const char *end)
{
	char buf[128];
	if (starts(p, end, "qSupported")) {
		snprintf(buf, sizeof(buf),
			 "PacketSize=%x;qXfer:features:read+;QStartNoAckMode+;"
			 "swbreak+;hwbreak+",
			 GDB_PACKET_MAX);
		reply(stub, buf);
	} else if (starts(p, end, "qXfer:features:read:")) {
		read_features(stub, p + strlen("qXfer:features:read:"), end);
	} else if (starts(p, end, "qfThreadInfo")) {
		thread_info(stub);
	} else if (starts(p, end, "qsThreadInfo")) {
		reply(stub, "l");
	} else if (starts(p, end, "qThreadExtraInfo,")) {
		thread_extra_info(stub, p + strlen("qThreadExtraInfo,"), end);
	} else if (end - p == 2 && starts(p, end, "qC")) {
		snprintf(buf, sizeof(buf), "QC%x", stub->g_thread + 1);
		reply(stub, buf);
	} else if (starts(p, end, "qAttached")) {
		/* Attached to a VM that runs without gdb: gdb's quit
		 * detaches, it does not kill. */
		reply(stub, "1");
	} else if (starts(p, end, "qSymbol")) {
		reply(stub, "OK");
	} else {
		reply(stub, "");
	}
}

static void set_thread(struct gdb_stub *stub, const char *p, const char *end)
{
	unsigned int thread;
	if (p >= end || (*p != 'g' && *p != 'c') ||
	    !parse_thread(stub, p + 1, end, &thread)) {
		reply(stub, REPLY_EINVAL);
		return;
	}
	if (*p == 'g')
		stub->g_thread = thread;
	else
		stub->c_thread = thread;
	reply(stub, "OK");
}

static void detach(struct gdb_stub *stub)
{
	remove_all_points(stub);
	reply(stub, "OK");
	stub->ops->detach(stub->target);
	stub->ended = true;
}

static void handle_packet(struct gdb_stub *stub, const char *p, size_t len)
{
	const char *end = p + len;
	unsigned int thread;
	if (len == 0) {
		reply(stub, "");
		return;
	}
	switch (p[0]) {
	case '?':
		stop_reply(stub, &stub->last_stop);
		break;
	case 'g':
		read_registers(stub);
		break;
	case 'G':
		write_registers(stub, p + 1, end);
		break;
	case 'p':
	case 'P':
		one_register(stub, p + 1, end, p[0] == 'P');
		break;
	case 'm':
		read_memory(stub, p + 1, end);
		break;
	case 'M':
	case 'X':
		write_memory(stub, p + 1, end, p[0] == 'X');
		break;
	case 'c':
	case 's':
	case 'C':
	case 'S':
		resume_all(stub, p[0] == 's' || p[0] == 'S');
		break;
	case 'Z':
	case 'z':
		breakpoint(stub, p + 1, end, p[0] == 'Z');
		break;
	case 'H':
		set_thread(stub, p + 1, end);
		break;
	case 'T':
		reply(stub, parse_thread(stub, p + 1, end, &thread) ? "OK"
								 : REPLY_EINVAL);
		break;
	case 'q':
		query(stub, p, end);
		break;
	case 'Q':
		if (starts(p, end, "QStartNoAckMode")) {
			reply(stub, "OK");
			stub->no_ack = true;
		} else {
			reply(stub, "");
		}
		break;
	case 'v':
		if (end - p == 6 && starts(p, end, "vCont?"))
			reply(stub, "vCont;c;C;s;S");
		else if (starts(p, end, "vCont;"))
			vcont(stub, p + 5, end);
		else
			reply(stub, ""); /* vMustReplyEmpty and the rest */
		break;
	case 'D':
		detach(stub);
		break;
	case 'k':
		remove_all_points(stub);
		stub->ended = true;
		stub->ops->kill(stub->target);
		break;
	default:
		reply(stub, "");
		break;
	}
}

static void packet_done(struct gdb_stub *stub)
{
	bool good = !stub->in_overflow && stub->sum == stub->sum_got;
	if (!stub->no_ack)
		send_raw(stub, good ? "+" : "-", 1);
	/* Replies go only to a stopped target's gdb; while it runs gdb
	 * sends nothing but Ctrl-C. */
	if (good && !stub->running && !stub->ended)
		handle_packet(stub, stub->in, stub->in_len);
}

void gdb_stub_input(struct gdb_stub *stub, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		int v;
		switch (stub->state) {
		case GDB_IN_IDLE:
			if (c == '$') {
				stub->state = GDB_IN_DATA;
				stub->in_len = 0;
				stub->sum = 0;
				stub->in_overflow = false;
			} else if (c == 0x03 && stub->running) {
				stub->ops->interrupt(stub->target);
				stub->running = false;
				stub->last_stop = (struct gdb_stop){
					.kind = GDB_STOP_INTERRUPT,
					.thread = stub->c_thread,
					.signal = 2};
				stub->g_thread = stub->c_thread;
				stop_reply(stub, &stub->last_stop);
			} else if (c == '-' && stub->out_len && !stub->no_ack) {
				send_raw(stub, stub->out, stub->out_len);
			}
			/* '+' and noise between packets are nothing to do. */
			break;
		case GDB_IN_DATA:
			if (c == '#') {
				stub->state = GDB_IN_SUM1;
				break;
			}
			stub->sum += (uint8_t)c;
			if (stub->in_len < sizeof(stub->in))
				stub->in[stub->in_len++] = c;
			else
				stub->in_overflow = true;
			break;
		case GDB_IN_SUM1:
			v = hex_value(c);
			stub->sum_got = (uint8_t)((v < 0 ? 0 : v) << 4);
			stub->in_overflow |= v < 0;
			stub->state = GDB_IN_SUM2;
			break;
		case GDB_IN_SUM2:
			v = hex_value(c);
			stub->sum_got |= (uint8_t)(v < 0 ? 0 : v);
			stub->in_overflow |= v < 0;
			stub->state = GDB_IN_IDLE;
			packet_done(stub);
			break;
		}
	}
}

void gdb_stub_init(struct gdb_stub *stub, const struct gdb_target_ops *ops,
		   void *target, const struct gdb_stop *why)
{
	*stub = (struct gdb_stub){.ops = ops, .target = target,
				  .last_stop = *why,
				  .g_thread = why->thread,
				  .c_thread = why->thread};
}

void gdb_stub_stopped(struct gdb_stub *stub, const struct gdb_stop *stop)
{
	if (!stub->running)
		return;
	stub->running = false;
	stub->last_stop = *stop;
	stub->g_thread = stub->c_thread = stop->thread;
	stop_reply(stub, stop);
}

void gdb_stub_exited(struct gdb_stub *stub, int status)
{
	char buf[8];
	if (!stub->running)
		return;
	snprintf(buf, sizeof(buf), "W%02x", status & 0xff);
	reply(stub, buf);
	stub->running = false;
	stub->ended = true;
}

void gdb_stub_disconnect(struct gdb_stub *stub)
{
	remove_all_points(stub);
	stub->ended = true;
}

bool gdb_stub_over(const struct gdb_stub *stub)
{
	return stub->ended || stub->send_failed;
}
