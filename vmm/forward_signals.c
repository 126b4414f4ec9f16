/* A container's signals and a terminal's sizes to the guest init,
 * through COM2's input. */
#include "vmm/forward_signals.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/log.h"
#include "guest/protocol.h"

/* How often signals that wait for the command, or for room in the FIFO,
 * are tried again. */
#define FORWARD_RETRY_NS (20 * 1000 * 1000)

static bool fsvm_uses(int signo)
{
	switch (signo) {
	case SIGUSR1: case SIGUSR2: case SIGCHLD: case SIGPIPE:
	case SIGKILL: case SIGSTOP:
	case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGTRAP:
	case SIGSYS:
	case SIGWINCH: /* a size change the guest's terminal would not see */
		return true;
	}
	return false;
}

bool forward_signals_can(int signo)
{
	/* glibc keeps 32 and 33, below SIGRTMIN, for itself. */
	return signo > 0 && signo <= SIGRTMAX && !fsvm_uses(signo) &&
	       (signo < 32 || signo >= SIGRTMIN);
}

void forward_signals_set(sigset_t *set)
{
	sigemptyset(set);
	for (int signo = 1; signo <= SIGRTMAX; signo++)
		if (forward_signals_can(signo))
			sigaddset(set, signo);
}

/* Hands the waiting signals to the guest while it takes them. */
static void flush(struct forward_signals *f)
{
	unsigned int sent = 0;
	if (atomic_load(&f->vm->command_started))
		while (sent < f->nr_pending &&
		       serial_receive(f->com2, &f->pending[sent], 1) == 1)
			sent++;
	memmove(f->pending, f->pending + sent, f->nr_pending - sent);
	f->nr_pending -= sent;
	struct itimerspec its = {0};
	if (f->nr_pending)
		its.it_value.tv_nsec = its.it_interval.tv_nsec = FORWARD_RETRY_NS;
	timerfd_settime(f->retry_fd, 0, &its, NULL);
}

static void on_retry(void *opaque, uint32_t events)
{
	struct forward_signals *f = opaque;
	uint64_t ticks;
	(void)events;
	if (read(f->retry_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		log_error("signal retry timer: %s", strerror(errno));
	flush(f);
}

int forward_signals_init(struct forward_signals *f, struct vm *vm,
			 struct serial *com2, struct event_loop *loop)
{
	*f = (struct forward_signals){.vm = vm, .com2 = com2, .loop = loop};
	f->retry_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (f->retry_fd < 0)
		return -errno;
	return event_loop_add(loop, f->retry_fd, EPOLLIN, on_retry, f);
}

/* Queues a message whole, or drops it with a line (half of one would
 * make the init misread what follows). */
static void queue(struct forward_signals *f, const unsigned char *msg,
		  unsigned int len, const char *what)
{
	if (FORWARD_SIGNALS_MAX_PENDING - f->nr_pending < len) {
		log_error("%s not sent to the guest: %u bytes already wait for it",
			  what, f->nr_pending);
		return;
	}
	memcpy(f->pending + f->nr_pending, msg, len);
	f->nr_pending += len;
	flush(f);
}

void forward_signals_send(struct forward_signals *f, int signo)
{
	unsigned char msg = (unsigned char)signo;
	queue(f, &msg, 1, strsignal(signo));
}

void forward_signals_winsize(struct forward_signals *f, unsigned short rows,
			     unsigned short cols)
{
	const unsigned char msg[GUEST_INPUT_WINSIZE_LEN] = {
		GUEST_INPUT_WINSIZE, rows & 0xff, rows >> 8, cols & 0xff, cols >> 8};
	queue(f, msg, sizeof(msg), "the terminal's size");
}
