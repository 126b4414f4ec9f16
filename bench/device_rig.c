/* The native benches' virtio-fs device on synthetic guest memory. */
#include "bench/device_rig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>

const char *rig_prog = "bench";

void rig_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", rig_prog, what, strerror(errno));
	exit(1);
}

double rig_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

void rig_start(struct device_rig *r, const char *root,
	       enum fuse_cache_mode cache, size_t ram_size,
	       unsigned int helpers)
{
	struct fuse_server_config cfg = {.root = root, .cache = cache};
	if (virtio_fs_create(&r->fs, "bench", &cfg, 1, 0, 0))
		rig_die("virtio_fs_create");
	r->fs.queues.helpers_per_queue = helpers;
	r->ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (r->ram == MAP_FAILED)
		rig_die("guest RAM");
	r->mem = (struct guest_mem){0};
	guest_mem_add(&r->mem, 0, ram_size, r->ram);
	for (unsigned int q = 0; q < 2; q++) {
		r->queues[q] = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC)}; /* the guest sleeps */
		if (r->queues[q].kick_fd < 0 || r->queues[q].call_fd < 0)
			rig_die("eventfd");
	}
	if (split_ring_init(&r->queues[1].ring, &r->mem, RIG_RING,
			    RIG_DESC_GPA, RIG_AVAIL_GPA, RIG_USED_GPA, false,
			    false) ||
	    r->fs.dev.activate(r->fs.dev.opaque, r->queues, 2,
			       r->fs.dev.features))
		rig_die("start");
}

void rig_stop(struct device_rig *r)
{
	r->fs.dev.reset(r->fs.dev.opaque);
	fuse_server_destroy(r->fs.server);
}
