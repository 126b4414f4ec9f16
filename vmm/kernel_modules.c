/* The modules of a kernel from a build tree or --modules (vmm/kernel_modules.h). */
#include "vmm/kernel_modules.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

/* What mounting the shares takes, each after what it depends on; a
 * kernel with one built in simply has no such module. */
static const struct {
	const char *name;
	bool net; /* only with --net: eth0's driver */
} wanted[] = {
	{"virtio_ring", false}, {"virtio", false}, {"virtio_pci_modern_dev", false},
	{"virtio_pci_legacy_dev", false}, {"virtio_pci", false},
	{"virtio_mmio", false}, {"fuse", false}, {"virtiofs", false},
	{"overlay", false}, {"failover", true}, {"net_failover", true},
	{"virtio_net", true},
};

#define TREE_DEPTH 4 /* arch/x86/boot/bzImage is three below the root */

/* out = a/b; false when it does not fit. */
static bool join(char *out, const char *a, const char *b)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", a, b);
	return n > 0 && n < PATH_MAX;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* "fs/fuse/virtio_fs.ko.xz" -> "virtio_fs"; module names use '_'. */
static void module_name(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strlen(base) >= len) {
		out[0] = '\0'; /* no module name is that long */
		return;
	}
	strcpy(out, base);
	char *dot = strstr(out, ".ko");
	if (!dot)
		dot = strrchr(out, '.'); /* modules.order of 6.2+: .o */
	if (dot)
		*dot = '\0';
	for (char *p = out; *p; p++)
		if (*p == '-')
			*p = '_';
}

/* Reads index (modules.dep or modules.order): the first field of each
 * line is a module's path under the tree. Adds the wanted ones, in the
 * wanted order. */
static int pick_modules(struct kernel_modules *km, const char *index)
{
	FILE *f = fopen(index, "r");
	if (!f)
		return -errno;
	char found[sizeof(wanted) / sizeof(wanted[0])][PATH_MAX] = {{0}};
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, ":\r\n")] = '\0';
		char name[64];
		module_name(line, name, sizeof(name));
		for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
			if (!strcmp(name, wanted[i].name) && !found[i][0])
				snprintf(found[i], sizeof(found[i]), "%s", line);
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		if (!found[i][0] || km->nr == KERNEL_MODULES_MAX ||
		    (wanted[i].net && !km->net))
			continue;
		size_t l = strlen(found[i]);
		/* A build tree's 6.2+ modules.order names the objects. */
		if (l > 2 && !strcmp(found[i] + l - 2, ".o"))
			found[i][l - 1] = '\0', strcat(found[i], "ko");
		char path[PATH_MAX];
		if (!join(path, km->root, found[i]) || !is_file(path))
			continue; /* listed but not built or installed */
		memcpy(km->path[km->nr], path, sizeof(path));
		const char *base = strrchr(path, '/');
		snprintf(km->name[km->nr], sizeof(km->name[0]), "%s", base + 1);
		km->nr++;
	}
	return 0;
}

static int from_installed(const char *dir, struct kernel_modules *km)
{
	char base[PATH_MAX];
	if (!join(base, dir, "lib/modules"))
		return log_setup_error(dir, "--modules: path too long", 0);
	DIR *d = opendir(base);
	if (!d)
		return log_setup_error(dir, "--modules: no lib/modules/VERSION in it (make modules_install INSTALL_MOD_PATH=DIR)",
				       -errno);
	unsigned int versions = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(km->version))
			continue;
		versions++;
		snprintf(km->version, sizeof(km->version), "%s", e->d_name);
	}
	closedir(d);
	if (versions != 1)
		return log_setup_error(dir, versions ? "--modules: more than one kernel version under lib/modules"
						     : "--modules: no lib/modules/VERSION in it (make modules_install INSTALL_MOD_PATH=DIR)",
				       0);
	if (!join(km->root, base, km->version))
		return log_setup_error(dir, "--modules: path too long", 0);
	km->installed = true;
	char index[PATH_MAX];
	int err = join(index, km->root, "modules.dep") ? pick_modules(km, index)
						       : -ENAMETOOLONG;
	if (err)
		err = join(index, km->root, "modules.order")
			      ? pick_modules(km, index)
			      : -ENAMETOOLONG;
	return err ? log_setup_error(km->root, "--modules: neither modules.dep nor modules.order", err)
		   : 0;
}

/* The build tree the kernel file lies in, if any: the first folder up
 * from it that holds modules.order. */
static void from_build_tree(const char *kernel, struct kernel_modules *km)
{
	char dir[PATH_MAX];
	if (!realpath(kernel, dir))
		return;
	for (int up = 0; up <= TREE_DEPTH; up++) {
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return;
		*slash = '\0';
		char index[PATH_MAX], rel[PATH_MAX];
		if (!join(index, dir, "modules.order") || !is_file(index) ||
		    !join(rel, dir, "include/config/kernel.release"))
			continue;
		strcpy(km->root, dir);
		FILE *f = fopen(rel, "r");
		if (f) {
			if (fgets(km->version, sizeof(km->version), f))
				km->version[strcspn(km->version, "\n")] = '\0';
			fclose(f);
		}
		pick_modules(km, index);
		return;
	}
}

int kernel_modules_find(const struct fsvm_config *cfg,
			struct kernel_modules *km)
{
	memset(km, 0, sizeof(*km));
	km->net = cfg->net.mode != CLI_NET_NONE;
	if (cfg->modules)
		return from_installed(cfg->modules, km) ? -1 : 0;
	if (cfg->kernel)
		from_build_tree(cfg->kernel, km);
	return 0;
}
