/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jobprofile.h: a profile from the report a training job's own loader
 * wrote in profiling mode (the format at SYNERGY_ENV_PROFILE_OUT in
 * synergy_env.h), internal to the profiler and the Synergy plugin.
 *
 * Three steps, each usable alone:
 *   parse  the report's JSON strictly into a syn__job_report_t (every field
 *          present, of its type, finite and >= 0; a size cap on the text);
 *   check  it against sanity bounds: the report comes from a user's
 *          process, which can write anything, so before root files a profile
 *          built from it, every point must be physically consistent with
 *          the wall clock and with the CPUs the job could have had (see
 *          syn__job_report_check);
 *   build  the profile: the model's rates from the points
 *          (syn__rates_from_job), the grid (syn__grid_default unless given)
 *          normalised at a stated GPU share.
 * Nothing here logs, reads files or allocates beyond jansson's parse.
 */
#ifndef SYN_PROFILER_JOBPROFILE_H
#define SYN_PROFILER_JOBPROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/profile.h"
#include "profiler/model.h"

/* The most points a report may hold (the loader records at most 64). */
#define SYN__REPORT_MAX_POINTS 64
/* The longest report text read: 64 points take about 20 KiB. */
#define SYN__REPORT_MAX_BYTES (256 * 1024)

typedef struct syn__report_point {
	int threads;
	double samples, wall, consumer, stall, prep_time, fetch_time, storage_bytes;
	double hits, misses, tput, tput_min, tput_max;
} syn__report_point_t;

typedef struct syn__job_report {
	int complete;               /* the search ran to its end */
	int batch_size, max_threads;
	double elapsed;             /* seconds, first batch request to the end (0: absent) */
	uint64_t dataset_bytes, dataset_items;
	int n;                      /* points, in probing order */
	syn__report_point_t pt[SYN__REPORT_MAX_POINTS];
} syn__job_report_t;

/*
 * Parse a report (len bytes of text; name for messages, NULL: "report").
 * Returns 0, or -1 with errno EINVAL (EFBIG: longer than
 * SYN__REPORT_MAX_BYTES) and msg naming the field.
 */
int syn__job_report_parse(const char *text, size_t len, const char *name,
                          syn__job_report_t *r, char *msg, int msglen);

/* What the party that checks a report knows of the job. 0: unknown, no bound. */
typedef struct syn__report_limits {
	int max_cpus;               /* CPUs the job could have run on (the node's) */
	double max_elapsed;         /* seconds the job has run */
	int require_complete;       /* 1: an incomplete search is refused */
} syn__report_limits_t;

/*
 * Sanity bounds on a parsed report. Refused (-1, EINVAL, msg says which
 * point and why): an incomplete search when required; no point; max_threads
 * or any point's threads above max_cpus, or a point above max_threads; a
 * point with no samples or no wall time; the program's time between
 * requests plus its stall more than its windows' wall time; the workers'
 * prep and fetch time more than threads x wall (with slack for items that
 * straddle a window's edge); items processed (hits + misses) not within
 * [samples/4, 4 x samples + 64 x batch_size]; the search's elapsed time
 * shorter than its windows together, or longer than max_elapsed; a dataset
 * with no items or fewer bytes than items; rates that come out infinite.
 * Returns 0 when the report passes.
 */
int syn__job_report_check(const syn__job_report_t *r, const syn__report_limits_t *lim,
                          char *msg, int msglen);

/* The report's points as the model reads them (at most max); returns the count. */
int syn__job_report_points(const syn__job_report_t *r, syn__job_point_t *pts, int max);

/*
 * The default grid: cores per GPU {1,2,3,4,5,6,8,9,12,16,24} (and
 * max_cpus when it is larger, where the profile can reach), GiB per GPU
 * {0, 1/4, 1/2, 3/4, 1} of the dataset (rounded to 1 MiB, duplicates
 * dropped). cpus needs SYN_PROFILE_MAX_CPU entries, mem_gb
 * SYN_PROFILE_MAX_MEM.
 */
void syn__grid_default(uint64_t dataset_bytes, int max_cpus, double *cpus, int *n_cpu,
                       double *mem_gb, int *n_mem);

/*
 * Build p (key, model, machine, date, tool and owner left empty for the
 * caller) from a report: its rates, the default grid for its dataset and
 * max_threads, normalised at (prop_cpus, prop_mem_gb) per GPU. Returns 0,
 * or -1 with errno EINVAL and msg (no usable point, a zero throughput at the
 * share, a bad share).
 */
int syn__job_report_profile(const syn__job_report_t *r, double prop_cpus, double prop_mem_gb,
                            syn_profile_t *p, char *msg, int msglen);

#endif
