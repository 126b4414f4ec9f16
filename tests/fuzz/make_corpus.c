/* Writes the seed inputs of tests/fuzz/corpus/<target>/, built from the
 * UAPI structs. Run from the top of the tree: make fuzz-corpus. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/virtio_ring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned char seed[1 << 16];
static size_t seed_len;

static void put(const void *p, size_t n)
{
	if (seed_len + n > sizeof(seed))
		abort();
	memcpy(seed + seed_len, p, n);
	seed_len += n;
}

static void put8(uint8_t v)
{
	put(&v, 1);
}

static void begin(const uint8_t *control, size_t n)
{
	seed_len = 0;
	if (n)
		put(control, n);
}

static void save(const char *target, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "tests/fuzz/corpus/%s", target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "tests/fuzz/corpus/%s/%s", target, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(seed, 1, seed_len, f) != seed_len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* --- fuzz_virtq: a features byte, then guest memory from 0 with the
 * descriptor table at 0, the available ring at 0x100, the used at 0x200. */

static void virtq_image(uint8_t features, const struct vring_desc *d,
			unsigned int n, const uint16_t *heads, uint16_t idx)
{
	uint8_t mem[0x300] = {0};
	memcpy(mem, d, n * sizeof(*d));
	uint16_t avail[2] = {0, idx};
	memcpy(mem + 0x100, avail, sizeof(avail));
	memcpy(mem + 0x104, heads, idx * sizeof(*heads));
	begin(NULL, 0);
	put8(features);
	put(mem, sizeof(mem));
}

static void virtq_seeds(void)
{
	const char *t = "fuzz_virtq";
	const uint16_t heads[3] = {0, 2, 4};
	struct vring_desc chain[6] = {
		{.addr = 0x400, .len = 48, .flags = VRING_DESC_F_NEXT, .next = 1},
		{.addr = 0x500, .len = 64, .flags = VRING_DESC_F_WRITE},
		{.addr = 0x600, .len = 16, .flags = VRING_DESC_F_NEXT, .next = 3},
		{.addr = 0x700, .len = 16, .flags = VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, .next = 2},
		{.addr = 0xfff0, .len = 0x20, .flags = VRING_DESC_F_WRITE},
	};
	virtq_image(1, chain, 5, heads, 3);
	save(t, "chains-loop-and-past-ram");

	struct vring_desc indirect[2] = {
		{.addr = 0x800, .len = 2 * sizeof(struct vring_desc),
		 .flags = VRING_DESC_F_INDIRECT},
	};
	virtq_image(3, indirect, 1, heads, 1);
	/* The indirect table at 0x800 (offset 0x801 in the input). */
	struct vring_desc table[2] = {
		{.addr = 0x900, .len = 32, .flags = VRING_DESC_F_NEXT, .next = 1},
		{.addr = 0xa00, .len = 32, .flags = VRING_DESC_F_WRITE},
	};
	seed_len = 1 + 0x800;
	memset(seed + 1 + 0x300, 0, 0x500);
	put(table, sizeof(table));
	save(t, "indirect");
}

/* --- fuzz_fuse_server: a control byte, then the request. */

#define Q1 0x01
#define AT_ONCE 0x02
#define AIM_INTERRUPT 0x04
#define WATCH_EVENTS 0x08
#define REPAIR 0x10

static uint64_t next_unique = 100;

static void fuse(uint8_t ctl, uint32_t opcode, uint64_t nodeid, const void *args,
		 size_t args_len, const void *tail, size_t tail_len)
{
	struct fuse_in_header h = {
		.len = (uint32_t)(sizeof(h) + args_len + tail_len),
		.opcode = opcode, .unique = next_unique++, .nodeid = nodeid};
	put8(ctl);
	put(&h, sizeof(h));
	put(args, args_len);
	put(tail, tail_len);
}

static void lock(uint8_t ctl, uint32_t opcode, uint64_t fh, uint32_t type,
		 uint32_t lk_flags)
{
	struct fuse_lk_in in = {.fh = fh, .owner = fh,
				.lk = {.end = 99, .type = type, .pid = 1},
				.lk_flags = lk_flags};
	fuse(ctl, opcode, 2, &in, sizeof(in), NULL, 0);
}

static void map(uint8_t ctl, uint64_t fh, uint64_t foffset, uint64_t len,
		uint64_t moffset, uint64_t flags)
{
	struct fuse_setupmapping_in in = {.fh = fh, .foffset = foffset,
					  .len = len, .flags = flags,
					  .moffset = moffset};
	fuse(ctl, FUSE_SETUPMAPPING, 2, &in, sizeof(in), NULL, 0);
}

static void unmap(uint8_t ctl, uint64_t moffset, uint64_t len)
{
	struct fuse_removemapping_in in = {.count = 1};
	struct fuse_removemapping_one one = {.moffset = moffset, .len = len};
	fuse(ctl, FUSE_REMOVEMAPPING, 2, &in, sizeof(in), &one, sizeof(one));
}

static void write_at(uint8_t ctl, uint64_t fh, uint64_t off, const char *s)
{
	struct fuse_write_in in = {.fh = fh, .offset = off,
				   .size = (uint32_t)strlen(s)};
	fuse(ctl, FUSE_WRITE, 2, &in, sizeof(in), s, strlen(s));
}

static void truncate_f(uint8_t ctl, uint64_t size)
{
	struct fuse_setattr_in in = {.valid = FATTR_SIZE, .size = size};
	fuse(ctl, FUSE_SETATTR, 2, &in, sizeof(in), NULL, 0);
}

static void fuse_seeds(void)
{
	const char *t = "fuzz_fuse_server";
	/* c[0]: 1 iovec, cache none, DAX; c[3] bit 0: end with DESTROY. */
	const uint8_t plain[4] = {0x00, 0x40, 0x80, 0x01};
	const uint8_t locked[4] = {0x40, 0x40, 0x80, 0x01};
	const uint8_t locked_reset[4] = {0x41, 0x30, 0x90, 0x00};

	begin(plain, sizeof(plain));
	struct fuse_getattr_in ga = {0};
	struct fuse_read_in rd = {.fh = 1, .size = 4096};
	struct fuse_read_in rdd = {.fh = 2, .size = 4096};
	struct fuse_forget_in fg = {.nlookup = 1};
	fuse(0, FUSE_GETATTR, 2, &ga, sizeof(ga), NULL, 0);
	fuse(Q1, FUSE_READ, 2, &rd, sizeof(rd), NULL, 0);
	write_at(0, 1, 13, ", again");
	fuse(Q1 | AT_ONCE, FUSE_READDIRPLUS, 3, &rdd, sizeof(rdd), NULL, 0);
	fuse(0, FUSE_LOOKUP, 3, NULL, 0, "child", 6);
	fuse(AT_ONCE, FUSE_FORGET, 4, &fg, sizeof(fg), NULL, 0);
	save(t, "io-two-queues");

	/* A wait on queue 1 ended by an unlock on queue 0. */
	begin(locked, sizeof(locked));
	lock(Q1, FUSE_SETLKW, 3, F_WRLCK, 0);
	lock(0, FUSE_SETLK, 1, F_UNLCK, 0);
	lock(0, FUSE_GETLK, 3, F_WRLCK, 0);
	save(t, "setlkw-unlocked");

	/* A wait ended by INTERRUPT naming it (argument 0: request 0). */
	begin(locked_reset, sizeof(locked_reset));
	lock(Q1, FUSE_SETLKW, 3, F_RDLCK, 0);
	struct fuse_interrupt_in intr = {0};
	fuse(AIM_INTERRUPT, FUSE_INTERRUPT, 0, &intr, sizeof(intr), NULL, 0);
	lock(Q1, FUSE_SETLKW, 3, F_WRLCK, FUSE_LK_FLOCK);
	save(t, "setlkw-interrupted");

	/* A flock wait ended by the holder's RELEASE, and one left waiting
	 * for DESTROY. */
	begin(locked, sizeof(locked));
	lock(Q1, FUSE_SETLKW, 3, F_WRLCK, FUSE_LK_FLOCK);
	struct fuse_release_in rel = {.fh = 1,
				      .release_flags = FUSE_RELEASE_FLOCK_UNLOCK};
	fuse(0, FUSE_RELEASE, 2, &rel, sizeof(rel), NULL, 0);
	lock(Q1, FUSE_SETLKW, 1, F_WRLCK, 0);
	lock(0, FUSE_SETLKW, 3, F_WRLCK, 0);
	save(t, "flock-released");

	/* A write mapping whose file shrinks under it and grows back. */
	begin(plain, sizeof(plain));
	map(0, 1, 0, 8192, 0, FUSE_SETUPMAPPING_FLAG_WRITE | FUSE_SETUPMAPPING_FLAG_READ);
	truncate_f(WATCH_EVENTS, 0);
	write_at(REPAIR, 1, 4096, "regrown");
	map(Q1, UINT64_MAX, 0, 4096, 0x10000, FUSE_SETUPMAPPING_FLAG_READ);
	unmap(0, 0, 8192);
	save(t, "dax-shrink-grow");

	/* Mappings from both queues up to the window's cap, one split. */
	begin(plain, sizeof(plain));
	for (unsigned int i = 0; i < 8; i++)
		map((i & 1) | AT_ONCE, 1, 0, 0x4000, i * 0x100000,
		    FUSE_SETUPMAPPING_FLAG_READ);
	unmap(0, 0x1000, 0x1000);
	unmap(Q1, 0, 0x1000000);
	save(t, "dax-cap");

	/* A session ended on one queue while the other works. */
	begin(plain, sizeof(plain));
	fuse(0, FUSE_LOOKUP, 1, NULL, 0, "f", 2);
	fuse(Q1 | AT_ONCE, FUSE_DESTROY, 0, NULL, 0, NULL, 0);
	fuse(AT_ONCE, FUSE_GETATTR, 2, &ga, sizeof(ga), NULL, 0);
	struct fuse_init_in init = {.major = FUSE_KERNEL_VERSION,
				    .minor = FUSE_KERNEL_MINOR_VERSION};
	fuse(Q1, FUSE_INIT, 0, &init, sizeof(init), NULL, 0);
	save(t, "destroy-while-busy");
}

int main(void)
{
	virtq_seeds();
	fuse_seeds();
	return 0;
}
