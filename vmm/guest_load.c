/* The guest's files into its RAM: the kernel, and the initrd followed by
 * the archive that tells the guest init what to run. */
#include "vmm/guest_load.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* The packaged guests' folder beside the binary: the build tree's
 * build/guest for ./fsvm, PREFIX/lib/fsvm or PREFIX/share/fsvm for
 * PREFIX/bin/fsvm. No path is compiled in, so the tree can move. */
static const char *const guest_dirs[] = {"build/guest", "../lib/fsvm",
					 "../share/fsvm"};

const char *guest_dir(char *buf, size_t len)
{
	const char *env = getenv("FSVM_GUEST_DIR");
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return buf;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		n = snprintf(exe, sizeof(exe), ".");
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	for (size_t i = 0; i < sizeof(guest_dirs) / sizeof(guest_dirs[0]); i++) {
		char dir[PATH_MAX + 32], real[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/%s", exe, guest_dirs[i]);
		if (access(dir, F_OK) == 0) {
			snprintf(buf, len, "%s", realpath(dir, real) ? real : dir);
			return buf;
		}
	}
	snprintf(buf, len, "%s/%s", exe, guest_dirs[0]);
	return buf;
}

/* A file of the chosen guest: a folder of the guest folder named after
 * its kernel series (build/guest/6.12/...), or a folder given by path. */
static const char *guest_file(const struct fsvm_config *cfg, const char *given,
			      const char *name, char *buf, size_t len)
{
	if (given)
		return given;
	const char *guest = cfg->guest_kernel ? cfg->guest_kernel
					      : CLI_DEFAULT_GUEST_KERNEL;
	if (strchr(guest, '/')) {
		snprintf(buf, len, "%s/%s", guest, name);
		return buf;
	}
	char dir[PATH_MAX];
	snprintf(buf, len, "%s/%s/%s", guest_dir(dir, sizeof(dir)), guest, name);
	return buf;
}

/* Set-up cannot go on without the default guest's file: say what makes it. */
static int missing_default(const char *path, const char *what, int err)
{
	char why[128];
	snprintf(why, sizeof(why),
		 "no %s: `make guest` in fsvm's source tree makes it (or set FSVM_GUEST_DIR)",
		 what);
	return log_setup_error(path, why, err);
}

/* Opens a boot file and learns its size; an fd or a negative errno. */
static int open_boot_file(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* The kernel: the guest's uncompressed if it was extracted (make guest),
 * else as Debian ships it. */
static const char *kernel_path(const struct fsvm_config *cfg, char *buf,
			       size_t len)
{
	const char *path = guest_file(cfg, cfg->kernel, "kernel/vmlinux", buf,
				      len);
	if (!cfg->kernel && access(path, F_OK) != 0)
		path = guest_file(cfg, NULL, "kernel/vmlinuz", buf, len);
	return path;
}

/* The kernel file mapped (*size bytes), or NULL after one line. */
static void *map_kernel(const struct fsvm_config *cfg, const char *path,
			size_t *size)
{
	struct stat st;
	int fd = open_boot_file(path, &st);
	if (fd == -ENOENT && !cfg->kernel) {
		missing_default(path, "guest kernel", 0);
		return NULL;
	}
	if (fd < 0) {
		log_setup_error(path, "cannot open the kernel", fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		log_setup_error(path, "kernel is not a non-empty file", 0);
		return NULL;
	}
	void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED) {
		log_setup_error(path, "cannot map the kernel", -errno);
		return NULL;
	}
	*size = (size_t)st.st_size;
	return img;
}

/* The kernel loaded into b's RAM, or with no board only checked (its
 * format, all of it there): the same reading either way, so --check says
 * what a run would. */
static int read_kernel(struct board *b, const struct fsvm_config *cfg)
{
	char buf[4096];
	const char *path = kernel_path(cfg, buf, sizeof(buf));
	size_t size;
	void *img = map_kernel(cfg, path, &size);
	if (!img)
		return -1;
	const char *why = NULL;
	int err = b ? board_load_kernel(b, img, size, &why)
		    : board_check_kernel(img, size, &why);
	munmap(img, size);
	return err ? log_setup_error(path, why, 0) : 0;
}

int guest_check_folder(const struct fsvm_config *cfg)
{
	if (cfg->kernel && cfg->initrd)
		return 0; /* the guest folder gives nothing */
	char buf[PATH_MAX];
	char *folder = (char *)guest_file(cfg, NULL, "", buf, sizeof(buf));
	size_t len = strlen(folder);
	while (len > 1 && folder[len - 1] == '/')
		folder[--len] = '\0';
	struct stat st;
	if (stat(folder, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	char why[PATH_MAX + 128];
	snprintf(why, sizeof(why),
		 "%s: no such folder (`make guest` in fsvm's source tree makes the packaged guests; FSVM_GUEST_DIR says where they are)",
		 folder);
	return log_setup_error("guest", why, 0);
}

int guest_check_kernel(const struct fsvm_config *cfg)
{
	return read_kernel(NULL, cfg);
}

/* What the kernel unpacks as an initramfs: cpio archives (newc, with or
 * without checksums, and the old portable format), each compressed or
 * not; it skips zero padding before (and between) them. */
static bool initrd_format_known(const uint8_t *p, size_t len)
{
	static const struct {
		const char *magic;
		size_t len;
	} formats[] = {
		{"070701", 6}, {"070702", 6}, {"070707", 6}, /* cpio */
		{"\x1f\x8b", 2}, {"\x1f\x9e", 2},           /* gzip */
		{"BZh", 3},                                  /* bzip2 */
		{"\x5d\x00\x00", 3},                         /* lzma */
		{"\xfd" "7zXZ", 5},                           /* xz */
		{"\x89LZO", 4},                              /* lzo */
		{"\x02\x21\x4c\x18", 4},                     /* lz4 */
		{"\x28\xb5\x2f\xfd", 4},                     /* zstd */
	};
	size_t at = 0;
	while (at < len && !p[at])
		at++;
	if (at == len)
		return true; /* all padding, as far as we looked */
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (len - at >= formats[i].len &&
		    !memcmp(p + at, formats[i].magic, formats[i].len))
			return true;
	return false;
}

int guest_check_initrd(const struct fsvm_config *cfg)
{
	char buf[4096];
	const char *path = guest_file(cfg, cfg->initrd, "initramfs.cpio", buf,
				      sizeof(buf));
	struct stat st;
	int fd = open_boot_file(path, &st);
	if (fd == -ENOENT && !cfg->initrd)
		return missing_default(path, "guest initramfs", 0);
	if (fd < 0)
		return log_setup_error(path, "cannot open the initrd", fd);
	/* Enough to see past the padding a concatenated image may have. */
	static uint8_t head[64 << 10];
	ssize_t n = S_ISREG(st.st_mode) ? pread(fd, head, sizeof(head), 0) : -1;
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (!S_ISREG(st.st_mode) || n == 0)
		return log_setup_error(path, "initrd is not a non-empty file", 0);
	if (err)
		return log_setup_error(path, "cannot read the initrd", err);
	if (!initrd_format_known(head, (size_t)n))
		return log_setup_error(path, "not an initramfs (a cpio archive, compressed or not)", 0);
	return 0;
}

static int read_full(int fd, uint8_t *dst, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, dst + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* The initrd file goes straight into guest RAM, followed by the archive
 * that tells the guest init what to run. */
static int load_initrd(struct board *b, const struct fsvm_config *cfg,
		       const struct run_spec *job)
{
	char buf[4096];
	const char *path = guest_file(cfg, cfg->initrd, "initramfs.cpio", buf,
				      sizeof(buf));
	struct cpio_buf spec = {0};
	int err = run_spec_build(job, &spec);
	if (err) {
		cpio_free(&spec);
		/* A module that cannot be read was named already. */
		return err == -ENOMEM ? log_setup_error("initrd", "out of memory", err)
				      : -1;
	}

	struct stat st;
	int fd = open_boot_file(path, &st);
	if (fd < 0) {
		cpio_free(&spec);
		if (fd == -ENOENT && !cfg->initrd)
			return missing_default(path, "guest initramfs", 0);
		return log_setup_error(path, "cannot open the initrd", fd);
	}
	uint64_t file_len = (uint64_t)st.st_size;
	uint64_t spec_at = (file_len + 3) & ~3ULL;
	uint64_t gpa;
	const char *why = NULL;
	err = board_place_initrd(b, spec_at + spec.len, &gpa, &why);
	if (err) {
		close(fd);
		cpio_free(&spec);
		return log_setup_error(path, why, 0);
	}
	uint8_t *dst = guest_ptr(&b->vm.mem, gpa, spec_at + spec.len);
	guest_mem_prefault(&b->vm.mem, gpa, spec_at + spec.len);
	err = read_full(fd, dst, file_len);
	close(fd);
	if (!err) {
		memset(dst + file_len, 0, spec_at - file_len);
		memcpy(dst + spec_at, spec.data, spec.len);
	}
	cpio_free(&spec);
	return err ? log_setup_error(path, "cannot read the initrd", err) : 0;
}

int guest_load(struct board *b, const struct fsvm_config *cfg,
	       const struct run_spec *job)
{
	return read_kernel(b, cfg) || load_initrd(b, cfg, job) ? -1 : 0;
}
