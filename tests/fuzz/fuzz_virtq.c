/* libFuzzer target for the split-ring walker: the input is guest memory
 * holding the descriptor table and rings, walked as a device would. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "core/guest_mem.h"
#include "virtio/split_ring.h"

#define MEM_SIZE 0x10000
#define QUEUE_SIZE 16
#define DESC_GPA 0x0
#define AVAIL_GPA 0x100
#define USED_GPA 0x200

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *ram;
	static struct desc_chain chain;
	if (!ram)
		ram = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (size < 1)
		return 0;
	/* The first byte picks the negotiated features. */
	bool event_idx = data[0] & 1, indirect = data[0] & 2;
	memset(ram, 0, MEM_SIZE);
	memcpy(ram, data + 1, size - 1 < MEM_SIZE ? size - 1 : MEM_SIZE);

	struct guest_mem mem = {0};
	guest_mem_add(&mem, 0, MEM_SIZE, ram);
	struct split_ring q;
	if (split_ring_init(&q, &mem, QUEUE_SIZE, DESC_GPA, AVAIL_GPA, USED_GPA,
			    event_idx, indirect))
		return 0;
	for (int i = 0; i < 2 * QUEUE_SIZE; i++) {
		if (split_ring_pop(&q, &chain) <= 0)
			break;
		/* Touch every buffer the walker handed out. */
		for (int r = 0; r < chain.nr_readable; r++)
			memset(chain.readable[r].iov_base, 0xa5,
			       chain.readable[r].iov_len);
		for (int w = 0; w < chain.nr_writable; w++)
			memset(chain.writable[w].iov_base, 0x5a,
			       chain.writable[w].iov_len);
		split_ring_push(&q, chain.head, 0);
		split_ring_should_interrupt(&q);
		split_ring_set_notification(&q, true);
	}
	return 0;
}
