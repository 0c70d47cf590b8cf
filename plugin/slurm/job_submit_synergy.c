/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * job_submit_synergy.c: job_submit/synergy, the controller side of Synergy.
 *
 * For each submitted job that carries a profile key (SYNERGY_PROFILE_KEY in
 * its spank environment, put there by spank_synergy.so) it sets the job's
 * CPU and memory request from the profile and the policy (submit.c),
 * records the decision in AdminComment (with the coordinated-prep group the
 * job joins: "group=u<uid>-g-NAME" for --synergy-group, "group=array" for
 * a job array), and otherwise leaves the job alone.
 * It never rejects a valid job: a missing store, a corrupt profile or a
 * policy error leaves the job GPU-proportional with a log line; only a
 * malformed synergy option is refused, with a message saying what is wrong.
 *
 * Runs inside slurmctld under its locks, for every job of every user, and
 * from Slurm 23.02 for many jobs at once (one per RPC thread): it reads one
 * profile, keeps synergy.conf and slurm.conf parsed until they change (one
 * stat each per job), asks munged to seal a sized job's grant, and writes
 * at most one small claim or request file (submit.c says how concurrent
 * submissions share those). Built against the installed Slurm headers
 * (plugin/slurm/slurm_compat.h holds what differs between releases);
 * plugin_version must equal the running slurmctld's SLURM_VERSION_NUMBER.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "plugin/slurm/slurm_compat.h"

#include "common/conf.h"
#include "plugin/shared/grantauth.h"
#include "plugin/shared/jobrec.h"
#include "plugin/ctl/submit.h"
#include "plugin/shared/util.h"

/* Slurm frees what a plugin leaves in job_desc with its own allocator, so
 * strings handed to it must come from there (slurmctld exports these). */
extern char *slurm_xstrdup(const char *str);
extern void slurm_xfree(void **item);
extern void *slurm_xrecalloc(void **item, size_t count, size_t size, bool clear, bool try_,
			     const char *file, int line, const char *func);
extern void slurm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern void slurm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* job_record_t is private to slurmctld: only passed through here. */
struct job_record;

const char plugin_name[] = "Synergy job_submit plugin";
const char plugin_type[] = "job_submit/synergy";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

int init(void);
int fini(void);
int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg);
int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr,
	       uint32_t submit_uid SYN_JOB_MODIFY_ERR_MSG);

/*
 * synergy.conf: $SYNERGY_CONF, else beside slurm.conf ($SLURM_CONF's
 * directory), else the default (syn_conf_default_path). Read again only
 * when the file changed (its stamp, common/file.h: a stat per job, not a
 * read and a parse), so that changes need no restart; a file that does not
 * load is read (and logged) at every submission until it is fixed. Slurm
 * 23.02 and later call job_submit concurrently, hence the lock. Returns 0
 * or -1 (logged).
 */
static pthread_mutex_t conf_mu = PTHREAD_MUTEX_INITIALIZER;
static syn_conf_t conf_cache;
static syn_file_stamp_t conf_stamp;
static int conf_cached;

static int load_conf(syn_conf_t *conf)
{
	char def[4096];
	const char *path = syn_conf_default_path(def, sizeof(def));
	syn_file_stamp_t st;
	syn_error_t err;
	int stamped, rv = 0;

	pthread_mutex_lock(&conf_mu);
	stamped = syn_file_stamp(path, &st) == 0;
	if (stamped && conf_cached && syn_file_stamp_fresh(&conf_stamp, &st)) {
		*conf = conf_cache;
		goto out;
	}
	conf_cached = 0;
	syn_conf_defaults(conf);
	if (syn_conf_load(conf, path, &err) < 0) {
		slurm_error("synergy: %s; jobs stay GPU-proportional", err.text);
		rv = -1;
		goto out;
	}
	if (stamped) {
		conf_cache = *conf;
		conf_stamp = st;
		conf_cached = 1;
	}
out:
	pthread_mutex_unlock(&conf_mu);
	return rv;
}

int init(void)
{
	syn_conf_t conf;

	if (load_conf(&conf) == 0)
		slurm_info("synergy: job_submit loaded, profiles in %s", conf.store_dir);
	return SLURM_SUCCESS;
}

int fini(void)
{
	return SLURM_SUCCESS;
}

static void set_admin_comment(job_desc_msg_t *job_desc, const char *text)
{
	if (!text[0])
		return;
	if (job_desc->admin_comment)
		slurm_xfree((void **)&job_desc->admin_comment);
	job_desc->admin_comment = slurm_xstrdup(text);
}

static void xfree_str(char *s)
{
	slurm_xfree((void **)&s);
}

/*
 * Where munged is, from slurm.conf ($SLURM_CONF, else /etc/slurm/slurm.conf):
 * read again only when the file changed (as synergy.conf above), since it
 * can be large and job_submit runs for every job.
 */
static pthread_mutex_t auth_mu = PTHREAD_MUTEX_INITIALIZER;
static syn__grantauth_t auth;
static syn_file_stamp_t auth_stamp;
static int auth_ok;

static int auth_get(syn__grantauth_t *out, char *err, size_t errlen)
{
	const char *path = getenv("SLURM_CONF");
	syn_file_stamp_t st;
	int rv = 0;

	if (!path || !*path)
		path = "/etc/slurm/slurm.conf";
	pthread_mutex_lock(&auth_mu);
	if (syn_file_stamp(path, &st) < 0) {
		rv = syn_errbuf(err, errlen, errno, "%s: %s", path, strerror(errno));
	} else if (!auth_ok || !syn_file_stamp_fresh(&auth_stamp, &st)) {
		auth_ok = syn__grantauth_load(path, &auth, err, errlen) == 0;
		auth_stamp = st;
		rv = auth_ok ? 0 : -1;
	}
	if (rv == 0)
		*out = auth;
	pthread_mutex_unlock(&auth_mu);
	return rv;
}

/* Put "SYNERGY_GRANT=<grant sealed for the node>" into the job's spank
 * environment (any copy the user sent was stripped before). Returns 0, or
 * -1 (logged) when it cannot be sealed or Slurm's allocator refused: the
 * job then runs GPU-proportional. */
static int add_grant(job_desc_msg_t *job_desc, const char *key, const char *grant)
{
	syn__grantauth_t ga;
	char err[300], *cred = NULL, *entry;
	uint32_t n = job_desc->spank_job_env_size;
	size_t len;
	int rv = -1;

	if (auth_get(&ga, err, sizeof(err)) < 0 ||
	    syn__grant_seal(&ga, grant, &cred, err, sizeof(err)) < 0) {
		slurm_error("synergy: key=%s: cannot seal the job's grant: %s; job stays "
			    "GPU-proportional", key, err);
		return -1;
	}
	len = strlen(SYN__GRANT_VAR) + strlen(cred) + 2;
	entry = malloc(len);
	if (!entry)
		goto out;
	snprintf(entry, len, "%s=%s", SYN__GRANT_VAR, cred);
	if (!slurm_xrecalloc((void **)&job_desc->spank_job_env, n + 2, sizeof(char *), true, true,
			     __FILE__, __LINE__, __func__)) {
		slurm_error("synergy: key=%s: cannot add the grant to job's environment; job stays "
			    "GPU-proportional", key);
		goto out;
	}
	job_desc->spank_job_env[n] = slurm_xstrdup(entry);
	job_desc->spank_job_env_size = n + 1;
	rv = 0;
out:
	free(entry);
	free(cred);
	return rv;
}

int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	syn_conf_t conf;
	syn__job_req_t req;
	syn__decision_t d;

	if (load_conf(&conf) < 0)
		conf.enabled = 0;
	memset(&req, 0, sizeof(req));
	req.spank_env = job_desc->spank_job_env;
	req.spank_env_size = job_desc->spank_job_env_size;
	req.tres_per_node = job_desc->tres_per_node;
	req.tres_per_job = job_desc->tres_per_job;
	req.nodes = job_desc->min_nodes != NO_VAL ? job_desc->min_nodes : 0;
	req.partition = job_desc->partition;
	req.tasks_per_node = job_desc->ntasks_per_node != NO_VAL16 ?
			     job_desc->ntasks_per_node : 0;
	if (!req.tasks_per_node && job_desc->num_tasks != NO_VAL && job_desc->num_tasks > 0)
		req.tasks_per_node = job_desc->num_tasks / (req.nodes ? req.nodes : 1);
	req.user_cpus = job_desc->cpus_per_task != NO_VAL16 || job_desc->cpus_per_tres != NULL;
	req.user_mem = job_desc->pn_min_memory != NO_VAL64 || job_desc->mem_per_tres != NULL;
	req.array = job_desc->array_inx != NULL && job_desc->array_inx[0] != '\0';
	/* The job's owner (root may submit for another user with --uid). */
	req.uid = job_desc->user_id != NO_VAL ? job_desc->user_id : submit_uid;

	/* Only job_submit's own decision may reach the node. */
	job_desc->spank_job_env_size = syn__strip_grant(job_desc->spank_job_env,
							job_desc->spank_job_env_size, xfree_str);
	/* A disabled plugin still refuses malformed options: they are wrong
	 * whatever the configuration. */
	syn__decide(&conf, &req, &d);
	switch (d.action) {
	case SYN__REJECT:
		slurm_info("%s (uid %u)", d.err, (unsigned)submit_uid);
		if (err_msg)
			*err_msg = slurm_xstrdup(d.err);
		return ESLURM_INVALID_JOB_DEFAULTS;
	case SYN__SIZED:
		if (add_grant(job_desc, d.key, d.grant) < 0) {
			/* Say so where the user looks. */
			set_admin_comment(job_desc, "synergy: no sealed grant (munge?): "
					  "GPU-proportional");
			break;
		}
		job_desc->cpus_per_task = d.cpus_per_task;
		job_desc->min_cpus = d.min_cpus;
		job_desc->pn_min_memory = d.mem_mb;
		/* select/cons_tres also applies the partition's DefMemPerGPU to
		 * every GPU job, as a floor beside --mem: a job sized BELOW its
		 * share (no cache) would still be scheduled at the share. An
		 * explicit memory per GPU replaces that default. */
		if (d.gpus_per_node > 0) {
			char tres[64];

			snprintf(tres, sizeof(tres), SYN_TRES_GPU ":%llu",
				 (unsigned long long)(d.mem_mb / (uint64_t)d.gpus_per_node));
			if (job_desc->mem_per_tres)
				slurm_xfree((void **)&job_desc->mem_per_tres);
			job_desc->mem_per_tres = slurm_xstrdup(tres);
		}
		slurm_info("%s (uid %u)", d.comment, (unsigned)submit_uid);
		set_admin_comment(job_desc, d.comment);
		break;
	case SYN__PROPORTIONAL:
		if (d.grant[0])
			add_grant(job_desc, d.key, d.grant);
		if (d.err[0])
			slurm_error("%s; job stays GPU-proportional", d.err);
		slurm_info("%s (uid %u)", d.comment, (unsigned)submit_uid);
		set_admin_comment(job_desc, d.comment);
		break;
	case SYN__UNTOUCHED:
		set_admin_comment(job_desc, d.comment);
		break;
	}
	return SLURM_SUCCESS;
}

/* Updates go through unchanged: the tuner resizes pending jobs itself.
 * From 23.02 slurmctld also passes err_msg, for a refusal's reason; this
 * plugin refuses no update. */
int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr,
	       uint32_t submit_uid SYN_JOB_MODIFY_ERR_MSG)
{
	return SLURM_SUCCESS;
}
