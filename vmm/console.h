/* The guest's consoles: ttyS0 carries the command's stdin/stdout, ttyS1
 * its stderr and the kernel's messages. An interactive terminal is put in
 * raw mode and forwarded; otherwise the guest command's stdin is empty
 * (or streamed: vmm/stdin_stream.h), and
 * a terminal on stdout or stderr sees the guest's bytes through
 * vmm/term_filter. */
#ifndef FSVM_CONSOLE_H
#define FSVM_CONSOLE_H

#include <stdbool.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "core/event_loop.h"
#include "core/vm.h"
#include "devices/serial.h"
#include "vmm/kernel_report.h"
#include "vmm/panic_watch.h"
#include "vmm/term_filter.h"

#define CONSOLE_ESCAPE 0x01 /* Ctrl-A */

struct console {
	struct vm *vm;
	struct serial out;  /* COM1: stdin/stdout */
	struct serial err;  /* COM2: stderr, kernel console */
	struct panic_watch watch; /* on COM2 */
	struct kernel_report report; /* on COM2: an oops or panic, if any */
	bool interactive;
	/* Whether each stream goes to its fd through its filter. */
	bool filter_out, filter_err;
	struct term_filter out_filter, err_filter;
	struct winsize size; /* the terminal's, when interactive */
	/* Ctrl-A x ends the VM: fsvm run's terminal, not a container's,
	 * whose users type Ctrl-A (a shell's start of line) as podman and
	 * docker pass it. */
	bool escape_key;
	bool escape_held; /* a Ctrl-A read, its key not yet */
	bool raw;
	struct termios saved;
	int stdin_fd;
	struct event_loop *loop;
};

/* The UARTs, to fsvm's stdout and stderr; the user's terminal is the
 * guest command's when stdin and stdout are one, unless batch (a
 * snapshot's boot, which runs no command). */
int console_init(struct console *con, struct vm *vm, bool batch);
/* Puts the terminal in raw mode and starts forwarding stdin (with
 * escape_key, Ctrl-A x ends the VM with 125, Ctrl-A Ctrl-A sends a
 * Ctrl-A). */
int console_start(struct console *con, struct event_loop *loop);
/* Restores the terminal; safe to call more than once. */
void console_restore(struct console *con);

#endif
