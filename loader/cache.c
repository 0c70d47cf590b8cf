/*
 * cache.c: the MinIO cache (see cache.h).
 *
 * Segment layout: a header, an index entry per dataset item, then the data
 * area. An item is inserted by moving its entry EMPTY -> FILLING with a
 * compare-and-swap (only one process wins, so no item is stored twice),
 * reserving space by compare-and-swap on the header's `used`, copying, and
 * publishing the entry as READY with a release store. Nothing is ever
 * removed, so a reader that saw READY may use the bytes without a lock. A
 * process that dies while FILLING leaves that one item uncached, which
 * costs hits but never correctness.
 *
 * Attachment is reference-counted with flock(2) on the segment: every
 * attached loader holds a shared lock, and whoever can take the exclusive
 * lock is alone. Locks die with their process, so a segment left by a
 * crashed job is recognised as unused and reinitialised. Attach and detach
 * are serialised by an exclusive lock on a sibling lock file, re-checked
 * against the path after locking because the last detacher unlinks it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "util.h"

#define CACHE_MAGIC 0x636f6f72646c4d31ULL /* "coordlM1" */
#define CACHE_VERSION 1

enum { ENTRY_EMPTY = 0, ENTRY_FILLING = 1, ENTRY_READY = 2 };

struct header {
	uint64_t magic;      /* written last: a half-initialised segment is invalid */
	uint32_t version;
	uint32_t header_size;
	uint64_t seg_size;
	uint64_t nitems;
	uint64_t signature;
	uint64_t data_off;
	uint64_t data_cap;
	uint64_t used;       /* atomic: bytes of the data area handed out */
	uint64_t items;      /* atomic: READY entries */
};

struct entry {
	uint64_t off;
	uint32_t len;
	uint32_t state;      /* atomic */
};

struct coordl__cache {
	uint8_t *base;       /* mapping, NULL for a cache that stores nothing */
	size_t map_len;
	struct header *hdr;
	struct entry *ent;
	uint8_t *data;
	uint64_t bound;
	int fd;              /* segment (named caches), else -1 */
	char *path;          /* segment path */
	char *lock_path;
	int shm;             /* 1: POSIX shm names, 0: files in a directory */
	char *shm_name, *shm_lock_name;
};

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

/* Bytes of header + index, rounded to 64 for aligned data. */
static uint64_t overhead(size_t nitems)
{
	uint64_t o = sizeof(struct header) + (uint64_t)nitems * sizeof(struct entry);
	return (o + 63) & ~(uint64_t)63;
}

static void init_header(coordl__cache_t *c, size_t nitems, uint64_t signature)
{
	struct header *h = c->hdr;

	memset(h, 0, sizeof(*h));
	h->version = CACHE_VERSION;
	h->header_size = sizeof(*h);
	h->seg_size = c->map_len;
	h->nitems = nitems;
	h->signature = signature;
	h->data_off = overhead(nitems);
	h->data_cap = c->map_len - h->data_off;
	/* A fresh mapping of a truncated file is zero, so every entry is
	 * EMPTY; a private anonymous mapping is zero as well. */
	__atomic_store_n(&h->magic, CACHE_MAGIC, __ATOMIC_RELEASE);
}

static void set_views(coordl__cache_t *c)
{
	c->hdr = (struct header *)c->base;
	c->ent = (struct entry *)(c->base + sizeof(struct header));
	c->data = c->base + overhead(c->hdr->nitems);
}

static int open_seg(coordl__cache_t *c, int lock)
{
	if (c->shm)
		return shm_open(lock ? c->shm_lock_name : c->shm_name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	return open(lock ? c->lock_path : c->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

/* Take the attach/detach lock; returns its fd or -1. */
static int global_lock(coordl__cache_t *c)
{
	for (;;) {
		struct stat a, b;
		int fd = open_seg(c, 1);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX) < 0) {
			int e = errno;
			close(fd);
			if (e == EINTR)
				continue;
			errno = e;
			return -1;
		}
		/* The last detacher unlinks the lock file while holding it; a
		 * lock on an unlinked file protects nothing, so retry. */
		if (fstat(fd, &a) == 0 && stat(c->lock_path, &b) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
}

static void free_cache(coordl__cache_t *c)
{
	free(c->path);
	free(c->lock_path);
	free(c->shm_name);
	free(c->shm_lock_name);
	free(c);
}

/* A formatted string, or NULL when out of memory (asprintf leaves its
 * pointer undefined then). */
static char *path_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static int attach_named(coordl__cache_t *c, const char *name, const char *dir, size_t nitems,
			uint64_t signature, coordl_error_t *err)
{
	int lfd = -1, rv = -1, e;
	struct stat st;

	if (dir) {
		c->path = path_printf("%s/coordl-%s.cache", dir, name);
		c->lock_path = path_printf("%s/coordl-%s.lock", dir, name);
	} else {
		c->shm = 1;
		c->shm_name = path_printf("/coordl-%s", name);
		c->shm_lock_name = path_printf("/coordl-%s.lock", name);
		c->path = path_printf("/dev/shm/coordl-%s", name);
		c->lock_path = path_printf("/dev/shm/coordl-%s.lock", name);
	}
	/* What was allocated is freed with c by the caller. */
	if (!c->path || !c->lock_path || (c->shm && (!c->shm_name || !c->shm_lock_name)))
		return coordl__errprintf(err, ENOMEM, "out of memory");
	if ((lfd = global_lock(c)) < 0) {
		coordl__errprintf(err, errno, "cache '%s': lock %s: %s", name, c->lock_path,
				  strerror(errno));
		goto out;
	}
	if ((c->fd = open_seg(c, 0)) < 0) {
		coordl__errprintf(err, errno, "cache '%s': %s: %s", name, c->path, strerror(errno));
		goto out;
	}
	if (flock(c->fd, LOCK_EX | LOCK_NB) == 0) {
		/* Nobody is attached: a new segment, or one left by a crashed
		 * job. Either way start from an empty, zeroed one. */
		if (ftruncate(c->fd, 0) < 0) {
			coordl__errprintf(err, errno, "cache '%s': truncate %s: %s", name, c->path,
					  strerror(errno));
			goto out_unlink;
		}
		/* Size the file by reserving its space now (zero-filled): a
		 * store into a tmpfs mapping that finds the filesystem full
		 * would kill the process with SIGBUS. */
		if ((e = posix_fallocate(c->fd, 0, (off_t)c->map_len)) != 0) {
			coordl__errprintf(err, e, "cache '%s': reserve %zu bytes in %s: %s", name,
					  c->map_len, c->path, strerror(e));
			goto out_unlink;
		}
		c->base = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (c->base == MAP_FAILED) {
			c->base = NULL;
			coordl__errprintf(err, errno, "cache '%s': mmap: %s", name, strerror(errno));
			goto out_unlink;
		}
		c->hdr = (struct header *)c->base;
		init_header(c, nitems, signature);
	} else if (errno == EWOULDBLOCK) {
		const struct header *h;
		if (flock(c->fd, LOCK_SH) < 0 || fstat(c->fd, &st) < 0) {
			coordl__errprintf(err, errno, "cache '%s': %s: %s", name, c->path, strerror(errno));
			goto out;
		}
		if ((uint64_t)st.st_size != c->map_len) {
			coordl__errprintf(err, EBUSY,
					  "cache '%s' is in use with a different size (%lld bytes, want %zu)",
					  name, (long long)st.st_size, c->map_len);
			goto out;
		}
		c->base = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (c->base == MAP_FAILED) {
			c->base = NULL;
			coordl__errprintf(err, errno, "cache '%s': mmap: %s", name, strerror(errno));
			goto out;
		}
		h = (const struct header *)c->base;
		if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != CACHE_MAGIC ||
		    h->version != CACHE_VERSION || h->header_size != sizeof(*h) ||
		    h->seg_size != c->map_len || h->nitems != nitems || h->signature != signature ||
		    h->data_off != overhead(nitems) || h->data_cap != c->map_len - h->data_off) {
			coordl__errprintf(err, EBUSY,
					  "cache '%s' is in use for another dataset or version", name);
			goto out;
		}
	} else {
		coordl__errprintf(err, errno, "cache '%s': flock: %s", name, strerror(errno));
		goto out;
	}
	/* Hold a shared lock for as long as we are attached: conversion from
	 * exclusive is not atomic, but attachers are serialised by lfd. */
	if (flock(c->fd, LOCK_SH) < 0) {
		coordl__errprintf(err, errno, "cache '%s': flock: %s", name, strerror(errno));
		goto out;
	}
	set_views(c);
	rv = 0;
	goto out;
out_unlink:
	e = errno;
	if (c->shm)
		shm_unlink(c->shm_name);
	else
		unlink(c->path);
	errno = e;
out:
	if (rv < 0) {
		e = errno;
		if (c->base)
			munmap(c->base, c->map_len);
		c->base = NULL;
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		errno = e;
	}
	if (lfd >= 0)
		close(lfd);
	return rv;
}

coordl__cache_t *coordl__cache_attach(const char *name, const char *dir, uint64_t bound,
				      size_t nitems, uint64_t signature, coordl_error_t *err)
{
	coordl__cache_t *c = calloc(1, sizeof(*c));
	uint64_t seg;

	if (!c) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->bound = bound;
	/* Whole pages only, so the memory the segment can occupy is within
	 * the bound too, not only its length. */
	seg = bound & ~(uint64_t)(page_size() - 1);
	if (seg > SIZE_MAX / 2)
		seg = 0;
	if (seg <= overhead(nitems))
		return c; /* too small to hold anything: a cache that stores nothing */
	c->map_len = (size_t)seg;
	if (name) {
		if (attach_named(c, name, dir, nitems, signature, err) < 0) {
			int e = errno;
			free_cache(c);
			errno = e;
			return NULL;
		}
		return c;
	}
	c->base = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->base == MAP_FAILED) {
		int e = errno;
		coordl__errprintf(err, e, "cache: mmap of %zu bytes: %s", c->map_len, strerror(e));
		free_cache(c);
		errno = e;
		return NULL;
	}
	/* Huge pages make filling the cache fault 512x less often; the
	 * mapping, and so the memory, still ends within the bound. */
	madvise(c->base, c->map_len, MADV_HUGEPAGE);
	c->hdr = (struct header *)c->base;
	init_header(c, nitems, signature);
	set_views(c);
	return c;
}

void coordl__cache_detach(coordl__cache_t *c)
{
	int e = errno;

	if (!c)
		return;
	if (c->base)
		munmap(c->base, c->map_len);
	if (c->fd >= 0) {
		int lfd = global_lock(c);
		flock(c->fd, LOCK_UN);
		if (flock(c->fd, LOCK_EX | LOCK_NB) == 0) {
			/* Last one out: remove the segment and the lock file. */
			if (c->shm) {
				shm_unlink(c->shm_name);
				shm_unlink(c->shm_lock_name);
			} else {
				unlink(c->path);
				unlink(c->lock_path);
			}
		}
		close(c->fd);
		if (lfd >= 0)
			close(lfd);
	}
	free_cache(c);
	errno = e;
}

const uint8_t *coordl__cache_get(coordl__cache_t *c, size_t i, size_t *len)
{
	struct entry *e;

	if (!c || !c->base || i >= c->hdr->nitems)
		return NULL;
	e = &c->ent[i];
	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != ENTRY_READY)
		return NULL;
	*len = e->len;
	return c->data + e->off;
}

int coordl__cache_put(coordl__cache_t *c, size_t i, const uint8_t *data, size_t len)
{
	struct entry *e;
	uint32_t expect = ENTRY_EMPTY;
	uint64_t used;

	/* An empty item is not worth an entry (and has no bytes to copy). */
	if (!c || !c->base || i >= c->hdr->nitems || len == 0 || len > UINT32_MAX)
		return 0;
	e = &c->ent[i];
	if (__atomic_load_n(&e->state, __ATOMIC_RELAXED) != ENTRY_EMPTY)
		return 0;
	if (!__atomic_compare_exchange_n(&e->state, &expect, ENTRY_FILLING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return 0;
	used = __atomic_load_n(&c->hdr->used, __ATOMIC_RELAXED);
	do {
		if (len > c->hdr->data_cap - used) {
			/* Full for this item: never evict. Another, smaller
			 * item may still fit, and this one may be retried. */
			__atomic_store_n(&e->state, ENTRY_EMPTY, __ATOMIC_RELEASE);
			return 0;
		}
	} while (!__atomic_compare_exchange_n(&c->hdr->used, &used, used + len, 1, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	memcpy(c->data + used, data, len);
	e->off = used;
	e->len = (uint32_t)len;
	__atomic_store_n(&e->state, ENTRY_READY, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->hdr->items, 1, __ATOMIC_RELAXED);
	return 1;
}

uint64_t coordl__cache_used(const coordl__cache_t *c)
{
	return c && c->base ? __atomic_load_n(&c->hdr->used, __ATOMIC_RELAXED) : 0;
}

uint64_t coordl__cache_items(const coordl__cache_t *c)
{
	return c && c->base ? __atomic_load_n(&c->hdr->items, __ATOMIC_RELAXED) : 0;
}

uint64_t coordl__cache_capacity(const coordl__cache_t *c)
{
	return c && c->base ? c->hdr->data_cap : 0;
}

uint64_t coordl__cache_bound(const coordl__cache_t *c) { return c ? c->bound : 0; }

const char *coordl__cache_path(const coordl__cache_t *c) { return c ? c->path : NULL; }
