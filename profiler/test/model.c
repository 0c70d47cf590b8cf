/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * model.c: tests of the DS-Analyzer what-if arithmetic: the prep curve
 * (interpolation, origin, linear extrapolation), the MinIO fetch model,
 * the min() of the three rates, the local-storage miss time (fit,
 * interpolation, the serial worker form and its storage cap), the
 * normalised grid, and the list and
 * byte-count parsers the CLI uses. Expected values are worked by hand in
 * the comments.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "profiler/model.h"
#include "tests/tap.h"

static syn__rates_t rates(void)
{
	/* 2 threads: 1800/s, 4 threads: 3000/s. Dataset 1 GiB, 10000 items.
	 * Storage 100 MiB/s, memory 10 GiB/s. GPU 2000/s. */
	syn__rates_t r;
	memset(&r, 0, sizeof(r));
	r.gpu = 2000;
	r.n_prep = 2;
	r.prep_cpus[0] = 2;
	r.prep_rate[0] = 1800;
	r.prep_cpus[1] = 4;
	r.prep_rate[1] = 3000;
	r.fetch_storage_bps = 100.0 * 1024 * 1024;
	r.fetch_memory_bps = 10 * SYN__GIB;
	r.dataset_bytes = 1073741824ULL;
	r.dataset_items = 10000;
	return r;
}

static void test_prep(void)
{
	syn__rates_t r = rates();
	is_near(syn__model_prep(&r, 1), 900, 1e-9, "below the first point: through the origin");
	is_near(syn__model_prep(&r, 2), 1800, 1e-9, "at a measured point");
	is_near(syn__model_prep(&r, 3), 2400, 1e-9, "between points: linear");
	is_near(syn__model_prep(&r, 8), 6000, 1e-9, "beyond the last point: per-core rate of the last");
	is_near(syn__model_prep(&r, 0), 0, 0, "zero cpus: zero");
	/* A noisy sweep where 4 threads measured slower than 2 (regression:
	 * the first profile on a loaded machine came out non-monotone). */
	r.prep_rate[1] = 1500;
	is_near(syn__model_prep(&r, 3), 1800, 1e-9, "never below a measured point with fewer cpus");
	is_near(syn__model_prep(&r, 4), 1800, 1e-9, "a slower point with more threads is lifted");
	is_near(syn__model_prep(&r, 8), 3000, 1e-9, "extrapolation still from the last point");
	r.n_prep = 0;
	is_near(syn__model_prep(&r, 4), 0, 0, "no points: zero");
}

static void test_fetch(void)
{
	syn__rates_t r = rates();
	/* No cache: 1 GiB at 100 MiB/s = 10.24 s per epoch -> 10000/10.24. */
	is_near(syn__model_fetch(&r, 0), 10000 / 10.24, 1e-9, "no cache: all from storage");
	/* Half: 0.5 GiB/100 MiB/s = 5.12 s + 0.5 GiB / 10 GiB/s = 0.05 s. */
	is_near(syn__model_fetch(&r, 0.5 * SYN__GIB), 10000 / 5.17, 1e-9, "half cached: MinIO mix");
	is_near(syn__model_fetch(&r, 4 * SYN__GIB), 10000 / 0.1, 1e-9, "cache beyond the dataset: memory only");
	is_near(syn__model_hit_rate(&r, 0.25 * SYN__GIB), 0.25, 1e-12, "hit rate = cache/dataset");
	is_near(syn__model_hit_rate(&r, 2 * SYN__GIB), 1, 0, "hit rate capped at 1");
	r.fetch_storage_bps = 0;
	r.fetch_memory_bps = 0;
	ok(isinf(syn__model_fetch(&r, 0)), "unmeasured bandwidths do not limit");
	r = rates();
	r.dataset_bytes = 0;
	ok(isinf(syn__model_fetch(&r, 0)), "unknown dataset does not limit");
}

/* Remote storage: Q requests of latency L in flight give Q/L items/s,
 * whatever the bandwidth figure says; the cache serves its share. */
static void test_remote_fetch(void)
{
	syn__rates_t r = rates();
	r.fetch_latency = 0.05;
	r.fetch_concurrency = 40;
	is_near(syn__model_storage_items(&r), 800, 1e-9, "remote storage: Q/L = 40/0.05 items/s");
	is_near(syn__model_fetch(&r, 0), 800, 1e-9, "no cache: every item from remote storage");
	/* Half cached: 0.5 * 10000 / 800 s + 0.5 GiB / 10 GiB/s per epoch. */
	is_near(syn__model_fetch(&r, 0.5 * SYN__GIB), 10000 / (6.25 + 0.05), 1e-9,
	        "half cached: the rest at Q/L");
	r.fetch_concurrency = 2;
	is_near(syn__model_fetch(&r, 0), 40, 1e-9, "one request per worker (Q = 2): 2/L items/s");
	r = rates();
	is_near(syn__model_storage_items(&r), 100.0 * 1048576 / (SYN__GIB / 10000), 1e-6,
	        "local storage: bandwidth over the mean item size");
	r.fetch_latency = 0.05; /* without a concurrency the bandwidth rules */
	is_near(syn__model_fetch(&r, 0), 10000 / 10.24, 1e-9, "latency alone does not change the model");
}

static void test_tput(void)
{
	syn__rates_t r = rates();
	/* 4 cpus, full cache: loader 1/(1/3000 + 1/1e5) = 2912.6 > GPU. */
	is_near(syn__model_tput(&r, 4, SYN__GIB), 2000, 1e-9, "GPU bound");
	/* 1 cpu, full cache: 1/(1/900 + 1/1e5) = 891.97 < GPU. */
	is_near(syn__model_tput(&r, 1, SYN__GIB), 1 / (1 / 900.0 + 1 / 1e5), 1e-9, "prep bound");
	/* 4 cpus, no cache: 1/(1/3000 + 1/976.5625) = 736.74: fetch bound. */
	is_near(syn__model_tput(&r, 4, 0), 1 / (1 / 3000.0 + 1 / 976.5625), 1e-9, "fetch bound");
	is_near(syn__model_loader(&r, 4, 0), syn__model_tput(&r, 4, 0), 1e-12, "loader alone below the GPU");
	r.gpu = 0;
	is_near(syn__model_tput(&r, 4, SYN__GIB), 1 / (1 / 3000.0 + 1 / 1e5), 1e-9,
	        "gpu rate 0 does not limit");
	r.fetch_storage_bps = r.fetch_memory_bps = 0;
	is_near(syn__model_tput(&r, 4, 0), 3000, 1e-9, "unmeasured fetch: prep alone");
}

static void test_grid(void)
{
	syn__rates_t r = rates();
	syn_profile_t p;
	char msg[160];
	double cpus[] = { 1, 2, 3, 4 }, mem[] = { 0, 0.5, 1 };

	memset(&p, 0, sizeof(p));
	/* Proportional share: 2 cpus, 1 GiB -> 1/(1/1800 + 1/1e5) = 1768.17. */
	double base = 1 / (1 / 1800.0 + 1 / 1e5);
#define R4(x) (round((x) * 1e4) / 1e4)
	ok(syn__model_grid(&r, cpus, 4, mem, 3, 2, 1, &p, msg, sizeof(msg)) == 0, "build a grid");
	is_near(p.base_tput, round(base * 10) / 10, 1e-9, "base is the prediction at the share");
	is_near(p.tput[1][2], 1, 0, "the share's cell is 1.0");
	is_near(p.tput[0][2], R4(1 / (1 / 900.0 + 1 / 1e5) / base), 1e-12, "1 cpu, full cache");
	is_near(p.tput[3][2], R4(2000 / base), 1e-12, "4 cpus: GPU bound, rounded to 4 decimals");
	is_near(p.tput[3][0], R4(1 / (1 / 3000.0 + 1 / 976.5625) / base), 1e-12, "4 cpus, no cache");
	is_near(p.tput[3][1], R4(1 / (1 / 3000.0 + 5.17 / 10000) / base), 1e-12, "4 cpus, half cache");
	is_near(p.prep_rate_per_core, 750, 0, "per-core prep rate from the largest point");
	ok(p.dataset_items == 10000 && p.dataset_bytes == 1073741824ULL, "dataset size copied");

	double badcpus[] = { 2, 1 };
	errno = 0;
	ok(syn__model_grid(&r, badcpus, 2, mem, 3, 2, 1, &p, msg, sizeof(msg)) == -1 && errno == EINVAL &&
	   strstr(msg, "cpus"), "a decreasing cpus axis is rejected");
	r.n_prep = 0;
	ok(syn__model_grid(&r, cpus, 4, mem, 3, 2, 1, &p, msg, sizeof(msg)) == -1 && strstr(msg, "prep"),
	   "no prep measurement is rejected");
}

static void test_overlap(void)
{
	syn__rates_t r = rates();

	/* Fit: prep 1000/s (1 ms), fetch 4000/s (0.25 ms). Serial = 1.25 ms
	 * (800/s); full overlap = 1 ms (1000/s). Measured 1/1.1 ms = 909.09/s
	 * hides 0.15 of 0.25 ms: a = 0.6. */
	is_near(syn__model_fit_overlap(1000, 4000, 1 / 1.1e-3), 0.6, 1e-9, "fit: 0.15 of 0.25 ms hidden");
	is_near(syn__model_fit_overlap(4000, 1000, 1 / 1.1e-3), 0.6, 1e-9, "fit is symmetric in prep/fetch");
	is_near(syn__model_fit_overlap(1000, 4000, 800), 0, 1e-9, "the serial sum fits 0");
	is_near(syn__model_fit_overlap(1000, 4000, 700), 0, 0, "slower than serial: clamped to 0");
	is_near(syn__model_fit_overlap(1000, 4000, 1000), 1, 1e-9, "min(prep, fetch) fits 1");
	is_near(syn__model_fit_overlap(1000, 4000, 1200), 1, 0, "faster than min: clamped to 1");
	is_near(syn__model_fit_overlap(0, 4000, 900), 0, 0, "no prep rate: nothing to fit");
	is_near(syn__model_fit_overlap(1000, INFINITY, 900), 0, 0, "unlimited fetch: nothing to fit");

	/* a(c): none fitted = serial; one point = constant; two points =
	 * linear between, held beyond. */
	is_near(syn__model_overlap(&r, 3), 0, 0, "no fit: serial (a = 0)");
	ok(syn__model_add_overlap(&r, 4, 0.5) == 0, "add a at 4 cpus");
	is_near(syn__model_overlap(&r, 1), 0.5, 0, "one fit: held below");
	is_near(syn__model_overlap(&r, 8), 0.5, 0, "one fit: held above");
	ok(syn__model_add_overlap(&r, 1, 0.9) == 0, "add a at 1 cpu (kept sorted)");
	ok(r.n_overlap == 2 && r.overlap_cpus[0] == 1 && r.overlap_cpus[1] == 4, "sorted by cpus");
	is_near(syn__model_overlap(&r, 2), 0.9 - 0.4 / 3, 1e-12, "linear between fits");
	is_near(syn__model_overlap(&r, 16), 0.5, 0, "held beyond the last fit");
	ok(syn__model_add_overlap(&r, 4, 0.25) == 0 && r.n_overlap == 2 && r.overlap[1] == 0.25,
	   "a second fit at the same cpus replaces the first");
	errno = 0;
	ok(syn__model_add_overlap(&r, 2, 1.5) == -1 && errno == EINVAL, "a > 1 is rejected");
	ok(syn__model_add_overlap(&r, 0, 0.5) == -1 && errno == EINVAL, "cpus 0 is rejected");

	/* The loader with overlap: 4 cpus, no cache: prep 3000/s (0.3333 ms),
	 * fetch 976.5625/s (1.024 ms), a = 0.25: t = 1.024 + 0.3333 * 0.75. */
	double tp = 1 / 3000.0, tf = 1 / 976.5625;
	is_near(syn__model_loader(&r, 4, 0), 1 / (tf + 0.75 * tp), 1e-9, "loader: shorter time 25% hidden");
	/* 2 cpus, a = 0.9 - 0.65/3 (between 0.9 at 1 and 0.25 at 4); prep 1800/s. */
	double a2 = 0.9 - 0.65 / 3;
	is_near(syn__model_loader(&r, 2, 0), 1 / (tf + (1 - a2) / 1800.0), 1e-9,
	        "loader: a interpolated at 2 cpus");
	/* Full overlap reduces to DS-Analyzer's min(prep, fetch). */
	r.n_overlap = 0;
	syn__model_add_overlap(&r, 1, 1);
	is_near(syn__model_loader(&r, 4, 0), 976.5625, 1e-9, "a = 1: min(prep, fetch)");
	/* Full cache: fetch from memory 1e5/s; a = 1: min = prep (3000/s). */
	is_near(syn__model_loader(&r, 4, SYN__GIB), 3000, 1e-9, "a = 1, cached: prep bound");

	/* The grid records the overlap fitted at the most cpus. */
	syn_profile_t p;
	char msg[160];
	double cpus[] = { 1, 2, 4 }, mem[] = { 0, 1 };
	r = rates();
	syn__model_add_overlap(&r, 1, 0.9);
	syn__model_add_overlap(&r, 4, 0.55555);
	memset(&p, 0, sizeof(p));
	ok(syn__model_grid(&r, cpus, 3, mem, 2, 2, 1, &p, msg, sizeof(msg)) == 0, "grid with overlap");
	is_near(p.fetch_overlap, 0.5556, 1e-12, "fetch_overlap from the largest fit, 4 decimals");
	double base = syn__model_tput(&r, 2, SYN__GIB);
	is_near(p.tput[2][0], R4(1 / (tf + (1 - 0.55555) * tp) / base), 1e-12,
	        "grid cell uses the overlap");
}

static void test_miss(void)
{
	syn__rates_t r = rates();
	char msg[160];

	/* Fit: 4 threads, all cached 3000/s (a worker spends 4/3000 s per
	 * item), cold and uncached 1000/s (4/1000 s): a miss adds 4/1000 -
	 * 4/3000 = 2.6667 ms. */
	is_near(syn__model_fit_miss(4, 3000, 1000), 0.004 - 4 / 3000.0, 1e-15, "fit: t_m = c/R_cold - c/R_prep");
	is_near(syn__model_fit_miss(2, 1800, 2000), 0, 0, "cold faster than cached: 0");
	is_near(syn__model_fit_miss(0, 1800, 900), 0, 0, "cpus 0: 0");
	is_near(syn__model_fit_miss(2, NAN, 900), 0, 0, "NaN prep rate: 0");
	is_near(syn__model_fit_miss(2, 1800, INFINITY), 0, 0, "infinite cold rate: 0");

	/* t_m(c): none = 0; linear between points, held beyond. */
	is_near(syn__model_miss_time(&r, 2), 0, 0, "no miss times: 0");
	ok(syn__model_add_miss(&r, 4, 0.004 - 4 / 3000.0) == 0, "add t_m at 4 threads");
	ok(syn__model_add_miss(&r, 1, 0.001) == 0, "add t_m at 1 thread (kept sorted)");
	ok(r.n_miss == 2 && r.miss_cpus[0] == 1 && r.miss_cpus[1] == 4, "miss points sorted by cpus");
	is_near(syn__model_miss_time(&r, 2), 0.001 + (0.004 - 4 / 3000.0 - 0.001) / 3, 1e-15,
	        "linear between points");
	is_near(syn__model_miss_time(&r, 0.5), 0.001, 0, "held below the first");
	is_near(syn__model_miss_time(&r, 16), 0.004 - 4 / 3000.0, 0, "held beyond the last");
	errno = 0;
	ok(syn__model_add_miss(&r, 0, 0.001) == -1 && errno == EINVAL, "cpus 0 is rejected");
	errno = 0;
	ok(syn__model_add_miss(&r, 2, -1e-3) == -1 && errno == EINVAL, "a negative time is rejected");
	errno = 0;
	ok(syn__model_add_miss(&r, 2, NAN) == -1 && errno == EINVAL, "NaN is rejected");
	ok(r.n_miss == 2, "rejected points change nothing");

	/* The serial worker form. Storage fast enough not to cap (1 GiB/s:
	 * 10000 items/s). 4 threads: t_p = 4/3000 s, t_m = 4/1000 - 4/3000. */
	r.fetch_storage_bps = SYN__GIB;
	double tp = 4 / 3000.0, tm = 0.004 - tp;
	is_near(syn__model_loader(&r, 4, 0), 1000, 1e-9, "no cache: every item misses (the cold rate)");
	is_near(syn__model_loader(&r, 4, SYN__GIB / 2), 4 / (tp + 0.5 * tm), 1e-9,
	        "half cached: half the items pay t_m");
	is_near(syn__model_loader(&r, 4, SYN__GIB), 3000, 1e-9, "all cached: the prep rate");
	/* Storage caps what the misses can bring: 100 MiB/s = 976.5625 items/s. */
	r.fetch_storage_bps = 100.0 * 1024 * 1024;
	is_near(syn__model_loader(&r, 4, 0), 976.5625, 1e-9, "no cache: storage-bound below the cold rate");
	is_near(syn__model_loader(&r, 4, SYN__GIB / 2), 4 / (tp + 0.5 * tm), 1e-9,
	        "half cached: storage brings 1953/s, the workers are the limit");
	is_near(syn__model_tput(&r, 4, SYN__GIB), 2000, 1e-9, "all cached: GPU bound");

	/* Remote storage ignores miss times: the overlap form. */
	syn__rates_t q = r;
	q.fetch_latency = 0.05;
	q.fetch_concurrency = 50; /* 1000 items/s */
	syn__rates_t q0 = q;
	q0.n_miss = 0;
	is_near(syn__model_loader(&q, 4, 0), syn__model_loader(&q0, 4, 0), 0,
	        "remote storage: miss times not used");

	/* The grid records t_m at the most threads, rounded to 0.1 us. */
	syn_profile_t p;
	double cpus[] = { 1, 2, 4 }, mem[] = { 0, 0.5, 1 };
	memset(&p, 0, sizeof(p));
	r.fetch_storage_bps = SYN__GIB;
	ok(syn__model_grid(&r, cpus, 3, mem, 3, 4, 1, &p, msg, sizeof(msg)) == 0, "grid with miss times");
	is_near(p.fetch_miss_s, round((0.004 - 4 / 3000.0) * 1e7) / 1e7, 1e-15,
	        "fetch_miss_s from the most threads");
	is_near(p.tput[2][1], R4(4 / (tp + 0.5 * tm) / 2000), 1e-12, "grid cell uses the serial form");
}

static void test_from_job(void)
{
	syn__rates_t r;
	/* 4 threads: 400 items in 1.6 s of prep (1000/s), 100 MB in 0.8 s
	 * of fetch at 4 threads (500 MB/s); 2 threads: 400 items in 1.0 s
	 * (800/s). The job spent 0.5 + 0.3 s outside coordl_next for 800
	 * samples: GPU 1000/s. */
	syn__job_point_t p[] = {
		{ 4, 400, 0.5, 1.6, 0.8, 100e6, 400, 0 },
		{ 2, 400, 0.3, 1.0, 0.4, 100e6, 400, 0 },
		{ 1, 0, 0, 0, 0, 0, 0, 0 }, /* never measured: ignored */
	};
	ok(syn__rates_from_job(p, 3, 1000000000ULL, 10000, &r) == 0, "rates from a job report");
	is_near(r.gpu, 1000, 1e-9, "gpu = samples / consumer time");
	ok(r.n_prep == 2 && r.prep_cpus[0] == 2 && r.prep_cpus[1] == 4, "prep points sorted by threads");
	is_near(r.prep_rate[0], 800, 1e-9, "prep at 2 threads = 2 * items / prep time");
	is_near(r.prep_rate[1], 1000, 1e-9, "prep at 4 threads");
	is_near(r.fetch_storage_bps, 500e6, 1e-3, "storage = threads * bytes / fetch time, most threads");
	ok(r.fetch_memory_bps == 0 && r.n_overlap == 0 && r.dataset_items == 10000,
	   "cache bandwidth unmeasured, serial, dataset copied");
	ok(r.n_miss == 0, "no miss counts reported: no miss times (the overlap form)");
	/* With miss counts: a worker's fetch time per miss. 4 threads: 0.8 s
	 * for 400 misses = 2 ms; 2 threads: 0.4 s for 200 misses = 2 ms. */
	p[0].misses = 400;
	p[1].misses = 200;
	ok(syn__rates_from_job(p, 3, 1000000000ULL, 10000, &r) == 0 && r.n_miss == 2 &&
	   r.miss_cpus[0] == 2 && r.miss_cpus[1] == 4, "miss times at both measured thread counts");
	is_near(r.miss_time[0], 0.002, 1e-12, "t_m at 2 threads = fetch time / misses");
	is_near(r.miss_time[1], 0.002, 1e-12, "t_m at 4 threads");
	p[0].misses = p[1].misses = 0;
	p[0].storage_bytes = 0;
	ok(syn__rates_from_job(p, 2, 1000000000ULL, 10000, &r) == 0 && r.fetch_storage_bps == 0,
	   "all hits: storage not limiting");
	errno = 0;
	ok(syn__rates_from_job(p + 2, 1, 1, 1, &r) == -1 && errno == EINVAL, "no measured point: EINVAL");
}

/* Synthetic jobs for the CPU search: throughput min(gpu, per_core * c). */
struct job {
	double gpu, per_core;
	int probes;
};

static int probe(int threads, void *arg, double *tput)
{
	struct job *j = arg;
	double v = j->per_core * threads;
	j->probes++;
	*tput = j->gpu > 0 && j->gpu < v ? j->gpu : v;
	return 0;
}

static int probe_fail(int threads, void *arg, double *tput)
{
	return threads == 15 ? -1 : probe(threads, arg, tput);
}

static int same_order(const int *got, int n, const int *want, int wn)
{
	if (n != wn)
		return 0;
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			return 0;
	return 1;
}

static void test_search(void)
{
	int order[32];
	struct job j;

	/* Linear scaling, no GPU limit: 8 threads is 50% of 16, so step
	 * down from 16: 15 (94%) is kept, 14 (87.5%) stops the walk. */
	j = (struct job){ 0, 100, 0 };
	int n = syn__cpu_search(16, probe, &j, order, 32);
	ok(same_order(order, n, (int[]){ 16, 8, 15, 14 }, 4), "linear job: 16, 8, then 15, 14");
	/* GPU-bound everywhere (a language model): halve all the way down. */
	j = (struct job){ 50, 100, 0 };
	n = syn__cpu_search(16, probe, &j, order, 32);
	ok(same_order(order, n, (int[]){ 16, 8, 4, 2, 1 }, 5), "flat job: 16, 8, 4, 2, 1");
	/* Knee at 6 cores (600/s GPU, 100/s per core): 16, 8 within 10%;
	 * 4 is not; walk down from 8: 7, 6 keep 600, 5 gives 500 and stops. */
	j = (struct job){ 600, 100, 0 };
	n = syn__cpu_search(16, probe, &j, order, 32);
	ok(same_order(order, n, (int[]){ 16, 8, 4, 7, 6, 5 }, 6), "knee at 6: 16, 8, 4, 7, 6, 5");
	/* Two cores (this machine): 2 then 1. */
	j = (struct job){ 0, 100, 0 };
	n = syn__cpu_search(2, probe, &j, order, 32);
	ok(same_order(order, n, (int[]){ 2, 1 }, 2), "two cores: 2, 1");
	n = syn__cpu_search(1, probe, &j, order, 32);
	ok(same_order(order, n, (int[]){ 1 }, 1), "one core: 1");
	j = (struct job){ 50, 100, 0 };
	n = syn__cpu_search(16, probe, &j, order, 3);
	is_int(n, 3, "stops at max_points");
	j = (struct job){ 0, 100, 0 };
	is_int(syn__cpu_search(16, probe_fail, &j, order, 32), -1, "a failed probe aborts the search");
	is_int(syn__cpu_search(0, probe, &j, order, 32), -1, "zero threads is rejected");
}

static void test_parsers(void)
{
	double v[8];
	is_int(syn__parse_list("1,2,4.5", v, 8), 3, "parse a list");
	ok(v[2] == 4.5, "list values");
	is_int(syn__parse_list("2,1", v, 8), -1, "a decreasing list is rejected");
	is_int(syn__parse_list("1,,2", v, 8), -1, "an empty entry is rejected");
	is_int(syn__parse_list("1,2,3", v, 2), -1, "too many entries are rejected");
	is_int(syn__parse_list("-1", v, 8), -1, "a negative entry is rejected");
}

int main(void)
{
	test_prep();
	test_overlap();
	test_miss();
	test_from_job();
	test_fetch();
	test_remote_fetch();
	test_tput();
	test_grid();
	test_search();
	test_parsers();
	return done_testing();
}
