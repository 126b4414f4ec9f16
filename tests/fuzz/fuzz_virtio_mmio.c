/* libFuzzer target: the virtio-mmio register page, driven as the vCPU
 * drives it (through the MMIO bus, any offset and size), up to DRIVER_OK
 * with rings in a small guest RAM and queues kicked and served: for four
 * fake devices of different shapes and a real virtio-fs device on a
 * scratch share. The transport makes no KVM call until virtio_mmio_plug(),
 * which the target never calls. */
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/io_bus.h"
#include "devices/virtio_fs.h"
#include "tests/fuzz/fake_device.h"
#include "tests/fuzz/harness.h"
#include "virtio/virtio_mmio.h"

/*
 * Input: operations back to back. An operation's first byte says what:
 * bits 0-2 the kind, bits 3-5 the device modulo 5 (its register page is at
 * BASE + device * 4 KiB; the last is virtio-fs), bits 6-7 the access size
 * (1, 2, 4 or 8 bytes, as an MMIO exit has them).
 *   0 read: a 16-bit offset from the device's page (past its end is the
 *     next page, or nothing);
 *   1 write: the same, then 8 bytes whose first size are written;
 *   2, 6, 7 register write: a byte, the register's index (offset 4 times
 *     it), then the 32-bit value;
 *   3 guest RAM write: bit 3 picks the low or high region, then a 16-bit
 *     offset, a length byte and that many bytes (rings and buffers);
 *   4 a fake device serves the queues the guest kicked; with bit 6, its
 *     next start fails instead (as virtio-fs when it cannot start its
 *     threads); with bit 7, its transport is saved as for a snapshot,
 *     reset, and restored from what was saved with the byte at the next
 *     byte's offset xored with the one after (0: as saved, which must
 *     come back as it was). virtio-fs serves a doorbell's first requests on the
 *     thread that rang (here, this one) and the rest on its own threads:
 *     there the guest waits a while (up to 20 ms, three times per input at most)
 *     for every request it made available to be answered, as a driver
 *     waits for its replies;
 *   5 register read: a byte, the register's index.
 * After each operation every device is checked: its status moved only as
 * the spec lets a driver move it, and for a fake device, a live device's
 * rings stayed, nothing was started twice or reset unstarted, and every
 * buffer it was handed lay in guest RAM.
 */
#define BASE 0xfed00000ULL
#define FAKES 4
#define DEVICES (FAKES + 1)
#define FS_DEVICE FAKES
#define RAM_SIZE 0x10000
#define HIGH_RAM_GPA 0x100000000ULL
#define SHM_GPA 0x200000000ULL
#define SHM_SIZE (2ULL << 20)
#define IRQ 5
/* virtio-fs's window: small, with few mappings, as in fuzz_fuse_server. */
#define FS_WINDOW (16ULL << 20)
#define FS_WINDOW_MAPS 8


static const struct {
	uint16_t queues, max_size;
	uint64_t features, shm_size;
} shapes[FAKES] = {
	{2, 256, VERSION_1 | RING_FEATURES, SHM_SIZE}, /* as virtio-fs */
	{1, 1, VERSION_1, 0},
	{FAKE_MAX_QUEUES, 1024, VERSION_1 | RING_FEATURES, SHM_SIZE},
	{3, 8, VERSION_1 | (1ULL << VIRTIO_RING_F_INDIRECT_DESC), 0},
};

static const unsigned int widths[4] = {1, 2, 4, 8};

static struct vm vm;
static struct io_bus bus;
static struct fake_device fakes[FAKES];
static struct virtio_fs fs;
static const char *share;
static struct virtio_mmio transports[DEVICES];
static uint8_t *ram[2];

static uint32_t reg_read(unsigned int d, uint32_t off)
{
	uint32_t v;
	virtio_mmio_access(&transports[d], off, false, (uint8_t *)&v, 4);
	return v;
}

static void reg_write(unsigned int d, uint32_t off, uint32_t v)
{
	virtio_mmio_access(&transports[d], off, true, (uint8_t *)&v, 4);
}

#define LIVE (VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK)

/* Device d after an operation: status_was before it; written says whether
 * the operation was a register write of value v to Status. */
static void check_device(unsigned int d, uint8_t status_was, bool written,
			 uint32_t v)
{
	const struct virtio_dev *dev = transports[d].t.dev;
	const struct fake_device *f = d < FAKES ? &fakes[d] : NULL;
	uint32_t status = reg_read(d, VIRTIO_MMIO_STATUS);
	uint8_t added = (uint8_t)(status & ~status_was);

	fuzz_assert(status <= 0xff, "device %u: status %#x", d, status);
	if (written && v == 0) {
		fuzz_assert(status == 0 && !transports[d].t.active &&
			    reg_read(d, VIRTIO_MMIO_INTERRUPT_STATUS) == 0,
			    "device %u: a reset left status %#x", d, status);
	} else if (written && v <= 0xff) {
		fuzz_assert((status & status_was) == status_was &&
			    !(added & ~(v | VIRTIO_CONFIG_S_NEEDS_RESET)),
			    "device %u: status %#x after %#x written to %#x", d,
			    status, v, status_was);
	} else {
		fuzz_assert(status == status_was,
			    "device %u: status %#x moved to %#x", d, status_was,
			    status);
	}
	uint64_t agreed = transports[d].t.driver_features;
	fuzz_assert(!(status & VIRTIO_CONFIG_S_FEATURES_OK) ||
		    (!(agreed & ~dev->features) && (agreed & VERSION_1)),
		    "device %u: features %#llx accepted", d,
		    (unsigned long long)agreed);
	fuzz_assert(!(reg_read(d, VIRTIO_MMIO_INTERRUPT_STATUS) &
		      ~VIRTIO_MMIO_INT_VRING),
		    "device %u: an interrupt cause it never raises", d);
	if (!f)
		return;
	fake_device_check(f);
	fuzz_assert(!f->active || ((status & LIVE) == LIVE &&
				   !(status & VIRTIO_CONFIG_S_NEEDS_RESET)),
		    "device %u: running with status %#x", d, status);
}

/* virtio-fs's share holds one file, f, for requests to find. */
static void fill_share(void)
{
	static unsigned int inputs;
	char path[128];

	if (inputs++ % 1000)
		return;
	empty_folder(share);
	snprintf(path, sizeof(path), "%s/f", share);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "virtio-fs behind virtio-mmio", 28) != 28)
		abort();
	close(fd);
}

static struct fuse_server_config fs_config(void)
{
	return (struct fuse_server_config){.root = share,
					   .cache = FUSE_CACHE_AUTO,
					   .dax = &fs.dax_ops};
}

/* virtio-fs as fsvm starts it, for every input: its FUSE server anew
 * (node ids and handles count from the start again, so an input means
 * the same whenever it runs) and its window empty. The device is reset:
 * nothing runs on the server. */
static void fs_renew(void)
{
	struct fuse_server_config cfg = fs_config();

	fuse_server_destroy(fs.server);
	if (fuse_server_create(&cfg, &fs.server) ||
	    dax_window_unmap(&fs.dax, 0, FS_WINDOW))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	share = scratch_share();
	block_wait_signal(); /* virtio-fs's workers inherit the mask */

	vm.mem = (struct guest_mem){0};
	ram[0] = guarded_alloc(RAM_SIZE);
	ram[1] = guarded_alloc(RAM_SIZE);
	static uint8_t shm_stand_in[1];
	if (guest_mem_add(&vm.mem, 0, RAM_SIZE, ram[0]) ||
	    guest_mem_add(&vm.mem, HIGH_RAM_GPA, RAM_SIZE, ram[1]))
		abort();
	struct fuse_server_config cfg = fs_config();
	if (virtio_fs_create(&fs, "fuzz", &cfg, 1, FS_WINDOW, FS_WINDOW_MAPS))
		abort();
	for (unsigned int d = 0; d < DEVICES; d++) {
		uint64_t base = BASE + d * VIRTIO_MMIO_SIZE;
		const struct virtio_dev *dev = &fs.dev;
		if (d < FAKES) {
			fake_device_init(&fakes[d], &vm.mem, shapes[d].queues,
					 shapes[d].max_size, shapes[d].features,
					 shapes[d].shm_size, shm_stand_in);
			dev = &fakes[d].dev;
		}
		if (virtio_mmio_init(&transports[d], &vm, dev, base, IRQ,
				     dev->shm_size ? SHM_GPA : 0) ||
		    io_bus_register(&bus, base, VIRTIO_MMIO_SIZE,
				    virtio_mmio_access, &transports[d]))
			abort();
	}
	return 0;
}

/* True when virtio-fs has answered every request available on its live
 * queues (a waiting one is not answered). */
static bool fs_answered_all(void)
{
	if (!transports[FS_DEVICE].t.active)
		return true;
	for (unsigned int q = 0; q < fs.dev.num_queues; q++) {
		const struct split_ring *vq =
			&transports[FS_DEVICE].t.queues[q].ring;
		if (vq->size && *(volatile uint16_t *)&vq->used->idx !=
					*(volatile uint16_t *)&vq->avail->idx)
			return false;
	}
	return true;
}

static double seconds_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The guest's waits in this input that ended unanswered (a request that
 * waits for a lock, a ring virtio-fs gave up on): past a few, it stops
 * waiting, so an input costs at most a few tens of milliseconds. */
static unsigned int fs_waits_unanswered;

static void fs_wait_for_answers(void)
{
	const struct timespec moment = {.tv_nsec = 100 * 1000};
	double until = seconds_now() + 0.02;
	if (fs_waits_unanswered >= 3)
		return;
	while (!fs_answered_all()) {
		if (seconds_now() >= until) {
			fs_waits_unanswered++;
			return;
		}
		nanosleep(&moment, NULL);
	}
}

/* A write to Status: which device, and the value. */
struct status_write {
	unsigned int device; /* DEVICES: none */
	uint32_t value;
	bool restored; /* not a write: the device was restored from a snapshot */
};

/* Fake device d's transport saved, reset and restored with one byte of
 * the saved state changed (xor 0: none). */
static void snapshot_round_trip(unsigned int d, uint8_t at, uint8_t xor)
{
	struct virtio_transport *t = &transports[d].t;
	uint8_t status = t->status;
	bool may_refuse = xor || (t->active && fakes[d].refuse_start); /* told to */
	struct state_out out = {0};
	virtio_transport_save(t, &out);
	unsigned char *buf;
	size_t len;
	fuzz_assert(state_out_finish(&out, &buf, &len) == 0, "device %u: no state saved", d);
	buf[at % len] ^= xor;
	virtio_transport_set_status(t, 0);
	struct state_in in = state_in(buf, len);
	char err[256];
	int ret = virtio_transport_restore(t, &in, err, sizeof(err));
	fuzz_assert(may_refuse || (!ret && t->status == status),
		    "device %u: restored as saved: %d (%s), status %#x, was %#x", d, ret,
		    ret ? err : "", t->status, status);
	fuzz_assert(!ret || (t->status == 0 && !t->active), "device %u: a refused restore left status %#x",
		    d, t->status);
	free(buf);
}

/* An aligned 32-bit write at offset off from device d's page is one to
 * Status if it lands there (maybe on a later device's page). */
static struct status_write status_write_at(unsigned int d, uint32_t off,
					   unsigned int width,
					   const uint8_t *value)
{
	struct status_write w = {.device = d + off / VIRTIO_MMIO_SIZE};
	if (w.device >= DEVICES || off % VIRTIO_MMIO_SIZE != VIRTIO_MMIO_STATUS ||
	    width != 4)
		return (struct status_write){.device = DEVICES};
	memcpy(&w.value, value, 4);
	return w;
}

/* Runs the operation at p (left bytes there); returns its length, or 0
 * when the input ends inside it. */
static size_t run_op(const uint8_t *p, size_t left, struct status_write *w)
{
	uint8_t op = p[0];
	unsigned int d = ((op >> 3) & 7) % DEVICES, width = widths[op >> 6];
	uint64_t page = BASE + d * VIRTIO_MMIO_SIZE;
	uint64_t v = 0;

	*w = (struct status_write){.device = DEVICES};
	switch (op & 7) {
	case 0:
		if (left < 3)
			return 0;
		bus_access(&bus, page + le16_at(p + 1), false, &v, width);
		return 3;
	case 1:
		if (left < 11)
			return 0;
		memcpy(&v, p + 3, 8);
		bus_access(&bus, page + le16_at(p + 1), true, &v, width);
		*w = status_write_at(d, le16_at(p + 1), width, p + 3);
		return 11;
	case 3: {
		if (left < 4 || left - 4 < p[3])
			return 0;
		uint16_t off = le16_at(p + 1);
		memcpy(ram[(op >> 3) & 1] + off, p + 4,
		       p[3] < RAM_SIZE - off ? p[3] : RAM_SIZE - off);
		return 4 + (size_t)p[3];
	}
	case 4:
		if ((op & 0x80) && d != FS_DEVICE) {
			if (left < 3)
				return 0;
			snapshot_round_trip(d, p[1], p[2]);
			*w = (struct status_write){.device = d, .restored = true};
			return 3;
		}
		if (d == FS_DEVICE)
			fs_wait_for_answers();
		else if (op & 0x40)
			fakes[d].refuse_start = true;
		else
			fake_device_serve(&fakes[d]);
		return 1;
	case 5:
		if (left < 2)
			return 0;
		bus_access(&bus, page + 4u * p[1], false, &v, 4);
		return 2;
	default:
		if (left < 6)
			return 0;
		memcpy(&v, p + 2, 4);
		bus_access(&bus, page + 4u * p[1], true, &v, 4);
		*w = status_write_at(d, 4u * p[1], 4, p + 2);
		return 6;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resources before = resources_now();
	fs_waits_unanswered = 0;
	fill_share();
	memset(ram[0], 0, RAM_SIZE);
	memset(ram[1], 0, RAM_SIZE);
	size_t len;
	for (size_t pos = 0; pos < size; pos += len) {
		uint8_t status_was[DEVICES];
		for (unsigned int d = 0; d < DEVICES; d++)
			status_was[d] = (uint8_t)reg_read(d, VIRTIO_MMIO_STATUS);
		struct status_write w;
		len = run_op(data + pos, size - pos, &w);
		if (!len)
			break;
		for (unsigned int d = 0; d < DEVICES; d++)
			if (w.restored && w.device == d) /* a new start: any status */
				check_device(d, (uint8_t)reg_read(d, VIRTIO_MMIO_STATUS), false, 0);
			else
				check_device(d, status_was[d], w.device == d, w.value);
	}
	/* The next input finds every device as new: the driver resets it. */
	for (unsigned int d = 0; d < DEVICES; d++) {
		reg_write(d, VIRTIO_MMIO_STATUS, 0);
		check_device(d, 0, true, 0);
	}
	for (unsigned int d = 0; d < FAKES; d++)
		fakes[d].refuse_start = false;
	fs_renew();
	resources_check("fuzz_virtio_mmio", before);
	return 0;
}
