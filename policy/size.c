/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * size.c: sizing a job for live Slurm (syn_size_job): the cores and memory
 * job_submit asks Slurm for, never above the job's GPU share of the node in
 * Slurm's accounting and never below its GPU-proportional throughput, at
 * integer cores and MB; and its reclaimable wish, what its best case wants
 * beyond that, which only the node agent grants (syn_node_tune, node.c).
 * Also the share arithmetic and the profile helpers the two share, and a
 * multi-node job's sizing under the partitioned cache (syn_size_job_nodes:
 * the same sizing on the profile of the union of the nodes' caches).
 *
 * A profile interpolates linearly between its grid points and clamps
 * outside them, so for a fixed core count the throughput is piecewise
 * linear in the cache with breaks at the memory axis: the least cache that
 * reaches a throughput is found segment by segment, and every candidate is
 * checked by evaluating the profile, never taken from the arithmetic alone.
 * Below the profile's smallest cores or cache nothing was measured (the
 * clamp would call it free), so a job is never sized below them. A job
 * whose profile records a checkpoint gets memory for its snapshot buffers
 * as process memory (syn_ckpt_mb): the cache gives way, not the job.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy_int.h"

/* Memory above this (1 EiB) is a typo, and keeps g x mem_mb in range. */
#define SYN__MAX_MEM_MB (1ULL << 40)
#define SYN__MAX_CPUS 1000000
#define SYN__MAX_GPUS 100000

int syn__check_shape(const syn_shape_t *n, syn_error_t *err)
{
	const char *bad = NULL;

	if (!n)
		bad = "shape is NULL";
	else if (n->gpus < 1 || n->gpus > SYN__MAX_GPUS)
		bad = "gpus";
	else if (n->cpus < 1 || n->cpus > SYN__MAX_CPUS)
		bad = "cpus";
	else if (n->mem_mb > SYN__MAX_MEM_MB)
		bad = "mem_mb";
	else if (n->process_mem_mb > SYN__MAX_MEM_MB)
		bad = "process_mem_mb";
	if (!bad)
		return 0;
	if (!n)
		return syn_errprintf(err, EINVAL, "%s", bad);
	return syn_errprintf(err, EINVAL,
			     "node shape: %s out of range (gpus=%d cpus=%d mem_mb=%llu "
			     "process_mem_mb=%llu; need gpus 1..%d, cpus 1..%d, MB <= %llu)",
			     bad, n->gpus, n->cpus, (unsigned long long)n->mem_mb,
			     (unsigned long long)n->process_mem_mb, SYN__MAX_GPUS, SYN__MAX_CPUS,
			     (unsigned long long)SYN__MAX_MEM_MB);
}

void syn__live_share(const syn_shape_t *n, int g, int *cores, uint64_t *mem_mb,
		     uint64_t *cache_mb)
{
	uint64_t mem = (uint64_t)g * n->mem_mb / (uint64_t)n->gpus, cache = 0;

	*cores = (int)((int64_t)g * n->cpus / n->gpus);
	*mem_mb = mem;
	if (mem > n->process_mem_mb)
		cache = mem - n->process_mem_mb;
	if (n->max_cache_mb && cache > n->max_cache_mb)
		cache = n->max_cache_mb;
	*cache_mb = cache;
}

uint64_t syn_ckpt_mb(const syn_profile_t *p)
{
	const uint64_t unit = UINT64_C(2) << 20;

	if (!p || !p->ckpt_state_bytes || p->ckpt_state_bytes > SYN_PROFILE_CKPT_MAX_BYTES)
		return 0;
	/* Two buffers of the state and its small sections (pickled metadata,
	 * the loader's position, RNG states: under 1 MiB), each rounded up to
	 * 2 MiB as libcoordl allocates them. */
	return 2 * ((p->ckpt_state_bytes + (UINT64_C(1) << 20) + unit - 1) / unit) * 2;
}

void syn__cap_profile(const syn_profile_t *p, double cap_gb, syn_profile_t *q)
{
	int k = 0;

	*q = *p;
	if (!(cap_gb > 0) || !(cap_gb < p->mem_gb[p->n_mem - 1]))
		return;
	while (k < p->n_mem && p->mem_gb[k] < cap_gb)
		k++;
	for (int i = 0; i < p->n_cpu; i++)
		q->tput[i][k] = syn_profile_eval(p, p->cpus[i], cap_gb);
	q->mem_gb[k] = cap_gb;
	q->n_mem = k + 1;
}

/* Throughput of k cores and c MB of cache for g GPUs. */
static double tput_at(const syn_profile_t *q, int g, double k, double c)
{
	return syn_job_tput(q, k / g, c / 1024.0 / g);
}

/* A refusal: the reason into out (when given), errno EINVAL, -1. */
#define size_fail(out, ...) \
	syn_errbuf((out) ? (out)->reason : NULL, sizeof((out)->reason), EINVAL, __VA_ARGS__)

/*
 * The least cache c in [lo, hi] (MB) for which k cores reach throughput
 * target, or -1. bp[0..nb-1] are the memory breakpoints in [lo, hi],
 * ascending, bp[0] = lo and bp[nb-1] = hi.
 */
static double least_cache(const syn_profile_t *q, int g, int k, const double *bp, int nb,
			  double target)
{
	double f0 = tput_at(q, g, k, bp[0]);

	if (f0 >= target - 1e-12)
		return bp[0];
	for (int i = 0; i + 1 < nb; i++) {
		double a = bp[i], b = bp[i + 1], fb = tput_at(q, g, k, b), c;

		if (!(fb >= target - 1e-12)) {
			f0 = fb;
			continue;
		}
		/* Linear between the breakpoints up to the rounding of the
		 * breakpoints to whole MB: estimate, then check. */
		c = fb > f0 ? ceil(a + (target - f0) / (fb - f0) * (b - a) - 1e-9) : b;
		if (c < a)
			c = a;
		for (int step = 0; step < 3 && c < b; step++, c++)
			if (tput_at(q, g, k, c) >= target - 1e-12)
				return c;
		return b;
	}
	return -1;
}

int syn_size_job(const syn_shape_t *node, int gpus, int tasks, const syn_profile_t *p,
		 double eps, syn_size_t *out)
{
	syn_error_t why;
	syn_profile_t q;
	syn_shape_t jn;
	double bp[SYN_PROFILE_MAX_MEM + 2], peak = -INFINITY, target, best_cost = INFINITY;
	uint64_t cap_cache, node_cache;
	int nb = 0, kmin, kmax, bk = -1;
	double bc = 0;

	if (!out)
		return size_fail(out, "out is NULL");
	memset(out, 0, sizeof *out);
	if (syn__check_shape(node, &why) < 0)
		return size_fail(out, "%s", why.text);
	if (gpus < 1 || gpus > node->gpus)
		return size_fail(out, "gpus = %d, need 1..%d (the node's GPUs)", gpus, node->gpus);
	if (tasks < 1)
		return size_fail(out, "tasks = %d, need >= 1", tasks);
	if (!(eps >= 0 && eps < 1))
		return size_fail(out, "eps = %g, expected 0 <= eps < 1", eps);
	if (p && syn_profile_check(p, &why) < 0)
		return size_fail(out, "profile: %s", why.text);
	/* A job that checkpoints holds its snapshot buffers beside its other
	 * process memory: all that follows sees the larger process memory. */
	if ((out->ckpt_mb = syn_ckpt_mb(p)) > 0) {
		jn = *node;
		jn.process_mem_mb += out->ckpt_mb;
		if (syn__check_shape(&jn, &why) < 0)
			return size_fail(out, "checkpoint of %llu MB: %s",
					 (unsigned long long)out->ckpt_mb, why.text);
		node = &jn;
	}

	syn__live_share(node, gpus, &out->share_cores, &out->share_mem_mb, &out->share_cache_mb);
	cap_cache = node->max_cache_mb ? node->max_cache_mb : UINT64_MAX;
	node_cache = node->mem_mb > node->process_mem_mb ? node->mem_mb - node->process_mem_mb : 0;
	if (node_cache > cap_cache)
		node_cache = cap_cache;
	if (out->share_cores < tasks) {
		snprintf(out->reason, sizeof out->reason,
			 "%d tasks need more cores than the GPU share (%d): GPU-proportional", tasks,
			 out->share_cores);
		return 0;
	}
	if (out->share_mem_mb < node->process_mem_mb) {
		snprintf(out->reason, sizeof out->reason,
			 "the GPU share of memory (%llu MB) does not hold ProcessMemMB%s (%llu): "
			 "GPU-proportional",
			 (unsigned long long)out->share_mem_mb,
			 out->ckpt_mb ? " and the checkpoint buffers" : "",
			 (unsigned long long)node->process_mem_mb);
		return 0;
	}
	kmax = out->share_cores / tasks * tasks;
	if (!p) {
		out->sized = 1;
		out->cores = kmax;
		out->cpus_per_task = kmax / tasks;
		out->cache_mb = out->share_cache_mb;
		out->mem_mb = node->process_mem_mb + out->cache_mb;
		out->tput = out->prop_tput = out->best_tput = 1;
		out->speedup = out->best_speedup = 1;
		snprintf(out->reason, sizeof out->reason, "no profile: the GPU share");
		return 0;
	}
	syn__cap_profile(p, node->max_cache_mb ? node->max_cache_mb / 1024.0 / gpus : 0, &q);
	out->prop_tput = tput_at(&q, gpus, out->share_cores, (double)out->share_cache_mb);

	/* Candidates: cores from the profile's smallest (whole tasks) to the
	 * share; cache from the profile's smallest to the share, with the
	 * memory axis' points in between as breakpoints. */
	kmin = (int)ceil(q.cpus[0] * gpus - 1e-9);
	kmin = (kmin + tasks - 1) / tasks * tasks;
	if (kmin < tasks)
		kmin = tasks;
	if (kmin > kmax)
		kmin = kmax;
	bp[nb++] = fmin(ceil(q.mem_gb[0] * gpus * 1024 - 1e-6), (double)out->share_cache_mb);
	for (int j = 0; j < q.n_mem; j++) {
		double v = ceil(q.mem_gb[j] * gpus * 1024 - 1e-6);
		if (v > bp[nb - 1] && v < (double)out->share_cache_mb)
			bp[nb++] = v;
	}
	if ((double)out->share_cache_mb > bp[nb - 1])
		bp[nb++] = (double)out->share_cache_mb;
	for (int k = kmin; k <= kmax; k += tasks)
		for (int i = 0; i < nb; i++)
			peak = fmax(peak, tput_at(&q, gpus, k, bp[i]));
	target = fmax(out->prop_tput, (1 - eps) * peak);
	for (int k = kmin; k <= kmax; k += tasks) {
		double c = least_cache(&q, gpus, k, bp, nb, target), cost;

		if (c < 0)
			continue;
		cost = (double)k / out->share_cores +
		       (out->share_cache_mb ? c / (double)out->share_cache_mb : 0);
		if (cost < best_cost - 1e-12) {
			best_cost = cost;
			bk = k;
			bc = c;
		}
	}
	if (bk < 0) {
		snprintf(out->reason, sizeof out->reason,
			 "no request of whole tasks (%d) within the GPU share keeps the "
			 "GPU-proportional throughput: GPU-proportional",
			 tasks);
		return 0;
	}
	out->sized = 1;
	out->cores = bk;
	out->cpus_per_task = bk / tasks;
	out->cache_mb = (uint64_t)bc;
	out->mem_mb = node->process_mem_mb + out->cache_mb;
	out->tput = out->best_tput = tput_at(&q, gpus, bk, bc);

	/* The wish: the best case the node could hold, above the request. */
	{
		double c, m;

		if (syn_best_case(&q, eps, (double)node->cpus / gpus, node_cache / 1024.0 / gpus, &c,
				  &m) == 0) {
			double tk = fmin(ceil(c * gpus - 1e-9), node->cpus);
			double tc = fmin(ceil(m * gpus * 1024 - 1e-6), (double)node_cache);
			double t;

			tk = fmax(tk, out->cores);
			tc = fmax(tc, (double)out->cache_mb);
			t = tput_at(&q, gpus, tk, tc);
			if (t > out->tput + 1e-9) {
				out->wish_cores = (int)tk - out->cores;
				out->wish_cache_mb = (uint64_t)tc - out->cache_mb;
				out->best_tput = t;
			}
		}
	}
	out->speedup = out->prop_tput > 0 ? out->tput / out->prop_tput : 1;
	out->best_speedup = out->prop_tput > 0 ? out->best_tput / out->prop_tput : 1;
	if (out->wish_cores || out->wish_cache_mb)
		snprintf(out->reason, sizeof out->reason,
			 "within the GPU share: %d core%s, %llu MB cache (%.2fx); best case +%d "
			 "core%s +%llu MB reclaimable (%.2fx)",
			 out->cores, out->cores == 1 ? "" : "s", (unsigned long long)out->cache_mb,
			 out->speedup, out->wish_cores, out->wish_cores == 1 ? "" : "s",
			 (unsigned long long)out->wish_cache_mb, out->best_speedup);
	else
		snprintf(out->reason, sizeof out->reason,
			 "best case within the GPU share: %d core%s, %llu MB cache (%.2fx)", out->cores,
			 out->cores == 1 ? "" : "s", (unsigned long long)out->cache_mb, out->speedup);
	return 0;
}

int syn_profile_union(const syn_profile_t *p, int nodes, syn_profile_t *q)
{
	if (!p || !q || p == q || nodes < 1 || nodes > SYN_MAX_JOB_NODES) {
		errno = EINVAL;
		return -1;
	}
	*q = *p;
	if (nodes == 1)
		return 0;
	/* Dividing keeps the axis strictly increasing and >= 0. */
	for (int j = 0; j < q->n_mem && j < SYN_PROFILE_MAX_MEM; j++)
		q->mem_gb[j] = p->mem_gb[j] / nodes;
	q->prop_mem_gb = p->prop_mem_gb / nodes;
	return 0;
}

int syn_profile_group(const syn_profile_t *p, int k, syn_profile_t *q)
{
	if (!p || !q || p == q || k < 1 || k > SYN_MAX_GROUP) {
		errno = EINVAL;
		return -1;
	}
	*q = *p;
	/* Dividing keeps the axis strictly increasing and > 0. */
	for (int c = 0; c < q->n_cpu && c < SYN_PROFILE_MAX_CPU; c++)
		q->cpus[c] = p->cpus[c] / k;
	q->prop_cpus = p->prop_cpus / k;
	return 0;
}

uint64_t syn_partition_cache_mb(uint64_t dataset_bytes, int nodes)
{
	double mb;

	if (!dataset_bytes || nodes < 1)
		return 0;
	mb = ceil((double)dataset_bytes * 1.02 / nodes / 1048576.0) + 1;
	return mb < 1.8e19 ? (uint64_t)mb : UINT64_MAX;
}

int syn_size_job_nodes(const syn_shape_t *node, int gpus, int tasks, int nodes,
		       const syn_profile_t *p, double eps, syn_size_t *out)
{
	syn_profile_t q;
	syn_shape_t n;
	uint64_t part;
	syn_error_t why;

	if (nodes < 1 || nodes > SYN_MAX_JOB_NODES) {
		if (out)
			memset(out, 0, sizeof *out);
		return size_fail(out, "nodes = %d, need 1..%d", nodes, SYN_MAX_JOB_NODES);
	}
	if (nodes == 1 || !p || !node)
		return syn_size_job(node, gpus, tasks, p, eps, out);
	if (syn_profile_check(p, &why) < 0) {
		if (out)
			memset(out, 0, sizeof *out);
		return size_fail(out, "profile: %s", why.text);
	}
	syn_profile_union(p, nodes, &q);
	n = *node;
	part = syn_partition_cache_mb(p->dataset_bytes, nodes);
	if (part && (!n.max_cache_mb || part < n.max_cache_mb))
		n.max_cache_mb = part;
	return syn_size_job(&n, gpus, tasks, &q, eps, out);
}
