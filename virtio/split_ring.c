/* Split-ring walker with chain length caps, loop detection, indirect
 * tables, and EVENT_IDX notification suppression. */
#include "virtio/split_ring.h"

#include <errno.h>
#include <string.h>

/* Guest-shared fields are read once into locals, and written once:
 * relaxed atomics (plain moves on x86), which a race detector knows
 * from the guest's own accesses to the same fields. */
#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static inline void split_ring_mb(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int split_ring_init(struct split_ring *q, const struct guest_mem *mem,
		    uint16_t size, uint64_t desc_gpa, uint64_t avail_gpa,
		    uint64_t used_gpa, bool event_idx, bool indirect)
{
	memset(q, 0, sizeof(*q));
	/* Split rings are a power of two in size (virtio 1.x, 2.7). */
	if (size == 0 || (size & (size - 1)) || size > SPLIT_RING_MAX_SIZE)
		return -EINVAL;
	if ((desc_gpa & 15) || (avail_gpa & 1) || (used_gpa & 3))
		return -EINVAL;
	/* Each ring is mapped with room for its trailing event field. */
	q->desc = guest_ptr(mem, desc_gpa, (uint64_t)size * sizeof(struct vring_desc));
	q->avail = guest_ptr(mem, avail_gpa, 6 + 2ULL * size);
	q->used = guest_ptr(mem, used_gpa,
			    6 + (uint64_t)size * sizeof(struct vring_used_elem));
	if (!q->desc || !q->avail || !q->used)
		return -EFAULT;
	/* The event fields sit just past each ring (virtio 1.x, 2.7.10). */
	q->used_event = (uint16_t *)((uint8_t *)q->avail + 4 + 2ULL * size);
	q->avail_event = (uint16_t *)((uint8_t *)q->used + 4 +
				      (uint64_t)size * sizeof(struct vring_used_elem));
	q->mem = mem;
	q->size = size;
	q->event_idx = event_idx;
	q->indirect = indirect;
	q->used_idx = READ_ONCE(q->used->idx);
	q->last_avail = q->used_idx;
	return 0;
}

static int chain_add(struct desc_chain *c, const struct guest_mem *mem,
		     uint64_t addr, uint32_t len, bool writable)
{
	if (len == 0)
		return 0; /* nothing to transfer; harmless */
	if (!writable && c->nr_writable)
		return -EINVAL; /* readable after writable: spec violation */
	int *n = writable ? &c->nr_writable : &c->nr_readable;
	if (*n == DESC_CHAIN_MAX_SEGS)
		return -E2BIG;
	void *p = guest_ptr(mem, addr, len);
	if (!p) {
		c->unreachable = true;
		return 0;
	}
	struct iovec *iov = writable ? c->writable : c->readable;
	iov[(*n)++] = (struct iovec){.iov_base = p, .iov_len = len};
	return 0;
}

/* Walks an indirect table: it may not chain further indirect tables. */
static int walk_indirect(struct split_ring *q, struct desc_chain *c,
			 uint64_t addr, uint32_t len)
{
	if (!q->indirect || len == 0 || len % sizeof(struct vring_desc))
		return -EINVAL;
	uint32_t n = len / sizeof(struct vring_desc);
	const struct vring_desc *table = guest_ptr(q->mem, addr, len);
	if (!table)
		return -EFAULT;
	uint32_t i = 0;
	for (uint32_t steps = 0;; steps++) {
		if (steps >= n)
			return -ELOOP;
		struct vring_desc d;
		memcpy(&d, (const void *)&table[i], sizeof(d));
		if (d.flags & VRING_DESC_F_INDIRECT)
			return -EINVAL;
		int err = chain_add(c, q->mem, d.addr, d.len,
				    d.flags & VRING_DESC_F_WRITE);
		if (err)
			return err;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return 0;
		if (d.next >= n)
			return -EINVAL;
		i = d.next;
	}
}

int split_ring_pop(struct split_ring *q, struct desc_chain *c)
{
	/* Acquire: the ring entries and what they point to are read after
	 * the index that published them. */
	uint16_t avail_idx = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);
	uint16_t pending = (uint16_t)(avail_idx - q->last_avail);
	if (pending == 0)
		return 0;
	if (pending > q->size)
		return -EINVAL; /* the guest claims more entries than exist */

	uint16_t head = READ_ONCE(q->avail->ring[q->last_avail % q->size]);
	if (head >= q->size)
		return -EINVAL;
	q->last_avail++;

	c->head = head;
	c->nr_readable = c->nr_writable = 0;
	c->unreachable = false;
	uint16_t i = head;
	for (unsigned int steps = 0;; steps++) {
		if (steps >= q->size)
			return -ELOOP;
		struct vring_desc d;
		memcpy(&d, (const void *)&q->desc[i], sizeof(d));
		int err;
		if (d.flags & VRING_DESC_F_INDIRECT) {
			/* An indirect descriptor is the whole chain. */
			if ((d.flags & VRING_DESC_F_NEXT) || steps)
				return -EINVAL;
			return walk_indirect(q, c, d.addr, d.len) ?: 1;
		}
		err = chain_add(c, q->mem, d.addr, d.len,
				d.flags & VRING_DESC_F_WRITE);
		if (err)
			return err;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return 1;
		if (d.next >= q->size)
			return -EINVAL;
		i = d.next;
	}
}

void split_ring_push(struct split_ring *q, uint16_t head, uint32_t len)
{
	struct vring_used_elem *e = &q->used->ring[q->used_idx % q->size];
	WRITE_ONCE(e->id, head);
	WRITE_ONCE(e->len, len);
	q->used_idx++;
	/* Release: the entry, and the buffers' bytes, are visible before
	 * the index moves. */
	__atomic_store_n(&q->used->idx, q->used_idx, __ATOMIC_RELEASE);
}

bool split_ring_should_interrupt(struct split_ring *q)
{
	split_ring_mb(); /* used->idx is stored before flags are read */
	if (!q->event_idx)
		return !(READ_ONCE(q->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	uint16_t old = q->signalled;
	bool valid = q->signalled_valid;
	q->signalled = q->used_idx;
	q->signalled_valid = true;
	uint16_t used_event = READ_ONCE(*q->used_event);
	return !valid || vring_need_event(used_event, q->used_idx, old);
}

bool split_ring_set_notification(struct split_ring *q, bool enable)
{
	if (q->event_idx) {
		/* With EVENT_IDX
		 * the guest notifies once per avail_event crossing, so while
		 * draining it is simply left behind. */
		if (enable)
			WRITE_ONCE(*q->avail_event, q->last_avail);
	} else {
		WRITE_ONCE(q->used->flags,
			   enable ? 0 : VRING_USED_F_NO_NOTIFY);
	}
	if (!enable)
		return false;
	split_ring_mb(); /* publish before re-checking for new buffers */
	return READ_ONCE(q->avail->idx) != q->last_avail;
}

void split_ring_unpop(struct split_ring *q, uint16_t n)
{
	q->last_avail = (uint16_t)(q->last_avail - n);
}

bool split_ring_notify_on_more(struct split_ring *q)
{
	uint16_t posted = READ_ONCE(q->avail->idx);
	if (q->event_idx)
		WRITE_ONCE(*q->avail_event, posted);
	else
		WRITE_ONCE(q->used->flags, 0);
	split_ring_mb(); /* publish before re-checking for new buffers */
	return READ_ONCE(q->avail->idx) != posted;
}

uint16_t split_ring_avail_idx(const struct split_ring *q)
{
	return READ_ONCE(q->avail->idx);
}
