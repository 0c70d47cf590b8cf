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
 * cores between them, not one job's each.
 * StateDir must be root's, so without root the file is skipped.
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
#include "synergy_store.h"

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
		syn__cpus_parse("0-1", &r.allotted);
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
		diag("waiting for the lock deadline (%d ms)", SYN__LEND_LOCK_MS);
		rv = syn__lend_rebalance(&agent, &st, 0);
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
		syn__cpus_parse("0", &r.allotted);
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
			syn_store_error_t serr;

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
		syn_store_error_t serr;
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
			syn__cpus_parse(cpu, &r.allotted);
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
			ok(syn__cpus_parse(sa, &a) == 0 && CPU_COUNT(&a) == 2 && CPU_ISSET(0, &a),
			   "the group's first job keeps its core and borrows one (%s)", sa);
			ok(syn__cpus_parse(held("9", 1), &b) == 0 && CPU_COUNT(&b) == 2 &&
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
			ok(rv == 0 && syn__cpus_parse(sa, &a) == 0 &&
			   syn__cpus_parse(held("9", 1), &b) == 0 && CPU_COUNT(&a) + CPU_COUNT(&b) == 5,
			   "apart, the same jobs borrow all 3 idle cores (%s and %s)", sa, held("9", 1));
		}
	}
	syn__cg_close(cg);
	close(dfd);
	rm_rf(top);
	return done_testing();
}
