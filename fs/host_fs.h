/* What the guest may do with a host file, from the kind of file system it
 * lives on: pseudo file systems (procfs, sysfs, devtmpfs, ...) are the
 * host's own business and never shown; DAX maps only files of ordinary
 * disk and memory file systems, whose pages behave as mmap promises. */
#ifndef FSVM_HOST_FS_H
#define FSVM_HOST_FS_H

enum host_fs_kind {
	HOST_FS_MAPPABLE, /* ext4, xfs, btrfs, tmpfs, ...: served, DAX too */
	HOST_FS_PLAIN,    /* network, FUSE, overlay, ...: served, no DAX */
	HOST_FS_PSEUDO,   /* procfs, sysfs, devtmpfs, ...: never served */
};

/* Learns what host_fs_kind() needs from /proc (which device devtmpfs
 * is), while fsvm can still read it: set-up calls it. */
void host_fs_init(void);

/* The kind of file system the file open at fd (O_PATH is enough) is on,
 * or -errno. */
int host_fs_kind(int fd);

#endif
