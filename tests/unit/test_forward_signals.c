/* Unit tests for vmm/forward_signals: which signals fsvm passes to a
 * container's command (those a process may catch, but the ones fsvm
 * uses itself, SIGWINCH, a fault's, and glibc's own 32 and 33), and that
 * the set agrees with the test of one. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vmm/forward_signals.h"

static void test_can(void **state)
{
	(void)state;
	static const int yes[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM,
				  SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG,
				  SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,
				  SIGPWR, SIGABRT};
	/* fsvm's own (vCPU kicks, lock waiters, children, pipes), those no
	 * process can catch, a fault's, and the terminal's size. */
	static const int no[] = {SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE, SIGKILL,
				 SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE,
				 SIGTRAP, SIGSYS, SIGWINCH};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!forward_signals_can(yes[i]))
			fail_msg("signal %d not forwarded", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (forward_signals_can(no[i]))
			fail_msg("signal %d forwarded", no[i]);
}

static void test_can_range(void **state)
{
	(void)state;
	/* glibc keeps 32 and 33 below SIGRTMIN for its threads. */
	assert_false(forward_signals_can(32));
	assert_false(forward_signals_can(33));
	assert_true(SIGRTMIN > 33);
	assert_true(forward_signals_can(SIGRTMIN));
	assert_true(forward_signals_can(SIGRTMIN + 1));
	assert_true(forward_signals_can(SIGRTMAX));
	/* A byte on COM2 each: 1-64, nothing else. */
	assert_false(forward_signals_can(0));
	assert_false(forward_signals_can(-1));
	assert_false(forward_signals_can(SIGRTMAX + 1));
	assert_false(forward_signals_can(255));
	assert_true(SIGRTMAX <= 64);
}

static void test_set_agrees(void **state)
{
	(void)state;
	sigset_t set;
	sigfillset(&set); /* set empties it first */
	forward_signals_set(&set);
	unsigned int n = 0;
	for (int signo = 1; signo <= SIGRTMAX; signo++) {
		bool in = sigismember(&set, signo) == 1;
		if (in != forward_signals_can(signo))
			fail_msg("signal %d: in the set %d, can %d", signo, in,
				 forward_signals_can(signo));
		n += in;
	}
	assert_true(sigismember(&set, SIGTERM));
	assert_false(sigismember(&set, SIGUSR1));
	/* 31 standard, less 13 not forwarded; the real-time ones. */
	assert_int_equal(n, 31 - 13 + (unsigned int)(SIGRTMAX - SIGRTMIN + 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_can),
		cmocka_unit_test(test_can_range),
		cmocka_unit_test(test_set_agrees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
