/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cache.h: the MinIO cache of libcoordl.
 *
 * Holds encoded items, fills until full and never evicts: with a new random
 * order every epoch, any item is as likely to be needed next as any other,
 * so keeping whatever was cached first gives exactly cache/dataset hits per
 * epoch, which LRU (the page cache) does not.
 *
 * A named cache is one segment (a file in a directory such as
 * SYNERGY_CACHE_DIR on tmpfs, or in /dev/shm) that every loader of the job
 * on the node attaches to, so ranks share one copy of each item. Its name
 * carries the user's uid, and a segment that is not a regular file of this
 * user with mode 0600 and one link is never used. An unnamed cache is
 * private to the loader. Lookups and insertions are lock-free and safe
 * across threads and processes.
 *
 * The bound (bytes of memory the cache may occupy: header, index and data)
 * can change while loaders run (coordl__cache_set_bound): lowering it drops
 * the items stored beyond the new bound and gives their memory back to the
 * system; raising it lets the cache fill further. Memory is only taken as
 * items are stored, so the segment is as long as the largest cache the
 * dataset could use but occupies only what is stored. For a shared segment
 * the bound lives in the segment: any process may change it, all follow.
 */
#ifndef COORDL_CACHE_H
#define COORDL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"

typedef struct coordl__cache coordl__cache_t;

/* Memory a segment occupies whatever its bound: its header and the table of
 * attached loaders (two pages of 4 KiB; a whole page where pages are larger). */
#define COORDL__CACHE_HEADER_BYTES 8192

/* Loaders that can be attached to one shared segment at once. */
#define COORDL__CACHE_MAX_ATTACH 64

/*
 * Attach to (or create) a cache for a dataset of nitems items, dataset_bytes
 * encoded bytes and the given signature, bounded by `bound` bytes. name
 * NULL makes a private cache; dir NULL puts a named cache in /dev/shm. The
 * segment is coordl-<uid>-<name>.cache in that directory. A segment left by
 * a crashed job (no process attached) is reinitialised. A live segment
 * keeps its own bound: a later attacher adopts it. Returns NULL with errno
 * and err naming the cache: EBUSY (in use for another dataset or version,
 * or by COORDL__CACHE_MAX_ATTACH loaders), EPERM (the segment or its lock
 * file is not a regular file of this user with mode 0600 and one link: not
 * touched), ENOSPC (no room for the header and index), others from the
 * system. A bound too small for the index gives a cache that stores
 * nothing until it is raised.
 */
coordl__cache_t *coordl__cache_attach(const char *name, const char *dir, uint64_t bound,
				      size_t nitems, uint64_t dataset_bytes, uint64_t signature,
				      coordl_error_t *err);

/* Detach; the last process to detach removes the segment. Accepts NULL;
 * preserves errno. */
void coordl__cache_detach(coordl__cache_t *c);

/*
 * A lookup. On a hit, returns the cached bytes of item i and sets *len and
 * *ticket; the bytes stay in place (no bound change can release them) until
 * coordl__cache_done(c, ticket), which every hit must be followed by. NULL
 * on a miss (no done() then).
 */
typedef struct coordl__cache_ticket {
	uint64_t i;
	uint32_t state;
	uint32_t phase;
} coordl__cache_ticket_t;

const uint8_t *coordl__cache_get(coordl__cache_t *c, size_t i, size_t *len,
				 coordl__cache_ticket_t *ticket);

/* End a hit. Returns 1 when the item was stored all along, 0 when it was
 * dropped meanwhile (only possible when a bound change could not wait for
 * this reader: then use of the bytes must be redone from storage). */
int coordl__cache_done(coordl__cache_t *c, const coordl__cache_ticket_t *ticket);

/* Store item i (its bytes and an 8-byte checksum trailer, see below).
 * Returns 1 when stored, 0 when it is already stored, being stored by
 * another loader, or does not fit under the bound (the cache never evicts)
 * or in the file system. Never fails otherwise. */
int coordl__cache_put(coordl__cache_t *c, size_t i, const uint8_t *data, size_t len);

/*
 * Change the bound. Lowering it drops every item stored beyond the new
 * bound (those stored first stay: no churn), waits until no loader can be
 * reading the dropped bytes, and releases their memory (hole punched in
 * the segment, or MADV_DONTNEED for a private cache): when this returns,
 * the segment occupies at most max(bound, COORDL__CACHE_HEADER_BYTES).
 * Raising it lets the cache fill up to the new bound. Serialised with
 * attach, detach and other changes. Returns 0, or -1 with errno (EINVAL
 * for a cache that stores nothing and cannot grow). A loader that stays
 * inside one lookup or insertion for longer than 40 ms (a long decode, a
 * stopped process) does not hold the change up: the items are dropped at
 * once (its done() then reports the drop), but their memory is released
 * only by a later call (with any bound) once no such loader is left.
 */
int coordl__cache_set_bound(coordl__cache_t *c, uint64_t bound);

/* Encoded bytes and items stored, the most data the segment can hold, the
 * current bound, and the bound changes applied to it so far (by any
 * process attached to the segment). */
uint64_t coordl__cache_used(const coordl__cache_t *c);
uint64_t coordl__cache_items(const coordl__cache_t *c);
uint64_t coordl__cache_capacity(const coordl__cache_t *c);
uint64_t coordl__cache_bound(const coordl__cache_t *c);
uint64_t coordl__cache_shrinks(const coordl__cache_t *c);
uint64_t coordl__cache_grows(const coordl__cache_t *c);

/*
 * What a peer node needs to read items out of this cache over the network
 * (peer.h): where the segment is mapped, its length, and where the index
 * (COORDL__CACHE_ENTRY_BYTES per item, item i at index_off + i * that)
 * and the data area start. An entry read this way is decoded with
 * coordl__cache_entry_ready(); the item's bytes lie at data_off + off and
 * are followed by a COORDL__CACHE_TRAILER-byte trailer holding
 * coordl__cache_sum(i, bytes, len) (host byte order: peers of one job run
 * on one architecture). A reader that takes no part in the cache's grace
 * periods must check the trailer: the item may have been dropped and its
 * room reused while it read.
 */
#define COORDL__CACHE_ENTRY_BYTES 16
#define COORDL__CACHE_TRAILER 8

typedef struct coordl__cache_layout {
	uint8_t *base;
	uint64_t seg_size, index_off, data_off, data_cap, nitems;
} coordl__cache_layout_t;

/* Fill out for a cache that can store anything. 0, or -1 (EINVAL). */
int coordl__cache_layout(const coordl__cache_t *c, coordl__cache_layout_t *out);

/* Decode a raw index entry (COORDL__CACHE_ENTRY_BYTES read from a
 * segment): 1 and *off, *len when it is a stored item whose bytes and
 * trailer lie within data_cap, else 0. Never trusts the entry. */
int coordl__cache_entry_ready(const void *raw, uint64_t data_cap, uint64_t *off, uint32_t *len);

/* The trailer's checksum of item i's bytes. */
uint64_t coordl__cache_sum(uint64_t i, const uint8_t *p, size_t len);

/* Filesystem path of a named segment, else NULL. */
const char *coordl__cache_path(const coordl__cache_t *c);

/* The mapping and its length (for tests that check where lookups point
 * and what is resident), or NULL. */
const uint8_t *coordl__cache_mapping(const coordl__cache_t *c, size_t *len);

/*
 * Segment images in memory, for the fuzz target: the length of a segment
 * for (nitems, dataset_bytes); lay out a new segment in image[0..len) as
 * a creator would; attach to an existing image as a later process would
 * (validating its header). The cache then works on the caller's memory
 * (released bytes are zeroed) and must be detached before it is freed.
 */
size_t coordl__cache_image_size(size_t nitems, uint64_t dataset_bytes);
coordl__cache_t *coordl__cache_image(void *image, size_t len, int create, uint64_t bound,
				     size_t nitems, uint64_t dataset_bytes, uint64_t signature,
				     coordl_error_t *err);

#endif
