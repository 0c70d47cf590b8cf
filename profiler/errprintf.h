/*
 * errprintf.h: fill a caller-owned error struct and set errno in one step.
 *
 * Every error struct of the profiler's libraries is `struct { char text[160]; }`,
 * so one helper serves them all: it formats into text (when the caller
 * passed a struct), sets errno and returns -1, which lets a failing path
 * read `return syn__store_errprintf(err->text, ...)` or `goto out` after it.
 */
#ifndef SYN_PROFILER_ERRPRINTF_H
#define SYN_PROFILER_ERRPRINTF_H

#include <stddef.h>

/* Format into buf (size len, may be NULL), set errno = errnum, return -1.
 * errno is set after formatting so vsnprintf cannot clobber it. */
int syn__store_errprintf(char *buf, size_t len, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Shorthand for an optional error struct with a `text` member. */
#define SYN__ERR(e, errnum, ...) \
	syn__store_errprintf((e) ? (e)->text : NULL, (e) ? sizeof((e)->text) : 0, (errnum), __VA_ARGS__)

#endif
