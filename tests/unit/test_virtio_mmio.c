/* Register-level tests for the virtio-mmio transport against a fake device,
 * without KVM: identity, feature negotiation, queue set-up, reset, the
 * interrupt cause, shared memory registers, config space, and hostile
 * accesses that must change nothing; and the life cycle's cases that
 * virtio-pci must pass alike (virtio_lifecycle.h). */
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/virtio_lifecycle.h"
#include "virtio/virtio_mmio.h"

#define RAM_SIZE 0x100000
#define BASE 0xfed00000ULL
#define IRQ 5
#define SHM_GPA 0x400000000ULL
#define SHM_ID 1
#define SHM_SIZE 0x180000000ULL /* above 4 GiB: both halves matter */
#define MAX_SIZE 256
#define NR_QUEUES 2
#define FEATURES ((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_RING_F_EVENT_IDX))
#define OK_STATUS (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | \
		   VIRTIO_CONFIG_S_FEATURES_OK)

struct fake {
	struct vm vm;
	uint8_t *ram;
	uint8_t config[8];
	uint8_t shm[1];
	struct virtio_dev dev;
	unsigned int activations, resets;
	uint64_t activated_features;
	unsigned int activated_queues;
	int start_error; /* what fake_activate() returns */
	unsigned int notified[NR_QUEUES]; /* fake_notify() calls, by queue */
	unsigned int notified_locked; /* ...made holding the transport's lock */
	struct virtio_mmio m;
};

static int fake_activate(void *opaque, struct virtio_queue *queues,
			 unsigned int nr, uint64_t features)
{
	struct fake *f = opaque;
	(void)queues;
	f->activations++;
	f->activated_queues = nr;
	f->activated_features = features;
	return f->start_error;
}

static void fake_reset(void *opaque)
{
	((struct fake *)opaque)->resets++;
}

static void fake_notify(void *opaque, unsigned int q)
{
	struct fake *f = opaque;
	assert_true(q < NR_QUEUES);
	f->notified[q]++;
	if (pthread_mutex_trylock(&f->m.lock) == 0)
		pthread_mutex_unlock(&f->m.lock);
	else
		f->notified_locked++;
}

static int setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	f->ram = calloc(1, RAM_SIZE);
	f->vm.mem = (struct guest_mem){0};
	guest_mem_add(&f->vm.mem, 0, RAM_SIZE, f->ram);
	memcpy(f->config, "tag!\x01\x02\x03\x04", sizeof(f->config));
	f->dev = (struct virtio_dev){
		.device_id = 26, .features = FEATURES, .num_queues = NR_QUEUES,
		.queue_max_size = MAX_SIZE, .config = f->config,
		.config_len = sizeof(f->config), .shm_id = SHM_ID,
		.shm_size = SHM_SIZE, .shm_hva = f->shm,
		.activate = fake_activate, .reset = fake_reset, .opaque = f};
	assert_int_equal(virtio_mmio_init(&f->m, &f->vm, &f->dev, BASE, IRQ,
					  SHM_GPA),
			 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;
	close(f->m.irq_fd);
	for (unsigned int q = 0; q < NR_QUEUES; q++)
		close(f->m.t.queues[q].kick_fd);
	free(f->ram);
	free(f);
	return 0;
}

static uint32_t rd(struct fake *f, uint64_t off)
{
	uint32_t v;
	virtio_mmio_access(&f->m, off, false, (uint8_t *)&v, 4);
	return v;
}

static void wr(struct fake *f, uint64_t off, uint32_t v)
{
	virtio_mmio_access(&f->m, off, true, (uint8_t *)&v, 4);
}

static void wr64(struct fake *f, uint64_t lo_off, uint64_t v)
{
	wr(f, lo_off, (uint32_t)v);
	wr(f, lo_off + 4, (uint32_t)(v >> 32));
}

static void set_features(struct fake *f, uint64_t features)
{
	for (uint32_t sel = 0; sel < 2; sel++) {
		wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, sel);
		wr(f, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(features >> (32 * sel)));
	}
}

/* Negotiates features (both words) and sets FEATURES_OK. */
static void negotiate(struct fake *f, uint64_t features)
{
	wr(f, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(f, VIRTIO_MMIO_STATUS,
	   VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	set_features(f, features);
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS);
}

/* Queue q: size entries with its rings in RAM, then ready. */
static void setup_queue(struct fake *f, uint32_t q, uint32_t size)
{
	uint64_t at = 0x10000 * (q + 1);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, q);
	wr(f, VIRTIO_MMIO_QUEUE_NUM, size);
	wr64(f, VIRTIO_MMIO_QUEUE_DESC_LOW, at);
	wr64(f, VIRTIO_MMIO_QUEUE_AVAIL_LOW, at + 0x4000);
	wr64(f, VIRTIO_MMIO_QUEUE_USED_LOW, at + 0x8000);
	wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
}

static void start(struct fake *f)
{
	negotiate(f, FEATURES);
	for (uint32_t q = 0; q < NR_QUEUES; q++)
		setup_queue(f, q, 64);
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
}

static void test_identity(void **state)
{
	struct fake *f = *state;
	assert_int_equal(rd(f, VIRTIO_MMIO_MAGIC_VALUE), 0x74726976);
	assert_memory_equal(&(uint32_t){rd(f, VIRTIO_MMIO_MAGIC_VALUE)}, "virt", 4);
	assert_int_equal(rd(f, VIRTIO_MMIO_VERSION), 2);
	assert_int_equal(rd(f, VIRTIO_MMIO_DEVICE_ID), 26);
	assert_int_not_equal(rd(f, VIRTIO_MMIO_VENDOR_ID), 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG_GENERATION), 0);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, 1);
	assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_NUM_MAX), MAX_SIZE);
	assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_READY), 0);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, NR_QUEUES);
	assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_NUM_MAX), 0); /* no queue */
}

static void test_device_features_both_words(void **state)
{
	struct fake *f = *state;
	wr(f, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_DEVICE_FEATURES), (uint32_t)FEATURES);
	wr(f, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	assert_int_equal(rd(f, VIRTIO_MMIO_DEVICE_FEATURES), FEATURES >> 32);
	assert_true(rd(f, VIRTIO_MMIO_DEVICE_FEATURES) & 1); /* VERSION_1 */
	wr(f, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 2);
	assert_int_equal(rd(f, VIRTIO_MMIO_DEVICE_FEATURES), 0);
}

static void test_features_accepted(void **state)
{
	struct fake *f = *state;
	negotiate(f, FEATURES);
	assert_int_equal(rd(f, VIRTIO_MMIO_STATUS), OK_STATUS);
	assert_int_equal(f->m.t.driver_features, FEATURES);
	/* After FEATURES_OK the driver's features are frozen. */
	wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 0);
	assert_int_equal(f->m.t.driver_features, FEATURES);
}

static void test_features_refused(void **state)
{
	struct fake *f = *state;
	/* A legacy driver (no VERSION_1). */
	negotiate(f, 1ULL << VIRTIO_RING_F_EVENT_IDX);
	assert_false(rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	wr(f, VIRTIO_MMIO_STATUS, 0);
	/* A feature the device did not offer. */
	negotiate(f, FEATURES | (1ULL << VIRTIO_RING_F_INDIRECT_DESC));
	assert_false(rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	/* DRIVER_OK without FEATURES_OK starts nothing. */
	setup_queue(f, 0, 64);
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(f->activations, 0);
}

static void test_queue_setup_and_start(void **state)
{
	struct fake *f = *state;
	start(f);
	assert_int_equal(f->activations, 1);
	assert_int_equal(f->activated_queues, NR_QUEUES);
	assert_int_equal(f->activated_features, FEATURES);
	assert_int_equal(rd(f, VIRTIO_MMIO_STATUS),
			 OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, 1);
	assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_READY), 1);
	const struct split_ring *vq = &f->m.t.queues[1].ring;
	assert_int_equal(vq->size, 64);
	assert_true(vq->event_idx);
	assert_false(vq->indirect);
	assert_ptr_equal(vq->desc, f->ram + 0x20000);
	assert_ptr_equal(vq->avail, f->ram + 0x24000);
	assert_ptr_equal(vq->used, f->ram + 0x28000);
	assert_int_equal(f->m.t.queues[1].call_fd, f->m.irq_fd);
	/* DRIVER_OK again (bits only accumulate) starts nothing more. */
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(f->activations, 1);
}

static void test_queue_registers_frozen_when_live(void **state)
{
	struct fake *f = *state;
	negotiate(f, FEATURES);
	setup_queue(f, 0, 64);
	/* Ready: the layout stays. */
	wr(f, VIRTIO_MMIO_QUEUE_NUM, 32);
	wr64(f, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x50000);
	assert_int_equal(f->m.t.rings[0].size, 64);
	assert_int_equal(f->m.t.rings[0].desc, 0x10000);
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	/* Live: not even disabling it. */
	wr(f, VIRTIO_MMIO_QUEUE_READY, 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_READY), 1);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, 1);
	wr(f, VIRTIO_MMIO_QUEUE_NUM, 32);
	wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
	assert_int_equal(f->m.t.rings[1].size, MAX_SIZE);
	assert_false(f->m.t.rings[1].enabled);
	/* The queue the driver left disabled has no rings. */
	assert_int_equal(f->m.t.queues[1].ring.size, 0);
	assert_int_equal(f->m.t.queues[1].call_fd, -1);
}

static void test_reset_clears_state(void **state)
{
	struct fake *f = *state;
	start(f);
	wr(f, VIRTIO_MMIO_SHM_SEL, 7);
	wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(f->resets, 1);
	assert_int_equal(rd(f, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(f->m.t.driver_features, 0);
	assert_int_equal(f->m.t.queue_select, 0);
	assert_int_equal(f->m.shm_select, 0);
	assert_false(f->m.t.active);
	for (uint32_t q = 0; q < NR_QUEUES; q++) {
		wr(f, VIRTIO_MMIO_QUEUE_SEL, q);
		assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_READY), 0);
		assert_int_equal(f->m.t.rings[q].size, MAX_SIZE);
		assert_int_equal(f->m.t.rings[q].desc, 0);
		assert_int_equal(f->m.t.rings[q].avail, 0);
		assert_int_equal(f->m.t.rings[q].used, 0);
	}
	/* A reset of a device never started tells it nothing. */
	wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(f->resets, 1);
	/* And it starts again. */
	start(f);
	assert_int_equal(f->activations, 2);
}

static void test_bad_rings_need_reset(void **state)
{
	struct fake *f = *state;
	negotiate(f, FEATURES);
	setup_queue(f, 0, 64);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, 1);
	wr64(f, VIRTIO_MMIO_QUEUE_DESC_LOW, RAM_SIZE + 0x1000); /* not RAM */
	wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(f->activations, 0);
	assert_true(rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET);
	/* The driver cannot clear it; a reset does. */
	wr(f, VIRTIO_MMIO_STATUS, OK_STATUS);
	assert_true(rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET);
	wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_STATUS), 0);
}

static void test_interrupt_status_and_ack(void **state)
{
	struct fake *f = *state;
	start(f);
	assert_int_equal(rd(f, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	/* The device's path: the cause is set, then the irqfd written. */
	virtio_queue_interrupt(&f->m.t.queues[0]);
	assert_int_equal(rd(f, VIRTIO_MMIO_INTERRUPT_STATUS),
			 VIRTIO_MMIO_INT_VRING);
	uint64_t n = 0;
	assert_int_equal(read(f->m.irq_fd, &n, sizeof(n)), sizeof(n));
	assert_int_equal(n, 1);
	wr(f, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_CONFIG); /* not set */
	assert_int_equal(rd(f, VIRTIO_MMIO_INTERRUPT_STATUS),
			 VIRTIO_MMIO_INT_VRING);
	wr(f, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_VRING);
	assert_int_equal(rd(f, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	virtio_queue_interrupt(&f->m.t.queues[1]);
	wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(rd(f, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
}

static void test_notify_before_ioeventfd(void **state)
{
	struct fake *f = *state;
	negotiate(f, FEATURES);
	setup_queue(f, 1, 64);
	uint64_t n = 0;
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
	assert_int_equal(read(f->m.t.queues[1].kick_fd, &n, sizeof(n)),
			 sizeof(n));
	assert_int_equal(n, 1);
	/* A disabled queue and one that does not exist: nothing. */
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, NR_QUEUES);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 0xffffffff);
	assert_true(read(f->m.t.queues[0].kick_fd, &n, sizeof(n)) < 0);
	/* A reset forgets pending kicks. */
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
	wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_true(read(f->m.t.queues[1].kick_fd, &n, sizeof(n)) < 0);
}

/* A device with its own notify (virtio-fs runs requests on the vCPU that
 * rang) gets each doorbell of its queues, before DRIVER_OK and after,
 * without the transport's lock, which a request must not hold up; no
 * kick eventfd moves. A doorbell past its queues reaches nothing. */
static void test_notify_to_the_device(void **state)
{
	struct fake *f = *state;
	f->dev.notify = fake_notify; /* as virtio-fs sets it, before plugging */
	negotiate(f, FEATURES);
	setup_queue(f, 1, 64);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
	assert_int_equal(f->notified[1], 1);
	wr(f, VIRTIO_MMIO_STATUS, 0);
	start(f);
	assert_int_equal(f->activations, 1);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 1);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, NR_QUEUES);
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 0xffffffff);
	assert_int_equal(f->notified[0], 1);
	assert_int_equal(f->notified[1], 2);
	assert_int_equal(f->notified_locked, 0);
	uint64_t n;
	for (unsigned int q = 0; q < NR_QUEUES; q++)
		assert_true(read(f->m.t.queues[q].kick_fd, &n, sizeof(n)) < 0);
}

static void test_shm_registers(void **state)
{
	struct fake *f = *state;
	wr(f, VIRTIO_MMIO_SHM_SEL, SHM_ID);
	assert_int_equal(rd(f, VIRTIO_MMIO_SHM_LEN_LOW), (uint32_t)SHM_SIZE);
	assert_int_equal(rd(f, VIRTIO_MMIO_SHM_LEN_HIGH), SHM_SIZE >> 32);
	assert_int_equal(rd(f, VIRTIO_MMIO_SHM_BASE_LOW), (uint32_t)SHM_GPA);
	assert_int_equal(rd(f, VIRTIO_MMIO_SHM_BASE_HIGH), SHM_GPA >> 32);
	const uint32_t other[] = {0, SHM_ID + 1, 0xff, 0xffffffff};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		wr(f, VIRTIO_MMIO_SHM_SEL, other[i]);
		assert_int_equal(rd(f, VIRTIO_MMIO_SHM_LEN_LOW), 0xffffffff);
		assert_int_equal(rd(f, VIRTIO_MMIO_SHM_LEN_HIGH), 0xffffffff);
	}
}

static void test_no_shm_region(void **state)
{
	struct fake *f = *state;
	f->dev.shm_size = 0;
	wr(f, VIRTIO_MMIO_SHM_SEL, SHM_ID);
	assert_int_equal(rd(f, VIRTIO_MMIO_SHM_LEN_LOW), 0xffffffff);
	assert_int_equal(rd(f, VIRTIO_MMIO_SHM_LEN_HIGH), 0xffffffff);
}

static void test_config_space(void **state)
{
	struct fake *f = *state;
	uint8_t b = 0;
	uint16_t w = 0;
	uint32_t l = 0;
	virtio_mmio_access(&f->m, VIRTIO_MMIO_CONFIG + 1, false, &b, 1);
	assert_int_equal(b, 'a');
	virtio_mmio_access(&f->m, VIRTIO_MMIO_CONFIG + 2, false, (uint8_t *)&w, 2);
	assert_memory_equal(&w, "g!", 2);
	virtio_mmio_access(&f->m, VIRTIO_MMIO_CONFIG + 4, false, (uint8_t *)&l, 4);
	assert_int_equal(l, 0x04030201);
	/* Past the device's config: zeros. */
	l = 0xdeadbeef;
	virtio_mmio_access(&f->m, VIRTIO_MMIO_CONFIG + 8, false, (uint8_t *)&l, 4);
	assert_int_equal(l, 0);
	/* Read-only. */
	l = 0;
	virtio_mmio_access(&f->m, VIRTIO_MMIO_CONFIG, true, (uint8_t *)&l, 4);
	assert_memory_equal(f->config, "tag!", 4);
}

/* A hostile access: reads see zeros, and no register changes. */
/* Saved with an interrupt pending and restored into a transport as new:
 * the same registers, started once, the cause still there for the
 * driver's handler; cut short, refused with nothing started. */
static void test_snapshot_restore(void **state)
{
	struct fake *a = *state;
	start(a);
	wr(a, VIRTIO_MMIO_SHM_SEL, SHM_ID);
	virtio_queue_interrupt(&a->m.t.queues[0]);
	struct state_out out = {0};
	virtio_mmio_save(&a->m, &out);
	unsigned char *buf;
	size_t len;
	assert_int_equal(state_out_finish(&out, &buf, &len), 0);

	void *other;
	assert_int_equal(setup(&other), 0);
	struct fake *b = other;
	char err[256];
	for (size_t n = 0; n < len; n++) {
		struct state_in in = state_in(buf, n);
		assert_int_equal(virtio_mmio_restore(&b->m, &in, err, sizeof(err)), -EBADMSG);
		assert_int_equal(rd(b, VIRTIO_MMIO_STATUS), 0);
		assert_int_equal(rd(b, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	}
	assert_int_equal(b->activations, 0);
	struct state_in in = state_in(buf, len);
	assert_int_equal(virtio_mmio_restore(&b->m, &in, err, sizeof(err)), 0);
	assert_true(state_in_whole(&in));
	assert_int_equal(b->activations, 1);
	assert_int_equal(rd(b, VIRTIO_MMIO_STATUS), rd(a, VIRTIO_MMIO_STATUS));
	assert_int_equal(rd(b, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	assert_int_equal(rd(b, VIRTIO_MMIO_SHM_LEN_LOW), (uint32_t)SHM_SIZE);
	wr(b, VIRTIO_MMIO_QUEUE_SEL, 1);
	assert_int_equal(rd(b, VIRTIO_MMIO_QUEUE_READY), 1);
	teardown(&other);
	free(buf);
}

static void expect_ignored(struct fake *f, uint64_t off, bool is_write,
			   unsigned int size)
{
	struct virtio_mmio before;
	memcpy(&before, &f->m, sizeof(before));
	uint8_t data[8];
	memset(data, 0xa5, sizeof(data));
	virtio_mmio_access(&f->m, off, is_write, data, size);
	if (!is_write)
		for (unsigned int i = 0; i < size; i++)
			assert_int_equal(data[i], 0);
	before.warned = f->m.warned; /* the one thing that may change */
	assert_memory_equal(&before, &f->m, sizeof(before));
}

static void test_hostile_widths_and_offsets(void **state)
{
	struct fake *f = *state;
	const unsigned int sizes[] = {1, 2, 8};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		expect_ignored(f, VIRTIO_MMIO_MAGIC_VALUE, false, sizes[i]);
		expect_ignored(f, VIRTIO_MMIO_QUEUE_SEL, true, sizes[i]);
		expect_ignored(f, VIRTIO_MMIO_STATUS, true, sizes[i]);
		expect_ignored(f, VIRTIO_MMIO_QUEUE_NUM, true, sizes[i]);
	}
	expect_ignored(f, VIRTIO_MMIO_QUEUE_SEL + 1, true, 4);   /* unaligned */
	expect_ignored(f, VIRTIO_MMIO_MAGIC_VALUE + 2, false, 4);
	expect_ignored(f, VIRTIO_MMIO_SIZE - 2, false, 4);       /* past the page */
	expect_ignored(f, VIRTIO_MMIO_SIZE, false, 4);
	expect_ignored(f, VIRTIO_MMIO_SIZE + 0x40, true, 4);
	expect_ignored(f, ~0ULL - 1, true, 4);
	expect_ignored(f, VIRTIO_MMIO_CONFIG + 1, false, 2);     /* unaligned */
	expect_ignored(f, VIRTIO_MMIO_CONFIG, false, 8);
	expect_ignored(f, VIRTIO_MMIO_CONFIG, false, 3);
	/* Read-only, legacy (version 1) and reserved registers. */
	expect_ignored(f, VIRTIO_MMIO_MAGIC_VALUE, true, 4);
	expect_ignored(f, VIRTIO_MMIO_QUEUE_NUM_MAX, true, 4);
	expect_ignored(f, VIRTIO_MMIO_INTERRUPT_STATUS, true, 4);
	expect_ignored(f, VIRTIO_MMIO_GUEST_PAGE_SIZE, true, 4);
	expect_ignored(f, VIRTIO_MMIO_QUEUE_PFN, true, 4);
	expect_ignored(f, VIRTIO_MMIO_SHM_LEN_LOW, true, 4);
	expect_ignored(f, 0xf0, true, 4);
	expect_ignored(f, VIRTIO_MMIO_STATUS, true, 4); /* 0xa5a5a5a5: no byte */
	assert_true(f->m.warned); /* told once */
}

static void test_hostile_queue_values(void **state)
{
	struct fake *f = *state;
	negotiate(f, FEATURES);
	struct virtio_mmio before;
	memcpy(&before, &f->m, sizeof(before));
	/* Out of range: reads 0, writes land nowhere. */
	wr(f, VIRTIO_MMIO_QUEUE_SEL, NR_QUEUES);
	assert_int_equal(rd(f, VIRTIO_MMIO_QUEUE_READY), 0);
	wr(f, VIRTIO_MMIO_QUEUE_NUM, 64);
	wr64(f, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x1000);
	wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
	wr(f, VIRTIO_MMIO_QUEUE_SEL, 0xffffffff);
	wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
	/* Sizes: zero, not a power of two, above the maximum. */
	wr(f, VIRTIO_MMIO_QUEUE_SEL, 0);
	const uint32_t sizes[] = {0, 3, 100, MAX_SIZE + 1, MAX_SIZE * 2,
				  0x10000, 0xffffffff};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		wr(f, VIRTIO_MMIO_QUEUE_NUM, sizes[i]);
	/* QueueReady takes 0 or 1 only; status a byte. */
	wr(f, VIRTIO_MMIO_QUEUE_READY, 2);
	wr(f, VIRTIO_MMIO_STATUS, 0x100);
	before.warned = f->m.warned;
	assert_memory_equal(f->m.t.rings, before.t.rings,
			    sizeof(before.t.rings));
	assert_int_equal(f->m.t.status, before.t.status);
	/* The real sizes still work. */
	wr(f, VIRTIO_MMIO_QUEUE_NUM, MAX_SIZE);
	wr(f, VIRTIO_MMIO_QUEUE_NUM, 1);
	assert_int_equal(f->m.t.rings[0].size, 1);
}

/* --- the life cycle's cases shared with virtio-pci. */

static void lc_set_status(void *f, uint8_t s)
{
	wr(f, VIRTIO_MMIO_STATUS, s);
}

static uint8_t lc_status(void *f)
{
	return (uint8_t)rd(f, VIRTIO_MMIO_STATUS);
}

static void lc_set_features(void *f, uint64_t features)
{
	set_features(f, features);
}

static void lc_select_queue(void *f, uint32_t q)
{
	wr(f, VIRTIO_MMIO_QUEUE_SEL, q);
}

static void lc_set_queue_size(void *f, uint32_t size)
{
	wr(f, VIRTIO_MMIO_QUEUE_NUM, size);
}

static void lc_set_ring(void *f, enum ring_part part, uint64_t gpa)
{
	wr64(f,
	     part == RING_DESC    ? VIRTIO_MMIO_QUEUE_DESC_LOW
	     : part == RING_AVAIL ? VIRTIO_MMIO_QUEUE_AVAIL_LOW
				  : VIRTIO_MMIO_QUEUE_USED_LOW,
	     gpa);
}

static void lc_enable_queue(void *f)
{
	wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
}

static void lc_kick(void *f, uint32_t q)
{
	wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, q);
}

static struct lifecycle_rig lifecycle_rig(void *state)
{
	struct fake *f = state;
	return (struct lifecycle_rig){f, &f->m.t, &f->activations, &f->resets,
				      &f->start_error};
}

#define MMIO_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_features_both_words, setup, teardown),
		cmocka_unit_test_setup_teardown(test_features_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_features_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_setup_and_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_registers_frozen_when_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_clears_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_rings_need_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupt_status_and_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notify_before_ioeventfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notify_to_the_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shm_registers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_shm_region, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_widths_and_offsets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_queue_values, setup, teardown),
		LIFECYCLE_TESTS(MMIO_TEST),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
