/* The system-call filter fsvm runs under once the VM is set up. */
#ifndef FSVM_SECCOMP_H
#define FSVM_SECCOMP_H

#include <stdbool.h>
#include <termios.h>

/* What a violation does (the filter traps it: SIGSYS), before fsvm exits
 * 125: the terminal put back, one line naming the call on stderr, and the
 * --json summary written, made beforehand (summary_render_violation): a
 * signal handler may make nothing. */
struct seccomp_violation {
	int tty_fd; /* -1: no terminal to put back */
	struct termios tty; /* its settings before raw mode */
	int json_fd; /* -1: no --json */
	char *json_before, *json_after; /* the summary around the line */
};

/* Sets PR_SET_NO_NEW_PRIVS and loads, for every thread of the process, a
 * filter that allows only the system calls running the VM makes; any other
 * does what violation says (NULL: the line alone) and ends the process
 * with 125. Call it once set-up is done, before the vCPUs start. extras
 * add, with SECCOMP_DEBUGGER (--gdb), what the gdb stub asks of KVM, and
 * with SECCOMP_SNAPSHOT (--snapshot-to) the reads of the VM's state a
 * snapshot makes. Returns 0 or a negative errno. */
#define SECCOMP_DEBUGGER (1u << 0)
#define SECCOMP_SNAPSHOT (1u << 1)
int seccomp_lock_down(unsigned int extras,
		      const struct seccomp_violation *violation);

#endif
