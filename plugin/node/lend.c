/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lend.c: the node agent (see lend.h).
 *
 * The plan is the policy's (syn_node_tune: counts of cores and MB of cache
 * per job); which CPUs is syn__lend_place(), a pure function. The rest
 * gathers what they need and applies them, under one lock per node so that
 * the slurmstepds of jobs starting and ending at the same time act one
 * after the other:
 *   - the per-job records in StateDir (jobrec.h): what job_submit granted
 *     (written by the job prolog, with a copy of the job's profile), the
 *     CPUs and memory Slurm gave the job at its first step, before anything
 *     was lent to it (that cpuset is in the kernel's CPU numbering, unlike
 *     S_JOB_ALLOC_CORES, which counts Slurm's abstract cores), and the
 *     cache grant the agent wrote last, and the job's coordinated-prep
 *     group (the policy plans a group's members on the node as one
 *     consumer, syn_node_tune);
 *   - the cgroup tree (cgroup.h), which says which jobs run now and what
 *     they hold. A job cgroup without a record (started before lending was
 *     turned on, or left behind by a job whose slurmstepd died) counts as
 *     allotted what it holds, less what Slurm allotted recorded jobs, and
 *     is never granted anything. Slurm 26.05 names a job's cgroup by the
 *     job's SLUID, not its id: the records say which SLUID is whose
 *     (jobrec.h; the job's first step writes it here), and a SLUID
 *     directory no record names is such a job without a record (job id 0
 *     here, "cgroup=<SLUID>" in messages).
 * Under the lock only local files are read (StateDir, cgroups, the job's
 * cache directory), never the profile store, so a slow store cannot stall a
 * job launch.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/store.h"
#include "plugin/node/cgroup.h"
#include "plugin/shared/jobrec.h"
#include "plugin/node/cachedir.h"
#include "plugin/node/lend.h"
#include "plugin/shared/nodeconf.h"
#include "plugin/shared/util.h"

/* Enough for any node this plugin will meet; more jobs are not lent to. */
#define LEND_MAX_JOBS 256

int syn__lend_place(const cpu_set_t *node, syn__lend_job_t *jobs, int n)
{
	cpu_set_t idle, used, tmp;
	int i, cpu, lent = 0;

	if (!node || n < 0 || (n > 0 && !jobs)) {
		errno = EINVAL;
		return -1;
	}
	CPU_ZERO(&used);
	for (i = 0; i < n; i++)
		CPU_OR(&used, &used, &jobs[i].allotted);
	CPU_ZERO(&idle);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, node) && !CPU_ISSET(cpu, &used))
			CPU_SET(cpu, &idle);
	for (i = 0; i < n; i++)
		jobs[i].target = jobs[i].allotted;
	/* Keep what is already held, lowest job id first, up to the want. */
	for (;;) {
		int best = -1;

		for (i = 0; i < n; i++) {
			CPU_AND(&tmp, &jobs[i].held, &idle);
			if (CPU_COUNT(&tmp) == 0 || CPU_COUNT(&jobs[i].target) >= jobs[i].want)
				continue;
			if (best < 0 || jobs[i].jobid < jobs[best].jobid)
				best = i;
		}
		if (best < 0)
			break;
		CPU_AND(&tmp, &jobs[best].held, &idle);
		for (cpu = 0; cpu < CPU_SETSIZE && CPU_COUNT(&jobs[best].target) < jobs[best].want;
		     cpu++) {
			if (!CPU_ISSET(cpu, &tmp))
				continue;
			CPU_SET(cpu, &jobs[best].target);
			CPU_CLR(cpu, &idle);
			lent++;
		}
		/* What it held beyond its want is not kept: give the rest of
		 * its held idle CPUs no claim in this pass. */
		CPU_AND(&tmp, &jobs[best].held, &idle);
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &tmp))
				CPU_CLR(cpu, &jobs[best].held);
	}
	/* The rest from the lowest idle CPUs, in array order. */
	for (i = 0; i < n; i++) {
		for (cpu = 0; cpu < CPU_SETSIZE && CPU_COUNT(&jobs[i].target) < jobs[i].want; cpu++) {
			if (!CPU_ISSET(cpu, &idle))
				continue;
			CPU_SET(cpu, &jobs[i].target);
			CPU_CLR(cpu, &idle);
			lent++;
		}
	}
	return lent;
}

/* The job of jobs whose allotment holds cpu, or -1. */
static int owner_of(const syn__lend_job_t *jobs, int n, int cpu)
{
	for (int i = 0; i < n; i++)
		if (CPU_ISSET(cpu, &jobs[i].allotted))
			return i;
	return -1;
}

int syn__lend_place_harvest(syn__lend_job_t *jobs, int n)
{
	int *left, i, cpu, pass, placed = 0;
	cpu_set_t taken;

	if (n < 0 || (n > 0 && !jobs)) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < n; i++)
		CPU_ZERO(&jobs[i].harvested);
	if (n == 0)
		return 0;
	left = calloc((size_t)n, sizeof(*left));
	if (!left) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++)
		left[i] = jobs[i].lend > 0 ? jobs[i].lend : 0;
	CPU_ZERO(&taken);
	/* Pass 0 keeps what a harvester holds, pass 1 gives the lowest left. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			syn__lend_job_t *j = &jobs[i];

			if (j->lend > 0)
				continue;
			for (cpu = 0; cpu < CPU_SETSIZE && CPU_COUNT(&j->harvested) < j->harvest;
			     cpu++) {
				int o;

				if (CPU_ISSET(cpu, &taken) || (pass == 0 && !CPU_ISSET(cpu, &j->held)))
					continue;
				o = owner_of(jobs, n, cpu);
				if (o < 0 || o == i || left[o] <= 0)
					continue;
				left[o]--;
				CPU_SET(cpu, &taken);
				CPU_SET(cpu, &j->harvested);
				CPU_SET(cpu, &j->target);
				placed++;
			}
		}
	}
	free(left);
	return placed;
}

int syn__agent_init(syn__agent_t *a, const struct syn_conf *conf, const syn__cg_t *cg,
		    const char *slurm_conf, char *node_rel, size_t len, char *note, size_t notelen)
{
	syn__node_conf_t nc;
	char err[300];

	if (note && notelen)
		note[0] = '\0';
	memset(a, 0, sizeof(*a));
	if (syn__cg_node_path(cg, node_rel, len) < 0) {
		if (note && notelen)
			snprintf(note, notelen, "node %s has no cgroup at %s yet", syn__cg_node(cg),
				 node_rel);
		return -1;
	}
	a->cg = cg;
	a->state_dir = conf->state_dir;
	a->node_rel = node_rel;
	a->cache_dir = conf->cache_dir;
	a->lend = conf->enabled && conf->lend_idle;
	a->harvest = a->lend && conf->harvest;
	a->shape.gpus = (int)conf->node_gpus;
	a->shape.mem_mb = conf->node_mem_mb;
	a->shape.process_mem_mb = conf->process_mem_mb;
	a->shape.max_cache_mb = conf->max_cache_mb;
	if (a->shape.gpus && a->shape.mem_mb)
		return 0;
	if (!slurm_conf || !*slurm_conf)
		slurm_conf = getenv("SLURM_CONF");
	if (!slurm_conf || !*slurm_conf)
		slurm_conf = "/etc/slurm/slurm.conf";
	if (syn__node_conf_read(slurm_conf, syn__cg_node(cg), &nc, err, sizeof(err)) == 0) {
		if (!a->shape.gpus)
			a->shape.gpus = (int)nc.gpus;
		if (!a->shape.mem_mb)
			a->shape.mem_mb = nc.mem_mb;
	} else if (note && notelen) {
		snprintf(note, notelen, "%s: cores only are lent (set NodeGPUs and NodeMemMB to "
			 "lend cache memory too)", err);
	}
	return 0;
}

/* ---- grant files ---- */

int syn__grant_path(const char *cache_dir, uint32_t jobid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/job_%u.grant", cache_dir, (unsigned)jobid);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int syn__grant_write(const char *cache_dir, uint32_t jobid, uint64_t bytes)
{
	char name[48], text[32];
	struct stat st;
	int dfd, len, rv = -1, e;

	dfd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	/* Root writes here: only into a directory only root can write. */
	if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(dfd);
		errno = EPERM;
		return -1;
	}
	snprintf(name, sizeof(name), "job_%u.grant", (unsigned)jobid);
	len = snprintf(text, sizeof(text), "%" PRIu64 "\n", bytes);
	if (syn_file_write_atomic(dfd, name, text, (size_t)len, 0644) < 0)
		goto out;
	rv = 0;
out:
	e = errno;
	close(dfd);
	errno = e;
	return rv;
}

/* The bytes the files at the top of the job's cache directory occupy
 * (st_blocks): where its loader keeps its cache (synergy_env.h). The look
 * stops at SYN__CACHE_SCAN_MAX entries (UINT64_MAX then: a directory that
 * full holds more than a loader's files), so that a directory of many files
 * cannot stretch a shrink that runs under the node's lock. */
#define SYN__CACHE_SCAN_MAX 1024
static uint64_t cache_usage(const char *cache_dir, uint32_t jobid)
{
	char path[SYN_PATH_MAX + 32];
	struct dirent *d;
	struct stat st;
	uint64_t sum = 0;
	DIR *dir;
	int n = 0, fd;

	snprintf(path, sizeof(path), "%s/job_%u", cache_dir, (unsigned)jobid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((d = readdir(dir))) {
		if (++n > SYN__CACHE_SCAN_MAX) {
			sum = UINT64_MAX;
			break;
		}
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	}
	closedir(dir);
	return sum;
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
	uint64_t mem_mb;            /* memory allotted (record, else its cgroup's limit) */
	uint64_t cache_now;         /* cache grant its file says now, MB */
	uint64_t cache_to;          /* the plan's cache grant, MB */
	int synergy;                /* may be granted anything */
	int profiling;              /* profiles in place: lent idle cores for its search */
	int rec_dirty;              /* its record changed here: write it back */
	int narrow_failed;          /* its CPUs could not be taken back */
	int drop;                   /* no running job: left out of the plan */
	int lend;                   /* CPUs of its allotment others may harvest */
	int harvest;                /* CPUs of others' it should harvest */
	cpu_set_t harvested;        /* which (in job.target) */
} lend_entry_t;

/* A job cgroup named by a SLUID and the job its record says it is. */
typedef struct sluid_map {
	char sluid[SYN__SLUID_LEN + 1];
	uint32_t jobid;
} sluid_map_t;

typedef struct lend_ctx {
	const syn__agent_t *a;
	const char *node;
	int dfd;
	uint32_t ended;
	lend_entry_t *e;
	int n;
	int failed;
	char ended_sluid[SYN__SLUID_LEN + 1]; /* the ended job's, from its record */
	sluid_map_t *map;           /* the node's records' SLUIDs (jobs_each) */
	int nmap;
	int map_built;
} lend_ctx_t;

static void say(lend_ctx_t *c, int is_error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(lend_ctx_t *c, int is_error, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (is_error)
		c->failed = 1;
	if (!c->a->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->a->log(is_error, msg, c->a->arg);
}

/* How messages name e: "job=<id>", or for a job cgroup that no record
 * names by its SLUID, "cgroup=<its name>". */
static const char *who(const lend_entry_t *e, char *buf, size_t len)
{
	const char *slash = strrchr(e->job_rel, '/');

	if (e->job.jobid)
		snprintf(buf, len, "job=%u", (unsigned)e->job.jobid);
	else
		snprintf(buf, len, "cgroup=%.40s", slash ? slash + 1 : e->job_rel);
	return buf;
}

/* A directory stream over the records directory c->dfd (a duplicate of
 * it, so that closing the stream leaves c->dfd open), or NULL. */
static DIR *records_open(const lend_ctx_t *c)
{
	DIR *dir;
	int copy;

	if (c->dfd < 0 || (copy = dup(c->dfd)) < 0)
		return NULL;
	dir = fdopendir(copy);
	if (!dir)
		close(copy);
	return dir;
}

/* Read the SLUIDs the node's records name into c->map, once. Records that
 * cannot be read are left out (their job cgroups stay without a record). */
static void map_build(lend_ctx_t *c)
{
	struct dirent *d;
	sluid_map_t *grown;
	DIR *dir;
	int cap = 0;

	c->map_built = 1;
	dir = records_open(c);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		syn__jobrec_t r;
		uint32_t id;

		if (!syn__jobrec_match(d->d_name, c->node, &id) ||
		    strchr(d->d_name + strlen(c->node) + 1, '.') ||
		    syn__jobrec_read(c->dfd, c->node, id, &r, NULL, 0) < 0 || !r.sluid[0])
			continue;
		if (c->nmap >= cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(c->map, (size_t)cap * sizeof(*c->map));
			if (!grown)
				break;
			c->map = grown;
		}
		snprintf(c->map[c->nmap].sluid, sizeof(c->map[0].sluid), "%s", r.sluid);
		c->map[c->nmap++].jobid = id;
	}
	closedir(dir);
}

typedef struct jobs_each_arg {
	lend_ctx_t *c;
	int (*fn)(uint32_t jobid, const char *job_rel, void *arg);
	void *arg;
} jobs_each_arg_t;

static int jobs_each_cb(uint32_t jobid, const char *job_rel, void *arg)
{
	jobs_each_arg_t *x = arg;
	char sluid[SYN__SLUID_LEN + 1];
	int i;

	if (jobid == 0 && syn__cg_job_sluid(job_rel, sluid, sizeof(sluid)) == 0) {
		/* The ended job's record is gone by now; its cgroup may not be. */
		if (x->c->ended && strcmp(sluid, x->c->ended_sluid) == 0)
			return x->fn(x->c->ended, job_rel, x->arg);
		if (!x->c->map_built)
			map_build(x->c);
		for (i = 0; i < x->c->nmap; i++)
			if (strcmp(x->c->map[i].sluid, sluid) == 0) {
				jobid = x->c->map[i].jobid;
				break;
			}
	}
	return x->fn(jobid, job_rel, x->arg);
}

/* syn__cg_foreach_job over the node, each SLUID directory given the id of
 * the job whose record names it (0: none does). */
static int jobs_each(lend_ctx_t *c, int (*fn)(uint32_t jobid, const char *job_rel, void *arg),
		     void *arg)
{
	jobs_each_arg_t x = { c, fn, arg };

	return syn__cg_foreach_job(c->a->cg, c->a->node_rel, jobs_each_cb, &x);
}

static int collect_cb(uint32_t jobid, const char *job_rel, void *arg)
{
	lend_ctx_t *c = arg;
	lend_entry_t *e;

	if (jobid && jobid == c->ended)
		return 0;
	if (c->n >= LEND_MAX_JOBS) {
		say(c, 1, "synergy: lend: more than %d jobs on %s; the rest are ignored",
		    LEND_MAX_JOBS, c->a->node_rel);
		return 1;
	}
	e = &c->e[c->n];
	memset(e, 0, sizeof(*e));
	e->job.jobid = jobid;
	snprintf(e->job_rel, sizeof(e->job_rel), "%s", job_rel);
	c->n++;
	return 0;
}

/* Drop bare records of jobs that no longer have a cgroup on this node (a
 * grant's job may not have a cgroup yet: its prolog ran, its first step did
 * not; the epilog removes those). */
static void records_prune(lend_ctx_t *c)
{
	struct dirent *d;
	DIR *dir;
	int i;

	dir = records_open(c);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		syn__jobrec_t r;
		uint32_t id;
		int live = 0;

		if (!syn__jobrec_match(d->d_name, c->node, &id) || strchr(d->d_name + strlen(c->node) + 1, '.'))
			continue;
		for (i = 0; i < c->n && !live; i++)
			live = c->e[i].job.jobid == id;
		if (live || (syn__jobrec_read(c->dfd, c->node, id, &r, NULL, 0) == 0 && r.synergy))
			continue;
		syn__jobrec_remove(c->dfd, c->node, id);
	}
	closedir(dir);
}

/* Take back what e holds beyond its target's CPUs (narrow only). */
static int apply_narrow(lend_ctx_t *c, lend_entry_t *e)
{
	syn__lend_job_t *j = &e->job;
	cpu_set_t keep, gone;
	char err[400], name[64], *now, *gone_s;

	CPU_AND(&keep, &j->held, &j->target);
	CPU_XOR(&gone, &j->held, &keep);
	if (CPU_COUNT(&gone) == 0)
		return 0;
	if (syn__cg_job_set_cpus(c->a->cg, e->job_rel, &keep, &j->allotted, err, sizeof(err)) < 0) {
		say(c, 1, "synergy: lend %s: cannot take CPUs back: %s", who(e, name, sizeof(name)),
		    err);
		return -1;
	}
	j->held = keep;
	now = syn_cpus_format_alloc(&keep);
	gone_s = syn_cpus_format_alloc(&gone);
	say(c, 0, "synergy: lend %s returns cpus=%s now=%s", who(e, name, sizeof(name)),
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
	if (syn__cg_job_set_cpus(c->a->cg, e->job_rel, &j->target, &j->allotted, err,
				 sizeof(err)) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot lend: %s", (unsigned)j->jobid, err);
		return;
	}
	add_s = syn_cpus_format_alloc(&add);
	now = syn_cpus_format_alloc(&j->target);
	say(c, 0, "synergy: lend job=%u borrows cpus=%s now=%s", (unsigned)j->jobid,
	    add_s ? add_s : "?", now ? now : "?");
	free(add_s);
	free(now);
}

/* Write e's cache grant (cache_to) and keep it in its record. */
static int set_grant(lend_ctx_t *c, lend_entry_t *e)
{
	if (syn__grant_write(c->a->cache_dir, e->job.jobid, e->cache_to << 20) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot write its cache grant: %s",
		    (unsigned)e->job.jobid, strerror(errno));
		return -1;
	}
	e->rec.has_hold = 1;
	e->rec.hold_cache_mb = e->cache_to;
	if (syn__jobrec_write(c->dfd, c->node, e->job.jobid, &e->rec) < 0)
		say(c, 1, "synergy: lend job=%u: cannot update its record: %s",
		    (unsigned)e->job.jobid, strerror(errno));
	return 0;
}

/* The memory limit for e: its allotment plus the part of its cache grant
 * above the cache its allotment holds. */
static uint64_t allotted_cache(const lend_ctx_t *c, const lend_entry_t *e);

static uint64_t mem_limit_mb(const lend_ctx_t *c, const lend_entry_t *e, uint64_t cache_mb)
{
	uint64_t base = allotted_cache(c, e);

	return e->mem_mb + (cache_mb > base ? cache_mb - base : 0);
}

/* The agent's bound on waiting for the node's lock. */
static int lock_ms(const syn__agent_t *a)
{
	return a->lock_ms > 0 ? a->lock_ms : SYN__LEND_LOCK_MS;
}

static int64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Shrink e's cache grant: the file first; wait (SYN__GRANT_WAIT_MS of wall
 * time, whatever the job's directory holds) for its loader to let go of
 * what it cached beyond the grant; then, if what its cgroup holds beyond
 * reclaim's reach (anonymous and tmpfs memory) does not fit the new limit,
 * the job kept its cache (a loader that ignores its grant, files of its
 * own): punch holes into its cache files until it fits (cachedir.h); then
 * lower the memory limit. Each step that was needed is logged.
 */
static void shrink_cache(lend_ctx_t *c, lend_entry_t *e)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	uint64_t want = e->cache_to << 20, used = 0, pinned = 0, freed = 0;
	uint64_t target = mem_limit_mb(c, e, e->cache_to) << 20;
	int64_t deadline;
	char err[400], job[32];
	int rc;

	if (set_grant(c, e) < 0)
		return;
	if (want < 8192)
		want = 8192;
	deadline = mono_ms() + SYN__GRANT_WAIT_MS;
	for (;;) {
		used = c->a->cache_dir ? cache_usage(c->a->cache_dir, e->job.jobid) : 0;
		if (used <= want || mono_ms() >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	if (used > want && syn__cg_mem_pinned(c->a->cg, e->job_rel, &pinned) == 0 &&
	    pinned > target && e->rec.synergy) {
		snprintf(job, sizeof(job), "job_%u", (unsigned)e->job.jobid);
		/* A little more than the excess: the kernel's counts lag. */
		rc = syn__cache_punch(c->a->cache_dir, job, (uid_t)e->rec.uid,
				      pinned - target + (4 << 20), SYN__GRANT_WAIT_MS, &freed, err,
				      sizeof(err));
		say(c, 1, "synergy: lend job=%u: holds %" PRIu64 " MB that reclaim cannot free "
		    "%d ms after its cache grant shrank to %" PRIu64 " MB (limit %" PRIu64 " MB); "
		    "%s %" PRIu64 " MB of its cache files%s%s", (unsigned)e->job.jobid, pinned >> 20,
		    SYN__GRANT_WAIT_MS, e->cache_to, target >> 20, rc < 0 ? "could not punch" :
		    "punched", freed >> 20, rc < 0 ? ": " : "", rc < 0 ? err : "");
	} else if (used == UINT64_MAX) {
		say(c, 1, "synergy: lend job=%u: its cache directory holds over %d files %d ms after "
		    "its cache grant shrank to %" PRIu64 " MB; its memory fits the lower limit",
		    (unsigned)e->job.jobid, SYN__CACHE_SCAN_MAX, SYN__GRANT_WAIT_MS, e->cache_to);
	} else if (used > want) {
		say(c, 1, "synergy: lend job=%u: its cache still holds %" PRIu64 " MB %d ms after its "
		    "cache grant shrank to %" PRIu64 " MB; its memory fits the lower limit",
		    (unsigned)e->job.jobid, used >> 20, SYN__GRANT_WAIT_MS, e->cache_to);
	}
	/* v1 refuses a limit reclaim cannot reach (EBUSY); a loader letting
	 * go at the last moment gets a little longer. */
	deadline = mono_ms() + SYN__GRANT_WAIT_MS;
	while ((rc = syn__cg_job_set_mem(c->a->cg, e->job_rel, target, err, sizeof(err))) < 0 &&
	       errno == EBUSY && mono_ms() < deadline)
		nanosleep(&pause, NULL);
	if (rc < 0)
		say(c, 1, "synergy: lend job=%u: cannot lower its memory limit to %" PRIu64 " MB: %s",
		    (unsigned)e->job.jobid, target >> 20, err);
	say(c, 0, "synergy: lend job=%u returns cache=%" PRIu64 "MB now=%" PRIu64 "MB",
	    (unsigned)e->job.jobid, e->cache_now - e->cache_to, e->cache_to);
}

/* Grow e's cache grant: the memory limit first, then the file. */
static void grow_cache(lend_ctx_t *c, lend_entry_t *e)
{
	char err[400];

	if (syn__cg_job_set_mem(c->a->cg, e->job_rel, mem_limit_mb(c, e, e->cache_to) << 20, err,
				sizeof(err)) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot raise its memory limit: %s",
		    (unsigned)e->job.jobid, err);
		return;
	}
	if (set_grant(c, e) == 0)
		say(c, 0, "synergy: lend job=%u borrows cache=%" PRIu64 "MB now=%" PRIu64 "MB",
		    (unsigned)e->job.jobid, e->cache_to - e->cache_now, e->cache_to);
}

/* The cache e's allotment holds: its memory beyond the process, at most
 * MaxCacheMB (what the loader is told at start, SYNERGY_CACHE_BYTES). */
static uint64_t allotted_cache(const lend_ctx_t *c, const lend_entry_t *e)
{
	uint64_t mb = e->mem_mb > c->a->shape.process_mem_mb ?
		      e->mem_mb - c->a->shape.process_mem_mb : 0;

	if (e->rec.mem_mb && e->rec.cache_mb < mb)
		mb = e->rec.cache_mb;
	if (c->a->shape.max_cache_mb && mb > c->a->shape.max_cache_mb)
		mb = c->a->shape.max_cache_mb;
	return mb;
}

/* Load e's record, profile copy and what its cgroups hold. */
static void load_entry(lend_ctx_t *c, lend_entry_t *e)
{
	char name[SYN_KEY_MAX + 40], path[SYN_PATH_MAX + SYN_KEY_MAX + 48];
	syn_error_t serr;
	uint64_t limit;

	if (syn__cg_get_cpus(c->a->cg, e->job_rel, &e->job.held) < 0) {
		/* Gone meanwhile (its cgroup is being removed): it holds
		 * nothing and is not touched. */
		CPU_ZERO(&e->job.held);
	}
	if (e->job.jobid &&
	    syn__jobrec_read(c->dfd, c->node, e->job.jobid, &e->rec, NULL, 0) == 0 &&
	    e->rec.has_allotted) {
		e->has_record = 1;
		e->job.allotted = e->rec.allotted;
	} else {
		e->job.allotted = e->job.held;
	}
	e->mem_mb = e->rec.alloc_mem_mb;
	if (!e->mem_mb && syn__cg_get_mem(c->a->cg, e->job_rel, &limit) == 0 && limit != UINT64_MAX)
		e->mem_mb = limit >> 20;
	e->cache_now = e->rec.has_hold ? e->rec.hold_cache_mb : allotted_cache(c, e);
	e->has_limits = syn__cg_job_has_limits(c->a->cg, e->job_rel);
	/* A job profiling in place has no profile yet (inplace.h). */
	e->profiling = e->has_record && e->rec.synergy && e->rec.profile[0] && e->has_limits;
	/* Nor does a job of a group whose key had none (jobrec.h). */
	if (e->has_record && e->rec.synergy && e->has_limits && !e->rec.profile[0] &&
	    !e->rec.unprofiled && syn__jobrec_name(c->node, e->job.jobid, ".json", name, sizeof(name)) == 0) {
		snprintf(path, sizeof(path), "%s/%s", c->a->state_dir, name);
		if (syn_profile_read_file(path, &e->profile, &serr) == 0)
			e->has_profile = 1;
		else
			say(c, 1, "synergy: lend job=%u: profile copy %s: %s; it is granted nothing",
			    (unsigned)e->job.jobid, path, serr.text);
	}
	e->synergy = e->has_profile;
}

/*
 * e has no record and holds only CPUs Slurm allotted to running jobs: its
 * job ended while its processes lived on (its slurmstepd was killed, so
 * nobody killed them). Its cpuset cannot be emptied while they run; what
 * is in Synergy's child of it goes to idle priority, so that the jobs Slurm
 * gave those CPUs run first.
 */
static void orphans_idle(lend_ctx_t *c, lend_entry_t *e)
{
	char err[400], name[64];
	int k;

	if (!e->has_limits) {
		/* Nothing of ours to lower; said only while something runs. */
		if (syn__cg_job_has_tasks(c->a->cg, e->job_rel) > 0)
			say(c, 1, "synergy: lend %s: has no record and holds only CPUs "
			    "Slurm allotted to other jobs; leaving it as it is",
			    who(e, name, sizeof(name)));
		return;
	}
	k = syn__cg_job_sched_idle(c->a->cg, e->job_rel, 1, err, sizeof(err));
	if (k < 0)
		say(c, 1, "synergy: lend %s: has no record and holds only CPUs Slurm "
		    "allotted to other jobs; cannot lower its priority: %s",
		    who(e, name, sizeof(name)), err);
	else if (k > 0)
		say(c, 0, "synergy: lend %s: has no record and holds only CPUs Slurm "
		    "allotted to other jobs (processes of an ended job): %d threads at idle "
		    "priority", who(e, name, sizeof(name)), k);
}

/*
 * Synergy's child of a job cgroup without a record and without any process
 * (a job whose processes outlived it, then ended) is removed: the epilog
 * could not, while they ran. Slurm's own job cgroup is Slurm's.
 */
static void orphans_cleanup(lend_ctx_t *c)
{
	char err[400], name[64];
	int i;

	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];

		if (e->has_record || !e->has_limits ||
		    syn__cg_job_has_tasks(c->a->cg, e->job_rel) != 0)
			continue;
		if (syn__cg_job_cleanup(c->a->cg, e->job_rel, err, sizeof(err)) < 0 &&
		    errno != EBUSY)
			say(c, 1, "synergy: lend %s: %s", who(e, name, sizeof(name)), err);
		e->has_limits = syn__cg_job_has_limits(c->a->cg, e->job_rel);
	}
}

/*
 * A job cgroup without a record owns what it holds, except what Slurm
 * allotted to a recorded job: such a cgroup may belong to a job that ended
 * while its processes lived on (its slurmstepd was killed, so Slurm could
 * not clean it up) and still hold CPUs lent to it, which Slurm has since
 * given to a newcomer. Slurm never gives one CPU to two running jobs, so
 * taking those away is always right. One that holds nothing else is no
 * running job at all: its processes go to idle priority (orphans_idle)
 * and it leaves the list, so that no plan counts its CPUs twice.
 */
static void disown_unrecorded(lend_ctx_t *c)
{
	cpu_set_t recorded;
	int i, k;

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
			orphans_idle(c, e);
			e->drop = 1; /* dropped below */
			continue;
		}
		e->job.allotted = rest;
	}
	for (i = k = 0; i < c->n; i++)
		if (!c->e[i].drop) {
			if (k != i)
				c->e[k] = c->e[i];
			k++;
		}
	c->n = k;
}

/* Collect the node's jobs (the ended one left out) and load each. */
static int collect(lend_ctx_t *c)
{
	int i;

	c->n = 0;
	if (jobs_each(c, collect_cb, c) < 0) {
		say(c, 1, "synergy: lend: cannot list the jobs of %s: %s", c->a->node_rel,
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < c->n; i++)
		load_entry(c, &c->e[i]);
	/* Before disown_unrecorded drops the orphans from the list. */
	orphans_cleanup(c);
	disown_unrecorded(c);
	return 0;
}

/*
 * Jobs profiling in place (inplace.h) are lent the node's idle cores first,
 * for their CPU search up to the node's size: split evenly between them
 * (the first ones listed get the remainder), each want raised by its part. The
 * search is short (well under a minute) and what it measures sizes every
 * later job of its key, so it goes before other jobs' grants; like any
 * grant it is taken back before a newcomer's tasks run.
 */
static void plan_profiling(lend_ctx_t *c, const cpu_set_t *node)
{
	int i, n = 0, idle = CPU_COUNT(node), k = 0;

	for (i = 0; i < c->n; i++) {
		idle -= CPU_COUNT(&c->e[i].job.allotted);
		n += c->e[i].profiling;
	}
	if (n == 0 || idle <= 0)
		return;
	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];
		int part;

		if (!e->profiling)
			continue;
		part = idle / n + (k < idle % n ? 1 : 0);
		k++;
		e->job.want = CPU_COUNT(&e->job.allotted) + part;
	}
}

/*
 * The plan: syn_node_tune over the node's jobs, its cores turned into each
 * job's want and its cache into cache_to. Without lending, or when the
 * plan cannot be made (the node's shape unknown, allotments that do not
 * fit it), every job holds its allotment and the cache it was allotted.
 * Jobs profiling in place take the idle cores first (plan_profiling); to
 * the plan they are other jobs holding what they were lent.
 */
static void plan(lend_ctx_t *c, const cpu_set_t *node)
{
	const syn__agent_t *a = c->a;
	syn_node_job_t *nj = NULL;
	syn_error_t perr;
	syn_node_stats_t st;
	syn_shape_t shape = a->shape;
	uint64_t mem_sum = 0;
	int i, gpus = 0;

	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];

		e->job.want = CPU_COUNT(&e->job.allotted);
		e->cache_to = e->synergy ? allotted_cache(c, e) : 0;
		mem_sum += e->mem_mb;
		if (e->synergy)
			gpus += (int)e->rec.gpus;
	}
	if (!a->lend || c->n == 0)
		return;
	plan_profiling(c, node);
	shape.cpus = CPU_COUNT(node);
	/* Unknown GPUs or memory: plan cores alone, over a memory pool of 0. */
	if (shape.gpus < gpus || shape.gpus < 1)
		shape.gpus = gpus > 0 ? gpus : 1;
	if (!a->cache_dir || shape.mem_mb < mem_sum)
		shape.mem_mb = mem_sum;
	nj = calloc((size_t)c->n, sizeof(*nj));
	if (!nj) {
		say(c, 1, "synergy: lend: out of memory");
		return;
	}
	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];

		nj[i].id = e->job.jobid;
		nj[i].synergy = e->synergy;
		nj[i].gpus = e->synergy ? (int)e->rec.gpus : 0;
		nj[i].cores = e->profiling ? e->job.want : CPU_COUNT(&e->job.allotted);
		nj[i].mem_mb = e->mem_mb;
		nj[i].profile = e->synergy ? &e->profile : NULL;
		/* Coordinated prep: the policy plans a group's members on the
		 * node as one consumer; a group is named by its first job here. */
		for (int k = 0; k <= i && e->synergy && e->rec.group[0] && !nj[i].group; k++)
			if (strcmp(c->e[k].rec.group, e->rec.group) == 0)
				nj[i].group = (uint64_t)k + 1;
	}
	if (syn_node_tune(&shape, nj, c->n, 0, &st, &perr) < 0) {
		say(c, 1, "synergy: lend: no plan for node %s: %s; every job keeps its allotment",
		    c->node, perr.text);
		goto out;
	}
	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];

		if (!e->synergy)
			continue;
		e->job.want = nj[i].hold_cores;
		if (a->cache_dir)
			e->cache_to = nj[i].hold_cache_mb;
	}
out:
	free(nj);
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* Sample e's CPU time; with an earlier sample at least
 * SYN__HARVEST_SAMPLE_MS old, measure the idle cores of its allotment
 * since then. Only Synergy jobs with a record are sampled. */
static void sample_cpu(lend_ctx_t *c, lend_entry_t *e)
{
	const uint64_t gap = (uint64_t)SYN__HARVEST_SAMPLE_MS * 1000000ULL;
	uint64_t ns, now = mono_ns();
	syn__jobrec_t *r = &e->rec;

	if (!e->has_record || !r->synergy || !e->has_limits)
		return;
	if (r->has_cpu && now >= r->cpu_at_ns && now - r->cpu_at_ns < gap)
		return;
	if (syn__cg_job_cpu_ns(c->a->cg, e->job_rel, &ns) < 0)
		return;
	/* A later sample below an earlier one (threads that ended took their
	 * time along, v1 without cpuacct) measures nothing: start again. */
	if (r->has_cpu && now > r->cpu_at_ns && ns >= r->cpu_ns) {
		double used = (double)(ns - r->cpu_ns) / (double)(now - r->cpu_at_ns);
		double spare = CPU_COUNT(&e->job.allotted) - used;

		r->spare_milli = spare > 0 ? (uint64_t)(spare * 1000.0 + 0.5) : 0;
		r->has_spare = 1;
	}
	r->cpu_ns = ns;
	r->cpu_at_ns = now;
	r->has_cpu = 1;
	e->rec_dirty = 1;
}

/*
 * Which jobs lend idle cycles and how many cores each harvests
 * (syn_node_harvest). Candidates are Synergy jobs with a profile and
 * their own limit cgroups, not profiling in place and not in a
 * coordinated-prep group (a group's members share one stream of batches:
 * they may lend, never harvest).
 */
static void plan_harvest(lend_ctx_t *c)
{
	syn_harvest_job_t *h;
	syn_error_t perr;
	int i, k;

	for (i = 0; i < c->n; i++)
		c->e[i].lend = c->e[i].harvest = 0;
	if (!c->a->harvest || !c->a->lend || c->n == 0)
		return;
	h = calloc((size_t)c->n, sizeof(*h));
	if (!h) {
		say(c, 1, "synergy: lend: out of memory");
		return;
	}
	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];
		int allotted = CPU_COUNT(&e->job.allotted);

		h[i].id = e->job.jobid;
		h[i].synergy = e->synergy && e->has_limits && !e->profiling && e->rec.gpus >= 1;
		h[i].gpus = h[i].synergy ? (int)e->rec.gpus : 0;
		h[i].profile = h[i].synergy && !e->rec.group[0] ? &e->profile : NULL;
		h[i].allotted = allotted;
		h[i].hold = e->job.want > allotted ? e->job.want : allotted;
		h[i].cache_mb = e->cache_to;
		h[i].spare = e->rec.has_spare ? (double)e->rec.spare_milli / 1000.0 : -1;
		h[i].harvesting = e->rec.harvest;
		for (k = 0; k < c->n; k++) {
			cpu_set_t both;

			if (k == i)
				continue;
			CPU_AND(&both, &c->e[k].job.held, &e->job.allotted);
			h[i].lent += CPU_COUNT(&both);
		}
		if (h[i].lent > allotted)
			h[i].lent = allotted;
	}
	if (syn_node_harvest(h, c->n, &perr) < 0)
		say(c, 1, "synergy: lend: no harvest on node %s: %s", c->node, perr.text);
	else
		for (i = 0; i < c->n; i++) {
			c->e[i].lend = h[i].lend;
			c->e[i].harvest = h[i].harvest;
		}
	free(h);
}

/* e harvests nothing now (its cpuset holds no other job's CPU): its
 * threads go back to normal priority, if the agent had lowered them. */
static void harvest_end(lend_ctx_t *c, lend_entry_t *e)
{
	char err[400];
	int k;

	if (!e->rec.harvest)
		return;
	k = syn__cg_job_sched_idle(c->a->cg, e->job_rel, 0, err, sizeof(err));
	if (k < 0) {
		say(c, 1, "synergy: lend job=%u: cannot restore its threads' priority: %s",
		    (unsigned)e->job.jobid, err);
		return;
	}
	e->rec.harvest = 0;
	e->rec_dirty = 1;
	say(c, 0, "synergy: lend job=%u harvests no more: %d threads back at normal priority",
	    (unsigned)e->job.jobid, k);
}

/* e is to harvest e->harvested: every thread of it at idle priority
 * first; if that fails, it harvests nothing. */
static void harvest_start(lend_ctx_t *c, lend_entry_t *e)
{
	char err[400], *list;
	int k;

	if (CPU_COUNT(&e->harvested) == 0)
		return;
	k = syn__cg_job_sched_idle(c->a->cg, e->job_rel, 1, err, sizeof(err));
	if (k < 0) {
		say(c, 1, "synergy: lend job=%u: cannot lower its threads' priority (%s); it "
		    "harvests nothing", (unsigned)e->job.jobid, err);
		CPU_XOR(&e->job.target, &e->job.target, &e->harvested);
		CPU_ZERO(&e->harvested);
		/* It may hold lenders' CPUs from an earlier call: those go
		 * first; then what was lowered goes back to normal (the record
		 * says harvest so that it is undone). */
		if (apply_narrow(c, e) < 0)
			return;
		e->rec.harvest = 1;
		e->rec_dirty = 1;
		harvest_end(c, e);
		return;
	}
	if (!e->rec.harvest) {
		e->rec.harvest = 1;
		e->rec_dirty = 1;
		list = syn_cpus_format_alloc(&e->harvested);
		say(c, 0, "synergy: lend job=%u harvests cpus=%s at idle priority (%d threads)",
		    (unsigned)e->job.jobid, list ? list : "?", k);
		free(list);
	}
}

/*
 * Something failed before the plan was applied: shrink every job back to
 * what Slurm allotted it; a job without a record loses the newcomer's CPUs
 * (those Slurm just gave to someone else). Cache grants are left: taking
 * them back waits on loaders, and the memory of a newcomer is kept by its
 * own cgroup limit. Jobs must have been collected.
 */
static void failsafe(lend_ctx_t *c, const cpu_set_t *newcomer, uint32_t newjob)
{
	int i;

	for (i = 0; i < c->n; i++) {
		lend_entry_t *e = &c->e[i];

		if (newjob && e->job.jobid == newjob)
			continue;
		if (!e->has_record && syn__cg_get_cpus(c->a->cg, e->job_rel, &e->job.held) < 0)
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
		if (apply_narrow(c, e) == 0 && e->has_record)
			harvest_end(c, e);
	}
	c->failed = 1;
}

static lend_ctx_t *ctx_new(const syn__agent_t *a)
{
	lend_ctx_t *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = calloc(LEND_MAX_JOBS, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return NULL;
	}
	c->a = a;
	c->node = syn__cg_node(a->cg);
	c->dfd = -1;
	return c;
}

static void ctx_free(lend_ctx_t *c)
{
	if (!c)
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	free(c->map);
	free(c->e);
	free(c);
}

int syn__lend_rebalance(const syn__agent_t *a, const syn__lend_start_t *start,
			uint32_t ended_jobid)
{
	lend_ctx_t *c;
	syn__lend_job_t *jobs = NULL;
	cpu_set_t node, newcomer, *nc = NULL;
	char err[300];
	int lockfd = -1, i, rv = -1;

	if (!a || !a->cg || !a->state_dir || !a->node_rel || (start && !start->job_rel)) {
		errno = EINVAL;
		return -1;
	}
	c = ctx_new(a);
	jobs = calloc(LEND_MAX_JOBS, sizeof(*jobs));
	if (!c || !jobs) {
		ctx_free(c);
		free(jobs);
		errno = ENOMEM;
		return -1;
	}
	c->ended = ended_jobid;
	if (start && syn__cg_get_cpus(a->cg, start->job_rel, &newcomer) == 0)
		nc = &newcomer;
	c->dfd = syn__state_dir_open(a->state_dir, err, sizeof(err));
	if (c->dfd < 0) {
		say(c, 1, "synergy: lend: %s", err);
		goto failsafe;
	}
	lockfd = syn__node_lock(c->dfd, c->node, lock_ms(a));
	if (lockfd < 0) {
		say(c, 1, "synergy: lend: lock %s/%s.lock: %s", a->state_dir, c->node, strerror(errno));
		goto failsafe;
	}
	if (syn__cg_get_cpus(a->cg, a->node_rel, &node) < 0) {
		say(c, 1, "synergy: lend: cannot read the cpuset of %s", a->node_rel);
		goto failsafe;
	}
	if (ended_jobid) {
		syn__jobrec_t r;

		if (syn__jobrec_read(c->dfd, c->node, ended_jobid, &r, NULL, 0) == 0)
			snprintf(c->ended_sluid, sizeof(c->ended_sluid), "%s", r.sluid);
		syn__jobrec_remove(c->dfd, c->node, ended_jobid);
	}
	if (start) {
		char sluid[SYN__SLUID_LEN + 1];
		syn__jobrec_t r;
		int dirty = 0;

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
			/* Slurm may answer "unlimited" (a huge number): that is
			 * unknown, not a figure the record could hold. */
			r.alloc_mem_mb = start->alloc_mem_mb <= SYN__JOBREC_MEM_MAX ?
					 start->alloc_mem_mb : 0;
			dirty = 1;
		}
		/* A job cgroup named by the job's SLUID (Slurm 26.05) is this
		 * job's from now on: the name the kernel shows wins over what
		 * the prolog was told. */
		if (syn__cg_job_sluid(start->job_rel, sluid, sizeof(sluid)) == 0 &&
		    strcmp(r.sluid, sluid) != 0) {
			if (r.sluid[0])
				say(c, 1, "synergy: lend job=%u: its prolog was given SLUID %s, "
				    "its cgroup is %s; the cgroup's name is recorded",
				    (unsigned)start->jobid, r.sluid, start->job_rel);
			snprintf(r.sluid, sizeof(r.sluid), "%s", sluid);
			dirty = 1;
		}
		if (dirty && syn__jobrec_write(c->dfd, c->node, start->jobid, &r) < 0) {
			say(c, 1, "synergy: lend job=%u: cannot write its record in %s: %s",
			    (unsigned)start->jobid, a->state_dir, strerror(errno));
			goto failsafe;
		}
	}
	if (collect(c) < 0)
		goto failsafe;
	records_prune(c);
	if (a->harvest)
		for (i = 0; i < c->n; i++)
			sample_cpu(c, &c->e[i]);
	plan(c, &node);
	plan_harvest(c);
	for (i = 0; i < c->n; i++) {
		jobs[i].jobid = c->e[i].job.jobid;
		jobs[i].allotted = c->e[i].job.allotted;
		jobs[i].held = c->e[i].job.held;
		jobs[i].want = c->e[i].has_limits ? c->e[i].job.want :
						    CPU_COUNT(&c->e[i].job.allotted);
	}
	if (syn__lend_place(&node, jobs, c->n) < 0)
		goto failsafe;
	for (i = 0; i < c->n; i++) {
		jobs[i].held = c->e[i].job.held;
		jobs[i].lend = c->e[i].lend;
		jobs[i].harvest = c->e[i].harvest;
	}
	if (syn__lend_place_harvest(jobs, c->n) < 0)
		goto failsafe;
	for (i = 0; i < c->n; i++) {
		c->e[i].job.target = jobs[i].target;
		c->e[i].harvested = jobs[i].harvested;
	}
	/* Take back first, everywhere, so that nobody runs below its share
	 * while resources move: cache (file, wait, limit), then CPUs; then
	 * lend: CPUs, then cache (limit, file). */
	if (a->cache_dir)
		for (i = 0; i < c->n; i++)
			if (c->e[i].synergy && c->e[i].cache_to < c->e[i].cache_now)
				shrink_cache(c, &c->e[i]);
	for (i = 0; i < c->n; i++)
		c->e[i].narrow_failed = apply_narrow(c, &c->e[i]) < 0;
	/* Harvests: those that end go back to normal priority once their
	 * cpusets hold no other job's CPU; those that start or go on are set
	 * to idle priority before their cpusets grow (and again at every
	 * call, for threads started since). */
	for (i = 0; i < c->n; i++)
		if (CPU_COUNT(&c->e[i].harvested) == 0 && !c->e[i].narrow_failed)
			harvest_end(c, &c->e[i]);
	for (i = 0; i < c->n; i++)
		if (c->e[i].has_limits)
			harvest_start(c, &c->e[i]);
	for (i = 0; i < c->n; i++)
		apply_widen(c, &c->e[i]);
	if (a->cache_dir)
		for (i = 0; i < c->n; i++)
			if (c->e[i].synergy && c->e[i].cache_to > c->e[i].cache_now)
				grow_cache(c, &c->e[i]);
	for (i = 0; i < c->n; i++)
		if (c->e[i].rec_dirty && c->e[i].has_record &&
		    syn__jobrec_write(c->dfd, c->node, c->e[i].job.jobid, &c->e[i].rec) < 0)
			say(c, 1, "synergy: lend job=%u: cannot update its record: %s",
			    (unsigned)c->e[i].job.jobid, strerror(errno));
	rv = c->failed ? -1 : 0;
	if (rv < 0)
		errno = EIO;
	goto out;
failsafe:
	/* Without a list of jobs there is nothing to shrink; try to get one
	 * even without the lock or the state directory. */
	if (c->n == 0 && jobs_each(c, collect_cb, c) >= 0) {
		for (i = 0; i < c->n; i++) {
			lend_entry_t *e = &c->e[i];

			if (syn__cg_get_cpus(a->cg, e->job_rel, &e->job.held) < 0)
				CPU_ZERO(&e->job.held);
			e->job.allotted = e->job.held;
			if (c->dfd >= 0 && e->job.jobid &&
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
		close(lockfd); /* releases the lock */
	ctx_free(c);
	free(jobs);
	return rv;
}

int syn__lend_step_start(const syn__agent_t *a, const char *job_rel, uint32_t jobid)
{
	lend_ctx_t *c;
	lend_entry_t *e;
	char err[300];
	int lockfd = -1, rv = -1;

	if (!a || !a->cg || !a->state_dir || !job_rel) {
		errno = EINVAL;
		return -1;
	}
	c = ctx_new(a);
	if (!c) {
		errno = ENOMEM;
		return -1;
	}
	e = &c->e[0];
	e->job.jobid = jobid;
	snprintf(e->job_rel, sizeof(e->job_rel), "%s", job_rel);
	c->dfd = syn__state_dir_open(a->state_dir, err, sizeof(err));
	if (c->dfd < 0) {
		say(c, 1, "synergy: lend: %s", err);
		goto out;
	}
	lockfd = syn__node_lock(c->dfd, c->node, lock_ms(a));
	if (lockfd < 0)
		say(c, 1, "synergy: lend: lock %s/%s.lock: %s; giving CPUs back unlocked",
		    a->state_dir, c->node, strerror(errno));
	if (syn__jobrec_read(c->dfd, c->node, jobid, &e->rec, NULL, 0) < 0 ||
	    !e->rec.has_allotted || syn__cg_get_cpus(a->cg, job_rel, &e->job.held) < 0) {
		rv = c->failed ? -1 : 0; /* not recorded, or no job cgroup yet */
		goto out;
	}
	e->job.allotted = e->rec.allotted;
	e->job.target = e->rec.allotted;
	if (apply_narrow(c, e) == 0 && e->rec.harvest) {
		harvest_end(c, e);
		if (!e->rec.harvest && syn__jobrec_write(c->dfd, c->node, jobid, &e->rec) < 0)
			say(c, 1, "synergy: lend job=%u: cannot update its record: %s",
			    (unsigned)jobid, strerror(errno));
	}
	rv = c->failed ? -1 : 0;
out:
	if (rv < 0)
		errno = EIO;
	if (lockfd >= 0)
		close(lockfd);
	ctx_free(c);
	return rv;
}

int syn__lend_task_enter(const syn__agent_t *a, uint32_t jobid, const char *job_rel)
{
	syn__jobrec_t r;
	char err[400];
	int dfd, lockfd, rv = 0;

	if (!a || !a->cg || !a->state_dir || !job_rel) {
		errno = EINVAL;
		return -1;
	}
	dfd = syn__state_dir_open(a->state_dir, err, sizeof(err));
	if (dfd < 0)
		return -1;
	lockfd = syn__node_lock(dfd, syn__cg_node(a->cg), lock_ms(a));
	if (syn__jobrec_read(dfd, syn__cg_node(a->cg), jobid, &r, NULL, 0) == 0 && r.harvest) {
		rv = 1;
		if (syn__cg_job_sched_idle(a->cg, job_rel, 1, err, sizeof(err)) < 0) {
			rv = -1;
			if (a->log) {
				char msg[600];

				snprintf(msg, sizeof(msg), "synergy: lend job=%u: a new task cannot "
					 "be made idle (%s); the harvest ends", (unsigned)jobid, err);
				a->log(1, msg, a->arg);
			}
		}
	}
	if (lockfd >= 0)
		close(lockfd);
	close(dfd);
	if (rv < 0)
		syn__lend_step_start(a, job_rel, jobid);
	return rv;
}

static void fmt(const cpu_set_t *s, char *buf, size_t len)
{
	if (syn_cpus_format(s, buf, len) < 0)
		snprintf(buf, len, "?");
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
	if (syn__cg_get_cpus(st->c->a->cg, job_rel, &held) == 0)
		fmt(&held, info->held, sizeof(info->held));
	if (syn__cg_job_limit_cpus(st->c->a->cg, job_rel, &lim) > 0)
		fmt(&lim, info->limits, sizeof(info->limits));
	if (st->c->dfd >= 0 && jobid &&
	    syn__jobrec_read(st->c->dfd, st->c->node, jobid, &r, NULL, 0) == 0) {
		info->borrow = r.synergy;
		snprintf(info->key, sizeof(info->key), "%s", r.key);
		info->alloc_mem_mb = r.alloc_mem_mb;
		info->cache_mb = r.has_hold ? r.hold_cache_mb : r.cache_mb;
		snprintf(info->group, sizeof(info->group), "%s", r.group);
		info->has_idle = r.has_spare;
		info->idle = (double)r.spare_milli / 1000.0;
		info->harvests = r.harvest;
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

int syn__lend_status(const syn__agent_t *a, char *node_cpus, size_t len,
		     int (*fn)(const syn__lend_info_t *info, void *arg), void *arg)
{
	status_ctx_t st;
	cpu_set_t set;
	int n;

	if (!a || !a->cg || !a->state_dir || !a->node_rel || !node_cpus || !len || !fn) {
		errno = EINVAL;
		return -1;
	}
	memset(&st, 0, sizeof(st));
	if (syn__cg_get_cpus(a->cg, a->node_rel, &set) < 0)
		return -1;
	fmt(&set, node_cpus, len);
	st.c = ctx_new(a);
	st.info = malloc(sizeof(*st.info));
	if (!st.c || !st.info) {
		ctx_free(st.c);
		free(st.info);
		errno = ENOMEM;
		return -1;
	}
	st.fn = fn;
	st.arg = arg;
	st.c->dfd = open(a->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	n = jobs_each(st.c, status_cb, &st);
	ctx_free(st.c);
	free(st.info);
	return n;
}
