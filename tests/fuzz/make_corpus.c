/* Writes the seed inputs of tests/fuzz/corpus/<target>/, built from the
 * UAPI structs. Run from the top of the tree: make fuzz-corpus. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/pci_regs.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stddef.h>
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

/* An access size as the transport targets take it: 1, 2, 4 or 8 bytes. */
static uint8_t width_code(unsigned int width)
{
	return width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3;
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

/* --- fuzz_virtio_mmio: operations on five devices' register pages (the
 * last virtio-fs). */

#define MMIO_FS 4

static void mmio_reg(unsigned int dev, uint32_t reg, uint32_t value)
{
	put8((uint8_t)(2 | dev << 3));
	put8((uint8_t)(reg / 4));
	put(&value, 4);
}

static void mmio_read(unsigned int dev, uint16_t off, unsigned int width)
{
	put8((uint8_t)(0 | dev << 3 | width_code(width) << 6));
	put(&off, 2);
}

static void mmio_write(unsigned int dev, uint16_t off, unsigned int width,
		       uint64_t value)
{
	put8((uint8_t)(1 | dev << 3 | width_code(width) << 6));
	put(&off, 2);
	put(&value, 8);
}

static void mmio_ram(unsigned int high, uint16_t off, const void *p,
		     uint8_t len)
{
	put8((uint8_t)(3 | high << 3));
	put(&off, 2);
	put8(len);
	put(p, len);
}

static void mmio_serve(unsigned int dev)
{
	put8((uint8_t)(4 | dev << 3));
}

static void mmio_refuse_start(unsigned int dev)
{
	put8((uint8_t)(4 | dev << 3 | 0x40));
}

static void mmio_reg64(unsigned int dev, uint32_t reg, uint64_t value)
{
	mmio_reg(dev, reg, (uint32_t)value);
	mmio_reg(dev, reg + 4, (uint32_t)(value >> 32));
}

#define S_OK (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | \
	      VIRTIO_CONFIG_S_FEATURES_OK)

/* Features as the Linux driver would take them, then FEATURES_OK. */
static void mmio_negotiate(unsigned int dev, uint64_t features)
{
	mmio_reg(dev, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	mmio_reg(dev, VIRTIO_MMIO_STATUS,
		 VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	for (uint32_t sel = 0; sel < 2; sel++) {
		mmio_reg(dev, VIRTIO_MMIO_DEVICE_FEATURES_SEL, sel);
		mmio_read(dev, VIRTIO_MMIO_DEVICE_FEATURES, 4);
		mmio_reg(dev, VIRTIO_MMIO_DRIVER_FEATURES_SEL, sel);
		mmio_reg(dev, VIRTIO_MMIO_DRIVER_FEATURES,
			 (uint32_t)(features >> (32 * sel)));
	}
	mmio_reg(dev, VIRTIO_MMIO_STATUS, S_OK);
}

static void mmio_queue(unsigned int dev, uint32_t q, uint32_t size,
		       uint64_t desc, uint64_t avail, uint64_t used)
{
	mmio_reg(dev, VIRTIO_MMIO_QUEUE_SEL, q);
	mmio_read(dev, VIRTIO_MMIO_QUEUE_NUM_MAX, 4);
	mmio_reg(dev, VIRTIO_MMIO_QUEUE_NUM, size);
	mmio_reg64(dev, VIRTIO_MMIO_QUEUE_DESC_LOW, desc);
	mmio_reg64(dev, VIRTIO_MMIO_QUEUE_AVAIL_LOW, avail);
	mmio_reg64(dev, VIRTIO_MMIO_QUEUE_USED_LOW, used);
	mmio_reg(dev, VIRTIO_MMIO_QUEUE_READY, 1);
}

/* A two-descriptor chain (driver's buffer, then device's) as entry idx - 1
 * of the available ring, both at gpa base in region high. */
static void mmio_chain(unsigned int high, uint16_t desc, uint16_t avail,
		       uint64_t gpa_base, uint16_t head, uint16_t idx,
		       uint16_t flags)
{
	struct vring_desc d[2] = {
		{.addr = gpa_base + 0x8000, .len = 64, .flags = VRING_DESC_F_NEXT,
		 .next = (uint16_t)(head + 1)},
		{.addr = gpa_base + 0x9000, .len = 128, .flags = VRING_DESC_F_WRITE},
	};
	mmio_ram(high, (uint16_t)(desc + head * sizeof(d[0])), d, sizeof(d));
	uint16_t ring[2] = {flags, idx};
	mmio_ram(high, avail, ring, sizeof(ring));
	mmio_ram(high, (uint16_t)(avail + 4 + 2 * ((idx - 1) % 8)), &head, 2);
}

#define FS_QUEUE_SIZE 16

static uint16_t fs_requests; /* sent since virtio-fs started */

/* virtio-fs up: its hiprio queue and one request queue, rings in the
 * high region (requests use the low one). */
static void mmio_fs_start(uint64_t features)
{
	fs_requests = 0;
	mmio_negotiate(MMIO_FS, features);
	mmio_queue(MMIO_FS, 0, 8, 0x100001000ULL, 0x100002000ULL, 0x100003000ULL);
	mmio_queue(MMIO_FS, 1, FS_QUEUE_SIZE, 0x100004000ULL, 0x100005000ULL,
		   0x100006000ULL);
	mmio_reg(MMIO_FS, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
}

/* The next FUSE request on virtio-fs's request queue, kicked: its header
 * and arguments in a buffer of their own, a 1 KiB reply buffer after it.
 * The n-th request takes descriptors 2n and 2n + 1 and 2 KiB of RAM. */
static void mmio_fs_request(uint32_t opcode, uint64_t nodeid, const void *args,
			    uint32_t args_len, const void *tail,
			    uint32_t tail_len)
{
	uint16_t n = fs_requests++;
	uint8_t req[256];
	struct fuse_in_header h = {.len = (uint32_t)sizeof(h) + args_len + tail_len,
				   .opcode = opcode, .unique = 1000u + n,
				   .nodeid = nodeid};
	if (h.len > sizeof(req) || n >= FS_QUEUE_SIZE / 2)
		abort();
	memcpy(req, &h, sizeof(h));
	memcpy(req + sizeof(h), args, args_len);
	memcpy(req + sizeof(h) + args_len, tail, tail_len);
	uint16_t at = (uint16_t)(0x2000 + n * 0x800);
	mmio_ram(0, at, req, (uint8_t)h.len);
	struct vring_desc d[2] = {
		{.addr = at, .len = h.len, .flags = VRING_DESC_F_NEXT,
		 .next = (uint16_t)(2 * n + 1)},
		{.addr = at + 0x400u, .len = 0x400, .flags = VRING_DESC_F_WRITE},
	};
	mmio_ram(1, (uint16_t)(0x4000 + 2 * n * sizeof(d[0])), d, sizeof(d));
	uint16_t head = (uint16_t)(2 * n), idx = (uint16_t)(n + 1);
	mmio_ram(1, (uint16_t)(0x5004 + 2 * n), &head, 2);
	mmio_ram(1, 0x5002, &idx, 2);
	mmio_reg(MMIO_FS, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
}

static void mmio_seeds(void)
{
	const char *t = "fuzz_virtio_mmio";
	const uint64_t all = (1ULL << VIRTIO_F_VERSION_1) |
			     (1ULL << VIRTIO_RING_F_EVENT_IDX) |
			     (1ULL << VIRTIO_RING_F_INDIRECT_DESC);

	/* Device 0 (as virtio-fs) up, a request on queue 1, kicked, served. */
	begin(NULL, 0);
	mmio_read(0, VIRTIO_MMIO_MAGIC_VALUE, 4);
	mmio_negotiate(0, all);
	mmio_queue(0, 0, 8, 0x1000, 0x2000, 0x3000);
	mmio_queue(0, 1, 8, 0x4000, 0x5000, 0x6000);
	mmio_reg(0, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	mmio_chain(0, 0x4000, 0x5000, 0, 0, 1, 0);
	mmio_reg(0, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
	mmio_serve(0);
	mmio_read(0, VIRTIO_MMIO_INTERRUPT_STATUS, 4);
	mmio_reg(0, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_VRING);
	mmio_chain(0, 0x4000, 0x5000, 0, 2, 2, 0);
	mmio_reg(0, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
	mmio_serve(0);
	save(t, "start-kick-serve");

	/* Rings in the high region, an indirect table, then a reset while
	 * live and a second start. */
	begin(NULL, 0);
	mmio_negotiate(0, all);
	mmio_queue(0, 0, 4, 0x100001000ULL, 0x100002000ULL, 0x100003000ULL);
	mmio_reg(0, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	struct vring_desc ind = {.addr = 0x100007000ULL, .len = 32,
				 .flags = VRING_DESC_F_INDIRECT};
	mmio_ram(1, 0x1000, &ind, sizeof(ind));
	struct vring_desc table[2] = {
		{.addr = 0x100008000ULL, .len = 16, .flags = VRING_DESC_F_NEXT, .next = 1},
		{.addr = 0x100009000ULL, .len = 16, .flags = VRING_DESC_F_WRITE}};
	mmio_ram(1, 0x7000, table, sizeof(table));
	uint16_t avail[3] = {0, 1, 0};
	mmio_ram(1, 0x2000, avail, sizeof(avail));
	mmio_reg(0, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	mmio_serve(0);
	mmio_reg(0, VIRTIO_MMIO_STATUS, 0);
	mmio_negotiate(0, all);
	mmio_queue(0, 0, 4, 0x100001000ULL, 0x100002000ULL, 0x100003000ULL);
	mmio_reg(0, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	mmio_reg(0, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	mmio_serve(0);
	save(t, "high-ram-indirect-restart");

	/* Rings outside RAM: DRIVER_OK fails into NEEDS_RESET; a legacy
	 * driver's FEATURES_OK is refused. */
	begin(NULL, 0);
	mmio_negotiate(3, (1ULL << VIRTIO_F_VERSION_1));
	mmio_queue(3, 2, 8, 0x20000, 0x2000, 0x3000);
	mmio_reg(3, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	mmio_read(3, VIRTIO_MMIO_STATUS, 4);
	mmio_reg(3, VIRTIO_MMIO_STATUS, 0);
	mmio_negotiate(1, 1ULL << VIRTIO_RING_F_EVENT_IDX);
	mmio_queue(1, 0, 1, 0x1000, 0x2000, 0x3000);
	mmio_reg(1, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	save(t, "needs-reset-and-legacy");

	/* Odd widths and offsets, config space, shared memory registers,
	 * the 64-queue device's last queue and past it. */
	begin(NULL, 0);
	for (unsigned int w = 1; w <= 8; w *= 2) {
		mmio_read(2, VIRTIO_MMIO_CONFIG + 3, w);
		mmio_read(2, VIRTIO_MMIO_STATUS + 1, w);
		mmio_write(2, VIRTIO_MMIO_QUEUE_SEL, w, 63);
	}
	mmio_read(2, 0xffe, 4);
	mmio_write(2, 0x1070, 4, 1);
	mmio_reg(2, VIRTIO_MMIO_SHM_SEL, 0);
	mmio_read(2, VIRTIO_MMIO_SHM_LEN_LOW, 4);
	mmio_read(2, VIRTIO_MMIO_SHM_BASE_HIGH, 4);
	mmio_reg(2, VIRTIO_MMIO_SHM_SEL, 1);
	mmio_read(2, VIRTIO_MMIO_SHM_LEN_HIGH, 4);
	mmio_reg(2, VIRTIO_MMIO_QUEUE_SEL, 63);
	mmio_reg(2, VIRTIO_MMIO_QUEUE_NUM, 1024);
	mmio_reg(2, VIRTIO_MMIO_QUEUE_SEL, 64);
	mmio_reg(2, VIRTIO_MMIO_QUEUE_READY, 1);
	mmio_reg(2, VIRTIO_MMIO_QUEUE_NOTIFY, 64);
	save(t, "odd-accesses");

	/* A device that fails to start needs a reset, then starts. */
	begin(NULL, 0);
	mmio_refuse_start(0);
	mmio_negotiate(0, all);
	mmio_queue(0, 0, 8, 0x1000, 0x2000, 0x3000);
	mmio_reg(0, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	mmio_reg(0, VIRTIO_MMIO_STATUS, 0);
	mmio_negotiate(0, all);
	mmio_queue(0, 0, 8, 0x1000, 0x2000, 0x3000);
	mmio_reg(0, VIRTIO_MMIO_STATUS, S_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	save(t, "start-refused");

	/* virtio-fs: a session, a lookup, an open and a mapping. */
	begin(NULL, 0);
	mmio_fs_start(all);
	struct fuse_init_in init = {.major = FUSE_KERNEL_VERSION,
				    .minor = FUSE_KERNEL_MINOR_VERSION,
				    .flags = FUSE_INIT_EXT,
				    .flags2 = (uint32_t)(FUSE_HAS_INODE_DAX >> 32)};
	mmio_fs_request(FUSE_INIT, 0, &init, sizeof(init), NULL, 0);
	mmio_fs_request(FUSE_LOOKUP, 1, "f", 2, NULL, 0);
	struct fuse_open_in rdwr = {.flags = O_RDWR};
	mmio_fs_request(FUSE_OPEN, 2, &rdwr, sizeof(rdwr), NULL, 0);
	struct fuse_setupmapping_in map = {.fh = 1, .len = 4096,
					   .flags = FUSE_SETUPMAPPING_FLAG_READ};
	mmio_fs_request(FUSE_SETUPMAPPING, 2, &map, sizeof(map), NULL, 0);
	struct fuse_read_in rd = {.fh = 1, .size = 64};
	mmio_fs_request(FUSE_READ, 2, &rd, sizeof(rd), NULL, 0);
	mmio_serve(MMIO_FS);
	save(t, "virtio-fs-session");

	/* virtio-fs: a SETLKW that waits, and the reset that abandons it. */
	begin(NULL, 0);
	mmio_fs_start(all);
	mmio_fs_request(FUSE_INIT, 0, &init, sizeof(init), NULL, 0);
	mmio_fs_request(FUSE_LOOKUP, 1, "f", 2, NULL, 0);
	mmio_fs_request(FUSE_OPEN, 2, &rdwr, sizeof(rdwr), NULL, 0);
	mmio_fs_request(FUSE_OPEN, 2, &rdwr, sizeof(rdwr), NULL, 0);
	struct fuse_lk_in lk = {.fh = 1, .lk = {.end = 99, .type = F_WRLCK}};
	mmio_fs_request(FUSE_SETLK, 2, &lk, sizeof(lk), NULL, 0);
	lk.fh = 2;
	mmio_fs_request(FUSE_SETLKW, 2, &lk, sizeof(lk), NULL, 0);
	mmio_serve(MMIO_FS);
	mmio_reg(MMIO_FS, VIRTIO_MMIO_STATUS, 0);
	save(t, "virtio-fs-wait-reset");
}

/* --- fuzz_virtio_pci: config space, BAR 0 and the doorbells of two
 * devices. */

/* BAR 0 as virtio/virtio_pci.c lays it out (a driver reads it from the
 * capabilities); the doorbells are ports, queue q's at 4q in BAR 1. */
#define PCI_MSIX 0x4000
#define PCI_ISR 0x1000
#define COMMON(field) offsetof(struct virtio_pci_common_cfg, field)

static void pci_cfg_w(unsigned int dev, uint8_t reg, uint32_t v,
		      unsigned int width)
{
	put8((uint8_t)(1 | dev << 3 | width_code(width) << 4));
	put8(reg);
	put(&v, 4);
}

static void pci_cfg_r(unsigned int dev, uint8_t reg, unsigned int width)
{
	put8((uint8_t)(2 | dev << 3 | width_code(width) << 4));
	put8(reg);
}

static void pci_bar_w(unsigned int dev, uint16_t off, uint64_t v,
		      unsigned int width)
{
	put8((uint8_t)(3 | dev << 3 | width_code(width) << 4));
	put(&off, 2);
	put(&v, 8);
}

static void pci_bar_r(unsigned int dev, uint16_t off, unsigned int width)
{
	put8((uint8_t)(4 | dev << 3 | width_code(width) << 4));
	put(&off, 2);
}

static void pci_ram(uint16_t off, const void *p, uint8_t len)
{
	put8(5);
	put(&off, 2);
	put8(len);
	put(p, len);
}

static void pci_pio(uint8_t port_from_cf4, bool is_write, uint32_t v,
		    unsigned int width)
{
	put8((uint8_t)(0 | width_code(width) << 4 | (is_write ? 0x40 : 0)));
	put8(port_from_cf4);
	if (is_write)
		put(&v, 4);
}

static void pci_doorbell(unsigned int dev, uint16_t off, bool is_write,
			 uint32_t v, unsigned int width)
{
	put8((uint8_t)(0 | dev << 3 | width_code(width) << 4 |
		       (is_write ? 0x40 : 0) | 0x80));
	put(&off, 2);
	if (is_write)
		put(&v, 4);
}

static void pci_mmio(uint32_t off, bool is_write, uint64_t v,
		     unsigned int width)
{
	put8((uint8_t)(6 | width_code(width) << 4 | (is_write ? 0x40 : 0)));
	put(&off, 4);
	if (is_write)
		put(&v, 8);
}

static void pci_serve(unsigned int dev)
{
	put8((uint8_t)(7 | dev << 3));
}

/* The MSI-X capability comes last: after the shared memory one on
 * device 0, at 0x9c; at 0x84 on device 1, which has none. */
static void pci_msix_flags(unsigned int dev, uint16_t flags)
{
	pci_cfg_w(dev, (uint8_t)((dev ? 0x84 : 0x9c) + PCI_MSIX_FLAGS), flags, 2);
}

/* What the Linux driver does up to DRIVER_OK, with MSI-X on and one
 * vector per queue, rings at 0x1000 * (1 + 3q). */
static void pci_start(unsigned int dev, unsigned int queues,
		      uint64_t features)
{
	pci_cfg_r(dev, PCI_VENDOR_ID, 4);
	pci_cfg_w(dev, PCI_COMMAND,
		  PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
	pci_cfg_w(dev, 0x40, 0, 4); /* past the header: ignored */
	for (unsigned int v = 0; v <= queues; v++) {
		uint16_t e = (uint16_t)(PCI_MSIX + 16 * v);
		pci_bar_w(dev, e + PCI_MSIX_ENTRY_LOWER_ADDR, 0xfee00000, 4);
		pci_bar_w(dev, e + PCI_MSIX_ENTRY_UPPER_ADDR, 0, 4);
		pci_bar_w(dev, e + PCI_MSIX_ENTRY_DATA, 0x4041 + v, 4);
		pci_bar_w(dev, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0, 4);
	}
	pci_bar_w(dev, COMMON(device_status), VIRTIO_CONFIG_S_ACKNOWLEDGE, 1);
	pci_bar_w(dev, COMMON(device_status),
		  VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER, 1);
	for (uint32_t sel = 0; sel < 2; sel++) {
		pci_bar_w(dev, COMMON(device_feature_select), sel, 4);
		pci_bar_r(dev, COMMON(device_feature), 4);
		pci_bar_w(dev, COMMON(guest_feature_select), sel, 4);
		pci_bar_w(dev, COMMON(guest_feature),
			  (uint32_t)(features >> (32 * sel)), 4);
	}
	pci_bar_w(dev, COMMON(device_status), S_OK, 1);
	pci_bar_w(dev, COMMON(msix_config), 0, 2);
	for (unsigned int q = 0; q < queues; q++) {
		uint64_t at = 0x1000 * (1 + 3 * q);
		pci_bar_w(dev, COMMON(queue_select), q, 2);
		pci_bar_w(dev, COMMON(queue_size), 8, 2);
		pci_bar_w(dev, COMMON(queue_msix_vector), q + 1, 2);
		pci_bar_w(dev, COMMON(queue_desc_lo), at, 4);
		pci_bar_w(dev, COMMON(queue_desc_hi), 0, 4);
		pci_bar_w(dev, COMMON(queue_avail_lo), at + 0x1000, 4);
		pci_bar_w(dev, COMMON(queue_used_lo), at + 0x2000, 4);
		pci_bar_w(dev, COMMON(queue_enable), 1, 2);
	}
	pci_msix_flags(dev, PCI_MSIX_FLAGS_ENABLE);
	pci_bar_w(dev, COMMON(device_status), S_OK | VIRTIO_CONFIG_S_DRIVER_OK, 1);
}

/* A two-descriptor chain at entry 0 of queue q's rings (as pci_start). */
static void pci_chain(unsigned int q, uint16_t idx)
{
	uint16_t at = (uint16_t)(0x1000 * (1 + 3 * q));
	struct vring_desc d[2] = {
		{.addr = 0xa000, .len = 64, .flags = VRING_DESC_F_NEXT, .next = 1},
		{.addr = 0xb000, .len = 128, .flags = VRING_DESC_F_WRITE},
	};
	pci_ram(at, d, sizeof(d));
	uint16_t avail[3] = {0, idx, 0};
	pci_ram((uint16_t)(at + 0x1000), avail, sizeof(avail));
}

static void pci_seeds(void)
{
	const char *t = "fuzz_virtio_pci";
	const uint64_t all = (1ULL << VIRTIO_F_VERSION_1) |
			     (1ULL << VIRTIO_RING_F_EVENT_IDX) |
			     (1ULL << VIRTIO_RING_F_INDIRECT_DESC);

	/* Device 0 (as virtio-fs) up, a request on queue 1, served. */
	begin(NULL, 0);
	pci_start(0, 3, all);
	pci_chain(1, 1);
	pci_doorbell(0, 4, true, 1, 2);
	pci_serve(0);
	pci_bar_r(0, PCI_ISR, 1);
	save(t, "start-kick-serve");

	/* BARs moved while live: BAR 0, the doorbells' BAR (doorbells
	 * follow) and the shared memory BAR with decoding on and off;
	 * vectors masked and not. */
	begin(NULL, 0);
	pci_start(0, 3, all);
	pci_cfg_w(0, PCI_BASE_ADDRESS_0, 0xd0000000, 4);
	pci_cfg_w(0, PCI_BASE_ADDRESS_1, 0xe000, 4);
	pci_chain(0, 1);
	pci_doorbell(0, 0, true, 0, 2);
	pci_serve(0);
	pci_cfg_w(0, PCI_BASE_ADDRESS_2, 0x00400000, 4);
	pci_cfg_w(0, PCI_BASE_ADDRESS_3, 2, 4);
	pci_cfg_w(0, PCI_COMMAND, 0, 2);
	pci_doorbell(0, 0, true, 0, 2);
	pci_cfg_w(0, PCI_BASE_ADDRESS_1, 0xffffffff, 4);
	pci_cfg_r(0, PCI_BASE_ADDRESS_1, 4);
	pci_cfg_w(0, PCI_BASE_ADDRESS_2, 0xffffffff, 4);
	pci_cfg_r(0, PCI_BASE_ADDRESS_2, 4);
	pci_cfg_w(0, PCI_COMMAND, PCI_COMMAND_IO | PCI_COMMAND_MEMORY, 2);
	pci_msix_flags(0, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	pci_bar_w(0, PCI_MSIX + 16 + PCI_MSIX_ENTRY_VECTOR_CTRL, 1, 4);
	pci_msix_flags(0, PCI_MSIX_FLAGS_ENABLE);
	pci_bar_w(0, COMMON(device_status), 0, 1);
	save(t, "bars-move-while-live");

	/* The other device, and every width at odd places: the config
	 * ports byte-wise, 8-byte common config, past BAR 0, the doorbells
	 * unaligned and astride their BAR's end, past the window's start. */
	begin(NULL, 0);
	pci_start(1, 1, 1ULL << VIRTIO_F_VERSION_1);
	for (unsigned int w = 1; w <= 8; w *= 2) {
		pci_pio(4, true, 0x80001000, w);
		pci_pio(9, false, 0, w);
		pci_bar_r(1, COMMON(queue_desc_lo) + 1, w);
		pci_bar_w(1, COMMON(queue_select) - 1, ~0ULL, w);
		pci_bar_r(1, 0x7ffe, w);
		pci_bar_w(1, PCI_MSIX + 0x1c, ~0ULL, w);
		pci_doorbell(1, 1, true, 0, w);
		pci_doorbell(1, 0xff, false, 0, w);
		pci_mmio(0x7fff, false, 0, w);
	}
	pci_cfg_w(1, 0xfe, 0xffffffff, 4);
	pci_bar_w(1, COMMON(device_status), 0xff, 1);
	save(t, "odd-widths");
}

/* --- fuzz_virtio_net: a configuration byte, then operations (the
 * format is fuzz_virtio_net.c's). */

#define NET_MRG 0x01
#define NET_CSUM 0x02
#define NET_EVENT_IDX 0x04
#define NET_INDIRECT 0x08
#define NET_MTU(i) ((i) << 4) /* 68, 1500, 9000, 65520 */
#define NET_SMALL_SNDBUF 0x40
#define NET_TX 0
#define NET_RX 1
#define NET_HDR 12

static void put16(uint16_t v)
{
	put(&v, sizeof(v));
}

/* A chain of nr descriptors on queue q, then each with net_desc. */
static void net_chain(unsigned int q, unsigned int nr, uint8_t opts)
{
	put8((uint8_t)((nr - 1) << 4 | q));
	put8(opts);
}

/* A descriptor at buf (a multiple of 3 from the buffers' start). */
static void net_desc(uint8_t flags, uint32_t buf, uint16_t len)
{
	put8(flags);
	put16((uint16_t)(buf / 3));
	put16(len);
}

/* A transmit frame of len bytes (after its header) in one descriptor. */
static void net_tx(uint32_t buf, uint16_t len)
{
	net_chain(NET_TX, 1, 0);
	net_desc(0, buf, (uint16_t)(NET_HDR + len));
}

/* A 4 KiB receive buffer. */
static void net_rx(uint32_t buf)
{
	net_chain(NET_RX, 1, 0);
	net_desc(0, buf, 4096);
}

/* passt sends a frame of len bytes. */
static void net_peer_frame(uint16_t len)
{
	put8(3);
	put16(len);
}

static void net_peer_read(void)
{
	put8(5);
}

static void net_seeds(void)
{
	const char *t = "fuzz_virtio_net";

	/* Frames out: whole, split with the header alone, through an
	 * indirect table; passt reads them. */
	begin(NULL, 0);
	put8(NET_MRG | NET_CSUM | NET_EVENT_IDX | NET_INDIRECT | NET_MTU(3));
	net_tx(0, 60);
	net_chain(NET_TX, 3, 0);
	net_desc(0, 0x300, NET_HDR);
	net_desc(0, 0x600, 1000);
	net_desc(0, 0x1200, 500);
	net_chain(NET_TX, 2, 1);
	net_desc(0, 0x3000, NET_HDR + 7);
	net_desc(0, 0x3300, 9000);
	net_peer_read();
	save(t, "tx-frames");

	/* Frames in, in mergeable buffers: one, one over five, one over
	 * more than were posted until more are. */
	begin(NULL, 0);
	put8(NET_MRG | NET_CSUM | NET_MTU(3));
	for (uint32_t i = 0; i < 8; i++)
		net_rx(i * 4098);
	net_peer_frame(60);
	net_peer_frame(20000);
	net_peer_frame(65000);
	for (uint32_t i = 8; i < 24; i++)
		net_rx(i * 4098);
	save(t, "rx-mergeable");

	/* Without mergeable buffers: a chain a frame, a header buffer and
	 * the frame's; the largest frame the MTU allows, then one more. */
	begin(NULL, 0);
	put8(NET_MTU(1));
	for (uint32_t i = 0; i < 4; i++) {
		net_chain(NET_RX, 2, 0);
		net_desc(0, i * 0x900, NET_HDR);
		net_desc(0, i * 0x900 + 0x30, 1518);
	}
	net_peer_frame(60);
	net_peer_frame(1518);
	net_peer_frame(1519);
	net_peer_frame(100);
	save(t, "rx-one-chain-a-frame");

	/* Chains that are no frame among frames: a runt, a header alone,
	 * an empty descriptor, one past the MTU, a writable buffer, an
	 * address outside RAM; then a loop breaks the ring. */
	begin(NULL, 0);
	put8(NET_MTU(1));
	net_tx(0, 10);
	net_tx(0, 0);
	net_chain(NET_TX, 1, 0);
	net_desc(0, 0, 0);
	net_tx(0, 1519);
	net_tx(0, 1518);
	net_chain(NET_TX, 2, 0);
	net_desc(0, 0, NET_HDR + 60);
	net_desc(1, 0x3000, 64);
	net_chain(NET_TX, 1, 0);
	put8(8);
	put(&(uint32_t){0x100000}, 4);
	put16(NET_HDR + 60);
	net_tx(0, 60);
	net_chain(NET_TX, 2, 0); /* descriptors 9 and 10, 10's next 9 */
	net_desc(0, 0, 100);
	put8(4 | 16);
	put8(9);
	put16(0);
	put16(100);
	net_peer_read();
	save(t, "tx-hostile");

	/* A small socket buffer stops the device's writes in the middle
	 * of a frame; a reset there; the frames of the new rings after. */
	begin(NULL, 0);
	put8(NET_SMALL_SNDBUF | NET_INDIRECT | NET_MTU(2));
	for (int i = 0; i < 8; i++)
		net_tx(0, 9000);
	put8(7);
	put8(NET_INDIRECT);
	net_tx(0, 60);
	net_peer_read();
	save(t, "reset-mid-frame");

	/* The same with small frames, all made available at once: the
	 * reset finds most still waiting to go. */
	begin(NULL, 0);
	put8(NET_SMALL_SNDBUF | NET_MTU(1));
	for (int i = 0; i < 32; i++) {
		net_chain(NET_TX, 1, 4);
		net_desc(0, 0, NET_HDR + 274);
	}
	put8(2);
	put8(7);
	put8(0);
	net_tx(0, 60);
	net_peer_read();
	save(t, "reset-with-frames-waiting");

	/* passt sends a length no frame has. */
	begin(NULL, 0);
	put8(NET_MRG | NET_MTU(3));
	net_rx(0);
	put8(4);
	put8(8);
	put(&(uint64_t){0}, 8);
	net_tx(0x2000, 60);
	net_peer_read();
	save(t, "peer-impossible-length");

	/* passt sends with no buffer posted, and hangs up; the guest posts
	 * buffers after. */
	begin(NULL, 0);
	put8(NET_MRG | NET_MTU(1));
	for (int i = 0; i < 3; i++)
		net_peer_frame(1514);
	put8(6);
	for (uint32_t i = 0; i < 4; i++)
		net_rx(i * 4098);
	save(t, "peer-hangs-up-starved");

	/* A chain made available under an index that claims 200 more. */
	begin(NULL, 0);
	put8(NET_MTU(1));
	net_chain(NET_TX, 1, 4);
	net_desc(0, 0, NET_HDR + 60);
	put8(2 | 2 << 4);
	put8(200);
	save(t, "avail-index-too-far");
}

/* --- fuzz_virtio_vsock: a configuration byte, then operations (the
 * format is fuzz_virtio_vsock.c's). */

#define VSOCK_EVENT_IDX 0x01
#define VSOCK_INDIRECT 0x02

/* The guest's packet on client c's stream: op, flags, buf_alloc / 16, how
 * far its fwd_cnt lags, payload length; forged (with forgery) or not. */
static void vsock_packet(unsigned int c, uint8_t op, uint8_t flags,
			 uint16_t buf16, int8_t lag, uint16_t len, int forgery)
{
	put8((uint8_t)(3 | (c | (forgery >= 0 ? 8 : 0)) << 4));
	put8(op);
	put8(flags);
	put16(buf16);
	put8((uint8_t)lag);
	put16(len);
	if (forgery >= 0)
		put8((uint8_t)forgery);
}

static void vsock_op(uint8_t kind, unsigned int a)
{
	put8((uint8_t)(kind | a << 4));
}

/* Client c connects and the guest accepts: its REQUEST taken, answered
 * with a 64 KiB buffer. */
static void vsock_accept(unsigned int c)
{
	vsock_op(4, 0);
	vsock_op(8, 0);
	vsock_packet(c, 2, 0, 0x1000, 0, 0, -1);
}

static void vsock_client_write(unsigned int c, uint16_t len)
{
	vsock_op(5, c);
	put16(len);
}

static void vsock_seeds(void)
{
	const char *t = "fuzz_virtio_vsock";

	/* A stream: bytes both ways, the host ends its writing, then the
	 * guest its own; the RST. */
	begin(NULL, 0);
	put8(VSOCK_EVENT_IDX | VSOCK_INDIRECT);
	vsock_accept(0);
	vsock_client_write(0, 100);
	vsock_op(8, 0);
	vsock_packet(0, 5, 0, 0x1000, 0, 50, -1);
	vsock_op(6, 0);
	vsock_op(7, 8);
	vsock_op(8, 0);
	vsock_packet(0, 4, 3, 0x1000, 0, 0, -1);
	vsock_op(8, 0);
	vsock_op(6, 0);
	save(t, "stream");

	/* The guest's credit: 16 bytes of room for 4000 of the host's; an
	 * update; one claiming to have consumed more than it got. */
	begin(NULL, 0);
	put8(0);
	vsock_op(4, 0);
	vsock_op(8, 0);
	vsock_packet(0, 2, 0, 1, 0, 0, -1);
	vsock_client_write(0, 4000);
	vsock_op(8, 0);
	vsock_packet(0, 6, 0, 1, 0, 0, -1);
	vsock_op(8, 0);
	vsock_packet(0, 6, 0, 0x100, -100, 0, -1);
	vsock_op(8, 0);
	vsock_packet(0, 7, 0, 0x100, 0, 0, -1);
	vsock_op(8, 0);
	save(t, "guest-credit");

	/* A host that reads nothing: the guest sends past the socket's
	 * room and the device's credit, then a reset with bytes held. */
	begin(NULL, 0);
	put8(VSOCK_EVENT_IDX);
	vsock_accept(0);
	for (int i = 0; i < 6; i++)
		vsock_packet(0, 5, 0, 0x1000, 0, 0xffff, -1);
	vsock_op(8, 0);
	vsock_op(11, 0);
	vsock_op(6, 0);
	save(t, "held-then-reset");

	/* Two streams; hostile packets on and beside them: forged CIDs,
	 * type, ports and length, unknown ops, a REQUEST, data before the
	 * RESPONSE; the guest's RST; a client that hangs up. */
	begin(NULL, 0);
	put8(VSOCK_INDIRECT);
	vsock_accept(0);
	vsock_op(4, 0);
	vsock_op(8, 0);
	vsock_packet(1, 5, 0, 0x10, 0, 4, -1);
	vsock_op(8, 0);
	for (int f = 1; f <= 8; f <<= 1)
		vsock_packet(0, 5, 0, 0x1000, 0, 8, f);
	vsock_packet(0, 99, 0, 0x1000, 0, 0, -1);
	vsock_op(8, 0);
	vsock_accept(2);
	vsock_packet(2, 1, 0, 0x1000, 0, 0, -1);
	vsock_op(8, 0);
	vsock_accept(3);
	vsock_packet(3, 3, 0, 0, 0, 0, -1);
	vsock_accept(4);
	vsock_op(7, 4);
	vsock_op(8, 0);
	vsock_packet(4, 5, 0, 0x1000, 0, 10, -1);
	vsock_op(8, 0);
	save(t, "hostile-packets");

	/* Raw chains: a header alone too short, a writable one, one outside
	 * RAM, an indirect one, receive chains too small for a header. */
	begin(NULL, 0);
	put8(VSOCK_INDIRECT);
	vsock_op(10, 0);
	put16(0);
	put8(44);
	for (int i = 0; i < 44; i++)
		put8(i == 0 ? 3 : i == 8 ? 2 : 0);
	vsock_op(0, 0);
	put8(0);
	put16(0);
	put16(43);
	vsock_op(0, 1);
	put8(0);
	put16(0);
	put16(44);
	put8(1);
	put16(0x100);
	put16(16);
	vsock_op(0, 0);
	put8(8);
	put(&(uint32_t){0x100000}, 4);
	put16(44);
	vsock_op(0, 0);
	put8(2);
	put16(0x200);
	put16(32);
	vsock_op(1, 0);
	put8(0);
	put16(0x400);
	put16(20);
	vsock_op(4, 0);
	vsock_op(8, 0);
	save(t, "raw-chains");

	/* A receive queue whose index claims 100 more chains than made,
	 * when a REQUEST needs a buffer. */
	begin(NULL, 0);
	put8(0);
	vsock_op(2, 3);
	put8(100);
	vsock_op(4, 0);
	vsock_op(8, 0);
	save(t, "avail-index-too-far");
}

/* --- fuzz_virtio_blk: a configuration byte, then operations (the
 * format is fuzz_virtio_blk.c's). */

#define BLK_EVENT_IDX 0x01
#define BLK_INDIRECT 0x02
#define BLK_RO 0x04
#define BLK_QUEUES(n) (((n) - 1) << 4)
#define BLK_DIRECT 0x40
/* Request types as the target picks them. */
enum { BLK_IN, BLK_OUT, BLK_FLUSH, BLK_GET_ID, BLK_DISCARD, BLK_ZEROES, BLK_99 };
/* A request's options. */
#define BLK_OPT_INDIRECT 0x01
#define BLK_OPT_MISDIRECTED 0x02
#define BLK_OPT_NO_STATUS 0x04
#define BLK_OPT_FLAGS 0x08
#define BLK_OPT_UNPUBLISHED 0x10
#define BLK_OPT_LEN_OFF 0x20

/* A request on queue q (with a 64-bit sector when wide); the bytes its
 * options call for follow it. */
static void blk_req(unsigned int q, bool wide, uint8_t type, uint64_t sector,
		    uint8_t sectors, uint8_t pieces, uint8_t opts)
{
	put8((uint8_t)((q | (wide ? 8 : 0)) << 4));
	put8(type);
	if (wide)
		put(&sector, 8);
	else
		put16((uint16_t)sector);
	put8(sectors);
	put8(pieces);
	put8(opts);
}

static void blk_publish(unsigned int q, int extra)
{
	put8((uint8_t)(2 | (q | (extra >= 0 ? 8 : 0)) << 4));
	if (extra >= 0)
		put8((uint8_t)extra);
}

static void blk_seeds(void)
{
	const char *t = "fuzz_virtio_blk";

	/* Writes and reads on two queues, in the ring and indirect; a
	 * flush; the id. */
	begin(NULL, 0);
	put8(BLK_EVENT_IDX | BLK_INDIRECT | BLK_QUEUES(2));
	blk_req(0, false, BLK_OUT, 0, 8, 3, 0);
	blk_req(1, false, BLK_OUT, 64, 16, 4, BLK_OPT_INDIRECT);
	blk_req(0, false, BLK_FLUSH, 0, 0, 0, 0);
	blk_req(0, false, BLK_IN, 0, 8, 2, 0);
	blk_req(1, false, BLK_IN, 64, 16, 8, BLK_OPT_INDIRECT);
	blk_req(1, false, BLK_GET_ID, 0, 1, 0, 0);
	save(t, "read-write");

	/* Discard and write zeroes, with and without UNMAP, with flags not
	 * theirs, past the end. */
	begin(NULL, 0);
	put8(BLK_QUEUES(1));
	blk_req(0, false, BLK_OUT, 0, 64, 1, 0);
	blk_req(0, false, BLK_DISCARD, 0, 8, 0, 0);
	blk_req(0, false, BLK_ZEROES, 8, 8, 0, 0);
	blk_req(0, false, BLK_ZEROES, 16, 8, 0, BLK_OPT_FLAGS);
	put8(VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	blk_req(0, false, BLK_DISCARD, 24, 8, 0, BLK_OPT_FLAGS);
	put8(VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	blk_req(0, false, BLK_ZEROES, 24, 8, 0, BLK_OPT_FLAGS);
	put8(2);
	blk_req(0, false, BLK_DISCARD, 2040, 16, 0, 0);
	save(t, "ranges");

	/* Requests no guest should make: unknown types, data of the wrong
	 * direction, no status, a length off a sector, a sector that
	 * overflows; a header too short; a buffer outside RAM. */
	begin(NULL, 0);
	put8(BLK_QUEUES(2));
	blk_req(0, false, BLK_99, 0, 1, 0, 0);
	blk_req(0, false, 14, 0, 1, 0, 0);
	blk_req(0, false, BLK_IN, 0, 2, 2, BLK_OPT_MISDIRECTED);
	blk_req(1, false, BLK_OUT, 0, 2, 2, BLK_OPT_NO_STATUS);
	blk_req(1, false, BLK_IN, 0, 2, 1, BLK_OPT_LEN_OFF);
	put8(100);
	blk_req(1, true, BLK_IN, 0xffffffffffffff00ULL, 1, 1, 0);
	put8(1 | 1 << 4); /* a raw chain of two descriptors */
	put8(0);
	put8(0);
	put16(0);
	put16(8);
	put8(1);
	put16(0x100);
	put16(1);
	put8(1);
	put8(0);
	put8(8);
	put(&(uint32_t){0x100000}, 4);
	put16(16);
	blk_publish(0, -1);
	blk_publish(1, -1);
	save(t, "hostile");

	/* A read-only disk: every change refused, reads go on. */
	begin(NULL, 0);
	put8(BLK_RO);
	blk_req(0, false, BLK_OUT, 0, 8, 1, 0);
	blk_req(0, false, BLK_DISCARD, 0, 8, 0, 0);
	blk_req(0, false, BLK_ZEROES, 0, 8, 0, 0);
	blk_req(0, false, BLK_IN, 8, 8, 1, 0);
	blk_req(0, false, BLK_FLUSH, 0, 0, 0, 0);
	save(t, "read-only");

	/* Four queues full of big requests, all published at once, and a
	 * reset in the middle of them; the device starts again. */
	begin(NULL, 0);
	put8(BLK_INDIRECT | BLK_QUEUES(4));
	for (unsigned int q = 0; q < 4; q++)
		for (unsigned int i = 0; i < 6; i++)
			blk_req(q, false, i & 1 ? BLK_IN : BLK_OUT, i * 256, 255, 8,
				BLK_OPT_INDIRECT | BLK_OPT_UNPUBLISHED);
	for (unsigned int q = 0; q < 4; q++)
		blk_publish(q, -1);
	put8(4);
	put8(BLK_INDIRECT);
	blk_req(3, false, BLK_IN, 0, 8, 1, 0);
	save(t, "reset-in-flight");

	/* A chain made available under an index that claims 100 more; a
	 * head posted again while its request waits. */
	begin(NULL, 0);
	put8(BLK_QUEUES(2));
	blk_req(0, false, BLK_OUT, 0, 8, 1, BLK_OPT_UNPUBLISHED);
	blk_publish(0, 100);
	blk_req(1, false, BLK_OUT, 0, 8, 1, BLK_OPT_UNPUBLISHED);
	put8(1 | 1 << 4); /* a raw chain whose head is the request's */
	put8(2);
	put8(0);
	put16(0);
	put16(16);
	put8(1);
	put16(0x100);
	put16(1);
	put8(0);
	blk_publish(1, -1);
	save(t, "ring-errors");

	/* The host cuts the image under the guest: a read past its new
	 * end comes back short. */
	begin(NULL, 0);
	put8(BLK_EVENT_IDX);
	blk_req(0, false, BLK_OUT, 1800, 16, 1, 0);
	put8(5 | 4 << 4);
	blk_req(0, false, BLK_IN, 1800, 16, 1, 0);
	put8(5);
	blk_req(0, false, BLK_IN, 1800, 16, 1, 0);
	save(t, "host-cuts-image");

	/* O_DIRECT: aligned buffers, and one off 512 by 100 bytes. */
	begin(NULL, 0);
	put8(BLK_DIRECT);
	blk_req(0, false, BLK_OUT, 0, 8, 2, 0);
	blk_req(0, false, BLK_IN, 0, 8, 1, 0x40);
	put8(100);
	blk_req(0, false, BLK_IN, 0, 8, 1, 0);
	save(t, "direct");
}

/* --- fuzz_fuse_state: a control byte, then a state (fs/fuse_state.h has
 * its layout) or, with bit 7, edits to the real state the target saved. */

#define STATE_EDITS 0x80
#define STATE_READONLY 0x01
#define STATE_SMALL_CAPS 0x02
#define STATE_DAX 0x10
#define SEALED (1ULL << 63)

static void put32(uint32_t v)
{
	put(&v, sizeof(v));
}

static void put64(uint64_t v)
{
	put(&v, sizeof(v));
}

static void state_header(uint8_t control, uint32_t session, uint64_t flags,
			 uint32_t inodes, uint32_t handles)
{
	begin(&control, 1);
	put("fsvmFUSE", 8);
	put32(1);
	put32(session);
	put64(flags);
	put64(16); /* next node id */
	put64(16); /* next fh */
	put32(inodes);
	put32(handles);
}

/* dev and ino 0: no file is that, so a node with a path comes back stale
 * after its path is checked and opened. */
static void state_inode(uint64_t id, uint32_t type, bool stale, const char *path)
{
	put64(id);
	put64(1);
	put64(0);
	put64(0);
	put32(type);
	put32(stale);
	put32((uint32_t)strlen(path));
	put(path, strlen(path));
}

static void state_handle(uint64_t fh, uint64_t nodeid, uint32_t flags)
{
	put64(fh);
	put64(nodeid);
	put32(flags);
}

/* An edit of the real state: XOR byte x at offset off. */
static void state_edit(uint16_t off, uint8_t x)
{
	put16(off);
	put8(x);
}

static void state_seeds(void)
{
	const char *t = "fuzz_fuse_state";
	uint8_t c = STATE_EDITS;

	begin(&c, 1);
	save(t, "real");
	state_edit(12, 1); /* no session, but nodes */
	save(t, "real-no-session");
	begin(&c, 1);
	state_edit(48 + 36, 1); /* the first node stale, with its path */
	state_edit(48 + 32 + 1, 0x80); /* its type another */
	save(t, "real-edited-node");
	c = STATE_EDITS | STATE_READONLY;
	begin(&c, 1);
	save(t, "real-read-only");
	c = STATE_EDITS | STATE_SMALL_CAPS | STATE_DAX;
	begin(&c, 1);
	save(t, "real-small-caps-dax");

	state_header(0, 0, 0, 0, 0);
	save(t, "no-session");
	state_header(0, 1, FUSE_ASYNC_READ | FUSE_POSIX_LOCKS, 5, 4);
	state_inode(2, S_IFREG, true, "");
	state_inode(3 | SEALED, S_IFDIR, true, "");
	state_inode(4, S_IFREG, false, "f");
	state_inode(5, S_IFDIR, false, "d");
	state_inode(6, S_IFREG, false, "d/child");
	state_handle(1, 2, O_RDWR);
	state_handle(2, 0, O_RDONLY | O_DIRECTORY);
	state_handle(3, FUSE_ROOT_ID, O_RDONLY | O_DIRECTORY);
	state_handle(4, 6, O_WRONLY | O_TRUNC | O_APPEND);
	save(t, "stale-and-paths");
	state_header(0, 1, 0, 1, 0);
	state_inode(2, S_IFREG, false, "d/../f");
	save(t, "dot-dot");
}

int main(void)
{
	virtq_seeds();
	fuse_seeds();
	mmio_seeds();
	pci_seeds();
	net_seeds();
	vsock_seeds();
	blk_seeds();
	state_seeds();
	return 0;
}
