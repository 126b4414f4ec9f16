/* A FUSE server's state saved into a blob and restored from one. */
#include "fs/fuse_state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"

#define STATE_MAGIC "fsvmFUSE"
#define STATE_MAGIC_LEN 8
#define STATE_VERSION 1
#define HEADER_SIZE 48
#define COUNTS_AT 40 /* in the header: inodes, then handles */
#define INODE_SIZE 44 /* before its path */
#define HANDLE_SIZE 20

#define SESSION_INITIALIZED 1u
#define INODE_STALE 1u

/* Reopening a handle never creates, empties or insists on a new file. */
#define REOPEN_DROPPED (O_CREAT | O_TRUNC | O_EXCL)
/* What host_open_flags() (fs/fuse_file.c) may leave in a file's flags. */
#define FILE_FLAGS (O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | \
		    O_NOATIME | O_LARGEFILE)
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY)

/* --- save --- */

struct writer {
	unsigned char *buf;
	size_t len, cap;
	int err;
};

static void put(struct writer *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (n > w->cap - w->len) {
		size_t cap = w->cap ? w->cap : 4096;

		while (n > cap - w->len)
			cap *= 2;
		unsigned char *buf = realloc(w->buf, cap);

		if (!buf) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = buf;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void store32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(struct writer *w, uint32_t v)
{
	unsigned char b[4];

	store32(b, v);
	put(w, b, sizeof(b));
}

static void put64(struct writer *w, uint64_t v)
{
	put32(w, (uint32_t)v);
	put32(w, (uint32_t)(v >> 32));
}

/* A path a restore takes: relative, made of real names, no NUL. */
static bool path_ok(const char *path, size_t len)
{
	if (len == 0 || len >= PATH_MAX || memchr(path, '\0', len))
		return false;
	for (size_t at = 0; at <= len;) {
		const char *slash = memchr(path + at, '/', len - at);
		size_t n = (slash ? (size_t)(slash - path) : len) - at;

		if (n == 0 || (n == 1 && path[at] == '.') ||
		    (n == 2 && path[at] == '.' && path[at + 1] == '.'))
			return false;
		at += n + 1;
	}
	return true;
}

/* Whether path, opened from the root, is the file with stat *want. */
static bool path_names(const struct fuse_server *srv, const char *path,
		       const struct stat *want)
{
	int fd = confine_open_path(srv->inodes.root->fd, path, O_PATH);
	struct stat st;
	bool same = fd >= 0 && !confine_stat(fd, &st) &&
		    st.st_dev == want->st_dev && st.st_ino == want->st_ino;

	if (fd >= 0)
		close(fd);
	return same;
}

struct save {
	struct fuse_server *srv;
	struct writer *w;
	const char *root; /* the root's path on the host */
	size_t root_len;
	uint32_t inodes, handles; /* records written */
};

/* The path of the inode's file below the root, into path (PATH_MAX
 * bytes); its length, or 0 when it cannot be named there now (unlinked,
 * moved out of the share, renamed meanwhile). The host's own name for
 * the fd says where to look; opening that again says whether it is. */
static size_t path_of(const struct save *s, const struct inode *inode,
		      char *path)
{
	char link[PATH_MAX];
	ssize_t n = readlinkat(s->srv->proc_fd, confine_fd_name(inode->fd).s,
			       link, sizeof(link));

	if (n <= 0 || (size_t)n >= sizeof(link))
		return 0;
	link[n] = '\0';
	const char *rel = link + s->root_len;

	if (s->root_len == 1 ? link[0] != '/'
	    : strncmp(link, s->root, s->root_len) || *rel++ != '/')
		return 0;
	size_t len = strlen(rel);
	struct stat st = { .st_dev = inode->dev, .st_ino = inode->ino };

	if (!path_ok(rel, len) || !path_names(s->srv, rel, &st))
		return 0;
	memcpy(path, rel, len + 1);
	return len;
}

static int save_inode(struct id_entry *e, void *arg)
{
	struct save *s = arg;
	struct inode *inode = ID_ENTRY_OWNER(e, struct inode, entry);
	char path[PATH_MAX];

	if (e->pinned)
		return 0; /* root: the share's own */
	s->inodes++;
	size_t len = inode->fd >= 0 ? path_of(s, inode, path) : 0;

	put64(s->w, e->id);
	put64(s->w, e->guest_refs);
	put64(s->w, (uint64_t)inode->dev);
	put64(s->w, (uint64_t)inode->ino);
	put32(s->w, inode->type);
	put32(s->w, len ? 0 : INODE_STALE);
	put32(s->w, (uint32_t)len);
	put(s->w, path, len);
	return s->w->err;
}

/* A handle's file is named through its inode: the one the guest looked
 * up to open it, found by the file's (dev, ino). */
static int save_handle(struct id_entry *e, void *arg)
{
	struct save *s = arg;
	struct handle *h = ID_ENTRY_OWNER(e, struct handle, entry);
	struct stat st;
	uint64_t nodeid = 0;

	s->handles++;
	if (h->fd >= 0 && !fstat(h->fd, &st))
		nodeid = inode_table_find(&s->srv->inodes, &st);
	put64(s->w, e->id);
	put64(s->w, nodeid);
	put32(s->w, (uint32_t)h->flags);
	return s->w->err;
}

int fuse_server_save_state(struct fuse_server *srv, unsigned char **buf,
			   size_t *len)
{
	struct writer w = { 0 };
	char root[PATH_MAX];
	ssize_t n = readlinkat(srv->proc_fd, confine_fd_name(srv->inodes.root->fd).s,
			       root, sizeof(root));

	if (n <= 0 || (size_t)n >= sizeof(root))
		return n < 0 ? -errno : -ENAMETOOLONG;
	root[n] = '\0';

	struct save s = { .srv = srv, .w = &w, .root = root,
			  .root_len = (size_t)n };
	bool initialized = atomic_load(&srv->initialized);

	put(&w, STATE_MAGIC, STATE_MAGIC_LEN);
	put32(&w, STATE_VERSION);
	put32(&w, initialized ? SESSION_INITIALIZED : 0);
	put64(&w, atomic_load(&srv->flags));
	put64(&w, id_table_next_id(&srv->inodes.ids));
	put64(&w, id_table_next_id(&srv->handles.ids));
	put64(&w, 0); /* the counts, once known */
	id_table_each(&srv->inodes.ids, save_inode, &s);
	id_table_each(&srv->handles.ids, save_handle, &s);
	if (w.err) {
		free(w.buf);
		return w.err;
	}
	store32(w.buf + COUNTS_AT, s.inodes);
	store32(w.buf + COUNTS_AT + 4, s.handles);
	*buf = w.buf;
	*len = w.len;
	return 0;
}

/* --- restore --- */

struct reader {
	const unsigned char *p;
	size_t left;
};

static bool take(struct reader *r, const unsigned char **p, size_t n)
{
	if (n > r->left)
		return false;
	*p = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

struct restore {
	struct fuse_server *srv;
	char *err;
	size_t errlen;
	/* From the header. */
	bool initialized;
	uint64_t flags, next_node, next_fh;
};

static int fail(const struct restore *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Says why in r's line; returns code. */
static int fail(const struct restore *r, int code, const char *fmt, ...)
{
	va_list ap;

	if (r->errlen) {
		va_start(ap, fmt);
		vsnprintf(r->err, r->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* What a table said to a record put back under its id: 0, or the line. */
static int added(const struct restore *r, int err, const char *what,
		 uint64_t id)
{
	if (err == -EEXIST)
		return fail(r, -EBADMSG, "%s %#llx: its id or its file is another's",
			    what, (unsigned long long)id);
	return err ? fail(r, err, "%s %#llx: %s", what, (unsigned long long)id,
			  strerror(-err)) : 0;
}

/* Failures of the host's resources, not of a file: these fail the
 * restore, where anything else only makes the file stale. */
static bool out_of_resources(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM;
}

static bool known_type(uint32_t type)
{
	switch (type) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR: case S_IFBLK:
	case S_IFIFO: case S_IFSOCK:
		return true;
	}
	return false;
}

/* Opens the node's file again by its path and checks it is the one
 * saved (in *st: dev, ino and type), its file system of the kind its node
 * id says. Returns an O_PATH fd (*kind set), -1 for a stale node, or a
 * resource failure. */
static int reopen_node(const struct restore *r, const char *path,
		       const struct stat *st, bool sealed,
		       enum host_fs_kind *kind)
{
	const struct inode *root = r->srv->inodes.root;
	int fd = confine_open_path(root->fd, path, O_PATH);
	struct stat now;

	if (fd < 0)
		return out_of_resources(fd) ? fd : -1;
	int k = confine_stat(fd, &now);

	if (!k)
		k = fuse_file_kind(root->dev, root->kind, fd, &now);
	if (k < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT) ||
	    (k == HOST_FS_PSEUDO) != sealed) {
		close(fd);
		return out_of_resources(k) ? k : -1;
	}
	*kind = (enum host_fs_kind)k;
	return fd;
}

static int restore_inode(struct restore *r, struct reader *in, uint32_t i)
{
	const unsigned char *p, *name;
	char path[PATH_MAX];

	if (!take(in, &p, INODE_SIZE))
		return fail(r, -EBADMSG, "inode %u of the state is cut short", i);
	uint64_t nodeid = le64(p), nlookup = le64(p + 8);
	uint32_t type = le32(p + 32), flags = le32(p + 36), len = le32(p + 40);
	struct stat st = { .st_dev = (dev_t)le64(p + 16),
			   .st_ino = (ino_t)le64(p + 24), .st_mode = type };
	bool sealed = nodeid & INODE_SEALED, stale = flags & INODE_STALE;
	uint64_t counted = nodeid & ~INODE_SEALED;

	if (counted <= FUSE_ROOT_ID || counted >= r->next_node)
		return fail(r, -EBADMSG, "inode %u: node id %#llx is not one a lookup made",
			    i, (unsigned long long)nodeid);
	if (nlookup == 0 || !known_type(type) || (sealed && type != S_IFDIR) ||
	    (flags & ~INODE_STALE))
		return fail(r, -EBADMSG, "node %#llx: lookup count, type or flags out of range",
			    (unsigned long long)nodeid);
	if (stale ? len != 0 : len == 0 || len >= PATH_MAX)
		return fail(r, -EBADMSG, "node %#llx: a path of %u bytes",
			    (unsigned long long)nodeid, len);
	if (!take(in, &name, len))
		return fail(r, -EBADMSG, "node %#llx: its path is cut short",
			    (unsigned long long)nodeid);
	if (!stale && !path_ok((const char *)name, len))
		return fail(r, -EBADMSG, "node %#llx: a path that is not a relative one of names",
			    (unsigned long long)nodeid);
	memcpy(path, name, len);
	path[len] = '\0';

	enum host_fs_kind kind = HOST_FS_PLAIN;
	int fd = stale ? -1 : reopen_node(r, path, &st, sealed, &kind);

	if (fd < -1)
		return fail(r, fd, "node %#llx: %s", (unsigned long long)nodeid,
			    strerror(-fd));
	return added(r, inode_table_restore(&r->srv->inodes, nodeid, nlookup,
					    fd, &st, kind), "node", nodeid);
}

/* The handle's file opened again through its inode, as OPEN and OPENDIR
 * did; -1 for a stale one, or a resource failure. */
static int reopen_handle(const struct restore *r, const struct inode *inode,
			 int flags)
{
	if (!inode || inode->fd < 0)
		return -1;
	int fd = (flags & O_DIRECTORY)
		 ? confine_reopen(r->srv->proc_fd, inode->fd, flags)
		 : fuse_open_regular(r->srv, inode->fd, inode->type, flags);

	return fd >= 0 || out_of_resources(fd) ? fd : -1;
}

/* A handle's flags as a handle's of this file may be, or -1. A sealed
 * node is never open: a handle would list what it hides. */
static int handle_flags(uint32_t saved, const struct inode *inode)
{
	int flags = (int)(saved & ~(uint32_t)REOPEN_DROPPED);
	bool is_dir = flags & O_DIRECTORY;

	if (is_dir ? flags != DIR_FLAGS
	    : (flags & ~FILE_FLAGS) || (flags & O_ACCMODE) == O_ACCMODE)
		return -1;
	if (inode && (inode->type != (is_dir ? S_IFDIR : S_IFREG) ||
		      (inode->entry.id & INODE_SEALED)))
		return -1;
	return flags;
}

static int restore_handle(struct restore *r, struct reader *in, uint32_t i)
{
	const unsigned char *p;

	if (!take(in, &p, HANDLE_SIZE))
		return fail(r, -EBADMSG, "handle %u of the state is cut short", i);
	uint64_t fh = le64(p), nodeid = le64(p + 8);

	if (fh == 0 || fh >= r->next_fh)
		return fail(r, -EBADMSG, "handle %u: fh %#llx is not one an open made",
			    i, (unsigned long long)fh);
	struct inode *inode = nodeid ? inode_get(&r->srv->inodes, nodeid) : NULL;

	if (nodeid && !inode)
		return fail(r, -EBADMSG, "fh %#llx: node %#llx is not in the state",
			    (unsigned long long)fh, (unsigned long long)nodeid);
	int flags = handle_flags(le32(p + 16), inode);
	int fd = flags < 0 ? -1 : reopen_handle(r, inode, flags);
	enum host_fs_kind kind = inode ? inode->kind : HOST_FS_PLAIN;

	if (inode)
		inode_put(&r->srv->inodes, inode);
	if (flags < 0)
		return fail(r, -EBADMSG, "fh %#llx: open flags %#x do not fit its file",
			    (unsigned long long)fh, le32(p + 16));
	if ((flags & O_ACCMODE) != O_RDONLY && r->srv->readonly) {
		if (fd >= 0)
			close(fd);
		return fail(r, -EROFS, "fh %#llx: open for writing on a read-only share",
			    (unsigned long long)fh);
	}
	if (fd < -1)
		return fail(r, fd, "fh %#llx: %s", (unsigned long long)fh,
			    strerror(-fd));
	return added(r, handle_table_restore(&r->srv->handles, fh, fd, flags,
					     kind), "fh", fh);
}

/* The header: the session and how many records follow, checked against
 * what the blob holds and what the server may take. */
static int restore_header(struct restore *r, struct reader *in,
			  uint32_t *inodes, uint32_t *handles)
{
	struct fuse_server *srv = r->srv;
	const unsigned char *p;

	if (!take(in, &p, HEADER_SIZE) || memcmp(p, STATE_MAGIC, STATE_MAGIC_LEN))
		return fail(r, -EBADMSG, "not a FUSE server's state");
	uint32_t version = le32(p + 8), session = le32(p + 12);
	uint64_t flags = le64(p + 16);

	if (version != STATE_VERSION)
		return fail(r, -EBADMSG, "state version %u, not %u", version,
			    STATE_VERSION);
	r->initialized = session & SESSION_INITIALIZED;
	r->flags = flags;
	r->next_node = le64(p + 24);
	r->next_fh = le64(p + 32);
	*inodes = le32(p + COUNTS_AT);
	*handles = le32(p + COUNTS_AT + 4);
	if ((session & ~SESSION_INITIALIZED) ||
	    (!r->initialized && (flags || *inodes || *handles)))
		return fail(r, -EBADMSG, "session %#x with flags %#llx and %u inodes, %u handles",
			    session, (unsigned long long)flags, *inodes, *handles);
	if (r->next_node <= FUSE_ROOT_ID || r->next_node > ID_TABLE_MAX_ID ||
	    r->next_fh < ID_TABLE_FIRST_ID || r->next_fh > ID_TABLE_MAX_ID)
		return fail(r, -EBADMSG, "next node id %#llx, next fh %#llx",
			    (unsigned long long)r->next_node,
			    (unsigned long long)r->next_fh);
	if (flags & ~fuse_flags_offered(srv))
		return fail(r, -EINVAL, "INIT flags %#llx this share does not offer",
			    (unsigned long long)(flags & ~fuse_flags_offered(srv)));
	if ((uint64_t)*inodes * INODE_SIZE + (uint64_t)*handles * HANDLE_SIZE > in->left)
		return fail(r, -EBADMSG, "%u inodes and %u handles in %zu bytes",
			    *inodes, *handles, in->left);
	if (*inodes >= srv->inodes.ids.max || *handles > srv->handles.ids.max)
		return fail(r, -ENFILE, "%u inodes and %u handles, past the share's caps of %zu and %zu",
			    *inodes, *handles, srv->inodes.ids.max - 1,
			    srv->handles.ids.max);
	return 0;
}

/* Back to a fresh server's tables and session. */
static void forget_state(struct fuse_server *srv)
{
	handle_table_reset(&srv->handles);
	inode_table_reset(&srv->inodes);
	atomic_store(&srv->flags, 0);
	atomic_store(&srv->initialized, false);
}

static int restore(struct restore *r, struct reader *in)
{
	struct fuse_server *srv = r->srv;
	uint32_t inodes = 0, handles = 0;
	int err = restore_header(r, in, &inodes, &handles);

	for (uint32_t i = 0; !err && i < inodes; i++)
		err = restore_inode(r, in, i);
	for (uint32_t i = 0; !err && i < handles; i++)
		err = restore_handle(r, in, i);
	if (!err && in->left)
		err = fail(r, -EBADMSG, "%zu bytes after the last record", in->left);
	if (err) {
		forget_state(srv);
		return err;
	}
	/* Ids the old server handed out and the guest forgot stay unused. */
	id_table_skip_to(&srv->inodes.ids, r->next_node);
	id_table_skip_to(&srv->handles.ids, r->next_fh);
	atomic_store(&srv->flags, r->flags);
	atomic_store(&srv->initialized, r->initialized);
	return 0;
}

int fuse_server_restore_state(struct fuse_server *srv, const unsigned char *buf,
			      size_t len, char *err, size_t errlen)
{
	struct restore r = { .srv = srv, .err = err, .errlen = errlen };
	struct reader in = { .p = buf, .left = buf ? len : 0 };

	if (errlen)
		err[0] = '\0';
	pthread_mutex_lock(&srv->session_lock);
	/* Its tables are emptied again if the state is refused. */
	int ret = atomic_load(&srv->initialized) ||
		  inode_table_count(&srv->inodes) != 1 ||
		  handle_table_count(&srv->handles) != 0
		  ? fail(&r, -EBUSY, "the server has a session already")
		  : restore(&r, &in);

	pthread_mutex_unlock(&srv->session_lock);
	return ret;
}

/* --- the DAX window's files --- */

int fuse_server_node_of_fd(struct fuse_server *srv, int fd, uint64_t *nodeid)
{
	struct stat st;

	*nodeid = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	*nodeid = inode_table_find(&srv->inodes, &st);
	return *nodeid ? 0 : -ENOENT;
}

int fuse_server_open_node(struct fuse_server *srv, uint64_t nodeid,
			  bool writable)
{
	if (writable && srv->readonly)
		return -EROFS;
	struct inode *inode = inode_get(&srv->inodes, nodeid);

	if (!inode)
		return -ESTALE;
	/* As SETUPMAPPING takes a file: regular, on a file system whose
	 * pages can be mapped. */
	int fd = inode->fd < 0 ? -ESTALE
		 : inode->kind != HOST_FS_MAPPABLE ? -EOPNOTSUPP
		 : fuse_open_regular(srv, inode->fd, inode->type,
				     writable ? O_RDWR : O_RDONLY);

	inode_put(&srv->inodes, inode);
	return fd;
}

void fuse_server_forget_state(struct fuse_server *srv)
{
	pthread_mutex_lock(&srv->session_lock);
	forget_state(srv);
	pthread_mutex_unlock(&srv->session_lock);
}
