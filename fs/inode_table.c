/* Inodes the guest knows: host files by (st_dev, st_ino) and by node id. */
#include "fs/inode_table.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define INODE_TABLE_MIN_BUCKETS 64

static size_t hash64(uint64_t x)
{
	/* splitmix64's finaliser: node ids and inode numbers are sequential,
	 * so their low bits alone would crowd a few chains. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t)x;
}

static size_t id_slot(const struct inode_table *t, uint64_t nodeid)
{
	return hash64(nodeid) & (t->buckets - 1);
}

static size_t key_slot(const struct inode_table *t, dev_t dev, ino_t ino)
{
	return hash64((uint64_t)ino ^ hash64((uint64_t)dev)) & (t->buckets - 1);
}

static void link_inode(struct inode_table *t, struct inode *inode)
{
	size_t s = id_slot(t, inode->nodeid);

	inode->next_by_id = t->by_id[s];
	t->by_id[s] = inode;
	s = key_slot(t, inode->dev, inode->ino);
	inode->next_by_key = t->by_key[s];
	t->by_key[s] = inode;
}

static void unlink_inode(struct inode_table *t, struct inode *inode)
{
	struct inode **p = &t->by_id[id_slot(t, inode->nodeid)];

	while (*p != inode)
		p = &(*p)->next_by_id;
	*p = inode->next_by_id;
	p = &t->by_key[key_slot(t, inode->dev, inode->ino)];
	while (*p != inode)
		p = &(*p)->next_by_key;
	*p = inode->next_by_key;
}

/* Doubles the chains once they average more than one inode. Failing to
 * grow only makes chains longer, so the error is dropped. */
static void maybe_grow(struct inode_table *t)
{
	if (t->count <= t->buckets)
		return;
	struct inode **by_id = calloc(t->buckets * 2, sizeof(*by_id));
	struct inode **by_key = calloc(t->buckets * 2, sizeof(*by_key));

	if (!by_id || !by_key) {
		free(by_id);
		free(by_key);
		return;
	}
	struct inode **old = t->by_id;
	size_t old_buckets = t->buckets;

	free(t->by_key);
	t->by_id = by_id;
	t->by_key = by_key;
	t->buckets *= 2;
	for (size_t i = 0; i < old_buckets; i++) {
		for (struct inode *n = old[i], *next; n; n = next) {
			next = n->next_by_id;
			link_inode(t, n);
		}
	}
	free(old);
}

int inode_table_init(struct inode_table *t, int root_fd,
		     const struct stat *root_st, enum host_fs_kind kind,
		     size_t max)
{
	*t = (struct inode_table){ .buckets = INODE_TABLE_MIN_BUCKETS,
				   .max = max, .next_nodeid = FUSE_ROOT_ID + 1 };
	t->by_id = calloc(t->buckets, sizeof(*t->by_id));
	t->by_key = calloc(t->buckets, sizeof(*t->by_key));
	t->root = calloc(1, sizeof(*t->root));
	if (!t->by_id || !t->by_key || !t->root) {
		free(t->by_id);
		free(t->by_key);
		free(t->root);
		return -ENOMEM;
	}
	*t->root = (struct inode){ .nodeid = FUSE_ROOT_ID, .dev = root_st->st_dev,
				   .ino = root_st->st_ino, .fd = root_fd,
				   .type = root_st->st_mode & S_IFMT,
				   .kind = kind, .nlookup = 1, .refs = 1 };
	link_inode(t, t->root);
	t->count = 1;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void inode_table_fini(struct inode_table *t)
{
	for (size_t i = 0; i < t->buckets; i++) {
		for (struct inode *n = t->by_id[i], *next; n; n = next) {
			next = n->next_by_id;
			close(n->fd);
			free(n);
		}
	}
	free(t->by_id);
	free(t->by_key);
	pthread_mutex_destroy(&t->lock);
}

struct inode *inode_get(struct inode_table *t, uint64_t nodeid)
{
	struct inode *n;

	pthread_mutex_lock(&t->lock);
	for (n = t->by_id[id_slot(t, nodeid)]; n; n = n->next_by_id) {
		if (n->nodeid == nodeid) {
			n->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* Drops one reference with the lock held; returns the inode if it is now
 * unused, for the caller to free once the lock is released. */
static struct inode *put_locked(struct inode *inode)
{
	return --inode->refs == 0 ? inode : NULL;
}

static void free_inode(struct inode *inode)
{
	if (inode) {
		close(inode->fd);
		free(inode);
	}
}

void inode_put(struct inode_table *t, struct inode *inode)
{
	pthread_mutex_lock(&t->lock);
	struct inode *dead = put_locked(inode);
	pthread_mutex_unlock(&t->lock);
	free_inode(dead);
}

int inode_table_add_lookup(struct inode_table *t, int fd,
			   const struct stat *st, enum host_fs_kind kind,
			   uint64_t *nodeid)
{
	/* Allocated before taking the lock so the common hit path costs one
	 * malloc/free pair at worst and the lock stays short. */
	struct inode *fresh = malloc(sizeof(*fresh));
	struct inode *n;

	pthread_mutex_lock(&t->lock);
	for (n = t->by_key[key_slot(t, st->st_dev, st->st_ino)]; n;
	     n = n->next_by_key) {
		if (n->dev == st->st_dev && n->ino == st->st_ino)
			break;
	}
	bool full = !n && t->count >= t->max;

	if (n) {
		n->nlookup++;
		*nodeid = n->nodeid;
	} else if (fresh && !full) {
		uint64_t id = t->next_nodeid++;
		*fresh = (struct inode){
			.nodeid = kind == HOST_FS_PSEUDO ? id | INODE_SEALED : id,
			.dev = st->st_dev, .ino = st->st_ino, .fd = fd,
			.type = st->st_mode & S_IFMT, .kind = kind,
			.nlookup = 1, .refs = 1 };
		link_inode(t, fresh);
		t->count++;
		maybe_grow(t);
		*nodeid = fresh->nodeid;
	}
	pthread_mutex_unlock(&t->lock);
	if (n) {
		close(fd);
		free(fresh);
		return 0;
	}
	if (!fresh || full) {
		close(fd);
		free(fresh);
		return full ? -ENFILE : -ENOMEM;
	}
	return 0;
}

/* Takes inode out of the table (its node id dies with it) and drops the
 * table's reference; the lock is held. Returns what put_locked() does. */
static struct inode *remove_locked(struct inode_table *t, struct inode *inode)
{
	unlink_inode(t, inode);
	t->count--;
	return put_locked(inode);
}

void inode_table_forget(struct inode_table *t, uint64_t nodeid,
			uint64_t nlookup)
{
	struct inode *n, *dead = NULL;

	pthread_mutex_lock(&t->lock);
	for (n = t->by_id[id_slot(t, nodeid)]; n; n = n->next_by_id) {
		if (n->nodeid == nodeid)
			break;
	}
	if (n && n != t->root) {
		n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
		if (n->nlookup == 0)
			dead = remove_locked(t, n);
	}
	pthread_mutex_unlock(&t->lock);
	free_inode(dead);
}

void inode_table_reset(struct inode_table *t)
{
	struct inode *dead = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->buckets; i++) {
		for (struct inode *n = t->by_id[i], *next; n; n = next) {
			next = n->next_by_id;
			if (n == t->root || !remove_locked(t, n))
				continue;
			/* Chain the dead through next_by_id (no longer
			 * used) to close their fds after unlocking. */
			n->next_by_id = dead;
			dead = n;
		}
	}
	t->root->nlookup = 1;
	pthread_mutex_unlock(&t->lock);
	while (dead) {
		struct inode *next = dead->next_by_id;

		free_inode(dead);
		dead = next;
	}
}

size_t inode_table_count(struct inode_table *t)
{
	pthread_mutex_lock(&t->lock);
	size_t count = t->count;
	pthread_mutex_unlock(&t->lock);
	return count;
}
