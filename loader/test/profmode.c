/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profmode.t: the loader's profiling mode as a job profiled on its first
 * run uses it (issue 17). With SYNERGY_PROFILE_MODE=1 and
 * SYNERGY_PROFILE_OUT, a training loader whose thread count the program
 * left unset runs the CPU search from the CPUs it may use, writes a
 * complete report (with the search's elapsed time) and then trains on,
 * following its CPU set again; the sample order is that of any loader.
 * When CPUs are taken from it during the search (the node reclaiming what
 * it lent for the search), the search stops at once with an incomplete
 * report, and the loader trains on, on the CPUs left.
 *
 * The emulated GPU sleeps per batch. CPU sets are changed with
 * sched_setaffinity() on the consumer thread (no root). Each scenario runs
 * in a process of its own (the test re-executes itself), since only the
 * first loader of a process profiles. Needs 2 or more CPUs.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coordl.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define NCLS 4
#define NPER 24
#define BS 4

static char root[1024], rep[1100];

static coordl_loader_t *make(void)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.out_size = 16;
	cfg.batch_size = BS;
	cfg.cache_bytes = 0;
	cfg.seed = 5;
	if (!(ld = coordl_create(&cfg, &err)))
		fprintf(stderr, "create: %s\n", err.text);
	return ld;
}

/* One batch as a GPU at 4000 samples/s would take it. Returns 0 at the
 * epoch's end, -1 on error. */
static int step(coordl_loader_t *ld)
{
	struct timespec ts = { 0, BS * 250000L };
	coordl_batch_t *b;
	coordl_error_t err;
	int rc = coordl_next(ld, &b, &err);

	if (rc == 1) {
		coordl_release(ld, b);
		nanosleep(&ts, NULL);
	}
	return rc;
}

/* Run epochs until the report exists (or max epochs); returns epochs run. */
static int run_until_report(coordl_loader_t *ld, int max)
{
	int e;

	for (e = 0; e < max && access(rep, F_OK) != 0; e++) {
		coordl_set_epoch(ld, (uint64_t)e, NULL);
		while (step(ld) == 1)
			;
	}
	return e;
}

static int count_affinity(void)
{
	cpu_set_t s;

	return sched_getaffinity(0, sizeof(s), &s) == 0 ? CPU_COUNT(&s) : 0;
}

/* Child scenarios: exit 0 when everything held, else a code naming what failed. */
static int child_full(void)
{
	coordl_loader_t *ld = make();
	int ncpu = count_affinity(), e, n;
	cpu_set_t one;

	if (!ld)
		return 10;
	if (coordl_get_threads(ld) != ncpu)
		return 11; /* the search starts at the CPUs it may use */
	e = run_until_report(ld, 60);
	if (access(rep, F_OK) != 0)
		return 12;
	/* Trains on: following its CPU set again, to one CPU. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return 13;
	for (n = 0; n < 3; n++) {
		struct timespec ts = { 0, 150 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		coordl_set_epoch(ld, (uint64_t)(e + n), NULL);
		while (step(ld) == 1)
			;
	}
	if (coordl_get_threads(ld) != 1)
		return 14;
	coordl_destroy(ld);
	return 0;
}

static int child_reclaimed(void)
{
	coordl_loader_t *ld = make();
	coordl_stats_t st;
	cpu_set_t one;
	int e;

	if (!ld)
		return 20;
	/* The node takes back a CPU before the first point is timed. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return 21;
	e = run_until_report(ld, 20);
	if (access(rep, F_OK) != 0)
		return 22; /* the incomplete report is written at once, not at destroy */
	coordl_set_epoch(ld, (uint64_t)e, NULL);
	while (step(ld) == 1)
		;
	if (coordl_get_stats(ld, &st) < 0 || st.samples == 0)
		return 23; /* trains on */
	if (coordl_get_threads(ld) != 1)
		return 24; /* on the CPUs left */
	coordl_destroy(ld);
	return 0;
}

static int scenario(const char *self, const char *which)
{
	pid_t pid;
	int status;

	unlink(rep);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execl(self, self, which, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("PROFMODE_T_DIR");
	char first[64], *text, *tmp;
	int rc, ncpu = count_affinity();

	if (argc == 2 && dir) {
		snprintf(root, sizeof(root), "%s/ds", dir);
		snprintf(rep, sizeof(rep), "%s/rep.json", dir);
		return !strcmp(argv[1], "full") ? child_full() : child_reclaimed();
	}
	if (ncpu < 2) {
		printf("1..0 # SKIP needs 2 or more CPUs in the affinity mask\n");
		return 0;
	}
	dir = tmp = td_tmpdir("profmode");
	snprintf(root, sizeof(root), "%s/ds", dir);
	snprintf(rep, sizeof(rep), "%s/rep.json", dir);
	if (td_imagefolder(root, NCLS, NPER) < 0)
		bail_out("dataset");
	setenv("PROFMODE_T_DIR", dir, 1);
	setenv(SYNERGY_ENV_PROFILE_MODE, "1", 1);
	setenv(SYNERGY_ENV_PROFILE_OUT, rep, 1);
	unsetenv(SYNERGY_ENV_THREADS);
	unsetenv(SYNERGY_ENV_FOLLOW_CPUSET);

	rc = scenario(argv[0], "full");
	ok(rc == 0, "a profiling loader searches from its CPUs, reports, and follows its CPU set "
	   "afterwards (child status %d)", rc);
	text = slurp(rep);
	ok(text && strstr(text, "\"complete\": true"), "the report is complete");
	snprintf(first, sizeof(first), "{ \"threads\": %d,", ncpu);
	ok(text && strstr(text, first), "its first point runs %d threads", ncpu);
	ok(text && strstr(text, "\"elapsed\": ") && !strstr(text, "\"elapsed\": 0.000000"),
	   "it says how long the search took");

	rc = scenario(argv[0], "reclaimed");
	ok(rc == 0, "CPUs taken back during the search: the loader trains on, on the CPUs left "
	   "(child status %d)", rc);
	text = slurp(rep);
	ok(text && strstr(text, "\"complete\": false"),
	   "and its report, written at once, says the search is incomplete");

	td_rmrf(dir);
	free(tmp);
	return done_testing();
}
