/* The OCI runtime's command line and operations: create, start, state,
 * kill, delete, run, features. A container is one fsvm process: `create`
 * forks it, it waits on the state folder's exec.fifo until `start` (as
 * runc's init does), then boots the VM and exits with the command's
 * status, which the caller (conmon, containerd's shim) collects. */
#include "vmm/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmm/forward_signals.h"
#include "vmm/oci_cgroup.h"
#include "vmm/oci_console.h"
#include "vmm/oci_exec.h"
#include "vmm/oci_network.h"
#include "vmm/oci_spec.h"
#include "vmm/oci_state.h"
#include "vmm/run.h"
#include "vmm/summary.h"

#define OCI_MAX_ARGS 8
#define OCI_KILL_WAIT_MS 10000

struct runtime {
	const char *name;
	const char *root;     /* --root: the state folders' folder */
	char root_buf[4096];
	const char *log;      /* --log */
	bool log_json;        /* --log-format json */
	bool systemd_cgroup;  /* --systemd-cgroup */
	bool no_cgroups;      /* --cgroup-manager disabled */
};

/* One line on stderr and, with --log, in the log in its format (podman
 * and containerd read the log to say why the runtime failed). */
static void say(const struct runtime *rt, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(const struct runtime *rt, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", rt->name, msg);
	if (!rt->log)
		return;
	FILE *f = fopen(rt->log, "ae");
	if (!f)
		return;
	char when[64];
	time_t now = time(NULL);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	if (rt->log_json) {
		fprintf(f, "{\"level\":\"%s\",\"msg\":\"", level);
		for (const char *p = msg; *p; p++) {
			if (*p == '"' || *p == '\\')
				fprintf(f, "\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
		fprintf(f, "\",\"time\":\"%s\"}\n", when);
	} else {
		fprintf(f, "time=\"%s\" level=%s msg=\"%s\"\n", when, level, msg);
	}
	fclose(f);
}

static int fail(const struct runtime *rt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(const struct runtime *rt, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say(rt, "error", "%s", msg);
	return 1;
}

/* A flag of an operation: --NAME VALUE, --NAME=VALUE, or the Go flag
 * package's -NAME spellings that runc also takes. */
struct flag {
	const char *name;
	const char **value; /* NULL: a flag without a value */
	bool *set;
};

/* Splits args into flags and up to OCI_MAX_ARGS words; 0, or 1 after
 * saying what was wrong. With first_word, stops at the first word (the
 * operation, after the global flags) and gives its index. */
static int parse_flags(const struct runtime *rt, const char *op, int argc,
		       char **argv, const struct flag *flags, const char **words,
		       int *nr_words, int *first_word)
{
	*nr_words = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || !a[1] || *nr_words) {
			if (first_word) {
				*first_word = i;
				return 0;
			}
			if (*nr_words == OCI_MAX_ARGS)
				return fail(rt, "%s: too many arguments", op);
			words[(*nr_words)++] = a;
			continue;
		}
		const char *name = a + 1 + (a[1] == '-');
		size_t len = strcspn(name, "=");
		const struct flag *f = flags;
		while (f->name && (strlen(f->name) != len || strncmp(f->name, name, len)))
			f++;
		if (!f->name)
			return fail(rt, "%s: unknown flag '%s'", op, a);
		const char *v = name[len] == '=' ? name + len + 1 : NULL;
		if (f->value) {
			if (!v && i + 1 == argc)
				return fail(rt, "%s: --%s needs a value", op, f->name);
			*f->value = v ? v : argv[++i];
		} else if (v && strcmp(v, "true") && strcmp(v, "false")) {
			return fail(rt, "%s: --%s is true or false, not '%s'", op, f->name, v);
		}
		if (f->set)
			*f->set = !v || f->value || !strcmp(v, "true");
	}
	if (first_word)
		*first_word = argc;
	return 0;
}

static int state_dir(const struct runtime *rt, const char *id, char *dir,
		     size_t len)
{
	if (!oci_id_valid(id))
		return fail(rt, "container id '%s': letters, digits, '_', '+', '-' and '.' only", id);
	snprintf(dir, len, "%s/%s", rt->root, id);
	return 0;
}

/* The container's state, read; 1 after saying it does not exist. */
static int load_state(const struct runtime *rt, const char *id, char *dir,
		      size_t len, struct oci_state *s)
{
	if (state_dir(rt, id, dir, len))
		return 1;
	int err = oci_state_read(dir, s);
	if (err == -ENOENT)
		return fail(rt, "container %s does not exist", id);
	if (err)
		return fail(rt, "container %s: cannot read its state: %s", id, strerror(-err));
	return 0;
}

static int mkdir_parents(const char *path, mode_t mode)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -errno : 0;
}

/* The pid file: written whole, then renamed into place (the caller may
 * be watching for it). */
static int write_pid_file(const char *path, pid_t pid)
{
	char tmp[4096 + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d", (int)pid);
	int err = fclose(f) ? -errno : 0;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* The container's process: joins its network, waits for `start`, then
 * is the VM. What goes wrong before the wait goes to `create` through
 * the ready pipe, which gets "r" once all is well. */
static __attribute__((noreturn)) void container_process(struct oci_bundle *b,
							const char *fifo, int slave,
							int ready)
{
	char msg[1024] = "e";
	setsid();
	if (slave >= 0 && oci_console_take(slave) < 0)
		snprintf(msg, sizeof(msg), "ecannot take the terminal: %s", strerror(errno));
	else if (b->netns && oci_network_join(b->netns, &b->cfg.net, msg + 1, sizeof(msg) - 1))
		;
	else
		msg[0] = 'r';
	if (write(ready, msg, msg[0] == 'r' ? 1 : strlen(msg)) < 0 || msg[0] != 'r')
		_exit(EXIT_VMM_ERROR);
	close(ready);
	int fd = open(fifo, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		_exit(EXIT_VMM_ERROR);
	close(fd);
	static struct run_summary sum;
	_exit(fsvm_run(&b->cfg, &sum));
}

/* Forks the container's process and records it: what `create` and `run`
 * share. *child is its pid. */
static int create(const struct runtime *rt, const char *id, const char *bundle,
		  const char *pid_file, const char *console_socket, pid_t *child)
{
	static struct oci_bundle b; /* the container's process keeps it */
	char dir[4096 + 512], fifo[4096 + 600], err[1024];
	const char *why = NULL;
	if (state_dir(rt, id, dir, sizeof(dir)))
		return 1;
	if (oci_bundle_load(bundle, &b, err, sizeof(err))) {
		oci_bundle_free(&b);
		return fail(rt, "%s", err);
	}
	if (b.terminal && !console_socket)
		return fail(rt, "process.terminal is set: --console-socket is needed for the terminal");
	if (!b.terminal && console_socket)
		return fail(rt, "--console-socket given, but process.terminal is not set");
	int e = mkdir_parents(rt->root, 0700);
	if (e)
		return fail(rt, "--root %s: %s", rt->root, strerror(-e));
	if (mkdir(dir, 0700) < 0)
		return fail(rt, errno == EEXIST ? "container %s already exists"
						: "container %s: cannot make its state folder", id);
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, dir);
	int slave = -1, ready[2] = {-1, -1};
	*child = -1;
	/* exec needs the guest's vsock, which the packaged kernels have; the
	 * microVM one and a user's own may not. */
	b.job.exec = !b.cfg.microvm && !b.cfg.kernel;
	b.job.exec_listen_fd = b.job.exec ? oci_exec_listen(dir) : -1;
	if (b.job.exec && b.job.exec_listen_fd < 0) {
		say(rt, "warning", "container %s: no exec into it: %s", id,
		    strerror(-b.job.exec_listen_fd));
		b.job.exec = false;
	}
	if (mkfifo(fifo, 0600) < 0)
		why = "cannot make exec.fifo", e = -errno;
	else if (b.terminal && (e = oci_console_open(console_socket, &slave, &why)))
		;
	else if (pipe2(ready, O_CLOEXEC) < 0)
		why = "cannot make a pipe", e = -errno;
	else if ((*child = fork()) < 0)
		why = "cannot fork", e = -errno;
	else if (*child == 0)
		container_process(&b, fifo, slave, ready[1]);
	if (ready[1] >= 0)
		close(ready[1]);
	if (slave >= 0)
		close(slave);
	if (b.job.exec)
		close(b.job.exec_listen_fd); /* the container's process has it */
	char msg[1024];
	ssize_t got = why ? 0 : read(ready[0], msg, sizeof(msg) - 1);
	msg[got > 0 ? got : 0] = '\0';
	if (!why && msg[0] != 'r')
		why = got > 1 ? msg + 1 : "its process ended at once", e = 0;
	if (ready[0] >= 0)
		close(ready[0]);

	struct oci_state s = {.pid = *child};
	if (!why) {
		snprintf(s.id, sizeof(s.id), "%s", id);
		snprintf(s.bundle, sizeof(s.bundle), "%s", b.bundle);
		snprintf(s.rootfs, sizeof(s.rootfs), "%s", b.rootfs);
		s.start_time = oci_pid_start_time(*child);
		time_t now = time(NULL);
		strftime(s.created, sizeof(s.created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
		s.annotations = oci_bundle_annotations(&b);
		const char *cg_why;
		if (b.cgroups_path && !rt->no_cgroups &&
		    oci_cgroup_join(b.cgroups_path, rt->systemd_cgroup, *child,
				    s.cgroup, sizeof(s.cgroup), &cg_why))
			say(rt, "warning", "container %s: %s", id, cg_why);
		if ((e = oci_state_write(dir, &s)))
			why = "cannot write state.json";
		else if (pid_file && (e = write_pid_file(pid_file, *child)))
			why = "cannot write the pid file";
	}
	if (why) {
		if (*child > 0) {
			kill(*child, SIGKILL);
			waitpid(*child, NULL, 0);
		}
		oci_cgroup_remove(s.cgroup);
		oci_state_remove(dir);
		oci_state_free(&s);
		return fail(rt, "create %s: %s%s%s", id, why, e ? ": " : "",
			    e ? strerror(-e) : "");
	}
	oci_state_free(&s);
	return 0;
}

/* Lets the waiting process go on: the reader end of its fifo. */
static int start(const struct runtime *rt, const char *id)
{
	char dir[4096 + 512], fifo[4096 + 600];
	struct oci_state s;
	if (load_state(rt, id, dir, sizeof(dir), &s))
		return 1;
	enum oci_status status = oci_state_status(dir, &s);
	oci_state_free(&s);
	if (status != OCI_CREATED)
		return fail(rt, "cannot start container %s: it is %s, not created", id,
			    oci_status_name(status));
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, dir);
	int fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fail(rt, "start %s: %s: %s", id, fifo, strerror(errno));
	/* No data and a hang-up: the process died before it was told. */
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, 100);
		char byte;
		if (n > 0 && read(fd, &byte, 1) == 1)
			break;
		if ((n > 0 && (p.revents & POLLHUP)) ||
		    (n == 0 && oci_pid_start_time(s.pid) != s.start_time)) {
			close(fd);
			return fail(rt, "start %s: its process is gone", id);
		}
	}
	close(fd);
	unlink(fifo);
	return 0;
}

static int show_state(const struct runtime *rt, const char *id)
{
	char dir[4096 + 512];
	struct oci_state s;
	if (load_state(rt, id, dir, sizeof(dir), &s))
		return 1;
	char *json = oci_state_json(&s, oci_state_status(dir, &s));
	oci_state_free(&s);
	if (!json)
		return fail(rt, "state %s: out of memory", id);
	puts(json);
	free(json);
	return 0;
}

/* A signal by name (TERM, SIGTERM) or number. */
static int parse_signal(const char *text)
{
	if (!strncasecmp(text, "SIG", 3))
		text += 3;
	char *end;
	long n = strtol(text, &end, 10);
	if (*text && !*end)
		return n > 0 && n <= SIGRTMAX ? (int)n : -1;
	for (int signo = 1; signo < SIGRTMIN; signo++) {
		const char *abbrev = sigabbrev_np(signo);
		if (abbrev && !strcasecmp(abbrev, text))
			return signo;
	}
	return -1;
}

static bool wait_gone(const struct oci_state *s)
{
	for (int ms = 0; ms < OCI_KILL_WAIT_MS; ms += 10) {
		if (oci_pid_start_time(s->pid) != s->start_time)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

static int kill_container(const struct runtime *rt, const char *id,
			  const char *signame)
{
	char dir[4096 + 512];
	struct oci_state s;
	int signo = parse_signal(signame ? signame : "TERM");
	if (signo < 0)
		return fail(rt, "kill %s: '%s' is not a signal", id, signame);
	if (load_state(rt, id, dir, sizeof(dir), &s))
		return 1;
	enum oci_status status = oci_state_status(dir, &s);
	oci_state_free(&s);
	if (status == OCI_STOPPED)
		return fail(rt, "kill %s: the container is not running", id);
	/* Before start the process is not a VM yet: every signal acts on it. */
	if (status == OCI_RUNNING && signo != SIGKILL && signo != SIGSTOP &&
	    signo != SIGCONT && !forward_signals_can(signo))
		return fail(rt, "kill %s: SIG%s cannot reach the container's process (fsvm uses it itself)",
			    id, sigabbrev_np(signo));
	if (kill(s.pid, signo) < 0)
		return fail(rt, "kill %s: %s", id, strerror(errno));
	return 0;
}

static int delete_container(const struct runtime *rt, const char *id, bool force)
{
	char dir[4096 + 512];
	struct oci_state s;
	if (state_dir(rt, id, dir, sizeof(dir)))
		return 1;
	int err = oci_state_read(dir, &s);
	if (err == -ENOENT && force)
		return 0;
	if (err)
		return load_state(rt, id, dir, sizeof(dir), &s);
	enum oci_status status = oci_state_status(dir, &s);
	/* A created container has not run anything: runc deletes it too. */
	if (status == OCI_RUNNING && !force) {
		oci_state_free(&s);
		return fail(rt, "delete %s: the container is running (stop it, or --force)", id);
	}
	if (status != OCI_STOPPED) {
		kill(s.pid, SIGKILL);
		if (!wait_gone(&s)) {
			oci_state_free(&s);
			return fail(rt, "delete %s: its process %d did not end after SIGKILL", id, (int)s.pid);
		}
	}
	oci_cgroup_remove(s.cgroup);
	oci_state_free(&s);
	if ((err = oci_state_remove(dir)))
		return fail(rt, "delete %s: %s: %s", id, dir, strerror(-err));
	return 0;
}

/* `exec ID CMD...` without --process: the process as a file, for
 * oci_process_load (a memfd's path). */
static int process_file(char *path, size_t len, const char **words, int nr)
{
	struct json_object *p = json_object_new_object(), *args = json_object_new_array(),
			   *env = json_object_new_array();
	for (int i = 1; i < nr; i++)
		json_object_array_add(args, json_object_new_string(words[i]));
	json_object_array_add(env, json_object_new_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
	json_object_object_add(p, "args", args);
	json_object_object_add(p, "env", env);
	json_object_object_add(p, "cwd", json_object_new_string("/"));
	const char *text = json_object_to_json_string(p);
	int fd = memfd_create("process.json", MFD_CLOEXEC);
	int err = fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ? -errno : 0;
	json_object_put(p);
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return err ? err : fd;
}

/* exec: the process, sent into the running VM; this process (or, with
 * --detach, a child whose pid goes to the pid file) relays its stdio and
 * exits with its status, which the caller collects. */
static int exec_process(const struct runtime *rt, const char **words, int nr,
			const char *process, const char *pid_file,
			const char *console_socket, bool detach)
{
	static struct oci_bundle p;
	char dir[4096 + 512], err[1024], path[64];
	struct oci_state s;
	if (load_state(rt, words[0], dir, sizeof(dir), &s))
		return 1;
	enum oci_status status = oci_state_status(dir, &s);
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s", s.rootfs);
	oci_state_free(&s);
	if (status != OCI_RUNNING)
		return fail(rt, "exec %s: the container is %s, not running", words[0],
			    oci_status_name(status));
	int fd = -1;
	if (!process && (fd = process_file(path, sizeof(path), words, nr)) < 0)
		return fail(rt, "exec %s: %s", words[0], strerror(-fd));
	int e = oci_process_load(process ? process : path, rootfs, &p, err, sizeof(err));
	if (fd >= 0)
		close(fd);
	if (e) {
		oci_bundle_free(&p);
		return fail(rt, "exec %s: %s", words[0], err);
	}
	if (p.terminal != (console_socket != NULL))
		return fail(rt, "exec %s: a terminal (process.terminal) and --console-socket go together", words[0]);
	int slave = -1;
	const char *why;
	if (p.terminal && (e = oci_console_open(console_socket, &slave, &why)))
		return fail(rt, "exec %s: %s: %s", words[0], why, strerror(-e));
	int conn = oci_exec_start(dir, &p, 0, 0, err, sizeof(err));
	if (conn < 0)
		return fail(rt, "exec %s: %s", words[0], err);
	pid_t child = detach ? fork() : 0;
	if (child < 0)
		return fail(rt, "exec %s: cannot fork: %s", words[0], strerror(errno));
	if (child == 0) {
		if (detach)
			setsid();
		/* The guest's terminal does the line discipline: this one
		 * passes bytes. */
		struct termios raw;
		if (slave >= 0 && tcgetattr(slave, &raw) == 0) {
			cfmakeraw(&raw);
			tcsetattr(slave, TCSANOW, &raw);
		}
		if (slave >= 0 && oci_console_take(slave) < 0)
			_exit(EXIT_VMM_ERROR);
		if (!detach && pid_file && (e = write_pid_file(pid_file, getpid())))
			return fail(rt, "exec %s: the pid file: %s", words[0], strerror(-e));
		int code = oci_exec_relay(conn);
		if (detach)
			_exit(code);
		return code;
	}
	close(conn);
	if (slave >= 0)
		close(slave);
	if (pid_file && (e = write_pid_file(pid_file, child))) {
		kill(child, SIGKILL);
		return fail(rt, "exec %s: the pid file: %s", words[0], strerror(-e));
	}
	return 0;
}

static pid_t run_child;

static void pass_signal(int signo)
{
	if (run_child > 0)
		kill(run_child, signo);
}

/* runc run: create, start, and (unless --detach) wait for the end and
 * delete (unless --keep). */
static int run_container(const struct runtime *rt, const char *id, const char *bundle,
			 const char *pid_file, const char *console_socket,
			 bool detach, bool keep)
{
	pid_t child;
	if (create(rt, id, bundle, pid_file, console_socket, &child))
		return 1;
	if (!detach) {
		run_child = child;
		sigset_t set;
		forward_signals_set(&set);
		for (int signo = 1; signo <= SIGRTMAX; signo++)
			if (sigismember(&set, signo) == 1)
				signal(signo, pass_signal);
	}
	if (start(rt, id)) {
		delete_container(rt, id, true);
		return 1;
	}
	if (detach)
		return 0;
	int st, status;
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (!keep)
		delete_container(rt, id, true);
	return status;
}

/* What this runtime implements, in the runtime spec's features format. */
static int features(void)
{
	puts("{\n"
	     "  \"ociVersionMin\": \"1.0.0\",\n"
	     "  \"ociVersionMax\": \"" OCI_VERSION "\",\n"
	     "  \"hooks\": [],\n"
	     "  \"mountOptions\": [\"ro\", \"rw\", \"nosuid\", \"suid\", \"nodev\", \"dev\", \"noexec\", \"exec\", \"relatime\", \"norelatime\", \"strictatime\", \"noatime\", \"nodiratime\", \"bind\", \"rbind\", \"private\", \"rprivate\", \"slave\", \"rslave\", \"shared\", \"rshared\"],\n"
	     "  \"linux\": {\n"
	     "    \"namespaces\": [\"mount\", \"pid\", \"network\", \"ipc\", \"uts\", \"user\", \"cgroup\"],\n"
	     "    \"capabilities\": [],\n"
	     "    \"cgroup\": {\"v1\": false, \"v2\": true, \"systemd\": false, \"systemdUser\": false},\n"
	     "    \"seccomp\": {\"enabled\": false},\n"
	     "    \"apparmor\": {\"enabled\": false},\n"
	     "    \"selinux\": {\"enabled\": false}\n"
	     "  },\n"
	     "  \"annotations\": {\n"
	     "    \"io.fsvm.vm\": \"each container is a KVM virtual machine\"\n"
	     "  }\n"
	     "}");
	return 0;
}

/* Root of a user namespace of someone else's (rootless podman runs its
 * runtime so) cannot write /run. */
static bool in_own_user_namespace(void)
{
	FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long inside, outside, count;
	bool all = f && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3 &&
		   inside == 0 && outside == 0 && count == 4294967295UL;
	if (f)
		fclose(f);
	return !all;
}

static void default_root(struct runtime *rt)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0 && !(xdg && *xdg && in_own_user_namespace()))
		rt->root = "/run/fsvm";
	else if (xdg && *xdg) {
		snprintf(rt->root_buf, sizeof(rt->root_buf), "%s/fsvm", xdg);
		rt->root = rt->root_buf;
	} else {
		snprintf(rt->root_buf, sizeof(rt->root_buf), "/tmp/fsvm-%u", (unsigned int)geteuid());
		rt->root = rt->root_buf;
	}
}

static const char usage[] =
	"Usage: %s [GLOBAL FLAGS] COMMAND [FLAGS] ID\n"
	"An OCI runtime (runc's command line) that runs each container as an fsvm VM.\n"
	"\n"
	"commands:\n"
	"  create --bundle DIR [--pid-file F] [--console-socket S] ID\n"
	"  start ID\n"
	"  state ID\n"
	"  kill [--all] ID [SIGNAL]   (default SIGTERM, sent to the container's process)\n"
	"  delete [--force] ID\n"
	"  run --bundle DIR [--pid-file F] [--console-socket S] [--detach] [--keep] ID\n"
	"  exec [--process FILE] [--pid-file F] [--console-socket S] [--detach] ID [CMD...]\n"
	"  features\n"
	"\n"
	"global flags:\n"
	"  --root DIR          state folders (default /run/fsvm, or $XDG_RUNTIME_DIR/fsvm)\n"
	"  --log FILE          also write errors there\n"
	"  --log-format F      text (default) or json\n"
	"  --systemd-cgroup    linux.cgroupsPath is systemd's slice:prefix:name\n"
	"  --cgroup-manager M  disabled: the VM stays in the caller's cgroup\n"
	"  --debug, --rootless V\n"
	"                      accepted, as runc's\n"
	"  --version, --help\n"
	"docs/OCI.md says what of config.json a VM takes.\n";

int oci_main(int argc, char **argv, const char *version)
{
	/* Errors name the runtime as it was called. */
	struct runtime rt = {.name = strcmp(argv[0], "oci") ? "fsvm-runtime" : "fsvm oci"};
	const char *log_format = NULL, *rootless = NULL, *criu = NULL,
		   *cgroup_manager = NULL;
	bool debug, help = false, show_version = false;
	default_root(&rt);
	const struct flag globals[] = {
		{"root", &rt.root, NULL},      {"log", &rt.log, NULL},
		{"log-format", &log_format, NULL},
		{"systemd-cgroup", NULL, &rt.systemd_cgroup},
		{"debug", NULL, &debug},       {"rootless", &rootless, NULL},
		{"criu", &criu, NULL},         {"cgroup-manager", &cgroup_manager, NULL},
		{"version", NULL, &show_version},
		{"v", NULL, &show_version},    {"help", NULL, &help},
		{"h", NULL, &help},            {NULL, NULL, NULL}};
	const char *words[OCI_MAX_ARGS];
	int nr, op;
	if (parse_flags(&rt, rt.name, argc - 1, argv + 1, globals, words, &nr, &op))
		return 1;
	op++; /* argv[op]: the operation */
	if (log_format && strcmp(log_format, "json") && strcmp(log_format, "text"))
		return fail(&rt, "--log-format: json or text, not '%s'", log_format);
	rt.log_json = log_format && !strcmp(log_format, "json");
	/* podman --cgroups disabled: the VM stays in the caller's cgroup. */
	rt.no_cgroups = cgroup_manager && !strcmp(cgroup_manager, "disabled");
	if (show_version) {
		printf("fsvm-runtime version %s\nspec: %s\n", version, OCI_VERSION);
		return 0;
	}
	if (help || op >= argc) {
		printf(usage, rt.name);
		return help ? 0 : 1;
	}
	const char *cmd = argv[op];
	int sub_argc = argc - op - 1;
	char **sub_argv = argv + op + 1;
	const char *bundle = ".", *pid_file = NULL, *console = NULL, *preserve = NULL,
		   *pidfd_socket = NULL;
	const char *process = NULL;
	bool force = false, all = false, detach = false, keep = false, tty = false, ignored;
	const struct flag create_flags[] = {
		{"bundle", &bundle, NULL},        {"b", &bundle, NULL},
		{"pid-file", &pid_file, NULL},    {"console-socket", &console, NULL},
		{"preserve-fds", &preserve, NULL}, {"pidfd-socket", &pidfd_socket, NULL},
		{"no-pivot", NULL, &ignored},      {"no-new-keyring", NULL, &ignored},
		{"detach", NULL, &detach},         {"d", NULL, &detach},
		{"keep", NULL, &keep},             {NULL, NULL, NULL}};
	const struct flag delete_flags[] = {{"force", NULL, &force}, {"f", NULL, &force},
					    {NULL, NULL, NULL}};
	const struct flag kill_flags[] = {{"all", NULL, &all}, {"a", NULL, &all},
					  {NULL, NULL, NULL}};
	const struct flag exec_flags[] = {
		{"process", &process, NULL},      {"p", &process, NULL},
		{"pid-file", &pid_file, NULL},    {"console-socket", &console, NULL},
		{"detach", NULL, &detach},        {"d", NULL, &detach},
		{"tty", NULL, &tty},              {"t", NULL, &tty},
		{"preserve-fds", &preserve, NULL}, {NULL, NULL, NULL}};
	const struct flag no_flags[] = {{NULL, NULL, NULL}};
	bool creating = !strcmp(cmd, "create") || !strcmp(cmd, "run");
	const struct flag *flags = creating ? create_flags
				   : !strcmp(cmd, "delete") ? delete_flags
				   : !strcmp(cmd, "kill")   ? kill_flags
				   : !strcmp(cmd, "exec")   ? exec_flags
							    : no_flags;
	if (parse_flags(&rt, cmd, sub_argc, sub_argv, flags, words, &nr, NULL))
		return 1;
	if (preserve && strcmp(preserve, "0"))
		return fail(&rt, "%s: --preserve-fds: a VM cannot take the host's file descriptors", cmd);
	if (pidfd_socket)
		return fail(&rt, "%s: --pidfd-socket is not supported", cmd);
	if (!strcmp(cmd, "features"))
		return nr ? fail(&rt, "features takes no arguments") : features();
	if (!strcmp(cmd, "exec"))
		return nr < 1 || (!process && nr < 2)
			       ? fail(&rt, "exec: expected a container id and --process FILE or a command")
			       : exec_process(&rt, words, nr, process, pid_file, console, detach);
	if (strcmp(cmd, "exec") && (!strcmp(cmd, "kill") ? nr < 1 || nr > 2 : nr != 1))
		return fail(&rt, "%s: expected a container id (try %s --help)", cmd, rt.name);
	if (!strcmp(cmd, "create")) {
		pid_t child;
		return create(&rt, words[0], bundle, pid_file, console, &child);
	}
	if (!strcmp(cmd, "run"))
		return run_container(&rt, words[0], bundle, pid_file, console, detach, keep);
	if (!strcmp(cmd, "start"))
		return start(&rt, words[0]);
	if (!strcmp(cmd, "state"))
		return show_state(&rt, words[0]);
	if (!strcmp(cmd, "kill"))
		return kill_container(&rt, words[0], nr == 2 ? words[1] : NULL);
	if (!strcmp(cmd, "delete"))
		return delete_container(&rt, words[0], force);
	return fail(&rt, "unknown command '%s' (create, start, state, kill, delete, run, features)", cmd);
}
