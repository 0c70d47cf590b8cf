/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup_v1.c: what the cgroup v1 backend does that v2 does not (see
 * cgroup.h): the job's "synergy" child in the cpuset and memory
 * hierarchies, created with libcgroup, its tasks, and its removal.
 *
 * The child gets the cpuset and memory controllers only: proctrack/cgroup
 * keeps tracking (and killing) the job through the freezer hierarchy, which
 * we leave alone. cpuset.mems is copied from the job's cgroup because a v1
 * cpuset with empty mems refuses tasks. libcgroup is initialised once per
 * process (slurmstepd loads us once per step).
 *
 * A job that harvests other jobs' idle cycles (lend.h) is made idle as a
 * group in the cpu hierarchy, which Slurm's cgroup/v1 leaves alone: its
 * processes move into a child "synergy_<node>_job_<id>" (cpu.idle 1) of the
 * cpu cgroup they are in, the one the other jobs' processes of the node are
 * in too (or their autogroups, children of it), so that the kernel weighs
 * the job as idle exactly where it meets them. They move back to that
 * parent when the harvest ends, and the child goes.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libcgroup.h>

#include "common/file.h"
#include "plugin/node/cgroup_int.h"

static const char *const child_ctls[] = { "cpuset", "memory" };
#define NCTLS (sizeof(child_ctls) / sizeof(child_ctls[0]))

static int cg_ready;

static int lib_init(char *err, size_t errlen)
{
	int rc;

	if (cg_ready)
		return 0;
	rc = cgroup_init();
	if (rc)
		return syn_errbuf(err, errlen, EIO, "cgroup_init: %s", cgroup_strerror(rc));
	cg_ready = 1;
	return 0;
}

static int child_rel(const char *job_rel, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", job_rel, SYN__CG_CHILD) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int child_exists(const syn__cg_t *cg, const char *job_rel)
{
	char rel[SYN_PATH_MAX * 2], path[SYN_PATH_MAX * 3];

	return child_rel(job_rel, rel, sizeof(rel)) == 0 &&
	       syn__cg_path(cg, "cpuset", rel, NULL, path, sizeof(path)) == 0 &&
	       access(path, F_OK) == 0;
}

int syn__cg1_limits(const syn__cg_t *cg, const char *job_rel, char ***out)
{
	char **list = calloc(2, sizeof(*list));
	char rel[SYN_PATH_MAX * 2];

	if (!list) {
		errno = ENOMEM;
		return -1;
	}
	if (child_exists(cg, job_rel) && child_rel(job_rel, rel, sizeof(rel)) == 0) {
		list[0] = strdup(rel);
		if (!list[0]) {
			free(list);
			errno = ENOMEM;
			return -1;
		}
	}
	*out = list;
	return 0;
}

/* libcgroup's handle of job_rel's synergy child (its path into rel) with
 * the cpuset and memory controllers added, or NULL with err and errno. */
static struct cgroup *child_cgroup(const char *job_rel, char *rel, size_t len,
				   struct cgroup_controller **cs, struct cgroup_controller **mem,
				   char *err, size_t errlen)
{
	struct cgroup *c;

	if (lib_init(err, errlen) < 0)
		return NULL;
	if (child_rel(job_rel, rel, len) < 0) {
		syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s", job_rel);
		return NULL;
	}
	c = cgroup_new_cgroup(rel);
	if (!c || !(*cs = cgroup_add_controller(c, "cpuset")) ||
	    !(*mem = cgroup_add_controller(c, "memory"))) {
		syn_errbuf(err, errlen, ENOMEM, "cgroup_new_cgroup(%s) failed", rel);
		if (c)
			cgroup_free(&c);
		return NULL;
	}
	return c;
}

static int create_child(const syn__cg_t *cg, const char *job_rel, uint64_t mem_bytes, char *err,
			size_t errlen)
{
	struct cgroup *c = NULL;
	struct cgroup_controller *cs, *mem;
	char rel[SYN_PATH_MAX * 2], path[SYN_PATH_MAX * 3];
	char *mems = NULL, *cpus = NULL;
	int rc, rv = -1;

	c = child_cgroup(job_rel, rel, sizeof(rel), &cs, &mem, err, errlen);
	if (!c)
		goto out;
	if (syn__cg_path(cg, "cpuset", job_rel, "cpuset.mems", path, sizeof(path)) < 0 ||
	    !(mems = syn__cg_read_file(path)) || !mems[0]) {
		syn_errbuf(err, errlen, ENOENT, "cannot read cpuset.mems of %s", job_rel);
		goto out;
	}
	cpus = syn__cg_get_cpus_text(cg, job_rel);
	if (!cpus || !cpus[0]) {
		syn_errbuf(err, errlen, ENOENT, "cannot read cpuset.cpus of %s", job_rel);
		goto out;
	}
	/* mems before cpus: the kernel wants both set before tasks join. */
	rc = cgroup_set_value_string(cs, "cpuset.mems", mems);
	if (!rc)
		rc = cgroup_set_value_string(cs, "cpuset.cpus", cpus);
	if (!rc && mem_bytes)
		rc = cgroup_set_value_uint64(mem, "memory.limit_in_bytes", mem_bytes);
	if (rc) {
		syn_errbuf(err, errlen, EINVAL, "setting values of %s: %s", rel,
			   cgroup_strerror(rc));
		goto out;
	}
	/* ignore_ownership=0: root owns it; the job can read but not change it. */
	rc = cgroup_create_cgroup(c, 0);
	if (rc) {
		syn_errbuf(err, errlen, EIO, "creating %s: %s", rel, cgroup_strerror(rc));
		goto out;
	}
	rv = 0;
out:
	free(mems);
	free(cpus);
	if (c)
		cgroup_free(&c);
	return rv;
}

int syn__cg1_task_enter(const syn__cg_t *cg, const char *job_rel, pid_t pid,
			uint64_t mem_bytes, cpu_set_t *set, char *err, size_t errlen)
{
	struct cgroup *c = NULL;
	struct cgroup_controller *cs, *mem;
	char rel[SYN_PATH_MAX * 2];
	int rc, rv = -1;

	if (!child_exists(cg, job_rel) && create_child(cg, job_rel, mem_bytes, err, errlen) < 0) {
		int e = errno;
		syn__cg1_job_cleanup(cg, job_rel, NULL, 0);
		errno = e;
		return -1;
	}
	c = child_cgroup(job_rel, rel, sizeof(rel), &cs, &mem, err, errlen);
	if (!c)
		goto out;
	rc = cgroup_attach_task_pid(c, pid);
	if (rc) {
		syn_errbuf(err, errlen, EIO, "attaching pid %d to %s: %s", (int)pid, rel,
			   cgroup_strerror(rc));
		goto out;
	}
	if (syn__cg_get_cpus(cg, rel, set) < 0) {
		syn_errbuf(err, errlen, errno ? errno : EIO, "cannot read the CPUs of %s", rel);
		goto out;
	}
	rv = 0;
out:
	if (c)
		cgroup_free(&c);
	return rv;
}

/* 1 if cgroup rel of controller ctl lists a process. */
static int has_procs(const syn__cg_t *cg, const char *ctl, const char *rel)
{
	char path[SYN_PATH_MAX * 3];
	char *text;
	int has;

	if (syn__cg_path(cg, ctl, rel, "cgroup.procs", path, sizeof(path)) < 0 ||
	    !(text = syn__cg_read_file(path)))
		return 0;
	has = text[0] != '\0';
	free(text);
	return has;
}

/* 1 if directory dir has a subdirectory (a v1 cgroup: a child cgroup). */
static int has_subdir(const char *dir)
{
	struct dirent *e;
	DIR *d;
	int has = 0;

	if (!(d = opendir(dir)))
		return 1;       /* unknown: treat as in use */
	while (!has && (e = readdir(d)))
		has = e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 &&
		      strcmp(e->d_name, "..") != 0;
	closedir(d);
	return has;
}

/* rmdir cgroup rel of controller ctl: one with no child and no process
 * left may still be refused (EBUSY) for a moment while the kernel lets go
 * of processes that just exited (a loaded node: slurmstepd's own removal
 * retries for the same reason), and a directory of ours left then keeps
 * Slurm from removing the job's. Such a one is retried for up to half a
 * second; a cgroup really in use is not. 0, or -1 with errno. */
static int rmdir_settled(const syn__cg_t *cg, const char *ctl, const char *rel)
{
	struct timespec pause = { 0, 25 * 1000 * 1000 };
	char dir[SYN_PATH_MAX * 3];
	int tries = 0;

	if (syn__cg_path(cg, ctl, rel, NULL, dir, sizeof(dir)) < 0)
		return -1;
	while (rmdir(dir) < 0) {
		int e = errno;

		if (e != EBUSY || ++tries >= 20 || has_subdir(dir) || has_procs(cg, ctl, rel)) {
			errno = e;
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return 0;
}

int syn__cg1_job_cleanup(const syn__cg_t *cg, const char *job_rel, char *err, size_t errlen)
{
	char rel[SYN_PATH_MAX * 2], dir[SYN_PATH_MAX * 3];
	size_t i;

	if (child_rel(job_rel, rel, sizeof(rel)) < 0)
		return syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s",
				  job_rel);
	for (i = 0; i < NCTLS; i++) {
		if (has_procs(cg, child_ctls[i], rel))
			return syn_errbuf(err, errlen, EBUSY, "%s/%s still has tasks",
					  child_ctls[i], rel);
	}
	/* rmdir directly: libcgroup's delete would migrate stray tasks to the
	 * parent, and an empty v1 cgroup needs nothing but rmdir. */
	syn__cg1_idle_cleanup(cg, job_rel);
	for (i = 0; i < NCTLS; i++) {
		if (rmdir_settled(cg, child_ctls[i], rel) < 0 && errno != ENOENT) {
			int e = errno ? errno : EIO;

			if (syn__cg_path(cg, child_ctls[i], rel, NULL, dir, sizeof(dir)) < 0)
				snprintf(dir, sizeof(dir), "%s/%s", child_ctls[i], rel);
			return syn_errbuf(err, errlen, e, "rmdir %s: %s", dir, strerror(e));
		}
	}
	return 0;
}

/* "<prefix>_<digits>": a name Slurm's v1 layout gives (uid_, job_). */
static int slurm_dir_name(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(name, prefix, n) != 0 || !name[n])
		return 0;
	return strspn(name + n, "0123456789") == strlen(name + n);
}

int syn__cg1_job_gone(const syn__cg_t *cg, const char *job_rel, int lock_ms, char *err,
		      size_t errlen)
{
	char rel[SYN_PATH_MAX * 2], root[SYN_PATH_MAX * 3], dir[SYN_PATH_MAX * 3], *job, *uid;
	size_t i;
	int fd, rc = 0, e = 0;

	/* Only Slurm's own shape, <node root>/uid_<u>/job_<j>: the two
	 * directories it would have removed. */
	if ((size_t)snprintf(rel, sizeof(rel), "%s", job_rel) >= sizeof(rel) ||
	    !(job = strrchr(rel, '/')) || !slurm_dir_name(job + 1, "job_"))
		return 0;
	*job = '\0';
	if (!(uid = strrchr(rel, '/')) || !slurm_dir_name(uid + 1, "uid_"))
		return 0;
	*job = '/';
	for (i = 0; i < NCTLS; i++) {
		if (syn__cg_path(cg, child_ctls[i], NULL, NULL, root, sizeof(root)) < 0 ||
		    syn__cg_path(cg, child_ctls[i], rel, NULL, dir, sizeof(dir)) < 0 ||
		    access(dir, F_OK) < 0)
			continue;
		fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			e = errno;
			rc = syn_errbuf(err, errlen, e, "open %s: %s", root, strerror(e));
			continue;
		}
		/* Slurm's lock: flock on the hierarchy's root, which its steps
		 * take while they make or remove a step's, job's or user's
		 * directory (the user's may be about to get another job). */
		if (syn_file_lock(fd, lock_ms) < 0) {
			e = errno;
			rc = syn_errbuf(err, errlen, e, "lock %s: %s", root, strerror(e));
			close(fd);
			continue;
		}
		/* Each only when empty (rmdir refuses a cgroup with processes
		 * or children): a step still there keeps the job's, another
		 * job of the user the user's. */
		if (rmdir_settled(cg, child_ctls[i], rel) == 0) {
			*job = '\0';
			rmdir_settled(cg, child_ctls[i], rel);
			*job = '/';
		}
		close(fd);          /* the lock goes with it */
	}
	if (rc < 0)
		errno = e;  /* that of the failure err names, not a later rmdir's */
	return rc;
}

/* 1 if pid's freezer cgroup is <...>/job_<jobid>/<step_dir> or below it. */
static int pid_in_step(pid_t pid, uint32_t jobid, const char *step_dir)
{
	char path[64], job[SYN_PATH_MAX * 2], own[SYN_PATH_MAX * 2];
	char *text;
	size_t jl, sl = strlen(step_dir);
	int rv = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	text = syn__cg_read_file(path);
	if (!text)
		return 0;
	if (syn__cg_parse_proc(text, "freezer", jobid, job, sizeof(job)) == 0 &&
	    syn__cg_proc_path(text, "freezer", own, sizeof(own)) == 0) {
		jl = strlen(job);
		rv = strncmp(own, job, jl) == 0 && own[jl] == '/' &&
		     strncmp(own + jl + 1, step_dir, sl) == 0 &&
		     (own[jl + 1 + sl] == '\0' || own[jl + 1 + sl] == '/');
	}
	free(text);
	return rv;
}

/* The next pid of a cgroup.procs text at *p (one per line, as the kernel
 * writes them), advancing *p: 1, or 0 at the end or at a line that is not
 * a pid (common/parse.h's integers). */
static int next_pid(char **p, pid_t *pid)
{
	size_t len;
	uint64_t v;

	*p += strspn(*p, "\n");
	len = strcspn(*p, "\n");
	if (len == 0 || syn_parse_u64n(*p, len, 1, INT32_MAX, &v) < 0)
		return 0;
	*p += len;
	*pid = (pid_t)v;
	return 1;
}

static int write_pid(const syn__cg_t *cg, const char *ctl, const char *rel, pid_t pid)
{
	char path[SYN_PATH_MAX * 3], val[24];

	if (syn__cg_path(cg, ctl, rel, "cgroup.procs", path, sizeof(path)) < 0)
		return -1;
	snprintf(val, sizeof(val), "%d", (int)pid);
	return syn__cg_write_file(path, val, NULL, 0);
}

int syn__cg1_step_leave(const syn__cg_t *cg, const char *job_rel, uint32_t jobid,
			const char *step_dir, char *err, size_t errlen)
{
	char rel[SYN_PATH_MAX * 2], path[SYN_PATH_MAX * 3];
	char *text, *p;
	int moved = 0;
	pid_t pid;

	if (child_rel(job_rel, rel, sizeof(rel)) < 0 ||
	    syn__cg_path(cg, "cpuset", rel, "cgroup.procs", path, sizeof(path)) < 0)
		return syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s",
				  job_rel);
	text = syn__cg_read_file(path);
	if (!text) {
		if (errno == ENOENT)
			return 0;
		return syn_errbuf(err, errlen, errno ? errno : EIO, "open %s: %s", path,
				  strerror(errno));
	}
	for (p = text; next_pid(&p, &pid);) {
		if (!pid_in_step(pid, jobid, step_dir))
			continue;
		/* A process that exits meanwhile is fine: ESRCH is ignored. */
		if ((write_pid(cg, "cpuset", job_rel, (pid_t)pid) < 0 && errno != ESRCH) ||
		    (write_pid(cg, "memory", job_rel, (pid_t)pid) < 0 && errno != ESRCH)) {
			int e = errno;
			free(text);
			return syn_errbuf(err, errlen, e ? e : EIO, "moving pid %d back to %s: %s",
					  (int)pid, job_rel, strerror(e));
		}
		moved++;
	}
	free(text);
	return moved;
}

/* ---- harvesting: the job as an idle group in the cpu hierarchy ---- */

/* The idle cpu cgroup's name for job_rel (SYN__CG_IDLE_FMT), or -1 when
 * job_rel does not end in job_<id>. */
static int idle_name(const syn__cg_t *cg, const char *job_rel, char *name, size_t len)
{
	const char *b = strrchr(job_rel, '/');
	uint64_t id;

	b = b ? b + 1 : job_rel;
	if (strncmp(b, "job_", 4) != 0 || syn_parse_u64(b + 4, 0, UINT32_MAX, &id) < 0)
		return -1;
	snprintf(name, len, SYN__CG_IDLE_FMT, syn__cg_node(cg), (unsigned)id);
	return 0;
}

/* The cpu cgroup of pid (relative, "" for the root), or -1. */
static int cpu_path_of(pid_t pid, char *out, size_t len)
{
	char path[64], *text;
	int rv;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	text = syn__cg_read_file(path);
	if (!text)
		return -1;
	rv = syn__cg_proc_path(text, "cpu", out, len);
	free(text);
	return rv;
}

/* The directory (file NULL) or a file of cpu cgroup rel ("" the root). */
static int cpu_file(const syn__cg_t *cg, const char *rel, const char *file, char *out, size_t len)
{
	int k = snprintf(out, len, "%s/cpu%s%s%s%s", syn__cg_mountpoint(cg), rel[0] ? "/" : "",
			 rel, file ? "/" : "", file ? file : "");

	if (k < 0 || (size_t)k >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The pids listed in path (malloc'ed, 0-terminated), NULL with errno. */
static pid_t *read_pids(const char *path)
{
	char *text = syn__cg_read_file(path), *p;
	size_t n = 0, cap = 16;
	pid_t *v, pid;

	if (!text)
		return NULL;
	v = malloc(cap * sizeof(*v));
	for (p = text; v && next_pid(&p, &pid);) {
		if (n + 1 >= cap) {
			pid_t *nv = realloc(v, (cap *= 2) * sizeof(*v));

			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
		}
		v[n++] = pid;
	}
	free(text);
	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	v[n] = 0;
	return v;
}

static int move_cpu(const syn__cg_t *cg, const char *rel, pid_t pid)
{
	char path[SYN_PATH_MAX * 3], val[24];

	if (cpu_file(cg, rel, "cgroup.procs", path, sizeof(path)) < 0)
		return -1;
	snprintf(val, sizeof(val), "%d", (int)pid);
	if (syn__cg_write_file(path, val, NULL, 0) < 0)
		return errno == ESRCH ? 0 : -1;
	return 1;
}

int syn__cg1_job_idle(const syn__cg_t *cg, const char *job_rel, int idle, char *err, size_t errlen)
{
	char lim[SYN_PATH_MAX * 2], path[SYN_PATH_MAX * 3], name[SYN_KEY_MAX + 48];
	char own[SYN_PATH_MAX * 2], home[SYN_PATH_MAX * 2], xrel[SYN_PATH_MAX * 2 + 64];
	pid_t *pids = NULL;
	int i, pass, moved = 0, k;

	if (idle_name(cg, job_rel, name, sizeof(name)) < 0)
		return syn_errbuf(err, errlen, EINVAL, "%s is not a job cgroup", job_rel);
	if (idle && (cpu_file(cg, "", "cgroup.procs", path, sizeof(path)) < 0 ||
		     access(path, F_OK) != 0))
		return syn_errbuf(err, errlen, ENOTSUP, "no cgroup v1 cpu hierarchy at %s/cpu",
				  syn__cg_mountpoint(cg));
	if (child_rel(job_rel, lim, sizeof(lim)) < 0 ||
	    syn__cg_path(cg, "cpuset", lim, "cgroup.procs", path, sizeof(path)) < 0)
		return syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s",
				  job_rel);
	pids = read_pids(path);
	if (!pids)
		return errno == ENOENT ? 0
				       : syn_errbuf(err, errlen, errno ? errno : EIO, "%s: %s",
						    path, strerror(errno));
	/* Where the job's processes are (the parent of ours if moved). */
	home[0] = '\0';
	for (i = 0; pids[i]; i++)
		if (cpu_path_of(pids[i], own, sizeof(own)) == 0)
			break;
	if (!pids[i]) {
		free(pids);
		return 0; /* nothing runs there (or no cpu hierarchy): nothing to move */
	}
	{
		const char *b = strrchr(own, '/');
		const char *base = b ? b + 1 : own;

		if (strcmp(base, name) == 0)
			snprintf(home, sizeof(home), "%.*s", b ? (int)(b - own) : 0, own);
		else
			snprintf(home, sizeof(home), "%s", own);
	}
	snprintf(xrel, sizeof(xrel), "%s%s%s", home, home[0] ? "/" : "", name);
	if (idle) {
		if (cpu_file(cg, xrel, NULL, path, sizeof(path)) < 0 ||
		    (mkdir(path, 0755) < 0 && errno != EEXIST)) {
			int e = errno;

			free(pids);
			return syn_errbuf(err, errlen, e == ENOENT ? ENOTSUP : e,
					  "cannot make cpu cgroup %s: %s", path, strerror(e));
		}
		if (cpu_file(cg, xrel, "cpu.idle", path, sizeof(path)) < 0 ||
		    syn__cg_write_file(path, "1", NULL, 0) < 0) {
			int e = errno;

			cpu_file(cg, xrel, NULL, path, sizeof(path));
			rmdir(path);
			free(pids);
			return syn_errbuf(err, errlen, ENOTSUP, "cannot set cpu.idle of %s: %s",
					  xrel, strerror(e));
		}
	} else {
		/* Move back what is in ours: its own list, not the job's. */
		free(pids);
		if (cpu_file(cg, xrel, "cgroup.procs", path, sizeof(path)) < 0 ||
		    !(pids = read_pids(path)))
			return errno == ENOENT ? 0
					       : syn_errbuf(err, errlen, errno ? errno : EIO,
							    "%s: %s", path, strerror(errno));
	}
	/* Processes forked meanwhile follow their parent's cgroup: walk again
	 * until a walk moves nothing. */
	for (pass = 0; pass < 8; pass++) {
		int n = 0;

		for (i = 0; pids[i]; i++) {
			if (idle && cpu_path_of(pids[i], own, sizeof(own)) == 0 &&
			    strcmp(own, xrel) == 0)
				continue;
			k = move_cpu(cg, idle ? xrel : home, pids[i]);
			if (k < 0) {
				int e = errno, bad = (int)pids[i];

				free(pids);
				return syn_errbuf(err, errlen, e ? e : EIO,
						  "moving pid %d to cpu cgroup /%s: %s", bad,
						  idle ? xrel : home, strerror(e));
			}
			n += k;
		}
		moved += n;
		free(pids);
		pids = NULL;
		if (n == 0)
			break;
		if ((idle ? syn__cg_path(cg, "cpuset", lim, "cgroup.procs", path, sizeof(path)) :
			    cpu_file(cg, xrel, "cgroup.procs", path, sizeof(path))) < 0 ||
		    !(pids = read_pids(path)))
			break;
	}
	free(pids);
	if (!idle && cpu_file(cg, xrel, NULL, path, sizeof(path)) == 0 && rmdir(path) < 0 &&
	    errno != ENOENT)
		return syn_errbuf(err, errlen, errno ? errno : EIO, "rmdir %s: %s", path,
				  strerror(errno));
	return moved;
}

/* Remove the idle cpu cgroup "name" wherever it is, at most depth levels
 * below dir. */
static void remove_idle(const char *dir, const char *name, int depth)
{
	char sub[SYN_PATH_MAX * 3];
	struct dirent *d;
	DIR *dp;

	if (depth < 0 || !(dp = opendir(dir)))
		return;
	while ((d = readdir(dp))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, d->d_name) >= sizeof(sub))
			continue;
		if (strcmp(d->d_name, name) == 0)
			rmdir(sub);
		else
			remove_idle(sub, name, depth - 1);
	}
	closedir(dp);
}

void syn__cg1_idle_cleanup(const syn__cg_t *cg, const char *job_rel)
{
	char name[SYN_KEY_MAX + 48], top[SYN_PATH_MAX * 3];

	if (idle_name(cg, job_rel, name, sizeof(name)) < 0 ||
	    cpu_file(cg, "", NULL, top, sizeof(top)) < 0)
		return;
	remove_idle(top, name, 4);
}
