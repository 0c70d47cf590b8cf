/*
 * cache.t: the MinIO cache. Bound never exceeded, no eviction, no item
 * stored twice, sharing between processes (fork) with one copy per item,
 * removal after the last detach, recovery from a crashed job's segment,
 * and refusal of a live segment that belongs to another dataset.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "synergy_env.h"
#include "tap.h"
#include "testdata.h"

static int exists(const char *p)
{
	struct stat st;
	return p && stat(p, &st) == 0;
}

static void test_private(void)
{
	coordl_error_t err = { "" };
	uint8_t item[1000];
	size_t len = 0, n = 200;
	uint64_t bound = 64 * 1024, stored = 0;
	coordl__cache_t *c = coordl__cache_attach(NULL, NULL, bound, n, 1, &err);
	const uint8_t *p;

	ok(c != NULL, "private cache attaches");
	if (!c)
		return;
	ok(coordl__cache_get(c, 3, &len) == NULL, "empty cache misses");
	for (size_t i = 0; i < n; i++) {
		memset(item, (int)i, sizeof(item));
		if (coordl__cache_put(c, i, item, 400 + i % 7))
			stored += 400 + i % 7;
	}
	ok(coordl__cache_used(c) == stored, "used bytes = bytes of stored items (%llu)",
	   (unsigned long long)stored);
	ok(coordl__cache_used(c) <= coordl__cache_capacity(c) && coordl__cache_capacity(c) < bound,
	   "data never exceeds the capacity, which is below the bound");
	ok(coordl__cache_items(c) < n, "a cache smaller than the data fills up (%llu of %zu)",
	   (unsigned long long)coordl__cache_items(c), n);
	p = coordl__cache_get(c, 5, &len);
	ok(p && len == 405 && p[0] == 5 && p[404] == 5, "an early item is served intact");
	memset(item, 0xee, sizeof(item));
	is_int(coordl__cache_put(c, 5, item, 405), 0, "storing an item twice is refused");
	p = coordl__cache_get(c, 5, &len);
	ok(p && p[0] == 5, "and the first copy is kept");
	ok(coordl__cache_get(c, n - 1, &len) == NULL, "a late item did not fit: never evicts");
	coordl__cache_detach(c);

	c = coordl__cache_attach(NULL, NULL, 100, 1000, 1, &err);
	ok(c && coordl__cache_put(c, 0, item, 10) == 0 && coordl__cache_capacity(c) == 0,
	   "a bound smaller than the index stores nothing");
	coordl__cache_detach(c);
}

/* A child attaches and fills items [from, to); the parent checks the shared view. */
static int child_fill(const char *name, const char *dir, uint64_t bound, size_t n, size_t from,
		      size_t to, int crash)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		coordl_error_t err = { "" };
		uint8_t item[512];
		coordl__cache_t *c = coordl__cache_attach(name, dir, bound, n, 42, &err);
		if (!c)
			_exit(2);
		for (size_t i = from; i < to; i++) {
			memset(item, (int)(i & 0xff), sizeof(item));
			coordl__cache_put(c, i, item, sizeof(item));
		}
		if (crash)
			_exit(0); /* no detach: as if the job was killed */
		coordl__cache_detach(c);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_shared(const char *dir, const char *label)
{
	coordl_error_t err = { "" };
	const char *name = "cachetest";
	uint64_t bound = 256 * 1024;
	size_t n = 100, len;
	coordl__cache_t *a, *b;
	const uint8_t *p;
	char seg[512];

	a = coordl__cache_attach(name, dir, bound, n, 42, &err);
	ok(a != NULL, "%s: first loader creates the named cache (%s)", label, a ? "ok" : err.text);
	if (!a)
		return;
	snprintf(seg, sizeof(seg), "%s", coordl__cache_path(a));
	ok(exists(seg), "%s: segment exists at %s", label, seg);
	ok(td_file_size(seg) <= (long long)bound, "%s: segment size %lld <= bound %llu", label,
	   td_file_size(seg), (unsigned long long)bound);
	is_int(child_fill(name, dir, bound, n, 0, 30, 0), 0, "child process fills items 0..29");
	p = coordl__cache_get(a, 7, &len);
	ok(p && len == 512 && p[0] == 7, "parent sees the child's item");
	is_int(child_fill(name, dir, bound, n, 20, 40, 0), 0, "second child fills 20..39");
	is_int(coordl__cache_items(a), 40, "overlapping fills stored each item once");
	is_int(coordl__cache_used(a), 40 * 512, "one copy per item in the bytes used");
	ok(exists(seg), "%s: segment kept while the parent is attached", label);

	b = coordl__cache_attach(name, dir, bound, n, 43, &err);
	ok(!b && errno == EBUSY && strstr(err.text, name),
	   "%s: a live cache of another dataset is refused with EBUSY", label);
	coordl__cache_detach(b);
	b = coordl__cache_attach(name, dir, bound * 2, n, 42, &err);
	ok(!b && errno == EBUSY, "%s: a live cache with another bound is refused", label);
	coordl__cache_detach(b);

	coordl__cache_detach(a);
	ok(!exists(seg), "%s: segment removed after the last detach", label);

	/* A job that died attached leaves its segment behind ... */
	is_int(child_fill(name, dir, bound, n, 0, 10, 1), 0, "a child dies without detaching");
	ok(exists(seg), "%s: its segment is left behind", label);
	/* ... and the next job with another dataset must still start. */
	a = coordl__cache_attach(name, dir, bound, n + 5, 77, &err);
	ok(a && coordl__cache_items(a) == 0, "%s: the stale segment is reinitialised (%s)", label,
	   a ? "ok" : err.text);
	coordl__cache_detach(a);
	ok(!exists(seg), "%s: and removed afterwards", label);
}

/* A cache directory without room for the segment is an error at attach,
 * not a SIGBUS later. RLIMIT_FSIZE stands in for a full tmpfs (no root). */
static void test_no_space(const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct rlimit rl = { 64 * 1024, 64 * 1024 };
		coordl_error_t err = { "" };
		coordl__cache_t *c;
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(3);
		c = coordl__cache_attach("nospace", dir, 1 << 20, 10, 1, &err);
		if (c)
			_exit(1);
		if (!strstr(err.text, "nospace") || !strstr(err.text, "reserve")) {
			fprintf(stderr, "%s\n", err.text);
			_exit(2);
		}
		_exit(0);
	}
	ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "no room for the segment: attach fails with a message naming the cache");
}

/* Two loader processes share one cache through SYNERGY_CACHE_NAME. */
static void test_loaders(const char *dir)
{
	char root[1024], seg[1200];
	long long total;
	int st[2] = { -1, -1 };
	int pipefd[2];

	snprintf(root, sizeof(root), "%s/data", dir);
	total = td_imagefolder(root, 3, 20);
	ok(total > 0, "test dataset written (%lld bytes)", total);
	setenv(SYNERGY_ENV_CACHE_DIR, dir, 1);
	snprintf(seg, sizeof(seg), "%s/coordl-ld2.cache", dir);
	if (pipe(pipefd) < 0)
		bail_out("pipe");
	for (int r = 0; r < 2; r++) {
		pid_t pid = fork();
		if (pid == 0) {
			coordl_config_t cfg;
			coordl_error_t err = { "" };
			coordl_loader_t *ld;
			coordl_stats_t s;
			char go;
			coordl_config_init(&cfg);
			cfg.path = root;
			cfg.mode = COORDL_MODE_RAW;
			cfg.batch_size = 4;
			cfg.threads = 2;
			cfg.rank = r;
			cfg.world_size = 2;
			cfg.cache_bytes = 1 << 20;
			cfg.cache_name = "ld2";
			if (!(ld = coordl_create(&cfg, &err)))
				_exit(10);
			/* Both ranks attach before either runs, so both count. */
			if (r == 0 && read(pipefd[0], &go, 1) != 1)
				_exit(11);
			if (r == 1 && write(pipefd[1], "g", 1) != 1)
				_exit(11);
			if (td_run_epoch(ld, 0, NULL, 0, NULL, 0) != 30)
				_exit(12);
			coordl_get_stats(ld, &s);
			if (s.cache_bytes_used > s.cache_bytes_limit)
				_exit(13);
			if (td_file_size(seg) > (long long)s.cache_bytes_limit)
				_exit(14);
			coordl_destroy(ld);
			_exit(0);
		}
		if (pid < 0)
			bail_out("fork");
		if (r == 1) {
			int s1;
			/* Wait for the one that ends second to know the first is done. */
			waitpid(pid, &s1, 0);
			st[1] = WIFEXITED(s1) ? WEXITSTATUS(s1) : -1;
		} else {
			st[0] = pid;
		}
	}
	{
		int s0;
		waitpid(st[0], &s0, 0);
		st[0] = WIFEXITED(s0) ? WEXITSTATUS(s0) : -1;
	}
	ok(st[0] == 0 && st[1] == 0, "two loader processes (ranks 0, 1) ran an epoch on one cache (%d %d)",
	   st[0], st[1]);
	ok(!exists(seg), "the shared cache file is gone after both loaders were destroyed");
	close(pipefd[0]);
	close(pipefd[1]);

	/* Sharing, observed from a third attacher while two loaders live. */
	{
		coordl_config_t cfg;
		coordl_error_t err = { "" };
		coordl_loader_t *l0, *l1;
		coordl_stats_t s0, s1;
		coordl_config_init(&cfg);
		cfg.path = root;
		cfg.mode = COORDL_MODE_RAW;
		cfg.batch_size = 4;
		cfg.threads = 2;
		cfg.world_size = 2;
		cfg.cache_bytes = 1 << 20;
		cfg.cache_name = "ld2";
		l0 = coordl_create(&cfg, &err);
		cfg.rank = 1;
		l1 = coordl_create(&cfg, &err);
		ok(l0 && l1, "two loaders in one process attach to the same cache");
		if (l0 && l1) {
			td_run_epoch(l0, 0, NULL, 0, NULL, 0);
			td_run_epoch(l1, 0, NULL, 0, NULL, 0);
			coordl_get_stats(l0, &s0);
			coordl_get_stats(l1, &s1);
			ok(s0.cache_bytes_used == (uint64_t)total && s1.cache_bytes_used == (uint64_t)total,
			   "both see the whole dataset cached once (%llu of %lld bytes)",
			   (unsigned long long)s0.cache_bytes_used, total);
			ok(s0.storage_bytes + s1.storage_bytes == (uint64_t)total,
			   "disjoint shards read each item from storage once");
			td_run_epoch(l1, 1, NULL, 0, NULL, 0);
			coordl_get_stats(l1, &s1);
			ok(s1.storage_bytes == 0 && s1.cache_misses == 0,
			   "rank 1's next epoch is served entirely from the shared cache");
		} else {
			skip(3, "no loaders");
		}
		coordl_destroy(l0);
		ok(exists(seg), "cache kept while one loader remains");
		coordl_destroy(l1);
		ok(!exists(seg), "cache removed when the last loader is destroyed");
	}
	unsetenv(SYNERGY_ENV_CACHE_DIR);
}

int main(void)
{
	char *dir = td_tmpdir("cache");

	test_private();
	test_shared(dir, "cache dir");
	if (access("/dev/shm", W_OK) == 0)
		test_shared(NULL, "posix shm");
	else
		skip(20, "/dev/shm not writable");
	test_no_space(dir);
	test_loaders(dir);
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
