/* Unit tests for vmm/oci_state: container ids, a process's start time
 * (what tells a reused pid from the container's), state.json written and
 * read back in a temporary folder, the status it gives (created while
 * exec.fifo is there, running after, stopped once the process is gone),
 * the runtime spec's state JSON, and the folder's removal. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "vmm/oci_state.h"

static char dir[PATH_MAX];

static const char *path_in(const char *rel)
{
	static char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return p;
}

static int rm_entry(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/fsvm-test-oci-state-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (access(dir, F_OK) < 0)
		return 0; /* the case removed it */
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A child that has ended and been waited for: its pid names nothing
 * (until the kernel hands it out again, which a test's moment does not
 * see). */
static pid_t reaped_pid(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* A child that has ended but not been waited for (a zombie); the caller
 * reaps it. */
static pid_t zombie_pid(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	siginfo_t info;
	assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	return pid;
}

static void test_id_valid(void **state)
{
	(void)state;
	static const char *const good[] = {"a", "abc", "A1", "a-b_c+d.e", "...",
					   ".a", "0123456789"};
	static const char *const bad[] = {"", ".", "..", "a/b", "/a", "a b",
					  "a\n", "a:b", "caf\xc3\xa9", "a*"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!oci_id_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (oci_id_valid(bad[i]))
			fail_msg("'%s' taken", bad[i]);
	char id[OCI_ID_MAX + 2];
	memset(id, 'x', sizeof(id));
	id[OCI_ID_MAX] = '\0';
	assert_true(oci_id_valid(id)); /* 255 */
	id[OCI_ID_MAX] = 'x';
	id[OCI_ID_MAX + 1] = '\0';
	assert_false(oci_id_valid(id)); /* 256 */
}

static void test_pid_start_time(void **state)
{
	(void)state;
	unsigned long long t = oci_pid_start_time(getpid());
	assert_true(t > 0);
	assert_int_equal(oci_pid_start_time(getpid()), t);
	assert_true(oci_pid_start_time(getppid()) <= t); /* our parent's, earlier */
	assert_int_equal(oci_pid_start_time(reaped_pid()), 0);
	assert_int_equal(oci_pid_start_time(0), 0);
	assert_int_equal(oci_pid_start_time(-1), 0);
	/* A zombie is no process to run a container. */
	pid_t z = zombie_pid();
	assert_int_equal(oci_pid_start_time(z), 0);
	assert_int_equal(waitpid(z, NULL, 0), z);
}

/* The command's name may hold spaces and ')': the fields after its last
 * ')' are still found. */
static void test_pid_start_time_odd_name(void **state)
{
	(void)state;
	int ready[2], go[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char byte = 0;
		close(go[1]); /* or its read would never see the end */
		close(ready[0]);
		if (write(ready[1], &byte, 1) != 1)
			_exit(1);
		if (read(go[0], &byte, 1) != 1)
			_exit(1);
		prctl(PR_SET_NAME, "a) 1 2 (x) 3 4");
		if (write(ready[1], &byte, 1) != 1 || read(go[0], &byte, 1) < 0)
			_exit(1);
		_exit(0);
	}
	char byte = 0;
	assert_int_equal(read(ready[0], &byte, 1), 1);
	unsigned long long before = oci_pid_start_time(pid);
	assert_int_equal(write(go[1], &byte, 1), 1);
	assert_int_equal(read(ready[0], &byte, 1), 1); /* renamed */
	char path[64], stat_text[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(stat_text, sizeof(stat_text), f));
	fclose(f);
	assert_non_null(strstr(stat_text, "(a) 1 2 (x) 3 4)"));
	assert_true(before > 0);
	assert_int_equal(oci_pid_start_time(pid), before);
	close(go[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(go[0]);
	close(ready[0]);
	close(ready[1]);
}

static void fill(struct oci_state *s)
{
	*s = (struct oci_state){.pid = getpid(),
				.start_time = oci_pid_start_time(getpid())};
	snprintf(s->id, sizeof(s->id), "box-1");
	snprintf(s->bundle, sizeof(s->bundle), "/srv/bundles/box \"1\"");
	snprintf(s->rootfs, sizeof(s->rootfs), "/srv/bundles/box \"1\"/rootfs");
	snprintf(s->created, sizeof(s->created), "2024-05-06T07:08:09Z");
	snprintf(s->cgroup, sizeof(s->cgroup), "/sys/fs/cgroup/machine/box-1");
	s->annotations = strdup("{\"org.example/a\":\"b\",\"n\":{\"x\":[1,2]}}");
	assert_non_null(s->annotations);
}

static void expect_same_json(const char *a, const char *b)
{
	struct json_object *ja = json_tokener_parse(a), *jb = json_tokener_parse(b);
	assert_non_null(ja);
	assert_non_null(jb);
	if (!json_object_equal(ja, jb))
		fail_msg("'%s' is not '%s'", a, b);
	json_object_put(ja);
	json_object_put(jb);
}

static void test_state_round_trip(void **state)
{
	(void)state;
	struct oci_state w, r;
	fill(&w);
	w.start_time = 0xfedcba9876543210ULL; /* all 64 bits kept */
	assert_int_equal(oci_state_write(dir, &w), 0);
	/* Written whole and renamed: no temporary file left. */
	assert_int_equal(access(path_in(".state.json.new"), F_OK), -1);
	assert_int_equal(oci_state_read(dir, &r), 0);
	assert_string_equal(r.id, w.id);
	assert_string_equal(r.bundle, w.bundle);
	assert_string_equal(r.rootfs, w.rootfs);
	assert_int_equal(r.pid, w.pid);
	assert_true(r.start_time == w.start_time);
	assert_string_equal(r.created, w.created);
	assert_string_equal(r.cgroup, w.cgroup);
	expect_same_json(r.annotations, w.annotations);
	oci_state_free(&r);
	assert_null(r.annotations);

	/* Written again: the new state replaces the old. */
	w.pid = 1;
	w.cgroup[0] = '\0';
	free(w.annotations);
	w.annotations = NULL; /* none: {} */
	assert_int_equal(oci_state_write(dir, &w), 0);
	assert_int_equal(oci_state_read(dir, &r), 0);
	assert_int_equal(r.pid, 1);
	assert_string_equal(r.cgroup, "");
	expect_same_json(r.annotations, "{}");
	oci_state_free(&r);
	oci_state_free(&w);
}

static void test_state_read_missing_or_bad(void **state)
{
	(void)state;
	struct oci_state s;
	assert_int_equal(oci_state_read(dir, &s), -ENOENT);
	assert_int_equal(oci_state_read(path_in("nothere"), &s), -ENOENT);
	FILE *f = fopen(path_in("state.json"), "we");
	assert_non_null(f);
	fputs("{\"id\": ", f);
	fclose(f);
	assert_int_equal(oci_state_read(dir, &s), -EIO);
	assert_null(s.annotations);
}

static void test_status(void **state)
{
	(void)state;
	struct oci_state s;
	fill(&s);
	/* Alive and still waiting on exec.fifo: created. */
	assert_int_equal(mkfifo(path_in(OCI_FIFO), 0600), 0);
	assert_int_equal(oci_state_status(dir, &s), OCI_CREATED);
	/* start took the fifo away: running. */
	assert_int_equal(unlink(path_in(OCI_FIFO)), 0);
	assert_int_equal(oci_state_status(dir, &s), OCI_RUNNING);
	/* Another process with the same pid: not the container's. */
	s.start_time++;
	assert_int_equal(oci_state_status(dir, &s), OCI_STOPPED);
	s.start_time--;
	/* The process is gone, fifo or not. */
	assert_int_equal(mkfifo(path_in(OCI_FIFO), 0600), 0);
	pid_t dead = reaped_pid();
	s.pid = dead;
	assert_int_equal(oci_state_status(dir, &s), OCI_STOPPED);
	s.pid = 0;
	assert_int_equal(oci_state_status(dir, &s), OCI_STOPPED);
	oci_state_free(&s);
}

/* A start time of 0 (the process had ended when create read it) is no
 * live process's: a dead pid with it is stopped, not created. */
static void test_status_dead_with_no_start_time(void **state)
{
	(void)state;
	struct oci_state s;
	fill(&s);
	assert_int_equal(mkfifo(path_in(OCI_FIFO), 0600), 0);
	s.start_time = 0;
	s.pid = reaped_pid();
	assert_int_equal(oci_state_status(dir, &s), OCI_STOPPED);
	pid_t z = zombie_pid();
	s.pid = z;
	assert_int_equal(oci_state_status(dir, &s), OCI_STOPPED);
	assert_int_equal(waitpid(z, NULL, 0), z);
	oci_state_free(&s);
}

static void test_status_name(void **state)
{
	(void)state;
	assert_string_equal(oci_status_name(OCI_CREATED), "created");
	assert_string_equal(oci_status_name(OCI_RUNNING), "running");
	assert_string_equal(oci_status_name(OCI_STOPPED), "stopped");
}

static const char *string_of(struct json_object *obj, const char *key)
{
	struct json_object *v;
	if (!json_object_object_get_ex(obj, key, &v))
		fail_msg("no %s", key);
	assert_true(json_object_is_type(v, json_type_string));
	return json_object_get_string(v);
}

static void test_state_json(void **state)
{
	(void)state;
	struct oci_state s;
	fill(&s);
	char *text = oci_state_json(&s, OCI_RUNNING);
	assert_non_null(text);
	/* Paths as they are, not with "\/". */
	assert_non_null(strstr(text, "/srv/bundles/box"));
	struct json_object *obj = json_tokener_parse(text), *v;
	assert_non_null(obj);
	assert_string_equal(string_of(obj, "ociVersion"), OCI_VERSION);
	assert_string_equal(string_of(obj, "id"), "box-1");
	assert_string_equal(string_of(obj, "status"), "running");
	assert_string_equal(string_of(obj, "bundle"), s.bundle);
	assert_string_equal(string_of(obj, "rootfs"), s.rootfs);
	assert_string_equal(string_of(obj, "created"), s.created);
	assert_true(json_object_object_get_ex(obj, "pid", &v));
	assert_true(json_object_is_type(v, json_type_int));
	assert_int_equal(json_object_get_int(v), getpid());
	assert_true(json_object_object_get_ex(obj, "annotations", &v));
	assert_true(json_object_is_type(v, json_type_object));
	expect_same_json(json_object_to_json_string(v), s.annotations);
	/* fsvm's own fields stay in state.json. */
	assert_false(json_object_object_get_ex(obj, "start_time", &v));
	assert_false(json_object_object_get_ex(obj, "cgroup", &v));
	json_object_put(obj);
	free(text);

	/* The spec: a pid only while the process is there. */
	text = oci_state_json(&s, OCI_STOPPED);
	obj = json_tokener_parse(text);
	assert_non_null(obj);
	assert_string_equal(string_of(obj, "status"), "stopped");
	assert_true(json_object_object_get_ex(obj, "pid", &v));
	assert_int_equal(json_object_get_int(v), 0);
	json_object_put(obj);
	free(text);

	/* No annotations: an empty object. */
	free(s.annotations);
	s.annotations = NULL;
	text = oci_state_json(&s, OCI_CREATED);
	obj = json_tokener_parse(text);
	assert_non_null(obj);
	assert_true(json_object_object_get_ex(obj, "annotations", &v));
	assert_true(json_object_is_type(v, json_type_object));
	assert_int_equal(json_object_object_length(v), 0);
	json_object_put(obj);
	free(text);
}

static void test_state_remove(void **state)
{
	(void)state;
	struct oci_state s;
	fill(&s);
	assert_int_equal(oci_state_write(dir, &s), 0);
	oci_state_free(&s);
	assert_int_equal(mkfifo(path_in(OCI_FIFO), 0600), 0);
	/* A write cut short leaves its temporary file: that goes too. */
	FILE *f = fopen(path_in(".state.json.new"), "we");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(oci_state_remove(dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	/* Twice: nothing left to remove is no error. */
	assert_int_equal(oci_state_remove(dir), 0);
	assert_int_equal(oci_state_read(dir, &s), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_pid_start_time),
		cmocka_unit_test(test_pid_start_time_odd_name),
		cmocka_unit_test_setup_teardown(test_state_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_read_missing_or_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_dead_with_no_start_time, setup, teardown),
		cmocka_unit_test(test_status_name),
		cmocka_unit_test(test_state_json),
		cmocka_unit_test_setup_teardown(test_state_remove, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
