/* Reads a config file with json-c and hands each key to cli_apply(), so a
 * key means exactly what its flag means. */
#include "vmm/config_file.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Big enough for any option's value; a larger file is not a config. */
#define CONFIG_MAX_BYTES (1 << 20)
#define CONFIG_MAX_ARGS 4096

static int config_error(char *err, size_t errlen, const char *path,
			const char *key, const char *what)
{
	if (key)
		snprintf(err, errlen, "%s: key '%s': %s", path, key, what);
	else
		snprintf(err, errlen, "%s: %s", path, what);
	return -EINVAL;
}

/* A scalar as the flag's text: strings as they are, numbers written out;
 * NULL for anything else. The copy lives as long as cfg. */
static char *scalar_text(struct fsvm_config *cfg, struct json_object *v)
{
	char *s = NULL;
	switch (json_object_get_type(v)) {
	case json_type_string:
		s = strdup(json_object_get_string(v));
		break;
	case json_type_int:
		if (asprintf(&s, "%lld", (long long)json_object_get_int64(v)) < 0)
			s = NULL;
		break;
	case json_type_double:
		if (asprintf(&s, "%.17g", json_object_get_double(v)) < 0)
			s = NULL;
		break;
	default:
		return NULL;
	}
	return s ? cli_own(cfg, s) : NULL;
}

/* One value of a key that takes one: the handler's message, less the
 * flag's name the key already gives ("--cpus: '65' is ..."). */
static int apply_value(struct fsvm_config *cfg, const char *path,
		       const char *key, struct json_object *v, char *err,
		       size_t errlen)
{
	char *text = scalar_text(cfg, v);
	if (!text)
		return config_error(err, errlen, path, key,
				    "expected a string or a number");
	char msg[256];
	if (!cli_apply(cfg, key, text, msg, sizeof(msg)))
		return 0;
	size_t flag = strlen(key) + 2;
	const char *why = msg;
	if (!strncmp(msg, "--", 2) && !strncmp(msg + 2, key, flag - 2) &&
	    msg[flag] == ':' && msg[flag + 1] == ' ')
		why = msg + flag + 2;
	return config_error(err, errlen, path, key, why);
}

/* "command": [CMD, ARGS...], the words after the flags. */
static int apply_command(struct fsvm_config *cfg, const char *path,
			 struct json_object *v, char *err, size_t errlen)
{
	size_t n = json_object_is_type(v, json_type_array)
			   ? json_object_array_length(v)
			   : 0;
	if (!n || n > CONFIG_MAX_ARGS)
		return config_error(err, errlen, path, "command",
				    "expected a list of 1 to 4096 strings");
	char **argv = calloc(n + 1, sizeof(*argv));
	if (!argv || !cli_own(cfg, (char *)argv))
		return config_error(err, errlen, path, "command", "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct json_object *a = json_object_array_get_idx(v, i);
		if (!json_object_is_type(a, json_type_string))
			return config_error(err, errlen, path, "command",
					    "expected a list of strings");
		if (!(argv[i] = scalar_text(cfg, a)))
			return config_error(err, errlen, path, "command",
					    "out of memory");
	}
	cfg->guest_argv = argv;
	cfg->guest_argc = (int)n;
	return 0;
}

static int apply_key(struct fsvm_config *cfg, const char *path,
		     const char *key, struct json_object *v, char *err,
		     size_t errlen)
{
	if (!strcmp(key, "command"))
		return apply_command(cfg, path, v, err, errlen);
	bool repeats;
	int kind = cli_option_kind(key, &repeats);
	if (kind < 0)
		return config_error(err, errlen, path, key,
				    "not an option of fsvm run (see fsvm --help)");
	if (kind == 0) {
		if (!json_object_is_type(v, json_type_boolean))
			return config_error(err, errlen, path, key,
					    "expected true or false");
		/* false is the flag left out: the default. */
		return json_object_get_boolean(v)
			       ? cli_apply(cfg, key, NULL, err, errlen)
			       : 0;
	}
	/* --json alone: true. */
	if (!strcmp(key, "json") && json_object_is_type(v, json_type_boolean)) {
		cfg->json = json_object_get_boolean(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return apply_value(cfg, path, key, v, err, errlen);
	if (!repeats)
		return config_error(err, errlen, path, key,
				    "given once only, not as a list");
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		int ret = apply_value(cfg, path, key,
				      json_object_array_get_idx(v, i), err,
				      errlen);
		if (ret)
			return ret;
	}
	return 0;
}

#define CONFIG_MAX_KEYS 256

/* json-c keeps the last of two equal keys ({"cpus": 2, "cpus": 3} is 3):
 * the object's own keys are read from the text, and a second one is
 * refused. Returns the offset of the first repeated key, or -1. */
static long repeated_key(const char *text)
{
	size_t start[CONFIG_MAX_KEYS], len[CONFIG_MAX_KEYS];
	unsigned int n = 0, depth = 0;
	for (size_t i = 0; text[i]; i++) {
		char c = text[i];
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == '"') {
			size_t from = ++i;
			while (text[i] && text[i] != '"')
				i += text[i] == '\\' && text[i + 1] ? 2 : 1;
			if (!text[i])
				return -1;
			size_t after = i + 1 + strspn(text + i + 1, " \t\r\n");
			if (depth != 1 || text[after] != ':')
				continue;
			for (unsigned int k = 0; k < n; k++)
				if (len[k] == i - from &&
				    !memcmp(text + start[k], text + from, len[k]))
					return (long)from;
			if (n < CONFIG_MAX_KEYS) {
				start[n] = from;
				len[n++] = i - from;
			}
		}
	}
	return -1;
}

/* Where the parser stopped, as a line number for the message. */
static int line_of(const char *text, size_t offset)
{
	int line = 1;
	for (size_t i = 0; i < offset && text[i]; i++)
		line += text[i] == '\n';
	return line;
}

static int read_text(const char *path, char **text, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "--config %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	char *buf = malloc(CONFIG_MAX_BYTES + 1);
	size_t n = buf ? fread(buf, 1, CONFIG_MAX_BYTES + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad || n > CONFIG_MAX_BYTES) {
		free(buf);
		snprintf(err, errlen, "--config %s: %s", path,
			 !buf ? "out of memory"
			 : bad ? "cannot read it"
			       : "larger than 1 MiB");
		return -EINVAL;
	}
	buf[n] = '\0';
	*text = buf;
	return 0;
}

int config_file_load(const char *path, struct fsvm_config *cfg, char *err,
		     size_t errlen)
{
	char *text;
	if (read_text(path, &text, err, errlen))
		return -EINVAL;
	struct json_tokener *tok = json_tokener_new();
	if (!tok) {
		free(text);
		return config_error(err, errlen, path, NULL, "out of memory");
	}
	/* Strict JSON: no comments, no trailing commas (what
	 * follows the object is checked below, with the line). */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
					    JSON_TOKENER_ALLOW_TRAILING_CHARS);
	size_t len = strlen(text);
	long again = -1;
	struct json_object *root = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	int ret = 0;
	if (jerr != json_tokener_success || !root) {
		char what[160];
		snprintf(what, sizeof(what), "line %d: not valid JSON (%s)",
			 line_of(text, end),
			 jerr == json_tokener_continue
				 ? "it ends too early"
				 : json_tokener_error_desc(jerr));
		ret = config_error(err, errlen, path, NULL, what);
	} else if (text[end + strspn(text + end, " \t\r\n")]) {
		char what[64];
		snprintf(what, sizeof(what), "line %d: text after the object",
			 line_of(text, end));
		ret = config_error(err, errlen, path, NULL, what);
	} else if (!json_object_is_type(root, json_type_object)) {
		ret = config_error(err, errlen, path, NULL,
				   "expected one JSON object ({\"cpus\": 2, ...})");
	} else if ((again = repeated_key(text)) >= 0) {
		char what[64];
		snprintf(what, sizeof(what), "line %d: a key given twice",
			 line_of(text, (size_t)again));
		ret = config_error(err, errlen, path, NULL, what);
	} else {
		json_object_object_foreach(root, key, v)
		{
			if ((ret = apply_key(cfg, path, key, v, err, errlen)))
				break;
		}
	}
	json_object_put(root);
	free(text);
	return ret;
}
