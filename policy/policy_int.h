/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy_int.h: internals of libsynpolicy shared between its source files
 * and its unit tests. Not installed; names carry the syn__ prefix.
 */
#ifndef SYN_POLICY_INT_H
#define SYN_POLICY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "synergy_policy.h"

/* Relative slack when comparing resource sums, so that sums of per-GPU
 * shares that are equal in exact arithmetic compare equal. */
#define SYN__EPS 1e-9

/* A node's GPU-proportional share per GPU. */
static inline double syn__share_cpus(const syn_node_t *n)
{
	return n->cpus / n->gpus;
}
static inline double syn__share_mem(const syn_node_t *n)
{
	return n->mem_gb / n->gpus;
}

/* Whether node n's free cores and memory hold g more GPUs' worth of c cores
 * and m GB each (within the SYN__EPS slack); GPUs are not looked at. */
static inline int syn__has_room(const syn_node_t *n, double g, double c, double m)
{
	return n->free_cpus + SYN__EPS * (1 + n->cpus) >= g * c &&
	       n->free_mem_gb + SYN__EPS * (1 + n->mem_gb) >= g * m;
}

/* Whether g GPUs at (c, m) per GPU fit on node n now. */
static inline int syn__fits(const syn_node_t *n, int g, double c, double m)
{
	return n->free_gpus >= g && syn__has_room(n, g, c, m);
}

/* How much of a node is free, in fractions of its capacity: the best-fit
 * key (smaller means fuller). */
static inline double syn__free_score(const syn_node_t *n)
{
	return (double)n->free_gpus / n->gpus + (n->cpus > 0 ? n->free_cpus / n->cpus : 0) +
	       (n->mem_gb > 0 ? n->free_mem_gb / n->mem_gb : 0);
}

/*
 * Phase 1 of Synergy-OPT on its own: choose one candidate cell per job
 * (jobs[idx[0..n_sel-1]]) maximising sum gpus x tput under the cluster-wide
 * free cores and memory, each job at or above its floor (the throughput at
 * the share share_c/share_m). Writes the chosen per-GPU demand to cpus[k],
 * mem[k] (k indexes idx) and the objective to *obj. When bound is not
 * NULL, *bound is the optimum of the linear relaxation (cells may be taken
 * fractionally): a proven upper bound on any allocation's total, whether
 * or not GLPK proved the integer optimum within its time limit (NaN if the
 * relaxation could not be solved). Returns 0, or -1 with ETIME (time
 * limit) or EDOM (infeasible) or ENOMEM.
 */
int syn__opt_select(const syn_job_t *jobs, const int *idx, int n_sel, double free_cpus,
		    double free_mem, double share_c, double share_m, double time_limit_s,
		    double *cpus, double *mem, double *obj, double *bound,
		    syn_error_t *err);

/* The candidate cells of a job for OPT: the profile's grid cells at or
 * above the floor plus the share itself. Writes up to max cells; returns
 * how many. */
int syn__opt_cells(const syn_profile_t *p, double share_c, double share_m, double *cpus,
		   double *mem, double *tput, int max);

/*
 * Synergy-OPT for one round (called by syn_round with free amounts already
 * set from the pinned jobs). order is the visiting order.
 */
int syn__opt_round(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
		   const int *order, const syn_round_opts_t *o, syn_round_stats_t *st,
		   syn_error_t *err);

/*
 * The placement engine shared by TUNE, GREEDY, PROP and OPT's fallback.
 * Place job j at the per-GPU demand (c, m), with the TUNE steps that mode
 * allows. Returns 1 if placed, 0 if not.
 */
enum syn__mode { SYN__PROP, SYN__GREEDY, SYN__TUNE };
struct syn__ctx;
struct syn__ctx *syn__ctx_create(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
				 syn_round_stats_t *st);
void syn__ctx_destroy(struct syn__ctx *cx);
int syn__place(struct syn__ctx *cx, int j, enum syn__mode mode, int have_demand, double c,
	       double m);
int syn__ctx_free_gpus(const struct syn__ctx *cx);
/* After TUNE's placement: step 4 (leftover cores and memory to the placed
 * jobs) and/or step 5 (exchanges between jobs of a node, swaps across
 * nodes). */
void syn__improve(struct syn__ctx *cx, int leftover, int exchange);
/* Record job j at placement pl (np parts) with (c, m) per GPU. */
void syn__commit(struct syn__ctx *cx, int j, const syn_place_t *pl, int np, double c, double m);
/* Change placed job j's demand to (c, m) per GPU (its nodes' free amounts
 * follow). */
void syn__ctx_set_demand(struct syn__ctx *cx, int j, double c, double m);
/* Step 5 never leaves job j below (c, m) per GPU (node-level TUNE: its
 * allotment). Returns 0, or -1 with ENOMEM. */
int syn__ctx_set_min(struct syn__ctx *cx, int j, double c, double m);
/* Steps 4 and/or 5 on node nd alone (no swaps with other nodes); step 4
 * runs again after step 5. */
void syn__improve_node(struct syn__ctx *cx, int nd, int leftover, int exchange);

/* Live Slurm (size.c): job of g GPUs' GPU share of node n in Slurm's
 * accounting (see synergy_policy.h). */
void syn__live_share(const syn_shape_t *n, int g, int *cores, uint64_t *mem_mb,
		     uint64_t *cache_mb);
/* Check a shape; 0, or -1 with EINVAL and msg (len bytes) naming the field. */
int syn__check_shape(const syn_shape_t *n, syn_error_t *err);
/* q = p with its memory axis cut at cap_gb per GPU (a column at cap_gb,
 * interpolated, replaces the ones above): the profile of a job whose cache
 * never exceeds cap_gb. cap_gb <= 0 or not below p's last column: q = p. */
void syn__cap_profile(const syn_profile_t *p, double cap_gb, syn_profile_t *q);

#endif
