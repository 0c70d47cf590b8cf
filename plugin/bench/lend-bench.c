/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lend-bench: what one lending event costs a starting or ending job.
 *
 * Runs syn__lend_rebalance() (lock, records, cgroup tree, profiles, plan,
 * cgroup writes) N times on a live node and prints the wall and CPU time
 * per call as min/median/max. With a steady state every call after the
 * first changes nothing, so this is the fixed cost each job start and end
 * pays. Given a borrowing job, it alternates taking its lent CPUs back
 * (syn__lend_step_start, timed too) and lending them again, which adds
 * the cgroup writes and the re-pinning of the job's threads.
 * Root only; run by plugin/bench/lend-bench.sh on a throwaway cluster.
 *
 * Usage: lend-bench SYNERGY_CONF NODE [N [JOBID]]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/conf.h"
#include "plugin/node/cgroup.h"
#include "plugin/node/lend.h"
#include "plugin/shared/util.h"
#include "plugin/bench/bench_time.h"

static void logf_(int is_error, const char *msg, void *arg)
{
	int *errors = arg;

	if (is_error) {
		(*errors)++;
		fprintf(stderr, "%s\n", msg);
	}
}

static void row(const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	printf("%-28s %10.1f %10.1f %10.1f\n", name, v[0], v[n / 2], v[n - 1]);
}

typedef struct find {
	uint32_t jobid;
	char rel[512];
} find_t;

static int find_job(uint32_t id, const char *rel, void *arg)
{
	find_t *f = arg;

	if (id != f->jobid)
		return 0;
	snprintf(f->rel, sizeof(f->rel), "%s", rel);
	return 1;
}

int main(int argc, char **argv)
{
	int i, n, errors = 0, flip = argc > 4;
	uint64_t calls = 200, jobid = 0;
	double *wall, *cpu, *back;
	char err[300], node_rel[512];
	syn_error_t cerr;
	syn_conf_t conf;
	syn__agent_t agent;
	syn__cg_t *cg;
	find_t f;

	if (argc < 3) {
		fprintf(stderr, "usage: lend-bench SYNERGY_CONF NODE [N [JOBID]]\n");
		return 2;
	}
	syn_conf_defaults(&conf);
	if (syn_conf_load(&conf, argv[1], &cerr) < 0) {
		fprintf(stderr, "lend-bench: %s\n", cerr.text);
		return 2;
	}
	if (argc > 3 && syn_parse_u64(argv[3], 1, 1000000, &calls) < 0) {
		fprintf(stderr, "lend-bench: N: '%s' is not a number from 1 to 1000000\n", argv[3]);
		return 2;
	}
	if (flip && syn_parse_u64(argv[4], 1, UINT32_MAX, &jobid) < 0) {
		fprintf(stderr, "lend-bench: JOBID: '%s' is not a job id\n", argv[4]);
		return 2;
	}
	cg = syn__cg_open_conf(&conf, argv[2], NULL, 0, err, sizeof(err));
	if (!cg) {
		fprintf(stderr, "lend-bench: %s\n", err);
		return 1;
	}
	if (syn__agent_init(&agent, &conf, cg, NULL, node_rel, sizeof(node_rel), err,
			    sizeof(err)) < 0) {
		fprintf(stderr, "lend-bench: %s\n", err);
		return 1;
	}
	agent.log = logf_;
	agent.arg = &errors;
	memset(&f, 0, sizeof(f));
	f.jobid = (uint32_t)jobid;
	if (flip && (syn__cg_foreach_job(cg, node_rel, find_job, &f) < 0 || !f.rel[0])) {
		fprintf(stderr, "lend-bench: job %s is not running on %s\n", argv[4], argv[2]);
		return 1;
	}
	n = (int)calls;
	wall = calloc((size_t)n, sizeof(*wall));
	cpu = calloc((size_t)n, sizeof(*cpu));
	back = calloc((size_t)n, sizeof(*back));
	if (!wall || !cpu || !back)
		return 1;
	for (i = 0; i < n; i++) {
		double w0, c0;

		if (flip) {
			w0 = bench_wall_us();
			syn__lend_step_start(&agent, f.rel, (uint32_t)jobid);
			back[i] = bench_wall_us() - w0;
		}
		w0 = bench_wall_us();
		c0 = bench_cpu_us();
		syn__lend_rebalance(&agent, NULL, 0);
		wall[i] = bench_wall_us() - w0;
		cpu[i] = bench_cpu_us() - c0;
	}
	printf("%-28s %10s %10s %10s   (%d calls, %d errors)\n", flip ? "rebalance that lends 1 CPU" :
	       "rebalance, nothing to change", "min", "median", "max", n, errors);
	row("  wall us", wall, n);
	row("  cpu us (user+sys)", cpu, n);
	if (flip)
		row("  take-back wall us", back, n);
	free(back);
	free(wall);
	free(cpu);
	syn__cg_close(cg);
	return errors ? 1 : 0;
}
