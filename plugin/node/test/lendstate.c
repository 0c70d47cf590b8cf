/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lendstate.t: idle-core lending's state layer (syn__lend_rebalance) on a
 * fake cgroup v1 tree and a real StateDir (issue 12): a newcomer's CPUs are
 * taken back from a borrower; when writing the newcomer's record fails,
 * every job is shrunk back to its allotment before the call gives up
 * (fail-safe); a job cgroup left without a record (a job whose slurmstepd
 * was killed) loses the CPUs Slurm allotted to a recorded job; and nothing
 * is read from a profile store under the lock; a job profiling in place
 * (issue 17) is lent the idle cores for its search and gives them back;
 * the jobs of a coordinated-prep group (issue 15) are lent one job's prep
 * cores between them, not one job's each. On a fake cgroup v2 tree of
 * Slurm 26.05 (issue 26), whose job directories are named by SLUID: the
 * first step records its job's SLUID, by which later calls know the job
 * (it is lent to), while a SLUID directory no record names is a job
 * without a record (never lent to, its CPUs never lent to others).
 * StateDir must be root's, so without root the file is skipped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "plugin/node/test/fake_tree.h"
#include "plugin/node/cgroup.h"
#include "plugin/shared/jobrec.h"
#include "plugin/node/lend.h"
#include "common/store.h"

static char state[600];
static int errors;
static char lastmsg[600], allmsg[8192];

static void logf_(int is_error, const char *msg, void *arg)
{
	size_t n = strlen(allmsg);

	(void)arg;
	if (is_error)
		errors++;
	snprintf(lastmsg, sizeof(lastmsg), "%s", msg);
	snprintf(allmsg + n, sizeof(allmsg) - n, "%s|", msg);
}

static void job(const char *id, const char *cpus, int child)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "mnt/cpuset/slurm_n1/uid_0/job_%s/cpuset.cpus", id);
	put(rel, cpus);
	snprintf(rel, sizeof(rel), "mnt/cpuset/slurm_n1/uid_0/job_%s/cpuset.mems", id);
	put(rel, "0");
	if (child) {
		snprintf(rel, sizeof(rel), "mnt/cpuset/slurm_n1/uid_0/job_%s/synergy/cpuset.cpus", id);
		put(rel, cpus);
		snprintf(rel, sizeof(rel), "mnt/cpuset/slurm_n1/uid_0/job_%s/synergy/tasks", id);
		put(rel, "");
	}
}

static const char *held(const char *id, int child)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "mnt/cpuset/slurm_n1/uid_0/job_%s/%scpuset.cpus", id,
		 child ? "synergy/" : "");
	return get(rel);
}

static void record(int dfd, uint32_t id, int synergy, const char *allotted)
{
	syn__jobrec_t r;

	memset(&r, 0, sizeof(r));
	if (synergy) {
		r.synergy = 1;
		snprintf(r.key, sizeof(r.key), "img");
		r.gpus = 1;
	}
	if (allotted) {
		r.has_allotted = 1;
		syn_cpus_parse(allotted, &r.allotted);
	}
	if (syn__jobrec_write(dfd, "n1", id, &r) < 0)
		bail_out("record");
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A Synergy record of job id on cpu, with a CPU-time sample taken 5 s ago
 * at ns_then, and its cgroup's cpuacct.usage now at ns_now. */
static void sampled(int dfd, uint32_t id, const char *cpu, uint64_t ns_then, uint64_t ns_now,
		    int harvest)
{
	syn__jobrec_t r;
	char rel[256], val[32];

	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "img");
	r.gpus = 1;
	r.has_allotted = 1;
	syn_cpus_parse(cpu, &r.allotted);
	r.has_cpu = 1;
	r.cpu_ns = ns_then;
	r.cpu_at_ns = now_ns() - 5000000000ULL;
	r.harvest = harvest;
	if (syn__jobrec_write(dfd, "n1", id, &r) < 0)
		bail_out("sampled record");
	snprintf(rel, sizeof(rel), "mnt/cpuacct/slurm_n1/uid_0/job_%u/cpuacct.usage", (unsigned)id);
	snprintf(val, sizeof(val), "%llu\n", (unsigned long long)ns_now);
	put(rel, val);
}

static void write_profile(uint32_t id, double at1, double at2)
{
	syn_profile_t p;
	syn_error_t serr;
	char path[700];

	memset(&p, 0, sizeof(p));
	snprintf(p.key, sizeof(p.key), "img");
	p.n_cpu = 2;
	p.n_mem = 1;
	p.cpus[0] = 1;
	p.cpus[1] = 2;
	p.tput[0][0] = at1;
	p.tput[1][0] = at2;
	p.prop_cpus = 1;
	snprintf(path, sizeof(path), "%s/n1.job_%u.json", state, (unsigned)id);
	if (syn_profile_write_file(path, &p, &serr) < 0)
		bail_out(serr.text);
}

/* 1 if pid's cpu cgroup is an idle one of ours. */
static int in_idle_group_of(pid_t pid, const char *job)
{
	char path[64], line[512], name[64];
	FILE *f;
	int in = 0;

	snprintf(name, sizeof(name), "/synergy_n1_job_%s\n", job);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, ":cpu:") || strstr(line, ":cpu,"))
			in = strstr(line, name) != NULL;
	fclose(f);
	return in;
}

static int in_idle_group(pid_t pid)
{
	return in_idle_group_of(pid, "10");
}

static int policy_of(pid_t pid)
{
	int p = sched_getscheduler(pid);

	return p < 0 ? p : (p & ~SCHED_RESET_ON_FORK);
}

/*
 * Harvesting idle cycles: every core of the node allotted (job 12, not
 * Synergy's, holds 2-4); job 10 (a profile that doubles with a second
 * core) on 0, job 11 (flat) on 1, using 0.1 of it. Without a cpu hierarchy
 * the job cannot be made idle as a group, and nothing is harvested. With
 * one (the fake tree's "cpu" is this machine's cgroup v1 cpu hierarchy,
 * where real processes in job 10's synergy child are moved into an idle
 * cpu cgroup and back), job 10 harvests core 1 at idle priority; when job
 * 11 gets busy the harvest ends and the priority comes back.
 */
static void test_harvest(int dfd, syn__agent_t *agent)
{
	const char *ids[] = { "5", "6", "7", "8", "9" };
	char path[700], pidtxt[32];
	syn__jobrec_t r;
	pid_t kid, kid2;
	int i, rv;

	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/mnt/cpuset/slurm_n1/uid_0/job_%s", top, ids[i]);
		rm_rf(path);
		syn__jobrec_remove(dfd, "n1", (uint32_t)atoi(ids[i]));
	}
	job("12", "2-4", 0);
	record(dfd, 12, 0, "2-4");
	job("10", "0", 1);
	job("11", "1", 1);
	write_profile(10, 0.5, 1.0);
	write_profile(11, 1.0, 1.0);
	kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	snprintf(pidtxt, sizeof(pidtxt), "%d\n", (int)kid);
	put("mnt/cpuset/slurm_n1/uid_0/job_10/synergy/tasks", pidtxt);
	put("mnt/cpuset/slurm_n1/uid_0/job_10/synergy/cgroup.procs", pidtxt);
	/* 10 busy (5 s of CPU in 5 s), 11 at 0.1 of its core. */
	sampled(dfd, 10, "0", 1000000000ULL, 6000000000ULL, 0);
	sampled(dfd, 11, "1", 1000000000ULL, 1500000000ULL, 0);

	agent->harvest = 0;
	errors = 0;
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(agent, NULL, 0);
	ok(rv == 0 && strcmp(held("10", 1), "0") == 0 && policy_of(kid) == SCHED_OTHER,
	   "HarvestIdleCycles=no: nothing is harvested (%s)", allmsg);

	agent->harvest = 1;
	errors = 0;
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(agent, NULL, 0);
	ok(rv == -1 && strstr(allmsg, "cannot lower its threads' priority") &&
		   strcmp(held("10", 1), "0") == 0 && strcmp(held("10", 0), "0") == 0 &&
		   policy_of(kid) == SCHED_OTHER,
	   "no cpu hierarchy: the job cannot be made idle, and harvests nothing (%s)", allmsg);
	{
		struct stat sb;

		if (stat("/sys/fs/cgroup/cpu/cpu.shares", &sb) != 0) {
			kill(kid, SIGKILL);
			waitpid(kid, NULL, 0);
			skip(1, "no cgroup v1 cpu hierarchy here: the rest of the harvest");
			return;
		}
		snprintf(path, sizeof(path), "%s/mnt/cpu", top);
		if (symlink("/sys/fs/cgroup/cpu", path) < 0)
			bail_out("symlink mnt/cpu");
	}
	/* Its samples were taken again just now: back-date them. */
	sampled(dfd, 10, "0", 1000000000ULL, 6000000000ULL, 0);
	sampled(dfd, 11, "1", 1000000000ULL, 1500000000ULL, 0);
	errors = 0;
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(agent, NULL, 0);
	ok(rv == 0 && errors == 0, "harvest: planned (%s)", allmsg);
	is_str(held("10", 1), "0-1", "job 10 harvests job 11's idle core (synergy child)");
	is_str(held("10", 0), "0-1", "and job cgroup");
	is_str(held("11", 1), "1", "job 11 keeps its core");
	ok(policy_of(kid) == SCHED_IDLE, "job 10's threads run at idle priority");
	ok(in_idle_group(kid), "job 10's process is in an idle cpu cgroup");
	ok(strstr(allmsg, "lend job=10 harvests cpus=1 at idle priority") != NULL,
	   "the harvest is logged");
	ok(syn__jobrec_read(dfd, "n1", 10, &r, NULL, 0) == 0 && r.harvest == 1,
	   "job 10's record says it harvests");
	ok(syn__jobrec_read(dfd, "n1", 11, &r, NULL, 0) == 0 && r.has_spare &&
		   r.spare_milli >= 850 && r.spare_milli <= 950 && r.has_cpu &&
		   r.cpu_ns == 1500000000ULL,
	   "job 11's idle share measured (0.9 core: %llu) and its sample kept",
	   (unsigned long long)r.spare_milli);

	/* A task starting in the harvesting job starts at idle priority. */
	kid2 = fork();
	if (kid2 == 0) {
		pause();
		_exit(0);
	}
	snprintf(pidtxt, sizeof(pidtxt), "%d\n%d\n", (int)kid, (int)kid2);
	put("mnt/cpuset/slurm_n1/uid_0/job_10/synergy/tasks", pidtxt);
	put("mnt/cpuset/slurm_n1/uid_0/job_10/synergy/cgroup.procs", pidtxt);
	ok(syn__lend_task_enter(agent, 10, "slurm_n1/uid_0/job_10") == 1 &&
		   policy_of(kid2) == SCHED_IDLE,
	   "a new task of a harvesting job starts at idle priority");
	ok(syn__lend_task_enter(agent, 11, "slurm_n1/uid_0/job_11") == 0,
	   "a lender's task is left alone");

	/* A second call soon after changes nothing (samples need 2 s). */
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(agent, NULL, 0);
	ok(rv == 0 && allmsg[0] == '\0' && strcmp(held("10", 1), "0-1") == 0,
	   "a call right after changes nothing (%s)", allmsg);

	/* Job 11 gets busy: 0.98 of its core. The harvest ends. */
	sampled(dfd, 11, "1", 1000000000ULL, 5900000000ULL, 0);
	errors = 0;
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(agent, NULL, 0);
	ok(rv == 0 && errors == 0, "lender busy: planned (%s)", allmsg);
	is_str(held("10", 1), "0", "job 10 gives job 11's core back");
	is_str(held("10", 0), "0", "job cgroup too");
	ok(policy_of(kid) == SCHED_OTHER && !in_idle_group(kid) && !in_idle_group(kid2),
	   "job 10's threads are back at normal priority, in their own cpu cgroup");
	snprintf(path, sizeof(path), "%s/mnt/cpu/synergy_n1_job_10", top);
	ok(access(path, F_OK) != 0, "the idle cpu cgroup is gone");
	ok(syn__jobrec_read(dfd, "n1", 10, &r, NULL, 0) == 0 && r.harvest == 0,
	   "job 10's record says it harvests no more");

	/* Harvest again, then a step of job 10 starts: it ends the harvest. */
	sampled(dfd, 11, "1", 1000000000ULL, 1500000000ULL, 0);
	rv = syn__lend_rebalance(agent, NULL, 0);
	ok(rv == 0 && strcmp(held("10", 1), "0-1") == 0 && policy_of(kid) == SCHED_IDLE,
	   "lender idle again: harvested again");
	rv = syn__lend_step_start(agent, "slurm_n1/uid_0/job_10", 10);
	ok(rv == 0 && strcmp(held("10", 1), "0") == 0 && policy_of(kid) == SCHED_OTHER &&
		   syn__jobrec_read(dfd, "n1", 10, &r, NULL, 0) == 0 && r.harvest == 0,
	   "a new step of the harvester: its harvest ends, priority restored");

	/* A job cgroup without a record whose processes outlived their job
	 * (its slurmstepd killed) and hold only a CPU Slurm allotted to
	 * job 12: they go to idle priority, as a group. */
	{
		pid_t orphan = fork();

		if (orphan == 0) {
			pause();
			_exit(0);
		}
		job("14", "3", 1);
		snprintf(pidtxt, sizeof(pidtxt), "%d\n", (int)orphan);
		put("mnt/cpuset/slurm_n1/uid_0/job_14/synergy/tasks", pidtxt);
		put("mnt/cpuset/slurm_n1/uid_0/job_14/synergy/cgroup.procs", pidtxt);
		errors = 0;
		allmsg[0] = '\0';
		rv = syn__lend_rebalance(agent, NULL, 0);
		ok(rv == 0 && policy_of(orphan) == SCHED_IDLE && in_idle_group_of(orphan, "14") &&
			   strstr(allmsg, "lend job=14: has no record") &&
			   strstr(allmsg, "1 threads at idle priority"),
		   "an ended job's processes on another job's CPU run idle (%s)", allmsg);
		is_str(held("14", 1), "3", "its cpuset is left (it cannot be emptied)");
		kill(orphan, SIGKILL);
		waitpid(orphan, NULL, 0);
		snprintf(path, sizeof(path), "%s/mnt/cpu/synergy_n1_job_14", top);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/mnt/cpuset/slurm_n1/uid_0/job_14", top);
		rm_rf(path);
	}

	kill(kid, SIGKILL);
	kill(kid2, SIGKILL);
	waitpid(kid, NULL, 0);
	waitpid(kid2, NULL, 0);
	syn__cg_job_cleanup(agent->cg, "slurm_n1/uid_0/job_10", NULL, 0);
	snprintf(path, sizeof(path), "%s/mnt/cpu/synergy_n1_job_10", top);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/mnt/cpu", top);
	unlink(path);
}

static int note_status(const syn__lend_info_t *i, void *arg)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%u:%s:%s:%s|", (unsigned)i->jobid,
		 strrchr(i->job_rel, '/') + 1, i->recorded ? i->allotted : "-",
		 i->borrow ? i->key : "-");
	return 0;
}

/* Issue 26: Slurm 26.05's job directories, named by SLUID (see the top). */
static void test_sluid(void)
{
	const char *sc = "v2/system.slice/n1_slurmstepd.scope";
	const char *a = "system.slice/n1_slurmstepd.scope/sAAAAAAAAAAAAA";
	char err[300], mnt[512], p[900], st2[700], status[512] = "", cpus[64];
	syn__cg_opts_t o;
	syn__cg_t *cg;
	syn__agent_t agent;
	syn__lend_start_t st;
	syn__jobrec_t r;
	cpu_set_t set;
	int dfd, rv;

	snprintf(st2, sizeof(st2), "%s/state-v2", top);
	dfd = syn__state_dir_open(st2, err, sizeof(err));
	if (dfd < 0)
		bail_out(err);
	put("v2/cgroup.controllers", "cpuset cpu memory pids\n");
	snprintf(p, sizeof(p), "%s/cpuset.cpus", sc);
	put(p, "0-4\n");
	/* Job 21 (Synergy) on CPU 0; an unknown job on CPU 1; 2-4 idle. */
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/cpuset.cpus", sc);
	put(p, "0\n");
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/memory.max", sc);
	put(p, "1073741824\n");
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/step_batch/user/cpuset.cpus", sc);
	put(p, "0\n");
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/step_batch/user/memory.max", sc);
	put(p, "1073741824\n");
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB/cpuset.cpus", sc);
	put(p, "1\n");
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB/step_0/user/cpuset.cpus", sc);
	put(p, "1\n");
	snprintf(p, sizeof(p), "%s/slurmd", sc);
	dir(p);
	snprintf(mnt, sizeof(mnt), "%s/v2", top);
	memset(&o, 0, sizeof(o));
	o.node = "n1";
	o.mountpoint = mnt;
	o.init_cgroup = "/";
	cg = syn__cg_open(&o, err, sizeof(err));
	if (!cg)
		bail_out(err);
	memset(&agent, 0, sizeof(agent));
	agent.cg = cg;
	agent.state_dir = st2;
	agent.node_rel = "system.slice/n1_slurmstepd.scope";
	agent.lend = 1;
	agent.shape.gpus = 4;
	agent.shape.mem_mb = 8192;
	agent.shape.process_mem_mb = 512;
	agent.log = logf_;

	/* The prolog's record (a grant, and the SLUID slurmd told it, which
	 * the kernel contradicts here) and the job's profile copy. */
	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "img");
	r.gpus = 1;
	snprintf(r.sluid, sizeof(r.sluid), "sZZZZZZZZZZZZZ");
	if (syn__jobrec_write(dfd, "n1", 21, &r) < 0)
		bail_out("record");
	{
		syn_profile_t pr;
		syn_error_t serr;

		memset(&pr, 0, sizeof(pr));
		snprintf(pr.key, sizeof(pr.key), "img");
		pr.n_cpu = 2;
		pr.n_mem = 1;
		pr.cpus[0] = 1;
		pr.cpus[1] = 2;
		pr.tput[0][0] = 1;
		pr.tput[1][0] = 2;
		pr.prop_cpus = 1;
		snprintf(p, sizeof(p), "%s/n1.job_21.json", st2);
		if (syn_profile_write_file(p, &pr, &serr) < 0)
			bail_out(serr.text);
	}
	memset(&st, 0, sizeof(st));
	st.jobid = 21;
	st.job_rel = a;
	st.alloc_mem_mb = 1024;
	errors = 0;
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(&agent, &st, 0);
	diag("%s", allmsg);
	ok(rv == -1 && strstr(allmsg, "prolog was given SLUID sZZZZZZZZZZZZZ"),
	   "a SLUID the kernel contradicts is reported");
	ok(syn__jobrec_read(dfd, "n1", 21, &r, err, sizeof(err)) == 0 &&
	   strcmp(r.sluid, "sAAAAAAAAAAAAA") == 0 && r.has_allotted,
	   "the first step recorded its cgroup's SLUID and its CPUs");
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/cpuset.cpus", sc);
	snprintf(cpus, sizeof(cpus), "%s", get(p));
	ok(syn_cpus_parse(cpus, &set) == 0 && CPU_ISSET(0, &set) && CPU_COUNT(&set) == 2 &&
	   !CPU_ISSET(1, &set), "job 21, known by its SLUID, borrows an idle CPU (%s)", cpus);
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/step_batch/user/cpuset.cpus", sc);
	is_str(get(p), cpus, "its step's user cgroup too");
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB/cpuset.cpus", sc);
	is_str(get(p), "1", "a SLUID no record names is lent nothing");
	ok(strstr(allmsg, "lend job=21 borrows") && !strstr(allmsg, "cgroup=sBBBBBBBBBBBBB"),
	   "messages name job 21 by its id");
	errors = 0;
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(&agent, NULL, 0);
	snprintf(p, sizeof(p), "%s/sAAAAAAAAAAAAA/cpuset.cpus", sc);
	ok(rv == 0 && errors == 0 && strcmp(get(p), cpus) == 0,
	   "a later call knows job 21 from its record's SLUID: it keeps what it holds (%s)",
	   allmsg);
	rv = syn__lend_status(&agent, p, sizeof(p), note_status, status);
	ok(rv == 2 && strstr(status, "21:sAAAAAAAAAAAAA:0:img|") &&
	   strstr(status, "0:sBBBBBBBBBBBBB:-:-|"),
	   "synergy-lend's view: job 21 by its SLUID, the other without a record (%s)", status);
	/* The unknown job is an ended one whose processes live on, on CPUs
	 * job 21 was allotted: it loses them, named by its cgroup. */
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB/cpuset.cpus", sc);
	put(p, "0-1\n");
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB/step_0/user/cpuset.cpus", sc);
	put(p, "0-1\n");
	allmsg[0] = '\0';
	rv = syn__lend_rebalance(&agent, NULL, 0);
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB/cpuset.cpus", sc);
	ok(strcmp(get(p), "1") == 0 && strstr(allmsg, "lend cgroup=sBBBBBBBBBBBBB returns cpus=0"),
	   "an unknown SLUID job gives back a recorded job's CPU (%s)", allmsg);
	/* Job 21 ends while job 22 (by SLUID too) runs on its CPUs: its
	 * record goes, and its directory, still there, is no job's. */
	snprintf(p, sizeof(p), "%s/sCCCCCCCCCCCCC/cpuset.cpus", sc);
	put(p, "0,2\n");
	memset(&r, 0, sizeof(r));
	r.has_allotted = 1;
	syn_cpus_parse("0,2", &r.allotted);
	snprintf(r.sluid, sizeof(r.sluid), "sCCCCCCCCCCCCC");
	if (syn__jobrec_write(dfd, "n1", 22, &r) < 0)
		bail_out("record 22");
	snprintf(p, sizeof(p), "%s/sBBBBBBBBBBBBB", sc);
	rm_rf(p);
	allmsg[0] = '\0';
	errors = 0;
	rv = syn__lend_rebalance(&agent, NULL, 21);
	ok(syn__jobrec_read(dfd, "n1", 21, &r, err, sizeof(err)) == -1 && errno == ENOENT,
	   "the ended job's record is gone");
	ok(rv == 0 && errors == 0 && !strstr(allmsg, "sAAAAAAAAAAAAA"),
	   "the ended job's cgroup, known by the SLUID its record had, is left out (%s)",
	   allmsg);
	syn__cg_close(cg);
	close(dfd);
}

int main(void)
{
	char err[300], mnt[512];
	syn__cg_opts_t o;
	syn__cg_t *cg;
	syn__agent_t agent;
	syn__lend_start_t st;
	int dfd, rv;

	if (geteuid() != 0) {
		printf("1..0 # SKIP StateDir must be owned by root\n");
		return 0;
	}
	fake_tree_init("lendstate-t");
	snprintf(state, sizeof(state), "%s/state", top);
	dfd = syn__state_dir_open(state, err, sizeof(err));
	if (dfd < 0)
		bail_out(err);
	put("mnt/cpuset/slurm_n1/cpuset.cpus", "0-4");
	put("mnt/cpuset/slurm_n1/uid_0/cpuset.cpus", "0-4");
	dir("mnt/memory");
	snprintf(mnt, sizeof(mnt), "%s/mnt", top);
	memset(&o, 0, sizeof(o));
	o.node = "n1";
	o.plugin = "cgroup/v1";
	o.mountpoint = mnt;
	cg = syn__cg_open(&o, err, sizeof(err));
	if (!cg)
		bail_out(err);
	/* Cores only here (no CacheDir): cache grants are tested on a node. */
	memset(&agent, 0, sizeof(agent));
	memset(&st, 0, sizeof(st));
	agent.cg = cg;
	agent.state_dir = state;
	agent.node_rel = "slurm_n1";
	agent.lend = 1;
	agent.shape.gpus = 4;
	agent.shape.mem_mb = 8192;
	agent.shape.process_mem_mb = 512;
	agent.log = logf_;

	/* Job 1 (Synergy, allotted 0-1) borrows 2-3; job 2 starts on 2. */
	job("1", "0-3", 1);
	record(dfd, 1, 1, "0-1");
	job("2", "2", 0);
	st.jobid = 2;
	st.job_rel = "slurm_n1/uid_0/job_2";
	st.alloc_mem_mb = UINT64_MAX - 1; /* Slurm's "no value": unknown */
	errors = 0;
	rv = syn__lend_rebalance(&agent, &st, 0);
	/* Job 1 has no profile copy: it does not borrow again (one error). */
	ok(rv == -1 && strstr(allmsg, "lend job=1: profile copy") &&
	   !strstr(allmsg, "lend job=1 borrows"),
	   "a borrower without a profile copy is reported and granted nothing");
	is_str(held("1", 1), "0-1", "the newcomer's CPU was taken back from the child");
	is_str(held("1", 0), "0-1", "and from the job cgroup");
	is_str(held("2", 0), "2", "the newcomer keeps what Slurm gave it");
	{
		syn__jobrec_t r;

		int rr = syn__jobrec_read(dfd, "n1", 2, &r, err, sizeof(err));

		if (rr < 0)
			diag("read: %s", err);
		ok(rr == 0 && r.has_allotted &&
		   CPU_COUNT(&r.allotted) == 1 && CPU_ISSET(2, &r.allotted) &&
		   r.alloc_mem_mb == 0,
		   "the newcomer was recorded with its allotment (an unlimited memory as unknown)");
	}

	/* A job of a group whose key had no profile (unprofiled=1): no
	 * profile copy is expected, nothing reported, nothing granted. */
	{
		syn__jobrec_t r;

		memset(&r, 0, sizeof(r));
		r.synergy = 1;
		r.unprofiled = 1;
		snprintf(r.key, sizeof(r.key), "img");
		r.gpus = 1;
		r.has_allotted = 1;
		syn_cpus_parse("0-1", &r.allotted);
		if (syn__jobrec_write(dfd, "n1", 1, &r) < 0)
			bail_out("record");
		allmsg[0] = '\0';
		errors = 0;
		rv = syn__lend_rebalance(&agent, &st, 0);
		ok(rv == 0 && errors == 0 && !strstr(allmsg, "profile copy") &&
		   !strstr(allmsg, "lend job=1 borrows") && strcmp(held("1", 0), "0-1") == 0,
		   "an unprofiled member is no error and borrows nothing (%s)", allmsg);
		record(dfd, 1, 1, "0-1");
	}

	/* Fail-safe: job 3 starts on 3 while job 1 borrows 3, and its record
	 * cannot be written (a directory stands where it goes). */
	put("mnt/cpuset/slurm_n1/uid_0/job_1/cpuset.cpus", "0-1,3");
	put("mnt/cpuset/slurm_n1/uid_0/job_1/synergy/cpuset.cpus", "0-1,3");
	job("3", "3", 0);
	mkdirat(dfd, "n1.job_3", 0700);
	st.jobid = 3;
	st.job_rel = "slurm_n1/uid_0/job_3";
	errors = 0;
	rv = syn__lend_rebalance(&agent, &st, 0);
	ok(rv == -1 && errors > 0, "a record that cannot be written fails the call");
	is_str(held("1", 1), "0-1", "fail-safe: the borrower was shrunk to its allotment first");
	is_str(held("1", 0), "0-1", "job cgroup too");
	unlinkat(dfd, "n1.job_3", AT_REMOVEDIR);

	/* A leftover job cgroup without a record (its job ended, its
	 * processes did not) holds 0-4: it loses what recorded jobs own. */
	job("4", "0-4", 0);
	st.jobid = 3;
	errors = 0;
	syn__lend_rebalance(&agent, &st, 0);
	is_str(held("4", 0), "4", "an unrecorded cgroup keeps only what no recorded job owns");

	/* The lock has a deadline: a holder that hangs does not stall a start,
	 * which still takes its CPUs back, unlocked. */
	{
		int holder = syn__node_lock(dfd, "n1", 100);

		put("mnt/cpuset/slurm_n1/uid_0/job_1/cpuset.cpus", "0-1,3");
		put("mnt/cpuset/slurm_n1/uid_0/job_1/synergy/cpuset.cpus", "0-1,3");
		errors = 0;
		agent.lock_ms = 300;  /* SYN__LEND_LOCK_MS, shortened for the test */
		diag("waiting for the lock deadline (%d ms)", agent.lock_ms);
		rv = syn__lend_rebalance(&agent, &st, 0);
		agent.lock_ms = 0;
		ok(rv == -1 && strstr(lastmsg, "lend job=1 returns") != NULL &&
		   strcmp(held("1", 0), "0-1") == 0,
		   "lock timed out: the newcomer's CPU was still taken back (%s)", lastmsg);
		close(holder);
	}
	/* Profile on first run (issue 17): a job profiling in place (its
	 * record carries a claim's nonce; it has no profile yet) is lent the
	 * idle cores for its search, and gives them back to a newcomer and
	 * once its profile is filed. */
	{
		char path[700];
		syn__jobrec_t r;
		int i;
		const char *ids[] = { "1", "2", "3", "4" };

		for (i = 0; i < 4; i++) {
			snprintf(path, sizeof(path), "%s/mnt/cpuset/slurm_n1/uid_0/job_%s", top, ids[i]);
			rm_rf(path);
			syn__jobrec_remove(dfd, "n1", (uint32_t)(i + 1));
		}
		job("5", "0", 1);
		memset(&r, 0, sizeof(r));
		r.synergy = 1;
		snprintf(r.key, sizeof(r.key), "fresh");
		r.gpus = 1;
		snprintf(r.profile, sizeof(r.profile), "0123456789abcdef");
		r.has_allotted = 1;
		syn_cpus_parse("0", &r.allotted);
		if (syn__jobrec_write(dfd, "n1", 5, &r) < 0)
			bail_out("record 5");
		job("6", "1", 0);
		record(dfd, 6, 0, "1");
		errors = 0;
		allmsg[0] = '\0';
		rv = syn__lend_rebalance(&agent, NULL, 0);
		ok(rv == 0 && errors == 0, "a profiling job is no error for the agent (%s)", allmsg);
		is_str(held("5", 1), "0,2-4", "it is lent every idle core for its search");
		is_str(held("6", 0), "1", "the other job keeps its allotment");

		job("7", "2", 0);
		st.jobid = 7;
		st.job_rel = "slurm_n1/uid_0/job_7";
		errors = 0;
		rv = syn__lend_rebalance(&agent, &st, 0);
		ok(rv == 0, "a newcomer starts");
		is_str(held("5", 1), "0,3-4", "the newcomer's core was taken back from the search");
		is_str(held("5", 0), "0,3-4", "job cgroup too");

		/* Its profile was filed (inplace.c): a flat one. Now an
		 * ordinary Synergy job, it gains nothing from more cores. */
		r.profile[0] = '\0';
		if (syn__jobrec_write(dfd, "n1", 5, &r) < 0)
			bail_out("record 5");
		{
			syn_profile_t p;
			syn_error_t serr;

			memset(&p, 0, sizeof(p));
			snprintf(p.key, sizeof(p.key), "fresh");
			p.n_cpu = 2;
			p.n_mem = 1;
			p.cpus[0] = 1;
			p.cpus[1] = 2;
			p.tput[0][0] = p.tput[1][0] = 1;
			p.prop_cpus = 1;
			snprintf(path, sizeof(path), "%s/n1.job_5.json", state);
			if (syn_profile_write_file(path, &p, &serr) < 0)
				bail_out(serr.text);
		}
		errors = 0;
		rv = syn__lend_rebalance(&agent, NULL, 0);
		ok(rv == 0, "the rebalance once it is profiled succeeds");
		is_str(held("5", 1), "0", "profiled (flat): the cores lent for the search went back");
	}
	/* Issue 15: two jobs of one group, 1 core each, a profile that
	 * saturates at 4 cores per GPU (one job's prep). Apart each would
	 * borrow up to 3 more; together their 2 cores need 2 more in all,
	 * one each, and the fifth core stays idle. */
	{
		const char *ids[] = { "5", "6", "7" };
		char path[700];
		syn_profile_t p;
		syn_error_t serr;
		int i;

		for (i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "%s/mnt/cpuset/slurm_n1/uid_0/job_%s", top, ids[i]);
			rm_rf(path);
			syn__jobrec_remove(dfd, "n1", (uint32_t)(i + 5));
		}
		memset(&p, 0, sizeof(p));
		snprintf(p.key, sizeof(p.key), "img");
		p.n_cpu = 3;
		p.n_mem = 1;
		p.cpus[0] = 1;
		p.cpus[1] = 2;
		p.cpus[2] = 4;
		p.tput[0][0] = 0.6;
		p.tput[1][0] = 0.8;
		p.tput[2][0] = 1.0;
		p.prop_cpus = 1;
		for (i = 8; i <= 9; i++) {
			syn__jobrec_t r;
			char id[8], cpu[8];

			snprintf(id, sizeof(id), "%d", i);
			snprintf(cpu, sizeof(cpu), "%d", i - 8);
			job(id, cpu, 1);
			memset(&r, 0, sizeof(r));
			r.synergy = 1;
			snprintf(r.key, sizeof(r.key), "img");
			r.gpus = 1;
			snprintf(r.group, sizeof(r.group), "u0-a77");
			r.has_allotted = 1;
			syn_cpus_parse(cpu, &r.allotted);
			if (syn__jobrec_write(dfd, "n1", (uint32_t)i, &r) < 0)
				bail_out("group record");
			snprintf(path, sizeof(path), "%s/n1.job_%d.json", state, i);
			if (syn_profile_write_file(path, &p, &serr) < 0)
				bail_out(serr.text);
		}
		errors = 0;
		allmsg[0] = '\0';
		rv = syn__lend_rebalance(&agent, NULL, 0);
		ok(rv == 0 && errors == 0, "a group on the node: planned (%s)", allmsg);
		{
			cpu_set_t a, b, both;
			char sa[64];

			snprintf(sa, sizeof(sa), "%s", held("8", 1));
			ok(syn_cpus_parse(sa, &a) == 0 && CPU_COUNT(&a) == 2 && CPU_ISSET(0, &a),
			   "the group's first job keeps its core and borrows one (%s)", sa);
			ok(syn_cpus_parse(held("9", 1), &b) == 0 && CPU_COUNT(&b) == 2 &&
			   CPU_ISSET(1, &b), "its second job too (%s)", held("9", 1));
			CPU_AND(&both, &a, &b);
			ok(CPU_COUNT(&both) == 0, "no core lent twice; one of the 3 idle stays idle");
		}
		/* Apart (no group), the same two jobs borrow all three. */
		for (i = 8; i <= 9; i++) {
			syn__jobrec_t r;

			if (syn__jobrec_read(dfd, "n1", (uint32_t)i, &r, err, sizeof(err)) < 0)
				bail_out(err);
			r.group[0] = '\0';
			if (syn__jobrec_write(dfd, "n1", (uint32_t)i, &r) < 0)
				bail_out("record");
		}
		rv = syn__lend_rebalance(&agent, NULL, 0);
		{
			cpu_set_t a, b;
			char sa[64];

			snprintf(sa, sizeof(sa), "%s", held("8", 1));
			ok(rv == 0 && syn_cpus_parse(sa, &a) == 0 &&
				   syn_cpus_parse(held("9", 1), &b) == 0 &&
				   CPU_COUNT(&a) + CPU_COUNT(&b) == 5,
			   "apart, the same jobs borrow all 3 idle cores (%s and %s)", sa,
			   held("9", 1));
		}
	}
	test_harvest(dfd, &agent);
	test_sluid();
	syn__cg_close(cg);
	close(dfd);
	rm_rf(top);
	return done_testing();
}
