/* Unit tests for vmm/oci_console: a container's pty, its master sent
 * over a console socket (a listening AF_UNIX socket in a temporary
 * folder, as conmon's) and its slave kept, each end working with the
 * other; and a socket that is not there. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/oci_console.h"

static char dir[64];
static char sock_path[96]; /* fits sun_path */

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/fsvm-test-console-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(sock_path, sizeof(sock_path), "%s/console.sock", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(sock_path);
	return rmdir(dir);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int listen_at(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(s, 1), 0);
	return s;
}

/* Accepts the runtime's connection and takes the fd it sent; the
 * message's bytes (the pty's name, as runc sends) in name. */
static int receive_fd(int listener, char *name, size_t size)
{
	int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	assert_true(conn >= 0);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = name, .iov_len = size - 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf)};
	ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	assert_true(n > 0);
	name[n] = '\0';
	close(conn);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	assert_non_null(c);
	assert_int_equal(c->cmsg_level, SOL_SOCKET);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	assert_int_equal(c->cmsg_len, CMSG_LEN(sizeof(int)));
	assert_int_equal(msg.msg_flags & MSG_CTRUNC, 0);
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

/* Reads exactly len bytes from fd (a pty may hand them over in parts). */
static void read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&p, 1, 5000), 1);
		ssize_t n = read(fd, buf + got, len - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

static void test_master_sent_slave_kept(void **state)
{
	(void)state;
	int listener = listen_at(sock_path);
	int before = open_fds();
	int slave = -1;
	const char *why = NULL;
	assert_int_equal(oci_console_open(sock_path, &slave, &why), 0);
	assert_null(why);
	assert_true(slave >= 0);
	/* Only the slave is left here: the master went to the socket. */
	assert_int_equal(open_fds(), before + 1);
	assert_true(isatty(slave));
	/* Close-on-exec: the container's process takes it as its stdio
	 * (dup2), the VM's helpers do not inherit it. */
	assert_true(fcntl(slave, F_GETFD) & FD_CLOEXEC);

	char name[128];
	int master = receive_fd(listener, name, sizeof(name));
	close(listener);
	assert_true(master >= 0);
	/* The name sent is the slave's, and the fd its master. */
	char slave_name[128], master_pts[128];
	assert_int_equal(ttyname_r(slave, slave_name, sizeof(slave_name)), 0);
	assert_string_equal(name, slave_name);
	assert_int_equal(ptsname_r(master, master_pts, sizeof(master_pts)), 0);
	assert_string_equal(master_pts, slave_name);

	/* The container's output reaches the caller's master... */
	char buf[16];
	assert_int_equal(write(slave, "ping", 4), 4);
	read_all(master, buf, 4);
	assert_memory_equal(buf, "ping", 4);
	/* ...and the caller's typing the container (a line, cooked). */
	assert_int_equal(write(master, "pong\n", 5), 5);
	read_all(slave, buf, 5);
	assert_memory_equal(buf, "pong\n", 5);
	close(master);
	close(slave);
}

/* No listener: an error that says so, and no fd left behind, not even
 * the slave's number (the caller would close it again). */
static void test_no_listener(void **state)
{
	(void)state;
	int before = open_fds();
	int slave = -1;
	const char *why = NULL;
	int err = oci_console_open(sock_path, &slave, &why);
	assert_true(err == -ENOENT || err == -ECONNREFUSED);
	assert_non_null(why);
	assert_non_null(strstr(why, "cannot connect"));
	assert_int_equal(slave, -1);
	assert_int_equal(open_fds(), before);

	/* A socket file nobody listens on. */
	int s = listen_at(sock_path);
	close(s);
	why = NULL;
	assert_int_equal(oci_console_open(sock_path, &slave, &why), -ECONNREFUSED);
	assert_non_null(why);
	assert_int_equal(slave, -1);
	assert_int_equal(open_fds(), before);
}

static void test_path_too_long(void **state)
{
	(void)state;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	memset(path, 'x', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	int before = open_fds();
	int slave = -1;
	const char *why = NULL;
	assert_int_equal(oci_console_open(path, &slave, &why), -ENAMETOOLONG);
	assert_non_null(strstr(why, "path too long"));
	assert_int_equal(slave, -1);
	assert_int_equal(open_fds(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_master_sent_slave_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_listener, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_too_long, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
