/*
 * cache.h: the MinIO cache of libcoordl.
 *
 * Holds encoded items, fills until full and never evicts: with a new random
 * order every epoch, any item is as likely to be needed next as any other,
 * so keeping whatever was cached first gives exactly cache/dataset hits per
 * epoch, which LRU (the page cache) does not.
 *
 * A named cache is one segment (POSIX shared memory, or a file in a
 * directory such as SYNERGY_CACHE_DIR on tmpfs) that every loader of the job
 * on the node attaches to, so ranks share one copy of each item. The whole
 * segment (header, index, data) never exceeds the byte bound. An unnamed
 * cache is private to the loader. Lookups and insertions are lock-free and
 * safe across threads and processes.
 */
#ifndef COORDL_CACHE_H
#define COORDL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"

typedef struct coordl__cache coordl__cache_t;

/*
 * Attach to (or create) a cache of at most `bound` bytes for a dataset of
 * nitems items with the given signature. name NULL makes a private cache;
 * dir NULL puts a named cache in POSIX shared memory. A segment left by a
 * crashed job (no process attached) is reinitialised. Returns NULL with
 * errno (EBUSY: the name is in use for another dataset or bound) and err.
 * A bound too small for the index gives a cache that stores nothing.
 */
coordl__cache_t *coordl__cache_attach(const char *name, const char *dir, uint64_t bound,
				      size_t nitems, uint64_t signature, coordl_error_t *err);

/* Detach; the last process to detach removes the segment. Accepts NULL;
 * preserves errno. */
void coordl__cache_detach(coordl__cache_t *c);

/* The cached bytes of item i (valid until detach), or NULL on a miss. */
const uint8_t *coordl__cache_get(coordl__cache_t *c, size_t i, size_t *len);

/* Store item i. Returns 1 when stored, 0 when it is already stored, being
 * stored by another loader, or does not fit (the cache never evicts). */
int coordl__cache_put(coordl__cache_t *c, size_t i, const uint8_t *data, size_t len);

/* Encoded bytes and items stored, the data capacity and the bound. */
uint64_t coordl__cache_used(const coordl__cache_t *c);
uint64_t coordl__cache_items(const coordl__cache_t *c);
uint64_t coordl__cache_capacity(const coordl__cache_t *c);
uint64_t coordl__cache_bound(const coordl__cache_t *c);

/* Filesystem path of a named segment (under /dev/shm for POSIX shm), else NULL. */
const char *coordl__cache_path(const coordl__cache_t *c);

#endif
