/* From the command line's shares to the machine's: checked folders, tags,
 * FUSE policy, caps, and the guest's mounts. */
#include "vmm/shares.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dax_window.h"
#include "core/log.h"
#include "fs/host_fs.h"
#include "guest/protocol.h"

/* Each inode the guest has looked up holds an O_PATH fd on the host, so a
 * guest with a warm dentry cache needs far more than the usual 1024. */
static void raise_fd_limit(void)
{
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
		return;
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");
	unsigned long long nr_open;
	if (f && fscanf(f, "%llu", &nr_open) == 1 && nr_open > lim.rlim_max) {
		struct rlimit want = {.rlim_cur = nr_open, .rlim_max = nr_open};
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			lim = want; /* privileged: the kernel's maximum */
	}
	if (f)
		fclose(f);
	lim.rlim_cur = lim.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
		log_info("cannot raise the open-file limit: %s", strerror(errno));
}

static enum fuse_cache_mode cache_mode(const char *name)
{
	if (!strcmp(name, "none"))
		return FUSE_CACHE_NONE;
	return strcmp(name, "always") ? FUSE_CACHE_AUTO : FUSE_CACHE_ALWAYS;
}

/* The VMM keeps this many fds and memory maps for itself; the rest is
 * split between the shares. */
#define VMM_FD_RESERVE 256
#define VMM_MAP_RESERVE 8192

/* Caps on what one share's guest can make the VMM hold. Every inode it
 * looks up, file it opens and DAX mapping it makes is a host fd, and every
 * mapping up to two host memory maps (the process may have
 * vm.max_map_count, after which it cannot even start a thread). Each share
 * gets an even part of both limits, so a guest that reaches its caps on
 * one share gets ENFILE or ENOSPC there, and the other shares and the VMM
 * go on. */
static void share_caps(const struct shares *s, unsigned int nr_shares,
		       struct virtio_fs_share *spec)
{
	unsigned int shares = nr_shares;
	struct rlimit lim = {.rlim_cur = 1024};
	getrlimit(RLIMIT_NOFILE, &lim);
	unsigned long long map_count = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%llu", &map_count) != 1)
			map_count = 65530;
		fclose(f);
	}
	uint64_t fds = lim.rlim_cur > VMM_FD_RESERVE * 2
			       ? (lim.rlim_cur - VMM_FD_RESERVE) / shares
			       : 64;
	uint64_t maps = map_count > VMM_MAP_RESERVE * 2
				? (map_count - VMM_MAP_RESERVE) / 2 / shares
				: 64;
	/* The Linux client fills the window 2 MiB at a time. */
	uint64_t want = s->dax_size / DAX_WINDOW_LINUX_CHUNK + 16;
	maps = maps < want ? maps : want;
	maps = maps < fds / 4 ? maps : fds / 4;
	uint64_t handles = fds / 4 < FUSE_DEFAULT_MAX_HANDLES
				   ? fds / 4
				   : FUSE_DEFAULT_MAX_HANDLES;
	uint64_t inodes = fds - maps - handles;
	spec->dax_max_maps = (unsigned int)(maps > 2 ? maps : 2);
	spec->fuse.max_handles = (unsigned int)handles;
	spec->fuse.max_inodes = (unsigned int)(inodes < FUSE_DEFAULT_MAX_INODES
						 ? inodes
						 : FUSE_DEFAULT_MAX_INODES);
}

/* The guest pays for a DAX window in struct pages (1/64 of its size), so
 * the default follows RAM: twice its size, a power of two, 128M to 8G. */
static uint64_t default_dax_size(uint64_t ram)
{
	uint64_t size = 128ULL << 20;
	while (size < 2 * ram && size < (8ULL << 30))
		size <<= 1;
	return size;
}

int shares_check_folder(const char *what, const char *host, char *resolved)
{
	struct stat st;
	if (!realpath(host, resolved) || stat(resolved, &st) < 0)
		return log_setup_error(what, host, -errno);
	char why[PATH_MAX + 64];
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, sizeof(why), "%s: not a directory", host);
		log_setup_error(what, why, 0);
		return -ENOTDIR;
	}
	int fd = open(resolved, O_PATH | O_CLOEXEC);
	int kind = fd < 0 ? -errno : host_fs_kind(fd);
	if (fd >= 0)
		close(fd);
	if (kind == HOST_FS_PSEUDO) {
		snprintf(why, sizeof(why),
			 "%s: a pseudo file system (the host's own state): never shared",
			 host);
		log_setup_error(what, why, 0);
		return -EPERM;
	}
	return 0;
}

/* One share: the root first (tag "root"). */
static int add_share(struct shares *s, const struct fsvm_config *cfg,
		     const char *what, const char *host, const char *guest,
		     const char *mode, bool devices)
{
	unsigned int i = s->nr;
	char *path = s->host[i];
	if (shares_check_folder(what, host, path))
		return -1;
	if (i == 0)
		snprintf(s->tag[i], sizeof(s->tag[i]), "%s",
			 GUEST_ROOT_TAG);
	else
		snprintf(s->tag[i], sizeof(s->tag[i]), GUEST_SHARE_TAG_FMT,
			 i - 1);
	struct virtio_fs_share *spec = &s->specs[i];
	*spec = (struct virtio_fs_share){.tag = s->tag[i],
					 .dax_size = s->dax_size};
	spec->fuse = (struct fuse_server_config){
		.root = path,
		.readonly = strcmp(mode, GUEST_MOUNT_RW) != 0,
		.cache = cache_mode(cfg->cache),
		/* Not under DAX, where it buys nothing (file data bypasses
		 * the guest's page cache) and would make the guest keep its
		 * own idea of file sizes, blind to truncation on the host. */
		.writeback = cache_mode(cfg->cache) != FUSE_CACHE_NONE &&
			     !s->dax_size,
		.devices = devices,
	};
	share_caps(s, 1 + cfg->nr_shares, spec);
	s->mounts[i] = (struct run_spec_mount){
		.tag = s->tag[i], .mode = mode, .guest_path = guest ? guest : path};
	s->nr++;
	return 0;
}

int shares_plan(struct shares *s, const struct fsvm_config *cfg)
{
	s->nr = 0;
	s->dax_size = cfg->dax < 0 ? default_dax_size(cfg->mem)
				   : (uint64_t)cfg->dax;
	raise_fd_limit();
	const char *root_mode = cfg->rw_root ? GUEST_MOUNT_RW
				: cfg->container && cfg->container->root_readonly
					? GUEST_MOUNT_RO
					: GUEST_MOUNT_OVERLAY;
	if (add_share(s, cfg, "--root", cfg->root, "/", root_mode, false))
		return -1;
	for (unsigned int i = 0; i < cfg->nr_shares; i++) {
		const struct cli_share *c = &cfg->shares[i];
		if (add_share(s, cfg, "--share", c->host, c->guest,
			      c->readonly ? GUEST_MOUNT_RO : GUEST_MOUNT_RW,
			      c->devices))
			return -1;
	}
	return 0;
}
