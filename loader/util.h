/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util.h: small helpers shared by the files of libcoordl.
 *
 * coordl__errprintf() fills an optional caller-owned coordl_error_t, sets
 * errno and returns -1, so that a failing function can report and return in
 * one statement: common/error.h's helper for libcoordl's public error type
 * (the same layout as syn_error_t). coordl__now() is the monotonic clock every statistic of the
 * loader is measured with.
 */
#ifndef COORDL_UTIL_H
#define COORDL_UTIL_H

#include <stddef.h>
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

/* A formatted string (malloc'ed), or NULL when out of memory. */
char *coordl__path_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Is fd a regular file of this user, mode 0600, one link? 0, or -1 with
 * errno EPERM and the reason in why. */
int coordl__private_check(int fd, char *why, size_t whylen);

/* Open path read-write, creating it (exclusively, 0600) when missing, and
 * check it as above; never follows a symbolic link, never blocks on a
 * FIFO. Returns the fd, or -1 with errno and the reason in why. */
int coordl__private_open(const char *path, char *why, size_t whylen);

/* Take an exclusive flock on the private file at path (opened as above),
 * retrying when the file was unlinked meanwhile (its last holder removes
 * it while holding it: a lock on an unlinked file protects nothing).
 * Returns the locked fd, or -1 with errno and why. */
int coordl__private_lock(const char *path, char *why, size_t whylen);

/*
 * Per-slot liveness through open file description locks on one byte of a
 * shared file: a process holds byte k while it uses slot k, and the lock
 * goes with it however it dies. coordl__byte_lock takes byte k (type
 * F_WRLCK) or drops it (F_UNLCK) without waiting: 0, or -1 with errno
 * (EAGAIN: another holds it). coordl__byte_held: 1 if another open file
 * description holds byte k, or when that cannot be told; 0 if free.
 */
int coordl__byte_lock(int fd, int k, short type);
int coordl__byte_held(int fd, int k);

#endif
