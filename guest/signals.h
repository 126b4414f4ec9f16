/* GUEST_SPEC_SIGNALS: the signals fsvm forwards to the command, one byte
 * each (the signal's number), and the terminal's new sizes, on the input
 * side of a console tty (guest/protocol.h). */
#ifndef FSVM_GUEST_SIGNALS_H
#define FSVM_GUEST_SIGNALS_H

#include <signal.h>
#include <sys/types.h>

#include "guest/protocol.h"

struct signal_forward {
	int input;        /* the tty, read side raw */
	int child_events; /* a signalfd for SIGCHLD */
	int exec_listener; /* GUEST_SPEC_EXEC's (guest/exec_agent.h); -1: none */
	/* A GUEST_INPUT_WINSIZE message so far (its bytes may come apart). */
	unsigned char winsize[GUEST_INPUT_WINSIZE_LEN];
	unsigned int winsize_len;
	sigset_t saved_mask;
};

/* Makes the input side of fd's terminal raw (bytes as they come, no echo,
 * no signals of the line discipline's), its output side untouched. 0,
 * or -1 with errno set. */
int tty_raw_input(int fd);

/* Opens tty for reading, its input raw, and turns SIGCHLD into events,
 * blocked from now on so that no exit goes unseen. Before the command is
 * forked (and before fsvm may send: GUEST_MARK_COMMAND). 0, or -1 after
 * one line. */
int signals_open(struct signal_forward *f, const char *tty);

/* In the command's process: the signal mask it had before. */
void signals_restore(const struct signal_forward *f);

/* Waits for child, reaping orphans, and sends child each signal (1-64)
 * read from the tty, and sets each size read on the init's stdout (the
 * command's terminal, when it has one), ignoring other bytes. 0 with
 * child's wait status in *status, or -1 when there is nothing to wait
 * for. */
int signals_wait(struct signal_forward *f, pid_t child, int *status);

#endif
