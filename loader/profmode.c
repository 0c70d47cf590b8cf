/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profmode.c: profiling a real training job from inside its loader (see
 * profmode.h). Driven by the consumer's calls: every measurement is a
 * window of batches between two entries into coordl_next(), so the job's
 * own step time (its GPU) sets the pace, and every rate comes from the
 * loader's counters (coordl_get_stats) and the monotonic clock. The search
 * mirrors syn__cpu_search in the profiler, as a state machine.
 *
 * The node may take back CPUs it lent the job for the search (a newcomer's
 * share): at every window's end the consumer's affinity is counted, and
 * once fewer CPUs remain than the search started with and than the point
 * runs threads, the point could not be measured as it should: the search
 * stops there and reports itself incomplete. Either way the loader then
 * trains on (coordl__profile_done: following its cpuset again, or at the
 * thread count it started with).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "synergy_env.h"
#include "loader/follow.h"
#include "loader/profmode.h"
#include "loader/util.h"

#define MAX_POINTS 64
#define SYN_STR(x) #x
#define SYN_XSTR(x) SYN_STR(x)
#define SYN_REPORT_V SYN_XSTR(SYNERGY_PROFILE_REPORT_VERSION)

struct point {
	int threads;
	double tput[COORDL__PROF_WINDOWS];
	uint64_t samples, storage_bytes, hits, misses;
	double wall, consumer, stall, prep_time, fetch_time;
};

enum { SEARCH_FIRST, SEARCH_HALVE, SEARCH_WALK, SEARCH_DONE };

struct coordl__profmode {
	char *out;
	int batch_size, max_threads;
	uint64_t dataset_bytes, dataset_items;
	int settle;               /* batches to skip after a thread change */
	int state;                /* SEARCH_* */
	double best;              /* the job's throughput at the first point */
	int good;                 /* last thread count within 10% of best */
	int half;                 /* the halving that fell short (walk stops above it) */
	struct point pts[MAX_POINTS];
	int npts;
	/* The point being measured. */
	int skip, window, batches;
	double t_win, last_return, consumer;
	coordl_stats_t st_win;
	int written;
	int aborted;              /* the CPUs fell below the point's threads */
	int cpus0;                /* CPUs in the affinity when the search began */
	double t0, t_end;         /* first batch request; end of the search */
};

/* One report per process: the first loader that enters profiling mode
 * (a job's training loader, created before its validation loader) owns it. */
static int claimed;

/* CPUs the calling thread may run on now (0 when unknown). */
static int affinity_count(void)
{
	coordl__cpus_t set = { NULL, 0 };
	int n = coordl__cpus_affinity(&set);

	coordl__cpus_free(&set);
	return n > 0 ? n : 0;
}

coordl__profmode_t *coordl__profmode_create(coordl_loader_t *ld, int max_threads, const char *out,
                                            int *skipped)
{
	coordl__profmode_t *p;

	*skipped = __atomic_exchange_n(&claimed, 1, __ATOMIC_ACQ_REL);
	if (*skipped)
		return NULL;
	if (!(p = calloc(1, sizeof(*p))) || !(p->out = strdup(out))) {
		free(p);
		__atomic_store_n(&claimed, 0, __ATOMIC_RELEASE);
		errno = ENOMEM;
		return NULL;
	}
	p->batch_size = coordl_config(ld)->batch_size;
	p->max_threads = max_threads < 1 ? 1 : max_threads;
	p->dataset_bytes = coordl_dataset_bytes(ld);
	p->dataset_items = coordl_dataset_items(ld);
	p->settle = coordl_config(ld)->prefetch;
	p->state = SEARCH_FIRST;
	p->pts[0].threads = p->max_threads;
	p->npts = 1;
	p->skip = p->settle;
	p->window = -1;
	p->cpus0 = affinity_count();
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double s[COORDL__PROF_WINDOWS];
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Write the report: atomically (common/file.h), so that the plugin reading
 * it sees all of it or nothing. */
static void write_report(coordl__profmode_t *p)
{
	syn_atomic_t a;
	FILE *f;

	p->written = 1;
	if (syn_atomic_begin(&a, AT_FDCWD, p->out, 0600) < 0)
		return;
	if (!(f = syn_atomic_stream(&a))) {
		syn_atomic_abort(&a);
		return;
	}
	fprintf(f, "{\n  \"coordl_profile\": " SYN_REPORT_V ",\n  \"complete\": %s,\n  \"batch_size\": %d,\n"
	        "  \"max_threads\": %d,\n  \"elapsed\": %.6f,\n"
	        "  \"dataset\": { \"bytes\": %llu, \"items\": %llu },\n  \"points\": [",
	        p->state == SEARCH_DONE && !p->aborted ? "true" : "false", p->batch_size,
	        p->max_threads, p->t0 > 0 ? (p->t_end > 0 ? p->t_end : coordl__now()) - p->t0 : 0.0,
	        (unsigned long long)p->dataset_bytes, (unsigned long long)p->dataset_items);
	int first = 1;
	for (int i = 0; i < p->npts; i++) {
		struct point *q = &p->pts[i];
		double lo = q->tput[0], hi = q->tput[0];
		if (q->samples == 0)
			continue; /* started, never measured */
		for (int w = 1; w < COORDL__PROF_WINDOWS; w++) {
			lo = q->tput[w] < lo ? q->tput[w] : lo;
			hi = q->tput[w] > hi ? q->tput[w] : hi;
		}
		fprintf(f, "%s\n    { \"threads\": %d, \"samples\": %llu, \"wall\": %.6f, "
		        "\"consumer\": %.6f, \"stall\": %.6f, \"prep_time\": %.6f, \"fetch_time\": %.6f, "
		        "\"storage_bytes\": %llu, \"hits\": %llu, \"misses\": %llu, "
		        "\"tput\": %.3f, \"tput_min\": %.3f, \"tput_max\": %.3f }",
		        first ? "" : ",", q->threads, (unsigned long long)q->samples, q->wall, q->consumer,
		        q->stall, q->prep_time, q->fetch_time, (unsigned long long)q->storage_bytes,
		        (unsigned long long)q->hits, (unsigned long long)q->misses,
		        median(q->tput, COORDL__PROF_WINDOWS), lo, hi);
		first = 0;
	}
	fprintf(f, "\n  ]\n}\n");
	syn_atomic_commit(&a);
}

/* The point just measured decides the next thread count (or the end). */
static int next_threads(coordl__profmode_t *p, double v)
{
	int c = p->pts[p->npts - 1].threads;

	switch (p->state) {
	case SEARCH_FIRST:
		p->best = v;
		p->good = c;
		p->state = SEARCH_HALVE;
		return c > 1 ? c / 2 : 0;
	case SEARCH_HALVE:
		if (v >= 0.9 * p->best) {
			p->good = c;
			return c > 1 ? c / 2 : 0;
		}
		/* The knee lies between c and the last good count: walk down. */
		p->half = c;
		p->state = SEARCH_WALK;
		return p->good - 1 > c ? p->good - 1 : 0;
	case SEARCH_WALK:
		if (v < 0.9 * p->best)
			return 0;
		return c - 1 > p->half ? c - 1 : 0;
	default:
		return 0;
	}
}

void coordl__profmode_enter(coordl__profmode_t *p, coordl_loader_t *ld)
{
	double now = coordl__now();
	coordl_stats_t st;

	if (!p || p->state == SEARCH_DONE)
		return;
	if (p->t0 == 0)
		p->t0 = now;
	if (p->last_return > 0)
		p->consumer += now - p->last_return;
	p->last_return = 0;
	if (p->skip > 0) {
		p->skip--;
		return;
	}
	if (p->window >= 0 && p->batches < COORDL__PROF_WINDOW_BATCHES)
		return; /* inside a window */
	if (coordl_get_stats(ld, &st) < 0)
		return;
	if (p->window >= 0) {
		struct point *q = &p->pts[p->npts - 1];
		int cpus = affinity_count();
		if (cpus > 0 && cpus < p->cpus0 && cpus < q->threads) {
			/* CPUs taken back under this point: stop, incomplete. */
			p->aborted = 1;
			p->state = SEARCH_DONE;
			p->t_end = now;
			write_report(p);
			coordl__profile_done(ld, p->max_threads);
			return;
		}
		if (st.epoch == p->st_win.epoch && st.samples > p->st_win.samples) {
			/* Per-epoch counters: a window inside one epoch. */
			double wall = now - p->t_win;
			uint64_t n = st.samples - p->st_win.samples;
			q->tput[p->window] = (double)n / wall;
			q->samples += n;
			q->wall += wall;
			q->consumer += p->consumer;
			q->stall += st.stall - p->st_win.stall;
			q->prep_time += st.prep_time - p->st_win.prep_time;
			q->fetch_time += st.fetch_time - p->st_win.fetch_time;
			q->storage_bytes += st.storage_bytes - p->st_win.storage_bytes;
			q->hits += st.cache_hits - p->st_win.cache_hits;
			q->misses += st.cache_misses - p->st_win.cache_misses;
			p->window++;
		}
		/* else: an epoch boundary fell inside; time this window again. */
		if (p->window >= COORDL__PROF_WINDOWS) {
			int c = next_threads(p, median(q->tput, COORDL__PROF_WINDOWS));
			if (c < 1 || p->npts >= MAX_POINTS) {
				p->state = SEARCH_DONE;
				p->t_end = now;
				write_report(p);
				coordl__profile_done(ld, p->max_threads);
				return;
			}
			p->pts[p->npts++].threads = c;
			coordl_set_threads(ld, c, NULL);
			p->window = -1;
			p->skip = p->settle;
			return;
		}
	}
	/* Open the next window. */
	if (p->window < 0)
		p->window = 0;
	p->t_win = now;
	p->st_win = st;
	p->batches = 0;
	p->consumer = 0;
}

void coordl__profmode_leave(coordl__profmode_t *p)
{
	if (!p || p->state == SEARCH_DONE)
		return;
	p->last_return = coordl__now();
	if (p->skip == 0 && p->window >= 0)
		p->batches++;
}

void coordl__profmode_destroy(coordl__profmode_t *p)
{
	if (!p)
		return;
	if (!p->written)
		write_report(p);
	free(p->out);
	free(p);
}
