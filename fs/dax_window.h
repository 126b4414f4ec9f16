/* The DAX window on the host: one reserved range of address space whose
 * pages become host file mappings on FUSE_SETUPMAPPING and go back to
 * inaccessible on FUSE_REMOVEMAPPING. The VMM exposes the same range to
 * the guest as one memory slot, so a mapping here is a mapping there. */
#ifndef FSVM_DAX_WINDOW_H
#define FSVM_DAX_WINDOW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/fuse_server.h"

#define DAX_WINDOW_ALIGN 4096ULL
/* The Linux client maps 2 MiB at a time: 4,096 mappings fill 8 GiB. */
#define DAX_WINDOW_MAX_MAPPINGS 16384

/* One file range mapped into the window; fd is our own reference, kept
 * to notice when the host file shrinks under the mapping. */
struct dax_mapping {
	uint64_t moffset, len, foffset;
	int fd;
	bool writable;
};

struct dax_window {
	uint8_t *base;
	uint64_t size;
	struct fuse_dax_ops ops; /* hands the window to the FUSE server */
	pthread_mutex_t lock;
	struct dax_mapping *maps;
	unsigned int nr_maps;
};

/* Reserves size bytes (a multiple of DAX_WINDOW_ALIGN) of address space. */
int dax_window_create(struct dax_window *w, uint64_t size);
void dax_window_destroy(struct dax_window *w);

/* fuse_dax_ops callbacks (opaque is the window). */
int dax_window_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable);
int dax_window_unmap(void *opaque, uint64_t moffset, uint64_t len);

/* After KVM could not back a guest page: replaces window pages that lie
 * past the end of their (truncated) host file with zero pages, so the
 * guest can go on. Returns how many mappings were repaired. */
unsigned int dax_window_repair(struct dax_window *w);

#endif
