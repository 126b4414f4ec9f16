/* Requests that wait (SETLKW, a waiting flock) never wait on a queue: each
 * waits on a thread of its own and is answered through the device's
 * completion when it ends, so the unlock that would end it can still run.
 * A wait ends when its lock is taken, when the guest sends INTERRUPT for
 * it (EINTR), or when the session ends; a device reset abandons every wait
 * (no reply: its rings are gone). */
#ifndef FSVM_FUSE_WAIT_H
#define FSVM_FUSE_WAIT_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "fs/fuse_server.h"

struct handle;
struct handle_table;
struct fuse_wait;

struct fuse_waits {
	pthread_mutex_t lock;
	struct fuse_wait *list; /* running and finished, until reaped */
	unsigned int count;
};

/* What to take: a POSIX (OFD) lock, or flock's operation. */
struct fuse_lock_op {
	bool is_flock;
	int flock_op; /* LOCK_SH or LOCK_EX */
	struct flock fl;
};

void fuse_waits_init(struct fuse_waits *ws);
/* Abandons and reaps every wait. */
void fuse_waits_fini(struct fuse_waits *ws);

/* Starts waiting for lock on h's file (h referenced: the wait puts it) for
 * request unique, answering into out through later when it ends. Returns 0
 * (the request is the wait's now), -ENOLCK when no more waits may start,
 * or another -errno. */
int fuse_wait_start(struct fuse_waits *ws, struct handle_table *handles,
		    struct handle *h, const struct fuse_lock_op *lock,
		    uint64_t unique, const struct iovec *out, int out_cnt,
		    const struct fuse_completion *later);

/* INTERRUPT: the wait for request unique, if any, ends with EINTR. */
void fuse_wait_interrupt(struct fuse_waits *ws, uint64_t unique);

/* Ends every wait with EINTR (the session ended) or, with abandon, with no
 * reply at all (the device was reset). Returns once none runs. */
void fuse_waits_cancel(struct fuse_waits *ws, bool abandon);

#endif
