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
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sim.h"

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

int sim_run(sim_trace_t *t, const sim_cluster_t *c, const sim_cfg_t *cfg, sim_result_t *r,
	    sim_error_t *err)
{
	syn_node_t *nodes = NULL;
	syn_job_t *act = NULL;
	syn_alloc_t *prev = NULL;
	int *map = NULL, n = t->n, n_act = 0, next = 0, done = 0, rv = -1, max_node_gpus = 0;
	double now, round_s = cfg->round_s, gpu_s = 0, cpu_s = 0, mem_s = 0;
	double speed_sum = 0, share_c = INFINITY, share_m = INFINITY, cpu0 = cpu_seconds();
	long job_rounds = 0;
	syn_policy_error_t perr = { "" };

	memset(r, 0, sizeof *r);
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
	}
	nodes = malloc(sizeof *nodes * (size_t)c->n_nodes);
	act = malloc(sizeof *act * (size_t)n);
	prev = calloc((size_t)n, sizeof *prev);
	map = malloc(sizeof *map * (size_t)n);
	if (!nodes || !act || !prev || !map) {
		sim_err(err, "out of memory");
		goto out;
	}
	memcpy(nodes, c->nodes, sizeof *nodes * (size_t)c->n_nodes);
	for (int i = 0; i < n; i++) {
		t->jobs[i].start = t->jobs[i].finish = -1;
		t->jobs[i].changes = t->jobs[i].rounds_run = 0;
		t->jobs[i].tput_sum = t->jobs[i].run_s = 0;
	}
	now = ceil(t->jobs[0].arrival / round_s) * round_s;
	while (done < n) {
		syn_round_stats_t st;
		int placed = 0, v;

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
		syn_round_opts_t o = cfg->opts;
		o.now = now;
		if (syn_round(nodes, c->n_nodes, act, n_act, &o, &st, &perr) < 0) {
			sim_err(err, "round at t=%.0f s (%s/%s): %s", now, syn_allocator_name(o.allocator),
				syn_ordering_name(o.ordering), perr.text);
			goto out;
		}
		r->rounds++;
		v = syn_check_round(nodes, c->n_nodes, act, n_act, &perr);
		if (v != 0) {
			if (r->violations == 0)
				snprintf(r->first_violation, sizeof r->first_violation, "t=%ld s: %s",
					 (long)now, perr.text);
			r->violations += v > 0 ? v : 1;
		}
		for (int k = 0; k < n_act; k++) {
			syn_job_t *a = &act[k];
			sim_job_t *j = &t->jobs[map[k]];
			syn_alloc_t *al = &a->alloc;

			if (al->n_place == 0) {
				prev[map[k]].n_place = 0;
				continue;
			}
			placed++;
			if (j->start < 0)
				j->start = now;
			if (prev[map[k]].n_place > 0) {
				if (same_alloc(&prev[map[k]], al)) {
					r->carried++;
				} else {
					r->changed++;
					j->changes++;
				}
			}
			prev[map[k]] = *al;
			double rate = al->tput / al->prop_tput, dt = round_s;
			if (!(rate > 0)) {
				sim_err(err, "job %llu: zero throughput at its allocation", (unsigned long long)j->id);
				goto out;
			}
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
			cpu_s += a->gpus * al->cpus_per_gpu * dt;
			mem_s += a->gpus * al->mem_per_gpu * dt;
			j->tput_sum += rate;
			j->rounds_run++;
			speed_sum += rate;
			job_rounds++;
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
