/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup.h: the one layer through which Synergy touches cgroups.
 *
 * Nothing else in the tree builds a cgroup path, reads /proc/<pid>/cgroup
 * or walks a node's jobs: the SPANK plugin, idle-core lending, the epilog
 * backstop and synergy-lend all go through here. Two backends sit behind
 * it, chosen at run time as Slurm chooses its own cgroup plugin:
 *
 *   cgroup v1 (Slurm's cgroup/v1): a job is <mnt>/<ctl>/<root>/uid_U/job_J
 *     in each controller, <root> being CgroupPrepend ("/slurm_%n" when
 *     slurmd was built with multiple-slurmd, as Debian's is, else
 *     "/slurm"). Synergy adds a child "synergy" under job_J in the cpuset
 *     and memory hierarchies and moves the tasks into it; proctrack keeps
 *     tracking them through the freezer hierarchy, which it leaves alone.
 *
 *   cgroup v2 (Slurm's cgroup/v2): one hierarchy; slurmstepds live in the
 *     scope <mnt>/<prefix>/<slice>/<node>_slurmstepd.scope (multiple-
 *     slurmd) or .../slurmstepd.scope, a job is a directory <scope>/<J>
 *     and each step <J>/step_S/{slurm,user/task_T}. Slurm constrains <J>
 *     and step_S/user and tracks a step's processes by reading the task_T
 *     leaves, so a task moved into a cgroup of ours would escape scancel
 *     and step cleanup. Synergy therefore creates nothing on v2: the
 *     step's "user" cgroup is where its limits apply (the no-internal-
 *     processes rule holds: only the task_T leaves hold processes).
 *     What varies between Slurm releases (doc/slurm-versions.md):
 *       <slice>   cgroup.conf's CgroupSlice from 25.11, else system.slice;
 *       <prefix>  from 23.02.1 the parent of PID 1's cgroup (a slurmd in
 *                 a container without a cgroup namespace: docker.slice/
 *                 docker-<id>.scope), "" on a host and on 22.05;
 *       <J>       job_<id> up to 25.11; the job's SLUID ("s" and 13
 *                 Crockford base-32 digits) from 26.05, unless cgroup.conf
 *                 says CgroupJobIdPaths=yes (26.05.2+).
 *     A SLUID says nothing of the job id: where a job's directory must be
 *     found, it is read from a process of the job (every remote SPANK
 *     hook runs in <J>/step_S/...), and where the node's jobs are listed,
 *     a SLUID directory comes with job id 0 for the caller to map (the
 *     node agent: the job records, jobrec.h). slurmd itself sits in
 *     <scope>/slurmd when started by hand, in its unit's cgroup when
 *     systemd started it (<unit>/slurmd from 25.11.3): nothing here
 *     depends on where.
 *
 * Both are described to callers in the same terms: a node cgroup (node_rel)
 * holding job cgroups (job_rel, relative to the hierarchy's root), and per
 * job its "limit cgroups", the cgroups whose cpuset and memory limit bound
 * the job's tasks (v1: job_J/synergy; v2: every job_J/step_S/user). Sets
 * of CPUs are cpu_set_t; lists of any length are read whole.
 *
 * Nothing here logs or calls Slurm. Failures return -1 with errno and, where
 * an err buffer is taken, a message naming the cgroup.
 */
#ifndef SYN_PLUGIN_CGROUP_H
#define SYN_PLUGIN_CGROUP_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cpus.h"
#include "common/parse.h"

/* The v1 child that holds a Synergy job's tasks. */
#define SYN__CG_CHILD "synergy"
/* v1: the cpu cgroup a harvesting job's processes are moved into (node,
 * job id), beside the cpu cgroup they ran in (cgroup_v1.c). */
#define SYN__CG_IDLE_FMT "synergy_%s_job_%u"

/* Where to look and what to expect. Strings are copied by syn__cg_open. */
typedef struct syn__cg_opts {
	const char *node;       /* this slurmd's NodeName (required; %n) */
	const char *plugin;     /* Slurm's CgroupPlugin: "cgroup/v1", "cgroup/v2",
	                           "autodetect" or NULL (autodetect) */
	const char *mountpoint; /* CgroupMountpoint; NULL: /sys/fs/cgroup */
	const char *root;       /* the node's cgroup relative to the hierarchy
	                           root, with %n (node) and %h (short hostname);
	                           NULL: the layouts Slurm makes, first that
	                           exists (v1 slurm_%n, slurm; v2
	                           <prefix>/<slice>/%n_slurmstepd.scope,
	                           <prefix>/<slice>/slurmstepd.scope, then the
	                           same without <prefix>, as 22.05 makes them) */
	const char *slice;      /* v2: CgroupSlice; NULL or "": system.slice */
	const char *init_cgroup; /* v2: PID 1's cgroup as /proc/1/cgroup's "0::"
	                           line shows it, relative to the mount ("/",
	                           "/init.scope"; tests); NULL: read it there */
	int job_id_paths;       /* v2: CgroupJobIdPaths=yes (reported only: both
	                           namings of job directories are always read) */
} syn__cg_opts_t;

typedef struct syn__cg syn__cg_t;

/*
 * Detect the version and remember the layout. The version is the one Slurm
 * uses: opts->plugin when it names one, else what is mounted at the
 * mountpoint (cgroup2 there: v2; per-controller v1 hierarchies with a
 * cpuset: v1). Returns a handle (free with syn__cg_close), or NULL with
 * errno (EINVAL: bad options; ENOTSUP: no usable hierarchy, e.g. v2 without
 * the cpuset or memory controller, v1 without cpuset and memory) and a
 * message saying why in err.
 */
syn__cg_t *syn__cg_open(const syn__cg_opts_t *opts, char *err, size_t errlen);

/* Accepts NULL; preserves errno. */
void syn__cg_close(syn__cg_t *cg);

struct syn_conf;
/*
 * Open the layer for node as Synergy's configuration and Slurm's say:
 * Slurm's cgroup.conf from CgroupConf, else beside $SLURM_CONF, else
 * /etc/slurm/cgroup.conf (a missing file means Slurm's defaults), and
 * CgroupRoot over the file's CgroupPrepend. The cgroup.conf path used is
 * copied to used_conf when not NULL. Errors as syn__cg_open().
 */
syn__cg_t *syn__cg_open_conf(const struct syn_conf *conf, const char *node, char *used_conf,
			     size_t used_len, char *err, size_t errlen);

/* 1 or 2. */
int syn__cg_version(const syn__cg_t *cg);

/* The mountpoint and the node name the handle was opened with. */
const char *syn__cg_mountpoint(const syn__cg_t *cg);
const char *syn__cg_node(const syn__cg_t *cg);

/* What the handle assumes of the layout (synergy-lend --check): the
 * admin's root pattern ("" for Slurm's own layouts); v2: the slice, PID
 * 1's cgroup ("" when unreadable), the prefix Slurm 23.02+ puts before
 * the slice ("" for the mount's root), CgroupJobIdPaths. */
const char *syn__cg_root(const syn__cg_t *cg);
const char *syn__cg_slice(const syn__cg_t *cg);
const char *syn__cg_init_cgroup(const syn__cg_t *cg);
const char *syn__cg_init_prefix(const syn__cg_t *cg);
int syn__cg_job_id_paths(const syn__cg_t *cg);

/* What of Slurm's cgroup.conf this layer reads ("" or 0 when absent). */
typedef struct syn__cg_slurm_conf {
	char plugin[64];                /* CgroupPlugin */
	char mountpoint[SYN_PATH_MAX];  /* CgroupMountpoint */
	char prepend[SYN_PATH_MAX];     /* CgroupPrepend (v1, older Slurm) */
	char slice[SYN_PATH_MAX];       /* CgroupSlice (v2, 25.11+) */
	int job_id_paths;               /* CgroupJobIdPaths=yes (v2, 26.05.2+) */
} syn__cg_slurm_conf_t;

/*
 * Read Slurm's cgroup.conf at path into out. Unknown keys are ignored, as
 * Slurm's own parser knows many; a value too long for its field is
 * truncated (and then refused by syn__cg_open as no clean path). Returns
 * 0, or -1 with errno from open(2) (ENOENT: no such file, which callers
 * may treat as "all defaults"; out is then all empty).
 */
int syn__cg_read_slurm_conf(const char *path, syn__cg_slurm_conf_t *out);

/*
 * From a /proc/<pid>/cgroup text, the path (relative to the hierarchy's
 * root, without the leading '/') of job jobid's cgroup in the hierarchy of
 * controller (v1, e.g. "cpuset"), or in the unified hierarchy when
 * controller is NULL or "" (the "0::" line): "slurm_n1/uid_0/job_42" for a
 * task in ".../job_42/step_0". On the unified line, where no job_<jobid>
 * is, a SLUID directly above a step_* directory is the job's (Slurm 26.05:
 * ".../sEKNKTV3WPV500/step_0/user/task_0"): a SLUID cannot be checked
 * against jobid, so pass only a process of job jobid. Pure (tests,
 * fuzzing). Returns 0, or -1 with errno ENOENT (no such line, or not
 * inside the job's cgroup) or ENAMETOOLONG.
 */
int syn__cg_parse_proc(const char *proc_cgroup, const char *controller, uint32_t jobid,
		       char *out, size_t outlen);

/* The job cgroup of job jobid that process pid (0: the caller) is in (from
 * the kernel's /proc/<pid>/cgroup, syn__cg_parse_proc). Returns 0, or -1
 * with errno (ENOENT: pid is not inside that job's cgroup). */
int syn__cg_job_of_pid(const syn__cg_t *cg, pid_t pid, uint32_t jobid, char *out, size_t len);

/* The cgroup process pid (0: the caller) is in, relative to the
 * hierarchy's root (v1: its cpuset cgroup; v2: the "0::" line). Returns 0,
 * or -1 with errno (ENOENT: the process or the line is not there). */
int syn__cg_of_pid(const syn__cg_t *cg, pid_t pid, char *out, size_t len);

/* The node cgroup (node_rel) that holds job_rel. Returns 0 or -1 (EINVAL:
 * not a job cgroup path of this layout: v1 .../uid_U/job_J, v2 .../job_J
 * or .../<SLUID>). */
int syn__cg_node_of_job(const syn__cg_t *cg, const char *job_rel, char *out, size_t len);

/* The SLUID that names job cgroup job_rel (its last component), copied to
 * out (at least 15 bytes). Returns 0, or -1 with errno ENOENT when job_rel
 * is not named by a SLUID (job_<id>, v1) or ENAMETOOLONG. */
int syn__cg_job_sluid(const char *job_rel, char *out, size_t len);

/*
 * The node's cgroup: opts->root expanded, or the first layout of Slurm's
 * that exists. Returns 0, or -1 with errno ENOENT when none exists (slurmd
 * is not running, or no job ran on this node since boot) and the first
 * candidate in out all the same.
 */
int syn__cg_node_path(const syn__cg_t *cg, char *out, size_t len);

/*
 * The i-th (from 0) node cgroup this handle looks for, in its order of
 * preference (syn__cg_node_path's candidates), for messages. Returns 0, or
 * -1 with errno ENOENT past the last one, or ENAMETOOLONG.
 */
int syn__cg_node_candidate(const syn__cg_t *cg, int i, char *out, size_t len);

/* The job cgroup of job jobid (owned by uid, used on v1) on this node,
 * built from the layout (no task needed: the epilog): job_<jobid>, which
 * is right on v1 and on v2 up to Slurm 25.11 (and with CgroupJobIdPaths);
 * a job named by its SLUID is found from a process of it
 * (syn__cg_job_of_pid). Returns 0 or -1 (ENOENT: the node's cgroup is not
 * there). */
int syn__cg_job_path(const syn__cg_t *cg, uint32_t jobid, uid_t uid, char *out, size_t len);

/*
 * Call fn(jobid, job_rel, arg) for every job cgroup under node_rel: v1
 * uid_U/job_J, v2 job_J and (Slurm 26.05) the SLUID directories, which
 * come with jobid 0 (syn__cg_job_sluid gives the SLUID). Stops when fn
 * returns non-zero. Returns the number of jobs visited, or -1 with errno
 * if node_rel cannot be read.
 */
int syn__cg_foreach_job(const syn__cg_t *cg, const char *node_rel,
			int (*fn)(uint32_t jobid, const char *job_rel, void *arg), void *arg);

/* What a node cgroup holds (synergy-lend --check). */
typedef struct syn__cg_survey {
	int by_id;               /* job directories named job_<id> (v1: uid_U/job_J) */
	int by_sluid;            /* job directories named by SLUID (v2, Slurm 26.05) */
	int slurm;               /* Slurm's own: slurmd, system (v2) */
	int other;               /* directories of no name Slurm gives */
	char other_name[SYN_KEY_MAX + 1]; /* the first of those */
	char subtree[128];       /* v2: the node cgroup's cgroup.subtree_control */
} syn__cg_survey_t;

/* Count what node_rel holds into out. Returns 0, or -1 with errno when
 * node_rel cannot be read. */
int syn__cg_node_survey(const syn__cg_t *cg, const char *node_rel, syn__cg_survey_t *out);

/*
 * Call fn(node_rel, node_name, arg) for every Slurm node cgroup on this
 * machine (synergy-lend: a machine may run several slurmd). node_name is
 * the NodeName as the layout shows it, or the handle's own node for layouts
 * that do not carry it. Returns the number of nodes, -1 with errno.
 */
int syn__cg_foreach_node(const syn__cg_t *cg,
			 int (*fn)(const char *node_rel, const char *node_name, void *arg),
			 void *arg);

/* ---- CPUs ---- */

/* The CPUs of cgroup rel (its cpuset.cpus; on v2 cpuset.cpus.effective when
 * the cgroup sets none of its own). Returns 0, or -1 with errno. */
int syn__cg_get_cpus(const syn__cg_t *cg, const char *rel, cpu_set_t *set);

/* The same in list syntax, whatever its length (malloc'ed; NULL with errno). */
char *syn__cg_get_cpus_text(const syn__cg_t *cg, const char *rel);

/*
 * Resize the CPUs of job job_rel to target: the job cgroup and its limit
 * cgroups, in the order the kernel accepts (narrow: limit cgroups, then the
 * job; widen: the job's parents, the job, then its limit cgroups). Each
 * limit cgroup keeps what it holds of target and gains what the job gains;
 * one left with nothing of target falls back to allotted & target. The
 * threads of the limit cgroups are then pinned to their cgroup's CPUs (a
 * widened cpuset does not widen a pinned thread). Returns 0, or -1 with
 * errno and err; a failure leaves the cgroups already changed as they are.
 */
int syn__cg_job_set_cpus(const syn__cg_t *cg, const char *job_rel, const cpu_set_t *target,
			 const cpu_set_t *allotted, char *err, size_t errlen);

/*
 * Write cpus (list syntax) to one cgroup's cpuset.cpus with one write(2),
 * so that the kernel's rules decide. Returns 0, or -1 with errno and err.
 */
int syn__cg_set_cpus(const syn__cg_t *cg, const char *rel, const char *cpus, char *err,
		     size_t errlen);

/* ---- CPU time and priority ---- */

/*
 * Make job_rel's tasks (its limit cgroups' processes) idle against every
 * other job of the node (idle 1), or give them their normal weight back
 * (idle 0). Root only. Two levels, since the kernel weighs groups before
 * threads (autogroups, per-job cpu cgroups): the job as a group (v2: its
 * job cgroup's cpu.idle; v1: its processes moved into an idle cpu cgroup
 * beside them, see cgroup_v1.c), lowered first and restored last; and
 * every thread at SCHED_IDLE (those at SCHED_IDLE back to SCHED_OTHER).
 * Walks again until a walk finds nothing to change, so that threads and
 * processes created meanwhile are caught (they inherit their creator's
 * policy and cgroup). Returns the number of threads changed, or -1 with
 * errno and err (ENOTSUP: the job cannot be made idle as a group, no cpu
 * controller with cpu.idle where it runs; EAGAIN: threads kept appearing
 * at another policy). The cleanup of a job removes the v1 idle cgroup.
 */
int syn__cg_job_sched_idle(const syn__cg_t *cg, const char *job_rel, int idle, char *err,
			   size_t errlen);

/*
 * The CPU time job_rel's processes used, in ns, to compare with a later
 * reading: v2 cpu.stat usage_usec; v1 cpuacct.usage of the job when that
 * hierarchy has it, else, from /proc/<pid>/stat of each process in the
 * job's cgroups, its own CPU time and that of the children it reaped
 * (clock ticks: a process that ended counts once its parent in the job
 * reaped it; one whose parent was not in the job takes its time along).
 * Returns 0, or -1 with errno.
 */
int syn__cg_job_cpu_ns(const syn__cg_t *cg, const char *job_rel, uint64_t *ns);

/* ---- memory ---- */

/* The memory limit of cgroup rel in bytes (UINT64_MAX: none). 0 or -1. */
int syn__cg_get_mem(const syn__cg_t *cg, const char *rel, uint64_t *bytes);

/*
 * The memory of cgroup rel (and its descendants) that reclaim cannot free
 * without swap: anonymous memory and tmpfs/shared memory pages (v1
 * memory.stat total_rss + total_shmem, v2 anon + shmem). A limit at or
 * above it can be set without killing anything. 0, or -1 with errno.
 */
int syn__cg_mem_pinned(const syn__cg_t *cg, const char *rel, uint64_t *bytes);

/*
 * Set the memory limit of job job_rel and of its limit cgroups to bytes
 * (raise: the job first; lower: the limit cgroups first). Returns 0, or -1
 * with errno and err (EBUSY: the kernel could not reclaim down to it).
 */
int syn__cg_job_set_mem(const syn__cg_t *cg, const char *job_rel, uint64_t bytes, char *err,
			size_t errlen);

/* ---- a Synergy job's tasks ---- */

/*
 * A task of job_rel is starting (slurmstepd, root, right after fork): make
 * the job's limit cgroups exist and hold pid. v1: create the synergy child
 * if missing, with the job's CPUs and memory nodes and memory limit
 * mem_bytes (0: none of its own), and move pid into it; v2: nothing to
 * create, pid stays in its task leaf. The CPUs the task should be pinned
 * to are returned in set. Returns 0, or -1 with errno and err.
 */
int syn__cg_task_enter(const syn__cg_t *cg, const char *job_rel, pid_t pid,
		       uint64_t mem_bytes, cpu_set_t *set, char *err, size_t errlen);

/*
 * From the calling task's own view (task_init, the user's identity): 1 if
 * /proc/self/cgroup shows the task inside one of job jobid's limit
 * cgroups, with that cgroup's CPUs in set; 0 if not; -1 with errno.
 */
int syn__cg_self_in_limits(const syn__cg_t *cg, uint32_t jobid, cpu_set_t *set);

/* The union of the CPUs of job_rel's limit cgroups into set: 1 when it has
 * some, 0 when none (set empty), -1 with errno. */
int syn__cg_job_limit_cpus(const syn__cg_t *cg, const char *job_rel, cpu_set_t *set);

/* 1 if job_rel has a limit cgroup (v1: the synergy child exists; v2: a step
 * with a user cgroup runs). */
int syn__cg_job_has_limits(const syn__cg_t *cg, const char *job_rel);

/* 1 if a thread runs anywhere in job_rel's tree (slurmstepd included),
 * 0 if none, -1 with errno (the cgroup gone). */
int syn__cg_job_has_tasks(const syn__cg_t *cg, const char *job_rel);

/*
 * A step of job jobid ends (its directory name, "step_0", "step_batch"...):
 * v1 moves the step's processes that are still in the synergy child back
 * into the job's cgroup, so that Slurm kills them and removes its cgroups.
 * v2: nothing. Returns the number of processes moved, or -1 with errno.
 */
int syn__cg_step_leave(const syn__cg_t *cg, const char *job_rel, uint32_t jobid,
		       const char *step_dir, char *err, size_t errlen);

/*
 * Remove what Synergy created for job_rel once no process is in it (v1:
 * the synergy child, every controller; v2: nothing). Returns 0 when nothing
 * of ours is left, -1 with errno EBUSY while processes remain, or another
 * errno on failure.
 */
int syn__cg_job_cleanup(const syn__cg_t *cg, const char *job_rel, char *err, size_t errlen);

/*
 * The job has ended on this node (its epilog), and what Synergy made in its
 * cgroup is gone (syn__cg_job_cleanup returned 0): remove the job's own
 * directory, and its user's, in the hierarchies where Synergy had a child,
 * each only if empty, under Slurm's lock of the node's cgroup root (waited
 * for at most lock_ms). v1 only: Slurm removes them when the job's last
 * step ends, once, and a child of ours still there then (its processes
 * exiting on a loaded node) would have left them for good. Anything but
 * Slurm's uid_<u>/job_<j> shape is left alone; so is v2. Returns 0, or -1
 * with errno and err when a lock could not be taken.
 */
int syn__cg_job_gone(const syn__cg_t *cg, const char *job_rel, int lock_ms, char *err,
		     size_t errlen);
/* How long the epilog waits for Slurm's lock (it holds it for a few rmdirs). */
#define SYN__CG_LOCK_MS 2000

#endif
