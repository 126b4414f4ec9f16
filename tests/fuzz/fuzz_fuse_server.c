/* libFuzzer target: arbitrary FUSE requests against a scratch share. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fuse.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fuse_server.h"

/*
 * Input: three control bytes, then requests back to back. Each request
 * takes as many bytes as its fuse_in_header.len says (the last takes all
 * that is left, so its len may lie either way).
 *   c[0] bits 0-1: iovecs per request (1 to 3); bit 2: read-only share;
 *        bits 3-4: cache mode; bit 5: no DAX window; bit 7: small reply
 *        buffer (c[1] bytes) instead of 64 KiB.
 *   c[1], c[2]: where requests are split, as fractions of 256.
 * Before the requests the harness has run INIT, LOOKUP of f (node 2), d
 * (node 3) and l (node 4), OPEN of f (fh 1) and OPENDIR of d (fh 2), so
 * short inputs reach deep.
 */

#define MAX_REQUESTS 16
#define OUT_SIZE 65536

static char share[64];
static unsigned char out_buf[OUT_SIZE];

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st; (void)type;
	return ftw->level ? remove(path) : 0;
}

/* Leaves no scratch folder behind; a tmpfs goes with our namespace. */
static void remove_share(void)
{
	umount2(share, MNT_DETACH);
	nftw(share, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	rmdir(share);
}

/* The share lives on a private, size-limited tmpfs where we can make one
 * (as root or in a user namespace): fallocate and sparse writes at large
 * offsets must not fill the host's disk. Elsewhere a file size limit. */
static void make_share(void)
{
	snprintf(share, sizeof(share), "/tmp/fsvm-fuzz-XXXXXX");
	if (!mkdtemp(share))
		abort();
	atexit(remove_share);
	if ((unshare(CLONE_NEWNS) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) &&
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	    mount("fsvm-fuzz", share, "tmpfs", 0, "size=64m,nr_inodes=4096") == 0)
		return;
	fprintf(stderr, "fuzz_fuse_server: no private tmpfs (%s), limiting file sizes\n",
		strerror(errno));
	struct rlimit lim = { 64 << 20, 64 << 20 };

	setrlimit(RLIMIT_FSIZE, &lim);
	signal(SIGXFSZ, SIG_IGN);
}

/* What the canned requests expect; the fuzzer may have renamed, removed
 * or filled anything, so it is put back (and now and then all wiped). */
static void reset_share(void)
{
	static unsigned runs;
	char path[128];

	if (++runs % 1000 == 0)
		nftw(share, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
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

#define WINDOW_SIZE (64ull << 20)

/* The device trusts what the server checked: a bad range here is a bug. */
static bool in_window(uint64_t moffset, uint64_t len)
{
	return len && moffset <= WINDOW_SIZE && len <= WINDOW_SIZE - moffset;
}

static int fake_map(void *opaque, uint64_t moffset, uint64_t len, int fd,
		    uint64_t foffset, bool writable)
{
	(void)opaque; (void)writable;
	if (fd < 0 || !in_window(moffset, len) || foffset + len < foffset)
		abort();
	return 0;
}

static int fake_unmap(void *opaque, uint64_t moffset, uint64_t len)
{
	(void)opaque;
	if (!in_window(moffset, len))
		abort();
	return 0;
}

static void fake_file_grown(void *opaque)
{
	(void)opaque;
}

static const struct fuse_dax_ops fake_dax = {
	.map = fake_map, .unmap = fake_unmap, .file_grown = fake_file_grown,
	.window_size = WINDOW_SIZE,
};

/* Sends one request and checks the reply is well formed. */
static void send_request(struct fuse_server *srv, const unsigned char *req,
			 size_t len, int iov_count, const unsigned char *c,
			 size_t out_len)
{
	size_t a = len * c[1] / 256, b = a + (len - a) * c[2] / 256;
	struct iovec in[3] = {
		{ (void *)req, a }, { (void *)(req + a), b - a },
		{ (void *)(req + b), len - b },
	};

	if (iov_count == 1)
		in[0].iov_len = len;
	else if (iov_count == 2)
		in[1].iov_len = len - a;
	size_t cut = out_len * c[2] / 256;
	struct iovec out[2] = { { out_buf, cut }, { out_buf + cut, out_len - cut } };
	size_t n = fuse_server_handle(srv, in, iov_count, out, 2, NULL);
	struct fuse_out_header oh;

	if (n > out_len || (n && n < sizeof(oh)))
		abort();
	if (n) {
		memcpy(&oh, out_buf, sizeof(oh));
		if (oh.len != n || oh.error > 0 || oh.error < -4095 ||
		    (oh.error && n != sizeof(oh)))
			abort();
	}
}

/* A canned request built in place. */
static void canned(struct fuse_server *srv, uint32_t opcode, uint64_t nodeid,
		   const void *args, size_t args_len, const char *name)
{
	_Alignas(8) unsigned char buf[256];
	struct fuse_in_header h = { .opcode = opcode, .nodeid = nodeid, .unique = 1 };
	size_t name_len = name ? strlen(name) + 1 : 0;
	static const unsigned char whole[3] = { 0, 0, 0 };

	h.len = (uint32_t)(sizeof(h) + args_len + name_len);
	memcpy(buf, &h, sizeof(h));
	if (args)
		memcpy(buf + sizeof(h), args, args_len);
	if (name)
		memcpy(buf + sizeof(h) + args_len, name, name_len);
	send_request(srv, buf, h.len, 1, whole, OUT_SIZE);
}

static void start_session(struct fuse_server *srv)
{
	struct fuse_init_in init = { .major = 7, .minor = 38, .flags = 0xffffffff,
				     .flags2 = (uint32_t)(FUSE_HAS_INODE_DAX >> 32) };
	struct fuse_open_in rdwr = { .flags = O_RDWR }, rdonly = { .flags = O_RDONLY };

	canned(srv, FUSE_INIT, 0, &init, sizeof(init), NULL);
	canned(srv, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "f");
	canned(srv, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "d");
	canned(srv, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "l");
	canned(srv, FUSE_OPEN, 2, &rdwr, sizeof(rdwr), NULL);
	canned(srv, FUSE_OPENDIR, 3, &rdonly, sizeof(rdonly), NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	make_share();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static _Alignas(8) unsigned char req[1 << 16];

	if (size < 3 || size - 3 > sizeof(req))
		return 0;
	const unsigned char *c = data;
	struct fuse_server_config cfg = {
		.root = share,
		.readonly = c[0] & 4,
		.cache = (c[0] >> 3) % 3,
		.writeback = true,
		.dax = (c[0] & 32) ? NULL : &fake_dax,
	};
	struct fuse_server *srv;

	reset_share();
	if (fuse_server_create(&cfg, &srv))
		abort();
	start_session(srv);

	size_t out_len = (c[0] & 0x80) ? c[1] : OUT_SIZE;
	size_t pos = 3;

	for (int i = 0; i < MAX_REQUESTS && pos < size; i++) {
		size_t left = size - pos, len = left;
		struct fuse_in_header h;

		if (left >= sizeof(h) && i < MAX_REQUESTS - 1) {
			memcpy(&h, data + pos, sizeof(h));
			if (h.len >= sizeof(h) && h.len < left)
				len = h.len;
		}
		/* A copy, as the guest's buffers would be; and SETLKW becomes
		 * SETLK: with one thread, a wait on our own lock never ends. */
		memcpy(req, data + pos, len);
		if (len >= sizeof(h)) {
			memcpy(&h, req, sizeof(h));
			if (h.opcode == FUSE_SETLKW) {
				h.opcode = FUSE_SETLK;
				memcpy(req, &h, sizeof(h));
			}
		}
		send_request(srv, req, len, c[0] % 3 + 1, c, out_len);
		pos += len;
	}
	fuse_server_destroy(srv);
	return 0;
}
