/* Verbosity switch shared by every module's diagnostics. */
#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

bool log_verbose;

static pthread_mutex_t failure_lock = PTHREAD_MUTEX_INITIALIZER;
static char failure[256];
static char last_error[256];

void log_error_line(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fsvm: %s\n", line);
	pthread_mutex_lock(&failure_lock);
	snprintf(last_error, sizeof(last_error), "%.*s",
		 (int)sizeof(last_error) - 1, line);
	pthread_mutex_unlock(&failure_lock);
}

void log_last_error(char *buf, size_t len)
{
	pthread_mutex_lock(&failure_lock);
	snprintf(buf, len, "%s", last_error);
	pthread_mutex_unlock(&failure_lock);
}

void log_setup_failure(char *buf, size_t len)
{
	pthread_mutex_lock(&failure_lock);
	snprintf(buf, len, "%s", failure);
	pthread_mutex_unlock(&failure_lock);
}

int log_setup_error(const char *what, const char *why, int err)
{
	char line[sizeof(failure)];
	if (err)
		snprintf(line, sizeof(line), "%s: %s (%s)", what, why, strerror(-err));
	else
		snprintf(line, sizeof(line), "%s: %s", what, why);
	log_error("%s", line);
	pthread_mutex_lock(&failure_lock);
	if (!failure[0])
		memcpy(failure, line, sizeof(failure));
	pthread_mutex_unlock(&failure_lock);
	return err ? err : -EINVAL;
}

int log_reason(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int log_refusal(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}
