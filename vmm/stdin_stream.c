/* fsvm's stdin to the guest command, through a socket pair. */
#include "vmm/stdin_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/log.h"

bool stdin_stream_wanted(bool stdin_none)
{
	struct stat st;
	if (stdin_none || isatty(STDIN_FILENO) || fstat(STDIN_FILENO, &st) < 0)
		return false;
	/* /dev/null has nothing to read: no device, no wait for it. */
	return !(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
		 minor(st.st_rdev) == 3);
}

/* Copies stdin to the pair until either ends. A blocking thread of its
 * own: a file cannot be waited on with epoll, and a pipe's O_NONBLOCK
 * would be set for every process that shares it. */
static void *stdin_pump(void *arg)
{
	struct stdin_stream *s = arg;
	static char buf[64 << 10];
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			log_error("stdin: read: %s; the command sees its end",
				  strerror(errno));
		if (n <= 0)
			break;
		for (ssize_t done = 0; done < n;) {
			/* write, not send: fsvm ignores SIGPIPE, and its
			 * filter allows no send. */
			ssize_t w = write(s->pump_fd, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return NULL; /* the guest's end went: it reads no more */
			done += w;
		}
	}
	shutdown(s->pump_fd, SHUT_WR);
	return NULL;
}

int stdin_stream_start(struct stdin_stream *s)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	s->pump_fd = sv[0];
	s->device_fd = sv[1];
	int err = -pthread_create(&s->thread, NULL, stdin_pump, s);
	if (err) {
		close(sv[0]);
		close(sv[1]);
	}
	return err;
}
