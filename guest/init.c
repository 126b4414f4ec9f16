/* fsvm-init: PID 1 of the default guest. Mounts the basics and the shares,
 * runs the command fsvm handed over in the initramfs, reaps orphans, and
 * reports the command's exit status through the exit device. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "guest/container_mounts.h"
#include "guest/exec_agent.h"
#include "guest/job_archive.h"
#include "guest/mounts.h"
#include "guest/net.h"
#include "guest/process.h"
#include "guest/protocol.h"
#include "guest/signals.h"
#include "guest/spec.h"
#include "guest/stdin_relay.h"

#define TAINT_DIE_BIT 7 /* include/linux/panic.h: TAINT_DIE */

#define INIT_MAX_ARGS 4096
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND 127
#define EXIT_SETUP_FAILED 125

static void warn(const char *what)
{
	dprintf(STDERR_FILENO, "fsvm-init: %s: %s\n", what, strerror(errno));
}

/* Where the command's files are: the initramfs's root, or a restored
 * VM's job folder (GUEST_SPEC_SNAPSHOT). */
static const char *job_dir = "";

/* The job file name (a GUEST_SPEC_*) under job_dir, in a buffer of its
 * own for each of the few a call uses at once. */
static const char *job_file(const char *name)
{
	static char paths[2][PATH_MAX];
	static unsigned int next;
	char *path = paths[next++ % 2];
	snprintf(path, PATH_MAX, "%s/%s", job_dir, name);
	return path;
}

static void mount_basics(void)
{
	static const struct {
		const char *type, *target, *opts;
		unsigned long flags;
	} mounts[] = {
		{"devtmpfs", "/dev", "mode=0755", MS_NOSUID},
		{"proc", "/proc", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC},
		{"sysfs", "/sys", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC},
		{"tmpfs", "/tmp", "mode=1777", MS_NOSUID | MS_NODEV},
		{"tmpfs", "/run", "mode=0755", MS_NOSUID | MS_NODEV},
	};
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		mkdir(mounts[i].target, 0755);
		if (mount(mounts[i].type, mounts[i].target, mounts[i].type,
			  mounts[i].flags, mounts[i].opts) < 0 && errno != EBUSY)
			warn(mounts[i].target);
	}
	/* What udev would add and scripts name: `cmd /dev/stdin`, bash's
	 * process substitution (/dev/fd). devtmpfs has none of them. */
	static const char *const links[][2] = {
		{"/dev/fd", "/proc/self/fd"},
		{"/dev/stdin", "/proc/self/fd/0"},
		{"/dev/stdout", "/proc/self/fd/1"},
		{"/dev/stderr", "/proc/self/fd/2"},
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][1], links[i][0]) < 0 && errno != EEXIST)
			warn(links[i][0]);
}

/* The user's terminal size, as fsvm saw it, on the guest's console: a
 * serial line has none, and full-screen programs need one. */
static void set_size(int tty)
{
	char buf[32];
	int fd = open(job_file(GUEST_SPEC_TTY), O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	unsigned int rows, cols;
	if (sscanf(buf, "%u %u", &rows, &cols) == 2 && rows && cols &&
	    rows <= 0xffff && cols <= 0xffff) {
		struct winsize ws = {.ws_row = (unsigned short)rows,
				     .ws_col = (unsigned short)cols};
		ioctl(tty, TIOCSWINSZ, &ws);
	}
}

/* stdin/stdout on ttyS0, stderr on ttyS1. Non-interactive runs get raw
 * ttys (bytes pass unchanged) and an empty stdin (fsvm's, if it streams,
 * replaces it later: guest/stdin_relay.c). An interactive one has the
 * terminal for all three, as a login does: shells prompt on stderr,
 * and fsvm's stderr need not be the terminal (kernel messages stay on
 * ttyS1). */
static void setup_stdio(int interactive)
{
	/* The ttys as the kernel made them, kept when first made raw: a
	 * restored interactive run gets them back from the snapshot's raw
	 * boot. */
	static struct termios cooked[2];
	static bool have_cooked[2];
	int out = open(GUEST_STDOUT_TTY, O_RDWR | O_NOCTTY);
	int err = open(GUEST_STDERR_TTY, O_RDWR | O_NOCTTY);
	if (out < 0 || err < 0)
		return; /* keep the kernel's console fds */
	struct termios t;
	for (int i = 0; i < 2; i++) {
		int fd = i ? err : out;
		if (interactive) {
			if (have_cooked[i])
				tcsetattr(fd, TCSANOW, &cooked[i]);
		} else if (tcgetattr(fd, &t) == 0) {
			if (!have_cooked[i])
				cooked[i] = t;
			have_cooked[i] = true;
			cfmakeraw(&t);
			tcsetattr(fd, TCSANOW, &t);
		}
	}
	if (interactive)
		set_size(out);
	int in = interactive ? out : open("/dev/null", O_RDONLY);
	dup2(in, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(interactive ? out : err, STDERR_FILENO);
	for (int fd = 3; fd < 16; fd++)
		close(fd);
}

/* --env: NAME=VALUE each, read while the job is at hand and set once the
 * root is final (a HOME of the root's passwd goes under them). */
static char env_buf[1 << 20];
static char *env_vars[INIT_MAX_ARGS + 1];
static int env_count;

static void read_env(void)
{
	env_count = spec_split(env_buf,
			       spec_read(job_file(GUEST_SPEC_ENV), env_buf, sizeof(env_buf)),
			       env_vars, INIT_MAX_ARGS);
}

/* Anything but NAME=VALUE is not a variable. */
static void apply_env(void)
{
	for (int i = 0; i < env_count; i++) {
		char *eq = strchr(env_vars[i], '=');
		if (!eq || eq == env_vars[i])
			continue;
		*eq = '\0';
		setenv(env_vars[i], eq + 1, 1);
		*eq = '=';
	}
}

/* --user (or a container's user): the ids the command runs as, its home
 * ("": the root's passwd's) and name ("": no USER). */
static int read_user(struct run_as *as)
{
	static char buf[8192];
	char *f[5];
	*as = (struct run_as){0};
	if (spec_split(buf, spec_read(job_file(GUEST_SPEC_USER), buf, sizeof(buf)),
		       f, 4) != 4)
		return access(job_file(GUEST_SPEC_USER), F_OK) == 0 ? -1 : 0;
	char *end1, *end2;
	errno = 0;
	unsigned long uid = strtoul(f[0], &end1, 10);
	unsigned long gid = strtoul(f[1], &end2, 10);
	if (errno || *end1 || *end2 || !*f[0] || !*f[1] || uid >= (uid_t)-1 ||
	    gid >= (gid_t)-1 || (f[2][0] && f[2][0] != '/'))
		return -1;
	*as = (struct run_as){.set = true,
			      .uid = (uid_t)uid,
			      .gid = (gid_t)gid,
			      .home = f[2],
			      .name = f[3]};
	return 0;
}

/* The user's home: the job's, else the root's passwd entry's, else /. */
static const char *home_of(const struct run_as *as)
{
	static char home[PATH_MAX];
	if (as->set && *as->home)
		return as->home;
	return passwd_home("/etc/passwd", as->set ? as->uid : 0, home,
			   sizeof(home)) == 0
		       ? home
		       : "/";
}

/* The command's environment: the init's PATH, HOME and TERM, under the
 * user's HOME and USER, under --env's; with env=exact (a container's)
 * the job's variables alone, and HOME if they lack one. */
static void setup_environment(const struct run_as *as, bool exact,
			      bool interactive)
{
	if (exact) {
		clearenv();
	} else {
		setenv("PATH",
		       "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		       1);
		setenv("HOME", "/root", 1);
		if (!getenv("TERM"))
			setenv("TERM", interactive ? "linux" : "dumb", 1);
		if (as->set)
			setenv("HOME", home_of(as), 1);
		if (as->set && *as->name) {
			setenv("USER", as->name, 1);
			setenv("LOGNAME", as->name, 1);
		}
	}
	apply_env();
	if (!getenv("HOME"))
		setenv("HOME", home_of(as), 1);
}

/* GUEST_SPEC_HOSTNAME: the name's bytes; none or empty: the kernel's. */
static int set_hostname(void)
{
	char name[HOST_NAME_MAX + 2];
	size_t len = spec_read("/" GUEST_SPEC_HOSTNAME, name, sizeof(name));
	if (!len)
		return 0;
	if (len > HOST_NAME_MAX || strlen(name) != len) {
		dprintf(STDERR_FILENO,
			"fsvm-init: hostname: not a name of 1 to %d bytes\n",
			HOST_NAME_MAX);
		return -1;
	}
	if (sethostname(name, len) < 0) {
		warn("hostname");
		return -1;
	}
	return 0;
}

/* --net: how eth0 is set up, read while the job is at hand (the root
 * switch leaves it behind); job->wanted stays false without one. */
static int read_net(struct net_job *job)
{
	static char buf[512];
	char *f[6];
	size_t len = spec_read("/" GUEST_SPEC_NET, buf, sizeof(buf));
	*job = (struct net_job){0};
	if (!len && access("/" GUEST_SPEC_NET, F_OK) < 0)
		return 0;
	return net_parse_job(f, len ? spec_split(buf, len, f, 5) : 0, job);
}

static int have_port; /* the exit device's ports are ours (ioperm) */

/* A step of the boot, for fsvm -v's timeline. */
static void mark(unsigned char step)
{
	if (have_port)
		outb(step, EXIT_DEV_PORT + EXIT_DEV_REG_MARK);
}

/* Microseconds on the clock of the kernel's messages, which starts with
 * the kernel (CLOCK_MONOTONIC starts later, at timekeeping's set-up):
 * the timestamp of a record we log at debug level, below any console's
 * level. 0 if /dev/kmsg cannot say. */
static unsigned int kernel_clock_us(void)
{
	static const char note[] = "fsvm-init: started";
	static const char record[] = "<7>fsvm-init: started\n";
	int fd = open("/dev/kmsg", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	unsigned long long us = 0;
	char rec[2048];
	ssize_t n;
	/* One write() per record: dprintf seeks, which /dev/kmsg refuses. */
	if (lseek(fd, 0, SEEK_END) >= 0 &&
	    write(fd, record, sizeof(record) - 1) > 0)
		while ((n = read(fd, rec, sizeof(rec) - 1)) > 0) {
			rec[n] = '\0'; /* "PRIO,SEQ,MICROSECONDS,FLAGS;TEXT" */
			const char *text = strchr(rec, ';');
			if (text && !strncmp(text + 1, note, sizeof(note) - 1)) {
				if (sscanf(rec, "%*u,%*u,%llu", &us) != 1)
					us = 0;
				break;
			}
		}
	close(fd);
	return us > 0xffffffffULL ? 0 : (unsigned int)us;
}

/* The first mark also says how long the kernel has been running, so fsvm
 * can tell the time before the kernel started from the rest. */
static void mark_init(void)
{
	have_port = ioperm(EXIT_DEV_PORT, EXIT_DEV_LEN, 1) == 0;
	unsigned int us = have_port ? kernel_clock_us() : 0;
	if (us)
		outl(us, EXIT_DEV_PORT + EXIT_DEV_REG_CLOCK);
	mark(GUEST_MARK_INIT);
}

/* The kernel's taint flags say whether it oopsed (TAINT_DIE, 'D'): its
 * own record, which nothing the command prints can fake. */
static bool kernel_oopsed(void)
{
	char text[32] = "";
	int fd = open("/proc/sys/kernel/tainted", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	return n > 0 && (strtoull(text, NULL, 10) >> TAINT_DIE_BIT) & 1;
}

static void report(int status)
{
	sync();
	if (have_port && kernel_oopsed())
		mark(GUEST_MARK_KERNEL_OOPSED);
	if (have_port)
		outb((unsigned char)status, EXIT_DEV_PORT + EXIT_DEV_REG_STATUS);
	/* Not under fsvm (or the port write did not stop us): reboot. */
	reboot(RB_AUTOBOOT);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static int wait_for(pid_t child)
{
	for (;;) {
		int st;
		pid_t pid = wait(&st);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			return EXIT_NOT_FOUND;
		if (pid != child)
			continue; /* an orphan reparented to us */
		return exit_code(st);
	}
}

/* `fsvm run`'s root: the shares, the init's /dev, /proc and /sys, then the
 * network (resolv.conf goes into the guest's /etc). */
static int enter_root(const struct net_job *net)
{
	if (mount_shares() < 0)
		return -1;
	mark(GUEST_MARK_ROOT);
	return net->wanted ? net_configure(net) : 0;
}

/* A container's: its root share, the network while the init's /sys is
 * at hand, what the new root cannot reach taken along, the switch, then
 * the container's own mounts. */
static int enter_container(struct container_mounts *mounts,
			   const struct net_job *net)
{
	struct net_settings applied;
	if (mount_container_root() < 0)
		return -1;
	mark(GUEST_MARK_ROOT);
	if (net->wanted && net_configure_links(net, &applied) < 0)
		return -1;
	if (container_mounts_prepare(mounts) < 0 || switch_root() < 0)
		return -1;
	return container_mounts_apply(mounts);
}

/* The command and what it runs with: the job's files under job_dir. */
struct command {
	char **argv; /* NULL: the job names none */
	char cwd[4096];
	bool cwd_required;
	bool interactive;
	struct run_as as;
};

static int read_command(struct command *c)
{
	static char argbuf[1 << 20];
	static char *argv[INIT_MAX_ARGS + 1];
	c->interactive = access(job_file(GUEST_SPEC_TTY), F_OK) == 0;
	c->argv = spec_split(argbuf,
			     spec_read(job_file(GUEST_SPEC_ARGV), argbuf, sizeof(argbuf)),
			     argv, INIT_MAX_ARGS)
			  ? argv
			  : NULL;
	c->cwd[0] = '\0';
	spec_read(job_file(GUEST_SPEC_CWD), c->cwd, sizeof(c->cwd));
	c->cwd_required = access(job_file(GUEST_SPEC_CWD_REQUIRED), F_OK) == 0;
	read_env();
	if (read_user(&c->as) < 0) {
		dprintf(STDERR_FILENO, "fsvm-init: --user: malformed job file\n");
		return -1;
	}
	return 0;
}

/* Forks and runs cmd as the job says, and waits for it: its status. */
static int run(char **cmd, const struct command *c,
	       const struct process_spec *process, bool forwarding,
	       struct signal_forward *forward)
{
	pid_t child = fork();
	if (child == 0) {
		if (forwarding)
			signals_restore(forward);
		setsid();
		if (c->interactive)
			ioctl(STDIN_FILENO, TIOCSCTTY, 0);
		process_become(process, &c->as);
		execvp(cmd[0], cmd);
		int code = errno == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE;
		dprintf(STDERR_FILENO, "fsvm-init: %s: %s\n", cmd[0],
			code == EXIT_NOT_FOUND ? "command not found"
					       : strerror(errno));
		_exit(code);
	}
	int st;
	if (child < 0)
		return EXIT_NOT_EXECUTABLE;
	if (forwarding)
		return signals_wait(forward, child, &st) < 0 ? EXIT_NOT_FOUND
							      : exit_code(st);
	return wait_for(child);
}

/* The snapshot point: the warm-up command first, if the job names one
 * (it must succeed; what it leaves running stays in the snapshot), then
 * the mark where fsvm saves the VM. What follows runs in each restored
 * VM: its own job, read from the exit device, and its terminals. */
static void snapshot_point(struct command *c,
			   const struct process_spec *process)
{
	if (!have_port) {
		dprintf(STDERR_FILENO, "fsvm-init: snapshot: no exit device\n");
		report(EXIT_SETUP_FAILED);
	}
	if (c->argv) {
		int status = run(c->argv, c, process, false, NULL);
		if (status) {
			dprintf(STDERR_FILENO,
				"fsvm-init: snapshot: the warm-up command failed (status %d)\n",
				status);
			report(status);
		}
	}
	mark(GUEST_MARK_SNAPSHOT);
	job_dir = GUEST_RESTORED_JOB_DIR;
	if (job_archive_receive(job_dir) < 0 || read_command(c) < 0)
		report(EXIT_SETUP_FAILED);
	setup_stdio(c->interactive);
	clearenv(); /* the snapshot's --env is not the restored command's */
}

int main(void)
{
	static char *shell[] = {"/bin/sh", NULL};
	static struct process_spec process;
	static struct container_mounts container_mounts;
	static struct command c;
	struct signal_forward forward;
	struct net_job net;

	mount_basics(); /* /dev first: the kernel's clock is read in /dev/kmsg */
	mark_init();
	setup_stdio(access(job_file(GUEST_SPEC_TTY), F_OK) == 0);
	/* The job description lives in the initramfs we are about to leave. */
	if (read_command(&c) < 0 || read_net(&net) < 0)
		report(EXIT_SETUP_FAILED);
	if (process_read(&process) < 0 || set_hostname() < 0)
		report(EXIT_SETUP_FAILED);
	bool container = access("/" GUEST_SPEC_FSMOUNTS, F_OK) == 0;
	bool forwarding = access("/" GUEST_SPEC_SIGNALS, F_OK) == 0;
	bool exec = forwarding && access("/" GUEST_SPEC_EXEC, F_OK) == 0;
	bool stdin_streams = access("/" GUEST_SPEC_STDIN, F_OK) == 0;
	bool snapshot = access("/" GUEST_SPEC_SNAPSHOT, F_OK) == 0;
	load_modules(net.wanted, exec || stdin_streams);
	mark(GUEST_MARK_MODULES);
	/* fsvm sends signals from GUEST_MARK_COMMAND on; the tty is the
	 * init's, out of a container's reach after the root switch. */
	if (forwarding && signals_open(&forward, GUEST_STDERR_TTY) < 0)
		report(EXIT_SETUP_FAILED);
	/* Served from the wait for the command, as signals are. */
	if (exec && (forward.exec_listener = exec_agent_listen()) < 0)
		report(EXIT_SETUP_FAILED);
	if ((container ? enter_container(&container_mounts, &net)
		       : enter_root(&net)) < 0)
		report(EXIT_SETUP_FAILED);
	if (snapshot) {
		/* fsvm refuses the flags a snapshot cannot hold (a container,
		 * a network, streams): this one job says so itself. */
		if (container || forwarding || stdin_streams) {
			dprintf(STDERR_FILENO, "fsvm-init: snapshot: not of a container or a stream\n");
			report(EXIT_SETUP_FAILED);
		}
		setup_environment(&c.as, false, false);
		snapshot_point(&c, &process);
	}
	setup_environment(&c.as, process.exact_env, c.interactive);
	if (!c.cwd[0] || chdir(c.cwd) < 0) {
		if (c.cwd_required) {
			dprintf(STDERR_FILENO, "fsvm-init: --cwd %s: %s\n", c.cwd,
				strerror(errno));
			report(EXIT_SETUP_FAILED);
		}
		chdir("/");
	}

	/* Last: the relay it forks has nothing of the set-up to wait for. */
	if (stdin_streams && stdin_relay_start() < 0)
		report(EXIT_SETUP_FAILED);
	mark(GUEST_MARK_COMMAND);
	int status = run(c.argv ? c.argv : shell, &c, &process, forwarding,
			 &forward);
	mark(GUEST_MARK_COMMAND_EXIT);
	report(status);
	return 0;
}
