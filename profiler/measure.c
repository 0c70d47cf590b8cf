/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * measure.c: the DS-Analyzer protocol on the embedded coordl loader (see
 * measure.h).
 *
 * Every rate comes from the loader's own counters or from the wall time of
 * batches it handed out; nothing is estimated from file sizes alone. The
 * emulated GPU is asynchronous, as a CUDA stream is: the consumer takes the
 * next batch while the "GPU" still works on the previous one and then waits
 * until the GPU is free before submitting it (sleeping, so that the CPU
 * stays with the loader's workers), so a job runs at min(R_gpu, loader).
 *
 * Local and remote storage differ in how a loader fetches: over local
 * storage each worker reads its item and then decodes it, so what a miss
 * costs is measured as the difference between a cold, uncached decoding
 * run and the all-cached prep rate at the same thread count (model.h);
 * storage's own rate, the model's ceiling, comes from a raw run without a
 * cache (a run that fills a cache pays for the copy into it, which a job
 * with no cache never does). Over remote storage a fetch engine reads
 * ahead apart from the workers, and the cold runs fit an overlap instead.
 *
 * Storage is made cold between runs by evicting just the dataset's files
 * from the page cache (posix_fadvise DONTNEED): it needs no root and does
 * not disturb other jobs on the node. Dropping the whole page cache
 * (/proc/sys/vm/drop_caches, root only) is available as well. A remote
 * dataset (a URL) is always cold: nothing of it stays on the node but
 * what a loader's own cache holds, and each run starts with an empty one.
 * For a remote dataset the fetch step also records the request latency
 * and the requests in flight (Little's law: items/s x latency), which the
 * model's storage rate is made of, on a second, steady-state raw epoch.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coordl.h"
#include "coordl_ckpt.h"
#include "synergy_env.h"
#include "profiler/measure.h"
#include "common/error.h"

/* A failure: the reason into msg, errno kept (EIO when none), -1. */
#define FAIL(...) syn_errbuf(msg, (size_t)msglen, errno ? errno : EIO, __VA_ARGS__)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
	struct timespec ts;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void syn__measure_opts_init(syn__measure_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->batch_size = 32;
	o->out_size = 224;
	o->mode = COORDL_MODE_TRAIN;
	o->layout = COORDL_LAYOUT_NCHW_F32;
	o->windows = 5;
	o->window_batches = 10;
	o->check_frac = 0.5;
	o->cold = SYN__COLD_AUTO;
}

static void progress(const syn__measure_opts_t *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void progress(const syn__measure_opts_t *o, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	if (!o->progress)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->progress(o->progress_arg, line);
}

/* A running loader plus the emulated GPU in front of it. */
struct run {
	coordl_loader_t *ld;
	uint64_t epoch;
	double gpu_rate, gpu_free;
	coordl_error_t err;
};

static coordl_loader_t *open_loader(const syn__measure_opts_t *o, int mode, int threads,
                                    double cache_bytes, const char *cache_name, coordl_error_t *err)
{
	coordl_config_t cfg;
	coordl_config_init(&cfg);
	cfg.path = o->dataset;
	cfg.batch_size = o->batch_size;
	cfg.out_size = o->out_size;
	cfg.layout = o->layout;
	cfg.mode = mode;
	cfg.threads = threads;
	cfg.cache_bytes = (int64_t)cache_bytes;
	cfg.seed = o->seed;
	/* Only the profiler's own named caches (unique to this process) are
	 * shared, so that a raw-mode loader can fill a cache that a decoding
	 * loader then uses; the profile never depends on another job's. */
	cfg.cache_name = cache_name;
	return coordl_create(&cfg, err);
}

static int start(struct run *r, const syn__measure_opts_t *o, int mode, int threads,
                 double cache_bytes, const char *cache_name, double gpu_rate)
{
	memset(r, 0, sizeof(*r));
	r->gpu_rate = gpu_rate;
	if (!(r->ld = open_loader(o, mode, threads, cache_bytes, cache_name, &r->err)))
		return -1;
	return coordl_set_epoch(r->ld, 0, &r->err);
}

/* The emulated GPU takes n samples: it is busy for n / gpu_rate seconds
 * after it finishes the previous batch, and the consumer waits for it, as a
 * training step waits for the device before asking for the next batch. */
static void gpu_take(struct run *r, int n)
{
	if (r->gpu_rate <= 0)
		return;
	double t = now();
	if (r->gpu_free > t)
		sleep_until(r->gpu_free);
	else
		r->gpu_free = t;
	r->gpu_free += n / r->gpu_rate;
}

/* Take one batch (crossing into the next epoch when one ends) and feed it
 * to the emulated GPU. Returns the samples consumed, or -1. */
static int consume(struct run *r)
{
	coordl_batch_t *b = NULL;
	int rc = coordl_next(r->ld, &b, &r->err);
	if (rc == 0) {
		if (coordl_set_epoch(r->ld, ++r->epoch, &r->err) < 0)
			return -1;
		rc = coordl_next(r->ld, &b, &r->err);
	}
	if (rc <= 0) {
		if (rc == 0)
			snprintf(r->err.text, sizeof(r->err.text), "the dataset has no samples");
		return -1;
	}
	int n = b->n;
	gpu_take(r, n);
	coordl_release(r->ld, b);
	return n;
}

/* Consume the rest of the current epoch; the loader's stats then describe
 * it. Returns 0 or -1. */
static int finish_epoch(struct run *r, coordl_stats_t *st)
{
	for (;;) {
		coordl_batch_t *b = NULL;
		int rc = coordl_next(r->ld, &b, &r->err);
		if (rc < 0)
			return -1;
		if (rc == 0)
			break;
		gpu_take(r, b->n);
		coordl_release(r->ld, b);
	}
	if (r->gpu_rate > 0 && r->gpu_free > now())
		sleep_until(r->gpu_free); /* the GPU finishes the last batch */
	if (coordl_get_stats(r->ld, st) < 0)
		return -1;
	return coordl_set_epoch(r->ld, ++r->epoch, &r->err);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void summarize(double *v, int n, syn__stat_t *s)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	s->min = v[0];
	s->max = v[n - 1];
	s->med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The windows timed() times (o->windows, kept to 1..64). */
static int timed_windows(const syn__measure_opts_t *o)
{
	return o->windows < 1 ? 1 : o->windows > 64 ? 64 : o->windows;
}

/* The batches timed() consumes: the settling ring, then every window. */
static long timed_batches(const struct run *r, const syn__measure_opts_t *o)
{
	return coordl_config(r->ld)->prefetch + (long)timed_windows(o) * o->window_batches;
}

/* Time `windows` windows of `batches` batches each, after letting the
 * prefetch ring settle at the current thread count. */
static int timed(struct run *r, const syn__measure_opts_t *o, syn__stat_t *out)
{
	double v[64];
	int windows = timed_windows(o);
	int settle = coordl_config(r->ld)->prefetch;
	for (int i = 0; i < settle; i++)
		if (consume(r) < 0)
			return -1;
	for (int w = 0; w < windows; w++) {
		double t0 = now();
		long samples = 0;
		for (int i = 0; i < o->window_batches; i++) {
			int n = consume(r);
			if (n < 0)
				return -1;
			samples += n;
		}
		v[w] = (double)samples / (now() - t0);
	}
	summarize(v, windows, out);
	return 0;
}

static int evict_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_F && S_ISREG(st->st_mode)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
		if (fd < 0)
			fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
	}
	return 0;
}

/* A dataset behind a URL: read through the loader's fetch engine. */
static int is_remote(const char *dataset)
{
	return strncmp(dataset, "http://", 7) == 0 || strncmp(dataset, "https://", 8) == 0 ||
	       strncmp(dataset, "s3://", 5) == 0;
}

int syn__make_cold(const syn__measure_opts_t *o, char *note, int notelen)
{
	int how = o->cold;
	struct stat st;

	if (is_remote(o->dataset)) {
		snprintf(note, (size_t)notelen, "remote storage: nothing to evict (loaders start with "
		         "empty caches)");
		return 0;
	}
	if (how == SYN__COLD_NONE) {
		snprintf(note, (size_t)notelen, "storage not made cold (--cold=none): page-cache rates");
		return 0;
	}
	if (how == SYN__COLD_AUTO)
		how = SYN__COLD_FADVISE;
	if (how == SYN__COLD_DROP) {
		int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && write(fd, "3\n", 2) == 2) {
			close(fd);
			snprintf(note, (size_t)notelen, "page cache dropped (drop_caches)");
			return 0;
		}
		if (fd >= 0)
			close(fd);
		snprintf(note, (size_t)notelen, "cannot drop the page cache (%s); evicted the dataset's "
		         "files instead", strerror(errno));
	} else {
		snprintf(note, (size_t)notelen, "dataset files evicted from the page cache (fadvise)");
	}
	/* Evict every file under the dataset directory, or beside a file
	 * list or shard index (the files it names live there). */
	char *copy = strdup(o->dataset);
	if (!copy)
		return -1;
	const char *root = (stat(o->dataset, &st) == 0 && S_ISDIR(st.st_mode)) ? copy : dirname(copy);
	int rc = nftw(root, evict_one, 16, FTW_PHYS);
	free(copy);
	return rc;
}

static int measure_cached(const syn__measure_opts_t *o, int threads, double cache_bytes, int epochs,
                          syn__stat_t *out, double *hit_rate, syn__point_detail_t *detail,
                          char *msg, int msglen);

/*
 * Remote storage in its steady state: a raw loader without a cache reads
 * one epoch (its fetch engine sizes its window) and is measured on the
 * next: storage bytes/s, the median request latency L, and the requests
 * it kept in flight, Q = items/s x L (Little's law). The cache-filling
 * epoch before cannot tell this: it includes the window's ramp.
 */
static int remote_storage(const syn__measure_opts_t *o, syn__measure_result_t *res, int threads,
                          char *msg, int msglen)
{
	struct run r = { 0 };
	coordl_stats_t st;
	int rv = -1;

	errno = 0;
	if (start(&r, o, COORDL_MODE_RAW, threads, 0, NULL, 0) < 0 || finish_epoch(&r, &st) < 0 ||
	    finish_epoch(&r, &st) < 0) {
		FAIL("remote storage run: %s", r.err.text);
		goto out;
	}
	if (st.epoch_wall > 0 && st.req_latency_p50 > 0) {
		res->storage_bps.med = res->storage_bps.min = res->storage_bps.max =
			(double)st.storage_bytes / st.epoch_wall;
		res->rates.fetch_latency = st.req_latency_p50;
		res->rates.fetch_concurrency = (double)st.cache_misses / st.epoch_wall * st.req_latency_p50;
		progress(o, "remote fetch: %.1f ms per request (median; p99 %.1f ms), %.1f requests in "
		         "flight (window %d), %llu retries", 1e3 * st.req_latency_p50,
		         1e3 * st.req_latency_p99, res->rates.fetch_concurrency, st.io_window,
		         (unsigned long long)st.retries);
	}
	rv = 0;
out:
	coordl_destroy(r.ld);
	return rv;
}

/* Shrink the timed windows of po so that, after the prefetch ring settles,
 * they fit in one epoch of ld (an epoch boundary would time a restart). */
static void fit_windows(syn__measure_opts_t *po, coordl_loader_t *ld)
{
	long nb = (long)coordl_num_batches(ld) - coordl_config(ld)->prefetch;
	if (nb < po->windows)
		po->windows = nb < 1 ? 1 : (int)nb;
	if ((long)po->windows * po->window_batches > nb)
		po->window_batches = (int)(nb / po->windows) < 1 ? 1 : (int)(nb / po->windows);
}

/*
 * The loader as a job on cold storage without a cache runs it: in `mode`
 * (decoding, or raw for storage alone), no emulated GPU, storage made cold
 * first, timed on a prefix of an epoch (the same steady-state windows as
 * the CPU sweep's, so that the two compare). st (may be NULL) gets the
 * loader's counters at the end.
 */
static int measure_cold(const syn__measure_opts_t *o, int mode, int threads, syn__stat_t *out,
                        coordl_stats_t *st, char *msg, int msglen)
{
	int rv = -1;
	struct run r = { 0 };
	char note[128];
	syn__measure_opts_t po = *o;

	errno = 0;
	if (start(&r, o, mode, threads, 0, NULL, 0) < 0) {
		FAIL("cold loader at %d threads: %s", threads, r.err.text);
		goto out;
	}
	fit_windows(&po, r.ld);
	if (syn__make_cold(o, note, sizeof(note)) < 0) {
		FAIL("making storage cold");
		goto out;
	}
	if (timed(&r, &po, out) < 0 || (st && coordl_get_stats(r.ld, st) < 0)) {
		FAIL("cold run at %d threads: %s", threads, r.err.text);
		goto out;
	}
	rv = 0;
out:
	coordl_destroy(r.ld);
	return rv;
}

/* The probe of the CPU search: one point on the running loader, with
 * every item cached. */
struct probe_ctx {
	struct run *r;
	const syn__measure_opts_t *o;
	double gpu;
	syn__measure_result_t *res;
};

static int probe_threads(int threads, void *arg, double *job)
{
	struct probe_ctx *pc = arg;
	syn__measure_result_t *res = pc->res;
	syn__stat_t *st;

	if (res->n_points >= SYN__MAX_POINTS)
		return -1;
	st = &res->point[res->n_points];
	/* Every point times the same items, those the warm-up (cpu_search)
	 * touched. */
	pc->r->epoch = 0;
	if (coordl_set_epoch(pc->r->ld, 0, &pc->r->err) < 0 ||
	    coordl_set_threads(pc->r->ld, threads, &pc->r->err) < 0 || timed(pc->r, pc->o, st) < 0)
		return -1;
	res->point_threads[res->n_points++] = threads;
	/* The job runs at the slower of its GPU and its loader. */
	*job = pc->gpu > 0 && pc->gpu < st->med ? pc->gpu : st->med;
	progress(pc->o, "cpu sweep: %d thread%s: %.0f samples/s (%.0f-%.0f)", threads,
	         threads > 1 ? "s" : "", st->med, st->min, st->max);
	return 0;
}

static int cpu_search(struct run *r, const syn__measure_opts_t *o, int max_threads, double gpu,
                      syn__measure_result_t *res, char *msg, int msglen)
{
	struct probe_ctx pc = { r, o, gpu, res };
	int order[SYN__MAX_POINTS];
	long n = timed_batches(r, o);

	/*
	 * Warm-up: the loader attached to a cache another loader filled, and
	 * the first read of an item through this loader's mapping of the
	 * cache faults its pages in (about 10 us per 4 KiB page on a VM: +0.1,
	 * +0.3, +0.6 ms per 43, 120, 240 KB item), which a job pays in its
	 * first epoch only. Each point then times these same items (the
	 * start of epoch 0), so no point pays them: before this, every point
	 * read its items for the first time, about 15% of a one-thread
	 * point's time on 172 KB items (by the fault cost above; run to run
	 * the rates here move by as much, BENCHMARKS.md).
	 */
	for (long i = 0; i < n; i++)
		if (consume(r) < 0)
			return FAIL("CPU sweep warm-up: %s", r->err.text);
	if (syn__cpu_search(max_threads, probe_threads, &pc, order, SYN__MAX_POINTS) < 0)
		return FAIL("CPU sweep after %d points: %s", res->n_points, r->err.text);
	return 0;
}

int syn__measure(const syn__measure_opts_t *o, syn__measure_result_t *res, char *msg, int msglen)
{
	int rv = -1;
	struct run r = { 0 }, raw = { 0 };
	char name_full[64];
	coordl_error_t cerr;
	coordl_stats_t st;
	double t_all = now(), t;

	memset(res, 0, sizeof(*res));
	errno = 0;
	int max_threads = o->max_threads > 0 ? o->max_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (max_threads < 1)
		max_threads = 1;
	if (max_threads > 1024)
		max_threads = 1024;

	/* The dataset's size decides the cache sizes below. */
	coordl_loader_t *probe = open_loader(o, COORDL_MODE_RAW, 1, 0, NULL, &cerr);
	if (!probe) {
		FAIL("%s", cerr.text);
		goto out;
	}
	res->rates.dataset_bytes = coordl_dataset_bytes(probe);
	res->rates.dataset_items = coordl_dataset_items(probe);
	coordl_destroy(probe);
	double d = (double)res->rates.dataset_bytes;
	/* Room for the whole dataset: the cache's own bookkeeping is small
	 * next to the items, but give it some slack. */
	double full = d * 1.02 + 4 * 1024 * 1024;
	progress(o, "dataset: %llu items, %.1f MiB", (unsigned long long)res->rates.dataset_items,
	         d / 1048576);

	/* 1. GPU ingestion: synthetic batches (no fetch, no decode). */
	t = now();
	if (o->gpu_rate > 0) {
		if (start(&r, o, COORDL_MODE_SYNTHETIC, max_threads, 0, NULL, o->gpu_rate) < 0 ||
		    timed(&r, o, &res->gpu) < 0) {
			FAIL("GPU ingestion run: %s", r.err.text);
			goto out;
		}
		coordl_destroy(r.ld);
		r.ld = NULL;
		res->rates.gpu = res->gpu.med;
		progress(o, "gpu ingestion: %.0f samples/s (%.0f-%.0f)", res->gpu.med, res->gpu.min,
		         res->gpu.max);
	} else {
		progress(o, "gpu ingestion: unlimited (no --gpu-rate)");
	}
	res->seconds[0] = now() - t;

	/* 2. Fetch. Local storage: a raw run (no decode, no cache) from cold
	 * storage gives storage's own rate. Then, for both kinds, a raw epoch
	 * fills a named cache that holds everything (from cold storage: for a
	 * remote dataset this is its storage rate), and a second epoch is
	 * served from that cache. The raw loader stays attached so the cache
	 * outlives it until the decoding loader has attached too. */
	t = now();
	res->cold = o->cold;
	res->local = !is_remote(o->dataset);
	snprintf(name_full, sizeof(name_full), "synprof-%ld-full", (long)getpid());
	if (res->local) {
		coordl_stats_t rs;
		if (measure_cold(o, COORDL_MODE_RAW, max_threads, &res->storage_bps, &rs, msg, msglen) < 0)
			goto out;
		/* Items/s to bytes/s at the dataset's mean item size. */
		double item = d / (double)res->rates.dataset_items;
		res->storage_bps.med *= item;
		res->storage_bps.min *= item;
		res->storage_bps.max *= item;
		progress(o, "storage, raw, cold, uncached: %d thread%s: %.1f MiB/s (%.1f-%.1f), "
		         "%.3f ms per item per worker", max_threads, max_threads > 1 ? "s" : "",
		         res->storage_bps.med / 1048576, res->storage_bps.min / 1048576,
		         res->storage_bps.max / 1048576,
		         rs.cache_misses ? 1e3 * rs.fetch_time / (double)rs.cache_misses : 0.0);
	}
	if (syn__make_cold(o, res->cold_note, sizeof(res->cold_note)) < 0) {
		FAIL("making storage cold");
		goto out;
	}
	if (start(&raw, o, COORDL_MODE_RAW, max_threads, full, name_full, 0) < 0 ||
	    finish_epoch(&raw, &st) < 0) {
		FAIL("storage fetch run: %s", raw.err.text);
		goto out;
	}
	if (!res->local)
		res->storage_bps.med = res->storage_bps.min = res->storage_bps.max =
			st.epoch_wall > 0 ? (double)st.storage_bytes / st.epoch_wall : 0;
	if (st.requests > 0 && remote_storage(o, res, max_threads, msg, msglen) < 0)
		goto out;
	if (finish_epoch(&raw, &st) < 0) {
		FAIL("cache fetch run: %s", raw.err.text);
		goto out;
	}
	res->memory_bps.med = res->memory_bps.min = res->memory_bps.max =
		st.epoch_wall > 0 ? d / st.epoch_wall : 0;
	res->rates.fetch_storage_bps = res->storage_bps.med;
	res->rates.fetch_memory_bps = res->memory_bps.med;
	progress(o, "fetch: storage %.1f MiB/s, cache %.1f MiB/s (%s)", res->storage_bps.med / 1048576,
	         res->memory_bps.med / 1048576, res->cold_note);
	/* Cold decoding runs at the most threads and at one (what a miss
	 * costs depends on how busy the cores are). */
	res->cold_threads[res->n_cold++] = max_threads;
	if (max_threads > 1)
		res->cold_threads[res->n_cold++] = 1;
	for (int i = 0; i < res->n_cold; i++) {
		coordl_stats_t cs;
		if (measure_cold(o, o->mode, res->cold_threads[i], &res->cold_rate[i], &cs, msg,
		                 msglen) < 0)
			goto out;
		double items = (double)(cs.cache_hits + cs.cache_misses);
		progress(o, "cold, uncached: %d thread%s: %.0f samples/s (%.0f-%.0f); per item: prep "
		         "%.3f ms, fetch %.3f ms", res->cold_threads[i], res->cold_threads[i] > 1 ? "s" : "",
		         res->cold_rate[i].med, res->cold_rate[i].min, res->cold_rate[i].max,
		         items > 0 ? 1e3 * cs.prep_time / items : 0.0,
		         items > 0 ? 1e3 * cs.fetch_time / items : 0.0);
	}
	res->seconds[1] = now() - t;

	/* 3. Prep with all data in memory: the decoding loader attaches to
	 * the cache the raw loader filled, so no warm-up epoch is needed. */
	t = now();
	if (start(&r, o, o->mode, max_threads, full, name_full, 0) < 0) {
		FAIL("prep loader: %s", r.err.text);
		goto out;
	}
	coordl_destroy(raw.ld);
	raw.ld = NULL;
	if (coordl_get_stats(r.ld, &st) == 0)
		progress(o, "cache filled: %.1f MiB of %.1f MiB", (double)st.cache_bytes_used / 1048576,
		         d / 1048576);
	res->seconds[2] = now() - t;

	/* 4. The CPU axis, in this same launch. */
	t = now();
	if (cpu_search(&r, o, max_threads, res->rates.gpu, res, msg, msglen) < 0)
		goto out;
	coordl_destroy(r.ld);
	r.ld = NULL;
	/* The model wants the points in increasing thread order. */
	for (int i = 0; i < res->n_points; i++) {
		double c = res->point_threads[i], v = res->point[i].med;
		int k = res->rates.n_prep;
		while (k > 0 && res->rates.prep_cpus[k - 1] > c) {
			res->rates.prep_cpus[k] = res->rates.prep_cpus[k - 1];
			res->rates.prep_rate[k] = res->rates.prep_rate[k - 1];
			k--;
		}
		res->rates.prep_cpus[k] = c;
		res->rates.prep_rate[k] = v;
		res->rates.n_prep++;
	}
	/* Local storage: the worker time a miss adds at each cold run's
	 * thread count, against the prep curve there. Remote storage: the
	 * overlap each cold run fits, against the prep curve and the uncached
	 * fetch rate the model would use at that thread count. */
	for (int i = 0; i < res->n_cold; i++) {
		double c = res->cold_threads[i];
		if (res->local) {
			double tm = syn__model_fit_miss(c, syn__model_prep(&res->rates, c),
			                                res->cold_rate[i].med);
			res->cold_miss[i] = tm;
			if (syn__model_add_miss(&res->rates, c, tm) < 0) {
				FAIL("recording the miss time at %d threads", res->cold_threads[i]);
				goto out;
			}
			progress(o, "a miss at %d thread%s: +%.3f ms per item per worker",
			         res->cold_threads[i], res->cold_threads[i] > 1 ? "s" : "", 1e3 * tm);
			continue;
		}
		double a = syn__model_fit_overlap(syn__model_prep(&res->rates, c),
		                                  syn__model_fetch(&res->rates, 0), res->cold_rate[i].med);
		res->cold_overlap[i] = a;
		if (syn__model_add_overlap(&res->rates, c, a) < 0) {
			FAIL("recording the overlap at %d threads", res->cold_threads[i]);
			goto out;
		}
		progress(o, "overlap at %d thread%s: %.2f", res->cold_threads[i],
		         res->cold_threads[i] > 1 ? "s" : "", a);
	}
	res->seconds[3] = now() - t;

	/* 5. Check the memory axis at one real, partial cache size, on a
	 * prefix of an epoch: the order is random, so any prefix sees the
	 * cache's hit rate. */
	t = now();
	if (o->check_frac > 0) {
		double hit;
		res->check_cache_bytes = floor(o->check_frac * d);
		if (measure_cached(o, max_threads, res->check_cache_bytes, 0, &res->check_measured, &hit,
		                   NULL, msg, msglen) < 0)
			goto out;
		res->check_hit_rate = hit;
		res->check_predicted = syn__model_tput(&res->rates, max_threads, res->check_cache_bytes);
		progress(o, "memory check: cache %.0f%% of the dataset (hit rate %.2f): measured %.0f, "
		         "model %.0f samples/s", 100 * o->check_frac, hit, res->check_measured.med,
		         res->check_predicted);
	}
	res->seconds[4] = now() - t;
	rv = 0;
out:
	coordl_destroy(r.ld);
	coordl_destroy(raw.ld);
	res->wall = now() - t_all;
	return rv;
}

/*
 * Run a decoding loader at (threads, cache_bytes) with the emulated GPU,
 * its cache pre-filled by a raw-mode loader (MinIO keeps whatever comes
 * first, so the fill is what a first epoch would leave), storage made cold
 * before each measurement. epochs > 0: time that many whole epochs;
 * epochs == 0: time windows on a prefix of one epoch.
 */
static double cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int measure_cached(const syn__measure_opts_t *o, int threads, double cache_bytes, int epochs,
                          syn__stat_t *out, double *hit_rate, syn__point_detail_t *detail,
                          char *msg, int msglen)
{
	int rv = -1;
	struct run r = { 0 }, raw = { 0 };
	coordl_stats_t st;
	double v[64];
	char note[128], name[64];
	uint64_t hits = 0, samples = 0;
	static int seq;

	errno = 0;
	if (epochs < 0 || epochs > 64) {
		errno = EINVAL;
		return FAIL("epochs %d: expected 1..64", epochs);
	}
	snprintf(name, sizeof(name), "synprof-%ld-%d", (long)getpid(), ++seq);
	if (cache_bytes > 0) {
		if (start(&raw, o, COORDL_MODE_RAW, threads, cache_bytes, name, 0) < 0 ||
		    finish_epoch(&raw, &st) < 0) {
			FAIL("filling a cache of %.0f bytes: %s", cache_bytes, raw.err.text);
			goto out;
		}
	}
	/* A group member: only this loader joins (the raw one filled its
	 * own cache, whose workers sit idle now). */
	if (o->group && (setenv(SYNERGY_ENV_GROUP, o->group, 1) < 0 ||
	                 setenv(SYNERGY_ENV_GROUP_DIR, o->group_dir, 1) < 0)) {
		FAIL("setenv: %s", strerror(errno));
		goto out;
	}
	int started = start(&r, o, o->mode, threads, cache_bytes, cache_bytes > 0 ? name : NULL,
	                    o->gpu_rate);
	if (o->group) {
		unsetenv(SYNERGY_ENV_GROUP);
		unsetenv(SYNERGY_ENV_GROUP_DIR);
	}
	if (started < 0) {
		FAIL("loader at %d threads, cache %.0f bytes: %s", threads, cache_bytes, r.err.text);
		goto out;
	}
	if (o->group && coordl_group_note(r.ld)) {
		FAIL("loader at %d threads: not in group %s: %s", threads, o->group,
		     coordl_group_note(r.ld));
		goto out;
	}
	coordl_destroy(raw.ld);
	raw.ld = NULL;
	/* Measure from epoch 1: epoch 0's order is the one the fill used, so
	 * its first batches would all be hits whatever the cache size. */
	r.epoch = 1;
	if (coordl_set_epoch(r.ld, r.epoch, &r.err) < 0) {
		FAIL("loader at %d threads: %s", threads, r.err.text);
		goto out;
	}
	if (epochs == 0) {
		/* Fit the windows into one epoch so the hit rate is the cache's. */
		syn__measure_opts_t po = *o;
		fit_windows(&po, r.ld);
		if (syn__make_cold(o, note, sizeof(note)) < 0) {
			FAIL("making storage cold");
			goto out;
		}
		r.gpu_free = now();
		if (timed(&r, &po, out) < 0 || coordl_get_stats(r.ld, &st) < 0) {
			FAIL("measuring at %d threads, cache %.0f bytes: %s", threads, cache_bytes, r.err.text);
			goto out;
		}
		hits = st.cache_hits;
		samples = st.cache_hits + st.cache_misses;
	}
	/* A job's own first epoch fills its cache and maps every cached page
	 * into the job; here the fill came from another loader, so the first
	 * epoch of this one pays a page fault per 4 KiB of every hit instead
	 * (about 10 us each on a VM: 0.6 ms per 240 KB item). One unmeasured
	 * epoch brings the loader to the steady state the model predicts. */
	if (cache_bytes > 0 && epochs > 0 && finish_epoch(&r, &st) < 0) {
		FAIL("warm-up epoch at %d threads: %s", threads, r.err.text);
		goto out;
	}
	coordl_stats_t st0;
	if (coordl_get_stats(r.ld, &st0) < 0)
		memset(&st0, 0, sizeof(st0));
	for (int e = 0; e < epochs; e++) {
		if (syn__make_cold(o, note, sizeof(note)) < 0) {
			FAIL("making storage cold");
			goto out;
		}
		double t0 = now(), c0 = cpu_seconds();
		r.gpu_free = t0;
		if (finish_epoch(&r, &st) < 0) {
			FAIL("measured epoch at %d threads: %s", threads, r.err.text);
			goto out;
		}
		double wall = now() - t0;
		v[e] = (double)st.samples / wall;
		hits += st.cache_hits;
		samples += st.cache_hits + st.cache_misses;
		if (detail) {
			detail->cpu_time += cpu_seconds() - c0;
			detail->wall += wall;
			detail->samples += (double)st.samples;
			detail->items += (double)(st.cache_hits + st.cache_misses);
			detail->misses += (double)st.cache_misses;
			detail->prep_time += st.prep_time;
			detail->fetch_time += st.fetch_time;
			detail->prepared = st.batches_prepared - st0.batches_prepared;
			detail->received = st.batches_received - st0.batches_received;
			/* The most it saw live: a member whose last epoch ends
			 * after the others left sees itself alone by then. */
			if (st.group_members > detail->group_members)
				detail->group_members = st.group_members;
		}
	}
	if (epochs > 0)
		summarize(v, epochs, out);
	if (hit_rate)
		*hit_rate = samples ? (double)hits / (double)samples : 0;
	rv = 0;
out:
	coordl_destroy(r.ld);
	coordl_destroy(raw.ld);
	return rv;
}

int syn__measure_point(const syn__measure_opts_t *o, int threads, double cache_bytes, int epochs,
                       syn__stat_t *out, double *hit_rate, syn__point_detail_t *detail, char *msg,
                       int msglen)
{
	if (epochs < 1) {
		errno = EINVAL;
		return syn_errbuf(msg, (size_t)msglen, EINVAL, "epochs %d: expected 1..64", epochs);
	}
	if (detail)
		memset(detail, 0, sizeof(*detail));
	return measure_cached(o, threads, cache_bytes, epochs, out, hit_rate, detail, msg, msglen);
}

/* What a member process sends back through its pipe. */
struct member_report {
	int rc, err;
	syn__stat_t rate;
	double hit_rate;
	syn__point_detail_t detail;
	char msg[256];
};

static void member_run(const syn__measure_opts_t *o, int threads, double cache_bytes, int epochs,
                       int fd)
{
	struct member_report rep;
	const char *p = (const char *)&rep;
	size_t off = 0;

	memset(&rep, 0, sizeof(rep));
	errno = 0;
	rep.rc = measure_cached(o, threads, cache_bytes, epochs, &rep.rate, &rep.hit_rate, &rep.detail,
	                        rep.msg, (int)sizeof(rep.msg));
	rep.err = errno;
	while (off < sizeof(rep)) {
		ssize_t n = write(fd, p + off, sizeof(rep) - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	_exit(rep.rc == 0 ? 0 : 1);
}

static int read_report(int fd, struct member_report *rep)
{
	char *p = (char *)rep;
	size_t off = 0;

	while (off < sizeof(*rep)) {
		ssize_t n = read(fd, p + off, sizeof(*rep) - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* Remove what the group left in its private directory, then the directory. */
static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

int syn__measure_group(const syn__measure_opts_t *o, int members, int threads, double cache_bytes,
                       int epochs, syn__group_point_t *out, char *msg, int msglen)
{
	syn__measure_opts_t mo = *o;
	char dir[4096], name[64];
	pid_t pid[COORDL_GROUP_MAX_MEMBERS];
	int fd[COORDL_GROUP_MAX_MEMBERS], n = 0, rv = -1, i;
	const char *tmp = getenv("TMPDIR");
	double t0;

	errno = 0;
	if (members < 1 || members > COORDL_GROUP_MAX_MEMBERS || threads < members || epochs < 1 ||
	    epochs > 64) {
		errno = EINVAL;
		return FAIL("group of %d members at %d threads, %d epochs: expected 1..%d members, at "
		            "least one thread each, 1..64 epochs", members, threads, epochs,
		            COORDL_GROUP_MAX_MEMBERS);
	}
	memset(out, 0, sizeof(*out));
	/* The staging area lives in the group's directory: /dev/shm, else
	 * TMPDIR (the loader's own default places). */
	snprintf(dir, sizeof(dir), "/dev/shm/synprof-grp-XXXXXX");
	if (!mkdtemp(dir)) {
		snprintf(dir, sizeof(dir), "%s/synprof-grp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			return FAIL("group directory %s: %s", dir, strerror(errno));
	}
	mo.group_dir = dir;
	snprintf(name, sizeof(name), "synprof-%ld", (long)getpid());
	mo.group = name;
	mo.progress = NULL; /* members run at once: their lines would interleave */
	out->members = members;
	fflush(NULL);
	t0 = now();
	for (n = 0; n < members; n++) {
		int p[2];

		out->threads[n] = threads / members + (n < threads % members);
		if (pipe(p) < 0) {
			FAIL("pipe: %s", strerror(errno));
			goto out;
		}
		pid[n] = fork();
		if (pid[n] < 0) {
			FAIL("fork: %s", strerror(errno));
			close(p[0]);
			close(p[1]);
			goto out;
		}
		if (pid[n] == 0) {
			close(p[0]);
			for (i = 0; i < n; i++)
				close(fd[i]);
			member_run(&mo, out->threads[n], cache_bytes, epochs, p[1]);
		}
		close(p[1]);
		fd[n] = p[0];
	}
	rv = 0;
out:
	for (i = 0; i < n; i++) {
		struct member_report rep;
		struct rusage ru;
		int status = 0, got = read_report(fd[i], &rep);

		close(fd[i]);
		while (wait4(pid[i], &status, 0, &ru) < 0 && errno == EINTR)
			;
		out->cpu_time += (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
		if (rv < 0)
			continue;
		if (got < 0 || rep.rc < 0) {
			errno = got < 0 ? EIO : rep.err ? rep.err : EIO;
			if (got < 0)
				FAIL("member %d of %d (pid %ld) ended without a report (status 0x%x)", i + 1,
				     members, (long)pid[i], status);
			else
				FAIL("member %d of %d: %s", i + 1, members, rep.msg);
			rv = -1;
			continue;
		}
		out->rate[i] = rep.rate;
		out->hit_rate[i] = rep.hit_rate;
		out->detail[i] = rep.detail;
	}
	out->wall = now() - t0;
	nftw(mo.group_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	return rv;
}

int syn__measure_ckpt(const syn__measure_opts_t *o, int threads, uint64_t bytes, const char *dir,
                      int reps, syn__ckpt_cost_t *out, char *msg, int msglen)
{
	double snap[16], pers[16], over[16], iter[16];
	char sub[4096];
	coordl_ckpt_config_t cfg;
	coordl_ckpt_t *ck = NULL;
	coordl_error_t err = { "" };
	struct run r = { 0 };
	unsigned char *src = MAP_FAILED;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	if (reps < 1 || reps > 16 || bytes == 0 || (size_t)bytes != bytes) {
		errno = EINVAL;
		return FAIL("checkpoint measurement: %d repetitions (1..16) of %llu bytes", reps,
		            (unsigned long long)bytes);
	}
	snprintf(sub, sizeof(sub), "%s/synergy-profile-ckpt-XXXXXX", dir);
	if (!mkdtemp(sub))
		return FAIL("checkpoint directory %s: %s", dir, strerror(errno));
	coordl_ckpt_config_init(&cfg);
	cfg.dir = sub;
	cfg.keep = 1;
	/* The state to copy, touched: a model in memory already. */
	src = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED) {
		FAIL("checkpoint state of %llu bytes: %s", (unsigned long long)bytes, strerror(errno));
		goto out;
	}
	for (uint64_t i = 0; i < bytes; i += 4096)
		src[i] = (unsigned char)(i >> 12);
	if (!(ck = coordl_ckpt_open(&cfg, &err)) ||
	    coordl_ckpt_reserve(ck, coordl_ckpt_section_space(bytes), &err) < 0) {
		FAIL("%s", err.text);
		goto out;
	}
	if (start(&r, o, o->mode, threads, 0, NULL, o->gpu_rate) < 0) {
		FAIL("loader at %d threads: %s", threads, r.err.text);
		goto out;
	}
	progress(o, "checkpoints: %d x %.0f MiB to %s", reps, (double)bytes / 1048576, dir);
	/* Settle the pipeline. */
	for (int i = 0; i < coordl_config(r.ld)->prefetch + o->window_batches; i++)
		if (consume(&r) < 0)
			goto loader_failed;
	for (int k = 0; k < reps; k++) {
		coordl_ckpt_stats_t st;
		coordl_ckpt_snap_t *s;
		void *p;
		double t0 = now(), t_ck, t_base;
		int n = 0;

		if (!(s = coordl_ckpt_begin(ck, (uint64_t)k, coordl_ckpt_section_space(bytes), &err)) ||
		    !(p = coordl_ckpt_add(s, "state", bytes, &err)) ||
		    coordl_ckpt_copy_later(s, p, src, bytes, &err) < 0 || coordl_ckpt_commit(s, &err) < 0) {
			coordl_ckpt_abort(s);
			FAIL("checkpoint: %s", err.text);
			goto out;
		}
		/* Batches go on while it is copied and written. */
		do {
			if (consume(&r) < 0)
				goto loader_failed;
			n++;
			coordl_ckpt_get_stats(ck, &st);
		} while (st.in_flight || n < 3);
		t_ck = now() - t0;
		if (st.failed) {
			errno = st.last_errno;
			FAIL("checkpoint: %s", st.last_error);
			goto out;
		}
		t0 = now();
		for (int i = 0; i < n; i++)
			if (consume(&r) < 0)
				goto loader_failed;
		t_base = now() - t0;
		snap[k] = st.last_copy_s;
		pers[k] = st.last_persist_s;
		over[k] = t_ck > t_base ? t_ck - t_base : 0;
		iter[k] = t_base / n;
		progress(o, "checkpoint %d: copy %.3f s, write %.3f s, %d batches %.3f s (%.3f s "
		         "without)", k + 1, snap[k], pers[k], n, t_ck, t_base);
	}
	out->state_bytes = bytes;
	out->threads = threads;
	out->reps = reps;
	summarize(snap, reps, &out->snapshot_s);
	summarize(pers, reps, &out->persist_s);
	summarize(over, reps, &out->overhead_s);
	summarize(iter, reps, &out->iter_s);
	rv = 0;
	goto out;
loader_failed:
	FAIL("loader: %s", r.err.text);
out:
	coordl_destroy(r.ld);
	coordl_ckpt_close(ck);
	if (src != MAP_FAILED)
		munmap(src, (size_t)bytes);
	nftw(sub, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	return rv;
}
