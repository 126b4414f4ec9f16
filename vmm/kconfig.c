/* What fsvm needs of a guest kernel's configuration (vmm/kconfig.h). */
#include "vmm/kconfig.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One requirement: one option, or the first of alternatives that is set
 * (any of them will do; the fragment asks for the first). */
struct need {
	const char *options[2];
	bool module_ok; /* a module will do: fsvm's init loads it */
	const char *why;
	unsigned int only; /* only for these (KCONFIG_NET, KCONFIG_DISK); 0: always */
};

static const struct need needs[] = {
	{{"CONFIG_64BIT"}, false, "fsvm enters the kernel's 64-bit entry", 0},
	{{"CONFIG_BLK_DEV_INITRD"}, false, "fsvm's init comes in an initramfs", 0},
	{{"CONFIG_DEVTMPFS"}, false, "the init mounts /dev", 0},
	{{"CONFIG_TMPFS"}, false, "the root overlay's upper layer, /run, /tmp", 0},
	{{"CONFIG_SERIAL_8250"}, false, "the consoles are 16550A UARTs", 0},
	{{"CONFIG_SERIAL_8250_CONSOLE"}, false, "the kernel console on ttyS1", 0},
	{{"CONFIG_PCI"}, false, "virtio-pci, the default transport", 0},
	{{"CONFIG_VIRTIO_PCI", "CONFIG_VIRTIO_MMIO"}, true,
	 "the shares are virtio devices (--transport mmio: CONFIG_VIRTIO_MMIO and CONFIG_ACPI)", 0},
	{{"CONFIG_FUSE_FS"}, true, "virtio-fs is FUSE", 0},
	{{"CONFIG_VIRTIO_FS"}, true, "the shares, the root among them", 0},
	{{"CONFIG_FUSE_DAX"}, false, "file data mapped from the host (--dax)", 0},
	{{"CONFIG_OVERLAY_FS"}, true, "the throwaway overlay on the root", 0},
	{{"CONFIG_VSOCKETS"}, true, "stdin from a pipe or a file is a vsock stream (else --stdin none)", 0},
	{{"CONFIG_VIRTIO_VSOCKETS"}, true, "stdin's stream is over virtio-vsock", 0},
	{{"CONFIG_INET"}, false, "--net: the guest's TCP/IP", KCONFIG_NET},
	{{"CONFIG_PACKET"}, false, "--net: the init's DHCP client", KCONFIG_NET},
	{{"CONFIG_NETDEVICES"}, false, "--net: network device drivers", KCONFIG_NET},
	{{"CONFIG_VIRTIO_NET"}, true, "--net: eth0 is a virtio-net device", KCONFIG_NET},
	{{"CONFIG_BLOCK"}, false, "--disk: the block layer", KCONFIG_DISK},
	{{"CONFIG_VIRTIO_BLK"}, true, "--disk: /dev/vda... are virtio-blk devices", KCONFIG_DISK},
};

#define MAX_VALUE 8

struct option_value {
	const char *name;
	char value[MAX_VALUE]; /* "y", "m", "" when unset */
};

/* Fills in each option's value from the .config's "CONFIG_X=v" lines. */
static int read_config(FILE *f, struct option_value *vals, size_t n)
{
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "CONFIG_", 7))
			continue; /* comments, "# CONFIG_X is not set" */
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		char *v = eq + 1;
		v[strcspn(v, "\r\n")] = '\0';
		for (size_t i = 0; i < n; i++)
			if (!strcmp(vals[i].name, line))
				snprintf(vals[i].value, sizeof(vals[i].value),
					 "%s", v);
	}
	return ferror(f) ? -EIO : 0;
}

static const char *value_of(const struct option_value *vals, size_t n,
			    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(vals[i].name, name))
			return vals[i].value;
	return "";
}

static bool satisfied(const struct need *nd, const struct option_value *vals,
		      size_t n)
{
	for (size_t i = 0; i < 2 && nd->options[i]; i++) {
		const char *v = value_of(vals, n, nd->options[i]);
		if (!strcmp(v, "y") || (nd->module_ok && !strcmp(v, "m")))
			return true;
	}
	return false;
}

static bool wanted(const struct need *nd, unsigned int features)
{
	return (nd->only & features) == nd->only;
}

int kconfig_check(const char *path, unsigned int features, FILE *out,
		  FILE *err)
{
	enum { NR_NEEDS = sizeof(needs) / sizeof(needs[0]) };
	struct option_value vals[2 * NR_NEEDS];
	size_t n = 0;
	for (size_t i = 0; i < NR_NEEDS; i++)
		for (size_t j = 0; j < 2 && needs[i].options[j]; j++)
			vals[n++] = (struct option_value){.name = needs[i].options[j]};

	FILE *f = fopen(path, "r");
	if (!f) {
		int e = -errno;
		fprintf(err, "fsvm: kconfig: cannot read %s: %s\n", path,
			strerror(-e));
		return e;
	}
	int rerr = read_config(f, vals, n);
	fclose(f);
	if (rerr) {
		fprintf(err, "fsvm: kconfig: cannot read %s: %s\n", path,
			strerror(-rerr));
		return rerr;
	}

	int missing = 0;
	for (size_t i = 0; i < NR_NEEDS; i++) {
		if (!wanted(&needs[i], features) || satisfied(&needs[i], vals, n))
			continue;
		if (!missing++)
			fprintf(out,
				"# fsvm: options %s lacks; merge with\n"
				"# scripts/kconfig/merge_config.sh .config THIS-FILE\n",
				path);
		fprintf(out, "# %s\n%s=y\n", needs[i].why, needs[i].options[0]);
	}
	int modules = 0;
	for (size_t i = 0; i < NR_NEEDS; i++)
		for (size_t j = 0; j < 2 && needs[i].options[j]; j++)
			if (needs[i].module_ok && wanted(&needs[i], features) &&
			    !strcmp(value_of(vals, n, needs[i].options[j]), "m"))
				fprintf(err, "%s %s",
					modules++ ? "" : "fsvm: kconfig: modules (fsvm run loads them from the build tree or --modules DIR):",
					needs[i].options[j]);
	if (modules)
		fputc('\n', err);
	if (missing)
		fprintf(err, "fsvm: kconfig: %s lacks %d option%s fsvm needs (the fragment is on stdout)\n",
			path, missing, missing == 1 ? "" : "s");
	else
		fprintf(err, "fsvm: kconfig: %s has everything fsvm needs\n",
			path);
	return missing;
}
