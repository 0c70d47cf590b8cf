/*
 * alloc.c: the placement engine behind every allocator: best-fit on one
 * node, spanning several nodes under the multi-server rule (same cores and
 * memory per GPU on each node), and TUNE's push-back of co-located jobs that
 * hold more than their GPU-proportional share.
 *
 * The engine keeps the nodes' free amounts and the list of jobs it placed in
 * this round (only those can be pushed back; pinned jobs are fixed). Every
 * change of a job's demand goes through one function that re-derives its
 * throughput, so the guarantee can be checked from the job alone.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

struct syn__ctx {
	syn_node_t *nodes;
	int n_nodes;
	syn_job_t *jobs;
	int n_jobs;
	syn_round_stats_t *st; /* the caller's, or own_st: never NULL */
	syn_round_stats_t own_st;
	int *placed; /* jobs placed this round, in placement order */
	int n_placed;
	int free_gpus; /* cluster-wide */
	int *cand;     /* scratch: candidate nodes */
	double *key;   /* scratch: their sort keys */
	int *take;     /* scratch: GPUs taken per candidate */
};

struct syn__ctx *syn__ctx_create(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
				 syn_round_stats_t *st)
{
	struct syn__ctx *cx = calloc(1, sizeof *cx);

	if (!cx)
		return NULL;
	cx->nodes = nodes;
	cx->n_nodes = n_nodes;
	cx->jobs = jobs;
	cx->n_jobs = n_jobs;
	cx->st = st ? st : &cx->own_st;
	cx->placed = malloc(sizeof *cx->placed * (size_t)(n_jobs > 0 ? n_jobs : 1));
	cx->cand = malloc(sizeof *cx->cand * (size_t)(n_nodes > 0 ? n_nodes : 1));
	cx->key = malloc(sizeof *cx->key * (size_t)(n_nodes > 0 ? n_nodes : 1));
	cx->take = malloc(sizeof *cx->take * (size_t)(n_nodes > 0 ? n_nodes : 1));
	if (!cx->placed || !cx->cand || !cx->key || !cx->take) {
		syn__ctx_destroy(cx);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n_nodes; i++)
		cx->free_gpus += nodes[i].free_gpus;
	return cx;
}

void syn__ctx_destroy(struct syn__ctx *cx)
{
	int e = errno;

	if (cx) {
		free(cx->placed);
		free(cx->cand);
		free(cx->key);
		free(cx->take);
		free(cx);
	}
	errno = e;
}

int syn__ctx_free_gpus(const struct syn__ctx *cx)
{
	return cx->free_gpus;
}

/* The GPU-proportional share of a placement: the smallest per-GPU share
 * of its nodes (the multi-server rule gives the same amount on each). */
static void place_share(const syn_node_t *nodes, const syn_place_t *pl, int np, double *c,
			double *m)
{
	*c = INFINITY;
	*m = INFINITY;
	for (int i = 0; i < np; i++) {
		const syn_node_t *n = &nodes[pl[i].node];
		if (syn__share_cpus(n) < *c)
			*c = syn__share_cpus(n);
		if (syn__share_mem(n) < *m)
			*m = syn__share_mem(n);
	}
}

/* Apply a change of per-GPU demand of an existing allocation to its nodes. */
static void set_demand(struct syn__ctx *cx, syn_job_t *job, double c, double m)
{
	syn_alloc_t *a = &job->alloc;

	for (int i = 0; i < a->n_place; i++) {
		syn_node_t *n = &cx->nodes[a->place[i].node];
		n->free_cpus -= a->place[i].gpus * (c - a->cpus_per_gpu);
		n->free_mem_gb -= a->place[i].gpus * (m - a->mem_per_gpu);
	}
	a->cpus_per_gpu = c;
	a->mem_per_gpu = m;
	a->tput = syn_job_tput(job->profile, c, m);
}

void syn__commit(struct syn__ctx *cx, int j, const syn_place_t *pl, int np, double c, double m)
{
	syn_job_t *job = &cx->jobs[j];
	syn_alloc_t *a = &job->alloc;
	double sc, sm;

	memset(a, 0, sizeof *a);
	a->n_place = np;
	for (int i = 0; i < np; i++) {
		a->place[i] = pl[i];
		cx->nodes[pl[i].node].free_gpus -= pl[i].gpus;
	}
	cx->free_gpus -= job->gpus;
	set_demand(cx, job, c, m);
	place_share(cx->nodes, pl, np, &sc, &sm);
	a->prop_tput = syn_job_tput(job->profile, sc, sm);
	cx->placed[cx->n_placed++] = j;
}

/* Step 1 or 2 on one node: best-fit at (c, m), or at each node's own share
 * when at_share is set. A demand below a node's floor is not used there. */
static int place_single(struct syn__ctx *cx, int j, int at_share, double c, double m)
{
	syn_job_t *job = &cx->jobs[j];
	int best = -1;
	double best_score = INFINITY, bc = 0, bm = 0;

	for (int i = 0; i < cx->n_nodes; i++) {
		const syn_node_t *n = &cx->nodes[i];
		double dc = at_share ? syn__share_cpus(n) : c;
		double dm = at_share ? syn__share_mem(n) : m;

		if (n->free_gpus < job->gpus)
			continue;
		if (!at_share && syn_job_tput(job->profile, dc, dm) <
				 syn_job_tput(job->profile, syn__share_cpus(n), syn__share_mem(n)))
			continue;
		if (!syn__fits(n, job->gpus, dc, dm))
			continue;
		double s = syn__free_score(n);
		if (s < best_score) {
			best_score = s;
			best = i;
			bc = dc;
			bm = dm;
		}
	}
	if (best < 0)
		return 0;
	syn_place_t pl = { best, job->gpus };
	syn__commit(cx, j, &pl, 1, bc, bm);
	return 1;
}

/* Sort candidate nodes cand[0..n-1] by key, descending, ties by index. */
static void sort_cand(struct syn__ctx *cx, int n)
{
	for (int i = 1; i < n; i++) {
		int ci = cx->cand[i];
		double ki = cx->key[i];
		int t = cx->take[i];
		int k = i - 1;
		while (k >= 0 && (cx->key[k] < ki || (cx->key[k] == ki && cx->cand[k] > ci))) {
			cx->cand[k + 1] = cx->cand[k];
			cx->key[k + 1] = cx->key[k];
			cx->take[k + 1] = cx->take[k];
			k--;
		}
		cx->cand[k + 1] = ci;
		cx->key[k + 1] = ki;
		cx->take[k + 1] = t;
	}
}

/* How many GPUs of a job needing (c, m) per GPU a node can host now. */
static int hostable(const syn_node_t *n, double c, double m)
{
	double k = n->free_gpus;

	if (c > 0)
		k = fmin(k, floor((n->free_cpus + SYN__EPS * (1 + n->cpus)) / c));
	if (m > 0)
		k = fmin(k, floor((n->free_mem_gb + SYN__EPS * (1 + n->mem_gb)) / m));
	return k > 0 ? (int)k : 0;
}

/* Choose nodes for a spanning job: the ones hosting most GPUs first, at
 * most SYN_MAX_SPAN of them. Fills pl and returns their count, 0 if the
 * job does not fit. */
static int choose_span(struct syn__ctx *cx, int g, int at_share, int ignore_res, double c,
		       double m, syn_place_t *pl)
{
	int n = 0, got = 0, np = 0;

	for (int i = 0; i < cx->n_nodes; i++) {
		const syn_node_t *nd = &cx->nodes[i];
		int h;

		if (nd->free_gpus <= 0)
			continue;
		if (ignore_res)
			h = nd->free_gpus;
		else
			h = hostable(nd, at_share ? syn__share_cpus(nd) : c,
				     at_share ? syn__share_mem(nd) : m);
		if (h <= 0)
			continue;
		cx->cand[n] = i;
		cx->key[n] = h;
		cx->take[n] = h;
		n++;
	}
	sort_cand(cx, n);
	for (int i = 0; i < n && got < g && np < SYN_MAX_SPAN; i++) {
		int t = cx->take[i] < g - got ? cx->take[i] : g - got;
		pl[np++] = (syn_place_t){ cx->cand[i], t };
		got += t;
	}
	return got == g ? np : 0;
}

/* Steps 1 and 2 across nodes. */
static int place_span(struct syn__ctx *cx, int j, int at_share, double c, double m)
{
	syn_job_t *job = &cx->jobs[j];
	syn_place_t pl[SYN_MAX_SPAN];
	double sc, sm;
	int np;

	if (job->gpus < 2)
		return 0;
	np = choose_span(cx, job->gpus, at_share, 0, c, m, pl);
	if (np == 0)
		return 0;
	place_share(cx->nodes, pl, np, &sc, &sm);
	if (at_share) {
		c = sc;
		m = sm;
	} else if (syn_job_tput(job->profile, c, m) < syn_job_tput(job->profile, sc, sm)) {
		return 0;
	}
	for (int i = 0; i < np; i++)
		if (!syn__fits(&cx->nodes[pl[i].node], pl[i].gpus, c, m))
			return 0;
	syn__commit(cx, j, pl, np, c, m);
	return 1;
}

static int on_node(const syn_alloc_t *a, int node)
{
	for (int i = 0; i < a->n_place; i++)
		if (a->place[i].node == node)
			return 1;
	return 0;
}

/*
 * Push back one job on node that holds more than its share, the one with
 * the largest excess. Its new demand is its old one capped at its share in
 * each dimension if that keeps it at its floor, else exactly its share if
 * the growth of the other dimension fits on its nodes. Returns 1 if a job
 * was pushed back, 0 if none can be.
 */
static int push_back_one(struct syn__ctx *cx, int node)
{
	int victim = -1;
	double worst = 0, vc = 0, vm = 0;

	for (int p = 0; p < cx->n_placed; p++) {
		syn_job_t *k = &cx->jobs[cx->placed[p]];
		syn_alloc_t *a = &k->alloc;
		double sc, sm, nc, nm, excess;

		if (!on_node(a, node))
			continue;
		place_share(cx->nodes, a->place, a->n_place, &sc, &sm);
		excess = fmax(0, a->cpus_per_gpu - sc) / sc + fmax(0, a->mem_per_gpu - sm) / sm;
		if (!(excess > SYN__EPS) || excess <= worst)
			continue;
		nc = fmin(a->cpus_per_gpu, sc);
		nm = fmin(a->mem_per_gpu, sm);
		if (syn_job_tput(k->profile, nc, nm) < a->prop_tput) {
			int ok = 1;
			nc = sc;
			nm = sm;
			for (int i = 0; i < a->n_place && ok; i++)
				ok = syn__has_room(&cx->nodes[a->place[i].node], a->place[i].gpus,
						   nc - a->cpus_per_gpu, nm - a->mem_per_gpu);
			if (!ok)
				continue;
		}
		worst = excess;
		victim = cx->placed[p];
		vc = nc;
		vm = nm;
	}
	if (victim < 0)
		return 0;
	set_demand(cx, &cx->jobs[victim], vc, vm);
	cx->st->pushed_back++;
	return 1;
}

/* Step 3 on one node: a node with enough free GPUs, most free first; push
 * back until the job fits at the node's share. */
static int place_push_single(struct syn__ctx *cx, int j)
{
	syn_job_t *job = &cx->jobs[j];
	int n = 0;

	for (int i = 0; i < cx->n_nodes; i++)
		if (cx->nodes[i].free_gpus >= job->gpus) {
			cx->cand[n] = i;
			cx->key[n] = syn__free_score(&cx->nodes[i]);
			cx->take[n] = job->gpus;
			n++;
		}
	sort_cand(cx, n);
	for (int i = 0; i < n; i++) {
		int nd = cx->cand[i];
		syn_node_t *node = &cx->nodes[nd];
		double c = syn__share_cpus(node), m = syn__share_mem(node);

		for (;;) {
			if (syn__fits(node, job->gpus, c, m)) {
				syn_place_t pl = { nd, job->gpus };
				syn__commit(cx, j, &pl, 1, c, m);
				return 1;
			}
			if (!push_back_one(cx, nd))
				break;
		}
	}
	return 0;
}

/* Step 3 across nodes: the nodes with most free GPUs, pushed back until
 * each hosts its part at the smallest share among them. */
static int place_push_span(struct syn__ctx *cx, int j)
{
	syn_job_t *job = &cx->jobs[j];
	syn_place_t pl[SYN_MAX_SPAN];
	double sc, sm;
	int np;

	if (job->gpus < 2)
		return 0;
	np = choose_span(cx, job->gpus, 1, 1, 0, 0, pl);
	if (np == 0)
		return 0;
	place_share(cx->nodes, pl, np, &sc, &sm);
	for (int i = 0; i < np; i++) {
		syn_node_t *node = &cx->nodes[pl[i].node];
		while (!syn__fits(node, pl[i].gpus, sc, sm))
			if (!push_back_one(cx, pl[i].node))
				return 0;
	}
	syn__commit(cx, j, pl, np, sc, sm);
	return 1;
}

int syn__place(struct syn__ctx *cx, int j, enum syn__mode mode, int have_demand, double c,
	       double m)
{
	syn_job_t *job = &cx->jobs[j];
	syn_round_stats_t *st = cx->st;
	int best_single = have_demand ? 0 : 1; /* no profile: best case is the share */

	if (job->gpus > cx->free_gpus)
		return 0;
	switch (mode) {
	case SYN__PROP:
		return place_single(cx, j, 1, 0, 0) || place_span(cx, j, 1, 0, 0);
	case SYN__GREEDY:
		if (place_single(cx, j, best_single, c, m) || place_span(cx, j, best_single, c, m)) {
			st->best_case++;
			return 1;
		}
		return 0;
	case SYN__TUNE:
		if (place_single(cx, j, best_single, c, m)) {
			st->best_case++;
			return 1;
		}
		if (have_demand && place_single(cx, j, 1, 0, 0)) {
			st->downgraded++;
			return 1;
		}
		if (place_push_single(cx, j)) {
			st->downgraded++;
			return 1;
		}
		if (place_span(cx, j, best_single, c, m)) {
			st->best_case++;
			return 1;
		}
		if (have_demand && place_span(cx, j, 1, 0, 0)) {
			st->downgraded++;
			return 1;
		}
		if (place_push_span(cx, j)) {
			st->downgraded++;
			return 1;
		}
		return 0;
	}
	return 0;
}

/*
 * The best single-cell upgrade of a placed job: a profile cell with at
 * least its cores and memory and more throughput, whose growth fits on
 * every node of the job. Returns the gain per share of resources added
 * (0 if none) and the cell in *nc, *nm.
 */
static double best_upgrade(struct syn__ctx *cx, const syn_job_t *job, double *nc, double *nm)
{
	const syn_profile_t *p = job->profile;
	const syn_alloc_t *a = &job->alloc;
	double best = 0, sc, sm;

	if (!p)
		return 0;
	place_share(cx->nodes, a->place, a->n_place, &sc, &sm);
	for (int i = 0; i < p->n_cpu; i++) {
		double dc = p->cpus[i] - a->cpus_per_gpu;
		if (dc < 0)
			continue;
		for (int k = 0; k < p->n_mem; k++) {
			double dm = p->mem_gb[k] - a->mem_per_gpu, gain, cost;
			int fit = 1;

			if (dm < 0 || !(p->tput[i][k] > a->tput + 1e-9))
				continue;
			for (int q = 0; q < a->n_place && fit; q++)
				fit = syn__has_room(&cx->nodes[a->place[q].node], a->place[q].gpus, dc, dm);
			if (!fit)
				continue;
			gain = (p->tput[i][k] - a->tput) * job->gpus;
			cost = (dc / sc + (sm > 0 ? dm / sm : 0)) * job->gpus + 1e-9;
			if (gain / cost > best) {
				best = gain / cost;
				*nc = p->cpus[i];
				*nm = p->mem_gb[k];
			}
		}
	}
	return best;
}

void syn__leftover(struct syn__ctx *cx)
{
	int *cnt = NULL, *at = NULL, *list = NULL, total = 0;

	/* Jobs per node (a spanning job is listed on each of its nodes). */
	cnt = calloc((size_t)cx->n_nodes + 1, sizeof *cnt);
	for (int q = 0; cnt && q < cx->n_placed; q++) {
		const syn_alloc_t *a = &cx->jobs[cx->placed[q]].alloc;
		for (int i = 0; i < a->n_place; i++)
			cnt[a->place[i].node + 1]++;
		total += a->n_place;
	}
	at = malloc(sizeof *at * (size_t)(cx->n_nodes + 1));
	list = malloc(sizeof *list * (size_t)(total > 0 ? total : 1));
	if (!cnt || !at || !list)
		goto out; /* step 4 only improves: without memory it is skipped */
	for (int i = 0; i < cx->n_nodes; i++)
		cnt[i + 1] += cnt[i];
	memcpy(at, cnt, sizeof *at * (size_t)(cx->n_nodes + 1));
	for (int q = 0; q < cx->n_placed; q++) {
		const syn_alloc_t *a = &cx->jobs[cx->placed[q]].alloc;
		for (int i = 0; i < a->n_place; i++)
			list[at[a->place[i].node]++] = cx->placed[q];
	}
	/* On each node with something left, apply the upgrade with the best
	 * gain per share among its jobs until none fits. Each upgrade strictly
	 * raises one job's throughput on a finite grid, so this ends. */
	for (int nd = 0; nd < cx->n_nodes; nd++) {
		const syn_node_t *n = &cx->nodes[nd];
		if (n->free_cpus <= SYN__EPS * (1 + n->cpus) && n->free_mem_gb <= SYN__EPS * (1 + n->mem_gb))
			continue;
		for (;;) {
			double best = 0, bc = 0, bm = 0;
			int who = -1;

			for (int q = cnt[nd]; q < cnt[nd + 1]; q++) {
				double c = 0, m = 0, g = best_upgrade(cx, &cx->jobs[list[q]], &c, &m);
				if (g > best) {
					best = g;
					who = list[q];
					bc = c;
					bm = m;
				}
			}
			if (who < 0)
				break;
			set_demand(cx, &cx->jobs[who], bc, bm);
			cx->st->upgraded++;
		}
	}
out:
	free(cnt);
	free(at);
	free(list);
}
