/* DAX window: reserved address space, MAP_FIXED file mappings in place,
 * and the record of what is mapped where. */
#include "fs/dax_window.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
	w->maps = calloc(DAX_WINDOW_MAX_MAPPINGS, sizeof(*w->maps));
	if (!w->maps)
		return -ENOMEM;
	void *base = reserve(NULL, size);
	if (base == MAP_FAILED) {
		int err = -errno;
		free(w->maps);
		w->maps = NULL;
		return err;
	}
	/* Guest-visible file data is not the VMM's to dump. */
	madvise(base, size, MADV_DONTDUMP);
	pthread_mutex_init(&w->lock, NULL);
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
	for (unsigned int i = 0; i < w->nr_maps; i++)
		close(w->maps[i].fd);
	free(w->maps);
	memset(w, 0, sizeof(*w));
}

static bool range_ok(const struct dax_window *w, uint64_t off, uint64_t len)
{
	return len && off % DAX_WINDOW_ALIGN == 0 &&
	       len % DAX_WINDOW_ALIGN == 0 && off < w->size &&
	       len <= w->size - off;
}

static void drop_record(struct dax_window *w, unsigned int i)
{
	close(w->maps[i].fd);
	w->maps[i] = w->maps[--w->nr_maps];
}

/* Forgets [off, off + len) in the records: a record it covers goes, one
 * it cuts keeps its pieces (one in the middle splits in two). Needs a free
 * record slot when a split is possible; returns -ENOSPC otherwise. */
static int forget_range(struct dax_window *w, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	for (unsigned int i = 0; i < w->nr_maps;) {
		struct dax_mapping *m = &w->maps[i];
		uint64_t m_end = m->moffset + m->len;
		if (m_end <= off || m->moffset >= end) {
			i++;
			continue;
		}
		if (off <= m->moffset && end >= m_end) {
			drop_record(w, i);
			continue; /* slot i now holds another record */
		}
		if (m->moffset < off && m_end > end) {
			if (w->nr_maps == DAX_WINDOW_MAX_MAPPINGS)
				return -ENOSPC;
			int fd = dup(m->fd);
			if (fd < 0)
				return -errno;
			struct dax_mapping tail = *m;
			tail.fd = fd;
			tail.moffset = end;
			tail.foffset += end - m->moffset;
			tail.len = m_end - end;
			m->len = off - m->moffset;
			w->maps[w->nr_maps++] = tail;
		} else if (m->moffset < off) {
			m->len = off - m->moffset;
		} else {
			m->foffset += end - m->moffset;
			m->len = m_end - end;
			m->moffset = end;
		}
		i++;
	}
	return 0;
}

int dax_window_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable)
{
	struct dax_window *w = opaque;
	if (!range_ok(w, moffset, len) || foffset % DAX_WINDOW_ALIGN ||
	    foffset > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	pthread_mutex_lock(&w->lock);
	/* Room for the new record even if forgetting splits one. */
	int err = w->nr_maps + 2 > DAX_WINDOW_MAX_MAPPINGS ? -ENOSPC : 0;
	if (!err) {
		/* MAP_FIXED replaces whatever was there in one step: KVM's
		 * MMU notifier drops the guest's old translation first. */
		void *p = mmap(w->base + moffset, len,
			       PROT_READ | (writable ? PROT_WRITE : 0),
			       MAP_SHARED | MAP_FIXED, fd, (off_t)foffset);
		err = p == MAP_FAILED ? -errno : forget_range(w, moffset, len);
	}
	if (!err)
		w->maps[w->nr_maps++] = (struct dax_mapping){
			.moffset = moffset, .len = len, .foffset = foffset,
			.fd = own, .writable = writable};
	else
		close(own);
	pthread_mutex_unlock(&w->lock);
	return err;
}

int dax_window_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	struct dax_window *w = opaque;
	if (!range_ok(w, moffset, len))
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	int err = forget_range(w, moffset, len);
	if (!err && reserve(w->base + moffset, len) == MAP_FAILED)
		err = -errno;
	pthread_mutex_unlock(&w->lock);
	return err;
}

unsigned int dax_window_repair(struct dax_window *w)
{
	unsigned int repaired = 0;
	pthread_mutex_lock(&w->lock);
	for (unsigned int i = 0; i < w->nr_maps; i++) {
		struct dax_mapping *m = &w->maps[i];
		struct stat st;
		if (fstat(m->fd, &st) < 0)
			continue;
		uint64_t valid = ((uint64_t)st.st_size + DAX_WINDOW_ALIGN - 1) &
				 ~(DAX_WINDOW_ALIGN - 1);
		if (m->foffset + m->len <= valid)
			continue;
		/* Pages past the file's end can no longer be backed: give
		 * the guest zeros there instead of a fault KVM cannot fix. */
		uint64_t keep = valid > m->foffset ? valid - m->foffset : 0;
		void *p = mmap(w->base + m->moffset + keep, m->len - keep,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED)
			continue;
		m->len = keep;
		repaired++;
	}
	for (unsigned int i = 0; i < w->nr_maps;) {
		if (w->maps[i].len == 0)
			drop_record(w, i);
		else
			i++;
	}
	pthread_mutex_unlock(&w->lock);
	return repaired;
}
