/* The life of one VM: set-up, run loop, shutdown, exit status. */
#include "vmm/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "devices/exit_dev.h"
#include "devices/i8042.h"
#include "pci/pci_host.h"
#include "devices/rtc.h"
#include "devices/virtio_fs.h"
#include "fs/host_fs.h"
#include "guest/protocol.h"
#include "virtio/virtio_mmio.h"
#include "virtio/virtio_pci.h"
#include "vmm/x86/acpi.h"
#include "vmm/x86/boot.h"
#include "vmm/console.h"
#include "vmm/core/event_loop.h"
#include "vmm/identity.h"
#include "vmm/core/irq.h"
#include "vmm/core/arch.h"
#include "vmm/core/kvm.h"
#include "vmm/core/log.h"
#include "vmm/x86/mptable.h"
#include "vmm/run_spec.h"
#include "vmm/seccomp.h"
#include "vmm/core/vcpu.h"

#define BASE_CMDLINE                                                           \
	"console=ttyS1 8250.nr_uarts=2 reboot=k panic=-1 pci=noearly "                     \
	"i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd"

/* ISA IRQs no device uses (the UARTs have 3 and 4, the PIT 0, the i8042 1,
 * the RTC 8, the ACPI SCI 9), each on the I/O APIC pin of the same number.
 * Past seven shares they are shared, which the Linux driver allows. */
static const unsigned int mmio_irqs[] = {5, 6, 7, 10, 11, 14, 15};

struct run {
	const struct fsvm_config *cfg;
	struct vm vm;
	struct console con;
	struct exit_dev exit_dev;
	struct i8042 kbc;
	struct rtc rtc;
	struct pci_host pci;
	struct acpi_pm acpi_pm;
	/* The root share first, then each --share. */
	struct virtio_fs shares[1 + CLI_MAX_SHARES];
	union {
		struct virtio_pci pci;
		struct virtio_mmio mmio;
	} transports[1 + CLI_MAX_SHARES]; /* as --transport says */
	unsigned int nr_shares;
	char share_host[1 + CLI_MAX_SHARES][PATH_MAX];
	char share_tag[1 + CLI_MAX_SHARES][16];
	struct run_spec_mount mounts[1 + CLI_MAX_SHARES];
	char cwd[PATH_MAX];
	uint64_t dax_size; /* per share; 0: no DAX */
	struct event_loop loop;
	struct kernel_info ki;
	struct boot_params zp;
	int signal_fd;
	struct identity identity;
};

static int setup_error(const char *what, const char *why, int err)
{
	if (err)
		log_error("%s: %s (%s)", what, why, strerror(-err));
	else
		log_error("%s: %s", what, why);
	return -1;
}

static const char *guest_file(const char *given, const char *name, char *buf,
			      size_t len)
{
	if (given)
		return given;
	const char *dir = getenv("FSVM_GUEST_DIR");
	snprintf(buf, len, "%s/%s", dir ? dir : FSVM_GUEST_DIR, name);
	return buf;
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

static int load_kernel(struct run *r)
{
	char buf[4096];
	const char *path = guest_file(r->cfg->kernel, "kernel/vmlinuz", buf,
				      sizeof(buf));
	struct stat st;
	int fd = open_boot_file(path, &st);
	if (fd < 0)
		return setup_error(path, "cannot open the kernel", fd);
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return setup_error(path, "kernel is not a non-empty file", 0);
	}
	void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return setup_error(path, "cannot map the kernel", -errno);
	const char *why = NULL;
	int err = bzimage_load(&r->vm.mem, img, (size_t)st.st_size, &r->zp,
			       &r->ki, &why);
	munmap(img, (size_t)st.st_size);
	return err ? setup_error(path, why, 0) : 0;
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
static int load_initrd(struct run *r)
{
	char buf[4096];
	const char *path = guest_file(r->cfg->initrd, "initramfs.cpio", buf,
				      sizeof(buf));
	struct cpio_buf spec = {0};
	struct run_spec job = {
		.argv = r->cfg->guest_argv,
		.argc = r->cfg->guest_argc,
		.interactive = r->con.interactive,
		.dax = r->dax_size != 0,
		.cwd = r->cwd[0] ? r->cwd : NULL,
		.mounts = r->mounts,
		.nr_mounts = r->nr_shares,
	};
	if (run_spec_build(&job, &spec))
		return setup_error("initrd", "out of memory", -ENOMEM);

	struct stat st;
	int fd = open_boot_file(path, &st);
	if (fd < 0) {
		cpio_free(&spec);
		return setup_error(path, "cannot open the initrd", fd);
	}
	uint64_t file_len = (uint64_t)st.st_size;
	uint64_t spec_at = (file_len + 3) & ~3ULL;
	uint64_t gpa;
	const char *why = NULL;
	int err = boot_place_initrd(&r->vm.mem, &r->ki, spec_at + spec.len,
				    &r->zp, &gpa, &why);
	if (err) {
		close(fd);
		cpio_free(&spec);
		return setup_error(path, why, 0);
	}
	uint8_t *dst = guest_ptr(&r->vm.mem, gpa, spec_at + spec.len);
	guest_mem_prefault(&r->vm.mem, gpa, spec_at + spec.len);
	err = read_full(fd, dst, file_len);
	close(fd);
	if (!err) {
		memset(dst + file_len, 0, spec_at - file_len);
		memcpy(dst + spec_at, spec.data, spec.len);
	}
	cpio_free(&spec);
	return err ? setup_error(path, "cannot read the initrd", err) : 0;
}

/* virtio-mmio devices cannot be probed: ACPI describes them. */
static int write_acpi(struct run *r)
{
	struct acpi_mmio_dev devs[1 + CLI_MAX_SHARES];
	for (unsigned int i = 0; i < r->nr_shares; i++)
		devs[i] = (struct acpi_mmio_dev){
			.base = r->transports[i].mmio.base,
			.size = VIRTIO_MMIO_SIZE,
			.irq = r->transports[i].mmio.irq};
	return acpi_write(&r->vm.mem, r->cfg->cpus, devs, r->nr_shares);
}

static int setup_boot(struct run *r)
{
	if (load_kernel(r) || load_initrd(r))
		return -1;

	bool mmio = r->cfg->transport == CLI_TRANSPORT_MMIO;
	char cmdline[BOOT_CMDLINE_MAX];
	snprintf(cmdline, sizeof(cmdline), "%s%s%s%s%s", BASE_CMDLINE,
		 mmio ? "" : " acpi=off", r->cfg->verbose ? "" : " quiet",
		 r->cfg->cmdline ? " " : "",
		 r->cfg->cmdline ? r->cfg->cmdline : "");
	const char *why = NULL;
	if (boot_set_cmdline(&r->vm.mem, &r->ki, cmdline, &r->zp, &why))
		return setup_error("--cmdline", why, 0);
	boot_set_e820(&r->vm.mem, &r->zp);
	if (boot_write_tables(&r->vm.mem, &r->zp) < 0 ||
	    mptable_write(&r->vm.mem, r->cfg->cpus) < 0 ||
	    (mmio && write_acpi(r) < 0))
		return setup_error("boot", "guest RAM too small for boot tables",
				   0);
	return 0;
}

static void on_guest_exit(void *opaque, uint8_t status)
{
	vm_stop(opaque, status, NULL);
}

static void on_guest_mark(void *opaque)
{
	struct vm *vm = opaque;
	atomic_store(&vm->command_started, true);
	log_info("guest user space started at %.1f ms", vm_elapsed_ms(vm));
}

static void on_guest_reset(void *opaque)
{
	vm_stop_unexpected(opaque, "rebooted");
}

static int setup_devices(struct run *r)
{
	struct vm *vm = &r->vm;
	r->exit_dev = (struct exit_dev){.on_exit = on_guest_exit,
					.on_mark = on_guest_mark,
					.opaque = vm};
	i8042_init(&r->kbc, on_guest_reset, vm);
	rtc_init(&r->rtc);
	/* 64-bit BARs (DAX windows) start above RAM and the 4 GiB line. */
	const struct guest_region *top = &vm->mem.regions[vm->mem.nr_regions - 1];
	uint64_t ram_end = top->gpa + top->size;
	int err = pci_host_init(&r->pci, &vm->pio, &vm->mmio, PCI_MMIO32_START,
				PCI_MMIO32_END,
				ram_end > RAM_HIGH_START ? ram_end : RAM_HIGH_START);
	if (!err)
		err = console_init(&r->con, vm);
	if (!err)
		err = io_bus_register(&vm->pio, EXIT_DEV_PORT, EXIT_DEV_LEN,
				      exit_dev_io, &r->exit_dev);
	if (!err)
		err = io_bus_register(&vm->pio, I8042_DATA_PORT, 1,
				      i8042_data_io, &r->kbc);
	if (!err)
		err = io_bus_register(&vm->pio, I8042_CMD_PORT, 1, i8042_cmd_io,
				      &r->kbc);
	if (!err)
		err = io_bus_register(&vm->pio, RTC_PORT, RTC_NR_PORTS, rtc_io,
				      &r->rtc);
	if (!err && r->cfg->transport == CLI_TRANSPORT_MMIO)
		err = io_bus_register(&vm->pio, ACPI_PM_PORT, ACPI_PM_LEN,
				      acpi_pm_io, &r->acpi_pm);
	return err ? setup_error("devices", "cannot register", err) : 0;
}

/* Each inode the guest has looked up holds an O_PATH fd on the host, so a
 * guest with a warm dentry cache needs far more than the usual 1024. */
static void raise_fd_limit(void)
{
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
		return;
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");
	unsigned long long nr_open;
	if (f && fscanf(f, "%llu", &nr_open) == 1 && nr_open > lim.rlim_max) {
		struct rlimit want = {.rlim_cur = nr_open, .rlim_max = nr_open};
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			lim = want; /* privileged: the kernel's maximum */
	}
	if (f)
		fclose(f);
	lim.rlim_cur = lim.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
		log_info("cannot raise the open-file limit: %s", strerror(errno));
}

static enum fuse_cache_mode cache_mode(const char *name)
{
	if (!strcmp(name, "none"))
		return FUSE_CACHE_NONE;
	return strcmp(name, "always") ? FUSE_CACHE_AUTO : FUSE_CACHE_ALWAYS;
}

/* Puts share i's device on the chosen transport. A virtio-mmio device's
 * DAX window takes guest-physical space above RAM from the same allocator
 * as 64-bit PCI BARs, so the two can never overlap. */
static int add_transport(struct run *r, unsigned int i)
{
	const struct virtio_dev *dev = &r->shares[i].dev;
	if (r->cfg->transport == CLI_TRANSPORT_PCI)
		return virtio_pci_init(&r->transports[i].pci, &r->vm, &r->pci,
				       dev);
	struct virtio_mmio *m = &r->transports[i].mmio;
	uint64_t shm = dev->shm_size ? pci_host_alloc_mmio64(&r->pci,
							      dev->shm_size)
				     : 0;
	int err = virtio_mmio_init(m, &r->vm, dev,
				   VIRTIO_MMIO_BASE + i * VIRTIO_MMIO_SIZE,
				   mmio_irqs[i % (sizeof(mmio_irqs) /
						  sizeof(mmio_irqs[0]))],
				   shm);
	return err ? err : virtio_mmio_plug(m);
}

/* The VMM keeps this many fds and memory maps for itself; the rest is
 * split between the shares. */
#define VMM_FD_RESERVE 256
#define VMM_MAP_RESERVE 8192

/* Caps on what one share's guest can make the VMM hold. Every inode it
 * looks up, file it opens and DAX mapping it makes is a host fd, and every
 * mapping up to two host memory maps (the process may have
 * vm.max_map_count, after which it cannot even start a thread). Each share
 * gets an even part of both limits, so a guest that reaches its caps on
 * one share gets ENFILE or ENOSPC there, and the other shares and the VMM
 * go on. */
static void share_caps(struct run *r, struct fuse_server_config *cfg,
		       unsigned int *dax_max_maps)
{
	unsigned int shares = 1 + r->cfg->nr_shares;
	struct rlimit lim = {.rlim_cur = 1024};
	getrlimit(RLIMIT_NOFILE, &lim);
	unsigned long long map_count = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%llu", &map_count) != 1)
			map_count = 65530;
		fclose(f);
	}
	uint64_t fds = lim.rlim_cur > VMM_FD_RESERVE * 2
			       ? (lim.rlim_cur - VMM_FD_RESERVE) / shares
			       : 64;
	uint64_t maps = map_count > VMM_MAP_RESERVE * 2
				? (map_count - VMM_MAP_RESERVE) / 2 / shares
				: 64;
	/* The Linux client fills the window 2 MiB at a time. */
	uint64_t want = r->dax_size / DAX_WINDOW_LINUX_CHUNK + 16;
	maps = maps < want ? maps : want;
	maps = maps < fds / 4 ? maps : fds / 4;
	uint64_t handles = fds / 4 < FUSE_DEFAULT_MAX_HANDLES
				   ? fds / 4
				   : FUSE_DEFAULT_MAX_HANDLES;
	uint64_t inodes = fds - maps - handles;
	*dax_max_maps = (unsigned int)(maps > 2 ? maps : 2);
	cfg->max_handles = (unsigned int)handles;
	cfg->max_inodes = (unsigned int)(inodes < FUSE_DEFAULT_MAX_INODES
						 ? inodes
						 : FUSE_DEFAULT_MAX_INODES);
}

/* One virtio-fs device per share: the root first (tag "root"). */
static int add_share(struct run *r, const char *what, const char *host,
		     const char *guest, const char *mode, bool devices)
{
	unsigned int i = r->nr_shares;
	char *path = r->share_host[i];
	struct stat st;
	if (!realpath(host, path) || stat(path, &st) < 0)
		return setup_error(what, host, -errno);
	if (!S_ISDIR(st.st_mode))
		return setup_error(what, "not a directory", 0);
	int fd = open(path, O_PATH | O_CLOEXEC);
	int kind = fd < 0 ? -errno : host_fs_kind(fd);
	if (fd >= 0)
		close(fd);
	if (kind == HOST_FS_PSEUDO)
		return setup_error(what, "is a pseudo file system (the host's own state): never shared", 0);
	if (i == 0)
		snprintf(r->share_tag[i], sizeof(r->share_tag[i]), "%s",
			 GUEST_ROOT_TAG);
	else
		snprintf(r->share_tag[i], sizeof(r->share_tag[i]), "share%u",
			 i - 1);
	struct fuse_server_config fcfg = {
		.root = path,
		.readonly = strcmp(mode, GUEST_MOUNT_RW) != 0,
		.cache = cache_mode(r->cfg->cache),
		/* Not under DAX, where it buys nothing (file data bypasses
		 * the guest's page cache) and would make the guest keep its
		 * own idea of file sizes, blind to truncation on the host. */
		.writeback = cache_mode(r->cfg->cache) != FUSE_CACHE_NONE &&
			     !r->dax_size,
		.devices = devices,
	};
	unsigned int dax_max_maps;
	share_caps(r, &fcfg, &dax_max_maps);
	int err = virtio_fs_create(&r->shares[i], r->share_tag[i], &fcfg, 1,
				   r->dax_size, dax_max_maps);
	if (!err)
		err = add_transport(r, i);
	if (err)
		return setup_error(what, "cannot create the virtio-fs device",
				   err);
	r->mounts[i] = (struct run_spec_mount){
		.tag = r->share_tag[i], .mode = mode,
		.guest_path = guest ? guest : path};
	r->nr_shares++;
	return 0;
}

/* KVM_RUN failed with EFAULT: a DAX page whose host file shrank, before
 * the file's watch told us. */
static unsigned int repair_dax_windows(void *opaque)
{
	struct run *r = opaque;
	unsigned int repaired = 0;
	for (unsigned int i = 0; i < r->nr_shares; i++)
		if (r->shares[i].dax.base)
			repaired += dax_window_repair(&r->shares[i].dax);
	if (repaired)
		log_error("warning: %u DAX mapping(s) reached past the end of files truncated on the host; those pages now read as zeros",
			  repaired);
	return repaired;
}

/* The guest pays for a DAX window in struct pages (1/64 of its size), so
 * the default follows RAM: twice its size, a power of two, 128M to 8G. */
static uint64_t default_dax_size(uint64_t ram)
{
	uint64_t size = 128ULL << 20;
	while (size < 2 * ram && size < (8ULL << 30))
		size <<= 1;
	return size;
}

static int setup_shares(struct run *r)
{
	const struct fsvm_config *cfg = r->cfg;
	r->dax_size = cfg->dax < 0 ? default_dax_size(cfg->mem)
				   : (uint64_t)cfg->dax;
	r->vm.repair_memory = repair_dax_windows;
	r->vm.repair_opaque = r;
	if (!getcwd(r->cwd, sizeof(r->cwd)))
		r->cwd[0] = '\0';
	raise_fd_limit();
	if (add_share(r, "--root", cfg->root, "/",
		      cfg->rw_root ? GUEST_MOUNT_RW : GUEST_MOUNT_OVERLAY, false))
		return -1;
	for (unsigned int i = 0; i < cfg->nr_shares; i++) {
		const struct cli_share *s = &cfg->shares[i];
		if (add_share(r, "--share", s->host, s->guest,
			      s->readonly ? GUEST_MOUNT_RO : GUEST_MOUNT_RW,
			      s->devices))
			return -1;
	}
	return 0;
}

static int setup_vm(struct run *r)
{
	const struct fsvm_config *cfg = r->cfg;
	struct vm *vm = &r->vm;
	const char *why = NULL;

	int err = identity_plan(cfg, &r->identity, &why);
	if (err)
		return setup_error("identity", why, 0);
	err = kvm_open(vm, &why);
	if (err)
		return setup_error("kvm", why, err);
	if (!cfg->setup_only && !arch_runs_stock_kernels(&why))
		return setup_error("kvm", why, 0);
	err = guest_mem_init(&vm->mem, cfg->mem, RAM_LOW_LIMIT, RAM_HIGH_START);
	if (err)
		return setup_error("--mem", "cannot allocate guest RAM", err);
	err = kvm_create_vm(vm, &why);
	if (err)
		return setup_error("kvm", why, err);
	err = irq_routing_init(vm);
	if (err)
		return setup_error("kvm", "cannot set up interrupt routing", err);
	vm->nr_vcpus = cfg->cpus;
	vm->vcpus = calloc(cfg->cpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return setup_error("vcpu", "out of memory", -ENOMEM);
	if (setup_devices(r) || setup_shares(r) || setup_boot(r))
		return -1;
	for (unsigned int i = 0; i < cfg->cpus; i++) {
		err = vcpu_create(vm, &vm->vcpus[i], i, &why);
		if (err)
			return setup_error("vcpu", why, err);
	}
	err = boot_enter_kernel(&vm->vcpus[0], &r->ki);
	return err ? setup_error("vcpu", "cannot set the boot CPU's registers", err)
		   : 0;
}

static void on_stop_event(void *opaque, uint32_t events)
{
	uint64_t v;
	(void)events;
	if (read(*(int *)opaque, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_error("stop eventfd: %s", strerror(errno));
}

static void on_timeout(void *opaque, uint32_t events)
{
	struct run *r = opaque;
	(void)events;
	vm_stop(&r->vm, EXIT_TIMEOUT, "guest timed out after %g s",
		r->cfg->timeout);
}

static void on_signal(void *opaque, uint32_t events)
{
	struct run *r = opaque;
	struct signalfd_siginfo si;
	(void)events;
	if (read(r->signal_fd, &si, sizeof(si)) == sizeof(si))
		vm_stop(&r->vm, 128 + (int)si.ssi_signo, "stopped by signal %s",
			strsignal((int)si.ssi_signo));
}

/* Signals that end the VM arrive through a signalfd in the main loop. */
static sigset_t stop_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	return set;
}

static int add_timer(struct run *r)
{
	if (r->cfg->timeout <= 0)
		return 0;
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	double t = r->cfg->timeout;
	struct itimerspec its = {
		.it_value = {.tv_sec = (time_t)t,
			     .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)},
	};
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	int err = timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
	if (!err)
		err = event_loop_add(&r->loop, fd, EPOLLIN, on_timeout, r);
	if (err)
		close(fd);
	return err;
}

/* A tick of the checks vm_console_powered_off() started. */
static void on_halt_check(void *opaque, uint32_t events)
{
	struct vm *vm = opaque;
	uint64_t ticks;
	(void)events;
	if (read(vm->halt_check_fd, &ticks, sizeof(ticks)) < 0 &&
	    errno != EAGAIN)
		log_error("halt check timer: %s", strerror(errno));
	vcpus_check_halted(vm);
}

static int add_halt_check(struct run *r)
{
	struct vm *vm = &r->vm;
	vm->halt_check_fd = timerfd_create(CLOCK_MONOTONIC,
					   TFD_CLOEXEC | TFD_NONBLOCK);
	if (vm->halt_check_fd < 0)
		return -errno;
	return event_loop_add(&r->loop, vm->halt_check_fd, EPOLLIN,
			      on_halt_check, vm);
}

/* A host file under DAX mappings changed size. */
static void on_dax_watch(void *opaque, uint32_t events)
{
	(void)events;
	struct virtio_fs *fs = opaque;
	unsigned int changed = dax_window_watch_events(&fs->dax);
	if (changed)
		log_info("%.*s: %u DAX mapping(s) followed a host file's new size",
			 (int)sizeof(fs->config.tag), fs->config.tag, changed);
}

static int watch_dax_windows(struct run *r)
{
	for (unsigned int i = 0; i < r->nr_shares; i++) {
		struct dax_window *w = &r->shares[i].dax;
		if (w->base &&
		    event_loop_add(&r->loop, w->watch_fd, EPOLLIN, on_dax_watch,
				   &r->shares[i]))
			return -1;
	}
	return 0;
}

/* -v: what each share's guest asked of it, the data path in particular
 * (READ/WRITE requests, or DAX mappings instead). */
static void report_shares(struct run *r)
{
	static const struct {
		uint32_t opcode;
		const char *name;
	} ops[] = {
		{FUSE_LOOKUP, "LOOKUP"}, {FUSE_OPEN, "OPEN"},
		{FUSE_READ, "READ"}, {FUSE_WRITE, "WRITE"},
		{FUSE_SETUPMAPPING, "SETUPMAPPING"},
		{FUSE_REMOVEMAPPING, "REMOVEMAPPING"},
	};
	for (unsigned int i = 0; log_verbose && i < r->nr_shares; i++) {
		char line[256];
		int n = snprintf(line, sizeof(line), "%s requests:",
				 r->share_tag[i]);
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]) &&
				   n < (int)sizeof(line);
		     k++)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " %s %llu", ops[k].name,
				      (unsigned long long)fuse_server_count(
					      r->shares[i].server, ops[k].opcode));
		log_info("%s", line);
	}
}

/* The end of set-up: from here on fsvm may only make the system calls
 * running the VM needs (vmm/seccomp.c); --no-seccomp leaves them all. */
static int lock_down(struct run *r)
{
	if (r->cfg->no_seccomp)
		return 0;
	int err = seccomp_lock_down();
	return err ? setup_error("seccomp", "cannot load the system-call filter",
				 err)
		   : 0;
}

static int run_loop(struct run *r)
{
	struct vm *vm = &r->vm;
	sigset_t sigs = stop_signals();

	r->signal_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->signal_fd < 0 || event_loop_init(&r->loop) ||
	    event_loop_add(&r->loop, r->signal_fd, EPOLLIN, on_signal, r) ||
	    event_loop_add(&r->loop, vm->stop_eventfd, EPOLLIN, on_stop_event,
			   &vm->stop_eventfd) ||
	    add_timer(r) || add_halt_check(r) || watch_dax_windows(r) ||
	    console_start(&r->con, &r->loop))
		return setup_error("event loop", "cannot set up", -errno);
	if (lock_down(r)) {
		console_restore(&r->con);
		return EXIT_VMM_ERROR;
	}

	log_info("set-up done, first KVM_RUN at %.1f ms", vm_elapsed_ms(vm));
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vcpu_start(&vm->vcpus[i]))
			vm_stop(vm, EXIT_VMM_ERROR, "cannot start vCPU %u", i);

	while (!atomic_load(&vm->stopping))
		if (event_loop_run_once(&r->loop, -1) < 0)
			vm_stop(vm, EXIT_VMM_ERROR, "event loop: %s",
				strerror(errno));

	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_kick_and_join(&vm->vcpus[i]);
	console_restore(&r->con);
	log_info("guest stopped at %.1f ms", vm_elapsed_ms(vm));
	report_shares(r);
	if (vm->stop_reason[0])
		log_error("%s", vm->stop_reason);
	return vm->exit_status;
}

int fsvm_run(const struct fsvm_config *cfg)
{
	static struct run run;
	struct run *r = &run;
	struct vm *vm = &r->vm;

	r->cfg = cfg;
	vm->kvm_fd = vm->vm_fd = vm->halt_check_fd = -1;
	vm->mem.memfd = -1;
	clock_gettime(CLOCK_MONOTONIC, &vm->launched);
	pthread_mutex_init(&vm->stop_lock, NULL);
	vm->stop_eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->stop_eventfd < 0)
		return EXIT_VMM_ERROR;

	/* Every thread inherits this mask: stop signals go to the signalfd,
	 * the kick signal is unblocked only inside vCPU threads, and the FUSE
	 * server's wake-up signal only inside its waiting threads. */
	sigset_t blocked = stop_signals();
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, FUSE_WAIT_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &blocked, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (setup_vm(r))
		return EXIT_VMM_ERROR;
	/* Every host resource is ours now: the guest's ids take over. */
	const char *why = NULL;
	int err = identity_assume(&r->identity, &why);
	if (err) {
		setup_error("identity", why, err);
		return EXIT_VMM_ERROR;
	}
	if (cfg->setup_only) {
		printf("fsvm: set-up done in %.2f ms (up to the first KVM_RUN)\n",
		       vm_elapsed_ms(vm));
		return 0;
	}
	return run_loop(r);
}
