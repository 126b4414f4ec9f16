/* The host's end of an exec: the process out, its stdio through. */
#include "vmm/oci_exec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "guest/protocol.h"
#include "core/vm.h"
#include "vmm/forward_signals.h"

/* Runs fn on an AF_UNIX socket with the exec socket's address relative to
 * dir, from inside dir (a state folder's path may not fit sun_path). */
static int at_socket(const char *dir, int (*fn)(int, const struct sockaddr *, socklen_t),
		     int fd)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	memcpy(addr.sun_path, OCI_EXEC_SOCKET, sizeof(OCI_EXEC_SOCKET));
	int here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int err = here < 0 || chdir(dir) < 0 ? -errno : 0;
	if (!err && fn(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		err = -errno;
	if (here >= 0) {
		if (fchdir(here) < 0 && !err)
			err = -errno;
		close(here);
	}
	return err;
}

int oci_exec_listen(const char *dir)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int err = at_socket(dir, bind, fd);
	if (!err && listen(fd, 16) < 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int send_frame(int conn, uint8_t type, const void *data, size_t len)
{
	uint8_t head[5] = {type};
	uint32_t be = htonl((uint32_t)len);
	memcpy(head + 1, &be, 4);
	return len > GUEST_EXEC_FRAME_MAX || write_all(conn, head, 5) ||
			       write_all(conn, data, len)
		       ? -1
		       : 0;
}

static int send_text(int conn, uint8_t type, const char *text)
{
	return send_frame(conn, type, text, strlen(text));
}

int oci_exec_start(const char *dir, const struct oci_bundle *p,
		   unsigned short rows, unsigned short cols, char *why, size_t len)
{
	int conn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err = conn < 0 ? -errno : at_socket(dir, connect, conn);
	if (err) {
		snprintf(why, len, "cannot reach the container's VM (%s): %s",
			 OCI_EXEC_SOCKET, strerror(-err));
		if (conn >= 0)
			close(conn);
		return -1;
	}
	char text[64];
	err = 0;
	for (int i = 0; !err && i < p->cfg.guest_argc; i++)
		err = send_text(conn, GUEST_EXEC_ARG, p->cfg.guest_argv[i]);
	for (unsigned int i = 0; !err && i < p->cfg.nr_env; i++)
		err = send_text(conn, GUEST_EXEC_ENV, p->cfg.env[i]);
	for (unsigned int i = 0; !err && i < p->job.nr_process; i++)
		err = send_text(conn, GUEST_EXEC_PROCESS, p->job.process[i]);
	snprintf(text, sizeof(text), "%u %u", p->job.uid, p->job.gid);
	if (!err)
		err = send_text(conn, GUEST_EXEC_USER, text) ||
		      send_text(conn, GUEST_EXEC_CWD, p->cfg.cwd ? p->cfg.cwd : "/");
	snprintf(text, sizeof(text), "%u %u", rows, cols);
	if (!err && p->terminal)
		err = send_text(conn, GUEST_EXEC_TTY, text);
	if (!err)
		err = send_frame(conn, GUEST_EXEC_START, "", 0);
	if (err) {
		snprintf(why, len, "the container's VM hung up");
		close(conn);
		return -1;
	}
	return conn;
}

/* The next frame from the guest into buf (GUEST_EXEC_FRAME_MAX + 1). */
static int read_frame(int conn, uint8_t *type, char *buf, uint32_t *len)
{
	uint8_t head[5];
	uint32_t be;
	if (read_all(conn, head, 5))
		return -1;
	memcpy(&be, head + 1, 4);
	*type = head[0];
	*len = ntohl(be);
	return *len > GUEST_EXEC_FRAME_MAX || read_all(conn, buf, *len) ? -1 : 0;
}

int oci_exec_relay(int conn)
{
	static char buf[GUEST_EXEC_FRAME_MAX + 1];
	sigset_t sigs;
	forward_signals_set(&sigs);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	int sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);
	int in = STDIN_FILENO;
	for (;;) {
		struct pollfd p[3] = {{.fd = conn, .events = POLLIN},
				      {.fd = in, .events = POLLIN},
				      {.fd = sig_fd, .events = POLLIN}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents) {
			struct signalfd_siginfo si;
			if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
				uint8_t signo = (uint8_t)si.ssi_signo;
				send_frame(conn, GUEST_EXEC_SIGNAL, &signo, 1);
			}
		}
		if (p[1].revents) {
			ssize_t n = read(in, buf, GUEST_EXEC_FRAME_MAX);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			/* The end of input (or a stdin that fails) is an empty frame. */
			send_frame(conn, GUEST_EXEC_STDIN, buf, n > 0 ? (size_t)n : 0);
			if (n <= 0)
				in = -1;
		}
		if (!p[0].revents)
			continue;
		uint8_t type;
		uint32_t len;
		if (read_frame(conn, &type, buf, &len))
			break;
		if (type == GUEST_EXEC_STDOUT)
			write_all(STDOUT_FILENO, buf, len);
		else if (type == GUEST_EXEC_STDERR)
			write_all(STDERR_FILENO, buf, len);
		else if (type == GUEST_EXEC_EXIT && len == 1)
			return (unsigned char)buf[0];
		else if (type == GUEST_EXEC_ERROR) {
			buf[len] = '\0';
			fprintf(stderr, "fsvm-runtime: exec: %s\n", buf);
			return EXIT_VMM_ERROR;
		}
	}
	fprintf(stderr, "fsvm-runtime: exec: the container's VM went away before the process ended\n");
	return EXIT_VMM_ERROR;
}
