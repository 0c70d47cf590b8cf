/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * model.h: the DS-Analyzer what-if model, internal to the profiler.
 *
 * From a handful of measured rates the model predicts a job's throughput
 * at any (cores, cache) point. How fetch and prep combine depends on how
 * the loader fetches.
 *
 * Local storage (the worker reads its item, then decodes it, on the same
 * thread): every item costs a worker t_p(c) = c / R_prep(c) seconds with
 * the item in the cache, and a miss adds t_m(c) seconds (the read, and the
 * kernel work and contention it brings). With a MinIO cache that holds the
 * fraction h of the dataset, (1 - h) of the items miss, so
 *
 *   loader(c, m) = c / (t_p(c) + (1 - h) * t_m(c)),  at most S / (1 - h)
 *
 * where S is what storage delivers (items/s) at the most threads measured.
 * This is DS-Analyzer's differential measurement per item: t_m(c) is
 * measured as c / R_cold(c) - t_p(c), from a run at c threads with cold
 * storage and no cache (R_cold) and the same run with every item cached
 * (R_prep), both on the same steady-state windows, so it holds whatever
 * the read costs on this machine (I/O wait, kernel CPU, page cache
 * insertion, a disk shared by the threads), and both ends, h = 0 and
 * h = 1, are measured, not modelled. Between measured thread counts t_m
 * is linear, beyond them it is held at the nearest one.
 *
 * Remote storage (a fetch engine reads ahead with many requests in flight,
 * apart from the workers) and profiles without a cold run use
 * DS-Analyzer's rates:
 *
 *   t_p = 1/R_prep(c), t_f = 1/R_fetch(m)          (seconds per item)
 *   loader(c, m) = 1 / (t_p + t_f - a(c) * min(t_p, t_f))
 *
 * a(c) in [0, 1] is the fetch/prep overlap (a = 1 is DS-Analyzer's
 * min(R_prep, R_fetch), right for a loader that fetches in a stage of its
 * own), fitted from a cold, uncached decoding run at a few thread counts:
 * a = (t_p + t_f - 1/R_c) / min(t_p, t_f), clamped to [0, 1]; linear
 * between fitted counts, held beyond, 0 without a fit.
 *
 * In both, tput(c, m) = min(R_gpu, loader(c, m)): the loader and the GPU
 * overlap (prefetching).
 *
 * R_prep(c) is piecewise linear through the measured prep points (data in
 * memory), through the origin below the first one, and extrapolated with
 * the per-core rate of the largest measured point above the last one (the
 * optimistic linear scaling DS-Analyzer assumes). R_fetch(m) follows the
 * MinIO cache: a cache of m bytes holds the fraction h = min(1, m/D) of a
 * dataset of D bytes and N items, every epoch reads each item once, so an
 * epoch spends h*D/B_mem + (1-h)*N*t_s fetching, and R_fetch = N / that.
 * t_s, the storage time per item, is D/N/B_disk for local storage
 * (bandwidth); for remote storage, where each item is a request of
 * latency L and the loader keeps Q requests in flight, it is L/Q (Little's
 * law: Q/L items per second, apart from the cores that decode); S above
 * is 1/t_s. A rate of 0 means "not limiting" (unmeasured GPU).
 *
 * Memory in profiles is in GiB (2^30 bytes), as Slurm counts memory.
 */
#ifndef SYN_PROFILER_MODEL_H
#define SYN_PROFILER_MODEL_H

#include <stdint.h>

#include "common/profile.h"

#define SYN__GIB 1073741824.0
#define SYN__MAX_POINTS SYN_PROFILE_MAX_CPU

typedef struct syn__rates {
	double gpu;                          /* samples/s the GPU ingests; 0 = unlimited */
	int n_prep;                          /* measured prep points, cpus increasing */
	double prep_cpus[SYN__MAX_POINTS];   /* worker threads at each point */
	double prep_rate[SYN__MAX_POINTS];   /* samples/s with all data in memory */
	double fetch_storage_bps;            /* bytes/s from storage (cold); 0 = unlimited */
	double fetch_memory_bps;             /* bytes/s from the cache; 0 = unlimited */
	double fetch_latency;                /* remote: s per request; 0 = local storage */
	double fetch_concurrency;            /* remote: requests in flight (Q) */
	uint64_t dataset_bytes, dataset_items;
	int n_overlap;                       /* fitted overlap points, cpus increasing; 0 = serial */
	double overlap_cpus[SYN__MAX_POINTS];
	double overlap[SYN__MAX_POINTS];     /* a(c) in [0, 1] at each */
	/* Local storage: the worker time a miss adds to an item, t_m(c);
	 * n_miss 0 = unmeasured (the overlap form is used instead). */
	int n_miss;                          /* measured points, cpus increasing */
	double miss_cpus[SYN__MAX_POINTS];
	double miss_time[SYN__MAX_POINTS];   /* worker seconds per miss at each */
} syn__rates_t;

/* Prep throughput (samples/s) at `cpus` worker threads; 0 with no points. */
double syn__model_prep(const syn__rates_t *r, double cpus);

/* Fetch throughput (samples/s) with a MinIO cache of cache_bytes;
 * INFINITY when neither bandwidth limits or the dataset is unknown. */
double syn__model_fetch(const syn__rates_t *r, double cache_bytes);

/* Items/s storage delivers: Q/L for remote storage (latency and
 * concurrency known), else storage bandwidth / mean item size; INFINITY
 * when unknown. */
double syn__model_storage_items(const syn__rates_t *r);

/* The MinIO hit rate for a cache of cache_bytes: min(1, cache/dataset). */
double syn__model_hit_rate(const syn__rates_t *r, double cache_bytes);

/* The fetch/prep overlap a(cpus) in [0, 1] (see the top of the file). */
double syn__model_overlap(const syn__rates_t *r, double cpus);

/*
 * Fit the overlap from one measured rate: prep and fetch rates (samples/s,
 * as the model gives them for that point) and the rate measured there with
 * both at work. Returns a in [0, 1]: 0 when the measurement is at or below
 * the serial sum, 1 at or above min(prep, fetch); 0 when an input is not a
 * positive finite number (nothing to fit: keep the serial model).
 */
double syn__model_fit_overlap(double prep_rate, double fetch_rate, double measured);

/*
 * Record a fitted overlap a at `cpus` threads, keeping overlap_cpus
 * increasing (a second fit at the same count replaces the first).
 * Returns 0, or -1 (EINVAL: bad cpus or a, or no room).
 */
int syn__model_add_overlap(syn__rates_t *r, double cpus, double a);

/*
 * The worker time a miss adds at `cpus` threads, t_m(c) = cpus / cold_rate
 * - cpus / prep_rate (seconds), from a cold, uncached run (cold_rate) and
 * the all-cached rate at the same thread count; 0 when the cold run was
 * no slower, or when an input is not a positive finite number.
 */
double syn__model_fit_miss(double cpus, double prep_rate, double cold_rate);

/*
 * Record a measured miss time t (seconds) at `cpus` threads, keeping
 * miss_cpus increasing (a second one at the same count replaces the
 * first). Returns 0, or -1 (EINVAL: bad cpus or t, or no room).
 */
int syn__model_add_miss(syn__rates_t *r, double cpus, double t);

/* t_m(cpus): linear between measured points, held beyond; 0 with none. */
double syn__model_miss_time(const syn__rates_t *r, double cpus);

/* The loader alone at (cpus, cache_bytes): the serial worker form when
 * miss times are measured and storage is local, else prep and fetch
 * times combined with the overlap a(cpus) (see the top of the file). */
double syn__model_loader(const syn__rates_t *r, double cpus, double cache_bytes);

/* Predicted samples/s at (cpus, cache_bytes): min(GPU, loader). */
double syn__model_tput(const syn__rates_t *r, double cpus, double cache_bytes);

/*
 * Fill the grid of p (cpus x mem_gb axes as given, mem in GiB per GPU)
 * with predicted throughput normalised to the prediction at (prop_cpus,
 * prop_mem_gb), rounded to 4 decimals; set prop_*, base_tput and the raw
 * rates (prep_rate_per_core from the largest measured point, fetch_overlap
 * from the largest fitted thread count, fetch_miss_s from the largest
 * measured miss time). Leaves key,
 * model, machine, date and tool alone. Returns 0, or -1 with errno EINVAL
 * and msg (size msglen) naming the problem (bad axis, no prep points, a
 * zero throughput at the proportional share).
 */
int syn__model_grid(const syn__rates_t *r, const double *cpus, int n_cpu,
                    const double *mem_gb, int n_mem, double prop_cpus, double prop_mem_gb,
                    syn_profile_t *p, char *msg, int msglen);

/*
 * Synergy's optimistic CPU search: probe max_threads, then halve while the
 * job's throughput stays within 10% of that first point; at the first
 * halving that falls further, step down one thread at a time from the last
 * good count until a point falls below 90% too. probe(threads, arg, &tput)
 * measures the job at that many threads and returns 0, or -1 to abort.
 * Records at most max_points thread counts, in probing order, in order[].
 * Returns the number of points probed, or -1 when a probe failed.
 */
typedef int (*syn__probe_f)(int threads, void *arg, double *tput);
int syn__cpu_search(int max_threads, syn__probe_f probe, void *arg, int *order, int max_points);

/*
 * One point of a profiling report written by a training job's own loader
 * (SYNERGY_PROFILE_MODE=1): sums over the point's timed windows. items are
 * the items the workers processed (cache hits + misses).
 */
typedef struct syn__job_point {
	int threads;
	double samples, consumer;   /* delivered samples; time the job spent between requests */
	double prep_time, fetch_time; /* worker time, summed over workers */
	double storage_bytes, items;
	double misses;              /* items read from storage (0: unknown or none) */
} syn__job_point_t;

/*
 * Rates from a job's report: the GPU ingests samples / consumer time (all
 * points together); at c threads the workers prep c * items / prep_time
 * samples/s (their time per item, c at once); storage delivers
 * c * storage_bytes / fetch_time bytes/s at the point with the most threads
 * (0, not limiting, when nothing came from storage); at every point with
 * misses (the caller passes misses only for points where every item
 * missed: fetch_time then holds storage reads alone), a miss costs a
 * worker fetch_time / misses seconds (t_m, the
 * serial form: a worker's prep and fetch times add up by construction);
 * the cache bandwidth is not measured (0) and the overlap is 0. Returns 0,
 * or -1 (EINVAL) when no point has positive prep time.
 */
int syn__rates_from_job(const syn__job_point_t *pts, int n, uint64_t dataset_bytes,
                        uint64_t dataset_items, syn__rates_t *r);

/* Parse a comma-separated list of n >= 1 non-negative, strictly increasing
 * numbers (common/parse.h's reals) into out (at most max). Returns n or -1
 * (EINVAL). */
int syn__parse_list(const char *s, double *out, int max);

#endif
