/* One-line diagnostics on stderr, prefixed with the program name. */
#ifndef FSVM_LOG_H
#define FSVM_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

extern bool log_verbose;

#define log_error(fmt, ...) log_error_line(fmt, ##__VA_ARGS__)
#define log_info(fmt, ...)                                                     \
	do {                                                                   \
		if (log_verbose)                                               \
			fprintf(stderr, "fsvm: " fmt "\n", ##__VA_ARGS__);     \
	} while (0)

/* Something the user should know that does not stop the run. */
#define log_warning(fmt, ...) \
	fprintf(stderr, "fsvm: warning: " fmt "\n", ##__VA_ARGS__)

/* Prints "fsvm: <line>" on stderr and keeps the line for log_last_error. */
void log_error_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Copies the last line log_error printed (empty: none) into buf, for the
 * --json summary of a run that failed. */
void log_last_error(char *buf, size_t len);

/* Logs why set-up failed as one line, "what: why (errno text)" (the last
 * part when err is a negative errno); returns -1. */
int log_setup_error(const char *what, const char *why, int err);

#endif
