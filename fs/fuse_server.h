/* The FUSE server: runs FUSE requests against one host folder. It knows
 * nothing of virtqueues or KVM: a request comes in as iovecs, the reply
 * goes out into iovecs, so it can be unit-tested and fuzzed on its own. */
#ifndef FSVM_FUSE_SERVER_H
#define FSVM_FUSE_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum fuse_cache_mode {
	FUSE_CACHE_NONE,   /* no attribute/entry caching, direct I/O */
	FUSE_CACHE_AUTO,   /* short timeouts, page cache kept while unchanged */
	FUSE_CACHE_ALWAYS, /* long timeouts, page cache always kept */
};

/* The DAX window, provided by the device; absent (NULL) when DAX is off. */
struct fuse_dax_ops {
	/* Maps [foffset, foffset + len) of fd at moffset in the window. */
	int (*map)(void *opaque, uint64_t moffset, uint64_t len, int fd,
		   uint64_t foffset, bool writable);
	/* Puts the window's [moffset, moffset + len) back to unmapped. */
	int (*unmap)(void *opaque, uint64_t moffset, uint64_t len);
	/* A request may have grown a file: called before its reply. */
	void (*file_grown)(void *opaque);
	uint64_t window_size;
	void *opaque;
};

/* A guest id the user did not map (no --uid-map or --gid-map, and no
 * $SUDO_UID for an fsvm started as root): the host identity fsvm fell back
 * to for it, nobody, is no one the user chose. fsvm sees that identity's
 * files owned by guest inside its user namespace, by host without one. */
struct fuse_fallback_id {
	bool set;
	uint32_t guest;
	uint32_t host;
};

struct fuse_server_config {
	const char *root;  /* host folder shared with the guest */
	bool readonly;     /* every write fails with EROFS */
	enum fuse_cache_mode cache;
	bool writeback;    /* offer FUSE_WRITEBACK_CACHE (not with cache=none) */
	bool devices;      /* the guest may make device nodes (MKNOD) */
	/* Caps on what the guest holds: looked-up inodes and open files
	 * (each a host fd). Past them, requests fail with ENFILE. 0: the
	 * defaults below. */
	unsigned int max_inodes;
	unsigned int max_handles;
	const struct fuse_dax_ops *dax;
	/* No file of the fallback owner is left set-user-ID, none of the
	 * fallback group set-group-ID: anyone on the host could run it as
	 * an identity shared with others that the guest was never given. */
	struct fuse_fallback_id fallback_uid, fallback_gid;
};

#define FUSE_DEFAULT_MAX_INODES 65536
#define FUSE_DEFAULT_MAX_HANDLES 16384

/* How a request that must wait (a lock held by someone else) is answered
 * when the wait ends, on another thread: its reply is already in the out
 * iovecs given to fuse_server_handle, reply_len bytes long. */
struct fuse_completion {
	void (*done)(void *opaque, uint64_t token, size_t reply_len);
	void *opaque;
	uint64_t token; /* the device's name for the request */
};

/* fuse_server_handle's answer for a request that will be answered later,
 * through its completion. */
#define FUSE_DEFERRED SIZE_MAX

/* Interrupts the server's waiting threads. Every other thread of the
 * process must keep it blocked, or its own system calls would fail with
 * EINTR when someone sends it. */
#define FUSE_WAIT_SIGNAL SIGUSR2

struct fuse_server;

/* Opens the root and prepares the tables; returns 0 or a negative errno. */
int fuse_server_create(const struct fuse_server_config *cfg,
		       struct fuse_server **out);
void fuse_server_destroy(struct fuse_server *srv);

/* Runs one request. in holds what the guest wrote (fuse_in_header and
 * arguments), out is where the reply goes (fuse_out_header and data).
 * Both live in guest memory: the guest may change them at any time, so
 * headers and names are copied before they are checked. Returns the number
 * of reply bytes written to out: 0 for requests that take no reply
 * (FORGET, BATCH_FORGET) or when out cannot hold even a header.
 * A request that must wait never blocks the caller: with later, it returns
 * FUSE_DEFERRED and is answered through later (out must stay valid until
 * then); without, such a request fails with ENOLCK.
 * Safe to call from several threads at once. */
size_t fuse_server_handle(struct fuse_server *srv, const struct iovec *in,
			  int in_cnt, const struct iovec *out, int out_cnt,
			  const struct fuse_completion *later);

/* Whether in is a WRITE of at least min_size bytes of pages the guest's
 * page cache writes back (FUSE_WRITE_CACHE). A request too short to carry
 * that much is not one and costs no copy: every request a vCPU runs asks.
 * Reads only the header and the WRITE arguments. */
bool fuse_request_is_writeback(const struct iovec *in, int in_cnt,
			       size_t min_size);

/* The device was reset: every waiting request is dropped unanswered (its
 * rings are gone). Returns once no wait runs. */
void fuse_server_abandon_waits(struct fuse_server *srv);

/* Answers a request that cannot be run (a buffer out of reach) with err,
 * as fuse_server_handle would answer it: the reply's length, 0 for a
 * request that takes none. */
size_t fuse_server_fail(struct fuse_server *srv, const struct iovec *in,
			int in_cnt, const struct iovec *out, int out_cnt,
			int err);

/* Opcodes are small numbers (CUSE_INIT aside); beyond this none exist. */
#define FUSE_OPCODE_LIMIT 64

/* How many requests with this opcode (below FUSE_OPCODE_LIMIT) the
 * server has taken, run or answered ENOSYS. */
uint64_t fuse_server_count(struct fuse_server *srv, uint32_t opcode);
/* "LOOKUP" for FUSE_LOOKUP; NULL for an opcode we do not serve. */
const char *fuse_opcode_name(uint32_t opcode);

#endif
