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
#include <linux/fuse.h>
#include <linux/virtio_ring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/device_rig.h"

#define RAM (1ULL << 20)
#define BUF_GPA 0x10000
#define REPLY_GPA 0x11000

static struct device_rig rig;
static uint64_t unique;
static uint16_t avail_idx;

/* Puts one request on the request queue and publishes it. */
static void offer(uint32_t opcode, const void *args, size_t len)
{
	struct fuse_in_header h = {.len = (uint32_t)(sizeof(h) + len),
				   .opcode = opcode, .unique = ++unique,
				   .nodeid = FUSE_ROOT_ID};
	memcpy(rig.ram + BUF_GPA, &h, sizeof(h));
	memcpy(rig.ram + BUF_GPA + sizeof(h), args, len);
	struct vring_desc *desc = (void *)(rig.ram + RIG_DESC_GPA);
	desc[0] = (struct vring_desc){.addr = BUF_GPA, .len = h.len,
				      .flags = VRING_DESC_F_NEXT, .next = 1};
	desc[1] = (struct vring_desc){.addr = REPLY_GPA, .len = 4096,
				      .flags = VRING_DESC_F_WRITE};
	struct vring_avail *avail = (void *)(rig.ram + RIG_AVAIL_GPA);
	avail->ring[avail_idx % RIG_RING] = 0;
	__atomic_store_n(&avail->idx, ++avail_idx, __ATOMIC_RELEASE);
}

/* Rings the request queue's doorbell, waits for the interrupt and checks
 * the reply is in. */
static void round_trip(bool in_place)
{
	if (in_place) {
		rig.fs.dev.notify(rig.fs.dev.opaque, 1);
	} else {
		uint64_t one = 1;
		if (write(rig.queues[1].kick_fd, &one, sizeof(one)) < 0)
			rig_die("kick");
	}
	uint64_t calls;
	if (read(rig.queues[1].call_fd, &calls, sizeof(calls)) < 0)
		rig_die("interrupt");
	struct vring_used *used = (void *)(rig.ram + RIG_USED_GPA);
	struct fuse_out_header oh;
	memcpy(&oh, rig.ram + REPLY_GPA, sizeof(oh));
	if (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) != avail_idx ||
	    oh.unique != unique || oh.error) {
		errno = oh.error ? -oh.error : EPROTO;
		rig_die("reply");
	}
}

int main(int argc, char **argv)
{
	rig_prog = "doorbell";
	long n = argc > 2 ? atol(argv[2]) : 0;
	bool in_place = argc > 1 && !strcmp(argv[1], "inplace");
	if (n <= 0 || (!in_place && strcmp(argv[1], "worker"))) {
		fprintf(stderr, "usage: doorbell worker|inplace N\n");
		return 2;
	}
	char share[] = "/tmp/fsvm-doorbell-XXXXXX";
	if (!mkdtemp(share))
		rig_die("mkdtemp");
	rig_start(&rig, share, FUSE_CACHE_AUTO, RAM, VIRTIO_FS_HELPERS);
	struct fuse_init_in init = {.major = FUSE_KERNEL_VERSION,
				    .minor = FUSE_KERNEL_MINOR_VERSION};
	offer(FUSE_INIT, &init, sizeof(init));
	round_trip(false);

	struct fuse_getattr_in ga = {0};
	double t0 = rig_now_ns();
	for (long i = 0; i < n; i++) {
		offer(FUSE_GETATTR, &ga, sizeof(ga));
		round_trip(in_place);
	}
	printf("%s %ld %.0f\n", in_place ? "inplace" : "worker", n,
	       (rig_now_ns() - t0) / (double)n);
	rig_stop(&rig);
	return rmdir(share) ? 1 : 0;
}
