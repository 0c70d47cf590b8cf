/*
 * util.h: small helpers shared by the files of libcoordl.
 *
 * coordl__errprintf() fills an optional caller-owned coordl_error_t, sets
 * errno and returns -1, so that a failing function can report and return in
 * one statement. coordl__now() is the monotonic clock every statistic of the
 * loader is measured with.
 */
#ifndef COORDL_UTIL_H
#define COORDL_UTIL_H

#include <stdint.h>
#include <time.h>

#include "coordl.h"

/* Set errno to errnum, format text into err (if not NULL), return -1. */
int coordl__errprintf(coordl_error_t *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Monotonic time in seconds. */
static inline double coordl__now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
