/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * minio.t: the MinIO property. With a cache of C bytes over a dataset of D
 * bytes, the first epoch reads D from storage and fills the cache; every
 * later epoch reads exactly D - (bytes cached) and hits exactly the cached
 * items, whatever the order. The cache never exceeds its bound, and it
 * changes neither the order nor the pixels.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordl.h"
#include "loader/cache.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define NCLS 5
#define NPER 12
#define N (NCLS * NPER)

static char root[1024];

static coordl_loader_t *make(int mode, int threads, int64_t cache)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.mode = mode;
	cfg.out_size = 16;
	cfg.batch_size = 7;
	cfg.threads = threads;
	cfg.cache_bytes = cache;
	if (!(ld = coordl_create(&cfg, &err)))
		diag("create: %s", err.text);
	return ld;
}

static void run(uint64_t total, double frac, int threads)
{
	/* Index of N entries (16 bytes each) plus header, and a page less
	 * one for the rounding down to whole pages: add them so that the
	 * data area is about frac of the dataset. */
	int64_t bound = (int64_t)(frac * (double)total) + COORDL__CACHE_HEADER_BYTES + N * 16 + 4095;
	coordl_loader_t *ld = make(COORDL_MODE_RAW, threads, bound);
	coordl_stats_t st;
	uint64_t used, items;
	int good = 1;

	if (!ld) {
		skip(4, "no loader");
		return;
	}
	td_run_epoch(ld, 0, NULL, 0, NULL, 0);
	coordl_get_stats(ld, &st);
	ok(st.storage_bytes == total && st.cache_misses == N,
	   "cache %.0f%%, %d threads: epoch 0 reads the dataset (%llu of %llu bytes)", frac * 100,
	   threads, (unsigned long long)st.storage_bytes, (unsigned long long)total);
	used = st.cache_bytes_used;
	items = 0;
	ok(used <= (uint64_t)bound && st.cache_bytes_limit == (uint64_t)bound,
	   "cache %.0f%%: %llu bytes used within the bound %lld", frac * 100,
	   (unsigned long long)used, (long long)bound);
	for (uint64_t e = 1; e <= 3; e++) {
		td_run_epoch(ld, e, NULL, 0, NULL, 0);
		coordl_get_stats(ld, &st);
		if (e == 1)
			items = st.cache_hits;
		if (st.storage_bytes != total - used || st.cache_hits != items ||
		    st.cache_hits + st.cache_misses != N || st.cache_bytes_used != used) {
			diag("epoch %llu: storage %llu, want %llu; hits %llu misses %llu",
			     (unsigned long long)e, (unsigned long long)st.storage_bytes,
			     (unsigned long long)(total - used), (unsigned long long)st.cache_hits,
			     (unsigned long long)st.cache_misses);
			good = 0;
		}
	}
	ok(good, "cache %.0f%%: epochs 1-3 read exactly dataset - cached bytes (%llu), hits constant (%llu)",
	   frac * 100, (unsigned long long)(total - used), (unsigned long long)items);
	if (frac >= 1.0)
		ok(used == total && items == N, "a cache as large as the dataset holds all of it");
	else
		ok(used > 0 && used < total && used + 1024 > (uint64_t)(frac * (double)total) - 2048,
		   "the cache fills to about its size (%llu bytes)", (unsigned long long)used);
	coordl_destroy(ld);
}

/* Cache on or off must not change order or pixels. */
static void test_same_output(void)
{
	size_t sb = 16 * 16 * 3 * sizeof(float);
	uint8_t *a = calloc(N, sb), *b = calloc(N, sb);
	uint64_t ia[N], ib[N];
	coordl_loader_t *l0 = make(COORDL_MODE_TRAIN, 2, 0), *l1 = make(COORDL_MODE_TRAIN, 2, 1 << 20);

	td_run_epoch(l1, 0, NULL, 0, NULL, 0); /* warm the cache */
	td_run_epoch(l0, 1, ia, N, a, N * sb);
	td_run_epoch(l1, 1, ib, N, b, N * sb);
	ok(memcmp(ia, ib, sizeof(ia)) == 0 && memcmp(a, b, N * sb) == 0,
	   "decoding from the cache gives the same order and pixels as from storage");
	coordl_destroy(l0);
	coordl_destroy(l1);
	free(a);
	free(b);
}

int main(void)
{
	char *dir = td_tmpdir("minio");
	long long total;

	snprintf(root, sizeof(root), "%s/data", dir);
	if ((total = td_imagefolder(root, NCLS, NPER)) < 0)
		bail_out("cannot write test data");
	run((uint64_t)total, 0.25, 1);
	run((uint64_t)total, 0.5, 3);
	run((uint64_t)total, 1.0, 2);
	test_same_output();
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
