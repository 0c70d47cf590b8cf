/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergy_env.h: the plugin -> loader environment contract.
 *
 * The SPANK plugin exports these variables into each task of a job that
 * Synergy sized; libcoordl reads them for every knob its caller left unset
 * (an explicit API argument always wins). Without the plugin none is set
 * and the loader falls back to its cpuset and memory limit.
 *
 * Every value is plain ASCII. Readers must validate, since a user can set
 * these by hand: a malformed value is an error naming the variable, never
 * a silent default.
 */
#ifndef SYNERGY_ENV_H
#define SYNERGY_ENV_H

/* Granted core list in cpuset syntax, e.g. "0-3,8". Informational for the
 * loader (its affinity is already set); the thread count below rules. */
#define SYNERGY_ENV_CPUS "SYNERGY_CPUS"

/* Worker threads to run: a decimal integer, 1..1024. */
#define SYNERGY_ENV_THREADS "SYNERGY_THREADS"

/*
 * The job's cache grant on this node, in bytes, at the time the task
 * started: a size of the one grammar of every Synergy program (a number,
 * optionally with a fraction, and an optional unit K, M, G or T, powers of
 * 1024, optionally followed by "i" and "B"; see common/parse.h).
 * 0: no cache.
 *
 * The grant is for the whole job on the node, not per loader or per task.
 * It goes to the job's cache, which the first training-mode loader of a
 * dataset creates (named SYNERGY_CACHE_NAME, in SYNERGY_CACHE_DIR); every
 * task of the job on the node that opens a training loader on the same
 * dataset attaches to that one cache (torchrun ranks share it). Loaders
 * in other modes (evaluation, raw, synthetic) get no cache from the
 * environment, and a training loader on another dataset, which finds the
 * name taken, runs without a cache (libcoordl reports why); a program may
 * say which loader is the training one (coordl_config_t.cache_use). So the
 * job's cache memory on the node never exceeds the grant, whatever the
 * number of loaders.
 */
#define SYNERGY_ENV_CACHE_BYTES "SYNERGY_CACHE_BYTES"

/* Directory for the job's cache files (tmpfs or local disk able to punch
 * holes), created by the plugin per job and removed at job end. The job's
 * cache is the file coordl-<uid>-<SYNERGY_CACHE_NAME>.cache in it (with a
 * lock file beside it); a file that is not a regular file of the job's
 * user, mode 0600, one link, is never used. */
#define SYNERGY_ENV_CACHE_DIR "SYNERGY_CACHE_DIR"

/* Name of the job's cache (one per job and node; ranks of the job on a node
 * share it). Safe charset [A-Za-z0-9_.-], at most 64 characters. Without
 * SYNERGY_CACHE_DIR the cache is /dev/shm/coordl-<uid>-<name>.cache. */
#define SYNERGY_ENV_CACHE_NAME "SYNERGY_CACHE_NAME"

/*
 * Live cache grant: the absolute path of a file, written by the node (root)
 * and readable by the job, that holds the job's current cache grant on the
 * node in bytes: ASCII decimal digits (no sign, no suffix, at most 19
 * digits), optionally followed by one newline. Write it atomically: a
 * temporary file in the same directory, then rename(2) over the name.
 *
 * A loader whose cache bound the program did not fix (cache_bytes = -1 and
 * the job's cache, see above) takes its initial bound from this file
 * (SYNERGY_CACHE_BYTES when the file cannot be read), then re-reads it at
 * least every 100 ms in a thread of its own, whatever the program is
 * doing, and applies a changed value to the job's cache (every process
 * attached to it follows; the bound lives in the cache file):
 * - lower: the items stored beyond the new grant are dropped (the first
 *   ones stored stay, so nothing is evicted and refilled within an epoch)
 *   and their memory is released (hole punched in the cache file);
 * - higher: the cache keeps filling up to the new grant.
 * Promise to the node: within 200 ms of the file changing, while a loader
 * of the job is attached, plus the time the kernel takes to free the
 * released pages, the job's files in SYNERGY_CACHE_DIR occupy at most
 * max(new grant, header) (the sum of st_blocks * 512). The header is 8 KiB,
 * one huge page (2 MiB) on a tmpfs mounted with huge pages, where the
 * cache also takes and returns memory in huge pages (its bound is the
 * grant rounded down to one). Freeing is fast with huge pages (512 MiB in
 * 2-5 ms) and slow with 4 KiB pages (0.3-1.4 ms per MiB on the 2-vCPU
 * build VM, idle to loaded; see BENCHMARKS.md): mount the cache directory
 * with huge=within_size, or poll st_blocks rather than assume a time. A
 * loader inside one item for more than 40 ms (a stopped process) delays
 * the release until it leaves. A loader only ever applies the file's
 * value; it never raises its own grant. An unreadable or malformed file
 * leaves the bound as it is.
 */
#define SYNERGY_ENV_CACHE_GRANT "SYNERGY_CACHE_GRANT"

/* Profiling mode: unset or "0" = normal training; "1" = the loader runs the
 * profiling protocol and writes its report to SYNERGY_PROFILE_OUT. */
#define SYNERGY_ENV_PROFILE_MODE "SYNERGY_PROFILE_MODE"

/*
 * Path of the profiling report the loader writes in profiling mode (without
 * it the loader does not profile). The first training (or evaluation)
 * loader of the process runs Synergy's CPU search live: from the threads it
 * started with (SYNERGY_THREADS, else its cpuset), halving while the job's
 * own throughput stays within 10% of the first point, then one thread at a
 * time; each point is timed over a few windows of batches between the
 * program's own batch requests. When the search ends the report is written
 * (a temporary file beside the path, renamed over it) and the loader trains
 * on, following its cpuset again. A search cut short (the node took back
 * CPUs it ran on, or the loader was destroyed first) writes the report with
 * "complete": false. Format (JSON; per point, sums over its timed windows):
 *   { "coordl_profile": 1,               -- SYNERGY_PROFILE_REPORT_VERSION
 *     "complete": true|false,
 *     "batch_size": B, "max_threads": T,
 *     "elapsed": s,                      -- first batch request to the search's end
 *     "dataset": { "bytes": D, "items": N },
 *     "points": [ { "threads": c, "samples": S, "wall": s, "consumer": s,
 *                   "stall": s, "prep_time": s, "fetch_time": s,
 *                   "storage_bytes": b, "hits": h, "misses": m,
 *                   "tput": med, "tput_min": x, "tput_max": y }, ... ] }
 * wall: the windows' length; consumer: the program's time between batch
 * requests in them (its GPU step); stall: its time waiting inside the
 * loader; prep_time, fetch_time: worker time summed over the workers.
 * Readers must treat every value as untrusted input (the job wrote it).
 */
#define SYNERGY_ENV_PROFILE_OUT "SYNERGY_PROFILE_OUT"
#define SYNERGY_PROFILE_REPORT_VERSION 1

/* The job's profile key (what the user gave with --synergy-profile). */
#define SYNERGY_ENV_PROFILE_KEY "SYNERGY_PROFILE_KEY"

/* Cpuset following: unset or "1" = a loader whose thread count the caller
 * left unset re-reads its cpuset (at most every 100 ms) and, when it
 * changed, pins its threads to it and runs one worker per CPU in it (the
 * node may lend idle cores to a running job); "0" = keep the thread count
 * chosen at start. */
#define SYNERGY_ENV_FOLLOW_CPUSET "SYNERGY_FOLLOW_CPUSET"

/*
 * The partitioned cache of a job that spans nodes (CoorDL's second
 * technique): each node's cache holds a different part of the dataset and
 * a node reads what it misses from the node that caches it before going to
 * storage.
 *
 * The SPANK plugin exports SYNERGY_PEERS, SYNERGY_NODE_INDEX,
 * SYNERGY_PEER_TAG and SYNERGY_PEER_KEY to every task of a Synergy job's
 * step that spans two nodes or more (srun -N2 ...; not to the batch
 * script, which runs on one node, nor to a one-node step), all four or
 * none (a step that chose its wire-up itself gets only the key and the
 * tag, and keeps its own if it set them; SYNERGY_PEER_WIREUP=off: none): node i's entry is the address slurm.conf gives the step's i-th
 * node (NodeAddr, else NodeHostname, else its name) and a port derived
 * from the job id, the step id and i inside synergy.conf's PeerPortMin..PeerPortMax, so every
 * node computes the same list without exchanging anything. Every local
 * task of a node gets the same values (torchrun under srun, one process
 * per GPU: the first process of the node to bind entry i listens, the
 * others share the node's cache and only read). Without the plugin a job
 * script may set them (coordl(3) shows how).
 */

/* Every node's peer address, in node index order: comma-separated
 * "host:port" (host a name, an IPv4 address or an IPv6 address in
 * brackets; port 1..65535), 2..SYNERGY_PEERS_MAX entries. The loader of
 * node i listens on entry i (one process per node; the others only read)
 * and connects to the others. */
#define SYNERGY_ENV_PEERS "SYNERGY_PEERS"
#define SYNERGY_PEERS_MAX 1024

/* This node's index in SYNERGY_PEERS: a decimal integer 0..n-1 (the
 * plugin: the node's index in the step, SLURM_NODEID). Required with
 * SYNERGY_PEERS. */
#define SYNERGY_ENV_NODE_INDEX "SYNERGY_NODE_INDEX"

/* The job's peer tag: a decimal integer 0..2^64-1 that a connecting peer
 * presents and the listener checks (so that a port reused by another job
 * is not taken for this job's peer). Default 0. The plugin derives it from
 * the job id and the step id (never 0). */
#define SYNERGY_ENV_PEER_TAG "SYNERGY_PEER_TAG"

/*
 * The step's peer key: exactly SYNERGY_PEER_KEY_HEX lowercase hex digits
 * (32 bytes). Only processes that hold it can take part in the step's
 * partitioned cache: peers prove to each other that they hold it before
 * any of them gives an address, a key or one byte of its cache (coordl(3),
 * SECURITY). It is a secret: the plugin derives it as root for each step
 * from the job's secret (which job_submit put into the job's signed grant)
 * and exports it to the step's tasks only; the job's user may read it, no
 * one else. Without it (unset or malformed) the loader runs no peer tier
 * and says why. Without the plugin a job script sets the same value for
 * every task of the step (coordl(3) shows how to make one).
 */
#define SYNERGY_ENV_PEER_KEY "SYNERGY_PEER_KEY"
#define SYNERGY_PEER_KEY_BYTES 32
#define SYNERGY_PEER_KEY_HEX (2 * SYNERGY_PEER_KEY_BYTES)

/* How long a read from a peer may take before the peer counts as stalled
 * and its part is read from storage, in ms: 1..600000 (default 1000). */
#define SYNERGY_ENV_PEER_TIMEOUT_MS "SYNERGY_PEER_TIMEOUT_MS"

/* How peers find each other: "auto" (default: "pmix" for a rank that
 * `srun --mpi=pmix` launched, else "sockaddr"), "sockaddr" (the addresses
 * in SYNERGY_PEERS), "pmix" (worker addresses exchanged through PMIx; node
 * index and count from PMIx too) or "off" (no peers). */
#define SYNERGY_ENV_PEER_WIREUP "SYNERGY_PEER_WIREUP"

/*
 * Coordinated prep (CoorDL's hyperparameter-search technique): the group
 * this job's training loader shares prepared batches with on this node.
 * The SPANK plugin sets it for the tasks of every job it handles (a job
 * with a Synergy record on the node, SYNERGY_ACTIVE=1) that belongs to a
 * group: the tasks of one job array of user U are SYNERGY_GROUP_ARRAY_FMT
 * ("u<U>-a<array job id>"), jobs of user U that name the same
 * --synergy-group=NAME are SYNERGY_GROUP_NAMED_FMT ("u<U>-g-<NAME>"; a
 * name wins over the array). The plugin's value replaces what the job's
 * environment had; for other jobs a value the user exported stays (a job
 * script may still set it by hand). The uid in the name keeps jobs of
 * different users apart (the loader's segment also carries the uid in its
 * name, and only files of this user, mode 0600, are used). The job's
 * training loader joins the group (TRAIN mode, or EVAL mode with cache_use
 * JOB; not in profiling mode); loaders of the group share batches only
 * when their dataset and pipeline are the same (coordl(3), "Coordinated
 * prep"). 1..64 of [A-Za-z0-9_.-], not "." or ".."; unset or empty: no
 * group.
 */
#define SYNERGY_ENV_GROUP "SYNERGY_GROUP"
#define SYNERGY_GROUP_ARRAY_FMT "u%u-a%u"
#define SYNERGY_GROUP_NAMED_FMT "u%u-g-%s"
/* A --synergy-group NAME: 1..SYNERGY_GROUP_NAME_MAX of [A-Za-z0-9_.-], not
 * starting with '.' or '-' (so that the group name above stays within 64). */
#define SYNERGY_GROUP_NAME_MAX 32

/* Directory for the group's staging segment (an absolute path; tmpfs).
 * The plugin sets it with SYNERGY_GROUP: a directory per group and node
 * (under GroupDir, synergy.conf(5)), owned by the job's user, mode 0700,
 * made when the job joins its group on the node (the job prolog for a
 * named group, an array task's first step) and removed by the epilog of
 * the group's last job there. Unset: the segment is
 * /dev/shm/coordl-<uid>-grp-<group>-<signature>.seg. */
#define SYNERGY_ENV_GROUP_DIR "SYNERGY_GROUP_DIR"

/* The group's staging area bound in bytes (a size, as SYNERGY_CACHE_BYTES):
 * prepared batches waiting for members never take more. Each
 * member's memory cgroup pays for the slots it reserved first. Unset:
 * 512M. The plugin sets it for every job of a group from synergy.conf's
 * GroupStagingMB (common/conf.h). */
#define SYNERGY_ENV_GROUP_BYTES "SYNERGY_GROUP_BYTES"

/* How many batches a member may fall behind the fastest member of its
 * group before it prepares its own (it rejoins when within half of it):
 * an integer 1..1000000, default 256. It also bounds how long members
 * wait for a late one to catch up. The plugin sets it for every job of a
 * group from synergy.conf's GroupWindow. */
#define SYNERGY_ENV_GROUP_WINDOW "SYNERGY_GROUP_WINDOW"

/*
 * CheckFreq checkpoints (coordl_ckpt(3), the Python binding's
 * coordl.CheckFreq). SYNERGY_CKPT_DIR: the job's checkpoint directory, an
 * absolute path the plugin makes per job and array task under synergy.conf's
 * CheckpointDir (<CheckpointDir>/<uid>/<job id> or <array job id>_<task>),
 * owned by the job's user, mode 0700; kept across requeues, removed when the
 * job ends COMPLETED or CheckpointRetention after it was last used.
 * SYNERGY_CKPT_SIGNALS: signals besides SIGTERM that end the job with a last
 * checkpoint, comma-separated names (e.g. "USR1"); set by the job itself for
 * the signal it asked Slurm for with --signal (Slurm tells a job's steps
 * nothing of it, so the plugin cannot). synergy-profile run --ckpt-bytes
 * writes its measuring checkpoints under SYNERGY_CKPT_DIR when not given
 * --ckpt-dir.
 */
#define SYNERGY_ENV_CKPT_DIR "SYNERGY_CKPT_DIR"
#define SYNERGY_ENV_CKPT_SIGNALS "SYNERGY_CKPT_SIGNALS"

/* Set to "1" by the plugin when Synergy sized this job, "0" when it ran
 * GPU-proportional (no profile, --synergy=off, or a fallback). */
#define SYNERGY_ENV_ACTIVE "SYNERGY_ACTIVE"

#endif
