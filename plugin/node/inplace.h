/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inplace.h: the node files the profile a job measured on its first run
 * (profile on first run; spank-synergy(8)).
 *
 * A job whose grant carries a claim's nonce (claim.h) runs with its loader
 * in profiling mode, its report going to SYN__REPORT_NAME in the job's
 * cache directory (CacheDir/job_<id>, the job's own). The job wrote it, so
 * nothing in it is trusted: root on the node reads it without following
 * links, only as a regular file of the job's user of bounded size, parses
 * and checks it in full (syn__job_report_parse, syn__job_report_check:
 * sanity bounds against the node's CPUs and the time since the job
 * started), builds the profile, checks that (syn_profile_check) and files
 * it as the user's own (syn_store_put_owned: used only for that user's
 * jobs). The claim must still be the job's. The job then becomes an
 * ordinary Synergy job with that profile on the node (a profile copy in
 * StateDir, the record without its nonce), the claim is released and the
 * report removed. A report that fails any check, or is incomplete (the
 * job's search was cut short), files nothing, and the claim is released
 * so that the key's next first job tries again; so does a job that ends
 * without a report.
 *
 * slurmstepd calls syn__inplace_collect every second while the job's step
 * runs (so a long training job's profile is filed as soon as its search
 * ended), once more with final set when the batch step ends (before the
 * node agent removes the job's record), and the epilog with final set
 * (jobs without a batch step, lending off). All run under the node's
 * lock, so exactly one of them files.
 */
#ifndef SYN_PLUGIN_INPLACE_H
#define SYN_PLUGIN_INPLACE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The report's file name in the job's cache directory. */
#define SYN__REPORT_NAME "profile-report.json"

typedef struct syn__inplace {
	const char *store_dir;      /* ProfileStore (claims and profiles) */
	const char *cache_dir;      /* CacheDir (the job's directory in it) */
	const char *state_dir;      /* StateDir (records, profile copies, the lock) */
	const char *node;           /* this node's name */
	uint32_t jobid, uid;
	int node_cpus;              /* CPUs on the node: the most a search ran on */
	/* The GPU share the profile is normalised to when the record has no
	 * allotment (lending off): the node's shape, 0 if unknown. */
	uint64_t node_gpus, node_cpus_conf, node_mem_mb;
	int final;                  /* the job ended: whatever happens, release */
	time_t now;
	const char *version;        /* for the profile's "tool" */
} syn__inplace_t;

enum {
	SYN__INPLACE_IDLE = 0,      /* the job does not profile (or no more) */
	SYN__INPLACE_WAIT,          /* no report yet */
	SYN__INPLACE_FILED,         /* its profile was filed */
	SYN__INPLACE_REFUSED,       /* a report came and was refused (msg says why) */
	SYN__INPLACE_NONE,          /* the job ended without a report */
};

/*
 * Look at the job's report and act as described above. msg (size msglen)
 * says what was done or why not. Returns SYN__INPLACE_*, or -1 with errno
 * (StateDir unusable, the lock timed out) when nothing could be decided.
 */
int syn__inplace_collect(const syn__inplace_t *x, char *msg, size_t msglen);

/* The report's path for job jobid under cache_dir. 0 or -1 (ENAMETOOLONG). */
int syn__inplace_report_path(const char *cache_dir, uint32_t jobid, char *buf, size_t len);

#endif
