/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * opt.t: Synergy-OPT against brute force. On tiny instances (a few jobs,
 * small grids) phase 1's objective must equal the best total throughput
 * found by enumerating every combination of candidate cells under the
 * cluster's cores and memory. On one node, phase 2 is trivial, so the full
 * OPT round must reach the same total, and TUNE may not beat it. On two
 * nodes, where phase 1's pooled demands need not pack, the OPT round must
 * reach the best per-node allocation found by enumerating (node, cell) for
 * every job, without falling back to TUNE's steps.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"
#include "tests/tap.h"

#define MAXJ 4
#define MAXC (SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1)

static double cc[MAXJ][MAXC], cm[MAXJ][MAXC], ct[MAXJ][MAXC];
static int ncell[MAXJ];

static double brute(const syn_job_t *j, int n, int k, double cpus, double mem)
{
	double best = -INFINITY;

	if (k == n)
		return 0;
	for (int c = 0; c < ncell[k]; c++) {
		double uc = j[k].gpus * cc[k][c], um = j[k].gpus * cm[k][c];
		if (uc > cpus + 1e-9 || um > mem + 1e-9)
			continue;
		double rest = brute(j, n, k + 1, cpus - uc, mem - um);
		if (rest + j[k].gpus * ct[k][c] > best)
			best = rest + j[k].gpus * ct[k][c];
	}
	return best;
}

/* The best total over every (node, cell) choice per job on n_nodes
 * identical nodes of g GPUs, cpus cores and mem GB each. */
static double brute_nodes(const syn_job_t *j, int n, int k, int n_nodes, int *g, double *cpus,
			  double *mem)
{
	double best = -INFINITY;

	if (k == n)
		return 0;
	for (int s = 0; s < n_nodes; s++)
		for (int c = 0; c < ncell[k]; c++) {
			double uc = j[k].gpus * cc[k][c], um = j[k].gpus * cm[k][c];
			if (g[s] < j[k].gpus || uc > cpus[s] + 1e-9 || um > mem[s] + 1e-9)
				continue;
			g[s] -= j[k].gpus, cpus[s] -= uc, mem[s] -= um;
			double rest = brute_nodes(j, n, k + 1, n_nodes, g, cpus, mem);
			g[s] += j[k].gpus, cpus[s] += uc, mem[s] += um;
			if (rest + j[k].gpus * ct[k][c] > best)
				best = rest + j[k].gpus * ct[k][c];
		}
	return best;
}

static uint64_t rng = 88172645463325252ULL;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static void small_profile(syn_profile_t *p)
{
	memset(p, 0, sizeof *p);
	strcpy(p->key, "tiny");
	p->n_cpu = 4;
	p->n_mem = 3;
	for (int i = 0; i < 4; i++)
		p->cpus[i] = (double[]){ 1, 2, 3, 6 }[i];
	for (int k = 0; k < 3; k++)
		p->mem_gb[k] = (double[]){ 20, 60, 120 }[k];
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 3; k++)
			p->tput[i][k] = fmin(0.3 + urand() * (i + 1), 0.3 + urand() * 2 * (k + 1));
	p->prop_cpus = 3;
	p->prop_mem_gb = 60;
}

int main(void)
{
	syn_profile_t prof[MAXJ];
	syn_job_t j[MAXJ];
	int idx[MAXJ] = { 0, 1, 2, 3 };
	double cpus[MAXJ], mem[MAXJ], obj, bound;
	syn_error_t err = { "" };
	int mismatch = 0, worse = 0, fail = 0, checked = 0, below = 0;

	/* Named instance: resnet18, alexnet, m5, gnmt on one 4-GPU node with
	 * 16 cores and 300 GB. */
	{
		syn_node_t n = { .gpus = 4, .cpus = 16, .mem_gb = 300 };
		const char *m[] = { "resnet18", "alexnet", "m5", "gnmt" };
		memset(j, 0, sizeof j);
		for (int k = 0; k < 4; k++) {
			j[k].id = (uint64_t)k;
			j[k].gpus = 1;
			j[k].profile = syn_builtin_find(m[k]);
			ncell[k] = syn__opt_cells(j[k].profile, 4, 75, cc[k], cm[k], ct[k], MAXC);
		}
		double bf = brute(j, 4, 0, 16, 300);
		ok(syn__opt_select(j, idx, 4, 16, 300, 4, 75, 10, cpus, mem, &obj, &bound, &err) == 0,
		   "phase 1 solves the named instance");
		is_near(obj, bf, 2e-3 * 4 * 12, "phase 1 equals brute force (named)");
		diag("named instance: OPT %.4f, brute force %.4f", obj, bf);

		syn_round_opts_t o;
		syn_round_stats_t st, st_tune;
		syn_round_opts_init(&o);
		o.allocator = SYN_ALLOC_OPT;
		ok(syn_round(&n, 1, j, 4, &o, &st, &err) == 0, "OPT round on one node");
		is_near(st.total_tput, bf, 2e-3 * 4 * 12, "OPT round reaches the brute-force total");
		is_int(st.opt_fallback, 0, "no fallback on one node");
		is_int(syn_check_round(&n, 1, j, 4, &err), 0, "OPT result passes the check");
		o.allocator = SYN_ALLOC_TUNE;
		syn_round(&n, 1, j, 4, &o, &st_tune, &err);
		ok(st_tune.total_tput <= st.total_tput + 1e-9, "TUNE %.3f <= OPT %.3f",
		   st_tune.total_tput, st.total_tput);
	}

	/* Regression (issue 3, OPT packing time-outs): one job's pooled
	 * optimum (7 cores) is larger than any node (6 cores), so phase 1's
	 * demands cannot be packed. OPT must still find the best per-node
	 * allocation (that job at 5 cores on one node, 5.0 in all) instead of
	 * falling back to TUNE's steps (4.0), and report phase 1 (6.0) as its
	 * bound. */
	{
		syn_node_t n[2] = { { .gpus = 2, .cpus = 6, .mem_gb = 100 },
				    { .gpus = 2, .cpus = 6, .mem_gb = 100 } };
		syn_profile_t big, flat;
		syn_round_opts_t o;
		syn_round_stats_t st;
		memset(&big, 0, sizeof big);
		strcpy(big.key, "big");
		big.n_cpu = 4;
		big.n_mem = 1;
		big.mem_gb[0] = 50;
		big.prop_cpus = 3;
		big.prop_mem_gb = 50;
		for (int i = 0; i < 4; i++) {
			big.cpus[i] = 1 + 2 * i;
			big.tput[i][0] = (double[]){ 0.5, 1, 2, 3 }[i];
		}
		flat = big;
		strcpy(flat.key, "flat");
		for (int i = 0; i < 4; i++)
			flat.tput[i][0] = 1;
		memset(j, 0, sizeof j);
		for (int k = 0; k < 4; k++) {
			j[k].id = (uint64_t)k;
			j[k].gpus = 1;
			j[k].arrival = k;
			j[k].profile = k == 0 ? &big : &flat;
		}
		syn_round_opts_init(&o);
		o.allocator = SYN_ALLOC_OPT;
		ok(syn_round(n, 2, j, 4, &o, &st, &err) == 0, "OPT round, unpackable phase 1");
		is_int(st.opt_fallback, 0, "no fallback to TUNE's steps");
		is_near(st.total_tput, 5.0, 1e-9, "best per-node allocation is 5.0");
		ok(st.opt_bound >= 6.0 - 1e-9, "bound (%.3f) at least phase 1's 6.0", st.opt_bound);
		ok(j[0].alloc.cpus_per_gpu == 5, "the big job at 5 cores");
		is_int(syn_check_round(n, 2, j, 4, &err), 0, "capacity and guarantee hold");
	}

	/* Random two-node instances against per-node brute force. */
	{
		int bad = 0, fb = 0, n_inst = 0;
		for (int t = 0; t < 60; t++) {
			int nj = 3 + t % 2, g[2], gpus = 2;
			double cap_c = 3 + urand() * 6, cap_m = 60 + urand() * 150;
			double fc[2] = { cap_c, cap_c }, fm[2] = { cap_m, cap_m };
			syn_node_t n[2];
			syn_round_opts_t o;
			syn_round_stats_t st;
			for (int s = 0; s < 2; s++) {
				n[s] = (syn_node_t){ .gpus = gpus, .cpus = cap_c, .mem_gb = cap_m };
				g[s] = gpus;
			}
			memset(j, 0, sizeof j);
			for (int k = 0; k < nj; k++) {
				small_profile(&prof[k]);
				j[k].id = (uint64_t)k;
				j[k].gpus = 1;
				j[k].arrival = k;
				j[k].profile = &prof[k];
				ncell[k] = syn__opt_cells(j[k].profile, cap_c / gpus, cap_m / gpus,
							  cc[k], cm[k], ct[k], MAXC);
			}
			double bf = brute_nodes(j, nj, 0, 2, g, fc, fm);
			syn_round_opts_init(&o);
			o.allocator = SYN_ALLOC_OPT;
			if (isinf(bf) || syn_round(n, 2, j, nj, &o, &st, &err) < 0)
				continue;
			n_inst++;
			fb += st.opt_fallback;
			if (fabs(st.total_tput - bf) > 2e-3 * bf + 1e-4 * 12 * 2 * nj ||
			    syn_check_round(n, 2, j, nj, &err) != 0) {
				bad++;
				diag("two-node instance %d: OPT %.5f, per-node brute force %.5f", t,
				     st.total_tput, bf);
			}
		}
		ok(n_inst > 40, "%d two-node instances solved", n_inst);
		is_int(fb, 0, "no fallback on two nodes");
		is_int(bad, 0, "OPT reaches the per-node brute-force optimum");
	}

	/* Random tiny instances. */
	for (int t = 0; t < 200; t++) {
		int nj = 2 + t % 3;
		double free_c = 4 + urand() * 16, free_m = 100 + urand() * 300;
		memset(j, 0, sizeof j);
		for (int k = 0; k < nj; k++) {
			small_profile(&prof[k]);
			j[k].id = (uint64_t)k;
			j[k].gpus = 1 + (urand() < 0.3);
			j[k].profile = urand() < 0.1 ? NULL : &prof[k];
			ncell[k] = syn__opt_cells(j[k].profile, 2, 40, cc[k], cm[k], ct[k], MAXC);
		}
		double bf = brute(j, nj, 0, free_c, free_m);
		int rc = syn__opt_select(j, idx, nj, free_c, free_m, 2, 40, 10, cpus, mem, &obj, &bound,
					 &err);
		if (isinf(bf)) {
			/* No combination fits: the ILP must say infeasible. */
			if (!(rc == -1 && errno == EDOM)) {
				fail++;
				diag("instance %d: brute force infeasible, OPT rc %d", t, rc);
			}
			continue;
		}
		checked++;
		if (rc != 0) {
			fail++;
			diag("instance %d: %s", t, err.text);
			continue;
		}
		/* The tie-break cost term can trade at most 1e-4 x cost. */
		if (fabs(obj - bf) > 1e-4 * 12 * 2 * nj + 1e-9) {
			mismatch++;
			diag("instance %d: OPT %.5f brute force %.5f", t, obj, bf);
		}
		if (obj > bf + 1e-9)
			worse++;
		/* The relaxation bound holds above every integer allocation. */
		if (!(bound >= bf - 1e-9)) {
			below++;
			diag("instance %d: relaxation bound %.5f < brute force %.5f", t, bound, bf);
		}
	}
	is_int(fail, 0, "phase 1 solves every feasible tiny instance, rejects infeasible ones");
	is_int(mismatch, 0, "phase 1 objective equals brute force");
	is_int(worse, 0, "phase 1 never exceeds the brute-force optimum");
	is_int(below, 0, "the relaxation bound is never below the brute-force optimum");
	ok(checked > 100, "%d feasible instances checked", checked);
	return done_testing();
}
