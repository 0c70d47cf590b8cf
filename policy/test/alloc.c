/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alloc.t: allocators on small clusters whose schedules were worked out by
 * hand (see the comments), the multi-server rule, pinned jobs, the live
 * advice entry point and argument checking.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "synergy_policy.h"
#include "tests/tap.h"

#define N_NODES 2

/* Two nodes of 4 GPUs, 12 cores, 250 GB: the share is 3 cores, 62.5 GB. */
static void small_cluster(syn_node_t *n)
{
	for (int i = 0; i < N_NODES; i++)
		n[i] = (syn_node_t){ .gpus = 4, .cpus = 12, .mem_gb = 250 };
}

/* Jobs of 1 GPU with the given built-in models, FIFO in that order. */
static void jobs_of(syn_job_t *j, int nj, const char *const *models)
{
	memset(j, 0, (size_t)nj * sizeof *j);
	for (int i = 0; i < nj; i++) {
		j[i].id = (uint64_t)i + 1;
		j[i].gpus = 1;
		j[i].profile = syn_builtin_find(models[i]);
		j[i].arrival = i;
		j[i].remaining = j[i].duration = 100;
	}
}

/* J1 resnet18, J2 gnmt, J3 alexnet, J4 resnet18; 1 GPU each, FIFO. */
static void four_jobs(syn_job_t *j)
{
	static const char *const m[] = { "resnet18", "gnmt", "alexnet", "resnet18" };
	jobs_of(j, 4, m);
}

static int at(const syn_job_t *j, int node, double c, double m)
{
	return j->alloc.n_place == 1 && j->alloc.place[0].node == node &&
	       j->alloc.cpus_per_gpu == c && j->alloc.mem_per_gpu == m;
}

static void test_tune_steps(void)
{
	syn_node_t n[N_NODES];
	syn_job_t j[4];
	syn_round_opts_t o;
	syn_round_stats_t st;
	syn_error_t err = { "" };

	small_cluster(n);
	four_jobs(j);
	syn_round_opts_init(&o);
	o.no_leftover = 1;
	o.no_exchange = 1;
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, &err), 0, "TUNE round (steps 1-3) succeeds");
	/* J1 at best case (9, 62.5) on node 0 (tie: lowest index); J2 at
	 * (1, 20.8) best-fit on the fuller node 0; J3 at (12, 125) only fits
	 * node 1; J4 fits nowhere at best case or share (node 0 has 2 cores,
	 * node 1 none): step 3 picks node 0 (most free), pushes J1 back to
	 * (3, 62.5), and places J4 there at the share. */
	ok(at(&j[0], 0, 3, 62.5), "J1 pushed back to its share on node 0");
	ok(at(&j[1], 0, 1, 20.8), "J2 (gnmt) at 1 core, 20.8 GB on node 0");
	ok(at(&j[2], 1, 12, 125), "J3 (alexnet) at its best case on node 1");
	ok(at(&j[3], 0, 3, 62.5), "J4 at the share on node 0 after push-back");
	is_int(st.best_case, 3, "three placed at best case");
	is_int(st.downgraded, 1, "one placed at the share");
	is_int(st.pushed_back, 1, "one co-located job pushed back");
	is_int(st.placed, 4, "all four placed");
	is_near(j[2].alloc.tput, 2.94, 1e-9, "J3 runs 2.94x");
	is_near(n[0].free_cpus, 5, 1e-9, "node 0: 12 - 3 - 1 - 3 = 5 cores free");
	is_int(n[1].free_gpus, 3, "node 1: 3 GPUs free");
	is_int(syn_check_round(n, N_NODES, j, 4, &err), 0, "capacity and guarantee hold");

	/* Step 4 hands node 0's 5 spare cores to J1 and J4 (resnet18), and
	 * node 1's spare memory to nobody (J3 is at its peak). */
	double before = st.total_tput;
	four_jobs(j);
	o.no_leftover = 0;
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, &err), 0, "TUNE round with step 4 succeeds");
	is_int(st.exchanged + st.swapped, 0, "step 5 finds nothing to gain here");
	ok(st.upgraded >= 1, "leftover upgrades applied (%d)", st.upgraded);
	ok(st.total_tput > before + 0.5, "total throughput rises: %.3f -> %.3f", before, st.total_tput);
	ok(j[0].alloc.cpus_per_gpu > 3 && j[3].alloc.cpus_per_gpu > 3 &&
		   j[0].alloc.cpus_per_gpu + j[3].alloc.cpus_per_gpu <= 11,
	   "J1 and J4 share the spare cores: %g + %g", j[0].alloc.cpus_per_gpu,
	   j[3].alloc.cpus_per_gpu);
	ok(at(&j[1], 0, 1, 20.8) && at(&j[2], 1, 12, 125), "J2, J3 unchanged");
	is_int(syn_check_round(n, N_NODES, j, 4, &err), 0, "capacity and guarantee hold after step 4");
}

static void test_exchange(void)
{
	static const char *const m2[] = { "resnet18", "m5" };
	static const char *const m4[] = { "gnmt", "m5", "resnet18", "resnet50" };
	syn_node_t n[N_NODES];
	syn_job_t j[4];
	syn_round_opts_t o;
	syn_round_stats_t st;
	syn_error_t err = { "" };

	/* One node of 4 GPUs, 12 cores, 250 GB. J1 (resnet18) takes its best
	 * case, 9 cores and 62.5 GB (2.4x); J2 (m5) wants 6 cores and 187.5 GB,
	 * finds 3 cores: the share (1.0x). Step 4 has 125 GB and no core to
	 * give: neither job gains from memory alone. Step 5: J1 giving 3
	 * cores back (6, 62.5: 1.85x, -0.55) lets J2 reach its best case
	 * (6, 187.5: 2.5x, +1.5) with the spare memory. Nothing else gains. */
	small_cluster(n);
	jobs_of(j, 2, m2);
	syn_round_opts_init(&o);
	o.no_exchange = 1;
	is_int(syn_round(n, 1, j, 2, &o, &st, &err), 0, "steps 1-4 on one node");
	ok(at(&j[0], 0, 9, 62.5) && at(&j[1], 0, 3, 62.5), "J1 at (9, 62.5), J2 at the share");
	is_near(st.total_tput, 3.4, 1e-9, "total 2.4 + 1.0");
	jobs_of(j, 2, m2);
	o.no_exchange = 0;
	is_int(syn_round(n, 1, j, 2, &o, &st, &err), 0, "steps 1-5 on one node");
	ok(at(&j[0], 0, 6, 62.5), "J1 gives back to (6, 62.5): got (%g, %g)", j[0].alloc.cpus_per_gpu,
	   j[0].alloc.mem_per_gpu);
	ok(at(&j[1], 0, 6, 187.5), "J2 at its best case (6, 187.5): got (%g, %g)",
	   j[1].alloc.cpus_per_gpu, j[1].alloc.mem_per_gpu);
	is_int(st.exchanged, 1, "one exchange");
	is_near(st.total_tput, 4.35, 1e-9, "total 1.85 + 2.5");
	is_int(syn_check_round(n, 1, j, 2, &err), 0, "capacity and guarantee hold after step 5");

	/* Two nodes. J1 (gnmt) at (1, 20.8) on node 0 (tie: lowest index); J2
	 * (m5) at its best case (6, 187.5) on the fuller node 0; J3 (resnet18)
	 * at (9, 62.5) only fits node 1; J4 (resnet50) wants (4, 62.5): node 0
	 * has 5 cores but 41.7 GB, node 1 3 cores: the share on node 1. No
	 * exchange on a node gains (J3 losing 3 cores costs 0.55, J4 gains at
	 * most 0.15). Swap: J1 is at its peak on node 0, which has cores to
	 * spare; J1 moves to node 1 into J4's (3, 62.5), and J4 moves to node 0,
	 * where J1's going leaves 6 cores and 62.5 GB: (4, 62.5), 1.15x. */
	small_cluster(n);
	jobs_of(j, 4, m4);
	o.no_exchange = 1;
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, &err), 0, "steps 1-4 on two nodes");
	ok(at(&j[0], 0, 1, 20.8) && at(&j[1], 0, 6, 187.5) && at(&j[2], 1, 9, 62.5) &&
		   at(&j[3], 1, 3, 62.5),
	   "J1, J2 on node 0; J3, J4 (share) on node 1");
	is_near(st.total_tput, 6.9, 1e-9, "total 1 + 2.5 + 2.4 + 1");
	jobs_of(j, 4, m4);
	o.no_exchange = 0;
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, &err), 0, "steps 1-5 on two nodes");
	ok(at(&j[0], 1, 1, 20.8), "J1 swapped to node 1");
	ok(at(&j[3], 0, 4, 62.5), "J4 swapped to node 0 at (4, 62.5): node %d (%g, %g)",
	   j[3].alloc.place[0].node, j[3].alloc.cpus_per_gpu, j[3].alloc.mem_per_gpu);
	ok(at(&j[1], 0, 6, 187.5) && at(&j[2], 1, 9, 62.5), "J2, J3 stay");
	is_int(st.swapped, 1, "one swap");
	is_near(st.total_tput, 7.05, 1e-9, "total 1 + 2.5 + 2.4 + 1.15");
	is_int(n[0].free_gpus, 2, "node 0 still holds two jobs");
	is_int(syn_check_round(n, N_NODES, j, 4, &err), 0, "capacity and guarantee hold after the swap");
}

static void test_prop_greedy(void)
{
	syn_node_t n[N_NODES];
	syn_job_t j[4];
	syn_round_opts_t o;
	syn_round_stats_t st;

	small_cluster(n);
	four_jobs(j);
	syn_round_opts_init(&o);
	o.allocator = SYN_ALLOC_PROP;
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, NULL), 0, "PROP round succeeds");
	/* Best-fit packs all four onto node 0 at the share. */
	ok(at(&j[0], 0, 3, 62.5) && at(&j[1], 0, 3, 62.5) && at(&j[2], 0, 3, 62.5) &&
		   at(&j[3], 0, 3, 62.5),
	   "PROP: all at (3, 62.5) on node 0");
	is_near(st.total_tput, 4.0, 1e-9, "PROP total throughput 4.0");

	four_jobs(j);
	o.allocator = SYN_ALLOC_GREEDY;
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, NULL), 0, "GREEDY round succeeds");
	/* GREEDY never downgrades: J4 waits although 5 GPUs are free. */
	ok(at(&j[0], 0, 9, 62.5) && at(&j[1], 0, 1, 20.8) && at(&j[2], 1, 12, 125),
	   "GREEDY: J1-J3 at best case");
	is_int(j[3].alloc.n_place, 0, "GREEDY: J4 waits");
	is_int(st.waiting, 1, "one waiting");
	is_near(st.total_tput, 2.4 + 1 + 2.94, 1e-9, "GREEDY total throughput");

	four_jobs(j);
	o.allocator = SYN_ALLOC_TUNE;
	o.ordering = SYN_ORDER_SRTF;
	j[3].remaining = 1; /* SRTF puts J4 first: it gets its best case */
	is_int(syn_round(n, N_NODES, j, 4, &o, &st, NULL), 0, "TUNE+SRTF round succeeds");
	ok(at(&j[3], 0, 9, 62.5), "SRTF: J4 first, at its best case on node 0");
}

static void test_multi_server(void)
{
	syn_node_t n[3];
	syn_job_t j;
	syn_round_opts_t o;
	syn_round_stats_t st;
	syn_error_t err;

	small_cluster(n);
	memset(&j, 0, sizeof j);
	j.id = 5;
	j.gpus = 6;
	j.profile = syn_builtin_find("resnet18");
	syn_round_opts_init(&o);
	is_int(syn_round(n, N_NODES, &j, 1, &o, &st, NULL), 0, "6-GPU job round succeeds");
	/* Best case (9 cores/GPU) hosts one GPU per node: too few. At the
	 * share, node 0 takes 4 GPUs and node 1 two, 3 cores each. */
	ok(j.alloc.n_place == 2 && j.alloc.place[0].node == 0 && j.alloc.place[0].gpus == 4 &&
		   j.alloc.place[1].node == 1 && j.alloc.place[1].gpus == 2,
	   "6 GPUs split 4 + 2");
	ok(j.alloc.cpus_per_gpu == 3 && j.alloc.mem_per_gpu == 62.5, "same share per GPU on both");
	is_near(n[0].free_cpus, 0, 1e-9, "node 0 gives 12 cores for 4 GPUs");
	is_near(n[1].free_cpus, 6, 1e-9, "node 1 gives 6 cores for 2 GPUs");

	/* Three nodes of 2 GPUs, 24 cores, 500 GB (share 12 cores, 250 GB):
	 * best case (9, 62.5) fits two GPUs per node. */
	for (int i = 0; i < 3; i++)
		n[i] = (syn_node_t){ .gpus = 2, .cpus = 24, .mem_gb = 500 };
	j.gpus = 4;
	is_int(syn_round(n, 3, &j, 1, &o, &st, &err), 0, "4-GPU job on 2-GPU nodes");
	ok(j.alloc.n_place == 2 && j.alloc.place[0].gpus == 2 && j.alloc.place[1].gpus == 2 &&
		   j.alloc.cpus_per_gpu == 9 && j.alloc.mem_per_gpu == 62.5,
	   "spans two nodes at its best case");
	is_int(syn_check_round(n, 3, &j, 1, &err), 0, "check holds");
	j.gpus = 7;
	is_int(syn_round(n, 3, &j, 1, &o, &st, &err), 0, "7-GPU job on 6 GPUs: round succeeds");
	is_int(j.alloc.n_place, 0, "and the job waits");
}

static void test_pinned(void)
{
	syn_node_t n[N_NODES];
	syn_job_t j[2];
	syn_round_opts_t o;
	syn_error_t err = { "" };

	small_cluster(n);
	memset(j, 0, sizeof j);
	j[0].id = 1, j[0].gpus = 4, j[0].profile = syn_builtin_find("gnmt"), j[0].pinned = 1;
	j[0].alloc.n_place = 1;
	j[0].alloc.place[0] = (syn_place_t){ 0, 4 };
	j[0].alloc.cpus_per_gpu = 1, j[0].alloc.mem_per_gpu = 20.8;
	j[1].id = 2, j[1].gpus = 1, j[1].profile = syn_builtin_find("alexnet"), j[1].arrival = -1;
	syn_round_opts_init(&o);
	is_int(syn_round(n, N_NODES, j, 2, &o, NULL, &err), 0, "round with a pinned job");
	ok(j[0].alloc.place[0].node == 0 && j[0].alloc.cpus_per_gpu == 1, "pinned job kept");
	ok(at(&j[1], 1, 12, 125), "new job placed around it on node 1");
	j[0].alloc.place[0].gpus = 3;
	ok(syn_round(n, N_NODES, j, 2, &o, NULL, &err) == -1 && errno == EINVAL &&
		   strstr(err.text, "id 1"),
	   "pinned placement not matching its GPUs rejected: %s", err.text);
}

static void test_advise(void)
{
	syn_node_t n[N_NODES];
	syn_advice_t a;
	const syn_profile_t *r18 = syn_builtin_find("resnet18");

	small_cluster(n);
	for (int i = 0; i < N_NODES; i++) {
		n[i].free_gpus = 4;
		n[i].free_cpus = 12;
		n[i].free_mem_gb = 250;
	}
	is_int(syn_advise(n, N_NODES, 1, r18, 0.01, &a), 0, "advise on an empty cluster");
	ok(a.step == 1 && a.cpus_per_gpu == 9 && a.mem_per_gpu == 62.5 && a.node == 0,
	   "best case on node 0: %s", a.reason);
	n[0].free_cpus = 0;
	n[1].free_cpus = 4;
	is_int(syn_advise(n, N_NODES, 1, r18, 0.01, &a), 0, "advise, cores short");
	ok(a.step == 2 && a.cpus_per_gpu == 3 && a.node == 1, "share on node 1: %s", a.reason);
	n[1].free_cpus = 1;
	is_int(syn_advise(n, N_NODES, 1, r18, 0.01, &a), 0, "advise, no cores free");
	ok(a.step == 3 && a.cpus_per_gpu == 3 && a.node >= 0, "push-back needed: %s", a.reason);
	n[0].free_gpus = n[1].free_gpus = 0;
	is_int(syn_advise(n, N_NODES, 1, r18, 0.01, &a), 0, "advise, no GPUs free: not an error");
	ok(a.step == 0 && a.node == -1 && a.cpus_per_gpu == 9, "asks best case: %s", a.reason);
	is_int(syn_advise(n, N_NODES, 4, r18, 0.01, &a), 0, "4 GPUs, none free");
	ok(a.cpus_per_gpu == 3 && a.mem_per_gpu == 62.5, "capped by node size: %s", a.reason);
	is_int(syn_advise(n, N_NODES, 8, NULL, 0.01, &a), 0, "8 GPUs on 4-GPU nodes");
	ok(a.cpus_per_gpu == 3 && strstr(a.reason, "span"), "spanning job gets the share: %s", a.reason);
	is_int(syn_advise(n, N_NODES, 1, NULL, 0.01, &a), 0, "no profile");
	ok(a.cpus_per_gpu == 3 && a.tput == 1.0, "no profile: the share");
	ok(syn_advise(n, N_NODES, 0, r18, 0.01, &a) == -1 && errno == EINVAL &&
		   strstr(a.reason, "gpus"),
	   "0 GPUs rejected: %s", a.reason);
	n[1].gpus = 0;
	ok(syn_advise(n, N_NODES, 1, r18, 0.01, &a) == -1 && strstr(a.reason, "nodes"),
	   "node without GPUs rejected: %s", a.reason);
}

static void test_args(void)
{
	syn_node_t n[N_NODES];
	syn_job_t j[4];
	syn_round_opts_t o;
	syn_error_t err;
	syn_allocator_t a;
	syn_ordering_t ord;
	syn_profile_t bad;

	small_cluster(n);
	four_jobs(j);
	syn_round_opts_init(&o);
	j[2].gpus = 0;
	ok(syn_round(n, N_NODES, j, 4, &o, NULL, &err) == -1 && errno == EINVAL &&
		   strstr(err.text, "id 3"),
	   "job with 0 GPUs named: %s", err.text);
	four_jobs(j);
	bad = *syn_builtin_find("alexnet");
	bad.cpus[4] = 1;
	j[1].profile = &bad;
	ok(syn_round(n, N_NODES, j, 4, &o, NULL, &err) == -1 && strstr(err.text, "cpus[4]"),
	   "bad profile named: %s", err.text);
	four_jobs(j);
	n[1].cpus = -1;
	ok(syn_round(n, N_NODES, j, 4, &o, NULL, &err) == -1 && strstr(err.text, "node 1"),
	   "bad node named: %s", err.text);
	ok(syn_allocator_parse("TUNE", &a) == 0 && a == SYN_ALLOC_TUNE, "parse TUNE");
	ok(syn_ordering_parse("las", &ord) == 0 && ord == SYN_ORDER_LAS, "parse las");
	ok(syn_ordering_parse("lifo", &ord) == -1 && errno == EINVAL, "unknown ordering");
	is_str(syn_allocator_name(SYN_ALLOC_OPT), "opt", "name of OPT");
}

static void test_orders(void)
{
	syn_job_t j[3];
	int idx[3];

	memset(j, 0, sizeof j);
	/* id  arrival attained gpus remaining duration */
	j[0] = (syn_job_t){ .id = 1, .gpus = 4, .arrival = 0, .attained = 10, .remaining = 50, .duration = 60 };
	j[1] = (syn_job_t){ .id = 2, .gpus = 1, .arrival = 5, .attained = 30, .remaining = 10, .duration = 40 };
	j[2] = (syn_job_t){ .id = 3, .gpus = 1, .arrival = 8, .attained = 0, .remaining = 90, .duration = 90 };
	syn_order(j, 3, SYN_ORDER_FIFO, 100, idx);
	ok(idx[0] == 0 && idx[1] == 1 && idx[2] == 2, "FIFO by arrival");
	syn_order(j, 3, SYN_ORDER_SRTF, 100, idx);
	ok(idx[0] == 1 && idx[1] == 0 && idx[2] == 2, "SRTF by remaining");
	/* SRTF is remaining time: job 3 ran last round at 3x its share, so
	 * its 90 s of work take 30 s, less than job 1's 50. */
	j[2].alloc = (syn_alloc_t){ .n_place = 1, .place = { { 0, 1 } }, .tput = 3, .prop_tput = 1 };
	syn_order(j, 3, SYN_ORDER_SRTF, 100, idx);
	ok(idx[0] == 1 && idx[1] == 2 && idx[2] == 0, "SRTF divides remaining work by the last rate");
	memset(&j[2].alloc, 0, sizeof j[2].alloc);
	/* LAS keys: 40, 30, 0 */
	syn_order(j, 3, SYN_ORDER_LAS, 100, idx);
	ok(idx[0] == 2 && idx[1] == 1 && idx[2] == 0, "LAS by attained x GPUs");
	/* FTF rho: (100+50)/60 = 2.5, (95+10)/40 = 2.625, (92+90)/90 = 2.02 */
	syn_order(j, 3, SYN_ORDER_FTF, 100, idx);
	ok(idx[0] == 1 && idx[1] == 0 && idx[2] == 2, "FTF by finish-time fairness");
}

/*
 * Regression: syn_round must order jobs before it clears their previous
 * allocations, or SRTF never sees the rate a job ran at. One GPU, two
 * jobs: A has 20 s of work and has not run; B has 30 s left but ran at 3x
 * its share, so it needs 10 s and goes first.
 */
static void test_srtf_round_rate(void)
{
	syn_node_t n = { .gpus = 1, .cpus = 3, .mem_gb = 62.5 };
	syn_job_t j[2];
	syn_round_opts_t o;

	memset(j, 0, sizeof j);
	j[0] = (syn_job_t){ .id = 1, .gpus = 1, .arrival = 0, .remaining = 20, .duration = 20 };
	j[1] = (syn_job_t){ .id = 2, .gpus = 1, .arrival = 1, .remaining = 30, .duration = 90 };
	j[1].alloc = (syn_alloc_t){ .n_place = 1, .place = { { 0, 1 } }, .cpus_per_gpu = 3,
				    .mem_per_gpu = 62.5, .tput = 3, .prop_tput = 1 };
	syn_round_opts_init(&o);
	o.ordering = SYN_ORDER_SRTF;
	is_int(syn_round(&n, 1, j, 2, &o, NULL, NULL), 0, "SRTF round with previous rates");
	ok(j[1].alloc.n_place == 1 && j[0].alloc.n_place == 0,
	   "SRTF round: the job with less remaining time (B) gets the GPU");
}

int main(void)
{
	test_tune_steps();
	test_exchange();
	test_prop_greedy();
	test_multi_server();
	test_pinned();
	test_advise();
	test_args();
	test_orders();
	test_srtf_round_rate();
	return done_testing();
}
