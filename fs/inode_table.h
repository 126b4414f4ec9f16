/* Inodes the guest knows: host files by (st_dev, st_ino) and by node id. */
#ifndef FSVM_INODE_TABLE_H
#define FSVM_INODE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/host_fs.h"
#include "fs/id_table.h"

/* Set in the node id of an inode on a pseudo file system: the guest sees
 * it (a mount point, as an empty directory it cannot open) and nothing in
 * it, and a request can tell so from its node id alone. */
#define INODE_SEALED (1ULL << 63)

/* One host file the guest has looked up. fd, node id and type never change
 * while a caller holds a reference from inode_get(). A stale inode (fd -1)
 * is a node id a restored snapshot gave back whose file is gone: the guest
 * can only forget it, and no lookup finds it by (dev, ino). */
struct inode {
	/* Its id is the node id, its guest references the lookup count. */
	struct id_entry entry;
	dev_t dev;
	ino_t ino;
	int fd;          /* O_PATH|O_NOFOLLOW: names the file, opens nothing */
	mode_t type;     /* S_IFMT bits */
	enum host_fs_kind kind;
};

struct inode_table {
	struct id_table ids; /* keyed by (dev, ino) */
	struct inode *root;  /* pinned */
};

/* Makes root_fd (O_PATH, taken over once this succeeds; on a file system
 * of the given kind) node id 1, in a table of at most max inodes, root
 * included. Returns 0 or -errno. */
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

/* Puts back an inode a snapshot held: the file open at fd (as for
 * inode_table_add_lookup, taken over: closed on failure), or a stale
 * inode for fd -1 (st gives only the type then), under node id nodeid
 * with nlookup guest references. Returns 0, -EEXIST when the node id or
 * (but for a stale inode) the file is known, -ENFILE, -EINVAL for a node
 * id no lookup could have made, or -ENOMEM. */
int inode_table_restore(struct inode_table *t, uint64_t nodeid,
			uint64_t nlookup, int fd, const struct stat *st,
			enum host_fs_kind kind);

/* The node id of the inode of the file with stat *st, or 0. */
uint64_t inode_table_find(struct inode_table *t, const struct stat *st);

/* The guest drops nlookup references; at zero the inode goes (not root).
 * Unknown node ids are ignored: FORGET has no reply to carry an error. */
void inode_table_forget(struct inode_table *t, uint64_t nodeid,
			uint64_t nlookup);

/* Forgets every inode but root, as at the end of a FUSE session. */
void inode_table_reset(struct inode_table *t);

/* Inodes in the table, root included. */
size_t inode_table_count(struct inode_table *t);

#endif
