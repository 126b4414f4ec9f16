/* DAX window: reserved address space, MAP_FIXED file mappings in place,
 * and the record of what is mapped where. */
#include "core/dax_window.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* Every window page can be read and written by the guest, mapped or not:
 * KVM fails KVM_RUN with EFAULT on a page it cannot back, without saying
 * which, and the VM could only stop. So what the guest has not mapped is
 * scratch memory (the zero page until written, no swap reservation), and
 * a read-only mapping is a private one, whose written pages become the
 * guest's own copies: a guest's stray store lands there, never in a file.
 * At worst a hostile guest dirties the whole window: the window's size is
 * the cap on what it costs the host. */
#define SCRATCH_PROT (PROT_READ | PROT_WRITE)
#define SCRATCH_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
#define FILE_PROT (PROT_READ | PROT_WRITE)

static int file_flags(bool writable)
{
	return writable ? MAP_SHARED : MAP_PRIVATE | MAP_NORESERVE;
}

static void *reserve(void *at, uint64_t len)
{
	return mmap(at, len, SCRATCH_PROT, SCRATCH_FLAGS | (at ? MAP_FIXED : 0),
		    -1, 0);
}

/* Puts a new mapping (mmap's prot, flags, fd and offset) over the window's
 * [off, off + len) in one step, the old one going. It is built elsewhere
 * first, so a file whose ->mmap refuses (sysfs, a FUSE mount with
 * direct_io) leaves the window as it was, and then moved in with mremap.
 * A hole in the window would be free address space that the VMM's next
 * mmap (a thread stack, a table) could land in, inside guest memory: so if
 * the move fails after taking the old mapping away, the range is reserved
 * again, and if even that fails the VMM stops rather than run with a hole.
 * *lost tells the caller the old mapping is gone. Returns 0 or -errno. */
static int place(struct dax_window *w, uint64_t off, uint64_t len, int prot,
		 int flags, int fd, uint64_t foffset, bool *lost)
{
	uint8_t *at = w->base + off;
	*lost = false;
	void *p = mmap(NULL, len, prot, flags, fd, (off_t)foffset);
	if (p == MAP_FAILED)
		return -errno;
	if (mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) != MAP_FAILED)
		return 0;
	int err = -errno;
	munmap(p, len);
	/* msync fails with ENOMEM exactly when part of the range is unmapped. */
	if (msync(at, len, MS_ASYNC) < 0 && errno == ENOMEM) {
		*lost = true;
		if (reserve(at, len) == MAP_FAILED) {
			log_error("DAX window: cannot reserve its pages again (%s); stopping",
				  strerror(errno));
			abort();
		}
	}
	return err;
}

int dax_window_create(struct dax_window *w, uint64_t size,
		      unsigned int max_maps)
{
	memset(w, 0, sizeof(*w));
	/* Room for a split: forgetting a range may cut a record in two. */
	if (size == 0 || size % DAX_WINDOW_ALIGN || max_maps < 2)
		return -EINVAL;
	w->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->watch_fd < 0)
		return -errno;
	w->maps = calloc(max_maps, sizeof(*w->maps));
	void *base = w->maps ? reserve(NULL, size) : MAP_FAILED;
	if (base == MAP_FAILED) {
		int err = w->maps ? -errno : -ENOMEM;
		free(w->maps);
		close(w->watch_fd);
		memset(w, 0, sizeof(*w));
		return err;
	}
	/* Guest-visible file data is not the VMM's to dump. */
	madvise(base, size, MADV_DONTDUMP);
	pthread_mutex_init(&w->lock, NULL);
	w->base = base;
	w->size = size;
	w->max_maps = max_maps;
	return 0;
}

void dax_window_destroy(struct dax_window *w)
{
	if (w->base)
		munmap(w->base, w->size);
	for (unsigned int i = 0; i < w->nr_maps; i++)
		close(w->maps[i].fd);
	free(w->maps);
	if (w->base)
		close(w->watch_fd);
	memset(w, 0, sizeof(*w));
}

static bool range_ok(const struct dax_window *w, uint64_t off, uint64_t len)
{
	return len && off % DAX_WINDOW_ALIGN == 0 &&
	       len % DAX_WINDOW_ALIGN == 0 && off < w->size &&
	       len <= w->size - off;
}

/* Watches the file open at fd for changes; -1 if it cannot (out of
 * watches): then only an EFAULT from KVM_RUN brings its mappings in line. */
static int watch(struct dax_window *w, int fd)
{
	char path[32];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return inotify_add_watch(w->watch_fd, path, IN_MODIFY);
}

static void drop_record(struct dax_window *w, unsigned int i)
{
	int wd = w->maps[i].wd;
	close(w->maps[i].fd);
	w->maps[i] = w->maps[--w->nr_maps];
	/* One watch per file, whatever number of records share it. */
	for (unsigned int j = 0; wd >= 0 && j < w->nr_maps; j++)
		if (w->maps[j].wd == wd)
			return;
	if (wd >= 0)
		inotify_rm_watch(w->watch_fd, wd);
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
			if (w->nr_maps == w->max_maps)
				return -ENOSPC;
			int fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
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

/* A guest store into a hole needs a block, and on a full disk that fault
 * fails where nobody can report it. Allocating the file's blocks under a
 * write mapping now turns it into an error for SETUPMAPPING, which the
 * guest sees as its write's. File systems without fallocate go unchecked. */
static int reserve_blocks(int fd, uint64_t size, uint64_t foffset,
			  uint64_t len)
{
	if (foffset >= size)
		return 0;
	uint64_t end = size - foffset < len ? size : foffset + len;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)foffset,
		      (off_t)(end - foffset)) < 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	return 0;
}

/* dax_window_map with room free record slots needed: 2 when the range may
 * cut a record in two, 1 for a restore's, which overlaps none. */
static int map_file(struct dax_window *w, uint64_t moffset, uint64_t len,
		    int fd, uint64_t foffset, bool writable, unsigned int room)
{
	if (!range_ok(w, moffset, len) || foffset % DAX_WINDOW_ALIGN ||
	    foffset > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (writable && (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDWR)
		return -EACCES; /* as mmap would say, before blocks are taken */
	int err = writable ? reserve_blocks(fd, (uint64_t)st.st_size, foffset,
					    len)
			   : 0;
	if (err)
		return err;
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	pthread_mutex_lock(&w->lock);
	/* Room for the new record even if forgetting splits one. */
	err = w->nr_maps + room > w->max_maps ? -ENOSPC : 0;
	bool lost = false;
	if (!err)
		err = place(w, moffset, len, FILE_PROT, file_flags(writable),
			    fd, foffset, &lost);
	/* In place, or the old mapping gone: the records follow. */
	if (!err || lost) {
		int forgot = forget_range(w, moffset, len);
		err = err ? err : forgot;
	}
	if (!err)
		w->maps[w->nr_maps++] = (struct dax_mapping){
			.moffset = moffset, .len = len, .foffset = foffset,
			.file_size = (uint64_t)st.st_size, .fd = own,
			.wd = watch(w, own),
			.writable = writable};
	else
		close(own);
	pthread_mutex_unlock(&w->lock);
	return err;
}

int dax_window_map(struct dax_window *w, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable)
{
	return map_file(w, moffset, len, fd, foffset, writable, 2);
}

int dax_window_unmap(struct dax_window *w, uint64_t moffset, uint64_t len)
{
	if (!range_ok(w, moffset, len))
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	int err = forget_range(w, moffset, len);
	bool lost;
	if (!err)
		err = place(w, moffset, len, SCRATCH_PROT, SCRATCH_FLAGS, -1, 0,
			    &lost);
	pthread_mutex_unlock(&w->lock);
	return err;
}

/* Makes the window pages of file range [from, to) of m zero pages, or
 * again the file's. */
static int remap(struct dax_window *w, const struct dax_mapping *m,
		 uint64_t from, uint64_t to, bool file_backed)
{
	uint64_t off = m->moffset + (from - m->foffset);
	bool lost;
	return file_backed ? place(w, off, to - from, FILE_PROT,
				   file_flags(m->writable), m->fd, from, &lost)
			   : place(w, off, to - from, SCRATCH_PROT,
				   SCRATCH_FLAGS, -1, 0, &lost);
}

static uint64_t page_up(uint64_t x)
{
	return (x + DAX_WINDOW_ALIGN - 1) & ~(DAX_WINDOW_ALIGN - 1);
}

/* Brings m in line with its file's size; true if its pages changed. Only
 * pages the file shrank away from become zero pages: those past the end
 * from the start are the guest's to fill by extending the file (with
 * FUSE_WRITE, so the file grows before the guest knows it has). With
 * whole_tail (KVM could not back a page the guest touched) every page past
 * the end becomes a zero page: the guest touched one it had no business
 * with, and must go on all the same. */
static bool follow_file_size(struct dax_window *w, struct dax_mapping *m,
			     bool whole_tail)
{
	struct stat st;
	if (fstat(m->fd, &st) < 0)
		return false;
	uint64_t end = m->foffset + m->len;
	/* A record split off another may carry a zero range beyond itself. */
	if (m->zero_from < m->foffset)
		m->zero_from = m->foffset;
	if (m->zero_to > end)
		m->zero_to = end;
	uint64_t eof = page_up((uint64_t)st.st_size);
	uint64_t seen = page_up(m->file_size);
	m->file_size = (uint64_t)st.st_size;
	uint64_t lo = eof > m->foffset ? eof : m->foffset;
	uint64_t hi = seen < end && !whole_tail ? seen : end;
	bool zeroed_already = m->zero_from <= lo && hi <= m->zero_to;
	if (lo < hi && !zeroed_already) {
		if (remap(w, m, lo, hi, false) < 0)
			return false;
		bool none = m->zero_from >= m->zero_to;
		m->zero_from = none || lo < m->zero_from ? lo : m->zero_from;
		m->zero_to = none || hi > m->zero_to ? hi : m->zero_to;
		w->lost_pages = true;
		return true;
	}
	if (m->zero_from < m->zero_to && eof > m->zero_from) {
		uint64_t top = eof < m->zero_to ? eof : m->zero_to;
		if (remap(w, m, m->zero_from, top, true) < 0)
			return false;
		m->zero_from = top;
		return true;
	}
	return false;
}

unsigned int dax_window_repair(struct dax_window *w)
{
	unsigned int changed = 0;
	pthread_mutex_lock(&w->lock);
	for (unsigned int i = 0; i < w->nr_maps; i++)
		changed += follow_file_size(w, &w->maps[i], true);
	pthread_mutex_unlock(&w->lock);
	return changed;
}

void dax_window_file_grown(struct dax_window *w)
{
	/* Locked even to look: a shrink being handled right now must finish
	 * first, or its zero pages could land after this request's growth. */
	pthread_mutex_lock(&w->lock);
	if (w->lost_pages) {
		bool left = false;
		for (unsigned int i = 0; i < w->nr_maps; i++) {
			struct dax_mapping *m = &w->maps[i];
			if (m->zero_from < m->zero_to) {
				follow_file_size(w, m, false);
				left |= m->zero_from < m->zero_to;
			}
		}
		w->lost_pages = left;
	}
	pthread_mutex_unlock(&w->lock);
}

unsigned int dax_window_watch_events(struct dax_window *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	unsigned int changed = 0;
	ssize_t n;
	while ((n = read(w->watch_fd, buf, sizeof(buf))) > 0) {
		pthread_mutex_lock(&w->lock);
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			p += sizeof(*ev) + ev->len;
			/* Events were lost: every file may have changed. */
			bool all = ev->mask & IN_Q_OVERFLOW;
			for (unsigned int i = 0; i < w->nr_maps; i++)
				if (all || w->maps[i].wd == ev->wd)
					changed += follow_file_size(w, &w->maps[i], false);
		}
		pthread_mutex_unlock(&w->lock);
	}
	return changed;
}

/* --- snapshots --- */

/* A mapping as saved: moffset, len, foffset, the file size the guest may
 * know, the file's key (8 bytes each), writable (1). */
#define SAVED_MAP_SIZE 41

struct saved_map {
	uint64_t moffset, len, foffset, seen, key;
	int fd;
	bool writable;
};

/* The size the guest may believe the file has: the last seen, or more if
 * a shrink since made pages it had zero pages. */
static uint64_t size_seen(const struct dax_mapping *m)
{
	return m->zero_from < m->zero_to && m->zero_to > m->file_size
		       ? m->zero_to : m->file_size;
}

void dax_window_save(struct dax_window *w, struct state_out *out,
		     uint64_t (*key_of)(void *opaque, int fd), void *opaque)
{
	/* Copied, so key_of runs without the window's lock (a leaf): the
	 * fds stay open because no map or unmap runs meanwhile. */
	pthread_mutex_lock(&w->lock);
	unsigned int n = w->nr_maps;
	struct saved_map *maps = calloc(n ? n : 1, sizeof(*maps));
	for (unsigned int i = 0; maps && i < n; i++) {
		const struct dax_mapping *m = &w->maps[i];
		maps[i] = (struct saved_map){
			.moffset = m->moffset, .len = m->len,
			.foffset = m->foffset, .seen = size_seen(m),
			.fd = m->fd, .writable = m->writable};
	}
	pthread_mutex_unlock(&w->lock);
	if (!maps) {
		if (!out->err)
			out->err = -ENOMEM;
		return;
	}
	state_put_u32(out, n);
	for (unsigned int i = 0; i < n; i++) {
		state_put_u64(out, maps[i].moffset);
		state_put_u64(out, maps[i].len);
		state_put_u64(out, maps[i].foffset);
		state_put_u64(out, maps[i].seen);
		state_put_u64(out, key_of(opaque, maps[i].fd));
		state_put_u8(out, maps[i].writable);
	}
	free(maps);
}

static int by_moffset(const void *a, const void *b)
{
	const struct saved_map *x = a, *y = b;
	return x->moffset < y->moffset ? -1 : x->moffset > y->moffset;
}

/* The saved mappings, every one checked: in the window, page-aligned,
 * none over another. Sorted by moffset. Returns 0 or -EBADMSG. */
static int read_maps(struct dax_window *w, struct state_in *in,
		     struct saved_map **out, uint32_t *count, char *err,
		     size_t errlen)
{
	uint32_t n = state_get_u32(in);
	if (in->short_read || (uint64_t)n * SAVED_MAP_SIZE > in->left)
		return log_refusal(-EBADMSG, err, errlen, "DAX window: its state is cut short");
	if (n > w->max_maps)
		return log_refusal(-EBADMSG, err, errlen, "DAX window: %u mappings, more than its %u",
				   n, w->max_maps);
	struct saved_map *maps = calloc(n ? n : 1, sizeof(*maps));
	if (!maps)
		return log_refusal(-ENOMEM, err, errlen, "DAX window: %s", strerror(ENOMEM));
	int ret = 0;
	for (uint32_t i = 0; !ret && i < n; i++) {
		struct saved_map *m = &maps[i];
		m->moffset = state_get_u64(in);
		m->len = state_get_u64(in);
		m->foffset = state_get_u64(in);
		m->seen = state_get_u64(in);
		m->key = state_get_u64(in);
		uint8_t writable = state_get_u8(in);
		m->writable = writable;
		if (!range_ok(w, m->moffset, m->len) ||
		    m->foffset % DAX_WINDOW_ALIGN ||
		    m->foffset > (uint64_t)INT64_MAX - m->len || writable > 1)
			ret = log_refusal(-EBADMSG, err, errlen,
					  "DAX window: mapping %u (%#llx+%#llx of file offset %#llx) does not fit it",
					  i, (unsigned long long)m->moffset,
					  (unsigned long long)m->len,
					  (unsigned long long)m->foffset);
	}
	if (!ret)
		qsort(maps, n, sizeof(*maps), by_moffset);
	for (uint32_t i = 1; !ret && i < n; i++)
		if (maps[i].moffset < maps[i - 1].moffset + maps[i - 1].len)
			ret = log_refusal(-EBADMSG, err, errlen,
					  "DAX window: mappings at %#llx and %#llx overlap",
					  (unsigned long long)maps[i - 1].moffset,
					  (unsigned long long)maps[i].moffset);
	if (ret) {
		free(maps);
		return ret;
	}
	*out = maps;
	*count = n;
	return 0;
}

/* The record just made for m (the last: a restore's mappings overlap
 * none, so none went) follows its file's size as a watch's event would
 * have: the pages of the file the guest knew and that is shorter now
 * become zero pages, rather than fail the guest's next touch of them. */
static void follow_saved_size(struct dax_window *w, const struct saved_map *m)
{
	uint64_t end = m->foffset + m->len;
	uint64_t seen = m->seen < end ? m->seen : end;
	pthread_mutex_lock(&w->lock);
	struct dax_mapping *r = &w->maps[w->nr_maps - 1];
	if (seen > r->file_size) {
		r->file_size = seen;
		follow_file_size(w, r, false);
	}
	pthread_mutex_unlock(&w->lock);
}

int dax_window_restore(struct dax_window *w, struct state_in *in,
		       int (*open_key)(void *opaque, uint64_t key, bool writable),
		       void *opaque, char *err, size_t errlen)
{
	if (w->nr_maps)
		return log_refusal(-EBUSY, err, errlen, "DAX window: it has mappings already");
	struct saved_map *maps = NULL;
	uint32_t n = 0;
	int ret = read_maps(w, in, &maps, &n, err, errlen);
	for (uint32_t i = 0; !ret && i < n; i++) {
		const struct saved_map *m = &maps[i];
		/* A file gone or changed since stays unmapped: scratch
		 * memory, which KVM backs like any window page, reading
		 * zeros as the pages of a file truncated on the host do,
		 * never another file's data. The guest kernel still thinks
		 * the range mapped and takes no fault there; its next
		 * request for the file (whose node came back stale) answers
		 * ESTALE, and its REMOVEMAPPING of the range does no harm. */
		int fd = open_key(opaque, m->key, m->writable);
		if (fd == -ESTALE)
			continue;
		if (fd < 0) {
			ret = log_refusal(fd, err, errlen, "DAX window: the file of the mapping at %#llx: %s",
					  (unsigned long long)m->moffset, strerror(-fd));
			break;
		}
		ret = map_file(w, m->moffset, m->len, fd, m->foffset, m->writable, 1);
		close(fd);
		if (ret) {
			ret = log_refusal(ret == -EINVAL ? -EBADMSG : ret, err, errlen,
					  "DAX window: the mapping at %#llx: %s",
					  (unsigned long long)m->moffset, strerror(-ret));
			break;
		}
		follow_saved_size(w, m);
	}
	free(maps);
	if (ret && w->nr_maps) {
		/* As new: every record and its pages go. */
		dax_window_unmap(w, 0, w->size);
		w->lost_pages = false;
	}
	return ret;
}
