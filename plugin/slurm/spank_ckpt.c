/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_ckpt.c: the SPANK plugin's part in CheckFreq checkpoints: each
 * job's checkpoint directory under CheckpointDir (plugin/node/ckptdir.h), and
 * SYNERGY_CKPT_DIR in its tasks' environment (synergy_env.h).
 *
 * Every job gets one when CheckpointDir is set, sized by Synergy or not:
 * a directory and a variable cost nothing, and a job that does not
 * checkpoint leaves it empty (the sweep takes it). The hooks:
 *   each step's init (slurmstepd, root): make or take over the job's
 *     directory and touch it (retention counts from the last use);
 *   task_init (the task, as the user): export SYNERGY_CKPT_DIR; the batch
 *     script's logs the directory, with the job's restart count and the
 *     checkpoints found there: a requeued job says what it resumes from;
 *   the batch step's task exit (root): a batch script that exited 0 ends
 *     the job COMPLETED, so its directory goes; any other end (a signal,
 *     preemption, requeue, time limit, a failure) keeps it for the job's
 *     next run;
 *   the job epilog (slurmd, root): the sweep of directories unused for
 *     CheckpointRetention, at most once per hour (or per tenth of the
 *     retention) per CheckpointDir, however many nodes share it (a stamp
 *     file in it, root's).
 * Nothing here fails a job: a directory that cannot be made is logged and
 * the job runs without SYNERGY_CKPT_DIR.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_env.h"
#include "plugin/node/ckptdir.h"
#include "plugin/slurm/spank_int.h"

#define conf syn__spank_conf

/* Slurm's count of a job's requeues, in its tasks' environment
 * (S_SLURM_RESTART_COUNT reads 0 in a step's init in 22.05). */
#define RESTART_COUNT_ENV "SLURM_RESTART_COUNT"

/* The sweep's stamp in CheckpointDir (root's, writable by root only). */
#define SWEEP_STAMP ".synergy-sweep"

/* The job's directory, found in the step's init; forked tasks inherit it. */
static struct {
	int ok;
	int created;   /* made by this step */
	uint32_t jobid;
	uid_t uid;
	char name[SYN__CKPTDIR_NAME_MAX];
	char path[SYN_PATH_MAX + 64];
} ck;

static int enabled(void)
{
	return syn__spank_conf_ok && conf.enabled && conf.ckpt_dir[0];
}

static int is_batch(spank_t sp)
{
	uint32_t stepid;

	return spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
	       stepid == SLURM_BATCH_SCRIPT;
}

void syn__ckpt_step_init(spank_t sp)
{
	uint32_t jobid, array_id = 0, task_id = 0;
	char err[300];
	gid_t gid;
	int created;

	if (!enabled() || spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &ck.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
		return;
	if (spank_get_item(sp, S_JOB_ARRAY_ID, &array_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &task_id) != ESPANK_SUCCESS)
		array_id = 0;
	if (syn__ckptdir_name(jobid, array_id, task_id, ck.name, sizeof(ck.name)) < 0)
		return;
	if (syn__ckptdir_make(conf.ckpt_dir, ck.uid, gid, ck.name, ck.path, sizeof(ck.path),
			      &created, err, sizeof(err)) < 0) {
		slurm_error("synergy: job %u: no checkpoint directory: %s", (unsigned)jobid, err);
		return;
	}
	ck.ok = 1;
	ck.created = created;
	ck.jobid = jobid;
}

void syn__ckpt_task_init(spank_t sp)
{
	uint32_t restarts = 0;
	char val[16];
	uint64_t v;
	int n;

	if (!ck.ok)
		return;
	spank_setenv(sp, SYNERGY_ENV_CKPT_DIR, ck.path, 1);
	/* Said once per run of the job, by its batch script's task, whose
	 * environment has the restart count. */
	if (!is_batch(sp))
		return;
	if (spank_getenv(sp, RESTART_COUNT_ENV, val, sizeof(val)) == ESPANK_SUCCESS &&
	    syn_parse_u64(val, 0, UINT32_MAX, &v) == 0)
		restarts = (uint32_t)v;
	n = syn__ckptdir_count(conf.ckpt_dir, ck.uid, ck.name);
	if (ck.created)
		slurm_info("synergy: job %u: checkpoint directory %s (new)", (unsigned)ck.jobid,
			   ck.path);
	else
		slurm_info("synergy: job %u: checkpoint directory %s, restart %u: %d checkpoint "
			   "file(s) there to resume from", (unsigned)ck.jobid, ck.path,
			   (unsigned)restarts, n);
}

void syn__ckpt_task_exit(spank_t sp)
{
	char err[300];
	int status, rc;

	if (!ck.ok || !is_batch(sp) ||
	    spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return;
	rc = syn__ckptdir_remove(conf.ckpt_dir, ck.uid, ck.name, err, sizeof(err));
	if (rc < 0)
		slurm_error("synergy: %s", err);
	else if (rc > 0)
		slurm_info("synergy: the batch script exited 0 (the job completes): removed "
			   "its checkpoint directory %s", ck.path);
	ck.ok = 0;
}

void syn__ckpt_epilog(spank_t sp)
{
	char stamp[SYN_PATH_MAX + 32], err[300];
	uint64_t every;
	struct stat st;
	time_t now = time(NULL);
	int fd, n;

	(void)sp;
	if (!enabled() || !conf.ckpt_retention)
		return;
	every = conf.ckpt_retention / 10 < 3600 ? conf.ckpt_retention / 10 : 3600;
	snprintf(stamp, sizeof(stamp), "%s/" SWEEP_STAMP, conf.ckpt_dir);
	if (lstat(stamp, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime <= now &&
	    (uint64_t)(now - st.st_mtime) < every)
		return;
	n = syn__ckptdir_sweep(conf.ckpt_dir, now, conf.ckpt_retention, err, sizeof(err));
	if (n < 0) {
		slurm_error("synergy: checkpoint sweep: %s", err);
		return;
	}
	/* The directory is root's only (checked by the sweep): no link here
	 * but root's own. */
	fd = open(stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
	if (n > 0)
		slurm_info("synergy: removed %d checkpoint director%s unused for %llu s under %s", n,
			   n == 1 ? "y" : "ies", (unsigned long long)conf.ckpt_retention,
			   conf.ckpt_dir);
}
