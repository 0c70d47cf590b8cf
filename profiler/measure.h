/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * measure.h: DS-Analyzer measurements with the embedded coordl loader,
 * internal to the profiler.
 *
 * syn__measure() runs the whole protocol in one process: the GPU ingestion
 * rate (synthetic batches into an emulated consumer), the fetch rates from
 * cold storage (raw mode, no decode, no cache) and from the loader's cache,
 * cold uncached decoding runs at one thread and at the most threads, the
 * CPU axis with all data cached (Synergy's optimistic search, one loader
 * whose worker count changes live), and one check of the memory axis at a
 * real, partial cache size. The cold runs against the cached ones at the
 * same thread count give what a miss costs a worker (local storage) or
 * how much of the fetch hides under decoding (remote storage): model.h. syn__measure_point() measures one (threads, cache)
 * point directly, the way a training job would run there: the benchmark
 * compares it with the model's prediction.
 */
#ifndef SYN_PROFILER_MEASURE_H
#define SYN_PROFILER_MEASURE_H

#include <stdint.h>

#include "coordl.h"
#include "profiler/model.h"

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
	/* Coordinated prep (syn__measure_group): the group and its directory
	 * the measured loader joins (SYNERGY_GROUP, SYNERGY_GROUP_DIR); NULL:
	 * none. Only the decoding loader of a point joins, never the raw one
	 * that fills its cache. */
	const char *group, *group_dir;
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
	int n_cold;                    /* cold, uncached decoding runs */
	int cold_threads[2];
	syn__stat_t cold_rate[2];      /* samples/s, no emulated GPU */
	double cold_overlap[2];        /* remote: the overlap each run fits */
	double cold_miss[2];           /* local: the worker seconds a miss adds (t_m) */
	int local;                     /* 1: local storage (the serial worker model) */
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

/* Where the time of a directly measured point went, from the loader's
 * counters and the process's CPU time, summed over the measured epochs. */
typedef struct syn__point_detail {
	double samples;            /* delivered */
	double items, misses;      /* items the workers processed; those read from storage */
	double wall;               /* seconds */
	double prep_time;          /* worker seconds decoding, summed over workers */
	double fetch_time;         /* worker seconds reading from storage or the cache */
	double cpu_time;           /* CPU seconds of the whole process (user + system) */
	double prepared, received; /* batches its workers prepared; batches other members of
	                              its group prepared for it (coordl_stats_t) */
	int group_members;         /* most members of its group live at an epoch's end
	                              (0: no group) */
} syn__point_detail_t;

/*
 * Measure throughput directly at (threads, cache_bytes) with the emulated
 * GPU: fill the cache as a first epoch would, then time `epochs` whole
 * epochs, storage made cold before each. Returns 0 with *out (samples/s,
 * spread over epochs) and, when detail is not NULL, where the time went;
 * or -1.
 */
int syn__measure_point(const syn__measure_opts_t *o, int threads, double cache_bytes, int epochs,
                       syn__stat_t *out, double *hit_rate, syn__point_detail_t *detail, char *msg,
                       int msglen);

/* A coordinated-prep group measured directly (syn__measure_group). */
typedef struct syn__group_point {
	int members;
	int threads[COORDL_GROUP_MAX_MEMBERS];    /* each member's workers */
	syn__stat_t rate[COORDL_GROUP_MAX_MEMBERS]; /* each member's samples/s */
	double hit_rate[COORDL_GROUP_MAX_MEMBERS];
	syn__point_detail_t detail[COORDL_GROUP_MAX_MEMBERS];
	double cpu_time;   /* CPU seconds of all members' processes, whole runs */
	double wall;       /* seconds from the first start to the last end */
} syn__group_point_t;

/*
 * Measure a group of `members` loaders, one process each, that prepare
 * every batch once for all of them (coordinated prep): `threads` workers
 * in all, split evenly (the first ones get the remainder; at least one
 * each), each member as syn__measure_point() at its share and cache_bytes
 * of its own cache, every member in one group in a private directory that
 * is removed afterwards. Returns 0 with *out, or -1 with errno and msg
 * (a member that failed is named).
 */
int syn__measure_group(const syn__measure_opts_t *o, int members, int threads, double cache_bytes,
                       int epochs, syn__group_point_t *out, char *msg, int msglen);

/* What one CheckFreq checkpoint of a job costs (synergy-profile run
 * --ckpt-bytes), each value over the repetitions. */
typedef struct syn__ckpt_cost {
	uint64_t state_bytes;
	int threads;           /* loader workers while measuring */
	int reps;
	syn__stat_t iter_s;    /* a batch through the emulated GPU, no checkpoint */
	syn__stat_t snapshot_s;/* copying the state into the snapshot buffer */
	syn__stat_t persist_s; /* writing it: temporary file, fsync, rename */
	syn__stat_t overhead_s;/* what it added to the iterations it overlapped */
} syn__ckpt_cost_t;

/*
 * Measure CheckFreq checkpoints of `bytes` of state written to a private
 * directory under dir (removed afterwards) with libcoordl's engine, while
 * the loader (`threads` workers, no cache) feeds the emulated GPU: each
 * repetition commits a snapshot (the copy runs on the library's thread),
 * consumes batches until it is on storage, then times as many batches
 * without one; the difference is what a checkpoint adds. Returns 0 with
 * *out, or -1 with errno and msg.
 */
int syn__measure_ckpt(const syn__measure_opts_t *o, int threads, uint64_t bytes, const char *dir,
                      int reps, syn__ckpt_cost_t *out, char *msg, int msglen);

/* Evict the dataset's pages from the page cache as o->cold says; note
 * (size notelen) says what was done. Returns 0 or -1. */
int syn__make_cold(const syn__measure_opts_t *o, char *note, int notelen);

#endif
