/* `fsvm` argument parsing: one clear line for every bad input. */
#include "vmm/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "arch/x86/mptable.h"
#include "core/guest_mem.h"
#include "vmm/config_file.h"
#include "vmm/env_file.h"
#include "vmm/kconfig.h"
#include "vmm/net_options.h"

const char cli_usage[] =
	"Usage: fsvm run [OPTIONS] [--] [CMD [ARGS...]]\n"
	"  or:  fsvm kconfig [--net] [--disk] [.config]\n"
	"  or:  fsvm oci COMMAND [ARGS...]\n"
	"  or:  fsvm --help | --version\n"
	"\n"
	"Boots a Linux guest under KVM, runs CMD in it and exits with CMD's status\n"
	"(else 124: timed out; 125: fsvm or the guest failed, and --json's\n"
	"exit.reason says which way; 126: CMD not executable; 127: CMD not found);\n"
	"without CMD, an interactive shell. `fsvm kconfig` checks a kernel's .config\n"
	"(default ./.config) for what fsvm needs (with --net and --disk, what they\n"
	"need too) and prints the missing options as a fragment to merge (exit 1\n"
	"when some are missing). `fsvm oci` is an OCI runtime for podman and\n"
	"containerd, also installed as fsvm-runtime (docs/OCI.md in the source tree).\n"
	"\n"
	"Options:\n"
	"  --config FILE      read options from a strict JSON file (no comments, no\n"
	"                     trailing commas, no key twice): an object whose keys are\n"
	"                     these options' long names (\"cpus\": 2, \"share\": [...],\n"
	"                     \"verbose\": true), \"command\": [CMD, ARGS...] and\n"
	"                     \"profiles\": {NAME: {OPTIONS...}}; read after the default\n"
	"                     file ($FSVM_CONFIG, else ~/.config/fsvm/config.json when\n"
	"                     there is one); flags given as well override both (lists\n"
	"                     add to them)\n"
	"  --profile NAME     apply profile NAME of the config files' \"profiles\" too\n"
	"                     (after the files' own options, before the flags)\n"
	"  --guest-kernel K   which bundled guest boots: 6.1 or 6.12, Debian's kernels\n"
	"                     with fsvm's initramfs each, or microvm (--microvm)\n"
	"                     (default: $FSVM_GUEST_KERNEL, else " CLI_DEFAULT_GUEST_KERNEL "), or a folder\n"
	"                     (a path with a '/') holding kernel/vmlinux or\n"
	"                     kernel/vmlinuz, and initramfs.cpio\n"
	"  --kernel PATH      bzImage or ELF vmlinux to boot (default: the guest\n"
	"                     kernel's); from a build tree, its modules come along\n"
	"  --modules DIR      the kernel's modules, as `make modules_install\n"
	"                     INSTALL_MOD_PATH=DIR` left them (DIR/lib/modules/VERSION)\n"
	"  --initrd PATH      initramfs to load (default: the guest kernel's)\n"
	"  -p, --cpus N       virtual CPUs, 1-64 (default: half the host's CPUs, 1 to 8)\n"
	"  -m, --mem SIZE     guest RAM, e.g. 512M, 2G; plain numbers are MiB (default:\n"
	"                     an eighth of the host's RAM, 512M to 4G); --memory too\n"
	"  --append ARGS      extra kernel command-line arguments; repeatable\n"
	"                     (--cmdline is the same)\n"
	"  --cwd DIR          the guest folder CMD starts in (default: the folder fsvm\n"
	"                     was started in, or / when the guest has no such folder)\n"
	"  --env NAME[=VALUE]\n"
	"                     set NAME in CMD's environment; NAME alone passes this\n"
	"                     process's value, if it has one; repeatable\n"
	"  --env-file FILE    --env for each line of FILE, in docker's format:\n"
	"                     NAME=VALUE (the value as it is, no quotes) or NAME;\n"
	"                     blank lines and # comments skipped; repeatable\n"
	"  --exec CMD         run CMD through the guest's /bin/sh -c, instead of a\n"
	"                     command after the options (virtme-ng's spelling)\n"
	"  --user             run CMD as your uid and gid, with your HOME, not as root;\n"
	"                     your files on the shares are yours in the guest too\n"
	"  --root DIR         host folder that is the guest's / (default /), read-only\n"
	"                     with a throwaway overlay on top\n"
	"  --rw-root          write through to the root folder instead of an overlay\n"
	"  --image REF        a podman image (in podman's local store: podman pull or\n"
	"                     podman import first; root, or under `podman unshare`)\n"
	"                     as the guest's /, read-only with a throwaway overlay;\n"
	"                     CMD runs in it as the image says: its Env under\n"
	"                     --env's, its WorkingDir (unless --cwd), its User\n"
	"                     (unless --user), its Entrypoint followed by CMD (or,\n"
	"                     without CMD, its Cmd); unmounted when fsvm ends\n"
	"  --entrypoint PROG  with --image, PROG instead of the image's Entrypoint\n"
	"                     (and no Cmd unless CMD is given); '' for none\n"
	"  --share HOST[:GUEST][:OPTIONS]\n"
	"                     give the guest a host folder at GUEST (default: the same\n"
	"                     path); OPTIONS, comma-separated: ro or rw (default),\n"
	"                     dev (the guest may make device nodes; needs --host-root);\n"
	"                     repeatable (up to 8)\n"
	"  --rodir [GUEST=]HOST, --rwdir [GUEST=]HOST\n"
	"                     --share HOST:GUEST:ro and --share HOST:GUEST:rw, as\n"
	"                     virtme-ng spells them\n"
	"  --cache MODE       guest caching of shared files: none, auto (default), always\n"
	"  --dax SIZE         DAX window per share, a power of two from 128M (default:\n"
	"                     twice the RAM, at most 8G); 0 turns DAX off\n"
	"  --transport T      virtio transport of the shares: pci (default) or mmio\n"
	"                     (virtio-mmio devices described by ACPI tables)\n"
	"  --microvm          boot the microVM guest (make guest-microvm; with\n"
	"                     --kernel, that kernel) the fastest way: virtio-mmio\n"
	"                     devices named on the kernel command line, no ACPI\n"
	"  --uid-map GUEST:HOST[:COUNT], --gid-map GUEST:HOST[:COUNT]\n"
	"                     guest ids GUEST.. are host ids HOST.. on the shares;\n"
	"                     repeatable (up to 8). Default: guest root is you (or,\n"
	"                     started as root, $SUDO_UID:$SUDO_GID, else nobody);\n"
	"                     other guest ids own no host files. Maps of more ids\n"
	"                     than your own need root (or newuidmap and /etc/subuid)\n"
	"  --host-root        guest root is host root on the shares: fsvm keeps root's\n"
	"                     privileges (fsvm must run as root; trusted guests only)\n"
	"  --net MODE[,OPTIONS]\n"
	"                     the guest's network (eth0, configured before CMD starts):\n"
	"                     none (default); user: through passt, as you, with DHCP,\n"
	"                     DNS and IPv6 from it, the host's loopback out of reach\n"
	"                     unless OPTIONS has host-loopback (the gateway address is\n"
	"                     then the host); tap:NAME: an existing tap device (root,\n"
	"                     or its owner). OPTIONS also: ip=ADDRESS/PREFIX (a static\n"
	"                     address, else DHCP), gw=ADDRESS, dns=ADDRESS\n"
	"  --mac XX:XX:XX:XX:XX:XX\n"
	"                     the guest's MAC address (default: random, local)\n"
	"  --publish HOST_PORT[:GUEST_PORT][/udp]\n"
	"                     forward a host port to the guest (--net user); repeatable\n"
	"  --disk FILE[:ro][,serial=NAME][,direct]\n"
	"                     a raw image or block device as a virtio-blk disk\n"
	"                     (/dev/vda, /dev/vdb, ... in order); ro: read-only;\n"
	"                     direct: bypass the host's page cache (O_DIRECT). An\n"
	"                     image another VM has open is refused; repeatable (up\n"
	"                     to 8)\n"
	"  --gdb PORT|PATH    a gdb stub on 127.0.0.1:PORT, or on the UNIX socket\n"
	"                     PATH (a path with a '/'): target remote :PORT\n"
	"  --gdb-wait         with --gdb, the guest waits for gdb before its first\n"
	"                     instruction\n"
	"  --timeout SECONDS  stop the guest after this long and exit 124\n"
	"  --stdin MODE       auto (default): when fsvm's stdin is a pipe or a file,\n"
	"                     CMD reads it as a pipe, streamed to its end (a terminal\n"
	"                     is CMD's terminal when stdout is one too, Ctrl-A x\n"
	"                     ending the VM, else CMD's stdin is empty); none:\n"
	"                     CMD's stdin is empty\n"
	"  --json[=FILE]      on exit, print one JSON object (exit status and its\n"
	"                     meaning, boot timings, requests per share, peak memory)\n"
	"                     on stdout after CMD's output, or write it to FILE\n"
	"  --json-file FILE   --json=FILE\n"
	"  -v, --verbose      report boot progress and timings on stderr\n"
	"  --setup-only       build the VM, report the set-up time, do not run it\n"
	"  --check            check what needs no KVM (flags, config, shares, kernel,\n"
	"                     initramfs, guest folder, id maps, disks, network), say\n"
	"                     each problem, run nothing: exit 0 or 125\n"
	"  --no-seccomp       run without the system-call filter (for debugging)\n"
	"  --snapshot-to DIR  boot, run CMD if given (a warm-up, whose status must be\n"
	"                     0; what it leaves running stays), stop where the guest\n"
	"                     is ready for a command and save the VM in DIR\n"
	"                     (docs/snapshot.md)\n"
	"  --restore DIR      start DIR's snapshot and run CMD in it: the machine\n"
	"                     and shares are the snapshot's, so only --timeout,\n"
	"                     --json, -v, --cwd, --env, --exec and --stdin apply\n"
	"\n"
	"Environment:\n"
	"  FSVM_CONFIG        the default config file, which must exist (set and\n"
	"                     empty: none; unset: ~/.config/fsvm/config.json, if\n"
	"                     there is one)\n"
	"  FSVM_GUEST_DIR     the folder holding the packaged guests: 6.1/, 6.12/ and\n"
	"                     microvm/, each with kernel/vmlinux (or vmlinuz) and\n"
	"                     initramfs.cpio (default: build/guest beside the fsvm\n"
	"                     binary, else ../lib/fsvm or ../share/fsvm beside it)\n"
	"  FSVM_GUEST_KERNEL  the default for --guest-kernel\n"
	"  HOME               where ~/.config is; with --user, CMD's HOME when the\n"
	"                     password database has none for you\n"
	"  SUDO_UID, SUDO_GID\n"
	"                     fsvm started as root: who guest root is on the shares\n";

unsigned int cli_default_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
	return n < 1 ? 1 : n > 8 ? 8 : (unsigned int)n;
}

uint64_t cli_default_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size / 8
					     : 0;
	mem &= ~((1ULL << 20) - 1); /* whole MiB */
	return mem < (512ULL << 20) ? 512ULL << 20
	       : mem > (4ULL << 30) ? 4ULL << 30
				    : mem;
}

int cli_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned int shift = 20;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i')
		end++;
	if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)v << shift;
	return 0;
}

/* What --guest-kernel and $FSVM_GUEST_KERNEL take, for their errors. */
#define GUEST_KERNEL_CHOICES \
	"'%s' is not 6.1, 6.12, microvm or a folder (a path with a '/')"

/* A packaged guest's name, or a folder: anything with a '/'. */
static bool guest_kernel_valid(const char *name)
{
	return !strcmp(name, "6.1") || !strcmp(name, "6.12") ||
	       !strcmp(name, CLI_MICROVM_GUEST) || strchr(name, '/');
}

int cli_error(char *err, size_t errlen, const char *fmt, const char *arg)
{
	snprintf(err, errlen, fmt, arg);
	return -EINVAL;
}

enum { OPT_KERNEL = 256, OPT_MODULES, OPT_INITRD, OPT_CPUS, OPT_MEM,
       OPT_APPEND, OPT_CMDLINE,
       OPT_TIMEOUT, OPT_SETUP_ONLY, OPT_ROOT, OPT_RW_ROOT, OPT_SHARE,
       OPT_RODIR, OPT_RWDIR, OPT_CACHE, OPT_DAX, OPT_TRANSPORT, OPT_UID_MAP,
       OPT_GID_MAP, OPT_HOST_ROOT, OPT_NO_SECCOMP, OPT_CWD, OPT_ENV,
       OPT_USER, OPT_JSON, OPT_JSON_FILE, OPT_CONFIG, OPT_GUEST_KERNEL, OPT_MICROVM,
       OPT_NET, OPT_MAC, OPT_PUBLISH, OPT_DISK, OPT_GDB, OPT_GDB_WAIT,
       OPT_PROFILE, OPT_ENV_FILE, OPT_EXEC, OPT_STDIN, OPT_IMAGE,
       OPT_ENTRYPOINT, OPT_CHECK, OPT_SNAPSHOT_TO, OPT_RESTORE };

/* Every option, once: getopt reads this table, and so does a config file,
 * whose keys are the long names (vmm/config_file.c). */
static const struct option run_options[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"profile", required_argument, NULL, OPT_PROFILE},
	{"guest-kernel", required_argument, NULL, OPT_GUEST_KERNEL},
	{"kernel", required_argument, NULL, OPT_KERNEL},
	{"modules", required_argument, NULL, OPT_MODULES},
	{"initrd", required_argument, NULL, OPT_INITRD},
	{"cpus", required_argument, NULL, OPT_CPUS},
	{"mem", required_argument, NULL, OPT_MEM},
	{"memory", required_argument, NULL, OPT_MEM}, /* virtme-ng's */
	{"append", required_argument, NULL, OPT_APPEND},
	{"cmdline", required_argument, NULL, OPT_CMDLINE},
	{"cwd", required_argument, NULL, OPT_CWD},
	{"env", required_argument, NULL, OPT_ENV},
	{"env-file", required_argument, NULL, OPT_ENV_FILE},
	{"exec", required_argument, NULL, OPT_EXEC}, /* virtme-ng's */
	{"user", no_argument, NULL, OPT_USER},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"stdin", required_argument, NULL, OPT_STDIN},
	{"root", required_argument, NULL, OPT_ROOT},
	{"rw-root", no_argument, NULL, OPT_RW_ROOT},
	{"image", required_argument, NULL, OPT_IMAGE},
	{"entrypoint", required_argument, NULL, OPT_ENTRYPOINT},
	{"share", required_argument, NULL, OPT_SHARE},
	{"rodir", required_argument, NULL, OPT_RODIR},
	{"rwdir", required_argument, NULL, OPT_RWDIR},
	{"cache", required_argument, NULL, OPT_CACHE},
	{"dax", required_argument, NULL, OPT_DAX},
	{"transport", required_argument, NULL, OPT_TRANSPORT},
	{"microvm", no_argument, NULL, OPT_MICROVM},
	{"uid-map", required_argument, NULL, OPT_UID_MAP},
	{"gid-map", required_argument, NULL, OPT_GID_MAP},
	{"host-root", no_argument, NULL, OPT_HOST_ROOT},
	{"net", required_argument, NULL, OPT_NET},
	{"mac", required_argument, NULL, OPT_MAC},
	{"publish", required_argument, NULL, OPT_PUBLISH},
	{"disk", required_argument, NULL, OPT_DISK},
	{"gdb", required_argument, NULL, OPT_GDB},
	{"gdb-wait", no_argument, NULL, OPT_GDB_WAIT},
	{"json", optional_argument, NULL, OPT_JSON},
	{"json-file", required_argument, NULL, OPT_JSON_FILE},
	{"verbose", no_argument, NULL, 'v'},
	{"setup-only", no_argument, NULL, OPT_SETUP_ONLY},
	{"check", no_argument, NULL, OPT_CHECK},
	{"snapshot-to", required_argument, NULL, OPT_SNAPSHOT_TO},
	{"restore", required_argument, NULL, OPT_RESTORE},
	{"no-seccomp", no_argument, NULL, OPT_NO_SECCOMP},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Options a list in a config file may give more than once. */
/* virtme-ng's short spellings of long options that take a value. */
static const struct {
	char letter;
	int opt;
} short_aliases[] = {{'p', OPT_CPUS}, {'m', OPT_MEM}};
#define SHORT_OPTIONS "+vhp:m:"

static int short_alias(int opt)
{
	for (size_t i = 0; i < sizeof(short_aliases) / sizeof(short_aliases[0]); i++)
		if (short_aliases[i].letter == opt)
			return short_aliases[i].opt;
	return opt;
}

static bool repeatable(int id)
{
	return id == OPT_APPEND || id == OPT_CMDLINE || id == OPT_ENV ||
	       id == OPT_ENV_FILE || id == OPT_SHARE ||
	       id == OPT_RODIR || id == OPT_RWDIR || id == OPT_UID_MAP ||
	       id == OPT_GID_MAP || id == OPT_PUBLISH || id == OPT_DISK;
}

char *cli_own(struct fsvm_config *cfg, char *s)
{
	char **owned = s ? realloc(cfg->owned, (cfg->nr_owned + 1) *
						       sizeof(*owned))
			 : NULL;
	if (!owned) {
		free(s);
		return NULL;
	}
	cfg->owned = owned;
	owned[cfg->nr_owned++] = s;
	return s;
}

void cli_free(struct fsvm_config *cfg)
{
	for (size_t i = 0; i < cfg->nr_owned; i++)
		free(cfg->owned[i]);
	free(cfg->owned);
	cfg->owned = NULL;
	cfg->nr_owned = 0;
}

/* Applies a comma-separated option list to share; -EINVAL for an
 * unknown option. */
static int share_options(char *opts, struct cli_share *share)
{
	for (char *o = opts, *next; o; o = next) {
		next = strchr(o, ',');
		if (next)
			*next++ = '\0';
		if (!strcmp(o, "ro") || !strcmp(o, "rw"))
			share->readonly = !strcmp(o, "ro");
		else if (!strcmp(o, "dev"))
			share->devices = true;
		else
			return -EINVAL;
	}
	return 0;
}

int cli_parse_share(char *spec, struct cli_share *share)
{
	*share = (struct cli_share){.host = spec};
	char *opts = NULL;
	char *guest = strchr(spec, ':');
	if (guest) {
		*guest++ = '\0';
		char *colon = strchr(guest, ':');
		if (colon) {
			*colon = '\0';
			opts = colon + 1;
		} else if (*guest && guest[0] != '/') {
			opts = guest; /* HOST:OPTIONS */
			guest = NULL;
		}
	}
	/* No GUEST: the host folder's absolute path, resolved at run time. */
	share->guest = guest && *guest ? guest : NULL;
	if (opts && (!*opts || share_options(opts, share)))
		return -EINVAL;
	if (!*spec || (share->guest && share->guest[0] != '/'))
		return -EINVAL;
	return 0;
}

int cli_parse_id_map(const char *spec, struct cli_id_map *map)
{
	unsigned long long v[3] = {0, 0, 1};
	const char *p = spec;
	int parts = 0;
	for (int i = 0; i < 3; i++, parts++) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (errno || v[i] > UINT32_MAX)
			return -EINVAL;
		p = end;
		if (!*p) {
			parts++;
			break;
		}
		if (*p++ != ':' || i == 2)
			return -EINVAL;
	}
	/* Ids are 32 bits and (uid_t)-1 means "no id". */
	if (parts < 2 || v[2] == 0 || v[0] + v[2] > UINT32_MAX ||
	    v[1] + v[2] > UINT32_MAX)
		return -EINVAL;
	*map = (struct cli_id_map){.guest = (uint32_t)v[0],
				   .host = (uint32_t)v[1],
				   .count = (uint32_t)v[2]};
	return 0;
}

static int add_id_map(const char *opt, const char *arg,
		      struct cli_id_map *maps, unsigned int *nr, char *err,
		      size_t errlen)
{
	char what[32];
	snprintf(what, sizeof(what), "%s", opt);
	if (*nr == CLI_MAX_ID_MAPS) {
		snprintf(err, errlen, "%s %s: at most %d maps", what, arg,
			 CLI_MAX_ID_MAPS);
		return -EINVAL;
	}
	if (cli_parse_id_map(arg, &maps[*nr])) {
		snprintf(err, errlen,
			 "%s: '%s' is not GUEST:HOST[:COUNT] (ids below 2^32)",
			 what, arg);
		return -EINVAL;
	}
	(*nr)++;
	return 0;
}

/* --append: the values joined by spaces, as one command line. */
static int append_cmdline(struct fsvm_config *cfg, const char *arg, char *err,
			  size_t errlen)
{
	size_t len = strlen(cfg->cmdline_buf);
	int n = snprintf(cfg->cmdline_buf + len, sizeof(cfg->cmdline_buf) - len,
			 "%s%s", len ? " " : "", arg);
	if (n < 0 || (size_t)n >= sizeof(cfg->cmdline_buf) - len) {
		cfg->cmdline_buf[len] = '\0';
		return cli_error(err, errlen, "%s",
				 "--append: the kernel command line would be longer than 2047 bytes");
	}
	cfg->cmdline = cfg->cmdline_buf;
	return 0;
}

/* --env NAME=VALUE, or NAME: this process's value (none: nothing). */
static int add_env(struct fsvm_config *cfg, char *arg, char *err,
		   size_t errlen)
{
	if (!*arg || *arg == '=')
		return cli_error(err, errlen,
				 "--env: '%s' is not NAME or NAME=VALUE", arg);
	if (cfg->nr_env == CLI_MAX_ENV)
		return cli_error(err, errlen, "--env %s: at most 256 variables",
				 arg);
	const char *value = strchr(arg, '=') ? NULL : getenv(arg);
	if (!strchr(arg, '=') && !value)
		return 0;
	if (value) {
		char *s;
		if (asprintf(&s, "%s=%s", arg, value) < 0 ||
		    !(arg = cli_own(cfg, s)))
			return cli_error(err, errlen, "--env %s: out of memory",
					 arg);
	}
	cfg->env[cfg->nr_env++] = arg;
	return 0;
}

/* virtme-ng's --rodir/--rwdir: GUEST=HOST, or one path for both. */
static int add_dir_share(struct fsvm_config *cfg, bool readonly, char *arg,
			 char *err, size_t errlen)
{
	const char *opt = readonly ? "--rodir" : "--rwdir";
	char msg[64];
	snprintf(msg, sizeof(msg), "%s %%s: at most 8 shares", opt);
	if (cfg->nr_shares == CLI_MAX_SHARES)
		return cli_error(err, errlen, msg, arg);
	char *eq = strchr(arg, '=');
	const char *host = eq ? eq + 1 : arg;
	const char *guest = eq ? arg : NULL;
	if ((eq && (eq == arg || arg[0] != '/')) || !*host) {
		snprintf(msg, sizeof(msg),
			 "%s: '%%s' is not [GUEST=]HOST with an absolute GUEST",
			 opt);
		return cli_error(err, errlen, msg, arg);
	}
	if (eq)
		*eq = '\0';
	cfg->shares[cfg->nr_shares++] = (struct cli_share){
		.host = host, .guest = guest, .readonly = readonly};
	return 0;
}

int cli_parse_disk(char *spec, struct cli_disk *disk)
{
	*disk = (struct cli_disk){.path = spec};
	char *opts = strchr(spec, ',');
	if (opts)
		*opts++ = '\0';
	size_t len = strlen(spec);
	if (len >= 3 && !strcmp(spec + len - 3, ":ro")) {
		spec[len - 3] = '\0';
		disk->readonly = true;
	} else if (len >= 3 && !strcmp(spec + len - 3, ":rw")) {
		spec[len - 3] = '\0';
	}
	if (!*spec)
		return -EINVAL;
	for (char *o = opts, *next; o; o = next) {
		next = strchr(o, ',');
		if (next)
			*next++ = '\0';
		if (!strcmp(o, "ro") || !strcmp(o, "rw")) {
			disk->readonly = !strcmp(o, "ro");
		} else if (!strcmp(o, "direct")) {
			disk->direct = true;
		} else if (!strncmp(o, "serial=", 7)) {
			const char *name = o + 7;
			/* The guest shows it in sysfs: printable, no blanks. */
			if (!*name || strlen(name) > CLI_DISK_SERIAL_MAX)
				return -EINVAL;
			for (const char *c = name; *c; c++)
				if (!isgraph((unsigned char)*c))
					return -EINVAL;
			strcpy(disk->serial, name);
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

static int add_disk(struct fsvm_config *cfg, char *arg, char *err,
		    size_t errlen)
{
	if (cfg->nr_disks == CLI_MAX_DISKS)
		return cli_error(err, errlen, "--disk %s: at most 8 disks", arg);
	cli_error(err, errlen,
		  "--disk: '%s' is not FILE[:ro][,serial=NAME][,direct] (a serial of 1 to 20 printable characters)",
		  arg);
	if (cli_parse_disk(arg, &cfg->disks[cfg->nr_disks]))
		return -EINVAL;
	cfg->nr_disks++;
	return 0;
}

/* A port (1 to 65535) or a socket path: anything with a '/'. */
static int set_gdb(struct fsvm_config *cfg, char *arg, char *err,
		   size_t errlen)
{
	if (!strchr(arg, '/')) {
		char *end;
		errno = 0;
		long port = strtol(arg, &end, 10);
		if (errno || *end || end == arg || port < 1 || port > 65535)
			return cli_error(err, errlen,
					 "--gdb: '%s' is not a port from 1 to 65535 or a socket path (with a '/')",
					 arg);
	} else if (strlen(arg) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		return cli_error(err, errlen,
				 "--gdb: '%s' is too long for a socket path", arg);
	}
	cfg->gdb = arg;
	return 0;
}

static int parse_run_option(int opt, char *arg, struct fsvm_config *cfg,
			    char *err, size_t errlen)
{
	char *end;
	switch (opt) {
	case OPT_ROOT:
		cfg->root = arg;
		return 0;
	case OPT_RW_ROOT:
		cfg->rw_root = true;
		return 0;
	case OPT_IMAGE:
		if (!*arg)
			return cli_error(err, errlen, "%s",
					 "--image: an image's name or id, not ''");
		cfg->image = arg;
		return 0;
	case OPT_ENTRYPOINT:
		cfg->entrypoint = arg;
		return 0;
	case OPT_DAX: {
		uint64_t size;
		/* The guest maps the window with memremap_pages: whole
		 * 128 MiB sections, naturally aligned as a BAR must be. */
		if (cli_parse_size(arg, &size) ||
		    (size && (size < (128ULL << 20) || (size & (size - 1)) ||
			      size > (1ULL << 40))))
			return cli_error(err, errlen,
					 "--dax: '%s' is not 0 or a power of two from 128M to 1T",
					 arg);
		cfg->dax = (int64_t)size;
		return 0;
	}
	case OPT_TRANSPORT:
		if (!strcmp(arg, "pci"))
			cfg->transport = CLI_TRANSPORT_PCI;
		else if (!strcmp(arg, "mmio"))
			cfg->transport = CLI_TRANSPORT_MMIO;
		else
			return cli_error(err, errlen,
					 "--transport: '%s' is not pci or mmio",
					 arg);
		cfg->transport_given = true;
		return 0;
	case OPT_MICROVM:
		cfg->microvm = true;
		return 0;
	case OPT_CACHE:
		if (strcmp(arg, "none") && strcmp(arg, "auto") &&
		    strcmp(arg, "always"))
			return cli_error(err, errlen,
					 "--cache: '%s' is not none, auto or always",
					 arg);
		cfg->cache = arg;
		return 0;
	case OPT_SHARE:
		if (cfg->nr_shares == CLI_MAX_SHARES)
			return cli_error(err, errlen,
					 "--share %s: at most 8 shares", arg);
		/* The message is made first: parsing splits arg in place. */
		cli_error(err, errlen,
			  "--share: '%s' is not HOST[:GUEST][:OPTIONS] with an absolute GUEST path and options ro, rw, dev",
			  arg);
		if (cli_parse_share(arg, &cfg->shares[cfg->nr_shares]))
			return -EINVAL;
		cfg->nr_shares++;
		return 0;
	case OPT_UID_MAP:
		return add_id_map("--uid-map", arg, cfg->uid_map,
				  &cfg->nr_uid_maps, err, errlen);
	case OPT_GID_MAP:
		return add_id_map("--gid-map", arg, cfg->gid_map,
				  &cfg->nr_gid_maps, err, errlen);
	case OPT_HOST_ROOT:
		cfg->host_root = true;
		return 0;
	case OPT_NET:
		return net_options_parse(&cfg->net, arg, err, errlen);
	case OPT_MAC:
		return net_options_mac(&cfg->net, arg, err, errlen);
	case OPT_PUBLISH:
		return net_options_publish(&cfg->net, arg, err, errlen);
	case OPT_DISK:
		return add_disk(cfg, arg, err, errlen);
	case OPT_GDB:
		return set_gdb(cfg, arg, err, errlen);
	case OPT_GDB_WAIT:
		cfg->gdb_wait = true;
		return 0;
	case OPT_GUEST_KERNEL:
		if (!guest_kernel_valid(arg))
			return cli_error(err, errlen,
					 "--guest-kernel: " GUEST_KERNEL_CHOICES,
					 arg);
		cfg->guest_kernel = arg;
		return 0;
	case OPT_KERNEL:
		cfg->kernel = arg;
		return 0;
	case OPT_MODULES:
		cfg->modules = arg;
		return 0;
	case OPT_INITRD:
		cfg->initrd = arg;
		return 0;
	case OPT_APPEND:
	case OPT_CMDLINE:
		return append_cmdline(cfg, arg, err, errlen);
	case OPT_CWD:
		if (arg[0] != '/')
			return cli_error(err, errlen,
					 "--cwd: '%s' is not an absolute path",
					 arg);
		cfg->cwd = arg;
		return 0;
	case OPT_ENV:
		return add_env(cfg, arg, err, errlen);
	case OPT_ENV_FILE:
		return env_file_load(arg, cfg, err, errlen);
	case OPT_EXEC:
		if (!*arg)
			return cli_error(err, errlen, "%s",
					 "--exec: the command is empty");
		/* It replaces a command said before it (a config file's). */
		cfg->exec = arg;
		cfg->guest_argv = NULL;
		cfg->guest_argc = 0;
		return 0;
	case OPT_USER:
		cfg->user = true;
		return 0;
	case OPT_JSON:
	case OPT_JSON_FILE:
		cfg->json = true;
		cfg->json_file = arg && *arg ? arg : NULL;
		return 0;
	case OPT_RODIR:
	case OPT_RWDIR:
		return add_dir_share(cfg, opt == OPT_RODIR, arg, err, errlen);
	case OPT_CONFIG:
	case OPT_PROFILE:
		return 0; /* read before the other flags (cli_parse) */
	case OPT_CPUS: {
		errno = 0;
		long n = strtol(arg, &end, 10);
		if (errno || *end || end == arg || n < 1 ||
		    n > MPTABLE_MAX_CPUS)
			return cli_error(err, errlen,
					 "--cpus: '%s' is not a number from 1 to 64",
					 arg);
		cfg->cpus = (unsigned int)n;
		return 0;
	}
	case OPT_MEM:
		if (cli_parse_size(arg, &cfg->mem) || cfg->mem < CLI_MIN_MEM ||
		    cfg->mem > CLI_MAX_MEM || cfg->mem % GUEST_PAGE_SIZE)
			return cli_error(err, errlen,
					 "--mem: '%s' is not a size from 64M to 1T (e.g. 512M, 2G)",
					 arg);
		return 0;
	case OPT_TIMEOUT:
		errno = 0;
		cfg->timeout = strtod(arg, &end);
		if (errno || *end || end == arg || !isfinite(cfg->timeout) ||
		    cfg->timeout <= 0 || cfg->timeout > CLI_MAX_TIMEOUT)
			return cli_error(err, errlen,
					 "--timeout: '%s' is not a positive number of seconds (at most 1e9)",
					 arg);
		return 0;
	case 'v':
		cfg->verbose = true;
		return 0;
	case OPT_SETUP_ONLY:
		cfg->setup_only = true;
		return 0;
	case OPT_NO_SECCOMP:
		cfg->no_seccomp = true;
		return 0;
	case OPT_STDIN:
		if (strcmp(arg, "auto") && strcmp(arg, "none"))
			return cli_error(err, errlen,
					 "--stdin: '%s' is not auto or none", arg);
		cfg->stdin_none = !strcmp(arg, "none");
		return 0;
	case OPT_CHECK:
		cfg->check = true;
		return 0;
	case OPT_SNAPSHOT_TO:
		cfg->snapshot_to = arg;
		return 0;
	case OPT_RESTORE:
		cfg->restore = arg;
		return 0;
	case 'h':
		cfg->command = CLI_HELP;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Edits (insert, delete, replace, swap two neighbours) from a to b, for
 * "did you mean": "--cpsu" is one from "--cpus". */
static size_t edits(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b), rows[3][64];
	if (alen >= 63 || blen >= 63)
		return SIZE_MAX;
	size_t *before = rows[0], *prev = rows[1], *row = rows[2];
	for (size_t j = 0; j <= blen; j++)
		prev[j] = j;
	for (size_t i = 1; i <= alen; i++) {
		row[0] = i;
		for (size_t j = 1; j <= blen; j++) {
			size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
			best = prev[j] + 1 < best ? prev[j] + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && before[j - 2] + 1 < best)
				best = before[j - 2] + 1;
			row[j] = best;
		}
		size_t *oldest = before;
		before = prev;
		prev = row;
		row = oldest;
	}
	return prev[blen];
}

/* The options an unknown long one was most likely meant to be, if any is
 * near enough (one edit in a short name, two in a longer one): *near,
 * and *also when another is as near ("--ent": --env or --net). */
static void nearest_options(const char *word, const char **near,
			    const char **also)
{
	const char *name = word + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	size_t best = len <= 4 ? 2 : 3;
	*near = *also = NULL;
	for (const struct option *o = run_options; o->name; o++) {
		size_t d = edits(name, len, o->name);
		if (d < best) {
			best = d;
			*near = o->name;
			*also = NULL;
		} else if (d == best && *near && !*also) {
			*also = o->name;
		}
	}
}

/* getopt_long said '?': say which option was wrong, and how. */
static int cli_option_error(char **argv, char *err, size_t errlen)
{
	for (const struct option *o = run_options; o->name; o++) {
		if (!optopt || optopt != o->val)
			continue;
		snprintf(err, errlen,
			 o->has_arg ? "option '--%s' needs a value"
				    : "option '--%s' does not take a value",
			 o->name);
		return -EINVAL;
	}
	const char *word = argv[optind - 1];
	const char *near = NULL, *also = NULL;
	if (!optopt && !strncmp(word, "--", 2))
		nearest_options(word, &near, &also);
	if (optopt && short_alias(optopt) != optopt)
		snprintf(err, errlen, "option '-%c' needs a value", optopt);
	else if (optopt)
		snprintf(err, errlen, "unknown option '-%c' (try fsvm --help)",
			 optopt);
	else if (near && also)
		snprintf(err, errlen,
			 "unknown option '%s' (did you mean '--%s' or '--%s'?)",
			 word, near, also);
	else if (near)
		snprintf(err, errlen, "unknown option '%s' (did you mean '--%s'?)",
			 word, near);
	else
		snprintf(err, errlen, "unknown option '%s' (try fsvm --help)",
			 word);
	return -EINVAL;
}

static const struct option *find_option(const char *name)
{
	for (const struct option *o = run_options; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

int cli_option_kind(const char *name, bool *repeats)
{
	const struct option *o = find_option(name);
	if (!o || o->val == OPT_CONFIG || o->val == OPT_PROFILE || o->val == 'h')
		return -ENOENT; /* no config file or profile in a config file, no help */
	*repeats = repeatable(o->val);
	return o->has_arg == no_argument ? 0 : 1;
}

int cli_apply(struct fsvm_config *cfg, const char *name, char *value,
	      char *err, size_t errlen)
{
	bool repeats;
	int kind = cli_option_kind(name, &repeats);
	if (kind < 0)
		return kind;
	if ((kind == 0) != !value)
		return cli_error(err, errlen,
				 kind ? "option '--%s' needs a value"
				      : "option '--%s' does not take a value",
				 name);
	return parse_run_option(find_option(name)->val, value, cfg, err,
				errlen);
}

/* What getopt would take silently: a prefix of a long option (the config
 * file takes names whole, so the command line does too); for a value the
 * next word when that is "--" or another option; and after a bare --json
 * a file name that would run as the guest's command. */
static bool misparsed(const struct option *o, const char *word,
		      const char *next, char *err, size_t errlen)
{
	const char *name = word + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	if (len != strlen(o->name) || strncmp(name, o->name, len)) {
		/* A prefix may also be a near miss of others ("--ent":
		 * --entrypoint, or --env or --net mistyped): name them all. */
		const char *near, *also;
		nearest_options(word, &near, &also);
		if (near && !strcmp(near, o->name))
			near = also, also = NULL;
		if (also && !strcmp(also, o->name))
			also = NULL;
		if (!near)
			snprintf(err, errlen, "option '--%.*s': write it whole, '--%s'",
				 (int)len, name, o->name);
		else
			snprintf(err, errlen,
				 "unknown option '--%.*s' (did you mean '--%s'%s%s%s or '--%s'?)",
				 (int)len, name, o->name, also ? ", '--" : "",
				 also ? near : "", also ? "'" : "", also ? also : near);
		return true;
	}
	size_t nlen = next ? strlen(next) : 0;
	if (o->val == OPT_JSON && !eq && nlen > 5 &&
	    !strcmp(next + nlen - 5, ".json")) {
		snprintf(err, errlen,
			 "--json takes its file as --json=%s or --json-file %s ('%s' would run as the guest's command)",
			 next, next, next);
		return true;
	}
	if (o->has_arg != required_argument || eq)
		return false;
	if (!strcmp(optarg, "--") ||
	    (!strncmp(optarg, "--", 2) && isalpha((unsigned char)optarg[2]))) {
		snprintf(err, errlen,
			 "option '--%s' needs a value, not '%s' (if it is one: --%s=%s)",
			 o->name, optarg, o->name, optarg);
		return true;
	}
	return false;
}

/* What a restore may still set: the command's, and the run's reporting;
 * the machine is the snapshot's. */
static bool restore_takes(int opt)
{
	return opt == OPT_RESTORE || opt == OPT_TIMEOUT || opt == OPT_JSON ||
	       opt == OPT_JSON_FILE || opt == 'v' || opt == OPT_CWD ||
	       opt == OPT_ENV || opt == OPT_ENV_FILE || opt == OPT_EXEC ||
	       opt == OPT_STDIN || opt == OPT_NO_SECCOMP;
}

/* Copies of the words, made before parsing splits some in place (a
 * --share's value): --snapshot-to keeps them. */
static char **copy_words(struct fsvm_config *cfg, int argc, char **argv)
{
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));
	if (!copy || !cli_own(cfg, (char *)copy))
		return NULL;
	for (int i = 0; i < argc; i++)
		if (!(copy[i] = cli_own(cfg, strdup(argv[i]))))
			return NULL;
	return copy;
}

/* --snapshot-to's: the flags that made the machine (words [1, end) of
 * sub_argv as given, without --snapshot-to and its value), for its
 * restores. */
static int keep_snapshot_words(struct fsvm_config *cfg, char **sub_argv,
			       int end)
{
	/* What the host chose (its CPUs and RAM, $FSVM_GUEST_KERNEL) is
	 * said too, last: another host would choose otherwise. */
	char *chosen = NULL;
	if (asprintf(&chosen, "--cpus=%u%c--mem=%lluK%c--guest-kernel=%s",
		     cfg->cpus, 0, (unsigned long long)(cfg->mem >> 10), 0,
		     cfg->guest_kernel) < 0 ||
	    !cli_own(cfg, chosen))
		return -ENOMEM;
	char **words = calloc((size_t)end + 4, sizeof(*words));
	if (!words || !cli_own(cfg, (char *)words))
		return -ENOMEM;
	unsigned int n = 0;
	for (int i = 1; i < end; i++) {
		if (!strcmp(sub_argv[i], "--snapshot-to"))
			i++;
		else if (strncmp(sub_argv[i], "--snapshot-to=", 14) &&
			 strcmp(sub_argv[i], "--"))
			words[n++] = sub_argv[i];
	}
	for (int i = 0; i < 3; i++, chosen += strlen(chosen) + 1)
		words[n++] = chosen;
	cfg->snapshot_words = (const char *const *)words;
	cfg->nr_snapshot_words = n;
	return 0;
}

/* --help (or -h) among the words before a "--": it wins over whatever
 * else is wrong there. */
static bool asks_for_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

static int unknown_command(const char *sub, char *err, size_t errlen)
{
	static const char *const commands[] = {"run", "kconfig", "oci",
					       "help", "version"};
	size_t len = strlen(sub), best = len <= 4 ? 2 : 3;
	const char *near = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		size_t d = edits(sub, len, commands[i]);
		if (d < best) {
			best = d;
			near = commands[i];
		}
	}
	if (near && sub[0] != '-')
		snprintf(err, errlen, "unknown command '%s' (did you mean '%s'?)",
			 sub, near);
	else
		snprintf(err, errlen, "unknown command '%s' (try fsvm --help)",
			 sub);
	return -EINVAL;
}

/* --exec CMD: the guest's /bin/sh -c CMD, as virtme-ng runs it. */
static int exec_argv(struct fsvm_config *cfg)
{
	char **argv = calloc(4, sizeof(*argv));
	if (!argv || !cli_own(cfg, (char *)argv))
		return -ENOMEM;
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)cfg->exec;
	cfg->guest_argv = argv;
	cfg->guest_argc = 3;
	return 0;
}

void cli_list_options(FILE *out)
{
	for (const struct option *o = run_options; o->name; o++)
		fprintf(out, "--%s%s\n", o->name,
			o->has_arg == required_argument ? " VALUE" : "");
	for (size_t i = 0; i < sizeof(short_aliases) / sizeof(short_aliases[0]); i++)
		fprintf(out, "-%c VALUE\n", short_aliases[i].letter);
	fputs("-v\n-h\n", out);
}

/* The first words of a restore's flags are its snapshot's: --restore
 * refuses no machine flag among them. */
static int snapshot_words_given;

int cli_parse(int argc, char **argv, struct fsvm_config *cfg, char *err,
	      size_t errlen)
{
	*cfg = (struct fsvm_config){.command = CLI_RUN,
				    .cpus = cli_default_cpus(),
				    .mem = cli_default_mem(),
				    .root = "/",
				    .cache = "auto",
				    .dax = -1};
	if (argc < 2) {
		snprintf(err, errlen, "no command given (try fsvm --help)");
		return -EINVAL;
	}
	const char *sub = argv[1];
	/* fsvm run finds its --help among its flags, below (what follows
	 * them is the guest's command: fsvm run ls --help is ls's). */
	if (!strcmp(sub, "help") ||
	    (strcmp(sub, "run") && asks_for_help(argc, argv))) {
		cfg->command = CLI_HELP;
		return 0;
	}
	if (!strcmp(sub, "--version") || !strcmp(sub, "version")) {
		cfg->command = CLI_VERSION;
		return 0;
	}
	if (!strcmp(sub, "--list-options")) {
		cfg->command = CLI_LIST_OPTIONS;
		return 0;
	}
	if (!strcmp(sub, "kconfig")) {
		int first = 2;
		for (; first < argc; first++) {
			if (!strcmp(argv[first], "--net"))
				cfg->kconfig_features |= KCONFIG_NET;
			else if (!strcmp(argv[first], "--disk"))
				cfg->kconfig_features |= KCONFIG_DISK;
			else
				break;
		}
		if (argc > first + 1 || (argc == first + 1 && argv[first][0] == '-'))
			return cli_error(err, errlen, "%s",
					 "kconfig: one .config at most (usage: fsvm kconfig [--net] [--disk] [.config])");
		cfg->command = CLI_KCONFIG;
		cfg->kconfig = argc == first + 1 ? argv[first] : ".config";
		return 0;
	}
	if (strcmp(sub, "run"))
		return unknown_command(sub, err, errlen);

	/* Two passes over the flags: the first checks them and finds
	 * --config, whose file is applied before the second, so flags
	 * override it. '+': the guest command starts at the first
	 * non-option word. */
	int sub_argc = argc - 1;
	char **sub_argv = argv + 1;
	char **given = copy_words(cfg, sub_argc, sub_argv);
	if (!given)
		return cli_error(err, errlen, "%s", "out of memory");
	int opt, index;
	bool exec_flag = false;
	const char *machine_flag = NULL; /* the first a restore cannot take */
	for (int pass = 0; pass < 2; pass++) {
		/* The first pass reads every flag before it says what was
		 * wrong: --help anywhere among them wins. */
		int wrong = 0;
		bool help = false;
		optind = 0;
		opterr = 0;
		for (;;) {
			int word = optind ? optind : 1;
			index = -1;
			opt = getopt_long(sub_argc, sub_argv, SHORT_OPTIONS,
					  run_options, &index);
			if (opt == -1)
				break;
			if (opt == '?') {
				if (!wrong)
					wrong = cli_option_error(sub_argv, err, errlen);
				continue;
			}
			char scratch[256];
			bool bad = pass == 0 && index >= 0 &&
				   misparsed(&run_options[index], sub_argv[word],
					     optind < sub_argc ? sub_argv[optind] : NULL,
					     wrong ? scratch : err,
					     wrong ? sizeof(scratch) : errlen);
			if (bad && !wrong)
				wrong = -EINVAL;
			/* --help taken as a value (--cpus --help) is still
			 * --help: it wins over a missing value too. */
			help = help || opt == 'h' ||
			       (optarg && optarg == sub_argv[optind - 1] &&
				(!strcmp(optarg, "--help") || !strcmp(optarg, "-h")));
			opt = short_alias(opt);
			if (pass == 1 && !machine_flag && !restore_takes(opt) &&
			    word > snapshot_words_given)
				machine_flag = sub_argv[word];
			if (pass == 0 && opt == OPT_CONFIG)
				cfg->config = optarg;
			if (pass == 0 && opt == OPT_PROFILE)
				cfg->profile = optarg;
			exec_flag = exec_flag || opt == OPT_EXEC;
			/* Known from the first pass: a summary is written
			 * even when something else is wrong. */
			if (pass == 0 && !bad && (opt == OPT_JSON || opt == OPT_JSON_FILE))
				parse_run_option(opt, optarg, cfg, err, errlen);
			if (pass == 1) {
				int ret = parse_run_option(opt, optarg, cfg,
							   err, errlen);
				if (ret)
					return ret;
			}
		}
		if (help) {
			cfg->command = CLI_HELP;
			return 0;
		}
		if (wrong)
			return wrong;
		if (pass == 0 &&
		    config_file_load(cfg->config, cfg->profile, cfg, err, errlen))
			return -EBADMSG;
	}
	if (cfg->restore && cfg->snapshot_to)
		return cli_error(err, errlen, "%s",
				 "--restore and --snapshot-to: a restored VM cannot be snapshotted again yet");
	if (cfg->restore && machine_flag)
		return cli_error(err, errlen,
				 "--restore: the machine and its shares are the snapshot's, so '%s' does not apply (a restore takes --timeout, --json, -v, --cwd, --env, --exec and --stdin)",
				 machine_flag);
	int cmd_start = optind;
	if (sub_argc > optind) {
		if (exec_flag)
			return cli_error(err, errlen,
					 "--exec: its CMD is the command (the guest's sh -c runs it), so '%s' after it does not apply",
					 sub_argv[optind]);
		cfg->exec = NULL; /* a config file's: the flags' command wins */
		cfg->guest_argc = sub_argc - optind;
		cfg->guest_argv = sub_argv + optind;
	}
	if (cfg->exec && exec_argv(cfg))
		return cli_error(err, errlen, "%s", "--exec: out of memory");
	if (!cfg->guest_kernel) {
		const char *env = getenv("FSVM_GUEST_KERNEL");
		if (env && *env && !guest_kernel_valid(env))
			return cli_error(err, errlen,
					 "FSVM_GUEST_KERNEL: " GUEST_KERNEL_CHOICES,
					 env);
		cfg->guest_kernel = env && *env ? env
				   : cfg->microvm ? CLI_MICROVM_GUEST
						  : CLI_DEFAULT_GUEST_KERNEL;
	}
	if (!cfg->kernel && !strcmp(cfg->guest_kernel, CLI_MICROVM_GUEST))
		cfg->microvm = true;
	if (cfg->microvm) {
		if (cfg->transport_given && cfg->transport != CLI_TRANSPORT_MMIO)
			return cli_error(err, errlen, "%s",
					 "--microvm: its shares are virtio-mmio devices, so --transport pci does not apply");
		cfg->transport = CLI_TRANSPORT_MMIO;
	}
	for (unsigned int i = 0; i < cfg->nr_shares; i++)
		if (cfg->shares[i].devices && !cfg->host_root)
			return cli_error(err, errlen,
					 "--share %s: device nodes (dev) need --host-root",
					 cfg->shares[i].host);
	if (cfg->host_root && (cfg->nr_uid_maps || cfg->nr_gid_maps))
		return cli_error(err, errlen, "%s",
				 "--host-root: ids pass unchanged, so --uid-map and --gid-map do not apply");
	if (cfg->user && (cfg->host_root || cfg->nr_uid_maps || cfg->nr_gid_maps))
		return cli_error(err, errlen, "%s",
				 "--user: it maps your ids itself, so --host-root, --uid-map and --gid-map do not apply");
	if (cfg->image && (strcmp(cfg->root, "/") || cfg->rw_root))
		return cli_error(err, errlen, "%s",
				 "--image: the image is the guest's root (read-only, under a throwaway overlay), so --root and --rw-root do not apply");
	if (cfg->entrypoint && !cfg->image)
		return cli_error(err, errlen, "%s",
				 "--entrypoint: there is no --image whose entrypoint it replaces");
	if (cfg->gdb_wait && !cfg->gdb)
		return cli_error(err, errlen, "%s",
				 "--gdb-wait: there is no --gdb to wait for");
	if (cfg->nr_disks && !cfg->kernel &&
	    !strcmp(cfg->guest_kernel, CLI_MICROVM_GUEST))
		return cli_error(err, errlen, "%s",
				 "--disk: the microVM guest has no block layer; use --guest-kernel 6.12 or a --kernel with VIRTIO_BLK");
	if (cfg->snapshot_to || cfg->restore) {
		const char *flag = cfg->net.mode != CLI_NET_NONE ? "--net"
				   : cfg->nr_disks ? "--disk"
				   : cfg->gdb ? "--gdb"
				   : cfg->image ? "--image"
				   : cfg->setup_only ? "--setup-only"
				   : cfg->check ? "--check" : NULL;
		if (flag)
			return cli_error(err, errlen,
					 "%s: a snapshot cannot hold it yet (docs/snapshot.md)",
					 flag);
		/* The vsock device that streams stdin has no saved state. */
		cfg->stdin_none = true;
	}
	if (cfg->snapshot_to && keep_snapshot_words(cfg, given, cmd_start))
		return cli_error(err, errlen, "%s", "--snapshot-to: out of memory");
	return net_options_check(&cfg->net, err, errlen);
}

int cli_parse_restore(const char *const *words, unsigned int nr_words,
		      int argc, char **argv, struct fsvm_config *cfg, char *err,
		      size_t errlen)
{
	/* fsvm run, the snapshot's words, then the restore's own. */
	char **all = calloc((size_t)argc + nr_words + 1, sizeof(*all));
	if (!all)
		return cli_error(err, errlen, "%s", "--restore: out of memory");
	all[0] = argv[0];
	all[1] = argv[1];
	memcpy(all + 2, words, nr_words * sizeof(*all));
	memcpy(all + 2 + nr_words, argv + 2, (size_t)(argc - 2) * sizeof(*all));
	snapshot_words_given = (int)nr_words;
	int ret = cli_parse(argc + (int)nr_words, all, cfg, err, errlen);
	snapshot_words_given = 0;
	if (!cli_own(cfg, (char *)all) && !ret)
		ret = cli_error(err, errlen, "%s", "--restore: out of memory");
	return ret;
}
