/* What the guest names by a 64-bit id the table hands out (inodes, open
 * handles): found by id and, in a table with keys, by a key of the
 * object's own; capped; freed once neither the guest nor a request in
 * flight holds it. One mutex per table guards it and its entries. */
#ifndef FSVM_ID_TABLE_H
#define FSVM_ID_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first id a table hands out; ids only grow, so none is reused. */
#define ID_TABLE_FIRST_ID 1
/* Ids (less their id_bits) a table counts to: far more than a session
 * makes, and far below any id_bits, so a restored id can never bring the
 * count up to them. */
#define ID_TABLE_MAX_ID (1ULL << 48)

/* Embedded in each object the table holds. The caller sets pinned before
 * id_table_add(); every other field is the table's. */
struct id_entry {
	uint64_t id;
	/* The guest's references (an inode's FUSE lookup count, one for an
	 * open handle): at zero the entry leaves the table. */
	uint64_t guest_refs;
	uint64_t refs;       /* the table's own plus requests in flight */
	uint64_t key_hash;   /* in a table with keys */
	bool pinned;         /* never leaves before fini (the root inode) */
	struct id_entry *next_by_id;
	struct id_entry *next_by_key;
};

/* The object of the given type whose member the entry e is (NULL for a NULL
 * e): how a typed table turns what it gets back into its own objects. */
#define ID_ENTRY_OWNER(e, type, member) \
	((type *)id_entry_owner((e), offsetof(type, member)))

static inline void *id_entry_owner(struct id_entry *e, size_t offset)
{
	return e ? (char *)e - offset : NULL;
}

struct id_table_type {
	/* Frees an entry nobody holds any more; called without the lock. */
	void (*release)(struct id_entry *e);
	/* Whether e is the object key names, with the lock held; NULL for a
	 * table without keys. */
	bool (*has_key)(struct id_entry *e, const void *key);
};

struct id_table {
	pthread_mutex_t lock;
	const struct id_table_type *type;
	struct id_entry **by_id;  /* hash chains by id */
	struct id_entry **by_key; /* hash chains by key, NULL without keys */
	size_t buckets;           /* a power of two, shared by both */
	size_t count;
	size_t max;               /* a new entry past this many: -ENFILE */
	uint64_t next_id;
};

/* A table of at most max entries. Returns 0 or -ENOMEM. */
int id_table_init(struct id_table *t, const struct id_table_type *type,
		  size_t max);
/* Releases every entry; nobody may hold a reference any more. */
void id_table_fini(struct id_table *t);

/* Spreads sequential numbers over the chains; for hashing keys. */
uint64_t id_table_hash(uint64_t x);

/* Adds e under a new id, the next one with id_bits set (bits above any id
 * the table hands out), holding one guest reference. In a table with keys
 * an entry that already has the key (hashing to key_hash) gains a guest
 * reference instead. Either way *id is the entry's id. Returns 0 when e
 * went in (the table's from then on), 1 when the key's entry was there,
 * -ENFILE when the table is full or -ENOMEM for a NULL e; in all but the
 * first case e stays the caller's. */
int id_table_add(struct id_table *t, struct id_entry *e, uint64_t key_hash,
		 const void *key, uint64_t id_bits, uint64_t *id);

/* Adds e under the given id (one the guest already holds: a restored
 * snapshot's) with guest_refs references, the key (hashing to key_hash)
 * checked unless NULL. Ids handed out later are above id's bits outside
 * id_bits. Returns 0 (e is the table's), -EEXIST when the id or key is
 * known, -ENFILE when the table is full, or -EINVAL for an id outside
 * [ID_TABLE_FIRST_ID, ID_TABLE_MAX_ID) or no references. */
int id_table_add_as(struct id_table *t, struct id_entry *e, uint64_t id,
		    uint64_t id_bits, uint64_t key_hash, const void *key,
		    uint64_t guest_refs);

/* Takes a reference on the entry with this key, or returns NULL. */
struct id_entry *id_table_find_key(struct id_table *t, uint64_t key_hash,
				   const void *key);

/* The next id the table would hand out (less id_bits), and a way to
 * start it later: a snapshot keeps ids of forgotten entries from coming
 * back. id_table_skip_to never moves it down; it returns -EINVAL past
 * ID_TABLE_MAX_ID. */
uint64_t id_table_next_id(struct id_table *t);
int id_table_skip_to(struct id_table *t, uint64_t next_id);

/* Calls fn on every entry, with the lock held (fn may not use the table),
 * until one returns non-zero, which is returned. */
int id_table_each(struct id_table *t, int (*fn)(struct id_entry *e, void *arg),
		  void *arg);

/* Takes a reference on the entry with this id, or returns NULL. */
struct id_entry *id_table_get(struct id_table *t, uint64_t id);
void id_table_put(struct id_table *t, struct id_entry *e);

/* The guest drops n references to id; at zero the entry leaves the table
 * (not a pinned one) and is released once requests in flight put it.
 * Returns 0 or -ENOENT for an unknown id. */
int id_table_drop(struct id_table *t, uint64_t id, uint64_t n);

/* Every entry but the pinned ones leaves, as at the end of a FUSE
 * session; the pinned are back to one guest reference. */
void id_table_reset(struct id_table *t);

size_t id_table_count(struct id_table *t);

#endif
