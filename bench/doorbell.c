/* A doorbell's round trip natively, without a VM: one GETATTR at a time on
 * a virtio-fs request queue in synthetic guest memory, from the doorbell to
 * the interrupt, either through the queue's worker thread (the kick
 * eventfd, as KVM's ioeventfd signals it) or run in place by the thread
 * that rang (the device's notify, as a vCPU runs it at the doorbell's
 * exit). The guest side sleeps on the interrupt eventfd, as a halted vCPU
 * waits for KVM's irqfd. Wall-clock time: the difference is the worker's
 * wake-up and the switch back.
 *
 *   doorbell worker|inplace N   prints "MODE N NS_PER_ROUND_TRIP"
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/virtio_ring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "devices/virtio_fs.h"

#define RING 256
#define RAM (1ULL << 20)
#define DESC_GPA 0x0
#define AVAIL_GPA 0x4000
#define USED_GPA 0x8000
#define BUF_GPA 0x10000
#define REPLY_GPA 0x11000

static uint8_t *ram;
static struct guest_mem mem;
static struct virtio_fs fs;
static struct virtio_queue queues[2]; /* high priority (idle), requests */
static uint64_t unique;
static uint16_t avail_idx;

static void die(const char *what)
{
	fprintf(stderr, "doorbell: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Puts one request on the request queue and publishes it. */
static void offer(uint32_t opcode, const void *args, size_t len)
{
	struct fuse_in_header h = {.len = (uint32_t)(sizeof(h) + len),
				   .opcode = opcode, .unique = ++unique,
				   .nodeid = FUSE_ROOT_ID};
	memcpy(ram + BUF_GPA, &h, sizeof(h));
	memcpy(ram + BUF_GPA + sizeof(h), args, len);
	struct vring_desc *desc = (void *)(ram + DESC_GPA);
	desc[0] = (struct vring_desc){.addr = BUF_GPA, .len = h.len,
				      .flags = VRING_DESC_F_NEXT, .next = 1};
	desc[1] = (struct vring_desc){.addr = REPLY_GPA, .len = 4096,
				      .flags = VRING_DESC_F_WRITE};
	struct vring_avail *avail = (void *)(ram + AVAIL_GPA);
	avail->ring[avail_idx % RING] = 0;
	__atomic_store_n(&avail->idx, ++avail_idx, __ATOMIC_RELEASE);
}

/* Rings the request queue's doorbell, waits for the interrupt and checks
 * the reply is in. */
static void round_trip(bool in_place)
{
	if (in_place) {
		fs.dev.notify(fs.dev.opaque, 1);
	} else {
		uint64_t one = 1;
		if (write(queues[1].kick_fd, &one, sizeof(one)) < 0)
			die("kick");
	}
	uint64_t calls;
	if (read(queues[1].call_fd, &calls, sizeof(calls)) < 0)
		die("interrupt");
	struct vring_used *used = (void *)(ram + USED_GPA);
	struct fuse_out_header oh;
	memcpy(&oh, ram + REPLY_GPA, sizeof(oh));
	if (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) != avail_idx ||
	    oh.unique != unique || oh.error) {
		errno = oh.error ? -oh.error : EPROTO;
		die("reply");
	}
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	bool in_place = argc > 1 && !strcmp(argv[1], "inplace");
	if (n <= 0 || (!in_place && strcmp(argv[1], "worker"))) {
		fprintf(stderr, "usage: doorbell worker|inplace N\n");
		return 2;
	}
	char share[] = "/tmp/fsvm-doorbell-XXXXXX";
	if (!mkdtemp(share))
		die("mkdtemp");
	struct fuse_server_config cfg = {.root = share, .cache = FUSE_CACHE_AUTO};
	if (virtio_fs_create(&fs, "bench", &cfg, 1, 0, 0))
		die("virtio_fs_create");
	ram = mmap(NULL, RAM, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (ram == MAP_FAILED)
		die("guest RAM");
	mem = (struct guest_mem){0};
	guest_mem_add(&mem, 0, RAM, ram);
	for (unsigned int q = 0; q < 2; q++) {
		queues[q] = (struct virtio_queue){
			.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			.call_fd = eventfd(0, EFD_CLOEXEC)}; /* the guest sleeps */
		if (queues[q].kick_fd < 0 || queues[q].call_fd < 0)
			die("eventfd");
	}
	if (split_ring_init(&queues[1].ring, &mem, RING, DESC_GPA, AVAIL_GPA,
			    USED_GPA, false, false) ||
	    fs.dev.activate(fs.dev.opaque, queues, 2, fs.dev.features))
		die("start");
	struct fuse_init_in init = {.major = FUSE_KERNEL_VERSION,
				    .minor = FUSE_KERNEL_MINOR_VERSION};
	offer(FUSE_INIT, &init, sizeof(init));
	round_trip(false);

	struct fuse_getattr_in ga = {0};
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		offer(FUSE_GETATTR, &ga, sizeof(ga));
		round_trip(in_place);
	}
	printf("%s %ld %.0f\n", in_place ? "inplace" : "worker", n,
	       (now_ns() - t0) / (double)n);
	fs.dev.reset(fs.dev.opaque);
	fuse_server_destroy(fs.server);
	return rmdir(share) ? 1 : 0;
}
