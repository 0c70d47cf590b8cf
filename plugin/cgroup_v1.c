/*
 * cgroup_v1.c: the cgroup v1 backend of cgroup.h, through libcgroup.
 *
 * The child gets the cpuset and memory controllers only: proctrack/cgroup
 * keeps tracking (and killing) the job through the freezer hierarchy, which
 * we leave alone. cpuset.mems is copied from the job's cgroup because a v1
 * cpuset with empty mems refuses tasks. libcgroup is initialised once per
 * process (slurmstepd loads us once per step). The cpuset helpers for
 * idle-core lending write the control files directly, one write(2) per
 * change, so that the kernel's own rule (a parent covers its children)
 * decides whether a change is allowed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libcgroup.h>

#include "cgroup.h"
#include "util.h"

static int cg_ready;

static int cg_init(char *err, size_t errlen)
{
	int rc;

	if (cg_ready)
		return 0;
	rc = cgroup_init();
	if (rc) {
		snprintf(err, errlen, "cgroup_init: %s", cgroup_strerror(rc));
		errno = EIO;
		return -1;
	}
	cg_ready = 1;
	return 0;
}

static int child_path(const char *job_rel, char *buf, size_t len, char *err, size_t errlen)
{
	if ((size_t)snprintf(buf, len, "%s/%s", job_rel, SYN__CG_CHILD) >= len) {
		snprintf(err, errlen, "cgroup path too long: %.80s", job_rel);
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* libcgroup's handle of job_rel's synergy child (its path into path) with
 * the cpuset and memory controllers added, or NULL with err and errno. */
static struct cgroup *child_cgroup(const char *job_rel, char *path, size_t len,
				   struct cgroup_controller **cs, struct cgroup_controller **mem,
				   char *err, size_t errlen)
{
	struct cgroup *cg;

	if (cg_init(err, errlen) < 0 || child_path(job_rel, path, len, err, errlen) < 0)
		return NULL;
	cg = cgroup_new_cgroup(path);
	if (!cg || !(*cs = cgroup_add_controller(cg, "cpuset")) ||
	    !(*mem = cgroup_add_controller(cg, "memory"))) {
		snprintf(err, errlen, "cgroup_new_cgroup(%s) failed", path);
		if (cg)
			cgroup_free(&cg);
		errno = ENOMEM;
		return NULL;
	}
	return cg;
}

/* Read a one-line control file of job_rel in controller ctl into buf. */
static int read_value(const char *ctl, const char *job_rel, const char *file,
		      char *buf, size_t len)
{
	char path[512];
	FILE *f;
	int rv = -1;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s/%s", ctl, job_rel, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, (int)len, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		rv = 0;
	}
	fclose(f);
	return rv;
}

int syn__cg_create(const char *job_rel, const char *cpus, uint64_t mem_bytes,
		   char *err, size_t errlen)
{
	struct cgroup *cg = NULL;
	struct cgroup_controller *cs, *mem;
	char path[400], mems[64];
	int rc, rv = -1;

	cg = child_cgroup(job_rel, path, sizeof(path), &cs, &mem, err, errlen);
	if (!cg)
		goto out;
	if (read_value("cpuset", job_rel, "cpuset.mems", mems, sizeof(mems)) < 0 || !mems[0]) {
		snprintf(err, errlen, "cannot read cpuset.mems of %s", job_rel);
		errno = ENOENT;
		goto out;
	}
	/* mems before cpus: the kernel wants both set before tasks join. */
	rc = cgroup_set_value_string(cs, "cpuset.mems", mems);
	if (!rc)
		rc = cgroup_set_value_string(cs, "cpuset.cpus", cpus);
	if (!rc && mem_bytes)
		rc = cgroup_set_value_uint64(mem, "memory.limit_in_bytes", mem_bytes);
	if (rc) {
		snprintf(err, errlen, "setting values of %s: %s", path, cgroup_strerror(rc));
		errno = EINVAL;
		goto out;
	}
	/* ignore_ownership=0: root owns it; the job can read but not change it. */
	rc = cgroup_create_cgroup(cg, 0);
	if (rc) {
		snprintf(err, errlen, "creating %s: %s", path, cgroup_strerror(rc));
		errno = EIO;
		goto out;
	}
	rv = 0;
out:
	if (cg)
		cgroup_free(&cg);
	return rv;
}

int syn__cg_attach(const char *job_rel, pid_t pid, char *err, size_t errlen)
{
	struct cgroup *cg = NULL;
	struct cgroup_controller *cs, *mem;
	char path[400];
	int rc, rv = -1;

	cg = child_cgroup(job_rel, path, sizeof(path), &cs, &mem, err, errlen);
	if (!cg)
		goto out;
	rc = cgroup_attach_task_pid(cg, pid);
	if (rc) {
		snprintf(err, errlen, "attaching pid %d to %s: %s", (int)pid, path,
			 cgroup_strerror(rc));
		errno = EIO;
		goto out;
	}
	rv = 0;
out:
	if (cg)
		cgroup_free(&cg);
	return rv;
}

/* 1 if the child's tasks file in controller ctl lists a process. */
static int has_tasks(const char *ctl, const char *path)
{
	char buf[32];

	if (read_value(ctl, path, "tasks", buf, sizeof(buf)) < 0)
		return 0;
	return buf[0] != '\0';
}

int syn__cg_exists(const char *job_rel)
{
	char path[512];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/%s", job_rel, SYN__CG_CHILD);
	return access(path, F_OK) == 0;
}

int syn__cg_remove(const char *job_rel, char *err, size_t errlen)
{
	static const char *const ctls[] = { "cpuset", "memory" };
	char path[400], dir[512];
	size_t i;
	int rv = -1;

	if (child_path(job_rel, path, sizeof(path), err, errlen) < 0)
		goto out;
	for (i = 0; i < sizeof(ctls) / sizeof(ctls[0]); i++) {
		if (has_tasks(ctls[i], path)) {
			snprintf(err, errlen, "%s/%s still has tasks", ctls[i], path);
			errno = EBUSY;
			goto out;
		}
	}
	/* rmdir directly: libcgroup's delete would migrate stray tasks to the
	 * parent, and an empty v1 cgroup needs nothing but rmdir. */
	for (i = 0; i < sizeof(ctls) / sizeof(ctls[0]); i++) {
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s/%s", ctls[i], path);
		if (rmdir(dir) < 0 && errno != ENOENT) {
			snprintf(err, errlen, "rmdir %s: %s", dir, strerror(errno));
			goto out;
		}
	}
	rv = 0;
out:
	return rv;
}

/* 1 if pid's freezer cgroup is <...>/job_<jobid>/<step_dir> or below it. */
static int pid_in_step(pid_t pid, uint32_t jobid, const char *step_dir)
{
	char path[64], line[512], want[128];
	FILE *f;
	int rv = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	snprintf(want, sizeof(want), "/job_%u/%s", (unsigned)jobid, step_dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *c = strstr(line, ":freezer:"), *hit;

		if (!c)
			continue;
		line[strcspn(line, "\n")] = '\0';
		hit = strstr(c, want);
		if (hit && (hit[strlen(want)] == '\0' || hit[strlen(want)] == '/'))
			rv = 1;
		break;
	}
	fclose(f);
	return rv;
}

static int write_pid(const char *ctl, const char *rel, pid_t pid)
{
	char path[512];
	FILE *f;
	int rv;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s/cgroup.procs", ctl, rel);
	f = fopen(path, "we");
	if (!f)
		return -1;
	rv = fprintf(f, "%d\n", (int)pid) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rv = -1;
	return rv;
}

int syn__cg_evict_step(const char *job_rel, uint32_t jobid, const char *step_dir,
		       char *err, size_t errlen)
{
	char path[512];
	FILE *f;
	long pid;
	int moved = 0;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/%s/cgroup.procs", job_rel,
		 SYN__CG_CHILD);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		return -1;
	}
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid <= 0 || !pid_in_step((pid_t)pid, jobid, step_dir))
			continue;
		/* A process that exits meanwhile is fine: ESRCH is ignored. */
		if ((write_pid("cpuset", job_rel, (pid_t)pid) < 0 && errno != ESRCH) ||
		    (write_pid("memory", job_rel, (pid_t)pid) < 0 && errno != ESRCH)) {
			snprintf(err, errlen, "moving pid %ld back to %s: %s", pid, job_rel,
				 strerror(errno));
			fclose(f);
			return -1;
		}
		moved++;
	}
	fclose(f);
	return moved;
}

int syn__cg_get_cpus(const char *rel, char *buf, size_t len)
{
	if (read_value("cpuset", rel, "cpuset.cpus", buf, len) < 0) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}

int syn__cg_set_cpus(const char *rel, const char *cpus, char *err, size_t errlen)
{
	char path[512];
	int fd, rv = -1;
	size_t n = strlen(cpus);

	if ((size_t)snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/cpuset.cpus", rel) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		snprintf(err, errlen, "cgroup path too long: %.80s", rel);
		return -1;
	}
	/* One write(2): the kernel applies the whole list or refuses it. */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		goto out;
	}
	if (write(fd, cpus, n) != (ssize_t)n) {
		snprintf(err, errlen, "writing '%s' to %s: %s", cpus, path, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	return rv;
}

int syn__cg_pin_tasks(const char *rel, const void *cpu_set, size_t setsize)
{
	char path[512];
	FILE *f;
	long tid;
	int n = 0;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/tasks", rel);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%ld", &tid) == 1) {
		if (tid > 0 && sched_setaffinity((pid_t)tid, setsize, (const cpu_set_t *)cpu_set) == 0)
			n++;
	}
	fclose(f);
	return n;
}

/* "prefix<digits>" -> 1 and the number, else 0. */
static int numbered(const char *name, const char *prefix, uint32_t *out)
{
	size_t plen = strlen(prefix);
	uint64_t v;

	if (strncmp(name, prefix, plen) != 0 || syn__parse_u64(name + plen, 0, UINT32_MAX, &v) < 0)
		return 0;
	*out = (uint32_t)v;
	return 1;
}

int syn__cg_foreach_job(const char *node_rel,
			int (*fn)(uint32_t jobid, const char *job_rel, void *arg), void *arg)
{
	char path[512], rel[512];
	DIR *top = NULL, *ud;
	struct dirent *u, *j;
	uint32_t num;
	int count = 0, stop = 0;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s", node_rel);
	top = opendir(path);
	if (!top)
		return -1;
	while (!stop && (u = readdir(top))) {
		if (!numbered(u->d_name, "uid_", &num))
			continue;
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/%s", node_rel, u->d_name);
		ud = opendir(path);
		if (!ud)
			continue;
		while (!stop && (j = readdir(ud))) {
			if (!numbered(j->d_name, "job_", &num))
				continue;
			if ((size_t)snprintf(rel, sizeof(rel), "%s/%s/%s", node_rel, u->d_name,
					     j->d_name) >= sizeof(rel))
				continue;
			count++;
			stop = fn(num, rel, arg);
		}
		closedir(ud);
	}
	closedir(top);
	return count;
}
