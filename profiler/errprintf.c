/*
 * errprintf.c: the one error-formatting helper of the profiler libraries
 * (see errprintf.h).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "errprintf.h"

int syn__store_errprintf(char *buf, size_t len, int errnum, const char *fmt, ...)
{
	if (buf && len > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	errno = errnum;
	return -1;
}
