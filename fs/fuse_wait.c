/* Waits for locks, each on a thread of its own, answered when they end. */
#include "fs/fuse_wait.h"

#include <errno.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>

#include "fs/fuse_internal.h"
#include "fs/handle_table.h"
#include "fs/iov.h"

/* Waits a share may have at once, each a thread and an open handle. */
#define FUSE_MAX_WAITS 64
/* The iovecs of a reply that is only a fuse_out_header. */
#define WAIT_REPLY_SEGS 16
/* A waiter needs little stack: a system call and a reply header. */
#define WAIT_STACK_SIZE (64 * 1024)

struct fuse_wait {
	struct fuse_wait *next;
	struct fuse_waits *ws;
	struct handle_table *handles;
	struct handle *h;
	struct fuse_lock_op lock;
	uint64_t unique;
	struct fuse_completion later;
	struct iovec out[WAIT_REPLY_SEGS];
	int out_cnt;
	pthread_t thread;
	atomic_bool cancelled; /* stop waiting */
	atomic_bool abandoned; /* and do not reply (set before cancelled) */
	atomic_bool finished;  /* replied (or not) and done with shared state */
	unsigned int kickers;  /* threads ending it, under ws->lock */
};

static void wake_handler(int sig)
{
	(void)sig;
}

/* The signal only has to interrupt the waiting system call: no
 * SA_RESTART, a handler that does nothing. */
static void install_wake_handler(void)
{
	struct sigaction sa = { .sa_handler = wake_handler };
	sigemptyset(&sa.sa_mask);
	sigaction(FUSE_WAIT_SIGNAL, &sa, NULL);
}

void fuse_waits_init(struct fuse_waits *ws)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_wake_handler);
	*ws = (struct fuse_waits){ .list = NULL };
	pthread_mutex_init(&ws->lock, NULL);
}

static int take_lock(const struct fuse_wait *w)
{
	int r = w->lock.is_flock ? flock(w->h->fd, w->lock.flock_op)
				 : fcntl(w->h->fd, F_OFD_SETLKW, &w->lock.fl);
	return r ? -errno : 0;
}

static void *wait_main(void *arg)
{
	struct fuse_wait *w = arg;
	sigset_t wake;
	int err;

	sigemptyset(&wake);
	sigaddset(&wake, FUSE_WAIT_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	/* A cancel that lands before the call is seen here; one that lands
	 * during it interrupts it; one in between is sent again until this
	 * thread finishes (see end_wait). */
	do {
		err = atomic_load(&w->cancelled) ? -EINTR : take_lock(w);
	} while (err == -EINTR && !atomic_load(&w->cancelled));
	handle_put(w->handles, w->h);
	if (!atomic_load(&w->abandoned)) {
		size_t len = fuse_reply_header(w->out, w->out_cnt, w->unique, err);
		w->later.done(w->later.opaque, w->later.token, len);
	}
	atomic_store(&w->finished, true);
	return NULL;
}

/* Joins and frees the waits that are over; ws->lock held. */
static void reap(struct fuse_waits *ws)
{
	for (struct fuse_wait **p = &ws->list; *p;) {
		struct fuse_wait *w = *p;
		if (!atomic_load(&w->finished) || w->kickers) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		ws->count--;
		pthread_join(w->thread, NULL);
		free(w);
	}
}

int fuse_wait_start(struct fuse_waits *ws, struct handle_table *handles,
		    struct handle *h, const struct fuse_lock_op *lock,
		    uint64_t unique, const struct iovec *out, int out_cnt,
		    const struct fuse_completion *later)
{
	struct fuse_wait *w = calloc(1, sizeof(*w));
	size_t len;

	if (!w)
		return -ENOMEM;
	*w = (struct fuse_wait){ .ws = ws, .handles = handles, .h = h,
				 .lock = *lock, .unique = unique,
				 .later = *later };
	w->out_cnt = iov_view(w->out, WAIT_REPLY_SEGS, out, out_cnt, 0,
			      sizeof(struct fuse_out_header), &len);
	if (len < sizeof(struct fuse_out_header)) {
		free(w);
		return -EINVAL;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WAIT_STACK_SIZE);
	pthread_mutex_lock(&ws->lock);
	reap(ws);
	int err = ws->count >= FUSE_MAX_WAITS ? -ENOLCK : 0;
	/* Linked before it runs: a wait that ends at once is reaped later. */
	if (!err && pthread_create(&w->thread, &attr, wait_main, w))
		err = -ENOLCK;
	if (!err) {
		w->next = ws->list;
		ws->list = w;
		ws->count++;
	}
	pthread_mutex_unlock(&ws->lock);
	pthread_attr_destroy(&attr);
	if (err)
		free(w);
	return err;
}

/* Sends the wake-up signal until w has finished: bounded, since a waiter
 * that is not in its system call is on its way out of it. Then lets it be
 * reaped. Called with w->kickers raised. */
static void end_wait(struct fuse_waits *ws, struct fuse_wait *w)
{
	const struct timespec pause = { .tv_nsec = 200 * 1000 };

	while (!atomic_load(&w->finished)) {
		pthread_kill(w->thread, FUSE_WAIT_SIGNAL);
		nanosleep(&pause, NULL);
	}
	pthread_mutex_lock(&ws->lock);
	w->kickers--;
	reap(ws);
	pthread_mutex_unlock(&ws->lock);
}

void fuse_wait_interrupt(struct fuse_waits *ws, uint64_t unique)
{
	struct fuse_wait *found = NULL;

	pthread_mutex_lock(&ws->lock);
	for (struct fuse_wait *w = ws->list; w && !found; w = w->next) {
		if (w->unique == unique && !atomic_load(&w->finished)) {
			found = w;
			atomic_store(&w->cancelled, true);
			w->kickers++;
		}
	}
	pthread_mutex_unlock(&ws->lock);
	if (found)
		end_wait(ws, found);
}

void fuse_waits_cancel(struct fuse_waits *ws, bool abandon)
{
	struct fuse_wait *ending[FUSE_MAX_WAITS];
	unsigned int n = 0;

	pthread_mutex_lock(&ws->lock);
	for (struct fuse_wait *w = ws->list; w; w = w->next) {
		if (atomic_load(&w->finished))
			continue;
		if (abandon)
			atomic_store(&w->abandoned, true);
		atomic_store(&w->cancelled, true);
		w->kickers++;
		ending[n++] = w;
	}
	pthread_mutex_unlock(&ws->lock);
	for (unsigned int i = 0; i < n; i++)
		end_wait(ws, ending[i]);
	pthread_mutex_lock(&ws->lock);
	reap(ws);
	pthread_mutex_unlock(&ws->lock);
}

void fuse_waits_fini(struct fuse_waits *ws)
{
	fuse_waits_cancel(ws, true);
	pthread_mutex_destroy(&ws->lock);
}
