/* GUEST_SPEC_STDIN: fsvm's stdin, streamed over vsock, as the command's
 * stdin: a pipe, as a shell's `a | b` gives b (so /dev/stdin opens and
 * `test -p` holds), fed by a child of the init. */
#ifndef FSVM_GUEST_STDIN_RELAY_H
#define FSVM_GUEST_STDIN_RELAY_H

/* Connects to fsvm, starts the relay and makes the pipe's read end
 * STDIN_FILENO; 0, or -1 having said why on stderr. */
int stdin_relay_start(void);

#endif
