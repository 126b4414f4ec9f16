/* FUSE server entry: set-up, request decoding, dispatch by opcode, replies. */
#include "fs/fuse_server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"
#include "fs/host_fs.h"
#include "fs/iov.h"

/* The longest arguments a handler reads from the copy: SYMLINK's name and
 * target. Longer arguments are cut here, so their strings fail to parse. */
#define FUSE_ARGS_COPY_MAX (NAME_MAX + 1 + PATH_MAX)

struct fuse_op {
	const char *name;   /* for -v's request counts */
	fuse_handler *run;
	uint32_t arg_min;   /* fixed argument bytes the request must carry */
	uint32_t reply_min; /* fixed reply bytes out must have room for */
	uint32_t copy_max;  /* argument bytes to copy; 0: FUSE_ARGS_COPY_MAX */
	bool modifies;      /* refused with EROFS on a read-only share */
	bool no_reply;      /* the guest expects no answer */
	bool grows;         /* may make a file longer */
	bool sealed_ok;     /* may name a sealed inode (a pseudo mount point) */
};

#define IN(type) .arg_min = sizeof(struct type)
#define OUT(type) .reply_min = sizeof(struct type)
/* An opcode, named once: [FUSE_X] = { OP(X), ... } */
#define OP(op) .name = #op

static const struct fuse_op fuse_ops[] = {
	[FUSE_INIT] = { OP(INIT), .run = fuse_init, .arg_min = 16, OUT(fuse_init_out) },
	[FUSE_DESTROY] = { OP(DESTROY), .run = fuse_destroy },
	[FUSE_INTERRUPT] = { OP(INTERRUPT), .run = fuse_interrupt, IN(fuse_interrupt_in), .no_reply = true },
	[FUSE_STATFS] = { OP(STATFS), .run = fuse_statfs, OUT(fuse_statfs_out) },
	[FUSE_SYNCFS] = { OP(SYNCFS), .run = fuse_syncfs, IN(fuse_syncfs_in) },
	[FUSE_LOOKUP] = { OP(LOOKUP), .run = fuse_lookup, OUT(fuse_entry_out), .sealed_ok = true },
	[FUSE_FORGET] = { OP(FORGET), .run = fuse_forget, IN(fuse_forget_in), .no_reply = true,
			  .sealed_ok = true },
	[FUSE_BATCH_FORGET] = { OP(BATCH_FORGET), .run = fuse_batch_forget, IN(fuse_batch_forget_in),
				.no_reply = true },
	[FUSE_GETATTR] = { OP(GETATTR), .run = fuse_getattr, IN(fuse_getattr_in), OUT(fuse_attr_out),
			   .sealed_ok = true },
	[FUSE_SETATTR] = { OP(SETATTR), .run = fuse_setattr, IN(fuse_setattr_in), OUT(fuse_attr_out),
			   .modifies = true, .grows = true },
	[FUSE_ACCESS] = { OP(ACCESS), .run = fuse_access, IN(fuse_access_in) },
	[FUSE_READLINK] = { OP(READLINK), .run = fuse_readlink },
	[FUSE_MKNOD] = { OP(MKNOD), .run = fuse_mknod, IN(fuse_mknod_in), OUT(fuse_entry_out),
			 .modifies = true },
	[FUSE_MKDIR] = { OP(MKDIR), .run = fuse_mkdir, IN(fuse_mkdir_in), OUT(fuse_entry_out),
			 .modifies = true },
	[FUSE_SYMLINK] = { OP(SYMLINK), .run = fuse_symlink, OUT(fuse_entry_out), .modifies = true },
	[FUSE_LINK] = { OP(LINK), .run = fuse_link, IN(fuse_link_in), OUT(fuse_entry_out),
			.modifies = true },
	[FUSE_UNLINK] = { OP(UNLINK), .run = fuse_unlink, .modifies = true },
	[FUSE_RMDIR] = { OP(RMDIR), .run = fuse_rmdir, .modifies = true },
	[FUSE_RENAME] = { OP(RENAME), .run = fuse_rename, IN(fuse_rename_in), .modifies = true },
	[FUSE_RENAME2] = { OP(RENAME2), .run = fuse_rename2, IN(fuse_rename2_in), .modifies = true },
	[FUSE_OPEN] = { OP(OPEN), .run = fuse_open, IN(fuse_open_in), OUT(fuse_open_out) },
	[FUSE_CREATE] = { OP(CREATE), .run = fuse_create, IN(fuse_create_in),
			  .reply_min = sizeof(struct fuse_entry_out) +
				       sizeof(struct fuse_open_out),
			  .modifies = true },
	[FUSE_TMPFILE] = { OP(TMPFILE), .run = fuse_tmpfile, IN(fuse_create_in),
			   .reply_min = sizeof(struct fuse_entry_out) +
					sizeof(struct fuse_open_out),
			   .modifies = true },
	[FUSE_READ] = { OP(READ), .run = fuse_read, IN(fuse_read_in) },
	/* WRITE's data is never copied: pwritev reads it in place. */
	[FUSE_WRITE] = { OP(WRITE), .run = fuse_write, IN(fuse_write_in), OUT(fuse_write_out),
			 .copy_max = sizeof(struct fuse_write_in), .modifies = true,
			 .grows = true },
	/* No FLUSH: its ENOSYS tells the guest never to send one again. A
	 * close has nothing to flush here (writes reach the host file at
	 * once, locks belong to the open file and go with RELEASE), so each
	 * close saves a round trip the guest would wait for. */
	[FUSE_RELEASE] = { OP(RELEASE), .run = fuse_release, IN(fuse_release_in) },
	[FUSE_FSYNC] = { OP(FSYNC), .run = fuse_fsync, IN(fuse_fsync_in) },
	[FUSE_FALLOCATE] = { OP(FALLOCATE), .run = fuse_fallocate, IN(fuse_fallocate_in),
			     .modifies = true, .grows = true },
	[FUSE_LSEEK] = { OP(LSEEK), .run = fuse_lseek, IN(fuse_lseek_in), OUT(fuse_lseek_out) },
	[FUSE_COPY_FILE_RANGE] = { OP(COPY_FILE_RANGE), .run = fuse_copy_file_range,
				   IN(fuse_copy_file_range_in),
				   OUT(fuse_write_out), .modifies = true, .grows = true },
	[FUSE_OPENDIR] = { OP(OPENDIR), .run = fuse_opendir, IN(fuse_open_in), OUT(fuse_open_out) },
	[FUSE_READDIR] = { OP(READDIR), .run = fuse_readdir, IN(fuse_read_in) },
	[FUSE_READDIRPLUS] = { OP(READDIRPLUS), .run = fuse_readdirplus, IN(fuse_read_in) },
	[FUSE_RELEASEDIR] = { OP(RELEASEDIR), .run = fuse_release, IN(fuse_release_in) },
	[FUSE_FSYNCDIR] = { OP(FSYNCDIR), .run = fuse_fsync, IN(fuse_fsync_in) },
	/* Without FUSE_SETXATTR_EXT, which we never offer, the guest sends
	 * the short, compatible fuse_setxattr_in. */
	[FUSE_SETXATTR] = { OP(SETXATTR), .run = fuse_setxattr, .arg_min = FUSE_COMPAT_SETXATTR_IN_SIZE,
			    .modifies = true },
	[FUSE_GETXATTR] = { OP(GETXATTR), .run = fuse_getxattr, IN(fuse_getxattr_in) },
	[FUSE_LISTXATTR] = { OP(LISTXATTR), .run = fuse_listxattr, IN(fuse_getxattr_in) },
	[FUSE_REMOVEXATTR] = { OP(REMOVEXATTR), .run = fuse_removexattr, .modifies = true },
	/* Locks are not offered on a read-only share: there they stay in
	 * the guest's kernel, never held on the host. */
	[FUSE_GETLK] = { OP(GETLK), .run = fuse_getlk, IN(fuse_lk_in), OUT(fuse_lk_out),
			 .modifies = true },
	[FUSE_SETLK] = { OP(SETLK), .run = fuse_setlk, IN(fuse_lk_in), .modifies = true },
	[FUSE_SETLKW] = { OP(SETLKW), .run = fuse_setlkw, IN(fuse_lk_in), .modifies = true },
	[FUSE_SETUPMAPPING] = { OP(SETUPMAPPING), .run = fuse_setupmapping, IN(fuse_setupmapping_in) },
	[FUSE_REMOVEMAPPING] = { OP(REMOVEMAPPING), .run = fuse_removemapping, IN(fuse_removemapping_in) },
};

int fuse_server_create(const struct fuse_server_config *cfg,
		       struct fuse_server **out)
{
	struct stat st;
	int err;

	if (!cfg || !cfg->root || cfg->cache > FUSE_CACHE_ALWAYS)
		return -EINVAL;
	host_fs_init();
	struct fuse_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return -ENOMEM;
	*srv = (struct fuse_server){
		.readonly = cfg->readonly,
		.cache = cfg->cache,
		.writeback = cfg->writeback && cfg->cache != FUSE_CACHE_NONE,
		.devices = cfg->devices,
		.dax = cfg->dax,
		.fallback_uid = cfg->fallback_uid,
		.fallback_gid = cfg->fallback_gid,
		.proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC),
	};
	/* The configured root is the host's choice, so it may follow
	 * symlinks; everything below it is the guest's and may not. */
	int root_fd = open(cfg->root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (srv->proc_fd < 0 || root_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = confine_stat(root_fd, &st);
	int kind = err ? err : host_fs_kind(root_fd);
	/* The host's own state is never a share. */
	err = kind < 0 ? kind : kind == HOST_FS_PSEUDO ? -EPERM : 0;
	if (err)
		goto fail;
	err = handle_table_init(&srv->handles, cfg->max_handles
					       ? cfg->max_handles
					       : FUSE_DEFAULT_MAX_HANDLES);
	if (err)
		goto fail;
	err = inode_table_init(&srv->inodes, root_fd, &st, kind,
			       cfg->max_inodes ? cfg->max_inodes
					       : FUSE_DEFAULT_MAX_INODES);
	if (err) {
		handle_table_fini(&srv->handles);
		goto fail;
	}
	pthread_mutex_init(&srv->session_lock, NULL);
	fuse_waits_init(&srv->waits);
	*out = srv;
	return 0;
fail:
	if (root_fd >= 0)
		close(root_fd);
	if (srv->proc_fd >= 0)
		close(srv->proc_fd);
	free(srv);
	return err;
}

void fuse_server_destroy(struct fuse_server *srv)
{
	if (!srv)
		return;
	fuse_waits_fini(&srv->waits);
	handle_table_fini(&srv->handles);
	inode_table_fini(&srv->inodes);
	pthread_mutex_destroy(&srv->session_lock);
	close(srv->proc_fd);
	free(srv);
}

size_t fuse_server_inode_count(struct fuse_server *srv)
{
	return inode_table_count(&srv->inodes);
}

size_t fuse_server_handle_count(struct fuse_server *srv)
{
	return handle_table_count(&srv->handles);
}

_Static_assert(ARRAY_LEN(fuse_ops) <= FUSE_OPCODE_LIMIT,
	       "every served opcode has a counter");

/* The table entry for an opcode, or NULL for one we do not serve. */
static const struct fuse_op *find_op(uint32_t opcode)
{
	if (opcode >= ARRAY_LEN(fuse_ops) || !fuse_ops[opcode].run)
		return NULL;
	return &fuse_ops[opcode];
}

/* Copies the header and the arguments (up to copy_max of them) out of
 * guest memory. A request shorter than its header's len is refused; bytes
 * past that len are ignored. */
static int decode(struct fuse_req *req, unsigned char *args)
{
	size_t in_len = iov_length(req->in, req->in_cnt);

	if (iov_copy_from(req->in, req->in_cnt, 0, &req->hdr, sizeof(req->hdr)) <
	    sizeof(req->hdr)) {
		memset(&req->hdr, 0, sizeof(req->hdr));
		return -EINVAL;
	}
	if (req->hdr.len < sizeof(req->hdr) || req->hdr.len > in_len)
		return -EINVAL;
	req->args_len = req->hdr.len - sizeof(req->hdr);

	const struct fuse_op *op = find_op(req->hdr.opcode);
	size_t copy_max = op && op->copy_max ? op->copy_max : FUSE_ARGS_COPY_MAX;

	req->args_copied = iov_copy_from(req->in, req->in_cnt, sizeof(req->hdr),
					 args, req->args_len < copy_max ?
					 req->args_len : copy_max);
	req->args = args;
	return 0;
}

/* Runs a decoded request; returns a negative errno or reply bytes. */
static int run(struct fuse_req *req, const struct fuse_op *op)
{
	if (!atomic_load_explicit(&req->srv->initialized, memory_order_acquire) &&
	    op->run != fuse_init)
		return -EIO;
	if (req->args_len < op->arg_min || req->out_room < op->reply_min)
		return -EINVAL;
	if (op->modifies && req->srv->readonly)
		return -EROFS;
	/* A pseudo file system's mount point can be looked at, not used. */
	if ((req->hdr.nodeid & INODE_SEALED) && !op->sealed_ok)
		return -EACCES;
	int result = op->run(req);
	/* Window pages a file lost to a shrink must be its own again before
	 * the guest, told it grew, touches them. */
	const struct fuse_dax_ops *dax = req->srv->dax;
	if (op->grows && result >= 0 && dax)
		dax->file_grown(dax->opaque);
	return result;
}

/* Runs a request, or only answers it with fail when that is not 0. */
static size_t handle(struct fuse_server *srv, const struct iovec *in,
		     int in_cnt, const struct iovec *out, int out_cnt, int fail,
		     const struct fuse_completion *later)
{
	_Alignas(8) unsigned char args[FUSE_ARGS_COPY_MAX];
	struct fuse_req req = { .srv = srv, .in = in, .in_cnt = in_cnt,
				.out = out, .out_cnt = out_cnt, .later = later };
	int result = decode(&req, args);
	const struct fuse_op *op = result ? NULL : find_op(req.hdr.opcode);

	/* Opcodes we do not serve count too: the guest paid a round trip. */
	if (!result && req.hdr.opcode < FUSE_OPCODE_LIMIT)
		atomic_fetch_add_explicit(&srv->op_counts[req.hdr.opcode], 1,
					  memory_order_relaxed);
	if (op && op->no_reply) {
		if (!fail)
			run(&req, op);
		return 0;
	}
	size_t out_len = iov_length(out, out_cnt);

	/* No room for an answer: running it would leave the guest unaware of
	 * what it did (a lookup it cannot forget, a handle it cannot close). */
	if (out_len < sizeof(struct fuse_out_header))
		return 0;
	req.out_room = out_len - sizeof(struct fuse_out_header);
	if (result == 0)
		result = fail ? fail : op ? run(&req, op) : -ENOSYS;
	if (result == FUSE_REPLY_LATER)
		return FUSE_DEFERRED;
	return fuse_reply_header(out, out_cnt, req.hdr.unique, result);
}

size_t fuse_server_handle(struct fuse_server *srv, const struct iovec *in,
			  int in_cnt, const struct iovec *out, int out_cnt,
			  const struct fuse_completion *later)
{
	return handle(srv, in, in_cnt, out, out_cnt, 0, later);
}

size_t fuse_server_fail(struct fuse_server *srv, const struct iovec *in,
			int in_cnt, const struct iovec *out, int out_cnt,
			int err)
{
	return handle(srv, in, in_cnt, out, out_cnt, err, NULL);
}

bool fuse_request_is_writeback(const struct iovec *in, int in_cnt,
			       size_t min_size)
{
	struct {
		struct fuse_in_header hdr;
		struct fuse_write_in write;
	} req;
	return iov_length(in, in_cnt) >= sizeof(req) + min_size &&
	       iov_copy_from(in, in_cnt, 0, &req, sizeof(req)) == sizeof(req) &&
	       req.hdr.opcode == FUSE_WRITE &&
	       (req.write.write_flags & FUSE_WRITE_CACHE) &&
	       req.write.size >= min_size;
}

void fuse_server_abandon_waits(struct fuse_server *srv)
{
	fuse_waits_cancel(&srv->waits, true);
}

const char *fuse_opcode_name(uint32_t opcode)
{
	return opcode < ARRAY_LEN(fuse_ops) ? fuse_ops[opcode].name : NULL;
}

uint64_t fuse_server_count(struct fuse_server *srv, uint32_t opcode)
{
	return opcode < FUSE_OPCODE_LIMIT
		       ? atomic_load_explicit(&srv->op_counts[opcode],
					      memory_order_relaxed)
		       : 0;
}
