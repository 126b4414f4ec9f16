/* Kinds of host file systems, by their statfs magic. */
#include "fs/host_fs.h"

#include <errno.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

/* Pseudo file systems without a magic in <linux/magic.h>. */
#define CONFIGFS_MAGIC 0x62656570
#define MQUEUE_MAGIC 0x19800202
#define FUSECTL_MAGIC 0x65735543

/* File systems whose files mmap maps page by page from the page cache or
 * the disk, which the DAX window and its truncation handling rely on. */
static const unsigned long mappable[] = {
	EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC,
	F2FS_SUPER_MAGIC, TMPFS_MAGIC, RAMFS_MAGIC,
};

/* Views of the host kernel's own state, devices and control knobs. */
static const unsigned long pseudo[] = {
	PROC_SUPER_MAGIC, SYSFS_MAGIC, DEVPTS_SUPER_MAGIC, DEBUGFS_MAGIC,
	TRACEFS_MAGIC, SECURITYFS_MAGIC, SELINUX_MAGIC, SMACK_MAGIC,
	CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, RDTGROUP_SUPER_MAGIC,
	BPF_FS_MAGIC, CONFIGFS_MAGIC, MQUEUE_MAGIC, FUSECTL_MAGIC,
	PSTOREFS_MAGIC, EFIVARFS_MAGIC, BINFMTFS_MAGIC, AAFS_MAGIC,
	NSFS_MAGIC, BINDERFS_SUPER_MAGIC, HUGETLBFS_MAGIC, AUTOFS_SUPER_MAGIC,
	OPENPROM_SUPER_MAGIC, USBDEVICE_SUPER_MAGIC, XENFS_SUPER_MAGIC,
};

static bool listed(unsigned long magic, const unsigned long *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == magic)
			return true;
	return false;
}

/* devtmpfs says it is tmpfs. It is one superblock for the whole boot, so
 * its device number, read once from mountinfo, tells it apart. */
static dev_t devtmpfs_dev;
static bool devtmpfs_mounted;

static void find_devtmpfs(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	while (f && fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		const char *sep = strstr(line, " - ");
		if (sep && !strncmp(sep + 3, "devtmpfs ", 9) &&
		    sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2) {
			devtmpfs_dev = makedev(maj, min);
			devtmpfs_mounted = true;
			break;
		}
	}
	if (f)
		fclose(f);
}

static pthread_once_t devtmpfs_once = PTHREAD_ONCE_INIT;

void host_fs_init(void)
{
	pthread_once(&devtmpfs_once, find_devtmpfs);
}

int host_fs_kind(int fd)
{
	struct statfs sfs;
	struct stat st;
	if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0)
		return -errno;
	unsigned long magic = (unsigned long)sfs.f_type;
	if (listed(magic, pseudo, sizeof(pseudo) / sizeof(pseudo[0])))
		return HOST_FS_PSEUDO;
	if (magic == TMPFS_MAGIC) {
		host_fs_init();
		if (devtmpfs_mounted && st.st_dev == devtmpfs_dev)
			return HOST_FS_PSEUDO;
	}
	return listed(magic, mappable, sizeof(mappable) / sizeof(mappable[0]))
		       ? HOST_FS_MAPPABLE
		       : HOST_FS_PLAIN;
}
