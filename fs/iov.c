/* Bounds-checked iovec helpers: length, copies at an offset, sub-array views. */
#include "fs/iov.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t iov_length(const struct iovec *iov, int cnt)
{
	size_t total = 0;

	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - total)
			return SIZE_MAX;
		total += iov[i].iov_len;
	}
	return total;
}

/* Finds the entry holding byte offset; *skip gets the position inside it.
 * Returns cnt (or more) when offset lies at or past the end. */
static int iov_seek(const struct iovec *iov, int cnt, size_t offset,
		    size_t *skip)
{
	int i = 0;

	while (i < cnt && offset >= iov[i].iov_len) {
		offset -= iov[i].iov_len;
		i++;
	}
	*skip = offset;
	return i;
}

/* Copies between a flat buffer and the iovecs from offset on. */
static size_t iov_copy(const struct iovec *iov, int cnt, size_t offset,
		       char *buf, size_t len, bool into_iov)
{
	size_t skip, done = 0;

	for (int i = iov_seek(iov, cnt, offset, &skip); i < cnt && done < len;
	     i++, skip = 0) {
		size_t n = iov[i].iov_len - skip;

		if (n > len - done)
			n = len - done;
		if (n == 0) /* empty entries may carry a NULL base */
			continue;
		char *seg = (char *)iov[i].iov_base + skip;
		if (into_iov)
			memcpy(seg, buf + done, n);
		else
			memcpy(buf + done, seg, n);
		done += n;
	}
	return done;
}

size_t iov_copy_from(const struct iovec *iov, int cnt, size_t offset,
		     void *dst, size_t len)
{
	return iov_copy(iov, cnt, offset, dst, len, false);
}

size_t iov_copy_to(const struct iovec *iov, int cnt, size_t offset,
		   const void *src, size_t len)
{
	/* Only read through: the cast serves the shared walker. */
	return iov_copy(iov, cnt, offset, (char *)src, len, true);
}

int iov_view(struct iovec *view, int view_max, const struct iovec *iov,
	     int cnt, size_t offset, size_t max_len, size_t *len)
{
	size_t skip, done = 0;
	int used = 0;

	for (int i = iov_seek(iov, cnt, offset, &skip);
	     i < cnt && used < view_max && done < max_len; i++, skip = 0) {
		size_t n = iov[i].iov_len - skip;

		if (n == 0) /* empty entries would only lengthen the view */
			continue;
		if (n > max_len - done)
			n = max_len - done;
		view[used].iov_base = (char *)iov[i].iov_base + skip;
		view[used].iov_len = n;
		used++;
		done += n;
	}
	*len = done;
	return used;
}
