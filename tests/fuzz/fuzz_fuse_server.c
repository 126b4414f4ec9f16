/* libFuzzer target: FUSE requests from two queues at once against a
 * scratch share, with a real DAX window and requests that really wait. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/dax_window.h"
#include "devices/virtio_fs.h"
#include "fs/fuse_server.h"
#include "tests/fuzz/harness.h"

/*
 * Input: four control bytes, then requests, each a control byte and the
 * request itself: as many bytes as its fuse_in_header.len says (the last
 * takes all that is left, so its len may lie either way).
 *   c[0] bits 0-1: iovecs per request (1 to 3); bit 2: read-only share;
 *        bits 3-4: cache mode; bit 5: no DAX window; bit 6: fh 1 holds a
 *        write lock and a flock on all of f, so SETLKW on fh 3 waits;
 *        bit 7: small reply buffers (c[1] bytes) instead of 64 KiB.
 *   c[1], c[2]: where requests and replies are split, as fractions of 256.
 *   c[3] bit 0: the input ends with DESTROY (every wait answered EINTR)
 *        rather than a device reset (every wait dropped unanswered);
 *        bit 1: caps of 6 inodes and 4 handles instead of the defaults.
 * A request's control byte:
 *   bit 0: it runs on queue 1 rather than queue 0. Each queue is a thread
 *          running its requests in order, as the device's workers do;
 *   bit 1: it starts at once, while the other queue may still be running
 *          (otherwise once every request before it has finished);
 *   bit 2: an INTERRUPT names an earlier request's unique (the one its
 *          argument picks, modulo their number), so waits get interrupted;
 *   bit 3: meanwhile the main thread handles the window's inotify events,
 *          as the device's event loop does;
 *   bit 4: meanwhile the main thread repairs the window, as after an
 *          EFAULT from KVM_RUN;
 *   bit 5: it is failed unread with EFAULT, as the device fails a request
 *          with a buffer outside guest RAM.
 * Before the requests the harness has run INIT, LOOKUP of f (node 2), d
 * (node 3) and l (node 4), OPEN of f (fh 1), OPENDIR of d (fh 2) and OPEN
 * of f again (fh 3), so short inputs reach deep.
 */
#define CONTROL_BYTES 4
#define MAX_REQUESTS 32
#define OUT_SIZE 65536
#define QUEUES 2

#define ON_QUEUE_1 0x01
#define AT_ONCE 0x02
#define AIM_INTERRUPT 0x04
#define WATCH_EVENTS 0x08
#define REPAIR 0x10
#define UNREACHABLE 0x20

/* A small window with few mappings, so its limits are within reach. */
#define WINDOW_SIZE (16ull << 20)
#define WINDOW_MAX_MAPS 8

struct request {
	const unsigned char *bytes; /* in the input's copy */
	size_t len;
	uint8_t ctl;
	uint32_t opcode;
	uint64_t unique;     /* what its reply must carry */
	unsigned char *out;  /* its own: a wait writes its reply late */
	size_t returned;     /* what fuse_server_handle answered */
	atomic_uint answers; /* through the completion */
};

static const char *share;
static _Alignas(8) unsigned char input_copy[1 << 16];
static unsigned char out_bufs[MAX_REQUESTS][OUT_SIZE];
static unsigned char canned_out[OUT_SIZE];
static struct request reqs[MAX_REQUESTS];

/* What the queues' threads run against, set before any request goes. */
static struct fuse_server *srv;
static const unsigned char *split; /* c[1], c[2] */
static int iov_count;
static size_t out_len;

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	unsigned int todo[QUEUES][MAX_REQUESTS];
	unsigned int next[QUEUES], end[QUEUES]; /* next to run, past the last */
} queues = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
};

/* What the canned requests expect; the fuzzer may have renamed, removed
 * or filled anything, so it is put back (and now and then all wiped). */
static void reset_share(void)
{
	static unsigned runs;
	char path[128];

	if (++runs % 1000 == 0)
		empty_folder(share);
	snprintf(path, sizeof(path), "%s/f", share);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);

	if (fd >= 0) {
		(void)!write(fd, "hello, fuzzer", 13);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/d", share);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/d/child", share);
	close(open(path, O_WRONLY | O_CREAT | O_NOFOLLOW, 0644));
	snprintf(path, sizeof(path), "%s/l", share);
	(void)!symlink("/etc/passwd", path);
}

/* A reply of n bytes in room, for the request with this unique. */
static void check_reply(const unsigned char *out, size_t n, size_t room,
			uint64_t unique)
{
	struct fuse_out_header oh;

	fuzz_assert(n <= room && (n == 0 || n >= sizeof(oh)),
		    "a reply of %zu bytes in %zu", n, room);
	if (!n)
		return;
	memcpy(&oh, out, sizeof(oh));
	fuzz_assert(oh.len == n, "header says %u bytes, %zu returned", oh.len, n);
	fuzz_assert(oh.error <= 0 && oh.error > -4096 &&
		    (!oh.error || n == sizeof(oh)),
		    "error %d with %zu bytes", oh.error, n);
	fuzz_assert(oh.unique == unique, "unique %llu for request %llu",
		    (unsigned long long)oh.unique, (unsigned long long)unique);
}

/* fuse_completion: a request that waited is answered, once. */
static void answered(void *opaque, uint64_t token, size_t len)
{
	struct request *r = opaque;

	fuzz_assert(token == (uint64_t)(r - reqs), "token %llu for request %td",
		    (unsigned long long)token, r - reqs);
	fuzz_assert(r->opcode == FUSE_SETLKW, "opcode %u waited", r->opcode);
	fuzz_assert(atomic_fetch_add(&r->answers, 1) == 0,
		    "request %td answered twice", r - reqs);
	fuzz_assert(len == sizeof(struct fuse_out_header),
		    "a late reply of %zu bytes", len);
	check_reply(r->out, len, out_len, r->unique);
}

/* Runs one request as a queue's worker does; the reply, unless it comes
 * later, is checked at once. */
static void run_request(struct request *r)
{
	size_t len = r->len, a = len * split[0] / 256;
	size_t b = a + (len - a) * split[1] / 256;
	struct iovec in[3] = {
		{ (void *)r->bytes, a }, { (void *)(r->bytes + a), b - a },
		{ (void *)(r->bytes + b), len - b },
	};

	if (iov_count == 1)
		in[0].iov_len = len;
	else if (iov_count == 2)
		in[1].iov_len = len - a;
	size_t cut = out_len * split[1] / 256;
	struct iovec out[2] = { { r->out, cut }, { r->out + cut, out_len - cut } };
	struct fuse_completion later = { .done = answered, .opaque = r,
					 .token = (uint64_t)(r - reqs) };

	r->returned = (r->ctl & UNREACHABLE)
			      ? fuse_server_fail(srv, in, iov_count, out, 2, -EFAULT)
			      : fuse_server_handle(srv, in, iov_count, out, 2, &later);
	if (r->returned != FUSE_DEFERRED)
		check_reply(r->out, r->returned, out_len, r->unique);
}

static bool all_idle(void)
{
	for (unsigned int q = 0; q < QUEUES; q++)
		if (queues.next[q] != queues.end[q])
			return false;
	return true;
}

static void *queue_main(void *arg)
{
	unsigned int q = (unsigned int)(uintptr_t)arg;

	pthread_mutex_lock(&queues.lock);
	for (;;) {
		while (queues.next[q] == queues.end[q])
			pthread_cond_wait(&queues.work, &queues.lock);
		struct request *r = &reqs[queues.todo[q][queues.next[q]]];

		pthread_mutex_unlock(&queues.lock);
		run_request(r);
		pthread_mutex_lock(&queues.lock);
		queues.next[q]++;
		pthread_cond_broadcast(&queues.idle);
	}
	return NULL;
}

static void dispatch(unsigned int i)
{
	unsigned int q = reqs[i].ctl & ON_QUEUE_1;

	pthread_mutex_lock(&queues.lock);
	while (!(reqs[i].ctl & AT_ONCE) && !all_idle())
		pthread_cond_wait(&queues.idle, &queues.lock);
	queues.todo[q][queues.end[q]++] = i;
	pthread_cond_broadcast(&queues.work);
	pthread_mutex_unlock(&queues.lock);
}

static void wait_idle(void)
{
	pthread_mutex_lock(&queues.lock);
	while (!all_idle())
		pthread_cond_wait(&queues.idle, &queues.lock);
	for (unsigned int q = 0; q < QUEUES; q++)
		queues.next[q] = queues.end[q] = 0;
	pthread_mutex_unlock(&queues.lock);
}

/* A canned request, run on the main thread while the queues are idle. */
static void canned(uint32_t opcode, uint64_t nodeid, const void *args,
		   size_t args_len, const char *name)
{
	_Alignas(8) unsigned char buf[256];
	struct fuse_in_header h = { .opcode = opcode, .nodeid = nodeid, .unique = 1 };
	size_t name_len = name ? strlen(name) + 1 : 0;

	h.len = (uint32_t)(sizeof(h) + args_len + name_len);
	memcpy(buf, &h, sizeof(h));
	if (args)
		memcpy(buf + sizeof(h), args, args_len);
	if (name)
		memcpy(buf + sizeof(h) + args_len, name, name_len);
	struct iovec in = { buf, h.len }, out = { canned_out, sizeof(canned_out) };
	size_t n = fuse_server_handle(srv, &in, 1, &out, 1, NULL);

	check_reply(canned_out, n, sizeof(canned_out), h.unique);
}

static void start_session(bool hold_locks)
{
	struct fuse_init_in init = { .major = 7, .minor = 38, .flags = 0xffffffff,
				     .flags2 = (uint32_t)(FUSE_HAS_INODE_DAX >> 32) };
	struct fuse_open_in rdwr = { .flags = O_RDWR }, rdonly = { .flags = O_RDONLY };

	canned(FUSE_INIT, 0, &init, sizeof(init), NULL);
	canned(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "f");
	canned(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "d");
	canned(FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "l");
	canned(FUSE_OPEN, 2, &rdwr, sizeof(rdwr), NULL);
	canned(FUSE_OPENDIR, 3, &rdonly, sizeof(rdonly), NULL);
	canned(FUSE_OPEN, 2, &rdwr, sizeof(rdwr), NULL);
	if (!hold_locks)
		return;
	struct fuse_lk_in posix = { .fh = 1, .lk = { .end = INT64_MAX, .type = F_WRLCK } };
	struct fuse_lk_in whole = posix;

	whole.lk_flags = FUSE_LK_FLOCK;
	canned(FUSE_SETLK, 2, &posix, sizeof(posix), NULL);
	canned(FUSE_SETLK, 2, &whole, sizeof(whole), NULL);
}

/* Cuts the input into requests; returns how many. */
static unsigned int parse_requests(const uint8_t *data, size_t size)
{
	unsigned int n = 0;
	size_t pos = 0;

	memcpy(input_copy, data, size);
	while (n < MAX_REQUESTS && pos + 1 < size) {
		struct request *r = &reqs[n];
		struct fuse_in_header h = { 0 };
		uint8_t ctl = input_copy[pos++];
		size_t left = size - pos, len = left;

		if (left >= sizeof(h)) {
			memcpy(&h, input_copy + pos, sizeof(h));
			if (n < MAX_REQUESTS - 1 && h.len >= sizeof(h) && h.len < left)
				len = h.len;
		}
		*r = (struct request){ .bytes = input_copy + pos, .len = len,
				       .ctl = ctl, .opcode = h.opcode,
				       .unique = h.unique, .out = out_bufs[n] };
		struct fuse_interrupt_in intr;

		if ((ctl & AIM_INTERRUPT) && n && h.opcode == FUSE_INTERRUPT &&
		    len >= sizeof(h) + sizeof(intr)) {
			memcpy(&intr, input_copy + pos + sizeof(h), sizeof(intr));
			intr.unique = reqs[intr.unique % n].unique;
			memcpy(input_copy + pos + sizeof(h), &intr, sizeof(intr));
		}
		pos += len;
		n++;
	}
	return n;
}

/* Window byte at moffset + off of mapping m, below its file's end: it
 * shows the file's byte, and a store there (as the guest's) reaches the
 * file through a write mapping and never through a read-only one, where
 * the page becomes the guest's own copy. */
static void check_mapped_byte(struct dax_window *w, const struct dax_mapping *m,
			      uint64_t off)
{
	volatile unsigned char *at = w->base + m->moffset + off;
	off_t foff = (off_t)(m->foffset + off);
	unsigned char was, now;

	if (pread(m->fd, &was, 1, foff) != 1)
		return;
	fuzz_assert(*at == was,
		    "window 0x%llx shows %#x, file offset 0x%llx holds %#x",
		    (unsigned long long)(m->moffset + off), *at,
		    (unsigned long long)foff, was);
	*at = (unsigned char)~was;
	fuzz_assert(pread(m->fd, &now, 1, foff) == 1 &&
		    now == (m->writable ? (unsigned char)~was : was),
		    "a store at window 0x%llx (%s mapping) left file offset 0x%llx %#x",
		    (unsigned long long)(m->moffset + off),
		    m->writable ? "write" : "read-only",
		    (unsigned long long)foff, now);
}

/* The window after every request ran and an EFAULT's repair: records in
 * it, apart, each holding its file, and every mapping's first and last
 * byte below its file's end behaving as a mapping of the file. */
static void check_window(struct dax_window *w)
{
	dax_window_repair(w);
	fuzz_assert(w->nr_maps <= w->max_maps, "%u records", w->nr_maps);
	for (unsigned int i = 0; i < w->nr_maps; i++) {
		const struct dax_mapping *m = &w->maps[i];
		struct stat st;

		fuzz_assert(m->len && m->moffset % DAX_WINDOW_ALIGN == 0 &&
			    m->len % DAX_WINDOW_ALIGN == 0 && m->moffset < w->size &&
			    m->len <= w->size - m->moffset,
			    "record %u at 0x%llx+0x%llx", i,
			    (unsigned long long)m->moffset, (unsigned long long)m->len);
		for (unsigned int j = 0; j < i; j++)
			fuzz_assert(m->moffset >= w->maps[j].moffset + w->maps[j].len ||
				    w->maps[j].moffset >= m->moffset + m->len,
				    "records %u and %u overlap", j, i);
		fuzz_assert(fstat(m->fd, &st) == 0, "record %u lost its fd", i);
		uint64_t size = (uint64_t)st.st_size;
		uint64_t below = size > m->foffset ? size - m->foffset : 0;

		if (below > m->len)
			below = m->len;
		if (below) {
			check_mapped_byte(w, m, 0);
			check_mapped_byte(w, m, below - 1);
		}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	share = scratch_share();
	block_wait_signal(); /* the queues' threads inherit the mask */
	for (unsigned int q = 0; q < QUEUES; q++) {
		pthread_t t;

		if (pthread_create(&t, NULL, queue_main, (void *)(uintptr_t)q))
			abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < CONTROL_BYTES || size - CONTROL_BYTES > sizeof(input_copy))
		return 0;
	struct resources before = resources_now();
	const unsigned char *c = data;
	bool dax = !(c[0] & 32), tight = c[3] & 2;
	struct dax_window win;
	struct fuse_dax_ops win_ops;

	if (dax && dax_window_create(&win, WINDOW_SIZE, WINDOW_MAX_MAPS))
		abort();
	win_ops = virtio_fs_dax_ops(&win);
	struct fuse_server_config cfg = {
		.root = share,
		.readonly = c[0] & 4,
		.cache = (c[0] >> 3) % 3,
		.writeback = true,
		.max_inodes = tight ? 6 : 0,
		.max_handles = tight ? 4 : 0,
		.dax = dax ? &win_ops : NULL,
	};

	reset_share();
	if (fuse_server_create(&cfg, &srv))
		abort();
	split = c + 1;
	iov_count = c[0] % 3 + 1;
	out_len = (c[0] & 0x80) ? c[1] : OUT_SIZE;
	start_session(c[0] & 64);

	unsigned int n = parse_requests(data + CONTROL_BYTES, size - CONTROL_BYTES);

	for (unsigned int i = 0; i < n; i++) {
		dispatch(i);
		if (dax && (reqs[i].ctl & WATCH_EVENTS))
			dax_window_watch_events(&win);
		if (dax && (reqs[i].ctl & REPAIR))
			dax_window_repair(&win);
	}
	wait_idle();

	/* Every wait ends now: answered, or dropped as at a device reset. */
	bool destroy = c[3] & 1;

	if (destroy)
		canned(FUSE_DESTROY, 0, NULL, 0, NULL);
	else
		fuse_server_abandon_waits(srv);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int answers = atomic_load(&reqs[i].answers);
		bool deferred = reqs[i].returned == FUSE_DEFERRED;

		fuzz_assert(deferred || !answers,
			    "request %u was answered at once and later", i);
		fuzz_assert(!deferred || !destroy || answers == 1,
			    "request %u still waits after DESTROY", i);
	}
	if (dax)
		check_window(&win);
	fuse_server_destroy(srv);
	if (dax)
		dax_window_destroy(&win);
	resources_check("fuzz_fuse_server", before);
	return 0;
}
