/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cache.c: the MinIO cache (see cache.h).
 *
 * Segment layout (version 3), offsets in bytes:
 *   0            header: geometry (written once by the creator), then the
 *                shared state (allocation offset, bound, counters, phase)
 *   4096         COORDL__CACHE_MAX_ATTACH slots of 64 bytes, one per
 *                attached loader: its operations in flight
 *   8192         index: one 16-byte entry per dataset item
 *   data_off     data area (64-aligned), data_cap bytes: the whole dataset
 *                plus slack, so that the cache can grow to any bound. Each
 *                item is stored as its bytes followed by an 8-byte trailer,
 *                coordl__cache_sum() of (index, bytes): a peer node that
 *                reads an item out of this segment over the network
 *                (peer.h), without taking part in the grace periods below,
 *                checks it to tell a consistent copy from bytes that were
 *                dropped or reused while it read them
 * The file is that long but sparse: memory is reserved (fallocate) only
 * for the header, for the index while the bound allows storing anything,
 * and for each item as it is stored; a store that finds the file system
 * full skips the item instead of faulting (SIGBUS) later.
 *
 * Trust: every process of the job (the same user) can write the segment, so
 * nothing read from it is trusted. The geometry is computed here from the
 * dataset and compared with the header once at attach, then only the
 * private copy is used; an entry's offset and length are checked against
 * the private capacity at every lookup; the allocation offset and bound are
 * clamped. A poisoned segment can give a wrong item (which decoding then
 * rejects), never an access outside the mapping.
 *
 * Insertion: an entry moves EMPTY -> FILLING by compare-and-swap (one
 * process wins), space is reserved by compare-and-swap on the allocation
 * offset, the bytes are copied, and the entry is published READY with a
 * release store. An entry's state word carries a generation in its upper
 * 30 bits, bumped whenever a READY item is dropped, so a reader can tell
 * that the item it looked at is gone.
 *
 * Bound changes. Raising the bound is one store. Lowering it must not
 * release bytes a reader in any process may still be decoding, nor let a
 * new item reuse them. Every lookup and insertion therefore runs as an
 * "operation" counted in its loader's slot, in one of two phase counters,
 * like a two-phase RCU: a shrink freezes allocation, flips the phase and
 * waits until the old phase's counters drain (every operation that could
 * have seen the old state is over), drops the items beyond the new bound
 * (those stored first stay: no churn), waits a second grace period for the
 * readers that found those items, punches the hole (or MADV_DONTNEED for a
 * private cache), and reopens allocation after the last kept item. A slot
 * whose loader died does not hold anything up: each attached loader holds
 * an open-file-description lock on the byte of the file that numbers its
 * slot, and a slot nobody locks is ignored (and reused by the next
 * attacher). An operation that stays longer than GRACE_MAX (a long decode,
 * a stopped process) is not waited for: the items beyond the bound are
 * still dropped (done() tells their readers to refetch), but nothing is
 * released or reused and the segment is marked dirty, until a later
 * change (the grant follower retries every 100 ms) finds everyone gone.
 *
 * Attachment is reference-counted with flock(2) on the segment: every
 * attached loader holds a shared lock, and whoever can take the exclusive
 * lock is alone. Locks die with their process, so a segment left by a
 * crashed job is recognised as unused and reinitialised. Attach, detach and
 * bound changes are serialised by an exclusive lock on a sibling lock file,
 * re-checked against the path after locking because the last detacher
 * unlinks it. Both files are opened with O_NOFOLLOW (created with O_EXCL)
 * and used only when they are regular files of this user, mode 0600, with
 * one link.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loader/cache.h"
#include "loader/util.h"

#define CACHE_MAGIC 0x636f6f72646c4d32ULL /* "coordlM2" */
#define CACHE_VERSION 3

#define SLOT_OFF 4096
#define HDR_BYTES COORDL__CACHE_HEADER_BYTES
#define NSLOTS COORDL__CACHE_MAX_ATTACH

/* The longest a bound change waits for one grace period, in seconds. */
#define GRACE_MAX 0.04

/* After the file system refused room for an item, no store is tried for
 * this long (in ns) by this loader, unless the bound changes. */
#define NOSPACE_BACKOFF_NS 1000000000ULL

enum { ENTRY_EMPTY = 0, ENTRY_FILLING = 1, ENTRY_READY = 2 };
#define STATE_MASK 3u
#define STATE_GEN 4u /* the generation's unit in the state word */

#define ALLOC_FROZEN (1ULL << 63)
#define ALLOC_USED (ALLOC_FROZEN - 1)

struct header {
	uint64_t magic;      /* written last: a half-initialised segment is invalid */
	uint32_t version;
	uint32_t header_size;
	uint64_t seg_size;
	uint64_t nitems;
	uint64_t signature;
	uint64_t data_off;
	uint64_t data_cap;
	uint64_t granule;    /* the file system's allocation unit (huge pages on tmpfs) */
	/* Shared state (atomics), never trusted: clamped or checked at use. */
	uint64_t alloc;      /* data bytes handed out, | ALLOC_FROZEN during a shrink */
	uint64_t bound;      /* the bound in bytes */
	uint64_t stored;     /* encoded bytes of READY items */
	uint64_t items;      /* READY items */
	uint64_t shrinks, grows;
	uint32_t phase;      /* grace-period phase, bit 0 */
	uint32_t dirty;      /* a shrink could not wait for every reader */
};

struct slot {
	uint64_t ops[2];     /* operations in flight, per phase */
	uint8_t pad[48];
};

struct entry {
	uint64_t off;
	uint32_t len;
	uint32_t state;      /* generation << 2 | ENTRY_* */
};

_Static_assert(sizeof(struct header) <= SLOT_OFF, "header fits before the slots");
_Static_assert(SLOT_OFF + NSLOTS * sizeof(struct slot) <= HDR_BYTES, "slots fit in the header");
_Static_assert(sizeof(struct entry) == 16, "entry is 16 bytes");
_Static_assert(sizeof(struct entry) == COORDL__CACHE_ENTRY_BYTES, "the peer layout matches");

struct coordl__cache {
	uint8_t *base;       /* mapping (or image) of seg_size bytes; NULL: stores nothing */
	struct header *hdr;
	struct slot *slots, *me;
	int nslots;          /* slots to wait for: NSLOTS shared, 1 private */
	int slot_idx;
	struct entry *ent;
	uint8_t *data;
	/* Geometry, computed from the dataset and checked against the header
	 * once at attach; the header's copy is never read again. */
	uint64_t nitems, data_off, data_cap, seg_size;
	uint64_t granule;    /* memory is taken in these units: a page, or a huge
	                        page on a tmpfs mounted with huge pages */
	uint64_t hp_end;     /* private: transparent huge pages allowed below */
	uint64_t init_bound;
	int fd;              /* named segment, else -1 */
	int image;           /* works on a caller's memory image */
	char *path, *lock_path, *name;
	pthread_mutex_t mu;  /* serialises bound changes of a private cache */
	uint64_t nospace_until; /* atomic: CLOCK_MONOTONIC ns */
};

static uint64_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (uint64_t)p : 4096;
}

static uint64_t page_down(uint64_t x) { return x & ~(page_size() - 1); }
static uint64_t page_up(uint64_t x) { return page_down(x + page_size() - 1); }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The segment's geometry for a dataset. 0, or -1 when it cannot be mapped. */
static int geometry(coordl__cache_t *c, size_t nitems, uint64_t dataset_bytes)
{
	uint64_t slack, cap, end;

	if ((uint64_t)nitems > (1ULL << 40) || dataset_bytes > (1ULL << 56))
		return -1;
	c->nitems = nitems;
	c->data_off = (HDR_BYTES + (uint64_t)nitems * sizeof(struct entry) + 63) & ~(uint64_t)63;
	/* Room for the whole dataset and for items that grew since the scan. */
	slack = dataset_bytes / 16 + (64ULL << 10);
	cap = dataset_bytes + slack;
	end = page_up(c->data_off + cap);
	if (end > SIZE_MAX / 2 || end > (uint64_t)INT64_MAX / 2)
		return -1;
	c->data_cap = end - c->data_off;
	c->seg_size = end;
	return 0;
}

/* Data bytes a bound allows: whole allocation units of header, index and
 * data (the unit is a page, or a huge page where the file system takes
 * memory in those: a bound that is not a multiple cannot be met exactly). */
static uint64_t limit_of(const coordl__cache_t *c, uint64_t bound)
{
	uint64_t b = bound & ~(c->granule - 1);

	if (b <= c->data_off)
		return 0;
	b -= c->data_off;
	return b < c->data_cap ? b : c->data_cap;
}

static uint64_t cur_limit(const coordl__cache_t *c)
{
	return limit_of(c, __atomic_load_n(&c->hdr->bound, __ATOMIC_ACQUIRE));
}

static void set_views(coordl__cache_t *c)
{
	c->hdr = (struct header *)c->base;
	c->slots = (struct slot *)(c->base + SLOT_OFF);
	c->ent = (struct entry *)(c->base + HDR_BYTES);
	c->data = c->base + c->data_off;
}

static void init_header(coordl__cache_t *c, uint64_t bound, uint64_t signature)
{
	struct header *h = c->hdr;

	/* A fresh file or anonymous mapping reads as zero: every entry is
	 * EMPTY and every slot idle. */
	h->version = CACHE_VERSION;
	h->header_size = sizeof(*h);
	h->seg_size = c->seg_size;
	h->nitems = c->nitems;
	h->signature = signature;
	h->data_off = c->data_off;
	h->data_cap = c->data_cap;
	h->granule = c->granule;
	__atomic_store_n(&h->bound, bound, __ATOMIC_RELAXED);
	__atomic_store_n(&h->magic, CACHE_MAGIC, __ATOMIC_RELEASE);
}

/* Does the header describe exactly the segment this loader computed? The
 * allocation unit, which only the creator could measure, is taken from it
 * when it is a power of two from a page to 1 GiB. */
static int header_matches(coordl__cache_t *c, uint64_t signature)
{
	const struct header *h = c->hdr;
	uint64_t g;

	if (!(__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == CACHE_MAGIC &&
	      h->version == CACHE_VERSION && h->header_size == sizeof(*h) &&
	      h->seg_size == c->seg_size && h->nitems == c->nitems &&
	      h->signature == signature && h->data_off == c->data_off &&
	      h->data_cap == c->data_cap))
		return 0;
	g = h->granule;
	if (g < page_size() || g > (1ULL << 30) || (g & (g - 1)))
		return 0;
	c->granule = g;
	return 1;
}

/*
 * A private cache lets transparent huge pages back only the part of its
 * mapping below the current limit, rounded down to a huge page: a huge
 * page faulted in across the limit would hold memory beyond the bound.
 * Called when the limit changes (before a raise is visible, at the start
 * of a lowering).
 */
static void hp_advise(coordl__cache_t *c, uint64_t lim)
{
	const uint64_t huge = 2ULL << 20;
	uint64_t end = (c->data_off + lim) & ~(huge - 1);

	if (c->fd >= 0 || c->image || end == c->hp_end)
		return;
	if (end > c->hp_end)
		madvise(c->base + c->hp_end, end - c->hp_end, MADV_HUGEPAGE);
	else
		madvise(c->base + end, c->hp_end - end, MADV_NOHUGEPAGE);
	c->hp_end = end;
}

/* ---- operations and grace periods ---- */

static unsigned op_enter(coordl__cache_t *c)
{
	for (;;) {
		unsigned p = __atomic_load_n(&c->hdr->phase, __ATOMIC_SEQ_CST) & 1;
		__atomic_add_fetch(&c->me->ops[p], 1, __ATOMIC_SEQ_CST);
		/* The flip may have come between the load and the increment:
		 * then the shrinker may not wait for this counter. */
		if ((__atomic_load_n(&c->hdr->phase, __ATOMIC_SEQ_CST) & 1) == p)
			return p;
		__atomic_sub_fetch(&c->me->ops[p], 1, __ATOMIC_RELEASE);
	}
}

static void op_leave(coordl__cache_t *c, unsigned p)
{
	__atomic_sub_fetch(&c->me->ops[p & 1], 1, __ATOMIC_RELEASE);
}

/* Is slot k held by a live loader (of another open file description)? */
static int slot_alive(const coordl__cache_t *c, int k)
{
	/* When it cannot be told: held (waited for, up to the deadline). */
	return c->fd >= 0 && coordl__byte_held(c->fd, k);
}

/* Flip the phase and wait until no operation of the old phase is left.
 * 0, or -1 when a live loader kept one open past GRACE_MAX. */
static int grace(coordl__cache_t *c)
{
	unsigned old = __atomic_load_n(&c->hdr->phase, __ATOMIC_SEQ_CST) & 1;
	double deadline = coordl__now() + GRACE_MAX;

	__atomic_store_n(&c->hdr->phase, old ^ 1, __ATOMIC_SEQ_CST);
	for (int k = 0; k < c->nslots; k++) {
		struct slot *s = &c->slots[k];
		while (__atomic_load_n(&s->ops[old], __ATOMIC_SEQ_CST) != 0) {
			struct timespec ts = { 0, 100000 };
			if (s != c->me && !slot_alive(c, k))
				break;
			if (coordl__now() > deadline)
				return -1;
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/* Give the memory of [page_up(off), seg_size) back. */
static void release_from(coordl__cache_t *c, uint64_t off)
{
	off = page_up(off);
	if (off >= c->seg_size)
		return;
	if (c->image)
		memset(c->base + off, 0, c->seg_size - off);
	else if (c->fd >= 0)
		fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			  (off_t)(c->seg_size - off));
	else
		madvise(c->base + off, c->seg_size - off, MADV_DONTNEED);
}

/* ---- files ---- */

static void free_cache(coordl__cache_t *c)
{
	free(c->path);
	free(c->lock_path);
	free(c->name);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Claim a slot nobody holds: lock its byte (an open file description lock,
 * gone with the process) and clear its counters. Under the global lock. */
static int claim_slot(coordl__cache_t *c)
{
	for (int k = 0; k < NSLOTS; k++) {
		if (slot_alive(c, k) || coordl__byte_lock(c->fd, k, F_WRLCK) < 0)
			continue;
		c->slot_idx = k;
		c->me = &c->slots[k];
		__atomic_store_n(&c->me->ops[0], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->me->ops[1], 0, __ATOMIC_RELAXED);
		return 0;
	}
	errno = EBUSY;
	return -1;
}

static int attach_named(coordl__cache_t *c, const char *name, const char *dir, uint64_t bound,
			uint64_t signature, coordl_error_t *err)
{
	int lfd = -1, rv = -1, e, created = 0;
	char why[128];
	struct stat st;

	c->path = coordl__path_printf("%s/coordl-%u-%s.cache", dir, (unsigned)geteuid(), name);
	c->lock_path = coordl__path_printf("%s/coordl-%u-%s.lock", dir, (unsigned)geteuid(), name);
	/* What was allocated is freed with c by the caller. */
	if (!c->path || !c->lock_path)
		return coordl__errprintf(err, ENOMEM, "out of memory");
	if ((lfd = coordl__private_lock(c->lock_path, why, sizeof(why))) < 0) {
		coordl__errprintf(err, errno, "cache '%s': lock file %s: %s", name, c->lock_path, why);
		goto out;
	}
	if ((c->fd = coordl__private_open(c->path, why, sizeof(why))) < 0) {
		coordl__errprintf(err, errno, "cache '%s': %s: %s", name, c->path, why);
		goto out;
	}
	if (flock(c->fd, LOCK_EX | LOCK_NB) == 0) {
		/* Nobody is attached: a new segment, or one left by a crashed
		 * job. Either way start from an empty, zeroed, sparse one. */
		uint64_t need;
		created = 1;
		if (ftruncate(c->fd, 0) < 0 || ftruncate(c->fd, (off_t)c->seg_size) < 0) {
			coordl__errprintf(err, errno, "cache '%s': size %s to %llu bytes: %s", name,
					  c->path, (unsigned long long)c->seg_size, strerror(errno));
			goto out_unlink;
		}
		/* The file system's allocation unit: reserve one page and see
		 * what it took (a whole huge page on a tmpfs mounted with
		 * huge=always or within_size). */
		if ((e = posix_fallocate(c->fd, 0, (off_t)page_size())) != 0) {
			coordl__errprintf(err, e, "cache '%s': reserve %llu bytes in %s: %s", name,
					  (unsigned long long)page_size(), c->path, strerror(e));
			goto out_unlink;
		}
		if (fstat(c->fd, &st) == 0 && (uint64_t)st.st_blocks * 512 > page_size()) {
			uint64_t got = (uint64_t)st.st_blocks * 512;
			while (c->granule < got && c->granule < (1ULL << 30))
				c->granule <<= 1;
		}
		need = limit_of(c, bound) > 0 ? c->data_off : HDR_BYTES;
		/* Reserve the header and index now: a store into a tmpfs
		 * mapping that finds the file system full would kill the
		 * process with SIGBUS. Items reserve their own room. */
		if ((e = posix_fallocate(c->fd, 0, (off_t)need)) != 0) {
			coordl__errprintf(err, e, "cache '%s': reserve %llu bytes in %s: %s", name,
					  (unsigned long long)need, c->path, strerror(e));
			goto out_unlink;
		}
		c->base = mmap(NULL, c->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (c->base == MAP_FAILED) {
			c->base = NULL;
			coordl__errprintf(err, errno, "cache '%s': mmap: %s", name, strerror(errno));
			goto out_unlink;
		}
		set_views(c);
		init_header(c, bound, signature);
	} else if (errno == EWOULDBLOCK) {
		if (flock(c->fd, LOCK_SH) < 0 || fstat(c->fd, &st) < 0) {
			coordl__errprintf(err, errno, "cache '%s': %s: %s", name, c->path, strerror(errno));
			goto out;
		}
		if ((uint64_t)st.st_size != c->seg_size) {
			coordl__errprintf(err, EBUSY, "cache '%s' is in use for another dataset or version",
					  name);
			goto out;
		}
		c->base = mmap(NULL, c->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (c->base == MAP_FAILED) {
			c->base = NULL;
			coordl__errprintf(err, errno, "cache '%s': mmap: %s", name, strerror(errno));
			goto out;
		}
		set_views(c);
		if (!header_matches(c, signature)) {
			coordl__errprintf(err, EBUSY, "cache '%s' is in use for another dataset or version",
					  name);
			goto out;
		}
	} else {
		coordl__errprintf(err, errno, "cache '%s': flock: %s", name, strerror(errno));
		goto out;
	}
	c->nslots = NSLOTS;
	if (claim_slot(c) < 0) {
		coordl__errprintf(err, EBUSY, "cache '%s' has %d loaders attached already", name, NSLOTS);
		goto out;
	}
	/* Hold a shared lock for as long as we are attached: conversion from
	 * exclusive is not atomic, but attachers are serialised by lfd. */
	if (flock(c->fd, LOCK_SH) < 0) {
		coordl__errprintf(err, errno, "cache '%s': flock: %s", name, strerror(errno));
		goto out;
	}
	rv = 0;
	goto out;
out_unlink:
	e = errno;
	unlink(c->path);
	errno = e;
out:
	if (rv < 0) {
		e = errno;
		if (c->base)
			munmap(c->base, c->seg_size);
		c->base = NULL;
		if (c->fd >= 0) {
			/* A segment this call made and nobody else uses goes. */
			if (created && flock(c->fd, LOCK_EX | LOCK_NB) == 0)
				unlink(c->path);
			close(c->fd);
		}
		c->fd = -1;
		errno = e;
	}
	if (lfd >= 0)
		close(lfd);
	return rv;
}

static coordl__cache_t *new_cache(uint64_t bound)
{
	coordl__cache_t *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = -1;
	c->granule = page_size();
	c->init_bound = bound;
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

coordl__cache_t *coordl__cache_attach(const char *name, const char *dir, uint64_t bound,
				      size_t nitems, uint64_t dataset_bytes, uint64_t signature,
				      coordl_error_t *err)
{
	coordl__cache_t *c = new_cache(bound);

	if (!c) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	if (geometry(c, nitems, dataset_bytes) < 0)
		return c; /* too large to map: a cache that stores nothing */
	if (name) {
		if (!(c->name = strdup(name)) ||
		    attach_named(c, name, dir ? dir : "/dev/shm", bound, signature, err) < 0) {
			int e = c->name ? errno : ENOMEM;
			if (!c->name)
				coordl__errprintf(err, ENOMEM, "out of memory");
			free_cache(c);
			errno = e;
			return NULL;
		}
		return c;
	}
	c->base = mmap(NULL, c->seg_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->base == MAP_FAILED) {
		int e = errno;
		coordl__errprintf(err, e, "cache: mmap of %llu bytes: %s",
				  (unsigned long long)c->seg_size, strerror(e));
		c->base = NULL;
		free_cache(c);
		errno = e;
		return NULL;
	}
	/* Huge pages make filling the cache fault 512x less often; memory
	 * is still only taken as items are stored, and never beyond the
	 * bound (hp_advise). */
	madvise(c->base, c->seg_size, MADV_NOHUGEPAGE);
	set_views(c);
	init_header(c, bound, signature);
	hp_advise(c, limit_of(c, bound));
	c->nslots = 1;
	c->me = &c->slots[0];
	return c;
}

size_t coordl__cache_image_size(size_t nitems, uint64_t dataset_bytes)
{
	coordl__cache_t c;

	memset(&c, 0, sizeof(c));
	return geometry(&c, nitems, dataset_bytes) < 0 ? 0 : (size_t)c.seg_size;
}

coordl__cache_t *coordl__cache_image(void *image, size_t len, int create, uint64_t bound,
				     size_t nitems, uint64_t dataset_bytes, uint64_t signature,
				     coordl_error_t *err)
{
	coordl__cache_t *c = new_cache(bound);

	if (!c) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	if (!image || geometry(c, nitems, dataset_bytes) < 0 || (uint64_t)len != c->seg_size) {
		free_cache(c);
		coordl__errprintf(err, EINVAL, "cache image: %zu bytes, not the size of a segment for %zu items",
				  len, nitems);
		return NULL;
	}
	c->base = image;
	c->image = 1;
	set_views(c);
	if (create) {
		memset(c->base, 0, c->data_off);
		init_header(c, bound, signature);
	} else if (!header_matches(c, signature)) {
		free_cache(c);
		coordl__errprintf(err, EBUSY, "cache image is for another dataset or version");
		return NULL;
	}
	c->nslots = 1;
	c->me = &c->slots[0];
	__atomic_store_n(&c->me->ops[0], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->me->ops[1], 0, __ATOMIC_RELAXED);
	return c;
}

void coordl__cache_detach(coordl__cache_t *c)
{
	int e = errno;

	if (!c)
		return;
	if (c->base && !c->image)
		munmap(c->base, c->seg_size);
	if (c->fd >= 0) {
		char why[128];
		int lfd = coordl__private_lock(c->lock_path, why, sizeof(why));
		flock(c->fd, LOCK_UN);
		if (flock(c->fd, LOCK_EX | LOCK_NB) == 0) {
			/* Last one out: remove the segment and the lock file. */
			unlink(c->path);
			unlink(c->lock_path);
		}
		close(c->fd);
		if (lfd >= 0)
			close(lfd);
	}
	free_cache(c);
	errno = e;
}

/* ---- lookups and insertions ---- */

const uint8_t *coordl__cache_get(coordl__cache_t *c, size_t i, size_t *len,
				 coordl__cache_ticket_t *ticket)
{
	struct entry *e;
	uint64_t off, l;
	uint32_t st;
	unsigned p;

	if (!c || !c->base || i >= c->nitems)
		return NULL;
	p = op_enter(c);
	/* With no room for data the index may be released: never touch it. */
	if (cur_limit(c) == 0)
		goto miss;
	e = &c->ent[i];
	st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
	if ((st & STATE_MASK) != ENTRY_READY)
		goto miss;
	off = __atomic_load_n(&e->off, __ATOMIC_RELAXED);
	l = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
	if (l == 0 || off > c->data_cap || l > c->data_cap - off)
		goto miss; /* a poisoned entry */
	ticket->i = i;
	ticket->state = st;
	ticket->phase = p;
	*len = (size_t)l;
	return c->data + off;
miss:
	op_leave(c, p);
	return NULL;
}

int coordl__cache_done(coordl__cache_t *c, const coordl__cache_ticket_t *ticket)
{
	uint32_t st;

	/* The bytes cannot have changed while this operation was counted
	 * (a change waits for it, or releases nothing): only a drop, which
	 * bumped the generation, can have happened. */
	st = __atomic_load_n(&c->ent[ticket->i].state, __ATOMIC_SEQ_CST);
	op_leave(c, ticket->phase);
	return st == ticket->state;
}

int coordl__cache_put(coordl__cache_t *c, size_t i, const uint8_t *data, size_t len)
{
	struct entry *e;
	uint64_t lim, a, used, until, room, sum;
	uint32_t st;
	unsigned p;
	int rv = 0;

	/* An empty item is not worth an entry (and has no bytes to copy). */
	if (!c || !c->base || i >= c->nitems || len == 0 || len > UINT32_MAX)
		return 0;
	until = __atomic_load_n(&c->nospace_until, __ATOMIC_RELAXED);
	if (until && now_ns() < until)
		return 0;
	p = op_enter(c);
	if ((lim = cur_limit(c)) == 0)
		goto out;
	e = &c->ent[i];
	st = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
	if ((st & STATE_MASK) != ENTRY_EMPTY)
		goto out;
	if (!__atomic_compare_exchange_n(&e->state, &st, st | ENTRY_FILLING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		goto out;
	room = (uint64_t)len + COORDL__CACHE_TRAILER;
	a = __atomic_load_n(&c->hdr->alloc, __ATOMIC_ACQUIRE);
	do {
		used = a & ALLOC_USED;
		/* Frozen by a shrink, or full for this item: never evict.
		 * Another, smaller item may still fit. */
		if ((a & ALLOC_FROZEN) || used > lim || room > lim - used)
			goto undo;
	} while (!__atomic_compare_exchange_n(&c->hdr->alloc, &a, a + room, 1, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	if (c->fd >= 0 && posix_fallocate(c->fd, (off_t)(c->data_off + used), (off_t)room) != 0) {
		uint64_t mine = a + room;
		/* No room in the file system: skip the item rather than
		 * fault later, hand the space back if nobody took more
		 * since, and stop trying for a while. */
		__atomic_compare_exchange_n(&c->hdr->alloc, &mine, a, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		__atomic_store_n(&c->nospace_until, now_ns() + NOSPACE_BACKOFF_NS, __ATOMIC_RELAXED);
		goto undo;
	}
	memcpy(c->data + used, data, len);
	sum = coordl__cache_sum(i, data, len);
	memcpy(c->data + used + len, &sum, sizeof(sum));
	__atomic_store_n(&e->off, used, __ATOMIC_RELAXED);
	__atomic_store_n(&e->len, (uint32_t)len, __ATOMIC_RELAXED);
	__atomic_store_n(&e->state, st | ENTRY_READY, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->hdr->items, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->hdr->stored, len, __ATOMIC_RELAXED);
	rv = 1;
	goto out;
undo:
	__atomic_store_n(&e->state, st, __ATOMIC_RELEASE);
out:
	op_leave(c, p);
	return rv;
}

/* ---- bound changes ---- */

/*
 * Lower the bound (or finish a shrink that could not wait for a reader):
 * see the top of the file. scan: the index may hold items (it is not
 * released). Called with the bound lock held.
 */
static void shrink_locked(coordl__cache_t *c, uint64_t bound, int scan)
{
	uint64_t lim = limit_of(c, bound), kept_end = 0, kept_items = 0, kept_bytes = 0, a;
	int clean;

	__atomic_store_n(&c->hdr->bound, bound, __ATOMIC_SEQ_CST);
	a = __atomic_load_n(&c->hdr->alloc, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&c->hdr->alloc, &a, a | ALLOC_FROZEN, 1, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED))
		;
	/* Every insertion that could have reserved space is over. */
	clean = grace(c) == 0;
	if (scan) {
		for (uint64_t i = 0; i < c->nitems; i++) {
			struct entry *e = &c->ent[i];
			uint32_t st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
			uint64_t off, l;
			if ((st & STATE_MASK) != ENTRY_READY)
				continue;
			off = __atomic_load_n(&e->off, __ATOMIC_RELAXED);
			l = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
			if (l != 0 && off <= lim && l + COORDL__CACHE_TRAILER <= lim - off) {
				uint64_t end = off + l + COORDL__CACHE_TRAILER;
				kept_end = end > kept_end ? end : kept_end;
				kept_items++;
				kept_bytes += l;
				continue;
			}
			/* Beyond the new bound (or poisoned): drop it, with a
			 * new generation so that its readers can tell. */
			__atomic_compare_exchange_n(&e->state, &st, (st & ~STATE_MASK) + STATE_GEN, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&c->hdr->items, kept_items, __ATOMIC_RELAXED);
	__atomic_store_n(&c->hdr->stored, kept_bytes, __ATOMIC_RELAXED);
	/* Every reader that found a dropped item is done with it. */
	if (grace(c) < 0)
		clean = 0;
	/* Release only when every operation is known to be over. A writer
	 * that outlived a grace period may still publish an item beyond the
	 * bound, with its bytes, after the scan: releasing them would let a
	 * reader take zeros for that item. So a dirty pass releases nothing
	 * (the next change, at the latest the grant follower's next look,
	 * does) and reuses nothing. With no room for data the index goes too. */
	if (clean)
		release_from(c, lim == 0 ? HDR_BYTES : c->data_off + kept_end);
	/* Reopen allocation after the last kept item, unless a reader or
	 * writer may still be using the space beyond it: then nothing is
	 * reused until a later change finds everyone gone. */
	a = __atomic_load_n(&c->hdr->alloc, __ATOMIC_RELAXED) & ALLOC_USED;
	__atomic_store_n(&c->hdr->alloc, clean ? kept_end : a, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->hdr->dirty, clean ? 0 : 1, __ATOMIC_RELAXED);
}

int coordl__cache_set_bound(coordl__cache_t *c, uint64_t bound)
{
	uint64_t old, old_lim, lim;
	int lfd = -1, rv = -1, dirty;
	char why[128];

	if (!c || !c->base) {
		errno = EINVAL;
		return -1;
	}
	/* The common case, looked at every 100 ms: nothing to do. */
	if (__atomic_load_n(&c->hdr->bound, __ATOMIC_ACQUIRE) == bound &&
	    !__atomic_load_n(&c->hdr->dirty, __ATOMIC_RELAXED))
		return 0;
	if (c->fd >= 0) {
		if ((lfd = coordl__private_lock(c->lock_path, why, sizeof(why))) < 0)
			return -1;
	} else {
		pthread_mutex_lock(&c->mu);
	}
	old = __atomic_load_n(&c->hdr->bound, __ATOMIC_ACQUIRE);
	dirty = __atomic_load_n(&c->hdr->dirty, __ATOMIC_RELAXED) != 0;
	old_lim = limit_of(c, old);
	lim = limit_of(c, bound);
	/* Room for the index again if it was released (before any loader
	 * can see a bound that lets it touch the index). */
	if (old_lim == 0 && lim > 0 && c->fd >= 0 &&
	    (errno = posix_fallocate(c->fd, HDR_BYTES, (off_t)(c->data_off - HDR_BYTES))) != 0)
		goto out;
	if (lim >= old_lim && !dirty) {
		hp_advise(c, lim);
		__atomic_store_n(&c->hdr->bound, bound, __ATOMIC_RELEASE);
	} else {
		hp_advise(c, lim < old_lim ? lim : old_lim);
		/* The index holds items unless the last clean change released
		 * it (a dirty one never does: a late writer may have published
		 * an item since, which this pass must see). */
		shrink_locked(c, bound, old_lim > 0 || dirty);
		hp_advise(c, lim);
	}
	if (bound < old)
		__atomic_add_fetch(&c->hdr->shrinks, 1, __ATOMIC_RELAXED);
	else if (bound > old)
		__atomic_add_fetch(&c->hdr->grows, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->nospace_until, 0, __ATOMIC_RELAXED);
	rv = 0;
out:
	if (lfd >= 0)
		close(lfd);
	else if (c->fd < 0)
		pthread_mutex_unlock(&c->mu);
	return rv;
}

/* ---- counters ---- */

uint64_t coordl__cache_used(const coordl__cache_t *c)
{
	return c && c->base ? __atomic_load_n(&c->hdr->stored, __ATOMIC_RELAXED) : 0;
}

uint64_t coordl__cache_items(const coordl__cache_t *c)
{
	return c && c->base ? __atomic_load_n(&c->hdr->items, __ATOMIC_RELAXED) : 0;
}

uint64_t coordl__cache_capacity(const coordl__cache_t *c)
{
	return c && c->base ? cur_limit(c) : 0;
}

uint64_t coordl__cache_bound(const coordl__cache_t *c)
{
	if (!c)
		return 0;
	return c->base ? __atomic_load_n(&c->hdr->bound, __ATOMIC_RELAXED) : c->init_bound;
}

uint64_t coordl__cache_shrinks(const coordl__cache_t *c)
{
	return c && c->base ? __atomic_load_n(&c->hdr->shrinks, __ATOMIC_RELAXED) : 0;
}

uint64_t coordl__cache_grows(const coordl__cache_t *c)
{
	return c && c->base ? __atomic_load_n(&c->hdr->grows, __ATOMIC_RELAXED) : 0;
}

const char *coordl__cache_path(const coordl__cache_t *c) { return c ? c->path : NULL; }

const uint8_t *coordl__cache_mapping(const coordl__cache_t *c, size_t *len)
{
	if (!c || !c->base)
		return NULL;
	*len = (size_t)c->seg_size;
	return c->base;
}

/* ---- what peer nodes read (peer.h) ---- */

uint64_t coordl__cache_sum(uint64_t i, const uint8_t *p, size_t len)
{
	/* Four independent lanes of multiply-rotate mixing over 32-byte
	 * blocks keep this at several GB/s; the splitmix64 finaliser
	 * spreads every input bit over the result. Not cryptographic: it
	 * tells a consistent copy of an item from torn or reused bytes. */
	const uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xc2b2ae3d27d4eb4fULL;
	uint64_t h[4] = { i ^ k1, (uint64_t)len ^ k2, i * k2 + 1, (uint64_t)len * k1 + 2 };
	size_t n = 0;

	for (; n + 32 <= len; n += 32) {
		for (int l = 0; l < 4; l++) {
			uint64_t w;
			memcpy(&w, p + n + 8 * (size_t)l, 8);
			h[l] ^= w * k1;
			h[l] = ((h[l] << 31) | (h[l] >> 33)) * k2;
		}
	}
	for (; n < len; n++) {
		h[n & 3] ^= (uint64_t)p[n] * k1;
		h[n & 3] = ((h[n & 3] << 31) | (h[n & 3] >> 33)) * k2;
	}
	uint64_t x = h[0] ^ ((h[1] << 17) | (h[1] >> 47)) ^ ((h[2] << 29) | (h[2] >> 35)) ^
		     ((h[3] << 43) | (h[3] >> 21));
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

int coordl__cache_layout(const coordl__cache_t *c, coordl__cache_layout_t *out)
{
	if (!c || !c->base || !out) {
		errno = EINVAL;
		return -1;
	}
	out->base = c->base;
	out->seg_size = c->seg_size;
	out->index_off = HDR_BYTES;
	out->data_off = c->data_off;
	out->data_cap = c->data_cap;
	out->nitems = c->nitems;
	return 0;
}

int coordl__cache_entry_ready(const void *raw, uint64_t data_cap, uint64_t *off, uint32_t *len)
{
	struct entry e;

	memcpy(&e, raw, sizeof(e));
	if ((e.state & STATE_MASK) != ENTRY_READY || e.len == 0 || e.off > data_cap ||
	    (uint64_t)e.len + COORDL__CACHE_TRAILER > data_cap - e.off)
		return 0;
	*off = e.off;
	*len = e.len;
	return 1;
}
