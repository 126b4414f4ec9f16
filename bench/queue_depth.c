/* A deep queue natively, without a VM: DEPTH reads of 4 KiB at random
 * places in a file the host has not cached, posted at once on a virtio-fs
 * request queue in synthetic guest memory and handed to its worker (as
 * the doorbell leaves a deep queue), until every one is answered. With
 * the worker alone every read waits for the disk in turn; with its
 * helpers up to 1 + VIRTIO_FS_HELPERS wait at once. Wall-clock time.
 *
 *   queue_depth HELPERS DEPTH BATCHES [FOLDER]
 *
 * FOLDER (default /var/tmp) should be on a real disk: a 256 MiB file is
 * made there, and dropped from the page cache before every batch. Prints
 * "HELPERS DEPTH US_PER_BATCH". */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/virtio_ring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/device_rig.h"

#define RAM (4ULL << 20)
#define SLOTS_GPA 0x10000 /* a request's in part, then its reply */
#define SLOT 0x3000
#define REPLY_AT 0x1000 /* in a slot: a header and 4 KiB of data */
#define REPLY_LEN (sizeof(struct fuse_out_header) + 4096)
#define FILE_SIZE (256ULL << 20)

static struct device_rig rig;
static uint64_t unique;
static uint16_t avail_idx;

/* Puts a request in slot s of the request queue, unpublished. */
static void put(unsigned int s, uint32_t opcode, uint64_t nodeid,
		const void *args, size_t len)
{
	uint64_t in = SLOTS_GPA + (uint64_t)s * SLOT;
	uint64_t id = ++unique;
	struct fuse_in_header h = {.len = (uint32_t)(sizeof(h) + len),
				   .opcode = opcode, .unique = id,
				   .nodeid = nodeid};
	memcpy(rig.ram + in, &h, sizeof(h));
	memcpy(rig.ram + in + sizeof(h), args, len);
	struct vring_desc *desc = (void *)(rig.ram + RIG_DESC_GPA);
	desc[2 * s] = (struct vring_desc){.addr = in, .len = h.len,
					  .flags = VRING_DESC_F_NEXT,
					  .next = (uint16_t)(2 * s + 1)};
	desc[2 * s + 1] = (struct vring_desc){.addr = in + REPLY_AT,
					      .len = REPLY_LEN,
					      .flags = VRING_DESC_F_WRITE};
	struct vring_avail *avail = (void *)(rig.ram + RIG_AVAIL_GPA);
	avail->ring[avail_idx++ % RIG_RING] = (uint16_t)(2 * s);
}

/* Publishes what was put, kicks the worker and waits for every reply. */
static void run_batch(void)
{
	struct vring_avail *avail = (void *)(rig.ram + RIG_AVAIL_GPA);
	struct vring_used *used = (void *)(rig.ram + RIG_USED_GPA);
	__atomic_store_n(&avail->idx, avail_idx, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(rig.queues[1].kick_fd, &one, sizeof(one)) < 0)
		rig_die("kick");
	while (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) != avail_idx) {
		uint64_t calls;
		if (read(rig.queues[1].call_fd, &calls, sizeof(calls)) < 0)
			rig_die("interrupt");
	}
}

/* The reply in slot s: its error, and what follows the header. */
static int reply(unsigned int s, void *body, size_t len)
{
	struct fuse_out_header h;
	const uint8_t *out = rig.ram + SLOTS_GPA + (uint64_t)s * SLOT + REPLY_AT;
	memcpy(&h, out, sizeof(h));
	memcpy(body, out + sizeof(h), len);
	return h.error;
}

static void make_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	static char chunk[1 << 20];
	memset(chunk, 0x5a, sizeof(chunk));
	for (uint64_t off = 0; fd >= 0 && off < FILE_SIZE; off += sizeof(chunk))
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			rig_die("write the file");
	if (fd < 0 || fsync(fd) || close(fd))
		rig_die("make the file");
}

int main(int argc, char **argv)
{
	rig_prog = "queue_depth";
	long helpers = argc > 3 ? atol(argv[1]) : -1;
	long depth = argc > 3 ? atol(argv[2]) : 0;
	long batches = argc > 3 ? atol(argv[3]) : 0;
	if (helpers < 0 || helpers > VIRTIO_FS_HELPERS || depth < 1 ||
	    depth > RIG_RING / 2 || batches < 1) {
		fprintf(stderr, "usage: queue_depth HELPERS(0-%d) DEPTH(1-%d) BATCHES [FOLDER]\n",
			VIRTIO_FS_HELPERS, RIG_RING / 2);
		return 2;
	}
	char share[4096], file[4200];
	snprintf(share, sizeof(share), "%s/fsvm-queue-depth-XXXXXX",
		 argc > 4 ? argv[4] : "/var/tmp");
	if (!mkdtemp(share))
		rig_die("mkdtemp");
	snprintf(file, sizeof(file), "%s/data", share);
	make_file(file);
	int host_fd = open(file, O_RDONLY | O_CLOEXEC);
	if (host_fd < 0)
		rig_die("open the file");

	rig_start(&rig, share, FUSE_CACHE_NONE, RAM, (unsigned int)helpers);

	struct fuse_init_in init = {.major = FUSE_KERNEL_VERSION,
				    .minor = FUSE_KERNEL_MINOR_VERSION};
	put(0, FUSE_INIT, 0, &init, sizeof(init));
	run_batch();
	put(0, FUSE_LOOKUP, FUSE_ROOT_ID, "data", 5);
	run_batch();
	struct fuse_entry_out entry;
	if ((errno = -reply(0, &entry, sizeof(entry))))
		rig_die("LOOKUP");
	struct fuse_open_in open_in = {.flags = O_RDONLY};
	put(0, FUSE_OPEN, entry.nodeid, &open_in, sizeof(open_in));
	run_batch();
	struct fuse_open_out opened;
	if ((errno = -reply(0, &opened, sizeof(opened))))
		rig_die("OPEN");

	srandom(1);
	double total = 0;
	for (long b = 0; b < batches; b++) {
		if (posix_fadvise(host_fd, 0, 0, POSIX_FADV_DONTNEED))
			rig_die("drop the file's cache");
		for (unsigned int s = 0; s < depth; s++) {
			struct fuse_read_in rd = {
				.fh = opened.fh, .size = 4096,
				.offset = (uint64_t)random() % (FILE_SIZE / 4096) * 4096};
			put(s, FUSE_READ, entry.nodeid, &rd, sizeof(rd));
		}
		double t0 = rig_now_ns();
		run_batch();
		total += (rig_now_ns() - t0) / 1e3;
		for (unsigned int s = 0; s < depth; s++) {
			uint8_t byte;
			if ((errno = -reply(s, &byte, 1)) || byte != 0x5a)
				rig_die("READ");
		}
	}
	printf("%ld %ld %.0f\n", helpers, depth, total / (double)batches);
	rig_stop(&rig);
	close(host_fd);
	return unlink(file) || rmdir(share) ? 1 : 0;
}
