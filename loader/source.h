/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * source.h: dataset sources of libcoordl and the fetch interface.
 *
 * A source is the list of items of a dataset (label, encoded size, where the
 * bytes live) built once at open: an ImageFolder tree, a file list, or a
 * shard set packed by coordl-pack. Every read of item bytes goes through
 * coordl__source_fetch(), a small per-backend vtable, so that a slow-storage
 * emulation or an object store can sit behind it later without touching the
 * pipeline. Fetch is thread-safe: workers call it concurrently.
 */
#ifndef COORDL_SOURCE_H
#define COORDL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"

typedef struct coordl__source coordl__source_t;

/* The shard index format written by coordl-pack and read here. */
#define COORDL__INDEX_MAGIC "coordl-index 1"

/*
 * Open a dataset. kind is an enum coordl_source_kind (AUTO: a directory is
 * an ImageFolder, a path ending in .cdx a shard index, anything else a file
 * list). Returns NULL with errno (ENOENT, EINVAL for a malformed list or
 * index, ENOMEM) and err naming the path and line.
 */
coordl__source_t *coordl__source_open(const char *path, int kind, coordl_error_t *err);

/* Close the source. Accepts NULL; preserves errno. */
void coordl__source_destroy(coordl__source_t *src);

/* Items, total encoded bytes (sizes seen at open), number of classes. */
size_t coordl__source_count(const coordl__source_t *src);
uint64_t coordl__source_bytes(const coordl__source_t *src);
int coordl__source_classes(const coordl__source_t *src);
/* Class name of label l (ImageFolder and shards; "" for file lists). */
const char *coordl__source_class_name(const coordl__source_t *src, int l);
/* The kind that was actually opened (never AUTO). */
int coordl__source_kind(const coordl__source_t *src);

/* Label, size at open, and display name (path relative to the dataset) of item i. */
int32_t coordl__source_label(const coordl__source_t *src, size_t i);
uint64_t coordl__source_item_size(const coordl__source_t *src, size_t i);
const char *coordl__source_item_name(const coordl__source_t *src, size_t i);

/* The largest item fetch reads (0: no limit, the default). A larger item
 * fails to fetch, its size and the limit in why. Call before fetching. */
void coordl__source_set_max_item(coordl__source_t *src, uint64_t max_bytes);

/*
 * Read the encoded bytes of item i into *buf (capacity *cap, grown with
 * realloc when too small: callers keep one buffer per thread, so this
 * allocates only until the largest item was seen). Sets *len. Returns 0, or
 * -1 with errno and a short reason in why when the item cannot be read
 * (missing, unreadable, not a regular file, larger than the item limit,
 * shorter than indexed). Never blocks on a FIFO or a device. Never touches
 * shared state.
 */
int coordl__source_fetch(coordl__source_t *src, size_t i, uint8_t **buf, size_t *cap,
			 size_t *len, char *why, size_t whylen);

/* A stable 64-bit signature of the item list (sizes and labels), used to
 * check that a shared cache belongs to the same dataset. */
uint64_t coordl__source_signature(const coordl__source_t *src);

/* ---- For other backends (remote.c) ------------------------------------- */

typedef struct coordl__remote coordl__remote_t;

/* An empty source of the given kind whose names are relative to root
 * (for a remote one, a URL). NULL on ENOMEM. */
coordl__source_t *coordl__source_new(int kind, const char *root);
/* Append a class name / an item; 0 or -1 (ENOMEM). */
int coordl__source_add_class(coordl__source_t *s, const char *name);
int coordl__source_add_item(coordl__source_t *s, const char *name, int32_t label, uint64_t size,
			    uint32_t shard, uint64_t offset);
/* Hand the source to a remote backend (freed with the source);
 * nclasses >= 0 sets the class count (file lists). */
void coordl__source_set_remote(coordl__source_t *s, coordl__remote_t *r, int nclasses);
/* The remote backend, or NULL for a local dataset. */
coordl__remote_t *coordl__source_remote(const coordl__source_t *s);
/* The directory (or base URL) item names are relative to. */
const char *coordl__source_root(const coordl__source_t *s);
/* Shard number and offset of item i (shard sources; 0 otherwise). */
uint32_t coordl__source_item_shard(const coordl__source_t *s, size_t i);
uint64_t coordl__source_item_offset(const coordl__source_t *s, size_t i);

#endif
