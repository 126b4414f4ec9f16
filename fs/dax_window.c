/* DAX window: reserved address space, MAP_FIXED file mappings in place. */
#include "fs/dax_window.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* Unmapped window pages: no access, no memory, no swap reservation. */
static void *reserve(void *at, uint64_t len)
{
	return mmap(at, len, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			    (at ? MAP_FIXED : 0),
		    -1, 0);
}

int dax_window_create(struct dax_window *w, uint64_t size)
{
	memset(w, 0, sizeof(*w));
	if (size == 0 || size % DAX_WINDOW_ALIGN)
		return -EINVAL;
	void *base = reserve(NULL, size);
	if (base == MAP_FAILED)
		return -errno;
	/* Guest-visible file data is not the VMM's to dump. */
	madvise(base, size, MADV_DONTDUMP);
	w->base = base;
	w->size = size;
	w->ops = (struct fuse_dax_ops){.map = dax_window_map,
				       .unmap = dax_window_unmap,
				       .window_size = size,
				       .opaque = w};
	return 0;
}

void dax_window_destroy(struct dax_window *w)
{
	if (w->base)
		munmap(w->base, w->size);
	memset(w, 0, sizeof(*w));
}

static bool range_ok(const struct dax_window *w, uint64_t off, uint64_t len)
{
	return len && off % DAX_WINDOW_ALIGN == 0 &&
	       len % DAX_WINDOW_ALIGN == 0 && off < w->size &&
	       len <= w->size - off;
}

int dax_window_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable)
{
	struct dax_window *w = opaque;
	if (!range_ok(w, moffset, len) || foffset % DAX_WINDOW_ALIGN ||
	    foffset > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	/* MAP_FIXED replaces whatever was there in one step: KVM's MMU
	 * notifier drops the guest's old translation before the new one. */
	void *p = mmap(w->base + moffset, len,
		       PROT_READ | (writable ? PROT_WRITE : 0),
		       MAP_SHARED | MAP_FIXED, fd, (off_t)foffset);
	return p == MAP_FAILED ? -errno : 0;
}

int dax_window_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	struct dax_window *w = opaque;
	if (!range_ok(w, moffset, len))
		return -EINVAL;
	return reserve(w->base + moffset, len) == MAP_FAILED ? -errno : 0;
}
