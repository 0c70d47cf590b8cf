/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm_compat.h: where Slurm's API differs between the releases the
 * plugins and synergyd are built against (22.05, 24.11 and 26.05 are built
 * and tested; doc/slurm-versions.md gives the evidence for each item).
 * This is the only file that tests SLURM_VERSION_NUMBER: the rest of
 * plugin/slurm/ is written once, through the names below, and behaves the
 * same on every release except where Slurm itself does not.
 *
 * Include it after <slurm/slurm.h>.
 */
#ifndef SYN_PLUGIN_SLURM_COMPAT_H
#define SYN_PLUGIN_SLURM_COMPAT_H

#include <errno.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

#define SYN_SLURM_AT_LEAST(major, minor) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(major, minor, 0))

/*
 * A list iterator (partitions' job_defaults_list). `ListIterator` is gone
 * from 24.05 and `list_itr_t` came in 23.02; both name a pointer to the
 * same struct, which every release declares.
 */
typedef struct listIterator *syn_list_itr_t;

/*
 * The text of the error of the libslurm call that just failed. libslurm
 * sets errno; slurm_get_errno(), which only returned it, was removed in
 * 24.11.
 */
static inline const char *syn_slurm_error(void)
{
	return slurm_strerror(errno);
}

/*
 * The job id of a job descriptor (slurm_update_job) and of the answer to a
 * submission: from 25.11 both carry a slurm_step_id_t `step_id` (job id
 * and SLUID) in place of `job_id`; slurm_init_job_desc_msg() leaves its
 * SLUID 0, so the job is found by its id, as before.
 */
#if SYN_SLURM_AT_LEAST(25, 11)
#define SYN_JOB_DESC_JOB_ID(d) ((d)->step_id.job_id)
#define SYN_SUBMIT_RESP_JOB_ID(r) ((r)->step_id.job_id)
#else
#define SYN_JOB_DESC_JOB_ID(d) ((d)->job_id)
#define SYN_SUBMIT_RESP_JOB_ID(r) ((r)->job_id)
#endif

/*
 * job_submit's job_modify(): slurmctld passes a fourth argument, char
 * **err_msg (a message for the user, which Slurm frees), from 23.02; 22.05
 * passes three. Declare it as `job_modify(job_desc, job_ptr, submit_uid
 * SYN_JOB_MODIFY_ERR_MSG)`.
 */
#if SYN_SLURM_AT_LEAST(23, 2)
#define SYN_JOB_MODIFY_ERR_MSG , char **err_msg
#else
#define SYN_JOB_MODIFY_ERR_MSG
#endif

/*
 * How a GPU is named in a TRES request that slurmctld parses (mem_per_tres,
 * cpus_per_tres, tres_per_node...): "gres:gpu" up to 23.02, "gres/gpu"
 * (TRES type/name) from 23.11, which refuses the old spelling ("Invalid
 * Trackable RESource (TRES) specification"). What Slurm hands job_submit
 * is parsed in either spelling (plugin/shared/slurmtext.c); only strings
 * the plugin writes for Slurm use this.
 */
#if SYN_SLURM_AT_LEAST(23, 11)
#define SYN_TRES_GPU "gres/gpu"
#else
#define SYN_TRES_GPU "gres:gpu"
#endif

#endif
