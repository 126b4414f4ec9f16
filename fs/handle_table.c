/* Open files and directories of the guest, found by FUSE file handle (fh). */
#include "fs/handle_table.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define HANDLE_TABLE_MIN_BUCKETS 64

static size_t slot(const struct handle_table *t, uint64_t fh)
{
	/* Handles are sequential, so the low bits spread them evenly. */
	return (size_t)fh & (t->buckets - 1);
}

/* Doubles the chains once they average more than one handle; failing to
 * grow only makes chains longer. */
static void maybe_grow(struct handle_table *t)
{
	if (t->count <= t->buckets)
		return;
	struct handle **chains = calloc(t->buckets * 2, sizeof(*chains));

	if (!chains)
		return;
	struct handle **old = t->chains;
	size_t old_buckets = t->buckets;

	t->chains = chains;
	t->buckets *= 2;
	for (size_t i = 0; i < old_buckets; i++) {
		for (struct handle *h = old[i], *next; h; h = next) {
			next = h->next;
			h->next = t->chains[slot(t, h->fh)];
			t->chains[slot(t, h->fh)] = h;
		}
	}
	free(old);
}

int handle_table_init(struct handle_table *t, size_t max)
{
	*t = (struct handle_table){ .buckets = HANDLE_TABLE_MIN_BUCKETS,
				    .max = max, .next_fh = 1 };
	t->chains = calloc(t->buckets, sizeof(*t->chains));
	if (!t->chains)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

static void free_handle(struct handle *h)
{
	if (h) {
		close(h->fd);
		pthread_mutex_destroy(&h->dir_lock);
		free(h);
	}
}

void handle_table_fini(struct handle_table *t)
{
	handle_table_reset(t);
	free(t->chains);
	pthread_mutex_destroy(&t->lock);
}

int handle_table_add(struct handle_table *t, int fd, bool writable,
		     bool is_dir, enum host_fs_kind kind, uint64_t *fh)
{
	struct handle *h = malloc(sizeof(*h));

	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	*h = (struct handle){ .fd = fd, .writable = writable,
			      .is_dir = is_dir, .kind = kind, .refs = 1 };
	pthread_mutex_init(&h->dir_lock, NULL);
	pthread_mutex_lock(&t->lock);
	if (t->count >= t->max) {
		pthread_mutex_unlock(&t->lock);
		free_handle(h);
		return -ENFILE;
	}
	h->fh = t->next_fh++;
	h->next = t->chains[slot(t, h->fh)];
	t->chains[slot(t, h->fh)] = h;
	t->count++;
	maybe_grow(t);
	*fh = h->fh;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

struct handle *handle_get(struct handle_table *t, uint64_t fh)
{
	struct handle *h;

	pthread_mutex_lock(&t->lock);
	for (h = t->chains[slot(t, fh)]; h; h = h->next) {
		if (h->fh == fh) {
			h->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return h;
}

void handle_put(struct handle_table *t, struct handle *h)
{
	pthread_mutex_lock(&t->lock);
	bool last = --h->refs == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		free_handle(h);
}

int handle_table_remove(struct handle_table *t, uint64_t fh)
{
	struct handle **p, *h;

	pthread_mutex_lock(&t->lock);
	for (p = &t->chains[slot(t, fh)]; *p && (*p)->fh != fh; p = &(*p)->next)
		;
	h = *p;
	if (h) {
		*p = h->next;
		t->count--;
	}
	pthread_mutex_unlock(&t->lock);
	if (!h)
		return -EBADF;
	handle_put(t, h);
	return 0;
}

void handle_table_reset(struct handle_table *t)
{
	struct handle *dead = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->buckets; i++) {
		for (struct handle *h = t->chains[i], *next; h; h = next) {
			next = h->next;
			/* Requests still in flight free it when they put it. */
			if (--h->refs == 0) {
				h->next = dead;
				dead = h;
			}
		}
		t->chains[i] = NULL;
	}
	t->count = 0;
	pthread_mutex_unlock(&t->lock);
	while (dead) {
		struct handle *next = dead->next;

		free_handle(dead);
		dead = next;
	}
}

size_t handle_table_count(struct handle_table *t)
{
	pthread_mutex_lock(&t->lock);
	size_t count = t->count;
	pthread_mutex_unlock(&t->lock);
	return count;
}
