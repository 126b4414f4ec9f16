/* Writes the seed inputs of tests/fuzz/corpus/<target>/, built from the
 * UAPI structs. Run from the top of the tree: make fuzz-corpus. */
#include <errno.h>
#include <fcntl.h>
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

int main(void)
{
	virtq_seeds();
	return 0;
}
