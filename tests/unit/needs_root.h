/* First in a cmocka case that needs root on the host (files for other
 * users, device nodes, a tap): unprivileged (make test as a user) it is
 * skipped, which tools/unit-run reports; as root (make check) it runs.
 * In CI (CI=true) nothing is skipped: not root there is a failure. */
#ifndef FSVM_TESTS_NEEDS_ROOT_H
#define FSVM_TESTS_NEEDS_ROOT_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NEEDS_ROOT()                                                           \
	do {                                                                   \
		if (geteuid() == 0)                                            \
			break;                                                 \
		const char *ci = getenv("CI");                                 \
		if (ci && !strcmp(ci, "true"))                                 \
			fail_msg("needs root, and CI=true skips nothing");     \
		skip();                                                        \
	} while (0)

#endif
