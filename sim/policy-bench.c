/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-bench.c: timing and quality benchmarks of the policy core, printed
 * as tables (run by bench/sim-bench.sh; numbers go to BENCHMARKS.md).
 *
 *   round:  CPU time of one TUNE (and PROP) round for N pending jobs on S
 *           servers (default 1000 jobs, 128 servers of 8 GPUs, 24 cores,
 *           500 GB), repeated R times: min / median / max.
 *   opt:    TUNE's total normalised throughput against OPT's on random
 *           64-GPU instances (8 servers, 1-GPU jobs, as many jobs as GPUs
 *           and a 1.5x backlog), for the three model splits of the paper.
 *
 * Usage: synergy-policy-bench [round|opt|all] [-n JOBS] [-S SERVERS] [-R REPS] [-I INSTANCES]
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/parse.h"
#include "synergy_policy.h"

static uint64_t rng = 12345;

static double unif(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A job of the paper's mix: split over image/language/speech, GPUs 1 or
 * the Philly 70/10/15/5 mix. */
static void make_job(syn_job_t *j, uint64_t id, const double split[3], int philly)
{
	const syn_profile_t *cat[3][10];
	int nc[3] = { 0, 0, 0 };
	for (int i = 0; i < syn_builtin_count(); i++) {
		syn_category_t c;
		const syn_profile_t *p = syn_builtin_at(i, &c);
		cat[c][nc[c]++] = p;
	}
	double u = unif() * (split[0] + split[1] + split[2]);
	int c = u < split[0] ? 0 : u < split[0] + split[1] ? 1 : 2;
	memset(j, 0, sizeof *j);
	j->id = id;
	j->gpus = 1;
	if (philly) {
		u = unif();
		j->gpus = u < 0.7 ? 1 : u < 0.8 ? 2 : u < 0.95 ? 4 : 8;
	}
	j->profile = cat[c][(int)(unif() * nc[c]) % nc[c]];
	j->arrival = (double)id;
	j->duration = 600 + unif() * 36000;
	j->remaining = j->duration * unif();
}

static void bench_round(int n_jobs, int n_srv, int reps)
{
	const double split[3] = { 20, 70, 10 };
	syn_node_t *nodes = calloc((size_t)n_srv, sizeof *nodes);
	syn_job_t *jobs = calloc((size_t)n_jobs, sizeof *jobs);
	double *t = calloc((size_t)reps, sizeof *t);
	syn_round_opts_t o;
	syn_round_stats_t st;
	syn_error_t err;

	if (!nodes || !jobs || !t) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (int i = 0; i < n_srv; i++)
		nodes[i] = (syn_node_t){ .gpus = 8, .cpus = 24, .mem_gb = 500 };
	for (int i = 0; i < n_jobs; i++)
		make_job(&jobs[i], (uint64_t)i, split, 1);
	printf("# one round: %d pending jobs (Philly GPU mix, split 20/70/10) on %d servers of 8 GPUs\n",
	       n_jobs, n_srv);
	printf("%-7s %-5s %6s %7s %10s %10s %10s\n", "alloc", "order", "placed", "waiting",
	       "min_ms", "median_ms", "max_ms");
	for (int a = SYN_ALLOC_PROP; a <= SYN_ALLOC_TUNE; a++) {
		for (int ord = SYN_ORDER_FIFO; ord <= SYN_ORDER_SRTF; ord++) {
			syn_round_opts_init(&o);
			o.allocator = (syn_allocator_t)a;
			o.ordering = (syn_ordering_t)ord;
			for (int r = 0; r < reps; r++) {
				double t0 = cpu_now();
				if (syn_round(nodes, n_srv, jobs, n_jobs, &o, &st, &err) < 0) {
					fprintf(stderr, "round failed: %s\n", err.text);
					exit(1);
				}
				t[r] = (cpu_now() - t0) * 1000;
			}
			qsort(t, (size_t)reps, sizeof *t, dcmp);
			printf("%-7s %-5s %6d %7d %10.2f %10.2f %10.2f\n", syn_allocator_name(o.allocator),
			       syn_ordering_name(o.ordering), st.placed, st.waiting, t[0], t[reps / 2],
			       t[reps - 1]);
		}
	}
	free(nodes);
	free(jobs);
	free(t);
}

static void bench_opt(int instances)
{
	static const double splits[3][3] = { { 20, 70, 10 }, { 33, 33, 33 }, { 50, 0, 50 } };
	enum { SRV = 8, JOBS = 96 };
	syn_node_t nodes[SRV];
	syn_job_t jobs[JOBS];
	syn_round_opts_t o;
	syn_round_stats_t st;
	syn_error_t err;
	double *ratio = calloc((size_t)instances, sizeof *ratio);
	double *real = calloc((size_t)instances, sizeof *real);
	double *real4 = calloc((size_t)instances, sizeof *real4);

	if (!ratio || !real || !real4) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}

	printf("# TUNE vs OPT total normalised throughput: %d servers x (8 GPUs, 24 cores, 500 GB), "
	       "%d pending 1-GPU jobs, FIFO\n", SRV, JOBS);
	printf("# ratio = TUNE total / bound (phase 1's linear relaxation: cores and memory pooled over\n"
	       "# the cluster, cells fractional; a proven upper bound on any allocation); opt_mean = OPT\n"
	       "# after packing;\n"
	       "# vs_opt = median of TUNE total / OPT total after packing (a realisable allocation);\n"
	       "# within10 = instances with TUNE >= 0.9 x OPT; steps1-4 = vs_opt and within10 of TUNE\n"
	       "# without its step 5 (the paper's steps 1-3 and leftover)\n");
	printf("%-9s %9s %10s %10s %10s %10s %10s %9s %9s %7s %8s %8s %8s %8s %7s\n", "split",
	       "instances", "prop_mean", "tune_mean", "opt_mean", "opt_bound", "min_ratio", "med_ratio",
	       "max_ratio", "vs_opt", "within10", "steps1-4", "within10", "fallback", "unsolved");
	char (*rows)[160] = calloc((size_t)(3 * instances), sizeof *rows);
	int n_rows = 0;
	if (!rows) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (int s = 0; s < 3; s++) {
		double sp = 0, stn = 0, so = 0, sb = 0;
		int solved = 0, unsolved = 0, fallback = 0, in10 = 0, in10_4 = 0;
		for (int k = 0; k < instances; k++) {
			double tot[4], opt_real = 0, t0 = 0, opt_cpu = 0;
			int opt_fb = 0;
			for (int i = 0; i < SRV; i++)
				nodes[i] = (syn_node_t){ .gpus = 8, .cpus = 24, .mem_gb = 500 };
			for (int i = 0; i < JOBS; i++)
				make_job(&jobs[i], (uint64_t)i, splits[s], 0);
			int bad = 0;
			for (int a = 0; a < 4; a++) {
				syn_round_opts_init(&o);
				o.allocator = a == 0 ? SYN_ALLOC_PROP : a == 2 ? SYN_ALLOC_OPT : SYN_ALLOC_TUNE;
				o.no_exchange = a == 3;
				o.opt_time_limit_s = 5;
				t0 = cpu_now();
				if (syn_round(nodes, SRV, jobs, JOBS, &o, &st, &err) < 0) {
					bad = 1;
					break;
				}
				if (syn_check_round(nodes, SRV, jobs, JOBS, &err) != 0) {
					fprintf(stderr, "violation: %s\n", err.text);
					exit(1);
				}
				tot[a] = st.total_tput;
				if (a == 2) {
					opt_cpu = cpu_now() - t0;
					sb += st.opt_bound;
					fallback += st.opt_fallback;
					opt_fb = st.opt_fallback;
					tot[2] = st.opt_bound;
					opt_real = st.total_tput;
					so += st.total_tput;
				}
			}
			if (bad) {
				unsolved++;
				continue;
			}
			snprintf(rows[n_rows++], sizeof rows[0],
				 "%g/%g/%g %4d %8.2f %8.2f %8.2f %8.2f %8.2f %11.3f %13.3f %11.3f %8.2f %8d",
				 splits[s][0], splits[s][1], splits[s][2], k, tot[0], tot[3], tot[1], opt_real,
				 tot[2], opt_real > 0 ? tot[1] / opt_real : 0, tot[1] / tot[2],
				 opt_real > 0 ? tot[3] / opt_real : 0, opt_cpu, opt_fb);
			sp += tot[0];
			stn += tot[1];
			real[solved] = opt_real > 0 ? tot[1] / opt_real : 0;
			real4[solved] = opt_real > 0 ? tot[3] / opt_real : 0;
			in10 += real[solved] >= 0.9;
			in10_4 += real4[solved] >= 0.9;
			ratio[solved++] = tot[1] / tot[2];
		}
		qsort(ratio, (size_t)solved, sizeof *ratio, dcmp);
		qsort(real, (size_t)solved, sizeof *real, dcmp);
		qsort(real4, (size_t)solved, sizeof *real4, dcmp);
		char name[48];
		snprintf(name, sizeof name, "%g/%g/%g", splits[s][0], splits[s][1], splits[s][2]);
		if (solved)
			printf("%-9s %9d %10.2f %10.2f %10.2f %10.2f %10.3f %9.3f %9.3f %7.3f %5d/%-2d "
			       "%8.3f %5d/%-2d %8d %7d\n",
			       name, solved, sp / solved, stn / solved, so / solved, sb / solved, ratio[0],
			       ratio[solved / 2], ratio[solved - 1], real[solved / 2], in10, solved,
			       real4[solved / 2], in10_4, solved, fallback, unsolved);
		else
			printf("%-9s %9d %10s %10s %10s %10s %10s %9s %9s %7s %8s %8s %8s %8d %7d\n", name,
			       0, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", fallback, unsolved);
	}
	printf("\n# per instance: opt = OPT after packing, bound = phase 1's relaxation, cpu_s = the OPT round\n");
	printf("%-8s %4s %8s %8s %8s %8s %8s %11s %13s %11s %8s %8s\n", "split", "inst", "prop",
	       "tune1-4", "tune", "opt", "bound", "tune/opt", "tune/bound", "tune1-4/opt", "cpu_s",
	       "fallback");
	for (int i = 0; i < n_rows; i++)
		printf("%s\n", rows[i]);
	free(rows);
	free(ratio);
	free(real);
	free(real4);
}

int main(int argc, char **argv)
{
	const char *what = "all";
	int n_jobs = 1000, n_srv = 128, reps = 21, inst = 10, c;
	uint64_t v;

	if (argc > 1 && argv[1][0] != '-') {
		what = argv[1];
		optind = 2;
	}
	while ((c = getopt(argc, argv, "n:S:R:I:h")) != -1) {
		switch (c) {
		case 'n':
		case 'S':
		case 'R':
		case 'I':
			if (syn_parse_u64(optarg, 1, 1000000, &v) < 0) {
				fprintf(stderr, "%s: -%c '%s': expected an integer 1..1000000\n",
					argv[0], c, optarg);
				return 2;
			}
			*(c == 'n'           ? &n_jobs
				  : c == 'S' ? &n_srv
				  : c == 'R' ? &reps
					     : &inst) = (int)v;
			break;
		default:
			fprintf(stderr, "usage: %s [round|opt|all] [-n JOBS] [-S SERVERS] [-R REPS] [-I INSTANCES]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (n_jobs < 1 || n_srv < 1 || reps < 1 || inst < 1) {
		fprintf(stderr, "%s: counts must be >= 1 (got -n %d -S %d -R %d -I %d)\n", argv[0],
			n_jobs, n_srv, reps, inst);
		return 2;
	}
	if (strcmp(what, "round") && strcmp(what, "opt") && strcmp(what, "all")) {
		fprintf(stderr, "%s: unknown benchmark '%s' (expected round, opt or all)\n", argv[0],
			what);
		return 2;
	}
	if (strcmp(what, "round") == 0 || strcmp(what, "all") == 0)
		bench_round(n_jobs, n_srv, reps);
	if (strcmp(what, "all") == 0)
		printf("\n");
	if (strcmp(what, "opt") == 0 || strcmp(what, "all") == 0)
		bench_opt(inst);
	return 0;
}
