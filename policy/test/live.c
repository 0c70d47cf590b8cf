/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * live.t: the live-Slurm entry points (issue 13). syn_size_job() on cases
 * worked by hand (the built-in profiles on the paper's node, the issue's
 * own 2-GPU node, tasks, the cache limit) and syn_node_tune() likewise
 * (grants out of the pool, a newcomer taking back its allotment, another
 * job's allotment, the integer fill past the grid, the cache limit, an
 * exchange, a job allotted below its floor); then property tests over
 * random nodes, profiles and jobs: the request is never above the GPU
 * share in accounting and never below the GPU-proportional throughput; a
 * node plan keeps every allotment, never grants more than is free, keeps
 * every sized job at or above its floor, never lowers the total, and is
 * the same on the same input. Coordinated-prep groups (issue 15): the
 * members of a group are planned as one consumer, by hand and over random
 * nodes. Multi-node jobs (issue 14): the union profile, a node's part of
 * the dataset, and syn_size_job_nodes() giving each node the cache whose
 * union is the one-node best case, capped at the node's part. The seed is
 * fixed so that a failure reproduces; SEED overrides it.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synergy_policy.h"
#include "tests/tap.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-3)
#define P(k) syn_builtin_find(k)

/* The paper's node at half size: 4 GPUs, 12 cores, 250 GB; share 3 cores
 * and 64000 MB (62.5 GB) per GPU. */
static const syn_shape_t paper = { .gpus = 4, .cpus = 12, .mem_mb = 256000 };

static void test_size_builtin(void)
{
	syn_size_t s;

	ok(syn_size_job(&paper, 1, 1, P("resnet18"), 0.01, &s) == 0 && s.sized, "resnet18 sized");
	ok(s.cores == 3 && s.cpus_per_task == 3 && s.cache_mb == 64000 && s.mem_mb == 64000,
	   "resnet18: 3 cores, 62.5 GB, the share (1.0 needs both): got %d, %llu", s.cores,
	   (unsigned long long)s.mem_mb);
	ok(s.share_cores == 3 && s.share_mem_mb == 64000 && s.share_cache_mb == 64000,
	   "share: 3 cores, 64000 MB");
	ok(s.wish_cores == 6 && s.wish_cache_mb == 0 && NEAR(s.best_tput, 2.4) &&
		   NEAR(s.best_speedup, 2.4),
	   "resnet18 wishes 6 more cores (best case 9 cores, 2.4x): got +%d +%llu %.3f",
	   s.wish_cores, (unsigned long long)s.wish_cache_mb, s.best_tput);

	syn_size_job(&paper, 1, 1, P("gnmt"), 0.01, &s);
	ok(s.sized && s.cores == 1 && s.cache_mb == 21300 && s.wish_cores == 0 &&
		   s.wish_cache_mb == 0 && NEAR(s.speedup, 1),
	   "gnmt (flat): sized down to 1 core and 20.8 GB (21300 MB, rounded up), no wish: got "
	   "%d %llu",
	   s.cores, (unsigned long long)s.cache_mb);
	syn_size_job(&paper, 2, 1, P("gnmt"), 0.01, &s);
	ok(s.sized && s.cores == 2 && s.cache_mb == 42599,
	   "gnmt on 2 GPUs: 2 cores, 41.6 GB = 42599 MB: got %d %llu", s.cores,
	   (unsigned long long)s.cache_mb);
	syn_size_job(&paper, 1, 1, P("m5"), 0.01, &s);
	ok(s.sized && s.cores == 3 && s.cache_mb == 64000 && s.wish_cores == 3 &&
		   s.wish_cache_mb == 128000 && NEAR(s.best_speedup, 2.5),
	   "m5: the share, wishes +3 cores +125 GB (best case 6 cores, 187.5 GB, 2.5x)");
	ok(strstr(s.reason, "reclaimable") != NULL, "reason: %s", s.reason);

	syn_size_job(&paper, 1, 1, NULL, 0.01, &s);
	ok(s.sized && s.cores == 3 && s.mem_mb == 64000 && s.wish_cores == 0 && s.tput == 1,
	   "no profile: the share, no wish");
}

/* The issue's node: 2 GPUs, 4096 MB, ProcessMemMB 512; a profile that
 * doubles with 3 GB of cache was given 3.5 GB by the old job_submit. */
static void test_size_issue13(void)
{
	syn_shape_t n = { .gpus = 2, .cpus = 2, .mem_mb = 4096, .process_mem_mb = 512,
			  .max_cache_mb = 1 << 20 };
	syn_profile_t p;
	syn_size_t s;

	memset(&p, 0, sizeof p);
	strcpy(p.key, "doubles");
	p.n_cpu = 1;
	p.n_mem = 2;
	p.cpus[0] = 1;
	p.mem_gb[0] = 0;
	p.mem_gb[1] = 3;
	p.tput[0][0] = 1;
	p.tput[0][1] = 2;
	p.prop_cpus = 1;
	p.prop_mem_gb = 1.5;
	ok(syn_size_job(&n, 1, 1, &p, 0.01, &s) == 0 && s.sized, "issue 13 node: sized");
	ok(s.mem_mb <= 2048 && s.cores <= 1,
	   "issue 13: never above the GPU share (1 core, 2048 MB): got %d cores, %llu MB", s.cores,
	   (unsigned long long)s.mem_mb);
	ok(s.mem_mb == 2048 && s.cache_mb == 1536 && NEAR(s.prop_tput, 1.5),
	   "... the share itself: 512 + 1536 MB cache (1.5x of the profile's base)");
	ok(s.wish_cores == 0 && s.wish_cache_mb == 1536 && NEAR(s.best_tput, 2.0),
	   "... and 1536 MB more cache reclaimable (3 GB: 2.0): got +%llu %.3f",
	   (unsigned long long)s.wish_cache_mb, s.best_tput);
}

static void test_size_tasks_and_cap(void)
{
	syn_shape_t capped = paper;
	syn_profile_t flat;
	syn_size_t s;

	ok(syn_size_job(&paper, 1, 4, P("resnet18"), 0.01, &s) == 0 && !s.sized &&
		   strstr(s.reason, "tasks"),
	   "4 tasks on a 3-core share: left GPU-proportional: %s", s.reason);
	ok(syn_size_job(&paper, 1, 2, P("resnet18"), 0.01, &s) == 0 && !s.sized,
	   "2 tasks: 2 cores (0.68) cannot keep resnet18's 1.0: GPU-proportional: %s", s.reason);
	ok(syn_size_job(&paper, 1, 2, P("gnmt"), 0.01, &s) == 0 && s.sized && s.cores == 2 &&
		   s.cpus_per_task == 1,
	   "2 tasks of gnmt: 2 cores, 1 per task");
	ok(syn_size_job(&paper, 2, 3, P("gnmt"), 0.01, &s) == 0 && s.sized && s.cores == 3 &&
		   s.cpus_per_task == 1,
	   "3 tasks of gnmt on 2 GPUs: 3 cores (2 per GPU profiled, rounded up to whole tasks)");

	/* MaxCacheMB 32000: m5's share of cache is 31.25 GB, where its
	 * profile gives 0.8 + 0.2 x 10.45/41.7 = 0.850 at 3 cores and
	 * 0.8 + 0.5 x 10.45/41.7 = 0.925 from 4 cores on. */
	capped.max_cache_mb = 32000;
	syn_size_job(&capped, 1, 1, P("m5"), 0.01, &s);
	ok(s.sized && s.cores == 3 && s.cache_mb == 32000 && s.share_cache_mb == 32000 &&
		   NEAR(s.prop_tput, 0.8501),
	   "m5 with MaxCacheMB 32000: the share, floor 0.850: got %d %llu %.4f", s.cores,
	   (unsigned long long)s.cache_mb, s.prop_tput);
	ok(s.wish_cores == 1 && s.wish_cache_mb == 0 && NEAR(s.best_tput, 0.9253),
	   "... wishes 1 core only: more cache is not given: got +%d +%llu %.4f", s.wish_cores,
	   (unsigned long long)s.wish_cache_mb, s.best_tput);

	/* A flat profile measured from no cache: no cache at all. */
	memset(&flat, 0, sizeof flat);
	strcpy(flat.key, "flat");
	flat.n_cpu = 2;
	flat.n_mem = 2;
	flat.cpus[0] = 1;
	flat.cpus[1] = 2;
	flat.mem_gb[1] = 1;
	for (int i = 0; i < 2; i++)
		flat.tput[i][0] = flat.tput[i][1] = 1;
	flat.prop_cpus = 1;
	flat.prop_mem_gb = 1;
	capped.process_mem_mb = 1024;
	syn_size_job(&capped, 1, 1, &flat, 0.01, &s);
	ok(s.sized && s.cores == 1 && s.cache_mb == 0 && s.mem_mb == 1024,
	   "flat profile: 1 core and ProcessMemMB only");

	ok(syn_size_job(&paper, 5, 1, NULL, 0.01, &s) < 0 && errno == EINVAL &&
		   strstr(s.reason, "gpus"),
	   "5 GPUs on a 4-GPU node: EINVAL: %s", s.reason);
	ok(syn_size_job(&paper, 1, 0, NULL, 0.01, &s) < 0 && errno == EINVAL, "0 tasks: EINVAL");
	ok(syn_size_job(&paper, 1, 1, NULL, 1, &s) < 0 && errno == EINVAL, "eps 1: EINVAL");
	ok(syn_size_job(NULL, 1, 1, NULL, 0.01, &s) < 0 && errno == EINVAL, "NULL shape: EINVAL");
	flat.cpus[1] = 0.5;
	ok(syn_size_job(&paper, 1, 1, &flat, 0.01, &s) < 0 && strstr(s.reason, "profile"),
	   "bad profile named: %s", s.reason);
	ok(syn_size_job(&paper, 1, 1, NULL, 0.01, NULL) < 0 && errno == EINVAL, "NULL out: EINVAL");
}

static syn_node_job_t sjob(uint64_t id, const char *model, int cores, uint64_t mem)
{
	return (syn_node_job_t){ .id = id, .synergy = 1, .gpus = 1, .cores = cores, .mem_mb = mem,
				 .profile = model ? P(model) : NULL };
}

/* A profile that records a 10 GiB checkpoint: the job is sized with its
 * two snapshot buffers as process memory, 2 x ceil((10 GiB + 1 MiB) /
 * 2 MiB) x 2 MiB = 20484 MB, and its cache gives way. */
static void test_size_ckpt(void)
{
	syn_profile_t p = *P("resnet18");
	syn_node_job_t j[1];
	syn_node_stats_t st;
	syn_error_t err = { "" };
	syn_size_t s, s0;

	ok(syn_size_job(&paper, 1, 1, &p, 0.01, &s0) == 0 && s0.ckpt_mb == 0,
	   "no checkpoint recorded: no checkpoint memory");
	p.ckpt_state_bytes = UINT64_C(10) << 30;
	is_int(syn_ckpt_mb(&p), 20484, "syn_ckpt_mb: 10 GiB -> 20484 MB");
	ok(syn_size_job(&paper, 1, 1, &p, 0.01, &s) == 0 && s.sized, "sized with a checkpoint");
	is_int(s.ckpt_mb, 20484, "size: ckpt_mb 20484");
	ok(s.mem_mb == s.ckpt_mb + s.cache_mb && s.mem_mb <= s.share_mem_mb,
	   "mem_mb = checkpoint + cache (%llu = %llu + %llu), within the share (%llu)",
	   (unsigned long long)s.mem_mb, (unsigned long long)s.ckpt_mb,
	   (unsigned long long)s.cache_mb, (unsigned long long)s.share_mem_mb);
	is_int(s.share_cache_mb, 64000 - 20484, "the cache at the share gives way");
	ok(s.cores == s0.cores && s.share_cores == s0.share_cores, "cores as without it");
	p.ckpt_state_bytes = UINT64_C(40) << 30;
	ok(syn_size_job(&paper, 1, 1, &p, 0.01, &s) == 0 && !s.sized &&
		   strstr(s.reason, "checkpoint buffers"),
	   "a 40 GiB checkpoint does not fit the 62.5 GB share: GPU-proportional (%s)", s.reason);
	p.ckpt_state_bytes = SYN_PROFILE_CKPT_MAX_BYTES + 1;
	errno = 0;
	ok(syn_size_job(&paper, 1, 1, &p, 0.01, &s) == -1 && errno == EINVAL &&
		   strstr(s.reason, "state_bytes"),
	   "a checkpoint above 2^50 bytes: the profile is refused (%s)", s.reason);

	/* The node agent: an allotment of 64000 MB holds 20484 MB of buffers. */
	p.ckpt_state_bytes = UINT64_C(10) << 30;
	j[0] = (syn_node_job_t){ .id = 1, .synergy = 1, .gpus = 1, .cores = 3, .mem_mb = 64000,
				 .profile = &p };
	ok(syn_node_tune(&paper, j, 1, 0, &st, &err) == 0, "node plan with a checkpoint (%s)",
	   err.text);
	is_int(j[0].cache_mb, 64000 - 20484, "node: its allotted cache excludes the buffers");
	ok(j[0].hold_cache_mb >= j[0].cache_mb && j[0].hold_cache_mb + 20484 <= 256000,
	   "node: the plan holds within the node (%llu MB cache)",
	   (unsigned long long)j[0].hold_cache_mb);
}

static void test_node_hand(void)
{
	syn_node_job_t j[3];
	syn_node_stats_t st;
	syn_error_t err = { "" };
	int rc;

	/* golden1 at t=600: resnet18 and m5 at their share on the paper's
	 * node; 6 cores and 125 GB free. Best total: 6 cores each, m5 with
	 * 187.5 GB: 1.85 + 2.5. */
	j[0] = sjob(1, "resnet18", 3, 64000);
	j[1] = sjob(4, "m5", 3, 64000);
	ok(syn_node_tune(&paper, j, 2, 0, &st, &err) == 0, "plan: resnet18 + m5 (%s)", err.text);
	ok(j[0].hold_cores == 6 && j[0].hold_cache_mb == 64000 && NEAR(j[0].tput, 1.85),
	   "resnet18 holds 6 cores (1.85): got %d %llu", j[0].hold_cores,
	   (unsigned long long)j[0].hold_cache_mb);
	ok(j[1].hold_cores == 6 && j[1].hold_cache_mb == 192000 && NEAR(j[1].tput, 2.5),
	   "m5 holds 6 cores, 187.5 GB (2.5): got %d %llu", j[1].hold_cores,
	   (unsigned long long)j[1].hold_cache_mb);
	ok(st.free_cores == 6 && st.free_mem_mb == 128000 && st.granted_cores == 6 &&
		   st.granted_cache_mb == 128000 && j[1].grant_cache_mb == 128000,
	   "the whole pool (6 cores, 128000 MB) granted");

	/* A newcomer takes its allotment back: resnet18 alone on a 2-GPU,
	 * 6-core node grows to 6 cores; with m5 allotted beside it, the pool
	 * is empty and both run at their allotment. */
	syn_shape_t two = { .gpus = 2, .cpus = 6, .mem_mb = 128000 };
	j[0] = sjob(1, "resnet18", 3, 64000);
	syn_node_tune(&two, j, 1, 0, &st, &err);
	ok(j[0].hold_cores == 6 && j[0].grant_cores == 3, "alone: resnet18 holds 6 cores");
	j[1] = sjob(2, "m5", 3, 64000);
	ok(syn_node_tune(&two, j, 2, 0, &st, &err) == 0 && j[0].hold_cores == 3 &&
		   j[0].grant_cores == 0 && j[1].hold_cores == 3 && st.free_cores == 0,
	   "newcomer: resnet18's grant taken back, both at their allotment");

	/* Another job's allotment is not in the pool. */
	j[0] = (syn_node_job_t){ .id = 9, .synergy = 0, .gpus = 1, .cores = 6, .mem_mb = 100000 };
	j[1] = sjob(1, "resnet18", 3, 64000);
	ok(syn_node_tune(&paper, j, 2, 0, &st, &err) == 0 && j[0].hold_cores == 6 &&
		   j[0].grant_cores == 0 && j[1].hold_cores == 6 && st.free_cores == 3,
	   "a non-Synergy job's 6 cores stay its own: resnet18 gets the other 3");

	/* Past the grid: on 2 GPUs, 8 cores, 125 GB, resnet18 is sized to its
	 * 4-core share, gnmt to 1 core; step 4 takes resnet18 to the 6-core
	 * cell, the 9-core cell does not fit, and the last core goes to it
	 * anyway: 7 cores, 1.85 + 0.55/3 = 2.033. */
	syn_shape_t eight = { .gpus = 2, .cpus = 8, .mem_mb = 128000 };
	j[0] = sjob(1, "resnet18", 4, 64000);
	j[1] = sjob(2, "gnmt", 1, 21300);
	rc = syn_node_tune(&eight, j, 2, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 7 && NEAR(j[0].tput, 2.0333) && j[1].hold_cores == 1,
	   "integer fill: resnet18 at 7 cores (%d, %.4f)", j[0].hold_cores, j[0].tput);
	ok(syn_node_tune(&eight, j, 2, SYN_NODE_NO_LEFTOVER | SYN_NODE_NO_EXCHANGE, &st, &err) == 0 &&
		   j[0].hold_cores == 4 && st.granted_cores == 0,
	   "steps 4 and 5 off: no grant");

	/* MaxCacheMB 100000: m5 alone would take 187.5 GB; it gets 100000 MB
	 * and the 5 cores that pay at that cache (1.3 + 0.7 x 35.16/62.5). */
	syn_shape_t capped = paper;
	capped.max_cache_mb = 100000;
	j[0] = sjob(4, "m5", 3, 64000);
	rc = syn_node_tune(&capped, j, 1, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cache_mb == 100000 && j[0].hold_cores == 5 && NEAR(j[0].tput, 1.6938),
	   "cache capped at MaxCacheMB: m5 holds %d cores, %llu MB (%.4f)", j[0].hold_cores,
	   (unsigned long long)j[0].hold_cache_mb, j[0].tput);

	/* Three sensitive jobs and 3 cores, 62.5 GB free: m5 to 5 cores and
	 * 125 GB (2.0), alexnet to 4 cores (1.33), resnet18 stays; greedy step 4
	 * alone does not get there, one exchange does. */
	j[0] = sjob(1, "alexnet", 3, 64000);
	j[1] = sjob(2, "resnet18", 3, 64000);
	j[2] = sjob(3, "m5", 3, 64000);
	rc = syn_node_tune(&paper, j, 3, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 4 && j[1].hold_cores == 3 && j[2].hold_cores == 5 &&
		   j[2].hold_cache_mb == 128000 && NEAR(st.total_tput, 4.33) && st.exchanged == 1,
	   "exchange: total 4.33 (%.3f), %d exchange", st.total_tput, st.exchanged);

	/* Allotted below its floor (3 cores of a 5-core share): raised to the
	 * share first, then grown. */
	syn_shape_t ten = { .gpus = 2, .cpus = 10, .mem_mb = 128000 };
	j[0] = sjob(1, "resnet18", 3, 64000);
	ok(syn_node_tune(&ten, j, 1, 0, &st, &err) == 0 && st.raised == 1 && j[0].hold_cores == 9 &&
		   st.below_floor == 0,
	   "below its floor: raised, then 9 cores");
	j[1] = (syn_node_job_t){ .id = 9, .gpus = 1, .cores = 7, .mem_mb = 64000 };
	ok(syn_node_tune(&ten, j, 2, 0, &st, &err) == 0 && j[0].hold_cores == 3 &&
		   st.below_floor == 1,
	   "... and with no pool left it stays below and is counted");

	j[0] = sjob(1, "resnet18", 3, 64000);
	j[1] = sjob(2, "resnet18", 10, 64000);
	ok(syn_node_tune(&paper, j, 2, 0, &st, &err) < 0 && errno == EINVAL &&
		   strstr(err.text, "more than the node has"),
	   "allotments over the node: EINVAL: %s", err.text);
	ok(syn_node_tune(&paper, j, 1, 4, &st, &err) < 0 && errno == EINVAL, "bad flags: EINVAL");
	j[0].gpus = 0;
	ok(syn_node_tune(&paper, j, 1, 0, &st, &err) < 0 && strstr(err.text, "job 0"),
	   "a Synergy job without GPUs named: %s", err.text);
	ok(syn_node_tune(NULL, j, 1, 0, &st, &err) < 0 && errno == EINVAL, "NULL shape: EINVAL");
	ok(syn_node_tune(&paper, NULL, 0, 0, NULL, NULL) == 0, "no jobs: an empty plan");
}

/* A profile that saturates at 4 cores per GPU: 0.6, 0.8, 1.0 at 1, 2, 4. */
static void sat_profile(syn_profile_t *p, const char *key)
{
	memset(p, 0, sizeof *p);
	snprintf(p->key, sizeof p->key, "%s", key);
	p->n_cpu = 3;
	p->n_mem = 1;
	p->cpus[0] = 1;
	p->cpus[1] = 2;
	p->cpus[2] = 4;
	p->tput[0][0] = 0.6;
	p->tput[1][0] = 0.8;
	p->tput[2][0] = 1.0;
	p->prop_cpus = 2;
}

/* Issue 15: a group of co-located jobs needs about one job's prep CPU in
 * all, not k times; its members keep their allotments and floors. */
static void test_node_group(void)
{
	syn_shape_t n = { .gpus = 4, .cpus = 8, .mem_mb = 4096 };
	syn_profile_t p, other;
	syn_node_job_t j[4];
	syn_node_stats_t st;
	syn_error_t err = { "" };
	int rc;

	sat_profile(&p, "sat");
	sat_profile(&other, "sat2");
	/* A and B at their 2-core share, 2 GPUs free: 4 cores in the pool. */
	j[0] = (syn_node_job_t){ .id = 1, .synergy = 1, .gpus = 1, .cores = 2, .profile = &p };
	j[1] = (syn_node_job_t){ .id = 2, .synergy = 1, .gpus = 1, .cores = 2, .profile = &p };
	rc = syn_node_tune(&n, j, 2, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 4 &&
		   j[1].hold_cores == 4 && st.granted_cores == 4,
	   "apart: each is granted 2 cores to its 4-core best (%d, %d)", j[0].hold_cores,
	   j[1].hold_cores);
	j[0].group = j[1].group = 7;
	rc = syn_node_tune(&n, j, 2, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 2 &&
		   j[1].hold_cores == 2 && st.granted_cores == 0 && NEAR(j[0].tput, 1.0) &&
		   NEAR(j[1].tput, 1.0) && NEAR(j[0].prop_tput, 0.8),
	   "a group: their 4 cores together already prepare at the best, nothing granted, "
	   "each runs at 1.0 (floor 0.8) (%d, %d, %.3f)", j[0].hold_cores, j[1].hold_cores,
	   j[0].tput);
	/* C beside the group, 2 cores free: all of it goes to C. */
	j[2] = (syn_node_job_t){ .id = 3, .synergy = 1, .gpus = 1, .cores = 2, .profile = &p };
	rc = syn_node_tune(&n, j, 3, 0, &st, &err);
	ok(rc == 0 && j[2].hold_cores == 4 &&
		   j[0].hold_cores == 2 && j[1].hold_cores == 2 && NEAR(j[2].tput, 1.0),
	   "a job beside the group gets the pool (%d; group %d, %d)", j[2].hold_cores,
	   j[0].hold_cores, j[1].hold_cores);
	/* Members allotted 1 core each: the group needs 2 more in all (one
	 * job's best is 4), split between them, not 3 each. */
	j[0].cores = j[1].cores = 1;
	rc = syn_node_tune(&n, j, 2, 0, &st, &err);
	ok(rc == 0 &&
		   j[0].hold_cores + j[1].hold_cores == 4 && j[0].hold_cores == 2 &&
		   j[1].hold_cores == 2 && st.granted_cores == 2 && NEAR(j[1].tput, 1.0),
	   "1 core each: 2 granted in all, one each (%d, %d; granted %d)", j[0].hold_cores,
	   j[1].hold_cores, st.granted_cores);
	/* An odd grant: the first member listed gets the remainder. */
	j[2] = j[1];
	j[2].id = 3;
	j[0].cores = j[1].cores = j[2].cores = 1;
	j[0].group = j[1].group = j[2].group = 7;
	syn_shape_t six = { .gpus = 4, .cpus = 6, .mem_mb = 4096 };
	rc = syn_node_tune(&six, j, 3, 0, &st, &err);
	ok(rc == 0 && st.granted_cores == 1 &&
		   j[0].grant_cores == 1 && j[1].grant_cores == 0 && j[2].grant_cores == 0,
	   "three members, 1 core of need: to the first (%d %d %d)", j[0].grant_cores,
	   j[1].grant_cores, j[2].grant_cores);
	/* Another profile key, or another group, is planned apart. */
	j[0] = (syn_node_job_t){ .id = 1, .synergy = 1, .gpus = 1, .cores = 2, .profile = &p,
				 .group = 7 };
	j[1] = (syn_node_job_t){ .id = 2, .synergy = 1, .gpus = 1, .cores = 2, .profile = &other,
				 .group = 7 };
	rc = syn_node_tune(&n, j, 2, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 4 &&
		   j[1].hold_cores == 4, "same group, other key: apart");
	j[1].profile = &p;
	j[1].group = 8;
	rc = syn_node_tune(&n, j, 2, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 4 &&
		   j[1].hold_cores == 4, "other group: apart");
	/* A member alone is a job like any other. */
	j[0].group = 7;
	rc = syn_node_tune(&n, j, 1, 0, &st, &err);
	ok(rc == 0 && j[0].hold_cores == 4 &&
		   NEAR(j[0].tput, 1.0), "a member alone: its own best (%d)", j[0].hold_cores);
}

/* Property tests. */

static uint64_t rng;

static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static int irand(int lo, int hi)
{
	return lo + (int)(urand() * (hi - lo + 1));
}

/* A random profile, monotone or not, its axes starting at or above 0. */
static void random_profile(syn_profile_t *p, int monotone)
{
	double c = 0, m = 0;

	memset(p, 0, sizeof *p);
	strcpy(p->key, "rand");
	p->n_cpu = irand(1, 9);
	p->n_mem = irand(1, 6);
	c = urand() < 0.5 ? 0.5 : 0;
	for (int i = 0; i < p->n_cpu; i++)
		p->cpus[i] = (c += irand(1, 4));
	m = urand() < 0.3 ? -1 : 0;
	for (int j = 0; j < p->n_mem; j++)
		p->mem_gb[j] = m < 0 ? (m = 0) : (m += 0.5 + 60 * urand());
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem; j++) {
			if (!monotone) {
				p->tput[i][j] = 3 * urand();
				continue;
			}
			double base = 0.2 + 0.3 * urand();
			if (i > 0)
				base = p->tput[i - 1][j] + 0.5 * urand() * urand();
			if (j > 0 && p->tput[i][j - 1] + 0.2 * urand() > base)
				base = p->tput[i][j - 1] + 0.2 * urand();
			p->tput[i][j] = base;
		}
	p->prop_cpus = p->cpus[p->n_cpu / 2];
	p->prop_mem_gb = p->mem_gb[p->n_mem / 2];
}

static void random_shape(syn_shape_t *n)
{
	n->gpus = irand(1, 8);
	n->cpus = irand(n->gpus, 16 * n->gpus);
	n->mem_mb = (uint64_t)irand(500, 80000) * (uint64_t)n->gpus;
	n->process_mem_mb = urand() < 0.3 ? 0 : (uint64_t)irand(1, 4096);
	n->max_cache_mb = urand() < 0.5 ? 0 : (uint64_t)irand(1, (int)n->mem_mb);
}

/* The throughput the loader sees: cache beyond MaxCacheMB is not used. */
static double seen(const syn_profile_t *p, const syn_shape_t *n, int g, double c, double m)
{
	if (n->max_cache_mb && m > n->max_cache_mb)
		m = n->max_cache_mb;
	return syn_job_tput(p, c / g, m / 1024.0 / g);
}

/* The share, computed here independently of the library. */
static void share_of(const syn_shape_t *n, int g, int *c, uint64_t *mem, uint64_t *cache)
{
	*c = (int)floor((double)g * n->cpus / n->gpus + 1e-9);
	*mem = (uint64_t)floor((double)g * n->mem_mb / n->gpus + 1e-9);
	*cache = *mem > n->process_mem_mb ? *mem - n->process_mem_mb : 0;
	if (n->max_cache_mb && *cache > n->max_cache_mb)
		*cache = n->max_cache_mb;
}

#define NPROF 6
#define MAXJ 10

static void test_size_property(int instances)
{
	static syn_profile_t prof[NPROF];
	int bad_rc = 0, above = 0, below = 0, bad_share = 0, bad_wish = 0, bad_tasks = 0;
	int sized = 0, down = 0, unsized_ok = 1, wished = 0;

	for (int it = 0; it < instances; it++) {
		syn_shape_t n;
		syn_size_t s;
		int g, tasks, sc;
		uint64_t smem, scache;
		const syn_profile_t *p;

		random_shape(&n);
		if (it % 50 == 0)
			for (int k = 0; k < NPROF; k++)
				random_profile(&prof[k], k % 2 == 0);
		g = irand(1, n.gpus);
		tasks = urand() < 0.7 ? 1 : irand(2, 4);
		p = urand() < 0.05 ? NULL : &prof[irand(0, NPROF - 1)];
		if (syn_size_job(&n, g, tasks, p, 0.05 * urand(), &s) < 0) {
			bad_rc++;
			continue;
		}
		share_of(&n, g, &sc, &smem, &scache);
		if (s.share_cores != sc || s.share_mem_mb != smem || s.share_cache_mb != scache)
			bad_share++;
		if (!s.sized) {
			/* Only for the documented reasons. */
			double floor_t = p ? seen(p, &n, g, sc, (double)scache) : 1;
			int kmax = sc / tasks * tasks;
			if (!(sc < tasks || smem < n.process_mem_mb ||
			      (p && seen(p, &n, g, kmax, (double)scache) < floor_t - 1e-9)))
				unsized_ok = 0;
			continue;
		}
		sized++;
		if (s.cores > sc || s.mem_mb > smem)
			above++;
		if (s.cores % tasks || s.cores < tasks || s.cpus_per_task * tasks != s.cores ||
		    s.mem_mb != n.process_mem_mb + s.cache_mb)
			bad_tasks++;
		if (p) {
			double t = seen(p, &n, g, s.cores, (double)s.cache_mb);
			double pt = seen(p, &n, g, sc, (double)scache);
			if (t < pt - 1e-9 || !NEAR(t, s.tput) || !NEAR(pt, s.prop_tput))
				below++;
			double bt = seen(p, &n, g, s.cores + s.wish_cores,
					 (double)(s.cache_mb + s.wish_cache_mb));
			uint64_t cache_lim = n.mem_mb > n.process_mem_mb ? n.mem_mb - n.process_mem_mb : 0;
			if (n.max_cache_mb && cache_lim > n.max_cache_mb)
				cache_lim = n.max_cache_mb;
			if (s.wish_cores < 0 || s.cores + s.wish_cores > n.cpus ||
			    s.cache_mb + s.wish_cache_mb > cache_lim || !NEAR(bt, s.best_tput) ||
			    s.best_tput < s.tput - 1e-12)
				bad_wish++;
			if (s.wish_cores || s.wish_cache_mb)
				wished++;
		}
		if (s.cores < sc || s.mem_mb < smem)
			down++;
	}
	diag("%d instances: %d sized, %d below the share in some dimension, %d with a wish",
	     instances, sized, down, wished);
	ok(bad_rc == 0, "every sizing of valid input succeeds (%d failed)", bad_rc);
	ok(bad_share == 0, "the share is floor(g x node / GPUs), cache beside ProcessMemMB (%d wrong)",
	   bad_share);
	ok(above == 0, "never above the GPU share in accounting (%d above)", above);
	ok(below == 0, "never below the GPU-proportional throughput (%d below)", below);
	ok(bad_tasks == 0, "whole tasks, memory = ProcessMemMB + cache (%d wrong)", bad_tasks);
	ok(bad_wish == 0, "the wish fits the node and its throughput is what it says (%d wrong)",
	   bad_wish);
	ok(unsized_ok, "left GPU-proportional only for a documented reason");
	ok(sized > instances / 2 && down > 0 && wished > 0, "the cases were exercised");
}

struct plan_check {
	int rc, keeps, node, floor, total, det, cap;
};

static void test_node_property(int instances)
{
	static syn_profile_t prof[NPROF];
	struct plan_check bad = { 0 };
	int grants = 0, exchanges = 0, plans = 0;

	for (int it = 0; it < instances; it++) {
		syn_shape_t n;
		syn_node_job_t j[MAXJ], again[MAXJ];
		int sized_by_policy[MAXJ] = { 0 };
		syn_node_stats_t st, st2;
		syn_error_t err = { "" };
		int nj = 0, gpus_left, cores_left;
		uint64_t mem_left;
		double base_total = 0;

		memset(j, 0, sizeof j);
		random_shape(&n);
		if (it % 40 == 0)
			for (int k = 0; k < NPROF; k++)
				random_profile(&prof[k], k % 2 == 0);
		gpus_left = n.gpus;
		cores_left = n.cpus;
		mem_left = n.mem_mb;
		while (gpus_left > 0 && nj < MAXJ && urand() < 0.85) {
			int g = irand(1, gpus_left), kind = irand(0, 9);
			syn_node_job_t *x = &j[nj];
			syn_size_t s;

			memset(x, 0, sizeof *x);
			sized_by_policy[nj] = 0;
			x->id = (uint64_t)nj + 1;
			x->gpus = g;
			if (kind < 6) {
				/* A Synergy job as job_submit sizes it. */
				x->synergy = 1;
				x->profile = &prof[irand(0, NPROF - 1)];
				if (syn_size_job(&n, g, 1, x->profile, 0.01, &s) < 0 || !s.sized)
					continue;
				x->cores = s.cores;
				x->mem_mb = s.mem_mb;
				sized_by_policy[nj] = 1;
			} else {
				/* Another job, a Synergy job without a profile, or one
				 * with a request of its own: anything that fits. */
				x->synergy = kind >= 8;
				x->profile = kind == 9 ? &prof[irand(0, NPROF - 1)] : NULL;
				x->cores = irand(0, cores_left);
				x->mem_mb = (uint64_t)(urand() * (double)mem_left);
			}
			if (x->cores > cores_left || x->mem_mb > mem_left)
				continue;
			gpus_left -= g;
			cores_left -= x->cores;
			mem_left -= x->mem_mb;
			nj++;
		}
		memcpy(again, j, sizeof j[0] * (size_t)nj);
		plans++;
		if (syn_node_tune(&n, j, nj, 0, &st, &err) < 0) {
			if (bad.rc++ == 0)
				diag("instance %d: %s", it, err.text);
			continue;
		}
		syn_node_tune(&n, again, nj, 0, &st2, &err);
		if (memcmp(j, again, sizeof j[0] * (size_t)nj) || memcmp(&st, &st2, sizeof st))
			bad.det++;
		int hold_c = 0;
		uint64_t grant_m = 0, hold_m = 0;
		double total = 0;
		for (int k = 0; k < nj; k++) {
			const syn_node_job_t *x = &j[k];
			uint64_t cache = 0;
			if (x->synergy && x->mem_mb > n.process_mem_mb)
				cache = x->mem_mb - n.process_mem_mb;
			if (x->synergy && n.max_cache_mb && cache > n.max_cache_mb)
				cache = n.max_cache_mb;
			if (x->hold_cores < x->cores || x->hold_cache_mb < cache ||
			    x->cache_mb != cache || x->grant_cores != x->hold_cores - x->cores ||
			    x->grant_cache_mb != x->hold_cache_mb - cache ||
			    (!(x->synergy && x->profile) && (x->grant_cores || x->grant_cache_mb)))
				bad.keeps++;
			if (x->synergy && n.max_cache_mb && x->hold_cache_mb > n.max_cache_mb &&
			    x->grant_cache_mb)
				bad.cap++;
			hold_c += x->hold_cores;
			grant_m += x->grant_cache_mb;
			hold_m += x->mem_mb + x->grant_cache_mb;
			if (x->synergy && x->profile) {
				int sc;
				uint64_t smem, scache;
				share_of(&n, x->gpus, &sc, &smem, &scache);
				double t = seen(x->profile, &n, x->gpus, x->hold_cores,
						(double)x->hold_cache_mb);
				double pt = seen(x->profile, &n, x->gpus, sc, (double)scache);
				if (!NEAR(t, x->tput) || (sized_by_policy[k] && t < pt - 1e-9)) {
					if (bad.floor++ == 0)
						diag("instance %d job %d: g=%d allot %d/%llu hold %d/%llu tput %.6f (lib %.6f) floor %.6f (lib %.6f)",
						     it, k, x->gpus, x->cores, (unsigned long long)x->mem_mb, x->hold_cores,
						     (unsigned long long)x->hold_cache_mb, t, x->tput, pt, x->prop_tput);
				}
				total += t * x->gpus;
				base_total += seen(x->profile, &n, x->gpus, x->cores, (double)cache) * x->gpus;
				grants += x->grant_cores > 0 || x->grant_cache_mb > 0;
			}
		}
		if (hold_c > n.cpus || hold_m > n.mem_mb || st.granted_cores > st.free_cores ||
		    st.granted_cache_mb > st.free_mem_mb || grant_m != st.granted_cache_mb)
			bad.node++;
		/* Raising a job below its floor may cost nothing to others but
		 * is not a gain in itself; otherwise grants only add. */
		if (st.raised == 0 && total < base_total - 1e-9)
			bad.total++;
		exchanges += st.exchanged;
	}
	diag("%d plans, %d jobs granted something, %d exchanges", plans, grants, exchanges);
	ok(bad.rc == 0, "every plan of a valid node succeeds (%d failed)", bad.rc);
	ok(bad.keeps == 0, "every job keeps its allotment; only Synergy jobs with profiles get grants "
			   "(%d wrong)", bad.keeps);
	ok(bad.node == 0, "never more than the node has, grants within the pool (%d over)", bad.node);
	ok(bad.cap == 0, "no grant of cache beyond MaxCacheMB (%d)", bad.cap);
	ok(bad.floor == 0, "every job sized by the policy at or above its floor (%d below)", bad.floor);
	ok(bad.total == 0, "the plan never lowers the node's total throughput (%d lower)", bad.total);
	ok(bad.det == 0, "same input, same plan (%d differ)", bad.det);
	ok(grants > instances / 4 && exchanges > 0, "grants and exchanges were exercised");
}

/* 1 if p's throughput never falls with more cores or more cache. */
static int monotone(const syn_profile_t *p)
{
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem; j++)
			if ((i > 0 && p->tput[i][j] < p->tput[i - 1][j]) ||
			    (j > 0 && p->tput[i][j] < p->tput[i][j - 1]))
				return 0;
	return 1;
}

/* Groups over random nodes (issue 15): k members of one profile and GPU
 * count, sized by the policy, beside other jobs. Every member keeps its
 * allotment, grants stay in the pool, all members run at the group's
 * throughput (the profile at their cores together and their mean cache),
 * at or above each one's own floor when the profile never falls with more
 * cores or cache (the generator's "monotone" profiles may dip a little),
 * and the plan is the same on the same input. */
static void test_group_property(int instances)
{
	static syn_profile_t prof[NPROF];
	int bad_rc = 0, bad_keep = 0, bad_pool = 0, bad_tput = 0, bad_floor = 0, bad_det = 0;
	int groups = 0, granted = 0, mono = 0;

	for (int it = 0; it < instances; it++) {
		syn_shape_t n;
		syn_node_job_t j[MAXJ], again[MAXJ];
		syn_node_stats_t st, st2;
		syn_error_t err = { "" };
		int nj = 0, k, g, pi, cores_left, gpus_left;
		uint64_t mem_left;
		syn_size_t s;

		memset(j, 0, sizeof j);
		random_shape(&n);
		if (it % 40 == 0)
			for (int q = 0; q < NPROF; q++)
				random_profile(&prof[q], q % 2 == 0);
		g = irand(1, n.gpus > 1 ? n.gpus / 2 : 1);
		k = n.gpus / g >= 2 ? irand(2, n.gpus / g < 4 ? n.gpus / g : 4) : 1;
		pi = irand(0, NPROF - 1);
		if (k < 2 || syn_size_job(&n, g, 1, &prof[pi], 0.01, &s) < 0 || !s.sized)
			continue;
		cores_left = n.cpus;
		gpus_left = n.gpus;
		mem_left = n.mem_mb;
		for (int m = 0; m < k; m++) {
			j[nj] = (syn_node_job_t){ .id = (uint64_t)nj + 1, .synergy = 1, .gpus = g,
						  .cores = s.cores, .mem_mb = s.mem_mb,
						  .profile = &prof[pi], .group = 42 };
			cores_left -= s.cores;
			gpus_left -= g;
			mem_left -= s.mem_mb;
			nj++;
		}
		/* Another Synergy job beside the group, when it fits. */
		if (gpus_left > 0 && urand() < 0.7) {
			int pj = irand(0, NPROF - 1);
			syn_size_t t;

			if (syn_size_job(&n, 1, 1, &prof[pj], 0.01, &t) == 0 && t.sized &&
			    t.cores <= cores_left && t.mem_mb <= mem_left)
				j[nj++] = (syn_node_job_t){ .id = 99, .synergy = 1, .gpus = 1,
							    .cores = t.cores, .mem_mb = t.mem_mb,
							    .profile = &prof[pj] };
		}
		memcpy(again, j, sizeof j[0] * (size_t)nj);
		groups++;
		mono += monotone(&prof[pi]);
		if (syn_node_tune(&n, j, nj, 0, &st, &err) < 0) {
			if (bad_rc++ == 0)
				diag("instance %d: %s", it, err.text);
			continue;
		}
		syn_node_tune(&n, again, nj, 0, &st2, &err);
		if (memcmp(j, again, sizeof j[0] * (size_t)nj) || memcmp(&st, &st2, sizeof st))
			bad_det++;
		int hold_c = 0, sum_c = 0;
		uint64_t grant_m = 0, sum_m = 0;
		for (int m = 0; m < nj; m++) {
			if (j[m].hold_cores < j[m].cores || j[m].hold_cache_mb < j[m].cache_mb)
				bad_keep++;
			grant_m += j[m].grant_cache_mb;
			if (m < k) {
				hold_c += j[m].hold_cores;
				sum_c += j[m].cores;
				sum_m += j[m].hold_cache_mb;
			}
		}
		granted += hold_c > sum_c;
		if (st.granted_cores > st.free_cores || grant_m > st.free_mem_mb)
			bad_pool++;
		double t = seen(&prof[pi], &n, g, hold_c, (double)sum_m / k);
		for (int m = 0; m < k; m++) {
			if (!NEAR(j[m].tput, t) || !NEAR(j[m].tput, j[0].tput)) {
				if (bad_tput++ == 0)
					diag("instance %d member %d: tput %.6f, group %.6f", it, m,
					     j[m].tput, t);
			}
			if (monotone(&prof[pi]) && j[m].tput < j[m].prop_tput - 1e-9 &&
			    bad_floor++ == 0)
				diag("instance %d member %d of %d: g=%d allot %d/%llu hold %d/%llu tput "
				     "%.6f floor %.6f; node %d GPUs %d cores %llu MB pm %llu cap %llu",
				     it, m, k, g, j[m].cores, (unsigned long long)j[m].cache_mb,
				     j[m].hold_cores, (unsigned long long)j[m].hold_cache_mb, j[m].tput,
				     j[m].prop_tput, n.gpus, n.cpus, (unsigned long long)n.mem_mb,
				     (unsigned long long)n.process_mem_mb,
				     (unsigned long long)n.max_cache_mb);
		}
	}
	diag("%d groups planned (%d with a monotone profile), %d granted cores", groups, mono,
	     granted);
	ok(bad_rc == 0, "every plan with a group succeeds (%d failed)", bad_rc);
	ok(bad_keep == 0, "every member keeps its allotment (%d below)", bad_keep);
	ok(bad_pool == 0, "grants stay within the pool (%d over)", bad_pool);
	ok(bad_tput == 0, "members run at the group's throughput: their cores together, their "
			  "mean cache (%d differ)", bad_tput);
	ok(bad_floor == 0, "a profile that never falls: every member at or above its own floor "
			   "(%d below)", bad_floor);
	ok(bad_det == 0, "same input, same plan (%d differ)", bad_det);
	ok(groups > instances / 10 && granted > 0 && mono > groups / 10,
	   "groups, monotone profiles and grants to groups were exercised");
}

/* Issue 15: the group transform, the one definition node.c and the
 * simulator use. */
static void test_profile_group(void)
{
	syn_profile_t q;

	ok(syn_profile_group(P("resnet18"), 4, &q) == 0 &&
	   NEAR(q.cpus[q.n_cpu - 1], P("resnet18")->cpus[P("resnet18")->n_cpu - 1] / 4) &&
	   NEAR(q.prop_cpus, P("resnet18")->prop_cpus / 4) &&
	   NEAR(q.mem_gb[1], P("resnet18")->mem_gb[1]), "group of 4: the cores axis quarters, "
	   "memory unchanged");
	ok(NEAR(syn_profile_eval(&q, 1.5, 62.5), syn_profile_eval(P("resnet18"), 6, 62.5)),
	   "the group profile at c per GPU is the member's at 4c");
	ok(syn_profile_group(P("resnet18"), 1, &q) == 0 &&
	   memcmp(&q, P("resnet18"), sizeof q) == 0, "group of 1: a copy");
	ok(syn_profile_group(P("m5"), 0, &q) < 0 && errno == EINVAL, "0 members: EINVAL");
	ok(syn_profile_group(P("m5"), SYN_MAX_GROUP + 1, &q) < 0 && errno == EINVAL,
	   "more than SYN_MAX_GROUP: EINVAL");
	ok(syn_profile_group(&q, 2, &q) < 0 && errno == EINVAL, "in place: EINVAL");
}

/* Issue 14: a job on n nodes with the partitioned cache. */
static void test_size_nodes(void)
{
	syn_profile_t q, d;
	syn_size_t s1, s;

	ok(syn_profile_union(P("m5"), 2, &q) == 0 && NEAR(q.mem_gb[q.n_mem - 1],
							    P("m5")->mem_gb[P("m5")->n_mem - 1] / 2),
	   "union of 2 nodes: the memory axis halves");
	ok(NEAR(syn_profile_eval(&q, 3, 40), syn_profile_eval(P("m5"), 3, 80)),
	   "the union profile at m per GPU is the profile at 2m");
	ok(syn_profile_union(P("m5"), 0, &q) < 0 && errno == EINVAL, "0 nodes: EINVAL");
	ok(syn_profile_union(P("m5"), SYN_MAX_JOB_NODES + 1, &q) < 0 && errno == EINVAL,
	   "more than SYN_MAX_JOB_NODES: EINVAL");
	is_int((long long)syn_partition_cache_mb(100ULL << 30, 2), 52225,
	       "a node's part of 100 GiB on 2 nodes: 51200 MB + 2% + 1");
	is_int((long long)syn_partition_cache_mb(0, 2), 0, "unknown dataset: no cap");

	/* m5 on one node wishes 187.5 GB per GPU; on 2 nodes each node
	 * wishes half of it, on 3 nodes a third: the union is the same. */
	syn_size_job(&paper, 1, 1, P("m5"), 0.01, &s1);
	ok(syn_size_job_nodes(&paper, 1, 1, 1, P("m5"), 0.01, &s) == 0 &&
	   memcmp(&s, &s1, sizeof(s)) == 0, "one node: syn_size_job() itself");
	ok(syn_size_job_nodes(&paper, 1, 1, 2, P("m5"), 0.01, &s) == 0 && s.sized &&
	   s.cache_mb + s.wish_cache_mb == 96000 && NEAR(s.best_tput, s1.best_tput),
	   "m5 on 2 nodes: 93.75 GB per node (96000 MB), half the one-node best case, "
	   "same best throughput: got %llu + %llu", (unsigned long long)s.cache_mb,
	   (unsigned long long)s.wish_cache_mb);
	ok(syn_size_job_nodes(&paper, 1, 1, 3, P("m5"), 0.01, &s) == 0 && s.sized &&
	   s.cache_mb + s.wish_cache_mb == 64000 && NEAR(s.best_tput, s1.best_tput),
	   "m5 on 3 nodes: 62.5 GB per node, a third of the one-node best case: got %llu + %llu",
	   (unsigned long long)s.cache_mb, (unsigned long long)s.wish_cache_mb);

	/* A known dataset caps a node at its part, freeing memory below the
	 * share. */
	d = *P("m5");
	d.dataset_bytes = 100ULL << 30;
	ok(syn_size_job_nodes(&paper, 1, 1, 2, &d, 0.01, &s) == 0 && s.sized &&
	   s.cache_mb + s.wish_cache_mb <= 52225 && s.mem_mb <= paper.process_mem_mb + 52225,
	   "2 nodes, 100 GiB dataset: a node's cache never above its part (52225 MB): "
	   "got %llu + %llu", (unsigned long long)s.cache_mb, (unsigned long long)s.wish_cache_mb);
	ok(s.tput >= s.prop_tput - 1e-9, "and never below the floor");
	ok(syn_size_job_nodes(&paper, 1, 1, 0, &d, 0.01, &s) < 0 && errno == EINVAL &&
	   strstr(s.reason, "nodes"), "0 nodes: EINVAL naming nodes");
}


/* syn_node_harvest(): who lends, who harvests, by hand. */
static void test_harvest_hand(void)
{
	syn_harvest_job_t h[3];
	syn_error_t err = { "" };

	/* resnet18 on 3 cores beside gnmt using 0.2 of its 3: gnmt lends
	 * floor(2.8 + 1 - 0.5) = 3, and resnet18 gains from each. */
	h[0] = (syn_harvest_job_t){ .id = 1, .synergy = 1, .gpus = 1, .profile = P("resnet18"),
				    .allotted = 3, .hold = 3, .cache_mb = 64000, .spare = 0.1 };
	h[1] = (syn_harvest_job_t){ .id = 2, .synergy = 1, .gpus = 1, .profile = P("gnmt"),
				    .allotted = 3, .hold = 3, .cache_mb = 21300, .spare = 2.8 };
	ok(syn_node_harvest(h, 2, &err) == 0, "harvest: resnet18 + gnmt (%s)", err.text);
	ok(h[1].lend == 3 && h[1].harvest == 0 && h[0].lend == 0 && h[0].harvest == 3,
	   "gnmt lends 3 (2.8 idle), resnet18 harvests them: got lend %d harvest %d", h[1].lend,
	   h[0].harvest);

	/* Thresholds: 0.4 idle starts nothing, keeps a harvest going. */
	h[1].spare = 0.4;
	syn_node_harvest(h, 2, &err);
	ok(h[1].lend == 0 && h[0].harvest == 0, "0.4 idle: no harvest starts");
	h[1].lent = 1;
	syn_node_harvest(h, 2, &err);
	ok(h[1].lend == 1 && h[0].harvest == 1, "0.4 idle, harvested now: one core kept");
	h[1].spare = 0.2;
	syn_node_harvest(h, 2, &err);
	ok(h[1].lend == 0 && h[0].harvest == 0, "0.2 idle: the harvest ends");

	/* A harvester whose own cores look idle (it runs at idle priority,
	 * others run first there) goes on harvesting, and lends nothing. */
	h[1].lent = 1;
	h[1].spare = 2.8;
	h[0].spare = 0.9;
	h[0].harvesting = 1;
	syn_node_harvest(h, 2, &err);
	ok(h[0].lend == 0 && h[0].harvest == 3 && h[1].lend == 3,
	   "a harvester's own idle share does not make it a lender: got lend %d harvest %d",
	   h[0].lend, h[0].harvest);
	h[0].harvesting = 0;
	syn_node_harvest(h, 2, &err);
	ok(h[0].lend == 1 && h[0].harvest == 0, "the same job not harvesting lends (0.9 idle)");
	h[0].spare = 0.1;

	/* Unknown spare, a non-Synergy job, a flat borrower: nothing. */
	h[1].lent = 0;
	h[1].spare = -1;
	syn_node_harvest(h, 2, &err);
	ok(h[1].lend == 0 && h[0].harvest == 0, "unknown spare: lends nothing");
	h[1].spare = 2.8;
	h[1].synergy = 0;
	syn_node_harvest(h, 2, &err);
	ok(h[1].lend == 0 && h[0].harvest == 0, "a job Synergy did not size lends nothing");
	h[1].synergy = 1;
	h[0].profile = P("gnmt");
	syn_node_harvest(h, 2, &err);
	ok(h[1].lend == 3 && h[0].harvest == 0, "a flat profile harvests nothing");

	/* The job that gains more gets the core; a lender never harvests. */
	h[0] = (syn_harvest_job_t){ .id = 1, .synergy = 1, .gpus = 1, .profile = P("resnet18"),
				    .allotted = 4, .hold = 4, .cache_mb = 64000, .spare = 0 };
	h[1] = (syn_harvest_job_t){ .id = 2, .synergy = 1, .gpus = 1, .profile = P("alexnet"),
				    .allotted = 3, .hold = 3, .cache_mb = 64000, .spare = 0.6 };
	h[2] = (syn_harvest_job_t){ .id = 3, .synergy = 1, .gpus = 1, .profile = P("gnmt"),
				    .allotted = 1, .hold = 1, .cache_mb = 0, .spare = 0.9 };
	ok(syn_node_harvest(h, 3, &err) == 0 && h[1].lend == 1 && h[2].lend == 1 &&
		   h[1].harvest == 0 && h[2].harvest == 0 && h[0].harvest == 2,
	   "two lenders, resnet18 (gaining up to 9 cores) harvests both: got %d %d %d",
	   h[0].harvest, h[1].harvest, h[2].harvest);

	h[0].hold = 2;
	h[0].allotted = 3;
	ok(syn_node_harvest(h, 3, &err) < 0 && errno == EINVAL && strstr(err.text, "job 0"),
	   "a hold below the allotment is refused: %s", err.text);
}

/* Over random jobs: a lender never harvests, nothing lent twice, lends
 * within allotments, only Synergy jobs with profiles harvest, the same
 * on the same input. */
static void test_harvest_property(int rounds)
{
	syn_profile_t prof[6];
	syn_harvest_job_t h[6], again[6];
	syn_error_t err = { "" };
	int bad = 0;

	for (int r = 0; r < rounds && !bad; r++) {
		int n = irand(1, 6), lent = 0, got = 0;

		for (int i = 0; i < n; i++) {
			random_profile(&prof[i], urand() < 0.8);
			h[i] = (syn_harvest_job_t){ .id = (uint64_t)i + 1, .synergy = urand() < 0.85,
						    .gpus = irand(1, 4) };
			h[i].profile = urand() < 0.9 ? &prof[i] : NULL;
			h[i].allotted = irand(0, 12);
			h[i].hold = h[i].allotted + irand(0, 4);
			h[i].cache_mb = (uint64_t)irand(0, 100000);
			h[i].spare = urand() < 0.2 ? -1 : urand() * (h[i].allotted + 1);
			h[i].lent = irand(0, h[i].allotted);
			h[i].harvesting = urand() < 0.2;
		}
		memcpy(again, h, sizeof h);
		if (syn_node_harvest(h, n, &err) < 0) {
			bad = 1;
			ok(0, "round %d: refused: %s", r, err.text);
			break;
		}
		syn_node_harvest(again, n, &err);
		for (int i = 0; i < n; i++) {
			lent += h[i].lend;
			got += h[i].harvest;
			if (h[i].lend < 0 || h[i].lend > h[i].allotted || h[i].harvest < 0 ||
			    (h[i].lend && h[i].harvest) ||
			    (h[i].harvest && (!h[i].synergy || !h[i].profile)) ||
			    (h[i].lend && (!h[i].synergy || h[i].spare < 0 || h[i].harvesting)) ||
			    h[i].lend != again[i].lend || h[i].harvest != again[i].harvest)
				bad = 1;
		}
		if (got > lent)
			bad = 1;
		if (bad)
			ok(0, "round %d: lent %d harvested %d", r, lent, got);
	}
	ok(!bad, "harvest over %d random nodes: lenders never harvest, nothing lent twice, "
	   "deterministic", rounds);
}

int main(void)
{
	const char *seed = getenv("SEED");

	rng = seed ? strtoull(seed, NULL, 10) | 1 : 0x2545f4914f6cdd1dULL;
	test_size_builtin();
	test_size_issue13();
	test_node_group();
	test_size_tasks_and_cap();
	test_size_nodes();
	test_profile_group();
	test_node_hand();
	test_size_ckpt();
	test_size_property(20000);
	test_node_property(4000);
	test_group_property(3000);
	test_harvest_hand();
	test_harvest_property(5000);
	return done_testing();
}
