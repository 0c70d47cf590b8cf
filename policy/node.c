/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * node.c: node-level TUNE for live Slurm (syn_node_tune): the cores and
 * cache each Synergy job running on one node should hold now, its
 * allotment plus a reclaimable grant out of what no job was allotted.
 *
 * It runs the round's own machinery (alloc.c) on a one-node context: each
 * Synergy job with a profile is placed at its allotment, with that
 * allotment as the least step 5 may leave it with, and the pool as the
 * node's free cores and memory; then TUNE's step 4 (leftover) and step 5
 * (exchange within the node) act on profile cells. A grid cell is rarely
 * where the pool ends, so the plan is then rounded down to whole cores and
 * MB and what is left of the pool goes out at that grain, by the profiles'
 * interpolated gains. The job's cache is capped at max_cache_mb by cutting
 * its profile's memory axis there (syn__cap_profile), so no step ever sees
 * a gain from cache the loader would not get.
 *
 * The result is checked before it is returned (holds at or above
 * allotments, grants within the pool); a broken check is an internal error
 * (EDOM), never a silently wrong plan.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

/* One consumer of the pool, as the plan works on it: a Synergy job with a
 * profile, or the co-located members of one coordinated-prep group (same
 * group, GPUs and profile key), which prepare one stream of batches
 * together. A group of k members of g GPUs is planned as one job of k x g
 * GPUs whose profile is the members' with its cores axis divided by k
 * (syn_profile_group(), the one definition of that transform): at
 * C cores in all, each member runs as one job with C cores would (every
 * batch is prepared once, for all of them), and its cache is the members'
 * mean. So the group is granted what one job's prep needs, not k times
 * that, and its gains count for all its members. */
struct nj {
	int i;            /* index into the caller's array of its first member */
	int k;            /* members (1: a job on its own) */
	int g;            /* GPUs: k x a member's */
	int base_c;       /* allotted (after step 0: raised) cores, cache MB */
	double base_m;
	int hc;           /* hold: cores, cache MB */
	double hm;
	double prop, t0;  /* throughput at its (members') share and at its allotment */
	syn_profile_t q;  /* its profile, memory capped at max_cache_mb */
};

static double nj_tput(const struct nj *x, double c, double m)
{
	return syn_job_tput(&x->q, c / x->g, m / 1024.0 / x->g);
}

/* Whole cores of the pool, one at a time, to the job gaining most. */
static int fill_cores(struct nj *x, int n, int *pool)
{
	int moved = 0;

	while (*pool > 0) {
		double best = 1e-9;
		int who = -1;

		for (int k = 0; k < n; k++) {
			double gain = x[k].g * (nj_tput(&x[k], x[k].hc + 1, x[k].hm) -
						nj_tput(&x[k], x[k].hc, x[k].hm));
			if (gain > best) {
				best = gain;
				who = k;
			}
		}
		if (who < 0)
			break;
		x[who].hc++;
		(*pool)--;
		moved = 1;
	}
	return moved;
}

/* MB of the pool to the job with the best gain per MB, one stretch of its
 * memory axis (up to its next point, or the pool's end) at a time. */
static int fill_mem(struct nj *x, int n, double *pool)
{
	int moved = 0;

	while (*pool >= 1) {
		double best = 1e-12, to = 0;
		int who = -1;

		for (int k = 0; k < n; k++) {
			const syn_profile_t *q = &x[k].q;
			double t = -1;

			for (int j = 0; j < q->n_mem && t < 0; j++) {
				double v = floor(q->mem_gb[j] * x[k].g * 1024 + 1e-6);
				if (v > x[k].hm)
					t = v;
			}
			if (t < 0)
				continue; /* past its last point: more cache gains nothing */
			t = fmin(t, x[k].hm + *pool);
			double rate = x[k].g * (nj_tput(&x[k], x[k].hc, t) -
						nj_tput(&x[k], x[k].hc, x[k].hm)) / (t - x[k].hm);
			if (rate > best) {
				best = rate;
				who = k;
				to = t;
			}
		}
		if (who < 0)
			break;
		*pool -= to - x[who].hm;
		x[who].hm = to;
		moved = 1;
	}
	return moved;
}

/* A job's GPU share of g GPUs (syn__live_share), its process memory
 * including its checkpoint buffers (syn_ckpt_mb). */
static void job_share(const syn_shape_t *node, const syn_profile_t *p, int g, int *cores,
		      uint64_t *mem_mb, uint64_t *cache_mb)
{
	syn_shape_t s = *node;

	s.process_mem_mb += syn_ckpt_mb(p);
	syn__live_share(&s, g, cores, mem_mb, cache_mb);
}

int syn_node_tune(const syn_shape_t *node, syn_node_job_t *jobs, int n, int flags,
		  syn_node_stats_t *st, syn_error_t *err)
{
	syn_node_stats_t local;
	struct syn__ctx *cx = NULL;
	struct nj *x = NULL;
	syn_job_t *sj = NULL;
	syn_profile_t one;
	int *own = NULL;
	syn_node_t nd;
	syn_error_t why;
	int64_t sum_c = 0, pool_c;
	uint64_t sum_m = 0, pool_m;
	int sum_g = 0, nx = 0, rv = -1, other_g = 0;
	double m_base = 0, c_base = 0;

	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	if (syn__check_shape(node, &why) < 0)
		return syn_errprintf(err, EINVAL, "%s", why.text);
	if (n < 0 || (n > 0 && !jobs))
		return syn_errprintf(err, EINVAL, "jobs: %d jobs given", n);
	if (flags & ~(SYN_NODE_NO_LEFTOVER | SYN_NODE_NO_EXCHANGE))
		return syn_errprintf(err, EINVAL, "flags = %#x: unknown bits", (unsigned)flags);
	for (int i = 0; i < n; i++) {
		const syn_node_job_t *j = &jobs[i];

		if (j->gpus < (j->synergy ? 1 : 0) || j->cores < 0 || j->mem_mb > node->mem_mb)
			return syn_errprintf(err, EINVAL,
					 "job %d (id %llu): gpus=%d cores=%d mem_mb=%llu (need gpus >= %d, "
					     "cores >= 0, mem_mb <= the node's)",
					     i, (unsigned long long)j->id, j->gpus, j->cores,
					     (unsigned long long)j->mem_mb, j->synergy ? 1 : 0);
		if (j->synergy && j->profile && syn_profile_check(j->profile, &why) < 0)
			return syn_errprintf(err, EINVAL, "job %d (id %llu): profile: %s", i,
					     (unsigned long long)j->id, why.text);
		sum_g += j->gpus;
		sum_c += j->cores;
		sum_m += j->mem_mb;
		if (sum_g > node->gpus || sum_c > node->cpus || sum_m > node->mem_mb)
			return syn_errprintf(err, EINVAL,
					 "jobs 0..%d are allotted more than the node has: %d/%d GPUs, "
					     "%lld/%d cores, %llu/%llu MB",
					     i, sum_g, node->gpus, (long long)sum_c, node->cpus,
					 (unsigned long long)sum_m, (unsigned long long)node->mem_mb);
	}
	pool_c = node->cpus - sum_c;
	pool_m = node->mem_mb - sum_m;
	st->free_cores = (int)pool_c;
	st->free_mem_mb = pool_m;

	x = calloc((size_t)(n > 0 ? n : 1), sizeof *x);
	sj = calloc((size_t)(n > 0 ? n : 1), sizeof *sj);
	own = calloc((size_t)(n > 0 ? n : 1), sizeof *own);
	if (!x || !sj || !own) {
		syn_errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	/* Everyone's outputs at the allotment; the jobs that can gain go to x,
	 * the members of a group on the node to one consumer. */
	for (int i = 0; i < n; i++) {
		syn_node_job_t *j = &jobs[i];
		syn_shape_t jshape;
		int sc;
		uint64_t smem, scache;

		own[i] = -1;
		j->cache_mb = 0;
		j->grant_cores = 0;
		j->grant_cache_mb = 0;
		j->hold_cores = j->cores;
		j->tput = j->prop_tput = 1;
		/* A job's process memory includes its checkpoint buffers. */
		jshape = *node;
		if (j->synergy)
			jshape.process_mem_mb += syn_ckpt_mb(j->profile);
		if (j->synergy && j->mem_mb > jshape.process_mem_mb)
			j->cache_mb = j->mem_mb - jshape.process_mem_mb;
		if (j->synergy && node->max_cache_mb && j->cache_mb > node->max_cache_mb)
			j->cache_mb = node->max_cache_mb;
		j->hold_cache_mb = j->cache_mb;
		if (!j->synergy || !j->profile) {
			other_g += j->gpus;
			continue;
		}
		/* Its own floor, with its own profile and GPUs. */
		syn__cap_profile(j->profile,
				 node->max_cache_mb ? node->max_cache_mb / 1024.0 / j->gpus : 0, &one);
		syn__live_share(&jshape, j->gpus, &sc, &smem, &scache);
		j->prop_tput = syn_job_tput(&one, (double)sc / j->gpus, scache / 1024.0 / j->gpus);
		j->tput = syn_job_tput(&one, (double)j->cores / j->gpus,
				       j->cache_mb / 1024.0 / j->gpus);
		for (int k = 0; k < nx && j->group && own[i] < 0; k++) {
			const syn_node_job_t *f = &jobs[x[k].i];

			if (f->group == j->group && f->gpus == j->gpus &&
			    strcmp(f->profile->key, j->profile->key) == 0)
				own[i] = k;
		}
		if (own[i] >= 0) {
			struct nj *y = &x[own[i]];

			y->k++;
			y->base_c += j->cores;
			y->base_m += (double)j->cache_mb;
			continue;
		}
		own[i] = nx;
		x[nx] = (struct nj){ .i = i, .k = 1, .base_c = j->cores, .base_m = (double)j->cache_mb };
		x[nx].q = one;
		nx++;
	}
	for (int k = 0; k < nx; k++) {
		struct nj *y = &x[k];
		int sc;
		uint64_t smem, scache;

		y->g = y->k * jobs[y->i].gpus;
		if (y->k > 1) {
			one = y->q;
			if (syn_profile_group(&one, y->k, &y->q) < 0) {
				syn_errprintf(err, EINVAL,
					      "job %llu: a group of %d members (at most %d)",
					      (unsigned long long)jobs[y->i].id, y->k,
					      SYN_MAX_GROUP);
				goto out;
			}
		}
		y->hc = y->base_c;
		y->hm = y->base_m;
		job_share(node, jobs[y->i].profile, y->g, &sc, &smem, &scache);
		y->prop = nj_tput(y, sc, (double)scache);
		y->t0 = nj_tput(y, y->base_c, y->base_m);
		sj[k] = (syn_job_t){ .id = jobs[y->i].id, .gpus = y->g, .profile = &y->q };
	}

	/* Step 0: a job (a group) allotted below its floor is lifted toward
	 * its share first, in array order, from the pool. */
	for (int k = 0; k < nx; k++) {
		int sc;
		uint64_t smem, scache;

		if (!(x[k].t0 < x[k].prop - 1e-9))
			continue;
		job_share(node, jobs[x[k].i].profile, x[k].g, &sc, &smem, &scache);
		int c = x[k].base_c;
		double m = x[k].base_m;
		if (c < sc)
			c += sc - c < pool_c ? sc - c : (int)pool_c;
		if (m < (double)scache)
			m += fmin((double)scache - m, (double)pool_m);
		/* A profile need not be monotone: a part of the way may be worse. */
		if (!(nj_tput(&x[k], c, m) > x[k].t0 + 1e-9))
			continue;
		pool_c -= c - x[k].base_c;
		pool_m -= (uint64_t)(m - x[k].base_m);
		x[k].hc = x[k].base_c = c;
		x[k].hm = x[k].base_m = m;
		st->raised++;
	}

	/* Steps 4 and 5 on profile cells, on a one-node context whose free
	 * amounts are the pool. */
	if (nx > 0 && (flags & (SYN_NODE_NO_LEFTOVER | SYN_NODE_NO_EXCHANGE)) !=
			      (SYN_NODE_NO_LEFTOVER | SYN_NODE_NO_EXCHANGE)) {
		syn_round_stats_t rst;
		syn_place_t pl = { 0, 0 };

		memset(&rst, 0, sizeof rst);
		memset(&nd, 0, sizeof nd);
		nd.gpus = node->gpus;
		nd.cpus = node->cpus;
		/* The node's cache memory, for step 4's cost in shares. */
		nd.mem_gb = (node->mem_mb > (uint64_t)node->gpus * node->process_mem_mb
				     ? node->mem_mb - (uint64_t)node->gpus * node->process_mem_mb
				     : node->mem_mb) / 1024.0;
		nd.free_gpus = node->gpus - other_g;
		for (int k = 0; k < nx; k++) {
			c_base += x[k].base_c;
			m_base += x[k].base_m;
		}
		nd.free_cpus = (double)pool_c + c_base;
		nd.free_mem_gb = ((double)pool_m + m_base) / 1024.0;
		cx = syn__ctx_create(&nd, 1, sj, nx, &rst);
		if (!cx) {
			syn_errprintf(err, ENOMEM, "out of memory");
			goto out;
		}
		for (int k = 0; k < nx; k++) {
			double c = (double)x[k].base_c / x[k].g, m = x[k].base_m / 1024.0 / x[k].g;

			pl.gpus = x[k].g;
			syn__commit(cx, k, &pl, 1, c, m);
			sj[k].alloc.prop_tput = x[k].prop;
			if (syn__ctx_set_min(cx, k, c, m) < 0) {
				syn_errprintf(err, ENOMEM, "out of memory");
				goto out;
			}
		}
		syn__improve_node(cx, 0, !(flags & SYN_NODE_NO_LEFTOVER),
				  !(flags & SYN_NODE_NO_EXCHANGE));
		st->upgraded = rst.upgraded;
		st->exchanged = rst.exchanged;
		/* Down to whole cores and MB, never below the base; a cell
		 * between whole cores that rounds to less than the base gives
		 * (a profile need not be monotone) is dropped for the base. */
		for (int k = 0; k < nx; k++) {
			int c = (int)floor(sj[k].alloc.cpus_per_gpu * x[k].g + 1e-6);
			double m = floor(sj[k].alloc.mem_per_gpu * x[k].g * 1024 + 1e-6);

			x[k].hc = c > x[k].base_c ? c : x[k].base_c;
			x[k].hm = m > x[k].base_m ? m : x[k].base_m;
			if (nj_tput(&x[k], x[k].hc, x[k].hm) < nj_tput(&x[k], x[k].base_c, x[k].base_m)) {
				x[k].hc = x[k].base_c;
				x[k].hm = x[k].base_m;
			}
		}
	}

	/* What the rounding left of the pool. The cell steps compare with a
	 * little slack: should the holds exceed the pool by a rounding, take
	 * it from the largest grant (ties to the first job). */
	{
		int64_t used_c = 0;
		double used_m = 0;
		int left_c;
		double left_m;

		for (int k = 0; k < nx; k++) {
			used_c += x[k].hc - x[k].base_c;
			used_m += x[k].hm - x[k].base_m;
		}
		while (used_c > pool_c) {
			int big = 0;
			for (int k = 1; k < nx; k++)
				if (x[k].hc - x[k].base_c > x[big].hc - x[big].base_c)
					big = k;
			x[big].hc--;
			used_c--;
		}
		while (used_m > (double)pool_m) {
			int big = 0;
			for (int k = 1; k < nx; k++)
				if (x[k].hm - x[k].base_m > x[big].hm - x[big].base_m)
					big = k;
			double d = fmin(x[big].hm - x[big].base_m, ceil(used_m - (double)pool_m - 1e-9));
			if (!(d > 0))
				break; /* only sub-MB noise is left */
			x[big].hm -= d;
			used_m -= d;
		}
		left_c = (int)(pool_c - used_c);
		left_m = floor((double)pool_m - used_m + 1e-6);
		if (!(flags & SYN_NODE_NO_LEFTOVER)) {
			for (int pass = 0; pass < 64; pass++) {
				int moved = fill_cores(x, nx, &left_c);
				if (!fill_mem(x, nx, &left_m) && !moved)
					break;
			}
		}
	}

	/* Outputs and the plan's check: a group's grant is split evenly
	 * between its members (the first ones get the remainder), and each
	 * member runs at the group's throughput. */
	for (int k = 0; k < nx; k++) {
		int64_t gc = x[k].hc, left_c;
		int64_t gm = (int64_t)x[k].hm, left_m;
		double hm = (double)gm;
		int m = 0;

		for (int i = 0; i < n; i++)
			if (own[i] == k) {
				gc -= jobs[i].cores;
				gm -= (int64_t)jobs[i].cache_mb;
			}
		if (gc < 0 || gm < 0) {
			syn_errprintf(err, EDOM,
				      "job %llu: plan below its allotment (internal error)",
				      (unsigned long long)jobs[x[k].i].id);
			goto out;
		}
		left_c = gc;
		left_m = gm;
		for (int i = 0; i < n; i++) {
			syn_node_job_t *j = &jobs[i];
			int64_t pc, pm;

			if (own[i] != k)
				continue;
			pc = gc / x[k].k + (m < gc % x[k].k ? 1 : 0);
			pm = gm / x[k].k + (m < gm % x[k].k ? 1 : 0);
			m++;
			left_c -= pc;
			left_m -= pm;
			j->grant_cores = (int)pc;
			j->grant_cache_mb = (uint64_t)pm;
			j->hold_cores = j->cores + j->grant_cores;
			j->hold_cache_mb = j->cache_mb + j->grant_cache_mb;
			j->tput = nj_tput(&x[k], x[k].hc, hm);
			st->granted_cores += j->grant_cores;
			st->granted_cache_mb += j->grant_cache_mb;
		}
		if (left_c != 0 || left_m != 0) {
			syn_errprintf(err, EDOM, "job %llu: group grant not split (internal error)",
				      (unsigned long long)jobs[x[k].i].id);
			goto out;
		}
	}
	if (st->granted_cores > st->free_cores || st->granted_cache_mb > st->free_mem_mb) {
		syn_errprintf(err, EDOM, "plan grants %d cores, %llu MB of a pool of %d, %llu "
			      "(internal error)", st->granted_cores,
			      (unsigned long long)st->granted_cache_mb, st->free_cores,
			      (unsigned long long)st->free_mem_mb);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (!jobs[i].synergy)
			continue;
		st->total_tput += jobs[i].tput * jobs[i].gpus;
		if (jobs[i].tput < jobs[i].prop_tput - 1e-9)
			st->below_floor++;
	}
	rv = 0;
out:
	syn__ctx_destroy(cx);
	free(x);
	free(sj);
	free(own);
	return rv;
}

int syn_node_harvest(syn_harvest_job_t *jobs, int n, syn_error_t *err)
{
	int pool = 0;

	if (n < 0 || (n > 0 && !jobs))
		return syn_errprintf(err, EINVAL, "jobs: %d jobs given", n);
	for (int i = 0; i < n; i++) {
		syn_harvest_job_t *j = &jobs[i];
		syn_error_t why;

		if (j->allotted < 0 || j->hold < j->allotted || j->lent < 0 ||
		    j->lent > j->allotted || (j->synergy && j->gpus < 1) || isnan(j->spare))
			return syn_errprintf(err, EINVAL,
					 "job %d (id %llu): allotted=%d hold=%d lent=%d gpus=%d "
					 "spare=%g (need 0 <= lent <= allotted <= hold, gpus >= 1, "
					     "a spare that is a number)",
					 i, (unsigned long long)j->id, j->allotted, j->hold, j->lent,
					     j->gpus, j->spare);
		if (j->synergy && j->profile && syn_profile_check(j->profile, &why) < 0)
			return syn_errprintf(err, EINVAL, "job %d (id %llu): profile: %s", i,
					     (unsigned long long)j->id, why.text);
	}
	for (int i = 0; i < n; i++) {
		syn_harvest_job_t *j = &jobs[i];
		double t = j->lent > 0 ? SYN_HARVEST_KEEP : SYN_HARVEST_START;

		j->lend = j->harvest = 0;
		if (!j->synergy || j->spare < 0 || j->allotted == 0 || j->harvesting)
			continue;
		double k = floor(fmin(j->spare, (double)j->allotted) + 1.0 - t + 1e-9);
		j->lend = k < 0 ? 0 : k > j->allotted ? j->allotted : (int)k;
		pool += j->lend;
	}
	while (pool > 0) {
		double best = 0;
		int who = -1;

		for (int i = 0; i < n; i++) {
			syn_harvest_job_t *j = &jobs[i];
			double m, c, now, more;

			if (!j->synergy || !j->profile || j->lend > 0)
				continue;
			m = (double)j->cache_mb / 1024.0 / j->gpus;
			c = (double)(j->hold + j->harvest);
			now = syn_job_tput(j->profile, c / j->gpus, m);
			more = syn_job_tput(j->profile, (c + 1) / j->gpus, m);
			if (more - now < SYN_HARVEST_MIN_GAIN * now)
				continue;
			if (j->gpus * (more - now) > best) {
				best = j->gpus * (more - now);
				who = i;
			}
		}
		if (who < 0)
			break;
		jobs[who].harvest++;
		pool--;
	}
	return 0;
}
