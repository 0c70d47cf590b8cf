/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pipeline.t: corrupt and missing items are replaced deterministically and
 * counted; coordl_set_threads() works mid-epoch without changing the order;
 * SYNTHETIC and RAW modes; statistics counters; holding every buffer is an
 * error, not a hang; bad configurations are rejected naming the field.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordl.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define N 40

static char root[1024], list[1024];

static coordl_loader_t *make(const char *path, int mode, int threads, int bs)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = path;
	cfg.mode = mode;
	cfg.out_size = 16;
	cfg.batch_size = bs;
	cfg.threads = threads;
	cfg.cache_bytes = 0;
	cfg.seed = 7;
	if (!(ld = coordl_create(&cfg, &err)))
		diag("create: %s", err.text);
	return ld;
}

/* Corrupt some items of the ImageFolder and list a missing one. */
static void test_corrupt(void)
{
	char p[1200];
	uint64_t a[N], b[N];
	coordl_stats_t st;
	coordl_loader_t *ld, *l2;
	long n;
	int bad_seen = 0, sizes_ok = 1;
	coordl_batch_t *bt;
	/* Dataset order is c00/img0000..img0009, c01/..., so these are items 3, 14, 25. */
	const char *victims[] = { "c00/img0003.jpg", "c01/img0004.jpg", "c02/img0005.jpg" };
	const char junk[] = "this is not a JPEG file at all";

	snprintf(p, sizeof(p), "%s/%s", root, victims[0]);
	td_write_file(p, junk, sizeof(junk));
	snprintf(p, sizeof(p), "%s/%s", root, victims[1]);
	{
		/* Truncated: keep the first 40 bytes of a real JPEG. */
		char tmp[1200];
		FILE *f;
		char head[40];
		snprintf(tmp, sizeof(tmp), "%s/t.jpg", root);
		td_write_jpeg(tmp, 40, 40, 3);
		f = fopen(tmp, "rb");
		if (!f || fread(head, 1, sizeof(head), f) != sizeof(head))
			bail_out("cannot read back a test JPEG");
		fclose(f);
		remove(tmp);
		td_write_file(p, head, sizeof(head));
	}
	snprintf(p, sizeof(p), "%s/%s", root, victims[2]);
	td_write_file(p, "", 0);

	ld = make(root, COORDL_MODE_TRAIN, 2, 6);
	l2 = make(root, COORDL_MODE_TRAIN, 1, 6);
	if (!ld || !l2)
		bail_out("cannot create loaders");
	coordl_set_epoch(ld, 0, NULL);
	n = 0;
	while (coordl_next(ld, &bt, NULL) == 1) {
		if (bt->n != 6 && n + bt->n != N)
			sizes_ok = 0;
		for (int i = 0; i < bt->n; i++) {
			if (bt->indices[i] == 3 || bt->indices[i] == 14 || bt->indices[i] == 25)
				bad_seen++;
			a[n + i] = bt->indices[i];
		}
		n += bt->n;
		coordl_release(ld, bt);
	}
	is_int(n, N, "an epoch with corrupt items still delivers every sample");
	ok(sizes_ok, "batch sizes are kept");
	is_int(bad_seen, 0, "no corrupt item is delivered");
	coordl_get_stats(ld, &st);
	is_int(st.corrupt, 3, "three corrupt items counted this epoch");
	ok(coordl_last_corrupt(ld) && strstr(coordl_last_corrupt(ld), "img000"),
	   "last corrupt item named: %s", coordl_last_corrupt(ld) ? coordl_last_corrupt(ld) : "(none)");
	td_run_epoch(l2, 0, b, N, NULL, 0);
	ok(memcmp(a, b, sizeof(a)) == 0, "replacements are deterministic (1 vs 2 threads)");
	coordl_get_stats(l2, &st);
	is_int(st.total_corrupt, 3, "total corrupt counter");
	coordl_destroy(ld);
	coordl_destroy(l2);

	/* A file list naming a missing file. */
	snprintf(p, sizeof(p), "c00/img0000.jpg 0\nc00/gone.jpg 1\nc01/img0000.jpg 2\n");
	td_write_file(list, p, strlen(p));
	ld = make(list, COORDL_MODE_RAW, 1, 3);
	if (ld) {
		coordl_set_epoch(ld, 0, NULL);
		ok(coordl_next(ld, &bt, NULL) == 1 && bt->n == 3 && bt->replaced == 1,
		   "missing file replaced in RAW mode, batch->replaced = 1");
		coordl_release(ld, bt);
		ok(coordl_last_corrupt(ld) && strstr(coordl_last_corrupt(ld), "gone.jpg"),
		   "missing file reported: %s", coordl_last_corrupt(ld) ? coordl_last_corrupt(ld) : "");
	} else {
		skip(2, "no loader");
	}
	coordl_destroy(ld);

	/* Every item unreadable: a clear error, not a hang or a crash. */
	snprintf(p, sizeof(p), "gone1.jpg 0\ngone2.jpg 0\n");
	td_write_file(list, p, strlen(p));
	ld = make(list, COORDL_MODE_RAW, 2, 2);
	if (ld) {
		coordl_error_t err = { "" };
		coordl_set_epoch(ld, 0, NULL);
		ok(coordl_next(ld, &bt, &err) == -1 && strstr(err.text, "gone"),
		   "a dataset with no readable item fails with a message (%s)", err.text);
	} else {
		skip(1, "no loader");
	}
	coordl_destroy(ld);
}

static void test_set_threads(void)
{
	uint64_t ref[N], got[N];
	coordl_loader_t *ld = make(root, COORDL_MODE_TRAIN, 1, 4);
	coordl_batch_t *b;
	coordl_error_t err = { "" };
	coordl_stats_t st;
	long n = 0;
	int k = 0;

	if (!ld) {
		skip(5, "no loader");
		return;
	}
	td_run_epoch(ld, 5, ref, N, NULL, 0);
	coordl_set_epoch(ld, 5, NULL);
	while (coordl_next(ld, &b, NULL) == 1) {
		/* Sweep thread counts as the profiler does, one per batch. */
		static const int t[] = { 3, 1, 4, 2 };
		for (int i = 0; i < b->n; i++)
			got[n + i] = b->indices[i];
		n += b->n;
		coordl_release(ld, b);
		coordl_set_threads(ld, t[k++ % 4], NULL);
	}
	ok(n == N && memcmp(ref, got, sizeof(ref)) == 0,
	   "changing threads every batch keeps the order");
	/* 10 batches: the last setting was t[9 % 4] = 1. */
	is_int(coordl_get_threads(ld), 1, "get_threads reports the last setting");
	coordl_get_stats(ld, &st);
	is_int(st.threads, 1, "stats report the thread count");
	ok(coordl_set_threads(ld, 0, &err) == -1 && errno == EINVAL && strstr(err.text, "threads"),
	   "threads=0 rejected");
	ok(coordl_set_threads(ld, 1025, &err) == -1, "threads=1025 rejected");
	coordl_destroy(ld);
}

static void test_modes_and_stats(void)
{
	coordl_loader_t *ld = make(root, COORDL_MODE_SYNTHETIC, 2, 8);
	coordl_stats_t st;
	coordl_batch_t *b, *held[16];
	coordl_error_t err = { "" };
	int nh = 0, rc;

	if (!ld) {
		skip(10, "no loader");
		return;
	}
	is_int(td_run_epoch(ld, 0, NULL, 0, NULL, 0), N, "SYNTHETIC mode delivers an epoch");
	coordl_get_stats(ld, &st);
	ok(st.storage_bytes == 0 && st.cache_misses == 0 && st.fetch_time == 0,
	   "SYNTHETIC mode reads nothing from storage");
	ok(st.samples == N && st.batches == 5 && st.total_samples == N, "sample and batch counters");
	ok(st.epoch_wall > 0 && st.images_per_s > 0 && st.stall >= 0 && st.stall <= st.epoch_wall,
	   "wall, stall and rate are consistent");
	coordl_destroy(ld);

	ld = make(root, COORDL_MODE_RAW, 2, 4);
	is_int(td_run_epoch(ld, 0, NULL, 0, NULL, 0), N, "RAW mode delivers an epoch");
	coordl_get_stats(ld, &st);
	ok(st.storage_bytes == coordl_dataset_bytes(ld) && st.cache_misses == N,
	   "RAW mode without cache reads the whole dataset once (%llu bytes)",
	   (unsigned long long)st.storage_bytes);
	coordl_set_epoch(ld, 1, NULL);
	ok(coordl_next(ld, &b, NULL) == 1 && b->data_bytes == (size_t)b->n * 8 &&
	   ((uint64_t *)b->data)[0] > 0, "RAW batches carry the encoded sizes");
	held[nh++] = b;
	/* Hold every buffer: the next call must fail, not wait forever. */
	while (nh < 16 && (rc = coordl_next(ld, &b, &err)) == 1)
		held[nh++] = b;
	ok(nh == coordl_config(ld)->prefetch && errno == EBUSY,
	   "holding all %d buffers: coordl_next fails with EBUSY", nh);
	for (int i = 0; i < nh; i++)
		coordl_release(ld, held[i]);
	ok(coordl_next(ld, &b, &err) == 1, "after releasing, the epoch continues");
	coordl_release(ld, b);
	rc = coordl_to_device(ld, b, &err);
#ifdef HAVE_CUDA
	ok(rc == 0 || errno == ENOTSUP, "to_device copies or reports ENOTSUP without a device");
#else
	ok(rc == -1 && errno == ENOTSUP, "to_device is ENOTSUP without CUDA");
#endif
	coordl_destroy(ld);
}

static void test_bad_config(void)
{
	static const struct {
		const char *field;
		int which;
	} t[] = {
		{ "batch_size", 0 }, { "out_size", 1 }, { "layout", 2 }, { "mode", 3 },
		{ "rank", 4 }, { "prefetch", 5 }, { "scale", 6 }, { "ratio", 7 },
		{ "flip_prob", 8 }, { "std", 9 }, { "path", 10 }, { "cache_use", 11 },
		{ "max_item_bytes", 12 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		coordl_config_t cfg;
		coordl_error_t err = { "" };
		coordl_loader_t *ld;
		coordl_config_init(&cfg);
		cfg.path = root;
		switch (t[i].which) {
		case 0: cfg.batch_size = 0; break;
		case 1: cfg.out_size = 2; break;
		case 2: cfg.layout = 9; break;
		case 3: cfg.mode = -1; break;
		case 4: cfg.rank = 2; cfg.world_size = 2; break;
		case 5: cfg.prefetch = 1; break;
		case 6: cfg.scale_min = 0.9f; cfg.scale_max = 0.5f; break;
		case 7: cfg.ratio_min = 0; break;
		case 8: cfg.flip_prob = 2; break;
		case 9: cfg.std[1] = 0; break;
		case 10: cfg.path = NULL; break;
		case 11: cfg.cache_use = 3; break;
		case 12: cfg.max_item_bytes = -1; break;
		}
		errno = 0;
		ld = coordl_create(&cfg, &err);
		ok(!ld && errno == EINVAL && strstr(err.text, t[i].field), "bad %s rejected: %s",
		   t[i].field, err.text);
		coordl_destroy(ld);
	}
}

/* Issue 12: an item beyond max_item_bytes is never read whole: it counts as
 * corrupt, is replaced, and the report names it and the limit. */
static void test_issue12_item_limit(const char *dir)
{
	char p[1200], flist[1200];
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;
	coordl_stats_t st;
	char *big = calloc(1, 200000);

	snprintf(p, sizeof(p), "%s/big.jpg", dir);
	if (!big || td_write_file(p, big, 200000) < 0)
		bail_out("cannot write the big item");
	free(big);
	snprintf(flist, sizeof(flist), "%s/limit.txt", dir);
	snprintf(p, sizeof(p), "data/c00/img0000.jpg 0\nbig.jpg 1\ndata/c01/img0001.jpg 1\n");
	td_write_file(flist, p, strlen(p));
	coordl_config_init(&cfg);
	cfg.path = flist;
	cfg.out_size = 16;
	cfg.batch_size = 3;
	cfg.threads = 1;
	cfg.cache_bytes = 0;
	ld = coordl_create(&cfg, &err);
	ok(ld && coordl_config(ld)->max_item_bytes == 64LL << 20, "the default item limit is 64 MiB");
	coordl_destroy(ld);
	cfg.max_item_bytes = 100000;
	ld = coordl_create(&cfg, &err);
	if (!ld) {
		skip(2, "no loader");
		return;
	}
	ok(td_run_epoch(ld, 0, NULL, 0, NULL, 0) == 3 && coordl_get_stats(ld, &st) == 0 &&
	   st.corrupt == 1, "issue 12: an item beyond max_item_bytes is replaced and counted corrupt");
	ok(coordl_last_corrupt(ld) && strstr(coordl_last_corrupt(ld), "big.jpg") &&
	   strstr(coordl_last_corrupt(ld), "item limit of 100000"),
	   "the report names the item and the limit: %s",
	   coordl_last_corrupt(ld) ? coordl_last_corrupt(ld) : "(none)");
	coordl_destroy(ld);
}

int main(void)
{
	char *dir = td_tmpdir("pipeline");

	snprintf(root, sizeof(root), "%s/data", dir);
	snprintf(list, sizeof(list), "%s/data/list.txt", dir);
	if (td_imagefolder(root, 4, 10) < 0)
		bail_out("cannot write test data");
	test_set_threads();
	test_modes_and_stats();
	test_bad_config();
	test_corrupt();
	test_issue12_item_limit(dir);
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
