/* The job's files: read whole or refused, split into fields. */
#include "guest/spec.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

size_t spec_read(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n;
		while (len < size - 1 &&
		       (n = read(fd, buf + len, size - 1 - len)) > 0)
			len += (size_t)n;
		close(fd);
	}
	buf[len] = '\0';
	return len;
}

int spec_split(char *buf, size_t len, char **list, int max)
{
	int n = 0;
	for (char *p = buf; p < buf + len && n < max; p += strlen(p) + 1)
		list[n++] = p;
	list[n] = NULL;
	return n;
}

int spec_read_fields(const char *path, const char *what, char *buf,
		     size_t size, char **fields, int max)
{
	size_t len = spec_read(path, buf, size);
	int n = len == size - 1 ? -1 : spec_split(buf, len, fields, max);
	/* Fields left over after max of them: too many. */
	if (n == max && n > 0 &&
	    fields[n - 1] + strlen(fields[n - 1]) + 1 < buf + len)
		n = -1;
	if (n < 0)
		dprintf(STDERR_FILENO,
			"fsvm-init: %s: the job's list is too long (at most %d fields, %zu bytes)\n",
			what, max, size - 2);
	return n;
}
