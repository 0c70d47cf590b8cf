/*
 * lend.c: idle-core lending on one node (see lend.h).
 *
 * The decision (syn__lend_plan) is a pure function. The rest gathers what
 * it needs and applies it, all under one lock per node so that the
 * slurmstepds of jobs starting and ending at the same time act one after
 * the other:
 *   - the per-job records in StateDir (jobrec.h): what job_submit granted
 *     (written by the job prolog, with a copy of the job's profile), and
 *     the CPUs Slurm gave its job cgroup at its first step, before anything
 *     was lent to it (that cpuset is in the kernel's CPU numbering, unlike
 *     S_JOB_ALLOC_CORES, which counts Slurm's abstract cores);
 *   - the cgroup tree (cgroup.h), which says which jobs run now and what
 *     they hold. A job cgroup without a record (started before lending was
 *     turned on) counts as allotted everything it holds and never borrows.
 * Applying narrows first (every job that must give CPUs back), then widens;
 * the cgroup layer orders the writes within a job as the kernel needs. Under
 * the lock only local files in StateDir are read, never the profile store,
 * so a slow store cannot stall a job launch.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "synergy_store.h"
#include "cgroup.h"
#include "jobrec.h"
#include "lend.h"
#include "util.h"

/* Enough for any node this plugin will meet; more jobs are not lent to. */
#define LEND_MAX_JOBS 256

/* Predicted relative gain of one more CPU for job j holding ncpus. */
static double gain_of(const syn__lend_job_t *j, int ncpus)
{
	double gpus = j->gpus > 0 ? j->gpus : 1;
	double now = syn_profile_eval(j->profile, ncpus / gpus, j->cache_gb / gpus);
	double more = syn_profile_eval(j->profile, (ncpus + 1) / gpus, j->cache_gb / gpus);

	if (!(now > 0.0))
		return more > 0.0 ? 1e9 : 0.0;
	return more / now - 1.0;
}

int syn__lend_plan(const cpu_set_t *node, syn__lend_job_t *jobs, int n, double min_gain)
{
	cpu_set_t idle, tmp;
	int i, cpu, lent = 0;

	if (!node || n < 0 || (n > 0 && !jobs)) {
		errno = EINVAL;
		return -1;
	}
	/* idle = node minus every job's allotted CPUs. */
	CPU_ZERO(&tmp);
	for (i = 0; i < n; i++)
		CPU_OR(&tmp, &tmp, &jobs[i].allotted);
	CPU_ZERO(&idle);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, node) && !CPU_ISSET(cpu, &tmp))
			CPU_SET(cpu, &idle);
	}
	/* Every job keeps what Slurm gave it; a borrower also keeps the idle
	 * CPUs it already holds, lowest job id first should two claim one. */
	for (i = 0; i < n; i++) {
		jobs[i].target = jobs[i].allotted;
		jobs[i].gain = 0.0;
	}
	for (;;) {
		int best = -1;

		for (i = 0; i < n; i++) {
			if (!jobs[i].profile)
				continue;
			CPU_AND(&tmp, &jobs[i].held, &idle);
			if (CPU_COUNT(&tmp) == 0)
				continue;
			if (best < 0 || jobs[i].jobid < jobs[best].jobid)
				best = i;
		}
		if (best < 0)
			break;
		CPU_AND(&tmp, &jobs[best].held, &idle);
		CPU_OR(&jobs[best].target, &jobs[best].target, &tmp);
		CPU_XOR(&idle, &idle, &tmp);
		lent += CPU_COUNT(&tmp);
	}
	/* The rest, one CPU at a time, to the largest predicted gain. */
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		int best = -1;
		double best_gain = 0.0;

		if (!CPU_ISSET(cpu, &idle))
			continue;
		for (i = 0; i < n; i++) {
			double g;

			if (!jobs[i].profile)
				continue;
			g = gain_of(&jobs[i], CPU_COUNT(&jobs[i].target));
			if (g + 1e-12 < min_gain)
				continue;
			if (best < 0 || g > best_gain + 1e-12 ||
			    (g > best_gain - 1e-12 && jobs[i].jobid < jobs[best].jobid)) {
				best = i;
				best_gain = g;
			}
		}
		if (best < 0)
			break;
		CPU_SET(cpu, &jobs[best].target);
		jobs[best].gain = best_gain;
		lent++;
	}
	return lent;
}

/* ---- the node's state ---- */

/* One job as gathered from its record and the cgroup tree. */
typedef struct lend_entry {
	syn__lend_job_t job;
	char job_rel[512];
	int has_limits;             /* its tasks are in limit cgroups we manage */
	int has_record;             /* a record with its allotted CPUs */
	int has_profile;
	syn_profile_t profile;
	syn__jobrec_t rec;
} lend_entry_t;

typedef struct lend_ctx {
	const syn__cg_t *cg;
	const char *state_dir, *node_rel, *node;
	int dfd;
	uint32_t ended;
	syn__lend_log_f log;
	void *arg;
	lend_entry_t *e;
	int n;
	int failed;
} lend_ctx_t;

static void say(lend_ctx_t *c, int is_error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(lend_ctx_t *c, int is_error, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (is_error)
		c->failed = 1;
	if (!c->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->log(is_error, msg, c->arg);
}

static int collect_cb(uint32_t jobid, const char *job_rel, void *arg)
{
	lend_ctx_t *c = arg;
	lend_entry_t *e;

	if (jobid == c->ended)
		return 0;
	if (c->n >= LEND_MAX_JOBS) {
		say(c, 1, "synergy: lend: more than %d jobs on %s; the rest are ignored",
		    LEND_MAX_JOBS, c->node_rel);
		return 1;
	}
	e = &c->e[c->n];
	memset(e, 0, sizeof(*e));
	e->job.jobid = jobid;
	snprintf(e->job_rel, sizeof(e->job_rel), "%s", job_rel);
	c->n++;
	return 0;
}

/* Drop records of jobs that no longer have a cgroup on this node. */
static void records_prune(lend_ctx_t *c)
{
	struct dirent *d;
	DIR *dir;
	int copy, i;

	copy = dup(c->dfd);
	if (copy < 0)
		return;
	dir = fdopendir(copy);
	if (!dir) {
		close(copy);
		return;
	}
	while ((d = readdir(dir))) {
		uint32_t id;
		int live = 0;

		if (!syn__jobrec_match(d->d_name, c->node, &id))
			continue;
		/* Only bare records: a grant's job may not have a cgroup yet
		 * (its prolog ran, its first step did not); the epilog removes
		 * those. */
		for (i = 0; i < c->n && !live; i++)
			live = c->e[i].job.jobid == id;
		if (!live) {
			syn__jobrec_t r;

			if (syn__jobrec_read(c->dfd, c->node, id, &r, NULL, 0) == 0 && r.synergy)
				continue;
			syn__jobrec_remove(c->dfd, c->node, id);
		}
	}
	closedir(dir);
}

static void fmt(const cpu_set_t *s, char *buf, size_t len)
{
	if (syn__cpus_format(s, buf, len) < 0)
		snprintf(buf, len, "?");
}

/* Resize e to its target's part in what it holds (narrow only). */
static int apply_narrow(lend_ctx_t *c, lend_entry_t *e)
{
	syn__lend_job_t *j = &e->job;
	cpu_set_t keep, gone;
	char err[400], *now, *gone_s;

	CPU_AND(&keep, &j->held, &j->target);
	CPU_XOR(&gone, &j->held, &keep);
	if (CPU_COUNT(&gone) == 0)
		return 0;
	if (syn__cg_job_set_cpus(c->cg, e->job_rel, &keep, &j->allotted, err, sizeof(err)) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot take CPUs back: %s", (unsigned)j->jobid, err);
		return -1;
	}
	j->held = keep;
	now = syn__cpus_format_alloc(&keep);
	gone_s = syn__cpus_format_alloc(&gone);
	say(c, 0, "synergy: lend job=%u returns cpus=%s now=%s", (unsigned)j->jobid,
	    gone_s ? gone_s : "?", now ? now : "?");
	free(now);
	free(gone_s);
	return 0;
}

/* Lend e the CPUs of its target it does not hold. */
static void apply_widen(lend_ctx_t *c, lend_entry_t *e)
{
	syn__lend_job_t *j = &e->job;
	cpu_set_t add;
	char err[400], *add_s, *now;

	CPU_OR(&add, &j->held, &j->target);
	CPU_XOR(&add, &add, &j->held);
	if (CPU_COUNT(&add) == 0 || !e->has_limits)
		return;
	if (syn__cg_job_set_cpus(c->cg, e->job_rel, &j->target, &j->allotted, err,
				 sizeof(err)) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot lend: %s", (unsigned)j->jobid, err);
		return;
	}
	add_s = syn__cpus_format_alloc(&add);
	now = syn__cpus_format_alloc(&j->target);
	say(c, 0, "synergy: lend job=%u borrows cpus=%s now=%s gain=%.0f%%", (unsigned)j->jobid,
	    add_s ? add_s : "?", now ? now : "?", j->gain * 100.0);
	free(add_s);
	free(now);
}

/* Load e's record, profile copy and what its cgroups hold. */
static void load_entry(lend_ctx_t *c, lend_entry_t *e)
{
	char name[SYN__KEY_MAX + 40], path[SYN__PATH_MAX + SYN__KEY_MAX + 48];
	syn_store_error_t serr;

	if (syn__cg_get_cpus(c->cg, e->job_rel, &e->job.held) < 0) {
		/* Gone meanwhile (its cgroup is being removed): it holds
		 * nothing and is not touched. */
		CPU_ZERO(&e->job.held);
	}
	if (syn__jobrec_read(c->dfd, c->node, e->job.jobid, &e->rec, NULL, 0) == 0 &&
	    e->rec.has_allotted) {
		e->has_record = 1;
		e->job.allotted = e->rec.allotted;
	} else {
		/* Unknown to us: everything it holds is its own. */
		e->job.allotted = e->job.held;
	}
	e->job.gpus = e->rec.gpus ? (int)e->rec.gpus : 1;
	e->job.cache_gb = (double)e->rec.cache_mb / 1024.0;
	e->has_limits = syn__cg_job_has_limits(c->cg, e->job_rel);
	if (e->has_record && e->rec.synergy && e->has_limits &&
	    syn__jobrec_name(c->node, e->job.jobid, ".json", name, sizeof(name)) == 0) {
		snprintf(path, sizeof(path), "%s/%s", c->state_dir, name);
		if (syn_profile_read_file(path, &e->profile, &serr) == 0)
			e->has_profile = 1;
		else
			say(c, 1, "synergy: lend job=%u: profile copy %s: %s; it does not borrow",
			    (unsigned)e->job.jobid, path, serr.text);
	}
	e->job.profile = e->has_profile ? &e->profile : NULL;
}

/*
 * Something failed before the plan was applied: shrink every job back to
 * what Slurm allotted it; a job without a record loses the newcomer's CPUs
 * (those Slurm just gave to someone else). Jobs must have been collected.
 */
static void failsafe(lend_ctx_t *c, const cpu_set_t *newcomer, uint32_t newjob)
{
	int i;

	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];

		if (e->job.jobid == newjob)
			continue;
		if (!e->has_record && syn__cg_get_cpus(c->cg, e->job_rel, &e->job.held) < 0)
			continue;
		if (e->has_record) {
			e->job.target = e->job.allotted;
		} else {
			e->job.target = e->job.held;
			if (newcomer) {
				cpu_set_t both;

				CPU_AND(&both, &e->job.held, newcomer);
				CPU_XOR(&e->job.target, &e->job.target, &both);
			}
		}
		apply_narrow(c, e);
	}
	c->failed = 1;
}

static lend_ctx_t *ctx_new(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
			   syn__lend_log_f log, void *arg)
{
	lend_ctx_t *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = calloc(LEND_MAX_JOBS, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return NULL;
	}
	c->cg = cg;
	c->state_dir = state_dir;
	c->node_rel = node_rel;
	c->node = syn__cg_node(cg);
	c->log = log;
	c->arg = arg;
	c->dfd = -1;
	return c;
}

static void ctx_free(lend_ctx_t *c)
{
	if (!c)
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	free(c->e);
	free(c);
}

/*
 * A job cgroup without a record owns what it holds, except what Slurm
 * allotted to a recorded job: such a cgroup may belong to a job that ended
 * while its processes lived on (its slurmstepd was killed, so Slurm could
 * not clean it up) and still hold CPUs lent to it, which Slurm has since
 * given to a newcomer. Slurm never gives one CPU to two running jobs, so
 * taking those away is always right.
 */
static void disown_unrecorded(lend_ctx_t *c)
{
	cpu_set_t recorded;
	int i;

	CPU_ZERO(&recorded);
	for (i = 0; i < c->n; i++)
		if (c->e[i].has_record)
			CPU_OR(&recorded, &recorded, &c->e[i].job.allotted);
	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];
		cpu_set_t both, rest;

		if (e->has_record)
			continue;
		CPU_AND(&both, &e->job.allotted, &recorded);
		if (CPU_COUNT(&both) == 0)
			continue;
		CPU_XOR(&rest, &e->job.allotted, &both);
		if (CPU_COUNT(&rest) == 0) {
			say(c, 1, "synergy: lend job=%u: has no record and holds only CPUs Slurm "
			    "allotted to other jobs; leaving it as it is", (unsigned)e->job.jobid);
			continue;
		}
		e->job.allotted = rest;
	}
}

/* Collect the node's jobs (the ended one left out) and load each. */
static int collect(lend_ctx_t *c)
{
	int i;

	c->n = 0;
	if (syn__cg_foreach_job(c->cg, c->node_rel, collect_cb, c) < 0) {
		say(c, 1, "synergy: lend: cannot list the jobs of %s: %s", c->node_rel,
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < c->n; i++)
		load_entry(c, &c->e[i]);
	disown_unrecorded(c);
	return 0;
}

int syn__lend_rebalance(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
			const syn__lend_start_t *start, uint32_t ended_jobid,
			double min_gain, syn__lend_log_f log, void *arg)
{
	lend_ctx_t *c;
	syn__lend_job_t *jobs = NULL;
	cpu_set_t node, newcomer, *nc = NULL;
	char err[300];
	int lockfd = -1, i, rv = -1;

	if (!cg || !state_dir || !node_rel || (start && !start->job_rel)) {
		errno = EINVAL;
		return -1;
	}
	c = ctx_new(cg, state_dir, node_rel, log, arg);
	jobs = calloc(LEND_MAX_JOBS, sizeof(*jobs));
	if (!c || !jobs) {
		ctx_free(c);
		free(jobs);
		errno = ENOMEM;
		return -1;
	}
	c->ended = ended_jobid;
	if (start && syn__cg_get_cpus(cg, start->job_rel, &newcomer) == 0)
		nc = &newcomer;
	c->dfd = syn__state_dir_open(state_dir, err, sizeof(err));
	if (c->dfd < 0) {
		say(c, 1, "synergy: lend: %s", err);
		goto failsafe;
	}
	lockfd = syn__node_lock(c->dfd, c->node, SYN__LEND_LOCK_MS);
	if (lockfd < 0) {
		say(c, 1, "synergy: lend: lock %s/%s.lock: %s", state_dir, c->node, strerror(errno));
		goto failsafe;
	}
	if (syn__cg_get_cpus(cg, node_rel, &node) < 0) {
		say(c, 1, "synergy: lend: cannot read the cpuset of %s", node_rel);
		goto failsafe;
	}
	if (ended_jobid)
		syn__jobrec_remove(c->dfd, c->node, ended_jobid);
	if (start) {
		syn__jobrec_t r;

		/* Only the job's first step records its CPUs: later steps see a
		 * job cgroup that lending may have widened already. A job
		 * without a grant gets a bare record. */
		if (syn__jobrec_read(c->dfd, c->node, start->jobid, &r, NULL, 0) < 0)
			memset(&r, 0, sizeof(r));
		if (!r.has_allotted) {
			if (!nc) {
				say(c, 1, "synergy: lend job=%u: cannot read the cpuset of %s",
				    (unsigned)start->jobid, start->job_rel);
				goto failsafe;
			}
			r.has_allotted = 1;
			r.allotted = newcomer;
			if (syn__jobrec_write(c->dfd, c->node, start->jobid, &r) < 0) {
				say(c, 1, "synergy: lend job=%u: cannot write its record in %s: %s",
				    (unsigned)start->jobid, state_dir, strerror(errno));
				goto failsafe;
			}
		}
	}
	if (collect(c) < 0)
		goto failsafe;
	records_prune(c);
	for (i = 0; i < c->n; i++)
		jobs[i] = c->e[i].job;
	if (syn__lend_plan(&node, jobs, c->n, min_gain) < 0)
		goto failsafe;
	for (i = 0; i < c->n; i++) {
		c->e[i].job.target = jobs[i].target;
		c->e[i].job.gain = jobs[i].gain;
	}
	/* Take back first, everywhere, so that nobody runs below its share
	 * while CPUs move; then lend. */
	for (i = 0; i < c->n; i++)
		apply_narrow(c, &c->e[i]);
	for (i = 0; i < c->n; i++)
		apply_widen(c, &c->e[i]);
	rv = c->failed ? -1 : 0;
	if (rv < 0)
		errno = EIO;
	goto out;
failsafe:
	/* Without a list of jobs there is nothing to shrink; try to get one
	 * even without the lock or the state directory. */
	if (c->n == 0 && syn__cg_foreach_job(cg, node_rel, collect_cb, c) >= 0) {
		for (i = 0; i < c->n; i++) {
			lend_entry_t *e = &c->e[i];

			if (syn__cg_get_cpus(cg, e->job_rel, &e->job.held) < 0)
				CPU_ZERO(&e->job.held);
			e->job.allotted = e->job.held;
			if (c->dfd >= 0 &&
			    syn__jobrec_read(c->dfd, c->node, e->job.jobid, &e->rec, NULL, 0) == 0 &&
			    e->rec.has_allotted) {
				e->has_record = 1;
				e->job.allotted = e->rec.allotted;
			}
		}
	}
	failsafe(c, nc, start ? start->jobid : 0);
	errno = EIO;
	rv = -1;
out:
	if (lockfd >= 0)
		close(lockfd); /* releases the flock */
	ctx_free(c);
	free(jobs);
	return rv;
}

int syn__lend_step_start(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
			 const char *job_rel, uint32_t jobid, syn__lend_log_f log, void *arg)
{
	lend_ctx_t *c;
	lend_entry_t *e;
	char err[300];
	int lockfd = -1, rv = -1;

	if (!cg || !state_dir || !node_rel || !job_rel) {
		errno = EINVAL;
		return -1;
	}
	c = ctx_new(cg, state_dir, node_rel, log, arg);
	if (!c) {
		errno = ENOMEM;
		return -1;
	}
	e = &c->e[0];
	e->job.jobid = jobid;
	snprintf(e->job_rel, sizeof(e->job_rel), "%s", job_rel);
	c->dfd = syn__state_dir_open(state_dir, err, sizeof(err));
	if (c->dfd < 0) {
		say(c, 1, "synergy: lend: %s", err);
		goto out;
	}
	lockfd = syn__node_lock(c->dfd, c->node, SYN__LEND_LOCK_MS);
	if (lockfd < 0)
		say(c, 1, "synergy: lend: lock %s/%s.lock: %s; giving CPUs back unlocked", state_dir,
		    c->node, strerror(errno));
	if (syn__jobrec_read(c->dfd, c->node, jobid, &e->rec, NULL, 0) < 0 ||
	    !e->rec.has_allotted || syn__cg_get_cpus(cg, job_rel, &e->job.held) < 0) {
		rv = c->failed ? -1 : 0; /* not recorded, or no job cgroup yet */
		goto out;
	}
	e->job.allotted = e->rec.allotted;
	e->job.target = e->rec.allotted;
	apply_narrow(c, e);
	rv = c->failed ? -1 : 0;
out:
	if (rv < 0)
		errno = EIO;
	if (lockfd >= 0)
		close(lockfd);
	ctx_free(c);
	return rv;
}

typedef struct status_ctx {
	lend_ctx_t *c;
	int (*fn)(const syn__lend_info_t *info, void *arg);
	void *arg;
	syn__lend_info_t *info;
} status_ctx_t;

static int status_cb(uint32_t jobid, const char *job_rel, void *arg)
{
	status_ctx_t *st = arg;
	syn__lend_info_t *info = st->info;
	syn__jobrec_t r;
	cpu_set_t held, lent, lim;

	memset(info, 0, sizeof(*info));
	info->jobid = jobid;
	snprintf(info->job_rel, sizeof(info->job_rel), "%s", job_rel);
	CPU_ZERO(&held);
	if (syn__cg_get_cpus(st->c->cg, job_rel, &held) == 0)
		fmt(&held, info->held, sizeof(info->held));
	if (syn__cg_job_limit_cpus(st->c->cg, job_rel, &lim) > 0)
		fmt(&lim, info->limits, sizeof(info->limits));
	if (st->c->dfd >= 0 &&
	    syn__jobrec_read(st->c->dfd, st->c->node, jobid, &r, NULL, 0) == 0) {
		info->borrow = r.synergy;
		snprintf(info->key, sizeof(info->key), "%s", r.key);
		if (r.has_allotted) {
			info->recorded = 1;
			fmt(&r.allotted, info->allotted, sizeof(info->allotted));
			CPU_OR(&lent, &held, &r.allotted);
			CPU_XOR(&lent, &lent, &r.allotted);
			fmt(&lent, info->lent, sizeof(info->lent));
		}
	}
	return st->fn(info, st->arg);
}

int syn__lend_status(const syn__cg_t *cg, const char *state_dir, const char *node_rel,
		     char *node_cpus, size_t len,
		     int (*fn)(const syn__lend_info_t *info, void *arg), void *arg)
{
	status_ctx_t st;
	cpu_set_t set;
	int n;

	if (!cg || !state_dir || !node_rel || !node_cpus || !len || !fn) {
		errno = EINVAL;
		return -1;
	}
	memset(&st, 0, sizeof(st));
	if (syn__cg_get_cpus(cg, node_rel, &set) < 0)
		return -1;
	fmt(&set, node_cpus, len);
	st.c = ctx_new(cg, state_dir, node_rel, NULL, NULL);
	st.info = malloc(sizeof(*st.info));
	if (!st.c || !st.info) {
		ctx_free(st.c);
		free(st.info);
		errno = ENOMEM;
		return -1;
	}
	st.fn = fn;
	st.arg = arg;
	st.c->dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	n = syn__cg_foreach_job(cg, node_rel, status_cb, &st);
	ctx_free(st.c);
	free(st.info);
	return n;
}
