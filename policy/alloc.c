/* SPDX-License-Identifier: GPL-2.0-or-later */
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

#include "policy/policy_int.h"

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
	double *min_c, *min_m; /* per job: least cores and memory per GPU step 5
				* may leave it with (node-level TUNE: its
				* allotment); NULL: only its floor counts */
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
		free(cx->min_c);
		free(cx->min_m);
		free(cx);
	}
	errno = e;
}

int syn__ctx_free_gpus(const struct syn__ctx *cx)
{
	return cx->free_gpus;
}

int syn__ctx_set_min(struct syn__ctx *cx, int j, double c, double m)
{
	if (!cx->min_c) {
		size_t n = (size_t)(cx->n_jobs > 0 ? cx->n_jobs : 1);
		cx->min_c = calloc(n, sizeof *cx->min_c);
		cx->min_m = calloc(n, sizeof *cx->min_m);
		if (!cx->min_c || !cx->min_m) {
			free(cx->min_c);
			free(cx->min_m);
			cx->min_c = cx->min_m = NULL;
			errno = ENOMEM;
			return -1;
		}
	}
	cx->min_c[j] = c;
	cx->min_m[j] = m;
	return 0;
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

void syn__ctx_set_demand(struct syn__ctx *cx, int j, double c, double m)
{
	set_demand(cx, &cx->jobs[j], c, m);
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

/*
 * The placed jobs by node: node nd's jobs are list[at[nd] .. at[nd + 1] - 1]
 * (a spanning job is listed on each of its nodes). Returns 0, or -1 when out
 * of memory (nothing allocated then).
 */
static int node_lists(const struct syn__ctx *cx, int **at_out, int **list_out)
{
	int *at = calloc((size_t)cx->n_nodes + 1, sizeof *at), *fill = NULL, *list = NULL;
	int total = 0;

	for (int q = 0; at && q < cx->n_placed; q++) {
		const syn_alloc_t *a = &cx->jobs[cx->placed[q]].alloc;
		for (int i = 0; i < a->n_place; i++)
			at[a->place[i].node + 1]++;
		total += a->n_place;
	}
	fill = malloc(sizeof *fill * (size_t)(cx->n_nodes + 1));
	list = malloc(sizeof *list * (size_t)(total > 0 ? total : 1));
	if (!at || !fill || !list) {
		free(at);
		free(fill);
		free(list);
		return -1;
	}
	for (int i = 0; i < cx->n_nodes; i++)
		at[i + 1] += at[i];
	memcpy(fill, at, sizeof *fill * (size_t)(cx->n_nodes + 1));
	for (int q = 0; q < cx->n_placed; q++) {
		const syn_alloc_t *a = &cx->jobs[cx->placed[q]].alloc;
		for (int i = 0; i < a->n_place; i++)
			list[fill[a->place[i].node]++] = cx->placed[q];
	}
	free(fill);
	*at_out = at;
	*list_out = list;
	return 0;
}

static int node_has_spare(const syn_node_t *n)
{
	return n->free_cpus > SYN__EPS * (1 + n->cpus) || n->free_mem_gb > SYN__EPS * (1 + n->mem_gb);
}

/* Step 4 on one node whose jobs are js[0..nj-1]: apply the upgrade with the
 * best gain per share among them until none fits. Each upgrade strictly
 * raises one job's throughput on a finite grid, so this ends. */
static void leftover_node(struct syn__ctx *cx, int nd, const int *js, int nj)
{
	while (node_has_spare(&cx->nodes[nd])) {
		double best = 0, bc = 0, bm = 0;
		int who = -1;

		for (int q = 0; q < nj; q++) {
			double c = 0, m = 0, g = best_upgrade(cx, &cx->jobs[js[q]], &c, &m);
			if (g > best) {
				best = g;
				who = js[q];
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

/* Step 5's view of one job: its profile cells at or above its floor (the
 * throughput at its share) and, when it has one, at or above its minimum
 * (then the minimum itself is a cell too), and whether it can give or
 * gain. */
#define XJOB_CELLS (SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1)
struct xjob {
	syn_job_t *job;
	int n;                /* cells */
	int donor, receiver;  /* can give resources back / can gain */
	double c[XJOB_CELLS];
	double m[XJOB_CELLS];
	double t[XJOB_CELLS];
};

static void xjob_add(struct xjob *x, double c, double m, double t)
{
	const syn_alloc_t *a = &x->job->alloc;

	x->c[x->n] = c;
	x->m[x->n] = m;
	x->t[x->n] = t;
	if (t > a->tput + 1e-9)
		x->receiver = 1;
	if (c < a->cpus_per_gpu - 1e-9 || m < a->mem_per_gpu - 1e-9)
		x->donor = 1;
	x->n++;
}

/* Fill x for job at the floor prop_tput (its own, or the one it would have
 * on another node) and, when min is not NULL, no cell below (min[0],
 * min[1]) per GPU. */
static void xjob_fill(struct xjob *x, syn_job_t *job, double floor, const double *min)
{
	const syn_profile_t *p = job->profile;

	x->job = job;
	x->n = 0;
	x->donor = x->receiver = 0;
	for (int i = 0; p && i < p->n_cpu; i++)
		for (int k = 0; k < p->n_mem; k++) {
			double t = p->tput[i][k];
			if (t < floor - 1e-9)
				continue;
			if (min && (p->cpus[i] < min[0] - 1e-9 || p->mem_gb[k] < min[1] - 1e-9))
				continue;
			xjob_add(x, p->cpus[i], p->mem_gb[k], t);
		}
	/* A minimum off the grid (an allotment of 7 cores) is where a donor
	 * may give back to. */
	if (p && min) {
		double t = syn_job_tput(p, min[0], min[1]);
		if (t >= floor - 1e-9)
			xjob_add(x, min[0], min[1], t);
	}
}

/* Job j's minimum for xjob_fill, or NULL. */
static const double *job_min(const struct syn__ctx *cx, const syn_job_t *job, double *buf)
{
	if (!cx->min_c)
		return NULL;
	buf[0] = cx->min_c[job - cx->jobs];
	buf[1] = cx->min_m[job - cx->jobs];
	return buf;
}

/*
 * The best move of a donor d and a receiver r on a node with free (fc, fm):
 * any cell of d at or above its floor and a cell of r with more throughput,
 * whose combined growth fits. Returns the gain in GPU-weighted throughput if
 * it beats min_gain (0 if none does) and the cells' indexes in *xd, *xr.
 */
static double best_pair(const struct xjob *d, const struct xjob *r, double fc, double fm,
			double min_gain, int *xd, int *xr)
{
	const syn_alloc_t *ad = &d->job->alloc, *ar = &r->job->alloc;
	double gd = d->job->gpus, gr = r->job->gpus, best = min_gain;

	for (int u = 0; u < d->n; u++) {
		double dc = gd * (d->c[u] - ad->cpus_per_gpu), dm = gd * (d->m[u] - ad->mem_per_gpu);
		double dt = gd * (d->t[u] - ad->tput);

		for (int v = 0; v < r->n; v++) {
			double g = dt + gr * (r->t[v] - ar->tput);
			if (!(g > best) || !(r->t[v] > ar->tput + 1e-9))
				continue;
			if (dc + gr * (r->c[v] - ar->cpus_per_gpu) > fc ||
			    dm + gr * (r->m[v] - ar->mem_per_gpu) > fm)
				continue;
			best = g;
			*xd = u;
			*xr = v;
		}
	}
	return best > min_gain ? best : 0;
}

/* Step 5 on one node: the best pairwise move between two of its jobs wholly
 * on it, until none gains. xs is scratch for nj entries. */
static void exchange_node(struct syn__ctx *cx, int nd, const int *js, int nj, struct xjob *xs)
{
	const syn_node_t *n = &cx->nodes[nd];
	int k = 0, donors = 0, receivers = 0;

	/* A spanning job's change would have to fit on each of its nodes at
	 * once: only jobs wholly on this node take part. */
	double mb[2];

	for (int q = 0; q < nj; q++) {
		syn_job_t *job = &cx->jobs[js[q]];
		if (!job->profile || job->alloc.n_place != 1)
			continue;
		xjob_fill(&xs[k], job, job->alloc.prop_tput, job_min(cx, job, mb));
		if (!xs[k].donor && !xs[k].receiver)
			continue;
		donors += xs[k].donor;
		receivers += xs[k].receiver;
		k++;
	}
	if (k < 2 || !donors || !receivers)
		return;
	/* Each move raises the node's total by more than 1e-6 on a finite set
	 * of allocations, so this ends; the bound caps the time only. */
	for (int moves = 0; moves < 16 * k; moves++) {
		double best = 0, fc = n->free_cpus + SYN__EPS * (1 + n->cpus),
		       fm = n->free_mem_gb + SYN__EPS * (1 + n->mem_gb);
		int bd = -1, br = -1, bu = 0, bv = 0;

		for (int a = 0; a < k; a++) {
			if (!xs[a].donor)
				continue;
			for (int b = 0; b < k; b++) {
				int u = 0, v = 0;
				double g;
				if (b == a || !xs[b].receiver)
					continue;
				g = best_pair(&xs[a], &xs[b], fc, fm, fmax(best, 1e-6), &u, &v);
				if (g > 0) {
					best = g;
					bd = a;
					br = b;
					bu = u;
					bv = v;
				}
			}
		}
		if (bd < 0)
			break;
		set_demand(cx, xs[bd].job, xs[bd].c[bu], xs[bd].m[bu]);
		set_demand(cx, xs[br].job, xs[br].c[bv], xs[br].m[bv]);
		cx->st->exchanged++;
		xjob_fill(&xs[bd], xs[bd].job, xs[bd].job->alloc.prop_tput, job_min(cx, xs[bd].job, mb));
		xjob_fill(&xs[br], xs[br].job, xs[br].job->alloc.prop_tput, job_min(cx, xs[br].job, mb));
	}
}

/* A placement's size in shares of node n (the best-fit cost). */
static double share_cost(const syn_node_t *n, double c, double m)
{
	return c / syn__share_cpus(n) + (n->mem_gb > 0 ? m / syn__share_mem(n) : 0);
}

/*
 * The best swap for a receiver rx wholly on node A: a job f of the same GPU
 * count wholly on another node B, at its peak already (it gains nothing
 * from more; peak[] flags those by list index), moves to A at its own
 * cell, and the receiver moves to B at a better cell that B can hold once f
 * is gone. Both keep their floors on their new nodes. Returns the gain if it
 * beats min_gain (else 0); *fq is f's index in list, *xc the receiver's new
 * cell.
 */
static double best_swap(struct syn__ctx *cx, const struct xjob *rx, const int *at,
			const int *list, const char *peak, double min_gain, int *fq, int *xc)
{
	const syn_job_t *r = rx->job;
	const syn_alloc_t *ar = &r->alloc;
	const syn_node_t *na = &cx->nodes[ar->place[0].node];
	double best = min_gain, g = r->gpus;

	for (int B = 0; B < cx->n_nodes; B++) {
		const syn_node_t *nb = &cx->nodes[B];
		double floor_b, fc = 0, fm = 0;
		int f = -1;

		if (B == ar->place[0].node || !node_has_spare(nb))
			continue;
		for (int q = at[B]; q < at[B + 1]; q++) {
			const syn_job_t *fj = &cx->jobs[list[q]];
			const syn_alloc_t *af = &fj->alloc;

			/* A job without a profile keeps its node's share. */
			if (!peak[q] || !fj->profile || fj->gpus != r->gpus || af->n_place != 1)
				continue;
			if (af->tput < syn_job_tput(fj->profile, syn__share_cpus(na), syn__share_mem(na)) - 1e-9 ||
			    !syn__has_room(na, g, af->cpus_per_gpu - ar->cpus_per_gpu,
					   af->mem_per_gpu - ar->mem_per_gpu))
				continue;
			if (f < 0 || share_cost(nb, af->cpus_per_gpu, af->mem_per_gpu) < share_cost(nb, fc, fm)) {
				f = q;
				fc = af->cpus_per_gpu;
				fm = af->mem_per_gpu;
			}
		}
		if (f < 0)
			continue;
		floor_b = syn_job_tput(r->profile, syn__share_cpus(nb), syn__share_mem(nb));
		for (int v = 0; v < rx->n; v++) {
			double gain = g * (rx->t[v] - ar->tput);
			if (!(gain > best) || rx->t[v] < floor_b - 1e-9 ||
			    !syn__has_room(nb, g, rx->c[v] - fc, rx->m[v] - fm))
				continue;
			best = gain;
			*fq = f;
			*xc = v;
		}
	}
	return best > min_gain ? best : 0;
}

/* Move a job wholly on one node to node `to` at (c, m) per GPU: release
 * its cores and memory where it is, then take them on `to`. */
static void move_job(struct syn__ctx *cx, syn_job_t *job, int to, double c, double m)
{
	syn_alloc_t *a = &job->alloc;
	const syn_node_t *dst = &cx->nodes[to];

	set_demand(cx, job, 0, 0);
	cx->nodes[a->place[0].node].free_gpus += job->gpus;
	cx->nodes[to].free_gpus -= job->gpus;
	a->place[0].node = to;
	set_demand(cx, job, c, m);
	a->prop_tput = syn_job_tput(job->profile, syn__share_cpus(dst), syn__share_mem(dst));
}

/* Swap candidates: a receiver's list index and the most it could gain. */
struct xcand {
	double pot;
	int q;
};

static int xcand_cmp(const void *a, const void *b)
{
	const struct xcand *x = a, *y = b;
	return x->pot > y->pot ? -1 : x->pot < y->pot ? 1 : x->q - y->q;
}

/* Refresh the swap view (peak flag, potential gain) of the jobs of node nd. */
static void swap_view(const struct syn__ctx *cx, int nd, const int *at, const int *list,
		      char *peak, double *pot)
{
	for (int q = at[nd]; q < at[nd + 1]; q++) {
		const syn_job_t *job = &cx->jobs[list[q]];
		const syn_profile_t *p = job->profile;
		double mx = job->alloc.tput;

		for (int i = 0; p && i < p->n_cpu; i++)
			for (int k = 0; k < p->n_mem; k++)
				mx = fmax(mx, p->tput[i][k]);
		peak[q] = !(mx > job->alloc.tput + 1e-9);
		pot[q] = job->alloc.n_place == 1 && p ? job->gpus * (mx - job->alloc.tput) : 0;
	}
}

/* Across nodes: best-fit can put several sensitive jobs on one node and
 * none on another with cores to spare. Swap the receiver with the best gain
 * for a job at its peak on such a node, re-run steps 4 and 5 on both nodes,
 * until no swap gains (at most one swap per placed job). */
static void swap_nodes(struct syn__ctx *cx, int *at, int *list, struct xjob *xs)
{
	int total = at[cx->n_nodes];
	char *peak = malloc((size_t)(total > 0 ? total : 1));
	double *pot = malloc(sizeof *pot * (size_t)(total > 0 ? total : 1));
	struct xcand *cand = malloc(sizeof *cand * (size_t)(total > 0 ? total : 1));
	struct xjob *rx = malloc(sizeof *rx);

	if (!peak || !pot || !cand || !rx)
		goto out;
	for (int nd = 0; nd < cx->n_nodes; nd++)
		swap_view(cx, nd, at, list, peak, pot);
	for (int swaps = 0; swaps < cx->n_placed; swaps++) {
		double best = 1e-6;
		int bq = -1, bf = -1, bv = 0, nc = 0;

		for (int q = 0; q < total; q++)
			if (pot[q] > 1e-6)
				cand[nc++] = (struct xcand){ pot[q], q };
		qsort(cand, (size_t)nc, sizeof *cand, xcand_cmp);
		/* Most potential first: once a swap gains G, no receiver that
		 * could gain at most G can beat it. */
		for (int i = 0; i < nc && cand[i].pot > best; i++) {
			int f = -1, v = 0;
			double gain;

			xjob_fill(rx, &cx->jobs[list[cand[i].q]], -INFINITY, NULL);
			gain = best_swap(cx, rx, at, list, peak, best, &f, &v);
			if (gain > best) {
				best = gain;
				bq = cand[i].q;
				bf = f;
				bv = v;
			}
		}
		if (bq < 0)
			break;
		syn_job_t *r = &cx->jobs[list[bq]], *f = &cx->jobs[list[bf]];
		int A = r->alloc.place[0].node, B = f->alloc.place[0].node, tmp;

		xjob_fill(rx, r, -INFINITY, NULL);
		move_job(cx, f, A, f->alloc.cpus_per_gpu, f->alloc.mem_per_gpu);
		move_job(cx, r, B, rx->c[bv], rx->m[bv]);
		tmp = list[bq];
		list[bq] = list[bf];
		list[bf] = tmp;
		cx->st->swapped++;
		leftover_node(cx, A, list + at[A], at[A + 1] - at[A]);
		exchange_node(cx, A, list + at[A], at[A + 1] - at[A], xs);
		leftover_node(cx, B, list + at[B], at[B + 1] - at[B]);
		exchange_node(cx, B, list + at[B], at[B + 1] - at[B], xs);
		swap_view(cx, A, at, list, peak, pot);
		swap_view(cx, B, at, list, peak, pot);
	}
out:
	free(peak);
	free(pot);
	free(cand);
	free(rx);
}

void syn__improve(struct syn__ctx *cx, int leftover, int exchange)
{
	struct xjob *xs = NULL;
	int *at, *list, cap = 0;

	if (node_lists(cx, &at, &list) < 0)
		return; /* steps 4 and 5 only improve: without memory they are skipped */
	for (int nd = 0; nd < cx->n_nodes; nd++)
		if (at[nd + 1] - at[nd] > cap)
			cap = at[nd + 1] - at[nd];
	if (exchange) {
		xs = malloc(sizeof *xs * (size_t)(cap > 0 ? cap : 1));
		if (!xs)
			exchange = 0;
	}
	for (int nd = 0; nd < cx->n_nodes; nd++) {
		if (leftover)
			leftover_node(cx, nd, list + at[nd], at[nd + 1] - at[nd]);
		if (exchange)
			exchange_node(cx, nd, list + at[nd], at[nd + 1] - at[nd], xs);
	}
	if (exchange)
		swap_nodes(cx, at, list, xs);
	free(xs);
	free(at);
	free(list);
}

void syn__improve_node(struct syn__ctx *cx, int nd, int leftover, int exchange)
{
	struct xjob *xs = NULL;
	int *js = malloc(sizeof *js * (size_t)(cx->n_placed > 0 ? cx->n_placed : 1)), nj = 0;

	if (!js)
		return; /* as in syn__improve: only improvements are skipped */
	for (int q = 0; q < cx->n_placed; q++)
		if (on_node(&cx->jobs[cx->placed[q]].alloc, nd))
			js[nj++] = cx->placed[q];
	if (exchange) {
		xs = malloc(sizeof *xs * (size_t)(nj > 0 ? nj : 1));
		if (!xs)
			exchange = 0;
	}
	if (leftover)
		leftover_node(cx, nd, js, nj);
	if (exchange) {
		exchange_node(cx, nd, js, nj, xs);
		/* An exchange may leave some of what the donor gave unused. */
		if (leftover)
			leftover_node(cx, nd, js, nj);
	}
	free(xs);
	free(js);
}
