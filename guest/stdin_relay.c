/* fsvm's stdin to the command, through a relay process and a pipe. */
#include "guest/stdin_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest/protocol.h"

/* Copies the stream into the pipe until the stream ends (the pipe's
 * end, then, is the command's EOF) or the command stops reading. */
static void relay(int from, int to)
{
	static char buf[64 << 10];
	for (;;) {
		ssize_t n = read(from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(n < 0);
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(to, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				_exit(0); /* EPIPE: nobody reads */
			done += w;
		}
	}
}

int stdin_relay_start(void)
{
	struct sockaddr_vm addr = {.svm_family = AF_VSOCK,
				   .svm_cid = VMADDR_CID_HOST,
				   .svm_port = GUEST_STDIN_PORT};
	int sock = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		dprintf(STDERR_FILENO,
			"fsvm-init: stdin: cannot reach fsvm over vsock (%s): "
			"the kernel needs CONFIG_VIRTIO_VSOCKETS, or fsvm --stdin none\n",
			strerror(errno));
		return -1;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		dprintf(STDERR_FILENO, "fsvm-init: stdin: pipe: %s\n", strerror(errno));
		close(sock);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		signal(SIGPIPE, SIG_IGN); /* a write to no reader fails instead */
		relay(sock, p[1]);
	}
	int err = pid < 0 ? errno : 0;
	close(sock);
	close(p[1]);
	if (err || dup2(p[0], STDIN_FILENO) < 0) {
		dprintf(STDERR_FILENO, "fsvm-init: stdin: %s\n",
			strerror(err ? err : errno));
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return 0;
}
