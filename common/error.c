/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/error.c: the error helper of the internal libraries (see error.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "common/error.h"

int syn_verrbuf(char *buf, size_t len, int errnum, const char *fmt, va_list ap)
{
	if (buf && len > 0)
		vsnprintf(buf, len, fmt, ap);
	errno = errnum;
	return -1;
}

int syn_errbuf(char *buf, size_t len, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	syn_verrbuf(buf, len, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int syn_errprintf(syn_error_t *err, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	syn_verrbuf(err ? err->text : NULL, err ? sizeof(err->text) : 0, errnum, fmt, ap);
	va_end(ap);
	return -1;
}
