/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grant.t: issue 13, the loader follows its live cache grant
 * (SYNERGY_CACHE_GRANT). The initial bound comes from the grant file; a
 * lower grant written while the program does nothing with the loader is
 * applied by the loader's own thread, and the job's cache files then hold
 * at most the new grant, as the node checks from outside (st_blocks); the
 * epoch after a shrink hits exactly the items kept (the first ones stored:
 * no churn) and reads the rest; a higher grant lets the cache fill again;
 * a shrink while the workers decode from the cache changes no output
 * byte (no torn item); a grant of 0 leaves only the cache's header; a
 * malformed or missing file leaves the bound and is noted; a bound the
 * program fixed does not follow. Outputs are compared byte for byte with a
 * loader without a cache, epoch by epoch. Run under TSan too.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loader/cache.h"
#include "coordl.h"
#include "loader/grant.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define NCLS 4
#define NPER 20
#define N (NCLS * NPER)
#define OUT 16
#define SAMPLE (3 * OUT * OUT * 4)
#define EPOCHS 6

static char dir[1024], cdir[1100], root[1100], gfile[1100];
static long long total;
static uint8_t *ref[EPOCHS];

static coordl_loader_t *make(int64_t cache_bytes, int cache_use)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.out_size = OUT;
	cfg.batch_size = 4;
	cfg.threads = 2;
	cfg.seed = 3;
	cfg.cache_bytes = cache_bytes;
	cfg.cache_use = cache_use;
	if (!(ld = coordl_create(&cfg, &err)))
		diag("create: %s", err.text);
	return ld;
}

/* Replace the grant file atomically, as the node does. */
static void write_grant(const char *text)
{
	char tmp[1200];

	snprintf(tmp, sizeof(tmp), "%s.tmp", gfile);
	if (td_write_file(tmp, text, strlen(text)) < 0 || rename(tmp, gfile) < 0)
		bail_out("cannot write the grant file");
}

static void write_grant_bytes(long long bytes)
{
	char text[32];

	snprintf(text, sizeof(text), "%lld\n", bytes);
	write_grant(text);
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait (without touching the loader) until the cache files hold at most
 * want bytes; the seconds it took, or -1 after 10 s. */
static double wait_occupancy(long long want)
{
	double t0 = td_now();

	while (td_now() - t0 < 10) {
		if (td_dir_blocks(cdir) <= want)
			return td_now() - t0;
		sleep_s(0.002);
	}
	return -1;
}

static coordl_stats_t stats(coordl_loader_t *ld)
{
	coordl_stats_t st;

	memset(&st, 0, sizeof(st));
	coordl_get_stats(ld, &st);
	return st;
}

/* Run epoch e and compare every byte with the cacheless reference. */
static int same_epoch(coordl_loader_t *ld, uint64_t e, uint8_t *buf)
{
	long n = td_run_epoch(ld, e, NULL, 0, buf, (size_t)N * SAMPLE);
	return n == N && memcmp(buf, ref[e], (size_t)N * SAMPLE) == 0;
}

int main(void)
{
	char *tmp = td_tmpdir("grant"), shm[] = "/dev/shm/coordl-grant-XXXXXX";
	uint8_t *buf = malloc((size_t)N * SAMPLE);
	long long big, small, header = COORDL__CACHE_HEADER_BYTES;
	coordl_loader_t *ld;
	coordl_stats_t st;
	uint64_t items_small;
	double t;

	snprintf(dir, sizeof(dir), "%s", tmp);
	snprintf(root, sizeof(root), "%s/ds", dir);
	snprintf(gfile, sizeof(gfile), "%s/grant", dir);
	/* The job's cache lives on tmpfs, where st_blocks counts exactly the
	 * memory held; a disk file system adds metadata blocks. */
	if (access("/dev/shm", W_OK) == 0 && mkdtemp(shm))
		snprintf(cdir, sizeof(cdir), "%s", shm);
	else
		snprintf(cdir, sizeof(cdir), "%s/cache", dir);
	mkdir(cdir, 0700);
	if (!buf || (total = td_imagefolder(root, NCLS, NPER)) < 0)
		bail_out("cannot write the test dataset");
	/* Room for everything (header, index, data, a page of rounding), and
	 * about a third of the data. */
	big = header + N * 16 + total + 2 * 4096;
	small = header + N * 16 + total / 3 + 4096;

	/* The reference: no cache at all. */
	unsetenv(SYNERGY_ENV_CACHE_GRANT);
	ld = make(0, COORDL_CACHE_NONE);
	for (int e = 0; e < EPOCHS; e++) {
		if (!(ref[e] = malloc((size_t)N * SAMPLE)) || !ld ||
		    td_run_epoch(ld, (uint64_t)e, NULL, 0, ref[e], (size_t)N * SAMPLE) != N)
			bail_out("reference epochs");
	}
	coordl_destroy(ld);

	setenv(SYNERGY_ENV_CACHE_NAME, "job_7", 1);
	setenv(SYNERGY_ENV_CACHE_DIR, cdir, 1);
	setenv(SYNERGY_ENV_CACHE_BYTES, "1K", 1);
	setenv(SYNERGY_ENV_CACHE_GRANT, gfile, 1);
	write_grant_bytes(big);

	ld = make(-1, COORDL_CACHE_AUTO);
	if (!ld)
		bail_out("no loader");
	st = stats(ld);
	ok(st.cache_bytes_limit == (uint64_t)big && st.cache_shared && !coordl_cache_note(ld),
	   "the initial bound is the grant file's (%llu), not SYNERGY_CACHE_BYTES",
	   (unsigned long long)st.cache_bytes_limit);
	ok(same_epoch(ld, 0, buf), "epoch 0 fills the cache, output as without a cache");
	st = stats(ld);
	ok(st.cache_items == N && td_dir_blocks(cdir) <= big,
	   "all %d items cached; the cache files hold %lld <= %lld", N, td_dir_blocks(cdir), big);

	/* Shrink while the program is busy elsewhere (no coordl_next). */
	write_grant_bytes(small);
	t = wait_occupancy(small);
	ok(t >= 0, "issue 13: after the grant is lowered the cache files hold <= %lld bytes, with no "
	   "call into the loader (%.0f ms)", small, t * 1e3);
	st = stats(ld);
	items_small = st.cache_items;
	ok(st.cache_bytes_limit == (uint64_t)small && st.cache_shrinks == 1 && items_small > 0 &&
	   items_small < N,
	   "the stats show the new bound, one shrink and %llu items kept",
	   (unsigned long long)items_small);
	ok(same_epoch(ld, 1, buf), "issue 13: epoch 1 after the shrink: every output byte as without "
	   "a cache");
	st = stats(ld);
	/* A miss may still be stored in room the kept items left under the
	 * bound (which items were kept depends on the order epoch 0's
	 * workers stored them); never beyond the bound, never evicting. */
	ok(st.cache_hits == items_small && st.cache_misses == N - items_small &&
	   st.cache_items >= items_small && st.cache_bytes_used <= (uint64_t)small &&
	   td_dir_blocks(cdir) <= small,
	   "issue 13: the hit rate follows the new bound: %llu hits = the items kept, %llu misses; "
	   "%llu items, %llu bytes stored: no refill beyond it", (unsigned long long)st.cache_hits,
	   (unsigned long long)st.cache_misses, (unsigned long long)st.cache_items,
	   (unsigned long long)st.cache_bytes_used);

	/* Grow: the cache keeps filling. */
	write_grant_bytes(big);
	t = td_now();
	while (stats(ld).cache_bytes_limit != (uint64_t)big && td_now() - t < 10)
		sleep_s(0.005);
	ok(same_epoch(ld, 2, buf), "issue 13: after the grant is raised, epoch 2 fills the cache again");
	ok(same_epoch(ld, 3, buf), "  and epoch 3 comes from it");
	st = stats(ld);
	ok(st.cache_hits == N && st.cache_grows == 1 && st.cache_bytes_limit == (uint64_t)big,
	   "issue 13: epoch 3 hits all %d items; one grow counted", N);

	/* Shrink and grow while the workers decode from the cache. */
	{
		coordl_error_t err = { "" };
		coordl_batch_t *b;
		size_t off = 0;
		int rc, k = 0, good = 1;
		if (coordl_set_epoch(ld, 4, &err) < 0)
			good = 0;
		/* Batch 2: lower the grant; then take a batch every 20 ms
		 * (the workers refill behind it) until the change shows; then
		 * raise it the same way, and finish the epoch. */
		uint64_t want = 0;
		while (good && (rc = coordl_next(ld, &b, &err)) == 1) {
			if (off + b->data_bytes <= (size_t)N * SAMPLE)
				memcpy(buf + off, b->data, b->data_bytes);
			off += b->data_bytes;
			coordl_release(ld, b);
			if (k++ == 2) {
				write_grant_bytes(small);
				want = (uint64_t)small;
			}
			if (want && stats(ld).cache_bytes_limit == want) {
				if (want == (uint64_t)small) {
					write_grant_bytes(big);
					want = (uint64_t)big;
				} else {
					want = 0;
				}
			}
			if (want)
				sleep_s(0.02);
		}
		/* (On a slow machine the epoch may end first.) */
		for (t = td_now(); want && td_now() - t < 10; sleep_s(0.01)) {
			if (stats(ld).cache_bytes_limit != want)
				continue;
			if (want == (uint64_t)small) {
				write_grant_bytes(big);
				want = (uint64_t)big;
			} else {
				want = 0;
			}
		}
		ok(good && off == (size_t)N * SAMPLE && memcmp(buf, ref[4], off) == 0,
		   "issue 13: a shrink and a grow while the workers decode from the cache: no error, "
		   "every output byte as without a cache");
		st = stats(ld);
		ok(st.cache_shrinks == 2 && st.cache_grows == 2, "  (%llu shrinks, %llu grows so far)",
		   (unsigned long long)st.cache_shrinks, (unsigned long long)st.cache_grows);
	}

	/* Grant 0: only the header stays. */
	write_grant("0\n");
	t = wait_occupancy(header);
	ok(t >= 0, "issue 13: grant 0: the cache files hold only the header, %lld bytes (%.0f ms)",
	   td_dir_blocks(cdir), t * 1e3);
	ok(same_epoch(ld, 5, buf), "  and the loader runs on from storage");

	/* A malformed file: the bound stays, a note says why. */
	write_grant("12x\n");
	sleep_s(4 * COORDL__GRANT_PERIOD);
	st = stats(ld);
	ok(st.cache_bytes_limit == 0 && coordl_cache_note(ld) &&
	   strstr(coordl_cache_note(ld), SYNERGY_ENV_CACHE_GRANT),
	   "a malformed grant file leaves the bound and is noted: %s",
	   coordl_cache_note(ld) ? coordl_cache_note(ld) : "(none)");
	unlink(gfile);
	sleep_s(3 * COORDL__GRANT_PERIOD);
	ok(stats(ld).cache_bytes_limit == 0, "a missing grant file leaves the bound too");
	coordl_destroy(ld);
	ok(td_dir_blocks(cdir) == 0, "the cache files are gone with the loader");

	/* Missing at start: SYNERGY_CACHE_BYTES, then the file once it comes. */
	ld = make(-1, COORDL_CACHE_AUTO);
	st = stats(ld);
	ok(ld && st.cache_bytes_limit == 1024 && coordl_cache_note(ld) &&
	   strstr(coordl_cache_note(ld), "starting from"),
	   "no grant file at start: the bound is SYNERGY_CACHE_BYTES, noted: %s",
	   ld && coordl_cache_note(ld) ? coordl_cache_note(ld) : "(none)");
	write_grant_bytes(big);
	t = td_now();
	while (ld && stats(ld).cache_bytes_limit != (uint64_t)big && td_now() - t < 10)
		sleep_s(0.005);
	ok(ld && stats(ld).cache_bytes_limit == (uint64_t)big, "  then follows the file once it exists");
	coordl_destroy(ld);

	/* A bound the program fixed does not follow. */
	ld = make(big, COORDL_CACHE_AUTO);
	write_grant_bytes(small);
	sleep_s(4 * COORDL__GRANT_PERIOD);
	ok(ld && stats(ld).cache_bytes_limit == (uint64_t)big,
	   "a bound given to coordl_create() does not follow the grant file");
	coordl_destroy(ld);

	for (int e = 0; e < EPOCHS; e++)
		free(ref[e]);
	free(buf);
	td_rmrf(tmp);
	if (strcmp(cdir, shm) == 0)
		td_rmrf(shm);
	free(tmp);
	return done_testing();
}
