/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * round.c: the public entry points of the policy: one scheduling round over
 * a cluster (syn_round), the check of its result (syn_check_round), and the
 * advice for one job on the live cluster (syn_advise).
 *
 * A round is computed from scratch except for pinned jobs: the simulator
 * compares consecutive rounds to see which allocations carried over, and the
 * Slurm tuner pins what is already running.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

void syn_round_opts_init(syn_round_opts_t *o)
{
	if (!o)
		return;
	memset(o, 0, sizeof *o);
	o->allocator = SYN_ALLOC_TUNE;
	o->ordering = SYN_ORDER_FIFO;
	o->eps = 0.01;
	o->opt_time_limit_s = 10;
}

static int check_nodes(const syn_node_t *nodes, int n_nodes, syn_error_t *err)
{
	if (n_nodes < 0 || (n_nodes > 0 && !nodes))
		return syn_errprintf(err, EINVAL, "nodes: %d nodes given", n_nodes);
	for (int i = 0; i < n_nodes; i++) {
		const syn_node_t *n = &nodes[i];
		if (n->gpus < 1 || !isfinite(n->cpus) || !(n->cpus > 0) || !isfinite(n->mem_gb) ||
		    n->mem_gb < 0)
			return syn_errprintf(err, EINVAL,
					 "node %d: capacity gpus=%d cpus=%g mem_gb=%g (need gpus >= 1, "
					     "cpus > 0, mem_gb >= 0)",
					     i, n->gpus, n->cpus, n->mem_gb);
	}
	return 0;
}

static int check_job(const syn_job_t *j, int i, syn_error_t *err)
{
	syn_error_t why;

	if (j->gpus < 1)
		return syn_errprintf(err, EINVAL, "job %d (id %llu): gpus = %d, need >= 1", i,
				     (unsigned long long)j->id, j->gpus);
	if (!isfinite(j->arrival) || !isfinite(j->attained) || !isfinite(j->remaining) ||
	    !isfinite(j->duration))
		return syn_errprintf(err, EINVAL, "job %d (id %llu): times must be finite", i,
				     (unsigned long long)j->id);
	if (j->profile && syn_profile_check(j->profile, &why) < 0)
		return syn_errprintf(err, EINVAL, "job %d (id %llu): profile: %s", i,
				     (unsigned long long)j->id, why.text);
	return 0;
}

/* Reset free amounts and take out the pinned jobs. */
static int apply_pinned(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
			syn_error_t *err)
{
	for (int i = 0; i < n_nodes; i++) {
		nodes[i].free_gpus = nodes[i].gpus;
		nodes[i].free_cpus = nodes[i].cpus;
		nodes[i].free_mem_gb = nodes[i].mem_gb;
	}
	for (int i = 0; i < n_jobs; i++) {
		syn_alloc_t *a = &jobs[i].alloc;
		int g = 0;

		if (!jobs[i].pinned) {
			memset(a, 0, sizeof *a);
			continue;
		}
		if (a->n_place < 1 || a->n_place > SYN_MAX_SPAN || !(a->cpus_per_gpu >= 0) ||
		    !(a->mem_per_gpu >= 0))
			return syn_errprintf(err, EINVAL,
					     "job %d (id %llu): pinned without a valid allocation",
					     i, (unsigned long long)jobs[i].id);
		for (int k = 0; k < a->n_place; k++) {
			const syn_place_t *p = &a->place[k];
			if (p->node < 0 || p->node >= n_nodes || p->gpus < 1)
				return syn_errprintf(err, EINVAL,
						 "job %d (id %llu): pinned on node %d with %d GPUs", i,
						 (unsigned long long)jobs[i].id, p->node, p->gpus);
			nodes[p->node].free_gpus -= p->gpus;
			nodes[p->node].free_cpus -= p->gpus * a->cpus_per_gpu;
			nodes[p->node].free_mem_gb -= p->gpus * a->mem_per_gpu;
			g += p->gpus;
		}
		if (g != jobs[i].gpus)
			return syn_errprintf(err, EINVAL,
					     "job %d (id %llu): pinned on %d GPUs, needs %d", i,
					     (unsigned long long)jobs[i].id, g, jobs[i].gpus);
		a->tput = syn_job_tput(jobs[i].profile, a->cpus_per_gpu, a->mem_per_gpu);
	}
	for (int i = 0; i < n_nodes; i++)
		if (nodes[i].free_gpus < 0)
			return syn_errprintf(err, EINVAL,
					     "node %d: pinned jobs use more GPUs than it has", i);
	return 0;
}

int syn_round(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
	      const syn_round_opts_t *o, syn_round_stats_t *st, syn_error_t *err)
{
	syn_round_stats_t local;
	struct syn__ctx *cx = NULL;
	int *order = NULL;
	int rv = -1;

	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	if (!o)
		return syn_errprintf(err, EINVAL, "options are NULL");
	if ((int)o->allocator < 0 || o->allocator > SYN_ALLOC_OPT)
		return syn_errprintf(err, EINVAL, "allocator %d unknown", (int)o->allocator);
	if ((int)o->ordering < 0 || o->ordering > SYN_ORDER_FTF)
		return syn_errprintf(err, EINVAL, "ordering %d unknown", (int)o->ordering);
	if (!(o->eps >= 0 && o->eps < 1))
		return syn_errprintf(err, EINVAL, "eps = %g, expected 0 <= eps < 1", o->eps);
	if (n_jobs < 0 || (n_jobs > 0 && !jobs))
		return syn_errprintf(err, EINVAL, "jobs: %d jobs given", n_jobs);
	if (check_nodes(nodes, n_nodes, err) < 0)
		return -1;
	for (int i = 0; i < n_jobs; i++)
		if (check_job(&jobs[i], i, err) < 0)
			return -1;
	/* Order before the allocations are reset: SRTF reads each job's rate
	 * at its previous allocation to turn remaining work into time. */
	order = malloc(sizeof *order * (size_t)(n_jobs > 0 ? n_jobs : 1));
	if (!order || syn_order(jobs, n_jobs, o->ordering, o->now, order) < 0) {
		syn_errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	if (apply_pinned(nodes, n_nodes, jobs, n_jobs, err) < 0)
		goto out;
	if (o->allocator == SYN_ALLOC_OPT) {
		if (syn__opt_round(nodes, n_nodes, jobs, n_jobs, order, o, st, err) < 0)
			goto out;
	} else {
		enum syn__mode mode = o->allocator == SYN_ALLOC_PROP     ? SYN__PROP
				      : o->allocator == SYN_ALLOC_GREEDY ? SYN__GREEDY
									 : SYN__TUNE;
		cx = syn__ctx_create(nodes, n_nodes, jobs, n_jobs, st);
		if (!cx) {
			syn_errprintf(err, ENOMEM, "out of memory");
			goto out;
		}
		for (int k = 0; k < n_jobs; k++) {
			syn_job_t *j = &jobs[order[k]];
			double c = 0, m = 0;
			int have;

			if (j->pinned)
				continue;
			if (syn__ctx_free_gpus(cx) < j->gpus)
				continue;
			have = j->profile && syn_best_case(j->profile, o->eps, 0, 0, &c, &m) == 0;
			syn__place(cx, order[k], mode, have, c, m);
		}
		if (mode == SYN__TUNE)
			syn__improve(cx, !o->no_leftover, !o->no_exchange);
	}
	for (int i = 0; i < n_jobs; i++) {
		if (jobs[i].pinned)
			continue;
		if (jobs[i].alloc.n_place > 0) {
			st->placed++;
			st->total_tput += jobs[i].alloc.tput * jobs[i].gpus;
		} else {
			st->waiting++;
		}
	}
#ifdef SYN_DEBUG
	if (syn_check_round(nodes, n_nodes, jobs, n_jobs, err) != 0) {
		errno = EDOM;
		goto out;
	}
#endif
	rv = 0;
out:
	syn__ctx_destroy(cx);
	free(order);
	return rv;
}

int syn_check_round(const syn_node_t *nodes, int n_nodes, const syn_job_t *jobs, int n_jobs,
		    syn_error_t *err)
{
	double *use = NULL;
	int bad = 0;

	if (check_nodes(nodes, n_nodes, err) < 0)
		return -1;
	if (n_jobs < 0 || (n_jobs > 0 && !jobs))
		return syn_errprintf(err, EINVAL, "jobs: %d jobs given", n_jobs);
	use = calloc((size_t)(n_nodes > 0 ? n_nodes : 1) * 3, sizeof *use);
	if (!use)
		return syn_errprintf(err, ENOMEM, "out of memory");
#define FIRST(...)                                                                   \
	do {                                                                         \
		if (bad++ == 0 && err)                                               \
			snprintf(err->text, sizeof err->text, __VA_ARGS__);          \
	} while (0)
	for (int i = 0; i < n_jobs; i++) {
		const syn_job_t *j = &jobs[i];
		const syn_alloc_t *a = &j->alloc;
		double sc = INFINITY, sm = INFINITY, t, pt;
		int g = 0, valid = 1;

		if (a->n_place == 0)
			continue;
		if (a->n_place < 0 || a->n_place > SYN_MAX_SPAN) {
			FIRST("job %llu: %d placements", (unsigned long long)j->id, a->n_place);
			continue;
		}
		for (int k = 0; k < a->n_place; k++) {
			const syn_place_t *p = &a->place[k];
			if (p->node < 0 || p->node >= n_nodes || p->gpus < 1) {
				valid = 0;
				break;
			}
			g += p->gpus;
			use[3 * p->node] += p->gpus;
			use[3 * p->node + 1] += p->gpus * a->cpus_per_gpu;
			use[3 * p->node + 2] += p->gpus * a->mem_per_gpu;
			sc = fmin(sc, syn__share_cpus(&nodes[p->node]));
			sm = fmin(sm, syn__share_mem(&nodes[p->node]));
		}
		if (!valid || g != j->gpus) {
			FIRST("job %llu: placement holds %d GPUs, job needs %d", (unsigned long long)j->id,
			      g, j->gpus);
			continue;
		}
		t = syn_job_tput(j->profile, a->cpus_per_gpu, a->mem_per_gpu);
		pt = syn_job_tput(j->profile, sc, sm);
		if (!(t >= pt - 1e-9))
			FIRST("job %llu: guarantee broken: tput %.4f at (%.2f cores, %.1f GB) < %.4f at "
			      "the proportional share",
			      (unsigned long long)j->id, t, a->cpus_per_gpu, a->mem_per_gpu, pt);
	}
	for (int i = 0; i < n_nodes; i++) {
		const syn_node_t *n = &nodes[i];
		if (use[3 * i] > n->gpus || use[3 * i + 1] > n->cpus * (1 + SYN__EPS) + SYN__EPS ||
		    use[3 * i + 2] > n->mem_gb * (1 + SYN__EPS) + SYN__EPS)
			FIRST("node %d over capacity: %g/%d GPUs, %g/%g cores, %g/%g GB", i, use[3 * i],
			      n->gpus, use[3 * i + 1], n->cpus, use[3 * i + 2], n->mem_gb);
	}
#undef FIRST
	free(use);
	return bad;
}

/* A refusal: the reason into out (when given), errno EINVAL, -1. */
#define advise_fail(out, ...) \
	syn_errbuf((out) ? (out)->reason : NULL, sizeof((out)->reason), EINVAL, __VA_ARGS__)

/* Advise node i's GPU-proportional share (TUNE step 2 or 3). */
static void advise_share(syn_advice_t *out, const syn_profile_t *p, const syn_node_t *n, int i,
			 int step)
{
	out->cpus_per_gpu = syn__share_cpus(n);
	out->mem_per_gpu = syn__share_mem(n);
	out->node = i;
	out->step = step;
	out->tput = out->prop_tput = syn_job_tput(p, out->cpus_per_gpu, out->mem_per_gpu);
}

int syn_advise(const syn_node_t *nodes, int n_nodes, int gpus, const syn_profile_t *p,
	       double eps, syn_advice_t *out)
{
	syn_error_t why;
	syn_error_t nerr = { "" };
	double bc = 0, bm = 0, sc = INFINITY, sm = INFINITY, score = INFINITY;
	int have, best = -1, max_gpus = 0;

	if (!out)
		return advise_fail(out, "out is NULL");
	memset(out, 0, sizeof *out);
	out->node = -1;
	if (check_nodes(nodes, n_nodes, &nerr) < 0)
		return advise_fail(out, "nodes: %s", nerr.text);
	if (n_nodes == 0)
		return advise_fail(out, "nodes: need at least one node");
	if (gpus < 1)
		return advise_fail(out, "gpus = %d, need >= 1", gpus);
	if (!(eps >= 0 && eps < 1))
		return advise_fail(out, "eps = %g, expected 0 <= eps < 1", eps);
	if (p && syn_profile_check(p, &why) < 0)
		return advise_fail(out, "profile: %s", why.text);
	for (int i = 0; i < n_nodes; i++) {
		if (nodes[i].gpus > max_gpus)
			max_gpus = nodes[i].gpus;
		sc = fmin(sc, syn__share_cpus(&nodes[i]));
		sm = fmin(sm, syn__share_mem(&nodes[i]));
	}
	have = p && syn_best_case(p, eps, 0, 0, &bc, &bm) == 0;

	if (gpus > max_gpus) {
		/* A job larger than any node spans nodes and gets the same per
		 * GPU on each, which a full node limits to its share. */
		out->cpus_per_gpu = sc;
		out->mem_per_gpu = sm;
		out->step = 2;
		out->tput = out->prop_tput = syn_job_tput(p, sc, sm);
		snprintf(out->reason, sizeof out->reason,
			 "%d GPUs span nodes (largest has %d): GPU-proportional share per GPU", gpus,
			 max_gpus);
		return 0;
	}
	/* Step 1: best-case demand, best-fit. */
	for (int i = 0; have && i < n_nodes; i++) {
		const syn_node_t *n = &nodes[i];
		if (syn_job_tput(p, bc, bm) < syn_job_tput(p, syn__share_cpus(n), syn__share_mem(n)))
			continue;
		if (!syn__fits(n, gpus, bc, bm))
			continue;
		double s = syn__free_score(n);
		if (s < score) {
			score = s;
			best = i;
		}
	}
	if (best >= 0) {
		const syn_node_t *n = &nodes[best];
		out->cpus_per_gpu = bc;
		out->mem_per_gpu = bm;
		out->node = best;
		out->step = 1;
		out->tput = syn_job_tput(p, bc, bm);
		out->prop_tput = syn_job_tput(p, syn__share_cpus(n), syn__share_mem(n));
		snprintf(out->reason, sizeof out->reason,
			 "best-case demand (%g cores, %g GB per GPU, %.2fx) fits on node %d", bc, bm,
			 out->tput / (out->prop_tput > 0 ? out->prop_tput : 1), best);
		return 0;
	}
	/* Step 2: the GPU-proportional share, best-fit. */
	for (int i = 0; i < n_nodes; i++) {
		const syn_node_t *n = &nodes[i];
		if (!syn__fits(n, gpus, syn__share_cpus(n), syn__share_mem(n)))
			continue;
		double s = syn__free_score(n);
		if (s < score) {
			score = s;
			best = i;
		}
	}
	if (best >= 0) {
		advise_share(out, p, &nodes[best], best, 2);
		snprintf(out->reason, sizeof out->reason,
			 "%s: GPU-proportional share fits on node %d",
			 have ? "best-case demand does not fit now" : "no profile", best);
		return 0;
	}
	/* Step 3: a node with the GPUs free, once its co-located jobs above
	 * their share are pushed back (the tuner does that). */
	for (int i = 0; i < n_nodes; i++) {
		const syn_node_t *n = &nodes[i];
		if (n->free_gpus < gpus)
			continue;
		double s = syn__free_score(n);
		if (best < 0 || s > score) {
			score = s;
			best = i;
		}
	}
	if (best >= 0) {
		advise_share(out, p, &nodes[best], best, 3);
		snprintf(out->reason, sizeof out->reason,
			 "node %d has %d free GPUs but too few cores/memory: GPU-proportional share "
			 "after pushing back co-located jobs",
			 best, nodes[best].free_gpus);
		return 0;
	}
	/* Nothing free: ask for the best case the largest node could give. */
	{
		const syn_node_t *big = NULL;
		for (int i = 0; i < n_nodes; i++)
			if (nodes[i].gpus >= gpus && (!big || nodes[i].cpus > big->cpus))
				big = &nodes[i];
		double share_c = syn__share_cpus(big), share_m = syn__share_mem(big);
		double c = share_c, m = share_m;
		if (have) {
			c = fmin(bc, big->cpus / gpus);
			m = fmin(bm, big->mem_gb / gpus);
			if (syn_job_tput(p, c, m) < syn_job_tput(p, share_c, share_m)) {
				c = share_c;
				m = share_m;
			}
		}
		out->cpus_per_gpu = c;
		out->mem_per_gpu = m;
		out->step = 0;
		out->tput = syn_job_tput(p, c, m);
		out->prop_tput = syn_job_tput(p, share_c, share_m);
		snprintf(out->reason, sizeof out->reason,
			 "no node has %d free GPUs now; asking %s (%g cores, %g GB per GPU)", gpus,
			 have ? "the best case a node can hold" : "the GPU-proportional share", c, m);
	}
	return 0;
}
