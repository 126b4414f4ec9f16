/* What the guest names by a 64-bit id the table hands out. */
#include "fs/id_table.h"

#include <errno.h>
#include <stdlib.h>

#define ID_TABLE_MIN_BUCKETS 64

uint64_t id_table_hash(uint64_t x)
{
	/* splitmix64's finaliser: every bit of x moves the low bits that
	 * pick a chain. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* A chain for any hash: whatever id the guest names stays in bounds. */
static size_t slot(const struct id_table *t, uint64_t hash)
{
	return (size_t)hash & (t->buckets - 1);
}

static void link_entry(struct id_table *t, struct id_entry *e)
{
	size_t s = slot(t, id_table_hash(e->id));

	e->next_by_id = t->by_id[s];
	t->by_id[s] = e;
	if (t->by_key) {
		s = slot(t, e->key_hash);
		e->next_by_key = t->by_key[s];
		t->by_key[s] = e;
	}
}

static void unlink_entry(struct id_table *t, struct id_entry *e)
{
	struct id_entry **p = &t->by_id[slot(t, id_table_hash(e->id))];

	while (*p != e)
		p = &(*p)->next_by_id;
	*p = e->next_by_id;
	if (t->by_key) {
		p = &t->by_key[slot(t, e->key_hash)];
		while (*p != e)
			p = &(*p)->next_by_key;
		*p = e->next_by_key;
	}
}

/* Doubles the chains once they average more than one entry. Failing to
 * grow only makes chains longer, so the error is dropped. */
static void maybe_grow(struct id_table *t)
{
	if (t->count <= t->buckets)
		return;
	struct id_entry **by_id = calloc(t->buckets * 2, sizeof(*by_id));
	struct id_entry **by_key = t->by_key ?
		calloc(t->buckets * 2, sizeof(*by_key)) : NULL;

	if (!by_id || (t->by_key && !by_key)) {
		free(by_id);
		free(by_key);
		return;
	}
	struct id_entry **old = t->by_id;
	size_t old_buckets = t->buckets;

	free(t->by_key);
	t->by_id = by_id;
	t->by_key = by_key;
	t->buckets *= 2;
	for (size_t i = 0; i < old_buckets; i++) {
		for (struct id_entry *e = old[i], *next; e; e = next) {
			next = e->next_by_id;
			link_entry(t, e);
		}
	}
	free(old);
}

int id_table_init(struct id_table *t, const struct id_table_type *type,
		  size_t max)
{
	*t = (struct id_table){ .type = type, .buckets = ID_TABLE_MIN_BUCKETS,
				.max = max, .next_id = ID_TABLE_FIRST_ID };
	t->by_id = calloc(t->buckets, sizeof(*t->by_id));
	if (type->has_key)
		t->by_key = calloc(t->buckets, sizeof(*t->by_key));
	if (!t->by_id || (type->has_key && !t->by_key)) {
		free(t->by_id);
		free(t->by_key);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void id_table_fini(struct id_table *t)
{
	for (size_t i = 0; i < t->buckets; i++) {
		for (struct id_entry *e = t->by_id[i], *next; e; e = next) {
			next = e->next_by_id;
			t->type->release(e);
		}
	}
	free(t->by_id);
	free(t->by_key);
	pthread_mutex_destroy(&t->lock);
}

static struct id_entry *find_locked(struct id_table *t, uint64_t id)
{
	struct id_entry *e = t->by_id[slot(t, id_table_hash(id))];

	while (e && e->id != id)
		e = e->next_by_id;
	return e;
}

/* The entry with this key, if the table has keys and one has it. */
static struct id_entry *find_key_locked(struct id_table *t, uint64_t key_hash,
					const void *key)
{
	struct id_entry *e = t->by_key ? t->by_key[slot(t, key_hash)] : NULL;

	while (e && (e->key_hash != key_hash || !t->type->has_key(e, key)))
		e = e->next_by_key;
	return e;
}

/* Puts e in under id with guest_refs references, with the lock held. */
static void insert_locked(struct id_table *t, struct id_entry *e, uint64_t id,
			  uint64_t key_hash, uint64_t guest_refs)
{
	e->id = id;
	e->guest_refs = guest_refs;
	e->refs = 1;
	e->key_hash = key_hash;
	link_entry(t, e);
	t->count++;
	maybe_grow(t);
}

int id_table_add(struct id_table *t, struct id_entry *e, uint64_t key_hash,
		 const void *key, uint64_t id_bits, uint64_t *id)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	struct id_entry *known = find_key_locked(t, key_hash, key);

	if (known) {
		known->guest_refs++;
		*id = known->id;
		ret = 1;
	} else if (t->count >= t->max) {
		ret = -ENFILE;
	} else if (!e) {
		ret = -ENOMEM;
	} else {
		insert_locked(t, e, t->next_id++ | id_bits, key_hash, 1);
		*id = e->id;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int id_table_add_as(struct id_table *t, struct id_entry *e, uint64_t id,
		    uint64_t id_bits, uint64_t key_hash, const void *key,
		    uint64_t guest_refs)
{
	uint64_t counted = id & ~id_bits;
	int ret = 0;

	if (counted < ID_TABLE_FIRST_ID || counted >= ID_TABLE_MAX_ID ||
	    guest_refs == 0)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (find_locked(t, id) || (key && find_key_locked(t, key_hash, key))) {
		ret = -EEXIST;
	} else if (t->count >= t->max) {
		ret = -ENFILE;
	} else {
		insert_locked(t, e, id, key_hash, guest_refs);
		if (t->next_id <= counted)
			t->next_id = counted + 1;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

struct id_entry *id_table_find_key(struct id_table *t, uint64_t key_hash,
				   const void *key)
{
	pthread_mutex_lock(&t->lock);
	struct id_entry *e = find_key_locked(t, key_hash, key);

	if (e)
		e->refs++;
	pthread_mutex_unlock(&t->lock);
	return e;
}

uint64_t id_table_next_id(struct id_table *t)
{
	pthread_mutex_lock(&t->lock);
	uint64_t next = t->next_id;
	pthread_mutex_unlock(&t->lock);
	return next;
}

int id_table_skip_to(struct id_table *t, uint64_t next_id)
{
	if (next_id < ID_TABLE_FIRST_ID || next_id > ID_TABLE_MAX_ID)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (t->next_id < next_id)
		t->next_id = next_id;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int id_table_each(struct id_table *t, int (*fn)(struct id_entry *e, void *arg),
		  void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->buckets && !ret; i++)
		for (struct id_entry *e = t->by_id[i]; e && !ret; e = e->next_by_id)
			ret = fn(e, arg);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

struct id_entry *id_table_get(struct id_table *t, uint64_t id)
{
	pthread_mutex_lock(&t->lock);
	struct id_entry *e = find_locked(t, id);

	if (e)
		e->refs++;
	pthread_mutex_unlock(&t->lock);
	return e;
}

void id_table_put(struct id_table *t, struct id_entry *e)
{
	pthread_mutex_lock(&t->lock);
	bool last = --e->refs == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		t->type->release(e);
}

/* Takes e out of the table (its id dies with it) and drops the table's
 * reference, with the lock held. Returns e if that was the last, for the
 * caller to release once the lock is dropped, else NULL. */
static struct id_entry *remove_locked(struct id_table *t, struct id_entry *e)
{
	unlink_entry(t, e);
	t->count--;
	return --e->refs == 0 ? e : NULL;
}

int id_table_drop(struct id_table *t, uint64_t id, uint64_t n)
{
	struct id_entry *dead = NULL;

	pthread_mutex_lock(&t->lock);
	struct id_entry *e = find_locked(t, id);

	if (e && !e->pinned) {
		e->guest_refs = n < e->guest_refs ? e->guest_refs - n : 0;
		if (e->guest_refs == 0)
			dead = remove_locked(t, e);
	}
	int ret = e ? 0 : -ENOENT;

	pthread_mutex_unlock(&t->lock);
	if (dead)
		t->type->release(dead);
	return ret;
}

void id_table_reset(struct id_table *t)
{
	struct id_entry *dead = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->buckets; i++) {
		for (struct id_entry *e = t->by_id[i], *next; e; e = next) {
			next = e->next_by_id;
			if (e->pinned) {
				e->guest_refs = 1;
			} else if (remove_locked(t, e)) {
				/* Chained through next_by_id (no longer
				 * used) to release after unlocking;
				 * requests in flight release the rest. */
				e->next_by_id = dead;
				dead = e;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
	while (dead) {
		struct id_entry *next = dead->next_by_id;

		t->type->release(dead);
		dead = next;
	}
}

size_t id_table_count(struct id_table *t)
{
	pthread_mutex_lock(&t->lock);
	size_t count = t->count;
	pthread_mutex_unlock(&t->lock);
	return count;
}
