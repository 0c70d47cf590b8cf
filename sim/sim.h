/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim.h: internals of synergy-sim, the trace-driven simulator. Traces
 * (read, write, generate), the cluster description, and the two engines
 * that run the policy library (libsynpolicy) over a trace: rounds
 * (engine.c) and live Slurm (live.c).
 */
#ifndef SYN_SIM_H
#define SYN_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "synergy_policy.h"

/* One job of a trace, and what happened to it in a run. */
typedef struct sim_job {
	uint64_t id;
	double arrival;  /* s */
	int gpus;
	double duration; /* s of work at the GPU-proportional share */
	char model[SYN_PROFILE_KEY_MAX + 1];
	const syn_profile_t *profile;
	uint64_t group;  /* hyperparameter search (CoorDL's coordinated prep): the
			  * jobs with the same non-zero group are the trials of one
			  * search (same GPUs and model, checked on reading); 0: none */
	/* Results of a run. */
	double start, finish; /* -1 until known */
	int changes;          /* times its allocation changed while it ran */
	double tput_sum;      /* rounds: sum over rounds run of tput/prop_tput; live: of
			       * tput/prop_tput x seconds (the mean speed-up) */
	int rounds_run;
	double run_s;         /* live: seconds run (0 in rounds) */
} sim_job_t;

typedef struct sim_trace {
	sim_job_t *jobs;
	int n;
} sim_trace_t;

/* Workload generator parameters (the Philly-derived workload of Synergy). */
typedef struct sim_gen {
	int n_jobs;
	double rate_per_hour; /* Poisson arrivals */
	uint64_t seed;
	int philly_gpus;      /* 0: 1-GPU jobs only; 1: 70/10/15/5 % of 1/2/4/8 */
	double split[3];      /* image / language / speech fractions */
	int search_k;         /* > 1: a fraction search_frac of arrivals are searches of */
	double search_frac;   /* search_k trials (one group) arriving together; 0: none */
} sim_gen_t;

/* Profiles the simulator knows: measured ones (from --profiles) first,
 * then the built-ins. */
typedef struct sim_profiles sim_profiles_t;

/* Cluster: groups of identical nodes. */
typedef struct sim_cluster {
	syn_node_t *nodes;
	int n_nodes;
	int total_gpus;
	double total_cpus, total_mem;
} sim_cluster_t;

typedef struct sim_cfg {
	double round_s;
	syn_round_opts_t opts;
	uint64_t win_lo, win_hi; /* measured job ids, inclusive */
	int coord;               /* 1: the trials of a search share their prep (below) */
} sim_cfg_t;

typedef struct sim_result {
	int n_done, n_window;
	int n_window_drain; /* window jobs that finished after the last arrival */
	double jct_mean, jct_median, jct_p99; /* over the window, s */
	double makespan;                       /* s, first arrival to last finish */
	double gpu_util, cpu_util, mem_util;   /* allocated / capacity over the makespan */
	double speedup_mean;                   /* mean tput/prop_tput over job-rounds run */
	long rounds, violations, carried, changed;
	char first_violation[200];
	double cpu_s;                          /* CPU time the run took */
	/* Searches (coordinated prep, see sim_run): */
	int n_members;        /* jobs of the trace in a search (group != 0) */
	long coord_runs;      /* member-rounds (live: member-plans) run sharing prep */
	long coord_slower;    /* ... of them slower than the member alone at the same
			       * cores and cache per GPU (a profile that falls) */
} sim_result_t;

/* Error text for the CLI, with the file and line when there is one. */
typedef struct sim_error {
	char text[256];
} sim_error_t;

int sim_trace_read(const char *path, sim_profiles_t *pr, sim_trace_t *t, sim_error_t *err);
int sim_trace_write(const char *path, const sim_trace_t *t, sim_error_t *err);
int sim_trace_generate(const sim_gen_t *g, sim_profiles_t *pr, sim_trace_t *t, sim_error_t *err);
void sim_trace_free(sim_trace_t *t);

sim_profiles_t *sim_profiles_create(const char *dir, sim_error_t *err);
void sim_profiles_destroy(sim_profiles_t *pr);
/* The profile for a model key, or NULL with err naming it. */
const syn_profile_t *sim_profiles_get(sim_profiles_t *pr, const char *key, sim_error_t *err);

/* Parse "16x8:24:500[,NxG:C:M...]". */
int sim_cluster_parse(const char *spec, sim_cluster_t *c, sim_error_t *err);
void sim_cluster_free(sim_cluster_t *c);

/*
 * Searches (CoorDL's coordinated prep, issue 15; synergy-sim(1), SEARCHES).
 * The jobs of a trace with the same non-zero group are the trials of one
 * hyperparameter search (same GPUs and model). With cfg->coord, the trials
 * of a search on one node prepare each batch once for all of them: they
 * are planned as one consumer whose profile is syn_profile_group(p, k) (the
 * cores axis divided by k), and each runs at that consumer's throughput
 * over its own floor (its profile at its own GPU share).
 *   rounds (sim_run): each round, the active trials of a search are chunked
 *     in arrival order into composite policy jobs of k x g GPUs, k at most
 *     what one node holds (GPUs; and, except under prop, as many trials as
 *     one node's memory gives the best-case cache per GPU). The round is
 *     first run with every trial on its own; a composite the round with
 *     composites leaves waiting, places on more than one node, or runs
 *     slower than any of its trials did on its own, is dissolved for the
 *     round and the round re-run. Trials on their own never share prep.
 *   live (sim_run_live): trials are placed as any job; syn_node_tune gets
 *     their group, so the trials of a search on one node are one consumer
 *     there (on different nodes: one per node). Without the agent (prop,
 *     tune's 3 steps) a node with trials on it is still planned, with no
 *     grants, for the group's throughput.
 * r->n_members, coord_runs and coord_slower report it.
 */

/* Run the trace; job results are written into t->jobs. */
int sim_run(sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, sim_result_t *r,
	    sim_error_t *err);

/* Run the trace in the live-Slurm model (live.c, synergy-sim(1)): event
 * driven, jobs sized in accounting by syn_size_job (prop: at the share),
 * grants from syn_node_tune at job start and end. cfg->opts.allocator must
 * be PROP or TUNE. */
int sim_run_live(sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, sim_result_t *r,
		 sim_error_t *err);

/* The result of a run from the jobs' times (window, JCT, makespan) and the
 * integrals of allocated GPUs, cores and memory (GB) over time, and the
 * speed-up sum and its weight. Returns 0, or -1 when out of memory. */
int sim_summarize(const sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, int done,
		  double gpu_s, double cpu_s, double mem_s, double speed_sum, double speed_n,
		  sim_result_t *r);

/* Write the per-job results as CSV rows (header if header != 0). */
void sim_jobs_write(FILE *f, const sim_trace_t *t, const char *alloc, const char *order,
		    int header);

int sim_err(sim_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* qsort comparison of doubles, ascending. */
int sim_dcmp(const void *a, const void *b);

#endif
