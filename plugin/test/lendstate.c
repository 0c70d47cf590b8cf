/*
 * lendstate.t: idle-core lending's state layer (syn__lend_rebalance) on a
 * fake cgroup v1 tree and a real StateDir (issue 12): a newcomer's CPUs are
 * taken back from a borrower; when writing the newcomer's record fails,
 * every job is shrunk back to its allotment before the call gives up
 * (fail-safe); a job cgroup left without a record (a job whose slurmstepd
 * was killed) loses the CPUs Slurm allotted to a recorded job; and nothing
 * is read from a profile store under the lock. StateDir must be root's, so
 * without root the file is skipped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "fake_tree.h"
#include "cgroup.h"
#include "jobrec.h"
#include "lend.h"

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
		syn__cpus_parse(allotted, &r.allotted);
	}
	if (syn__jobrec_write(dfd, "n1", id, &r) < 0)
		bail_out("record");
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
		diag("waiting for the lock deadline (%d ms)", SYN__LEND_LOCK_MS);
		rv = syn__lend_rebalance(&agent, &st, 0);
		ok(rv == -1 && strstr(lastmsg, "lend job=1 returns") != NULL &&
		   strcmp(held("1", 0), "0-1") == 0,
		   "lock timed out: the newcomer's CPU was still taken back (%s)", lastmsg);
		close(holder);
	}
	syn__cg_close(cg);
	close(dfd);
	rm_rf(top);
	return done_testing();
}
