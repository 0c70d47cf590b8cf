/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multi.t: issue 12, several loaders in one job under the plugin's
 * environment (SYNERGY_CACHE_NAME, _BYTES, _DIR as the SPANK plugin sets
 * them). A training loader and a validation loader on another dataset both
 * run, the training one holding the job's cache and the validation one
 * none; a second training loader on another dataset runs without a cache
 * and says why; cache_use picks the loader; an explicit bound falls back to
 * a private cache; ranks in several processes share one cache; an unsafe
 * file at the cache's path or a file system without room leaves the loader
 * running without a cache; and the job's cache files never hold more than
 * the grant, whatever the number of loaders.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coordl.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define GRANT (4 << 20)

static char dir[1024], cdir[1100], ds_a[1100], ds_b[1100];
static long long bytes_a, bytes_b;

static coordl_loader_t *make(const char *path, int mode, int cache_use, int64_t cache_bytes,
			     const char *cache_name, int rank, int world, coordl_error_t *err)
{
	coordl_config_t cfg;
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = path;
	cfg.mode = mode;
	cfg.out_size = 16;
	cfg.batch_size = 4;
	cfg.threads = 2;
	cfg.cache_use = cache_use;
	cfg.cache_bytes = cache_bytes;
	cfg.cache_name = cache_name;
	cfg.rank = rank;
	cfg.world_size = world;
	if (!(ld = coordl_create(&cfg, err)))
		diag("create %s: %s", path, err->text);
	return ld;
}

static coordl_stats_t stats(coordl_loader_t *ld)
{
	coordl_stats_t st;

	memset(&st, 0, sizeof(st));
	if (ld)
		coordl_get_stats(ld, &st);
	return st;
}

static const char *note(coordl_loader_t *ld)
{
	const char *n = ld ? coordl_cache_note(ld) : NULL;
	return n ? n : "(none)";
}

static void set_env(void)
{
	setenv(SYNERGY_ENV_CACHE_NAME, "job_1", 1);
	setenv(SYNERGY_ENV_CACHE_BYTES, "4M", 1);
	setenv(SYNERGY_ENV_CACHE_DIR, cdir, 1);
}

static void test_train_and_eval(void)
{
	coordl_error_t err = { "" };
	coordl_loader_t *train = make(ds_a, COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, -1, NULL, 0, 1, &err);
	coordl_loader_t *val = make(ds_b, COORDL_MODE_EVAL, COORDL_CACHE_AUTO, -1, NULL, 0, 1, &err);
	coordl_loader_t *train2;
	coordl_stats_t st;

	ok(train && val, "issue 12: a training loader and a validation loader on another dataset "
	   "both start in one job");
	st = stats(train);
	ok(st.cache_shared == 1 && st.cache_bytes_limit == GRANT && !coordl_cache_note(train),
	   "the training loader holds the job's cache with the whole grant");
	st = stats(val);
	ok(st.cache_shared == 0 && st.cache_bytes_limit == 0 && !coordl_cache_note(val),
	   "the validation loader has no cache (by design: no note)");
	if (train && val) {
		long a0 = td_run_epoch(train, 0, NULL, 0, NULL, 0);
		long b0 = td_run_epoch(val, 0, NULL, 0, NULL, 0);
		long a1 = td_run_epoch(train, 1, NULL, 0, NULL, 0);
		st = stats(train);
		ok(a0 == 30 && b0 == 16 && a1 == 30 && st.storage_bytes == 0 && st.cache_hits == 30,
		   "both run their epochs; the training set's second epoch comes from the cache");
		st = stats(val);
		ok(st.storage_bytes == (uint64_t)bytes_b, "the validation set is read from storage");
	} else {
		skip(2, "no loaders");
	}

	/* A second training loader, on the other dataset: no failure. */
	errno = 0;
	train2 = make(ds_b, COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, -1, NULL, 0, 1, &err);
	st = stats(train2);
	ok(train2 && st.cache_bytes_limit == 0 && st.cache_shared == 0 &&
	   strstr(note(train2), "in use for another dataset") &&
	   strstr(note(train2), "running without a cache"),
	   "issue 12: a second training loader on another dataset runs without a cache and says "
	   "why: %s", note(train2));
	ok(train2 && td_run_epoch(train2, 0, NULL, 0, NULL, 0) == 16, "  and runs its epoch");
	ok(td_dir_blocks(cdir) <= GRANT, "three loaders: the job's cache files hold %lld <= the grant",
	   td_dir_blocks(cdir));
	coordl_destroy(train2);

	/* cache_use: none, and job for a loader in another mode. */
	train2 = make(ds_a, COORDL_MODE_TRAIN, COORDL_CACHE_NONE, -1, NULL, 0, 1, &err);
	st = stats(train2);
	ok(train2 && st.cache_bytes_limit == 0 && !coordl_cache_note(train2),
	   "cache_use=none: no cache, nothing to note");
	coordl_destroy(train2);
	train2 = make(ds_a, COORDL_MODE_EVAL, COORDL_CACHE_JOB, -1, NULL, 0, 1, &err);
	st = stats(train2);
	ok(train2 && st.cache_shared == 1 && st.cache_items == 30,
	   "cache_use=job: an evaluation loader on the same dataset shares the job's cache (%llu items)",
	   (unsigned long long)st.cache_items);
	coordl_destroy(train2);

	/* An explicit bound falls back to a private cache of that bound. */
	train2 = make(ds_b, COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, 1 << 20, NULL, 0, 1, &err);
	st = stats(train2);
	ok(train2 && st.cache_shared == 0 && st.cache_bytes_limit == 1 << 20 &&
	   strstr(note(train2), "using a private cache"),
	   "issue 12: an explicit bound whose named cache is taken gets a private one: %s",
	   note(train2));
	if (train2) {
		td_run_epoch(train2, 0, NULL, 0, NULL, 0);
		td_run_epoch(train2, 1, NULL, 0, NULL, 0);
		st = stats(train2);
		ok(st.cache_hits == 16, "  which serves its second epoch");
	} else {
		skip(1, "no loader");
	}
	coordl_destroy(train2);
	coordl_destroy(val);
	coordl_destroy(train);
	ok(td_dir_blocks(cdir) == 0, "every cache file is gone with the loaders");
}

/* Read one byte from fd within 60 s. 0, or -1 (timeout, EOF, error). */
static int wait_byte(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char c;

	return poll(&p, 1, 60000) == 1 && read(fd, &c, 1) == 1 ? 0 : -1;
}

/* torchrun: one process per rank, same dataset, same name: one cache.
 * Both ranks attach, both run epoch 0, then both run epoch 1: every item
 * of epoch 1 was read by one of them in epoch 0. Each rank has its own
 * "go" pipe, so a fast rank cannot take the other's turn. */
static void test_ranks(void)
{
	int up[2], down[2][2], good = 0, ok_run = 1;
	pid_t pid[2] = { -1, -1 };

	if (pipe(up) < 0 || pipe(down[0]) < 0 || pipe(down[1]) < 0)
		bail_out("pipe");
	fflush(stdout);
	for (int r = 0; r < 2; r++) {
		if ((pid[r] = fork()) == 0) {
			coordl_error_t err = { "" };
			coordl_loader_t *ld = make(ds_a, COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, -1, NULL, r, 2, &err);
			coordl_stats_t st;
			close(up[0]);
			if (!ld || write(up[1], "a", 1) != 1 || wait_byte(down[r][0]) < 0)
				_exit(10);
			if (td_run_epoch(ld, 0, NULL, 0, NULL, 0) != 15 || write(up[1], "b", 1) != 1 ||
			    wait_byte(down[r][0]) < 0)
				_exit(11);
			if (td_run_epoch(ld, 1, NULL, 0, NULL, 0) != 15)
				_exit(12);
			st = stats(ld);
			/* Rank 1's epoch 1 takes items rank 0 read in epoch 0. */
			if (!st.cache_shared || st.storage_bytes != 0 || st.cache_items != 30)
				_exit(13);
			coordl_destroy(ld);
			_exit(0);
		}
	}
	close(up[1]);
	for (int phase = 0; phase < 2 && ok_run; phase++) {
		for (int r = 0; r < 2 && ok_run; r++)
			ok_run = wait_byte(up[0]) == 0;
		for (int r = 0; r < 2 && ok_run; r++)
			ok_run = write(down[r][1], "g", 1) == 1;
	}
	for (int r = 0; r < 2; r++) {
		int st = -1;
		if (!ok_run && pid[r] > 0)
			kill(pid[r], SIGKILL);
		if (pid[r] > 0 && waitpid(pid[r], &st, 0) == pid[r] && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0)
			good++;
		else
			diag("rank %d: status %d", r, st);
	}
	is_int(good, 2, "ranks in two processes share one job cache: epoch 1 is all hits for both");
	close(up[0]);
	for (int r = 0; r < 2; r++) {
		close(down[r][0]);
		close(down[r][1]);
	}
}

/* An unsafe file at the cache's path, a file system without room: the
 * loader runs without a cache, saying why. */
static void test_fallbacks(void)
{
	char seg[1200], victim[1200];
	coordl_error_t err = { "" };
	coordl_loader_t *ld;
	pid_t pid;
	int st;

	snprintf(seg, sizeof(seg), "%s/coordl-%u-job_1.cache", cdir, (unsigned)geteuid());
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	if (td_write_file(victim, "keep me", 7) < 0 || symlink(victim, seg) < 0)
		bail_out("cannot plant the symlink");
	ld = make(ds_a, COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, -1, NULL, 0, 1, &err);
	ok(ld && stats(ld).cache_bytes_limit == 0 && strstr(note(ld), "symbolic link") &&
	   strstr(note(ld), "without a cache"),
	   "issue 12: a symlink planted at the job cache's path: the loader runs without a cache: %s",
	   note(ld));
	ok(ld && td_run_epoch(ld, 0, NULL, 0, NULL, 0) == 30 && td_file_size(victim) == 7,
	   "  runs its epoch, and the file the link points to is untouched");
	coordl_destroy(ld);
	unlink(seg);
	unlink(victim);

	if ((pid = fork()) == 0) {
		struct rlimit rl;
		coordl_loader_t *l;
		signal(SIGXFSZ, SIG_IGN);
		getrlimit(RLIMIT_FSIZE, &rl);
		rl.rlim_cur = 4096;
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(3);
		l = make(ds_a, COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, -1, NULL, 0, 1, &err);
		if (!l)
			_exit(4);
		if (stats(l).cache_bytes_limit != 0 || !strstr(note(l), "job_1") ||
		    !strstr(note(l), "without a cache")) {
			fprintf(stderr, "note: %s\n", note(l));
			_exit(5);
		}
		if (td_run_epoch(l, 0, NULL, 0, NULL, 0) != 30)
			_exit(6);
		coordl_destroy(l);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "issue 12: no room for the job's cache: the loader runs without one (status %d)",
	   WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(void)
{
	char *tmp = td_tmpdir("multi");

	snprintf(dir, sizeof(dir), "%s", tmp);
	snprintf(cdir, sizeof(cdir), "%s/cache", dir);
	snprintf(ds_a, sizeof(ds_a), "%s/a", dir);
	snprintf(ds_b, sizeof(ds_b), "%s/b", dir);
	if (mkdir(cdir, 0700) < 0 || (bytes_a = td_imagefolder(ds_a, 3, 10)) < 0 ||
	    (bytes_b = td_imagefolder(ds_b, 2, 8)) < 0)
		bail_out("cannot write the test datasets");
	unsetenv(SYNERGY_ENV_CACHE_GRANT);
	set_env();
	test_train_and_eval();
	test_ranks();
	test_fallbacks();
	td_rmrf(tmp);
	free(tmp);
	return done_testing();
}
