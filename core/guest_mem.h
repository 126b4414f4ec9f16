/* Guest-physical memory: the regions of guest RAM and the one checked
 * translation from guest-physical addresses to host pointers. */
#ifndef FSVM_GUEST_MEM_H
#define FSVM_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

#define GUEST_MEM_MAX_REGIONS 8
/* The page guest RAM, memory slots and DAX mappings are counted in. */
#define GUEST_PAGE_SIZE 4096ULL

struct guest_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
};

struct guest_mem {
	struct guest_region regions[GUEST_MEM_MAX_REGIONS];
	unsigned int nr_regions;
	uint8_t *base;   /* host mapping of all of guest RAM */
	uint64_t ram_size;
};

/* Allocates ram_size bytes of anonymous guest RAM, from address 0 up
 * to hole_start and the rest from hole_end on (the board's hole for
 * devices). Returns 0 or a negative errno. */
int guest_mem_init(struct guest_mem *mem, uint64_t ram_size,
		   uint64_t hole_start, uint64_t hole_end);
/* The same layout over the first ram_size bytes of the file fd, mapped
 * private: what the guest writes stays its own, and VMs mapping the same
 * file share the pages none of them wrote (a snapshot's memory). */
int guest_mem_init_file(struct guest_mem *mem, uint64_t ram_size,
			uint64_t hole_start, uint64_t hole_end, int fd);
void guest_mem_destroy(struct guest_mem *mem);

/* Adds a region backed by host memory at hva (used by tests and by the
 * RAM layout). Fails with -EEXIST on overlap, -ENOSPC when full. */
int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		  void *hva);

/* Returns a host pointer to [gpa, gpa + len) if that whole range lies in
 * one region, NULL otherwise (including on overflow and for len == 0 at
 * an address outside every region). */
void *guest_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* Faults in [gpa, gpa + len) with one call before a bulk copy (thousands
 * of page faults otherwise); a no-op where the kernel cannot. */
void guest_mem_prefault(const struct guest_mem *mem, uint64_t gpa,
			uint64_t len);

/* Copies into / out of guest memory; -EFAULT when the range is not RAM. */
int guest_write(const struct guest_mem *mem, uint64_t gpa, const void *src,
		size_t len);
int guest_read(const struct guest_mem *mem, void *dst, uint64_t gpa,
	       size_t len);

#endif
