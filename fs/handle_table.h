/* Open files and directories of the guest, found by FUSE file handle (fh). */
#ifndef FSVM_HANDLE_TABLE_H
#define FSVM_HANDLE_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/host_fs.h"
#include "fs/id_table.h"

/* An open file. A stale handle (fd -1) is one a restored snapshot gave
 * back whose file is gone: the guest can only release it. */
struct handle {
	struct id_entry entry; /* its id is the fh */
	int fd;
	int flags;     /* fd's open flags, to open it again (a snapshot) */
	bool writable; /* the guest opened it for writing */
	bool is_dir;
	enum host_fs_kind kind; /* of the file system the file is on */
	/* Directory reads seek the shared fd and then read it: one at a time. */
	pthread_mutex_t dir_lock;
};

struct handle_table {
	struct id_table ids;
};

/* A table of at most max handles. */
int handle_table_init(struct handle_table *t, size_t max);
/* Closes every handle; nobody may hold a reference any more. */
void handle_table_fini(struct handle_table *t);

/* Files fd (taken over: closed on failure; on a file system of the given
 * kind), opened with flags, under a new handle, returned in *fh: writable
 * if flags open it for writing, a directory's with O_DIRECTORY. Returns 0,
 * -ENFILE when the table is full, or another -errno. */
int handle_table_add(struct handle_table *t, int fd, int flags,
		     enum host_fs_kind kind, uint64_t *fh);

/* Puts back a handle a snapshot held, as handle_table_add does but under
 * fh; fd -1 makes it stale. Returns 0, -EEXIST when fh is known, -ENFILE,
 * -EINVAL for an fh no open could have made, or -ENOMEM. */
int handle_table_restore(struct handle_table *t, uint64_t fh, int fd,
			 int flags, enum host_fs_kind kind);

/* Takes a reference on the handle fh, or returns NULL. */
struct handle *handle_get(struct handle_table *t, uint64_t fh);
void handle_put(struct handle_table *t, struct handle *h);

/* Takes fh out of the table; its fd closes once requests in flight are
 * done with it. Returns 0 or -EBADF for an unknown fh. */
int handle_table_remove(struct handle_table *t, uint64_t fh);

/* Closes every handle, as at the end of a FUSE session. */
void handle_table_reset(struct handle_table *t);

size_t handle_table_count(struct handle_table *t);

#endif
