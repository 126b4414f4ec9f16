/* Inodes the guest knows: host files by (st_dev, st_ino) and by node id. */
#include "fs/inode_table.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

_Static_assert(ID_TABLE_FIRST_ID == FUSE_ROOT_ID, "root is the first inode in");

static void release(struct id_entry *e)
{
	struct inode *inode = ID_ENTRY_OWNER(e, struct inode, entry);

	if (inode->fd >= 0)
		close(inode->fd);
	free(inode);
}

/* The key is the file's struct stat. A stale inode names no file: its
 * (dev, ino) may be another file's by now. */
static bool has_key(struct id_entry *e, const void *key)
{
	const struct inode *inode = ID_ENTRY_OWNER(e, struct inode, entry);
	const struct stat *st = key;

	return inode->fd >= 0 && inode->dev == st->st_dev &&
	       inode->ino == st->st_ino;
}

static uint64_t key_hash(const struct stat *st)
{
	return id_table_hash((uint64_t)st->st_ino ^
			     id_table_hash((uint64_t)st->st_dev));
}

static const struct id_table_type inode_type = { .release = release,
						 .has_key = has_key };

int inode_table_init(struct inode_table *t, int root_fd,
		     const struct stat *root_st, enum host_fs_kind kind,
		     size_t max)
{
	struct inode *root = malloc(sizeof(*root));
	uint64_t id;
	int err = root ? id_table_init(&t->ids, &inode_type, max) : -ENOMEM;

	if (err) {
		free(root);
		return err;
	}
	*root = (struct inode){ .entry.pinned = true, .dev = root_st->st_dev,
				.ino = root_st->st_ino, .fd = root_fd,
				.type = root_st->st_mode & S_IFMT, .kind = kind };
	t->root = root;
	/* The first entry in: node id 1. Only a max of 0 leaves it out. */
	err = id_table_add(&t->ids, &root->entry, key_hash(root_st), root_st,
			   0, &id);
	if (err) {
		free(root);
		id_table_fini(&t->ids);
	}
	return err;
}

void inode_table_fini(struct inode_table *t)
{
	id_table_fini(&t->ids);
}

struct inode *inode_get(struct inode_table *t, uint64_t nodeid)
{
	return ID_ENTRY_OWNER(id_table_get(&t->ids, nodeid), struct inode,
			      entry);
}

void inode_put(struct inode_table *t, struct inode *inode)
{
	id_table_put(&t->ids, &inode->entry);
}

int inode_table_add_lookup(struct inode_table *t, int fd,
			   const struct stat *st, enum host_fs_kind kind,
			   uint64_t *nodeid)
{
	/* Allocated before taking the lock so the common hit path costs one
	 * malloc/free pair at worst and the lock stays short. */
	struct inode *fresh = malloc(sizeof(*fresh));

	if (fresh)
		*fresh = (struct inode){ .dev = st->st_dev, .ino = st->st_ino,
					 .fd = fd, .type = st->st_mode & S_IFMT,
					 .kind = kind };
	int ret = id_table_add(&t->ids, fresh ? &fresh->entry : NULL,
			       key_hash(st), st,
			       kind == HOST_FS_PSEUDO ? INODE_SEALED : 0,
			       nodeid);

	if (ret == 0)
		return 0;
	/* Known already (ret 1), or not added. */
	close(fd);
	free(fresh);
	return ret < 0 ? ret : 0;
}

int inode_table_restore(struct inode_table *t, uint64_t nodeid,
			uint64_t nlookup, int fd, const struct stat *st,
			enum host_fs_kind kind)
{
	struct inode *inode = malloc(sizeof(*inode));
	int err = -ENOMEM;

	if (inode) {
		*inode = (struct inode){ .fd = fd, .type = st->st_mode & S_IFMT,
					 .kind = kind };
		if (fd >= 0) {
			inode->dev = st->st_dev;
			inode->ino = st->st_ino;
		}
		err = id_table_add_as(&t->ids, &inode->entry, nodeid,
				      INODE_SEALED, key_hash(st),
				      fd >= 0 ? st : NULL, nlookup);
	}
	if (err) {
		if (fd >= 0)
			close(fd);
		free(inode);
	}
	return err;
}

uint64_t inode_table_find(struct inode_table *t, const struct stat *st)
{
	struct inode *inode = ID_ENTRY_OWNER(id_table_find_key(&t->ids,
							       key_hash(st), st),
					     struct inode, entry);
	uint64_t nodeid = inode ? inode->entry.id : 0;

	if (inode)
		inode_put(t, inode);
	return nodeid;
}

void inode_table_forget(struct inode_table *t, uint64_t nodeid,
			uint64_t nlookup)
{
	id_table_drop(&t->ids, nodeid, nlookup);
}

void inode_table_reset(struct inode_table *t)
{
	id_table_reset(&t->ids);
}

size_t inode_table_count(struct inode_table *t)
{
	return id_table_count(&t->ids);
}
