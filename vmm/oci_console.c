/* The pty of a container with a terminal. */
#include "vmm/oci_console.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int send_fd(const char *socket_path, int fd, const char *name,
		   const char **why)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof(addr.sun_path)) {
		*why = "--console-socket: path too long";
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, socket_path);
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int err = -errno;
		if (sock >= 0)
			close(sock);
		*why = "--console-socket: cannot connect";
		return err;
	}
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control = {0};
	struct iovec iov = {.iov_base = (void *)name, .iov_len = strlen(name)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	int err = sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
	close(sock);
	if (err)
		*why = "--console-socket: cannot send the terminal";
	return err;
}

int oci_console_open(const char *socket_path, int *slave, const char **why)
{
	char name[64];
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
	    ptsname_r(master, name, sizeof(name))) {
		int err = -errno;
		if (master >= 0)
			close(master);
		*why = "cannot make a terminal";
		return err;
	}
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	int err = *slave < 0 ? -errno : send_fd(socket_path, master, name, why);
	if (*slave < 0)
		*why = "cannot open the terminal";
	close(master);
	if (err && *slave >= 0) {
		close(*slave);
		*slave = -1; /* the caller closes a slave it was given */
	}
	return err;
}

int oci_console_take(int slave)
{
	if (ioctl(slave, TIOCSCTTY, 0) < 0 || dup2(slave, STDIN_FILENO) < 0 ||
	    dup2(slave, STDOUT_FILENO) < 0 || dup2(slave, STDERR_FILENO) < 0)
		return -errno;
	if (slave > STDERR_FILENO)
		close(slave);
	return 0;
}
