/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/error.h: the one error type of Synergy's internal libraries and
 * the one helper that fills it.
 *
 * A library function that fails returns -1 (or NULL) with errno set, and
 * when its caller passed an error struct, a sentence in it that names the
 * input and what was expected. syn_error_t is that struct for everything
 * but libcoordl, whose public face is coordl_error_t (coordl.h, the same
 * layout; loader/util.h fills it through syn_verrbuf()). Functions that
 * report into a plain buffer (a reason field, a `why` argument) use
 * syn_errbuf(). All three take the destination first, then the errno
 * value, then the format, and return -1, so that a failing path reads
 * `return syn_errprintf(err, EINVAL, "...", ...);`.
 *
 * errno is set after formatting, so that vsnprintf() cannot clobber it; to
 * keep the errno of a failed call, pass errno itself.
 */
#ifndef SYN_COMMON_ERROR_H
#define SYN_COMMON_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#define SYN_ERROR_TEXT 160

/* Human-readable detail for a failed call; owned by the caller. */
typedef struct syn_error {
	char text[SYN_ERROR_TEXT];
} syn_error_t;

/* Format into buf (len bytes; nothing when buf is NULL or len is 0), set
 * errno to errnum, return -1. */
int syn_verrbuf(char *buf, size_t len, int errnum, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
int syn_errbuf(char *buf, size_t len, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same into err->text (err may be NULL). */
int syn_errprintf(syn_error_t *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
