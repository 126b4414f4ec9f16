/* --disk: each image or block device opened, sized and locked for the
 * virtio-blk devices, while fsvm still has the caller's rights. */
#include "vmm/disks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* Two VMs writing one image corrupt it: a writer takes the whole file
 * for itself, a read-only disk shares it with other readers. An OFD lock
 * belongs to the open file, so it lasts as long as fsvm holds the fd and
 * goes with it however fsvm ends. */
static int lock_image(int fd, bool readonly)
{
	struct flock lock = {.l_type = readonly ? F_RDLCK : F_WRLCK,
			     .l_whence = SEEK_SET};
	return fcntl(fd, F_OFD_SETLK, &lock) < 0 ? -errno : 0;
}

static int open_disk(const struct cli_disk *d, struct virtio_blk_disk *out)
{
	int flags = (d->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		    (d->direct ? O_DIRECT : 0);
	int fd = open(d->path, flags);
	if (fd < 0) {
		int err = -errno;
		if (err == -EACCES || err == -EROFS)
			log_error("--disk %s: cannot open it%s: %s", d->path,
				  d->readonly ? "" : " for writing (add :ro for a read-only disk)",
				  strerror(-err));
		else if (err == -EINVAL && d->direct)
			log_error("--disk %s: its file system has no O_DIRECT (leave out direct)",
				  d->path);
		else
			log_error("--disk %s: cannot open it: %s", d->path,
				  strerror(-err));
		return err;
	}
	*out = (struct virtio_blk_disk){.fd = fd, .readonly = d->readonly,
					.direct = d->direct};
	struct stat st;
	int err = fstat(fd, &st) < 0 ? -errno : 0;
	if (!err && S_ISREG(st.st_mode)) {
		out->size = (uint64_t)st.st_size;
	} else if (!err && S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &out->size) < 0)
			err = -errno;
	} else if (!err) {
		log_error("--disk %s: not a regular file or a block device",
			  d->path);
		err = -EINVAL;
		goto fail;
	}
	if (err) {
		log_error("--disk %s: cannot find its size: %s", d->path,
			  strerror(-err));
		goto fail;
	}
	if (out->size < 512) {
		log_error("--disk %s: smaller than one 512-byte sector",
			  d->path);
		err = -EINVAL;
		goto fail;
	}
	if ((err = lock_image(fd, d->readonly))) {
		if (err == -EAGAIN || err == -EACCES)
			log_error("--disk %s: in use by another VM (it holds a lock on it)",
				  d->path);
		else
			log_error("--disk %s: cannot lock it: %s", d->path,
				  strerror(-err));
		goto fail;
	}
	/* Both take fallocate's hole punching (a block device turns it into
	 * a discard); one that cannot answers the guest's discard with an
	 * error, not fsvm. */
	out->discard = !d->readonly;
	memcpy(out->serial, d->serial, sizeof(out->serial));
	return 0;
fail:
	close(fd);
	out->fd = -1;
	return err;
}

int disks_check(const struct cli_disk *d)
{
	/* Opened and locked as a run would, then let go: the lock is the
	 * open file's, so it goes with the fd. */
	struct virtio_blk_disk disk;
	int err = open_disk(d, &disk);
	if (!err)
		close(disk.fd);
	return err;
}

int disks_open(struct virtio_blk_options *o, const struct fsvm_config *cfg)
{
	*o = (struct virtio_blk_options){
		.num_queues = cfg->cpus < VIRTIO_BLK_MAX_QUEUES ? cfg->cpus
								: VIRTIO_BLK_MAX_QUEUES};
	for (unsigned int i = 0; i < cfg->nr_disks; i++) {
		int err = open_disk(&cfg->disks[i], &o->disks[i]);
		if (err) {
			disks_close(o);
			return err;
		}
		o->nr_disks++;
	}
	return 0;
}

void disks_close(struct virtio_blk_options *o)
{
	for (unsigned int i = 0; i < o->nr_disks; i++)
		if (o->disks[i].fd >= 0)
			close(o->disks[i].fd);
	o->nr_disks = 0;
}
