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
#include "cgroup.h"
#include "util.h"

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

/* Where syn__lend_rebalance() reports each action and each failure. */
typedef void (*syn__lend_log_f)(int is_error, const char *msg, void *arg);

/* A job starting on the node (its first step). */
typedef struct syn__lend_start {
	uint32_t jobid;
	const char *job_rel;          /* its job cgroup (cgroup.h) */
} syn__lend_start_t;

/* How long a lending action waits for the node's lock before it gives up
 * (and, for a starting job, takes its CPUs back from borrowers unlocked). */
#define SYN__LEND_LOCK_MS 5000

/*
 * Event-driven rebalancing of the node whose cgroup is node_rel, under the
 * node's lock in state_dir (jobrec.h). start: a job starting (its allotted
 * CPUs recorded on its first call and taken back from every borrower
 * first) or NULL. ended_jobid: a job that is ending (its record dropped,
 * its CPUs treated as free, its cgroups left alone) or 0. Which jobs may
 * borrow, and their profiles, come from their records (written from what
 * job_submit decided) and profile copies in state_dir: nothing is read
 * from the profile store here. Every action and failure goes to log.
 * Fail-safe: when anything fails before the plan is applied (a record
 * cannot be written, the jobs cannot be listed, the lock times out), every
 * job is shrunk back to what Slurm allotted it (and, for a job with no
 * record, stripped of the newcomer's CPUs) before returning -1, so that a
 * newcomer never starts on CPUs another job still holds.
 * Returns 0, or -1 with errno after a failure.
 */
int syn__lend_rebalance(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
			const syn__lend_start_t *start, uint32_t ended_jobid,
			double min_gain, syn__lend_log_f log, void *arg);

/*
 * A later step of job jobid (cgroup job_rel on node node_rel) is about to
 * start: Slurm is going to set the job cgroup's cpuset back to the job's
 * allocation, which v1 refuses while the synergy child holds lent CPUs, and
 * the step would fail. So give the lent CPUs back first; the step's
 * syn__lend_rebalance() lends again. Does nothing for a job without a
 * record of its allotted CPUs. Returns 0, or -1 with errno (also logged).
 */
int syn__lend_step_start(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
			 const char *job_rel, uint32_t jobid, syn__lend_log_f log, void *arg);

/* Room for any CPU list of a cpu_set_t ("0,2,4,...", 6 bytes a CPU). */
#define SYN__CPULIST_MAX (CPU_SETSIZE * 6 + 1)

/* One job on a node as syn__lend_status() reports it (lists in cpuset syntax). */
typedef struct syn__lend_info {
	uint32_t jobid;
	char job_rel[512];
	int recorded;                 /* a record of its allotted CPUs exists */
	int borrow;                   /* a Synergy job (may borrow) */
	char key[SYN__KEY_MAX + 1];
	char allotted[SYN__CPULIST_MAX]; /* "" when not recorded */
	char held[SYN__CPULIST_MAX];  /* its job cgroup's CPUs now */
	char limits[SYN__CPULIST_MAX]; /* its limit cgroups' CPUs ("" if none) */
	char lent[SYN__CPULIST_MAX];  /* held minus allotted ("" if none) */
} syn__lend_info_t;

/*
 * Read-only view of the node whose cgroup is node_rel: writes the node's
 * CPUs to node_cpus and calls fn(info, arg) for every job cgroup (stops
 * when fn returns non-zero). Takes no lock and changes nothing; a missing
 * state_dir means no job is recorded. Returns the number of jobs, or -1
 * with errno when the node's cgroup cannot be read.
 */
int syn__lend_status(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
		     char *node_cpus, size_t len,
		     int (*fn)(const syn__lend_info_t *info, void *arg), void *arg);

#endif
