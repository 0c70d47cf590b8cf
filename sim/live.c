/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * live.c: the live-Slurm engine of synergy-sim (--live): what Synergy can
 * do on a real Slurm cluster, where a running job's allocation never
 * shrinks and nothing is preempted.
 *
 * Events, not rounds: at each arrival and each completion, pending jobs
 * are started in the ordering's order on the fullest node their request
 * fits (a job that does not fit is passed over, as the round engine does);
 * a job runs where it started until it ends. Its request, its allotment in
 * Slurm's accounting, is its GPU share under prop, and syn_size_job()'s
 * request under tune (never above the share). Under tune the node agent's
 * plan, syn_node_tune(), is recomputed on every node where a job started
 * or ended: each job holds its allotment plus a reclaimable grant from what
 * no job was allotted, so a newcomer always finds its allotment free and
 * the grants of the jobs already there shrink to make room. A job
 * progresses at tput / prop_tput of its hold (work is seconds at the GPU
 * share); a job spanning nodes (more GPUs than any node has) runs at its
 * slowest part's rate and gets no grant, as round TUNE's step 5 leaves it
 * out. Nodes are simulated with no process memory beside the cache and no
 * cache limit (the simulator's nodes are all cache, as in the rounds).
 *
 * Searches (sim.h): a job's group goes to syn_node_tune, so the trials of a
 * search on one node are planned as one consumer; with searches in the
 * trace, nodes are planned (with no grants) under prop too.
 *
 * Every plan is checked: allotments within the node and at most the
 * job's share, holds at or above allotments, grants within what is free,
 * every job at or above its GPU-proportional throughput. Violations are
 * counted as the round engine counts its own.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sim/sim.h"

/* A job's piece on one node. */
struct part {
	int node, gpus, cores;
	uint64_t mem_mb, cache_mb; /* allotted memory, and its cache */
	int hold_cores;            /* plan: allotment + grant */
	uint64_t hold_cache_mb;
	double rate;               /* tput / prop_tput at the hold */
};

/* What a job asks for on a node shape: cores and memory, its tput ratio
 * there, its share (for the check). */
struct req {
	int cores, share_cores;
	uint64_t mem_mb, cache_mb, share_mem_mb;
	double rate;
};

struct ljob {
	int state; /* 0 future, 1 pending, 2 running, 3 done */
	double remaining, rate;
	int np;
	struct part part[SYN_MAX_SPAN];
};

struct lnode {
	syn_shape_t shape;
	int free_gpus, free_cores;
	uint64_t free_mem;
	int n_run, dirty;
	int *run; /* running jobs with a part here */
};

struct live {
	sim_trace_t *t;
	const sim_cluster_t *c;
	const sim_cfg_t *cfg;
	sim_result_t *r;
	struct ljob *j;
	struct lnode *nodes;
	int n_nodes, max_node_gpus, free_gpus;
	syn_shape_t *shapes; /* distinct node shapes */
	int *shape_of;       /* node -> shape */
	int n_shapes;
	struct req *reqs;    /* job x shape, for its whole GPU count (single node) */
	int tune, agent_flags, agent;
	int plan, plan_flags; /* plan nodes (the agent, or groups' shared prep), with */
	syn_node_job_t *nj;  /* scratch for one node's plan */
	int *nj_job;
	int *pending, n_pending;
	int *running, n_running; /* in the order they started */
	syn_job_t *ord_jobs;
	int *ord_idx;
	char *was_running;
};

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void violation(struct live *L, double now, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void violation(struct live *L, double now, const char *fmt, ...)
{
	va_list ap;
	char text[180];

	if (L->r->violations++ == 0) {
		va_start(ap, fmt);
		vsnprintf(text, sizeof text, fmt, ap);
		va_end(ap);
		snprintf(L->r->first_violation, sizeof L->r->first_violation, "t=%ld s: %s",
			 (long)now, text);
	}
}

/* What job i asks for with g GPUs on shape s (prop: the share). */
static int size_req(struct live *L, const sim_job_t *job, const syn_shape_t *s, int g,
		    struct req *q, sim_error_t *err)
{
	syn_size_t sz;

	if (syn_size_job(s, g, 1, job->profile, L->cfg->opts.eps, &sz) < 0)
		return sim_err(err, "job %llu: sizing: %s", (unsigned long long)job->id, sz.reason);
	q->share_cores = sz.share_cores;
	q->share_mem_mb = sz.share_mem_mb;
	if (!L->tune || !sz.sized) {
		q->cores = sz.share_cores;
		q->mem_mb = sz.share_mem_mb;
		q->cache_mb = sz.share_cache_mb;
		q->rate = 1;
	} else {
		q->cores = sz.cores;
		q->mem_mb = sz.mem_mb;
		q->cache_mb = sz.cache_mb;
		q->rate = sz.prop_tput > 0 ? sz.tput / sz.prop_tput : 0;
	}
	if (q->cores < 1)
		return sim_err(err, "job %llu: %d GPUs of a %d-GPU, %d-core node get no whole core",
			       (unsigned long long)job->id, g, s->gpus, s->cpus);
	return 0;
}

static double fill_score(const struct lnode *n)
{
	return (double)n->free_gpus / n->shape.gpus + (double)n->free_cores / n->shape.cpus +
	       (n->shape.mem_mb ? (double)n->free_mem / (double)n->shape.mem_mb : 0);
}

static void take(struct live *L, int ji, const struct part *p)
{
	struct lnode *n = &L->nodes[p->node];

	n->free_gpus -= p->gpus;
	n->free_cores -= p->cores;
	n->free_mem -= p->mem_mb;
	/* The agent's input in trace order: its plan breaks ties by it. */
	int k = n->n_run++;
	while (k > 0 && n->run[k - 1] > ji) {
		n->run[k] = n->run[k - 1];
		k--;
	}
	n->run[k] = ji;
	n->dirty = 1;
	L->free_gpus -= p->gpus;
}

static void release(struct live *L, int ji, const struct part *p)
{
	struct lnode *n = &L->nodes[p->node];

	n->free_gpus += p->gpus;
	n->free_cores += p->cores;
	n->free_mem += p->mem_mb;
	for (int k = 0; k < n->n_run; k++)
		if (n->run[k] == ji) {
			memmove(&n->run[k], &n->run[k + 1], sizeof *n->run * (size_t)(n->n_run - k - 1));
			n->n_run--;
			break;
		}
	n->dirty = 1;
	L->free_gpus += p->gpus;
}

/* Try to start job ji now. Returns 1 if it started, 0 if not, -1 on error. */
static int try_start(struct live *L, int ji, sim_error_t *err)
{
	const sim_job_t *job = &L->t->jobs[ji];
	struct ljob *lj = &L->j[ji];
	int g = job->gpus;

	if (g > L->free_gpus)
		return 0;
	if (g <= L->max_node_gpus) {
		int best = -1;
		double score = INFINITY;

		for (int i = 0; i < L->n_nodes; i++) {
			const struct lnode *n = &L->nodes[i];
			const struct req *q = &L->reqs[(size_t)ji * L->n_shapes + L->shape_of[i]];
			if (n->free_gpus < g || n->free_cores < q->cores || n->free_mem < q->mem_mb)
				continue;
			double s = fill_score(n);
			if (s < score) {
				score = s;
				best = i;
			}
		}
		if (best < 0)
			return 0;
		const struct req *q = &L->reqs[(size_t)ji * L->n_shapes + L->shape_of[best]];
		lj->np = 1;
		lj->part[0] = (struct part){ .node = best, .gpus = g, .cores = q->cores,
					     .mem_mb = q->mem_mb, .cache_mb = q->cache_mb,
					     .hold_cores = q->cores, .hold_cache_mb = q->cache_mb,
					     .rate = q->rate };
	} else {
		/* Spanning: the nodes with most free GPUs, all of them each. */
		int got = 0, np = 0;
		char *used = calloc((size_t)L->n_nodes, 1);

		if (!used)
			return sim_err(err, "out of memory");
		while (got < g && np < SYN_MAX_SPAN) {
			int best = -1;
			for (int i = 0; i < L->n_nodes; i++)
				if (!used[i] && L->nodes[i].free_gpus > 0 &&
				    (best < 0 || L->nodes[i].free_gpus > L->nodes[best].free_gpus))
					best = i;
			if (best < 0)
				break;
			used[best] = 1;
			int take_g = L->nodes[best].free_gpus < g - got ? L->nodes[best].free_gpus : g - got;
			struct req q;
			if (size_req(L, job, &L->nodes[best].shape, take_g, &q, err) < 0) {
				free(used);
				return -1;
			}
			if (L->nodes[best].free_cores < q.cores || L->nodes[best].free_mem < q.mem_mb)
				continue;
			lj->part[np++] = (struct part){ .node = best, .gpus = take_g, .cores = q.cores,
							.mem_mb = q.mem_mb, .cache_mb = q.cache_mb,
							.hold_cores = q.cores,
							.hold_cache_mb = q.cache_mb, .rate = q.rate };
			got += take_g;
		}
		free(used);
		if (got < g)
			return 0;
		lj->np = np;
	}
	for (int k = 0; k < lj->np; k++)
		take(L, ji, &lj->part[k]);
	lj->state = 2;
	L->running[L->n_running++] = ji;
	return 1;
}

/* A job's rate: its slowest part's. */
static double job_rate(const struct ljob *lj)
{
	double r = INFINITY;

	for (int k = 0; k < lj->np; k++)
		r = fmin(r, lj->part[k].rate);
	return r;
}

/* Job lj's part on node i (it has one when listed there). */
static struct part *part_on(struct ljob *lj, int i)
{
	for (int q = 0; q < lj->np; q++)
		if (lj->part[q].node == i)
			return &lj->part[q];
	return NULL;
}

/* The agent's plan on node i, applied and checked. */
static int plan_node(struct live *L, int i, double now, sim_error_t *err)
{
	struct lnode *n = &L->nodes[i];
	syn_node_stats_t st;
	syn_error_t perr = { "" };
	int m = 0, sum_c = 0;
	uint64_t sum_m = 0;

	for (int k = 0; k < n->n_run; k++) {
		int ji = n->run[k];
		struct ljob *lj = &L->j[ji];
		const struct part *p = part_on(lj, i);

		if (!p)
			return sim_err(err, "job %llu listed on node %d without a part there (a bug)",
				       (unsigned long long)L->t->jobs[ji].id, i);
		L->nj[m] = (syn_node_job_t){ .id = L->t->jobs[ji].id, .synergy = 1, .gpus = p->gpus,
					     .cores = p->cores, .mem_mb = p->mem_mb,
					     .profile = lj->np == 1 ? L->t->jobs[ji].profile : NULL,
					     .group = lj->np == 1 && L->cfg->coord ? L->t->jobs[ji].group
										   : 0 };
		L->nj_job[m++] = ji;
		sum_c += p->cores;
		sum_m += p->mem_mb;
	}
	if (sum_c > n->shape.cpus || sum_m > n->shape.mem_mb)
		violation(L, now, "node %d allotted %d/%d cores, %llu/%llu MB", i, sum_c, n->shape.cpus,
			  (unsigned long long)sum_m, (unsigned long long)n->shape.mem_mb);
	if (syn_node_tune(&n->shape, L->nj, m, L->plan_flags, &st, &perr) < 0)
		return sim_err(err, "t=%.0f s: node %d: plan: %s", now, i, perr.text);
	if (st.below_floor)
		violation(L, now, "node %d: %d jobs below their floor", i, st.below_floor);
	if (st.granted_cores > st.free_cores || st.granted_cache_mb > st.free_mem_mb)
		violation(L, now, "node %d: grants %d cores, %llu MB of %d, %llu free", i,
			  st.granted_cores, (unsigned long long)st.granted_cache_mb, st.free_cores,
			  (unsigned long long)st.free_mem_mb);
	for (int k = 0; k < m; k++) {
		struct ljob *lj = &L->j[L->nj_job[k]];
		const syn_node_job_t *o = &L->nj[k];
		struct part *p = part_on(lj, i);

		if (o->hold_cores < p->cores || o->hold_cache_mb < p->cache_mb)
			violation(L, now, "job %llu: hold below its allotment", (unsigned long long)o->id);
		if (lj->np > 1)
			continue; /* a spanning part keeps its allotment */
		double rate = o->prop_tput > 0 ? o->tput / o->prop_tput : 0;
		/* A member sharing prep with others of its search on this node:
		 * never slower than alone at its own hold (up to the MB of the
		 * grant's remainder, which goes to the first members). */
		for (int k2 = 0; o->group && k2 < m; k2++) {
			const syn_node_job_t *o2 = &L->nj[k2];
			if (k2 == k || o2->group != o->group || o2->gpus != o->gpus ||
			    L->j[L->nj_job[k2]].np != 1)
				continue;
			const syn_profile_t *pp = L->t->jobs[L->nj_job[k]].profile;
			double alone = syn_job_tput(pp, (double)o->hold_cores / o->gpus,
						    o->hold_cache_mb / 1024.0 / o->gpus);
			L->r->coord_runs++;
			if (o->tput < alone * (1 - 1e-4))
				L->r->coord_slower++;
			break;
		}
		if (L->was_running[L->nj_job[k]]) {
			if (o->hold_cores != p->hold_cores || o->hold_cache_mb != p->hold_cache_mb) {
				L->r->changed++;
				L->t->jobs[L->nj_job[k]].changes++;
			} else {
				L->r->carried++;
			}
		}
		p->hold_cores = o->hold_cores;
		p->hold_cache_mb = o->hold_cache_mb;
		p->rate = rate;
	}
	return 0;
}

/* Start what can start, in the ordering's order. */
static int schedule(struct live *L, double now, sim_error_t *err)
{
	int w = 0, n = L->n_pending;

	if (n == 0 || L->free_gpus == 0)
		return 0;
	if (L->cfg->opts.ordering == SYN_ORDER_FIFO) {
		for (int k = 0; k < n; k++)
			L->ord_idx[k] = k;
	} else {
		for (int k = 0; k < n; k++) {
			const sim_job_t *job = &L->t->jobs[L->pending[k]];
			L->ord_jobs[k] = (syn_job_t){ .id = job->id, .gpus = job->gpus,
						      .arrival = job->arrival, .remaining = job->duration,
						      .duration = job->duration };
		}
		if (syn_order(L->ord_jobs, n, L->cfg->opts.ordering, now, L->ord_idx) < 0)
			return sim_err(err, "out of memory");
	}
	for (int k = 0; k < n && L->free_gpus > 0; k++) {
		int ji = L->pending[L->ord_idx[k]];
		int s = try_start(L, ji, err);
		if (s < 0)
			return -1;
		if (s) {
			L->t->jobs[ji].start = now;
			L->pending[L->ord_idx[k]] = -1;
		}
	}
	for (int k = 0; k < n; k++)
		if (L->pending[k] >= 0)
			L->pending[w++] = L->pending[k];
	L->n_pending = w;
	return 0;
}

int sim_run_live(sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, sim_result_t *r,
		 sim_error_t *err)
{
	struct live L;
	int n = t->n, next = 0, done = 0, rv = -1, max_run = 0;
	double now, gpu_s = 0, cpu_s = 0, mem_s = 0, speed_sum = 0, speed_n = 0, cpu0 = cpu_seconds();

	memset(r, 0, sizeof *r);
	memset(&L, 0, sizeof L);
	if (n == 0)
		return sim_err(err, "the trace has no jobs");
	if (cfg->opts.allocator != SYN_ALLOC_PROP && cfg->opts.allocator != SYN_ALLOC_TUNE)
		return sim_err(err, "live Slurm runs prop and tune only");
	L.t = t;
	L.c = c;
	L.cfg = cfg;
	L.r = r;
	L.n_nodes = c->n_nodes;
	L.tune = cfg->opts.allocator == SYN_ALLOC_TUNE;
	L.agent = L.tune && !(cfg->opts.no_leftover && cfg->opts.no_exchange);
	L.agent_flags = (cfg->opts.no_leftover ? SYN_NODE_NO_LEFTOVER : 0) |
			(cfg->opts.no_exchange ? SYN_NODE_NO_EXCHANGE : 0);
	/* Without the agent's grants (prop, or tune's 3 steps), the members of a
	 * search on one node still share their prep: plan the node with no
	 * grant, for the group's throughput at the members' allotments. */
	L.plan = L.agent;
	L.plan_flags = L.agent_flags;
	for (int i = 0; i < n && cfg->coord && !L.plan; i++)
		if (t->jobs[i].group) {
			L.plan = 1;
			L.plan_flags = SYN_NODE_NO_LEFTOVER | SYN_NODE_NO_EXCHANGE;
		}
	L.nodes = calloc((size_t)c->n_nodes, sizeof *L.nodes);
	L.shapes = calloc((size_t)c->n_nodes, sizeof *L.shapes);
	L.shape_of = calloc((size_t)c->n_nodes, sizeof *L.shape_of);
	L.j = calloc((size_t)n, sizeof *L.j);
	L.pending = malloc(sizeof *L.pending * (size_t)n);
	L.running = malloc(sizeof *L.running * (size_t)n);
	L.ord_jobs = malloc(sizeof *L.ord_jobs * (size_t)n);
	L.ord_idx = malloc(sizeof *L.ord_idx * (size_t)n);
	L.was_running = calloc((size_t)n, 1);
	if (!L.nodes || !L.shapes || !L.shape_of || !L.j || !L.pending || !L.running || !L.ord_jobs ||
	    !L.ord_idx || !L.was_running) {
		sim_err(err, "out of memory");
		goto out;
	}
	for (int i = 0; i < c->n_nodes; i++) {
		const syn_node_t *cn = &c->nodes[i];
		struct lnode *ln = &L.nodes[i];
		int s;

		ln->shape = (syn_shape_t){ .gpus = cn->gpus, .cpus = (int)floor(cn->cpus + 1e-9),
					   .mem_mb = (uint64_t)floor(cn->mem_gb * 1024 + 1e-6) };
		if (ln->shape.cpus < 1) {
			sim_err(err, "node %d: %g cores: live Slurm needs whole cores", i, cn->cpus);
			goto out;
		}
		ln->free_gpus = cn->gpus;
		ln->free_cores = ln->shape.cpus;
		ln->free_mem = ln->shape.mem_mb;
		ln->run = malloc(sizeof *ln->run * (size_t)cn->gpus);
		if (!ln->run) {
			sim_err(err, "out of memory");
			goto out;
		}
		L.free_gpus += cn->gpus;
		if (cn->gpus > L.max_node_gpus)
			L.max_node_gpus = cn->gpus;
		if (cn->gpus > max_run)
			max_run = cn->gpus;
		for (s = 0; s < L.n_shapes; s++)
			if (!memcmp(&L.shapes[s], &ln->shape, sizeof ln->shape))
				break;
		if (s == L.n_shapes)
			L.shapes[L.n_shapes++] = ln->shape;
		L.shape_of[i] = s;
	}
	L.reqs = calloc((size_t)n * (size_t)L.n_shapes, sizeof *L.reqs);
	L.nj = malloc(sizeof *L.nj * (size_t)max_run);
	L.nj_job = malloc(sizeof *L.nj_job * (size_t)max_run);
	if (!L.reqs || !L.nj || !L.nj_job) {
		sim_err(err, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		sim_job_t *job = &t->jobs[i];

		job->start = job->finish = -1;
		job->changes = job->rounds_run = 0;
		job->tput_sum = job->run_s = 0;
		if (job->group)
			r->n_members++;
		if (job->gpus > c->total_gpus || job->gpus > SYN_MAX_SPAN * L.max_node_gpus) {
			sim_err(err, "job %llu needs %d GPUs: more than this cluster can give one job",
				(unsigned long long)job->id, job->gpus);
			goto out;
		}
		/* Requests per node shape for a job on one node; a spanning
		 * job is sized per part when it starts. */
		for (int s = 0; s < L.n_shapes; s++) {
			struct req *q = &L.reqs[(size_t)i * L.n_shapes + s];
			if (job->gpus > L.shapes[s].gpus) {
				q->cores = INT32_MAX; /* never fits this shape */
				q->mem_mb = UINT64_MAX;
				continue;
			}
			if (size_req(&L, job, &L.shapes[s], job->gpus, q, err) < 0)
				goto out;
			if (q->cores > q->share_cores || q->mem_mb > q->share_mem_mb)
				violation(&L, 0, "job %llu sized above its share",
					  (unsigned long long)job->id);
			if (!(q->rate >= 1 - 1e-9))
				violation(&L, 0, "job %llu sized below its floor (%.3f)",
					  (unsigned long long)job->id, q->rate);
		}
	}

	now = t->jobs[0].arrival;
	while (done < n) {
		double t_next = INFINITY;

		while (next < n && t->jobs[next].arrival <= now) {
			L.j[next].state = 1;
			L.j[next].remaining = t->jobs[next].duration;
			L.pending[L.n_pending++] = next++;
		}
		if (schedule(&L, now, err) < 0)
			goto out;
		for (int i = 0; i < L.n_nodes; i++) {
			if (!L.nodes[i].dirty)
				continue;
			L.nodes[i].dirty = 0;
			if (L.plan && plan_node(&L, i, now, err) < 0)
				goto out;
		}
		r->rounds++;
		for (int k = 0; k < L.n_running; k++) {
			int i = L.running[k];
			struct ljob *lj = &L.j[i];

			L.was_running[i] = 1;
			lj->rate = job_rate(lj);
			if (!(lj->rate > 0)) {
				sim_err(err, "job %llu: zero throughput at its allocation",
					(unsigned long long)t->jobs[i].id);
				goto out;
			}
			if (!(lj->rate >= 1 - 1e-9))
				violation(&L, now, "job %llu runs at %.3f of its GPU-proportional rate",
					  (unsigned long long)t->jobs[i].id, lj->rate);
			t_next = fmin(t_next, now + lj->remaining / lj->rate);
		}
		if (next < n)
			t_next = fmin(t_next, t->jobs[next].arrival);
		if (!isfinite(t_next)) {
			sim_err(err, "t=%.0f s: job %llu (%d GPUs) can never start", now,
				(unsigned long long)t->jobs[L.pending[0]].id, t->jobs[L.pending[0]].gpus);
			goto out;
		}
		/* Advance to the next event; jobs whose work runs out by then
		 * end at their exact time. */
		int w = 0;
		for (int k = 0; k < L.n_running; k++) {
			int i = L.running[k];
			struct ljob *lj = &L.j[i];
			sim_job_t *job = &t->jobs[i];
			double fin, dt;

			fin = now + lj->remaining / lj->rate;
			dt = fin <= t_next + 1e-9 * fmax(1, t_next) ? fin - now : t_next - now;
			for (int q = 0; q < lj->np; q++) {
				const struct part *p = &lj->part[q];
				gpu_s += p->gpus * dt;
				cpu_s += p->hold_cores * dt;
				mem_s += (double)(p->mem_mb + p->hold_cache_mb - p->cache_mb) / 1024.0 * dt;
			}
			job->tput_sum += lj->rate * dt;
			job->run_s += dt;
			speed_sum += lj->rate * dt;
			speed_n += dt;
			if (fin <= t_next + 1e-9 * fmax(1, t_next)) {
				lj->remaining = 0;
				lj->state = 3;
				job->finish = fin;
				done++;
				for (int q = 0; q < lj->np; q++)
					release(&L, i, &lj->part[q]);
			} else {
				lj->remaining -= lj->rate * dt;
				L.running[w++] = i;
			}
		}
		L.n_running = w;
		now = t_next;
	}
	if (sim_summarize(t, c, cfg, done, gpu_s, cpu_s, mem_s, speed_sum, speed_n, r) < 0) {
		sim_err(err, "out of memory");
		goto out;
	}
	rv = 0;
out:
	r->cpu_s = cpu_seconds() - cpu0;
	for (int i = 0; L.nodes && i < c->n_nodes; i++)
		free(L.nodes[i].run);
	free(L.nodes);
	free(L.shapes);
	free(L.shape_of);
	free(L.j);
	free(L.reqs);
	free(L.nj);
	free(L.nj_job);
	free(L.pending);
	free(L.running);
	free(L.ord_jobs);
	free(L.ord_idx);
	free(L.was_running);
	return rv;
}
