/* Tests for the split-ring walker against synthetic rings, well-formed and
 * hostile: loops, bad addresses and lengths, bad indirect tables. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/guest_mem.h"
#include "virtio/split_ring.h"

#define RAM_SIZE 0x100000
#define QSIZE 8
#define DESC 0x1000
#define AVAIL 0x2000
#define USED 0x3000
#define INDIRECT 0x4000
#define BUF 0x10000

struct ring {
	uint8_t *ram;
	struct guest_mem mem;
	struct split_ring q;
	struct desc_chain chain;
};

static struct vring_desc *desc(struct ring *r, uint64_t table, unsigned int i)
{
	return (struct vring_desc *)(r->ram + table) + i;
}

static void set_desc(struct ring *r, uint64_t table, unsigned int i,
		     uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	*desc(r, table, i) = (struct vring_desc){
		.addr = addr, .len = len, .flags = flags, .next = next};
}

/* Makes head available as the next entry. */
static void offer(struct ring *r, uint16_t head)
{
	struct vring_avail *avail = (struct vring_avail *)(r->ram + AVAIL);
	avail->ring[avail->idx % QSIZE] = head;
	avail->idx++;
}

static int setup(void **state)
{
	struct ring *r = calloc(1, sizeof(*r));
	r->ram = calloc(1, RAM_SIZE);
	r->mem = (struct guest_mem){0};
	guest_mem_add(&r->mem, 0, RAM_SIZE, r->ram);
	assert_int_equal(split_ring_init(&r->q, &r->mem, QSIZE, DESC, AVAIL, USED,
				    true, true),
			 0);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct ring *r = *state;
	free(r->ram);
	free(r);
	return 0;
}

static void test_init_checks(void **state)
{
	struct ring *r = *state;
	struct split_ring q;
	assert_int_equal(split_ring_init(&q, &r->mem, 0, DESC, AVAIL, USED, 0, 0), -EINVAL);
	assert_int_equal(split_ring_init(&q, &r->mem, 6, DESC, AVAIL, USED, 0, 0), -EINVAL);
	assert_int_equal(split_ring_init(&q, &r->mem, QSIZE, DESC + 8, AVAIL, USED, 0, 0), -EINVAL);
	assert_int_equal(split_ring_init(&q, &r->mem, QSIZE, DESC, AVAIL + 1, USED, 0, 0), -EINVAL);
	assert_int_equal(split_ring_init(&q, &r->mem, QSIZE, DESC, AVAIL, USED + 2, 0, 0), -EINVAL);
	/* Rings that run off the end of RAM. */
	assert_int_equal(split_ring_init(&q, &r->mem, QSIZE, RAM_SIZE - 16, AVAIL, USED, 0, 0), -EFAULT);
	assert_int_equal(split_ring_init(&q, &r->mem, QSIZE, DESC, AVAIL, RAM_SIZE - 4, 0, 0), -EFAULT);
}

static void test_simple_chain_and_push(void **state)
{
	struct ring *r = *state;
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 0); /* empty */
	set_desc(r, DESC, 3, BUF, 40, VRING_DESC_F_NEXT, 5);
	set_desc(r, DESC, 5, BUF + 0x100, 16, VRING_DESC_F_NEXT, 6);
	set_desc(r, DESC, 6, BUF + 0x1000, 4096, VRING_DESC_F_WRITE, 0);
	offer(r, 3);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
	assert_int_equal(r->chain.head, 3);
	assert_int_equal(r->chain.nr_readable, 2);
	assert_int_equal(r->chain.nr_writable, 1);
	assert_ptr_equal(r->chain.readable[0].iov_base, r->ram + BUF);
	assert_int_equal(r->chain.readable[1].iov_len, 16);
	assert_ptr_equal(r->chain.writable[0].iov_base, r->ram + BUF + 0x1000);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 0);

	split_ring_push(&r->q, 3, 123);
	struct vring_used *used = (struct vring_used *)(r->ram + USED);
	assert_int_equal(used->idx, 1);
	assert_int_equal(used->ring[0].id, 3);
	assert_int_equal(used->ring[0].len, 123);
}

static void test_zero_length_buffers_skipped(void **state)
{
	struct ring *r = *state;
	set_desc(r, DESC, 0, BUF, 0, VRING_DESC_F_NEXT, 1);
	set_desc(r, DESC, 1, BUF, 8, 0, 0);
	offer(r, 0);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
	assert_int_equal(r->chain.nr_readable, 1);
	assert_int_equal(r->chain.readable[0].iov_len, 8);
}

static void test_loop_detected(void **state)
{
	struct ring *r = *state;
	set_desc(r, DESC, 0, BUF, 8, VRING_DESC_F_NEXT, 1);
	set_desc(r, DESC, 1, BUF, 8, VRING_DESC_F_NEXT, 0);
	offer(r, 0);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -ELOOP);
}

static void test_self_loop_detected(void **state)
{
	struct ring *r = *state;
	set_desc(r, DESC, 2, BUF, 8, VRING_DESC_F_NEXT, 2);
	offer(r, 2);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -ELOOP);
}

static void test_bad_addresses_and_lengths(void **state)
{
	struct ring *r = *state;
	/* Past RAM, straddling its end, wrapping the address space, huge. */
	set_desc(r, DESC, 0, RAM_SIZE, 8, 0, 0);
	set_desc(r, DESC, 1, RAM_SIZE - 4, 8, 0, 0);
	set_desc(r, DESC, 2, UINT64_MAX - 3, 8, 0, 0);
	set_desc(r, DESC, 3, BUF, UINT32_MAX, 0, 0);
	/* Out of reach, not malformed: the chain comes back to be failed. */
	for (uint16_t head = 0; head < 4; head++) {
		offer(r, head);
		assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
		assert_true(r->chain.unreachable);
		assert_int_equal(r->chain.nr_readable, 0);
	}
}

/* A request whose data buffer is out of reach keeps its headers, and the
 * next request is whole again. */
static void test_unreachable_buffer_leaves_the_rest(void **state)
{
	struct ring *r = *state;
	set_desc(r, DESC, 0, BUF, 40, VRING_DESC_F_NEXT, 1);
	set_desc(r, DESC, 1, BUF + 64, 16, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
	set_desc(r, DESC, 2, RAM_SIZE + 4096, 4096, VRING_DESC_F_WRITE, 0);
	offer(r, 0);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
	assert_true(r->chain.unreachable);
	assert_int_equal(r->chain.nr_readable, 1);
	assert_int_equal(r->chain.nr_writable, 1);
	assert_ptr_equal(r->chain.writable[0].iov_base, r->ram + BUF + 64);
	set_desc(r, DESC, 3, BUF, 8, 0, 0);
	offer(r, 3);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
	assert_false(r->chain.unreachable);
	assert_int_equal(r->chain.head, 3);
}

static void test_bad_indices(void **state)
{
	struct ring *r = *state;
	offer(r, QSIZE); /* head out of range */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	set_desc(r, DESC, 0, BUF, 8, VRING_DESC_F_NEXT, QSIZE + 3);
	offer(r, 0); /* next out of range */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	struct vring_avail *avail = (struct vring_avail *)(r->ram + AVAIL);
	avail->idx += QSIZE + 1; /* more entries than the ring has */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);
}

static void test_readable_after_writable_refused(void **state)
{
	struct ring *r = *state;
	set_desc(r, DESC, 0, BUF, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(r, DESC, 1, BUF, 8, 0, 0);
	offer(r, 0);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);
}

static void test_indirect_table(void **state)
{
	struct ring *r = *state;
	set_desc(r, INDIRECT, 0, BUF, 32, VRING_DESC_F_NEXT, 1);
	set_desc(r, INDIRECT, 1, BUF + 64, 64, VRING_DESC_F_WRITE, 0);
	set_desc(r, DESC, 4, INDIRECT, 2 * sizeof(struct vring_desc),
		 VRING_DESC_F_INDIRECT, 0);
	offer(r, 4);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
	assert_int_equal(r->chain.head, 4);
	assert_int_equal(r->chain.nr_readable, 1);
	assert_int_equal(r->chain.nr_writable, 1);
	assert_ptr_equal(r->chain.writable[0].iov_base, r->ram + BUF + 64);
}

static void test_bad_indirect_tables(void **state)
{
	struct ring *r = *state;
	const uint32_t two = 2 * sizeof(struct vring_desc);

	set_desc(r, DESC, 0, INDIRECT, two + 1, VRING_DESC_F_INDIRECT, 0);
	offer(r, 0); /* not a whole number of descriptors */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	set_desc(r, DESC, 0, INDIRECT, 0, VRING_DESC_F_INDIRECT, 0);
	offer(r, 0); /* empty table */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	set_desc(r, DESC, 0, RAM_SIZE - 16, two, VRING_DESC_F_INDIRECT, 0);
	offer(r, 0); /* table off the end of RAM */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EFAULT);

	set_desc(r, INDIRECT, 0, INDIRECT, two, VRING_DESC_F_INDIRECT, 0);
	set_desc(r, DESC, 0, INDIRECT, two, VRING_DESC_F_INDIRECT, 0);
	offer(r, 0); /* nested indirect */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	set_desc(r, INDIRECT, 0, BUF, 8, VRING_DESC_F_NEXT, 1);
	set_desc(r, INDIRECT, 1, BUF, 8, VRING_DESC_F_NEXT, 0);
	set_desc(r, DESC, 0, INDIRECT, two, VRING_DESC_F_INDIRECT, 0);
	offer(r, 0); /* loop inside the table */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -ELOOP);

	set_desc(r, INDIRECT, 0, BUF, 8, VRING_DESC_F_NEXT, 2);
	offer(r, 0); /* next past the table */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	set_desc(r, INDIRECT, 0, BUF, 8, 0, 0);
	set_desc(r, DESC, 0, INDIRECT, two, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	offer(r, 0); /* an indirect descriptor must be the whole chain */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);

	set_desc(r, DESC, 1, BUF, 8, VRING_DESC_F_NEXT, 0);
	set_desc(r, DESC, 0, INDIRECT, two, VRING_DESC_F_INDIRECT, 0);
	offer(r, 1); /* nor appear after direct ones */
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);
}

static void test_indirect_needs_the_feature(void **state)
{
	struct ring *r = *state;
	assert_int_equal(split_ring_init(&r->q, &r->mem, QSIZE, DESC, AVAIL, USED,
				    false, false),
			 0);
	set_desc(r, INDIRECT, 0, BUF, 8, 0, 0);
	set_desc(r, DESC, 0, INDIRECT, sizeof(struct vring_desc),
		 VRING_DESC_F_INDIRECT, 0);
	offer(r, 0);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -EINVAL);
}

static void test_too_many_segments(void **state)
{
	struct ring *r = *state;
	const unsigned int n = DESC_CHAIN_MAX_SEGS + 1;
	for (unsigned int i = 0; i < n; i++)
		set_desc(r, INDIRECT, i, BUF, 8,
			 i + 1 < n ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	set_desc(r, DESC, 0, INDIRECT, n * sizeof(struct vring_desc),
		 VRING_DESC_F_INDIRECT, 0);
	offer(r, 0);
	assert_int_equal(split_ring_pop(&r->q, &r->chain), -E2BIG);
}

static void test_event_idx(void **state)
{
	struct ring *r = *state;
	struct vring_avail *avail = (struct vring_avail *)(r->ram + AVAIL);
	uint16_t *used_event = &avail->ring[QSIZE];
	uint16_t *avail_event = (uint16_t *)(r->ram + USED + 4 +
					     QSIZE * sizeof(struct vring_used_elem));

	set_desc(r, DESC, 0, BUF, 8, 0, 0);
	for (int i = 0; i < 3; i++) {
		offer(r, 0);
		assert_int_equal(split_ring_pop(&r->q, &r->chain), 1);
	}
	split_ring_push(&r->q, 0, 0);
	assert_true(split_ring_should_interrupt(&r->q)); /* the first one always */
	*used_event = 2; /* the guest wants to hear once used->idx passes 2 */
	split_ring_push(&r->q, 0, 0);
	assert_false(split_ring_should_interrupt(&r->q));
	split_ring_push(&r->q, 0, 0);
	assert_true(split_ring_should_interrupt(&r->q));

	/* Re-enabling notifications publishes where we are, and reports
	 * buffers that arrived meanwhile. */
	assert_false(split_ring_set_notification(&r->q, true));
	assert_int_equal(*avail_event, 3);
	offer(r, 0);
	assert_true(split_ring_set_notification(&r->q, true));
}

static void test_no_event_idx_flags(void **state)
{
	struct ring *r = *state;
	assert_int_equal(split_ring_init(&r->q, &r->mem, QSIZE, DESC, AVAIL, USED,
				    false, false),
			 0);
	struct vring_avail *avail = (struct vring_avail *)(r->ram + AVAIL);
	struct vring_used *used = (struct vring_used *)(r->ram + USED);
	split_ring_push(&r->q, 0, 0);
	assert_true(split_ring_should_interrupt(&r->q));
	avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	assert_false(split_ring_should_interrupt(&r->q));
	split_ring_set_notification(&r->q, false);
	assert_int_equal(used->flags, VRING_USED_F_NO_NOTIFY);
	split_ring_set_notification(&r->q, true);
	assert_int_equal(used->flags, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_init_checks),
		T(test_simple_chain_and_push),
		T(test_zero_length_buffers_skipped),
		T(test_loop_detected),
		T(test_self_loop_detected),
		T(test_bad_addresses_and_lengths),
		T(test_unreachable_buffer_leaves_the_rest),
		T(test_bad_indices),
		T(test_readable_after_writable_refused),
		T(test_indirect_table),
		T(test_bad_indirect_tables),
		T(test_indirect_needs_the_feature),
		T(test_too_many_segments),
		T(test_event_idx),
		T(test_no_event_idx_flags),
	};
	return cmocka_run_group_tests_name("virtq", tests, NULL, NULL);
}
