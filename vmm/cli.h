/* Command-line parsing for `fsvm`: subcommand, options and guest command. */
#ifndef FSVM_CLI_H
#define FSVM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* FSVM_VERSION comes from the VERSION file (Makefile). */
#define CLI_MIN_MEM (64ULL << 20)
#define CLI_MAX_MEM (1ULL << 40)
#define CLI_MAX_TIMEOUT 1e9 /* seconds: fits any time_t */

/* The packaged guest booted unless --guest-kernel (or $FSVM_GUEST_KERNEL)
 * says otherwise: 6.12, which boots faster than 6.1 and spreads a share's
 * requests over a queue per vCPU (docs/PERFORMANCE.md). */
#define CLI_DEFAULT_GUEST_KERNEL "6.12"

#define CLI_MAX_SHARES 8
#define CLI_MAX_ID_MAPS 8
#define CLI_MAX_ENV 256
#define CLI_CMDLINE_MAX 2048 /* the x86 kernel's COMMAND_LINE_SIZE */

/* CLI_LIST_OPTIONS: `fsvm --list-options`, for the shell completion. */
enum cli_command { CLI_RUN, CLI_HELP, CLI_VERSION, CLI_KCONFIG, CLI_LIST_OPTIONS };

/* How the guest reaches the virtio-fs devices. */
enum cli_transport { CLI_TRANSPORT_PCI, CLI_TRANSPORT_MMIO };

/* The microVM guest's name among the packaged ones (make guest-microvm). */
#define CLI_MICROVM_GUEST "microvm"

/* A host folder given to the guest with --share HOST[:GUEST][:OPTIONS]. */
struct cli_share {
	const char *host;
	const char *guest; /* absolute path in the guest; NULL: same as host */
	bool readonly;
	bool devices;      /* the guest may make device nodes (needs --host-root) */
};

#define CLI_MAX_PUBLISH 16

/* --net: the guest's network device and what is behind it. */
enum cli_net_mode { CLI_NET_NONE, CLI_NET_USER, CLI_NET_TAP };

/* --publish HOST_PORT:GUEST_PORT[/udp]. */
struct cli_publish {
	uint16_t host, guest;
	bool udp;
};

struct cli_net {
	enum cli_net_mode mode;
	const char *tap;      /* tap:NAME */
	bool host_loopback;   /* user: the gateway address is the host's loopback */
	/* ip=ADDRESS/PREFIX (static, else DHCP), gw=, dns=: text as given,
	 * checked. */
	const char *ip, *gateway, *dns;
	bool mac_given;
	uint8_t mac[6];
	struct cli_publish publish[CLI_MAX_PUBLISH];
	unsigned int nr_publish;
	/* tap: fsvm's own, made for a container (vmm/oci_network.c): it
	 * goes when fsvm ends. */
	bool tap_transient;
};

/* count ids from guest onwards are host ids from host onwards. */
struct cli_id_map {
	uint32_t guest, host, count;
};

#define CLI_MAX_DISKS 8
#define CLI_DISK_SERIAL_MAX 20 /* VIRTIO_BLK_ID_BYTES */

/* --disk FILE[:ro][,serial=NAME][,direct]: a raw image or block device
 * given to the guest as virtio-blk (/dev/vda, /dev/vdb, ... in order). */
struct cli_disk {
	const char *path;
	bool readonly;
	bool direct; /* O_DIRECT: the host's page cache is bypassed */
	char serial[CLI_DISK_SERIAL_MAX + 1]; /* empty: none */
};

struct container_job;

struct fsvm_config {
	enum cli_command command;
	/* The packaged guest: "6.1", "6.12" or "microvm" (a folder of the
	 * guest folder) or, with a '/', a folder laid out the same way. */
	const char *guest_kernel;
	const char *kernel;       /* NULL: the guest's kernel */
	const char *modules;      /* --modules: INSTALL_MOD_PATH of the kernel's modules */
	const char *kconfig;      /* fsvm kconfig: the .config to check */
	unsigned int kconfig_features; /* and for what these need (KCONFIG_NET...) */
	const char *initrd;       /* NULL: the guest's initramfs */
	const char *cmdline;      /* appended to the kernel command line */
	char cmdline_buf[CLI_CMDLINE_MAX]; /* --append values, joined */
	const char *root;         /* host folder that is the guest's / */
	bool rw_root;             /* write through to it, no overlay */
	/* --image: a podman image whose files are the guest's / and whose
	 * config shapes the command (vmm/image.c); NULL: none. */
	const char *image;
	const char *entrypoint;   /* --entrypoint: the image's replaced; "": none */
	/* The command's ids when they are another's than guest root's or
	 * the caller's (an image's User): its home and name are the root's
	 * passwd's. */
	bool run_as;
	unsigned int run_as_uid, run_as_gid;
	const char *cache;        /* none, auto or always */
	int64_t dax;              /* DAX window per share; -1: default, 0: off */
	enum cli_transport transport;
	bool transport_given;     /* --transport was said */
	/* The microVM way: virtio-mmio devices named on the kernel command
	 * line, no ACPI; by default the microVM guest. */
	bool microvm;
	/* Who the guest is on the host: with host_root, fsvm keeps root's
	 * privileges and ids pass unchanged; otherwise the maps (empty:
	 * guest root is the user fsvm runs for, see vmm/identity.c). */
	bool host_root;
	struct cli_id_map uid_map[CLI_MAX_ID_MAPS];
	unsigned int nr_uid_maps;
	struct cli_id_map gid_map[CLI_MAX_ID_MAPS];
	unsigned int nr_gid_maps;
	struct cli_share shares[CLI_MAX_SHARES];
	unsigned int nr_shares;
	struct cli_net net;
	struct cli_disk disks[CLI_MAX_DISKS];
	unsigned int nr_disks;
	/* --gdb: a TCP port on the loopback address, or (with a '/') a UNIX
	 * socket path, where a gdb stub listens; NULL: none. */
	const char *gdb;
	bool gdb_wait; /* the boot vCPU waits for gdb before its first instruction */
	unsigned int cpus;
	uint64_t mem;
	double timeout;           /* seconds; 0 means none */
	bool verbose;
	bool setup_only;          /* stop before the first KVM_RUN */
	bool check;               /* --check: only what needs no KVM (vmm/check.h) */
	bool no_seccomp;          /* run without the system-call filter */
	/* --stdin none: the command's stdin is empty even when fsvm's is a
	 * pipe or a file (by default those stream to it). */
	bool stdin_none;
	const char *cwd;          /* the command's folder; NULL: the caller's */
	/* "NAME=VALUE" strings added to the command's environment. */
	const char *env[CLI_MAX_ENV];
	unsigned int nr_env;
	bool user;                /* run the command as the caller's ids */
	bool json;                /* a JSON summary on exit (docs/json.md) */
	const char *json_file;    /* where; NULL: stdout */
	const char *config;       /* --config FILE, applied before the flags */
	const char *profile;      /* --profile NAME: its options from the files */
	const char *exec;         /* --exec CMD: the command is /bin/sh -c CMD */
	/* --snapshot-to DIR: boot to the snapshot point and save the VM
	 * there, with the flags that made it (the words after "run", its
	 * own left out) for its restores. */
	const char *snapshot_to;
	const char *const *snapshot_words;
	unsigned int nr_snapshot_words;
	const char *restore;      /* --restore DIR: start its snapshot */
	/* A container's job (`fsvm oci`); NULL for `fsvm run`. */
	const struct container_job *container;
	char **guest_argv;        /* the command to run in the guest */
	int guest_argc;
	/* Strings the configuration made (config file values, --env
	 * values from the caller), freed by cli_free. */
	char **owned;
	size_t nr_owned;
};

/* Parses argv into *cfg: the config files first (vmm/config_file.h), then
 * the flags, which override them. On error returns -EINVAL (the command
 * line) or -EBADMSG (a config file: unreadable, not strict JSON, a key or
 * value refused, or no such --profile) with a one-line reason in err;
 * cfg->json and cfg->json_file are still set if the flags gave them, so
 * the summary can say so.
 * cli_free releases what it made, after success or failure. */
int cli_parse(int argc, char **argv, struct fsvm_config *cfg, char *err,
	      size_t errlen);
void cli_free(struct fsvm_config *cfg);

/* A restore's flags: the snapshot's words (what made its machine), then
 * argv's (`fsvm run --restore DIR ... CMD`), which may set no machine
 * flag of their own. As cli_parse. */
int cli_parse_restore(const char *const *words, unsigned int nr_words,
		      int argc, char **argv, struct fsvm_config *cfg, char *err,
		      size_t errlen);

/* Applies one option by its long name (which is also its config-file key)
 * with its value (NULL for a flag). value must live as long as cfg. A
 * bad value is -EINVAL with the reason in err; an unknown name -ENOENT. */
int cli_apply(struct fsvm_config *cfg, const char *name, char *value,
	      char *err, size_t errlen);

/* What a name is in the option table: -ENOENT unknown, 0 a flag (no
 * value), 1 takes a value; *repeatable tells whether it may be given more
 * than once (a list in a config file). */
int cli_option_kind(const char *name, bool *repeatable);

/* A bad value: the reason, fmt with arg, in err; returns -EINVAL. */
int cli_error(char *err, size_t errlen, const char *fmt, const char *arg);

/* Keeps s (malloc'd) until cli_free; NULL when out of memory (s freed). */
char *cli_own(struct fsvm_config *cfg, char *s);

/* The defaults that suit this host: half its CPUs (1 to 8), an eighth of
 * its RAM (512M to 4G). */
unsigned int cli_default_cpus(void);
uint64_t cli_default_mem(void);

/* Splits a --share value (modified in place) into *share. */
int cli_parse_share(char *spec, struct cli_share *share);

/* Splits a --disk value (modified in place) into *disk. */
int cli_parse_disk(char *spec, struct cli_disk *disk);

/* Parses "GUEST:HOST[:COUNT]" (COUNT 1 when left out). */
int cli_parse_id_map(const char *spec, struct cli_id_map *map);

/* Parses "512", "512M", "2G", "1048576K": a size in bytes, MiB when no
 * suffix is given. */
int cli_parse_size(const char *s, uint64_t *bytes);

/* Every option of fsvm run, one a line: "--NAME" and, for one that takes
 * a value, " VALUE" (the shell completion's list: completion/fsvm.bash). */
void cli_list_options(FILE *out);

extern const char cli_usage[];

#endif
