/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * demand.c: what a job needs. The best-case demand rule (see
 * synergy_policy.h) and the throughput of a job with or without a profile.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "policy/policy_int.h"

double syn_job_tput(const syn_profile_t *p, double cpus, double mem_gb)
{
	return p ? syn_profile_eval(p, cpus, mem_gb) : 1.0;
}

int syn_best_case(const syn_profile_t *p, double eps, double max_cpus, double max_mem,
		  double *cpus, double *mem)
{
	double peak = -1, best_cost = INFINITY;
	int bi = -1, bj = -1;

	if (!p || !cpus || !mem || !(eps >= 0 && eps < 1) || p->n_cpu < 1 || p->n_mem < 1 ||
	    p->n_cpu > SYN_PROFILE_MAX_CPU || p->n_mem > SYN_PROFILE_MAX_MEM ||
	    !(p->prop_cpus > 0)) {
		errno = EINVAL;
		return -1;
	}
	/* The peak is taken within the limits: a cell the job can never get
	 * must not make every reachable cell look too slow. */
	for (int i = 0; i < p->n_cpu; i++) {
		if (max_cpus > 0 && p->cpus[i] > max_cpus)
			break;
		for (int j = 0; j < p->n_mem; j++) {
			if (max_mem > 0 && p->mem_gb[j] > max_mem)
				break;
			if (p->tput[i][j] > peak)
				peak = p->tput[i][j];
		}
	}
	if (peak < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < p->n_cpu; i++) {
		if (max_cpus > 0 && p->cpus[i] > max_cpus)
			break;
		for (int j = 0; j < p->n_mem; j++) {
			if (max_mem > 0 && p->mem_gb[j] > max_mem)
				break;
			if (p->tput[i][j] < (1 - eps) * peak)
				continue;
			/* Cost in GPU-proportional shares; cells are visited in
			 * increasing cores, then memory, so a strict '<' keeps the
			 * documented tie-break. */
			double cost = p->cpus[i] / p->prop_cpus +
				      (p->prop_mem_gb > 0 ? p->mem_gb[j] / p->prop_mem_gb : 0);
			if (cost < best_cost - 1e-12) {
				best_cost = cost;
				bi = i;
				bj = j;
			}
		}
	}
	*cpus = p->cpus[bi];
	*mem = p->mem_gb[bj];
	return 0;
}
