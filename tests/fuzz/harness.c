/* Resource counts and invariant failures for the fuzz targets. */
#include "tests/fuzz/harness.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	unsigned int n = 0;
	if (!d) {
		perror(dir);
		abort();
	}
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

struct resources resources_now(void)
{
	return (struct resources){.fds = count_entries("/proc/self/fd"),
				  .threads = count_entries("/proc/self/task")};
}

void resources_check(const char *target, struct resources before)
{
	/* A joined thread leaves /proc a moment after pthread_join returns
	 * (the kernel wakes the joiner as the thread exits): a while to go. */
	const struct timespec moment = {.tv_nsec = 1000 * 1000};
	struct resources now = resources_now();
	for (int tries = 0; tries < 1000 && now.threads > before.threads;
	     tries++) {
		nanosleep(&moment, NULL);
		now = resources_now();
	}
	if (now.fds > before.fds || now.threads > before.threads) {
		fprintf(stderr, "%s: the input left %d fds and %d threads behind\n",
			target, (int)(now.fds - before.fds),
			(int)(now.threads - before.threads));
		abort();
	}
}

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt,
	       ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: invariant broken (%s): ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
