/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_remote.c: the Synergy SPANK plugin in slurmstepd.
 *
 * init_post_opt (root): read the job's record, which the job prolog made
 * from job_submit's decision (jobrec.h); without one the job runs
 * GPU-proportional, whatever its environment says. A job array's task
 * joins its array's coordinated-prep group at its first step. A later step of a job
 * that borrows lent CPUs gives them back first, or Slurm could not reset
 * the job's cpuset for the step (lend.h).
 * task_post_fork (root, right after each fork): put the task under the
 * job's limit cgroups (cgroup.h) and pin it; after the step's first task,
 * record the job for idle-core lending and rebalance the node.
 * task_init (the task, as the user, just before exec): pin again (Slurm's
 * affinity plugin may have narrowed it) and export the loader contract
 * (synergy_env.h), with the job's coordinated-prep group and its directory
 * when its record names one, or SYNERGY_ACTIVE=0; for a step on two nodes
 * or more, the partitioned cache's peers too (peers.h), which
 * init_post_opt worked out as root from slurm.conf and the step's node
 * list.
 * task_exit / exit: at the step's end, move its leftover processes out of
 * the synergy child and remove the child once empty (v1), and when the
 * batch step ends, lend the job's CPUs to the jobs still running.
 *
 * Profile on first run: a job whose record carries a claim's nonce
 * (claim.h) profiles itself. Its first local task gets the loader's
 * profiling mode (SYNERGY_PROFILE_MODE=1, the report into the job's cache
 * directory), and slurmstepd runs a watcher thread (root) that looks for
 * the report every second and files the profile as soon as the search
 * ended (inplace.h), then rebalances the node: the cores lent for the
 * search go back, and the job, now profiled, is granted what its profile
 * earns. The thread ends with the step (exit joins it); the batch step's
 * exit files what it did not get to (or releases the claim), and so does
 * the epilog for jobs without a batch step.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_env.h"
#include "plugin/shared/grantauth.h"
#include "plugin/node/lend.h"
#include "plugin/node/peers.h"
#include "plugin/slurm/spank_int.h"

#define conf syn__spank_conf

/* What slurmstepd knows of its job, from the record (root) in
 * init_post_opt; the forked tasks inherit it. */
static struct {
	int active;                 /* a Synergy job with a valid record */
	uint32_t jobid;
	syn__jobrec_t rec;
	char job_rel[SYN_PATH_MAX * 2];   /* set by post_fork for the exit hooks */
	char lend_rel[SYN_PATH_MAX * 2];  /* job cgroup lending acted on */
	char *peers;                /* SYNERGY_PEERS for a multi-node step, else NULL */
	uint32_t node_index;
	uint64_t peer_tag;
	char peer_key[SYNERGY_PEER_KEY_HEX + 1]; /* SYNERGY_PEER_KEY (secret) */
	int has_peer_key;           /* peer_key and peer_tag are the step's */
} st;

/* Slurm's variable for a step's node list, node index order (srun sets it
 * for the step's tasks). */
#define STEP_NODELIST_ENV "SLURM_STEP_NODELIST"

static int lend_enabled(void)
{
	return syn__spank_conf_ok && conf.enabled && conf.lend_idle;
}

/*
 * A thread of the step's that calls fn every period seconds until fn
 * returns non-zero or the step stops it. Two run per step at most: the
 * in-place profiling watcher and the node agent's periodic look.
 */
typedef struct periodic {
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	unsigned period;
	int (*fn)(void);
} periodic_t;

static void *periodic_main(void *arg)
{
	periodic_t *p = arg;
	struct timespec until;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		int done;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += p->period;
		pthread_cond_timedwait(&p->cv, &p->mu, &until);
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->mu);
		done = p->fn();
		pthread_mutex_lock(&p->mu);
		if (done)
			break;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int periodic_start(periodic_t *p, unsigned period, int (*fn)(void))
{
	if (p->started)
		return 0;
	/* The process-wide handles are made here, not in the thread. */
	syn__node_name();
	syn__node_agent();
	p->period = period;
	p->fn = fn;
	p->stop = 0;
	if (pthread_create(&p->thread, NULL, periodic_main, p) != 0)
		return -1;
	p->started = 1;
	return 0;
}

static void periodic_stop(periodic_t *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	p->started = 0;
}

/* The in-place profiling watcher (see the top of the file): looks for the
 * job's report every second. */
static periodic_t watch = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
static uint32_t watch_jobid, watch_uid; /* copies: st is the step's thread's */

static int watch_once(void)
{
	int rc = syn__inplace_run(watch_jobid, watch_uid, 0);

	/* Done (filed, refused, or done by another step): the cores lent for
	 * the search go back; the job, if profiled now, is granted what its
	 * profile earns. */
	if (rc != SYN__INPLACE_WAIT && rc >= 0 && lend_enabled() && syn__node_agent())
		syn__lend_rebalance(syn__node_agent(), NULL, 0);
	return rc != SYN__INPLACE_WAIT && rc >= 0;
}

/* Start the watcher once per step, for a job that profiles in place. */
static void watch_start(void)
{
	if (watch.started || !st.active || !st.rec.profile[0])
		return;
	watch_jobid = st.jobid;
	watch_uid = st.rec.uid;
	if (periodic_start(&watch, 1, watch_once) < 0)
		slurm_error("synergy: job %u: cannot start the profiling watcher: %m; the epilog "
			    "files its profile", (unsigned)st.jobid);
}

/*
 * The node agent's periodic look (HarvestInterval): idle cycles come and
 * go while jobs run, with no job starting or ending to call the agent, so
 * each step of a Synergy job calls it every interval until the step ends.
 * Every call takes the node's lock and does nothing unless something
 * changed, so several steps calling it is harmless. The step's agent was
 * made from synergy.conf as the step began: an admin who turned lending or
 * harvesting off since must not have this thread keep granting.
 */
static periodic_t tick = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static int tick_once(void)
{
	syn_conf_t now;

	if (syn__spank_conf_reload(&now) == 0 && now.enabled && now.lend_idle && now.harvest)
		syn__lend_rebalance(syn__node_agent(), NULL, 0);
	return 0;
}

static void tick_start(void)
{
	if (tick.started || !st.active || !lend_enabled() || !conf.harvest ||
	    !conf.harvest_interval || !syn__node_agent())
		return;
	if (periodic_start(&tick, conf.harvest_interval, tick_once) < 0)
		slurm_error("synergy: job %u: cannot start the node agent's periodic look: %m; "
			    "idle cycles are harvested at job starts and ends only",
			    (unsigned)st.jobid);
}

/* The step's directory name, as Slurm names it. */
static int step_dir_name(spank_t sp, char *buf, size_t len)
{
	uint32_t stepid;

	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return -1;
	if (stepid == SLURM_BATCH_SCRIPT)
		snprintf(buf, len, "step_batch");
	else if (stepid == SLURM_EXTERN_CONT)
		snprintf(buf, len, "step_extern");
	else if (stepid == SLURM_INTERACTIVE_STEP)
		snprintf(buf, len, "step_interactive");
	else
		snprintf(buf, len, "step_%u", (unsigned)stepid);
	return 0;
}

/* The cache grant on this node in MB: the record's, within the job's memory
 * beyond ProcessMemMB and MaxCacheMB (synergyd may have moved a pending job
 * back to its share after job_submit sized it). */
static uint64_t cache_mb(spank_t sp)
{
	uint64_t mem_mb = 0, room = 0, mb;

	if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem_mb) == ESPANK_SUCCESS &&
	    mem_mb > conf.process_mem_mb)
		room = mem_mb - conf.process_mem_mb;
	/* A job job_submit did not size (its own request kept) caches in what
	 * its memory leaves beside the process. */
	mb = st.rec.mem_mb ? st.rec.cache_mb : room;
	if (mb > room)
		mb = room;
	return mb > conf.max_cache_mb ? conf.max_cache_mb : mb;
}

/*
 * A job array's task joins its array's group at its first step: slurmstepd
 * knows the array job id (Slurm's, from the job's launch, never from the
 * job's environment); slurmd gives the job prolog none. Under the node's
 * lock, with the record read again (lending may have added to it).
 */
static void array_group(spank_t sp, int dfd, uid_t uid)
{
	const char *node = syn__node_name();
	syn__jobrec_t r;
	uint32_t aid = 0, tid = 0;
	gid_t gid;
	int lockfd;

	/* Outside an array slurmstepd answers 0, or (an srun step) the job's
	 * own id with task id NO_VAL: an array task has a real task id. */
	if (spank_get_item(sp, S_JOB_ARRAY_ID, &aid) != ESPANK_SUCCESS || aid == 0 ||
	    spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &tid) != ESPANK_SUCCESS || tid >= NO_VAL ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS || !node)
		return;
	lockfd = syn__node_lock(dfd, node, SYN__LEND_LOCK_MS);
	if (lockfd < 0) {
		slurm_error("synergy: job %u: lock %s/%s.lock: %m; it runs outside its array's group",
			    (unsigned)st.jobid, conf.state_dir, node);
		return;
	}
	/* A task profiling its key in place stays out (spank_jobscript.c). */
	if (syn__jobrec_read(dfd, node, st.jobid, &r, NULL, 0) == 0 && r.synergy &&
	    r.uid == (uint32_t)uid && !r.profile[0]) {
		if (!r.group[0] &&
		    syn__group_format(r.uid, aid, NULL, r.group, sizeof(r.group)) == 0)
			syn__group_join(dfd, node, st.jobid, uid, gid, &r);
		snprintf(st.rec.group, sizeof(st.rec.group), "%s", r.group);
	}
	close(lockfd);
}

/*
 * The partitioned cache's peers of this step (peers.h), for a Synergy job's
 * step on two nodes or more; nothing for the batch script, the extern and
 * interactive steps (one node each) and a one-node step. The step's key
 * (SYNERGY_PEER_KEY, derived from the job's secret, grantauth.h) and tag go
 * to every such step whose job did not turn peers off
 * (SYNERGY_PEER_WIREUP=off): loaders wired up through PMIx or by the job's
 * own SYNERGY_PEERS need them too. The node list only when the job left the
 * wire-up to the loader (auto). Runs as root in slurmstepd: slurm.conf is
 * read here, once per step, and the tasks inherit the result.
 */
static void peers_init(spank_t sp)
{
	char err[300], wireup[32], nodelist[8192];
	const char *path;
	uint32_t stepid, nnodes, nodeid;
	char *text;

	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
	    stepid > SLURM_MAX_NORMAL_STEP_ID ||
	    spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS || nnodes < 2 ||
	    spank_get_item(sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS)
		return;
	if (spank_getenv(sp, SYNERGY_ENV_PEER_WIREUP, wireup, sizeof(wireup)) != ESPANK_SUCCESS)
		wireup[0] = '\0';
	if (strcmp(wireup, "off") == 0) {
		slurm_info("synergy: job %u step %u: %s=off set by the job: no peers exported",
			   (unsigned)st.jobid, (unsigned)stepid, SYNERGY_ENV_PEER_WIREUP);
		return;
	}
	/* The step's secret: peers that cannot prove they hold it get nothing
	 * from the tasks' loaders. */
	if (syn__peer_key(st.rec.secret, st.jobid, stepid, st.peer_key) < 0) {
		slurm_error("synergy: job %u step %u: its record has no secret (a grant from "
			    "before the upgrade?): no partitioned cache", (unsigned)st.jobid,
			    (unsigned)stepid);
		return;
	}
	st.has_peer_key = 1;
	st.peer_tag = syn__peer_tag(st.jobid, stepid);
	if (wireup[0] && strcmp(wireup, "auto") != 0) {
		slurm_info("synergy: job %u step %u: %s=%s set by the job: only its peer key and tag "
			   "exported", (unsigned)st.jobid, (unsigned)stepid, SYNERGY_ENV_PEER_WIREUP,
			   wireup);
		return;
	}
	if (nodeid >= nnodes ||
	    spank_getenv(sp, STEP_NODELIST_ENV, nodelist, sizeof(nodelist)) != ESPANK_SUCCESS) {
		slurm_error("synergy: job %u step %u: no %s for its %u nodes: no partitioned cache",
			    (unsigned)st.jobid, (unsigned)stepid, STEP_NODELIST_ENV, (unsigned)nnodes);
		st.has_peer_key = 0;
		return;
	}
	path = getenv("SLURM_CONF");
	if (!path || !*path)
		path = "/etc/slurm/slurm.conf";
	/* Without slurm.conf (a configless node keeps it elsewhere) every node
	 * is reached at its NodeName, Slurm's own default address. */
	if (!(text = syn_file_read(AT_FDCWD, path, 4 << 20, 0, NULL)))
		slurm_info("synergy: job %u step %u: %s: %m: peers are reached at their node "
			   "names", (unsigned)st.jobid, (unsigned)stepid, path);
	st.peers = syn__peers_format(text ? text : "", nodelist, nnodes, st.jobid, stepid,
				     conf.peer_port_min, conf.peer_port_max, err, sizeof(err));
	free(text);
	if (!st.peers) {
		slurm_error("synergy: job %u step %u: %s: no partitioned cache", (unsigned)st.jobid,
			    (unsigned)stepid, err);
		st.has_peer_key = 0;
		return;
	}
	st.node_index = nodeid;
	slurm_info("synergy: job %u step %u: node %u of %u, peers %.200s", (unsigned)st.jobid,
		   (unsigned)stepid, (unsigned)nodeid, (unsigned)nnodes, st.peers);
}

int syn__remote_init_post_opt(spank_t sp)
{
	char err[300];
	syn__cg_t *cg;
	uid_t uid;
	int dfd;

	syn__ckpt_step_init(sp);
	if (!syn__spank_conf_ok || spank_get_item(sp, S_JOB_ID, &st.jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return 0;
	/* The state directory exists once a prolog or lending used it: with
	 * none there is no record, and nothing was lent. */
	if (access(conf.state_dir, F_OK) != 0)
		return 0;
	dfd = syn__state_dir_open(conf.state_dir, err, sizeof(err));
	if (dfd < 0) {
		slurm_error("synergy: job %u: %s; running GPU-proportional", (unsigned)st.jobid,
			    err);
		return 0;
	}
	if (syn__node_name() &&
	    syn__jobrec_read(dfd, syn__node_name(), st.jobid, &st.rec, err, sizeof(err)) == 0) {
		if (st.rec.synergy && st.rec.uid == (uint32_t)uid && conf.enabled)
			st.active = 1;
	} else if (errno != ENOENT) {
		slurm_error("synergy: job %u: %s; running GPU-proportional", (unsigned)st.jobid, err);
	}
	if (st.active && !st.rec.group[0])
		array_group(sp, dfd, uid);
	close(dfd);
	if (st.active)
		peers_init(sp);
	if (!st.active && !st.rec.has_allotted)
		return 0;
	cg = syn__node_cgroup();
	if (!cg) {
		st.active = 0;
		return 0;
	}
	/* A job that borrows gives back before Slurm sets up this step: also
	 * with lending turned off since it borrowed. slurmstepd already runs
	 * in its step's cgroup below the job's, whatever the job directory's
	 * name (job_<id>, or the SLUID on Slurm 26.05); where it does not
	 * (cgroup v1), the name is job_<id>. */
	if (st.rec.has_allotted && syn__node_agent() &&
	    (syn__cg_job_of_pid(cg, 0, st.jobid, st.lend_rel, sizeof(st.lend_rel)) == 0 ||
	     syn__cg_job_path(cg, st.jobid, uid, st.lend_rel, sizeof(st.lend_rel)) == 0))
		syn__lend_step_start(syn__node_agent(), st.lend_rel, st.jobid);
	st.lend_rel[0] = '\0';
	return 0;
}

/* Put the task under the job's limits and pin it. */
static void enter(spank_t sp, syn__cg_t *cg, pid_t pid)
{
	char err[300];
	uint64_t mem_mb = 0;
	cpu_set_t set;
	char *list;

	if (syn__cg_job_of_pid(cg, pid, st.jobid, st.job_rel, sizeof(st.job_rel)) < 0) {
		char own[SYN_PATH_MAX * 2];

		if (syn__cg_of_pid(cg, pid, own, sizeof(own)) < 0)
			snprintf(own, sizeof(own), "unknown");
		slurm_error("synergy: job %u: task %d is not in the job's cgroup (it is in /%s: "
			    "no job_%u nor SLUID directory above a step_*); running "
			    "GPU-proportional", (unsigned)st.jobid, (int)pid, own,
			    (unsigned)st.jobid);
		st.job_rel[0] = '\0';
		return;
	}
	if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem_mb) != ESPANK_SUCCESS ||
	    mem_mb > (UINT64_MAX >> 20))
		mem_mb = 0;
	if (syn__cg_task_enter(cg, st.job_rel, pid, mem_mb << 20, &set, err, sizeof(err)) < 0) {
		slurm_error("synergy: job %u: %s; running GPU-proportional", (unsigned)st.jobid,
			    err);
		return;
	}
	if (sched_setaffinity(pid, sizeof(set), &set) < 0)
		slurm_info("synergy: job %u: sched_setaffinity(%d): %m", (unsigned)st.jobid,
			   (int)pid);
	/* A job that harvests other jobs' cores runs at idle priority (lend.h). */
	if (lend_enabled() && conf.harvest && syn__node_agent())
		syn__lend_task_enter(syn__node_agent(), st.jobid, st.job_rel);
	list = syn_cpus_format_alloc(&set);
	slurm_info("synergy: job %u: task %d in %s (cgroup v%d) cpus=%s mem=%" PRIu64
		   "MB key=%s", (unsigned)st.jobid, (int)pid, st.job_rel, syn__cg_version(cg),
		   list ? list : "?", mem_mb, st.rec.key);
	free(list);
}

int syn__remote_task_post_fork(spank_t sp)
{
	static int lend_done;
	syn__lend_start_t start;
	const syn__agent_t *agent;
	syn__cg_t *cg;
	uint64_t mem_mb = 0;
	pid_t pid;

	if (!syn__spank_conf_ok || !conf.enabled ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return 0;
	if (!st.active && !lend_enabled())
		return 0;
	cg = syn__node_cgroup();
	if (!cg)
		return 0;
	if (st.active)
		enter(sp, cg, pid);
	watch_start();
	if (!lend_enabled() || lend_done)
		return 0;
	lend_done = 1;
	if (syn__cg_job_of_pid(cg, pid, st.jobid, st.lend_rel, sizeof(st.lend_rel)) < 0) {
		slurm_error("synergy: lend job=%u: task %d is not in the job's cgroup",
			    (unsigned)st.jobid, (int)pid);
		st.lend_rel[0] = '\0';
		return 0;
	}
	agent = syn__node_agent();
	if (!agent)
		return 0;
	{
		/* The agent lists the jobs of the node cgroup it found from
		 * the layout (cgroup.h); one this job is not in would never
		 * see it. Said once per step. */
		char node_rel[SYN_PATH_MAX * 2];

		if (syn__cg_node_of_job(cg, st.lend_rel, node_rel, sizeof(node_rel)) == 0 &&
		    strcmp(node_rel, agent->node_rel) != 0)
			slurm_error("synergy: lend job=%u: its cgroup %s is not in the node "
				    "cgroup %s the node agent watches; set CgroupRoot in "
				    "synergy.conf (synergy-lend --check)", (unsigned)st.jobid,
				    st.lend_rel, agent->node_rel);
	}
	if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem_mb) != ESPANK_SUCCESS)
		mem_mb = 0;
	start.jobid = st.jobid;
	start.job_rel = st.lend_rel;
	start.alloc_mem_mb = mem_mb;
	syn__lend_rebalance(agent, &start, 0);
	tick_start();
	return 0;
}

int syn__remote_task_init(spank_t sp)
{
	char buf[SYN_PATH_MAX + 64], val[64];
	syn__cg_t *cg;
	char out[SYN_PATH_MAX + 64];
	char gname[SYN_KEY_MAX + SYN__GROUP_MAX + 16], gdir[SYN_PATH_MAX + sizeof(gname) + 2];
	cpu_set_t set;
	char *list;
	int taskid;

	syn__ckpt_task_init(sp);
	if (!syn__spank_conf_ok || !conf.enabled)
		return 0;
	cg = st.active ? syn__node_cgroup() : NULL;
	if (!cg || syn__cg_self_in_limits(cg, st.jobid, &set) != 1 ||
	    !(list = syn_cpus_format_alloc(&set))) {
		spank_setenv(sp, SYNERGY_ENV_ACTIVE, "0", 1);
		return 0;
	}
	sched_setaffinity(0, sizeof(set), &set);
	spank_setenv(sp, SYNERGY_ENV_PROFILE_KEY, st.rec.key, 1);
	spank_setenv(sp, SYNERGY_ENV_CPUS, list, 1);
	free(list);
	snprintf(val, sizeof(val), "%d", CPU_COUNT(&set));
	spank_setenv(sp, SYNERGY_ENV_THREADS, val, 1);
	snprintf(val, sizeof(val), "%" PRIu64 "M", cache_mb(sp));
	spank_setenv(sp, SYNERGY_ENV_CACHE_BYTES, val, 1);
	snprintf(buf, sizeof(buf), "%s/" SYN__CACHE_JOB_FMT, conf.cache_dir, (unsigned)st.jobid);
	spank_setenv(sp, SYNERGY_ENV_CACHE_DIR, buf, 1);
	snprintf(val, sizeof(val), SYN__CACHE_JOB_FMT, (unsigned)st.jobid);
	spank_setenv(sp, SYNERGY_ENV_CACHE_NAME, val, 1);
	/* The live cache grant the node agent moves (lend.h). */
	if (lend_enabled() && syn__grant_path(conf.cache_dir, st.jobid, buf, sizeof(buf)) == 0)
		spank_setenv(sp, SYNERGY_ENV_CACHE_GRANT, buf, 1);
	/* Coordinated prep: the group the prolog recorded and made a
	 * directory for. It replaces a value the job's environment had. */
	if (st.rec.group[0] && syn__node_name() &&
	    syn__group_dir_name(syn__node_name(), st.rec.group, gname, sizeof(gname)) == 0) {
		snprintf(gdir, sizeof(gdir), "%s/%s", conf.group_dir, gname);
		spank_setenv(sp, SYNERGY_ENV_GROUP, st.rec.group, 1);
		spank_setenv(sp, SYNERGY_ENV_GROUP_DIR, gdir, 1);
		/* The node's bounds, the same for every member (the loaders
		 * of one group must agree on the staging area's geometry). */
		snprintf(val, sizeof(val), "%" PRIu64 "M", conf.group_staging_mb);
		spank_setenv(sp, SYNERGY_ENV_GROUP_BYTES, val, 1);
		snprintf(val, sizeof(val), "%" PRIu32, conf.group_window);
		spank_setenv(sp, SYNERGY_ENV_GROUP_WINDOW, val, 1);
	}
	spank_setenv(sp, SYNERGY_ENV_ACTIVE, "1", 1);
	/* A multi-node step: every local task gets the node's entry (the
	 * first loader of the node to bind it listens, synergy_env.h). */
	if (st.peers) {
		spank_setenv(sp, SYNERGY_ENV_PEERS, st.peers, 1);
		snprintf(val, sizeof(val), "%" PRIu32, st.node_index);
		spank_setenv(sp, SYNERGY_ENV_NODE_INDEX, val, 1);
	}
	/* A job that chose its wire-up itself keeps a key and tag of its own. */
	if (st.has_peer_key) {
		snprintf(val, sizeof(val), "%" PRIu64, st.peer_tag);
		spank_setenv(sp, SYNERGY_ENV_PEER_TAG, val, st.peers != NULL);
		spank_setenv(sp, SYNERGY_ENV_PEER_KEY, st.peer_key, st.peers != NULL);
	}
	/* Profile on first run: the step's first task profiles, its report
	 * going where root looks for it (inplace.h). One process per job
	 * sweeps: a second task would compete for the same cores. */
	if (syn__inplace_report_path(conf.cache_dir, st.jobid, buf, sizeof(buf)) < 0)
		return 0;
	if (st.rec.profile[0] && spank_get_item(sp, S_TASK_ID, &taskid) == ESPANK_SUCCESS &&
	    taskid == 0) {
		spank_setenv(sp, SYNERGY_ENV_PROFILE_MODE, "1", 1);
		spank_setenv(sp, SYNERGY_ENV_PROFILE_OUT, buf, 1);
	} else if (spank_getenv(sp, SYNERGY_ENV_PROFILE_OUT, out, sizeof(out)) == ESPANK_SUCCESS &&
		   strcmp(out, buf) == 0) {
		/* Inherited from the step that profiled (srun inside the batch
		 * script): this task does not. A user's own setting stays. */
		spank_unsetenv(sp, SYNERGY_ENV_PROFILE_MODE);
		spank_unsetenv(sp, SYNERGY_ENV_PROFILE_OUT);
	}
	return 0;
}

/* When this step ends (sp given), move its leftover processes (daemonised
 * children of the task) back to the job's cgroup first: Slurm kills them
 * and removes the job's cgroup next, which our child would otherwise
 * block. Then remove what we made once nothing uses it. */
static void cleanup(spank_t sp, const char *when)
{
	char err[300], step[64];
	syn__cg_t *cg = syn__node_cgroup();

	if (!cg || !st.job_rel[0])
		return;
	if (sp && step_dir_name(sp, step, sizeof(step)) == 0 &&
	    syn__cg_step_leave(cg, st.job_rel, st.jobid, step, err, sizeof(err)) < 0)
		slurm_error("synergy: job %u: %s: %s", (unsigned)st.jobid, when, err);
	if (syn__cg_job_cleanup(cg, st.job_rel, err, sizeof(err)) < 0 && errno != EBUSY)
		slurm_error("synergy: job %u: %s: %s", (unsigned)st.jobid, when, err);
}

int syn__remote_task_exit(spank_t sp)
{
	static uint32_t tasks_exited;
	uint32_t ntasks;

	syn__ckpt_task_exit(sp);
	if (!st.active || !st.job_rel[0])
		return 0;
	/* Only the step's last local task takes its leftovers out: earlier
	 * exits must not move the step's other, still running, tasks. */
	tasks_exited++;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
		ntasks = UINT32_MAX;
	cleanup(tasks_exited >= ntasks ? sp : NULL, "task exit");
	return 0;
}

int syn__remote_exit(spank_t sp)
{
	uint32_t stepid;

	int batch;

	periodic_stop(&watch);
	periodic_stop(&tick);
	free(st.peers);
	st.peers = NULL;
	explicit_bzero(st.peer_key, sizeof(st.peer_key));
	st.has_peer_key = 0;
	explicit_bzero(st.rec.secret, sizeof(st.rec.secret));
	batch = spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
		stepid == SLURM_BATCH_SCRIPT;
	if (st.active && st.job_rel[0])
		cleanup(sp, "step exit");
	/* The batch step ending is the job ending: a job that profiled in
	 * place files its report now (or releases its claim), before its
	 * record goes with the rebalance below; the epilog does it for jobs
	 * without a batch step, and when lending is off. */
	if (batch && st.active && st.rec.profile[0])
		syn__inplace_run(st.jobid, st.rec.uid, 1);
	/* Its CPUs and memory are free now, not only once the epilog runs. */
	if (lend_enabled() && st.lend_rel[0] && syn__node_agent() && batch)
		syn__lend_rebalance(syn__node_agent(), NULL, st.jobid);
	return 0;
}
