/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * engine.c: the round-based discrete-event engine of synergy-sim.
 *
 * Time advances in rounds (300 s by default). At the start of a round the
 * jobs that arrived are admitted, and the policy library allocates the
 * cluster to all active jobs (syn_round). Each placed job then progresses
 * at tput / prop_tput units of work per second, where its work is its
 * duration at the GPU-proportional share; a job that completes inside the
 * round finishes at the exact time, but its resources are reallocated only
 * at the next round, as in the Synergy simulator. An allocation identical
 * to the job's allocation of the previous round carries over (counted as
 * carried); any other allocation of a job that ran in the previous round
 * counts as a change. When no job is active, time jumps to the round of the
 * next arrival.
 *
 * After every round the result is checked with syn_check_round (capacity
 * and the guarantee); violations are counted and reported, never ignored.
 *
 * Searches (sim.h): the active trials of a search on one node run as one
 * composite policy job (syn_profile_group), kept in a round only where it
 * fits one node and none of its trials runs slower in it than in the same
 * round without composites; every trial progresses at the composite's
 * rate over its own floor, which must be at least 1 (else a violation).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sim/sim.h"

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int same_alloc(const syn_alloc_t *a, const syn_alloc_t *b)
{
	if (a->n_place != b->n_place || a->cpus_per_gpu != b->cpus_per_gpu ||
	    a->mem_per_gpu != b->mem_per_gpu)
		return 0;
	for (int i = 0; i < a->n_place; i++)
		if (a->place[i].node != b->place[i].node || a->place[i].gpus != b->place[i].gpus)
			return 0;
	return 1;
}

int sim_dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One policy job of a round: an active job on its own, or a composite of
 * the co-located active trials of one search (coordinated prep). */
struct pjob {
	int first, k; /* its members: mem[first .. first + k - 1], indices into act */
};

struct rounds {
	const sim_trace_t *t;
	const sim_cfg_t *cfg;
	int *chunk;           /* per trace index: most members of its search in one
			       * composite (< 2: none) */
	syn_job_t *act;       /* active jobs: per-job state across rounds */
	int *map, n_act;      /* act -> trace index */
	syn_job_t *pj;        /* this round's policy jobs */
	struct pjob *pm;
	int *mem, n_pj;       /* members of the policy jobs, in order */
	char *taken, *dissolved; /* per act / per trace index */
	double *alone;        /* per act: its rate this round with no composites */
	syn_profile_t *gprof; /* composites' profiles (syn_profile_group) */
	int n_gprof, cap_gprof;
};

static int build_round(struct rounds *R);

/* Build this round's policy jobs and run the policy over them (o->now is
 * the round's time). Returns 0, or -1 with err set. */
static int play_round(struct rounds *R, syn_node_t *nodes, int n_nodes, const syn_round_opts_t *o,
		      syn_round_stats_t *st, sim_error_t *err)
{
	syn_error_t perr;

	if (build_round(R) < 0) {
		sim_err(err, "out of memory");
		return -1;
	}
	if (syn_round(nodes, n_nodes, R->pj, R->n_pj, o, st, &perr) < 0) {
		sim_err(err, "round at t=%.0f s (%s/%s): %s", o->now, syn_allocator_name(o->allocator),
			syn_ordering_name(o->ordering), perr.text);
		return -1;
	}
	return 0;
}

/* This round's policy jobs from the active ones. With coordination, the
 * active trials of one search (not dissolved this round) are chunked, in
 * arrival order, into composites of at most as many as one node's GPUs
 * hold; a chunk of one is a job on its own. Returns 0 or -1 (no memory). */
static int build_round(struct rounds *R)
{
	int nm = 0;

	R->n_pj = 0;
	R->n_gprof = 0;
	memset(R->taken, 0, (size_t)R->n_act);
	for (int k = 0; k < R->n_act; k++) {
		const sim_job_t *j = &R->t->jobs[R->map[k]];
		struct pjob *q = &R->pm[R->n_pj];
		int cap = R->chunk[R->map[k]];

		if (R->taken[k])
			continue;
		R->taken[k] = 1;
		q->first = nm;
		q->k = 1;
		R->mem[nm++] = k;
		if (R->cfg->coord && j->group && !R->dissolved[R->map[k]] && cap > 1)
			for (int k2 = k + 1; k2 < R->n_act && q->k < cap; k2++) {
				const sim_job_t *j2 = &R->t->jobs[R->map[k2]];
				if (R->taken[k2] || j2->group != j->group || R->dissolved[R->map[k2]])
					continue;
				R->taken[k2] = 1;
				R->mem[nm++] = k2;
				q->k++;
			}
		if (q->k == 1) {
			R->pj[R->n_pj++] = R->act[k];
			continue;
		}
		/* A composite: k x g GPUs, the group profile. For the ordering it
		 * stands where its trials would: their earliest arrival, most
		 * work left and duration, and their most service divided by k
		 * (LAS orders by service x GPUs, a trial's g, not k x g); its
		 * previous allocation (SRTF's rate) is its first member's. */
		if (R->n_gprof == R->cap_gprof) {
			int nc = R->cap_gprof ? 2 * R->cap_gprof : 16;
			syn_profile_t *ng = realloc(R->gprof, sizeof *ng * (size_t)nc);
			if (!ng)
				return -1;
			R->gprof = ng;
			R->cap_gprof = nc;
			/* Earlier composites point into the old array. */
			for (int p = 0, c = 0; p < R->n_pj; p++)
				if (R->pm[p].k > 1) {
					if (R->pj[p].profile)
						R->pj[p].profile = &R->gprof[c];
					c++;
				}
		}
		syn_profile_t *gp = &R->gprof[R->n_gprof++];
		syn_job_t *c = &R->pj[R->n_pj++];
		*c = R->act[k];
		if (j->profile)
			syn_profile_group(j->profile, q->k, gp);
		c->profile = j->profile ? gp : NULL;
		c->gpus = q->k * j->gpus;
		for (int m = 1; m < q->k; m++) {
			const syn_job_t *a = &R->act[R->mem[q->first + m]];
			c->arrival = fmin(c->arrival, a->arrival);
			c->attained = fmax(c->attained, a->attained);
			c->remaining = fmax(c->remaining, a->remaining);
			c->duration = fmax(c->duration, a->duration);
		}
		c->attained /= q->k;
	}
	return 0;
}

int sim_run(sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, sim_result_t *r,
	    sim_error_t *err)
{
	struct rounds R;
	syn_node_t *nodes = NULL;
	syn_job_t *act = NULL;
	syn_alloc_t *prev = NULL;
	int *map = NULL, n = t->n, n_act = 0, next = 0, done = 0, rv = -1, max_node_gpus = 0;
	double now, round_s = cfg->round_s, gpu_s = 0, cpu_s = 0, mem_s = 0;
	double speed_sum = 0, share_c = INFINITY, share_m = INFINITY, cpu0 = cpu_seconds();
	long job_rounds = 0;
	syn_error_t perr = { "" };

	memset(r, 0, sizeof *r);
	memset(&R, 0, sizeof R);
	if (n == 0)
		return sim_err(err, "the trace has no jobs");
	if (!(round_s > 0))
		return sim_err(err, "round length must be > 0");
	for (int i = 0; i < c->n_nodes; i++) {
		if (c->nodes[i].gpus > max_node_gpus)
			max_node_gpus = c->nodes[i].gpus;
		share_c = fmin(share_c, c->nodes[i].cpus / c->nodes[i].gpus);
		share_m = fmin(share_m, c->nodes[i].mem_gb / c->nodes[i].gpus);
	}
	for (int i = 0; i < n; i++) {
		const sim_job_t *j = &t->jobs[i];
		if (j->gpus > c->total_gpus || j->gpus > SYN_MAX_SPAN * max_node_gpus)
			return sim_err(err, "job %llu needs %d GPUs: more than this cluster can give one job",
				       (unsigned long long)j->id, j->gpus);
		if (!(syn_job_tput(j->profile, share_c, share_m) > 0))
			return sim_err(err,
				       "job %llu: model '%s' has no throughput at the GPU-proportional "
				       "share (%g cores, %g GB per GPU)",
				       (unsigned long long)j->id, j->model, share_c, share_m);
		if (j->group)
			r->n_members++;
	}
	nodes = malloc(sizeof *nodes * (size_t)c->n_nodes);
	act = malloc(sizeof *act * (size_t)n);
	prev = calloc((size_t)n, sizeof *prev);
	map = malloc(sizeof *map * (size_t)n);
	R.pj = malloc(sizeof *R.pj * (size_t)n);
	R.pm = malloc(sizeof *R.pm * (size_t)n);
	R.mem = malloc(sizeof *R.mem * (size_t)n);
	R.taken = malloc((size_t)n);
	R.chunk = calloc((size_t)n, sizeof *R.chunk);
	R.alone = calloc((size_t)n, sizeof *R.alone);
	R.dissolved = calloc((size_t)n, 1);
	if (!nodes || !act || !prev || !map || !R.pj || !R.pm || !R.mem || !R.taken || !R.dissolved ||
	    !R.chunk || !R.alone) {
		sim_err(err, "out of memory");
		goto out;
	}
	R.t = t;
	R.cfg = cfg;
	/* A composite holds at most as many members as one node has GPUs
	 * for and, when a member's best case wants cache, as many as one
	 * node's memory gives that cache per GPU: the members' caches are
	 * their own (syn_profile_group keeps the memory axis), so more
	 * members on one node than that would cost each of them cache that
	 * apart, on nodes of their own, it could have. Under prop every job
	 * holds its share of cache wherever it runs: no such limit. */
	for (int i = 0; i < n && cfg->coord; i++) {
		const sim_job_t *j = &t->jobs[i];
		double bc = 0, bm = 0;

		if (!j->group)
			continue;
		if (i > 0 && t->jobs[i - 1].group == j->group) {
			R.chunk[i] = R.chunk[i - 1];
			continue;
		}
		if (cfg->opts.allocator != SYN_ALLOC_PROP && j->profile &&
		    syn_best_case(j->profile, cfg->opts.eps, 0, 0, &bc, &bm) < 0)
			bm = 0;
		for (int k = 0; k < c->n_nodes; k++) {
			int cap = c->nodes[k].gpus / j->gpus;
			if (bm > 0 && c->nodes[k].mem_gb / (bm * j->gpus) < cap)
				cap = (int)floor(c->nodes[k].mem_gb / (bm * j->gpus) + 1e-9);
			if (cap > R.chunk[i])
				R.chunk[i] = cap;
		}
	}
	R.act = act;
	R.map = map;
	memcpy(nodes, c->nodes, sizeof *nodes * (size_t)c->n_nodes);
	for (int i = 0; i < n; i++) {
		t->jobs[i].start = t->jobs[i].finish = -1;
		t->jobs[i].changes = t->jobs[i].rounds_run = 0;
		t->jobs[i].tput_sum = t->jobs[i].run_s = 0;
	}
	now = ceil(t->jobs[0].arrival / round_s) * round_s;
	while (done < n) {
		syn_round_stats_t st;
		int placed = 0, v, again;

		while (next < n && t->jobs[next].arrival <= now) {
			const sim_job_t *j = &t->jobs[next];
			act[n_act] = (syn_job_t){ .id = j->id, .gpus = j->gpus, .profile = j->profile,
						  .arrival = j->arrival, .remaining = j->duration,
						  .duration = j->duration };
			map[n_act++] = next++;
		}
		if (n_act == 0) {
			now = ceil(t->jobs[next].arrival / round_s) * round_s;
			continue;
		}
		R.n_act = n_act;
		for (int k = 0; k < n_act; k++)
			R.dissolved[map[k]] = 0;
		syn_round_opts_t o = cfg->opts;
		o.now = now;
		/* With composites this round, first the round without them
		 * (every member a job of its own, as with --coord off): the
		 * rate each member would run at. */
		if (build_round(&R) < 0) {
			sim_err(err, "out of memory");
			goto out;
		}
		int have_comp = 0;
		for (int p = 0; p < R.n_pj && !have_comp; p++)
			have_comp = R.pm[p].k > 1;
		if (have_comp) {
			for (int k = 0; k < n_act; k++)
				R.dissolved[map[k]] = 1;
			if (play_round(&R, nodes, c->n_nodes, &o, &st, err) < 0)
				goto out;
			for (int k = 0; k < n_act; k++) {
				const syn_alloc_t *al = &R.pj[k].alloc;
				R.alone[k] = al->n_place > 0 ? al->tput / al->prop_tput : 0;
				R.dissolved[map[k]] = 0;
			}
		}
		/* A composite the round leaves waiting, spreads over nodes, or
		 * runs slower than any of its members would run apart is no
		 * co-located group this round: its members are dissolved into
		 * jobs of their own, and the round is run again. Each pass
		 * dissolves one composite at least. */
		do {
			if (play_round(&R, nodes, c->n_nodes, &o, &st, err) < 0)
				goto out;
			again = 0;
			for (int p = 0; p < R.n_pj; p++) {
				const struct pjob *q = &R.pm[p];
				const syn_alloc_t *al = &R.pj[p].alloc;
				int bad = 0;

				if (q->k < 2)
					continue;
				if (al->n_place != 1) {
					bad = 1;
				} else {
					const syn_node_t *nd = &nodes[al->place[0].node];
					double rate = al->tput /
						      syn_job_tput(t->jobs[map[R.mem[q->first]]].profile,
								   nd->cpus / nd->gpus, nd->mem_gb / nd->gpus);
					for (int m = 0; m < q->k; m++)
						if (rate < R.alone[R.mem[q->first + m]] - 1e-9)
							bad = 1;
				}
				if (bad) {
					for (int m = 0; m < q->k; m++)
						R.dissolved[map[R.mem[q->first + m]]] = 1;
					again = 1;
				}
			}
		} while (again);
		r->rounds++;
		v = syn_check_round(nodes, c->n_nodes, R.pj, R.n_pj, &perr);
		if (v != 0) {
			if (r->violations == 0)
				snprintf(r->first_violation, sizeof r->first_violation, "t=%ld s: %s",
					 (long)now, perr.text);
			r->violations += v > 0 ? v : 1;
		}
		for (int p = 0; p < R.n_pj; p++) {
			const syn_job_t *pjob = &R.pj[p];
			const struct pjob *q = &R.pm[p];
			syn_alloc_t mal = pjob->alloc;
			double floor_t = pjob->alloc.prop_tput, alone = 0;

			if (pjob->alloc.n_place == 0) {
				for (int m = 0; m < q->k; m++) {
					prev[map[R.mem[q->first + m]]].n_place = 0;
					act[R.mem[q->first + m]].alloc = pjob->alloc;
				}
				continue;
			}
			if (q->k > 1) {
				/* Each member: its g GPUs of the composite's node at
				 * the composite's cores and cache per GPU, running at
				 * the composite's throughput (each batch is prepared
				 * once for all); its floor is its own share's. */
				const syn_node_t *nd = &nodes[mal.place[0].node];
				const syn_profile_t *mp = t->jobs[map[R.mem[q->first]]].profile;

				mal.place[0].gpus = pjob->gpus / q->k;
				floor_t = syn_job_tput(mp, nd->cpus / nd->gpus, nd->mem_gb / nd->gpus);
				mal.prop_tput = floor_t;
				alone = syn_job_tput(mp, mal.cpus_per_gpu, mal.mem_per_gpu) / floor_t;
			}
			double rate = mal.tput / floor_t;
			if (!(rate > 0)) {
				sim_err(err, "job %llu: zero throughput at its allocation",
					(unsigned long long)pjob->id);
				goto out;
			}
			for (int m = 0; m < q->k; m++) {
				int k = R.mem[q->first + m];
				syn_job_t *a = &act[k];
				sim_job_t *j = &t->jobs[map[k]];

				a->alloc = mal;
				placed++;
				if (j->start < 0)
					j->start = now;
				if (prev[map[k]].n_place > 0) {
					if (same_alloc(&prev[map[k]], &mal)) {
						r->carried++;
					} else {
						r->changed++;
						j->changes++;
					}
				}
				prev[map[k]] = mal;
				if (q->k > 1) {
					r->coord_runs++;
					if (rate < alone - 1e-9)
						r->coord_slower++;
					if (!(rate >= 1 - 1e-9)) {
						if (r->violations == 0)
							snprintf(r->first_violation, sizeof r->first_violation,
								 "t=%ld s: job %llu runs at %.3f of its "
								 "GPU-proportional rate in its search",
								 (long)now, (unsigned long long)j->id, rate);
						r->violations++;
					}
				}
				double dt = round_s;
				if (a->remaining <= rate * round_s) {
					dt = a->remaining / rate;
					a->remaining = 0;
					j->finish = now + dt;
					done++;
				} else {
					a->remaining -= rate * round_s;
				}
				a->attained += dt;
				gpu_s += a->gpus * dt;
				cpu_s += a->gpus * mal.cpus_per_gpu * dt;
				mem_s += a->gpus * mal.mem_per_gpu * dt;
				j->tput_sum += rate;
				j->rounds_run++;
				speed_sum += rate;
				job_rounds++;
			}
		}
		if (placed == 0) {
			sim_err(err, "t=%.0f s: no active job can be placed (first: job %llu, %d GPUs)", now,
				(unsigned long long)act[0].id, act[0].gpus);
			goto out;
		}
		/* Drop finished jobs, keeping the others in arrival order. */
		int w = 0;
		for (int k = 0; k < n_act; k++)
			if (act[k].remaining > 0) {
				act[w] = act[k];
				map[w] = map[k];
				w++;
			}
		n_act = w;
		now += round_s;
	}

	if (sim_summarize(t, c, cfg, done, gpu_s, cpu_s, mem_s, speed_sum, (double)job_rounds, r) < 0) {
		sim_err(err, "out of memory");
		goto out;
	}
	rv = 0;
out:
	r->cpu_s = cpu_seconds() - cpu0;
	free(nodes);
	free(act);
	free(prev);
	free(map);
	free(R.pj);
	free(R.pm);
	free(R.mem);
	free(R.taken);
	free(R.chunk);
	free(R.alone);
	free(R.dissolved);
	free(R.gprof);
	return rv;
}

int sim_summarize(const sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, int done,
		  double gpu_s, double cpu_s, double mem_s, double speed_sum, double speed_n,
		  sim_result_t *r)
{
	int n = t->n, nw = 0;
	double first = t->jobs[0].arrival, last = 0, last_arrival = t->jobs[n - 1].arrival;
	double *jct = malloc(sizeof *jct * (size_t)(n > 0 ? n : 1));

	if (!jct)
		return -1;
	for (int i = 0; i < n; i++) {
		const sim_job_t *j = &t->jobs[i];
		if (j->finish > last)
			last = j->finish;
		if (j->id >= cfg->win_lo && j->id <= cfg->win_hi) {
			jct[nw++] = j->finish - j->arrival;
			/* A window job still running when arrivals stop finishes
			 * in the drain, with no newer jobs competing: under
			 * overload that shortens exactly the jobs a steady
			 * stream would delay most, so the caller is told. A
			 * run measuring every job has a drain by design. */
			if (j->finish > last_arrival && (cfg->win_lo > 0 || cfg->win_hi < UINT64_MAX))
				r->n_window_drain++;
		}
	}
	r->n_done = done;
	r->n_window = nw;
	r->makespan = last - first;
	if (nw > 0) {
		double sum = 0;
		qsort(jct, (size_t)nw, sizeof *jct, sim_dcmp);
		for (int i = 0; i < nw; i++)
			sum += jct[i];
		r->jct_mean = sum / nw;
		r->jct_median = nw % 2 ? jct[nw / 2] : (jct[nw / 2 - 1] + jct[nw / 2]) / 2;
		r->jct_p99 = jct[(int)ceil(0.99 * nw) - 1];
	}
	if (r->makespan > 0) {
		r->gpu_util = gpu_s / (c->total_gpus * r->makespan);
		r->cpu_util = cpu_s / (c->total_cpus * r->makespan);
		r->mem_util = c->total_mem > 0 ? mem_s / (c->total_mem * r->makespan) : 0;
	}
	r->speedup_mean = speed_n > 0 ? speed_sum / speed_n : 0;
	free(jct);
	return 0;
}

void sim_jobs_write(FILE *f, const sim_trace_t *t, const char *alloc, const char *order,
		    int header)
{
	if (header)
		fputs("alloc,order,id,model,gpus,arrival_s,start_s,finish_s,jct_s,duration_s,speedup,"
		      "changes\n",
		      f);
	for (int i = 0; i < t->n; i++) {
		const sim_job_t *j = &t->jobs[i];
		fprintf(f, "%s,%s,%llu,%s,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,%d\n", alloc, order,
			(unsigned long long)j->id, j->model, j->gpus, j->arrival, j->start, j->finish,
			j->finish - j->arrival, j->duration,
			j->run_s > 0 ? j->tput_sum / j->run_s
				     : j->rounds_run ? j->tput_sum / j->rounds_run : 0.0,
			j->changes);
	}
}
