/*
 * cgroup.h: the one small interface through which the SPANK plugin touches
 * cgroups, so that a cgroup v2 backend can sit beside the v1 one.
 *
 * A job's synergy cgroup is a child named "synergy" directly under the
 * job's own cgroup (job_rel, relative to each controller's root, e.g.
 * "slurm_n1/uid_0/job_42"): Slurm created the parent, so the child inherits
 * a valid cpuset and memory hierarchy and is inside the job's subtree on v1
 * and v2 alike. The child must be removed before Slurm removes the job's
 * cgroup, or Slurm's cleanup fails.
 */
#ifndef SYN_PLUGIN_CGROUP_H
#define SYN_PLUGIN_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SYN__CG_CHILD "synergy"

/*
 * Create (or update) the synergy child of job_rel with cpuset cpus (list
 * syntax, must lie inside the job's cpuset; the memory nodes are copied
 * from the job) and memory limit mem_bytes (0: no limit of its own).
 * Returns 0, or -1 with errno and a message in err.
 */
int syn__cg_create(const char *job_rel, const char *cpus, uint64_t mem_bytes,
		   char *err, size_t errlen);

/* Move pid into the synergy child of job_rel (cpuset and memory). */
int syn__cg_attach(const char *job_rel, pid_t pid, char *err, size_t errlen);

/*
 * Remove the synergy child of job_rel if it holds no process. Returns 0
 * when it is gone (or was never there), -1 with errno EBUSY while processes
 * remain, or another errno on failure.
 */
int syn__cg_remove(const char *job_rel, char *err, size_t errlen);

/*
 * Move the processes of one step (those whose freezer cgroup, where
 * proctrack/cgroup tracks them, is job_<jobid>/<step_dir>) from the synergy
 * child back into the job's cgroup. Called when the step ends: Slurm kills
 * what is left of the step and then removes the job's cgroups, which fails
 * while our child still holds processes. Other steps' processes stay.
 * Returns the number of processes moved, or -1 with errno.
 */
int syn__cg_evict_step(const char *job_rel, uint32_t jobid, const char *step_dir,
		       char *err, size_t errlen);

/* 1 if the synergy child of job_rel exists in the cpuset hierarchy. */
int syn__cg_exists(const char *job_rel);

/*
 * Idle-core lending (lend.h) works on any cpuset cgroup: rel is a path
 * relative to the cpuset controller's root ("slurm_n1", ".../job_7",
 * ".../job_7/synergy"), built by the caller from the kernel's own paths.
 */

/* Read rel's cpuset.cpus (list syntax) into buf. Returns 0 or -1 with errno. */
int syn__cg_get_cpus(const char *rel, char *buf, size_t len);

/*
 * Write cpus (list syntax) to rel's cpuset.cpus. The kernel refuses (EBUSY
 * or EINVAL) a set narrower than a child's or wider than the parent's: the
 * caller widens parents first and narrows children first. Returns 0, or -1
 * with errno and a message naming the cgroup in err.
 */
int syn__cg_set_cpus(const char *rel, const char *cpus, char *err, size_t errlen);

/*
 * Set the CPU affinity of every thread listed in rel's tasks file to set
 * (the kernel does not widen a pinned thread's affinity when its cpuset
 * widens). Threads that exit meanwhile are skipped. Returns the number of
 * threads pinned, or -1 with errno if the tasks file cannot be read.
 */
int syn__cg_pin_tasks(const char *rel, const void *cpu_set, size_t setsize);

/*
 * Call fn(jobid, job_rel, arg) for every job cgroup of the node whose
 * cpuset cgroup is node_rel (directories node_rel/uid_<n>/job_<id>). Stops
 * when fn returns non-zero. Returns the number of jobs visited, or -1 with
 * errno if node_rel cannot be read.
 */
int syn__cg_foreach_job(const char *node_rel,
			int (*fn)(uint32_t jobid, const char *job_rel, void *arg), void *arg);

#endif
