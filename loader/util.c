/*
 * util.c: the error-reporting helper of libcoordl (see util.h).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "util.h"

int coordl__errprintf(coordl_error_t *err, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	errno = errnum;
	return -1;
}
