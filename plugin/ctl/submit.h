/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * submit.h: the decision job_submit/synergy makes for one job, apart from
 * Slurm's structures so that it is unit-tested without slurmctld.
 */
#ifndef SYN_PLUGIN_SUBMIT_H
#define SYN_PLUGIN_SUBMIT_H

#include <stdint.h>

#include "plugin/shared/util.h"

/* What the job asked for, taken from job_desc_msg_t. */
typedef struct syn__job_req {
	char *const *spank_env;     /* job_desc->spank_job_env */
	uint32_t spank_env_size;
	const char *tres_per_node;  /* e.g. "gres:gpu:2" */
	const char *tres_per_job;   /* e.g. "gres:gpu:4" (--gpus) */
	uint32_t nodes;             /* min_nodes, 0 if unset */
	const char *partition;      /* job_desc->partition (comma list), NULL: default */
	uint32_t tasks_per_node;    /* 0 if unset */
	int user_cpus;              /* the user set cpus-per-task/min_cpus/cpus-per-gpu */
	int user_mem;               /* the user set --mem/--mem-per-cpu/--mem-per-gpu */
	int array;                  /* a job array (--array) */
	uint32_t uid;
} syn__job_req_t;

typedef enum syn__action {
	SYN__UNTOUCHED = 0,  /* not a Synergy job, or --synergy=off */
	SYN__PROPORTIONAL,   /* Synergy job left GPU-proportional (see comment) */
	SYN__SIZED,          /* cpus_per_task, min_cpus, mem_mb are to be set */
	SYN__REJECT,         /* malformed synergy option: err says what */
} syn__action_t;

typedef struct syn__decision {
	syn__action_t action;
	uint16_t cpus_per_task;
	uint32_t min_cpus;
	uint64_t mem_mb;            /* per node */
	int gpus_per_node;          /* GPUs the request asks for per node (SIZED) */
	int profiling_requested;    /* a request file was queued */
	int profiling_in_place;     /* the job took its key's claim and profiles itself */
	char key[SYN_KEY_MAX + 1];
	char group[SYN_KEY_MAX + 1]; /* its group when it names one and has a grant */
	char comment[320];          /* for AdminComment ("synergy: ...") */
	char grant[512];            /* SIZED: the grant for the node (jobrec.h), else "" */
	char err[256];              /* for err_msg when REJECT, log line otherwise */
} syn__decision_t;

/*
 * Remove every copy of the grant variable (SYN__GRANT_VAR, also with the
 * "SPANK_" prefix Slurm adds on the node) from a spank environment, so
 * that only job_submit's own decision can reach the node. Compacts the
 * array in place and returns the new size; removed strings are handed to
 * free_fn.
 */
uint32_t syn__strip_grant(char **env, uint32_t n, void (*free_fn)(char *));

/*
 * Decide for one job: read SYNERGY_PROFILE_KEY, SYNERGY_GROUP_NAME and
 * SYNERGY from its spank environment, look the key up in the store, ask
 * the policy for the best-case demand on the configured node shape. Never
 * fails: every error becomes SYN__PROPORTIONAL with a reason in err, except
 * a malformed synergy option, which is SYN__REJECT. A job with a grant
 * that names a group carries it in the grant ("u<uid>-g-NAME"); the
 * comment then says "group=...", or "group=array" for a job array (each
 * task's node adds the array's group, jobrec.h).
 */
void syn__decide(const syn_conf_t *conf, const syn__job_req_t *req, syn__decision_t *d);

#endif
