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

/* The fields of the job file path, read into buf and listed in fields
 * (max + 1 entries, the last NULL): how many (0 when absent), or -1
 * after one line naming what when the file fills buf (it may have been
 * cut) or holds more than max. */
int spec_read_fields(const char *path, const char *what, char *buf,
		     size_t size, char **fields, int max);

#endif
