/*
 * spank_synergy.c: the Synergy SPANK plugin.
 *
 * Client side (sbatch, salloc, srun): registers --synergy-profile=KEY and
 * --synergy=on|off (environment twins SYNERGY_PROFILE and SYNERGY), checks
 * them strictly and forwards them to the controller with
 * spank_job_control_setenv, where job_submit/synergy sizes the job.
 *
 * Node side (slurmstepd, root): for a job with a known profile, creates the
 * job's "synergy" child cgroup right under job_<id> (cpuset: whole cores of
 * the job's allocation chosen with hwloc; memory: the job's allocation,
 * which covers the process and its cache grant), moves each task into it
 * right after fork and pins its affinity, creates the per-job cache
 * directory, and exports the loader contract (synergy_env.h) into the task.
 * The child cgroup and the cache directory are removed when the last task
 * using them exits, again when slurmstepd ends and again in the job
 * epilog, because a leftover child blocks Slurm's own cgroup cleanup.
 *
 * With LendIdleCores=yes (lend.h), every job's first step also records the
 * job and takes back from borrowing jobs the CPUs Slurm allotted to it,
 * before its tasks run; idle CPUs are then lent to the Synergy job that
 * gains most, and again when a job ends (batch step exit, epilog).
 *
 * Safety: this runs as root with values from users. Keys are checked
 * against [A-Za-z0-9_.-] (so a key is never a path), numbers against their
 * range, and every path is built from the admin's configuration and the
 * job id only. Any failure is logged as "synergy: ..." and the job runs
 * GPU-proportional: no hook ever fails a job because of this plugin.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_env.h"
#include "cgroup.h"
#include "cores.h"
#include "lend.h"
#include "util.h"

SPANK_PLUGIN(synergy, 1);

/* Names of the variables the client forwards to job_submit/synergy. */
#define SYN_CTL_KEY "SYNERGY_PROFILE_KEY"
#define SYN_CTL_ONOFF "SYNERGY"

static syn__conf_t conf;
static int plugin_ok;           /* configuration loaded without error */
static char opt_key[SYN__KEY_MAX + 1];
static int opt_key_set;
static int opt_off;             /* --synergy=off */
static int opt_bad;             /* an option was malformed (client side) */
/* The job's cgroup path, remembered by post_fork in slurmstepd for the exit
 * hooks, which run when the task (and its /proc entry) is gone. */
static char exit_job_rel[300];
/* The job's cgroup path for idle-core lending, Synergy job or not. */
static char lend_job_rel[300];

static int opt_profile_cb(int val, const char *optarg, int remote);
static void lend_step_start(spank_t sp);
static int opt_onoff_cb(int val, const char *optarg, int remote);

static struct spank_option opt_profile = {
	"synergy-profile", "KEY",
	"Size CPU cores and cache memory from the Synergy profile KEY "
	"(env SYNERGY_PROFILE).",
	1, 0, opt_profile_cb
};
static struct spank_option opt_onoff = {
	"synergy", "on|off",
	"off: run GPU-proportional, leave the job untouched (env SYNERGY).",
	1, 0, opt_onoff_cb
};

static int set_key(const char *v, const char *from, int remote)
{
	if (!syn__key_valid(v)) {
		/* On the node a bad value only disables Synergy for the job; in
		 * the client it is an error the user sees before submitting. */
		if (remote)
			slurm_info("synergy: ignoring invalid profile key from %s", from);
		else
			slurm_error("synergy: %s: '%s' is not a valid profile key "
				    "(1-64 characters of A-Z a-z 0-9 _ . -, not starting with '.')",
				    from, v ? v : "");
		opt_bad = 1;
		return -1;
	}
	memcpy(opt_key, v, strlen(v) + 1); /* valid keys fit: at most SYN__KEY_MAX */
	opt_key_set = 1;
	return 0;
}

static int set_onoff(const char *v, const char *from, int remote)
{
	int on;

	if (syn__parse_onoff(v, &on) < 0) {
		if (!remote)
			slurm_error("synergy: %s: '%s' is not on or off", from, v ? v : "");
		opt_bad = 1;
		return -1;
	}
	opt_off = !on;
	return 0;
}

static int opt_profile_cb(int val, const char *optarg, int remote)
{
	return set_key(optarg, "--synergy-profile", remote) < 0 && !remote ? -1 : 0;
}

static int opt_onoff_cb(int val, const char *optarg, int remote)
{
	return set_onoff(optarg, "--synergy", remote) < 0 && !remote ? -1 : 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[200];
	int i;

	syn__conf_defaults(&conf);
	plugin_ok = 1;
	for (i = 0; i < ac; i++) {
		if (syn__conf_arg(&conf, av[i], err, sizeof(err)) < 0) {
			slurm_error("synergy: plugstack.conf: %s; Synergy disabled", err);
			plugin_ok = 0;
			break;
		}
	}
	/* Register the options even when disabled, so that job scripts that use
	 * them keep working. */
	if (spank_option_register(sp, &opt_profile) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_onoff) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot register options");
	return 0;
}

/* Client: take the environment twins, check, forward to the controller. */
static int client_post_opt(spank_t sp)
{
	const char *v;

	if (!opt_key_set && !opt_bad && (v = getenv("SYNERGY_PROFILE")) && *v) {
		if (set_key(v, "SYNERGY_PROFILE", 0) < 0)
			return -1;
	}
	if (!opt_bad && (v = getenv("SYNERGY")) && *v) {
		if (set_onoff(v, "SYNERGY", 0) < 0)
			return -1;
	}
	if (opt_bad)
		return -1;
	if (opt_key_set &&
	    spank_job_control_setenv(sp, SYN_CTL_KEY, opt_key, 1) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot forward the profile key");
	if (opt_off &&
	    spank_job_control_setenv(sp, SYN_CTL_ONOFF, "off", 1) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot forward --synergy=off");
	return 0;
}

/* Node: the key and switch also come from the job's environment, where the
 * batch step exported them, so that sruns inside the job follow it. */
static void remote_options(spank_t sp)
{
	char buf[128];

	if (!opt_key_set &&
	    spank_getenv(sp, SYNERGY_ENV_PROFILE_KEY, buf, sizeof(buf)) == ESPANK_SUCCESS &&
	    buf[0])
		set_key(buf, SYNERGY_ENV_PROFILE_KEY, 1);
	if (spank_getenv(sp, "SYNERGY", buf, sizeof(buf)) == ESPANK_SUCCESS && buf[0])
		set_onoff(buf, "SYNERGY", 1);
}

/* 1 if the store holds a profile file for opt_key (the key is checked, so
 * the path stays inside the store). */
static int profile_known(void)
{
	char path[SYN__PATH_MAX + SYN__KEY_MAX + 8];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s.json", conf.store_dir, opt_key);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int job_active(void)
{
	return plugin_ok && conf.enabled && opt_key_set && !opt_off && !opt_bad && profile_known();
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
		return client_post_opt(sp);
	if (ctx != S_CTX_REMOTE)
		return 0;
	remote_options(sp);
	lend_step_start(sp);
	return 0;
}

/* /proc/<pid>/cgroup into text (NUL-terminated); 0, or -1 if unreadable or empty. */
static int read_proc_cgroup(pid_t pid, char *text, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	return 0;
}

/* The job's cgroup path (relative to the controller root) for pid. */
static int job_rel_of(pid_t pid, uint32_t jobid, const char *ctl, char *out, size_t len)
{
	char text[4096];

	if (read_proc_cgroup(pid, text, sizeof(text)) < 0)
		return -1;
	return syn__job_cgroup(text, ctl, jobid, out, len);
}

/*
 * The per-job cache directory: <cache_dir>/job_<id>, owned by the job's user,
 * mode 0700. cache_dir itself must be root's and not writable by others, so
 * that no user can plant a link where we create the job's directory.
 */
static int cache_dir_create(uint32_t jobid, uid_t uid, gid_t gid)
{
	char path[SYN__PATH_MAX + 32];
	struct stat st;
	int dfd = -1, rv = -1;

	if (mkdir(conf.cache_dir, 0755) < 0 && errno != EEXIST) {
		slurm_error("synergy: mkdir %s: %m", conf.cache_dir);
		goto out;
	}
	dfd = open(conf.cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) < 0) {
		slurm_error("synergy: open %s: %m", conf.cache_dir);
		goto out;
	}
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		slurm_error("synergy: %s must be owned by root and writable by root only",
			    conf.cache_dir);
		goto out;
	}
	snprintf(path, sizeof(path), "job_%u", (unsigned)jobid);
	if (mkdirat(dfd, path, 0700) < 0 && errno != EEXIST) {
		slurm_error("synergy: mkdir %s/%s: %m", conf.cache_dir, path);
		goto out;
	}
	if (fchownat(dfd, path, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
		slurm_error("synergy: chown %s/%s: %m", conf.cache_dir, path);
		goto out;
	}
	rv = 0;
out:
	if (dfd >= 0)
		close(dfd);
	return rv;
}

/*
 * Empty the directory open at dfd (which it closes), depth first, never
 * following a link: a link planted by the job is removed, not its target.
 * Depth is bounded so that a hostile tree cannot exhaust descriptors.
 */
static void remove_tree(int dfd, int depth)
{
	struct dirent *e;
	DIR *d = fdopendir(dfd);

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR)
			continue;
		if (depth < 16) {
			sub = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				remove_tree(sub, depth + 1);
		}
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* Remove <cache_dir>/job_<id> with everything in it. */
static void cache_dir_remove(uint32_t jobid)
{
	char name[32];
	int dfd, jfd;

	snprintf(name, sizeof(name), "job_%u", (unsigned)jobid);
	dfd = open(conf.cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	jfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd >= 0)
		remove_tree(jfd, 0);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		slurm_info("synergy: job %u: cannot remove cache dir %s/%s: %m",
			   (unsigned)jobid, conf.cache_dir, name);
	close(dfd);
}

/* The name of this step's cgroup directory, as Slurm names it. */
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

/*
 * Remove the job's child cgroup, and its cache once nothing uses it. When
 * this step ends (sp given), its leftover processes (daemonised children of
 * the task) are moved back to the job's cgroup first: Slurm kills them and
 * removes the job's cgroup next, which our child would otherwise block.
 */
static void cleanup(spank_t sp, uint32_t jobid, const char *job_rel, const char *when)
{
	char err[200], step[64];

	if (sp && step_dir_name(sp, step, sizeof(step)) == 0 &&
	    syn__cg_evict_step(job_rel, jobid, step, err, sizeof(err)) < 0)
		slurm_error("synergy: job %u: %s: %s", (unsigned)jobid, when, err);

	if (syn__cg_remove(job_rel, err, sizeof(err)) < 0) {
		if (errno != EBUSY)
			slurm_error("synergy: job %u: %s: %s", (unsigned)jobid, when, err);
		return;
	}
	cache_dir_remove(jobid);
}

/* The cpuset.cpus of cgroup rel into cpus (text) and set; 0 only when it
 * names at least one CPU. */
static int cg_cpu_set(const char *rel, char *cpus, size_t len, cpu_set_t *set)
{
	if (syn__cg_get_cpus(rel, cpus, len) < 0 || syn__cpus_parse(cpus, set) < 0)
		return -1;
	return CPU_COUNT(set) > 0 ? 0 : -1;
}

/* The GPU index the job sees first (for locality), or -1. */
static int first_gpu(spank_t sp)
{
	char buf[64];
	uint64_t v;

	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", buf, sizeof(buf)) != ESPANK_SUCCESS)
		return -1;
	buf[strcspn(buf, ",")] = '\0';
	if (syn__parse_u64(buf, 0, 1023, &v) < 0)
		return -1;
	return (int)v;
}

/*
 * Parent side, right after fork (root): make sure the job's child cgroup
 * exists, move the task into it and pin it. Any failure leaves the task
 * where Slurm put it (GPU-proportional).
 */
static int synergy_post_fork(spank_t sp)
{
	char job_rel[300], path[400], allowed[256], cpus[256], err[256];
	uint32_t jobid;
	uint64_t mem_mb = 0;
	pid_t pid;
	cpu_set_t set;
	int n;

	if (!spank_remote(sp) || !job_active())
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return 0;
	if (job_rel_of(pid, jobid, "cpuset", job_rel, sizeof(job_rel)) < 0) {
		slurm_error("synergy: job %u: task %d is not in the job's cpuset cgroup; "
			    "running GPU-proportional", (unsigned)jobid, (int)pid);
		return 0;
	}
	if (!syn__cg_exists(job_rel)) {
		uid_t uid;
		gid_t gid;

		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/cpuset.cpus", job_rel);
		if (syn__cg_get_cpus(job_rel, allowed, sizeof(allowed)) < 0 || !allowed[0]) {
			slurm_error("synergy: job %u: cannot read %s", (unsigned)jobid, path);
			return 0;
		}
		n = 0;
		if (syn__cpus_parse(allowed, &set) == 0)
			n = CPU_COUNT(&set);
		if (n <= 0 || syn__pick_cores(allowed, n, first_gpu(sp), cpus, sizeof(cpus)) < 0) {
			slurm_error("synergy: job %u: no cores to choose from '%s'",
				    (unsigned)jobid, allowed);
			return 0;
		}
		if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem_mb) != ESPANK_SUCCESS)
			mem_mb = 0;
		if (mem_mb > (UINT64_MAX >> 20))
			mem_mb = 0;
		if (syn__cg_create(job_rel, cpus, mem_mb << 20, err, sizeof(err)) < 0) {
			slurm_error("synergy: job %u: %s; running GPU-proportional",
				    (unsigned)jobid, err);
			syn__cg_remove(job_rel, err, sizeof(err));
			return 0;
		}
		if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
		    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
		    cache_dir_create(jobid, uid, gid) < 0) {
			slurm_error("synergy: job %u: no cache directory; running GPU-proportional",
				    (unsigned)jobid);
			syn__cg_remove(job_rel, err, sizeof(err));
			return 0;
		}
		slurm_info("synergy: job %u: cgroup %s/%s cpus=%s mem=%" PRIu64 "MB key=%s",
			   (unsigned)jobid, job_rel, SYN__CG_CHILD, cpus, mem_mb, opt_key);
	}
	snprintf(exit_job_rel, sizeof(exit_job_rel), "%s", job_rel);
	if (syn__cg_attach(job_rel, pid, err, sizeof(err)) < 0) {
		slurm_error("synergy: job %u: %s; running GPU-proportional", (unsigned)jobid, err);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", job_rel, SYN__CG_CHILD);
	if (cg_cpu_set(path, cpus, sizeof(cpus), &set) == 0 &&
	    sched_setaffinity(pid, sizeof(set), &set) < 0)
		slurm_info("synergy: job %u: sched_setaffinity(%d): %m", (unsigned)jobid, (int)pid);
	return 0;
}

static void lend_log(int is_error, const char *msg, void *arg)
{
	(void)arg;
	if (is_error)
		slurm_error("%s", msg);
	else
		slurm_info("%s", msg);
}

/* The node's cgroup (e.g. "slurm_n1") from the job's ("slurm_n1/uid_0/job_7"). */
static int node_rel_of(const char *job_rel, char *out, size_t len)
{
	char *slash;
	int i;

	if ((size_t)snprintf(out, len, "%s", job_rel) >= len)
		return -1;
	for (i = 0; i < 2; i++) {
		slash = strrchr(out, '/');
		if (!slash || slash == out)
			return -1;
		*slash = '\0';
	}
	return 0;
}

/* GPUs of the job on this node (1 when Slurm does not say). */
static int job_gpus(spank_t sp)
{
	static const char *const names[] = { "SLURM_JOB_GPUS", "SLURM_STEP_GPUS",
					     "CUDA_VISIBLE_DEVICES" };
	char buf[256];
	size_t i;
	int n;
	char *p;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (spank_getenv(sp, names[i], buf, sizeof(buf)) != ESPANK_SUCCESS || !buf[0])
			continue;
		for (n = 1, p = buf; (p = strchr(p, ',')); p++)
			n++;
		return n;
	}
	return 1;
}

/* The cache grant per node: the job's memory beyond ProcessMemMB, at most
 * MaxCacheMB (what the loader is told, and what lending weighs). */
static uint64_t job_cache_mb(spank_t sp)
{
	uint64_t mem_mb = 0, cache_mb = 0;

	if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem_mb) == ESPANK_SUCCESS &&
	    mem_mb > conf.process_mem_mb)
		cache_mb = mem_mb - conf.process_mem_mb;
	return cache_mb > conf.max_cache_mb ? conf.max_cache_mb : cache_mb;
}

static int lend_enabled(void)
{
	return plugin_ok && conf.enabled && conf.lend_idle;
}

/* Re-run lending on the node of job_rel; failures are logged only. */
static void lend_run(const char *job_rel, const syn__lend_start_t *start, uint32_t ended)
{
	char node_rel[300];

	if (node_rel_of(job_rel, node_rel, sizeof(node_rel)) < 0) {
		slurm_error("synergy: lend: no node cgroup above %s", job_rel);
		return;
	}
	syn__lend_rebalance(conf.lend_state_dir, conf.store_dir, node_rel, start, ended,
			    SYN__LEND_MIN_GAIN, lend_log, NULL);
}

static int epilog_job_rel(spank_t sp, uint32_t jobid, char *out, size_t len);

/*
 * Before Slurm sets up a step's cgroups (init_post_opt runs before the task
 * plugins): a job that borrows gives its lent CPUs back, or Slurm could not
 * reset the job's cpuset and the step would fail. The step's post_fork
 * lends them again.
 */
static void lend_step_start(spank_t sp)
{
	char job_rel[300], node_rel[300];
	uint32_t jobid;

	/* Also with lending turned off since the job borrowed: its records
	 * are still there, and its steps would fail all the same. */
	if (!plugin_ok || (!lend_enabled() && access(conf.lend_state_dir, F_OK) != 0) ||
	    spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return;
	if (epilog_job_rel(sp, jobid, job_rel, sizeof(job_rel)) < 0 ||
	    node_rel_of(job_rel, node_rel, sizeof(node_rel)) < 0)
		return;
	syn__lend_step_start(conf.lend_state_dir, node_rel, job_rel, jobid, lend_log, NULL);
}

/*
 * After the Synergy setup of the step's first task, and before any task
 * runs: record the job and take its CPUs back from borrowers, then lend
 * what is idle (which may include the new job itself, if it borrows).
 */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	static int lend_done;
	syn__lend_start_t st;
	uint32_t jobid;
	pid_t pid;

	synergy_post_fork(sp);
	if (!spank_remote(sp) || !lend_enabled() || lend_done)
		return 0;
	lend_done = 1;
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return 0;
	if (job_rel_of(pid, jobid, "cpuset", lend_job_rel, sizeof(lend_job_rel)) < 0) {
		slurm_error("synergy: lend job=%u: task %d is not in the job's cpuset cgroup",
			    (unsigned)jobid, (int)pid);
		lend_job_rel[0] = '\0';
		return 0;
	}
	memset(&st, 0, sizeof(st));
	st.jobid = jobid;
	st.job_rel = lend_job_rel;
	st.borrow = job_active() && syn__cg_exists(lend_job_rel);
	st.key = opt_key;
	st.gpus = job_gpus(sp);
	st.cache_mb = job_cache_mb(sp);
	lend_run(lend_job_rel, &st, 0);
	return 0;
}

/*
 * In the task, just before exec (the user's identity): if post_fork put us
 * in the synergy cgroup, pin to its cores (Slurm's affinity plugin may have
 * narrowed us since) and export the loader contract; otherwise say that
 * the job runs GPU-proportional.
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char job_rel[300], buf[600], cpus[256], val[64], self[4096];
	uint32_t jobid;
	uint64_t cache_mb;
	cpu_set_t set;
	int in_child = 0;

	if (!spank_remote(sp) || !plugin_ok || !conf.enabled)
		return 0;
	if (opt_key_set)
		spank_setenv(sp, SYNERGY_ENV_PROFILE_KEY, opt_key, 1);
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return 0;
	if (job_active() && read_proc_cgroup(getpid(), self, sizeof(self)) == 0 &&
	    syn__job_cgroup(self, "cpuset", jobid, job_rel, sizeof(job_rel)) == 0) {
		/* syn__job_cgroup stops at job_<id>; check we are in its synergy child. */
		snprintf(buf, sizeof(buf), "/%s/%s\n", job_rel, SYN__CG_CHILD);
		in_child = strstr(self, buf) != NULL;
	}
	if (!in_child) {
		spank_setenv(sp, SYNERGY_ENV_ACTIVE, "0", 1);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s/%s", job_rel, SYN__CG_CHILD);
	if (cg_cpu_set(buf, cpus, sizeof(cpus), &set) < 0) {
		spank_setenv(sp, SYNERGY_ENV_ACTIVE, "0", 1);
		return 0;
	}
	sched_setaffinity(0, sizeof(set), &set);
	cache_mb = job_cache_mb(sp);
	spank_setenv(sp, SYNERGY_ENV_CPUS, cpus, 1);
	snprintf(val, sizeof(val), "%d", CPU_COUNT(&set));
	spank_setenv(sp, SYNERGY_ENV_THREADS, val, 1);
	snprintf(val, sizeof(val), "%" PRIu64 "M", cache_mb);
	spank_setenv(sp, SYNERGY_ENV_CACHE_BYTES, val, 1);
	snprintf(buf, sizeof(buf), "%s/job_%u", conf.cache_dir, (unsigned)jobid);
	spank_setenv(sp, SYNERGY_ENV_CACHE_DIR, buf, 1);
	snprintf(val, sizeof(val), "job_%u", (unsigned)jobid);
	spank_setenv(sp, SYNERGY_ENV_CACHE_NAME, val, 1);
	spank_setenv(sp, SYNERGY_ENV_ACTIVE, "1", 1);
	return 0;
}


int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	static uint32_t tasks_exited;
	uint32_t jobid, ntasks;

	if (!spank_remote(sp) || !job_active() || !exit_job_rel[0])
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return 0;
	/* Only the step's last local task takes its leftovers out: earlier
	 * exits must not move the step's other, still running, tasks. */
	tasks_exited++;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
		ntasks = UINT32_MAX;
	cleanup(tasks_exited >= ntasks ? sp : NULL, jobid, exit_job_rel, "task exit");
	return 0;
}

/* The job's cgroup path built from the node name (epilog: no task left). */
static int epilog_job_rel(spank_t sp, uint32_t jobid, char *out, size_t len)
{
	const char *node = getenv("SLURMD_NODENAME");
	uid_t uid;

	if (!node || !syn__key_valid(node))
		return -1;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return -1;
	if ((size_t)snprintf(out, len, "slurm_%s/uid_%u/job_%u", node, (unsigned)uid,
			     (unsigned)jobid) >= len)
		return -1;
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	uint32_t jobid, stepid;

	if (!spank_remote(sp) || spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return 0;
	if (exit_job_rel[0])
		cleanup(sp, jobid, exit_job_rel, "step exit");
	/* The batch step ending is the job ending: its CPUs are free now,
	 * not only once the epilog runs. */
	if (lend_enabled() && lend_job_rel[0] &&
	    spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
	    stepid == SLURM_BATCH_SCRIPT)
		lend_run(lend_job_rel, NULL, jobid);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char job_rel[300], node_rel[300];
	uint32_t jobid;

	if (!plugin_ok || spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return 0;
	if (epilog_job_rel(sp, jobid, job_rel, sizeof(job_rel)) == 0) {
		cleanup(NULL, jobid, job_rel, "epilog");
		if (lend_enabled()) {
			lend_run(job_rel, NULL, jobid);
		} else if (node_rel_of(job_rel, node_rel, sizeof(node_rel)) == 0) {
			syn__lend_forget(conf.lend_state_dir, node_rel, jobid);
		}
	} else {
		cache_dir_remove(jobid);
	}
	return 0;
}
