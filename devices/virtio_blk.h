/* The virtio-blk device: one raw image or block device per device, its
 * requests (read, write, flush, discard, write zeroes, its id) served
 * asynchronously through an io_uring of its own straight on guest memory,
 * a request queue per vCPU, so a slow disk never stalls a vCPU or another
 * queue. Which files and how they are opened and locked is the program's
 * (vmm/disks.c). */
#ifndef FSVM_VIRTIO_BLK_H
#define FSVM_VIRTIO_BLK_H

#include <linux/virtio_blk.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/virtio_dev.h"

/* The device type's name: its reports', and its options' key in the
 * machine (machine_options). */
#define VIRTIO_BLK_DEVICE_NAME "virtio-blk"
#define VIRTIO_BLK_MAX_DISKS 8
#define VIRTIO_BLK_MAX_QUEUES 16
#define VIRTIO_BLK_QUEUE_SIZE 256
/* Data buffers one request may have (VIRTIO_BLK_F_SEG_MAX). */
#define VIRTIO_BLK_SEG_MAX 128

struct virtio_blk_disk {
	int fd;            /* opened by the program, O_RDWR or O_RDONLY (maybe O_DIRECT); the device's to close from add on */
	uint64_t size;     /* bytes; capacity = size / 512 (a trailing partial sector is not offered) */
	bool readonly;     /* VIRTIO_BLK_F_RO; writes, discards, write-zeroes get VIRTIO_BLK_S_IOERR */
	bool direct;       /* fd is O_DIRECT: a request whose buffers are not 512-aligned gets VIRTIO_BLK_S_IOERR (counted misaligned) */
	bool discard;      /* the file/device can punch holes: offer DISCARD and WRITE_ZEROES */
	char serial[21];   /* VIRTIO_BLK_T_GET_ID; empty: none (answer with zero bytes) */
};

/* The type's options: one device per disk, vda, vdb, ... in this order. */
struct virtio_blk_options {
	struct virtio_blk_disk disks[VIRTIO_BLK_MAX_DISKS];
	unsigned int nr_disks;
	unsigned int num_queues; /* request queues per disk: one per vCPU, at most 16 (VIRTIO_BLK_F_MQ) */
};

/* What the device counts, for -v and --json: requests served by type and
 * their bytes, and every request failed, by reason. */
enum virtio_blk_counter {
	BLK_READS,
	BLK_WRITES,
	BLK_FLUSHES,
	BLK_DISCARDS,
	BLK_WRITE_ZEROES,
	BLK_GET_ID,
	BLK_BYTES_READ,
	BLK_BYTES_WRITTEN,
	BLK_ERR_RANGE,      /* past the capacity, or a sector that overflows */
	BLK_ERR_MALFORMED,  /* buffers of the wrong direction, size or number */
	BLK_ERR_READONLY,   /* a write, discard or write zeroes on a read-only disk */
	BLK_ERR_MISALIGNED, /* O_DIRECT: buffers not 512-aligned */
	BLK_ERR_HOST,       /* the host's file failed it, or did it in part */
	BLK_UNSUPPORTED,    /* a type the device does not know or offer */
	BLK_BAD_CHAINS,     /* no status byte to answer in, or outside RAM */
	BLK_RING_ERRORS,    /* malformed rings: the queue stops */
	BLK_NR_COUNTERS
};

struct io_uring;
struct blk_queue;

struct virtio_blk {
	struct virtio_dev dev;
	struct virtio_blk_config config;
	struct virtio_blk_disk disk;
	char name[8]; /* vda, vdb, ...: the guest's name for it, its report's */
	/* Made at create, before the seccomp filter: the ring (the disk its
	 * only file), the eventfd its completions signal, the thread's wait
	 * set and its stop. */
	struct io_uring *uring;
	int done_fd, epoll_fd, stop_fd;
	unsigned int nr_queues;
	struct blk_queue *queues;
	struct desc_chain *chain; /* scratch for split_ring_pop */
	/* While live (DRIVER_OK to reset): the thread that serves every
	 * queue. */
	pthread_t thread;
	bool running;
	atomic_uint in_flight; /* requests the ring holds, all queues */
	_Atomic uint64_t counts[BLK_NR_COUNTERS];
};

/* Creates the device for disk d with num_queues request queues (1 to
 * VIRTIO_BLK_MAX_QUEUES); b->dev is then for a transport. The device
 * takes d->fd: on failure it is closed. Returns 0 or -errno. */
int virtio_blk_create(struct virtio_blk *b, const struct virtio_blk_disk *d,
		      unsigned int num_queues);

/* Frees what create made and closes the disk; the device must be reset
 * (or never started). fsvm's devices last as long as the process: this
 * is for set-up's failures and for tests. */
void virtio_blk_destroy(struct virtio_blk *b);

/* The name of a counter, as -v and --json show it. */
const char *virtio_blk_counter_name(enum virtio_blk_counter c);

#endif
