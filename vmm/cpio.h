/* Writer for the "newc" cpio format the kernel unpacks into its initramfs:
 * fsvm appends one such archive to the initrd to hand the guest its job. */
#ifndef FSVM_CPIO_H
#define FSVM_CPIO_H

#include <stddef.h>
#include <sys/types.h>

struct cpio_buf {
	char *data;
	size_t len, cap;
};

/* Appends an entry (mode carries S_IFREG or S_IFDIR); -ENOMEM on failure. */
int cpio_add(struct cpio_buf *b, const char *name, mode_t mode,
	     const void *data, size_t len);
/* Appends the TRAILER!!! entry that ends an archive. */
int cpio_finish(struct cpio_buf *b);
void cpio_free(struct cpio_buf *b);

#endif
