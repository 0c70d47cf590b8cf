/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * order.t: sample order. The same (seed, epoch) gives the same indices and
 * the same pixels with 1, 2 or 4 threads; epochs differ; shards of a world
 * are disjoint, equal in length and cover the dataset (padding by wrapping,
 * as PyTorch's DistributedSampler); a saved mid-epoch state resumes with
 * exactly the remaining samples; drop_last and partial last batches. A
 * ring left to the loader follows its worker count from one epoch to the
 * next: the batch buffers of a shallower ring go back to the system, and
 * the output does not change.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordl.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define NCLS 4
#define NPER 13
#define N (NCLS * NPER) /* 52: not a multiple of 3 or of the batch sizes used */

static char root[1024];

static coordl_loader_t *make(int mode, int threads, int bs, int rank, int world, int drop_last)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.mode = mode;
	cfg.out_size = 16;
	cfg.batch_size = bs;
	cfg.threads = threads;
	cfg.cache_bytes = 0;
	cfg.seed = 1234;
	cfg.rank = rank;
	cfg.world_size = world;
	cfg.drop_last = drop_last;
	if (!(ld = coordl_create(&cfg, &err)))
		diag("create: %s", err.text);
	return ld;
}

static void test_threads_same(void)
{
	static const int tc[] = { 1, 2, 4 };
	uint64_t idx[3][N];
	size_t sb = 16 * 16 * 3 * sizeof(float);
	uint8_t *data[3];
	long n[3];

	for (int t = 0; t < 3; t++) {
		coordl_loader_t *ld = make(COORDL_MODE_TRAIN, tc[t], 5, 0, 1, 0);
		data[t] = calloc(N, sb);
		n[t] = ld ? td_run_epoch(ld, 3, idx[t], N, data[t], N * sb) : -1;
		coordl_destroy(ld);
	}
	ok(n[0] == N && n[1] == N && n[2] == N, "each thread count delivered %d samples", N);
	ok(memcmp(idx[0], idx[1], sizeof(idx[0])) == 0 && memcmp(idx[0], idx[2], sizeof(idx[0])) == 0,
	   "indices per batch identical with 1, 2 and 4 threads");
	ok(memcmp(data[0], data[1], N * sb) == 0 && memcmp(data[0], data[2], N * sb) == 0,
	   "augmented pixels identical with 1, 2 and 4 threads");
	{
		int seen[N] = { 0 }, perm = 1, identity = 1;
		for (int i = 0; i < N; i++) {
			if (idx[0][i] >= N || seen[idx[0][i]]++)
				perm = 0;
			if (idx[0][i] != (uint64_t)i)
				identity = 0;
		}
		ok(perm && !identity, "one epoch is a shuffled permutation of the dataset");
	}
	for (int t = 0; t < 3; t++)
		free(data[t]);
}

static void test_epochs(void)
{
	uint64_t a[N], b[N], c[N];
	coordl_loader_t *ld = make(COORDL_MODE_RAW, 2, 8, 0, 1, 0);
	coordl_loader_t *l2 = make(COORDL_MODE_RAW, 1, 3, 0, 1, 0);

	ok(ld && l2, "loaders created");
	if (!ld || !l2)
		goto out;
	td_run_epoch(ld, 0, a, N, NULL, 0);
	td_run_epoch(ld, 1, b, N, NULL, 0);
	td_run_epoch(l2, 1, c, N, NULL, 0);
	ok(memcmp(a, b, sizeof(a)) != 0, "epochs 0 and 1 have different orders");
	ok(memcmp(b, c, sizeof(b)) == 0, "order depends on (seed, epoch), not on batch size or threads");
	td_run_epoch(ld, 0, b, N, NULL, 0);
	ok(memcmp(a, b, sizeof(a)) == 0, "re-running epoch 0 repeats its order");
out:
	coordl_destroy(ld);
	coordl_destroy(l2);
}

static void test_shards(void)
{
	const int world = 3, per = (N + 2) / 3; /* 18, total 54: two padded samples */
	uint64_t all[3][32], full[N];
	int count[N] = { 0 }, dup = 0, missing = 0, lens_ok = 1;
	coordl_loader_t *one = make(COORDL_MODE_RAW, 1, 4, 0, 1, 0);

	td_run_epoch(one, 2, full, N, NULL, 0);
	coordl_destroy(one);
	for (int r = 0; r < world; r++) {
		coordl_loader_t *ld = make(COORDL_MODE_RAW, 2, 4, r, world, 0);
		long n = ld ? td_run_epoch(ld, 2, all[r], 32, NULL, 0) : -1;
		if (n != per || !ld || coordl_num_samples(ld) != (size_t)per)
			lens_ok = 0;
		coordl_destroy(ld);
		for (int i = 0; i < per && n == per; i++)
			count[all[r][i]]++;
	}
	ok(lens_ok, "every rank gets ceil(%d/%d) = %d samples", N, world, per);
	for (int i = 0; i < N; i++) {
		if (count[i] == 0)
			missing++;
		if (count[i] > 1)
			dup += count[i] - 1;
	}
	is_int(missing, 0, "the shards together cover the whole dataset");
	is_int(dup, per * world - N, "only the wrap-around padding repeats items");
	/* DistributedSampler: rank r takes positions r, r+W, ... of the padded order. */
	ok(all[1][0] == full[1] && all[2][5] == full[2 + 5 * 3] && all[0][17] == full[(17 * 3) % N],
	   "rank r holds positions r, r+W, ... of the epoch order, padded by wrapping");
	{
		int disjoint = 1;
		for (int i = 0; i < per; i++)
			for (int j = 0; j < per; j++)
				if (all[0][i] == all[1][j] && i * 3 < N && j * 3 + 1 < N)
					disjoint = 0;
		ok(disjoint, "shards are disjoint apart from the padding");
	}
}

static void test_resume(void)
{
	uint64_t ref[N], got[N];
	coordl_state_t st;
	coordl_error_t err = { "" };
	coordl_batch_t *b;
	coordl_loader_t *ld = make(COORDL_MODE_RAW, 2, 5, 0, 1, 0), *l2;
	long n = 0;
	int rc;

	td_run_epoch(ld, 4, ref, N, NULL, 0);
	coordl_set_epoch(ld, 4, NULL);
	for (int i = 0; i < 3 && coordl_next(ld, &b, NULL) == 1; i++)
		coordl_release(ld, b);
	coordl_get_state(ld, &st);
	ok(st.epoch == 4 && st.position == 15 && st.seed == 1234, "state after 3 batches: epoch 4, position 15");
	coordl_destroy(ld);

	l2 = make(COORDL_MODE_RAW, 4, 5, 0, 1, 0);
	ok(coordl_set_state(l2, &st, &err) == 0, "a new loader accepts the state");
	while ((rc = coordl_next(l2, &b, &err)) == 1) {
		for (int i = 0; i < b->n && n + i < N; i++)
			got[n + i] = b->indices[i];
		n += b->n;
		coordl_release(l2, b);
	}
	is_int(n, N - 15, "resume yields exactly the remaining samples");
	ok(n == N - 15 && memcmp(got, ref + 15, (size_t)(N - 15) * sizeof(uint64_t)) == 0,
	   "in the same order as the uninterrupted epoch");

	st.position = 7; /* not on a batch boundary */
	coordl_set_state(l2, &st, NULL);
	n = 0;
	while (coordl_next(l2, &b, NULL) == 1) {
		for (int i = 0; i < b->n; i++)
			got[n + i] = b->indices[i];
		n += b->n;
		coordl_release(l2, b);
	}
	ok(n == N - 7 && memcmp(got, ref + 7, (size_t)(N - 7) * sizeof(uint64_t)) == 0,
	   "resume from a position inside a batch");

	st.position = N + 1;
	ok(coordl_set_state(l2, &st, &err) == -1 && errno == EINVAL, "position beyond the epoch rejected");
	st.position = 0;
	st.seed = 99;
	ok(coordl_set_state(l2, &st, &err) == -1 && strstr(err.text, "seed"), "another seed rejected");
	st.seed = 1234;
	st.world_size = 2;
	ok(coordl_set_state(l2, &st, &err) == -1 && strstr(err.text, "rank"),
	   "another world size rejected");
	coordl_destroy(l2);
}

static void test_batches(void)
{
	coordl_loader_t *ld = make(COORDL_MODE_RAW, 2, 10, 0, 1, 0);
	coordl_loader_t *dl = make(COORDL_MODE_RAW, 2, 10, 0, 1, 1);
	coordl_batch_t *b;
	int sizes[8], nb = 0, last_seq = -1;

	is_int(coordl_num_batches(ld), 6, "52 samples in batches of 10: 6 batches");
	is_int(coordl_num_batches(dl), 5, "with drop_last: 5 batches");
	coordl_set_epoch(ld, 0, NULL);
	while (nb < 8 && coordl_next(ld, &b, NULL) == 1) {
		sizes[nb++] = b->n;
		last_seq = (int)b->seq;
		coordl_release(ld, b);
	}
	ok(nb == 6 && sizes[0] == 10 && sizes[5] == 2 && last_seq == 5,
	   "partial last batch of 2 samples, seq 0..5");
	is_int(td_run_epoch(dl, 0, NULL, 0, NULL, 0), 50, "drop_last delivers 50 samples");
	coordl_destroy(ld);
	coordl_destroy(dl);
}

/* Abandoning an epoch midway (even while holding a batch) leaves the next
 * epoch complete and in its own order. */
static void test_abandon(void)
{
	uint64_t ref[N], got[N];
	coordl_loader_t *ld = make(COORDL_MODE_TRAIN, 4, 3, 0, 1, 0);
	coordl_batch_t *b, *held = NULL;
	long n = 0;

	td_run_epoch(ld, 8, ref, N, NULL, 0);
	for (int round = 0; round < 5; round++) {
		coordl_set_epoch(ld, (uint64_t)round, NULL);
		if (coordl_next(ld, &held, NULL) == 1 && coordl_next(ld, &b, NULL) == 1)
			coordl_release(ld, b);
		/* Workers are busy prefetching now; switch epochs under them. */
		coordl_set_epoch(ld, 8, NULL);
		coordl_release(ld, held);
		n = 0;
		while (coordl_next(ld, &b, NULL) == 1) {
			for (int i = 0; i < b->n && n + i < N; i++)
				got[n + i] = b->indices[i];
			n += b->n;
			coordl_release(ld, b);
		}
		if (n != N || memcmp(got, ref, sizeof(ref)) != 0)
			break;
	}
	ok(n == N && memcmp(got, ref, sizeof(ref)) == 0,
	   "switching epochs mid-way, while holding a batch, gives a complete next epoch");
	coordl_destroy(ld);
}

/* Resident memory of this process, in bytes. */
static long rss_bytes(void)
{
	long pages = -1, res = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = -1;
		fclose(f);
	}
	return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

/* Regression (2026-11-27, the demo's cache-sensitive job): a job that
 * started on cores the node lent it kept the batch ring of that many
 * workers (2 per worker, 19 MB each) after the cores went back, memory its
 * page cache then lacked. The ring now follows the worker count at every
 * coordl_set_epoch. */
static void test_ring_follows_threads(void)
{
	const int bs = 8, out = 128;
	size_t sb = (size_t)out * out * 3 * sizeof(float), slot = sb * (size_t)bs;
	uint64_t idx[2][N];
	uint8_t *data[2] = { calloc(N, sb), calloc(N, sb) };
	coordl_config_t cfg;
	coordl_loader_t *ld, *ref;
	long r4, r1, n0, n1;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.mode = COORDL_MODE_TRAIN;
	cfg.out_size = out;
	cfg.batch_size = bs;
	cfg.cache_bytes = 0;
	cfg.seed = 99;
	cfg.threads = 4; /* a fixed count: the test, not the CPU set, changes it */
	ld = coordl_create(&cfg, NULL);
	cfg.threads = 1;
	cfg.prefetch = 2;
	ref = coordl_create(&cfg, NULL);
	ok(ld && ref && data[0] && data[1], "loaders with 4 threads (ring left to the loader) and "
	   "1 thread (ring of 2 fixed)");
	if (!ld || !ref || !data[0] || !data[1])
		goto out;
	/* Fault in the output buffers now, so they do not count below. */
	memset(data[0], 1, N * sb);
	memset(data[1], 1, N * sb);
	td_run_epoch(ld, 0, idx[0], N, NULL, 0);
	r4 = rss_bytes();
	ok(coordl_set_threads(ld, 1, NULL) == 0, "down to 1 worker (cores taken back)");
	n0 = td_run_epoch(ld, 1, idx[0], N, data[0], N * sb);
	r1 = rss_bytes();
	n1 = td_run_epoch(ref, 1, idx[1], N, data[1], N * sb);
	diag("resident: %ld MB with the ring of 4 workers, %ld MB after the next epoch at 1 "
	     "(a slot is %zu KB)", r4 >> 20, r1 >> 20, slot >> 10);
	/* 8 slots -> 2: 6 slots' memory back, allow for other allocations. */
	ok(r4 > 0 && r1 > 0 && r4 - r1 >= (long)(5 * slot),
	   "the next epoch's ring is that of 1 worker: >= 5 slots' memory given back");
	ok(n0 == N && n1 == N && memcmp(idx[0], idx[1], sizeof(idx[0])) == 0 &&
	   memcmp(data[0], data[1], N * sb) == 0,
	   "that epoch's samples are those of a loader that always had 1 worker");
	ok(coordl_set_threads(ld, 4, NULL) == 0 && td_run_epoch(ld, 2, idx[0], N, NULL, 0) == N,
	   "back at 4 workers, the next epoch runs");
	r4 = rss_bytes();
	diag("resident after it: %ld MB", r4 >> 20);
	ok(r4 - r1 >= (long)(4 * slot), "and its ring grew again (>= 4 slots' memory more)");
out:
	coordl_destroy(ld);
	coordl_destroy(ref);
	free(data[0]);
	free(data[1]);
}

int main(void)
{
	char *dir = td_tmpdir("order");

	snprintf(root, sizeof(root), "%s/data", dir);
	if (td_imagefolder(root, NCLS, NPER) < 0)
		bail_out("cannot write test data");
	test_threads_same();
	test_epochs();
	test_shards();
	test_resume();
	test_batches();
	test_abandon();
	test_ring_follows_threads();
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
