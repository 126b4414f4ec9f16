/* Reads config files with json-c and hands each key to cli_apply(), so a
 * key means exactly what its flag means; picks a profile among them. */
#include "vmm/config_file.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	cfg->exec = NULL; /* the later of "exec" and "command" is the command */
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
#define CONFIG_MAX_DEPTH 32 /* json-c's own limit (JSON_TOKENER_DEFAULT_DEPTH) */
#define NOT_AN_OBJECT UINT32_MAX

/* json-c keeps the last of two equal keys ({"cpus": 2, "cpus": 3} is 3):
 * each object's keys (the file's own, a profile's) are read from the text,
 * which json-c has passed as strict JSON, and a second one is refused.
 * Returns the offset of the first repeated key, or -1. */
static long repeated_key(const char *text)
{
	size_t start[CONFIG_MAX_KEYS], len[CONFIG_MAX_KEYS];
	/* Where each open object's keys begin in start[], or NOT_AN_OBJECT
	 * for a list. */
	uint32_t frame[CONFIG_MAX_DEPTH];
	unsigned int n = 0, depth = 0;
	for (size_t i = 0; text[i]; i++) {
		char c = text[i];
		if (c == '{' || c == '[') {
			if (depth == CONFIG_MAX_DEPTH)
				return -1;
			frame[depth++] = c == '{' ? n : NOT_AN_OBJECT;
		} else if (c == '}' || c == ']') {
			if (!depth)
				return -1;
			if (frame[--depth] != NOT_AN_OBJECT)
				n = frame[depth];
		} else if (c == '"') {
			size_t from = ++i;
			while (text[i] && text[i] != '"')
				i += text[i] == '\\' && text[i + 1] ? 2 : 1;
			if (!text[i])
				return -1;
			size_t after = i + 1 + strspn(text + i + 1, " \t\r\n");
			if (!depth || frame[depth - 1] == NOT_AN_OBJECT ||
			    text[after] != ':')
				continue;
			for (unsigned int k = frame[depth - 1]; k < n; k++)
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

/* label names the file in a message that it cannot be read: "--config
 * FILE", "FSVM_CONFIG=FILE" or the file itself. */
static int read_text(const char *path, const char *label, char **text,
		     char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", label, strerror(errno));
		return -EINVAL;
	}
	char *buf = malloc(CONFIG_MAX_BYTES + 1);
	size_t n = buf ? fread(buf, 1, CONFIG_MAX_BYTES + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad || n > CONFIG_MAX_BYTES) {
		free(buf);
		snprintf(err, errlen, "%s: %s", label,
			 !buf ? "out of memory"
			 : bad ? "cannot read it"
			       : "larger than 1 MiB");
		return -EINVAL;
	}
	buf[n] = '\0';
	*text = buf;
	return 0;
}

/* The file as one strict JSON object, in *root. */
static int parse_file(const char *path, const char *label,
		      struct json_object **root, char *err, size_t errlen)
{
	char *text;
	if (read_text(path, label, &text, err, errlen))
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
	*root = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	int ret = 0;
	if (jerr != json_tokener_success || !*root) {
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
	} else if (!json_object_is_type(*root, json_type_object)) {
		ret = config_error(err, errlen, path, NULL,
				   "expected one JSON object ({\"cpus\": 2, ...})");
	} else if ((again = repeated_key(text)) >= 0) {
		char what[64];
		snprintf(what, sizeof(what), "line %d: a key given twice",
			 line_of(text, (size_t)again));
		ret = config_error(err, errlen, path, NULL, what);
	}
	free(text);
	if (ret) {
		json_object_put(*root);
		*root = NULL;
	}
	return ret;
}

/* "profiles": {"NAME": {options...}, ...}, checked whole whichever is
 * picked, so a mistake in one is found before the day it is used. */
static int check_profiles(const char *path, struct json_object *profiles,
			  char *err, size_t errlen)
{
	if (!json_object_is_type(profiles, json_type_object))
		return config_error(err, errlen, path, "profiles",
				    "expected an object of profiles ({\"ci\": {\"cpus\": 2}})");
	json_object_object_foreach(profiles, name, options)
	{
		if (!json_object_is_type(options, json_type_object)) {
			char what[160];
			snprintf(what, sizeof(what),
				 "profile '%s' is not an object of options", name);
			return config_error(err, errlen, path, "profiles", what);
		}
	}
	return 0;
}

/* An object's options, each key through apply_key; where names it in a
 * message (the file, or the file and the profile). */
static int apply_object(struct fsvm_config *cfg, const char *where,
			struct json_object *obj, bool top, char *err,
			size_t errlen)
{
	json_object_object_foreach(obj, key, v)
	{
		int ret;
		if (!strcmp(key, "profiles"))
			ret = top ? check_profiles(where, v, err, errlen)
				  : config_error(err, errlen, where, key,
						 "a profile holds options, not profiles");
		else
			ret = apply_key(cfg, where, key, v, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* --profile NAME found in none of the files: the ones there are. */
static int no_such_profile(const char *profile, struct json_object **roots,
			   const char *const *paths, size_t n, char *err,
			   size_t errlen)
{
	char names[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *profiles;
		if (!json_object_object_get_ex(roots[i], "profiles", &profiles))
			continue;
		json_object_object_foreach(profiles, name, options)
		{
			(void)options;
			int w = snprintf(names + len, sizeof(names) - len, "%s%s",
					 len ? ", " : "", name);
			len = w < 0 ? len : len + (size_t)w;
			if (len >= sizeof(names))
				len = sizeof(names) - 1;
		}
	}
	if (!n)
		snprintf(err, errlen,
			 "--profile '%s': there is no config file to take it from ($FSVM_CONFIG, ~/.config/fsvm/config.json or --config FILE)",
			 profile);
	else if (!len)
		snprintf(err, errlen,
			 "--profile '%s': there are no \"profiles\" in %s%s%s",
			 profile, paths[0], n > 1 ? " or " : "",
			 n > 1 ? paths[1] : "");
	else
		snprintf(err, errlen,
			 "--profile '%s': no such profile (there are: %s)",
			 profile, names);
	return -EINVAL;
}

/* $FSVM_CONFIG (which must exist; empty: none), else
 * ~/.config/fsvm/config.json when there is one. 0: none. */
static int default_file(char *path, size_t len, char *label, size_t labellen)
{
	const char *env = getenv("FSVM_CONFIG"), *home = getenv("HOME");
	if (env) {
		snprintf(path, len, "%s", env);
		snprintf(label, labellen, "FSVM_CONFIG=%s", env);
		return *env != '\0';
	}
	if (!home || !*home)
		return 0;
	snprintf(path, len, "%s/.config/fsvm/config.json", home);
	snprintf(label, labellen, "%s", path);
	struct stat st;
	/* There but unreadable is a mistake to say, not a file to skip; a
	 * HOME that cannot be searched (another user's: sudo -u keeps it)
	 * hides whether there is one, and is skipped. */
	return stat(path, &st) == 0 ||
	       (errno != ENOENT && errno != ENOTDIR && errno != EACCES);
}

int config_file_load(const char *config, const char *profile,
		     struct fsvm_config *cfg, char *err, size_t errlen)
{
	char default_path[PATH_MAX], default_label[PATH_MAX + 16];
	char config_label[PATH_MAX + 16];
	const char *paths[2], *labels[2];
	struct json_object *roots[2] = {NULL, NULL};
	size_t n = 0;
	if (default_file(default_path, sizeof(default_path), default_label,
			 sizeof(default_label))) {
		paths[n] = default_path;
		labels[n++] = default_label;
	}
	if (config) {
		snprintf(config_label, sizeof(config_label), "--config %s", config);
		paths[n] = config;
		labels[n++] = config_label;
	}
	int ret = 0;
	for (size_t i = 0; !ret && i < n; i++)
		ret = parse_file(paths[i], labels[i], &roots[i], err, errlen);
	for (size_t i = 0; !ret && i < n; i++)
		ret = apply_object(cfg, paths[i], roots[i], true, err, errlen);
	/* The profile after the files' own options, before the flags. */
	bool found = false;
	for (size_t i = 0; !ret && profile && i < n; i++) {
		struct json_object *profiles, *options;
		if (!json_object_object_get_ex(roots[i], "profiles", &profiles) ||
		    !json_object_object_get_ex(profiles, profile, &options))
			continue;
		char where[PATH_MAX + 300];
		snprintf(where, sizeof(where), "%s: profile '%s'", paths[i],
			 profile);
		ret = apply_object(cfg, where, options, false, err, errlen);
		found = true;
	}
	if (!ret && profile && !found)
		ret = no_such_profile(profile, roots, paths, n, err, errlen);
	for (size_t i = 0; i < n; i++)
		json_object_put(roots[i]);
	return ret;
}
