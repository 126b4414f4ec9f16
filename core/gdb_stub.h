/* gdb's remote serial protocol, as a stub that answers one gdb: packets
 * in, replies out, the breakpoint table, and the target's threads (vCPUs)
 * behind struct gdb_target_ops. No sockets and no threads of its own:
 * core/gdb_server.c feeds it the bytes and runs the target. */
#ifndef FSVM_GDB_STUB_H
#define FSVM_GDB_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest packet either side sends (qSupported's PacketSize): a whole
 * register file in hex (x86-64's is 1200 characters) and large memory
 * reads fit. */
#define GDB_PACKET_MAX 4096
/* The debug address registers (x86's DR0-DR3). */
#define GDB_HW_POINTS 4
#define GDB_SW_BREAKPOINTS 64
/* The largest register file and breakpoint instruction of any arch. */
#define GDB_REGS_MAX 1024
#define GDB_BREAK_INSN_MAX 4

enum gdb_point_type {
	GDB_POINT_NONE,
	GDB_POINT_EXEC,   /* a hardware breakpoint (Z1, or a Z0 not writable) */
	GDB_POINT_WRITE,  /* Z2 */
	GDB_POINT_READ,   /* Z3: x86 watches reads as accesses */
	GDB_POINT_ACCESS, /* Z4 */
};

struct gdb_hw_point {
	enum gdb_point_type type;
	uint64_t addr;
	unsigned int len; /* 1, 2, 4 or 8; 1 for a breakpoint */
	bool for_z0;      /* a software breakpoint gdb asked for */
};

/* What the target must do to be debugged as gdb asked. */
struct gdb_debug {
	struct gdb_hw_point hw[GDB_HW_POINTS]; /* slot i is debug register i */
	/* Where software breakpoints are in memory: their traps are ours. */
	uint64_t sw[GDB_SW_BREAKPOINTS];
	unsigned int nr_sw;
};

/* What each thread does when the target resumes. */
enum gdb_action {
	GDB_HOLD, /* stays stopped (vCont named others only) */
	GDB_CONTINUE,
	GDB_STEP,
};

enum gdb_stop_kind {
	GDB_STOP_INTERRUPT, /* Ctrl-C, gdb's arrival, --gdb-wait: SIGINT or TRAP */
	GDB_STOP_SWBREAK,   /* a software breakpoint of ours, pc at it */
	GDB_STOP_HW,        /* debug register slot `slot` fired */
	GDB_STOP_STEP,      /* a single step finished */
};

struct gdb_stop {
	enum gdb_stop_kind kind;
	unsigned int thread; /* vCPU index */
	unsigned int slot;   /* GDB_STOP_HW */
	int signal;          /* GDB_STOP_INTERRUPT: 2 (SIGINT) or 5 (TRAP) */
};

/* The target: threads are numbered from 0 (gdb sees them from 1). Every
 * call but resume is made while the target is stopped. Errors are
 * negative errnos. */
struct gdb_target_ops {
	/* Writes bytes to gdb; a short count or error ends the session. */
	int (*send)(void *target, const char *buf, size_t len);
	unsigned int (*nr_threads)(void *target);
	/* The thread's registers in gdb's numbering (core/arch.h). */
	int (*read_regs)(void *target, unsigned int thread, uint8_t *regs);
	int (*write_regs)(void *target, unsigned int thread,
			  const uint8_t *regs);
	/* Memory at the thread's virtual addresses; -EFAULT where unmapped
	 * or not RAM. */
	int (*read_mem)(void *target, unsigned int thread, uint64_t addr,
			void *buf, size_t len);
	int (*write_mem)(void *target, unsigned int thread, uint64_t addr,
			 const void *buf, size_t len);
	/* Runs the threads (actions[thread]) with dbg armed; returns at once.
	 * The target calls gdb_stub_stopped() once it stops again. */
	void (*resume)(void *target, const enum gdb_action *actions,
		       const struct gdb_debug *dbg);
	/* Stops every thread; returns once they all have. */
	void (*interrupt)(void *target);
	/* gdb is gone: nothing armed, every thread running. */
	void (*detach)(void *target);
	/* gdb's kill: the VM ends. */
	void (*kill)(void *target);
};

struct gdb_sw_breakpoint {
	uint64_t addr;
	uint8_t saved[GDB_BREAK_INSN_MAX];
	bool used;
};

enum gdb_input_state { GDB_IN_IDLE, GDB_IN_DATA, GDB_IN_SUM1, GDB_IN_SUM2 };

struct gdb_stub {
	const struct gdb_target_ops *ops;
	void *target;
	enum gdb_input_state state;
	char in[GDB_PACKET_MAX];
	size_t in_len;
	bool in_overflow;
	uint8_t sum, sum_got;
	char out[2 * GDB_PACKET_MAX + 8]; /* the last packet sent, for a NAK */
	size_t out_len;
	bool no_ack;
	bool running; /* the target runs: gdb waits for a stop reply */
	bool ended;   /* detached or killed: the session is over */
	bool send_failed;
	unsigned int g_thread, c_thread; /* Hg and Hc, vCPU indexes */
	struct gdb_stop last_stop;
	struct gdb_hw_point hw[GDB_HW_POINTS];
	struct gdb_sw_breakpoint sw[GDB_SW_BREAKPOINTS];
};

/* A new gdb has connected to a stopped target, which stopped for why. */
void gdb_stub_init(struct gdb_stub *stub, const struct gdb_target_ops *ops,
		   void *target, const struct gdb_stop *why);

/* Bytes from gdb: packets are answered, a Ctrl-C stops the target. */
void gdb_stub_input(struct gdb_stub *stub, const char *buf, size_t len);

/* The target stopped after a resume: gdb gets the stop reply. */
void gdb_stub_stopped(struct gdb_stub *stub, const struct gdb_stop *stop);

/* The VM ended with status: a waiting gdb hears that it exited. */
void gdb_stub_exited(struct gdb_stub *stub, int status);

/* The connection is gone: breakpoints out of memory, as after a detach. */
void gdb_stub_disconnect(struct gdb_stub *stub);

/* The session ended (D, k) or the connection failed. */
bool gdb_stub_over(const struct gdb_stub *stub);

#endif
