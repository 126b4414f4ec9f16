/* One-line diagnostics on stderr, prefixed with the program name. */
#ifndef FSVM_LOG_H
#define FSVM_LOG_H

#include <stdbool.h>
#include <stdio.h>

extern bool log_verbose;

#define log_error(fmt, ...) fprintf(stderr, "fsvm: " fmt "\n", ##__VA_ARGS__)
#define log_info(fmt, ...)                                                     \
	do {                                                                   \
		if (log_verbose)                                               \
			fprintf(stderr, "fsvm: " fmt "\n", ##__VA_ARGS__);     \
	} while (0)

/* Logs why set-up failed as one line, "what: why (errno text)" (the last
 * part when err is a negative errno); returns -1. */
int log_setup_error(const char *what, const char *why, int err);

#endif
