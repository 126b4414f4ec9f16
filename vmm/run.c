/* `fsvm run`: the life of one VM, as a script (fsvm_run), and the main
 * loop that waits for its end. */
#include "vmm/run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "arch/x86/board.h"
#include "core/arch.h"
#include "core/event_loop.h"
#include "core/gdb_server.h"
#include "core/kvm.h"
#include "core/log.h"
#include "core/vcpu.h"
#include "devices/device.h"
#include "devices/exit_dev.h"
#include "devices/virtio_fs.h"
#include "devices/virtio_vsock.h"
#include "guest/protocol.h"
#include "vmm/capabilities.h"
#include "vmm/check.h"
#include "vmm/disks.h"
#include "vmm/console.h"
#include "vmm/forward_signals.h"
#include "vmm/guest_load.h"
#include "vmm/identity.h"
#include "vmm/image.h"
#include "vmm/jail.h"
#include "vmm/landlock.h"
#include "vmm/kernel_modules.h"
#include "vmm/network.h"
#include "vmm/seccomp.h"
#include "vmm/shares.h"
#include "vmm/snapshot.h"
#include "vmm/stdin_stream.h"

struct run {
	const struct fsvm_config *cfg;
	struct board board;
	struct console con;
	struct event_loop loop;
	struct shares shares;
	struct virtio_fs_options fs_options; /* the shares, for the machine */
	struct network net;
	struct virtio_blk_options disks;
	struct machine machine;
	struct identity identity;
	struct jail_share jail_shares[SHARES_MAX + 1]; /* + --snapshot-to's */
	struct jail *jail;
	struct kernel_modules modules;
	struct fsvm_config cfg_copy; /* cfg, with the modules' share added */
	char modules_guest[PATH_MAX];
	char cwd[PATH_MAX];
	int signal_fd;
	/* A container's signals, an interactive run's terminal sizes. */
	struct forward_signals forward;
	struct virtio_vsock_options vsock; /* stdin, a container's exec */
	struct stdin_stream stdin_stream; /* stdin's, when it streams */
	struct run_summary *sum;
	struct check check; /* what could be known before KVM */
	struct seccomp_violation violation; /* what a violation does */
	bool violate_for_test; /* FSVM_TEST_SECCOMP_VIOLATION */
	/* --snapshot-to: its folder, reached in the jail as one more share;
	 * --restore: the snapshot, and the job the restored init reads. */
	char snapshot_dir[PATH_MAX];
	int snapshot_dirfd;
	bool jailed;
	const struct snapshot *restoring;
	struct cpio_buf restored_job;
	struct exit_dev_options exit_options;
};

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
	vm_stop(&r->board.vm, EXIT_TIMEOUT, EXIT_REASON_TIMEOUT,
		"guest timed out after %g s", r->cfg->timeout);
}

static bool forwarding(const struct fsvm_config *cfg)
{
	return cfg->container && cfg->container->forward_signals;
}

/* The terminal changed size: so does the guest command's. */
static void resized(struct run *r)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
		forward_signals_winsize(&r->forward, ws.ws_row, ws.ws_col);
}

static void on_signal(void *opaque, uint32_t events)
{
	struct run *r = opaque;
	struct signalfd_siginfo si;
	(void)events;
	if (read(r->signal_fd, &si, sizeof(si)) != sizeof(si))
		return;
	int signo = (int)si.ssi_signo;
	if (signo == SIGWINCH)
		resized(r);
	else if (forwarding(r->cfg) && forward_signals_can(signo))
		forward_signals_send(&r->forward, signo);
	else
		vm_stop(&r->board.vm, 128 + signo, EXIT_REASON_SIGNAL,
			"stopped by signal %s", strsignal(signo));
}

/* Signals that end the VM (or, for a container, that go to its command)
 * arrive through a signalfd in the main loop. */
static sigset_t stop_signals(const struct fsvm_config *cfg, bool interactive)
{
	sigset_t set;
	if (forwarding(cfg))
		forward_signals_set(&set);
	else
		sigemptyset(&set);
	if (interactive)
		sigaddset(&set, SIGWINCH);
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
	struct vm *vm = &r->board.vm;
	vm->halt_check_fd = timerfd_create(CLOCK_MONOTONIC,
					   TFD_CLOEXEC | TFD_NONBLOCK);
	if (vm->halt_check_fd < 0)
		return -errno;
	return event_loop_add(&r->loop, vm->halt_check_fd, EPOLLIN,
			      on_halt_check, vm);
}

/* The end of set-up: from here on fsvm may only make the system calls
 * running the VM needs (vmm/seccomp.c); --no-seccomp leaves them all. A
 * call outside them puts the terminal back, says which call and writes
 * the summary, made now with the timeline so far. */
static int lock_down(struct run *r)
{
	if (r->cfg->no_seccomp)
		return 0;
	struct seccomp_violation *v = &r->violation;
	*v = (struct seccomp_violation){
		.tty_fd = r->con.raw ? r->con.stdin_fd : -1,
		.tty = r->con.saved,
		.json_fd = r->sum->out ? fileno(r->sum->out) : -1};
	summary_timeline(r->sum, &r->board.vm.timeline);
	int err = v->json_fd >= 0 ? summary_render_violation(r->sum, &v->json_before,
							     &v->json_after)
				  : 0;
	if (!err)
		err = seccomp_lock_down((r->cfg->gdb ? SECCOMP_DEBUGGER : 0) |
					(r->cfg->snapshot_to ? SECCOMP_SNAPSHOT : 0),
					v);
	return err ? log_setup_error("seccomp", "cannot load the system-call filter",
				 err)
		   : 0;
}

/* Where the guest kernel crashed, after the line that says it did: the
 * report's first line (unless that line said it), its RIP and the first
 * frames of its backtrace. The console showed the whole of it. */
static void log_kernel_report(const struct kernel_report *k,
			      const struct vm *vm)
{
	if (!strstr(vm->stop_reason, k->headline))
		log_error("kernel: %s", k->headline);
	if (k->rip[0])
		log_error("kernel: %s", k->rip);
	char trace[KERNEL_REPORT_FRAMES * KERNEL_REPORT_LINE_MAX];
	kernel_report_backtrace(k, trace, sizeof(trace));
	if (trace[0])
		log_error("kernel: at %s", trace);
}

/* The guest reached its snapshot point, every vCPU joined: the VM is
 * saved, and the run ends with 0, or with 125 and why. */
static void save_snapshot(struct run *r)
{
	struct vm *vm = &r->board.vm;
	const struct snapshot_machine sm = {
		.board = &r->board, .con = &r->con, .machine = &r->machine};
	double at = vm_elapsed_ms(vm);
	char err[300];
	if (snapshot_take(&sm, r->snapshot_dirfd, r->cfg->snapshot_words,
			  r->cfg->nr_snapshot_words, err, sizeof(err))) {
		vm->exit_status = EXIT_VMM_ERROR;
		vm->end_reason = EXIT_REASON_SNAPSHOT_FAILED;
		snprintf(vm->stop_reason, sizeof(vm->stop_reason),
			 "--snapshot-to %.60s: %.170s", r->cfg->snapshot_to, err);
		return;
	}
	fprintf(stderr, "fsvm: snapshot written to %s (booted in %.0f ms, saved in %.0f ms)\n",
		r->cfg->snapshot_to, at, vm_elapsed_ms(vm) - at);
}

static int run_loop(struct run *r)
{
	struct vm *vm = &r->board.vm;
	sigset_t sigs = stop_signals(r->cfg, r->con.interactive);

	if ((forwarding(r->cfg) || r->con.interactive) &&
	    forward_signals_init(&r->forward, vm, &r->con.err, &r->loop)) {
		log_setup_error("signals", "cannot set up forwarding", -errno);
		return summary_failed(r->sum, EXIT_REASON_SETUP_FAILED);
	}
	r->signal_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->signal_fd < 0 ||
	    event_loop_add(&r->loop, r->signal_fd, EPOLLIN, on_signal, r) ||
	    event_loop_add(&r->loop, vm->stop_eventfd, EPOLLIN, on_stop_event,
			   &vm->stop_eventfd) ||
	    add_timer(r) || add_halt_check(r) ||
	    console_start(&r->con, &r->loop)) {
		log_setup_error("event loop", "cannot set up", -errno);
		return summary_failed(r->sum, EXIT_REASON_SETUP_FAILED);
	}
	int err = vm->gdb ? gdb_server_start(vm) : 0;
	if (err) {
		log_setup_error("gdb", "cannot start its thread", err);
		return summary_failed(r->sum, EXIT_REASON_SETUP_FAILED);
	}
	if (lock_down(r)) {
		console_restore(&r->con);
		return summary_failed(r->sum, EXIT_REASON_SANDBOX);
	}

	timeline_mark(&vm->timeline, TL_SETUP_DONE);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vcpu_start(&vm->vcpus[i]))
			vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VCPU_FAILED,
				"cannot start vCPU %u", i);
	/* The test hook (docs/HACKING.md): a call the filter forbids, made
	 * with the guest running, so a test sees what a violation does. */
	if (r->violate_for_test && !r->cfg->no_seccomp)
		syscall(SYS_getppid);

	while (!atomic_load(&vm->stopping))
		if (event_loop_run_once(&r->loop, -1) < 0)
			vm_stop(vm, EXIT_VMM_ERROR, EXIT_REASON_VMM_FAILED,
				"event loop: %s", strerror(errno));

	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_kick_and_join(&vm->vcpus[i]);
	bool snapshot = atomic_load(&vm->snapshot_reached);
	if (snapshot)
		save_snapshot(r);
	console_restore(&r->con);
	timeline_mark(&vm->timeline, TL_VMM_EXIT);
	if (log_verbose)
		timeline_print(&vm->timeline, stderr);
	summary_end(r->sum, vm, &r->machine);
	if (snapshot && vm->exit_status == 0)
		r->sum->ended_by = "snapshot";
	r->sum->kernel = r->con.report.seen ? &r->con.report : NULL;
	if (vm->stop_reason[0])
		log_error("%s", vm->stop_reason);
	if (vm->exit_status == EXIT_VMM_ERROR && vm->stop_reason[0] &&
	    r->con.report.seen)
		log_kernel_report(&r->con.report, vm);
	if (vm->exit_status == EXIT_TIMEOUT)
		vcpus_report(vm);
	return vm->exit_status;
}

/* Every thread inherits this mask: stop signals go to the signalfd, the
 * kick signal is unblocked only inside vCPU threads, and the FUSE server's
 * wake-up signal only inside its waiting threads. */
static void block_signals(const struct fsvm_config *cfg)
{
	/* SIGWINCH too, whose default is to be ignored: blocked, it waits
	 * in the signalfd of an interactive run. */
	sigset_t blocked = stop_signals(cfg, true);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, FUSE_WAIT_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &blocked, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* What the guest init is to do: the command, where, as whom, with which
 * environment and mounts. */
static struct run_spec guest_job(struct run *r)
{
	const struct fsvm_config *cfg = r->cfg;
	if (!getcwd(r->cwd, sizeof(r->cwd)))
		r->cwd[0] = '\0';
	struct run_spec job = {
		.argv = cfg->guest_argv,
		.argc = cfg->guest_argc,
		.interactive = r->con.interactive,
		.stdin_stream = r->vsock.connect_fd >= 0,
		.rows = r->con.size.ws_row,
		.cols = r->con.size.ws_col,
		.dax = r->shares.dax_size != 0,
		.cwd = cfg->cwd ? cfg->cwd : r->cwd[0] ? r->cwd : NULL,
		.cwd_required = cfg->cwd != NULL,
		.env = cfg->env,
		.nr_env = cfg->nr_env,
		.user = cfg->user,
		.uid = r->identity.uid[0].guest,
		.gid = r->identity.gid[0].guest,
		.mounts = r->shares.mounts,
		/* A container's other shares are among its own mounts. */
		.nr_mounts = cfg->container ? 1 : r->shares.nr,
		.modules = &r->modules,
		.net = r->net.spec,
		.nr_net = r->net.nr_spec,
		.container = cfg->container,
	};
	if (cfg->user)
		identity_user_home(&r->identity, &job.home, &job.name);
	if (cfg->run_as) { /* home and name: the root's passwd's */
		job.user = true;
		job.uid = cfg->run_as_uid;
		job.gid = cfg->run_as_gid;
		job.home = job.name = "";
	}
	return job;
}

/* Kernel developers' mode: the modules of a --kernel, and an installed
 * tree shared read-only where the guest's modprobe looks. Under the
 * default overlay root only: the mount point is made in the guest's
 * throwaway layer, never on the host. */
static int find_modules(struct run *r, const struct fsvm_config **cfg)
{
	if (kernel_modules_find(*cfg, &r->modules))
		return -1;
	r->cfg_copy = **cfg;
	struct fsvm_config *c = &r->cfg_copy;
	if (r->modules.installed && r->modules.version[0] && !c->rw_root &&
	    c->nr_shares < CLI_MAX_SHARES) {
		snprintf(r->modules_guest, sizeof(r->modules_guest),
			 "/lib/modules/%s", r->modules.version);
		c->shares[c->nr_shares++] = (struct cli_share){
			.host = r->modules.root,
			.guest = r->modules_guest,
			.readonly = true};
	}
	if (r->modules.root[0])
		log_info("kernel modules from %s: %u to load", r->modules.root,
			 r->modules.nr);
	*cfg = c;
	r->cfg = c;
	return 0;
}

/* The jail is planned while fsvm is still itself: the guest's ids may
 * not reach the shares by path. */
static int plan_jail(struct run *r, const char **why)
{
	unsigned int n = r->shares.nr;
	for (unsigned int i = 0; i < n; i++)
		r->jail_shares[i] = (struct jail_share){
			.host = r->shares.host[i],
			.readonly = r->shares.specs[i].fuse.readonly};
	if (r->cfg->snapshot_to)
		r->jail_shares[n++] = (struct jail_share){.host = r->snapshot_dir};
	return jail_prepare(r->jail_shares, n, &r->jail, why);
}

/* Landlock over the shares, where fsvm reaches them now. */
static int wall_in(struct run *r, bool jailed, const char **why)
{
	struct landlock_share walls[SHARES_MAX + 1];
	char paths[SHARES_MAX + 1][32];
	unsigned int n = r->shares.nr + (r->cfg->snapshot_to != NULL);
	for (unsigned int i = 0; i < n; i++) {
		snprintf(paths[i], sizeof(paths[i]), JAIL_SHARE_FMT, i);
		const char *host = i < r->shares.nr ? r->shares.host[i]
						    : r->snapshot_dir;
		walls[i] = (struct landlock_share){.path = jailed ? paths[i] : host};
		if (i < r->shares.nr) {
			const struct fuse_server_config *fuse = &r->shares.specs[i].fuse;
			walls[i].readonly = fuse->readonly;
			walls[i].devices = fuse->devices;
		}
	}
	return landlock_shares(walls, n, why);
}

/* Set-up is done with the host: from here on fsvm reaches only its
 * shares, with the capabilities its file server needs. */
static int shut_in(struct run *r, const char **why)
{
	bool mknod = false, unavailable;
	for (unsigned int i = 0; i < r->shares.nr; i++)
		mknod = mknod || r->shares.specs[i].fuse.devices;
	int err = jail_enter(r->jail, &unavailable, why);
	jail_free(r->jail);
	r->jail = NULL;
	if (err && !unavailable)
		return err;
	const char *no_jail = err ? *why : NULL;
	int jail_err = err;
	r->jailed = !no_jail;
	/* Before the capabilities go: root of its namespace needs no
	 * no_new_privs for Landlock. */
	err = wall_in(r, !no_jail, why);
	if (err == -EOPNOTSUPP && no_jail)
		log_warning("no jail (%s: %s; no Landlock): code that took fsvm over could reach all your files",
			    no_jail, strerror(-jail_err));
	else if (!err && no_jail)
		log_info("no mount namespace (%s: %s): Landlock alone holds fsvm to its shares",
			 no_jail, strerror(-jail_err));
	if (err == -EOPNOTSUPP)
		err = 0;
	if (!err && (err = capabilities_drop(mknod)))
		*why = "cannot drop capabilities";
	return err;
}

/* Set-up failed: says why in one line, and the reason's code. */
static int fail(struct run *r, enum exit_reason reason, const char *what,
		const char *why, int err)
{
	log_setup_error(what, why, err);
	return summary_failed(r->sum, reason);
}

/* What the flags name, checked before KVM: every problem said, the first
 * is the run's reason. */
static int check_all(struct run *r)
{
	struct check *c = &r->check;
	r->sum->check = c;
	if (!check_run(r->cfg, c))
		return 0;
	snprintf(r->sum->message, sizeof(r->sum->message), "%s",
		 c->problems[0].message);
	return summary_failed(r->sum, c->problems[0].reason);
}

/* --snapshot-to's folder, made if it is not there (its parent must be). */
static int snapshot_folder(struct run *r, const char **why)
{
	const char *dir = r->cfg->snapshot_to;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		*why = "cannot make the folder";
		return -errno;
	}
	if (!realpath(dir, r->snapshot_dir)) {
		*why = "cannot resolve the folder";
		return -errno;
	}
	return 0;
}

/* The folder, where the jail (if any) has it. */
static int open_snapshot_folder(struct run *r, const char **why)
{
	char jailed[32];
	snprintf(jailed, sizeof(jailed), JAIL_SHARE_FMT, r->shares.nr);
	r->snapshot_dirfd = open(r->jailed ? jailed : r->snapshot_dir,
				 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*why = "cannot open the folder";
	return r->snapshot_dirfd < 0 ? -errno : 0;
}

/* In place of the boot: the vCPUs, and every part of the machine as the
 * snapshot has it. */
static int restore_machine(struct run *r)
{
	const char *why;
	int err = board_create_vcpus(&r->board, &why);
	if (err)
		return fail(r, EXIT_REASON_SETUP_FAILED, "restore", why, err);
	const struct snapshot_machine sm = {
		.board = &r->board, .con = &r->con, .machine = &r->machine};
	char line[300];
	if ((err = snapshot_restore(&sm, r->restoring, line, sizeof(line)))) {
		log_error("--restore %s: %s", r->cfg->restore, line);
		snprintf(r->sum->message, sizeof(r->sum->message),
			 "--restore %.60s: %.180s", r->cfg->restore, line);
		return summary_failed(r->sum, EXIT_REASON_BAD_SNAPSHOT);
	}
	return 0;
}

static int run_vm(const struct fsvm_config *cfg, const struct snapshot *snap,
		  int mem_fd, struct run_summary *sum)
{
	static struct run run; /* the board's transports are large */
	struct run *r = &run;
	struct vm *vm = &r->board.vm;
	const char *why = NULL;
	int err;

	r->cfg = cfg;
	r->sum = sum;
	r->restoring = snap;
	if (cfg->check) {
		sum->status = check_all(r);
		sum->ended_by = "check";
		return sum->status;
	}
	if (check_all(r))
		return EXIT_VMM_ERROR;
	r->violate_for_test = getenv("FSVM_TEST_SECCOMP_VIOLATION") != NULL;
	block_signals(cfg);
	if ((err = vm_init(vm)) || (err = event_loop_init(&r->loop)))
		return fail(r, EXIT_REASON_SETUP_FAILED, "set-up", "cannot start", err);
	if ((err = identity_plan(cfg, &r->identity, &why)))
		return fail(r, EXIT_REASON_BAD_IDS, "identity", why, 0);
	if ((err = kvm_open(vm, &why)))
		return fail(r, err == -ENOTSUP ? EXIT_REASON_KVM_UNUSABLE
					       : EXIT_REASON_NO_KVM,
			    "kvm", why, err);
	if (!cfg->setup_only && !arch_runs_stock_kernels(&why))
		return fail(r, EXIT_REASON_KVM_UNUSABLE, "kvm", why, 0);
	enum board_virtio how = cfg->microvm ? BOARD_VIRTIO_MMIO_CMDLINE
				: cfg->transport == CLI_TRANSPORT_MMIO ? BOARD_VIRTIO_MMIO_ACPI
								       : BOARD_VIRTIO_PCI;
	if ((err = board_create(&r->board, cfg->mem, mem_fd, cfg->cpus, how, &why)))
		return fail(r, err == -ENOMEM ? EXIT_REASON_OOM
					      : EXIT_REASON_SETUP_FAILED,
			    "machine", why, err);
	if ((err = console_init(&r->con, vm, cfg->snapshot_to != NULL)))
		return fail(r, EXIT_REASON_SETUP_FAILED, "console", "cannot set up", err);
	r->con.escape_key = !cfg->container;
	if (find_modules(r, &cfg))
		return summary_failed(sum, EXIT_REASON_BAD_KERNEL);
	if (shares_plan(&r->shares, cfg))
		return summary_failed(sum, EXIT_REASON_BAD_SHARE);
	/* Nobody, if guest root fell back to it, gets no set-id files. */
	for (unsigned int i = 0; i < r->shares.nr; i++) {
		r->shares.specs[i].fuse.fallback_uid = r->identity.fallback_uid;
		r->shares.specs[i].fuse.fallback_gid = r->identity.fallback_gid;
	}
	r->fs_options = (struct virtio_fs_options){.shares = r->shares.specs,
						   .nr_shares = r->shares.nr};
	if (disks_open(&r->disks, cfg))
		return summary_failed(sum, EXIT_REASON_BAD_DISK);
	if ((err = network_start(&r->net, &cfg->net, &why)))
		return fail(r, EXIT_REASON_BAD_NETWORK, "network", why, err);
	bool exec = cfg->container && cfg->container->exec;
	r->vsock = (struct virtio_vsock_options){
		.listen_fd = exec ? cfg->container->exec_listen_fd : -1,
		.guest_port = GUEST_EXEC_PORT,
		.connect_fd = -1,
		.connect_port = GUEST_STDIN_PORT};
	if (!r->con.interactive && stdin_stream_wanted(cfg->stdin_none)) {
		if ((err = stdin_stream_start(&r->stdin_stream)))
			return fail(r, EXIT_REASON_SETUP_FAILED, "stdin", "cannot stream it", err);
		r->vsock.connect_fd = r->stdin_stream.device_fd;
	}
	bool vsock = exec || r->vsock.connect_fd >= 0;
	struct run_spec job = guest_job(r);
	job.snapshot = cfg->snapshot_to != NULL;
	/* A restored VM's init reads its job from the exit device. */
	if (snap && (err = run_spec_build(&job, &r->restored_job)))
		return fail(r, EXIT_REASON_SETUP_FAILED, "restore",
			    "cannot make the job", err);
	r->exit_options = (struct exit_dev_options){
		.job = (const unsigned char *)r->restored_job.data,
		.job_len = (uint32_t)r->restored_job.len};
	r->machine = (struct machine){
		.vm = vm,
		.virtio = &r->board.virtio,
		.loop = &r->loop,
		.options = {{VIRTIO_FS_DEVICE_NAME, &r->fs_options},
			    {r->net.enabled ? VIRTIO_NET_DEVICE_NAME : NULL,
			     &r->net.device},
			    {vsock ? VIRTIO_VSOCK_DEVICE_NAME : NULL, &r->vsock},
			    {r->disks.nr_disks ? VIRTIO_BLK_DEVICE_NAME : NULL,
			     &r->disks},
			    {EXIT_DEV_NAME, &r->exit_options}},
	};
	vm->repair_memory = devices_repair_memory;
	vm->repair_opaque = &r->machine;
	if (devices_add_all(&r->machine))
		return summary_failed(sum, EXIT_REASON_SETUP_FAILED);
	if (cfg->snapshot_to) {
		char line[200];
		if ((err = devices_can_snapshot(&r->machine, line, sizeof(line))))
			return fail(r, EXIT_REASON_BAD_USAGE, "--snapshot-to", line, 0);
		if ((err = snapshot_folder(r, &why)))
			return fail(r, EXIT_REASON_SETUP_FAILED, cfg->snapshot_to, why, err);
		vm->snapshot_point = true;
	}
	if (snap) {
		if (restore_machine(r))
			return EXIT_VMM_ERROR;
	} else {
		/* What the checks passed can still not fit: the RAM is too small. */
		if (guest_load(&r->board, cfg, &job))
			return summary_failed(sum, EXIT_REASON_BAD_KERNEL);
		if ((err = board_boot(&r->board, cfg->cmdline, cfg->verbose, &why)))
			return fail(r, EXIT_REASON_SETUP_FAILED, "boot", why, err);
	}
	/* A UNIX socket is made while fsvm is still the user. */
	if (cfg->gdb && (err = gdb_server_open(vm, cfg->gdb, cfg->gdb_wait, &why)))
		return fail(r, EXIT_REASON_SETUP_FAILED, "gdb", why, err);
	if ((err = plan_jail(r, &why)))
		return fail(r, EXIT_REASON_SANDBOX, "jail", why, err);
	/* Every host resource is ours now: the guest's ids take over. */
	if ((err = identity_assume(&r->identity, &why)))
		return fail(r, EXIT_REASON_BAD_IDS, "identity", why, err);
	if ((err = shut_in(r, &why)))
		return fail(r, EXIT_REASON_SANDBOX, "jail", why, err);
	if (cfg->snapshot_to && (err = open_snapshot_folder(r, &why)))
		return fail(r, EXIT_REASON_SETUP_FAILED, cfg->snapshot_to, why, err);
	if (cfg->setup_only) {
		timeline_mark(&vm->timeline, TL_SETUP_DONE);
		summary_timeline(sum, &vm->timeline);
		sum->ended_by = "setup-only";
		printf("fsvm: set-up done in %.2f ms (up to the first KVM_RUN)\n",
		       vm_elapsed_ms(vm));
		return 0;
	}
	return run_loop(r);
}

int fsvm_restore(const struct fsvm_config *cfg, const struct snapshot *snap,
		 int mem_fd, struct run_summary *sum)
{
	return run_vm(cfg, snap, mem_fd, sum);
}

int fsvm_run(const struct fsvm_config *cfg, struct run_summary *sum)
{
	if (!cfg->image)
		return run_vm(cfg, NULL, -1, sum);
	/* The image is mounted for the VM's life, whatever ends it. */
	static struct image image;
	int status = image_open(cfg, &image)
			     ? summary_failed(sum, EXIT_REASON_BAD_IMAGE)
			     : run_vm(&image.cfg, NULL, -1, sum);
	image_close(&image);
	return status;
}
