/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_int.h: what the three contexts of the Synergy SPANK plugin share.
 *
 * The plugin is split by where Slurm runs it, as pyxis does:
 *   spank_synergy.c  entry points, options and the dispatch on context;
 *   spank_client.c   sbatch/salloc/srun: check options, forward them;
 *   spank_remote.c   slurmstepd (root, then the task as the user): put
 *                    tasks under the job's limits, export the loader
 *                    contract, lend idle cores, clean up at step end;
 *   spank_jobscript.c  slurmd's job prolog and epilog (root): turn the
 *                    grant job_submit decided into the node's job record,
 *                    and remove everything of the job at its end; and
 *                    slurmd's start (the cache directory, made safe).
 *   spank_node.c     what the node-side contexts share.
 * The node side (spank_remote.c, spank_jobscript.c, spank_node.c and the
 * libraries below them) is a module of its own, spank_synergy_node.so,
 * which spank_synergy.so loads only on the nodes (syn__spank_node_t): the
 * clients, run for every job of every user, load nothing but the options.
 * Every hook logs "synergy: ..." and returns success: no hook fails a job
 * because of this plugin (a failure leaves the job GPU-proportional); only
 * the client refuses a malformed option. A hook returns 0 or -1, never
 * anything else: from Slurm 25.05 any non-zero return fails the step.
 */
#ifndef SYN_PLUGIN_SPANK_INT_H
#define SYN_PLUGIN_SPANK_INT_H

#include <stdint.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "plugin/node/cgroup.h"
#include "plugin/node/inplace.h"
#include "plugin/shared/jobrec.h"
#include "plugin/shared/util.h"

/* The plugin's configuration (plugstack arguments and synergy.conf). */
extern syn_conf_t syn__spank_conf;
/* 1 when the configuration loaded without error. */
extern int syn__spank_conf_ok;
/* Load the configuration again, as it is now, into c (a long-lived
 * thread's view: synergy.conf may have changed since the step began).
 * Returns 0, or -1 when it no longer loads. */
int syn__spank_conf_reload(syn_conf_t *c);

/* Options as the client parsed them (client context only). */
typedef struct syn__spank_opts {
	char key[SYN_KEY_MAX + 1];
	int key_set;
	char group[SYN_KEY_MAX + 1];  /* --synergy-group NAME */
	int group_set;
	int off;      /* --synergy=off */
	int bad;      /* an option was malformed */
} syn__spank_opts_t;
extern syn__spank_opts_t syn__spank_opts;

/* Client context. */
int syn__client_post_opt(spank_t sp);

/*
 * The node module's hooks (spank_synergy_node.so exports one of these as
 * syn__spank_node): each returns 0 or -1. init is slurm_spank_init in
 * slurmd and slurmstepd; job_prolog and job_epilog get the plugstack
 * arguments too (Slurm calls no init in the job script context). size and
 * version tell a module of another build, which is not used.
 */
typedef struct syn__spank_node {
	size_t size;         /* sizeof(syn__spank_node_t) */
	const char *version; /* PACKAGE_VERSION */
	int (*init)(spank_t sp, int ac, char **av);
	int (*init_post_opt)(spank_t sp);
	int (*task_post_fork)(spank_t sp);
	int (*task_init)(spank_t sp);
	int (*task_exit)(spank_t sp);
	int (*exit)(spank_t sp);
	int (*job_prolog)(spank_t sp, int ac, char **av);
	int (*job_epilog)(spank_t sp, int ac, char **av);
} syn__spank_node_t;
extern const syn__spank_node_t syn__spank_node;
#define SYN__SPANK_NODE_MODULE "spank_synergy_node.so"
#define SYN__SPANK_NODE_SYMBOL "syn__spank_node"

/* slurmstepd context. */
int syn__remote_init_post_opt(spank_t sp);
int syn__remote_task_post_fork(spank_t sp);
int syn__remote_task_init(spank_t sp);
int syn__remote_task_exit(spank_t sp);
int syn__remote_exit(spank_t sp);

/* slurmd and its prolog/epilog. */
int syn__slurmd_init(spank_t sp);
int syn__job_prolog(spank_t sp);
int syn__job_epilog(spank_t sp);

/*
 * Shared by the node-side contexts: this node's NodeName (SLURMD_NODENAME
 * in slurmd's and slurmstepd's own environment, else the short host name),
 * and a cgroup layer handle for it built from synergy.conf and Slurm's
 * cgroup.conf. NULL (logged once) when the node's cgroups cannot be used.
 */
const char *syn__node_name(void);
syn__cg_t *syn__node_cgroup(void);

struct syn__agent;
/*
 * The node agent (lend.h) for this node: its cgroup, StateDir, CacheDir,
 * and its shape (GPUs and memory from NodeGPUs/NodeMemMB, else from
 * slurm.conf's line for the node). NULL (logged) without a usable cgroup.
 */
const struct syn__agent *syn__node_agent(void);

/* The per-job cache directory name under CacheDir ("job_<id>"). */
#define SYN__CACHE_JOB_FMT "job_%u"

/*
 * Make job jobid (of uid, gid) on node a member of the group r->group names
 * (not ""): make or take over the group's directory under GroupDir (the
 * user's, mode 0700), write r, group included, as the job's record in
 * StateDir dfd, and log that the job joined. The caller holds the node's
 * lock. On failure r->group is cleared (the job runs outside the group;
 * its record is left as it was). Returns 0 or -1 (logged).
 */
int syn__group_join(int dfd, const char *node, uint32_t jobid, uid_t uid, gid_t gid,
		    syn__jobrec_t *r);

/* Remove CacheDir/job_<id> and everything in it, never following a link. */
void syn__cache_dir_remove(uint32_t jobid);

/* Fill x for job jobid of user uid on this node (inplace.h), from the
 * configuration and the node agent's view of the node's CPUs. */
void syn__inplace_fill(syn__inplace_t *x, uint32_t jobid, uint32_t uid, int final);

/* syn__inplace_collect for job jobid of user uid (final: the job ended),
 * logging what came of it. Returns its SYN__INPLACE_* or -1. */
int syn__inplace_run(uint32_t jobid, uint32_t uid, int final);

/* CheckFreq checkpoint directories (spank_ckpt.c, plugin/node/ckptdir.h), when
 * CheckpointDir is set: made at each step's init (root), exported to the
 * tasks (as the user), removed when the batch script exits 0 (root), and
 * swept of directories unused for CheckpointRetention in the epilog. */
void syn__ckpt_step_init(spank_t sp);
void syn__ckpt_task_init(spank_t sp);
void syn__ckpt_task_exit(spank_t sp);
void syn__ckpt_epilog(spank_t sp);

/* Log through Slurm: lend.h's log callback. */
void syn__spank_log(int is_error, const char *msg, void *arg);

#endif
