/* Unit tests for vmm/seccomp: under the filter, a forbidden call ends the
 * process (every thread of it) with 125 and a line naming the call, the
 * terminal put back and the summary written; the calls fsvm makes at run
 * time go on. Each case runs in a child process, which the filter cannot
 * leave. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/virtio_config.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/dax_window.h"
#include "devices/virtio_blk.h"
#include "devices/virtio_fs.h"
#include "fs/fuse_server.h"
#include "vmm/seccomp.h"

/* A child's exit status for "the filter could not be loaded". */
#define NOT_LOCKED_DOWN 100
/* A child's exit status for "the forbidden call returned". */
#define SURVIVED 101

/* What the last child wrote on stderr. */
static char child_err[4096];

/* Runs body(arg) in a child process and returns its wait status, its
 * stderr in child_err. The child ends with _exit(), as a forked child
 * should: nothing of the test runner's runs twice. */
static int in_child(int (*body)(void *arg), void *arg)
{
	int out[2];
	assert_int_equal(pipe(out), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out[1], STDERR_FILENO);
		close(out[0]);
		close(out[1]);
		_exit(body(arg));
	}
	close(out[1]);
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(child_err) - 1 &&
	       (n = read(out[0], child_err + len, sizeof(child_err) - 1 - len)) > 0)
		len += (size_t)n;
	child_err[len] = '\0';
	close(out[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* The filter stopped the child: 125 and one line naming the call. */
static void expect_trapped(const char *what, const char *call, int status)
{
	if (WIFSIGNALED(status))
		fail_msg("%s: the child died of signal %d, not the filter's 125",
			 what, WTERMSIG(status));
	if (WEXITSTATUS(status) != 125)
		fail_msg("%s: the child exited with %d, not the filter's 125%s",
			 what, WEXITSTATUS(status),
			 WEXITSTATUS(status) == NOT_LOCKED_DOWN
				 ? " (the filter was not loaded)"
				 : "");
	char line[160];
	snprintf(line, sizeof(line), "fsvm: seccomp: system call %s is not one fsvm makes: stopped (a bug in fsvm, or code that took it over)\n",
		 call);
	if (strcmp(child_err, line))
		fail_msg("%s: the child said [%s], not [%s]", what, child_err, line);
}

static void expect_exit_0(const char *what, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFSIGNALED(status))
		fail_msg("%s: the child died of signal %d (%s)", what,
			 WTERMSIG(status), child_err);
	fail_msg("%s: the child failed (exit %d%s): %s", what,
		 WEXITSTATUS(status),
		 WEXITSTATUS(status) == 125 ? ": a call the filter forbids" : "",
		 child_err);
}

/* --- calls fsvm never makes at run time: each ends the process. */

struct forbidden {
	const char *what;
	void (*call)(pid_t parent);
	const char *name; /* the system call the line names */
	int nr;
};

static void call_socket(pid_t parent)
{
	(void)parent;
	socket(AF_UNIX, SOCK_STREAM, 0);
}

static void call_execve(pid_t parent)
{
	(void)parent;
	char *argv[] = {"true", NULL};
	execve("/bin/true", argv, argv + 1);
}

/* clone without CLONE_THREAD: a new process, as fork() makes. */
static void call_fork(pid_t parent)
{
	(void)parent;
	if (syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0) == 0)
		_exit(SURVIVED);
}

static void call_mmap_exec(pid_t parent)
{
	(void)parent;
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	     -1, 0);
}

static void call_mprotect_exec(pid_t parent)
{
	(void)parent;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		mprotect(p, 4096, PROT_READ | PROT_EXEC);
}

/* An ioctl fsvm never asks for: typing into the terminal. */
static void call_tiocsti(pid_t parent)
{
	(void)parent;
	char c = 'x';
	ioctl(STDIN_FILENO, TIOCSTI, &c);
}

/* A signal for another process (signal 0 would only check it exists). */
static void call_tgkill_other(pid_t parent)
{
	syscall(SYS_tgkill, parent, parent, 0);
}

static void call_ptrace(pid_t parent)
{
	(void)parent;
	ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}

static const struct forbidden forbidden_calls[] = {
	{"socket", call_socket, "socket", SYS_socket},
	{"execve", call_execve, "execve", SYS_execve},
	{"clone of a process", call_fork, "clone", SYS_clone},
	{"executable mmap", call_mmap_exec, "mmap", SYS_mmap},
	{"mprotect to executable", call_mprotect_exec, "mprotect", SYS_mprotect},
	{"ioctl TIOCSTI", call_tiocsti, "ioctl", SYS_ioctl},
	{"tgkill of another process", call_tgkill_other, "tgkill", SYS_tgkill},
	{"ptrace", call_ptrace, "ptrace", SYS_ptrace},
};

static int run_forbidden(void *arg)
{
	const struct forbidden *f = arg;
	/* Learnt first: getppid() is not allowed under the filter. */
	pid_t parent = getppid();
	if (seccomp_lock_down(0, NULL))
		return NOT_LOCKED_DOWN;
	f->call(parent);
	return SURVIVED;
}

static void test_forbidden_calls_stop(void **state)
{
	(void)state;
	for (size_t i = 0;
	     i < sizeof(forbidden_calls) / sizeof(forbidden_calls[0]); i++) {
		const struct forbidden *f = &forbidden_calls[i];
		char call[64];
		snprintf(call, sizeof(call), "%s (%d)", f->name, f->nr);
		expect_trapped(f->what, call, in_child(run_forbidden, (void *)f));
	}
}

/* --- what a violation leaves behind: the terminal as it was before raw
 * mode, and the summary made beforehand with the call's line in it. */

struct violation_case {
	int tty;      /* a pty's terminal end */
	int json[2];  /* the summary's pipe */
	struct termios before;
};

static int run_violation(void *arg)
{
	struct violation_case *c = arg;
	struct seccomp_violation v = {.tty_fd = c->tty, .tty = c->before,
				      .json_fd = c->json[1],
				      .json_before = "{\"message\": \"",
				      .json_after = "\"}"};
	struct termios raw = c->before;
	cfmakeraw(&raw);
	if (tcsetattr(c->tty, TCSANOW, &raw))
		return 1;
	if (seccomp_lock_down(0, &v))
		return NOT_LOCKED_DOWN;
	syscall(SYS_getppid);
	return SURVIVED;
}

static void test_violation_restores_terminal_and_writes_summary(void **state)
{
	(void)state;
	struct violation_case c;
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	c.tty = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(c.tty >= 0);
	assert_int_equal(tcgetattr(c.tty, &c.before), 0);
	assert_int_equal(pipe(c.json), 0);
	char call[64];
	snprintf(call, sizeof(call), "getppid (%d)", SYS_getppid);
	expect_trapped("getppid with a terminal and a summary", call,
		       in_child(run_violation, &c));
	struct termios after;
	assert_int_equal(tcgetattr(c.tty, &after), 0);
	assert_int_equal(after.c_lflag, c.before.c_lflag);
	assert_int_equal(after.c_iflag, c.before.c_iflag);
	assert_int_equal(after.c_oflag, c.before.c_oflag);
	close(c.json[1]);
	char json[512] = "", want[512];
	ssize_t n = read(c.json[0], json, sizeof(json) - 1);
	assert_true(n > 0);
	json[n] = '\0';
	snprintf(want, sizeof(want), "{\"message\": \"%.*s\"}\n",
		 (int)strcspn(child_err + strlen("fsvm: "), "\n"),
		 child_err + strlen("fsvm: "));
	assert_string_equal(json, want);
	close(c.json[0]);
	close(c.tty);
	close(master);
}

/* A 32-bit call (int 0x80) is refused as another architecture's. */
static int run_int80(void *arg)
{
	(void)arg;
	if (seccomp_lock_down(0, NULL))
		return NOT_LOCKED_DOWN;
	long ret = 20; /* i386's getpid */
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
	return SURVIVED;
}

static void test_other_architecture_stops(void **state)
{
	(void)state;
	expect_trapped("int 0x80", "of another architecture (20)",
		       in_child(run_int80, NULL));
}

/* --- every thread is covered, the ones started before the filter too. */

static void *socket_when_told(void *arg)
{
	uint64_t go;
	if (read(*(int *)arg, &go, sizeof(go)) == sizeof(go))
		socket(AF_UNIX, SOCK_STREAM, 0);
	return NULL;
}

static int run_earlier_thread(void *arg)
{
	(void)arg;
	int go = eventfd(0, EFD_CLOEXEC);
	pthread_t thread;
	if (go < 0 || pthread_create(&thread, NULL, socket_when_told, &go))
		return 1;
	if (seccomp_lock_down(0, NULL))
		return NOT_LOCKED_DOWN;
	uint64_t one = 1;
	if (write(go, &one, sizeof(one)) != sizeof(one))
		return 2;
	pthread_join(thread, NULL);
	return SURVIVED;
}

static void test_threads_started_before_are_covered(void **state)
{
	(void)state;
	char call[64];
	snprintf(call, sizeof(call), "socket (%d)", SYS_socket);
	expect_trapped("socket from a thread started before", call,
		       in_child(run_earlier_thread, NULL));
}

/* --- what fsvm does at run time goes on. */

/* In a child: says which check failed, on stderr, and fails. */
#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: in the child: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			return 1;                                              \
		}                                                              \
	} while (0)

static void *thread_main(void *arg)
{
	return arg;
}

/* The filter as the kernel reports it: mode 2 (filter), no new privs. */
static bool filter_shown_in_status(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "\nSeccomp:\t2\n") && strstr(buf, "\nNoNewPrivs:\t1\n");
}

static int run_allowed_work(void *arg)
{
	(void)arg;
	if (seccomp_lock_down(0, NULL))
		return NOT_LOCKED_DOWN;
	EXPECT(filter_shown_in_status());
	pthread_t thread;
	int token;
	void *back = NULL;
	EXPECT(pthread_create(&thread, NULL, thread_main, &token) == 0);
	EXPECT(pthread_join(thread, &back) == 0 && back == &token);
	size_t page = 4096;
	char *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(p != MAP_FAILED);
	p[0] = 'x';
	char *q = mremap(p, page, 64 * page, MREMAP_MAYMOVE);
	EXPECT(q != MAP_FAILED && q[0] == 'x');
	EXPECT(munmap(q, 64 * page) == 0);
	/* Refused, not fatal: glibc then makes threads with clone. */
	EXPECT(syscall(SYS_clone3, NULL, 0) == -1 && errno == ENOSYS);
	void *big = malloc(1 << 20);
	EXPECT(big);
	free(big);
	return 0;
}

static void test_allowed_work_goes_on(void **state)
{
	(void)state;
	expect_exit_0("allowed work", in_child(run_allowed_work, NULL));
}

/* --- a FUSE session and the DAX window, as the workers and the main loop
 * run them: each request reaches its host operation under the filter. */

struct session {
	struct fuse_server *srv;
	struct dax_window dax;
	struct fuse_dax_ops dax_ops;
	char root[64];
	uint64_t unique;
	_Alignas(8) unsigned char in[4096];
	size_t in_len;
	_Alignas(8) unsigned char out[8192];
	const unsigned char *reply; /* after the reply header */
	size_t reply_len;
};

static void begin(struct session *s, uint32_t opcode, uint64_t nodeid)
{
	struct fuse_in_header h = {.opcode = opcode, .nodeid = nodeid,
				   .unique = ++s->unique, .pid = 1};
	memcpy(s->in, &h, sizeof(h));
	s->in_len = sizeof(h);
}

static void add(struct session *s, const void *p, size_t n)
{
	memcpy(s->in + s->in_len, p, n);
	s->in_len += n;
}

static void add_name(struct session *s, const char *name)
{
	add(s, name, strlen(name) + 1);
}

/* Sends the request built; returns the reply's error (0 or -errno). */
static int send_request(struct session *s)
{
	struct fuse_in_header *h = (void *)s->in;
	h->len = (uint32_t)s->in_len;
	struct iovec in = {s->in, s->in_len}, out = {s->out, sizeof(s->out)};
	size_t n = fuse_server_handle(s->srv, &in, 1, &out, 1, NULL);
	struct fuse_out_header oh = {0};
	if (n >= sizeof(oh))
		memcpy(&oh, s->out, sizeof(oh));
	s->reply = s->out + sizeof(oh);
	s->reply_len = n >= sizeof(oh) ? n - sizeof(oh) : 0;
	return oh.error;
}

/* One request with a fixed argument and up to two names after it. */
static int request(struct session *s, uint32_t opcode, uint64_t nodeid,
		   const void *arg, size_t arg_len, const char *name,
		   const char *name2)
{
	begin(s, opcode, nodeid);
	add(s, arg, arg_len);
	if (name)
		add_name(s, name);
	if (name2)
		add_name(s, name2);
	return send_request(s);
}

static uint64_t entry_nodeid(const struct session *s)
{
	struct fuse_entry_out e;
	memcpy(&e, s->reply, sizeof(e));
	return e.nodeid;
}

static uint64_t open_fh(const struct session *s, size_t at)
{
	struct fuse_open_out o;
	memcpy(&o, s->reply + at, sizeof(o));
	return o.fh;
}

/* A SETLKW that waits on a thread of its own, answered into out. */
struct waiting {
	struct fuse_completion later;
	_Alignas(8) unsigned char in[sizeof(struct fuse_in_header) +
				     sizeof(struct fuse_lk_in)];
	_Alignas(8) unsigned char out[sizeof(struct fuse_out_header)];
	atomic_bool answered;
};

static void wait_answered(void *opaque, uint64_t token, size_t len)
{
	(void)token;
	(void)len;
	atomic_store(&((struct waiting *)opaque)->answered, true);
}

static size_t start_setlkw(struct session *s, struct waiting *w, uint64_t fh)
{
	struct fuse_lk_in lk = {.fh = fh, .owner = 2,
				.lk = {.end = 99, .type = F_WRLCK, .pid = 1}};
	struct fuse_in_header h = {.opcode = FUSE_SETLKW,
				   .nodeid = FUSE_ROOT_ID,
				   .unique = ++s->unique,
				   .len = sizeof(w->in)};
	memcpy(w->in, &h, sizeof(h));
	memcpy(w->in + sizeof(h), &lk, sizeof(lk));
	w->later = (struct fuse_completion){.done = wait_answered,
					    .opaque = w, .token = h.unique};
	struct iovec in = {w->in, sizeof(w->in)}, out = {w->out, sizeof(w->out)};
	return fuse_server_handle(s->srv, &in, 1, &out, 1, &w->later);
}

/* Waits (up to 10 s) for the waiting request's answer. */
static bool answered_in_time(struct waiting *w)
{
	const struct timespec pause = {.tv_nsec = 10 * 1000 * 1000};
	for (int i = 0; i < 1000 && !atomic_load(&w->answered); i++)
		nanosleep(&pause, NULL);
	return atomic_load(&w->answered);
}

#define DAX_SIZE (16ULL << 20)

static int run_fuse_session(void *arg)
{
	struct session *s = arg;
	/* Set up as fsvm is: the server opens /proc/self/fd, which must be
	 * this process's, and only lock waiters take their wake-up signal. */
	sigset_t wake;
	sigemptyset(&wake);
	sigaddset(&wake, FUSE_WAIT_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &wake, NULL);
	EXPECT(dax_window_create(&s->dax, DAX_SIZE, 16) == 0);
	s->dax_ops = virtio_fs_dax_ops(&s->dax);
	struct fuse_server_config cfg = {.root = s->root,
					 .cache = FUSE_CACHE_AUTO,
					 .dax = &s->dax_ops};
	EXPECT(fuse_server_create(&cfg, &s->srv) == 0);
	/* Learnt first: getuid() is not allowed under the filter. */
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (seccomp_lock_down(0, NULL))
		return NOT_LOCKED_DOWN;

	struct fuse_init_in init = {.major = FUSE_KERNEL_VERSION, .minor = 38,
				    .flags = 0xffffffffu, .flags2 = 0xffffffffu};
	EXPECT(request(s, FUSE_INIT, 0, &init, sizeof(init), NULL, NULL) == 0);

	/* Files: create, write, read, attributes, sync, space, holes. */
	struct fuse_create_in create = {.flags = O_RDWR, .mode = S_IFREG | 0644};
	EXPECT(request(s, FUSE_CREATE, FUSE_ROOT_ID, &create, sizeof(create),
		       "f", NULL) == 0);
	uint64_t f = entry_nodeid(s);
	uint64_t fh = open_fh(s, sizeof(struct fuse_entry_out));
	const char text[] = "hello, filtered world";
	struct fuse_write_in wr = {.fh = fh, .size = sizeof(text)};
	begin(s, FUSE_WRITE, f);
	add(s, &wr, sizeof(wr));
	add(s, text, sizeof(text));
	EXPECT(send_request(s) == 0);
	struct fuse_read_in rd = {.fh = fh, .size = sizeof(text)};
	EXPECT(request(s, FUSE_READ, f, &rd, sizeof(rd), NULL, NULL) == 0);
	EXPECT(s->reply_len == sizeof(text) && !memcmp(s->reply, text, sizeof(text)));
	struct fuse_setattr_in sa = {
		.valid = FATTR_MODE | FATTR_UID | FATTR_GID | FATTR_SIZE |
			 FATTR_MTIME | FATTR_ATIME | FATTR_ATIME_NOW,
		.mode = 0600, .uid = uid, .gid = gid, .size = 5,
		.mtime = 1000000000};
	EXPECT(request(s, FUSE_SETATTR, f, &sa, sizeof(sa), NULL, NULL) == 0);
	struct fuse_getattr_in ga = {0};
	EXPECT(request(s, FUSE_GETATTR, f, &ga, sizeof(ga), NULL, NULL) == 0);
	struct fuse_fsync_in fs = {.fh = fh};
	EXPECT(request(s, FUSE_FSYNC, f, &fs, sizeof(fs), NULL, NULL) == 0);
	fs.fsync_flags = FUSE_FSYNC_FDATASYNC;
	EXPECT(request(s, FUSE_FSYNC, f, &fs, sizeof(fs), NULL, NULL) == 0);
	struct fuse_fallocate_in fa = {.fh = fh, .length = 1 << 20};
	EXPECT(request(s, FUSE_FALLOCATE, f, &fa, sizeof(fa), NULL, NULL) == 0);
	struct fuse_lseek_in ls = {.fh = fh, .whence = SEEK_DATA};
	EXPECT(request(s, FUSE_LSEEK, f, &ls, sizeof(ls), NULL, NULL) == 0);
	struct fuse_access_in ac = {.mask = R_OK};
	EXPECT(request(s, FUSE_ACCESS, f, &ac, sizeof(ac), NULL, NULL) == 0);
	EXPECT(request(s, FUSE_CREATE, FUSE_ROOT_ID, &create, sizeof(create),
		       "g", NULL) == 0);
	uint64_t g = entry_nodeid(s);
	uint64_t gh = open_fh(s, sizeof(struct fuse_entry_out));
	struct fuse_copy_file_range_in cp = {.fh_in = fh, .nodeid_out = g,
					     .fh_out = gh, .len = 5};
	EXPECT(request(s, FUSE_COPY_FILE_RANGE, f, &cp, sizeof(cp), NULL,
		       NULL) == 0);
	EXPECT(request(s, FUSE_TMPFILE, FUSE_ROOT_ID, &create, sizeof(create),
		       "/", NULL) == 0);

	/* Extended attributes. */
	struct fuse_setxattr_in sx = {.size = 1};
	begin(s, FUSE_SETXATTR, f);
	add(s, &sx, FUSE_COMPAT_SETXATTR_IN_SIZE);
	add_name(s, "user.fsvm");
	add(s, "1", 1);
	EXPECT(send_request(s) == 0);
	struct fuse_getxattr_in gx = {.size = 64};
	EXPECT(request(s, FUSE_GETXATTR, f, &gx, sizeof(gx), "user.fsvm",
		       NULL) == 0);
	EXPECT(request(s, FUSE_LISTXATTR, f, &gx, sizeof(gx), NULL, NULL) == 0);
	EXPECT(request(s, FUSE_REMOVEXATTR, f, NULL, 0, "user.fsvm", NULL) == 0);

	/* Names: directories, links, renames, nodes, a listing. */
	struct fuse_mkdir_in md = {.mode = 0755};
	EXPECT(request(s, FUSE_MKDIR, FUSE_ROOT_ID, &md, sizeof(md), "d",
		       NULL) == 0);
	uint64_t d = entry_nodeid(s);
	EXPECT(request(s, FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "s", "f") == 0);
	uint64_t sl = entry_nodeid(s);
	EXPECT(request(s, FUSE_READLINK, sl, NULL, 0, NULL, NULL) == 0);
	struct fuse_link_in ln = {.oldnodeid = f};
	EXPECT(request(s, FUSE_LINK, d, &ln, sizeof(ln), "h", NULL) == 0);
	EXPECT(request(s, FUSE_LOOKUP, d, NULL, 0, "..", NULL) == 0);
	struct fuse_rename_in rn = {.newdir = d};
	EXPECT(request(s, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "g",
		       "g2") == 0);
	struct fuse_rename2_in rn2 = {.newdir = FUSE_ROOT_ID,
				      .flags = RENAME_NOREPLACE};
	EXPECT(request(s, FUSE_RENAME2, d, &rn2, sizeof(rn2), "g2", "g") == 0);
	struct fuse_mknod_in mk = {.mode = S_IFIFO | 0600};
	EXPECT(request(s, FUSE_MKNOD, FUSE_ROOT_ID, &mk, sizeof(mk), "p",
		       NULL) == 0);
	struct fuse_open_in od = {.flags = O_RDONLY};
	EXPECT(request(s, FUSE_OPENDIR, FUSE_ROOT_ID, &od, sizeof(od), NULL,
		       NULL) == 0);
	uint64_t dh = open_fh(s, 0);
	struct fuse_read_in rdd = {.fh = dh, .size = 4096};
	EXPECT(request(s, FUSE_READDIRPLUS, FUSE_ROOT_ID, &rdd, sizeof(rdd),
		       NULL, NULL) == 0 && s->reply_len > 0);
	struct fuse_release_in rel = {.fh = dh};
	EXPECT(request(s, FUSE_RELEASEDIR, FUSE_ROOT_ID, &rel, sizeof(rel),
		       NULL, NULL) == 0);
	EXPECT(request(s, FUSE_UNLINK, d, NULL, 0, "h", NULL) == 0);
	EXPECT(request(s, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "d", NULL) == 0);
	EXPECT(request(s, FUSE_STATFS, FUSE_ROOT_ID, NULL, 0, NULL, NULL) == 0);
	struct fuse_syncfs_in sf = {0};
	EXPECT(request(s, FUSE_SYNCFS, FUSE_ROOT_ID, &sf, sizeof(sf), NULL,
		       NULL) == 0);

	/* Locks: flock, a POSIX lock held, another that waits on a thread
	 * of its own until INTERRUPT ends it. */
	struct fuse_open_in op = {.flags = O_RDWR};
	EXPECT(request(s, FUSE_OPEN, f, &op, sizeof(op), NULL, NULL) == 0);
	uint64_t fh2 = open_fh(s, 0);
	struct fuse_lk_in fl = {.fh = fh, .owner = 1, .lk = {.type = F_WRLCK},
				.lk_flags = FUSE_LK_FLOCK};
	EXPECT(request(s, FUSE_SETLK, f, &fl, sizeof(fl), NULL, NULL) == 0);
	fl.lk.type = F_UNLCK;
	EXPECT(request(s, FUSE_SETLK, f, &fl, sizeof(fl), NULL, NULL) == 0);
	struct fuse_lk_in pl = {.fh = fh, .owner = 1,
				.lk = {.end = 99, .type = F_WRLCK, .pid = 1}};
	EXPECT(request(s, FUSE_SETLK, f, &pl, sizeof(pl), NULL, NULL) == 0);
	pl.fh = fh2;
	EXPECT(request(s, FUSE_GETLK, f, &pl, sizeof(pl), NULL, NULL) == 0);
	static struct waiting waiting;
	EXPECT(start_setlkw(s, &waiting, fh2) == FUSE_DEFERRED);
	struct fuse_interrupt_in intr = {.unique = waiting.later.token};
	EXPECT(request(s, FUSE_INTERRUPT, 0, &intr, sizeof(intr), NULL,
		       NULL) == 0);
	EXPECT(answered_in_time(&waiting));

	/* The DAX window: a write mapping, the file shrinking under it (the
	 * main loop's watch), the mapping gone again. */
	struct dax_window *w = &s->dax;
	int fd = openat(AT_FDCWD, s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	EXPECT(fd >= 0);
	int file = openat(fd, "f", O_RDWR | O_CLOEXEC);
	EXPECT(file >= 0);
	EXPECT(ftruncate(file, 1 << 20) == 0);
	EXPECT(dax_window_map(w, 0, 1 << 20, file, 0, true) == 0);
	EXPECT(w->base[0] == 'h');
	EXPECT(ftruncate(file, 4096) == 0);
	EXPECT(dax_window_watch_events(w) == 1);
	EXPECT(dax_window_unmap(w, 0, 1 << 20) == 0);

	/* The session ends: waits, handles and inodes go. */
	EXPECT(request(s, FUSE_DESTROY, 0, NULL, 0, NULL, NULL) == 0);
	return 0;
}

static void test_fuse_session_goes_on(void **state)
{
	(void)state;
	static struct session s;
	snprintf(s.root, sizeof(s.root), "/tmp/fsvm-seccomp-XXXXXX");
	assert_non_null(mkdtemp(s.root));
	int status = in_child(run_fuse_session, &s);
	char rm[128];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", s.root);
	assert_int_equal(system(rm), 0);
	expect_exit_0("FUSE session", status);
}

/* --- a virtio-blk device, made before the filter as set-up makes it,
 * started, serving a write, a read, a flush and a discard through its
 * io_uring, and reset, all under it. */

#define BLK_RAM (1 << 20)
#define BLK_QSIZE 16

struct blk_session {
	char image[64];
	uint8_t *ram;
	uint16_t avail;
};

/* Request type at sector on queue 0's ring: a header, data (len bytes at
 * 0x10000, writable for a read) or a range, and the status; published and
 * kicked. Returns its status once answered (10 s at most), -1 if not. */
static int blk_request(struct blk_session *s, struct virtio_queue *vq,
		       uint32_t type, uint64_t sector, uint32_t len)
{
	struct vring_desc *desc = (void *)s->ram;
	struct vring_avail *avail = (void *)(s->ram + 0x1000);
	struct vring_used *used = (void *)(s->ram + 0x2000);
	uint8_t *hdr = s->ram + 0x3000, *status = s->ram + 0x3100;
	struct virtio_blk_outhdr h = {.type = type, .sector = sector};
	struct virtio_blk_discard_write_zeroes range = {.sector = sector,
							.num_sectors = len / 512};
	memcpy(hdr, &h, sizeof(h));
	memcpy(hdr + sizeof(h), &range, sizeof(range));
	bool ranged = type == VIRTIO_BLK_T_DISCARD;
	struct vring_desc chain[3];
	unsigned int n = 0;
	chain[n++] = (struct vring_desc){.addr = 0x3000, .len = ranged ? 32 : 16};
	if (len && !ranged)
		chain[n++] = (struct vring_desc){
			.addr = 0x10000, .len = len,
			.flags = type == VIRTIO_BLK_T_IN ? VRING_DESC_F_WRITE : 0};
	chain[n++] = (struct vring_desc){.addr = 0x3100, .len = 1,
					 .flags = VRING_DESC_F_WRITE};
	for (unsigned int i = 0; i < n; i++) {
		if (i + 1 < n) {
			chain[i].flags |= VRING_DESC_F_NEXT;
			chain[i].next = (uint16_t)(i + 1);
		}
		desc[i] = chain[i];
	}
	*status = 0xff;
	avail->ring[s->avail % BLK_QSIZE] = 0;
	__atomic_store_n(&avail->idx, ++s->avail, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(vq->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -1;
	const struct timespec pause = {.tv_nsec = 1000 * 1000};
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == s->avail)
			return *status;
		nanosleep(&pause, NULL);
	}
	return -1;
}

static int run_blk_device(void *arg)
{
	struct blk_session *s = arg;
	static struct virtio_blk b;
	struct guest_mem mem = {0};
	EXPECT(guest_mem_add(&mem, 0, BLK_RAM, s->ram) == 0);
	struct virtio_blk_disk d = {.fd = open(s->image, O_RDWR | O_CLOEXEC),
				    .size = 1 << 20, .discard = true};
	EXPECT(d.fd >= 0);
	EXPECT(virtio_blk_create(&b, &d, 1) == 0);
	struct virtio_queue vq = {.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
				  .call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
	EXPECT(vq.kick_fd >= 0 && vq.call_fd >= 0);
	EXPECT(split_ring_init(&vq.ring, &mem, BLK_QSIZE, 0, 0x1000, 0x2000,
			       true, false) == 0);
	if (seccomp_lock_down(0, NULL))
		return NOT_LOCKED_DOWN;

	EXPECT(b.dev.activate(b.dev.opaque, &vq, 1,
			      (1ULL << VIRTIO_F_VERSION_1) |
				      (1ULL << VIRTIO_RING_F_EVENT_IDX)) == 0);
	memset(s->ram + 0x10000, 'b', 4096);
	EXPECT(blk_request(s, &vq, VIRTIO_BLK_T_OUT, 8, 4096) == VIRTIO_BLK_S_OK);
	memset(s->ram + 0x10000, 0, 4096);
	EXPECT(blk_request(s, &vq, VIRTIO_BLK_T_IN, 8, 4096) == VIRTIO_BLK_S_OK);
	EXPECT(s->ram[0x10000] == 'b' && s->ram[0x10000 + 4095] == 'b');
	EXPECT(blk_request(s, &vq, VIRTIO_BLK_T_FLUSH, 0, 0) == VIRTIO_BLK_S_OK);
	EXPECT(blk_request(s, &vq, VIRTIO_BLK_T_DISCARD, 8, 4096) == VIRTIO_BLK_S_OK);
	b.dev.reset(b.dev.opaque);
	return 0;
}

static void test_blk_device_goes_on(void **state)
{
	(void)state;
	static struct blk_session s;
	snprintf(s.image, sizeof(s.image), "/tmp/fsvm-seccomp-blk-XXXXXX");
	int fd = mkstemp(s.image);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	s.ram = mmap(NULL, BLK_RAM, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(s.ram != MAP_FAILED);
	int status = in_child(run_blk_device, &s);
	unlink(s.image);
	munmap(s.ram, BLK_RAM);
	expect_exit_0("virtio-blk device", status);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forbidden_calls_stop),
		cmocka_unit_test(test_violation_restores_terminal_and_writes_summary),
		cmocka_unit_test(test_other_architecture_stops),
		cmocka_unit_test(test_threads_started_before_are_covered),
		cmocka_unit_test(test_allowed_work_goes_on),
		cmocka_unit_test(test_fuse_session_goes_on),
		cmocka_unit_test(test_blk_device_goes_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
