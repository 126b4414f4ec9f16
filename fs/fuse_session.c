/* Session requests (INIT, DESTROY, INTERRUPT), STATFS and SYNCFS. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs/confine.h"
#include "fs/fuse_internal.h"

/* virtio-fs arrived with protocol 7.31: no older guest can reach us. */
#define FUSE_OLDEST_MINOR 31

/* The guest's INIT flags decide what of this is agreed. */
uint64_t fuse_flags_offered(const struct fuse_server *srv)
{
	uint64_t flags = FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_EXPORT_SUPPORT |
			 FUSE_BIG_WRITES | FUSE_DONT_MASK |
			 FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
			 FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV_V2 |
			 FUSE_MAX_PAGES | FUSE_INIT_EXT;

	/* On a read-only share locks stay in the guest: a lock is no change,
	 * but a guest holding the host's lock files (dpkg's, say) would
	 * block the host for as long as it liked. */
	if (!srv->readonly)
		flags |= FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS;
	if (srv->cache == FUSE_CACHE_AUTO)
		flags |= FUSE_AUTO_INVAL_DATA;
	if (srv->writeback)
		flags |= FUSE_WRITEBACK_CACHE;
	if (srv->dax)
		flags |= FUSE_MAP_ALIGNMENT | FUSE_HAS_INODE_DAX;
	/* cache=none opens files with FOPEN_DIRECT_IO, on which older guests
	 * refuse shared mmaps (ENODEV); 6.6+ guests map them through their
	 * page cache, written back with WRITE like any dirty page. */
	if (srv->cache == FUSE_CACHE_NONE)
		flags |= FUSE_DIRECT_IO_ALLOW_MMAP;
	/* Not taken from what 6.12 asks: FUSE_CREATE_SUPP_GROUP (the guest
	 * checks permissions itself and we create as ourselves, then give the
	 * file the caller's ids, so a supplementary group changes nothing),
	 * FUSE_NO_EXPORT_SUPPORT (we do support it), FUSE_HAS_RESEND (no
	 * notification queue) and FUSE_ALLOW_IDMAP (untested here yet). */
	return flags;
}

/* Forgets everything the guest was given: waits, inodes (but root) and
 * handles. */
static void end_session(struct fuse_server *srv)
{
	atomic_store_explicit(&srv->initialized, false, memory_order_release);
	atomic_store_explicit(&srv->flags, 0, memory_order_relaxed);
	fuse_waits_cancel(&srv->waits, false);
	handle_table_reset(&srv->handles);
	inode_table_reset(&srv->inodes);
}

int fuse_init(struct fuse_req *req)
{
	struct fuse_server *srv = req->srv;
	struct fuse_init_in in = { 0 };

	/* Older guests send a shorter fuse_init_in: the rest reads as 0. */
	memcpy(&in, req->args,
	       req->args_copied < sizeof(in) ? req->args_copied : sizeof(in));
	if (in.major != FUSE_KERNEL_VERSION || in.minor < FUSE_OLDEST_MINOR)
		return -EPROTO;

	uint64_t asked = in.flags;

	if (in.flags & FUSE_INIT_EXT)
		asked |= (uint64_t)in.flags2 << 32;
	uint64_t agreed = asked & fuse_flags_offered(srv);
	struct fuse_init_out out = {
		.major = FUSE_KERNEL_VERSION,
		.minor = in.minor < FUSE_KERNEL_MINOR_VERSION ?
			 in.minor : FUSE_KERNEL_MINOR_VERSION,
		.max_readahead = in.max_readahead,
		.flags = (uint32_t)agreed,
		.flags2 = (uint32_t)(agreed >> 32),
		.max_background = 64,
		.congestion_threshold = 48,
		.max_write = FUSE_MAX_TRANSFER,
		.time_gran = 1,
		.max_pages = FUSE_MAX_PAGES_OFFERED,
		.map_alignment = srv->dax ? FUSE_DAX_ALIGN_LOG2 : 0,
	};

	pthread_mutex_lock(&srv->session_lock);
	/* A second INIT is a new mount, say after a guest reboot: the old
	 * session's inodes and handles mean nothing to it. */
	if (atomic_load_explicit(&srv->initialized, memory_order_relaxed))
		end_session(srv);
	atomic_store_explicit(&srv->flags, agreed, memory_order_relaxed);
	atomic_store_explicit(&srv->initialized, true, memory_order_release);
	pthread_mutex_unlock(&srv->session_lock);
	return fuse_reply(req, &out, sizeof(out));
}

int fuse_destroy(struct fuse_req *req)
{
	pthread_mutex_lock(&req->srv->session_lock);
	end_session(req->srv);
	pthread_mutex_unlock(&req->srv->session_lock);
	return 0;
}

/* Only waits can be interrupted: every other request runs to its end at
 * once. The interrupted request answers EINTR; INTERRUPT itself takes no
 * reply. (Linux's virtio-fs client sends none, but may one day.) */
int fuse_interrupt(struct fuse_req *req)
{
	const struct fuse_interrupt_in *in = (const void *)req->args;

	fuse_wait_interrupt(&req->srv->waits, in->unique);
	return 0;
}

int fuse_statfs(struct fuse_req *req)
{
	struct inode *inode = fuse_inode(req, req->hdr.nodeid);
	struct statvfs sv;

	if (!inode)
		return -ESTALE;
	int r = fstatvfs(inode->fd, &sv);

	fuse_put_inode(req, inode);
	if (r)
		return -errno;

	struct fuse_statfs_out out = { .st = {
		.blocks = sv.f_blocks,
		.bfree = sv.f_bfree,
		.bavail = sv.f_bavail,
		.files = sv.f_files,
		.ffree = sv.f_ffree,
		.bsize = (uint32_t)sv.f_bsize,
		.namelen = (uint32_t)sv.f_namemax,
		.frsize = (uint32_t)sv.f_frsize,
	} };
	return fuse_reply(req, &out, sizeof(out));
}

int fuse_syncfs(struct fuse_req *req)
{
	/* syncfs() wants a real fd; root's O_PATH one is refused. */
	int fd = confine_reopen(req->srv->proc_fd, req->srv->inodes.root->fd,
				O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd;
	int r = syncfs(fd) ? -errno : 0;

	close(fd);
	return r;
}
