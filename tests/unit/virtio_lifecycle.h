/* The virtio life cycle's rules, checked alike on every transport: each
 * case drives a transport through its own registers (struct
 * lifecycle_rig) and looks at the shared state behind them, so both
 * transports must take the same sequences and refuse the same bad ones.
 * Every case ends with a reset that must leave the device as new.
 *
 * A test file includes this after cmocka.h, defines the lc_*() writes
 * and lifecycle_rig() declared below, and lists LIFECYCLE_TESTS(its
 * setup/teardown wrapper) among its tests. Its
 * device offers VERSION_1 and two queues or more, and its guest has RAM
 * from 0 to 0x40000. */
#ifndef FSVM_TEST_VIRTIO_LIFECYCLE_H
#define FSVM_TEST_VIRTIO_LIFECYCLE_H

#include <errno.h>
#include <linux/virtio_config.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "virtio/virtio_transport.h"

/* The driver's writes, each test file's own in its transport's registers
 * (guest is its rig). */
static void lc_set_status(void *guest, uint8_t status);
static uint8_t lc_status(void *guest);
static void lc_set_features(void *guest, uint64_t features); /* both words */
static void lc_select_queue(void *guest, uint32_t q);
static void lc_set_queue_size(void *guest, uint32_t size);
static void lc_set_ring(void *guest, enum ring_part part, uint64_t gpa);
static void lc_enable_queue(void *guest);
static void lc_kick(void *guest, uint32_t q); /* q < 1024 */

/* What the writes land in, and what the device was told. */
struct lifecycle_rig {
	void *guest;
	struct virtio_transport *t;
	const unsigned int *activations, *resets;
	int *start_error; /* what the device's next starts return */
};

static struct lifecycle_rig lifecycle_rig(void *state);

#define LC_FEATURES_OK (VIRTIO_CONFIG_S_ACKNOWLEDGE | \
			VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK)
#define LC_DRIVER_OK (LC_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK)
#define LC_NOT_RAM (1ULL << 40)

static void lc_negotiate(const struct lifecycle_rig *r, uint64_t features)
{
	lc_set_status(r->guest, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	lc_set_status(r->guest, VIRTIO_CONFIG_S_ACKNOWLEDGE |
					VIRTIO_CONFIG_S_DRIVER);
	lc_set_features(r->guest, features);
	lc_set_status(r->guest, LC_FEATURES_OK);
}

static void lc_set_rings(const struct lifecycle_rig *r, uint64_t at)
{
	lc_set_ring(r->guest, RING_DESC, at);
	lc_set_ring(r->guest, RING_AVAIL, at + 0x4000);
	lc_set_ring(r->guest, RING_USED, at + 0x8000);
}

/* Queue q: size entries, rings in RAM, enabled. */
static void lc_setup_queue(const struct lifecycle_rig *r, uint32_t q,
			   uint32_t size)
{
	lc_select_queue(r->guest, q);
	lc_set_queue_size(r->guest, size);
	lc_set_rings(r, 0x10000 * (q + 1ULL));
	lc_enable_queue(r->guest);
}

static void lc_start(const struct lifecycle_rig *r)
{
	lc_negotiate(r, r->t->dev->features);
	lc_setup_queue(r, 0, 64);
	lc_setup_queue(r, 1, 64);
	lc_set_status(r->guest, LC_DRIVER_OK);
}

static uint64_t lc_kicks(const struct lifecycle_rig *r, unsigned int q)
{
	uint64_t n = 0;
	return read(r->t->queues[q].kick_fd, &n, sizeof(n)) == sizeof(n) ? n
									 : 0;
}

/* After a reset: nothing of the driver's is left, the device stopped. */
static void lc_expect_new(const struct lifecycle_rig *r)
{
	const struct virtio_transport *t = r->t;
	assert_int_equal(lc_status(r->guest), 0);
	assert_false(t->active);
	assert_int_equal(t->driver_features, 0);
	assert_int_equal(t->device_feature_select, 0);
	assert_int_equal(t->driver_feature_select, 0);
	assert_int_equal(t->queue_select, 0);
	for (unsigned int q = 0; q < t->dev->num_queues; q++) {
		const struct ring_setup *s = &t->rings[q];
		assert_int_equal(s->size, t->dev->queue_max_size);
		assert_false(s->enabled);
		assert_true(!s->desc && !s->avail && !s->used);
		assert_int_equal(t->queues[q].call_fd, -1);
		assert_int_equal(lc_kicks(r, q), 0);
	}
}

static void lc_reset(const struct lifecycle_rig *r)
{
	lc_set_status(r->guest, 0);
	lc_expect_new(r);
}

static void test_lifecycle_start_and_reset(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	lc_expect_new(r);
	lc_start(r);
	assert_int_equal(*r->activations, 1);
	assert_true(r->t->active);
	assert_int_equal(lc_status(r->guest), LC_DRIVER_OK);
	assert_int_equal(r->t->queues[1].ring.size, 64);
	/* DRIVER_OK again starts nothing more. */
	lc_set_status(r->guest, LC_DRIVER_OK);
	assert_int_equal(*r->activations, 1);
	lc_reset(r);
	assert_int_equal(*r->resets, 1);
	/* A device that never started is not told of a reset. */
	lc_reset(r);
	assert_int_equal(*r->resets, 1);
	lc_start(r);
	assert_int_equal(*r->activations, 2);
	lc_reset(r);
	assert_int_equal(*r->resets, 2);
}

static void test_lifecycle_refuses_features(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	uint64_t offered = r->t->dev->features;
	const uint64_t bad[] = {
		offered & ~(1ULL << VIRTIO_F_VERSION_1), /* a legacy driver */
		offered | (1ULL << VIRTIO_F_RING_PACKED), /* not offered */
		1ULL << 63,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lc_negotiate(r, bad[i]);
		assert_int_equal(lc_status(r->guest),
				 VIRTIO_CONFIG_S_ACKNOWLEDGE |
					 VIRTIO_CONFIG_S_DRIVER);
		/* DRIVER_OK without FEATURES_OK starts nothing. */
		lc_setup_queue(r, 0, 64);
		lc_set_status(r->guest, LC_DRIVER_OK);
		assert_int_equal(*r->activations, 0);
		lc_reset(r);
	}
	/* Features are the driver's until FEATURES_OK, then frozen. */
	lc_negotiate(r, offered);
	assert_int_equal(r->t->driver_features, offered);
	lc_set_features(r->guest, 0);
	assert_int_equal(r->t->driver_features, offered);
	lc_reset(r);
}

static void test_lifecycle_status_only_accumulates(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	lc_negotiate(r, r->t->dev->features);
	/* The driver clears no bit and sets no NEEDS_RESET. */
	lc_set_status(r->guest, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	lc_set_status(r->guest, LC_FEATURES_OK | VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_int_equal(lc_status(r->guest), LC_FEATURES_OK);
	lc_start(r);
	lc_set_status(r->guest, VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(lc_status(r->guest), LC_DRIVER_OK);
	assert_int_equal(*r->activations, 1);
	lc_reset(r);
}

static void test_lifecycle_refuses_queue_setup(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	struct virtio_transport *t = r->t;
	uint32_t max = t->dev->queue_max_size;
	lc_negotiate(r, t->dev->features);
	struct ring_setup before[VIRTIO_TRANSPORT_MAX_QUEUES];
	memcpy(before, t->rings, sizeof(before));
	/* No such queue: writes land nowhere. */
	const uint32_t selects[] = {t->dev->num_queues,
				    VIRTIO_TRANSPORT_MAX_QUEUES, 0xffff};
	for (size_t i = 0; i < sizeof(selects) / sizeof(selects[0]); i++)
		lc_setup_queue(r, selects[i], 64);
	/* Sizes a split ring cannot have, or past the device's maximum. */
	lc_select_queue(r->guest, 0);
	const uint32_t sizes[] = {0, 3, 100, max + 1, max * 2, 0xffff, 0x10000};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		lc_set_queue_size(r->guest, sizes[i]);
	assert_memory_equal(t->rings, before, sizeof(before));
	/* An enabled queue's size and rings stay. */
	lc_setup_queue(r, 0, 32);
	lc_set_queue_size(r->guest, 16);
	lc_set_rings(r, 0x30000);
	assert_int_equal(t->rings[0].size, 32);
	assert_int_equal(t->rings[0].desc, 0x10000);
	/* A live device's set-up stays: queue 1, left disabled, too. */
	lc_set_status(r->guest, LC_DRIVER_OK);
	lc_setup_queue(r, 1, 16);
	assert_false(t->rings[1].enabled);
	assert_int_equal(t->rings[1].size, max);
	assert_int_equal(t->queues[1].ring.size, 0); /* no rings */
	assert_int_equal(t->queues[1].call_fd, -1);
	lc_reset(r);
}

static void test_lifecycle_bad_rings_need_reset(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	lc_negotiate(r, r->t->dev->features);
	lc_select_queue(r->guest, 0);
	lc_set_rings(r, LC_NOT_RAM);
	lc_enable_queue(r->guest);
	lc_set_status(r->guest, LC_DRIVER_OK);
	assert_int_equal(*r->activations, 0);
	assert_false(r->t->active);
	assert_int_equal(lc_status(r->guest),
			 LC_DRIVER_OK | VIRTIO_CONFIG_S_NEEDS_RESET);
	/* Set-up stays closed: queues are set up again after a reset. */
	lc_setup_queue(r, 1, 64);
	assert_false(r->t->rings[1].enabled);
	/* Only a reset clears it; then the device starts again. */
	lc_set_status(r->guest, LC_DRIVER_OK);
	assert_true(lc_status(r->guest) & VIRTIO_CONFIG_S_NEEDS_RESET);
	lc_reset(r);
	assert_int_equal(*r->resets, 0);
	lc_start(r);
	assert_int_equal(*r->activations, 1);
	lc_reset(r);
}

static void test_lifecycle_device_refuses_start(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	*r->start_error = -EAGAIN;
	lc_start(r);
	assert_int_equal(*r->activations, 1);
	assert_false(r->t->active);
	assert_true(lc_status(r->guest) & VIRTIO_CONFIG_S_NEEDS_RESET);
	lc_reset(r);
	assert_int_equal(*r->resets, 0); /* it never ran */
	*r->start_error = 0;
	lc_start(r);
	assert_true(r->t->active);
	lc_reset(r);
}

static void test_lifecycle_no_start_after_failed(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	lc_negotiate(r, r->t->dev->features);
	lc_set_status(r->guest, LC_FEATURES_OK | VIRTIO_CONFIG_S_FAILED);
	lc_setup_queue(r, 0, 64);
	lc_set_status(r->guest, LC_DRIVER_OK | VIRTIO_CONFIG_S_FAILED);
	assert_int_equal(*r->activations, 0);
	assert_false(r->t->active);
	lc_reset(r);
	lc_start(r);
	assert_true(r->t->active);
	lc_reset(r);
}

static void test_lifecycle_kicks(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	uint32_t nr = r->t->dev->num_queues;
	lc_negotiate(r, r->t->dev->features);
	lc_setup_queue(r, 1, 64);
	/* Kept for the device until it starts: an enabled queue's only. */
	const uint32_t kicks[] = {1, 0, nr, VIRTIO_TRANSPORT_MAX_QUEUES, 1023};
	for (size_t i = 0; i < sizeof(kicks) / sizeof(kicks[0]); i++)
		lc_kick(r->guest, kicks[i]);
	assert_int_equal(lc_kicks(r, 0), 0);
	assert_int_equal(lc_kicks(r, 1), 1);
	/* A reset forgets those left. */
	lc_kick(r->guest, 1);
	lc_reset(r);
}

/* What save wrote (buf, len) restored into the rig's transport, as new. */
static int lc_restore(const struct lifecycle_rig *r, const unsigned char *buf,
		      size_t len, char *err, size_t errlen)
{
	struct state_in in = state_in(buf, len);
	int ret = virtio_transport_restore(r->t, &in, err, errlen);
	return ret ? ret : state_in_whole(&in) ? 0 : -EMSGSIZE;
}

/* A running device saved, reset and restored starts again where its rings
 * stood; what is cut short or refused by the device's rules leaves it new. */
static void test_lifecycle_snapshot(void **state)
{
	const struct lifecycle_rig rig = lifecycle_rig(*state), *r = &rig;
	lc_start(r);
	struct split_ring *ring = &r->t->queues[1].ring;
	ring->last_avail = ring->used_idx = 7; /* seven requests answered */
	lc_select_queue(r->guest, 1);
	struct state_out out = {0};
	virtio_transport_save(r->t, &out);
	unsigned char *buf;
	size_t len;
	assert_int_equal(state_out_finish(&out, &buf, &len), 0);
	lc_reset(r);
	unsigned int activations = *r->activations;
	char err[256];
	for (size_t n = 0; n < len; n++) {
		assert_int_equal(lc_restore(r, buf, n, err, sizeof(err)), -EBADMSG);
		lc_expect_new(r);
	}
	assert_int_equal(*r->activations, activations);

	assert_int_equal(lc_restore(r, buf, len, err, sizeof(err)), 0);
	assert_int_equal(*r->activations, activations + 1);
	assert_true(r->t->active);
	assert_int_equal(lc_status(r->guest), LC_DRIVER_OK);
	assert_int_equal(r->t->queue_select, 1);
	assert_int_equal(r->t->driver_features, r->t->dev->features);
	assert_int_equal(ring->size, 64);
	assert_int_equal(ring->last_avail, 7);
	assert_int_equal(ring->used_idx, 7);
	assert_int_equal(r->t->rings[1].used, 0x20000 + 0x8000);
	lc_reset(r);

	/* Features the device never offered, rings outside RAM: refused
	 * as the driver's own writes are, and nothing starts. */
	const size_t features_at = 2 + 1 + 1 + 4 + 4 + 4;
	buf[features_at + 7] ^= 0x40;
	assert_int_equal(lc_restore(r, buf, len, err, sizeof(err)), -EBADMSG);
	lc_expect_new(r);
	buf[features_at + 7] ^= 0x40;
	const size_t queue1_desc = features_at + 8 + (2 + 1 + 3 * 8 + 3 * 2 + 1) + 2 + 1;
	buf[queue1_desc + 5] = 1; /* past RAM: map_rings refuses at the start */
	assert_int_equal(lc_restore(r, buf, len, err, sizeof(err)), -EBADMSG);
	lc_expect_new(r);
	assert_int_equal(*r->activations, activations + 1);
	free(buf);
}

#define LIFECYCLE_TESTS(wrap)                                  \
	wrap(test_lifecycle_start_and_reset),                  \
	wrap(test_lifecycle_refuses_features),                 \
	wrap(test_lifecycle_status_only_accumulates),          \
	wrap(test_lifecycle_refuses_queue_setup),              \
	wrap(test_lifecycle_bad_rings_need_reset),             \
	wrap(test_lifecycle_device_refuses_start),             \
	wrap(test_lifecycle_no_start_after_failed),            \
	wrap(test_lifecycle_kicks),                            \
	wrap(test_lifecycle_snapshot)

#endif
