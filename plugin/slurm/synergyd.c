/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergyd: the Synergy tuner, a small daemon on the controller host.
 *
 * Every round it loads partitions, nodes and jobs from slurmctld (libslurm)
 * and applies the TUNE rule to pending Synergy jobs: job_submit/synergy
 * sizes a job within its share of the node, but a partition whose
 * DefCpuPerGPU or DefMemPerGPU is below the node's per-GPU amounts makes
 * that share larger than what a GPU-proportional job asks; such a job that
 * waits for resources while some node has the GPUs it needs free is moved
 * back to the partition's defaults, so that it starts instead of waiting.
 * For each queued profiling request it submits one profiling job
 * (ProfileCommand, as ProfileUser) and files the profile it left. Every round it also exports the node shapes of each partition
 * for job_submit/synergy (NodeShapesFile, shapes.h), which must not call
 * slurmctld from inside it, and removes the claims on profiling a key in
 * place (claim.h) whose job ended without releasing them. After each round it writes a status file and
 * node_exporter textfile metrics. A failed RPC (slurmctld restarting)
 * is logged and the next round tries again; the daemon never exits for it.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <pwd.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "plugin/slurm/slurm_compat.h"

#include "common/conf.h"
#include "common/store.h"
#include "plugin/shared/claim.h"
#include "plugin/ctl/shapes.h"
#include "plugin/ctl/submit.h"
#include "plugin/shared/slurmtext.h"
#include "plugin/shared/util.h"

static volatile sig_atomic_t stop;

typedef struct opts {
	const char *conf;
	const char *status;
	const char *metrics;
	double interval;
	long min_wait;
	int once;
	int dry_run;
	int verbose;
} opts_t;

typedef struct stats {
	unsigned long rounds, downgraded_total, errors_total, profiling_submitted_total;
	unsigned long profiles_filed_total, profiling_failed_total, claims_removed_total;
	int pending_synergy, downgraded, requests, ctld_ok;
	time_t last;
} stats_t;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;

	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(stderr, "%s synergyd: ", ts);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fputs("Usage: synergyd [OPTION]...\n"
	      "Synergy tuner: every round, move pending Synergy jobs that wait for cores or\n"
	      "memory while their GPUs are free back to the GPU-proportional share.\n\n"
	      "  -c, --conf=FILE      synergy.conf (default $SYNERGY_CONF, else beside $SLURM_CONF,\n"
	      "                       else " SYN_CONF_DEFAULT_PATH ")\n"
	      "  -i, --interval=SEC   seconds between rounds (default 30)\n"
	      "  -w, --min-wait=SEC   only jobs pending at least this long (default 0)\n"
	      "  -s, --status=FILE    write a status file after every round\n"
	      "  -m, --metrics=FILE   write node_exporter textfile metrics (*.prom)\n"
	      "  -1, --once           run one round and exit (0: round done, 1: failed)\n"
	      "  -n, --dry-run        decide and log, change no job\n"
	      "  -v, --verbose        log why each pending Synergy job is left alone\n"
	      "  -h, --help           this text\n", f);
}

/* Write path atomically: a temporary file beside it, then rename. */
static int write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;
	int rv = -1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -1;
	f = fopen(tmp, "we");
	if (!f)
		return -1;
	if (fputs(text, f) >= 0 && fclose(f) == 0)
		rv = rename(tmp, path);
	else
		unlink(tmp);
	return rv;
}

static int count_requests(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".req") == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* The partition's GPU-proportional share per GPU. */
static void part_share(const partition_info_msg_t *parts, const char *name,
		       const syn_conf_t *conf, uint64_t *cpu, uint64_t *mem)
{
	uint32_t i;

	*cpu = 0;
	*mem = 0;
	for (i = 0; parts && name && i < parts->record_count; i++) {
		const partition_info_t *p = &parts->partition_array[i];
		if (p->name && strcmp(p->name, name) == 0) {
			/* libslurm fills the list; the string form is kept as a
			 * fallback for what older servers send. */
			if (p->job_defaults_list) {
				syn_list_itr_t it = slurm_list_iterator_create(p->job_defaults_list);
				job_defaults_t *jd;

				while (it && (jd = slurm_list_next(it))) {
					if (jd->type == JOB_DEF_CPU_PER_GPU)
						*cpu = jd->value;
					else if (jd->type == JOB_DEF_MEM_PER_GPU)
						*mem = jd->value;
				}
				if (it)
					slurm_list_iterator_destroy(it);
			} else if (syn__job_defaults(p->job_defaults_str, cpu, mem) < 0) {
				logmsg("partition %s: malformed JobDefaults '%s'", name,
				       p->job_defaults_str);
			}
			break;
		}
	}
	/* Without partition defaults the configured node shape defines the share. */
	if (!*cpu && conf->node_gpus && conf->node_cpus)
		*cpu = conf->node_cpus / conf->node_gpus;
	if (!*cpu)
		*cpu = 1;
	if (!*mem && conf->node_gpus && conf->node_mem_mb)
		*mem = conf->node_mem_mb / conf->node_gpus;
}

/* Most GPUs free on one usable node. */
static int max_free_gpus(const opts_t *o, const node_info_msg_t *nodes)
{
	uint32_t i;
	int best = 0;

	for (i = 0; nodes && i < nodes->record_count; i++) {
		const node_info_t *n = &nodes->node_array[i];
		uint32_t base = n->node_state & NODE_STATE_BASE;
		int free;

		/* slurmctld reports a partly used node as ALLOCATED (MIXED is what
		 * clients derive), so the free GPUs decide, not the state. */
		if (!n->name ||
		    (base != NODE_STATE_IDLE && base != NODE_STATE_MIXED &&
		     base != NODE_STATE_ALLOCATED) ||
		    (n->node_state & NODE_STATE_DRAIN))
			continue;
		free = syn__gres_gpus(n->gres) - syn__gres_gpus(n->gres_used);
		if (o->verbose)
			logmsg("node %s: state %#x gres '%s' used '%s': %d GPU(s) free", n->name,
			       (unsigned)n->node_state, n->gres ? n->gres : "",
			       n->gres_used ? n->gres_used : "", free);
		if (free > best)
			best = free;
	}
	return best;
}

static int downgrade(const opts_t *o, const job_info_t *j, const char *key, int gpus,
		     uint64_t cpu_share, uint64_t mem_share)
{
	job_desc_msg_t d;
	char comment[256], mem_tres[64];
	uint32_t tasks = j->ntasks_per_node && j->ntasks_per_node != NO_VAL16 ?
			 j->ntasks_per_node : 1;
	uint32_t nodes = j->num_nodes ? j->num_nodes : 1;
	uint64_t cpus = cpu_share * (uint64_t)gpus;
	uint16_t cpt = (uint16_t)((cpus + tasks - 1) / tasks);

	uint64_t mem = mem_share * (uint64_t)gpus, cur_mem = j->pn_min_memory;

	if (cpt < 1)
		cpt = 1;
	/* Only ever shrink: a job sized BELOW its share in some resource (a
	 * language model needs no cache) keeps that, and a job at or below its
	 * share in everything waits for reasons Synergy did not cause. */
	if (j->cpus_per_task && j->cpus_per_task != NO_VAL16 && j->cpus_per_task < cpt)
		cpt = j->cpus_per_task;
	if (cur_mem && cur_mem != NO_VAL64 && !(cur_mem & MEM_PER_CPU) && (!mem || cur_mem < mem))
		mem = cur_mem;
	if ((!j->cpus_per_task || j->cpus_per_task == NO_VAL16 || cpt >= j->cpus_per_task) &&
	    (!mem || mem >= cur_mem)) {
		if (o->verbose)
			logmsg("job %u: key=%s already at or below its GPU-proportional share",
			       j->job_id, key);
		return 1;
	}
	snprintf(comment, sizeof(comment),
		 "synergy: key=%s downgraded to GPU-proportional by synergyd "
		 "(waited for resources with %d GPU(s) free): cpus=%u mem=%lluM",
		 key, gpus, (unsigned)(cpt * tasks), (unsigned long long)mem);
	logmsg("job %u: %s%s", j->job_id, comment + 9, o->dry_run ? " [dry run]" : "");
	if (o->dry_run)
		return 0;
	slurm_init_job_desc_msg(&d);
	SYN_JOB_DESC_JOB_ID(&d) = j->job_id;
	d.cpus_per_task = cpt;
	d.min_cpus = (uint32_t)cpt * tasks * nodes;
	/* Submission derived the per-node minimum from the sized request. */
	d.pn_min_cpus = (uint16_t)(cpt * tasks);
	if (mem) {
		d.pn_min_memory = mem;
		/* job_submit/synergy set the memory per GPU too (it replaces the
		 * partition's DefMemPerGPU floor): keep the two in step. */
		snprintf(mem_tres, sizeof(mem_tres), SYN_TRES_GPU ":%llu",
			 (unsigned long long)(mem / (uint64_t)gpus));
		d.mem_per_tres = mem_tres;
		/* slurmctld validates a job's GRES request as a whole. */
		d.tres_per_node = j->tres_per_node;
		d.tres_per_job = j->tres_per_job;
	}
	d.admin_comment = comment;
	if (slurm_update_job(&d) != SLURM_SUCCESS) {
		logmsg("job %u: update failed: %s", j->job_id, syn_slurm_error());
		return -1;
	}
	return 0;
}

/* The state of job id in jobs, or -1 when slurmctld no longer knows it. */
static int job_state_of(const job_info_msg_t *jobs, uint32_t id)
{
	uint32_t i;

	for (i = 0; jobs && i < jobs->record_count; i++)
		if (jobs->job_array[i].job_id == id)
			return (int)(jobs->job_array[i].job_state & JOB_STATE_BASE);
	return -1;
}

/* ProfileCommand with %k replaced by the key (a safe word) and %s by the
 * store directory. Returns 0, or -1 if it does not fit. */
static int expand_command(const char *tmpl, const char *key, const char *store,
			  char *out, size_t len)
{
	size_t n = 0;
	const char *p;

	for (p = tmpl; *p; p++) {
		const char *ins = NULL;
		char one[2] = { *p, 0 };

		if (p[0] == '%' && p[1] == 'k')
			ins = key;
		else if (p[0] == '%' && p[1] == 's')
			ins = store;
		if (ins)
			p++;
		else
			ins = one;
		if (n + strlen(ins) >= len)
			return -1;
		memcpy(out + n, ins, strlen(ins));
		n += strlen(ins);
	}
	out[n] = '\0';
	return 0;
}

/* The account profiling jobs run as (ProfileUser). 0, or -1 (logged). */
static int profile_account(const syn_conf_t *conf, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(conf->profile_user);

	if (!pw) {
		logmsg("ProfileUser '%s' is not an account on this host; no profiling job is "
		       "submitted", conf->profile_user);
		return -1;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* RequestDir/work (root's, 0755) and in it the key's directory. */
static int work_path(const syn_conf_t *conf, const char *key, const char *file, char *buf,
		     size_t len)
{
	int n = snprintf(buf, len, "%s/work%s%s%s%s", conf->request_dir, key ? "/" : "",
			 key ? key : "", file ? "/" : "", file ? file : "");

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Remove key's work directory and everything in it (never following a
 * link the profiling job may have planted). */
static void work_remove(const syn_conf_t *conf, const char *key)
{
	char path[SYN_PATH_MAX + 96];
	int dfd, kfd;

	if (work_path(conf, NULL, NULL, path, sizeof(path)) < 0)
		return;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	kfd = openat(dfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (kfd >= 0)
		syn__remove_tree(kfd);
	unlinkat(dfd, key, AT_REMOVEDIR);
	close(dfd);
}

/* A fresh work directory for key, owned by the profiling account, 0700. */
static int work_make(const syn_conf_t *conf, const char *key, uid_t uid, gid_t gid)
{
	char path[SYN_PATH_MAX + 96];

	if (work_path(conf, NULL, NULL, path, sizeof(path)) < 0 ||
	    (mkdir(path, 0755) < 0 && errno != EEXIST))
		return -1;
	work_remove(conf, key);
	if (work_path(conf, key, NULL, path, sizeof(path)) < 0 || mkdir(path, 0700) < 0 ||
	    chown(path, uid, gid) < 0)
		return -1;
	return 0;
}

/*
 * Submit key's profiling job, as ProfileUser, in the key's work directory,
 * which %s names: the job writes its profile there (a store of its own),
 * never into the real store; synergyd checks and files it when the job has
 * ended (import_profile). Its id into id. Returns 0, or -1 (logged).
 */
static int submit_profiling(const syn_conf_t *conf, const char *key, uint32_t *id)
{
	char cmd[1024], script[1200], name[96], out[SYN_PATH_MAX + 96], dir[SYN_PATH_MAX + 96];
	char env_key[96], env_mode[] = "SYNERGY_PROFILE_MODE=1",
	     env_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	char *env[4];
	job_desc_msg_t d;
	submit_response_msg_t *resp = NULL;
	uid_t uid;
	gid_t gid;

	if (profile_account(conf, &uid, &gid) < 0)
		return -1;
	if (work_path(conf, key, NULL, dir, sizeof(dir)) < 0 ||
	    work_path(conf, key, "out", out, sizeof(out)) < 0 ||
	    work_make(conf, key, uid, gid) < 0) {
		logmsg("cannot make the work directory %s for %s: %s", dir, key, strerror(errno));
		return -1;
	}
	if (expand_command(conf->profile_command, key, dir, cmd, sizeof(cmd)) < 0) {
		logmsg("cannot submit a profiling job for %s: ProfileCommand '%.60s' is over "
		       "%zu bytes once %%k and %%s are expanded", key, conf->profile_command,
		       sizeof(cmd) - 1);
		return -1;
	}
	snprintf(script, sizeof(script),
		 "#!/bin/sh\n# synergyd: offline profiling run for key %s\nexec %s\n", key, cmd);
	snprintf(name, sizeof(name), "synergy-profile:%s", key);
	snprintf(env_key, sizeof(env_key), "SYNERGY_PROFILE_KEY=%s", key);
	env[0] = env_key;
	env[1] = env_mode;
	env[2] = env_path;
	env[3] = NULL;
	slurm_init_job_desc_msg(&d);
	d.name = name;
	d.script = script;
	d.environment = env;
	d.env_size = 3;
	d.std_out = out;
	d.work_dir = dir;
	d.user_id = uid;
	d.group_id = gid;
	d.min_nodes = 1;
	/* One GPU's proportional share of a node: without a memory request the
	 * job would ask for a whole node's memory and wait behind everyone. */
	if (conf->node_gpus && conf->node_mem_mb)
		d.pn_min_memory = conf->node_mem_mb / conf->node_gpus;
	if (conf->node_gpus && conf->node_cpus && conf->node_cpus >= conf->node_gpus)
		d.min_cpus = (uint32_t)(conf->node_cpus / conf->node_gpus);
	if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS || !resp) {
		logmsg("cannot submit a profiling job for %s: %s", key,
		       syn_slurm_error());
		work_remove(conf, key);
		return -1;
	}
	*id = SYN_SUBMIT_RESP_JOB_ID(resp);
	slurm_free_submit_response_response_msg(resp);
	return 0;
}

/* Copy the ended profiling job's output into RequestDir/<key>.out for the
 * admin (at most 1 MiB; the job's own file is never followed if a link). */
static void keep_output(const syn_conf_t *conf, const char *key)
{
	char from[SYN_PATH_MAX + 96], to[SYN_PATH_MAX + 96];
	size_t len;
	char *text;
	FILE *f;

	if (work_path(conf, key, "out", from, sizeof(from)) < 0)
		return;
	snprintf(to, sizeof(to), "%s/%s.out", conf->request_dir, key);
	text = syn_file_read(AT_FDCWD, from, 1 << 20, 0, &len);
	if (!text)
		return;
	f = fopen(to, "we");
	if (f) {
		fwrite(text, 1, len, f);
		fclose(f);
	}
	free(text);
}

/*
 * File the profile the ended job left in its work directory into the store,
 * after checking it in full: it must parse and be the profile of key.
 * Returns 0 when filed, -1 (logged) when there is none or it is unusable.
 */
/*
 * Read the profile key's profiling job left in its work directory into p.
 * The directory is ProfileUser's: whatever is there is opened without
 * following a link or blocking (a FIFO), and taken only when it is a
 * regular file of ProfileUser's of at most 1 MiB. 0, or -1 with why in err.
 */
static int read_work_profile(const syn_conf_t *conf, const char *key, syn_profile_t *p,
			     char *err, size_t errlen)
{
	char path[SYN_PATH_MAX + 96], file[SYN_KEY_MAX + 8];
	syn_error_t serr;
	struct stat st;
	uid_t uid;
	gid_t gid;
	size_t len;
	char *text = NULL;
	int wfd = -1, kfd = -1, fd = -1, rv = -1;

	snprintf(file, sizeof(file), "%s.json", key);
	if (profile_account(conf, &uid, &gid) < 0 ||
	    work_path(conf, NULL, NULL, path, sizeof(path)) < 0) {
		syn_errbuf(err, errlen, EINVAL, "no work directory");
		return -1;
	}
	if ((wfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (kfd = openat(wfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (fd = openat(kfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0) {
		syn_errbuf(err, errlen, errno, "%s/%s/%s: %s", path, key, file, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid) {
		syn_errbuf(err, errlen, EPERM, "%s/%s/%s is not a regular file of %s", path, key,
			  file, conf->profile_user);
		goto out;
	}
	if (!(text = syn_file_read_fd(fd, 1 << 20, &len))) {
		syn_errbuf(err, errlen, errno, "%s/%s/%s: %s", path, key, file, strerror(errno));
		goto out;
	}
	if (syn_profile_parse(text, len, file, p, &serr) < 0) {
		syn_errbuf(err, errlen, EINVAL, "%s", serr.text);
		goto out;
	}
	rv = 0;
out:
	free(text);
	if (fd >= 0)
		close(fd);
	if (kfd >= 0)
		close(kfd);
	if (wfd >= 0)
		close(wfd);
	return rv;
}

static int import_profile(const syn_conf_t *conf, const char *key, uint32_t id)
{
	char why[300];
	syn_error_t serr;
	syn_store_t *store;
	syn_profile_t p;
	int rv = -1;

	if (read_work_profile(conf, key, &p, why, sizeof(why)) < 0) {
		logmsg("profiling job %u for %s left no usable profile: %s", id, key, why);
		return -1;
	}
	if (strcmp(p.key, key) != 0) {
		logmsg("profiling job %u for %s left a profile of key '%s': refused", id, key, p.key);
		return -1;
	}
	store = syn_store_create(conf->store_dir, SYN_STORE_CREATE, &serr);
	if (!store || syn_store_put(store, &p, &serr) < 0)
		logmsg("cannot file profile %s into %s: %s", key, conf->store_dir, serr.text);
	else
		rv = 0;
	syn_store_destroy(store);
	return rv;
}

/*
 * Profiling requests: RequestDir/<key>.req, queued by job_submit/synergy.
 * A request gets one profiling job (<key>.job holds its id), at most
 * MaxProfilingJobs at a time; once that job has ended, the profile it left
 * is checked and filed into the store and the request is done; a job that
 * left none turns the request into <key>.failed for the admin. A profile
 * that reached the store otherwise (an admin's run) also ends the request.
 */
static void handle_requests(const opts_t *o, const syn_conf_t *conf,
			    const job_info_msg_t *jobs, stats_t *st)
{
	DIR *d = opendir(conf->request_dir);
	struct dirent *e;
	uint64_t in_flight = 0;

	if (!d)
		return;
	/* Count the jobs in flight first: every pass below may start one. */
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".job") == 0)
			in_flight++;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		char key[SYN_KEY_MAX + 1], path[SYN_PATH_MAX + 96], jobf[SYN_PATH_MAX + 96];
		char prof[SYN_PATH_MAX + 96], failed[SYN_PATH_MAX + 96];
		size_t len = strlen(e->d_name);
		uint32_t id = 0;
		FILE *f;
		int state;

		if (len <= 4 || len - 4 > SYN_KEY_MAX || strcmp(e->d_name + len - 4, ".req") != 0)
			continue;
		memcpy(key, e->d_name, len - 4);
		key[len - 4] = '\0';
		if (!syn_key_valid(key))
			continue;
		snprintf(path, sizeof(path), "%s/%s.req", conf->request_dir, key);
		snprintf(jobf, sizeof(jobf), "%s/%s.job", conf->request_dir, key);
		snprintf(prof, sizeof(prof), "%s/%s.json", conf->store_dir, key);
		f = fopen(jobf, "re");
		if (f) {
			if (fscanf(f, "%u", &id) != 1)
				id = 0;
			fclose(f);
			state = id ? job_state_of(jobs, id) : -1;
			if (state == JOB_PENDING || state == JOB_RUNNING || state == JOB_SUSPENDED)
				continue;
			keep_output(conf, key);
			if (import_profile(conf, key, id) == 0) {
				logmsg("profiling job %u filed profile %s into the store", id, key);
				unlink(path);
				st->profiles_filed_total++;
			} else if (access(prof, F_OK) == 0) {
				logmsg("profile %s is in the store: request done", key);
				unlink(path);
			} else {
				snprintf(failed, sizeof(failed), "%s/%s.failed", conf->request_dir, key);
				logmsg("profiling job %u for %s ended without a profile: see %s/%s.out",
				       id, key, conf->request_dir, key);
				rename(path, failed);
				st->profiling_failed_total++;
			}
			unlink(jobf);
			work_remove(conf, key);
			in_flight--;
			continue;
		}
		if (access(prof, F_OK) == 0) {
			logmsg("profile %s is in the store: request done", key);
			unlink(path);
			st->profiles_filed_total++;
			continue;
		}
		if (!conf->profile_command[0] || o->dry_run)
			continue;
		if (in_flight >= conf->max_profiling_jobs) {
			if (o->verbose)
				logmsg("request %s waits: %llu profiling jobs in flight "
				       "(MaxProfilingJobs)", key, (unsigned long long)in_flight);
			continue;
		}
		if (submit_profiling(conf, key, &id) < 0) { /* logged */
			st->errors_total++;
			continue;
		}
		f = fopen(jobf, "we");
		if (f) {
			fprintf(f, "%u\n", id);
			fclose(f);
		}
		in_flight++;
		logmsg("submitted profiling job %u for %s as %s", id, key, conf->profile_user);
		st->profiling_submitted_total++;
	}
	closedir(d);
}

struct prune_ctx {
	const opts_t *o;
	const syn_conf_t *conf;
	const job_info_msg_t *jobs;
	time_t now;
	stats_t *st;
};

/* The job a claim belongs to: by id once its prolog renewed it, else by
 * the claim's nonce in the AdminComment job_submit wrote. */
static const job_info_t *claim_job(const struct prune_ctx *p, const syn__claim_t *c)
{
	char needle[SYN__NONCE_LEN + 16];
	uint32_t i;

	snprintf(needle, sizeof(needle), "(claim %s)", c->nonce);
	for (i = 0; p->jobs && i < p->jobs->record_count; i++) {
		const job_info_t *j = &p->jobs->job_array[i];

		if (c->jobid ? j->job_id == c->jobid :
			       j->admin_comment && strstr(j->admin_comment, needle) != NULL)
			return j;
	}
	return NULL;
}

static int prune_cb(const syn__claim_t *c, void *arg)
{
	struct prune_ctx *p = arg;
	const job_info_t *j;
	uint32_t base;

	/* A claim just taken may belong to a job this round's list predates;
	 * a job that just ended may still have its epilog to run, which files
	 * its profile or releases the claim itself. */
	if (p->now - c->time < 120)
		return 0;
	j = claim_job(p, c);
	if (j) {
		base = j->job_state & JOB_STATE_BASE;
		if (base == JOB_PENDING || base == JOB_RUNNING || base == JOB_SUSPENDED ||
		    (j->job_state & JOB_COMPLETING) || (j->end_time && p->now - j->end_time < 120))
			return 0;
	}
	if (p->o->dry_run) {
		logmsg("claim of uid %u on profiling %s in place: its job %s; would remove it "
		       "[dry run]", (unsigned)c->uid, c->key, j ? "ended" : "is gone");
		return 0;
	}
	if (syn__claim_release(p->conf->store_dir, c->uid, c->key, c->nonce) == 1) {
		logmsg("removed the claim of uid %u on profiling %s in place: its job %u %s", (unsigned)c->uid,
		       c->key, j ? j->job_id : c->jobid, j ? "ended without filing a profile" :
		       "is gone");
		p->st->claims_removed_total++;
	}
	return 0;
}

/*
 * Claims on profiling in place (claim.h) whose job ended without releasing
 * them: cancelled while pending (no prolog or epilog ran), or on a node
 * that died. Their next first job could only take them over once they
 * lapse (ProfileClaimMaxAge); removing them lets it profile at once.
 */
static void prune_claims(const opts_t *o, const syn_conf_t *conf, const job_info_msg_t *jobs,
			 stats_t *st)
{
	struct prune_ctx p = { o, conf, jobs, time(NULL), st };

	if (syn__claim_foreach(conf->store_dir, prune_cb, &p) < 0)
		logmsg("cannot list the claims in %s/" SYN__CLAIM_DIR ": %s", conf->store_dir,
		       strerror(errno));
}

/*
 * Export the node shapes of every partition for job_submit (shapes.h): per
 * node its GPUs, its CPUs less specialised cores, its memory less MemSpec.
 * Written every round; job_submit treats a table that stops being
 * refreshed as unknown. Returns the number of nodes seen, or -1 (logged).
 */
static int export_shapes(const syn_conf_t *conf, const partition_info_msg_t *parts,
			 const node_info_msg_t *nodes)
{
	syn__shapes_t t;
	uint32_t i;
	int seen = 0, rv = -1;

	memset(&t, 0, sizeof(t));
	t.written = time(NULL);
	for (i = 0; parts && i < parts->record_count; i++) {
		const partition_info_t *p = &parts->partition_array[i];
		int k;

		for (k = 0; p->name && p->node_inx && p->node_inx[k] >= 0; k += 2) {
			int32_t a = p->node_inx[k], b = p->node_inx[k + 1], n;

			for (n = a; n <= b && n >= 0 && (uint32_t)n < nodes->record_count; n++) {
				const node_info_t *nd = &nodes->node_array[n];
				uint64_t spec = (uint64_t)nd->core_spec_cnt * (nd->threads ? nd->threads : 1);
				uint32_t cpus = nd->cpus > spec ? (uint32_t)(nd->cpus - spec) : 1;
				uint64_t mem = nd->real_memory > nd->mem_spec_limit ?
					       nd->real_memory - nd->mem_spec_limit : nd->real_memory;
				int gpus = syn__gres_gpus(nd->gres);

				if (!nd->name)
					continue;
				if (syn__shapes_add(&t, p->name, (p->flags & PART_FLAG_DEFAULT) != 0,
						    gpus > 0 ? (uint32_t)gpus : 0, cpus, mem) < 0) {
					logmsg("node shapes: partition %s: %s", p->name,
					       strerror(errno));
					goto out;
				}
				seen++;
			}
		}
	}
	if (syn__shapes_write(&t, conf->shapes_file) < 0) {
		logmsg("cannot write the node shapes to %s: %s", conf->shapes_file, strerror(errno));
		goto out;
	}
	rv = seen;
out:
	syn__shapes_free(&t);
	return rv;
}

static int round_once(const opts_t *o, const syn_conf_t *conf, stats_t *st)
{
	partition_info_msg_t *parts = NULL;
	node_info_msg_t *nodes = NULL;
	job_info_msg_t *jobs = NULL;
	time_t now = time(NULL);
	int rv = -1, free_gpus;
	uint32_t i;

	st->rounds++;
	st->last = now;
	st->pending_synergy = st->downgraded = 0;
	st->requests = count_requests(conf->request_dir);
	if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS ||
	    slurm_load_node(0, &nodes, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS ||
	    slurm_load_jobs(0, &jobs, SHOW_ALL) != SLURM_SUCCESS) {
		logmsg("cannot reach slurmctld: %s; trying again next round",
		       syn_slurm_error());
		st->ctld_ok = 0;
		st->errors_total++;
		goto out;
	}
	st->ctld_ok = 1;
	if (export_shapes(conf, parts, nodes) < 0)
		st->errors_total++;
	free_gpus = max_free_gpus(o, nodes);
	for (i = 0; i < jobs->record_count; i++) {
		const job_info_t *j = &jobs->job_array[i];
		char key[SYN_KEY_MAX + 1];
		uint64_t cpu_share, mem_share;
		int gpus;

		if ((j->job_state & JOB_STATE_BASE) != JOB_PENDING ||
		    syn__comment_key(j->admin_comment, key, sizeof(key)) < 0)
			continue;
		st->pending_synergy++;
		if (j->state_reason != WAIT_RESOURCES || now - j->submit_time < o->min_wait) {
			if (o->verbose)
				logmsg("job %u: not waiting for resources long enough (reason %u)",
				       j->job_id, (unsigned)j->state_reason);
			continue;
		}
		gpus = syn__gpus_per_node(j->tres_per_node, j->tres_per_job, j->num_nodes);
		if (gpus <= 0 || gpus > free_gpus) {
			if (o->verbose)
				logmsg("job %u: needs %d GPU(s) per node ('%s'), at most %d free",
				       j->job_id, gpus, j->tres_per_node ? j->tres_per_node : "",
				       free_gpus);
			continue;
		}
		part_share(parts, j->partition, conf, &cpu_share, &mem_share);
		switch (downgrade(o, j, key, gpus, cpu_share, mem_share)) {
		case 0:
			st->downgraded++;
			st->downgraded_total++;
			free_gpus -= gpus;
			break;
		case 1:
			break; /* nothing above its share */
		default:
			st->errors_total++;
		}
	}
	handle_requests(o, conf, jobs, st);
	prune_claims(o, conf, jobs, st);
	st->requests = count_requests(conf->request_dir);
	rv = 0;
out:
	slurm_free_job_info_msg(jobs);
	slurm_free_node_info_msg(nodes);
	slurm_free_partition_info_msg(parts);
	return rv;
}

static void write_outputs(const opts_t *o, const stats_t *st)
{
	char buf[2048];

	if (o->status) {
		snprintf(buf, sizeof(buf),
			 "time=%lld\nrounds=%lu\nslurmctld=%s\npending_synergy_jobs=%d\n"
			 "downgraded_last_round=%d\ndowngraded_total=%lu\nprofiling_requests=%d\n"
			 "errors_total=%lu\nprofiling_submitted_total=%lu\n"
			 "profiles_filed_total=%lu\nprofiling_failed_total=%lu\n"
			 "claims_removed_total=%lu\n",
			 (long long)st->last, st->rounds, st->ctld_ok ? "ok" : "unreachable",
			 st->pending_synergy, st->downgraded, st->downgraded_total, st->requests,
			 st->errors_total, st->profiling_submitted_total, st->profiles_filed_total,
			 st->profiling_failed_total, st->claims_removed_total);
		if (write_file(o->status, buf) < 0)
			logmsg("cannot write %s: %s", o->status, strerror(errno));
	}
	if (o->metrics) {
		snprintf(buf, sizeof(buf),
			 "# HELP synergy_tuner_rounds_total Tuner rounds run.\n"
			 "# TYPE synergy_tuner_rounds_total counter\n"
			 "synergy_tuner_rounds_total %lu\n"
			 "# HELP synergy_tuner_last_round_seconds Time of the last round.\n"
			 "# TYPE synergy_tuner_last_round_seconds gauge\n"
			 "synergy_tuner_last_round_seconds %lld\n"
			 "# HELP synergy_tuner_slurmctld_up Whether the last round reached slurmctld.\n"
			 "# TYPE synergy_tuner_slurmctld_up gauge\n"
			 "synergy_tuner_slurmctld_up %d\n"
			 "# HELP synergy_pending_jobs Pending jobs sized by Synergy.\n"
			 "# TYPE synergy_pending_jobs gauge\n"
			 "synergy_pending_jobs %d\n"
			 "# HELP synergy_downgraded_jobs_total Jobs moved back to GPU-proportional.\n"
			 "# TYPE synergy_downgraded_jobs_total counter\n"
			 "synergy_downgraded_jobs_total %lu\n"
			 "# HELP synergy_profiling_requests Queued profiling requests.\n"
			 "# TYPE synergy_profiling_requests gauge\n"
			 "synergy_profiling_requests %d\n"
			 "# HELP synergy_profiles_filed_total Requested profiles that reached the store.\n"
			 "# TYPE synergy_profiles_filed_total counter\n"
			 "synergy_profiles_filed_total %lu\n"
			 "# HELP synergy_tuner_errors_total Failed RPCs and updates.\n"
			 "# TYPE synergy_tuner_errors_total counter\n"
			 "synergy_tuner_errors_total %lu\n",
			 st->rounds, (long long)st->last, st->ctld_ok, st->pending_synergy,
			 st->downgraded_total, st->requests, st->profiles_filed_total,
			 st->errors_total);
		if (write_file(o->metrics, buf) < 0)
			logmsg("cannot write %s: %s", o->metrics, strerror(errno));
	}
}

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, 'i' },
		{ "min-wait", required_argument, NULL, 'w' },
		{ "status", required_argument, NULL, 's' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "once", no_argument, NULL, '1' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	opts_t o = { .interval = 30 };
	syn_conf_t conf;
	stats_t st;
	char conf_buf[4096];
	syn_error_t cerr;
	uint64_t v;
	int c, rv;

	while ((c = getopt_long(argc, argv, "c:i:w:s:m:1nvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o.conf = optarg; break;
		case 's': o.status = optarg; break;
		case 'm': o.metrics = optarg; break;
		case '1': o.once = 1; break;
		case 'n': o.dry_run = 1; break;
		case 'v': o.verbose = 1; break;
		case 'i':
			if (syn_parse_u64(optarg, 1, 86400, &v) < 0) {
				fprintf(stderr, "synergyd: --interval: '%s' is not 1..86400 seconds\n", optarg);
				return 2;
			}
			o.interval = (double)v;
			break;
		case 'w':
			if (syn_parse_u64(optarg, 0, 86400 * 365, &v) < 0) {
				fprintf(stderr, "synergyd: --min-wait: '%s' is not a number of seconds\n",
					optarg);
				return 2;
			}
			o.min_wait = (long)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "synergyd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.conf)
		o.conf = syn_conf_default_path(conf_buf, sizeof(conf_buf));
	syn_conf_defaults(&conf);
	if (syn_conf_load(&conf, o.conf, &cerr) < 0) {
		fprintf(stderr, "synergyd: %s\n", cerr.text);
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	slurm_init(NULL);
	memset(&st, 0, sizeof(st));
	logmsg("started: interval %gs, conf %s%s", o.interval, o.conf,
	       o.dry_run ? ", dry run" : "");
	for (;;) {
		rv = round_once(&o, &conf, &st);
		write_outputs(&o, &st);
		if (o.once || stop)
			break;
		for (double t = 0; t < o.interval && !stop; t += 0.2)
			usleep(200000);
		if (stop)
			break;
	}
	slurm_fini();
	logmsg("stopped after %lu rounds", st.rounds);
	return o.once && rv < 0 ? 1 : 0;
}
