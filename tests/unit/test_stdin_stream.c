/* Unit tests for vmm/stdin_stream: which stdins stream (a pipe, a file;
 * not /dev/null, a closed one or --stdin none), and that the copy gives
 * the device's end every byte, then the end, however slowly the guest
 * reads. Each case in a child, whose fd 0 it may change. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/seccomp.h"
#include "vmm/stdin_stream.h"

/* Runs fn in a child with fd as its stdin (-1: closed); its status. */
static int in_child(int fd, int (*fn)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (fd < 0)
			close(STDIN_FILENO);
		else if (dup2(fd, STDIN_FILENO) < 0)
			_exit(100);
		_exit(fn());
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int wanted(void)
{
	return stdin_stream_wanted(false) ? 1 : 0;
}

static int wanted_unless_none(void)
{
	return stdin_stream_wanted(true) ? 1 : 0;
}

static void test_which_stdins_stream(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(in_child(p[0], wanted), 1);
	assert_int_equal(in_child(p[0], wanted_unless_none), 0);
	char path[] = "/tmp/fsvm-stdin-XXXXXX";
	int file = mkstemp(path);
	assert_true(file >= 0);
	unlink(path);
	assert_int_equal(in_child(file, wanted), 1);
	int null = open("/dev/null", O_RDONLY);
	assert_true(null >= 0);
	assert_int_equal(in_child(null, wanted), 0);
	assert_int_equal(in_child(-1, wanted), 0);
	/* A terminal is the console's business, not the stream's. */
	int master, slave;
	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	assert_int_equal(in_child(slave, wanted), 0);
	close(master);
	close(slave);
	close(null);
	close(file);
	close(p[0]);
	close(p[1]);
}

#define STREAM_BYTES (8u << 20)

static uint8_t pattern(size_t at)
{
	return (uint8_t)(at * 7 + (at >> 13));
}

/* Writes STREAM_BYTES into a pipe that is stdin, from a writer child,
 * while the device's end is read slowly at first: every byte, in order,
 * then the end (0 from read). */
static int copies_to_the_end(void)
{
	struct stdin_stream s;
	if (stdin_stream_start(&s))
		return 10;
	static uint8_t buf[1 << 16];
	size_t at = 0;
	for (;;) {
		if (at < (1u << 20))
			usleep(1000); /* a guest that reads slowly: the copy waits */
		ssize_t n = read(s.device_fd, buf, at < (1u << 20) ? 4096 : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 11;
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(at + (size_t)i))
				return 12;
		at += (size_t)n;
	}
	/* At stdin's end the copy is over: the thread ends. */
	if (pthread_join(s.thread, NULL))
		return 14;
	return at == STREAM_BYTES ? 0 : 13;
}

static void test_copies_to_the_end(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		close(p[0]);
		static uint8_t buf[1 << 16];
		for (size_t at = 0; at < STREAM_BYTES; at += sizeof(buf)) {
			for (size_t i = 0; i < sizeof(buf); i++)
				buf[i] = pattern(at + i);
			for (size_t done = 0; done < sizeof(buf);) {
				ssize_t w = write(p[1], buf + done, sizeof(buf) - done);
				if (w <= 0)
					_exit(1);
				done += (size_t)w;
			}
		}
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(in_child(p[0], copies_to_the_end), 0);
	close(p[0]);
	int st;
	assert_int_equal(waitpid(writer, &st, 0), writer);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The guest's end going stops the copy: what is left of stdin is not
 * read to its end (an endless `yes` would be). */
static int stops_when_the_guest_goes(void)
{
	struct stdin_stream s;
	if (stdin_stream_start(&s))
		return 10;
	char c;
	if (read(s.device_fd, &c, 1) != 1)
		return 11;
	close(s.device_fd);
	for (int ms = 0; ms < 5000; ms++) {
		if (pthread_tryjoin_np(s.thread, NULL) == 0)
			return 0;
		usleep(1000);
	}
	return 12;
}

static void test_stops_when_the_guest_goes(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) { /* `yes`: never ends */
		close(p[0]);
		static char buf[4096];
		memset(buf, 'y', sizeof(buf));
		while (write(p[1], buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(in_child(p[0], stops_when_the_guest_goes), 0);
	close(p[0]);
	int st;
	assert_int_equal(waitpid(writer, &st, 0), writer); /* its pipe's reader went */
}

/* The sanitizers' runtimes make calls fsvm does not: built with them,
 * as test_seccomp is not, this case is left out. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define FILTER_CASE 1
/* Under fsvm's system-call filter, as in fsvm: the copy goes on once the
 * filter is on (fsvm starts it before), to the end. */
static int copies_under_the_filter(void)
{
	struct stdin_stream s;
	if (stdin_stream_start(&s))
		return 10;
	if (seccomp_lock_down(false, NULL))
		return 11;
	char buf[4096];
	size_t total = 0;
	for (;;) {
		ssize_t n = read(s.device_fd, buf, sizeof(buf));
		if (n < 0)
			return 12;
		if (n == 0)
			break;
		total += (size_t)n;
	}
	return total == (1u << 20) ? 0 : 13;
}

static void test_under_the_filter(void **state)
{
	(void)state;
	char path[] = "/tmp/fsvm-stdin-XXXXXX";
	int file = mkstemp(path);
	assert_true(file >= 0);
	unlink(path);
	assert_int_equal(ftruncate(file, 1 << 20), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(file, STDIN_FILENO);
		_exit(copies_under_the_filter());
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("the child died of signal %d%s", WTERMSIG(st),
			 WTERMSIG(st) == SIGSYS ? " (a call the filter forbids)" : "");
	assert_int_equal(WEXITSTATUS(st), 0);
	close(file);
}
#endif

int main(void)
{
	/* As fsvm (vmm/run.c): a write to a closed peer fails, not kills. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_which_stdins_stream),
		cmocka_unit_test(test_copies_to_the_end),
		cmocka_unit_test(test_stops_when_the_guest_goes),
#ifdef FILTER_CASE
		cmocka_unit_test(test_under_the_filter),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
