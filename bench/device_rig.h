/* A virtio-fs device on synthetic guest memory, for the native benches
 * (bench/doorbell.c, bench/queue_depth.c): guest RAM from 0, the idle
 * high-priority queue and one request queue whose rings sit at fixed
 * guest addresses, and the guest side's kick and interrupt eventfds (the
 * guest sleeps on the interrupt, as a halted vCPU waits on KVM's irqfd). */
#ifndef FSVM_BENCH_DEVICE_RIG_H
#define FSVM_BENCH_DEVICE_RIG_H

#include "devices/virtio_fs.h"

#define RIG_RING 256
#define RIG_DESC_GPA 0x0
#define RIG_AVAIL_GPA 0x4000
#define RIG_USED_GPA 0x8000

struct device_rig {
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_fs fs;
	struct virtio_queue queues[2]; /* high priority (idle), requests */
};

/* Prints "PROG: WHAT: the errno's text" and exits 1. */
void rig_die(const char *what);
extern const char *rig_prog;

/* Wall-clock time, in nanoseconds. */
double rig_now_ns(void);

/* Creates the device over root with ram_size bytes of guest RAM and
 * helpers helper threads per request queue at most, and activates it. */
void rig_start(struct device_rig *r, const char *root,
	       enum fuse_cache_mode cache, size_t ram_size,
	       unsigned int helpers);

/* Resets the device and frees its server. */
void rig_stop(struct device_rig *r);

#endif
