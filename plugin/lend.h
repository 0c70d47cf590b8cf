/*
 * lend.h: idle-core lending on one node.
 *
 * A CPU that Slurm allotted to no running job is idle. When the admin sets
 * LendIdleCores=yes, the SPANK plugin lends each idle CPU to the Synergy job
 * on the node whose profile predicts the largest gain from one more core
 * (at least the minimum gain, else the CPU stays idle), by widening the
 * job's cpuset cgroup and its synergy child. The moment Slurm allots a lent
 * CPU to a newly starting job, the plugin takes it back before the
 * newcomer's tasks run, so no job ever runs below the share Slurm gave it.
 *
 * Two layers: syn__lend_plan() is the decision, a pure function of the
 * node's CPUs and each job's allotted/held CPUs and profile (unit-tested);
 * syn__lend_rebalance() reads the node's state (per-job records kept in a
 * root-only state directory, the cgroup tree), runs the plan under a
 * node-wide flock and applies it through cgroup.h. Nothing here calls
 * Slurm; messages are handed to a caller-supplied log function.
 *
 * CPUs are lent one logical CPU at a time (on SMT nodes, one hardware
 * thread): with CR_Core Slurm allots whole cores, so the idle set is whole
 * cores anyway, and the loader counts the CPUs of its cpuset as its cores.
 */
#ifndef SYN_PLUGIN_LEND_H
#define SYN_PLUGIN_LEND_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "synergy_profile.h"

/* Default minimum predicted gain of one more core (2%). */
#define SYN__LEND_MIN_GAIN 0.02

/* One running job on the node, as the plan sees it. */
typedef struct syn__lend_job {
	uint32_t jobid;
	cpu_set_t allotted;           /* CPUs Slurm allotted on this node */
	cpu_set_t held;               /* CPUs its job cgroup holds now */
	int gpus;                     /* GPUs on this node (profile is per GPU); <1 counts as 1 */
	double cache_gb;              /* its cache grant on this node, GB */
	const syn_profile_t *profile; /* NULL: never borrows (no profile, --synergy=off) */
	cpu_set_t target;             /* output: the CPUs it should hold */
	double gain;                  /* output: predicted gain of its last lent CPU (0: none) */
} syn__lend_job_t;

/*
 * Decide which CPUs each job should hold. node is the set of CPUs of the
 * node (its top cgroup's cpuset). Every job's target contains all of its
 * allotted CPUs; the idle CPUs (node minus the union of all allotted sets)
 * are lent, each to at most one job with a profile. A job keeps the idle
 * CPUs it already holds (no churn between borrowers); the rest go one at a
 * time to the job whose profile gains most from one more core per GPU,
 * ties to the lowest job id, as long as that gain is at least min_gain.
 * Returns the number of CPUs lent in the plan, or -1 with errno EINVAL.
 */
int syn__lend_plan(const cpu_set_t *node, syn__lend_job_t *jobs, int n, double min_gain);

/* Parse a cpuset list ("0-3,8") into set. Returns 0 or -1 with EINVAL
 * (the empty string is the empty set). */
int syn__cpus_parse(const char *list, cpu_set_t *set);

/* Write set in list syntax into buf ("" for the empty set). Returns 0, or
 * -1 with ENAMETOOLONG when buf is too small. */
int syn__cpus_format(const cpu_set_t *set, char *buf, size_t len);

/* Where syn__lend_rebalance() reports each action and each failure. */
typedef void (*syn__lend_log_f)(int is_error, const char *msg, void *arg);

/* What the SPANK plugin knows about a starting job. */
typedef struct syn__lend_start {
	uint32_t jobid;
	const char *job_rel;          /* its cpuset cgroup, e.g. "slurm_n1/uid_0/job_7" */
	int borrow;                   /* 1: a Synergy job with a profile */
	const char *key;              /* its profile key (when borrow) */
	int gpus;
	uint64_t cache_mb;
} syn__lend_start_t;

/*
 * Event-driven rebalancing of the node whose cgroup is node_rel (the
 * parent of the uid_<n> directories, e.g. "slurm_n1"), serialised with a
 * flock in state_dir (created mode 0700, must be root's and writable only
 * by root). start: a job starting (recorded on its first call and its
 * allotted CPUs taken back from every borrower first) or NULL. ended_jobid:
 * a job that is ending (its record dropped, its CPUs treated as free, its
 * cgroups left alone) or 0. Profiles are read from store_dir. Every action
 * and failure goes to log. Returns 0, or -1 with errno after a failure
 * (cgroups that were not yet changed are left as they are).
 */
int syn__lend_rebalance(const char *state_dir, const char *store_dir, const char *node_rel,
			const syn__lend_start_t *start, uint32_t ended_jobid,
			double min_gain, syn__lend_log_f log, void *arg);

/*
 * A later step of job jobid (cgroup job_rel on node node_rel) is about to
 * start: Slurm is going to set the job cgroup's cpuset back to the job's
 * allocation, which the kernel refuses while the synergy child holds lent
 * CPUs, and the step would fail. So give the lent CPUs back first (child,
 * then job cgroup); the step's syn__lend_rebalance() lends again. Does
 * nothing for a job without a record (first step, or lending was off).
 * Returns 0, or -1 with errno after a failure (also sent to log).
 */
int syn__lend_step_start(const char *state_dir, const char *node_rel, const char *job_rel,
			 uint32_t jobid, syn__lend_log_f log, void *arg);

/*
 * Drop job jobid's record on node node_rel, if state_dir has one (the job
 * ended while lending was off: a stale record must not describe a later job
 * that reuses the id). Returns 0, or -1 with errno.
 */
int syn__lend_forget(const char *state_dir, const char *node_rel, uint32_t jobid);

/* One job on a node as syn__lend_status() reports it (lists in cpuset syntax). */
typedef struct syn__lend_info {
	uint32_t jobid;
	char job_rel[320];
	int recorded;                 /* lending has a record of the job */
	int borrow;                   /* recorded as a Synergy job with a profile */
	char key[SYN_PROFILE_KEY_MAX + 1];
	char allotted[256];           /* "" when not recorded */
	char held[256];               /* its job cgroup's CPUs now */
	char child[256];              /* its synergy child's CPUs ("" if none) */
	char lent[256];               /* held minus allotted ("" if none) */
} syn__lend_info_t;

/*
 * Read-only view of the node whose cpuset cgroup is node_rel: writes the
 * node's CPUs to node_cpus and calls fn(info, arg) for every job cgroup
 * (stops when fn returns non-zero). Takes no lock and changes nothing; a
 * missing state_dir means no job is recorded. Returns the number of jobs,
 * or -1 with errno when the node's cgroup cannot be read.
 */
int syn__lend_status(const char *state_dir, const char *node_rel, char *node_cpus, size_t len,
		     int (*fn)(const syn__lend_info_t *info, void *arg), void *arg);

#endif
