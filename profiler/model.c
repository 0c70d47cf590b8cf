/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * model.c: the DS-Analyzer what-if model and the normalised grid (see
 * model.h for the formulas). Pure arithmetic, no I/O: unit tested in
 * profiler/test/model.t and shared by `synergy-profile run` and `what-if`.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/parse.h"
#include "profiler/model.h"

/* The measured curve: through the origin, linear between points, linear
 * in the per-core rate of the last point beyond it. */
static double prep_curve(const syn__rates_t *r, double cpus)
{
	int n = r->n_prep;
	if (cpus <= r->prep_cpus[0])
		return r->prep_rate[0] * cpus / r->prep_cpus[0];
	if (cpus >= r->prep_cpus[n - 1])
		return r->prep_rate[n - 1] * cpus / r->prep_cpus[n - 1];
	int k = 0;
	while (k + 1 < n - 1 && r->prep_cpus[k + 1] <= cpus)
		k++;
	double w = (cpus - r->prep_cpus[k]) / (r->prep_cpus[k + 1] - r->prep_cpus[k]);
	return r->prep_rate[k] * (1 - w) + r->prep_rate[k + 1] * w;
}

double syn__model_prep(const syn__rates_t *r, double cpus)
{
	if (r->n_prep < 1 || !(cpus > 0))
		return 0;
	/* A job given more cores can always run fewer threads, so prep
	 * throughput never falls as cores grow: take the best of the curve
	 * here and at every measured point below (a noisy point where more
	 * threads measured slower must not make the profile non-monotone). */
	double v = prep_curve(r, cpus);
	for (int k = 0; k < r->n_prep && r->prep_cpus[k] <= cpus; k++)
		if (r->prep_rate[k] > v)
			v = r->prep_rate[k];
	return v;
}

double syn__model_hit_rate(const syn__rates_t *r, double cache_bytes)
{
	if (r->dataset_bytes == 0)
		return 1.0;
	if (!(cache_bytes > 0))
		return 0.0;
	double h = cache_bytes / (double)r->dataset_bytes;
	return h > 1.0 ? 1.0 : h;
}

double syn__model_storage_items(const syn__rates_t *r)
{
	if (r->fetch_latency > 0 && r->fetch_concurrency > 0)
		return r->fetch_concurrency / r->fetch_latency;
	if (r->fetch_storage_bps > 0 && r->dataset_bytes > 0 && r->dataset_items > 0)
		return r->fetch_storage_bps / ((double)r->dataset_bytes / (double)r->dataset_items);
	return INFINITY;
}

double syn__model_fetch(const syn__rates_t *r, double cache_bytes)
{
	if (r->dataset_bytes == 0 || r->dataset_items == 0)
		return INFINITY;
	double h = syn__model_hit_rate(r, cache_bytes);
	double d = (double)r->dataset_bytes, t = 0;
	double storage = syn__model_storage_items(r);
	if (r->fetch_memory_bps > 0)
		t += h * d / r->fetch_memory_bps;
	if (isfinite(storage))
		t += (1 - h) * (double)r->dataset_items / storage;
	if (!(t > 0))
		return INFINITY;
	return (double)r->dataset_items / t;
}

/* A function measured at n thread counts xs (increasing): linear between
 * them, held at the nearest one beyond; 0 with none. */
static double held_linear(const double *xs, const double *ys, int n, double cpus)
{
	if (n < 1)
		return 0;
	if (cpus <= xs[0])
		return ys[0];
	if (cpus >= xs[n - 1])
		return ys[n - 1];
	int k = 0;
	while (k + 1 < n - 1 && xs[k + 1] <= cpus)
		k++;
	double w = (cpus - xs[k]) / (xs[k + 1] - xs[k]);
	return ys[k] * (1 - w) + ys[k + 1] * w;
}

/* Put (cpus, v) into the increasing list xs/ys of *n points, replacing a
 * point at the same count. Returns 0, or -1 (EINVAL) when full. */
static int add_point(double *xs, double *ys, int *n, double cpus, double v)
{
	int k = 0;
	while (k < *n && xs[k] < cpus)
		k++;
	if (k < *n && xs[k] == cpus) {
		ys[k] = v;
		return 0;
	}
	if (*n >= SYN__MAX_POINTS) {
		errno = EINVAL;
		return -1;
	}
	memmove(&xs[k + 1], &xs[k], (size_t)(*n - k) * sizeof(double));
	memmove(&ys[k + 1], &ys[k], (size_t)(*n - k) * sizeof(double));
	xs[k] = cpus;
	ys[k] = v;
	(*n)++;
	return 0;
}

double syn__model_overlap(const syn__rates_t *r, double cpus)
{
	return held_linear(r->overlap_cpus, r->overlap, r->n_overlap, cpus);
}

double syn__model_miss_time(const syn__rates_t *r, double cpus)
{
	return held_linear(r->miss_cpus, r->miss_time, r->n_miss, cpus);
}

double syn__model_fit_miss(double cpus, double prep_rate, double cold_rate)
{
	if (!(cpus > 0) || !(prep_rate > 0) || !(cold_rate > 0) || !isfinite(cpus) ||
	    !isfinite(prep_rate) || !isfinite(cold_rate))
		return 0;
	double t = cpus / cold_rate - cpus / prep_rate;
	return t > 0 ? t : 0;
}

int syn__model_add_miss(syn__rates_t *r, double cpus, double t)
{
	if (!(cpus > 0) || !isfinite(cpus) || !(t >= 0) || !isfinite(t)) {
		errno = EINVAL;
		return -1;
	}
	return add_point(r->miss_cpus, r->miss_time, &r->n_miss, cpus, t);
}

double syn__model_fit_overlap(double prep_rate, double fetch_rate, double measured)
{
	if (!(prep_rate > 0) || !(fetch_rate > 0) || !(measured > 0) || !isfinite(prep_rate) ||
	    !isfinite(fetch_rate) || !isfinite(measured))
		return 0;
	double tp = 1.0 / prep_rate, tf = 1.0 / fetch_rate, tm = 1.0 / measured;
	double a = (tp + tf - tm) / fmin(tp, tf);
	return a < 0 ? 0 : a > 1 ? 1 : a;
}

int syn__model_add_overlap(syn__rates_t *r, double cpus, double a)
{
	if (!(cpus > 0) || !(a >= 0 && a <= 1)) {
		errno = EINVAL;
		return -1;
	}
	return add_point(r->overlap_cpus, r->overlap, &r->n_overlap, cpus, a);
}

double syn__model_loader(const syn__rates_t *r, double cpus, double cache_bytes)
{
	double p = syn__model_prep(r, cpus);
	if (!(p > 0))
		return 0;
	if (r->n_miss > 0 && !(r->fetch_latency > 0)) {
		/* Local storage: a worker reads, then decodes; a miss adds
		 * t_m(c) to its time per item, capped by what storage
		 * delivers to all the threads together. */
		double miss = 1 - syn__model_hit_rate(r, cache_bytes);
		double x = cpus / (cpus / p + miss * syn__model_miss_time(r, cpus));
		double s = syn__model_storage_items(r);
		if (miss > 0 && isfinite(s) && s / miss < x)
			x = s / miss;
		return x;
	}
	double f = syn__model_fetch(r, cache_bytes);
	if (isinf(f))
		return p;
	double tp = 1.0 / p, tf = 1.0 / f;
	return 1.0 / (tp + tf - syn__model_overlap(r, cpus) * fmin(tp, tf));
}

double syn__model_tput(const syn__rates_t *r, double cpus, double cache_bytes)
{
	double t = syn__model_loader(r, cpus, cache_bytes);
	if (r->gpu > 0 && r->gpu < t)
		t = r->gpu;
	return t;
}

static double round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

int syn__model_grid(const syn__rates_t *r, const double *cpus, int n_cpu,
                    const double *mem_gb, int n_mem, double prop_cpus, double prop_mem_gb,
                    syn_profile_t *p, char *msg, int msglen)
{
	if (n_cpu < 1 || n_cpu > SYN_PROFILE_MAX_CPU || n_mem < 1 || n_mem > SYN_PROFILE_MAX_MEM)
		return syn_errbuf(msg, (size_t)msglen, EINVAL,
				  "grid of %d x %d points; expected 1..%d cpus x 1..%d mem",
				  n_cpu, n_mem, SYN_PROFILE_MAX_CPU, SYN_PROFILE_MAX_MEM);
	for (int i = 0; i < n_cpu; i++)
		if (!(cpus[i] > 0) || (i > 0 && !(cpus[i] > cpus[i - 1])))
			return syn_errbuf(msg, (size_t)msglen, EINVAL, "cpus axis must be > 0 and "
					  "strictly increasing (entry %d)", i);
	for (int j = 0; j < n_mem; j++)
		if (!(mem_gb[j] >= 0) || (j > 0 && !(mem_gb[j] > mem_gb[j - 1])))
			return syn_errbuf(msg, (size_t)msglen, EINVAL, "mem axis must be >= 0 and "
					  "strictly increasing (entry %d)", j);
	if (r->n_prep < 1)
		return syn_errbuf(msg, (size_t)msglen, EINVAL, "no measured prep rate");
	if (!(prop_cpus > 0) || !(prop_mem_gb >= 0))
		return syn_errbuf(msg, (size_t)msglen, EINVAL,
				  "proportional share %g cpus, %g GiB: cpus must be > 0, mem >= 0",
				  prop_cpus, prop_mem_gb);
	double base = syn__model_tput(r, prop_cpus, prop_mem_gb * SYN__GIB);
	if (!(base > 0) || !isfinite(base))
		return syn_errbuf(msg, (size_t)msglen, EINVAL,
				  "predicted throughput at the proportional share is %g", base);
	p->n_cpu = n_cpu;
	p->n_mem = n_mem;
	memcpy(p->cpus, cpus, (size_t)n_cpu * sizeof(double));
	memcpy(p->mem_gb, mem_gb, (size_t)n_mem * sizeof(double));
	for (int i = 0; i < n_cpu; i++)
		for (int j = 0; j < n_mem; j++)
			p->tput[i][j] = round_to(syn__model_tput(r, cpus[i], mem_gb[j] * SYN__GIB) / base,
			                         1e-4);
	p->prop_cpus = prop_cpus;
	p->prop_mem_gb = prop_mem_gb;
	p->base_tput = round_to(base, 0.1);
	p->gpu_rate = round_to(r->gpu, 0.1);
	int last = r->n_prep - 1;
	p->prep_rate_per_core = round_to(r->prep_rate[last] / r->prep_cpus[last], 0.1);
	p->fetch_storage_bps = round(r->fetch_storage_bps);
	p->fetch_memory_bps = round(r->fetch_memory_bps);
	p->fetch_overlap = r->n_overlap > 0 ? round_to(r->overlap[r->n_overlap - 1], 1e-4) : 0;
	p->fetch_miss_s = r->n_miss > 0 ? round_to(r->miss_time[r->n_miss - 1], 1e-7) : 0;
	p->fetch_latency_s = round_to(r->fetch_latency, 1e-6);
	p->fetch_concurrency = round_to(r->fetch_concurrency, 0.01);
	p->dataset_bytes = r->dataset_bytes;
	p->dataset_items = r->dataset_items;
	return 0;
}

int syn__cpu_search(int max_threads, syn__probe_f probe, void *arg, int *order, int max_points)
{
	int n = 0, c = max_threads;
	double best, v;

	if (max_threads < 1 || max_points < 1) {
		errno = EINVAL;
		return -1;
	}
	if (probe(c, arg, &best) < 0)
		return -1;
	order[n++] = c;
	while (c > 1 && n < max_points) {
		int half = c / 2;
		if (probe(half, arg, &v) < 0)
			return -1;
		order[n++] = half;
		if (v >= 0.9 * best) {
			c = half;
			continue;
		}
		/* The knee lies between half and c: walk down from c. */
		for (int k = c - 1; k > half && n < max_points; k--) {
			if (probe(k, arg, &v) < 0)
				return -1;
			order[n++] = k;
			if (v < 0.9 * best)
				break;
		}
		break;
	}
	return n;
}

int syn__rates_from_job(const syn__job_point_t *pts, int n, uint64_t dataset_bytes,
                        uint64_t dataset_items, syn__rates_t *r)
{
	double samples = 0, consumer = 0;
	int top = -1;

	memset(r, 0, sizeof(*r));
	r->dataset_bytes = dataset_bytes;
	r->dataset_items = dataset_items;
	for (int i = 0; i < n; i++) {
		const syn__job_point_t *q = &pts[i];
		if (q->threads < 1 || !(q->prep_time > 0) || !(q->items > 0))
			continue;
		samples += q->samples;
		consumer += q->consumer;
		if (top < 0 || q->threads > pts[top].threads)
			top = i;
		/* Keep the prep points sorted by threads (a repeated count
		 * keeps its first measurement). */
		double c = q->threads, v = c * q->items / q->prep_time;
		int k = r->n_prep;
		if (k >= SYN__MAX_POINTS)
			break;
		int dup = 0;
		for (int j = 0; j < r->n_prep; j++)
			dup |= r->prep_cpus[j] == c;
		if (dup)
			continue;
		while (k > 0 && r->prep_cpus[k - 1] > c) {
			r->prep_cpus[k] = r->prep_cpus[k - 1];
			r->prep_rate[k] = r->prep_rate[k - 1];
			k--;
		}
		r->prep_cpus[k] = c;
		r->prep_rate[k] = v;
		r->n_prep++;
		/* A worker's time per miss (its fetch time is spent on misses). */
		if (q->misses > 0 && q->fetch_time >= 0 &&
		    syn__model_add_miss(r, c, q->fetch_time / q->misses) < 0)
			break;
	}
	if (top < 0) {
		errno = EINVAL;
		return -1;
	}
	r->gpu = consumer > 0 ? samples / consumer : 0;
	if (pts[top].storage_bytes > 0 && pts[top].fetch_time > 0)
		r->fetch_storage_bps = pts[top].threads * pts[top].storage_bytes / pts[top].fetch_time;
	return 0;
}

int syn__parse_list(const char *s, double *out, int max)
{
	const char *q = s;
	int n = 0;

	if (!s || !*s) {
		errno = EINVAL;
		return -1;
	}
	/* Numbers of the one grammar (common/parse.h), split at commas. */
	for (;;) {
		const char *comma = strchr(q, ',');
		size_t len = comma ? (size_t)(comma - q) : strlen(q);
		double v;

		if (n >= max || syn_parse_doublen(q, len, 0, INFINITY, &v) < 0 ||
		    (n > 0 && !(v > out[n - 1]))) {
			errno = EINVAL;
			return -1;
		}
		out[n++] = v;
		if (!comma)
			return n;
		q = comma + 1;
	}
}
