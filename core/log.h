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

/* Prints "fsvm: <line>" on stderr. */
void log_error_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Logs why set-up failed as one line, "what: why (errno text)" (the last
 * part when err is a negative errno), where the failure is handled; the
 * first such line is the run's reason (--json). Returns err, or -EINVAL
 * when err is 0. */
int log_setup_error(const char *what, const char *why, int err);

/* Puts a one-line reason in err, for a caller that says it once, and
 * returns -EINVAL: parsers of what the user gave (an OCI bundle, an
 * image's configuration). */
int log_reason(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, returning code (a negative errno): a loader whose callers
 * tell one refusal from another (-EPROTO: another version's). */
int log_refusal(int code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Copies the first line log_setup_error printed (empty: none) into buf. */
void log_setup_failure(char *buf, size_t len);

/* Copies the last line log_error printed (without "fsvm: "; empty: none)
 * into buf: what a check just found, said by the piece that found it. */
void log_last_error(char *buf, size_t len);

#endif
