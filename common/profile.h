/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/profile.h: the data-stall sensitivity profile, the one schema that
 * the profiler writes, the store keeps, and the policy, simulator and plugins
 * read; its checks and its evaluation (common/profile.c). The JSON form and
 * the store are common/store.h.
 *
 * A profile gives a job's training throughput PER GPU over a grid of CPU
 * cores per GPU x cache memory per GPU, normalised to 1.0 at a stated
 * GPU-proportional share (prop_cpus, prop_mem_gb). Between grid points the
 * value is interpolated bilinearly; outside the grid it is clamped to the
 * nearest edge (more resources than profiled never predict more throughput
 * than the largest profiled point).
 *
 * On disk (JSON, written and read by the profile store, see common/store.h):
 *   {
 *     "schema": 1,
 *     "key": "resnet18",                 -- [A-Za-z0-9_.-]{1,64}
 *     "model": "free text",
 *     "cpus": [1, 2, 3, ...],            -- strictly increasing, > 0
 *     "mem_gb": [0, 20.8, 62.5, ...],    -- strictly increasing, >= 0
 *     "tput": [[...], ...],              -- n_cpu rows of n_mem values, >= 0
 *     "prop_cpus": 3, "prop_mem_gb": 62.5,
 *     "base_tput": 812.5,                -- images/s per GPU at the proportional share
 *     "rates": { "gpu": ..., "prep_per_core": ..., "fetch_storage_bps": ...,
 *                "fetch_memory_bps": ...,
 *                "fetch_overlap": 0.6,     -- optional, 0..1; absent = 0
 *                "fetch_miss_s": 0.0004,   -- optional: local storage, worker seconds
 *                                             a miss adds to an item; absent = 0
 *                "fetch_latency_s": 0.05,  -- optional: remote storage, seconds per
 *                "fetch_concurrency": 60 },-- request and requests in flight; absent = 0
 *     "dataset": { "bytes": ..., "items": ... },
 *     "machine": "...", "date": "2026-11-22T15:00:00Z", "tool": "synergy-profile 0.1.0",
 *     "owner": 1000,                     -- optional: see below
 *     "checkpoint": {                    -- optional: CheckFreq checkpoints of the job
 *       "state_bytes": 268435456,        -- bytes of state one checkpoint holds
 *       "batch": 32,                     -- samples per iteration the costs were measured at
 *       "snapshot_s": 0.03, "persist_s": 1.1, "overhead_s": 0.3 }
 *   }
 *
 * Ownership: a profile without "owner" was made by an admin (synergy-profile
 * run, synergyd's ProfileCommand) and is used for every user's jobs of its
 * key. A profile measured inside a user's own job (profile on first run,
 * spank-synergy(8)) records that user's uid as "owner" and is used only for
 * that user's jobs: a user's job can never decide how another user's jobs
 * are sized. See syn_store_get_for() in common/store.h.
 *
 * Checkpoints: a profile measured with `synergy-profile run --ckpt-bytes`
 * records what one CheckFreq checkpoint of that size costs on the storage
 * checkpoints go to (coordl_ckpt(3)): the copy into the snapshot buffer,
 * the write, and the training time it adds. Jobs of the key are then sized
 * with memory for the two snapshot buffers (syn_ckpt_mb in
 * synergy_policy.h), and `synergy-profile show` gives the interval
 * CheckFreq would choose at a bound. Profiles without it read, size and
 * write as before.
 */
#ifndef SYN_COMMON_PROFILE_H
#define SYN_COMMON_PROFILE_H

#include <stdint.h>

#include "common/error.h"
#include "common/parse.h"

#define SYN_PROFILE_SCHEMA 1
#define SYN_PROFILE_MAX_CPU 32
#define SYN_PROFILE_MAX_MEM 16
/* A key is common/parse.h's (syn_key_valid()). */
#define SYN_PROFILE_KEY_MAX SYN_KEY_MAX

typedef struct syn_profile {
	char key[SYN_PROFILE_KEY_MAX + 1];
	char model[128];
	int n_cpu, n_mem;
	double cpus[SYN_PROFILE_MAX_CPU];     /* cores per GPU, strictly increasing */
	double mem_gb[SYN_PROFILE_MAX_MEM];   /* cache GB per GPU, strictly increasing */
	double tput[SYN_PROFILE_MAX_CPU][SYN_PROFILE_MAX_MEM]; /* normalised per-GPU throughput */
	double prop_cpus, prop_mem_gb;        /* share the table is normalised to (tput 1.0) */
	double base_tput;                     /* absolute samples/s per GPU at that share, 0 if unknown */
	/* Raw DS-Analyzer rates (0 if unknown). */
	double gpu_rate;                      /* samples/s the GPU ingests */
	double prep_rate_per_core;            /* samples/s one core preps */
	double fetch_storage_bps;             /* bytes/s from storage */
	double fetch_memory_bps;              /* bytes/s from the cache */
	double fetch_overlap;                 /* fraction (0..1) of the shorter of fetch and prep
	                                         time per item hidden under the longer, fitted
	                                         at the most threads profiled; 0 = serial */
	double fetch_latency_s;               /* remote storage: seconds per request (median);
	                                         0 = local storage or unknown */
	double fetch_concurrency;             /* remote storage: requests in flight on average
	                                         while fetch_storage_bps was measured */
	double fetch_miss_s;                  /* local storage: worker seconds a miss (an item
	                                         read from storage) adds to an item, measured
	                                         at the most threads profiled; 0 = unknown */
	uint64_t dataset_bytes, dataset_items;
	char machine[128];
	char date[32];
	char tool[64];
	int has_owner;                        /* 1: measured in a job of user `owner` */
	uint32_t owner;                       /* that user's uid (has_owner 1 only) */
	/* CheckFreq checkpoints ("checkpoint"; all 0 when not measured). */
	uint64_t ckpt_state_bytes;            /* bytes of state one checkpoint holds */
	int ckpt_batch;                       /* samples per iteration at measurement */
	double ckpt_snapshot_s;               /* copy into a snapshot buffer */
	double ckpt_persist_s;                /* write, sync and rename */
	double ckpt_overhead_s;               /* training time one checkpoint adds */
} syn_profile_t;

/* The largest ckpt_state_bytes a profile may state (1 PiB). */
#define SYN_PROFILE_CKPT_MAX_BYTES (UINT64_C(1) << 50)

/*
 * Check a profile's invariants (grid sizes, monotone axes, finite
 * non-negative values, valid key). Returns 0, or -1 with errno EINVAL and
 * err naming the offending field.
 */
int syn_profile_check(const syn_profile_t *p, syn_error_t *err);

/* Normalised per-GPU throughput at (cpus, mem_gb) per GPU, interpolated;
 * NaN with errno EINVAL for a NULL or malformed profile or a NaN point. */
double syn_profile_eval(const syn_profile_t *p, double cpus, double mem_gb);

#endif
