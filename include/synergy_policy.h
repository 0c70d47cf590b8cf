/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergy_policy.h: the Synergy allocation core (libsynpolicy), free of Slurm.
 *
 * The model is a cluster of nodes (GPUs, CPU cores, memory) and a set of
 * jobs, each with a GPU count, an optional data-stall sensitivity profile
 * (common/profile.h) and the data that orders jobs (arrival, attained
 * service, remaining work). A round allocates GPUs, cores and memory to the
 * jobs in the order of a scheduling policy with one of four allocators:
 *
 *   PROP    GPU-proportional: every job gets the node's cores and memory per
 *           GPU times its GPUs (what Slurm's DefCpuPerGPU/DefMemPerGPU do).
 *   GREEDY  best-case demand or nothing: a job whose best-case demand does
 *           not fit anywhere waits, even with GPUs free.
 *   TUNE    Synergy-TUNE: (1) best-fit at best-case demand on the node with
 *           the least free resources that fits; (2) else the GPU-proportional
 *           demand; (3) else a node with enough free GPUs, whose co-located
 *           jobs holding more than their proportional share are pushed back
 *           to it, then placed at the proportional demand; and, after all
 *           jobs are placed, (4) leftover: cores and memory still free on a
 *           node go to its jobs, best marginal gain per share first, one
 *           profile cell at a time (work-conserving; never lowers a job, so
 *           the guarantee holds; opts.no_leftover turns it off); (5)
 *           exchange: on each node, the pairwise move between two of its
 *           jobs (one gives cores/memory back, never below its floor, the
 *           other takes them) that raises their total most, until none
 *           does; across nodes, a job that would gain trades places with a
 *           job of as many GPUs at its peak on a node with room to spare,
 *           then steps 4-5 re-run on both nodes (opts.no_exchange turns it
 *           off). Steps 1-3 are the paper's; 4 and 5 are ours: greedy
 *           best-case placement lets early sensitive jobs take the whole of
 *           their best case while later ones fall back to the share, and
 *           concentrates sensitive jobs on the fullest nodes; 5 undoes
 *           what that costs (see BENCHMARKS.md, TUNE vs OPT). Jobs spanning
 *           nodes take no part in step 5.
 *   OPT     Synergy-OPT: an ILP picks one profile cell per job maximising the
 *           total normalised throughput under cluster CPU and memory with the
 *           fairness floor, then a second program packs jobs onto nodes
 *           (GLPK, time-limited; for small and medium instances).
 *
 * A job spanning several nodes gets the same cores and memory per GPU on
 * each (the multi-server rule: resources per node in proportion to its GPUs
 * there), so an allocation is a per-GPU (cpus, mem) plus a placement.
 *
 * The guarantee: every placed job's normalised throughput at its allocation
 * is at least its throughput at the GPU-proportional share of its nodes.
 * syn_check_round() verifies it (and the capacities); with SYN_DEBUG the
 * library checks it after every round and fails the round if it is broken.
 *
 * Best-case demand: among the profile's grid cells whose throughput is within
 * a fraction eps (default 1%) of the profile's maximum, the one with the
 * smallest cpus/prop_cpus + mem/prop_mem (the cost in GPU-proportional
 * shares), ties broken by fewer cores, then less memory. A job without a
 * profile is treated as insensitive (throughput 1.0 everywhere) and gets the
 * GPU-proportional share.
 *
 * On a live Slurm cluster, where a running job's allocation never shrinks,
 * syn_size_job() (what job_submit asks for: never above the GPU share) and
 * syn_node_tune() (the node agent's reclaimable grants over a node's
 * running jobs) carry TUNE and the guarantee there; see "Live Slurm" below.
 *
 * Conventions: functions return 0 / a pointer on success, -1 / NULL with
 * errno set on failure; a caller-owned syn_error_t (common/error.h), when given, says
 * what went wrong and names the bad input. The library never logs, exits or
 * aborts, and is not thread-safe per call argument (distinct arguments may be
 * used from distinct threads).
 */
#ifndef SYNERGY_POLICY_H
#define SYNERGY_POLICY_H

#include <stdint.h>

#include "common/error.h"
#include "common/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum syn_allocator {
	SYN_ALLOC_PROP = 0,
	SYN_ALLOC_GREEDY,
	SYN_ALLOC_TUNE,
	SYN_ALLOC_OPT,
} syn_allocator_t;

typedef enum syn_ordering {
	SYN_ORDER_FIFO = 0, /* earliest arrival first */
	SYN_ORDER_SRTF,     /* least remaining time first: work left / last rate */
	SYN_ORDER_LAS,      /* least attained service x GPUs first */
	SYN_ORDER_FTF,      /* largest finish-time fairness ratio first */
} syn_ordering_t;

/* Most nodes one job may span. */
#define SYN_MAX_SPAN 16

/* A node: capacity and what is free of it. */
typedef struct syn_node {
	int gpus;
	double cpus, mem_gb;
	int free_gpus;
	double free_cpus, free_mem_gb;
} syn_node_t;

/* Part of a job's placement: gpus GPUs on node (an index into the node array). */
typedef struct syn_place {
	int node;
	int gpus;
} syn_place_t;

/*
 * A job's allocation: the same cpus_per_gpu and mem_per_gpu on every node of
 * its placement. n_place == 0 means not placed. tput is the normalised
 * per-GPU throughput at the allocation, prop_tput the one at the
 * GPU-proportional share of its nodes (the guarantee's floor).
 */
typedef struct syn_alloc {
	int n_place;
	syn_place_t place[SYN_MAX_SPAN];
	double cpus_per_gpu, mem_per_gpu;
	double tput, prop_tput;
} syn_alloc_t;

/*
 * A job as the policy sees it. Times are in seconds; "work" is seconds of
 * running at the GPU-proportional share. profile may be NULL (insensitive).
 * A pinned job runs where alloc says and cannot be moved or shrunk (the live
 * cluster's running jobs); a round keeps it and places the others around it.
 */
typedef struct syn_job {
	uint64_t id;
	int gpus;
	const syn_profile_t *profile;
	double arrival;   /* submit time */
	double attained;  /* seconds it has run so far */
	double remaining; /* work left */
	double duration;  /* total work */
	int pinned;
	syn_alloc_t alloc; /* result of a round; input when pinned; SRTF reads
			    * the previous one (tput / prop_tput is the rate) */
} syn_job_t;

/* Options of a round; initialise with syn_round_opts_init(). */
typedef struct syn_round_opts {
	syn_allocator_t allocator;
	syn_ordering_t ordering;
	double now;          /* current time, for FTF */
	double eps;          /* best-case tolerance, default 0.01 */
	double opt_time_limit_s; /* per GLPK solve, default 10 */
	int no_leftover;     /* TUNE: skip step 4 (leftover), default 0 */
	int no_exchange;     /* TUNE: skip step 5 (exchange), default 0 */
} syn_round_opts_t;

/* What a round did. */
typedef struct syn_round_stats {
	int placed, waiting;   /* jobs placed / left unplaced */
	int best_case;         /* placed at their best-case demand (step 1) */
	int downgraded;        /* placed at the proportional demand (step 2) */
	int pushed_back;       /* co-located jobs pushed back to their share (step 3) */
	int upgraded;          /* leftover upgrades applied (step 4) */
	int exchanged;         /* exchanges between jobs of a node (step 5) */
	int swapped;           /* swaps of jobs across nodes (step 5) */
	int opt_fallback;      /* OPT: packing fell back to TUNE's steps */
	double opt_bound;      /* OPT: optimum of phase 1's linear relaxation (cores and
				* memory pooled, cells fractional): a proven upper
				* bound on any allocation's total_tput; NaN if the
				* relaxation could not be solved */
	double total_tput;     /* sum over placed jobs of tput x gpus */
} syn_round_stats_t;

/* Fill o with the defaults: TUNE, FIFO, now 0, eps 0.01, OPT limit 10 s. */
void syn_round_opts_init(syn_round_opts_t *o);

/*
 * Allocate one round. Node free amounts are recomputed from the capacities
 * minus the pinned jobs; on return they hold what is left. Jobs are visited
 * in the ordering's order (the array itself is not reordered) and each
 * non-pinned job's alloc is written (n_place 0 if it waits). st may be NULL.
 * Returns 0, or -1 with errno EINVAL (bad node, job or option: err names it)
 * or ETIME / ENOMEM / EDOM (OPT could not solve in its time limit, no
 * memory, or, under SYN_DEBUG, the guarantee check failed). On failure the
 * allocations are unspecified.
 */
int syn_round(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
	      const syn_round_opts_t *o, syn_round_stats_t *st, syn_error_t *err);

/*
 * Check a round's result: no node over capacity (GPUs, cores, memory) and
 * every placed job at or above its GPU-proportional throughput, with its
 * placement adding up to its GPUs. Returns the number of violations (0 when
 * all hold) and describes the first in err; -1 with EINVAL for bad arguments.
 */
int syn_check_round(const syn_node_t *nodes, int n_nodes, const syn_job_t *jobs, int n_jobs,
		    syn_error_t *err);

/*
 * The order in which a round visits jobs: writes a permutation of
 * 0..n_jobs-1 into idx (n_jobs entries, caller-owned). Ties are broken by
 * arrival, then id, so the result is deterministic. Returns 0 or -1/EINVAL.
 */
int syn_order(const syn_job_t *jobs, int n_jobs, syn_ordering_t ord, double now, int *idx);

/* Advice for one job on the live cluster, filled by syn_advise(). */
typedef struct syn_advice {
	double cpus_per_gpu, mem_per_gpu; /* what the job should ask for */
	int node;          /* a node it fits on now, or -1 */
	int step;          /* 1 best-case, 2 proportional, 3 needs push-back, 0 nothing free */
	double tput, prop_tput;
	char reason[160];
} syn_advice_t;

/*
 * "What should this job ask for now": given the nodes (capacity and free
 * amounts) and one job of gpus GPUs with profile p (NULL: none known), fill
 * out with per-GPU cores and memory, the node TUNE would pick, and a reason.
 * Infeasible input is not an error: with no node free enough the advice is
 * the best-case demand capped by the largest node's per-GPU capacity, node
 * -1 and a reason that says so. Returns 0, or -1 with EINVAL for malformed
 * arguments (out->reason names it when out is not NULL).
 */
int syn_advise(const syn_node_t *nodes, int n_nodes, int gpus, const syn_profile_t *p,
	       double eps, syn_advice_t *out);

/*
 * Best-case demand of profile p (rule at the top of this file), limited to
 * cells with at most max_cpus cores and max_mem GB per GPU (pass <= 0 for no
 * limit). Writes *cpus and *mem per GPU. Returns 0, or -1 with EINVAL
 * (NULL arguments, eps outside [0,1), or no cell within the limits).
 */
int syn_best_case(const syn_profile_t *p, double eps, double max_cpus, double max_mem,
		  double *cpus, double *mem);

/* Normalised per-GPU throughput of a job with profile p (NULL: 1.0). */
double syn_job_tput(const syn_profile_t *p, double cpus, double mem_gb);

/*
 * Live Slurm. On a real cluster Slurm cannot shrink a running job's
 * allocation, so TUNE's steps 3 and 5 (push a job back to its share, take
 * resources from one running job for another) cannot act on what Slurm
 * allotted. Synergy keeps its guarantee there by construction:
 *
 *   - syn_size_job() sizes a job for job_submit: in Slurm's accounting it
 *     never holds more than its GPU share of the node (it may hold less: a
 *     data-light job is sized down), at integer cores and MB, and never
 *     below its GPU-proportional throughput. So every later job finds its
 *     share free. What the job's best case wants beyond that is its
 *     "reclaimable wish".
 *   - syn_node_tune() is TUNE on one node over the jobs running there (the
 *     node agent calls it at every job start and end, and periodically): each
 *     Synergy job keeps what Slurm allotted it, and the cores and memory no
 *     job was allotted are granted to them, reclaimably, by TUNE's leftover
 *     and exchange steps on their profiles.
 *
 * A job's GPU share of a node in Slurm's accounting, for g of the node's
 * G GPUs: floor(g x cpus / G) cores and floor(g x mem_mb / G) MB, what
 * DefCpuPerGPU and DefMemPerGPU give when set to the node's per-GPU amounts.
 * A Synergy job's memory is its process memory (process_mem_mb, one per job
 * per node, as the SPANK plugin reads it, plus its checkpoint buffers when
 * its profile records a checkpoint: syn_ckpt_mb) plus its cache; its cache
 * at the share is min(share memory - process memory, max_cache_mb). Its
 * GPU-proportional throughput (the floor) is its profile's throughput at
 * share cores and share cache, per GPU; a profile never predicts more from
 * cache above max_cache_mb, as the loader never gets it.
 */

/* The shape of a node, in Slurm's integer units. */
typedef struct syn_shape {
	int gpus;                /* GPUs (>= 1) */
	int cpus;                /* CPUs Slurm allots (>= 1) */
	uint64_t mem_mb;         /* memory Slurm allots, MB */
	uint64_t process_mem_mb; /* a job's memory beside its cache, per job per node */
	uint64_t max_cache_mb;   /* most cache one job holds on a node; 0: no limit */
} syn_shape_t;

/* A job's sizing, filled by syn_size_job(). Throughputs are the profile's
 * normalised per-GPU values; speedup = tput / prop_tput. */
typedef struct syn_size {
	int sized;               /* 1: ask Slurm for cores and mem_mb below; 0: leave the
				  * job GPU-proportional (reason says why) */
	int cores;               /* cores per node: cpus_per_task x tasks */
	int cpus_per_task;
	uint64_t mem_mb;         /* memory per node: process_mem_mb + ckpt_mb + cache_mb */
	uint64_t cache_mb;       /* the loader's cache within mem_mb */
	int share_cores;         /* the job's GPU share in accounting */
	uint64_t share_mem_mb;
	uint64_t share_cache_mb; /* cache at the share (see above) */
	int wish_cores;          /* reclaimable wish: cores and cache above cores and */
	uint64_t wish_cache_mb;  /* cache_mb that take the job to its best case */
	double tput;             /* at (cores, cache_mb) */
	double prop_tput;        /* at the share: the floor */
	double best_tput;        /* at (cores + wish_cores, cache_mb + wish_cache_mb) */
	double speedup, best_speedup; /* tput and best_tput over prop_tput */
	char reason[160];
	uint64_t ckpt_mb;        /* of mem_mb: CheckFreq's snapshot buffers (syn_ckpt_mb) */
} syn_size_t;

/*
 * Memory, in MB, that a job of profile p needs for CheckFreq's two snapshot
 * buffers (coordl_ckpt(3)): twice its checkpoint's size (ckpt_state_bytes
 * plus 1 MiB of small sections), each rounded up to 2 MiB; 0 when the
 * profile records no checkpoint. Sizing counts it as process memory of the
 * job: syn_size_job() asks for process_mem_mb + syn_ckpt_mb(p) + cache, so
 * the cache, not the job, gives way; syn_node_tune() counts it likewise.
 */
uint64_t syn_ckpt_mb(const syn_profile_t *p);

/*
 * Size a job of `gpus` GPUs and `tasks` tasks per node on a node of shape
 * `node`, with profile p (NULL: none known, insensitive) and best-case
 * tolerance eps:
 *
 *   request: among integer cores k (a multiple of tasks, at least the
 *     profile's smallest profiled cores x gpus, at most share_cores) and
 *     integer cache c (at least the smallest profiled cache x gpus, at most
 *     share_cache_mb), for each k the least cache whose throughput reaches
 *     T = max(prop_tput, (1 - eps) x the highest throughput within the
 *     share); of those, the cheapest in shares (k / share_cores + c /
 *     share_cache_mb), ties to fewer cores, then less cache. So the request
 *     is never above the share, never below the floor, and below the share
 *     where the profile says the job does not need it.
 *   wish: the best-case demand (syn_best_case) limited to the node (cores,
 *     and cache up to min(max_cache_mb, mem_mb - process_mem_mb)), rounded up
 *     to integers; the wish is how far that lies above the request in each
 *     dimension (0 where it does not, and 0 in both when it gains nothing).
 *
 * Without a profile the request is the share and the wish 0. The job is
 * left GPU-proportional (sized 0, not an error) when its tasks need more
 * cores than its share, or its share of memory does not hold
 * process_mem_mb. Deterministic; no allocation. Returns 0, or -1 with errno
 * EINVAL for malformed input (a NULL, gpus < 1 or above node->gpus, tasks < 1,
 * eps outside [0, 1), a bad shape or profile): out->reason names it when out
 * is not NULL.
 */
int syn_size_job(const syn_shape_t *node, int gpus, int tasks, const syn_profile_t *p,
		 double eps, syn_size_t *out);

/*
 * Multi-node jobs and the partitioned cache (CoorDL's model). A job whose
 * ranks span n nodes reads through the loader's partitioned cache: each
 * node caches a different part of the dataset and serves the others'
 * misses, so the job's effective cache is the union of its nodes' caches:
 * n nodes of m per GPU each serve like one cache of n x m per GPU (hit
 * rate min(1, union / dataset)), and a node never needs more than its part
 * of the dataset, about dataset / n.
 */

/* Most nodes syn_profile_union() and syn_size_job_nodes() take (the
 * loader's most peers, SYNERGY_PEERS_MAX in synergy_env.h). */
#define SYN_MAX_JOB_NODES 1024

/*
 * q = p as seen by one node of a job spanning `nodes` nodes with the
 * partitioned cache: the memory axis (and prop_mem_gb) divided by nodes,
 * so that q at m per GPU is p at nodes x m, the union; throughputs and
 * rates are p's. nodes = 1 copies p. q may not alias p. Returns 0, or -1
 * with errno EINVAL (NULL, nodes outside 1..SYN_MAX_JOB_NODES).
 */
int syn_profile_union(const syn_profile_t *p, int nodes, syn_profile_t *q);

/*
 * The cache one node of a `nodes`-node job needs to hold its part of a
 * dataset of dataset_bytes, in MB (MiB): ceil(dataset_bytes x 1.02 /
 * nodes / 2^20) + 1 (2% for parts that differ in size, since items are
 * dealt by position, and 1 MB for the cache's index and rounding). 0 when
 * the dataset size is unknown (0) or nodes < 1.
 */
uint64_t syn_partition_cache_mb(uint64_t dataset_bytes, int nodes);

/*
 * syn_size_job() for a job of `gpus` GPUs and `tasks` tasks on each of
 * `nodes` nodes of shape `node`: every node gets the same request. With
 * nodes > 1 and a profile, the job is sized on syn_profile_union(p, nodes)
 * (the cache per node whose union over the nodes gives the profile's best
 * cache), and a node's cache never exceeds syn_partition_cache_mb() of the
 * profile's dataset (when known), beside max_cache_mb. nodes = 1 is
 * syn_size_job(). Errors as syn_size_job(), plus EINVAL for nodes outside
 * 1..SYN_MAX_JOB_NODES.
 */
int syn_size_job_nodes(const syn_shape_t *node, int gpus, int tasks, int nodes,
		       const syn_profile_t *p, double eps, syn_size_t *out);

/*
 * Coordinated prep (CoorDL's hyperparameter search, issue 15). The k
 * co-located trials of one search (same dataset and pipeline, same GPUs)
 * fetch and prepare every batch once and hand it to all of them, so their
 * prep cores work for all k at once: at C cores in all, each of them runs
 * as one job with C cores would. Planned as one job of k x g GPUs, the
 * group's profile is the members' with its cores axis divided by k: q at
 * C / (k g) cores per GPU is p at C / g, the throughput of each member;
 * the memory axis (cache per GPU, the members' mean) is p's. The one
 * definition of that transform, used by syn_node_tune() and the simulator.
 */

/* Most members syn_profile_group() takes. */
#define SYN_MAX_GROUP 4096

/*
 * q = the profile of a group of k members with profile p (above): p with
 * its cores axis and prop_cpus divided by k; throughputs, memory axis and
 * rates are p's. k = 1 copies p. q may not alias p. Returns 0, or -1 with
 * errno EINVAL (NULL, p == q, k outside 1..SYN_MAX_GROUP).
 */
int syn_profile_group(const syn_profile_t *p, int k, syn_profile_t *q);

/* One job running on a node, for syn_node_tune(). */
typedef struct syn_node_job {
	uint64_t id;                  /* for messages */
	int synergy;                  /* 1: a Synergy job; 0: any other job, whose
				       * allotment only counts against the node */
	int gpus;                     /* GPUs on this node (a Synergy job: >= 1) */
	int cores;                    /* cores Slurm allotted it on this node */
	uint64_t mem_mb;              /* memory Slurm allotted it on this node */
	const syn_profile_t *profile; /* a Synergy job's profile; NULL: insensitive, no grant */
	uint64_t group;               /* coordinated prep: Synergy jobs with the same
				       * non-zero group, GPUs and profile key share one
				       * stream of prepared batches (0: none; see below) */
	/* Output (another job: hold = its allotment, no grant, tputs 1). */
	uint64_t cache_mb;            /* its allotted cache: min(mem_mb - process_mem_mb,
				       * max_cache_mb), 0 below process_mem_mb */
	int grant_cores;              /* reclaimable grant above the allotment */
	uint64_t grant_cache_mb;
	int hold_cores;               /* what it should hold now: cores + grant_cores, */
	uint64_t hold_cache_mb;       /* cache_mb + grant_cache_mb */
	double tput;                  /* throughput at the hold */
	double prop_tput;             /* at its GPU share of the node: the floor */
} syn_node_job_t;

/* What syn_node_tune() did. */
typedef struct syn_node_stats {
	int free_cores;          /* no job was allotted these: the pool of grants */
	uint64_t free_mem_mb;
	int granted_cores;       /* handed out as grants (<= free_cores) */
	uint64_t granted_cache_mb; /* (<= free_mem_mb) */
	int raised;              /* jobs allotted below their floor, raised toward it */
	int upgraded;            /* leftover upgrades (step 4) */
	int exchanged;           /* exchanges between two jobs (step 5) */
	int below_floor;         /* Synergy jobs left below their floor: only a job
				  * allotted below it, when the pool could not lift it */
	double total_tput;       /* sum over Synergy jobs of tput x gpus */
} syn_node_stats_t;

/* syn_node_tune() flags. */
#define SYN_NODE_NO_LEFTOVER 0x1 /* skip step 4 (and the integer fill) */
#define SYN_NODE_NO_EXCHANGE 0x2 /* skip step 5 */

/*
 * Node-level TUNE: plan the cores and cache each Synergy job running on one
 * node should hold now. Every job keeps its allotment (hold >= allotted in
 * both), and the pool, the node's cores and memory no job was allotted,
 * goes to the Synergy jobs with profiles as reclaimable grants:
 *   0. a Synergy job whose allotment runs below its floor (sized by hand or
 *      for another node shape) is first raised toward its share, in array
 *      order, as far as the pool allows;
 *   4. leftover: the profile-cell upgrade with the best gain per share among
 *      the jobs, until none fits (policy TUNE's step 4, on this node);
 *   5. exchange: the move between two jobs (one gives part of its grant
 *      back, never below its allotment; the other takes it) that raises
 *      their total most, until none does (TUNE's step 5 on a node);
 * then holds are rounded down to whole cores and MB, and the cores and MB
 * still in the pool go, one core or one stretch of a profile's memory axis
 * at a time, to the job that gains most from them (interpolated).
 * Groups: the k jobs of one group (same group, GPUs and profile key) prepare
 * each batch once for all of them, so the plan treats them as one job of
 * k x g GPUs that holds their cores and cache together, whose throughput
 * per GPU at C cores and mean cache m is their profile's at C cores for g
 * GPUs and m: a group is granted what one job's prep needs above what its
 * members were allotted together, not k times one job's grant, and a core
 * granted to it counts for all k members. Its grant is split evenly between
 * its members (the first ones listed get the remainder); each member's
 * tput is the group's. Every member keeps its allotment, and its floor is
 * still its own share's throughput: with a profile that never falls with
 * more cores or cache, the group at its members' allotments together runs
 * at least as fast as each member alone, so every member stays at or above
 * its floor; a profile that dips (noise) may put members below it, which
 * below_floor counts, and still no member holds less than its allotment.
 * The plan promises: every hold >= its allotment; the grants together never
 * exceed the pool (so whatever the node's other jobs hold, allotments plus
 * grants fit the node); every Synergy job at or above its floor unless its
 * own allotment was below it (counted in below_floor); a pure function of
 * its input (same input, same plan), independent of what jobs hold now. It
 * is the agent's part to apply it without overlap: take grants back (cache
 * first, then its memory limit) before a newcomer's tasks run and before
 * growing anyone; a newcomer's allotment is never in the pool.
 * st may be NULL; flags are SYN_NODE_*. Returns 0, or -1 with errno EINVAL
 * (bad shape, job or flags, or allotments adding up to more GPUs, cores or
 * memory than the node has: err names it; outputs unspecified) or ENOMEM.
 */
int syn_node_tune(const syn_shape_t *node, syn_node_job_t *jobs, int n, int flags,
		  syn_node_stats_t *st, syn_error_t *err);

/*
 * Harvesting idle cycles (live Slurm, the node agent). A job may leave
 * much of what Slurm allotted it unused (a language model's loader needs a
 * fraction of its one core), and with every core of the node allotted no
 * grant can reach a job that would gain. The agent may then let such a
 * job's cores be "harvested": added to another job's cpuset while every
 * thread of the harvester runs at idle priority (SCHED_IDLE), so that the
 * kernel runs the owner's threads first on its own cores whenever they are
 * runnable. The owner keeps its cores as before; the harvester gets only
 * cycles nobody else wants, and pays for them with its own priority (its
 * threads also yield to anything else that runs on its cores, as system
 * daemons), so only jobs that gain by the profile harvest. A job is never
 * both: a lender keeps its normal priority, a harvester lends nothing.
 *
 * syn_node_harvest() decides, from what the agent measured, which jobs
 * lend and how many cores each job harvests:
 *   - a Synergy job lends floor(spare + 1 - t) of its allotted cores (at
 *     most all of them) where spare is its measured idle cores and t the
 *     threshold: SYN_HARVEST_START for a job nobody harvests now,
 *     SYN_HARVEST_KEEP (lower, so that a harvest is not dropped and taken
 *     up again on noise) for one that is harvested now (lent > 0);
 *     a job whose spare is unknown (< 0) lends nothing, nor does one that
 *     harvests now: it runs at idle priority, so whatever else runs on its
 *     own cores takes them first, and its idle share understates what it
 *     would use (read as a lender, it would stop harvesting, run busy again
 *     and flap);
 *   - the lent cores go one at a time to the non-lending Synergy job with a
 *     profile that gains most from one more core (gpus x the profile's
 *     throughput at hold + harvest + 1 cores over hold + harvest, at its
 *     cache), if that gain is at least SYN_HARVEST_MIN_GAIN of its
 *     throughput; ties to the lower index.
 * A pure function of its input. Returns 0, or -1 with errno EINVAL (bad
 * job: err names it).
 */
typedef struct syn_harvest_job {
	uint64_t id;                  /* for messages */
	int synergy;                  /* 1: may lend and harvest */
	int gpus;                     /* >= 1 when synergy */
	const syn_profile_t *profile; /* NULL: harvests nothing */
	int allotted;                 /* cores Slurm allotted it (>= 0) */
	int hold;                     /* cores it holds under the plan, grants included */
	uint64_t cache_mb;            /* its cache under the plan */
	double spare;                 /* idle cores of its allotment, measured; < 0 unknown */
	int lent;                     /* cores of its allotment harvested now */
	int harvesting;               /* 1: it harvests now (so it lends nothing) */
	/* Output. */
	int lend;                     /* cores of its allotment others may harvest */
	int harvest;                  /* cores of others it should harvest */
} syn_harvest_job_t;

#define SYN_HARVEST_START 0.5     /* idle share of a core to start lending it */
#define SYN_HARVEST_KEEP 0.25     /* ... to keep lending it */
#define SYN_HARVEST_MIN_GAIN 0.02 /* least relative gain worth a harvested core */

int syn_node_harvest(syn_harvest_job_t *jobs, int n, syn_error_t *err);

/* Names: "prop", "greedy", "tune", "opt" and "fifo", "srtf", "las", "ftf". */
const char *syn_allocator_name(syn_allocator_t a);
const char *syn_ordering_name(syn_ordering_t o);
/* Parse a name (case-insensitive). Returns 0, or -1 with EINVAL. */
int syn_allocator_parse(const char *s, syn_allocator_t *a);
int syn_ordering_parse(const char *s, syn_ordering_t *o);

/* Workload category of a built-in model (the trace generator's split). */
typedef enum syn_category {
	SYN_CAT_IMAGE = 0,
	SYN_CAT_LANGUAGE,
	SYN_CAT_SPEECH,
} syn_category_t;

/*
 * Built-in profiles for ten models (resnet18, alexnet, resnet50, shufflenet,
 * mobilenet, gnmt, transformer, lstm, m5, deepspeech) on the paper's grid
 * (cores {1,2,3,4,5,6,9,12,24} x GB {20.8,62.5,125,187.5,250} per GPU,
 * normalised at 3 cores and 62.5 GB). They are RECONSTRUCTED from the few
 * points the Synergy paper reports (and, for shufflenet, mobilenet and
 * deepspeech, assumed), not measured. The returned pointers are static.
 */
int syn_builtin_count(void);
/* The i-th built-in profile (0 <= i < count), or NULL with EINVAL. */
const syn_profile_t *syn_builtin_at(int i, syn_category_t *cat);
/* The built-in profile with this key, or NULL with ENOENT. */
const syn_profile_t *syn_builtin_find(const char *key);

#ifdef __cplusplus
}
#endif
#endif
