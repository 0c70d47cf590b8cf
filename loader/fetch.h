/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fetch.h: the fetch engine of a loader over a remote dataset.
 *
 * One I/O thread per loader keeps many HTTP requests in flight (libcurl
 * multi interface) for the items the workers will need next, apart from
 * the worker threads that decode: ConcurrentDataloader's observation that
 * a batch fetched item by item waits once per item, and concurrently once
 * in all. The engine walks the epoch's order ahead of the workers
 * ("read-ahead"), skipping items the cache holds, and keeps at most a
 * window of requests in flight and twice as many items fetched but not
 * yet taken. The window follows Little's law: twice the items delivered
 * per second (the best of the last seconds) x the storage's latency (the
 * lowest seen lately, free of queueing), capped and overridable.
 *
 * A worker asks for the item at a position of the order (or for an
 * arbitrary item, a replacement) and waits until it has arrived; the
 * bytes change hands by swapping buffers, so nothing is copied and the
 * buffers' pages are touched once. Retries (timeouts, 408, 429, 5xx) back
 * off until the item's deadline; other failures are a corrupt item. Once
 * storage has failed every request (several of them) for a whole
 * deadline, requests fail at once for a second at a time, so that a dead
 * server ends a job quickly.
 *
 * Sample order, augmentation and resume do not depend on the engine: it
 * only decides when bytes arrive, never which.
 */
#ifndef COORDL_FETCH_H
#define COORDL_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"
#include "loader/cache.h"
#include "loader/source.h"

typedef struct coordl__fetch coordl__fetch_t;

/* A request for an item outside the order (a replacement). */
#define COORDL__NOPOS UINT64_MAX

typedef struct coordl__fetch_opts {
	int window;          /* 0 auto, -1 no read-ahead, N fixed (coordl_config_t.io_window) */
	int deadline_ms;     /* per item, retries included; 0 = default */
	uint64_t max_item;   /* bytes; 0 = default */
} coordl__fetch_opts_t;

/*
 * Start the engine for a remote source (coordl__source_remote(src) must
 * not be NULL). cache may be NULL. Returns NULL with errno and err.
 */
coordl__fetch_t *coordl__fetch_create(coordl__source_t *src, coordl__cache_t *cache,
				      const coordl__fetch_opts_t *o, coordl_error_t *err);

/* Stop the I/O thread and free everything. No worker may be inside
 * coordl__fetch_get(). Accepts NULL; preserves errno. */
void coordl__fetch_destroy(coordl__fetch_t *f);

/*
 * A new epoch or position: drop every request of the old order and read
 * ahead through order[base..n) (copied). No worker may be inside
 * coordl__fetch_get(). Resets the per-epoch statistics. Returns 0 or -1
 * (ENOMEM: the engine then reads nothing ahead, but still fetches).
 */
int coordl__fetch_restart(coordl__fetch_t *f, const uint64_t *order, size_t n, uint64_t base);

/*
 * The bytes of item idx, at position pos of the order (COORDL__NOPOS for
 * an item outside it): taken from the read-ahead, or fetched now. Swaps
 * the caller's buffer (*buf, *cap) with the engine's buffer; sets *len. Returns 0, or -1 with
 * errno and why (the item is corrupt: missing, refused, too large, or
 * still failing at its deadline).
 */
int coordl__fetch_get(coordl__fetch_t *f, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		      size_t *len, char *why, size_t whylen);

/* The item at pos will not be asked for (it was served by the cache):
 * drop what was read ahead for it. */
void coordl__fetch_forget(coordl__fetch_t *f, uint64_t pos);

/* Leave out of the read-ahead every item for which skip(arg, idx) says 1
 * (a peer node serves it, peer.h); a worker that asks for one anyway gets
 * it fetched on the spot. skip runs in the engine's thread and must not
 * block. Call before the first restart. */
void coordl__fetch_set_skip(coordl__fetch_t *f, int (*skip)(void *arg, size_t idx), void *arg);

/* Fill the remote fields of st (requests, retries, latency percentiles,
 * window, requests and bytes in flight). */
void coordl__fetch_stats(coordl__fetch_t *f, coordl_stats_t *st);

#endif
