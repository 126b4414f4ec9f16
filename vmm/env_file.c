/* Reads an env file line by line and hands each variable to --env's
 * handler (cli_apply), so a line means what --env means. */
#include "vmm/env_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* As a config file: a larger one is not a list of variables. */
#define ENV_FILE_MAX_BYTES (1 << 20)

/* One line, its end of line gone: the variable, or 0 for a blank line
 * or a comment. */
static int add_line(struct fsvm_config *cfg, const char *path, int lineno,
		    char *line, size_t len, char *err, size_t errlen)
{
	if (strlen(line) != len) {
		snprintf(err, errlen, "--env-file %s:%d: a NUL byte in the line",
			 path, lineno);
		return -EINVAL;
	}
	/* docker's rules: leading blanks go, then '#' is a comment; the
	 * name is what comes before '=', and has no blanks. */
	while (isspace((unsigned char)*line))
		line++;
	if (!*line || *line == '#')
		return 0;
	size_t name = strcspn(line, "=");
	bool blank = false;
	for (size_t i = 0; i < name; i++)
		blank = blank || isspace((unsigned char)line[i]);
	if (!name || blank) {
		snprintf(err, errlen,
			 "--env-file %s:%d: '%s' is not NAME=VALUE or NAME (a name without blanks)",
			 path, lineno, line);
		return -EINVAL;
	}
	char *var = cli_own(cfg, strdup(line));
	char why[256];
	if (!var) {
		snprintf(err, errlen, "--env-file %s:%d: out of memory", path,
			 lineno);
		return -EINVAL;
	}
	if (cli_apply(cfg, "env", var, why, sizeof(why))) {
		snprintf(err, errlen, "--env-file %s:%d: %s", path, lineno, why);
		return -EINVAL;
	}
	return 0;
}

int env_file_load(const char *path, struct fsvm_config *cfg, char *err,
		  size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "--env-file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	char *line = NULL;
	size_t cap = 0, total = 0;
	int lineno = 0, ret = 0;
	ssize_t n;
	while (!ret && (n = getline(&line, &cap, f)) > 0) {
		lineno++;
		total += (size_t)n;
		if (total > ENV_FILE_MAX_BYTES) {
			snprintf(err, errlen, "--env-file %s: larger than 1 MiB",
				 path);
			ret = -EINVAL;
			break;
		}
		size_t len = (size_t)n;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && line[len - 1] == '\r') /* written on Windows */
			line[--len] = '\0';
		char *text = line;
		if (lineno == 1 && !strncmp(text, "\xef\xbb\xbf", 3)) {
			text += 3; /* a UTF-8 byte-order mark */
			len -= 3;
		}
		ret = add_line(cfg, path, lineno, text, len, err, errlen);
	}
	if (!ret && ferror(f)) { /* a folder, say */
		snprintf(err, errlen, "--env-file %s: %s", path, strerror(errno));
		ret = -EINVAL;
	}
	free(line);
	fclose(f);
	return ret;
}
