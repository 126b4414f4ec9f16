/* libFuzzer target: a FUSE server's state restored from any bytes, or from
 * a real state with bytes of it changed, against a scratch share. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fuse_server.h"
#include "fs/fuse_state.h"
#include "tests/fuzz/harness.h"

/*
 * Input: a control byte, then the state.
 *   bit 0: read-only share; bit 1: caps of 6 inodes and 4 handles;
 *   bits 2-3: cache mode; bit 4: a DAX window (its flags offered);
 *   bit 7: the rest is edits to the real state the harness saved at start
 *          (each 3 bytes: a 16-bit offset into it, modulo its length, and
 *          a byte to XOR there), not the state itself.
 * The real state: after INIT, LOOKUP of f (node 2), d (3), d/child (4)
 * and l (5, a symlink), a second LOOKUP of f, OPEN of f read-write (fh 1)
 * and OPENDIR of d (fh 2).
 * A state the server takes must answer requests on every id it could
 * hold, save again, and that save must restore into another server.
 */
#define CONTROL_READONLY 0x01
#define CONTROL_SMALL_CAPS 0x02
#define CONTROL_CACHE(c) (((c) >> 2) & 3)
#define CONTROL_DAX 0x10
#define CONTROL_EDITS 0x80

/* Ids a restored state is asked about: a few more than the real one's. */
#define PROBE_IDS 8

static const char *share;
static unsigned char *real_state;
static size_t real_len;
static unsigned char edited[1 << 16];

static int no_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		  uint64_t foffset, bool writable)
{
	(void)opaque;
	(void)moffset;
	(void)len;
	(void)fd;
	(void)foffset;
	(void)writable;
	return -EINVAL;
}

static int no_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	(void)opaque;
	(void)moffset;
	(void)len;
	return 0;
}

static void no_growth(void *opaque)
{
	(void)opaque;
}

static const struct fuse_dax_ops window = {
	.map = no_map, .unmap = no_unmap, .file_grown = no_growth,
	.window_size = 1 << 21,
};

/* Runs one request (header and args) and checks the reply's frame. */
static int request(struct fuse_server *srv, uint32_t opcode, uint64_t nodeid,
		   const void *args, size_t args_len)
{
	static uint64_t unique;
	_Alignas(8) unsigned char in[256];
	static _Alignas(8) unsigned char out[8192];
	struct fuse_in_header h = {
		.len = (uint32_t)(sizeof(h) + args_len), .opcode = opcode,
		.unique = ++unique, .nodeid = nodeid,
	};

	memcpy(in, &h, sizeof(h));
	memcpy(in + sizeof(h), args, args_len);
	struct iovec iv = { in, h.len }, ov = { out, sizeof(out) };
	size_t n = fuse_server_handle(srv, &iv, 1, &ov, 1, NULL);
	struct fuse_out_header oh;

	if (n == 0)
		return 0;
	fuzz_assert(n >= sizeof(oh) && n <= sizeof(out), "a reply of %zu bytes", n);
	memcpy(&oh, out, sizeof(oh));
	fuzz_assert(oh.len == n && oh.unique == unique && oh.error <= 0,
		    "reply header: len %u of %zu, error %d", oh.len, n, oh.error);
	return oh.error;
}

static struct fuse_server *new_server(uint8_t control)
{
	struct fuse_server_config cfg = {
		.root = share,
		.readonly = control & CONTROL_READONLY,
		.cache = (enum fuse_cache_mode)(CONTROL_CACHE(control) % 3),
		.max_inodes = control & CONTROL_SMALL_CAPS ? 6 : 0,
		.max_handles = control & CONTROL_SMALL_CAPS ? 4 : 0,
		.dax = control & CONTROL_DAX ? &window : NULL,
	};
	struct fuse_server *srv = NULL;
	int err = fuse_server_create(&cfg, &srv);

	fuzz_assert(!err, "no server: %s", strerror(-err));
	return srv;
}

/* The files of the real state, and that state. */
static void make_real_state(void)
{
	char path[256];
	struct fuse_init_in init = { .major = FUSE_KERNEL_VERSION,
				     .minor = FUSE_KERNEL_MINOR_VERSION,
				     .flags = 0xffffffffu };
	struct fuse_open_in rw = { .flags = O_RDWR }, dir = { .flags = O_RDONLY };

	snprintf(path, sizeof(path), "%s/f", share);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fuzz_assert(fd >= 0 && write(fd, "state", 5) == 5, "no %s", path);
	close(fd);
	snprintf(path, sizeof(path), "%s/d", share);
	fuzz_assert(!mkdir(path, 0755), "no %s", path);
	snprintf(path, sizeof(path), "%s/d/child", share);
	close(open(path, O_WRONLY | O_CREAT, 0644));
	snprintf(path, sizeof(path), "%s/l", share);
	fuzz_assert(!symlink("f", path), "no %s", path);

	struct fuse_server *srv = new_server(0);
	int err = request(srv, FUSE_INIT, 0, &init, sizeof(init)) ||
		  request(srv, FUSE_LOOKUP, FUSE_ROOT_ID, "f", 2) ||
		  request(srv, FUSE_LOOKUP, FUSE_ROOT_ID, "d", 2) ||
		  request(srv, FUSE_LOOKUP, 3, "child", 6) ||
		  request(srv, FUSE_LOOKUP, FUSE_ROOT_ID, "l", 2) ||
		  request(srv, FUSE_LOOKUP, FUSE_ROOT_ID, "f", 2) ||
		  request(srv, FUSE_OPEN, 2, &rw, sizeof(rw)) ||
		  request(srv, FUSE_OPENDIR, 3, &dir, sizeof(dir));

	fuzz_assert(!err, "the real state's requests failed");
	err = fuse_server_save_state(srv, &real_state, &real_len);
	fuzz_assert(!err && real_len <= sizeof(edited), "no real state: %d", err);
	fuse_server_destroy(srv);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	share = scratch_share();
	make_real_state();
	return 0;
}

/* Every node and handle a state could hold is asked about, as a guest
 * would; none may crash or answer out of frame. */
static void probe(struct fuse_server *srv)
{
	for (uint64_t id = 1; id <= PROBE_IDS; id++) {
		struct fuse_getattr_in ga = { 0 };
		struct fuse_read_in rd = { .fh = id, .size = 4096 };
		struct fuse_open_in op = { .flags = O_RDONLY };

		request(srv, FUSE_GETATTR, id, &ga, sizeof(ga));
		request(srv, FUSE_GETATTR, id | (1ULL << 63), &ga, sizeof(ga));
		request(srv, FUSE_LOOKUP, id, "child", 6);
		request(srv, FUSE_OPEN, id, &op, sizeof(op));
		request(srv, FUSE_READ, FUSE_ROOT_ID, &rd, sizeof(rd));
		request(srv, FUSE_READDIR, FUSE_ROOT_ID, &rd, sizeof(rd));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t control = data[0];
	const unsigned char *state = data + 1;
	size_t len = size - 1;

	if (control & CONTROL_EDITS) {
		memcpy(edited, real_state, real_len);
		for (size_t i = 0; i + 3 <= len; i += 3)
			edited[le16_at(state + i) % real_len] ^= state[i + 2];
		state = edited;
		len = real_len;
	}
	struct resources before = resources_now();
	struct fuse_server *srv = new_server(control);
	char err[256];
	int r = fuse_server_restore_state(srv, state, len, err, sizeof(err));

	fuzz_assert(r <= 0, "restore returned %d", r);
	if (r) {
		fuzz_assert(err[0] && !strchr(err, '\n'), "refused (%d) with line '%s'",
			    r, err);
	} else {
		unsigned char *again;
		size_t again_len;

		probe(srv);
		r = fuse_server_save_state(srv, &again, &again_len);
		fuzz_assert(!r, "a restored state does not save: %d", r);
		struct fuse_server *next = new_server(control);

		r = fuse_server_restore_state(next, again, again_len, err, sizeof(err));
		fuzz_assert(!r, "a restored state's save is refused: %s", err);
		free(again);
		fuse_server_destroy(next);
	}
	fuse_server_destroy(srv);
	resources_check("fuzz_fuse_state", before);
	return 0;
}
