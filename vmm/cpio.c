/* newc cpio archive writer (see the kernel's initramfs buffer format). */
#include "vmm/cpio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEWC_HEADER_LEN 110

static int cpio_reserve(struct cpio_buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 512;
	while (cap < b->len + more)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

static void cpio_pad4(struct cpio_buf *b)
{
	while (b->len % 4)
		b->data[b->len++] = 0;
}

int cpio_add(struct cpio_buf *b, const char *name, mode_t mode,
	     const void *data, size_t len)
{
	static unsigned int next_ino = 1;
	size_t namesize = strlen(name) + 1;
	if (cpio_reserve(b, NEWC_HEADER_LEN + namesize + len + 8))
		return -ENOMEM;
	int n = snprintf(b->data + b->len, NEWC_HEADER_LEN + 1,
			 "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			 next_ino++, (unsigned int)mode, 0u, 0u, 1u, 0u,
			 (unsigned int)len, 0u, 0u, 0u, 0u,
			 (unsigned int)namesize, 0u);
	b->len += (size_t)n;
	memcpy(b->data + b->len, name, namesize);
	b->len += namesize;
	cpio_pad4(b);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	cpio_pad4(b);
	return 0;
}

int cpio_finish(struct cpio_buf *b)
{
	return cpio_add(b, "TRAILER!!!", 0, NULL, 0);
}

void cpio_free(struct cpio_buf *b)
{
	free(b->data);
	*b = (struct cpio_buf){0};
}
