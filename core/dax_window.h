/* The DAX window on the host: one reserved range of address space whose
 * pages become host file mappings on FUSE_SETUPMAPPING and go back to
 * scratch memory on FUSE_REMOVEMAPPING. The VMM exposes the same range to
 * the guest as one memory slot, so a mapping here is a mapping there. */
#ifndef FSVM_DAX_WINDOW_H
#define FSVM_DAX_WINDOW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/guest_mem.h"
#include "core/state_blob.h"

#define DAX_WINDOW_ALIGN GUEST_PAGE_SIZE
/* The Linux client maps 2 MiB at a time: 4,096 mappings fill 8 GiB. */
#define DAX_WINDOW_LINUX_CHUNK (2ULL << 20)

/* One file range mapped into the window. fd is our own reference and wd
 * our inotify watch on it (-1: none), to follow the host file's size:
 * file_size is the size last seen, and the file offsets [zero_from,
 * zero_to) are zero pages because the file shrank below them. */
struct dax_mapping {
	uint64_t moffset, len, foffset;
	uint64_t file_size, zero_from, zero_to;
	int fd, wd;
	bool writable;
};

struct dax_window {
	uint8_t *base;
	uint64_t size;
	pthread_mutex_t lock;
	struct dax_mapping *maps;
	unsigned int nr_maps;
	unsigned int max_maps; /* each an fd and up to two host memory maps */
	int watch_fd; /* inotify: IN_MODIFY of mapped files */
	bool lost_pages; /* some mapping has zero pages (a shrunk file) */
};

/* Reserves size bytes (a multiple of DAX_WINDOW_ALIGN) of address space,
 * for at most max_maps mappings (past them, mapping fails with ENOSPC). */
int dax_window_create(struct dax_window *w, uint64_t size,
		      unsigned int max_maps);
void dax_window_destroy(struct dax_window *w);

/* Maps [foffset, foffset + len) of fd at moffset in the window (for
 * writing too when writable); puts [moffset, moffset + len) back to
 * scratch memory. Negative errno: ENOSPC past max_maps. */
int dax_window_map(struct dax_window *w, uint64_t moffset, uint64_t len,
		   int fd, uint64_t foffset, bool writable);
int dax_window_unmap(struct dax_window *w, uint64_t moffset, uint64_t len);

/* A guest page past the end of its host file cannot be backed: KVM either
 * fails KVM_RUN with EFAULT or, on kernels that try such faults again in
 * the background (6.1), stalls the vCPU until the page appears. So mapped
 * pages follow their files: past the end they become zero pages, and file
 * pages again when the file grows back. The guest kernel learns the new
 * size when it next asks for the file's attributes.
 *
 * Brings every mapping in line with its file's size now, after KVM could
 * not back a page the guest touched (EFAULT): every page past a file's end
 * becomes a zero page, those past its end when it was mapped too (a guest
 * that touches one goes on, reading zeros, rather than stall or end).
 * Returns how many mappings changed. */
unsigned int dax_window_repair(struct dax_window *w);

/* A guest request may have grown a file. Gives the file back pages it
 * had lost to a shrink now, before the reply, rather than when the watch's
 * event is handled. */
void dax_window_file_grown(struct dax_window *w);

/* Handles the pending events of watch_fd (readable in the event loop):
 * brings the mappings of modified files in line. Returns how many changed. */
unsigned int dax_window_watch_events(struct dax_window *w);

/* For a snapshot (docs/snapshot.md): each mapping, its file named by the
 * key key_of gives for the fd the window holds (0: none). The window must
 * be quiescent: no map or unmap until save returns. */
void dax_window_save(struct dax_window *w, struct state_out *out,
		     uint64_t (*key_of)(void *opaque, int fd), void *opaque);
/* Into a window as new, what save wrote: each mapping made again through
 * the checks dax_window_map makes, on an fd open_key opens for its key
 * (for writing when writable; closed here). A key open_key answers
 * -ESTALE for (its file gone or changed) leaves its range unmapped, and
 * the restore goes on. Returns 0, or -EBADMSG (a state that is not one),
 * -EBUSY (a window with mappings), another -errno (open_key's, the
 * host's), with a line in err and the window as new again. */
int dax_window_restore(struct dax_window *w, struct state_in *in,
		       int (*open_key)(void *opaque, uint64_t key, bool writable),
		       void *opaque, char *err, size_t errlen);

#endif
