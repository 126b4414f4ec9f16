/* Verbosity switch shared by every module's diagnostics. */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

bool log_verbose;

static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static char last[256];

void log_error_line(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fsvm: %s\n", line);
	pthread_mutex_lock(&last_lock);
	size_t len = strnlen(line, sizeof(last) - 1);
	memcpy(last, line, len);
	last[len] = '\0';
	pthread_mutex_unlock(&last_lock);
}

void log_last_error(char *buf, size_t len)
{
	pthread_mutex_lock(&last_lock);
	snprintf(buf, len, "%s", last);
	pthread_mutex_unlock(&last_lock);
}

int log_setup_error(const char *what, const char *why, int err)
{
	if (err)
		log_error("%s: %s (%s)", what, why, strerror(-err));
	else
		log_error("%s: %s", what, why);
	return -1;
}
