/* The run's summary: gathered as the run goes, logged with -v, written as
 * one JSON object with --json (json-c, as the config file is read). */
#include "vmm/summary.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/log.h"
#include "core/vm.h"

void summary_timeline(struct run_summary *s, const struct timeline *tl)
{
	for (int i = 0; i < TL_NR_MARKS; i++)
		s->timeline_us[i] = atomic_load(&tl->us[i]);
}

/* -v: one line per device, "root requests: LOOKUP 3 OPEN 2 ...". */
static void log_device(const struct device_report *d)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s %s:", d->name, d->what);
	for (unsigned int k = 0; k < d->nr_counts && n < (int)sizeof(line); k++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s %llu",
			      d->counts[k].name,
			      (unsigned long long)d->counts[k].value);
	log_info("%s", line);
}

void summary_init(struct run_summary *s, FILE *out)
{
	*s = (struct run_summary){.out = out, .peak_rss_bytes = -1};
	for (int i = 0; i < TL_NR_MARKS; i++)
		s->timeline_us[i] = -1; /* no guest ran */
}

int summary_failed(struct run_summary *s, enum exit_reason reason)
{
	if (s->reason == EXIT_REASON_NONE)
		s->reason = reason;
	return EXIT_VMM_ERROR;
}

void summary_end(struct run_summary *s, const struct vm *vm,
		 const struct machine *m)
{
	s->status = vm->exit_status;
	s->reason = vm->end_reason;
	snprintf(s->message, sizeof(s->message), "%s", vm->stop_reason);
	/* No reason: the exit device gave the command's status. */
	s->ended_by = s->reason == EXIT_REASON_NONE      ? "command"
		      : s->reason == EXIT_REASON_TIMEOUT ? "timeout"
		      : s->reason == EXIT_REASON_SIGNAL  ? "signal"
							 : "fsvm";
	summary_timeline(s, &vm->timeline);
	s->nr_devices = devices_report(m, s->devices, DEVICE_MAX_INSTANCES);
	for (unsigned int i = 0; i < s->nr_devices; i++)
		log_device(&s->devices[i]);
}

static const char *meaning(const struct run_summary *s, char *buf,
			   size_t len)
{
	if (!strcmp(s->ended_by, "command")) {
		if (s->status == 0)
			return "the command succeeded";
		if (s->status == 126)
			return "the command is not executable";
		if (s->status == 127)
			return "the command was not found";
		if (s->status > 128)
			snprintf(buf, len, "the command was killed by signal %d",
				 s->status - 128);
		else
			snprintf(buf, len, "the command exited with status %d",
				 s->status);
		return buf;
	}
	if (!strcmp(s->ended_by, "timeout"))
		return "the guest ran past --timeout and was stopped";
	if (!strcmp(s->ended_by, "signal"))
		return "fsvm was stopped by a signal";
	if (!strcmp(s->ended_by, "snapshot"))
		return "the snapshot was written";
	if (!strcmp(s->ended_by, "setup-only"))
		return "set-up done; --setup-only runs no guest";
	if (!strcmp(s->ended_by, "check"))
		return s->status ? "the checks found problems (see problems); --check runs no guest"
				 : "the checks found no problem; --check runs no guest";
	return "fsvm or the guest failed (see reason and message)";
}

/* Milliseconds to a tenth, written as such (not 12.300000000000001). */
static struct json_object *ms_value(double ms)
{
	char text[32];
	snprintf(text, sizeof(text), "%.1f", ms);
	return json_object_new_double_s(round(ms * 10) / 10, text);
}

static struct json_object *kernel_json(const struct kernel_report *k)
{
	if (!k)
		return NULL;
	struct json_object *o = json_object_new_object();
	struct json_object *frames = json_object_new_array();
	for (unsigned int i = 0; i < k->nr_frames; i++)
		json_object_array_add(frames, json_object_new_string(k->frames[i]));
	json_object_object_add(o, "headline", json_object_new_string(k->headline));
	json_object_object_add(o, "rip",
			       k->rip[0] ? json_object_new_string(k->rip) : NULL);
	json_object_object_add(o, "backtrace", frames);
	json_object_object_add(o, "text", json_object_new_string(k->text));
	json_object_object_add(o, "truncated", json_object_new_boolean(k->truncated));
	return o;
}

static struct json_object *problems_json(const struct check *c)
{
	struct json_object *list = json_object_new_array();
	unsigned int nr = c ? c->nr : 0;
	for (unsigned int i = 0; i < nr && i < CHECK_MAX_PROBLEMS; i++) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "reason", json_object_new_string(
						exit_reason_key(c->problems[i].reason)));
		json_object_object_add(o, "message", json_object_new_string(
						c->problems[i].message));
		json_object_array_add(list, o);
	}
	return list;
}

static struct json_object *to_json(const struct run_summary *s)
{
	char buf[64];
	struct json_object *root = json_object_new_object();
	struct json_object *exit = json_object_new_object();
	json_object_object_add(exit, "status", json_object_new_int(s->status));
	json_object_object_add(exit, "ended_by",
			       json_object_new_string(s->ended_by));
	json_object_object_add(exit, "meaning",
			       json_object_new_string(meaning(s, buf, sizeof(buf))));
	const char *reason = exit_reason_key(s->reason);
	json_object_object_add(exit, "reason",
			       reason ? json_object_new_string(reason) : NULL);
	json_object_object_add(exit, "message",
			       s->message[0] ? json_object_new_string(s->message)
					     : NULL);
	json_object_object_add(exit, "problems", problems_json(s->check));
	json_object_object_add(root, "fsvm_json", json_object_new_int(2));
	json_object_object_add(root, "exit", exit);

	struct json_object *timeline = json_object_new_array();
	for (int i = 0; i < TL_NR_MARKS; i++) {
		if (s->timeline_us[i] < 0)
			continue;
		struct json_object *e = json_object_new_object();
		json_object_object_add(e, "event",
				       json_object_new_string(timeline_key(i)));
		json_object_object_add(e, "ms", ms_value((double)s->timeline_us[i] / 1e3));
		json_object_array_add(timeline, e);
	}
	json_object_object_add(root, "timeline", timeline);

	struct json_object *devices = json_object_new_array();
	for (unsigned int i = 0; i < s->nr_devices; i++) {
		const struct device_report *d = &s->devices[i];
		struct json_object *o = json_object_new_object();
		struct json_object *counts = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string(d->type));
		json_object_object_add(o, "name", json_object_new_string(d->name));
		for (unsigned int k = 0; k < d->nr_counts; k++)
			json_object_object_add(counts, d->counts[k].name,
					       json_object_new_int64(
						       (int64_t)d->counts[k].value));
		json_object_object_add(o, d->what, counts);
		json_object_array_add(devices, o);
	}
	json_object_object_add(root, "devices", devices);
	json_object_object_add(root, "kernel_report", kernel_json(s->kernel));
	json_object_object_add(root, "peak_rss_bytes",
			       s->peak_rss_bytes < 0
				       ? NULL
				       : json_object_new_int64(s->peak_rss_bytes));
	return root;
}

/* The summary as text, one line (malloc'd); NULL when out of memory. */
static char *render(const struct run_summary *s)
{
	struct json_object *root = to_json(s);
	const char *text = root ? json_object_to_json_string_ext(
					  root, JSON_C_TO_STRING_SPACED |
							JSON_C_TO_STRING_NOSLASHESCAPE)
				: NULL;
	char *copy = text ? strdup(text) : NULL;
	json_object_put(root);
	return copy;
}

int summary_write_json(struct run_summary *s, int status,
		       const struct fsvm_config *cfg)
{
	if (!s->ended_by) {
		s->status = status;
		s->ended_by = "fsvm";
		summary_failed(s, EXIT_REASON_SETUP_FAILED);
		if (!s->message[0])
			log_setup_failure(s->message, sizeof(s->message));
	}
	struct rusage ru;
	s->peak_rss_bytes = getrusage(RUSAGE_SELF, &ru) ? -1
							: (long long)ru.ru_maxrss * 1024;
	char *text = render(s);
	int ok = text && fprintf(s->out, "%s\n", text) >= 0 && fflush(s->out) == 0;
	free(text);
	if (!ok)
		log_error("--json%s%s: cannot write the summary",
			  cfg->json_file ? "=" : "",
			  cfg->json_file ? cfg->json_file : "");
	return ok ? 0 : -1;
}

int summary_render_violation(const struct run_summary *s, char **before,
			     char **after)
{
	struct run_summary *v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	*v = *s;
	v->status = EXIT_VMM_ERROR;
	v->ended_by = "fsvm";
	v->reason = EXIT_REASON_SECCOMP;
	snprintf(v->message, sizeof(v->message), "%s", SUMMARY_VIOLATION_SLOT);
	v->nr_devices = 0;
	v->kernel = NULL;
	v->peak_rss_bytes = -1;
	char *text = render(v);
	free(v);
	char *slot = text ? strstr(text, SUMMARY_VIOLATION_SLOT) : NULL;
	*before = slot ? strndup(text, (size_t)(slot - text)) : NULL;
	*after = slot ? strdup(slot + strlen(SUMMARY_VIOLATION_SLOT)) : NULL;
	free(text);
	if (*before && *after)
		return 0;
	free(*before);
	free(*after);
	*before = *after = NULL;
	return -ENOMEM;
}
