/* What the FUSE server's files share: state, requests, helpers, handlers. */
#ifndef FSVM_FUSE_INTERNAL_H
#define FSVM_FUSE_INTERNAL_H

#include <limits.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs/fuse_server.h"
#include "fs/fuse_wait.h"
#include "fs/handle_table.h"
#include "fs/inode_table.h"

/* The page FUSE counts in (max_pages, the DAX alignment, the block size
 * DAX needs): the guest's and the host's, 4 KiB on x86. */
#define FUSE_PAGE_SHIFT 12
#define FUSE_PAGE_SIZE (1u << FUSE_PAGE_SHIFT)
/* The most that LOOKUP answers per entry and READ moves per request. */
#define FUSE_MAX_PAGES_OFFERED 256
#define FUSE_MAX_TRANSFER (FUSE_MAX_PAGES_OFFERED * FUSE_PAGE_SIZE)
/* DAX mappings are placed and sized in host pages. */
#define FUSE_DAX_ALIGN_LOG2 FUSE_PAGE_SHIFT
#define FUSE_DAX_ALIGN ((uint64_t)FUSE_PAGE_SIZE)
/* Smaller files are not mapped but read, unless the guest caches nothing:
 * Linux brings one in whole with one READ (its readahead window is
 * 128 KiB), where a mapping costs a SETUPMAPPING, a nested page fault per
 * page, a 2 MiB range of the window and a REMOVEMAPPING when the guest lets
 * it go (docs/PERFORMANCE.md). */
#define FUSE_DAX_MIN_FILE_SIZE (128u << 10)

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An INIT flag of protocol 7.39 (Linux 6.6) that Debian 12's UAPI header
 * (7.38) lacks; the value is Linux's include/uapi/linux/fuse.h. */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#endif

struct fuse_server {
	bool readonly;
	enum fuse_cache_mode cache;
	bool writeback;
	bool devices;
	const struct fuse_dax_ops *dax;
	struct fuse_fallback_id fallback_uid, fallback_gid;
	int proc_fd;    /* /proc/self/fd, to reopen O_PATH fds */
	struct inode_table inodes;
	struct handle_table handles;
	struct fuse_waits waits;
	pthread_mutex_t session_lock; /* INIT and DESTROY, one at a time */
	atomic_bool initialized;
	/* The INIT flags both sides agreed on, flags2 in the high half. */
	_Atomic uint64_t flags;
	/* Requests seen per opcode, for fuse_server_count(). */
	_Atomic uint64_t op_counts[FUSE_OPCODE_LIMIT];
};

/* One request as it is run. Everything a handler checks is in the copies
 * here; only bulk data (WRITE, SETXATTR values, forget and mapping lists)
 * is read from the guest's iovecs afterwards. */
struct fuse_req {
	struct fuse_server *srv;
	struct fuse_in_header hdr;
	const struct iovec *in;
	int in_cnt;
	/* The arguments after the header: the first args_copied of their
	 * args_len bytes are copied into args. */
	const unsigned char *args;
	size_t args_len;
	size_t args_copied;
	const struct iovec *out;
	int out_cnt;
	size_t out_room; /* reply bytes that fit after the fuse_out_header */
	const struct fuse_completion *later; /* NULL: nothing may wait */
};

/* A handler's answer for a request a wait now owns: no reply yet. */
#define FUSE_REPLY_LATER INT_MAX

/* Handlers return a negative errno or the bytes of reply they wrote. */
typedef int fuse_handler(struct fuse_req *req);

/* --- helpers (fuse_reply.c, fuse_args.c) --- */

static inline bool fuse_negotiated(const struct fuse_server *srv, uint64_t flag)
{
	return atomic_load_explicit(&srv->flags, memory_order_relaxed) & flag;
}

/* Writes the reply header for result (a negative errno, or payload bytes
 * already in place after the header); returns the reply's length. */
size_t fuse_reply_header(const struct iovec *out, int out_cnt, uint64_t unique,
			 int result);

/* Writes the reply payload; returns len, or -ERANGE if out is too small. */
int fuse_reply(struct fuse_req *req, const void *data, size_t len);

/* Attributes of a file on a file system of the given kind. */
void fuse_fill_attr(const struct fuse_server *srv, enum host_fs_kind kind,
		    const struct stat *st, struct fuse_attr *attr);
/* Seconds the guest may cache names and attributes, by cache mode. */
uint64_t fuse_cache_timeout(const struct fuse_server *srv);

/* The kind of file system the file open at fd (O_PATH is enough; stat
 * *st) is on, found in a directory on device dir_dev and of kind dir_kind:
 * the directory's on the same device (whose fd keeps that file system
 * mounted, so the number cannot have passed to another since), else its
 * own, from fstatfs. Returns the kind or -errno. */
int fuse_file_kind(dev_t dir_dev, enum host_fs_kind dir_kind, int fd,
		   const struct stat *st);

/* Counts a guest lookup of the file open at fd (O_PATH, taken over, with
 * stat *st), found in a directory on device dir_dev and of kind dir_kind,
 * and fills *entry for the reply. A file on a pseudo file system is shown
 * only if it is a directory (a mount point, sealed); anything else there
 * is -ENOENT. Returns 0 or -errno. */
int fuse_add_entry(struct fuse_server *srv, dev_t dir_dev,
		   enum host_fs_kind dir_kind, int fd, const struct stat *st,
		   struct fuse_entry_out *entry);

/* The inode or handle a request names, referenced; put it when done.
 * NULL for an unknown or a stale one (see struct inode, struct handle):
 * a node the guest holds but whose file is gone answers ESTALE. */
struct inode *fuse_inode(struct fuse_req *req, uint64_t nodeid);
struct handle *fuse_handle(struct fuse_req *req, uint64_t fh);
void fuse_put_inode(struct fuse_req *req, struct inode *inode);
void fuse_put_handle(struct fuse_req *req, struct handle *h);
/* What a request answers when fuse_handle() found no fh: -ESTALE for a
 * stale handle, -EBADF for an unknown one. */
int fuse_handle_missing(struct fuse_req *req, uint64_t fh);

/* Opens the regular file the O_PATH fd (of the given S_IFMT type) names
 * for I/O with flags (O_NOATIME dropped where the host refuses it);
 * -EISDIR, -ELOOP or -EACCES for anything else. Returns an fd or -errno. */
int fuse_open_regular(struct fuse_server *srv, int fd, mode_t type, int flags);

/* The INIT flags this server offers: what a guest may agree to. */
uint64_t fuse_flags_offered(const struct fuse_server *srv);

/* mode (permission bits) without the set-ID bits a file of this type
 * (S_IFMT bits), owner and group may not have: set-user-ID for a fallback
 * owner, set-group-ID for a fallback group, on anything but a directory. */
mode_t fuse_drop_fallback_setid(const struct fuse_server *srv, mode_t type,
				mode_t mode, uid_t owner, gid_t group);

/* The mode to make a file the guest asked for with: no set-ID bits until
 * fuse_adopt_new knows its owner and group and puts back those it may
 * keep, so it is never set-ID for an id the user did not map. */
static inline mode_t fuse_mode_to_make(mode_t mode)
{
	return mode & ~(mode_t)(S_ISUID | S_ISGID);
}

/* Gives a file the guest just created the caller's owner and the mode the
 * guest asked for, as the guest's own kernel would have, less the set-ID
 * bits fuse_drop_fallback_setid takes. parent_fd is the directory it was
 * created in, fd names the file (O_PATH or open). *st is
 * its stat, refreshed if anything changed. Returns 0, -EOVERFLOW when the
 * caller's ids have no host ids, or another -errno: then the caller
 * removes the new file again (fuse_unmake). */
int fuse_adopt_new(struct fuse_req *req, int parent_fd, int fd, mode_t mode,
		   struct stat *st);

/* Removes name from dir_fd if it still names the file with stat *st: a new
 * file that could not be finished. */
void fuse_unmake(int dir_fd, const char *name, const struct stat *st);

/* Copies up to len argument bytes from offset off (counted from the end of
 * the header) straight from the guest's iovecs; for bulk data beyond the
 * copied arguments. Returns the bytes copied. */
size_t fuse_args_read(const struct fuse_req *req, size_t off, void *dst,
		      size_t len);

/* Reads a NUL-terminated string of at most max_len bytes (NUL excluded)
 * from the copied arguments at *off, moving *off past it. Returns 0,
 * -ENAMETOOLONG or -EINVAL (missing NUL, empty). */
int fuse_args_string(const struct fuse_req *req, size_t *off, size_t max_len,
		     const char **s);
/* As fuse_args_string, for a name inside a directory: one component, not
 * "." or "..", at most NAME_MAX bytes. */
int fuse_args_name(const struct fuse_req *req, size_t *off, const char **name);
/* A new entry's name and its directory (the request's node, referenced:
 * put it when done). */
int fuse_args_dir_entry(struct fuse_req *req, size_t *off, const char **name,
			struct inode **dir);

/* Clears set-user-ID and (group-executable) set-group-ID from the file open
 * at fd, as the guest's kernel asks when a writer lacks CAP_FSETID and as
 * the host would not do for us, running as root. Returns 0 or -errno. */
int fuse_kill_suidgid(int fd);

/* --- handlers, by area --- */

/* fuse_session.c */
fuse_handler fuse_init, fuse_destroy, fuse_interrupt, fuse_statfs, fuse_syncfs;
/* fuse_entry.c */
fuse_handler fuse_lookup, fuse_forget, fuse_batch_forget, fuse_getattr,
	fuse_setattr, fuse_access, fuse_readlink;
/* fuse_namespace.c */
fuse_handler fuse_mknod, fuse_mkdir, fuse_symlink, fuse_link, fuse_unlink,
	fuse_rmdir, fuse_rename, fuse_rename2;
/* fuse_file.c; fuse_release and fuse_fsync serve directories too */
fuse_handler fuse_open, fuse_create, fuse_tmpfile, fuse_read, fuse_write,
	fuse_release, fuse_fsync, fuse_fallocate, fuse_lseek,
	fuse_copy_file_range;
/* fuse_dir.c */
fuse_handler fuse_opendir, fuse_readdir, fuse_readdirplus;
/* fuse_xattr.c */
fuse_handler fuse_setxattr, fuse_getxattr, fuse_listxattr, fuse_removexattr;
/* fuse_lock.c */
fuse_handler fuse_getlk, fuse_setlk, fuse_setlkw;
/* fuse_dax.c */
fuse_handler fuse_setupmapping, fuse_removemapping;

/* For tests: inodes (root included) and handles the server holds. */
size_t fuse_server_inode_count(struct fuse_server *srv);
size_t fuse_server_handle_count(struct fuse_server *srv);

#endif
