/* The job's files: read, and split into fields. */
#include "guest/spec.h"

#include <fcntl.h>
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
