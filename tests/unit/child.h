/* Cases that change the process for good (its ids, its namespaces, a
 * jail, Landlock) run in a child. Include after cmocka. */
#ifndef FSVM_TEST_CHILD_H
#define FSVM_TEST_CHILD_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Dies with status 1 if cond is false (cmocka's asserts must not be
 * used in a child: they jump back into the parent's test). */
#define CHILD_CHECK(cond)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "child: %s:%d: %s (%s)\n", __FILE__,   \
				__LINE__, #cond, strerror(errno));             \
			_exit(1);                                              \
		}                                                              \
	} while (0)

/* Runs fn(arg) in a child; its exit status, or 128 + the signal. */
static inline int in_child(void (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
