/*
 * submit.c: job_submit/synergy's decision, free of Slurm's types.
 *
 * A job opts in with a profile key (forwarded by the SPANK plugin into the
 * job's spank environment). With a good profile and GPUs asked for, the
 * policy sizes it on the configured node shape (syn_size_job,
 * synergy_policy.h): whole cores and ProcessMemMB plus a cache, never above
 * the job's GPU share of the node, below it where the profile says the job
 * does not need it; what its best case wants beyond the share is left to
 * the node agent's reclaimable grants. Without a profile the job stays
 * GPU-proportional and a profiling request is queued as a file in
 * RequestDir for the tuner. Anything unexpected also leaves the job
 * GPU-proportional; only a malformed synergy option is refused.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "synergy_policy.h"
#include "synergy_store.h"
#include "submit.h"

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

/* GPU count in one TRES list; -1 if no gpu entry. */
static int gpus_in(const char *tres)
{
	const char *p = tres;

	while (p && *p) {
		const char *end = strpbrk(p, ",;");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[128];

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			if (strncmp(item, "gres:gpu", 8) == 0 || strncmp(item, "gres/gpu", 8) == 0) {
				/* the count is after the last ':' or '=' ("gres:gpu:a100:2") */
				char *c = strrchr(item, ':'), *e = strrchr(item, '=');
				char *num = (e && (!c || e > c)) ? e + 1 : (c && c > item + 7 ? c + 1 : NULL);
				uint64_t v;

				if (!num)
					return 1;
				if (syn__parse_u64(num, 0, 1024, &v) == 0)
					return (int)v;
				return 1; /* a type name without a count means one */
			}
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

int syn__gpus_per_node(const char *tres_per_node, const char *tres_per_job, uint32_t nodes)
{
	int g;

	if (tres_per_node && (g = gpus_in(tres_per_node)) >= 0)
		return g;
	if (tres_per_job && (g = gpus_in(tres_per_job)) >= 0) {
		if (nodes > 1)
			g = (int)((g + (int)nodes - 1) / (int)nodes);
		return g;
	}
	return 0;
}

/* Queue a profiling request for key: RequestDir/<key>.req, created once. */
static int queue_request(const syn__conf_t *conf, const char *key, uint32_t uid, int gpus)
{
	char path[SYN__PATH_MAX + SYN__KEY_MAX + 8], tmp[sizeof(path) + 16], text[160];
	int fd, n, rv = -1;

	if (mkdir(conf->request_dir, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.req", conf->request_dir, key);
	if (access(path, F_OK) == 0)
		return 0; /* already queued */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	n = snprintf(text, sizeof(text), "key=%s\nuid=%u\ngpus=%d\ntime=%lld\n", key,
		     (unsigned)uid, gpus, (long long)time(NULL));
	if (write(fd, text, (size_t)n) == n && close(fd) == 0) {
		fd = -1;
		if (rename(tmp, path) == 0)
			rv = 0;
	}
	if (fd >= 0)
		close(fd);
	if (rv < 0)
		unlink(tmp);
	return rv;
}

void syn__decide(const syn__conf_t *conf, const syn__job_req_t *req, syn__decision_t *d)
{
	const char *key, *onoff;
	syn_store_t *store = NULL;
	syn_store_error_t serr;
	syn_profile_t prof;
	syn_shape_t shape;
	syn_size_t sz;
	int on = 1, gpus, tasks;

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
	if (req->user_cpus || req->user_mem) {
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s explicit CPU/memory request kept", key);
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
			d->profiling_requested = queue_request(conf, key, req->uid, gpus) == 0;
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s no profile: GPU-proportional, profiling %s", key,
				 d->profiling_requested ? "requested" : "request failed");
		} else {
			snprintf(d->err, sizeof(d->err), "synergy: profile %s: %s", key, serr.text);
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s profile unusable: GPU-proportional", key);
		}
		goto out;
	}
	if (!conf->node_gpus || !conf->node_cpus || !conf->node_mem_mb) {
		snprintf(d->err, sizeof(d->err),
			 "synergy: NodeGPUs, NodeCPUs and NodeMemMB are not all set in synergy.conf");
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s node shape unknown: GPU-proportional", key);
		goto out;
	}
	memset(&shape, 0, sizeof(shape));
	shape.gpus = (int)conf->node_gpus;
	shape.cpus = (int)conf->node_cpus;
	shape.mem_mb = conf->node_mem_mb;
	shape.process_mem_mb = conf->process_mem_mb;
	shape.max_cache_mb = conf->max_cache_mb;
	tasks = req->tasks_per_node ? (int)req->tasks_per_node : 1;
	/* Never above the job's GPU share in Slurm's accounting (which cannot
	 * shrink once it runs), so that every later job finds its share free;
	 * what its best case wants beyond that, the node agent may grant it
	 * while nobody else needs it (syn_size_job, synergy_policy.h). */
	if (syn_size_job(&shape, gpus, tasks, &prof, conf->eps, &sz) < 0) {
		snprintf(d->err, sizeof(d->err), "synergy: policy: %s", sz.reason);
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s policy error: GPU-proportional", key);
		goto out;
	}
	if (!sz.sized) {
		snprintf(d->comment, sizeof(d->comment), "synergy: key=%s %s", key, sz.reason);
		goto out;
	}
	d->cpus_per_task = (uint16_t)sz.cpus_per_task;
	d->min_cpus = (uint32_t)sz.cores * (req->nodes ? req->nodes : 1);
	d->mem_mb = sz.mem_mb;
	d->gpus_per_node = gpus;
	d->action = SYN__SIZED;
	if (sz.wish_cores || sz.wish_cache_mb)
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s cpus=%d mem=%lluM cache=%lluM tput=%.2fx (share-capped; "
			 "reclaimable +%d cpus +%lluM to %.2fx)",
			 key, sz.cores, (unsigned long long)sz.mem_mb,
			 (unsigned long long)sz.cache_mb, sz.speedup, sz.wish_cores,
			 (unsigned long long)sz.wish_cache_mb, sz.best_speedup);
	else
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s cpus=%d mem=%lluM cache=%lluM tput=%.2fx (best-case)", key,
			 sz.cores, (unsigned long long)sz.mem_mb, (unsigned long long)sz.cache_mb,
			 sz.speedup);
out:
	syn_store_destroy(store);
}
