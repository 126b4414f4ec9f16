/* Reading the job's files (guest/protocol.h): fsvm's, but checked as any
 * input. */
#ifndef FSVM_GUEST_SPEC_H
#define FSVM_GUEST_SPEC_H

#include <stddef.h>

/* Reads the job file path into buf, NUL-terminated; returns its length,
 * 0 when absent or empty. A longer file is cut at size - 1 bytes. */
size_t spec_read(const char *path, char *buf, size_t size);

/* Splits NUL-terminated fields into list (at most max, then NULL);
 * returns how many. */
int spec_split(char *buf, size_t len, char **list, int max);

#endif
