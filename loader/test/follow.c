/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * follow.t: the loader follows its CPU set. A loader whose thread count
 * the caller left unset runs one worker per CPU it may use; when the
 * process's CPU set narrows or widens while it runs, coordl_next() pins
 * every thread to the new set (widening included, which the kernel never
 * does by itself) and resizes the pool, and the sample order stays the
 * one a fixed single thread gives. SYNERGY_FOLLOW_CPUSET=0, a thread count
 * given to coordl_create() or coordl_set_threads() turn following off.
 *
 * The CPU set is changed with sched_setaffinity() on the consumer thread
 * (no root needed) and, as root on a cgroup v1 cpuset hierarchy, by
 * narrowing and widening a cpuset cgroup of the test's own; the test needs
 * 2 or more CPUs and skips otherwise.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coordl.h"
#include "loader/follow.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define NCLS 4
#define NPER 16
#define N (NCLS * NPER)
#define BS 2

static char root[1024];
static cpu_set_t orig;

static coordl_loader_t *make(int threads)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.out_size = 16;
	cfg.batch_size = BS;
	cfg.threads = threads;
	cfg.cache_bytes = 0;
	cfg.seed = 77;
	if (!(ld = coordl_create(&cfg, &err)))
		diag("create: %s", err.text);
	return ld;
}

/* Longer than the follower's period, so the next coordl_next() looks. */
static void pause_period(void)
{
	struct timespec ts = { 0, (long)(COORDL__FOLLOW_PERIOD * 1.5e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Threads of this process whose allowed CPUs are exactly `set`. */
static int tasks_pinned_to(const cpu_set_t *set)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], line[4096];
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			coordl__cpus_t s, want = { (cpu_set_t *)set, sizeof(*set) };
			if (strncmp(line, "Cpus_allowed_list:", 18))
				continue;
			const char *v = line + 18;
			while (*v == ' ' || *v == '\t')
				v++;
			if (coordl__cpus_parse(v, &s) > 0 && coordl__cpus_equal(&s, &want))
				n++;
			coordl__cpus_free(&s);
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

static int first_cpu(const cpu_set_t *s)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, s))
			return c;
	return -1;
}

/* One epoch; before batch `at[k]` the consumer's CPU set becomes sets[k]
 * (after a pause longer than the follow period) and, after that batch,
 * threads[k] records the loader's thread count. Returns samples or -1. */
static long run_epoch(coordl_loader_t *ld, uint64_t *idx, int nchg, const int *at,
                      const cpu_set_t *sets, int *threads, int *pinned)
{
	coordl_error_t err = { "" };
	long got = 0;
	int b = 0;

	if (coordl_set_epoch(ld, 1, &err) < 0)
		return -1;
	for (;; b++) {
		coordl_batch_t *batch;
		int k, rc;
		for (k = 0; k < nchg && at[k] != b; k++)
			;
		if (k < nchg) {
			if (sched_setaffinity(0, sizeof(sets[k]), &sets[k]) < 0)
				return -1;
			pause_period();
		}
		if ((rc = coordl_next(ld, &batch, &err)) < 0) {
			diag("next: %s", err.text);
			return -1;
		}
		if (rc == 0)
			break;
		for (int i = 0; i < batch->n && got < N; i++)
			idx[got++] = batch->indices[i];
		coordl_release(ld, batch);
		if (k < nchg) {
			coordl_stats_t st;
			threads[k] = coordl_get_threads(ld);
			if (coordl_get_stats(ld, &st) < 0 || st.threads != threads[k])
				threads[k] = -1;
			pinned[k] = tasks_pinned_to(&sets[k]);
		}
	}
	return got;
}

/* Write a short string to a cgroup file. 0 or -1. */
static int put(const char *dir, const char *file, const char *text)
{
	char path[1200];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!(f = fopen(path, "w")))
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int get(const char *dir, const char *file, char *buf, size_t len)
{
	char path[1200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!(f = fopen(path, "r")))
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * The real thing, where we may (root, cgroup v1 cpuset): move this process
 * into a cpuset cgroup of its own, narrow the cgroup to one CPU (the kernel
 * narrows every thread), then widen it again. The kernel keeps the pins
 * the loader set while narrow, so only the loader can widen its threads:
 * it must, and run one worker per CPU again.
 */
static void test_cgroup_v1(int n, const cpu_set_t *one_set)
{
	char rel[1024] = "", parent[1200], child[1300], cpus[256], mems[256], pid[32], one[16];
	int moved = 0, made = 0;

	if (geteuid() != 0) {
		skip(4, "cpuset cgroup test needs root");
		return;
	}
	FILE *f = fopen("/proc/self/cpuset", "r");
	if (!f || !fgets(rel, sizeof(rel), f)) {
		if (f)
			fclose(f);
		skip(4, "no /proc/self/cpuset");
		return;
	}
	fclose(f);
	rel[strcspn(rel, "\n")] = '\0';
	snprintf(parent, sizeof(parent), "/sys/fs/cgroup/cpuset%s", strcmp(rel, "/") ? rel : "");
	if (get(parent, "cpuset.cpus", cpus, sizeof(cpus)) < 0 ||
	    get(parent, "cpuset.mems", mems, sizeof(mems)) < 0) {
		skip(4, "no cgroup v1 cpuset hierarchy");
		return;
	}
	coordl__cpus_t all, mine = { &orig, sizeof(orig) };
	int same = coordl__cpus_parse(cpus, &all) > 0 && coordl__cpus_equal(&all, &mine);
	coordl__cpus_free(&all);
	if (!same) {
		skip(4, "the process's affinity differs from its cpuset");
		return;
	}
	snprintf(child, sizeof(child), "%s/coordl-follow-%ld", parent, (long)getpid());
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	snprintf(one, sizeof(one), "%d", first_cpu(one_set));
	if (mkdir(child, 0755) < 0 || (made = 1, put(child, "cpuset.mems", mems) < 0) ||
	    put(child, "cpuset.cpus", cpus) < 0 || put(child, "cgroup.procs", pid) < 0) {
		skip(4, "cannot make and join a cpuset cgroup");
		goto out;
	}
	moved = 1;

	coordl_loader_t *ld = make(0);
	coordl_batch_t *b;
	int threads[2] = { 0, 0 }, pinned[2] = { 0, 0 };
	const char *want[2] = { one, cpus };
	const cpu_set_t *sets[2] = { one_set, &orig };
	int good = ld && coordl_set_epoch(ld, 1, NULL) == 0;
	for (int k = 0; good && k < 2; k++) {
		if (put(child, "cpuset.cpus", want[k]) < 0) {
			good = 0;
			break;
		}
		pause_period();
		if (coordl_next(ld, &b, NULL) != 1) {
			good = 0;
			break;
		}
		coordl_release(ld, b);
		threads[k] = coordl_get_threads(ld);
		pinned[k] = tasks_pinned_to(sets[k]);
	}
	ok(good, "cgroup narrowed to CPU %s and widened back to %s while the loader ran", one, cpus);
	is_int(threads[0], 1, "cgroup narrowed: one worker");
	is_int(threads[1], n, "cgroup widened: one worker per CPU again");
	ok(pinned[1] >= n + 1, "cgroup widened: the loader widened every thread's pins (%d)", pinned[1]);
	coordl_destroy(ld);
out:
	if (moved)
		put(parent, "cgroup.procs", pid);
	if (made)
		rmdir(child);
	sched_setaffinity(0, sizeof(orig), &orig);
}

static void test_parse(void)
{
	static const struct { const char *s; int n; } cases[] = {
		{ "0", 1 }, { "0-3\n", 4 }, { "0-1,4,6-7", 5 }, { "3,1", 2 },
		{ "", -1 }, { "\n", -1 }, { "a", -1 }, { "1-", -1 }, { "3-1", -1 },
		{ "0,,1", -1 }, { "0 1", -1 }, { "99999", -1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		coordl__cpus_t s;
		char name[64];
		char shown[32];
		size_t k = 0;
		/* Show a newline as \n so that the TAP line stays one line. */
		for (const char *c = cases[i].s; *c && k + 3 < sizeof(shown); c++) {
			if (*c == '\n') {
				shown[k++] = '\\';
				shown[k++] = 'n';
			} else {
				shown[k++] = *c;
			}
		}
		shown[k] = '\0';
		snprintf(name, sizeof(name), "cpu list '%s' -> %d", shown, cases[i].n);
		is_int(coordl__cpus_parse(cases[i].s, &s), cases[i].n, name);
		coordl__cpus_free(&s);
	}
}

/* Issue 12: nodes with many CPUs. A cpuset file holding a long fragmented
 * list (every other CPU of 8192: 19 KB of text) is read whole, never cut at
 * a fixed buffer, and CPUs beyond a cpu_set_t's 1024 count; a file beyond
 * the reader's limit is an error, not a silently shorter list. */
static void test_issue12_long_lists(const char *dir)
{
	size_t cap = 64 * 1024, len = 0;
	char *text = malloc(cap), path[1200];
	coordl__cpus_t s;
	int n;

	if (!text)
		bail_out("out of memory");
	for (int c = 0; c < 8192; c += 2)
		len += (size_t)snprintf(text + len, cap - len, "%s%d", c ? "," : "", c);
	text[len++] = '\n';
	text[len] = '\0';
	snprintf(path, sizeof(path), "%s/cpus-long", dir);
	if (td_write_file(path, text, len) < 0)
		bail_out("cannot write the cpu list");
	n = coordl__cpus_read(path, &s);
	ok(n == 4096 && s.set && CPU_ISSET_S(8190, s.size, s.set) && !CPU_ISSET_S(8191, s.size, s.set) &&
	   CPU_ISSET_S(0, s.size, s.set),
	   "issue 12: a %zu-byte fragmented cpuset file is read whole: %d CPUs, up to 8190", len, n);
	coordl__cpus_free(&s);
	is_int(coordl__cpus_parse("1500-1503,2047", &s), 5, "issue 12: CPUs beyond 1023 are kept");
	coordl__cpus_free(&s);
	/* Cut where a short buffer would cut: the list must not parse as a
	 * shorter, valid one. */
	text[4095] = '\0';
	n = coordl__cpus_parse(text, &s);
	coordl__cpus_free(&s);
	ok(n != 4096, "a list cut at 4095 bytes does not pass for the whole one (%d)", n);
	/* A file beyond the limit. */
	{
		FILE *f = fopen(path, "w");
		for (size_t k = 0; f && k < (COORDL__FOLLOW_MAX_TEXT / 2) + 16; k++)
			fputs("0,", f);
		if (f)
			fputs("1\n", f);
		if (!f || fclose(f) != 0)
			bail_out("cannot write the long file");
		errno = 0;
		n = coordl__cpus_read(path, &s);
		ok(n == -1 && errno == EFBIG, "a cpuset file beyond %d bytes is an error (EFBIG), not cut",
		   COORDL__FOLLOW_MAX_TEXT);
		coordl__cpus_free(&s);
	}
	unlink(path);
	free(text);
}

int main(void)
{
	char *dir;
	int n;
	uint64_t ref[N], got[N];
	coordl_loader_t *ld;

	test_parse();
	dir = td_tmpdir("follow");
	test_issue12_long_lists(dir);
	unsetenv(SYNERGY_ENV_THREADS);
	unsetenv(SYNERGY_ENV_FOLLOW_CPUSET);
	if (sched_getaffinity(0, sizeof(orig), &orig) < 0 || (n = CPU_COUNT(&orig)) < 2) {
		skip(17, "fewer than 2 CPUs to narrow the CPU set");
		td_rmrf(dir);
		free(dir);
		return done_testing();
	}
	snprintf(root, sizeof(root), "%s/ds", dir);
	if (td_imagefolder(root, NCLS, NPER) < 0)
		bail_out("cannot write the test dataset");

	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(first_cpu(&orig), &one);

	/* The reference order: one fixed thread. */
	ld = make(1);
	long nref = ld ? td_run_epoch(ld, 1, ref, N, NULL, 0) : -1;
	coordl_destroy(ld);
	is_int(nref, N, "reference epoch with 1 fixed thread");

	/* Follow: narrow to one CPU, then widen back. */
	ld = make(0);
	ok(ld && coordl_get_threads(ld) == n, "threads unset: one worker per CPU (%d)", n);
	int at[2] = { 3, 9 }, thr[2] = { 0, 0 }, pin[2] = { 0, 0 };
	cpu_set_t sets[2] = { one, orig };
	long ngot = ld ? run_epoch(ld, got, 2, at, sets, thr, pin) : -1;
	is_int(thr[0], 1, "narrowed to one CPU: one worker (get_threads and stats agree)");
	ok(pin[0] >= n + 1, "narrowed: consumer and all %d workers pinned to it (%d)", n, pin[0]);
	is_int(thr[1], n, "widened back: one worker per CPU again");
	ok(pin[1] >= n + 1, "widened: consumer and every worker pinned to the wider set (%d)", pin[1]);
	ok(ngot == N && memcmp(got, ref, sizeof(ref)) == 0,
	   "sample order unchanged while the pool followed the CPU set");
	coordl_destroy(ld);
	sched_setaffinity(0, sizeof(orig), &orig);

	/* SYNERGY_FOLLOW_CPUSET=0: the pool keeps its size. */
	setenv(SYNERGY_ENV_FOLLOW_CPUSET, "0", 1);
	ld = make(0);
	ngot = ld ? run_epoch(ld, got, 1, at, sets, thr, pin) : -1;
	is_int(thr[0], n, "SYNERGY_FOLLOW_CPUSET=0: the pool is not resized");
	ok(ngot == N && memcmp(got, ref, sizeof(ref)) == 0, "  and the order is the same");
	coordl_destroy(ld);
	sched_setaffinity(0, sizeof(orig), &orig);
	unsetenv(SYNERGY_ENV_FOLLOW_CPUSET);

	/* A thread count given to coordl_create() is not changed. */
	ld = make(2);
	ngot = ld ? run_epoch(ld, got, 1, at, sets, thr, pin) : -1;
	is_int(ngot == N ? thr[0] : -1, 2, "threads=2 from the API: not following");
	coordl_destroy(ld);
	sched_setaffinity(0, sizeof(orig), &orig);

	/* Nor one set later with coordl_set_threads(). */
	ld = make(0);
	ok(ld && coordl_set_threads(ld, 3, NULL) == 0, "coordl_set_threads(3)");
	ngot = ld ? run_epoch(ld, got, 1, at, sets, thr, pin) : -1;
	is_int(ngot == N ? thr[0] : -1, 3, "after coordl_set_threads: not following");
	coordl_destroy(ld);
	sched_setaffinity(0, sizeof(orig), &orig);

	/* A malformed switch is an error naming the variable. */
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	setenv(SYNERGY_ENV_FOLLOW_CPUSET, "yes", 1);
	coordl_config_init(&cfg);
	cfg.path = root;
	errno = 0;
	ld = coordl_create(&cfg, &err);
	ok(!ld && errno == EINVAL && strstr(err.text, SYNERGY_ENV_FOLLOW_CPUSET),
	   "SYNERGY_FOLLOW_CPUSET=yes is refused, naming it");
	coordl_destroy(ld);
	unsetenv(SYNERGY_ENV_FOLLOW_CPUSET);

	test_cgroup_v1(n, &one);

	td_rmrf(dir);
	free(dir);
	return done_testing();
}
