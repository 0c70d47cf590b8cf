/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profmode.h: the loader's profiling mode (internal to libcoordl).
 *
 * With SYNERGY_PROFILE_MODE=1 a real training job's loader profiles the
 * job from inside coordl_next(): the consumer's time between batch
 * requests (its GPU ingestion rate), the loader's own prep and fetch
 * counters, and Synergy's CPU search (start at the most threads, halve
 * while the job's throughput stays within 10% of the first point, else
 * step down one thread at a time) run live by changing the worker count.
 * Each point is timed over a few windows of batches after the prefetch
 * ring settled. When the search ends (or stops because the node took back
 * CPUs it ran on, or at coordl_destroy: both marked incomplete) the raw
 * measurements go to SYNERGY_PROFILE_OUT as JSON, written to a temporary
 * file and renamed; `synergy-profile run -- CMD` and, for a job profiled on
 * its first run, the Synergy plugin read it and build the profile. The
 * report's format is the contract documented at SYNERGY_ENV_PROFILE_OUT in
 * synergy_env.h. Once the search ended the loader trains on: following its
 * cpuset again when its thread count was left to it, else at the count it
 * started with (coordl__profile_done, loader.c).
 */
#ifndef COORDL_PROFMODE_H
#define COORDL_PROFMODE_H

#include "coordl.h"

/* Timed windows per point and batches per window. */
#define COORDL__PROF_WINDOWS 3
#define COORDL__PROF_WINDOW_BATCHES 8

typedef struct coordl__profmode coordl__profmode_t;

/* Start profiling ld from max_threads down; the report goes to out.
 * Only the first loader of a process profiles: for the others this returns
 * NULL with *skipped = 1. Returns NULL with errno ENOMEM (*skipped = 0). */
coordl__profmode_t *coordl__profmode_create(coordl_loader_t *ld, int max_threads, const char *out,
                                            int *skipped);

/* At the entry of coordl_next(), before it takes the loader's lock: may
 * change the worker count. */
void coordl__profmode_enter(coordl__profmode_t *p, coordl_loader_t *ld);

/* When coordl_next() hands out a batch. */
void coordl__profmode_leave(coordl__profmode_t *p);

/* Write the report if the search did not finish, and free. Accepts NULL. */
void coordl__profmode_destroy(coordl__profmode_t *p);

/* In loader.c: the search ended; train on (see the top of this file),
 * `threads` being the count it started with. Called from the consumer
 * inside coordl_next(), without the loader's lock. */
void coordl__profile_done(coordl_loader_t *ld, int threads);

#endif
