/* Inodes the guest knows: host files by (st_dev, st_ino) and by node id. */
#ifndef FSVM_INODE_TABLE_H
#define FSVM_INODE_TABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/host_fs.h"

/* Set in the node id of an inode on a pseudo file system: the guest sees
 * it (a mount point, as an empty directory it cannot open) and nothing in
 * it, and a request can tell so from its node id alone. */
#define INODE_SEALED (1ULL << 63)

/* One host file the guest has looked up. fd, nodeid and type never change
 * while a caller holds a reference from inode_get(). */
struct inode {
	uint64_t nodeid;
	dev_t dev;
	ino_t ino;
	int fd;          /* O_PATH|O_NOFOLLOW: names the file, opens nothing */
	mode_t type;     /* S_IFMT bits */
	enum host_fs_kind kind;
	uint64_t nlookup; /* the guest's references (FUSE lookup count) */
	uint64_t refs;   /* the table's own plus requests in flight */
	struct inode *next_by_id;
	struct inode *next_by_key;
};

struct inode_table {
	pthread_mutex_t lock;
	struct inode **by_id;  /* hash chains by node id */
	struct inode **by_key; /* hash chains by (dev, ino) */
	size_t buckets;        /* a power of two, shared by both */
	size_t count;
	size_t max;            /* a new inode past this many: -ENFILE */
	uint64_t next_nodeid;  /* grows only: node ids are never reused */
	struct inode *root;
};

/* Makes root_fd (O_PATH, taken over; on a file system of the given kind)
 * node id 1, in a table of at most max inodes. Returns 0 or -errno. */
int inode_table_init(struct inode_table *t, int root_fd,
		     const struct stat *root_st, enum host_fs_kind kind,
		     size_t max);
/* Closes every inode's fd; nobody may hold a reference any more. */
void inode_table_fini(struct inode_table *t);

/* Takes a reference on the inode with this node id, or returns NULL. */
struct inode *inode_get(struct inode_table *t, uint64_t nodeid);
void inode_put(struct inode_table *t, struct inode *inode);

/* Counts one more guest lookup of the file open at fd (O_PATH|O_NOFOLLOW,
 * taken over: closed if the file already has an inode) on a file system of
 * the given kind, and returns its node id in *nodeid. Returns 0, -ENFILE
 * when the table is full, or another -errno. */
int inode_table_add_lookup(struct inode_table *t, int fd,
			   const struct stat *st, enum host_fs_kind kind,
			   uint64_t *nodeid);

/* The guest drops nlookup references; at zero the inode goes (not root).
 * Unknown node ids are ignored: FORGET has no reply to carry an error. */
void inode_table_forget(struct inode_table *t, uint64_t nodeid,
			uint64_t nlookup);

/* Forgets every inode but root, as at the end of a FUSE session. */
void inode_table_reset(struct inode_table *t);

/* Inodes in the table, root included. */
size_t inode_table_count(struct inode_table *t);

#endif
