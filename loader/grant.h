/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grant.h: the loader follows its cache grant (internal to libcoordl).
 *
 * The node may change a running job's cache grant. It writes the grant to
 * the file named by SYNERGY_CACHE_GRANT (synergy_env.h: decimal bytes, an
 * optional newline, replaced atomically by rename); a loader whose cache
 * bound the program did not fix runs a thread that re-reads the file every
 * COORDL__GRANT_PERIOD seconds, whatever the program is doing, and applies
 * a changed value with coordl__cache_set_bound(). The thread also finishes
 * a shrink that could not wait for a slow reader (the cache's dirty mark).
 */
#ifndef COORDL_GRANT_H
#define COORDL_GRANT_H

#include <stddef.h>
#include <stdint.h>

#include "loader/cache.h"

/* Time between two reads of the grant file, in seconds. */
#define COORDL__GRANT_PERIOD 0.1

/* Parse a grant file's contents: 1..19 decimal digits, then optionally one
 * newline, nothing else. 0, or -1 with errno EINVAL/ERANGE. */
int coordl__grant_parse(const char *text, size_t len, uint64_t *bytes);

/* Read and parse the grant file. 0, or -1 with errno and the reason in why
 * (which names neither the file nor the variable). Never blocks on a FIFO. */
int coordl__grant_read(const char *path, uint64_t *bytes, char *why, size_t whylen);

typedef struct coordl__grant coordl__grant_t;

/* Start following path for cache c (which must outlive the follower).
 * NULL with errno when the thread cannot start. */
coordl__grant_t *coordl__grant_start(const char *path, coordl__cache_t *c);

/* Stop the thread and free. Accepts NULL; preserves errno. */
void coordl__grant_stop(coordl__grant_t *g);

/* The first problem met while following ("grant file PATH: ..."), or NULL.
 * Set once; the text stays valid until coordl__grant_stop(). */
const char *coordl__grant_note(const coordl__grant_t *g);

#endif
