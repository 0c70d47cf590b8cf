/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lend.h: the node agent: idle cores and cache memory lent to the Synergy
 * jobs running on one node, taken back before a newcomer's tasks run.
 *
 * In Slurm's accounting a Synergy job never holds more than its GPU share
 * (job_submit, syn_size_job), so every arriving job finds its share free.
 * What lies above the share reaches a job only as a reclaimable grant on
 * its node: at every job start and end (and every step start, since Slurm
 * resets a job's cpuset then) the agent plans, with the policy's node-level
 * TUNE (syn_node_tune, synergy_policy.h: one policy for the simulator and
 * the cluster), the cores and cache each Synergy job there should hold
 * now: its allotment, plus grants out of what no job was allotted. The
 * jobs of one coordinated-prep group on the node (their records' group,
 * jobrec.h) prepare one stream of batches together, so the policy plans
 * them as one consumer: a group is granted about one job's prep CPU above
 * its members' allotments, not k times that, split evenly between them.
 * It then applies the plan, shrinking before growing:
 *   1. cache grants that go down: the job's grant file (SYNERGY_CACHE_GRANT)
 *      is rewritten, the agent waits for the loader to release the memory
 *      (its files in the job's cache directory), then lowers the memory
 *      limit of the job's cgroups to its allotment plus the new grant;
 *   2. CPUs taken back (limit cgroups first, then the job cgroup);
 *   3. CPUs lent (the job cgroup, then its limit cgroups; threads re-pinned);
 *   4. cache grants that go up: memory limit raised first, then the file.
 * So a newcomer's CPUs and memory are free before its first task runs.
 *
 * Harvesting (HarvestIdleCycles): with every core allotted, a job that
 * leaves most of its cores idle (a language model's loader) wastes them
 * while another would gain. At every call the agent samples each Synergy
 * job's CPU time (syn__cg_job_cpu_ns; two samples at least
 * SYN__HARVEST_SAMPLE_MS apart give its idle cores, kept in its record),
 * and syn_node_harvest (the policy) names the lenders and how many of
 * their cores each other job harvests. A harvester's threads are set to
 * SCHED_IDLE before its cpuset grows onto a lender's cores, and back to
 * SCHED_OTHER only after its cpuset no longer holds any: the kernel then
 * runs a lender's threads first on its own cores whenever they are
 * runnable, so a lender is never slowed below its allotment by a harvest.
 * The harvester pays with its own priority (see synergy_policy.h), which
 * is why only jobs that gain by their profile harvest. Slurm's accounting
 * and a lender's cgroups are untouched; a harvest ends when its lender's
 * idle share falls below SYN_HARVEST_KEEP, when the lender ends, or when a
 * step of the harvester starts (syn__lend_step_start).
 *
 * Which CPUs a job holds is syn__lend_place(), a pure function: the plan
 * gives counts; a job keeps the idle CPUs it already holds (no churn), the
 * rest come from the lowest-numbered idle CPUs. Everything else here reads
 * and writes the node: per-job records and profile copies in StateDir
 * (jobrec.h), the cgroup tree (cgroup.h), the grant files in CacheDir, all
 * under the node's lock. Nothing here calls Slurm; messages go to a
 * caller-supplied log function.
 */
#ifndef SYN_PLUGIN_LEND_H
#define SYN_PLUGIN_LEND_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "synergy_policy.h"
#include "plugin/node/cgroup.h"
#include "plugin/shared/util.h"

/* One running job, as syn__lend_place() sees it. */
typedef struct syn__lend_job {
	uint32_t jobid;
	cpu_set_t allotted;           /* CPUs Slurm allotted on this node */
	cpu_set_t held;               /* CPUs its job cgroup holds now */
	int want;                     /* CPUs it should hold (the plan) */
	cpu_set_t target;             /* output: the CPUs it should hold */
	/* Harvesting (syn__lend_place_harvest): */
	int lend;                     /* CPUs of its allotment others may harvest */
	int harvest;                  /* CPUs of others' allotments it should harvest */
	cpu_set_t harvested;          /* output: those it harvests (also in target) */
} syn__lend_job_t;

/*
 * Choose the CPUs each job should hold. node is the node's CPUs. Every
 * target holds all of the job's allotted CPUs; a job that wants more gets
 * idle CPUs (node minus every allotment), each to one job: first the idle
 * CPUs it already holds (lowest job id first should two claim one), then
 * the lowest-numbered ones left, in job array order. A job never gets
 * more than it wants, nor more than there is. Returns the number of CPUs
 * lent, or -1 with errno EINVAL.
 */
int syn__lend_place(const cpu_set_t *node, syn__lend_job_t *jobs, int n);

/*
 * After syn__lend_place: add to each harvester's target the CPUs it
 * harvests (syn_node_harvest, synergy_policy.h, gave the counts): CPUs of
 * the allotments of jobs with lend > 0, each lender giving at most lend of
 * them, each CPU to one harvester. A harvester first keeps such CPUs it
 * holds (held must be what it holds now), then takes the lowest-numbered
 * left, in array order. A job with lend > 0 harvests nothing. Returns the
 * number of CPUs harvested, or -1 with errno EINVAL.
 */
int syn__lend_place_harvest(syn__lend_job_t *jobs, int n);

/* Where the agent reports each action and each failure. */
typedef void (*syn__lend_log_f)(int is_error, const char *msg, void *arg);

/* The node and what the agent may do there. */
typedef struct syn__agent {
	const syn__cg_t *cg;
	const char *state_dir;        /* StateDir: records, profile copies, lock */
	const char *node_rel;         /* the node's cgroup */
	const char *cache_dir;        /* CacheDir: grant files and job cache dirs;
					 NULL: cores only, no cache grants */
	syn_shape_t shape;            /* the node's GPUs and memory (0: unknown: no
					 cache grants) and a job's process memory and
					 cache bound; its CPUs are the node cgroup's */
	int lend;                     /* LendIdleCores: grant anything at all */
	int harvest;                  /* HarvestIdleCycles: harvest idle cycles too */
	syn__lend_log_f log;
	void *arg;
	int lock_ms;                  /* the node lock's bound; 0: SYN__LEND_LOCK_MS */
} syn__agent_t;

/*
 * Fill a for the node of cg from Synergy's configuration: StateDir,
 * CacheDir, LendIdleCores, ProcessMemMB, MaxCacheMB, and the node's GPUs
 * and memory from NodeGPUs/NodeMemMB, else from slurm_conf's line for the
 * node (NULL: $SLURM_CONF, else /etc/slurm/slurm.conf). node_rel (len
 * bytes) receives the node's cgroup path, which a points to. Returns 0 (a
 * shape slurm.conf did not give is left 0 and note says so), or -1 with
 * errno ENOENT when the node has no cgroup yet (note says where).
 */
struct syn_conf;
int syn__agent_init(syn__agent_t *a, const struct syn_conf *conf, const syn__cg_t *cg,
		    const char *slurm_conf, char *node_rel, size_t len, char *note, size_t notelen);

/* A job starting on the node (its first step). */
typedef struct syn__lend_start {
	uint32_t jobid;
	const char *job_rel;          /* its job cgroup (cgroup.h) */
	uint64_t alloc_mem_mb;        /* memory Slurm allotted it on the node */
} syn__lend_start_t;

/* Two CPU-time samples of a job this far apart at least measure its idle
 * cores; closer calls keep the last measure. */
#define SYN__HARVEST_SAMPLE_MS 2000

/* How long an action waits for the node's lock before it gives up (and,
 * for a starting job, takes back from others unlocked what is its). The
 * holder may be shrinking another job's cache: up to three waits of
 * SYN__GRANT_WAIT_MS, punching its files and the kernel's reclaim when its
 * memory limit is lowered, which took over 5 s for 540 MB on a loaded,
 * emulated node (a starting job then ran before the other had given its
 * memory back). A hung holder still delays a start by this much at most. */
#define SYN__LEND_LOCK_MS 20000
/* How long (wall time) a cache shrink waits for the job to release the
 * memory (its loader's promise is 200 ms) before the node punches its cache
 * files (cachedir.h); also the bound of that punching and of retries of a
 * refused limit. */
#define SYN__GRANT_WAIT_MS 1000

/*
 * Plan and apply the node as described above. start: a job starting
 * (recorded on its first call with its allotted CPUs and memory, and what
 * others were lent of them taken back first) or NULL. ended_jobid: a job
 * that is ending (its record dropped, its resources treated as free, its
 * cgroups left alone) or 0. With a->lend 0 every job is brought back to its
 * allotment. Which jobs may be granted anything, and their profiles, come
 * from their records and profile copies in StateDir: nothing is read from
 * the profile store here. Fail-safe: when anything fails before the plan is
 * applied (a record cannot be written, the jobs cannot be listed, the lock
 * times out), every job is shrunk back to what Slurm allotted it (a job
 * with no record loses what a recorded job was allotted) before the call
 * returns -1. Returns 0, or -1 with errno after a failure (logged).
 */
int syn__lend_rebalance(const syn__agent_t *a, const syn__lend_start_t *start,
			uint32_t ended_jobid);

/*
 * A later step of job jobid (cgroup job_rel) is about to start: Slurm is
 * going to set the job cgroup's cpuset back to the job's allocation, which
 * v1 refuses while a child holds lent CPUs, and the step would fail. So
 * give the lent CPUs back first; the step's rebalance lends again. Does
 * nothing for a job without a record. Returns 0, or -1 with errno.
 */
int syn__lend_step_start(const syn__agent_t *a, const char *job_rel, uint32_t jobid);

/*
 * A task of job jobid (job cgroup job_rel) was just put under the job's
 * limits: if the job harvests now (its record says so), the task is made
 * idle like the rest of the job (syn__cg_job_sched_idle), since its cpuset
 * holds other jobs' CPUs. Waits for the node's lock (so that a harvest
 * being set up is seen). Returns 1 when the job harvests and its tasks are
 * idle, 0 when it does not harvest, -1 with errno (then the harvest is
 * ended, its CPUs given back, rather than run at normal priority).
 */
int syn__lend_task_enter(const syn__agent_t *a, uint32_t jobid, const char *job_rel);

/* The grant file of job jobid in cache_dir ("<cache_dir>/job_<id>.grant"),
 * which the loader reads (SYNERGY_CACHE_GRANT). 0 or -1 (ENAMETOOLONG). */
int syn__grant_path(const char *cache_dir, uint32_t jobid, char *buf, size_t len);

/* Write a job's grant file atomically (root's, 0644, in CacheDir, which
 * must be root's). 0, or -1 with errno. */
int syn__grant_write(const char *cache_dir, uint32_t jobid, uint64_t bytes);

/* Room for any CPU list of a cpu_set_t ("0,2,4,...", 6 bytes a CPU). */
#define SYN__CPULIST_MAX (CPU_SETSIZE * 6 + 1)

/* One job on a node as syn__lend_status() reports it (lists in cpuset syntax). */
typedef struct syn__lend_info {
	uint32_t jobid;
	char job_rel[512];
	int recorded;                 /* a record of its allotted CPUs exists */
	int borrow;                   /* a Synergy job (may be granted more) */
	char key[SYN_KEY_MAX + 1];
	char allotted[SYN__CPULIST_MAX]; /* "" when not recorded */
	char held[SYN__CPULIST_MAX];  /* its job cgroup's CPUs now */
	char limits[SYN__CPULIST_MAX]; /* its limit cgroups' CPUs ("" if none) */
	char lent[SYN__CPULIST_MAX];  /* held minus allotted ("" if none) */
	uint64_t alloc_mem_mb;        /* its memory in Slurm's accounting (0: unknown) */
	uint64_t cache_mb;            /* its cache grant now (0: none) */
	char group[SYN_KEY_MAX + 1]; /* its coordinated-prep group ("" none) */
	int has_idle;                 /* the agent measured its idle cores: */
	double idle;                  /* that many of its allotment (harvesting) */
	int harvests;                 /* 1: it harvests others' cores, at idle priority */
} syn__lend_info_t;

/*
 * Read-only view of the node: writes the node's CPUs to node_cpus and calls
 * fn(info, arg) for every job cgroup (stops when fn returns non-zero).
 * Takes no lock and changes nothing; a missing StateDir means no job is
 * recorded. Returns the number of jobs, or -1 with errno when the node's
 * cgroup cannot be read.
 */
int syn__lend_status(const syn__agent_t *a, char *node_cpus, size_t len,
		     int (*fn)(const syn__lend_info_t *info, void *arg), void *arg);

#endif
