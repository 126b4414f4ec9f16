/* Unit tests for vmm/summary: the --json object, read back with json-c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "core/log.h"
#include "vmm/summary.h"

/* summary_end() gathers device reports: the registry's section must exist. */
static int add_none(struct machine *m)
{
	(void)m;
	return 0;
}
static const struct device_type no_device = {.name = "none", .add = add_none};
DEVICE_REGISTER(no_device);

/* Writes s as --json would and parses what came out. */
static struct json_object *written(struct run_summary *s, int status)
{
	struct fsvm_config cfg = {.json = true};
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(summary_write_json(s, status, &cfg, f), 0);
	char text[8192];
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_true(n > 0 && text[n - 1] == '\n');
	assert_null(memchr(text, '\n', n - 1)); /* one line */
	struct json_object *j = json_tokener_parse(text);
	assert_non_null(j);
	return j;
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
	s = (struct run_summary){.status = 3, .ended_by = "command"};
	for (int i = 0; i < TL_NR_MARKS; i++)
		s.timeline_us[i] = -1;
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
	assert_int_equal(json_object_get_int(at(j, "fsvm_json")), 1);
	struct json_object *exit = at(j, "exit");
	assert_int_equal(json_object_get_int(at(exit, "status")), 3);
	assert_string_equal(json_object_get_string(at(exit, "ended_by")), "command");
	assert_string_equal(json_object_get_string(at(exit, "meaning")),
			    "the command exited with status 3");
	assert_true(json_object_is_type(at(exit, "reason"), json_type_null));
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
	s = (struct run_summary){0};
	assert_int_equal(log_setup_error("kvm", "\"quoted\" \\ reason", 0), -EINVAL);
	log_error("a later line, not the reason");
	assert_int_equal(log_setup_error("later", "a second failure", -EIO), -EIO);
	struct json_object *j = written(&s, 125);
	struct json_object *exit = at(j, "exit");
	assert_int_equal(json_object_get_int(at(exit, "status")), 125);
	assert_string_equal(json_object_get_string(at(exit, "ended_by")), "fsvm");
	assert_string_equal(json_object_get_string(at(exit, "reason")),
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
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct run_summary s;
		s = (struct run_summary){.status = cases[i].status,
					 .ended_by = cases[i].by};
		struct json_object *j = written(&s, cases[i].status);
		assert_string_equal(json_object_get_string(at(at(j, "exit"), "meaning")),
				    cases[i].meaning);
		json_object_put(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_status),
		cmocka_unit_test(test_failed_set_up),
		cmocka_unit_test(test_meanings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
