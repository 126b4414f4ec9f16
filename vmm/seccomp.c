/* After set-up, a seccomp filter allows only what fsvm's threads use. */
#include "vmm/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "core/vm.h"

/* The list is what glibc 2.36 (Debian 12) makes of fsvm's calls once the
 * VM runs: the main thread's event loop, the vCPU threads and the device
 * exits they run, the virtio-fs workers and the FUSE requests they serve,
 * the DAX window, the lock waiters, and the way out. Set-up's own calls
 * (opening /dev/kvm, creating the VM, reading the kernel) are not in it. */
static const int any_arguments[] = {
	/* Memory: glibc's allocator and thread stacks come and go; the DAX
	 * window moves file mappings in (mremap) and syncs them. */
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	SCMP_SYS(msync),
	/* Threads: glibc's start (robust list, rseq), locks and joins
	 * (futex) and end of a vCPU, virtio-fs worker or lock waiter. */
	SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(futex),
	SCMP_SYS(exit),
	/* Signals: the vCPU kick and the lock waiters' wake-up have handlers
	 * to return from; pthread_kill and abort() mask signals and learn
	 * the ids they signal. */
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(getpid),
	SCMP_SYS(gettid),
	/* The main loop and devices: epoll; reads of the signalfd, timerfd,
	 * eventfds, inotify and stdin; eventfd writes (doorbells forwarded,
	 * interrupts, stop); the consoles and log lines (writev: glibc's
	 * fatal messages; dup: perror() before stderr's first use); the
	 * workers' poll; the console's and lock waiters' pauses; clock
	 * reads where the vDSO cannot (the lab); a pause that a stop signal
	 * (SIGSTOP, SIGTSTP, a debugger attaching) cut short goes on as
	 * restart_syscall. */
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_ctl), SCMP_SYS(read),
	SCMP_SYS(write), SCMP_SYS(writev),
	/* virtio-net and virtio-vsock: frames and stream bytes read into
	 * guest buffers, and written from them. */
	SCMP_SYS(readv), SCMP_SYS(dup), SCMP_SYS(poll),
	/* virtio-blk: its thread submits requests to its io_uring, and at a
	 * reset waits there for those in flight. What a ring may do was
	 * fixed when set-up made it (devices/virtio_blk.c: five operations,
	 * on the disk alone; nothing registered after). */
	SCMP_SYS(io_uring_enter),
	SCMP_SYS(clock_nanosleep), SCMP_SYS(clock_gettime),
	SCMP_SYS(restart_syscall),
	/* A power-off line on the console after the command started arms
	 * the checks whether the vCPUs have halted for good. */
	SCMP_SYS(timerfd_settime),
	/* FUSE requests: every host file operation, relative to fds the
	 * share opened (openat2 confines names to it; openat reopens
	 * through /proc/self/fd; the jail, vmm/jail.h, holds nothing else
	 * to open); glibc's renameat2 without flags is renameat. */
	SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(close),
	SCMP_SYS(newfstatat), SCMP_SYS(fstatfs), SCMP_SYS(lseek),
	SCMP_SYS(preadv), SCMP_SYS(pwritev), SCMP_SYS(getdents64),
	SCMP_SYS(mkdirat), SCMP_SYS(mknodat), SCMP_SYS(symlinkat),
	SCMP_SYS(linkat), SCMP_SYS(unlinkat), SCMP_SYS(renameat),
	SCMP_SYS(renameat2), SCMP_SYS(fchmod), SCMP_SYS(fchmodat),
	SCMP_SYS(fchownat), SCMP_SYS(utimensat), SCMP_SYS(readlinkat),
	SCMP_SYS(ftruncate), SCMP_SYS(fallocate), SCMP_SYS(fsync),
	SCMP_SYS(fdatasync), SCMP_SYS(syncfs), SCMP_SYS(copy_file_range),
	SCMP_SYS(flock), SCMP_SYS(setxattr), SCMP_SYS(getxattr),
	SCMP_SYS(listxattr), SCMP_SYS(removexattr),
	/* The DAX window watches the files it maps for size changes. */
	SCMP_SYS(inotify_add_watch), SCMP_SYS(inotify_rm_watch),
	/* The --json summary, made after the guest stopped: its peak memory,
	 * and the seed json-c's hash tables take on first use (a few bytes
	 * of randomness, nothing of the host's). */
	SCMP_SYS(getrusage), SCMP_SYS(getrandom),
	/* The way out: exit() from main, abort() on a broken invariant. */
	SCMP_SYS(exit_group),
};

/* What pthread_create's clone asks for: a thread sharing this process's
 * memory, files, file-system context and signal handlers (which the
 * kernel never combines with new namespaces). */
#define THREAD_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | \
		      CLONE_THREAD)

/* ioctl's and fcntl's command is 32 bits to the kernel, whatever the
 * register's upper half holds: only the lower half is compared. */
#define COMMAND_IS(cmd) SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, (cmd))

/* A call allowed only when one argument passes its comparison. */
struct narrowed_rule {
	int nr;
	struct scmp_arg_cmp arg;
};

static const struct narrowed_rule narrowed[] = {
	/* Memory is never made executable: no code is loaded at run time. */
	{SCMP_SYS(mmap), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)},
	{SCMP_SYS(mprotect), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)},
	/* Threads, never processes. */
	{SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, THREAD_FLAGS, THREAD_FLAGS)},
	/* KVM at run time: the vCPUs' KVM_RUN; the serial ports' interrupt
	 * line; what the guest's virtio set-up asks of KVM (MSI routes,
	 * irqfds, ioeventfds, the DAX slot following its BAR). */
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_RUN)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_IRQ_LINE)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_GSI_ROUTING)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_IRQFD)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_IOEVENTFD)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_USER_MEMORY_REGION)},
	/* A tap's offloads follow what the guest's driver takes. */
	{SCMP_SYS(ioctl), COMMAND_IS(TUNSETOFFLOAD)},
	/* virtio-vsock and --gdb: the host's connections are taken from
	 * the listening sockets set-up made, with the flags both use. The
	 * fds are not the filter's to know, so any fd: fsvm listens on
	 * nothing else, and accept4 on an fd that does not listen fails. */
	{SCMP_SYS(accept4), SCMP_A3(SCMP_CMP_MASKED_EQ, 0xffffffffu,
				    SOCK_NONBLOCK | SOCK_CLOEXEC)},
	/* virtio-vsock: a stream the guest sends no more on is ended for
	 * the host's reader; never its other half. */
	{SCMP_SYS(shutdown), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, SHUT_WR)},
	/* A kicked vCPU tells whether it has halted for good (power-off
	 * without ACPI): its state and its interrupt flag. */
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_MP_STATE)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_REGS)},
	/* A guest that timed out: where its vCPUs waited (vcpus_report). */
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_VCPU_EVENTS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_LAPIC)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_MSRS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_TSC_KHZ)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_IRQCHIP)},
	/* The terminal: stdio asks whether a stream is one, the console is
	 * put back out of raw mode, and a new size is read (SIGWINCH). */
	{SCMP_SYS(ioctl), COMMAND_IS(TCGETS)},
	{SCMP_SYS(ioctl), COMMAND_IS(TCSETS)},
	{SCMP_SYS(ioctl), COMMAND_IS(TIOCGWINSZ)},
	/* fcntl: duplicates (DAX mappings, '..'), a DAX file's access mode,
	 * and the guest's POSIX locks as OFD locks. */
	{SCMP_SYS(fcntl), COMMAND_IS(F_DUPFD_CLOEXEC)},
	{SCMP_SYS(fcntl), COMMAND_IS(F_GETFL)},
	{SCMP_SYS(fcntl), COMMAND_IS(F_OFD_GETLK)},
	{SCMP_SYS(fcntl), COMMAND_IS(F_OFD_SETLK)},
	{SCMP_SYS(fcntl), COMMAND_IS(F_OFD_SETLKW)},
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* --gdb only, on its thread while the vCPUs are parked: registers (the
 * general ones are read above), FPU/SSE, virtual addresses, breakpoints,
 * watchpoints and steps, and the guest's own int3 handed back. Without a
 * debugger nothing may change a vCPU's state. */
static const struct narrowed_rule debugger[] = {
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_REGS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_SREGS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_SREGS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_FPU)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_FPU)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_TRANSLATE)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_GUEST_DEBUG)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_SET_VCPU_EVENTS)},
};

/* --snapshot-to only, once the vCPUs have stopped at the snapshot
 * point: the state of the board's vCPUs and VM (arch/x86/snapshot_state.c;
 * the KVM fd's own questions as well). A run that takes none reads no
 * more of KVM than the ones above. */
static const struct narrowed_rule snapshot[] = {
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_CHECK_EXTENSION)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_MSR_INDEX_LIST)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_SREGS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_SREGS2)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_XSAVE)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_XSAVE2)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_XCRS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_DEBUGREGS)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_PIT2)},
	{SCMP_SYS(ioctl), COMMAND_IS(KVM_GET_CLOCK)},
};

static int add_list(scmp_filter_ctx ctx, const struct narrowed_rule *rules,
		    size_t n)
{
	int err = 0;
	for (size_t i = 0; !err && i < n; i++)
		err = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, rules[i].nr, 1,
					     &rules[i].arg);
	return err;
}

static int add_rules(scmp_filter_ctx ctx, unsigned int extras)
{
	int err = 0;
	for (size_t i = 0; !err && i < ARRAY_LEN(any_arguments); i++)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, any_arguments[i], 0);
	if (!err)
		err = add_list(ctx, narrowed, ARRAY_LEN(narrowed));
	if (!err && (extras & SECCOMP_DEBUGGER))
		err = add_list(ctx, debugger, ARRAY_LEN(debugger));
	if (!err && (extras & SECCOMP_SNAPSHOT))
		err = add_list(ctx, snapshot, ARRAY_LEN(snapshot));
	/* glibc's first pthread_create installs the handler of its own
	 * set-id signal (SIGSETXID, the kernel's signal 33): no other. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction),
				       1, SCMP_A0(SCMP_CMP_EQ, __SIGRTMIN + 1));
	/* Signals (the kick, the wake-up, abort's) go to our own threads. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	/* clone3's flags are in memory, out of a filter's sight: refused as
	 * unknown, so glibc falls back to clone, whose flags are checked. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
				       SCMP_SYS(clone3), 0);
	return err;
}

/* The handler's, set before the filter: it may only read them. */
static struct seccomp_violation violation = {.tty_fd = -1, .json_fd = -1};

/* System calls' names by number, resolved before the filter: libseccomp's
 * resolver allocates, which a signal handler may not. */
#define NAMES_MAX 512
static char names[NAMES_MAX][28];

static void resolve_names(void)
{
	for (int nr = 0; nr < NAMES_MAX; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
		snprintf(names[nr], sizeof(names[nr]), "%s", name ? name : "");
		free(name);
	}
}

/* Async-signal-safe text: appends s, or a number, to buf at *len. */
static void append(char *buf, size_t size, size_t *len, const char *s)
{
	while (*s && *len + 1 < size)
		buf[(*len)++] = *s++;
	buf[*len] = '\0';
}

static void append_number(char *buf, size_t size, size_t *len, long n)
{
	char digits[24];
	size_t i = sizeof(digits);
	unsigned long v = n < 0 ? 0UL - (unsigned long)n : (unsigned long)n;
	digits[--i] = '\0';
	do
		digits[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 1);
	if (n < 0)
		digits[--i] = '-';
	append(buf, size, len, digits + i);
}

static void write_all(int fd, const char *s)
{
	for (size_t len = strlen(s); len;) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* SIGSYS from the filter: on the thread that made the call, which did not
 * happen. Only async-signal-safe calls, all of them the filter's. */
static void on_violation(int sig, siginfo_t *si, void *context)
{
	(void)sig;
	(void)context;
	if (violation.tty_fd >= 0)
		tcsetattr(violation.tty_fd, TCSANOW, &violation.tty);
	char line[192];
	size_t len = 0;
	int nr = si->si_syscall;
	bool native = si->si_arch == AUDIT_ARCH_X86_64;
	append(line, sizeof(line), &len, "seccomp: system call ");
	append(line, sizeof(line), &len,
	       !native ? "of another architecture"
	       : nr >= 0 && nr < NAMES_MAX && names[nr][0] ? names[nr]
							 : "unknown");
	append(line, sizeof(line), &len, " (");
	append_number(line, sizeof(line), &len, nr);
	append(line, sizeof(line), &len,
	       ") is not one fsvm makes: stopped (a bug in fsvm, or code that took it over)");
	write_all(STDERR_FILENO, "fsvm: ");
	write_all(STDERR_FILENO, line);
	write_all(STDERR_FILENO, "\n");
	if (violation.json_fd >= 0 && violation.json_before && violation.json_after) {
		write_all(violation.json_fd, violation.json_before);
		write_all(violation.json_fd, line);
		write_all(violation.json_fd, violation.json_after);
		write_all(violation.json_fd, "\n");
	}
	_exit(EXIT_VMM_ERROR);
}

static int trap_violations(const struct seccomp_violation *v)
{
	if (v)
		violation = *v;
	resolve_names();
	struct sigaction sa = {.sa_sigaction = on_violation, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL) < 0 ? -errno : 0;
}

int seccomp_lock_down(unsigned int extras, const struct seccomp_violation *v)
{
	/* Nothing fsvm runs from now on may gain privileges (no set-uid
	 * exec), which also lets an unprivileged process load the filter. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	int err = trap_violations(v);
	if (err)
		return err;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		return -ENOMEM;
	err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	/* A system call of another architecture (int 0x80) is no better. */
	if (!err)
		err = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
				       SCMP_ACT_TRAP);
	if (!err)
		err = add_rules(ctx, extras);
	if (!err)
		err = seccomp_load(ctx);
	seccomp_release(ctx);
	return err;
}
