/* Bounds-checked iovec helpers: length, copies at an offset, sub-array views. */
#ifndef FSVM_IOV_H
#define FSVM_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* Total bytes in iov; saturates at SIZE_MAX rather than wrapping. A negative
 * cnt counts as an empty array (so do the functions below). */
size_t iov_length(const struct iovec *iov, int cnt);

/* Copies up to len bytes starting offset bytes into iov out to dst.
 * Returns the bytes copied: fewer than len when iov ends first. */
size_t iov_copy_from(const struct iovec *iov, int cnt, size_t offset,
		     void *dst, size_t len);

/* Copies up to len bytes from src into iov starting offset bytes in.
 * Returns the bytes copied: fewer than len when iov ends first. */
size_t iov_copy_to(const struct iovec *iov, int cnt, size_t offset,
		   const void *src, size_t len);

/* Fills view (room for view_max entries) with the part of iov that starts
 * offset bytes in and spans at most max_len bytes, pointing into the same
 * memory, so preadv/pwritev can work on it without a bounce buffer. Stops
 * early when view is full. Returns the number of entries used; *len gets
 * the bytes they span. */
int iov_view(struct iovec *view, int view_max, const struct iovec *iov,
	     int cnt, size_t offset, size_t max_len, size_t *len);

#endif
