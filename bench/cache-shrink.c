/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cache-shrink: how long a live shrink of a shared MinIO cache takes to give
 * its memory back, with reader threads using the cache meanwhile.
 *
 * Fills a named cache in DIR (default /dev/shm) of SIZE MiB with items of
 * ITEM KiB, starts READERS threads that look up random items and check
 * their bytes (as decoding workers would hold them), then, REPS times:
 *   direct: lowers the bound to half with coordl__cache_set_bound() and
 *           times the call (drop, two grace periods, hole punch);
 *   grant:  raises it back, refills, then writes half the size to a grant
 *           file that a follower thread (grant.h, as a loader runs it)
 *           re-reads every 100 ms, and times from the write until the
 *           segment's st_blocks * 512 is at most the new grant, polling
 *           every 0.2 ms: what the node agent sees from outside.
 * Prints min/median/max of both in milliseconds, the bytes released, and
 * the readers' lookups and torn items (always 0). Not a test: a table.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "common/parse.h"
#include "loader/cache.h"
#include "loader/grant.h"
#include "loader/util.h"

struct reader {
	coordl__cache_t *c;
	size_t nitems, len;
	int stop;
	unsigned seed;
	long lookups, torn;
};

static uint8_t pat(size_t i, size_t k) { return (uint8_t)(i * 131 + k * 7 + 1); }

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	unsigned s = r->seed;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		coordl__cache_ticket_t t;
		size_t len, i;
		const uint8_t *p;
		int good = 1;
		s = s * 1103515245u + 12345u;
		i = (s >> 4) % r->nitems;
		if (!(p = coordl__cache_get(r->c, i, &len, &t)))
			continue;
		/* Touch the item as a decoder would: every 64th byte. */
		for (size_t k = 0; k < len; k += 64)
			good &= p[k] == pat(i, k);
		if (coordl__cache_done(r->c, &t)) {
			r->lookups++;
			r->torn += !good;
		}
	}
	return NULL;
}

static void fill(coordl__cache_t *c, size_t nitems, size_t len, uint8_t *item)
{
	for (size_t i = 0; i < nitems; i++) {
		for (size_t k = 0; k < len; k++)
			item[k] = pat(i, k);
		coordl__cache_put(c, i, item, len);
	}
}

static long long blocks(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_blocks * 512 : -1;
}

/* Start writing a grant of v bytes to path (common/file.h); the caller
 * commits it when the clock runs. */
static int grant_begin(syn_atomic_t *a, const char *path, uint64_t v)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v);

	if (syn_atomic_begin(a, AT_FDCWD, path, 0644) < 0)
		return -1;
	if (syn_file_write_all(a->fd, text, (size_t)n) < 0) {
		syn_atomic_abort(a);
		return -1;
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void row(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-34s %9.2f %9.2f %9.2f\n", what, v[0] * 1e3, v[n / 2] * 1e3, v[n - 1] * 1e3);
}

int main(int argc, char **argv)
{
	size_t mib = 512, item_kb = 110, nitems, len;
	int reps = 5, nreaders = 2, opt;
	const char *dir = "/dev/shm";
	char gfile[1024];
	syn_atomic_t ga;
	coordl__cache_t *c;
	coordl__grant_t *g;
	coordl_error_t err = { "" };
	struct reader rd[16];
	pthread_t thr[16];
	double direct[64], grant[64];
	uint64_t full, half;
	uint8_t *item;
	long long before = 0, after = 0;
	uint64_t v;

	while ((opt = getopt(argc, argv, "s:i:r:t:h")) != -1) {
		/* Each bound keeps the arrays below in range. */
		switch (opt) {
		case 's':
		case 'i':
		case 'r':
		case 't':
			if (syn_parse_u64(optarg, opt == 't' ? 0 : 1,
					  opt == 'r' ? 64 : opt == 't' ? 16 : 1 << 20, &v) < 0) {
				fprintf(stderr,
					"cache-shrink: -s, -i 1..1048576, -r 1..64, -t 0..16\n");
				return 2;
			}
			if (opt == 's')
				mib = (size_t)v;
			else if (opt == 'i')
				item_kb = (size_t)v;
			else if (opt == 'r')
				reps = (int)v;
			else
				nreaders = (int)v;
			break;
		default:
			fprintf(stderr, "Usage: %s [-s MiB] [-i ITEM_KiB] [-r REPS] [-t READERS] [DIR]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		dir = argv[optind];
	if (mib < 1 || item_kb < 1 || reps < 1 || reps > 64 || nreaders < 0 || nreaders > 16) {
		fprintf(stderr, "cache-shrink: -s, -i >= 1, -r 1..64, -t 0..16\n");
		return 2;
	}
	len = item_kb * 1024;
	nitems = mib * 1024 * 1024 / len;
	full = (uint64_t)mib << 20;
	full += COORDL__CACHE_HEADER_BYTES + nitems * 16 + (1 << 20);
	half = full / 2;
	if (!(item = malloc(len)))
		return 1;
	if (!(c = coordl__cache_attach("shrink-bench", dir, full, nitems, (uint64_t)nitems * len, 1, &err))) {
		fprintf(stderr, "cache-shrink: %s\n", err.text);
		return 1;
	}
	snprintf(gfile, sizeof(gfile), "%s/shrink-bench-grant", dir);
	fill(c, nitems, len, item);
	for (int k = 0; k < nreaders; k++) {
		memset(&rd[k], 0, sizeof(rd[k]));
		rd[k].c = c;
		rd[k].nitems = nitems;
		rd[k].len = len;
		rd[k].seed = (unsigned)k * 7919u + 1;
		pthread_create(&thr[k], NULL, reader_main, &rd[k]);
	}
	for (int r = 0; r < reps; r++) {
		double t;
		coordl__cache_set_bound(c, full);
		fill(c, nitems, len, item);
		before = blocks(coordl__cache_path(c));
		t = coordl__now();
		coordl__cache_set_bound(c, half);
		direct[r] = coordl__now() - t;
		after = blocks(coordl__cache_path(c));
	}
	/* Through a grant file and the follower thread, seen from outside. */
	if (grant_begin(&ga, gfile, full) < 0 || syn_atomic_commit(&ga) < 0)
		return 1;
	coordl__cache_set_bound(c, full);
	if (!(g = coordl__grant_start(gfile, c)))
		return 1;
	for (int r = 0; r < reps; r++) {
		double t;
		fill(c, nitems, len, item);
		if (grant_begin(&ga, gfile, half) < 0)
			return 1;
		t = coordl__now();
		if (syn_atomic_commit(&ga) < 0)
			return 1;
		while (blocks(coordl__cache_path(c)) > (long long)half && coordl__now() - t < 10) {
			struct timespec ts = { 0, 200000 };
			nanosleep(&ts, NULL);
		}
		grant[r] = coordl__now() - t;
		/* Back to full, seen by the follower, before the next round. */
		if (grant_begin(&ga, gfile, full) < 0 || syn_atomic_commit(&ga) < 0)
			return 1;
		while (coordl__cache_bound(c) != full) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	coordl__grant_stop(g);
	for (int k = 0; k < nreaders; k++)
		__atomic_store_n(&rd[k].stop, 1, __ATOMIC_RELAXED);
	long lookups = 0, torn = 0;
	for (int k = 0; k < nreaders; k++) {
		pthread_join(thr[k], NULL);
		lookups += rd[k].lookups;
		torn += rd[k].torn;
	}
	printf("# cache %zu MiB of %zu KiB items (%zu) in %s, %d readers, %d reps; "
	       "shrink to half: %.1f MiB -> %.1f MiB occupied\n",
	       mib, item_kb, nitems, dir, nreaders, reps, (double)before / 1048576,
	       (double)after / 1048576);
	printf("%-34s %9s %9s %9s\n", "ms", "min", "median", "max");
	row("set_bound(half) returns", direct, reps);
	row("grant file -> st_blocks <= grant", grant, reps);
	printf("# readers: %ld lookups, %ld torn\n", lookups, torn);
	coordl__cache_detach(c);
	unlink(gfile);
	free(item);
	return torn ? 1 : 0;
}
