/*
 * lend.c: idle-core lending on one node (see lend.h).
 *
 * The decision (syn__lend_plan) is a pure function. The rest gathers what
 * it needs and applies it, all under one flock per node so that the
 * slurmstepds of jobs starting and ending at the same time act one after
 * the other:
 *   - a record per job, written at the job's first step before anything is
 *     lent to it: the CPUs Slurm gave its job cgroup then (that cpuset is in
 *     the kernel's CPU numbering, unlike S_JOB_ALLOC_CORES, which counts
 *     Slurm's abstract cores), its GPUs, cache grant and profile key;
 *   - the cgroup tree, which says which jobs run now and what they hold. A
 *     job cgroup without a record (started before lending was turned on)
 *     counts as allotted everything it holds and never borrows.
 * Applying narrows first (every job that must give CPUs back: its synergy
 * child, then its job cgroup), then widens (parents, the job cgroup, its
 * synergy child, then the affinity of the child's threads). A failed step
 * is reported and skips what depends on it; nothing is retried.
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
#include "lend.h"
#include "util.h"

/* Enough for any node this plugin will meet; more jobs are not lent to. */
#define LEND_MAX_JOBS 256

int syn__cpus_parse(const char *list, cpu_set_t *set)
{
	const char *p = list;

	if (!list || !set) {
		errno = EINVAL;
		return -1;
	}
	CPU_ZERO(set);
	while (*p && *p != '\n') {
		char *end;
		long a, b;

		if (*p < '0' || *p > '9')
			goto bad;
		a = strtol(p, &end, 10);
		if (a >= CPU_SETSIZE)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			if (p[1] < '0' || p[1] > '9')
				goto bad;
			b = strtol(p + 1, &end, 10);
			if (b < a || b >= CPU_SETSIZE)
				goto bad;
			p = end;
		}
		for (; a <= b; a++)
			CPU_SET((int)a, set);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int syn__cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	int i = 0, n;

	if (!set || !buf || !len) {
		errno = EINVAL;
		return -1;
	}
	buf[0] = '\0';
	while (i < CPU_SETSIZE) {
		int j;

		if (!CPU_ISSET(i, set)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set); j++)
			;
		if (j == i)
			n = snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
		else
			n = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", i, j);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			errno = ENAMETOOLONG;
			return -1;
		}
		used += (size_t)n;
		i = j + 1;
	}
	return 0;
}

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
	char job_rel[320];
	int has_child;              /* a synergy child exists */
	int has_profile;
	syn_profile_t profile;
	char key[SYN__KEY_MAX + 1];
	int borrow;
} lend_entry_t;

typedef struct lend_ctx {
	const char *state_dir, *store_dir, *node_rel, *node_name;
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
	char msg[512];
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

/* The state directory: created if missing, and trusted only if root owns
 * it and nobody else can write it (root acts on what the records say). */
static int state_dir_open(lend_ctx_t *c)
{
	char parent[SYN__PATH_MAX];
	char *slash;
	struct stat st;
	int fd;

	snprintf(parent, sizeof(parent), "%s", c->state_dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
			say(c, 1, "synergy: lend: mkdir %s: %s", parent, strerror(errno));
			return -1;
		}
	}
	if (mkdir(c->state_dir, 0700) < 0 && errno != EEXIST) {
		say(c, 1, "synergy: lend: mkdir %s: %s", c->state_dir, strerror(errno));
		return -1;
	}
	fd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		say(c, 1, "synergy: lend: open %s: %s", c->state_dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		say(c, 1, "synergy: lend: %s must be owned by root and writable by root only",
		    c->state_dir);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* Take the node's lock (NODE.lock in the state directory): every lending
 * action on a node runs under it, so concurrent slurmstepds take turns.
 * Returns the descriptor holding the flock (closing it releases), or -1. */
static int node_lock(lend_ctx_t *c, int dfd)
{
	char name[128];
	int fd;

	snprintf(name, sizeof(name), "%s.lock", c->node_name);
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		say(c, 1, "synergy: lend: lock %s/%s: %s", c->state_dir, name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void record_name(const lend_ctx_t *c, uint32_t jobid, char *buf, size_t len)
{
	snprintf(buf, len, "%s.job_%u", c->node_name, (unsigned)jobid);
}

/* Write a job's record atomically (temporary file, rename). */
static int record_write(lend_ctx_t *c, int dfd, const syn__lend_start_t *s, const char *allotted)
{
	char name[128], tmp[160], text[512];
	int fd, len, rv = -1;

	record_name(c, s->jobid, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	len = snprintf(text, sizeof(text), "allotted=%s\nborrow=%d\nkey=%s\ngpus=%d\ncache_mb=%llu\n",
		       allotted, s->borrow ? 1 : 0, s->borrow && s->key ? s->key : "",
		       s->gpus, (unsigned long long)s->cache_mb);
	if (len < 0 || (size_t)len >= sizeof(text)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)len) == len && close(fd) == 0) {
		fd = -1;
		if (renameat(dfd, tmp, dfd, name) == 0)
			rv = 0;
	}
	if (fd >= 0)
		close(fd);
	if (rv < 0)
		unlinkat(dfd, tmp, 0);
	return rv;
}

/* Read a job's record into e. Returns 0, or -1 (absent or malformed). */
static int record_read(lend_ctx_t *c, int dfd, lend_entry_t *e)
{
	char name[128], line[300];
	FILE *f;
	int fd, have = 0;
	uint64_t v;

	record_name(c, e->job.jobid, name, sizeof(name));
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *val = strchr(line, '=');

		if (!val)
			continue;
		*val++ = '\0';
		val[strcspn(val, "\n")] = '\0';
		if (strcmp(line, "allotted") == 0 && syn__cpus_parse(val, &e->job.allotted) == 0)
			have = 1;
		else if (strcmp(line, "borrow") == 0)
			e->borrow = strcmp(val, "1") == 0;
		else if (strcmp(line, "key") == 0 && syn__key_valid(val))
			snprintf(e->key, sizeof(e->key), "%s", val);
		else if (strcmp(line, "gpus") == 0 && syn__parse_u64(val, 1, 1024, &v) == 0)
			e->job.gpus = (int)v;
		else if (strcmp(line, "cache_mb") == 0 &&
			 syn__parse_u64(val, 0, 1ULL << 40, &v) == 0)
			e->job.cache_gb = (double)v / 1024.0;
	}
	fclose(f);
	if (!have || CPU_COUNT(&e->job.allotted) == 0)
		return -1;
	return 0;
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
static void records_prune(lend_ctx_t *c, int dfd)
{
	char prefix[96];
	struct dirent *d;
	DIR *dir;
	int copy, i;
	size_t plen;

	copy = dup(dfd);
	if (copy < 0)
		return;
	dir = fdopendir(copy);
	if (!dir) {
		close(copy);
		return;
	}
	plen = (size_t)snprintf(prefix, sizeof(prefix), "%s.job_", c->node_name);
	while ((d = readdir(dir))) {
		uint64_t id;
		int live = 0;

		if (strncmp(d->d_name, prefix, plen) != 0 ||
		    syn__parse_u64(d->d_name + plen, 1, UINT32_MAX, &id) < 0)
			continue;
		for (i = 0; i < c->n && !live; i++)
			live = c->e[i].job.jobid == (uint32_t)id;
		if (!live)
			unlinkat(dfd, d->d_name, 0);
	}
	closedir(dir);
}

static void fmt(const cpu_set_t *s, char *buf, size_t len)
{
	if (syn__cpus_format(s, buf, len) < 0)
		snprintf(buf, len, "?");
}

/* The cpuset.cpus of cgroup rel as a set. Returns 0, or -1 (unreadable or
 * malformed). */
static int read_cpus(const char *rel, cpu_set_t *set)
{
	char text[256];

	if (syn__cg_get_cpus(rel, text, sizeof(text)) < 0)
		return -1;
	return syn__cpus_parse(text, set);
}

/* The node's name, the last component of its cgroup path ("slurm_n1"): it
 * names the node's lock and records in the state directory. */
static const char *node_base(const char *node_rel)
{
	const char *slash = strrchr(node_rel, '/');

	return slash ? slash + 1 : node_rel;
}

/* Give back what e holds beyond its target: synergy child first. */
static void apply_narrow(lend_ctx_t *c, lend_entry_t *e)
{
	syn__lend_job_t *j = &e->job;
	cpu_set_t gone, child, keep;
	char child_rel[400], list[256], err[300], gone_s[256];

	CPU_AND(&keep, &j->held, &j->target);
	CPU_XOR(&gone, &j->held, &keep);
	if (CPU_COUNT(&gone) == 0)
		return;
	snprintf(child_rel, sizeof(child_rel), "%s/%s", e->job_rel, SYN__CG_CHILD);
	if (e->has_child && read_cpus(child_rel, &child) == 0) {
		CPU_AND(&child, &child, &keep);
		if (CPU_COUNT(&child) == 0)
			CPU_AND(&child, &j->allotted, &keep);
		fmt(&child, list, sizeof(list));
		if (syn__cg_set_cpus(child_rel, list, err, sizeof(err)) < 0) {
			say(c, 1, "synergy: lend job=%u: cannot take CPUs back: %s",
			    (unsigned)j->jobid, err);
			return;
		}
	}
	fmt(&keep, list, sizeof(list));
	fmt(&gone, gone_s, sizeof(gone_s));
	if (syn__cg_set_cpus(e->job_rel, list, err, sizeof(err)) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot take CPUs back: %s", (unsigned)j->jobid, err);
		return;
	}
	j->held = keep;
	say(c, 0, "synergy: lend job=%u returns cpus=%s now=%s", (unsigned)j->jobid, gone_s, list);
}

/* Widen rel's cpuset to include want, if it does not yet. */
static int widen(lend_ctx_t *c, const char *rel, const cpu_set_t *want, uint32_t jobid)
{
	cpu_set_t cur, both;
	char list[256], err[300];

	if (read_cpus(rel, &cur) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot read the cpuset of %s", (unsigned)jobid, rel);
		return -1;
	}
	CPU_OR(&both, &cur, want);
	if (CPU_EQUAL(&both, &cur))
		return 0;
	fmt(&both, list, sizeof(list));
	if (syn__cg_set_cpus(rel, list, err, sizeof(err)) < 0) {
		say(c, 1, "synergy: lend job=%u: cannot lend: %s", (unsigned)jobid, err);
		return -1;
	}
	return 0;
}

/* Lend e the CPUs of its target it does not hold: parents, job, child. */
static void apply_widen(lend_ctx_t *c, lend_entry_t *e)
{
	syn__lend_job_t *j = &e->job;
	cpu_set_t add, child;
	char parent[320], child_rel[400], list[256], add_s[256];
	char *slash;

	CPU_OR(&add, &j->held, &j->target);
	CPU_XOR(&add, &add, &j->held);
	if (CPU_COUNT(&add) == 0 || !e->has_child)
		return;
	/* Parents first: the uid_<n> cgroup (Slurm normally gives it the whole
	 * node, but nothing promises that). */
	snprintf(parent, sizeof(parent), "%s", e->job_rel);
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		if (widen(c, parent, &j->target, j->jobid) < 0)
			return;
	}
	if (widen(c, e->job_rel, &j->target, j->jobid) < 0)
		return;
	snprintf(child_rel, sizeof(child_rel), "%s/%s", e->job_rel, SYN__CG_CHILD);
	if (widen(c, child_rel, &add, j->jobid) < 0)
		return;
	if (read_cpus(child_rel, &child) == 0)
		syn__cg_pin_tasks(child_rel, &child, sizeof(child));
	fmt(&add, add_s, sizeof(add_s));
	fmt(&j->target, list, sizeof(list));
	say(c, 0, "synergy: lend job=%u borrows cpus=%s now=%s gain=%.0f%%", (unsigned)j->jobid,
	    add_s, list, j->gain * 100.0);
}

int syn__lend_rebalance(const char *state_dir, const char *store_dir, const char *node_rel,
			const syn__lend_start_t *start, uint32_t ended_jobid,
			double min_gain, syn__lend_log_f log, void *arg)
{
	lend_ctx_t c;
	syn__lend_job_t *jobs = NULL;
	syn_store_t *store = NULL;
	syn_store_error_t serr;
	cpu_set_t node;
	char text[256], name[128], path[400];
	const char *base;
	int dfd = -1, lockfd = -1, i, rv = -1;

	memset(&c, 0, sizeof(c));
	c.state_dir = state_dir;
	c.store_dir = store_dir;
	c.node_rel = node_rel;
	c.ended = ended_jobid;
	c.log = log;
	c.arg = arg;
	if (!state_dir || !store_dir || !node_rel || (start && !start->job_rel)) {
		errno = EINVAL;
		return -1;
	}
	base = node_base(node_rel);
	if (!syn__key_valid(base)) {
		say(&c, 1, "synergy: lend: node cgroup '%s' has an unexpected name", node_rel);
		errno = EINVAL;
		return -1;
	}
	c.node_name = base;
	c.e = calloc(LEND_MAX_JOBS, sizeof(*c.e));
	jobs = calloc(LEND_MAX_JOBS, sizeof(*jobs));
	if (!c.e || !jobs) {
		errno = ENOMEM;
		goto out;
	}
	dfd = state_dir_open(&c);
	if (dfd < 0)
		goto out;
	lockfd = node_lock(&c, dfd);
	if (lockfd < 0)
		goto out;
	if (read_cpus(node_rel, &node) < 0) {
		say(&c, 1, "synergy: lend: cannot read the cpuset of %s", node_rel);
		goto out;
	}
	if (ended_jobid) {
		record_name(&c, ended_jobid, name, sizeof(name));
		unlinkat(dfd, name, 0);
	}
	if (start) {
		lend_entry_t probe;

		memset(&probe, 0, sizeof(probe));
		probe.job.jobid = start->jobid;
		/* Only the job's first step records it: later steps would see a
		 * job cgroup that lending may have widened already. */
		if (record_read(&c, dfd, &probe) < 0) {
			if (syn__cg_get_cpus(start->job_rel, text, sizeof(text)) < 0) {
				say(&c, 1, "synergy: lend job=%u: cannot read the cpuset of %s",
				    (unsigned)start->jobid, start->job_rel);
				goto out;
			}
			if (record_write(&c, dfd, start, text) < 0) {
				say(&c, 1, "synergy: lend job=%u: cannot write its record in %s: %s",
				    (unsigned)start->jobid, state_dir, strerror(errno));
				goto out;
			}
		}
	}
	if (syn__cg_foreach_job(node_rel, collect_cb, &c) < 0) {
		say(&c, 1, "synergy: lend: cannot list the jobs of %s", node_rel);
		goto out;
	}
	records_prune(&c, dfd);
	store = syn_store_create(store_dir, 0, &serr);
	for (i = 0; i < c.n; i++) {
		lend_entry_t *e = &c.e[i];

		if (read_cpus(e->job_rel, &e->job.held) < 0) {
			/* Gone meanwhile (its cgroup is being removed): it holds
			 * nothing and is not touched. */
			CPU_ZERO(&e->job.held);
		}
		if (record_read(&c, dfd, e) < 0) {
			/* Unknown to us: everything it holds is its own. */
			e->job.allotted = e->job.held;
			e->borrow = 0;
		}
		snprintf(path, sizeof(path), "%s/%s", e->job_rel, SYN__CG_CHILD);
		e->has_child = syn__cg_get_cpus(path, text, sizeof(text)) == 0;
		if (e->borrow && e->has_child && store && e->key[0]) {
			if (syn_store_get(store, e->key, &e->profile, &serr) == 0)
				e->has_profile = 1;
			else
				say(&c, 1, "synergy: lend job=%u: profile %s: %s; it does not borrow",
				    (unsigned)e->job.jobid, e->key, serr.text);
		}
		e->job.profile = e->has_profile ? &e->profile : NULL;
		jobs[i] = e->job;
	}
	if (syn__lend_plan(&node, jobs, c.n, min_gain) < 0)
		goto out;
	for (i = 0; i < c.n; i++) {
		c.e[i].job.target = jobs[i].target;
		c.e[i].job.gain = jobs[i].gain;
	}
	/* Take back first, everywhere, so that nobody runs below its share
	 * while CPUs move; then lend. */
	for (i = 0; i < c.n; i++)
		apply_narrow(&c, &c.e[i]);
	for (i = 0; i < c.n; i++)
		apply_widen(&c, &c.e[i]);
	rv = c.failed ? -1 : 0;
	if (rv < 0)
		errno = EIO;
out:
	syn_store_destroy(store);
	if (lockfd >= 0)
		close(lockfd); /* releases the flock */
	if (dfd >= 0)
		close(dfd);
	free(c.e);
	free(jobs);
	return rv;
}

int syn__lend_step_start(const char *state_dir, const char *node_rel, const char *job_rel,
			 uint32_t jobid, syn__lend_log_f log, void *arg)
{
	lend_ctx_t c;
	lend_entry_t *e = NULL;
	char text[256], path[400];
	const char *base;
	int dfd = -1, lockfd = -1, rv = -1;

	memset(&c, 0, sizeof(c));
	c.state_dir = state_dir;
	c.node_rel = node_rel;
	c.log = log;
	c.arg = arg;
	if (!state_dir || !node_rel || !job_rel) {
		errno = EINVAL;
		return -1;
	}
	base = node_base(node_rel);
	if (!syn__key_valid(base)) {
		errno = EINVAL;
		return -1;
	}
	c.node_name = base;
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return -1;
	}
	e->job.jobid = jobid;
	snprintf(e->job_rel, sizeof(e->job_rel), "%s", job_rel);
	dfd = state_dir_open(&c);
	if (dfd < 0)
		goto out;
	lockfd = node_lock(&c, dfd);
	if (lockfd < 0)
		goto out;
	if (record_read(&c, dfd, e) < 0 || read_cpus(job_rel, &e->job.held) < 0) {
		rv = 0; /* not recorded, or no job cgroup yet: nothing was lent */
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", job_rel, SYN__CG_CHILD);
	e->has_child = syn__cg_get_cpus(path, text, sizeof(text)) == 0;
	e->job.target = e->job.allotted;
	apply_narrow(&c, e);
	rv = c.failed ? -1 : 0;
	if (rv < 0)
		errno = EIO;
out:
	if (lockfd >= 0)
		close(lockfd);
	if (dfd >= 0)
		close(dfd);
	free(e);
	return rv;
}

typedef struct status_ctx {
	lend_ctx_t c;
	int dfd;
	int (*fn)(const syn__lend_info_t *info, void *arg);
	void *arg;
	int stop;
} status_ctx_t;

static int status_cb(uint32_t jobid, const char *job_rel, void *arg)
{
	status_ctx_t *st = arg;
	syn__lend_info_t info;
	lend_entry_t e;
	cpu_set_t lent;
	char path[400], text[256];

	memset(&info, 0, sizeof(info));
	memset(&e, 0, sizeof(e));
	info.jobid = jobid;
	snprintf(info.job_rel, sizeof(info.job_rel), "%s", job_rel);
	if (read_cpus(job_rel, &e.job.held) == 0)
		fmt(&e.job.held, info.held, sizeof(info.held));
	snprintf(path, sizeof(path), "%s/%s", job_rel, SYN__CG_CHILD);
	if (syn__cg_get_cpus(path, text, sizeof(text)) == 0)
		snprintf(info.child, sizeof(info.child), "%s", text);
	e.job.jobid = jobid;
	if (st->dfd >= 0 && record_read(&st->c, st->dfd, &e) == 0) {
		info.recorded = 1;
		info.borrow = e.borrow;
		snprintf(info.key, sizeof(info.key), "%s", e.key);
		fmt(&e.job.allotted, info.allotted, sizeof(info.allotted));
		CPU_OR(&lent, &e.job.held, &e.job.allotted);
		CPU_XOR(&lent, &lent, &e.job.allotted);
		fmt(&lent, info.lent, sizeof(info.lent));
	}
	st->stop = st->fn(&info, st->arg);
	return st->stop;
}

int syn__lend_status(const char *state_dir, const char *node_rel, char *node_cpus, size_t len,
		     int (*fn)(const syn__lend_info_t *info, void *arg), void *arg)
{
	status_ctx_t st;
	int n;

	if (!state_dir || !node_rel || !node_cpus || !len || !fn) {
		errno = EINVAL;
		return -1;
	}
	memset(&st, 0, sizeof(st));
	st.c.node_name = node_base(node_rel);
	st.c.node_rel = node_rel;
	st.fn = fn;
	st.arg = arg;
	if (syn__cg_get_cpus(node_rel, node_cpus, len) < 0)
		return -1;
	st.dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	n = syn__cg_foreach_job(node_rel, status_cb, &st);
	if (st.dfd >= 0)
		close(st.dfd);
	return n;
}

int syn__lend_forget(const char *state_dir, const char *node_rel, uint32_t jobid)
{
	lend_ctx_t c;
	char name[128];
	int dfd, rv = 0;

	if (!state_dir || !node_rel) {
		errno = EINVAL;
		return -1;
	}
	memset(&c, 0, sizeof(c));
	c.node_name = node_base(node_rel);
	dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	record_name(&c, jobid, name, sizeof(name));
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		rv = -1;
	close(dfd);
	return rv;
}
