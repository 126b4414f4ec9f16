/* Module loading, virtio-fs mounts, the overlay root and the root switch. */
#include "guest/mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/module.h>
#include <linux/virtio_ids.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "guest/protocol.h"

#define MODULES_DIR "/lib/modules/"
#define MODULES_LIST MODULES_DIR "load-order"
#define MODULES_NET_LIST MODULES_DIR "load-order-net"
#define MODULES_VSOCK_LIST MODULES_DIR "load-order-vsock"
#define MODULES_BLK_LIST MODULES_DIR "load-order-blk"
#define VIRTIO_DEVICES "/sys/bus/virtio/devices"
#define NEW_ROOT "/mnt/root"
#define LOWER "/mnt/lower"
#define OVERLAY_RW "/mnt/rw"
#define MAX_MOUNTS 16

static int fail(const char *what, const char *path)
{
	dprintf(STDERR_FILENO, "fsvm-init: %s %s: %s\n", what, path,
		strerror(errno));
	return -1;
}

/* The kernel lacks something: one line naming the option to build in. */
static int missing(const char *what, const char *option)
{
	dprintf(STDERR_FILENO,
		"fsvm-init: this kernel has no %s: build it with %s (fsvm kconfig lists what fsvm needs)\n",
		what, option);
	return -1;
}

/* The kernel found a virtio device: it has a transport for them. */
static bool has_virtio_devices(void)
{
	DIR *d = opendir("/sys/bus/virtio/devices");
	if (!d)
		return false;
	struct dirent *e;
	bool found = false;
	while (!found && (e = readdir(d)))
		found = e->d_name[0] != '.';
	closedir(d);
	return found;
}

/* The transports found a virtio device of this id (its sysfs "device",
 * "0x0002" for a disk). */
static bool has_virtio_device(unsigned int id)
{
	DIR *d = opendir(VIRTIO_DEVICES);
	if (!d)
		return false;
	struct dirent *e;
	bool found = false;
	while (!found && (e = readdir(d))) {
		char path[300], text[16] = "";
		snprintf(path, sizeof(path), VIRTIO_DEVICES "/%s/device", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, text, sizeof(text) - 1);
		close(fd);
		found = n > 0 && strtoul(text, NULL, 16) == id;
	}
	closedir(d);
	return found;
}

static char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t n = read(fd, buf, (size_t)st.st_size);
		*len = n > 0 ? (size_t)n : 0;
		buf[*len] = '\0';
	}
	close(fd);
	return buf;
}

/* Loads the modules a list names, one a line, from dir; false if there
 * is no list. */
static bool load_list(const char *dir, const char *list_path)
{
	size_t len;
	char *list = read_file(list_path, &len);
	if (!list)
		return false;
	for (char *name = strtok(list, "\n"); name; name = strtok(NULL, "\n")) {
		char path[256];
		snprintf(path, sizeof(path), "%s%s", dir, name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* An installed tree may hold them compressed: the kernel
		 * unpacks them if it can (CONFIG_MODULE_DECOMPRESS). */
		int flags = strstr(name, ".ko.") ? MODULE_INIT_COMPRESSED_FILE : 0;
		/* A kernel with the driver built in (or a different kernel)
		 * refuses the module; the mount or the network's set-up
		 * says if it mattered. */
		syscall(SYS_finit_module, fd, "", flags);
		close(fd);
	}
	free(list);
	return true;
}

void load_modules(bool network, bool vsock)
{
	/* A --kernel of the user's own brings its modules in the job, all
	 * loaded; otherwise the initramfs's go with the default kernel. */
	if (load_list("/" GUEST_SPEC_MODULES, "/" GUEST_SPEC_MODULES_ORDER))
		return;
	load_list(MODULES_DIR, MODULES_LIST);
	/* The network device's driver apart: a VM without one does not
	 * pay for loading it. */
	if (network)
		load_list(MODULES_DIR, MODULES_NET_LIST);
	if (vsock)
		load_list(MODULES_DIR, MODULES_VSOCK_LIST);
	/* Disks (--disk) and the file system most made on them: only when
	 * the transports, loaded above, found one. */
	if (has_virtio_device(VIRTIO_ID_BLOCK))
		load_list(MODULES_DIR, MODULES_BLK_LIST);
}

int mkdir_p(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Taken before anything moves: whether shares map files through a DAX
 * window, and the init's sysfs, which a container's new root may lack. */
static bool share_dax;
static int bdi_dir = -1;

static void prepare_shares(void)
{
	share_dax = access("/" GUEST_SPEC_DAX, F_OK) == 0;
	bdi_dir = open("/sys/class/bdi", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The guest's FUSE gives each connection at most 1% of the dirty-page
 * limit, against user-space servers that might never take their pages
 * back. fsvm always does, and at 1% a guest writing 1 MiB buffers stalls
 * on writeback every few pages (docs/PERFORMANCE.md). */
static void lift_dirty_limit(const char *target)
{
	struct stat st;
	char path[64];

	if (stat(target, &st) < 0)
		return;
	snprintf(path, sizeof(path), "%u:%u/max_ratio", major(st.st_dev),
		 minor(st.st_dev));
	int fd = openat(bdi_dir, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "100", 3) < 0)
		dprintf(STDERR_FILENO, "fsvm-init: /sys/class/bdi/%s: %s\n",
			path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Shares never honour set-id bits: their owners are host ids mapped to
 * guest ones (the host's root is nobody here), so the host's setuid-root
 * mount or su would run as nobody, even for the guest's root. */
#define SHARE_FLAGS MS_NOSUID

int mount_share(const char *tag, const char *target, unsigned long flags,
		const char *data)
{
	/* With a DAX window, file data is mapped, not copied, for the files
	 * fsvm marks: those on ordinary host file systems. */
	char opts[MOUNT_DATA_MAX];
	if (snprintf(opts, sizeof(opts), "%s%s%s", data ? data : "",
		     data && *data && share_dax ? "," : "",
		     share_dax ? "dax=inode" : "") >= (int)sizeof(opts)) {
		errno = E2BIG;
		return -1;
	}
	if (mount(tag, target, "virtiofs", SHARE_FLAGS | flags,
		  *opts ? opts : NULL) < 0)
		return -1;
	/* A read-only share writes nothing back. */
	if (!(flags & MS_RDONLY))
		lift_dirty_limit(target);
	return 0;
}

static int mount_virtiofs(const char *tag, const char *target, bool readonly)
{
	if (mount_share(tag, target, readonly ? MS_RDONLY : 0, NULL) == 0)
		return 0;
	/* A kernel of the user's own (--kernel) may lack what fsvm needs:
	 * name the option (`fsvm kconfig` checks a whole .config). */
	if (errno == ENODEV)
		return missing("virtiofs file system", "CONFIG_VIRTIO_FS (and CONFIG_FUSE_FS)");
	if (errno == EINVAL && !strcmp(tag, GUEST_ROOT_TAG) &&
	    !has_virtio_devices())
		return missing("virtio bus",
			       "CONFIG_VIRTIO_PCI (with --transport mmio: CONFIG_VIRTIO_MMIO and CONFIG_ACPI)");
	return fail("cannot mount virtio-fs share", tag);
}

static int mount_root(const char *tag, const char *mode)
{
	if (mkdir_p(NEW_ROOT) < 0)
		return fail("cannot create", NEW_ROOT);
	if (strcmp(mode, GUEST_MOUNT_OVERLAY))
		return mount_virtiofs(tag, NEW_ROOT,
				      !strcmp(mode, GUEST_MOUNT_RO));
	/* A read-only share below, a tmpfs for every change above. */
	if (mkdir_p(LOWER) < 0 || mkdir_p(OVERLAY_RW) < 0)
		return fail("cannot create", LOWER);
	if (mount_virtiofs(tag, LOWER, true) < 0)
		return -1;
	if (mount("tmpfs", OVERLAY_RW, "tmpfs", 0, "mode=0755") < 0)
		return fail("cannot mount", OVERLAY_RW);
	if (mkdir_p(OVERLAY_RW "/upper") < 0 || mkdir_p(OVERLAY_RW "/work") < 0)
		return fail("cannot create", OVERLAY_RW "/upper");
	if (mount("overlay", NEW_ROOT, "overlay", SHARE_FLAGS,
		  "lowerdir=" LOWER ",upperdir=" OVERLAY_RW
		  "/upper,workdir=" OVERLAY_RW "/work") < 0)
		return errno == ENODEV
			       ? missing("overlay file system", "CONFIG_OVERLAY_FS")
			       : fail("cannot mount the overlay on", NEW_ROOT);
	return 0;
}

/* The kernel file systems move along and /run is fresh; /tmp stays the
 * shared root's (through the overlay), so a caller working under /tmp
 * finds its folder in the guest. */
static int move_system_mounts(void)
{
	static const char *const moved[] = {"/dev", "/proc", "/sys"};
	char target[64];
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		snprintf(target, sizeof(target), NEW_ROOT "%s", moved[i]);
		mkdir(target, 0755);
		if (mount(moved[i], target, NULL, MS_MOVE, NULL) < 0)
			return fail("cannot move", moved[i]);
	}
	umount2("/tmp", MNT_DETACH);
	umount2("/run", MNT_DETACH);
	mkdir(NEW_ROOT "/run", 0755); /* a container image may have none */
	if (mount("tmpfs", NEW_ROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=0755") < 0)
		return fail("cannot mount", "/run");
	return 0;
}

int switch_root(void)
{
	if (chdir(NEW_ROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 ||
	    chroot(".") < 0 || chdir("/") < 0)
		return fail("cannot switch root to", NEW_ROOT);
	return 0;
}

/* GUEST_SPEC_MOUNTS's fields, three a share; NULL when the job has none. */
static char *read_mounts(const char **field, size_t *n)
{
	size_t len;
	char *spec = read_file("/" GUEST_SPEC_MOUNTS, &len);
	*n = 0;
	for (char *p = spec; spec && p < spec + len && *n < 3 * MAX_MOUNTS;
	     p += strlen(p) + 1)
		field[(*n)++] = p;
	return spec;
}

int mount_shares(void)
{
	const char *field[3 * MAX_MOUNTS];
	size_t n;
	char *spec = read_mounts(field, &n);
	if (!spec)
		return 0; /* no shares: stay in the initramfs */
	prepare_shares();
	int err = n < 3 ? -1 : mount_root(field[0], field[1]);
	if (!err)
		err = move_system_mounts();
	for (size_t i = 3; !err && i + 2 < n; i += 3) {
		char target[4096];
		snprintf(target, sizeof(target), NEW_ROOT "%s", field[i + 2]);
		if (mkdir_p(target) < 0)
			err = fail("cannot create mount point", field[i + 2]);
		else
			err = mount_virtiofs(field[i], target,
					     !strcmp(field[i + 1], GUEST_MOUNT_RO));
	}
	if (!err)
		err = switch_root();
	free(spec);
	return err;
}

int mount_container_root(void)
{
	const char *field[3 * MAX_MOUNTS];
	size_t n;
	char *spec = read_mounts(field, &n);
	int err = -1;
	if (n != 3)
		dprintf(STDERR_FILENO,
			"fsvm-init: a container's job names its root share alone, not %zu fields\n",
			n);
	else {
		prepare_shares();
		err = mount_root(field[0], field[1]);
	}
	free(spec);
	return err;
}
