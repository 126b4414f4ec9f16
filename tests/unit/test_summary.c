/* Unit tests for vmm/summary: the --json object, read back with json-c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "core/exit_reason.h"
#include "core/log.h"
#include "core/vm.h"
#include "vmm/summary.h"

/* summary_end() gathers device reports: the registry's section must exist. */
static int add_none(struct machine *m)
{
	(void)m;
	return 0;
}
static const struct device_type no_device = {.name = "none", .add = add_none};
DEVICE_REGISTER(no_device);

/* Parses one line of JSON. */
static struct json_object *parsed(const char *text)
{
	size_t n = strlen(text);
	assert_true(n > 0 && text[n - 1] == '\n');
	assert_null(memchr(text, '\n', n - 1)); /* one line */
	struct json_object *j = json_tokener_parse(text);
	if (!j)
		fail_msg("not JSON: %s", text);
	return j;
}

/* Writes s as --json would and parses what came out. */
static struct json_object *written(struct run_summary *s, int status)
{
	struct fsvm_config cfg = {.json = true};
	s->out = tmpfile();
	assert_non_null(s->out);
	assert_int_equal(summary_write_json(s, status, &cfg), 0);
	char text[8192];
	rewind(s->out);
	size_t n = fread(text, 1, sizeof(text) - 1, s->out);
	fclose(s->out);
	text[n] = '\0';
	return parsed(text);
}

static struct json_object *at(struct json_object *o, const char *key)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no key '%s'", key);
	return v;
}

static void test_command_status(void **state)
{
	(void)state;
	static struct run_summary s;
	summary_init(&s, NULL);
	s.status = 3;
	s.ended_by = "command";
	s.timeline_us[TL_FIRST_RUN] = 12340;
	s.timeline_us[TL_VMM_EXIT] = 1000060;
	s.devices[0] = (struct device_report){.type = "virtio-fs",
					      .name = "root",
					      .what = "requests",
					      .nr_counts = 2};
	s.devices[0].counts[0].name = "LOOKUP";
	s.devices[0].counts[0].value = 7;
	s.devices[0].counts[1].name = "READ";
	s.devices[0].counts[1].value = 1ULL << 40;
	s.nr_devices = 1;
	struct json_object *j = written(&s, 3);
	assert_int_equal(json_object_get_int(at(j, "fsvm_json")), 2);
	struct json_object *exit = at(j, "exit");
	assert_int_equal(json_object_get_int(at(exit, "status")), 3);
	assert_string_equal(json_object_get_string(at(exit, "ended_by")), "command");
	assert_string_equal(json_object_get_string(at(exit, "meaning")),
			    "the command exited with status 3");
	assert_true(json_object_is_type(at(exit, "reason"), json_type_null));
	assert_true(json_object_is_type(at(exit, "message"), json_type_null));
	assert_int_equal(json_object_array_length(at(exit, "problems")), 0);
	struct json_object *t = at(j, "timeline");
	assert_int_equal(json_object_array_length(t), 2);
	struct json_object *e = json_object_array_get_idx(t, 0);
	assert_string_equal(json_object_get_string(at(e, "event")), "first-kvm-run");
	assert_true(json_object_get_double(at(e, "ms")) == 12.3);
	e = json_object_array_get_idx(t, 1);
	assert_string_equal(json_object_get_string(at(e, "event")), "vmm-exit");
	assert_true(json_object_get_double(at(e, "ms")) == 1000.1);
	struct json_object *d = json_object_array_get_idx(at(j, "devices"), 0);
	assert_string_equal(json_object_get_string(at(d, "name")), "root");
	assert_string_equal(json_object_get_string(at(d, "type")), "virtio-fs");
	struct json_object *r = at(d, "requests");
	assert_int_equal(json_object_get_int64(at(r, "LOOKUP")), 7);
	assert_int_equal(json_object_get_int64(at(r, "READ")), 1LL << 40);
	assert_true(json_object_get_int64(at(j, "peak_rss_bytes")) > 0);
	json_object_put(j);
}

/* A set-up that failed never said how it ended: fsvm did, with the line
 * that said why set-up failed, not whatever was logged after it. */
static void test_failed_set_up(void **state)
{
	(void)state;
	static struct run_summary s;
	summary_init(&s, NULL);
	assert_int_equal(log_setup_error("kvm", "\"quoted\" \\ reason", 0), -EINVAL);
	log_error("a later line, not the reason");
	assert_int_equal(log_setup_error("later", "a second failure", -EIO), -EIO);
	struct json_object *j = written(&s, 125);
	struct json_object *exit = at(j, "exit");
	assert_int_equal(json_object_get_int(at(exit, "status")), 125);
	assert_string_equal(json_object_get_string(at(exit, "ended_by")), "fsvm");
	assert_string_equal(json_object_get_string(at(exit, "reason")),
			    "setup_failed");
	assert_string_equal(json_object_get_string(at(exit, "message")),
			    "kvm: \"quoted\" \\ reason");
	assert_int_equal(json_object_array_length(at(j, "timeline")), 0);
	assert_int_equal(json_object_array_length(at(j, "devices")), 0);
	json_object_put(j);
}

static void test_meanings(void **state)
{
	(void)state;
	static const struct {
		const char *by;
		int status;
		const char *meaning;
	} cases[] = {
		{"command", 0, "the command succeeded"},
		{"command", 127, "the command was not found"},
		{"command", 126, "the command is not executable"},
		{"command", 137, "the command was killed by signal 9"},
		{"timeout", 124, "the guest ran past --timeout and was stopped"},
		{"signal", 130, "fsvm was stopped by a signal"},
		{"setup-only", 0, "set-up done; --setup-only runs no guest"},
		{"check", 0, "the checks found no problem; --check runs no guest"},
		{"check", 125, "the checks found problems (see problems); --check runs no guest"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct run_summary s;
		summary_init(&s, NULL);
		s.status = cases[i].status;
		s.ended_by = cases[i].by;
		struct json_object *j = written(&s, cases[i].status);
		assert_string_equal(json_object_get_string(at(at(j, "exit"), "meaning")),
				    cases[i].meaning);
		json_object_put(j);
	}
}

/* Every reason but NONE has its own code, in snake case. */
static void test_reason_keys(void **state)
{
	(void)state;
	assert_null(exit_reason_key(EXIT_REASON_NONE));
	assert_null(exit_reason_key(EXIT_REASON_COUNT));
	for (int i = 1; i < EXIT_REASON_COUNT; i++) {
		const char *key = exit_reason_key(i);
		assert_non_null(key);
		assert_int_equal(strspn(key, "abcdefghijklmnopqrstuvwxyz_"), strlen(key));
		for (int k = 1; k < i; k++)
			assert_string_not_equal(key, exit_reason_key(k));
	}
	assert_string_equal(exit_reason_key(EXIT_REASON_BAD_USAGE), "bad_usage");
	assert_string_equal(exit_reason_key(EXIT_REASON_GUEST_PANIC), "guest_panic");
	assert_string_equal(exit_reason_key(EXIT_REASON_SECCOMP), "seccomp");
}

/* How the VM stopped decides ended_by, reason and message. */
static void test_ended_by_the_vm(void **state)
{
	(void)state;
	static const struct {
		int status;
		enum exit_reason reason;
		const char *line, *by, *key;
	} cases[] = {
		{3, EXIT_REASON_NONE, NULL, "command", NULL},
		{124, EXIT_REASON_TIMEOUT, "guest timed out after 3 s", "timeout", "timeout"},
		{143, EXIT_REASON_SIGNAL, "stopped by signal Terminated", "signal", "signal"},
		{125, EXIT_REASON_GUEST_PANIC, "guest kernel panicked: x", "fsvm", "guest_panic"},
		{125, EXIT_REASON_GUEST_RESET, "guest rebooted before its command reported a status",
		 "fsvm", "guest_reset"},
		{0, EXIT_REASON_GUEST_POWEROFF, "guest powered off", "fsvm", "guest_poweroff"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct vm vm;
		assert_int_equal(vm_init(&vm), 0);
		if (cases[i].line)
			vm_stop(&vm, cases[i].status, cases[i].reason, "%s", cases[i].line);
		else
			vm_stop(&vm, cases[i].status, cases[i].reason, NULL);
		static struct run_summary s;
		static struct machine m;
		summary_init(&s, NULL);
		summary_end(&s, &vm, &m);
		struct json_object *j = written(&s, cases[i].status);
		struct json_object *exit = at(j, "exit");
		assert_int_equal(json_object_get_int(at(exit, "status")), cases[i].status);
		assert_string_equal(json_object_get_string(at(exit, "ended_by")), cases[i].by);
		if (cases[i].key) {
			assert_string_equal(json_object_get_string(at(exit, "reason")),
					    cases[i].key);
			assert_string_equal(json_object_get_string(at(exit, "message")),
					    cases[i].line);
		} else {
			assert_true(json_object_is_type(at(exit, "reason"), json_type_null));
			assert_true(json_object_is_type(at(exit, "message"), json_type_null));
		}
		json_object_put(j);
		close(vm.stop_eventfd);
	}
}

/* A set-up failure's reason is the first one said. */
static void test_first_failure_is_the_reason(void **state)
{
	(void)state;
	static struct run_summary s;
	summary_init(&s, NULL);
	assert_int_equal(summary_failed(&s, EXIT_REASON_BAD_CONFIG), 125);
	assert_int_equal(summary_failed(&s, EXIT_REASON_SETUP_FAILED), 125);
	snprintf(s.message, sizeof(s.message), "a.json: line 1: a key given twice");
	struct json_object *j = written(&s, 125);
	struct json_object *exit = at(j, "exit");
	assert_string_equal(json_object_get_string(at(exit, "reason")), "bad_config");
	assert_string_equal(json_object_get_string(at(exit, "message")),
			    "a.json: line 1: a key given twice");
	json_object_put(j);
}

/* --check: each problem, in order, with its reason. */
static void test_check_problems(void **state)
{
	(void)state;
	static struct check c = {
		.nr = 2,
		.problems = {{EXIT_REASON_BAD_SHARE, "--share: /x (No such file or directory)"},
			     {EXIT_REASON_BAD_KERNEL, "/k: cannot open the kernel"}}};
	static struct run_summary s;
	summary_init(&s, NULL);
	s.check = &c;
	s.ended_by = "check";
	s.status = summary_failed(&s, EXIT_REASON_BAD_SHARE);
	struct json_object *j = written(&s, 125);
	struct json_object *p = at(at(j, "exit"), "problems");
	assert_int_equal(json_object_array_length(p), 2);
	struct json_object *e = json_object_array_get_idx(p, 1);
	assert_string_equal(json_object_get_string(at(e, "reason")), "bad_kernel");
	assert_string_equal(json_object_get_string(at(e, "message")),
			    "/k: cannot open the kernel");
	assert_int_equal(json_object_array_length(at(j, "timeline")), 0);
	json_object_put(j);
}

/* What a seccomp violation writes: the parts made beforehand around its
 * line are one JSON object, 125, reason seccomp, the line its message. */
static void test_violation_summary(void **state)
{
	(void)state;
	static struct run_summary s;
	summary_init(&s, NULL);
	s.timeline_us[TL_SETUP_DONE] = 40900;
	s.nr_devices = 1; /* counted later, unknown then */
	char *before, *after;
	assert_int_equal(summary_render_violation(&s, &before, &after), 0);
	const char *line = "seccomp: system call socket (41) is not one fsvm makes";
	char text[8192];
	snprintf(text, sizeof(text), "%s%s%s\n", before, line, after);
	free(before);
	free(after);
	struct json_object *j = parsed(text);
	struct json_object *exit = at(j, "exit");
	assert_int_equal(json_object_get_int(at(exit, "status")), 125);
	assert_string_equal(json_object_get_string(at(exit, "ended_by")), "fsvm");
	assert_string_equal(json_object_get_string(at(exit, "reason")), "seccomp");
	assert_string_equal(json_object_get_string(at(exit, "message")), line);
	assert_int_equal(json_object_array_length(at(j, "timeline")), 1);
	assert_int_equal(json_object_array_length(at(j, "devices")), 0);
	assert_true(json_object_is_type(at(j, "peak_rss_bytes"), json_type_null));
	json_object_put(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_status),
		cmocka_unit_test(test_failed_set_up),
		cmocka_unit_test(test_meanings),
		cmocka_unit_test(test_reason_keys),
		cmocka_unit_test(test_ended_by_the_vm),
		cmocka_unit_test(test_first_failure_is_the_reason),
		cmocka_unit_test(test_check_problems),
		cmocka_unit_test(test_violation_summary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
