/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * report.h: DS-Analyzer's answers from a stored profile, internal to the
 * profiler: what bounds a job at a grant (cores, cache per GPU), how its
 * time per sample splits into GPU work, prep stall and fetch stall, the
 * smallest grants that remove each stall, and the best case.
 *
 * Everything is read off the profile's grid (syn_profile_eval, the same
 * interpolation the scheduler uses) and its GPU rate, so it works on any
 * profile, older ones included. At a grant (c, m), with x the predicted
 * throughput, x_c = x(c, dataset cached) and G the GPU's ingestion rate:
 *
 *   time per sample 1/x = 1/G (GPU) + (1/x_c - 1/G) (prep stall)
 *                       + (1/x - 1/x_c) (fetch stall)
 *
 * as DS-Analyzer splits it: the fetch stall is what caching all of the
 * data would remove, the prep stall what remains above the GPU's own time
 * with the data cached. Each is reported as a fraction of 1/x. With no
 * measured GPU rate (or no absolute base throughput to compare it with),
 * the best cell of the grid stands in for G: the stalls are then relative
 * to the best this profile ever saw. "Dataset cached" is the dataset's
 * size when the profile records it, else the grid's largest column
 * (clamped to the grid, as every evaluation is).
 *
 * A stall counts as removed when it is at most SYN__REPORT_EPS of the time
 * per sample (the scheduler's default best-case tolerance).
 */
#ifndef SYN_PROFILER_REPORT_H
#define SYN_PROFILER_REPORT_H

#include "common/profile.h"

#define SYN__REPORT_EPS 0.01

typedef enum { SYN__BOUND_GPU, SYN__BOUND_PREP, SYN__BOUND_FETCH } syn__bound_t;

typedef struct syn__report {
	double cpus, mem_gb;      /* the grant, per GPU */
	double tput;              /* normalised throughput there (1.0 = the share) */
	double samples_per_s;     /* absolute; 0 when the profile has no base_tput */
	double gpu;               /* G, normalised */
	int gpu_measured;         /* 0: G is the best grid cell (no GPU rate) */
	double cached;            /* x_c, normalised: the grant's cores, dataset cached */
	double cached_gb;         /* the cache size taken as "dataset cached" */
	double gpu_frac;          /* shares of the time per sample; they sum to 1 */
	double prep_stall, fetch_stall;
	syn__bound_t bound;       /* GPU when both stalls are removed, else the larger */
	/* Smallest cores per GPU whose cached rate keeps up with G (within
	 * EPS): removes the prep stall. 0: none on the grid. */
	double prep_cpus;
	/* Smallest cache (GiB) at the grant's cores that removes the fetch
	 * stall, and the smallest that halves it; -1 when there is none (or,
	 * for halving, a stall of at most 2 * EPS: half of it is removed). */
	double fetch_mem_gb, fetch_half_mem_gb;
	/* The best case (syn_best_case, eps SYN__REPORT_EPS): the cheapest
	 * cell within EPS of the grid's peak, and its throughput. */
	double best_cpus, best_mem_gb, best_tput;
} syn__report_t;

/* "gpu", "prep" or "fetch". */
const char *syn__bound_name(syn__bound_t b);

/*
 * The report for profile p at (cpus, mem_gb) per GPU. Returns 0, or -1
 * with errno EINVAL and msg (size msglen) naming the problem: a profile
 * that fails syn_profile_check, a grant that is not finite and positive
 * (cores) or non-negative (cache), or a zero predicted throughput there.
 * *r is written only on success.
 */
int syn__report(const syn_profile_t *p, double cpus, double mem_gb, syn__report_t *r, char *msg,
                int msglen);

#endif
