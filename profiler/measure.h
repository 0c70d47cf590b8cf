/*
 * measure.h: DS-Analyzer measurements with the embedded coordl loader,
 * internal to the profiler.
 *
 * syn__measure() runs the whole protocol in one process: the GPU ingestion
 * rate (synthetic batches into an emulated consumer), the fetch rates from
 * cold storage and from the loader's cache (raw mode, no decode), cold
 * uncached decoding runs at one thread and at the most threads (how much
 * of the fetch hides under decoding: the model's overlap), the CPU
 * axis with all data cached (Synergy's optimistic search, one loader whose
 * worker count changes live), and one check of the memory axis at a real,
 * partial cache size. syn__measure_point() measures one (threads, cache)
 * point directly, the way a training job would run there: the benchmark
 * compares it with the model's prediction.
 */
#ifndef SYN_PROFILER_MEASURE_H
#define SYN_PROFILER_MEASURE_H

#include <stdint.h>

#include "model.h"

enum syn__cold {
	SYN__COLD_AUTO = 0, /* drop the page cache if root, else evict the dataset's pages */
	SYN__COLD_FADVISE,  /* evict the dataset's files with posix_fadvise(DONTNEED) */
	SYN__COLD_DROP,     /* write 3 to /proc/sys/vm/drop_caches (root) */
	SYN__COLD_NONE,     /* do not try: storage rates are page-cache rates */
};

typedef struct syn__measure_opts {
	const char *dataset;   /* ImageFolder directory, file list or shard index */
	int batch_size;        /* samples per batch */
	int out_size;          /* output side */
	int mode;              /* COORDL_MODE_TRAIN or COORDL_MODE_EVAL */
	int layout;            /* enum coordl_layout */
	uint64_t seed;
	double gpu_rate;       /* emulated GPU, samples/s; 0 = unlimited */
	int max_threads;       /* top of the CPU search; 0 = online cores */
	int windows;           /* timed windows per point (spread) */
	int window_batches;    /* batches per window */
	double check_frac;     /* cache fraction of the memory-axis check; 0 = skip */
	int cold;              /* enum syn__cold */
	/* Progress lines ("step: detail"); NULL = silent. */
	void (*progress)(void *arg, const char *msg);
	void *progress_arg;
} syn__measure_opts_t;

/* Defaults: batch 32, out 224, train, 5 windows of 10 batches, check at a
 * half-sized cache, auto cold. */
void syn__measure_opts_init(syn__measure_opts_t *o);

/* One measured rate with its spread over the windows. */
typedef struct syn__stat {
	double med, min, max; /* samples/s (or bytes/s) */
} syn__stat_t;

typedef struct syn__measure_result {
	syn__rates_t rates;            /* what the model needs */
	syn__stat_t gpu;               /* measured GPU ingestion (0 if unlimited) */
	syn__stat_t storage_bps, memory_bps;
	int n_points;                  /* CPU search points, in the order measured */
	int point_threads[SYN__MAX_POINTS];
	syn__stat_t point[SYN__MAX_POINTS];
	int n_cold;                    /* cold, uncached decoding runs (overlap fit) */
	int cold_threads[2];
	syn__stat_t cold_rate[2];      /* samples/s, no emulated GPU */
	double cold_overlap[2];        /* the overlap each run fits */
	double check_cache_bytes;      /* memory-axis check (0 if skipped) */
	double check_hit_rate;         /* hits / samples the loader counted */
	syn__stat_t check_measured;
	double check_predicted;
	int cold;                      /* how storage was made cold (enum syn__cold) */
	char cold_note[128];           /* what happened when making it cold */
	double seconds[5];             /* wall time per step: gpu, fetch (cold runs included),
	                                  warm, sweep, check */
	double wall;                   /* the whole protocol */
} syn__measure_result_t;

/* Run the protocol. Returns 0, or -1 with errno and msg naming the step. */
int syn__measure(const syn__measure_opts_t *o, syn__measure_result_t *r, char *msg, int msglen);

/*
 * Measure throughput directly at (threads, cache_bytes) with the emulated
 * GPU: warm the cache for one epoch, make storage cold, then time `epochs`
 * epochs. Returns 0 with *out (samples/s, spread over epochs), or -1.
 */
int syn__measure_point(const syn__measure_opts_t *o, int threads, double cache_bytes, int epochs,
                       syn__stat_t *out, double *hit_rate, char *msg, int msglen);

/* Evict the dataset's pages from the page cache as o->cold says; note
 * (size notelen) says what was done. Returns 0 or -1. */
int syn__make_cold(const syn__measure_opts_t *o, char *note, int notelen);

#endif
