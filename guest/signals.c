/* Forwarding fsvm's signals to the command: bytes on a raw tty input,
 * polled beside a signalfd for SIGCHLD while the init waits. */
#include "guest/signals.h"

#include "guest/exec_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define SIGNAL_MAX 64 /* SIGRTMAX: the highest fsvm sends */

int tty_raw_input(int fd)
{
	struct termios t;
	if (tcgetattr(fd, &t) < 0)
		return -1;
	/* The tty also carries the command's stderr: its output stays as
	 * it is (OPOST and all). */
	t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR |
				 IGNCR | ICRNL | IXON | IXOFF);
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	return tcsetattr(fd, TCSANOW, &t);
}

int signals_open(struct signal_forward *f, const char *tty)
{
	sigset_t child_exits;
	sigemptyset(&child_exits);
	sigaddset(&child_exits, SIGCHLD);
	f->child_events = f->exec_listener = -1;
	f->winsize_len = 0;
	f->input = open(tty, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (f->input < 0 || tty_raw_input(f->input) < 0) {
		dprintf(STDERR_FILENO, "fsvm-init: signals: %s: %s\n", tty,
			strerror(errno));
		return -1;
	}
	if (sigprocmask(SIG_BLOCK, &child_exits, &f->saved_mask) < 0 ||
	    (f->child_events = signalfd(-1, &child_exits,
					SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		dprintf(STDERR_FILENO, "fsvm-init: signals: signalfd: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

void signals_restore(const struct signal_forward *f)
{
	sigprocmask(SIG_SETMASK, &f->saved_mask, NULL);
}

/* The terminal's new size: the kernel tells the command (SIGWINCH to
 * the terminal's foreground). */
static void set_winsize(const unsigned char *m)
{
	struct winsize ws = {.ws_row = (unsigned short)(m[1] | m[2] << 8),
			     .ws_col = (unsigned short)(m[3] | m[4] << 8)};
	if (isatty(STDOUT_FILENO))
		ioctl(STDOUT_FILENO, TIOCSWINSZ, &ws);
}

/* The messages waiting on the tty: signals to child, sizes to its
 * terminal; false once the tty has no more to give. */
static bool forward(struct signal_forward *f, pid_t child)
{
	unsigned char bytes[64];
	ssize_t n = read(f->input, bytes, sizeof(bytes));
	for (ssize_t i = 0; i < n; i++) {
		if (f->winsize_len || bytes[i] == GUEST_INPUT_WINSIZE) {
			f->winsize[f->winsize_len++] = bytes[i];
			if (f->winsize_len == GUEST_INPUT_WINSIZE_LEN) {
				set_winsize(f->winsize);
				f->winsize_len = 0;
			}
		} else if (bytes[i] >= 1 && bytes[i] <= SIGNAL_MAX) {
			kill(child, bytes[i]);
		}
	}
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

int signals_wait(struct signal_forward *f, pid_t child, int *status)
{
	struct pollfd fds[] = {{.fd = f->child_events, .events = POLLIN},
			       {.fd = f->input, .events = POLLIN},
			       {.fd = f->exec_listener, .events = POLLIN}};
	for (;;) {
		pid_t pid;
		int st;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			if (pid == child) {
				*status = st;
				return 0;
			} /* else an orphan reparented to us */
		if (pid < 0)
			return -1;
		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		/* Emptied only: the reaping above tells who ended. */
		struct signalfd_siginfo si[8];
		if (fds[0].revents &&
		    read(f->child_events, si, sizeof(si)) < 0 && errno != EAGAIN)
			return -1;
		/* A tty that hangs up or fails sends nothing more: poll it no
		 * longer (poll skips a negative fd). */
		if (fds[1].revents &&
		    !((fds[1].revents & POLLIN) && forward(f, child)))
			fds[1].fd = -1;
		if (fds[2].revents)
			exec_agent_accept(f->exec_listener, &f->saved_mask);
	}
}
