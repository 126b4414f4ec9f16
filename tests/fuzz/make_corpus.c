/* Writes the seed inputs of tests/fuzz/corpus/<target>/, built from the
 * UAPI structs. Run from the top of the tree: make fuzz-corpus. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
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

/* --- fuzz_virtio_mmio: operations on four devices' register pages. */

static void mmio_reg(unsigned int dev, uint32_t reg, uint32_t value)
{
	put8((uint8_t)(2 | dev << 3));
	put8((uint8_t)(reg / 4));
	put(&value, 4);
}

static void mmio_read(unsigned int dev, uint16_t off, unsigned int width)
{
	put8((uint8_t)(0 | dev << 3 | (width - 1) << 5));
	put(&off, 2);
}

static void mmio_write(unsigned int dev, uint16_t off, unsigned int width,
		       uint64_t value)
{
	put8((uint8_t)(1 | dev << 3 | (width - 1) << 5));
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
	for (unsigned int w = 1; w <= 8; w++) {
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
}

int main(void)
{
	virtq_seeds();
	fuse_seeds();
	mmio_seeds();
	return 0;
}
