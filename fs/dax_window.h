/* The DAX window on the host: one reserved range of address space whose
 * pages become host file mappings on FUSE_SETUPMAPPING and go back to
 * inaccessible on FUSE_REMOVEMAPPING. The VMM exposes the same range to
 * the guest as one memory slot, so a mapping here is a mapping there. */
#ifndef FSVM_DAX_WINDOW_H
#define FSVM_DAX_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "fs/fuse_server.h"

#define DAX_WINDOW_ALIGN 4096ULL

struct dax_window {
	uint8_t *base;
	uint64_t size;
	struct fuse_dax_ops ops; /* hands the window to the FUSE server */
};

/* Reserves size bytes (a multiple of DAX_WINDOW_ALIGN) of address space. */
int dax_window_create(struct dax_window *w, uint64_t size);
void dax_window_destroy(struct dax_window *w);

/* fuse_dax_ops callbacks (opaque is the window). */
int dax_window_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable);
int dax_window_unmap(void *opaque, uint64_t moffset, uint64_t len);

#endif
