/* The virtio-fs request path driven natively, without a VM: a split ring in
 * synthetic guest memory, requests made as the Linux client makes them,
 * and the device's own loop (pop, run, push, interrupt check) draining it.
 * Beside it, the host system calls alone that each request needs, so the
 * difference is what the device costs.
 *
 *   device OP N [syscalls]   OP: lookup getattr read4k write4k read1m
 *
 * Prints "OP N NS_PER_OP". Instructions per op: run it under callgrind
 * for N and 2N and divide the difference by N (set-up cancels out). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fuse.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/guest_mem.h"
#include "fs/fuse_server.h"
#include "virtio/split_ring.h"

#define RING 256
#define RAM (16ULL << 20)
#define DESC_GPA 0x0
#define AVAIL_GPA 0x4000
#define USED_GPA 0x8000
#define BUF_GPA 0x100000ULL
#define SLOT ((1ULL << 20) + 8192) /* a request: header, args, 1 MiB */
#define SLOTS 4
#define FILE_SIZE (4ULL << 20)

enum op { LOOKUP, GETATTR, READ4K, WRITE4K, READ1M };
static const char *const op_names[] = { "lookup", "getattr", "read4k",
					"write4k", "read1m" };

static uint8_t *ram;
static struct guest_mem mem;
static struct split_ring vq;
static struct desc_chain chain;
static struct fuse_server *srv;
static uint64_t unique, root_fh, file_node;
static char share[] = "/tmp/fsvm-bench-XXXXXX";

static void die(const char *what)
{
	fprintf(stderr, "device: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(path);
}

/* CPU time of this thread: what the request path costs, not the time the
 * scheduler gave to other work on a busy 2-core machine (a lab beside it). */
static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Builds request i of op in its slot: what the guest's driver writes. */
static uint32_t build(enum op op, unsigned int slot, uint64_t i,
		      uint32_t *out_len)
{
	uint8_t *p = ram + BUF_GPA + slot * SLOT;
	struct fuse_in_header h = { .unique = ++unique, .nodeid = file_node };
	size_t len = sizeof(h);
	switch (op) {
	case LOOKUP:
		h.opcode = FUSE_LOOKUP;
		h.nodeid = FUSE_ROOT_ID;
		memcpy(p + len, "f", 2);
		len += 2;
		*out_len = sizeof(struct fuse_out_header) + sizeof(struct fuse_entry_out);
		break;
	case GETATTR: {
		struct fuse_getattr_in in = { 0 };
		h.opcode = FUSE_GETATTR;
		memcpy(p + len, &in, sizeof(in));
		len += sizeof(in);
		*out_len = sizeof(struct fuse_out_header) + sizeof(struct fuse_attr_out);
		break;
	}
	case READ4K:
	case READ1M: {
		uint32_t size = op == READ4K ? 4096 : 1 << 20;
		struct fuse_read_in in = { .fh = root_fh, .size = size,
					   .offset = (i * size) % FILE_SIZE };
		h.opcode = FUSE_READ;
		memcpy(p + len, &in, sizeof(in));
		len += sizeof(in);
		*out_len = sizeof(struct fuse_out_header) + size;
		break;
	}
	case WRITE4K: {
		struct fuse_write_in in = { .fh = root_fh, .size = 4096,
					    .offset = (i * 4096) % FILE_SIZE };
		h.opcode = FUSE_WRITE;
		memcpy(p + len, &in, sizeof(in));
		len += sizeof(in) + 4096;
		*out_len = sizeof(struct fuse_out_header) + sizeof(struct fuse_write_out);
		break;
	}
	}
	h.len = (uint32_t)len;
	memcpy(p, &h, sizeof(h));
	return (uint32_t)len;
}

/* Puts up to n requests on the ring (two descriptors each), as the guest
 * does before it notifies. */
static void offer(enum op op, uint64_t first, unsigned int n)
{
	struct vring_desc *desc = (void *)(ram + DESC_GPA);
	struct vring_avail *avail = (void *)(ram + AVAIL_GPA);
	for (unsigned int k = 0; k < n; k++) {
		/* Chains are taken one at a time: requests can share buffers,
		 * which keeps them warm as a guest's reused pages would be. */
		unsigned int slot = k % SLOTS, d = 2 * k;
		uint32_t out_len = 0;
		uint32_t in_len = build(op, slot, first + k, &out_len);
		uint64_t gpa = BUF_GPA + slot * SLOT;
		desc[d] = (struct vring_desc){ .addr = gpa, .len = in_len,
					       .flags = VRING_DESC_F_NEXT,
					       .next = (uint16_t)(d + 1) };
		desc[d + 1] = (struct vring_desc){ .addr = gpa + 8192,
						   .len = out_len,
						   .flags = VRING_DESC_F_WRITE };
		avail->ring[(avail->idx + k) % RING] = (uint16_t)d;
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
	avail->idx = (uint16_t)(avail->idx + n);
}

/* The device's side: exactly what a virtio-fs worker does per chain. */
static void drain(void)
{
	while (split_ring_pop(&vq, &chain) > 0) {
		size_t len = fuse_server_handle(srv, chain.readable,
						chain.nr_readable, chain.writable,
						chain.nr_writable, NULL);
		split_ring_push(&vq, chain.head, (uint32_t)len);
		(void)split_ring_should_interrupt(&vq);
	}
}

/* The host system calls alone that the request costs the server, with
 * the data going to and from the same guest buffers as the device's. */
static void syscalls(enum op op, int dir, int fd, uint64_t i)
{
	struct stat st;
	uint8_t *buf = ram + BUF_GPA + (i % SLOTS) * SLOT + 8192 +
		       sizeof(struct fuse_out_header);
	switch (op) {
	case LOOKUP: {
		struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
					.resolve = RESOLVE_BENEATH |
						   RESOLVE_NO_MAGICLINKS |
						   RESOLVE_NO_SYMLINKS };
		int f = (int)syscall(SYS_openat2, dir, "f", &how, sizeof(how));
		fstatat(f, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		close(f);
		break;
	}
	case GETATTR:
		fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		break;
	case READ4K:
		if (pread(fd, buf, 4096, (off_t)((i * 4096) % FILE_SIZE)) < 0)
			die("pread");
		break;
	case WRITE4K:
		if (pwrite(fd, buf, 4096, (off_t)((i * 4096) % FILE_SIZE)) < 0)
			die("pwrite");
		break;
	case READ1M:
		if (pread(fd, buf, 1 << 20, (off_t)((i << 20) % FILE_SIZE)) < 0)
			die("pread");
		break;
	}
}

/* A request and its reply through the server, for set-up. */
static void call(uint32_t opcode, uint64_t nodeid, const void *args,
		 size_t len, void *reply, size_t reply_len)
{
	uint8_t in[512], out[512];
	struct fuse_in_header h = { .len = (uint32_t)(sizeof(h) + len),
				    .opcode = opcode, .unique = ++unique,
				    .nodeid = nodeid };
	memcpy(in, &h, sizeof(h));
	memcpy(in + sizeof(h), args, len);
	struct iovec iv = { in, h.len }, ov = { out, sizeof(out) };
	fuse_server_handle(srv, &iv, 1, &ov, 1, NULL);
	struct fuse_out_header oh;
	memcpy(&oh, out, sizeof(oh));
	if (oh.error) {
		errno = -oh.error;
		die("set-up request");
	}
	memcpy(reply, out + sizeof(oh), reply_len);
}

static void set_up(void)
{
	if (!mkdtemp(share))
		die("mkdtemp");
	char path[64];
	snprintf(path, sizeof(path), "%s/f", share);
	int fd = open(path, O_CREAT | O_RDWR, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)FILE_SIZE) < 0)
		die(path);
	/* Real data in the page cache, as a warm read would find it. */
	void *buf = calloc(1, FILE_SIZE);
	if (pwrite(fd, buf, FILE_SIZE, 0) < 0)
		die("fill");
	free(buf);
	close(fd);

	struct fuse_server_config cfg = { .root = share, .cache = FUSE_CACHE_AUTO };
	if (fuse_server_create(&cfg, &srv))
		die("fuse_server_create");
	struct fuse_init_in init = { .major = FUSE_KERNEL_VERSION,
				     .minor = FUSE_KERNEL_MINOR_VERSION,
				     .flags = FUSE_MAX_PAGES | FUSE_INIT_EXT };
	struct fuse_init_out init_out;
	call(FUSE_INIT, 0, &init, sizeof(init), &init_out, sizeof(init_out));
	struct fuse_entry_out e;
	call(FUSE_LOOKUP, FUSE_ROOT_ID, "f", 2, &e, sizeof(e));
	file_node = e.nodeid;
	struct fuse_open_in open_in = { .flags = O_RDWR };
	struct fuse_open_out open_out;
	call(FUSE_OPEN, file_node, &open_in, sizeof(open_in), &open_out,
	     sizeof(open_out));
	root_fh = open_out.fh;

	ram = mmap(NULL, RAM, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (ram == MAP_FAILED)
		die("guest RAM");
	mem = (struct guest_mem){ 0 };
	guest_mem_add(&mem, 0, RAM, ram);
	if (split_ring_init(&vq, &mem, RING, DESC_GPA, AVAIL_GPA, USED_GPA,
			    true, false))
		die("split_ring_init");
}

int main(int argc, char **argv)
{
	int op = -1;
	for (int i = 0; argc > 1 && i < (int)(sizeof(op_names) / sizeof(op_names[0])); i++)
		if (!strcmp(argv[1], op_names[i]))
			op = i;
	long n = argc > 2 ? atol(argv[2]) : 0;
	bool only_syscalls = argc > 3 && !strcmp(argv[3], "syscalls");
	if (op < 0 || n <= 0) {
		fprintf(stderr, "usage: device lookup|getattr|read4k|write4k|read1m N [syscalls]\n");
		return 2;
	}
	set_up();
	char path[64];
	snprintf(path, sizeof(path), "%s/f", share);
	int dir = open(share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (dir < 0 || fd < 0)
		die("set-up");

	double spent = 0;
	for (long done = 0; done < n;) {
		unsigned int batch = n - done < RING / 2 ? (unsigned int)(n - done) : RING / 2;
		if (only_syscalls) {
			double t0 = now_ns();
			for (unsigned int k = 0; k < batch; k++)
				syscalls(op, dir, fd, (uint64_t)(done + k));
			spent += now_ns() - t0;
		} else {
			offer(op, (uint64_t)done, batch);
			double t0 = now_ns();
			drain();
			spent += now_ns() - t0;
		}
		done += batch;
	}
	printf("%s %ld %.0f\n", op_names[op], n, spent / (double)n);

	fuse_server_destroy(srv);
	return nftw(share, remove_entry, 8, FTW_DEPTH | FTW_PHYS) ? 1 : 0;
}
