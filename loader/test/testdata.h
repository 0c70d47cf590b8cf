/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * testdata.h: tiny datasets for the loader's unit tests.
 *
 * The tests write their own inputs with libjpeg (small gradient images with
 * a per-file pattern) into a fresh temporary directory, so they depend on no
 * generator tool and no checked-in binaries, and they remove it afterwards.
 */
#ifndef COORDL_TESTDATA_H
#define COORDL_TESTDATA_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"

/* A new empty directory under $TMPDIR (or /tmp); malloc'd path. Bails out on failure. */
char *td_tmpdir(const char *tag);

/* Remove a directory tree (best effort). */
void td_rmrf(const char *path);

/* Write a w x h RGB baseline JPEG whose content depends on seed. 0 / -1. */
int td_write_jpeg(const char *path, int w, int h, unsigned seed);

/* Write `len` bytes of data to path. 0 / -1. */
int td_write_file(const char *path, const void *data, size_t len);

/*
 * ImageFolder under root: ncls classes "c00".."cNN", nper JPEGs each named
 * "img0000.jpg".. (sizes vary slightly with the index). Returns the total
 * number of bytes written, or -1.
 */
long long td_imagefolder(const char *root, int ncls, int nper);

/* Monotonic time in seconds. */
double td_now(void);

/* Size of a file in bytes, or -1. */
long long td_file_size(const char *path);

/* Memory or disk a file occupies (st_blocks * 512), or -1. */
long long td_file_blocks(const char *path);

/* The same summed over the files directly in dir, or -1. */
long long td_dir_blocks(const char *dir);

/*
 * Run one epoch of ld (after coordl_set_epoch(epoch)) and append every
 * delivered dataset index to idx (capacity cap; may be NULL). If data is not
 * NULL, the batch payloads are concatenated there (capacity data_cap).
 * Returns the number of samples, or -1 on a loader error (diagnosed).
 */
long td_run_epoch(coordl_loader_t *ld, uint64_t epoch, uint64_t *idx, size_t cap,
		  void *data, size_t data_cap);

#endif
