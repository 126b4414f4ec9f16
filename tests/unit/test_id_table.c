/* Unit tests for fs/id_table: ids, growth, caps, references, keys, pinned
 * entries, hostile ids and many threads at once. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "fs/id_table.h"

#define TOP_BIT (1ULL << 63)

struct obj {
	uint64_t key;
	struct id_entry entry; /* not first: the owner is found by offset */
};

static atomic_int released;

static void release(struct id_entry *e)
{
	atomic_fetch_add(&released, 1);
	free(ID_ENTRY_OWNER(e, struct obj, entry));
}

static bool has_key(struct id_entry *e, const void *key)
{
	return ID_ENTRY_OWNER(e, struct obj, entry)->key ==
	       *(const uint64_t *)key;
}

static const struct id_table_type plain = { .release = release };
static const struct id_table_type keyed = { .release = release,
					    .has_key = has_key };

static struct obj *new_obj(uint64_t key)
{
	struct obj *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	o->key = key;
	return o;
}

/* Adds a fresh object with no key; returns its id. */
static uint64_t add(struct id_table *t, uint64_t id_bits)
{
	uint64_t id = 0;

	assert_int_equal(id_table_add(t, &new_obj(0)->entry, 0, NULL, id_bits,
				      &id), 0);
	return id;
}

/* Adds key: 0 when a fresh object went in, 1 when key's was there. */
static int add_key(struct id_table *t, uint64_t key, uint64_t *id)
{
	struct obj *o = new_obj(key);
	int ret = id_table_add(t, &o->entry, id_table_hash(key), &key, 0, id);

	if (ret != 0)
		free(o);
	return ret;
}

/* Adds key without an object of its own, as when allocating one failed. */
static int add_key_without_object(struct id_table *t, uint64_t key,
				  uint64_t *id)
{
	return id_table_add(t, NULL, id_table_hash(key), &key, 0, id);
}

static bool known(struct id_table *t, uint64_t id)
{
	struct id_entry *e = id_table_get(t, id);

	if (e)
		id_table_put(t, e);
	return e != NULL;
}

static int setup(void **state)
{
	(void)state;
	atomic_store(&released, 0);
	return 0;
}

/* Ids start at 1, grow, carry the caller's bits and are never reused. */
static void ids_grow_and_are_never_reused(void **state)
{
	(void)state;
	struct id_table t;

	assert_int_equal(id_table_init(&t, &plain, 16), 0);
	assert_int_equal(add(&t, 0), ID_TABLE_FIRST_ID);
	assert_int_equal(add(&t, 0), 2);
	assert_int_equal(id_table_drop(&t, 2, 1), 0);
	assert_int_equal(add(&t, TOP_BIT), 3 | TOP_BIT);
	assert_int_equal(add(&t, 0), 4);
	assert_false(known(&t, 3));
	assert_true(known(&t, 3 | TOP_BIT));
	assert_int_equal(id_table_count(&t), 3);
	id_table_fini(&t);
	assert_int_equal(atomic_load(&released), 4);
}

/* Far more entries than the first chains: all found, before and after
 * half of them go. */
static void grows_and_finds_everything(void **state)
{
	(void)state;
	enum { N = 5000 };
	struct id_table t;

	assert_int_equal(id_table_init(&t, &keyed, N), 0);
	for (uint64_t i = 0; i < N; i++) {
		uint64_t id;

		assert_int_equal(add_key(&t, i * 4096, &id), 0);
		assert_int_equal(id, i + 1);
	}
	assert_true(t.buckets >= N);
	assert_int_equal(id_table_count(&t), N);
	for (uint64_t id = 1; id <= N; id += 2)
		assert_int_equal(id_table_drop(&t, id, 1), 0);
	for (uint64_t i = 0; i < N; i++) {
		uint64_t id;

		assert_int_equal(known(&t, i + 1), i % 2 == 1);
		/* Dropped keys come back under new ids. */
		assert_int_equal(add_key(&t, i * 4096, &id), i % 2 == 1);
		assert_int_equal(id, i % 2 == 1 ? i + 1 : N + 1 + i / 2);
	}
	assert_int_equal(id_table_count(&t), N);
	id_table_fini(&t);
	assert_int_equal(atomic_load(&released), N + N / 2);
}

/* Past max entries, -ENFILE; what leaves makes room; a known key still
 * counts in a full table. */
static void caps_give_enfile(void **state)
{
	(void)state;
	struct id_table t;
	uint64_t id, first;

	assert_int_equal(id_table_init(&t, &keyed, 3), 0);
	assert_int_equal(add_key(&t, 10, &first), 0);
	assert_int_equal(add_key(&t, 11, &id), 0);
	assert_int_equal(add_key(&t, 12, &id), 0);
	assert_int_equal(add_key(&t, 13, &id), -ENFILE);
	assert_int_equal(add_key_without_object(&t, 13, &id), -ENFILE);
	assert_int_equal(add_key(&t, 10, &id), 1);
	assert_int_equal(id, first);
	assert_int_equal(id_table_count(&t), 3);
	assert_int_equal(id_table_drop(&t, first, 2), 0);
	assert_int_equal(add_key(&t, 13, &id), 0);
	assert_int_equal(id, 4);
	id_table_fini(&t);
	assert_int_equal(atomic_load(&released), 4);
}

/* A known key needs no new object; an unknown one does. */
static void keys_count_guest_references(void **state)
{
	(void)state;
	struct id_table t;
	uint64_t key = 7, id, again;

	assert_int_equal(id_table_init(&t, &keyed, 8), 0);
	assert_int_equal(add_key_without_object(&t, key, &id), -ENOMEM);
	assert_int_equal(add_key(&t, key, &id), 0);
	assert_int_equal(add_key_without_object(&t, key, &again), 1);
	assert_int_equal(again, id);
	assert_int_equal(add_key(&t, key, &again), 1);
	/* Three lookups: two drops leave it, the third takes it out. */
	assert_int_equal(id_table_drop(&t, id, 1), 0);
	assert_int_equal(id_table_drop(&t, id, 1), 0);
	assert_true(known(&t, id));
	assert_int_equal(id_table_drop(&t, id, 1), 0);
	assert_false(known(&t, id));
	assert_int_equal(atomic_load(&released), 1);
	assert_int_equal(id_table_count(&t), 0);
	id_table_fini(&t);
}

/* An entry out of the table lives until the last request puts it. */
static void released_when_the_last_reference_goes(void **state)
{
	(void)state;
	struct id_table t;

	assert_int_equal(id_table_init(&t, &plain, 8), 0);
	uint64_t id = add(&t, 0);
	struct id_entry *a = id_table_get(&t, id), *b = id_table_get(&t, id);

	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_int_equal(id_table_drop(&t, id, UINT64_MAX), 0);
	assert_null(id_table_get(&t, id));
	assert_int_equal(id_table_drop(&t, id, 1), -ENOENT);
	assert_int_equal(id_table_count(&t), 0);
	id_table_put(&t, a);
	assert_int_equal(atomic_load(&released), 0);
	assert_int_equal(a->id, id); /* ASan: still allocated */
	id_table_put(&t, b);
	assert_int_equal(atomic_load(&released), 1);
	id_table_fini(&t);
}

/* A pinned entry outlives every drop and reset, back to one reference;
 * the rest go at reset, those still in use when put. */
static void reset_keeps_only_pinned(void **state)
{
	(void)state;
	struct id_table t;
	struct obj *root = new_obj(1);
	uint64_t key = 1, id;

	assert_int_equal(id_table_init(&t, &keyed, 100), 0);
	root->entry.pinned = true;
	assert_int_equal(id_table_add(&t, &root->entry, id_table_hash(key), &key,
				      0, &id), 0);
	assert_int_equal(id, ID_TABLE_FIRST_ID);
	assert_int_equal(add_key(&t, key, &id), 1);
	for (uint64_t k = 2; k < 80; k++)
		assert_int_equal(add_key(&t, k, &id), 0);
	assert_int_equal(id_table_drop(&t, ID_TABLE_FIRST_ID, UINT64_MAX), 0);
	assert_true(known(&t, ID_TABLE_FIRST_ID));
	struct id_entry *held = id_table_get(&t, id);

	id_table_reset(&t);
	assert_int_equal(id_table_count(&t), 1);
	assert_int_equal(root->entry.guest_refs, 1);
	assert_int_equal(atomic_load(&released), 77);
	assert_false(known(&t, id));
	id_table_put(&t, held);
	assert_int_equal(atomic_load(&released), 78);
	/* The keys are free again, under new ids. */
	assert_int_equal(add_key(&t, 2, &id), 0);
	assert_int_equal(id, 80);
	id_table_fini(&t);
	assert_int_equal(atomic_load(&released), 80);
}

/* Whatever id the guest names, nothing outside the table is touched and
 * nothing that left it is found. */
static void hostile_ids_find_nothing(void **state)
{
	(void)state;
	static const uint64_t bogus[] = { 0, 3, 4, 5, UINT64_MAX, TOP_BIT,
					  TOP_BIT | 1, TOP_BIT - 1, 1ULL << 32 };
	struct id_table t;

	assert_int_equal(id_table_init(&t, &plain, 8), 0);
	add(&t, 0);
	add(&t, 0);
	assert_int_equal(id_table_drop(&t, add(&t, 0), 1), 0);
	for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++) {
		assert_null(id_table_get(&t, bogus[i]));
		assert_int_equal(id_table_drop(&t, bogus[i], 1), -ENOENT);
	}
	assert_int_equal(id_table_count(&t), 2);
	id_table_fini(&t);
}

#define THREADS 4
#define ROUNDS 2000
#define KEYS 16

struct racer {
	struct id_table *t;
	unsigned int seed;
	uint64_t added; /* entries it put in */
	uint64_t held;  /* guest references it still holds */
};

/* Adds keys, uses and drops them, in an order of its own. */
/* Entries put back under ids of their own (a snapshot's): found, their
 * references as given, the ids handed out after above them, every id,
 * key or count that cannot be one refused. */
static void entries_go_in_under_given_ids(void **state)
{
	(void)state;
	struct id_table t;
	uint64_t key = 7, other = 8;
	struct obj *o = new_obj(key);

	assert_int_equal(id_table_init(&t, &keyed, 4), 0);
	assert_int_equal(id_table_add_as(&t, &o->entry, 40 | TOP_BIT, TOP_BIT,
					 id_table_hash(key), &key, 3), 0);
	assert_true(known(&t, 40 | TOP_BIT));
	struct id_entry *e = id_table_find_key(&t, id_table_hash(key), &key);
	assert_ptr_equal(e, &o->entry);
	assert_int_equal(e->guest_refs, 3);
	id_table_put(&t, e);
	assert_int_equal(id_table_next_id(&t), 41);
	uint64_t id;
	assert_int_equal(add_key(&t, 11, &id), 0);
	assert_int_equal(id, 41);

	struct obj *x = new_obj(other);
	uint64_t h = id_table_hash(other);
	assert_int_equal(id_table_add_as(&t, &x->entry, 41, 0, h, &other, 1), -EEXIST);
	assert_int_equal(id_table_add_as(&t, &x->entry, 50, 0, id_table_hash(key),
					 &key, 1), -EEXIST);
	assert_int_equal(id_table_add_as(&t, &x->entry, 0, 0, h, &other, 1), -EINVAL);
	assert_int_equal(id_table_add_as(&t, &x->entry, TOP_BIT, TOP_BIT, h,
					 &other, 1), -EINVAL);
	assert_int_equal(id_table_add_as(&t, &x->entry, ID_TABLE_MAX_ID, 0, h,
					 &other, 1), -EINVAL);
	assert_int_equal(id_table_add_as(&t, &x->entry, 50, 0, h, &other, 0), -EINVAL);
	assert_null(id_table_find_key(&t, h, &other));
	/* Without a key to check, one already there is no obstacle. */
	assert_int_equal(id_table_add_as(&t, &x->entry, 30, 0, id_table_hash(key),
					 NULL, 1), 0);
	assert_int_equal(id_table_next_id(&t), 42);
	assert_int_equal(id_table_skip_to(&t, 100), 0);
	assert_int_equal(id_table_skip_to(&t, 60), 0);
	assert_int_equal(id_table_skip_to(&t, ID_TABLE_MAX_ID + 1), -EINVAL);
	assert_int_equal(add_key(&t, 12, &id), 0);
	assert_int_equal(id, 100);
	struct obj *y = new_obj(9);
	assert_int_equal(id_table_add_as(&t, &y->entry, 5, 0, 0, NULL, 1), -ENFILE);
	free(y);
	id_table_fini(&t);
	assert_int_equal(atomic_load(&released), 4);
}

static int count_entry(struct id_entry *e, void *arg)
{
	(void)e;
	return ++*(int *)arg == 100;
}

/* Every entry is visited, until the visitor says stop. */
static void each_visits_every_entry(void **state)
{
	(void)state;
	struct id_table t;
	int seen = 0;

	assert_int_equal(id_table_init(&t, &plain, 100), 0);
	for (int i = 0; i < 70; i++)
		add(&t, 0);
	assert_int_equal(id_table_each(&t, count_entry, &seen), 0);
	assert_int_equal(seen, 70);
	seen = 97;
	assert_int_equal(id_table_each(&t, count_entry, &seen), 1);
	assert_int_equal(seen, 100);
	id_table_fini(&t);
}

static void *race(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < ROUNDS; i++) {
		uint64_t key = (uint64_t)rand_r(&r->seed) % KEYS, id;
		struct obj *o = new_obj(key);
		int ret = id_table_add(r->t, &o->entry, id_table_hash(key), &key,
				       0, &id);

		if (ret != 0)
			free(o);
		if (ret < 0)
			continue;
		r->added += ret == 0;
		struct id_entry *e = id_table_get(r->t, id);

		/* The guest reference just added keeps it in: each drop
		 * gives back one its own thread added. */
		if (!e || ID_ENTRY_OWNER(e, struct obj, entry)->key != key)
			return "lost";
		if (rand_r(&r->seed) % 2)
			id_table_drop(r->t, id, 1);
		else
			r->held++;
		id_table_put(r->t, e);
	}
	return NULL;
}

/* Many threads on one table: every entry is found while held and
 * released once, and the guest references add up. */
static void threads_share_a_table(void **state)
{
	(void)state;
	struct id_table t;
	struct racer r[THREADS];
	pthread_t th[THREADS];
	uint64_t added = 0, held = 0, refs = 0;

	/* Room for half the keys: some adds find the table full. */
	assert_int_equal(id_table_init(&t, &keyed, KEYS / 2), 0);
	for (int i = 0; i < THREADS; i++) {
		r[i] = (struct racer){ .t = &t, .seed = (unsigned int)i + 1 };
		assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *ret;

		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
		added += r[i].added;
		held += r[i].held;
	}
	for (size_t b = 0; b < t.buckets; b++)
		for (struct id_entry *e = t.by_id[b]; e; e = e->next_by_id)
			refs += e->guest_refs;
	assert_int_equal(refs, held);
	id_table_reset(&t);
	assert_int_equal(id_table_count(&t), 0);
	id_table_fini(&t);
	assert_int_equal(atomic_load(&released), added);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(ids_grow_and_are_never_reused, setup),
		cmocka_unit_test_setup(grows_and_finds_everything, setup),
		cmocka_unit_test_setup(caps_give_enfile, setup),
		cmocka_unit_test_setup(keys_count_guest_references, setup),
		cmocka_unit_test_setup(released_when_the_last_reference_goes,
				       setup),
		cmocka_unit_test_setup(reset_keeps_only_pinned, setup),
		cmocka_unit_test_setup(hostile_ids_find_nothing, setup),
		cmocka_unit_test_setup(entries_go_in_under_given_ids, setup),
		cmocka_unit_test_setup(each_visits_every_entry, setup),
		cmocka_unit_test_setup(threads_share_a_table, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
