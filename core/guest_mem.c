/* Guest RAM allocation and the bounds-checked guest-physical translation. */
#include "core/guest_mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		  void *hva)
{
	if (size == 0 || gpa + size < gpa)
		return -EINVAL;
	if (mem->nr_regions == GUEST_MEM_MAX_REGIONS)
		return -ENOSPC;
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->regions[i];
		if (gpa < r->gpa + r->size && r->gpa < gpa + size)
			return -EEXIST;
	}
	mem->regions[mem->nr_regions++] =
		(struct guest_region){.gpa = gpa, .size = size, .hva = hva};
	return 0;
}

/* Transparent huge pages: a guest fault maps 2 MiB at once and the
 * kernel's pages are populated in a few faults rather than thousands
 * (QEMU and Cloud Hypervisor ask for them too). */
#define THP_SIZE (2ULL << 20)

/* An anonymous mapping of len bytes whose start is THP_SIZE-aligned, so
 * that guest-physical 2 MiB pages fall on host huge pages. */
static void *map_aligned(uint64_t len)
{
	uint8_t *p = mmap(NULL, len + THP_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *base = (uint8_t *)(((uintptr_t)p + THP_SIZE - 1) &
				    ~(uintptr_t)(THP_SIZE - 1));
	if (base > p)
		munmap(p, (size_t)(base - p));
	munmap(base + len, (size_t)(p + THP_SIZE - base));
	return base;
}

/* Guest RAM at base: from address 0 up to hole_start, the rest from
 * hole_end on. */
static int lay_out(struct guest_mem *mem, uint8_t *base, uint64_t ram_size,
		   uint64_t hole_start, uint64_t hole_end)
{
	/* Guest RAM is never worth a core dump or a copy into a fork. */
	madvise(base, ram_size, MADV_DONTDUMP);
	madvise(base, ram_size, MADV_DONTFORK);
	mem->base = base;
	mem->ram_size = ram_size;

	uint64_t low = ram_size < hole_start ? ram_size : hole_start;
	int err = guest_mem_add(mem, 0, low, base);
	if (!err && ram_size > low)
		err = guest_mem_add(mem, hole_end, ram_size - low, base + low);
	if (err)
		guest_mem_destroy(mem);
	return err;
}

int guest_mem_init(struct guest_mem *mem, uint64_t ram_size,
		   uint64_t hole_start, uint64_t hole_end)
{
	*mem = (struct guest_mem){0};
	if (ram_size == 0)
		return -EINVAL;
	uint8_t *base = map_aligned(ram_size);
	if (!base)
		return -errno;
	/* A kernel without THP says EINVAL: small pages work all the same. */
	madvise(base, ram_size, MADV_HUGEPAGE);
	return lay_out(mem, base, ram_size, hole_start, hole_end);
}

int guest_mem_init_file(struct guest_mem *mem, uint64_t ram_size,
			uint64_t hole_start, uint64_t hole_end, int fd)
{
	*mem = (struct guest_mem){0};
	if (ram_size == 0)
		return -EINVAL;
	uint8_t *base = mmap(NULL, ram_size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	return lay_out(mem, base, ram_size, hole_start, hole_end);
}

void guest_mem_destroy(struct guest_mem *mem)
{
	if (mem->base)
		munmap(mem->base, mem->ram_size);
	*mem = (struct guest_mem){0};
}

void *guest_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->regions[i];
		if (gpa < r->gpa)
			continue;
		uint64_t off = gpa - r->gpa;
		/* Written so that no sum can wrap: off < size, len <= rest. */
		if (off >= r->size || len > r->size - off)
			continue;
		return r->hva + off;
	}
	return NULL;
}

void guest_mem_prefault(const struct guest_mem *mem, uint64_t gpa,
			uint64_t len)
{
	uint8_t *p = guest_ptr(mem, gpa, len);
	if (!p)
		return;
	/* madvise wants a page-aligned start. */
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)4095;
	madvise((void *)start, len + ((uintptr_t)p - start), MADV_POPULATE_WRITE);
}

int guest_write(const struct guest_mem *mem, uint64_t gpa, const void *src,
		size_t len)
{
	void *dst = guest_ptr(mem, gpa, len);
	if (!dst)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}

int guest_read(const struct guest_mem *mem, void *dst, uint64_t gpa,
	       size_t len)
{
	const void *src = guest_ptr(mem, gpa, len);
	if (!src)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}
