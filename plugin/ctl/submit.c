/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * submit.c: job_submit/synergy's decision, free of Slurm's types.
 *
 * A job opts in with a profile key (forwarded by the SPANK plugin into the
 * job's spank environment). With a good profile and GPUs asked for, the
 * policy sizes it on the configured node shape (syn_size_job,
 * synergy_policy.h): whole cores and ProcessMemMB plus a cache, never above
 * the job's GPU share of the node, below it where the profile says the job
 * does not need it; what its best case wants beyond the share is left to
 * the node agent's reclaimable grants. A job on N > 1 nodes is sized per
 * node for the partitioned cache (the union of its N caches is its cache,
 * and a node needs at most its part of the dataset). The profile is the store's shared
 * one, or the user's own (measured in one of the user's jobs): a job never
 * uses a profile another user's job measured (syn_store_get_for).
 *
 * Without a profile the job stays GPU-proportional. With ProfileInPlace (the
 * default) a one-GPU, one-node, one-task job then profiles itself: it takes
 * the claim of its user and key (claim.h) and its grant carries the claim's
 * nonce, which tells the node to run its loader in profiling mode; while
 * another job of the same user holds the claim, the job is not profiled.
 * Otherwise (ProfileInPlace=no, larger jobs, a failed claim) a profiling
 * request is queued as a file in RequestDir for the tuner (ProfileCommand).
 * Claims in flight and queued requests count together against
 * MaxProfileRequests and MaxProfileRequestsPerUser. Anything unexpected
 * also leaves the job GPU-proportional; only a malformed synergy option is
 * refused.
 *
 * From Slurm 23.02 slurmctld calls job_submit for many jobs at once (one
 * per RPC thread, under a shared lock). syn__decide keeps no state between
 * calls but the files it shares with other processes: two jobs of one new
 * key get one claim (claim.c) or one request (created exclusively), and
 * the caps are counted and a claim or request added by one call at a time
 * (profiling_mu), so that concurrent submissions never pass a cap with
 * room for one between them.
 */
#include "config.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "synergy_env.h"
#include "synergy_policy.h"
#include "common/store.h"
#include "plugin/shared/claim.h"
#include "plugin/shared/jobrec.h"
#include "plugin/ctl/shapes.h"
#include "plugin/ctl/submit.h"
#include "plugin/shared/slurmtext.h"

/* Start grant g for a Synergy job of key on gpus GPUs per node: its owner
 * and its named group, if any; the rest 0. */
static void grant_init(syn__jobrec_t *g, const char *key, uint32_t uid, int gpus,
		       const char *gname)
{
	memset(g, 0, sizeof(*g));
	g->synergy = 1;
	snprintf(g->key, sizeof(g->key), "%s", key);
	g->uid = uid;
	g->gpus = (uint32_t)gpus;
	if (gname && syn__group_format(g->uid, 0, gname, g->group, sizeof(g->group)) < 0)
		g->group[0] = '\0';
}

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
static void count_queued(const syn_conf_t *conf, uint32_t uid, uint64_t *all, uint64_t *mine)
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
		text = syn_file_read(dirfd(d), e->d_name, 4096, 0, NULL);
		if (!text)
			continue;
		u = strstr(text, "\nuid=");
		if (u) {
			u[5 + strcspn(u + 5, "\n")] = '\0';
			if (syn_parse_u64(u + 5, 0, UINT32_MAX, &v) == 0 && v == uid)
				(*mine)++;
		}
		free(text);
	}
	closedir(d);
}

struct claim_count {
	uint32_t uid;
	uint64_t max_age, all, mine;
	time_t now;
};

static int claim_count_cb(const syn__claim_t *c, void *arg)
{
	struct claim_count *cc = arg;

	if (!syn__claim_lapsed(c, cc->max_age, cc->now)) {
		cc->all++;
		cc->mine += c->uid == cc->uid;
	}
	return 0;
}

/* Live in-place claims in the store, in total and of uid. */
static void count_claims(const syn_conf_t *conf, uint32_t uid, uint64_t *all, uint64_t *mine)
{
	struct claim_count cc = { uid, conf->claim_max_age, 0, 0, time(NULL) };

	syn__claim_foreach(conf->store_dir, claim_count_cb, &cc);
	*all = cc.all;
	*mine = cc.mine;
}

/*
 * Queue a profiling request for key: RequestDir/<key>.req, created once.
 * Returns 1 when queued (or already), 0 when a cap refused it (why says
 * which), -1 on error.
 */
static int queue_request(const syn_conf_t *conf, const char *key, uint32_t uid, int gpus,
			 char *why, size_t whylen)
{
	char path[SYN_PATH_MAX + SYN_KEY_MAX + 8], text[160];
	int n;

	if (mkdir(conf->request_dir, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.req", conf->request_dir, key);
	if (access(path, F_OK) == 0)
		return 1; /* already queued */
	{
		uint64_t all, mine, call, cmine;

		count_queued(conf, uid, &all, &mine);
		count_claims(conf, uid, &call, &cmine);
		all += call;
		mine += cmine;
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
	n = snprintf(text, sizeof(text), "key=%s\nuid=%u\ngpus=%d\ntime=%lld\n", key,
		     (unsigned)uid, gpus, (long long)time(NULL));
	/* Created exclusively: of two submissions of the key (here, or in
	 * another slurmctld), one queues it and the other finds it queued.
	 * Not fsync'ed: a request is a hint, which the key's next job queues
	 * again if a crash loses it, and an fsync would hold slurmctld's
	 * locks for a disk's flush. */
	if (syn_file_write_atomic_how(AT_FDCWD, path, text, (size_t)n, 0644,
				      SYN_ATOMIC_EXCL | SYN_ATOMIC_NOSYNC) == 0)
		return 1;
	return errno == EEXIST ? 1 : -1;
}

/* The profiling decision (caps counted, then a claim or a request added)
 * of one call at a time in this process: see the top of the file. */
static pthread_mutex_t profiling_mu = PTHREAD_MUTEX_INITIALIZER;

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
static int pick_shape(syn_conf_t *c, const syn__job_req_t *req, int gpus, char *what,
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

/*
 * Profile on first run (see the top of the file). Returns 1 when the job
 * profiles in place (grant and comment set), 0 when it does not and must
 * not queue a request either (another job holds the claim, or a cap:
 * comment set), -1 when the offline path applies (note says why, when it
 * is not simply that in-place profiling does not apply).
 */
static int in_place(const syn_conf_t *conf, const syn__job_req_t *req, const char *key,
		    const char *gname, int gpus, syn__decision_t *d, char *note, size_t notelen)
{
	char nonce[SYN__NONCE_LEN + 1];
	syn__claim_t held;
	syn__jobrec_t g;
	uint64_t all, mine, rall, rmine;
	time_t now = time(NULL);
	int rc;

	if (!conf->profile_in_place)
		return -1;
	if (gpus != 1 || req->nodes > 1 || req->tasks_per_node > 1) {
		snprintf(note, notelen, " (not in place: %d GPU(s), %u node(s), %u task(s) per node; "
			 "a job profiles in place with 1 of each)", gpus, (unsigned)(req->nodes ? req->nodes : 1),
			 (unsigned)(req->tasks_per_node ? req->tasks_per_node : 1));
		return -1;
	}
	if (syn__claim_read(conf->store_dir, req->uid, key, &held) == 0 &&
	    !syn__claim_lapsed(&held, conf->claim_max_age, now)) {
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s no profile: GPU-proportional, not profiled: another job of "
			 "uid %u profiles it in place (claim %.8s, %llds old)", key, (unsigned)req->uid,
			 held.nonce, (long long)(now - held.time));
		return 0;
	}
	count_queued(conf, req->uid, &rall, &rmine);
	count_claims(conf, req->uid, &all, &mine);
	if (all + rall >= conf->max_requests || mine + rmine >= conf->max_requests_per_user) {
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s no profile: GPU-proportional, profiling refused: %llu in "
			 "flight, %llu of uid %u (MaxProfileRequests %llu, MaxProfileRequestsPerUser "
			 "%llu)", key, (unsigned long long)(all + rall),
			 (unsigned long long)(mine + rmine), (unsigned)req->uid,
			 (unsigned long long)conf->max_requests,
			 (unsigned long long)conf->max_requests_per_user);
		return 0;
	}
	rc = syn__claim_take(conf->store_dir, req->uid, key, conf->claim_max_age, now, nonce, &held);
	if (rc == 0) {
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s no profile: GPU-proportional, not profiled: another job of "
			 "uid %u profiles it in place (claim %.8s)", key, (unsigned)req->uid, held.nonce);
		return 0;
	}
	grant_init(&g, key, req->uid, gpus, gname);
	if (rc == 1) {
		snprintf(g.profile, sizeof(g.profile), "%s", nonce);
		if (syn__grant_format(&g, d->grant, sizeof(d->grant)) == 0) {
			d->profiling_in_place = 1;
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s no profile: GPU-proportional, profiling in place "
				 "(claim %s)", key, nonce);
			return 1;
		}
		d->grant[0] = '\0';
		syn__claim_release(conf->store_dir, req->uid, key, nonce);
		snprintf(note, notelen, " (in place: grant too long)");
		return -1;
	}
	snprintf(d->err, sizeof(d->err), "synergy: key=%s: cannot claim profiling in place in "
		 "%.120s/" SYN__CLAIM_DIR ": %s", key, conf->store_dir, strerror(errno));
	snprintf(note, notelen, " (in place: cannot claim: %s)", strerror(errno));
	return -1;
}

/*
 * A job of a group (an array task, or --synergy-group) whose key has no
 * profile yet and that does not profile it in place still joins its group
 * on the node: the grant carries no size (Slurm's GPU-proportional
 * allotment stands) and unprofiled=1, so the node runs it under the loader
 * contract, in its group, with no profile copy and no grant of its own
 * (jobrec.h). Its members prepare each batch once all the same.
 */
static void group_only(const syn__job_req_t *req, const char *key, const char *gname, int gpus,
		       syn__decision_t *d)
{
	syn__jobrec_t g;

	if (!gname && !req->array)
		return;
	grant_init(&g, key, req->uid, gpus, gname);
	g.unprofiled = 1;
	g.nodes = req->nodes > 1 && req->nodes <= SYN__JOBREC_NODES_MAX ? req->nodes : 0;
	if (syn__grant_format(&g, d->grant, sizeof(d->grant)) < 0)
		d->grant[0] = '\0';
}

/*
 * Say in the comment whether the job joins a group: only a job with a grant
 * does (the node acts only on grants). A named group is known now; an
 * array's group carries the array job id, which Slurm assigns after
 * job_submit, so the comment says "group=array" and each node logs the
 * group it made (spank-synergy(8)).
 */
static void comment_group(const syn__job_req_t *req, const char *gname, syn__decision_t *d)
{
	size_t n = strlen(d->comment);

	if (!gname && !req->array)
		return;
	if (d->grant[0] && gname) {
		snprintf(d->group, sizeof(d->group), SYNERGY_GROUP_NAMED_FMT, (unsigned)req->uid,
			 gname);
		snprintf(d->comment + n, sizeof(d->comment) - n, " group=%s", d->group);
	} else if (d->grant[0]) {
		snprintf(d->comment + n, sizeof(d->comment) - n, " group=array");
	} else if (gname && n) {
		snprintf(d->comment + n, sizeof(d->comment) - n,
			 " (no group: GPU-proportional without a grant)");
	}
}

void syn__decide(const syn_conf_t *conf_in, const syn__job_req_t *req, syn__decision_t *d)
{
	/* A copy, so that the node shape picked for this job can be filled in. */
	syn_conf_t cbuf = *conf_in;
	const syn_conf_t *conf = &cbuf;
	char shape_what[200];
	const char *key, *onoff, *gname;
	syn_store_t *store = NULL;
	syn_error_t serr;
	syn_profile_t prof;
	syn_shape_t shape;
	syn_size_t sz;
	int on = 1, gpus, tasks;

	memset(d, 0, sizeof(*d));
	d->action = SYN__UNTOUCHED;
	key = env_get(req->spank_env, req->spank_env_size, "SYNERGY_PROFILE_KEY");
	onoff = env_get(req->spank_env, req->spank_env_size, "SYNERGY");
	gname = env_get(req->spank_env, req->spank_env_size, SYN__CTL_GROUP);
	if (gname && !syn__group_name_valid(gname)) {
		d->action = SYN__REJECT;
		snprintf(d->err, sizeof(d->err),
			 "synergy: --synergy-group: '%.70s' is not a valid group name "
			 "(1-%d characters of A-Z a-z 0-9 _ . -, not starting with '.' or '-')",
			 gname, SYNERGY_GROUP_NAME_MAX);
		return;
	}
	if (onoff && syn_parse_bool(onoff, &on) < 0) {
		d->action = SYN__REJECT;
		snprintf(d->err, sizeof(d->err),
			 "synergy: --synergy=%.40s: expected on or off", onoff);
		return;
	}
	if (key && !syn_key_valid(key)) {
		d->action = SYN__REJECT;
		snprintf(d->err, sizeof(d->err),
			 "synergy: --synergy-profile: '%.70s' is not a valid profile key "
			 "(1-64 characters of A-Z a-z 0-9 _ . -, not starting with '.')", key);
		return;
	}
	if (!key || !on || !conf->enabled) {
		if (key && !on)
			snprintf(d->comment, sizeof(d->comment), "synergy: off (--synergy=off)");
		else if (gname)
			snprintf(d->comment, sizeof(d->comment), "synergy: --synergy-group=%s "
				 "ignored: %s", gname, !conf->enabled ? "Synergy is disabled" :
				 "no --synergy-profile");
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
	if (syn_store_get_for(store, key, req->uid, &prof, &serr) < 0) {
		if (errno == ENOENT) {
			char why[160] = "", note[160] = "";
			int q, ip;

			pthread_mutex_lock(&profiling_mu);
			ip = in_place(conf, req, key, gname, gpus, d, note, sizeof(note));
			q = ip < 0 ? queue_request(conf, key, req->uid, gpus, why, sizeof(why)) : 0;
			pthread_mutex_unlock(&profiling_mu);
			if (ip == 0)
				group_only(req, key, gname, gpus, d);
			if (ip >= 0)
				goto out; /* profiles in place, or another job does, or refused */
			d->profiling_requested = q == 1;
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s no profile: GPU-proportional, profiling %s%s%s", key,
				 q == 1 ? "requested" : q == 0 ? "refused: " : "request failed",
				 why, note);
			group_only(req, key, gname, gpus, d);
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

		grant_init(&g, key, req->uid, gpus, gname);
		g.nodes = req->nodes > 1 && req->nodes <= SYN__JOBREC_NODES_MAX ? req->nodes : 0;
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
	/* A job on several nodes reads through the loader's partitioned
	 * cache: each node is sized for its part, the union of the nodes'
	 * caches holding what the profile's best case wants (synergy_policy.h,
	 * syn_size_job_nodes). */
	if (syn_size_job_nodes(&shape, gpus, tasks, req->nodes > 1 ? (int)req->nodes : 1, &prof,
			       conf->eps, &sz) < 0) {
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
	{
		syn__jobrec_t g;

		grant_init(&g, key, req->uid, gpus, gname);
		g.cpus = (uint32_t)sz.cores;
		g.mem_mb = sz.mem_mb;
		g.cache_mb = sz.cache_mb;
		g.want_cpus = (uint32_t)(sz.cores + sz.wish_cores);
		g.want_cache_mb = sz.cache_mb + sz.wish_cache_mb;
		g.nodes = req->nodes > 1 ? req->nodes : 0;
		if (syn__grant_format(&g, d->grant, sizeof(d->grant)) < 0) {
			d->grant[0] = '\0';
			d->action = SYN__PROPORTIONAL;
			snprintf(d->comment, sizeof(d->comment),
				 "synergy: key=%s grant too long: GPU-proportional", key);
			goto out;
		}
	}
	if (sz.wish_cores || sz.wish_cache_mb)
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s cpus=%d mem=%lluM cache=%lluM tput=%.2fx (share-capped; "
			 "reclaimable +%d cpus +%lluM to %.2fx; %.100s)",
			 key, sz.cores, (unsigned long long)sz.mem_mb,
			 (unsigned long long)sz.cache_mb, sz.speedup, sz.wish_cores,
			 (unsigned long long)sz.wish_cache_mb, sz.best_speedup, shape_what);
	else
		snprintf(d->comment, sizeof(d->comment),
			 "synergy: key=%s cpus=%d mem=%lluM cache=%lluM tput=%.2fx (best-case; %.100s)",
			 key, sz.cores, (unsigned long long)sz.mem_mb, (unsigned long long)sz.cache_mb,
			 sz.speedup, shape_what);
out:
	syn_store_destroy(store);
	comment_group(req, gname, d);
}
