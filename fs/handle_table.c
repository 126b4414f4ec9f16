/* Open files and directories of the guest, found by FUSE file handle (fh). */
#include "fs/handle_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void release(struct id_entry *e)
{
	struct handle *h = ID_ENTRY_OWNER(e, struct handle, entry);

	if (h->fd >= 0)
		close(h->fd);
	pthread_mutex_destroy(&h->dir_lock);
	free(h);
}

static const struct id_table_type handle_type = { .release = release };

int handle_table_init(struct handle_table *t, size_t max)
{
	return id_table_init(&t->ids, &handle_type, max);
}

void handle_table_fini(struct handle_table *t)
{
	id_table_fini(&t->ids);
}

/* A handle for fd, or NULL (fd closed) without memory. */
static struct handle *new_handle(int fd, int flags, enum host_fs_kind kind)
{
	struct handle *h = malloc(sizeof(*h));

	if (!h) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*h = (struct handle){ .fd = fd, .flags = flags,
			      .writable = (flags & O_ACCMODE) != O_RDONLY,
			      .is_dir = flags & O_DIRECTORY, .kind = kind };
	pthread_mutex_init(&h->dir_lock, NULL);
	return h;
}

int handle_table_add(struct handle_table *t, int fd, int flags,
		     enum host_fs_kind kind, uint64_t *fh)
{
	struct handle *h = new_handle(fd, flags, kind);

	if (!h)
		return -ENOMEM;
	int err = id_table_add(&t->ids, &h->entry, 0, NULL, 0, fh);

	if (err)
		release(&h->entry);
	return err;
}

int handle_table_restore(struct handle_table *t, uint64_t fh, int fd,
			 int flags, enum host_fs_kind kind)
{
	struct handle *h = new_handle(fd, flags, kind);

	if (!h)
		return -ENOMEM;
	int err = id_table_add_as(&t->ids, &h->entry, fh, 0, 0, NULL, 1);

	if (err)
		release(&h->entry);
	return err;
}

struct handle *handle_get(struct handle_table *t, uint64_t fh)
{
	return ID_ENTRY_OWNER(id_table_get(&t->ids, fh), struct handle, entry);
}

void handle_put(struct handle_table *t, struct handle *h)
{
	id_table_put(&t->ids, &h->entry);
}

int handle_table_remove(struct handle_table *t, uint64_t fh)
{
	return id_table_drop(&t->ids, fh, 1) ? -EBADF : 0;
}

void handle_table_reset(struct handle_table *t)
{
	id_table_reset(&t->ids);
}

size_t handle_table_count(struct handle_table *t)
{
	return id_table_count(&t->ids);
}
