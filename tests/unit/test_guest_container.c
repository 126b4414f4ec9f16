/* Unit tests for the init's container job: mount(8)'s options as
 * mount(2)'s flags and data, the mount list and process fields parsed
 * strictly, the job's lists bounded, a uid's home from passwd, the raw
 * input side of a tty and signals forwarded through it; as root, the
 * process's ids and capabilities taken and a whole mount list applied in a
 * new root (in a mount namespace of the test's own). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <pty.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest/container_mounts.h"
#include "guest/exec_agent.h"
#include "guest/mounts.h"
#include "guest/process.h"
#include "guest/protocol.h"
#include "guest/signals.h"
#include "guest/spec.h"
#include "tests/unit/child.h"
#include "tests/unit/needs_root.h"

static const char *parse_options(const char *text, char *buf, size_t size,
				 struct mount_options *out)
{
	snprintf(buf, size, "%s", text);
	return mount_options_parse(buf, out);
}

static void test_mount_options(void **state)
{
	(void)state;
	char buf[8192];
	struct mount_options o;

	assert_null(parse_options("nosuid,strictatime,mode=755,size=65536k", buf,
				  sizeof(buf), &o));
	assert_int_equal(o.flags, MS_NOSUID | MS_STRICTATIME);
	assert_string_equal(o.data, "mode=755,size=65536k");
	assert_int_equal(o.nr_propagation, 0);

	assert_null(parse_options("rbind,ro,rprivate,nosuid", buf, sizeof(buf), &o));
	assert_int_equal(o.flags, MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID);
	assert_int_equal(o.nr_propagation, 1);
	assert_int_equal(o.propagation[0], MS_PRIVATE | MS_REC);
	assert_string_equal(o.data, "");

	/* Later options undo earlier ones, as mount(8) reads them. */
	assert_null(parse_options("ro,noexec,rw,exec,relatime,norelatime", buf,
				  sizeof(buf), &o));
	assert_int_equal(o.flags, 0);

	assert_null(parse_options("newinstance,ptmxmode=0666,nosuid,mode=0620,noexec,gid=5",
				  buf, sizeof(buf), &o));
	assert_int_equal(o.flags, MS_NOSUID | MS_NOEXEC);
	assert_string_equal(o.data, "newinstance,ptmxmode=0666,mode=0620,gid=5");

	assert_null(parse_options(",,mode=1777,,defaults,", buf, sizeof(buf), &o));
	assert_int_equal(o.flags, 0);
	assert_string_equal(o.data, "mode=1777");

	assert_null(parse_options("", buf, sizeof(buf), &o));
	assert_string_equal(o.data, "");

	assert_null(parse_options("slave,remount,nodev,noatime,nodiratime,shared,"
				  "sync,dirsync,runbindable",
				  buf, sizeof(buf), &o));
	assert_int_equal(o.flags, MS_REMOUNT | MS_NODEV | MS_NOATIME |
					  MS_NODIRATIME | MS_SYNCHRONOUS | MS_DIRSYNC);
	assert_int_equal(o.nr_propagation, 3);
	assert_int_equal(o.propagation[0], MS_SLAVE);
	assert_int_equal(o.propagation[1], MS_SHARED);
	assert_int_equal(o.propagation[2], MS_UNBINDABLE | MS_REC);
	/* A fifth propagation change is one too many. */
	assert_non_null(parse_options("private,shared,slave,unbindable,rshared",
				      buf, sizeof(buf), &o));

	/* Data past a page: mount(2) would cut it. */
	char big[MOUNT_DATA_MAX + 16];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "size=", 5);
	assert_non_null(parse_options(big, buf, sizeof(buf), &o));
}

/* A list in fields of their own, rewritable as the job's buffer is. */
struct list {
	char text[32][128];
	char *fields[33];
	int count;
};

static void list_add(struct list *l, const char *a, const char *b,
		     const char *c, const char *d)
{
	const char *f[] = {a, b, c, d};
	for (int i = 0; i < 4; i++) {
		snprintf(l->text[l->count], sizeof(l->text[0]), "%s", f[i]);
		l->fields[l->count] = l->text[l->count];
		l->count++;
	}
}

static int parse_one(const char *type, const char *source, const char *dest,
		     const char *options)
{
	static struct container_mounts c;
	struct list l = {.count = 0};
	list_add(&l, type, source, dest, options);
	return container_mounts_parse(l.fields, l.count, &c);
}

static void test_mount_list(void **state)
{
	(void)state;
	static struct container_mounts c;
	struct list l = {.count = 0};
	list_add(&l, "proc", "proc", "/proc", "nosuid,noexec,nodev");
	list_add(&l, "tmpfs", "tmpfs", "/dev", "nosuid,strictatime,mode=755");
	list_add(&l, GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "0", "/etc/hosts", "ro");
	list_add(&l, GUEST_FSMOUNT_SHARE, "share0", "/data", "nodev");
	list_add(&l, GUEST_FSMOUNT_BIND, "/var/lib", "/mnt/lib", "rbind,rprivate");
	list_add(&l, "none", "/srv", "/mnt/srv", "bind");
	assert_int_equal(container_mounts_parse(l.fields, l.count, &c), 0);
	assert_int_equal(c.nr_mounts, 6);

	assert_false(c.mounts[0].bind);
	assert_null(c.mounts[0].job_file);
	assert_int_equal(c.mounts[0].options.flags, MS_NOSUID | MS_NOEXEC | MS_NODEV);
	assert_string_equal(c.mounts[1].options.data, "mode=755");

	const struct container_mount *hosts = &c.mounts[2];
	assert_true(hosts->bind);
	assert_string_equal(hosts->job_file, "0");
	assert_int_equal(hosts->job_file_tree, -1);
	assert_int_equal(hosts->options.flags, MS_BIND | MS_RDONLY);

	assert_false(c.mounts[3].bind);
	assert_string_equal(c.mounts[3].source, "share0");
	assert_int_equal(c.mounts[4].options.flags, MS_BIND | MS_REC);
	assert_null(c.mounts[4].job_file);
	/* "bind" among the options makes any type a bind. */
	assert_true(c.mounts[5].bind);

	/* Four fields a mount, no fewer. */
	assert_int_equal(container_mounts_parse(l.fields, 3, &c), -1);
	assert_int_equal(parse_one("", "x", "/x", ""), -1);
	assert_int_equal(parse_one("tmpfs", "tmpfs", "tmp", ""), -1);
	assert_int_equal(parse_one("tmpfs", "tmpfs", "", ""), -1);
	assert_int_equal(parse_one(GUEST_FSMOUNT_SHARE, "", "/data", ""), -1);
	assert_int_equal(parse_one(GUEST_FSMOUNT_BIND, "relative", "/x", ""), -1);
	assert_int_equal(parse_one(GUEST_FSMOUNT_BIND, "/x", "/y", "mode=755"), -1);
	assert_int_equal(parse_one(GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES, "/x", ""), -1);
	assert_int_equal(parse_one(GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "..", "/x", ""), -1);
	assert_int_equal(parse_one(GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "a/b", "/x", ""), -1);
	assert_int_equal(parse_one("tmpfs", "tmpfs", "/x", "private,private,private,private,private"),
			 -1);
}

static int parse_fields(const char *const *text, int count, struct process_spec *p)
{
	static char copy[32][8192];
	char *fields[32];
	assert_in_range(count, 0, 32);
	for (int i = 0; i < count; i++) {
		snprintf(copy[i], sizeof(copy[i]), "%s", text[i]);
		fields[i] = copy[i];
	}
	return process_parse(fields, count, p);
}

static int parse_field(const char *text)
{
	static struct process_spec p;
	return parse_fields(&text, 1, &p);
}

static void test_process_fields(void **state)
{
	(void)state;
	static struct process_spec p;
	static const char *const good[] = {
		"groups=10,20,4294967294",
		"rlimit=7,1024,4096",
		"rlimit=3,unlimited,unlimited",
		"caps=ffffffffff,0x1,400,0,400",
		"umask=27",
		"no_new_privs=1",
		"env=exact",
	};
	assert_int_equal(parse_fields(good, 7, &p), 0);
	assert_int_equal(p.nr_groups, 3);
	assert_int_equal(p.groups[0], 10);
	assert_int_equal(p.groups[2], 4294967294u);
	assert_int_equal(p.nr_rlimits, 2);
	assert_int_equal(p.rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(p.rlimits[0].limit.rlim_cur, 1024);
	assert_int_equal(p.rlimits[0].limit.rlim_max, 4096);
	assert_true(p.rlimits[1].limit.rlim_max == RLIM_INFINITY);
	assert_true(p.has_caps);
	assert_int_equal(p.bounding, 0xffffffffffULL);
	assert_int_equal(p.effective, 1);
	assert_int_equal(p.permitted, 0x400);
	assert_int_equal(p.inheritable, 0);
	assert_int_equal(p.ambient, 0x400);
	assert_true(p.has_umask);
	assert_int_equal(p.umask, 027);
	assert_true(p.no_new_privs);
	assert_true(p.exact_env);

	/* None: what `fsvm run` gives. */
	assert_int_equal(parse_fields(good, 0, &p), 0);
	assert_false(p.has_caps || p.has_umask || p.no_new_privs || p.exact_env);
	assert_int_equal(p.nr_groups + p.nr_rlimits, 0);
	assert_int_equal(parse_field("groups="), 0);

	static const char *const bad[] = {
		"groups=1,,2",
		"groups=1,",
		"groups=-1",
		"groups= 1",
		"groups=4294967295",
		"groups=0x10",
		"rlimit=16,1,1", /* RLIM_NLIMITS */
		"rlimit=7,2,1",	 /* soft above hard */
		"rlimit=7,1",
		"rlimit=7,1,2,3",
		"rlimit=7,-1,2",
		"rlimit=7,1,infinity",
		"rlimit=7,18446744073709551616,unlimited",
		"caps=1,2,3,4",
		"caps=1,2,3,4,5,6",
		"caps=1,2,3,4,g",
		"caps=1,2,3,4,",
		"caps=10000000000000000,0,0,0,0",
		"caps=0x,0,0,0,0",
		"umask=8",
		"umask=1000",
		"umask=",
		"umask=-1",
		"no_new_privs=2",
		"no_new_privs=",
		"env=all",
		"unknown=1",
		"groups",
		"=1",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_field(bad[i]), -1);

	static const char *const twice[] = {"umask=22", "umask=22"};
	assert_int_equal(parse_fields(twice, 2, &p), -1);

	/* At most RLIM_NLIMITS limits. */
	static const char *limits[RLIM_NLIMITS + 1];
	for (int i = 0; i <= RLIM_NLIMITS; i++)
		limits[i] = "rlimit=7,1,1";
	assert_int_equal(parse_fields(limits, RLIM_NLIMITS, &p), 0);
	assert_int_equal(parse_fields(limits, RLIM_NLIMITS + 1, &p), -1);

	/* At most PROCESS_MAX_GROUPS groups. */
	char groups[8192] = "groups=0";
	for (int i = 1; i < PROCESS_MAX_GROUPS; i++)
		strcat(groups, ",1");
	assert_int_equal(parse_field(groups), 0);
	strcat(groups, ",1");
	assert_int_equal(parse_field(groups), -1);
}

static char *temp_file(const char *text, size_t len)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/fsvm-test-guest-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

static void test_spec_lists(void **state)
{
	(void)state;
	char buf[64];
	char *fields[4];
	static const char three[] = "a\0bb\0ccc";
	char *path = temp_file(three, sizeof(three));
	assert_int_equal(spec_read_fields(path, "test", buf, sizeof(buf), fields, 3), 3);
	assert_string_equal(fields[2], "ccc");
	assert_null(fields[3]);
	assert_int_equal(spec_read_fields(path, "test", buf, sizeof(buf), fields, 2), -1);
	/* A file that fills the buffer (but its NUL) may have been cut. */
	assert_int_equal(spec_read_fields(path, "test", buf, sizeof(three) + 1, fields, 3), -1);
	assert_int_equal(spec_read_fields(path, "test", buf, sizeof(three) + 2, fields, 3), 3);
	unlink(path);
	assert_int_equal(spec_read_fields(path, "test", buf, sizeof(buf), fields, 3), 0);
}

static void test_passwd_home(void **state)
{
	(void)state;
	char passwd[16384] = "# a comment\n"
			     "+nis\n"
			     "root:x:0:0:root:/root:/bin/bash\n"
			     "short:x:5:5\n"
			     "u:x:1000:1000:A User:/home/u:/bin/sh\n"
			     "again:x:1000:1000::/home/again:/bin/sh\n"
			     "empty:x:1001:1001:::/bin/sh\n"
			     "odd:x:01002:1:::\n"
			     "long:x:1003:1003:";
	/* A line longer than the parser's: skipped whole, its tail too. */
	size_t len = strlen(passwd);
	memset(passwd + len, 'g', 6000);
	strcpy(passwd + len + 6000, ":/home/long:/bin/sh\n"
				    "bad:x:1004:1004::/home/bad:/bin/sh:1004:1004::/x\n"
				    "tail:x:4000000000:1::/home/tail");
	char *path = temp_file(passwd, strlen(passwd));
	char home[64];
	assert_int_equal(passwd_home(path, 0, home, sizeof(home)), 0);
	assert_string_equal(home, "/root");
	assert_int_equal(passwd_home(path, 1000, home, sizeof(home)), 0);
	assert_string_equal(home, "/home/u");
	assert_int_equal(passwd_home(path, 1001, home, sizeof(home)), -1);
	assert_int_equal(passwd_home(path, 1002, home, sizeof(home)), -1);
	assert_int_equal(passwd_home(path, 1003, home, sizeof(home)), -1);
	assert_int_equal(passwd_home(path, 1004, home, sizeof(home)), 0);
	assert_string_equal(home, "/home/bad");
	/* The last line, no newline after it. */
	assert_int_equal(passwd_home(path, 4000000000u, home, sizeof(home)), 0);
	assert_string_equal(home, "/home/tail");
	assert_int_equal(passwd_home(path, 5, home, sizeof(home)), -1);
	assert_int_equal(passwd_home(path, 42, home, sizeof(home)), -1);
	assert_int_equal(passwd_home(path, 1000, home, 7), -1); /* "/home/u" and its NUL */
	unlink(path);
	assert_int_equal(passwd_home(path, 0, home, sizeof(home)), -1);
}

static void test_tty_raw_input(void **state)
{
	(void)state;
	int master, slave;
	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	struct termios t;
	assert_int_equal(tcgetattr(slave, &t), 0);
	t.c_iflag |= ICRNL | IXON | INLCR | ISTRIP | BRKINT;
	t.c_lflag |= ECHO | ICANON | ISIG | IEXTEN | ECHONL;
	t.c_oflag |= OPOST | ONLCR;
	assert_int_equal(tcsetattr(slave, TCSANOW, &t), 0);

	assert_int_equal(tty_raw_input(slave), 0);
	assert_int_equal(tcgetattr(slave, &t), 0);
	assert_int_equal(t.c_iflag & (IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR |
				      IGNCR | ICRNL | IXON | IXOFF),
			 0);
	assert_int_equal(t.c_lflag & (ECHO | ECHONL | ICANON | ISIG | IEXTEN), 0);
	assert_int_equal(t.c_cc[VMIN], 1);
	assert_int_equal(t.c_cc[VTIME], 0);
	/* The output side carries stderr: untouched. */
	assert_int_equal(t.c_oflag & (OPOST | ONLCR), OPOST | ONLCR);

	/* A signal's byte arrives as it was sent: ^C (SIGINT's) and \r too. */
	assert_int_equal(write(master, "\x03\r\x0f", 3), 3);
	char got[3];
	assert_int_equal(read(slave, got, 3), 3);
	assert_memory_equal(got, "\x03\r\x0f", 3);
	close(master);
	close(slave);
	assert_int_equal(tty_raw_input(-1), -1);
}

/* Forwarding runs in a child of the test's: it blocks SIGCHLD and reaps
 * whatever ends. */
static void forward_case(void *arg)
{
	const char *bytes = arg;
	int master, slave;
	char name[64];
	/* Orphans come to us, as they come to the init. */
	CHILD_CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
	CHILD_CHECK(openpty(&master, &slave, name, NULL, NULL) == 0);
	struct signal_forward f;
	CHILD_CHECK(signals_open(&f, name) == 0);
	pid_t orphan_parent = fork();
	if (orphan_parent == 0) {
		/* Its child ends with it gone, as an orphan the init reaps. */
		if (fork() == 0)
			_exit(0);
		_exit(0);
	}
	pid_t command = fork();
	if (command == 0) {
		signals_restore(&f);
		if (!*bytes)
			_exit(3);
		for (;;)
			pause();
	}
	CHILD_CHECK(command > 0);
	/* Bytes outside 1-64 are nothing; the first signal ends it. */
	CHILD_CHECK(write(master, bytes, strlen(bytes)) == (ssize_t)strlen(bytes));
	int status;
	CHILD_CHECK(signals_wait(&f, command, &status) == 0);
	if (!*bytes)
		CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	else
		CHILD_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	/* Nothing left: not even the orphans. */
	CHILD_CHECK(signals_wait(&f, command, &status) == -1);
}

static void test_signals_forwarded(void **state)
{
	(void)state;
	/* 0, 65 and 200 are no signals; SIGCHLD's 17 is ignored by default. */
	char bytes[] = {0x41, (char)200, 17, SIGTERM, 0};
	assert_int_equal(in_child(forward_case, bytes), 0);
	assert_int_equal(in_child(forward_case, ""), 0);
}

/* A terminal's new size, in two pieces whose bytes look like signals
 * (40 rows, 300 columns: 0x28, 0x2c and 0x01), is set on the init's
 * stdout, and none of them is sent as a signal: the SIGTERM after it
 * ends the command. */
static void winsize_case(void *arg)
{
	(void)arg;
	int master, slave, term_master, term_slave;
	char name[64];
	CHILD_CHECK(openpty(&master, &slave, name, NULL, NULL) == 0);
	CHILD_CHECK(openpty(&term_master, &term_slave, NULL, NULL, NULL) == 0);
	CHILD_CHECK(dup2(term_slave, STDOUT_FILENO) == STDOUT_FILENO);
	struct signal_forward f;
	CHILD_CHECK(signals_open(&f, name) == 0);
	pid_t command = fork();
	if (command == 0) {
		signals_restore(&f);
		for (;;)
			pause();
	}
	CHILD_CHECK(command > 0);
	const char first[] = {(char)GUEST_INPUT_WINSIZE, 40, 0};
	const char rest[] = {0x2c, 0x01, SIGTERM};
	CHILD_CHECK(write(master, first, sizeof(first)) == sizeof(first));
	usleep(50 * 1000);
	CHILD_CHECK(write(master, rest, sizeof(rest)) == sizeof(rest));
	int status;
	CHILD_CHECK(signals_wait(&f, command, &status) == 0);
	CHILD_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	struct winsize ws;
	CHILD_CHECK(ioctl(term_master, TIOCGWINSZ, &ws) == 0);
	CHILD_CHECK(ws.ws_row == 40 && ws.ws_col == 300);
}

static void test_winsize_forwarded(void **state)
{
	(void)state;
	assert_int_equal(in_child(winsize_case, NULL), 0);
}

static void become_case(void *arg)
{
	(void)arg;
	const uint64_t bind = UINT64_C(1) << CAP_NET_BIND_SERVICE,
		       chown_cap = UINT64_C(1) << CAP_CHOWN;
	char caps[128];
	/* Bits past the kernel's last capability are ignored. */
	snprintf(caps, sizeof(caps), "caps=%llx,%llx,%llx,%llx,%llx",
		 (unsigned long long)(bind | chown_cap | UINT64_C(1) << 63),
		 (unsigned long long)chown_cap,
		 (unsigned long long)(bind | chown_cap),
		 (unsigned long long)bind, (unsigned long long)(bind | UINT64_C(1) << 62));
	const char *text[] = {"groups=10,20", "rlimit=7,64,128", "umask=27", caps,
			      "no_new_privs=1"};
	char copy[5][128];
	char *fields[5];
	for (int i = 0; i < 5; i++) {
		snprintf(copy[i], sizeof(copy[i]), "%s", text[i]);
		fields[i] = copy[i];
	}
	static struct process_spec p;
	CHILD_CHECK(process_parse(fields, 5, &p) == 0);
	struct run_as as = {.set = true, .uid = 1000, .gid = 1001, .home = "", .name = ""};
	process_become(&p, &as);

	CHILD_CHECK(getuid() == 1000 && geteuid() == 1000 && getgid() == 1001);
	gid_t groups[4];
	CHILD_CHECK(getgroups(4, groups) == 2 && groups[0] == 10 && groups[1] == 20);
	CHILD_CHECK(umask(0) == 027);
	struct rlimit r;
	CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur == 64 &&
		    r.rlim_max == 128);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	CHILD_CHECK(syscall(SYS_capget, &h, d) == 0);
	CHILD_CHECK(d[0].effective == chown_cap && d[1].effective == 0);
	CHILD_CHECK(d[0].permitted == (bind | chown_cap) && d[0].inheritable == bind);
	CHILD_CHECK(prctl(PR_CAPBSET_READ, CAP_NET_BIND_SERVICE, 0, 0, 0) == 1);
	CHILD_CHECK(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 0);
	CHILD_CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0) == 1);
	CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
	CHILD_CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 0);
}

static void plain_user_case(void *arg)
{
	(void)arg;
	/* No process fields: `fsvm run --user`, root's capabilities gone. */
	static struct process_spec p;
	struct run_as as = {.set = true, .uid = 1000, .gid = 1000, .home = "/", .name = ""};
	process_become(&p, &as);
	CHILD_CHECK(getuid() == 1000 && getgroups(0, NULL) == 0);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	CHILD_CHECK(syscall(SYS_capget, &h, d) == 0);
	CHILD_CHECK(d[0].permitted == 0 && d[1].permitted == 0);
}

static void failing_become_case(void *arg)
{
	(void)arg;
	char field[] = "rlimit=7,1,1";
	char *fields[] = {field};
	static struct process_spec p;
	CHILD_CHECK(process_parse(fields, 1, &p) == 0);
	p.rlimits[0].limit.rlim_cur = 2; /* above the hard limit: refused */
	struct run_as as = {0};
	process_become(&p, &as);
}

static void test_process_become(void **state)
{
	(void)state;
	NEEDS_ROOT();
	assert_int_equal(in_child(become_case, NULL), 0);
	assert_int_equal(in_child(plain_user_case, NULL), 0);
	assert_int_equal(in_child(failing_become_case, NULL), 125);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

static void write_fields(const char *path, const char *const *fields, int n)
{
	char buf[4096];
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(fields[i]) + 1;
		memcpy(buf + len, fields[i], l);
		len += l;
	}
	write_file(path, buf, len);
}

static bool is_fs(const char *path, long type)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == type;
}

static bool is_readonly(const char *path)
{
	struct statvfs sv;
	return statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

static bool is_char(const char *path, unsigned int major_, unsigned int minor_)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
	       major(st.st_rdev) == major_ && minor(st.st_rdev) == minor_;
}

static bool links_to(const char *path, const char *target)
{
	char buf[64];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	return n >= 0 && (buf[n] = '\0', !strcmp(buf, target));
}

/* An initramfs of the test's own (the job, a /dev with null and the
 * console) with a new root under /mnt/root, entered by chroot. */
static void make_initramfs(const char *top, const char *const *list, int n,
			   const char *const *masked, int nr_masked,
			   const char *const *readonly, int nr_readonly)
{
	CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHILD_CHECK(mount("tmpfs", top, "tmpfs", 0, "mode=0755") == 0);
	CHILD_CHECK(chroot(top) == 0 && chdir("/") == 0);
	CHILD_CHECK(mkdir_p("/fsvm/files") == 0 && mkdir_p("/dev") == 0 &&
		    mkdir_p("/mnt/root") == 0);
	CHILD_CHECK(mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3)) == 0);
	CHILD_CHECK(mknod(GUEST_STDOUT_TTY, S_IFCHR | 0620, makedev(4, 64)) == 0);
	write_fields("/" GUEST_SPEC_FSMOUNTS, list, n);
	if (nr_masked)
		write_fields("/" GUEST_SPEC_MASKED, masked, nr_masked);
	if (nr_readonly)
		write_fields("/" GUEST_SPEC_READONLY, readonly, nr_readonly);
	write_file("/" GUEST_SPEC_FILES "0", "127.0.0.1 box\n", 14);
	/* The new root: a tmpfs with what an image brings. */
	CHILD_CHECK(mount("tmpfs", "/mnt/root", "tmpfs", MS_NOSUID, "mode=0755") == 0);
	CHILD_CHECK(mkdir_p("/mnt/root/proc") == 0 && mkdir_p("/mnt/root/srv/sub") == 0 &&
		    mkdir_p("/mnt/root/private/x") == 0 && mkdir_p("/mnt/root/ro") == 0 &&
		    mkdir_p("/mnt/root/target") == 0);
	write_file("/mnt/root/secret", "secret", 6);
	write_file("/mnt/root/srv/sub/file", "srv", 3);
	CHILD_CHECK(symlink("/target", "/mnt/root/link") == 0);
}

static void apply_case(void *arg)
{
	const char *top = arg;
	static const char *const list[] = {
		"proc", "proc", "/proc", "nosuid,noexec,nodev",
		"tmpfs", "tmpfs", "/dev", "nosuid,strictatime,mode=755,size=65536k",
		"devpts", "devpts", "/dev/pts", "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620",
		GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "0", "/etc/hosts", "ro,nosuid",
		GUEST_FSMOUNT_BIND, "/srv", "/mnt/srv", "rprivate",
		GUEST_FSMOUNT_BIND, "/srv/sub/file", "/deep/er/file", "",
		"tmpfs", "tmpfs", "/link", "ro",
	};
	static const char *const masked[] = {"/secret", "/private", "/nothing"};
	static const char *const readonly[] = {"/ro", "/missing"};
	static struct container_mounts c;
	make_initramfs(top, list, 28, masked, 3, readonly, 2);
	CHILD_CHECK(container_mounts_prepare(&c) == 0);
	CHILD_CHECK(switch_root() == 0);
	CHILD_CHECK(container_mounts_apply(&c) == 0);

	CHILD_CHECK(is_fs("/proc", PROC_SUPER_MAGIC));
	CHILD_CHECK(is_fs("/dev", TMPFS_MAGIC) && is_fs("/dev/pts", DEVPTS_SUPER_MAGIC));
	CHILD_CHECK(is_char("/dev/null", 1, 3) && is_char("/dev/zero", 1, 5) &&
		    is_char("/dev/full", 1, 7) && is_char("/dev/random", 1, 8) &&
		    is_char("/dev/urandom", 1, 9) && is_char("/dev/tty", 5, 0));
	struct stat st;
	CHILD_CHECK(stat("/dev/null", &st) == 0 && (st.st_mode & 07777) == 0666);
	CHILD_CHECK(is_char("/dev/console", 4, 64));
	CHILD_CHECK(links_to("/dev/ptmx", "pts/ptmx") && links_to("/dev/fd", "/proc/self/fd") &&
		    links_to("/dev/stdin", "/proc/self/fd/0") &&
		    links_to("/dev/stderr", "/proc/self/fd/2") &&
		    links_to("/dev/core", "/proc/kcore"));
	/* The job's file, its folder made, read-only by the remount. */
	char buf[32] = "";
	int fd = open("/etc/hosts", O_RDONLY);
	CHILD_CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 14);
	close(fd);
	CHILD_CHECK(!strcmp(buf, "127.0.0.1 box\n"));
	CHILD_CHECK(is_readonly("/etc/hosts") && open("/etc/hosts", O_WRONLY) < 0 &&
		    errno == EROFS);
	CHILD_CHECK(stat("/mnt/srv/sub/file", &st) == 0);
	/* A file's bind onto an empty file made for it. */
	CHILD_CHECK(stat("/deep/er/file", &st) == 0 && st.st_size == 3);
	/* /link's absolute target is the new root's /target. */
	CHILD_CHECK(is_readonly("/target") && !is_readonly("/"));
	/* Masked: the file is /dev/null, the folder an empty read-only tmpfs. */
	CHILD_CHECK(is_char("/secret", 1, 3));
	CHILD_CHECK(is_fs("/private", TMPFS_MAGIC) && is_readonly("/private") &&
		    stat("/private/x", &st) < 0);
	struct statvfs sv;
	CHILD_CHECK(is_readonly("/ro") && statvfs("/ro", &sv) == 0 &&
		    (sv.f_flag & ST_NOSUID));
	CHILD_CHECK(!is_readonly("/srv"));
}

static void failing_mount_case(void *arg)
{
	const char *top = arg;
	static const char *const list[] = {"nosuchfs", "none", "/x", ""};
	static struct container_mounts c;
	make_initramfs(top, list, 4, NULL, 0, NULL, 0);
	CHILD_CHECK(container_mounts_prepare(&c) == 0);
	CHILD_CHECK(switch_root() == 0);
	CHILD_CHECK(container_mounts_apply(&c) == -1);
}

static void missing_job_file_case(void *arg)
{
	const char *top = arg;
	static const char *const list[] = {GUEST_FSMOUNT_BIND, GUEST_SPEC_FILES "7",
					   "/etc/x", ""};
	static struct container_mounts c;
	make_initramfs(top, list, 4, NULL, 0, NULL, 0);
	CHILD_CHECK(container_mounts_prepare(&c) == -1);
}

static void test_container_mounts_apply(void **state)
{
	(void)state;
	NEEDS_ROOT();
	char top[] = "/tmp/fsvm-test-container-XXXXXX";
	assert_non_null(mkdtemp(top));
	assert_int_equal(in_child(apply_case, top), 0);
	assert_int_equal(in_child(failing_mount_case, top), 0);
	assert_int_equal(in_child(missing_job_file_case, top), 0);
	assert_int_equal(rmdir(top), 0);
}


/* An exec's frames, checked as the guest checks any input: a payload
 * gets its NUL from the agent, none inside it. */
static char *payloads[32]; /* the request points into them: freed at the end */
static unsigned int nr_payloads;

static int add(struct exec_request *r, uint8_t type, const char *text,
	       const char **why)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1);
	assert_non_null(buf);
	assert_true(nr_payloads < 32);
	payloads[nr_payloads++] = buf;
	memcpy(buf, text, len);
	return exec_request_add(r, type, buf, (uint32_t)len, why);
}

static void test_exec_request(void **state)
{
	(void)state;
	static struct exec_request r;
	const char *why;
	memset(&r, 0, sizeof(r));
	assert_int_equal(add(&r, GUEST_EXEC_ARG, "sh", &why), 0);
	assert_int_equal(add(&r, GUEST_EXEC_ARG, "-c", &why), 0);
	assert_int_equal(add(&r, GUEST_EXEC_ENV, "A=b=c", &why), 0);
	assert_int_equal(add(&r, GUEST_EXEC_CWD, "/tmp", &why), 0);
	assert_int_equal(add(&r, GUEST_EXEC_USER, "65534 100", &why), 0);
	assert_int_equal(add(&r, GUEST_EXEC_PROCESS, "umask=22", &why), 0);
	assert_int_equal(add(&r, GUEST_EXEC_TTY, "24 80", &why), 0);
	assert_int_equal(r.argc, 2);
	assert_string_equal(r.argv[1], "-c");
	assert_string_equal(r.env[0], "A=b=c");
	assert_string_equal(r.cwd, "/tmp");
	assert_true(r.as.set);
	assert_int_equal(r.as.uid, 65534);
	assert_int_equal(r.as.gid, 100);
	assert_true(r.tty);
	assert_int_equal(r.rows, 24);
	assert_int_equal(r.cols, 80);

	assert_int_equal(add(&r, GUEST_EXEC_ENV, "=x", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_ENV, "novalue", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_CWD, "tmp", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_USER, "1", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_USER, "1 2 3", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_USER, "4294967295 0", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_TTY, "70000 80", &why), -1);
	assert_int_equal(add(&r, GUEST_EXEC_STDIN, "", &why), -1);
	assert_int_equal(add(&r, 0xff, "", &why), -1);
	char nul[] = {'a', '\0', 'b', 'x'};
	assert_int_equal(exec_request_add(&r, GUEST_EXEC_ARG, nul, 3, &why), -1);
	assert_string_equal(why, "a field holds a NUL");
	assert_int_equal(r.argc, 2); /* nothing refused was kept */
	while (nr_payloads)
		free(payloads[--nr_payloads]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_options),
		cmocka_unit_test(test_exec_request),
		cmocka_unit_test(test_mount_list),
		cmocka_unit_test(test_process_fields),
		cmocka_unit_test(test_spec_lists),
		cmocka_unit_test(test_passwd_home),
		cmocka_unit_test(test_tty_raw_input),
		cmocka_unit_test(test_signals_forwarded),
		cmocka_unit_test(test_winsize_forwarded),
		cmocka_unit_test(test_process_become),
		cmocka_unit_test(test_container_mounts_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
