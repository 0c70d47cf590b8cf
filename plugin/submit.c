/*
 * submit.c: job_submit/synergy's decision, free of Slurm's types.
 *
 * A job opts in with a profile key (forwarded by the SPANK plugin into the
 * job's spank environment). With a good profile and GPUs asked for, the
 * policy's advice (synergy_policy.h) on the configured node shape gives
 * cores and cache memory per GPU; the job's request becomes those cores
 * and ProcessMemMB plus the cache, capped so that the node's other GPUs
 * can still each start a job. Without a profile the job stays
 * GPU-proportional and a profiling request is queued as a file in
 * RequestDir for the tuner. Anything unexpected also leaves the job
 * GPU-proportional; only a malformed synergy option is refused.
 */
#include "config.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "synergy_policy.h"
#include "synergy_store.h"
#include "jobrec.h"
#include "shapes.h"
#include "submit.h"
#include "tuner.h"

/* The value of NAME=... in env, or NULL. */
static const char *env_get(char *const *env, uint32_t n, const char *name)
{
	size_t len = strlen(name);
	uint32_t i;

	for (i = 0; env && i < n; i++) {
		if (env[i] && strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return env[i] + len + 1;
	}
	return NULL;
}

/*
 * Count the queued requests (RequestDir/<key>.req) in total and those of
 * uid. Each is one small file; the caps keep them few.
 */
static void count_queued(const syn__conf_t *conf, uint32_t uid, uint64_t *all, uint64_t *mine)
{
	struct dirent *e;
	DIR *d = opendir(conf->request_dir);

	*all = *mine = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *text, *u;
		uint64_t v;

		if (len <= 4 || strcmp(e->d_name + len - 4, ".req") != 0)
			continue;
		(*all)++;
		text = syn__read_file_at(dirfd(d), e->d_name, 4096, NULL);
		if (!text)
			continue;
		u = strstr(text, "\nuid=");
		if (u) {
			u[5 + strcspn(u + 5, "\n")] = '\0';
			if (syn__parse_u64(u + 5, 0, UINT32_MAX, &v) == 0 && v == uid)
				(*mine)++;
		}
		free(text);
	}
	closedir(d);
}

/*
 * Queue a profiling request for key: RequestDir/<key>.req, created once.
 * Returns 1 when queued (or already), 0 when a cap refused it (why says
 * which), -1 on error.
 */
static int queue_request(const syn__conf_t *conf, const char *key, uint32_t uid, int gpus,
			 char *why, size_t whylen)
{
	char path[SYN__PATH_MAX + SYN__KEY_MAX + 8], tmp[sizeof(path) + 16], text[160];
	int fd, n, rv = -1;

	if (mkdir(conf->request_dir, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.req", conf->request_dir, key);
	if (access(path, F_OK) == 0)
		return 1; /* already queued */
	{
		uint64_t all, mine;

		count_queued(conf, uid, &all, &mine);
		if (all >= conf->max_requests) {
			snprintf(why, whylen, "%llu requests queued (MaxProfileRequests)",
				 (unsigned long long)all);
			return 0;
		}
		if (mine >= conf->max_requests_per_user) {
			snprintf(why, whylen, "%llu requests of uid %u queued "
				 "(MaxProfileRequestsPerUser)", (unsigned long long)mine, (unsigned)uid);
			return 0;
		}
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	n = snprintf(text, sizeof(text), "key=%s\nuid=%u\ngpus=%d\ntime=%lld\n", key,
		     (unsigned)uid, gpus, (long long)time(NULL));
	if (write(fd, text, (size_t)n) == n && close(fd) == 0) {
		fd = -1;
		if (rename(tmp, path) == 0)
			rv = 1;
	}
	if (fd >= 0)
		close(fd);
	if (rv < 0)
		unlink(tmp);
	return rv;
}

uint32_t syn__strip_grant(char **env, uint32_t n, void (*free_fn)(char *))
{
	static const char *const names[] = { SYN__GRANT_VAR "=", "SPANK_" SYN__GRANT_VAR "=" };
	uint32_t i, out = 0;

	for (i = 0; env && i < n; i++) {
		int drop = 0;
		size_t k;

		for (k = 0; k < sizeof(names) / sizeof(names[0]) && env[i]; k++)
			drop |= strncmp(env[i], names[k], strlen(names[k])) == 0;
		if (drop) {
			if (free_fn)
				free_fn(env[i]);
			continue;
		}
		env[out++] = env[i];
	}
	for (i = out; env && i < n; i++)
		env[i] = NULL;
	return out;
}

/*
 * The node shape to size for, into c's NodeGPUs/NodeCPUs/NodeMemMB: the
 * configured single shape when all three are set, else the shapes table
 * synergyd exports for the job's partitions. Returns 0 with what naming
 * the source, or -1 with why (the job then stays GPU-proportional).
 */
static int pick_shape(syn__conf_t *c, const syn__job_req_t *req, int gpus, char *what,
		      size_t wlen)
{
	syn__shapes_t t;
	syn__shape_t s;
	char err[200];
	time_t now = time(NULL);
	int rv;

	if (c->node_gpus && c->node_cpus && c->node_mem_mb) {
		snprintf(what, wlen, "configured shape");
		return 0;
	}
	if (syn__shapes_read(c->shapes_file, &t, err, sizeof(err)) < 0) {
		snprintf(what, wlen, "node shapes unknown (%.120s; is synergyd running?)", err);
		return -1;
	}
	if (t.written > now + 60 || now - t.written > (time_t)c->shapes_max_age) {
		snprintf(what, wlen, "node shapes table is %lld s old (NodeShapesMaxAge=%llu)",
			 (long long)(now - t.written), (unsigned long long)c->shapes_max_age);
		syn__shapes_free(&t);
		return -1;
	}
	rv = syn__shapes_for_job(&t, req->partition, (uint32_t)gpus, &s, what, wlen);
	syn__shapes_free(&t);
	if (rv < 0)
		return -1;
	c->node_gpus = s.gpus;
	c->node_cpus = s.cpus;
	c->node_mem_mb = s.mem_mb;
	return 0;
}

void syn__decide(const syn__conf_t *conf_in, const syn__job_req_t *req, syn__decision_t *d)
{
	/* A copy, so that the node shape picked for this job can be filled in. */
	syn__conf_t cbuf = *conf_in;
	const syn__conf_t *conf = &cbuf;
	char shape_what[200];
	const char *key, *onoff;
	syn_store_t *store = NULL;
	syn_store_error_t serr;
	syn_profile_t prof;
	syn_advice_t adv;
	syn_node_t node;
	int on = 1, gpus, tasks, others;
	double cpus_node, cache_mb, cpu_cap, mem_cap;

	memset(d, 0, sizeof(*d));
	d->action = SYN__UNTOUCHED;
	key = env_get(req->spank_env, req->spank_env_size, "SYNERGY_PROFILE_KEY");
	onoff = env_get(req->spank_env, req->spank_env_size, "SYNERGY");
	if (onoff && syn__parse_onoff(onoff, &on) < 0) {
		d->action = SYN__REJECT;
		snprintf(d->err, sizeof(d->err),
			 "synergy: --synergy=%.40s: expected on or off", onoff);
		return;
	}
	if (key && !syn__key_valid(key)) {
		d->action = SYN__REJECT;
		snprintf(d->err, sizeof(d->err),
			 "synergy: --synergy-profile: '%.70s' is not a valid profile key "
			 "(1-64 characters of A-Z a-z 0-9 _ . -, not starting with '.')", key);
		return;
	}
	if (!key || !on || !conf->enabled) {
		if (key && !on)
			snprintf(d->comment, sizeof(d->comment), "synergy: off (--synergy=off)");
		return;
	}
	snprintf(d->key, sizeof(d->key), "%s", key);
	d->action = SYN__PROPORTIONAL;
	gpus = syn__gpus_per_node(req->tres_per_node, req->tres_per_job, req->nodes);
	if (gpus <= 0) {
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s no GPUs requested: GPU-proportional", key);
		return;
	}
	store = syn_store_create(conf->store_dir, 0, &serr);
	if (!store) {
		snprintf(d->err, sizeof(d->err), "synergy: profile store: %s", serr.text);
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s store unavailable: GPU-proportional", key);
		goto out;
	}
	if (syn_store_get(store, key, &prof, &serr) < 0) {
		if (errno == ENOENT) {
			char why[128] = "";
			int q = queue_request(conf, key, req->uid, gpus, why, sizeof(why));

			d->profiling_requested = q == 1;
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s no profile: GPU-proportional, profiling %s%s%s", key,
				 q == 1 ? "requested" : q == 0 ? "refused: " : "request failed",
				 why, "");
		} else {
			snprintf(d->err, sizeof(d->err), "synergy: profile %s: %s", key, serr.text);
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s profile unusable: GPU-proportional", key);
		}
		goto out;
	}
	if (req->user_cpus || req->user_mem) {
		/* The user's own request stands; the job is still a Synergy job
		 * on the node (loader contract, lending), at what Slurm allots. */
		syn__jobrec_t g;

		memset(&g, 0, sizeof(g));
		g.synergy = 1;
		snprintf(g.key, sizeof(g.key), "%s", key);
		g.uid = req->uid;
		g.gpus = (uint32_t)gpus;
		if (syn__grant_format(&g, d->grant, sizeof(d->grant)) < 0)
			d->grant[0] = '\0';
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s explicit CPU/memory request kept", key);
		goto out;
	}
	if (pick_shape(&cbuf, req, gpus, shape_what, sizeof(shape_what)) < 0) {
		snprintf(d->err, sizeof(d->err), "synergy: key=%s: %s", key, shape_what);
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s node shape unknown: GPU-proportional (%.200s)", key,
			 shape_what);
		goto out;
	}
	memset(&node, 0, sizeof(node));
	node.gpus = node.free_gpus = (int)conf->node_gpus;
	node.cpus = node.free_cpus = (double)conf->node_cpus;
	/* Cache memory of the node: what is left when each GPU runs one job
	 * process, so that the GPU-proportional cache share is
	 * DefMemPerGPU - ProcessMemMB, as the loader of an unsized job gets. */
	node.mem_gb = node.free_mem_gb =
		conf->node_mem_mb > conf->process_mem_mb * conf->node_gpus ?
		(double)(conf->node_mem_mb - conf->process_mem_mb * conf->node_gpus) / 1024.0 : 0.0;
	if (syn_advise(&node, 1, gpus, &prof, conf->eps, &adv) < 0) {
		snprintf(d->err, sizeof(d->err), "synergy: policy: %s", adv.reason);
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s policy error: GPU-proportional", key);
		goto out;
	}
	tasks = req->tasks_per_node ? (int)req->tasks_per_node : 1;
	cpus_node = ceil(adv.cpus_per_gpu * gpus - 1e-9);
	/* A Slurm allocation cannot shrink once the job runs, so TUNE's step 3
	 * (push a co-located job back to its share) is impossible here: never
	 * ask for so much that the node's other GPUs could not start a job,
	 * i.e. leave each of them at least one core and ProcessMemMB. Cores
	 * beyond that reach the job as lent idle cores (LendIdleCores). */
	others = (int)conf->node_gpus > gpus ? (int)conf->node_gpus - gpus : 0;
	cpu_cap = (double)conf->node_cpus - others;
	if (cpus_node > cpu_cap)
		cpus_node = cpu_cap;
	if (cpus_node < tasks)
		cpus_node = tasks;
	if (cpus_node > (double)conf->node_cpus)
		cpus_node = (double)conf->node_cpus;
	cache_mb = ceil(adv.mem_per_gpu * gpus * 1024.0 - 1e-9);
	if (cache_mb > (double)conf->max_cache_mb)
		cache_mb = (double)conf->max_cache_mb;
	mem_cap = (double)conf->node_mem_mb - (double)conf->process_mem_mb * (1 + others);
	if (mem_cap < 0)
		mem_cap = 0;
	if (cache_mb > mem_cap)
		cache_mb = mem_cap;
	/* A best case larger than the node (a dataset bigger than the node's
	 * cache memory) makes the advice fall back to the share: the best case
	 * capped by what the node can give may still beat it. */
	{
		double bc, bm;

		if (syn_best_case(&prof, conf->eps, 0, 0, &bc, &bm) == 0) {
			double c = fmin(ceil(bc * gpus - 1e-9), cpu_cap);
			double m = fmin(ceil(bm * gpus * 1024.0 - 1e-9), mem_cap);

			if (c < tasks)
				c = tasks;
			if (syn_job_tput(&prof, c / gpus, m / 1024.0 / gpus) >
			    syn_job_tput(&prof, cpus_node / gpus, cache_mb / 1024.0 / gpus) + 1e-9) {
				cpus_node = c;
				cache_mb = m;
			}
		}
	}
	/* Capped, the advice may fall below the job's GPU-proportional
	 * throughput (a profile that traded memory for cores): then take the
	 * best cell within the caps, and the share itself if none keeps the
	 * guarantee. */
	if (syn_job_tput(&prof, cpus_node / gpus, cache_mb / 1024.0 / gpus) < adv.prop_tput - 1e-9) {
		double c, m;

		if (syn_best_case(&prof, conf->eps, cpu_cap / gpus, mem_cap / 1024.0 / gpus, &c, &m) == 0 &&
		    syn_job_tput(&prof, c, m) >= adv.prop_tput - 1e-9) {
			cpus_node = ceil(c * gpus - 1e-9);
			cache_mb = ceil(m * gpus * 1024.0 - 1e-9);
		} else {
			cpus_node = ceil(node.cpus * gpus / node.gpus - 1e-9);
			cache_mb = floor(node.mem_gb * 1024.0 * gpus / node.gpus);
		}
		if (cpus_node < tasks)
			cpus_node = tasks;
	}
	d->cpus_per_task = (uint16_t)ceil(cpus_node / tasks - 1e-9);
	d->min_cpus = (uint32_t)d->cpus_per_task * (uint32_t)tasks *
		      (req->nodes ? req->nodes : 1);
	d->mem_mb = conf->process_mem_mb + (uint64_t)cache_mb;
	d->gpus_per_node = gpus;
	d->action = SYN__SIZED;
	{
		syn__jobrec_t g;

		memset(&g, 0, sizeof(g));
		g.synergy = 1;
		snprintf(g.key, sizeof(g.key), "%s", key);
		g.uid = req->uid;
		g.gpus = (uint32_t)gpus;
		g.cpus = (uint32_t)d->cpus_per_task * (uint32_t)tasks;
		g.mem_mb = d->mem_mb;
		g.cache_mb = (uint64_t)cache_mb;
		g.want_cpus = g.cpus;
		g.want_cache_mb = g.cache_mb;
		if (syn__grant_format(&g, d->grant, sizeof(d->grant)) < 0) {
			d->action = SYN__PROPORTIONAL;
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s grant too long: GPU-proportional", key);
			goto out;
		}
	}
	snprintf(d->comment, sizeof(d->comment),
		 "synergy: key=%s cpus=%u mem=%lluM cache=%lluM tput=%.2fx (%s; %s)", key,
		 (unsigned)(d->cpus_per_task * tasks), (unsigned long long)d->mem_mb,
		 (unsigned long long)cache_mb,
		 adv.prop_tput > 0 ? syn_job_tput(&prof, cpus_node / gpus, cache_mb / 1024.0 / gpus) /
					     adv.prop_tput : 1.0,
		 adv.step == 1 ? "best-case" : adv.step == 2 ? "proportional" : "proportional, blocked",
		 shape_what);
out:
	syn_store_destroy(store);
}
