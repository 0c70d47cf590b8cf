/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup.t: the cgroup layer (plugin/cgroup.c) on fake trees.
 *
 * Each case builds, under a temporary directory, the files a real kernel
 * and Slurm would show (v1: per-controller trees with slurm_<node> or
 * /slurm, uid_U/job_J and a synergy child; v2: the stepd scope, job_J,
 * step_S/user/task_T, cpuset.cpus(.effective), memory.max) and checks what
 * the layer reads, which paths it builds, and what it writes, in which
 * order. No root, no cgroup filesystem: the layer only reads and writes
 * files, so a plain directory tree stands in for one (a tree that is no
 * cgroup filesystem needs CgroupPlugin or its marker files to be detected).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tap.h"
#include "plugin/node/cgroup.h"
#include "plugin/shared/util.h"

#include "plugin/node/test/fake_tree.h"

static syn__cg_t *open_fake(const char *sub, const char *plugin, const char *root, char *err,
			    size_t errlen)
{
	char mnt[512];
	syn__cg_opts_t o;

	snprintf(mnt, sizeof(mnt), "%s/%s", top, sub);
	memset(&o, 0, sizeof(o));
	o.node = "n1";
	o.plugin = plugin;
	o.mountpoint = mnt;
	o.root = root;
	return syn__cg_open(&o, err, errlen);
}

static cpu_set_t set_of(const char *list)
{
	cpu_set_t s;

	if (syn_cpus_parse(list, &s) < 0)
		bail_out(list);
	return s;
}

/* A long CPU list through the layer (the list's grammar and formatting:
 * common/test/parse.c). */
static void test_cpu_lists(void)
{
	char *big, *text;
	cpu_set_t s, back;
	int i;

	/* A fragmented list of a large node: every other CPU up to 1022 is far
	 * longer than the 256-byte buffers that once truncated it. */
	CPU_ZERO(&s);
	for (i = 0; i < CPU_SETSIZE; i += 2)
		CPU_SET(i, &s);
	big = syn_cpus_format_alloc(&s);
	put("long/cpuset/slurm_n1/cpuset.cpus", big ? big : "");
	dir("long/memory");
	{
		char err[200];
		syn__cg_t *cg = open_fake("long", "cgroup/v1", NULL, err, sizeof(err));

		text = cg ? syn__cg_get_cpus_text(cg, "slurm_n1") : NULL;
		ok(text && big && strcmp(text, big) == 0,
		   "a long cpuset.cpus is read whole through the layer");
		ok(cg && syn__cg_get_cpus(cg, "slurm_n1", &back) == 0 && CPU_EQUAL(&back, &s),
		   "and as a set");
		free(text);
		syn__cg_close(cg);
	}
	free(big);
}

static void test_proc(void)
{
	static const char v1[] =
		"12:pids:/\n"
		"10:freezer:/slurm_c1a2n1/uid_0/job_42/step_batch\n"
		"7:cpuset:/slurm_c1a2n1/uid_0/job_42/step_batch\n"
		"5:cpu,cpuacct:/\n"
		"4:memory:/slurm_c1a2n1/uid_0/job_42/step_batch/task_0\n"
		"0::/\n";
	static const char v2[] =
		"0::/system.slice/n1_slurmstepd.scope/job_42/step_0/user/task_3\n";
	char out[128];

	ok(syn__cg_parse_proc(v1, "cpuset", 42, out, sizeof(out)) == 0 &&
	   strcmp(out, "slurm_c1a2n1/uid_0/job_42") == 0, "v1 cpuset job path");
	ok(syn__cg_parse_proc(v1, "memory", 42, out, sizeof(out)) == 0 &&
	   strcmp(out, "slurm_c1a2n1/uid_0/job_42") == 0, "v1 memory job path below a task");
	ok(syn__cg_parse_proc(v1, "cpuset", 4, out, sizeof(out)) == -1 && errno == ENOENT,
	   "job_4 is not a prefix match of job_42");
	ok(syn__cg_parse_proc(v1, "cpu", 42, out, sizeof(out)) == -1 && errno == ENOENT,
	   "controller without a job path");
	ok(syn__cg_parse_proc(v1, NULL, 42, out, sizeof(out)) == -1 && errno == ENOENT,
	   "hybrid: the unified line is not in the job");
	ok(syn__cg_parse_proc(v1, "cpuset", 42, out, 8) == -1 && errno == ENAMETOOLONG,
	   "short buffer");
	ok(syn__cg_parse_proc(v2, NULL, 42, out, sizeof(out)) == 0 &&
	   strcmp(out, "system.slice/n1_slurmstepd.scope/job_42") == 0, "v2 job path");
	ok(syn__cg_parse_proc(v2, "", 42, out, sizeof(out)) == 0, "\"\" is the unified line too");
	ok(syn__cg_parse_proc(v2, "cpuset", 42, out, sizeof(out)) == -1 && errno == ENOENT,
	   "v2 has no cpuset line");
	ok(syn__cg_parse_proc("1:cpuset:/slurm_x/uid_0/job_42\n", "cpuset", 42, out,
			      sizeof(out)) == 0 && strcmp(out, "slurm_x/uid_0/job_42") == 0,
	   "job path at the end of a line");
	/* Regression (tests/fuzz/crashes/spank-1): "//" must not give an
	 * absolute result. */
	ok(syn__cg_parse_proc("1:cpuset://job_42\n", "cpuset", 42, out, sizeof(out)) == 0 &&
	   strcmp(out, "job_42") == 0, "leading slashes are all skipped");
	ok(syn__cg_parse_proc("0::relative/job_42\n", NULL, 42, out, sizeof(out)) == -1,
	   "a relative path is refused");
	/* Issue 26: Slurm 26.05 names a job's directory by its SLUID. */
	ok(syn__cg_parse_proc("0::/system.slice/c0837n1_slurmstepd.scope/s72XM8G6TT4S00/"
			      "step_batch/user/task_0\n", NULL, 1, out, sizeof(out)) == 0 &&
	   strcmp(out, "system.slice/c0837n1_slurmstepd.scope/s72XM8G6TT4S00") == 0,
	   "26.05: a task's job directory by its SLUID");
	ok(syn__cg_parse_proc("0::/x.slice/n1_slurmstepd.scope/sEKNKTV3WPV500/step_0/slurm\n",
			      "", 7, out, sizeof(out)) == 0 &&
	   strcmp(out, "x.slice/n1_slurmstepd.scope/sEKNKTV3WPV500") == 0,
	   "26.05: slurmstepd's own (step_S/slurm), under CgroupSlice");
	ok(syn__cg_parse_proc("0::/system.slice/n1_slurmstepd.scope/job_7/step_0/slurm\n", NULL, 7,
			      out, sizeof(out)) == 0 &&
	   strcmp(out, "system.slice/n1_slurmstepd.scope/job_7") == 0,
	   "26.05 with CgroupJobIdPaths=yes: job_<id> as before");
	ok(syn__cg_parse_proc("0::/system.slice/n1_slurmstepd.scope/s72XM8G6TT4S00\n", NULL, 1,
			      out, sizeof(out)) == -1 && errno == ENOENT,
	   "a SLUID without a step below it is no job's task");
	ok(syn__cg_parse_proc("0::/system.slice/n1_slurmstepd.scope/slurmd\n", NULL, 1, out,
			      sizeof(out)) == -1 && errno == ENOENT, "slurmd's own cgroup is no job's");
	ok(syn__cg_parse_proc("0::/a/s72xm8g6tt4s00/step_0/user\n", NULL, 1, out, sizeof(out)) ==
	   -1 && errno == ENOENT, "a lower-case name is no SLUID");
	ok(syn__cg_parse_proc("7:cpuset:/a/s72XM8G6TT4S00/step_0\n", "cpuset", 1, out,
			      sizeof(out)) == -1 && errno == ENOENT,
	   "v1 lines are never named by SLUID");
	ok(syn__cg_parse_proc("0::/a/s72XM8G6TT4S00/step_0/user/task_0\n", NULL, 1, out, 10) ==
	   -1 && errno == ENAMETOOLONG, "short buffer (SLUID)");
}

static void test_slurm_conf(void)
{
	char path[512];
	syn__cg_slurm_conf_t sc;

	put("cgroup.conf", "# comment\nCgroupPlugin = cgroup/v2 # trailing\n"
	    "cgroupmountpoint=/cg\nConstrainCores=yes\nCgroupPrepend=/slurm_%n\n"
	    "CgroupSlice=batch.slice\nCgroupJobIdPaths=Yes\n");
	snprintf(path, sizeof(path), "%s/cgroup.conf", top);
	ok(syn__cg_read_slurm_conf(path, &sc) == 0, "cgroup.conf read");
	is_str(sc.plugin, "cgroup/v2", "CgroupPlugin, comments and spaces stripped");
	is_str(sc.mountpoint, "/cg", "CgroupMountpoint, key case-insensitive");
	is_str(sc.prepend, "/slurm_%n", "CgroupPrepend");
	is_str(sc.slice, "batch.slice", "CgroupSlice (Slurm 25.11+)");
	is_int(sc.job_id_paths, 1, "CgroupJobIdPaths=Yes (Slurm 26.05.2+)");
	put("cgroup2.conf", "CgroupJobIdPaths=perhaps\n");
	snprintf(path, sizeof(path), "%s/cgroup2.conf", top);
	ok(syn__cg_read_slurm_conf(path, &sc) == 0 && !sc.job_id_paths && !sc.slice[0],
	   "CgroupJobIdPaths not a boolean: no; no CgroupSlice: empty");
	snprintf(path, sizeof(path), "%s/none.conf", top);
	ok(syn__cg_read_slurm_conf(path, &sc) == -1 && errno == ENOENT && !sc.plugin[0],
	   "a missing cgroup.conf is ENOENT, all values empty");
}

static void test_open(void)
{
	char err[300];
	syn__cg_t *cg;

	dir("empty");
	cg = open_fake("empty", NULL, NULL, err, sizeof(err));
	ok(!cg && errno == ENOTSUP && strstr(err, "neither"), "no hierarchy: ENOTSUP (%s)", err);
	cg = open_fake("empty", "cgroup/v3", NULL, err, sizeof(err));
	ok(!cg && errno == ENOTSUP && strstr(err, "cgroup/v3"), "unknown CgroupPlugin named");
	put("v2bad/cgroup.controllers", "cpu io pids\n");
	cg = open_fake("v2bad", NULL, NULL, err, sizeof(err));
	ok(!cg && errno == ENOTSUP && strstr(err, "cpuset"),
	   "v2 without the cpuset controller: ENOTSUP naming it (%s)", err);
	dir("v1bad/cpuset");
	cg = open_fake("v1bad", "cgroup/v1", NULL, err, sizeof(err));
	ok(!cg && errno == ENOTSUP && strstr(err, "memory"), "v1 without memory: ENOTSUP");
	cg = open_fake("v1bad", "cgroup/v1", "../etc", err, sizeof(err));
	ok(!cg && errno == EINVAL, "a root with '..' refused");
	{
		syn__cg_opts_t o;

		memset(&o, 0, sizeof(o));
		o.node = "n1/../x";
		ok(!syn__cg_open(&o, err, sizeof(err)) && errno == EINVAL,
		   "a node name with '/' refused");
	}
}

typedef struct seen {
	char names[8][128];
	int n;
} seen_t;

static int note_job(uint32_t id, const char *rel, void *arg)
{
	seen_t *s = arg;

	if (s->n < 8)
		snprintf(s->names[s->n++], sizeof(s->names[0]), "%u:%s", (unsigned)id, rel);
	return 0;
}

static int note_node(const char *rel, const char *name, void *arg)
{
	seen_t *s = arg;

	if (s->n < 8)
		snprintf(s->names[s->n++], sizeof(s->names[0]), "%s:%s", name, rel);
	return 0;
}

static int has(const seen_t *s, const char *want)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->names[i], want) == 0)
			return 1;
	return 0;
}

/* A v1 node: /slurm layout (no multiple-slurmd), one job with a child. */
static void test_v1(void)
{
	char err[300], rel[512];
	syn__cg_t *cg;
	cpu_set_t s, allotted;
	uint64_t mem;
	seen_t seen;
	int n;

	put("v1/cpuset/slurm/cpuset.cpus", "0-7\n");
	put("v1/cpuset/slurm/uid_1000/cpuset.cpus", "0-7\n");
	put("v1/cpuset/slurm/uid_1000/job_7/cpuset.cpus", "0-1\n");
	put("v1/cpuset/slurm/uid_1000/job_7/cpuset.mems", "0\n");
	put("v1/cpuset/slurm/uid_1000/job_7/synergy/cpuset.cpus", "0-1\n");
	put("v1/cpuset/slurm/uid_1000/job_7/synergy/tasks", "");
	put("v1/cpuset/slurm/uid_1000/job_7/synergy/cgroup.procs", "");
	put("v1/cpuset/slurm/uid_0/job_9/cpuset.cpus", "2\n");
	put("v1/memory/slurm/uid_1000/job_7/memory.limit_in_bytes", "2147483648\n");
	put("v1/memory/slurm/uid_1000/job_7/synergy/memory.limit_in_bytes", "2147483648\n");
	put("v1/memory/slurm/uid_1000/job_7/synergy/cgroup.procs", "");
	cg = open_fake("v1", NULL, NULL, err, sizeof(err));
	ok(cg != NULL, "v1 detected from the tree (%s)", cg ? "" : err);
	if (!cg)
		return;
	is_int(syn__cg_version(cg), 1, "version 1");
	ok(syn__cg_node_path(cg, rel, sizeof(rel)) == 0, "node cgroup found");
	is_str(rel, "slurm", "the /slurm layout (slurm_n1 does not exist)");
	ok(syn__cg_job_path(cg, 7, 1000, rel, sizeof(rel)) == 0 &&
	   strcmp(rel, "slurm/uid_1000/job_7") == 0, "job path from the layout");
	ok(syn__cg_node_of_job(cg, "slurm/uid_1000/job_7", rel, sizeof(rel)) == 0 &&
	   strcmp(rel, "slurm") == 0, "node of a job");
	ok(syn__cg_node_of_job(cg, "slurm/job_7", rel, sizeof(rel)) == -1 && errno == EINVAL,
	   "a v2-looking path is not a v1 job");
	memset(&seen, 0, sizeof(seen));
	n = syn__cg_foreach_job(cg, "slurm", note_job, &seen);
	ok(n == 2 && has(&seen, "7:slurm/uid_1000/job_7") && has(&seen, "9:slurm/uid_0/job_9"),
	   "jobs of every uid listed (%d)", n);
	ok(syn__cg_job_has_limits(cg, "slurm/uid_1000/job_7") == 1, "job 7 has its child");
	ok(syn__cg_job_has_limits(cg, "slurm/uid_0/job_9") == 0, "job 9 has none");
	ok(syn__cg_get_mem(cg, "slurm/uid_1000/job_7", &mem) == 0 && mem == 2147483648ULL,
	   "memory.limit_in_bytes read");

	/* Lend 2-3: the uid dir covers, the job widens, then the child. */
	allotted = set_of("0-1");
	s = set_of("0-3");
	ok(syn__cg_job_set_cpus(cg, "slurm/uid_1000/job_7", &s, &allotted, err, sizeof(err)) == 0,
	   "widen job 7 to 0-3 (%s)", err);
	is_str(get("v1/cpuset/slurm/uid_1000/job_7/cpuset.cpus"), "0-3", "job cgroup widened");
	is_str(get("v1/cpuset/slurm/uid_1000/job_7/synergy/cpuset.cpus"), "0-3", "child widened");
	/* Take 3 back. (The order of the writes, child before job, is the
	 * kernel's to check: v1 refuses the other order with EBUSY, which the
	 * integration tests meet on a real node.) */
	s = set_of("0-2");
	ok(syn__cg_job_set_cpus(cg, "slurm/uid_1000/job_7", &s, &allotted, err, sizeof(err)) == 0,
	   "narrow job 7 to 0-2");
	is_str(get("v1/cpuset/slurm/uid_1000/job_7/synergy/cpuset.cpus"), "0-2", "child narrowed");
	is_str(get("v1/cpuset/slurm/uid_1000/job_7/cpuset.cpus"), "0-2", "job narrowed");
	{
		char path[600];

		/* A job cgroup that cannot be read is reported by its path. */
		snprintf(path, sizeof(path), "%s/v1/cpuset/slurm/uid_1000/job_7/cpuset.cpus", top);
		unlink(path);
		mkdir(path, 0755);
		ok(syn__cg_job_set_cpus(cg, "slurm/uid_1000/job_7", &s, &allotted, err,
					sizeof(err)) == -1 && strstr(err, "job_7"),
		   "an unreadable job cgroup is reported by its path (%s)", err);
		rmdir(path);
		put("v1/cpuset/slurm/uid_1000/job_7/cpuset.cpus", "0-2\n");
	}
	ok(syn__cg_job_set_cpus(cg, "slurm/uid_1000/job_7", &allotted, &allotted, err,
				sizeof(err)) == 0, "give every lent CPU back");
	is_str(get("v1/cpuset/slurm/uid_1000/job_7/cpuset.cpus"), "0-1", "job back to 0-1");
	is_str(get("v1/cpuset/slurm/uid_1000/job_7/synergy/cpuset.cpus"), "0-1", "child too");
	ok(syn__cg_job_set_mem(cg, "slurm/uid_1000/job_7", 1ULL << 30, err, sizeof(err)) == 0 &&
	   strcmp(get("v1/memory/slurm/uid_1000/job_7/synergy/memory.limit_in_bytes"),
		  "1073741824") == 0 &&
	   strcmp(get("v1/memory/slurm/uid_1000/job_7/memory.limit_in_bytes"), "1073741824") == 0,
	   "memory limit lowered on child and job");
	put("v1/cpuset/slurm/uid_1000/job_7/synergy/cgroup.procs", "4242\n");
	ok(syn__cg_job_cleanup(cg, "slurm/uid_1000/job_7", err, sizeof(err)) == -1 &&
	   errno == EBUSY, "a child with processes is not removed (EBUSY)");

	/* The epilog's job_gone: the job's directory and its user's, each only
	 * when empty, under Slurm's lock on the hierarchy's root; nothing but
	 * Slurm's uid_<u>/job_<j> shape. (Fake cgroups are plain directories:
	 * "empty" is "no file in it" here, "no process or child" on cgroupfs.) */
	{
		char root[600], jp[600];
		struct stat sb;
		int fd;

		dir("v1/cpuset/slurm/uid_2000/job_11");
		dir("v1/memory/slurm/uid_2000/job_11");
		dir("v1/cpuset/slurm/uid_2000/job_12/step_0");
		dir("v1/memory/slurm/uid_2000/job_12");
		dir("v1/cpuset/slurm/other/job_13");
		snprintf(root, sizeof(root), "%s/v1/cpuset", top);
		fd = open(root, O_RDONLY | O_DIRECTORY);
		ok(fd >= 0 && flock(fd, LOCK_EX) == 0, "a stand-in for slurmstepd holds the cpuset root's lock");
		ok(syn__cg_job_gone(cg, "slurm/uid_2000/job_11", 200, err, sizeof(err)) == -1 &&
		   errno == ETIMEDOUT && strstr(err, "v1/cpuset"),
		   "job_gone waits for Slurm's lock, not without bound, and names it (%s)", err);
		snprintf(jp, sizeof(jp), "%s/v1/cpuset/slurm/uid_2000/job_11", top);
		ok(stat(jp, &sb) == 0, "nothing removed in the hierarchy it could not lock");
		snprintf(jp, sizeof(jp), "%s/v1/memory/slurm/uid_2000/job_11", top);
		ok(stat(jp, &sb) == -1 && errno == ENOENT, "the other hierarchy's empty job directory went");
		if (fd >= 0)
			close(fd);
		ok(syn__cg_job_gone(cg, "slurm/uid_2000/job_11", 200, err, sizeof(err)) == 0,
		   "with the lock free, job_gone succeeds");
		snprintf(jp, sizeof(jp), "%s/v1/cpuset/slurm/uid_2000/job_11", top);
		ok(stat(jp, &sb) == -1 && errno == ENOENT, "the empty job directory went");
		snprintf(jp, sizeof(jp), "%s/v1/cpuset/slurm/uid_2000", top);
		ok(stat(jp, &sb) == 0, "the user's directory stays while another job of the user has one");
		ok(syn__cg_job_gone(cg, "slurm/uid_2000/job_12", 200, err, sizeof(err)) == 0,
		   "job_gone of a job whose step directory is still there");
		snprintf(jp, sizeof(jp), "%s/v1/cpuset/slurm/uid_2000/job_12/step_0", top);
		ok(stat(jp, &sb) == 0, "a job directory with a step in it stays");
		snprintf(jp, sizeof(jp), "%s/v1/memory/slurm/uid_2000", top);
		ok(stat(jp, &sb) == -1 && errno == ENOENT,
		   "where the job's directory was the user's last, the user's went too");
		ok(syn__cg_job_gone(cg, "slurm/other/job_13", 200, err, sizeof(err)) == 0 &&
		   syn__cg_job_gone(cg, "slurm/uid_x/job_13", 200, err, sizeof(err)) == 0 &&
		   syn__cg_job_gone(cg, "slurm/uid_2000/job_13x", 200, err, sizeof(err)) == 0 &&
		   syn__cg_job_gone(cg, "job_13", 200, err, sizeof(err)) == 0,
		   "paths not of Slurm's uid_<u>/job_<j> shape are ignored");
		snprintf(jp, sizeof(jp), "%s/v1/cpuset/slurm/other/job_13", top);
		ok(stat(jp, &sb) == 0, "and nothing of theirs removed");
	}
	syn__cg_close(cg);

	/* The admin's root wins over the layouts. */
	dir("v1/cpuset/site/n1");
	cg = open_fake("v1", "cgroup/v1", "/site/%n", err, sizeof(err));
	ok(cg && syn__cg_node_path(cg, rel, sizeof(rel)) == 0 && strcmp(rel, "site/n1") == 0,
	   "CgroupRoot=/site/%%n expands the node name");
	syn__cg_close(cg);
	/* multiple-slurmd's slurm_<node> is found before /slurm. */
	dir("v1/cpuset/slurm_n1");
	cg = open_fake("v1", "cgroup/v1", NULL, err, sizeof(err));
	ok(cg && syn__cg_node_path(cg, rel, sizeof(rel)) == 0 && strcmp(rel, "slurm_n1") == 0,
	   "slurm_<node> preferred when it exists");
	syn__cg_close(cg);
}

/* A v2 node as Slurm 22.05 lays it out with multiple-slurmd. */
static void test_v2(void)
{
	const char *sc = "v2/system.slice/n1_slurmstepd.scope";
	char err[300], rel[512], p[512];
	syn__cg_t *cg;
	cpu_set_t s, allotted;
	uint64_t mem;
	seen_t seen;

	put("v2/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	snprintf(p, sizeof(p), "%s/cpuset.cpus", sc);
	put(p, "\n");
	snprintf(p, sizeof(p), "%s/cpuset.cpus.effective", sc);
	put(p, "0-7\n");
	snprintf(p, sizeof(p), "%s/job_42/cpuset.cpus", sc);
	put(p, "0-3\n");
	snprintf(p, sizeof(p), "%s/job_42/memory.max", sc);
	put(p, "max\n");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/cpuset.cpus", sc);
	put(p, "0-1\n");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/memory.max", sc);
	put(p, "1073741824\n");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/task_0/cgroup.threads", sc);
	put(p, "");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/task_0/cpuset.cpus", sc);
	put(p, "\n");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/task_0/cpuset.cpus.effective", sc);
	put(p, "0-1\n");
	snprintf(p, sizeof(p), "%s/job_42/step_0/slurm/cgroup.threads", sc);
	put(p, "");
	snprintf(p, sizeof(p), "%s/job_42/step_batch/user/cpuset.cpus", sc);
	put(p, "0-3\n");
	snprintf(p, sizeof(p), "%s/job_42/step_batch/user/memory.max", sc);
	put(p, "max\n");
	snprintf(p, sizeof(p), "%s/job_43/cpuset.cpus", sc);
	put(p, "4\n");
	dir("v2/system.slice/slurmstepd.scope");
	dir("v2/system.slice/other.service");

	cg = open_fake("v2", NULL, NULL, err, sizeof(err));
	ok(cg != NULL, "v2 detected from cgroup.controllers (%s)", cg ? "" : err);
	if (!cg)
		return;
	is_int(syn__cg_version(cg), 2, "version 2");
	ok(syn__cg_node_path(cg, rel, sizeof(rel)) == 0 &&
	   strcmp(rel, "system.slice/n1_slurmstepd.scope") == 0, "the node's stepd scope");
	ok(syn__cg_job_path(cg, 42, 1000, rel, sizeof(rel)) == 0 &&
	   strcmp(rel, "system.slice/n1_slurmstepd.scope/job_42") == 0,
	   "a v2 job path has no uid level");
	ok(syn__cg_get_cpus(cg, "system.slice/n1_slurmstepd.scope", &s) == 0 && CPU_COUNT(&s) == 8,
	   "an empty cpuset.cpus falls back to cpuset.cpus.effective");
	memset(&seen, 0, sizeof(seen));
	ok(syn__cg_foreach_job(cg, "system.slice/n1_slurmstepd.scope", note_job, &seen) == 2 &&
	   has(&seen, "42:system.slice/n1_slurmstepd.scope/job_42") &&
	   has(&seen, "43:system.slice/n1_slurmstepd.scope/job_43"), "both jobs listed");
	memset(&seen, 0, sizeof(seen));
	ok(syn__cg_foreach_node(cg, note_node, &seen) == 2 &&
	   has(&seen, "n1:system.slice/n1_slurmstepd.scope") &&
	   has(&seen, "n1:system.slice/slurmstepd.scope"), "both scope layouts listed as nodes");
	ok(syn__cg_job_has_limits(cg, "system.slice/n1_slurmstepd.scope/job_42") == 1,
	   "job 42 has step user cgroups");
	ok(syn__cg_job_has_limits(cg, "system.slice/n1_slurmstepd.scope/job_43") == 0,
	   "job 43 has none");
	ok(syn__cg_job_limit_cpus(cg, "system.slice/n1_slurmstepd.scope/job_42", &s) == 1 &&
	   CPU_EQUAL(&s, &(cpu_set_t){ 0 }) == 0 && CPU_COUNT(&s) == 4,
	   "limit CPUs: union of the steps' user cgroups");

	/* Lend 4-5 to job 42: job first, then every step's user cgroup gains. */
	allotted = set_of("0-3");
	s = set_of("0-5");
	ok(syn__cg_job_set_cpus(cg, "system.slice/n1_slurmstepd.scope/job_42", &s, &allotted, err,
				sizeof(err)) == 0, "widen job 42 (%s)", err);
	snprintf(p, sizeof(p), "%s/job_42/cpuset.cpus", sc);
	is_str(get(p), "0-5", "job widened");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/cpuset.cpus", sc);
	is_str(get(p), "0-1,4-5", "a step keeps its own CPUs and gains the lent ones");
	snprintf(p, sizeof(p), "%s/job_42/step_batch/user/cpuset.cpus", sc);
	is_str(get(p), "0-5", "the batch step too");
	/* Take 4-5 and 1 back (a shrink below the allotment falls back). */
	s = set_of("0,2-3");
	ok(syn__cg_job_set_cpus(cg, "system.slice/n1_slurmstepd.scope/job_42", &s, &allotted, err,
				sizeof(err)) == 0, "narrow job 42");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/cpuset.cpus", sc);
	is_str(get(p), "0", "step 0 keeps what it had of the target");
	snprintf(p, sizeof(p), "%s/job_42/cpuset.cpus", sc);
	is_str(get(p), "0,2-3", "job narrowed");
	/* A step that vanished mid-operation is skipped, not an error. */
	snprintf(p, sizeof(p), "%s/%s/job_42/step_batch", top, sc);
	rm_rf(p);
	s = set_of("0-3");
	ok(syn__cg_job_set_cpus(cg, "system.slice/n1_slurmstepd.scope/job_42", &s, &allotted, err,
				sizeof(err)) == 0, "a step gone meanwhile is skipped");
	ok(syn__cg_job_set_mem(cg, "system.slice/n1_slurmstepd.scope/job_42", 3ULL << 30, err,
			       sizeof(err)) == 0, "raise the memory limit");
	snprintf(p, sizeof(p), "%s/job_42/memory.max", sc);
	is_str(get(p), "3221225472", "memory.max of the job");
	snprintf(p, sizeof(p), "%s/job_42/step_0/user/memory.max", sc);
	is_str(get(p), "3221225472", "and of the step's user cgroup");
	ok(syn__cg_job_set_mem(cg, "system.slice/n1_slurmstepd.scope/job_42", UINT64_MAX, err,
			       sizeof(err)) == 0 &&
	   syn__cg_get_mem(cg, "system.slice/n1_slurmstepd.scope/job_42", &mem) == 0 &&
	   mem == UINT64_MAX, "no limit is written and read as 'max'");
	ok(syn__cg_job_cleanup(cg, "system.slice/n1_slurmstepd.scope/job_42", err,
			       sizeof(err)) == 0, "v2 cleanup has nothing of ours to remove");
	syn__cg_close(cg);
	cg = open_fake("v2", "cgroup/v1", NULL, err, sizeof(err));
	ok(!cg && errno == ENOTSUP, "CgroupPlugin=cgroup/v1 on a v2 tree: ENOTSUP");
}

/*
 * Issue 26: what Slurm 23.02 to 26.05 change in the v2 tree: PID 1's
 * parent before the slice (a slurmd in a container), CgroupSlice (25.11),
 * the job's SLUID as its directory name (26.05).
 */
static void test_v2_layouts(void)
{
	const char *pod = "docker.slice/docker-ab12.scope";
	char err[300], rel[512], p[600], job[1024];
	syn__cg_opts_t o;
	syn__cg_t *cg;
	seen_t seen;
	char mnt[512];
	int i;

	snprintf(mnt, sizeof(mnt), "%s/v2l", top);
	put("v2l/cgroup.controllers", "cpuset cpu memory pids\n");
	/* 26.05 in a container, CgroupSlice=batch.slice: one job by SLUID,
	 * one by job_<id> (CgroupJobIdPaths before a reconfigure), slurmd. */
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/cpuset.cpus.effective", pod);
	put(p, "0-7\n");
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/sEKNKTV3WPV500/cpuset.cpus",
		 pod);
	put(p, "2-3\n");
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/sEKNKTV3WPV500/step_0/"
		 "user/cpuset.cpus", pod);
	put(p, "2-3\n");
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/job_9/cpuset.cpus", pod);
	put(p, "4\n");
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/slurmd", pod);
	dir(p);
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/system", pod);
	dir(p);
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n1_slurmstepd.scope/sEKNKTV3WPV5", pod);
	dir(p);
	snprintf(p, sizeof(p), "v2l/%s/batch.slice/n2_slurmstepd.scope", pod);
	dir(p);
	/* A 22.05 slurmd of another node in the same tree ignores PID 1. */
	dir("v2l/batch.slice/n3_slurmstepd.scope");

	memset(&o, 0, sizeof(o));
	o.node = "n1";
	o.mountpoint = mnt;
	o.slice = "batch.slice";
	o.init_cgroup = "/docker.slice/docker-ab12.scope/init.scope";
	cg = syn__cg_open(&o, err, sizeof(err));
	ok(cg != NULL, "v2 with CgroupSlice and PID 1 in a container (%s)", cg ? "" : err);
	if (!cg)
		return;
	is_str(syn__cg_slice(cg), "batch.slice", "the slice is CgroupSlice's");
	is_str(syn__cg_init_cgroup(cg), "/docker.slice/docker-ab12.scope/init.scope",
	       "PID 1's cgroup");
	is_str(syn__cg_init_prefix(cg), pod, "its parent is the prefix (Slurm 23.02.1+)");
	snprintf(p, sizeof(p), "%s/batch.slice/n1_slurmstepd.scope", pod);
	ok(syn__cg_node_path(cg, rel, sizeof(rel)) == 0 && strcmp(rel, p) == 0,
	   "the node's scope under the prefix and the slice: %s", rel);
	for (i = 0; syn__cg_node_candidate(cg, i, rel, sizeof(rel)) == 0; i++)
		diag("candidate %d: %s", i, rel);
	is_int(i, 4, "four candidates: with and without the prefix, multiple-slurmd or not");
	ok(syn__cg_node_candidate(cg, 2, rel, sizeof(rel)) == 0 &&
	   strcmp(rel, "batch.slice/n1_slurmstepd.scope") == 0,
	   "the third is 22.05's, at the mount's root");
	memset(&seen, 0, sizeof(seen));
	snprintf(p, sizeof(p), "%s/batch.slice/n1_slurmstepd.scope", pod);
	ok(syn__cg_foreach_job(cg, p, note_job, &seen) == 2, "two jobs listed (%d)", seen.n);
	snprintf(job, sizeof(job), "0:%s/sEKNKTV3WPV500", p);
	ok(has(&seen, job), "the SLUID directory with job id 0, for the caller to map");
	snprintf(job, sizeof(job), "9:%s/job_9", p);
	ok(has(&seen, job), "job_9 with its id; slurmd, system and a short name are no jobs");
	snprintf(job, sizeof(job), "%s/sEKNKTV3WPV500", p);
	ok(syn__cg_job_sluid(job, rel, sizeof(rel)) == 0 && strcmp(rel, "sEKNKTV3WPV500") == 0,
	   "the SLUID of a job cgroup");
	ok(syn__cg_job_sluid("a/job_9", rel, sizeof(rel)) == -1 && errno == ENOENT,
	   "job_9 has none");
	ok(syn__cg_node_of_job(cg, job, rel, sizeof(rel)) == 0 && strcmp(rel, p) == 0,
	   "the node of a SLUID job");
	ok(syn__cg_job_limit_cpus(cg, job, &(cpu_set_t){ 0 }) == 1,
	   "its step's user cgroup is a limit cgroup");
	memset(&seen, 0, sizeof(seen));
	ok(syn__cg_foreach_node(cg, note_node, &seen) == 3, "three nodes (%d)", seen.n);
	snprintf(job, sizeof(job), "n2:%s/batch.slice/n2_slurmstepd.scope", pod);
	ok(has(&seen, job) && has(&seen, "n3:batch.slice/n3_slurmstepd.scope"),
	   "under the prefix and at the root");
	syn__cg_close(cg);

	/* A host: PID 1 in /init.scope or in the root; default slice. */
	o.slice = NULL;
	o.init_cgroup = "/init.scope";
	cg = syn__cg_open(&o, err, sizeof(err));
	ok(cg && !syn__cg_init_prefix(cg)[0] && strcmp(syn__cg_slice(cg), "system.slice") == 0,
	   "PID 1 in /init.scope: no prefix, system.slice");
	ok(cg && syn__cg_node_path(cg, rel, sizeof(rel)) == -1 && errno == ENOENT &&
	   strcmp(rel, "system.slice/n1_slurmstepd.scope") == 0,
	   "no scope there yet: ENOENT and the first candidate");
	for (i = 0; cg && syn__cg_node_candidate(cg, i, rel, sizeof(rel)) == 0; i++)
		;
	is_int(i, 2, "two candidates without a prefix");
	syn__cg_close(cg);
	o.init_cgroup = "/";
	cg = syn__cg_open(&o, err, sizeof(err));
	ok(cg && !syn__cg_init_prefix(cg)[0] && strcmp(syn__cg_init_cgroup(cg), "/") == 0,
	   "PID 1 in the root cgroup: no prefix");
	syn__cg_close(cg);
	o.slice = "../etc";
	ok(!syn__cg_open(&o, err, sizeof(err)) && errno == EINVAL && strstr(err, "CgroupSlice"),
	   "a CgroupSlice with '..' is refused (%s)", err);
	o.slice = "/abs.slice";
	ok(!syn__cg_open(&o, err, sizeof(err)) && errno == EINVAL, "so is an absolute one");
}

/* Write text into /sys/fs/cgroup/<rel>; 0 or -1. */
static int cg_put(const char *rel, const char *text)
{
	char path[600];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", rel);
	if (!(f = fopen(path, "w")))
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) == 0 ? rc : -1;
}

/* mkdir /sys/fs/cgroup/<ctl>/<rel>, a cpuset one given its parent's CPUs
 * and memory nodes (a v1 cpuset starts with none). */
static int cg_mkdir(const char *ctl, const char *rel, const char *cpus, const char *mems)
{
	char path[600];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s", ctl, rel);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	if (strcmp(ctl, "cpuset") != 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s/cpuset.cpus", ctl, rel);
	if (cg_put(path, cpus) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s/cpuset.mems", ctl, rel);
	return cg_put(path, mems);
}

static int cg_exists(const char *ctl, const char *rel)
{
	char path[600];
	struct stat sb;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s", ctl, rel);
	return stat(path, &sb) == 0;
}

/*
 * On the kernel's own v1 cgroupfs (root, a v1 cpuset and memory hierarchy:
 * skipped elsewhere): the job's synergy child goes right after its last
 * process is killed and reaped, when rmdir can still be refused for a
 * moment; the epilog's job_gone then takes what Slurm's last step could
 * not: the job's directory, and the user's where it was the last.
 */
static void test_v1_real(void)
{
	const char *ctls[] = { "cpuset", "memory" };
	char base[64], rel[300], err[300], cpus[256] = "", mems[64] = "";
	syn__cg_opts_t o;
	syn__cg_t *cg = NULL;
	struct stat sb;
	FILE *f;
	size_t i;
	pid_t pid;
	int bad = 0;

	if (geteuid() != 0 || stat("/sys/fs/cgroup/cpuset/cpuset.cpus", &sb) != 0 ||
	    stat("/sys/fs/cgroup/memory/memory.limit_in_bytes", &sb) != 0) {
		skip(11, "real v1 cgroups: needs root and v1 cpuset and memory hierarchies");
		return;
	}
	if ((f = fopen("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "r"))) {
		if (!fgets(cpus, sizeof(cpus), f))
			cpus[0] = '\0';
		fclose(f);
	}
	if ((f = fopen("/sys/fs/cgroup/cpuset/cpuset.effective_mems", "r"))) {
		if (!fgets(mems, sizeof(mems), f))
			mems[0] = '\0';
		fclose(f);
	}
	snprintf(base, sizeof(base), "syncgt_%d", (int)getpid());
	for (i = 0; i < 2; i++) {
		const char *parts[] = { "", "/uid_0", "/uid_0/job_1", "/uid_0/job_1/synergy" };
		size_t k;

		for (k = 0; k < 4; k++) {
			snprintf(rel, sizeof(rel), "%s%s", base, parts[k]);
			bad |= cg_mkdir(ctls[i], rel, cpus, mems) < 0;
		}
	}
	/* Another job of the same user, with a step still there (cpuset). */
	snprintf(rel, sizeof(rel), "%s/uid_0/job_2", base);
	bad |= cg_mkdir("cpuset", rel, cpus, mems) < 0;
	snprintf(rel, sizeof(rel), "%s/uid_0/job_2/step_0", base);
	bad |= cg_mkdir("cpuset", rel, cpus, mems) < 0;
	memset(&o, 0, sizeof(o));
	o.node = "n1";
	o.plugin = "cgroup/v1";
	o.mountpoint = "/sys/fs/cgroup";
	snprintf(rel, sizeof(rel), "/%s", base);
	o.root = rel;
	err[0] = '\0';
	if (!bad)
		cg = syn__cg_open(&o, err, sizeof(err));
	ok(!bad && cg, "a job with a synergy child made on the real cgroupfs (%s)", bad ? strerror(errno) : cg ? "" : err);
	if (cg) {
		char procs[400], num[32];

		pid = fork();
		if (pid == 0) {
			pause();
			_exit(0);
		}
		snprintf(num, sizeof(num), "%d\n", (int)pid);
		for (i = 0; i < 2; i++) {
			snprintf(procs, sizeof(procs), "%s/%s/uid_0/job_1/synergy/cgroup.procs", ctls[i], base);
			bad |= cg_put(procs, num) < 0;
		}
		ok(!bad, "a process in the child, both hierarchies");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		err[0] = '\0';
		snprintf(rel, sizeof(rel), "%s/uid_0/job_1", base);
		ok(syn__cg_job_cleanup(cg, rel, err, sizeof(err)) == 0,
		   "killed and reaped: the child goes at once (%s)", err);
		snprintf(rel, sizeof(rel), "%s/uid_0/job_1/synergy", base);
		ok(!cg_exists("cpuset", rel) && !cg_exists("memory", rel), "in both hierarchies");
		snprintf(rel, sizeof(rel), "%s/uid_0/job_1", base);
		ok(syn__cg_job_gone(cg, rel, 2000, err, sizeof(err)) == 0, "job_gone (%s)", err);
		ok(!cg_exists("cpuset", rel) && !cg_exists("memory", rel),
		   "the job's empty directory went in both");
		snprintf(rel, sizeof(rel), "%s/uid_0", base);
		ok(cg_exists("cpuset", rel) && !cg_exists("memory", rel),
		   "the user's stays where another job is (cpuset), goes where not (memory)");
		snprintf(rel, sizeof(rel), "%s/uid_0/job_2", base);
		ok(syn__cg_job_gone(cg, rel, 2000, err, sizeof(err)) == 0 && cg_exists("cpuset", rel),
		   "a job with a step's cgroup in it stays (rmdir refuses it, without retrying)");
		/* Any user can open the hierarchy's root and flock it (no write
		 * permission needed): another user holding Slurm's lock makes
		 * the epilog give up within its bound, naming the lock, and
		 * remove nothing; once let go, the job's directory goes. */
		snprintf(rel, sizeof(rel), "%s/uid_0/job_3", base);
		bad = cg_mkdir("cpuset", rel, cpus, mems) < 0;
		{
			int go[2], held[2];
			char c = 0;

			if (pipe(go) < 0 || pipe(held) < 0)
				bail_out("pipe");
			pid = fork();
			if (pid == 0) {
				int fd;

				close(go[1]);
				close(held[0]);
				if (setgid(65534) < 0 || setuid(65534) < 0 || getuid() != 65534)
					_exit(1);
				fd = open("/sys/fs/cgroup/cpuset", O_RDONLY | O_DIRECTORY);
				if (fd < 0 || flock(fd, LOCK_EX) < 0)
					_exit(1);
				if (write(held[1], "x", 1) != 1)
					_exit(1);
				(void)!read(go[0], &c, 1);   /* until the parent lets go */
				_exit(0);
			}
			close(go[0]);
			close(held[1]);
			ok(!bad && pid > 0 && read(held[0], &c, 1) == 1,
			   "user 65534 (nobody) opened the cpuset root and holds its flock");
			err[0] = '\0';
			ok(syn__cg_job_gone(cg, rel, 300, err, sizeof(err)) == -1 && errno == ETIMEDOUT &&
			   strstr(err, "/sys/fs/cgroup/cpuset") && cg_exists("cpuset", rel),
			   "job_gone gives up within its bound, names the lock, removes nothing (%s)", err);
			close(go[1]);
			if (pid > 0)
				waitpid(pid, NULL, 0);
			close(held[0]);
			ok(syn__cg_job_gone(cg, rel, 2000, err, sizeof(err)) == 0 && !cg_exists("cpuset", rel),
			   "once it let go, the job's empty directory goes");
		}
		syn__cg_close(cg);
	} else {
		skip(10, "no job made");
	}
	/* Whatever is left, children first. */
	for (i = 0; i < 2; i++) {
		const char *parts[] = { "/uid_0/job_1/synergy", "/uid_0/job_1", "/uid_0/job_2/step_0",
					"/uid_0/job_2", "/uid_0/job_3", "/uid_0", "" };
		size_t k;
		char path[600];

		for (k = 0; k < 7; k++) {
			snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s%s", ctls[i], base, parts[k]);
			rmdir(path);
		}
	}
}

int main(void)
{
	fake_tree_init("cgroup-t");
	test_cpu_lists();
	test_proc();
	test_slurm_conf();
	test_open();
	test_v1();
	test_v1_real();
	test_v2();
	test_v2_layouts();
	rm_rf(top);
	return done_testing();
}
