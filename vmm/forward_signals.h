/* A container's signals: those fsvm receives go to the guest's command
 * (`fsvm oci kill`), as bytes in COM2's receive FIFO that the guest init
 * turns into kill(2); and an interactive run's terminal sizes, which it
 * sets on the command's terminal (guest/protocol.h, GUEST_SPEC_SIGNALS). */
#ifndef FSVM_FORWARD_SIGNALS_H
#define FSVM_FORWARD_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

#include "core/event_loop.h"
#include "core/vm.h"
#include "devices/serial.h"

#define FORWARD_SIGNALS_MAX_PENDING 64 /* bytes */

struct forward_signals {
	struct vm *vm;
	struct serial *com2;
	struct event_loop *loop;
	int retry_fd; /* a timerfd while signals wait for the command */
	unsigned char pending[FORWARD_SIGNALS_MAX_PENDING];
	unsigned int nr_pending;
};

/* The signals fsvm can forward: every one a process may catch, but those
 * fsvm uses itself (SIGUSR1 kicks vCPUs, SIGUSR2 wakes lock waiters,
 * SIGCHLD, SIGPIPE), SIGWINCH, and the ones the kernel sends for a fault. */
void forward_signals_set(sigset_t *set);
bool forward_signals_can(int signo);

int forward_signals_init(struct forward_signals *f, struct vm *vm,
			 struct serial *com2, struct event_loop *loop);

/* Sends signo to the command, or keeps it until the command has started
 * (the init reads its signals from then on); one that finds the queue of
 * waiting ones full is dropped with a line. */
void forward_signals_send(struct forward_signals *f, int signo);

/* Sends the terminal's new size, as the signals are. */
void forward_signals_winsize(struct forward_signals *f, unsigned short rows,
			     unsigned short cols);

#endif
