/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * report.c: DS-Analyzer's stall report from a stored profile (see
 * report.h for the definitions). Pure arithmetic on the profile's grid:
 * unit tested in profiler/test/report.t and printed by `synergy-profile
 * show`, `what-if` and `plot`.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/error.h"
#include "profiler/report.h"
#include "synergy_policy.h"

#define GIB 1073741824.0

const char *syn__bound_name(syn__bound_t b)
{
	switch (b) {
	case SYN__BOUND_PREP: return "prep";
	case SYN__BOUND_FETCH: return "fetch";
	default: return "gpu";
	}
}

/*
 * Smallest cache m in [0, top] at `cpus` cores where the profile reaches
 * `target`, or -1. At fixed cores the interpolated grid is linear in m
 * between its columns (and constant outside them), so each segment is
 * solved exactly.
 */
static double smallest_mem(const syn_profile_t *p, double cpus, double top, double target)
{
	double pts[SYN_PROFILE_MAX_MEM + 2];
	int n = 0;
	pts[n++] = 0;
	for (int j = 0; j < p->n_mem; j++)
		if (p->mem_gb[j] > 0 && p->mem_gb[j] < top)
			pts[n++] = p->mem_gb[j];
	if (top > 0)
		pts[n++] = top;
	double v0 = syn_profile_eval(p, cpus, pts[0]);
	if (v0 >= target)
		return pts[0];
	for (int k = 1; k < n; k++) {
		double v1 = syn_profile_eval(p, cpus, pts[k]);
		if (v1 >= target) {
			double w = v1 > v0 ? (target - v0) / (v1 - v0) : 1;
			return pts[k - 1] + w * (pts[k] - pts[k - 1]);
		}
		v0 = v1;
	}
	return -1;
}

int syn__report(const syn_profile_t *p, double cpus, double mem_gb, syn__report_t *out, char *msg,
                int msglen)
{
	syn__report_t r;
	syn_error_t why;

	if (!p || !out) {
		return syn_errbuf(msg, (size_t)msglen, EINVAL, "report: no profile");
	}
	if (syn_profile_check(p, &why) < 0) {
		return syn_errbuf(msg, (size_t)msglen, EINVAL, "profile '%s': %s", p->key,
				  why.text);
	}
	if (!(cpus > 0) || !isfinite(cpus) || !(mem_gb >= 0) || !isfinite(mem_gb)) {
		return syn_errbuf(msg, (size_t)msglen, EINVAL,
				  "grant %g cpus, %g GiB: expected cpus > 0 and cache >= 0",
				  cpus, mem_gb);
	}
	memset(&r, 0, sizeof(r));
	r.cpus = cpus;
	r.mem_gb = mem_gb;
	r.tput = syn_profile_eval(p, cpus, mem_gb);
	if (!(r.tput > 0)) {
		return syn_errbuf(msg, (size_t)msglen, EINVAL,
				  "profile '%s' predicts no throughput at %g cpus, %g GiB",
				  p->key, cpus, mem_gb);
	}
	r.samples_per_s = p->base_tput > 0 ? r.tput * p->base_tput : 0;

	double peak = 0;
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem; j++)
			if (p->tput[i][j] > peak)
				peak = p->tput[i][j];
	r.gpu_measured = p->gpu_rate > 0 && p->base_tput > 0;
	r.gpu = r.gpu_measured ? p->gpu_rate / p->base_tput : peak;

	r.cached_gb = p->dataset_bytes > 0 ? (double)p->dataset_bytes / GIB : p->mem_gb[p->n_mem - 1];
	r.cached = syn_profile_eval(p, cpus, r.cached_gb);
	/* A noisy grid may put a cell above its cached or GPU ceiling:
	 * neither stall is negative. */
	double xc = r.cached > r.tput ? r.cached : r.tput;
	double g = r.gpu > xc ? r.gpu : xc;
	r.gpu_frac = r.tput / g;
	r.prep_stall = r.tput / xc - r.tput / g;
	r.fetch_stall = 1 - r.tput / xc;
	if (r.prep_stall <= SYN__REPORT_EPS && r.fetch_stall <= SYN__REPORT_EPS)
		r.bound = SYN__BOUND_GPU;
	else
		r.bound = r.prep_stall >= r.fetch_stall ? SYN__BOUND_PREP : SYN__BOUND_FETCH;

	/* Cores: every whole core up to the grid's top row and every row,
	 * the smallest whose cached rate keeps up with the GPU. */
	double cand[SYN_PROFILE_MAX_CPU + 1024];
	int nc = 0;
	double top = p->cpus[p->n_cpu - 1];
	for (int c = 1; c <= top && c <= 1024; c++)
		cand[nc++] = c;
	for (int i = 0; i < p->n_cpu; i++)
		if (p->cpus[i] != floor(p->cpus[i]) || p->cpus[i] > 1024)
			cand[nc++] = p->cpus[i];
	for (int i = 1; i < nc; i++) /* insertion sort: few, mostly sorted */
		for (int k = i; k > 0 && cand[k - 1] > cand[k]; k--) {
			double t = cand[k];
			cand[k] = cand[k - 1];
			cand[k - 1] = t;
		}
	r.prep_cpus = 0;
	for (int i = 0; i < nc; i++)
		if (syn_profile_eval(p, cand[i], r.cached_gb) >= (1 - SYN__REPORT_EPS) * r.gpu) {
			r.prep_cpus = cand[i];
			break;
		}

	/* Cache at the grant's cores: removing the fetch stall means reaching
	 * the cached rate; halving it, 1 - f/2 of it. */
	r.fetch_mem_gb = smallest_mem(p, cpus, r.cached_gb, (1 - SYN__REPORT_EPS) * r.cached);
	r.fetch_half_mem_gb = r.fetch_stall > 2 * SYN__REPORT_EPS ?
		smallest_mem(p, cpus, r.cached_gb, r.cached * (1 - r.fetch_stall / 2)) : -1;

	if (syn_best_case(p, SYN__REPORT_EPS, 0, 0, &r.best_cpus, &r.best_mem_gb) < 0) {
		return syn_errbuf(msg, (size_t)msglen, EINVAL, "profile '%s': no best case",
				  p->key);
	}
	r.best_tput = syn_profile_eval(p, r.best_cpus, r.best_mem_gb);
	*out = r;
	return 0;
}
