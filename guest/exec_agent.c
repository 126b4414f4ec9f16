/* The exec service: a request's frames in, its process's output and
 * status out. Each connection is served by a process of its own, so one
 * exec never holds up the init or another exec. */
#include "guest/exec_agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest/protocol.h"

#define EXEC_NOT_FOUND 127
#define EXEC_NOT_EXECUTABLE 126

static char *terminate(char *payload, uint32_t len)
{
	payload[len] = '\0';
	return payload;
}

int exec_request_add(struct exec_request *r, uint8_t type, char *payload,
		     uint32_t len, const char **why)
{
	if (memchr(payload, '\0', len)) {
		*why = "a field holds a NUL";
		return -1;
	}
	char *text = terminate(payload, len);
	unsigned int uid, gid, rows, cols;
	char rest;
	switch (type) {
	case GUEST_EXEC_ARG:
		if (r->argc == EXEC_MAX_ARGS)
			return *why = "too many arguments", -1;
		r->argv[r->argc++] = text;
		return 0;
	case GUEST_EXEC_ENV:
		if (r->nr_env == EXEC_MAX_ENV || !strchr(text, '=') || text[0] == '=')
			return *why = "a variable that is not NAME=VALUE, or too many", -1;
		r->env[r->nr_env++] = text;
		return 0;
	case GUEST_EXEC_CWD:
		if (text[0] != '/')
			return *why = "the folder is not an absolute path", -1;
		r->cwd = text;
		return 0;
	case GUEST_EXEC_USER:
		if (sscanf(text, "%u %u%c", &uid, &gid, &rest) != 2 ||
		    uid == (unsigned int)-1 || gid == (unsigned int)-1)
			return *why = "the user is not 'UID GID'", -1;
		r->as = (struct run_as){.set = true, .uid = uid, .gid = gid, .home = "", .name = ""};
		return 0;
	case GUEST_EXEC_PROCESS:
		if (r->nr_process == PROCESS_MAX_FIELDS)
			return *why = "too many process fields", -1;
		r->process[r->nr_process++] = text;
		return 0;
	case GUEST_EXEC_TTY:
		if (sscanf(text, "%u %u%c", &rows, &cols, &rest) != 2 || rows > 0xffff ||
		    cols > 0xffff)
			return *why = "the terminal's size is not 'ROWS COLS'", -1;
		r->tty = 1;
		r->rows = (unsigned short)rows;
		r->cols = (unsigned short)cols;
		return 0;
	}
	*why = "a frame no request has";
	return -1;
}

/* Reads exactly len bytes; 0, or -1 at an error or the end. */
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

static int send_frame(int conn, uint8_t type, const void *data, uint32_t len)
{
	uint8_t head[5] = {type};
	uint32_t be = htonl(len);
	memcpy(head + 1, &be, 4);
	return write_all(conn, head, 5) || write_all(conn, data, len) ? -1 : 0;
}

/* The next frame: its type and payload (with room for a NUL) in buf. */
static int read_frame(int conn, uint8_t *type, char *buf, uint32_t *len)
{
	uint8_t head[5];
	if (read_all(conn, head, 5))
		return -1;
	uint32_t be;
	memcpy(&be, head + 1, 4);
	*type = head[0];
	*len = ntohl(be);
	return *len > GUEST_EXEC_FRAME_MAX || read_all(conn, buf, *len) ? -1 : 0;
}

static __attribute__((noreturn)) void refuse(int conn, const char *why)
{
	send_frame(conn, GUEST_EXEC_ERROR, why, (uint32_t)strlen(why));
	_exit(1);
}

/* In the exec's process: its environment, stdio, folder, ids, program. */
static __attribute__((noreturn)) void become(struct exec_request *r,
					     const struct process_spec *p, int in,
					     int out, int err, int tty)
{
	static char home[4096];
	setsid();
	if (tty >= 0)
		ioctl(tty, TIOCSCTTY, 0);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(125);
	clearenv();
	for (int i = 0; i < r->nr_env; i++)
		putenv(r->env[i]);
	if (!getenv("HOME"))
		setenv("HOME", passwd_home("/etc/passwd", r->as.uid, home, sizeof(home)) ? "/" : home, 1);
	if (chdir(r->cwd ? r->cwd : "/") < 0) {
		dprintf(2, "fsvm-init: exec: %s: %s\n", r->cwd, strerror(errno));
		_exit(125);
	}
	struct run_as as = r->as;
	as.home = getenv("HOME");
	process_become(p, &as);
	execvp(r->argv[0], r->argv);
	int code = errno == ENOENT ? EXEC_NOT_FOUND : EXEC_NOT_EXECUTABLE;
	dprintf(2, "fsvm-init: exec: %s: %s\n", r->argv[0],
		code == EXEC_NOT_FOUND ? "command not found" : strerror(errno));
	_exit(code);
}

/* Moves what one of the process's outputs has into a frame; -1 at its
 * end. */
static int pass_output(int fd, int conn, uint8_t type)
{
	static char buf[GUEST_EXEC_FRAME_MAX];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	return send_frame(conn, type, buf, (uint32_t)n) ? -2 : 0;
}

/* Serves one request: the process runs until it ends, its status the last
 * frame; if the host goes away, the process is killed. */
static __attribute__((noreturn)) void serve(int conn)
{
	static struct exec_request r;
	static struct process_spec spec;
	uint8_t type;
	uint32_t len;
	const char *why;
	for (unsigned int n = 0;; n++) {
		char *buf = malloc(GUEST_EXEC_FRAME_MAX + 1);
		if (!buf || read_frame(conn, &type, buf, &len))
			_exit(1);
		if (type == GUEST_EXEC_START)
			break;
		if (n > EXEC_MAX_ARGS + EXEC_MAX_ENV + PROCESS_MAX_FIELDS + 8)
			refuse(conn, "too many frames");
		if (exec_request_add(&r, type, buf, len, &why))
			refuse(conn, why);
	}
	if (!r.argc)
		refuse(conn, "no program to run");
	r.argv[r.argc] = NULL;
	if (!r.as.set)
		r.as = (struct run_as){.set = true, .home = "", .name = ""};
	if (process_parse(r.process, r.nr_process, &spec) < 0)
		refuse(conn, "bad process fields");

	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, master = -1, slave = -1;
	if (r.tty) {
		struct winsize ws = {.ws_row = r.rows, .ws_col = r.cols};
		if (openpty(&master, &slave, NULL, NULL, r.rows && r.cols ? &ws : NULL) < 0)
			refuse(conn, "cannot make a terminal");
	} else if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
		   pipe2(err, O_CLOEXEC) < 0) {
		refuse(conn, "cannot make pipes");
	}
	pid_t pid = fork();
	if (pid < 0)
		refuse(conn, "cannot fork");
	if (pid == 0) {
		close(conn);
		if (r.tty)
			become(&r, &spec, slave, slave, slave, slave);
		become(&r, &spec, in[0], out[1], err[1], -1);
	}
	int to_stdin = r.tty ? master : in[1];
	int from_out = r.tty ? master : out[0], from_err = r.tty ? -1 : err[0];
	if (r.tty)
		close(slave);
	else
		close(in[0]), close(out[1]), close(err[1]);
	static char buf[GUEST_EXEC_FRAME_MAX + 1];
	int status = -1;
	while (status < 0 || from_out >= 0 || from_err >= 0) {
		struct pollfd p[3] = {{.fd = conn, .events = POLLIN},
				      {.fd = from_out, .events = POLLIN},
				      {.fd = from_err, .events = POLLIN}};
		int n = poll(p, 3, status < 0 ? 100 : 0);
		if (n < 0 && errno != EINTR)
			break;
		if (status < 0) {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid)
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		/* After the end, only what the outputs still hold. */
		if (status >= 0 && n == 0)
			break;
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (read_frame(conn, &type, buf, &len)) {
				kill(pid, SIGKILL); /* its caller is gone */
				_exit(1);
			}
			if (type == GUEST_EXEC_STDIN && !len && to_stdin >= 0 && !r.tty) {
				close(to_stdin);
				to_stdin = -1;
			} else if (type == GUEST_EXEC_STDIN && to_stdin >= 0) {
				write_all(to_stdin, buf, len);
			} else if (type == GUEST_EXEC_SIGNAL && len == 1 && buf[0] >= 1 &&
				   buf[0] <= 64) {
				kill(pid, (unsigned char)buf[0]);
			}
		}
		if (p[1].revents && pass_output(from_out, conn, GUEST_EXEC_STDOUT) < 0) {
			if (from_out != to_stdin)
				close(from_out);
			from_out = -1;
		}
		if (p[2].revents && pass_output(from_err, conn, GUEST_EXEC_STDERR) < 0) {
			close(from_err);
			from_err = -1;
		}
	}
	if (status < 0) {
		int st;
		status = waitpid(pid, &st, 0) == pid
				 ? WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)
				 : 125;
	}
	uint8_t code = (uint8_t)status;
	send_frame(conn, GUEST_EXEC_EXIT, &code, 1);
	shutdown(conn, SHUT_WR);
	_exit(0);
}

int exec_agent_listen(void)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_vm addr = {.svm_family = AF_VSOCK,
				   .svm_cid = VMADDR_CID_ANY,
				   .svm_port = GUEST_EXEC_PORT};
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 16) < 0) {
		dprintf(STDERR_FILENO, "fsvm-init: exec: cannot listen on vsock port %d: %s\n",
			GUEST_EXEC_PORT, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

void exec_agent_accept(int listener, const sigset_t *child_mask)
{
	int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(listener);
		sigprocmask(SIG_SETMASK, child_mask, NULL);
		serve(conn);
	}
	close(conn);
}
