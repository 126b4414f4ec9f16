/* Unit tests for vmm/kernel_modules: the modules of a --kernel, from an
 * installed tree (--modules) or the build tree the kernel lies in. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/kernel_modules.h"

static char top[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2], cmd[PATH_MAX * 3];
	snprintf(path, sizeof(path), "%s/%s", top, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/fsvm-kmod.XXXXXX");
	assert_non_null(mkdtemp(top));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

static const char *path_in(const char *rel)
{
	static char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	return p;
}

/* modules.dep order is not load order: the wanted order is. Listed but
 * missing files, and modules nobody wants, are left out. */
static void test_installed_tree(void **state)
{
	(void)state;
	const char *v = "mods/lib/modules/6.1.0-test";
	char rel[256];
	const char *files[] = {"kernel/fs/fuse/virtiofs.ko", "kernel/fs/fuse/fuse.ko",
			       "kernel/drivers/virtio/virtio_pci.ko.xz",
			       "kernel/drivers/virtio/virtio.ko",
			       "kernel/drivers/block/loop.ko"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "%s/%s", v, files[i]);
		put(rel, "\x7f" "ELF");
	}
	snprintf(rel, sizeof(rel), "%s/modules.dep", v);
	put(rel, "kernel/fs/fuse/virtiofs.ko: kernel/fs/fuse/fuse.ko kernel/drivers/virtio/virtio.ko\n"
		 "kernel/fs/fuse/fuse.ko:\n"
		 "kernel/drivers/block/loop.ko:\n"
		 "kernel/fs/overlayfs/overlay.ko:\n" /* not installed */
		 "kernel/drivers/virtio/virtio_pci.ko.xz: kernel/drivers/virtio/virtio.ko\n"
		 "kernel/drivers/virtio/virtio.ko:\n");
	char mods[PATH_MAX * 2];
	snprintf(mods, sizeof(mods), "%s", path_in("mods"));
	struct fsvm_config cfg = {.modules = mods};
	static struct kernel_modules km;
	assert_int_equal(kernel_modules_find(&cfg, &km), 0);
	assert_true(km.installed);
	assert_string_equal(km.version, "6.1.0-test");
	assert_int_equal(km.nr, 4);
	assert_string_equal(km.name[0], "virtio.ko");
	assert_string_equal(km.name[1], "virtio_pci.ko.xz");
	assert_string_equal(km.name[2], "fuse.ko");
	assert_string_equal(km.name[3], "virtiofs.ko");
	snprintf(rel, sizeof(rel), "%s/kernel/fs/fuse/virtiofs.ko", v);
	assert_string_equal(km.path[3], path_in(rel));

	/* Two versions: which one is meant is not ours to guess. */
	put("mods/lib/modules/6.2.0-other/modules.dep", "");
	assert_int_equal(kernel_modules_find(&cfg, &km), -1);
	cfg.modules = path_in("nothing-here");
	assert_int_equal(kernel_modules_find(&cfg, &km), -1);
}

/* A build tree: the kernel three folders down, modules.order naming
 * objects (6.2+) or modules, the release from include/config. */
static void test_build_tree(void **state)
{
	(void)state;
	put("linux/arch/x86/boot/bzImage", "kernel");
	put("linux/vmlinux", "kernel");
	put("linux/include/config/kernel.release", "6.12.0-rc1+\n");
	put("linux/modules.order", "fs/fuse/fuse.o\nfs/fuse/virtiofs.o\nfs/overlayfs/overlay.ko\n");
	put("linux/fs/fuse/fuse.ko", "x");
	put("linux/fs/fuse/virtiofs.ko", "x");
	put("linux/fs/overlayfs/overlay.ko", "x");
	static struct kernel_modules km;
	for (int i = 0; i < 2; i++) {
		struct fsvm_config cfg = {.kernel = path_in(i ? "linux/vmlinux"
							       : "linux/arch/x86/boot/bzImage")};
		assert_int_equal(kernel_modules_find(&cfg, &km), 0);
		assert_false(km.installed);
		assert_string_equal(km.version, "6.12.0-rc1+");
		assert_int_equal(km.nr, 3);
		assert_string_equal(km.name[0], "fuse.ko");
		assert_string_equal(km.name[1], "virtiofs.ko");
		assert_string_equal(km.name[2], "overlay.ko");
	}
	/* A lone kernel, and the default guest: no modules of its own. */
	put("elsewhere/bzImage", "kernel");
	struct fsvm_config lone = {.kernel = path_in("elsewhere/bzImage")};
	assert_int_equal(kernel_modules_find(&lone, &km), 0);
	assert_int_equal(km.nr, 0);
	assert_string_equal(km.root, "");
	struct fsvm_config none = {0};
	assert_int_equal(kernel_modules_find(&none, &km), 0);
	assert_int_equal(km.nr, 0);
}

int main(void)
{
	const struct CMUnitTest kernel_modules[] = {
		cmocka_unit_test_setup_teardown(test_installed_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_tree, setup, teardown),
	};
	return cmocka_run_group_tests(kernel_modules, NULL, NULL);
}
