/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/conf.h: synergy.conf, Synergy's own Key=Value file, and its one
 * loader: every Synergy program (the Slurm plugins, synergyd, synergy-lend,
 * synergy-profile) reads it into a syn_conf_t through syn_conf_load(), so
 * a file one of them accepts the others accept, value for value.
 *
 * The schema is a table (conf.c): each key's type, range and field. A key
 * not in it is an error, as is a value outside its type's grammar
 * (common/parse.h) or range: paths absolute and free of "." and "..",
 * numbers decimal, booleans yes/no (on/off, true/false, 1/0). The file's
 * format is common/kv.h's (comments, case-insensitive keys, no key twice).
 * The SPANK plugin's plugstack arguments take the same keys
 * (syn_conf_arg()). Every key is documented in synergy.conf(5).
 *
 * Conventions: 0 on success, -1 with errno and the caller's syn_error_t
 * naming the file, line and key. Nothing here logs or exits.
 */
#ifndef SYN_COMMON_CONF_H
#define SYN_COMMON_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/parse.h"

/* Where synergy.conf lives unless $SYNERGY_CONF names another file or
 * $SLURM_CONF a directory (syn_conf_default_path()). */
#define SYN_CONF_DEFAULT_PATH "/etc/slurm/synergy.conf"
/* Environment variable that overrides the path. */
#define SYN_CONF_ENV "SYNERGY_CONF"

/* The profile store directory's default (ProfileStore). */
#define SYN_CONF_PROFILE_STORE_DEFAULT "/var/lib/synergy/profiles"

/* The ports the partitioned cache's listeners of a multi-node step take
 * (synergy_env.h, SYNERGY_PEERS): node i of a step listens on a port of
 * PeerPortMin..PeerPortMax derived from the job, the step and i. The
 * default lies below Linux's ephemeral range (32768-60999), so that no
 * outgoing connection holds one of them. */
#define SYN_CONF_PEER_PORT_MIN_DEFAULT 27000
#define SYN_CONF_PEER_PORT_MAX_DEFAULT 28999

/* Coordinated prep: the plugin gives every job of a group on a node its
 * group's staging bound and look-behind window (synergy_env.h,
 * SYNERGY_GROUP_BYTES and SYNERGY_GROUP_WINDOW; the loader's defaults). The
 * staging pages are charged to the memory cgroups of the members that
 * first fill them, so the bound belongs inside ProcessMemMB. */
#define SYN_CONF_GROUP_STAGING_MB_DEFAULT 512
#define SYN_CONF_GROUP_WINDOW_DEFAULT 256

/* CheckFreq checkpoints: CheckpointDir is the site directory under which
 * the SPANK plugin gives each job its checkpoint directory
 * (SYNERGY_CKPT_DIR; unset: none), CheckpointRetention how long a job's
 * directory outlives its last use, in seconds (0: until the job completes).
 * See spank-synergy(8), CHECKPOINTS. */
#define SYN_CONF_CHECKPOINT_RETENTION_DEFAULT (7 * 86400)

/* The configuration (see synergy.conf(5) for each key). */
typedef struct syn_conf {
	int enabled;                    /* Enabled: master switch */
	char store_dir[SYN_PATH_MAX];   /* ProfileStore (common/store.h) */
	char request_dir[SYN_PATH_MAX]; /* RequestDir: profiling requests for the tuner */
	char cache_dir[SYN_PATH_MAX];   /* CacheDir: parent of the per-job cache dirs */
	char group_dir[SYN_PATH_MAX];   /* GroupDir: parent of the per-group staging dirs */
	uint64_t group_staging_mb;      /* GroupStagingMB (SYNERGY_GROUP_BYTES) */
	uint32_t group_window;          /* GroupWindow (SYNERGY_GROUP_WINDOW) */
	uint64_t process_mem_mb;        /* ProcessMemMB: memory kept beside the cache */
	uint64_t max_cache_mb;          /* MaxCacheMB: one job's cache grant per node */
	double eps;                     /* Eps: best-case tolerance for the policy */
	/* NodeGPUs, NodeCPUs, NodeMemMB: the node shape job_submit sizes for
	 * (0: unknown). */
	uint64_t node_gpus, node_cpus, node_mem_mb;
	char profile_command[512];      /* ProfileCommand: synergyd's batch job ("": none) */
	int lend_idle;                  /* LendIdleCores: lend idle cores */
	int harvest;                    /* HarvestIdleCycles: let jobs harvest the idle
	                                   cycles of others' cores */
	uint32_t harvest_interval;      /* HarvestInterval: seconds between the agent's
	                                   looks at a node while jobs run (0: none) */
	char state_dir[SYN_PATH_MAX];   /* StateDir: root-only per-node records and locks */
	char cgroup_conf[SYN_PATH_MAX]; /* CgroupConf ("": beside slurm.conf) */
	char cgroup_root[SYN_PATH_MAX]; /* CgroupRoot, %n/%h ("": Slurm's layouts) */
	char shapes_file[SYN_PATH_MAX]; /* NodeShapesFile: the shapes synergyd exports */
	char profile_user[33];          /* ProfileUser: account profiling jobs run as */
	uint64_t max_requests;          /* MaxProfileRequests: queued at most */
	uint64_t max_requests_per_user; /* MaxProfileRequestsPerUser */
	uint64_t max_profiling_jobs;    /* MaxProfilingJobs: in flight at most */
	uint64_t shapes_max_age;        /* NodeShapesMaxAge: seconds before stale */
	int profile_in_place;           /* ProfileInPlace: a key's first job profiles itself */
	uint64_t claim_max_age;         /* ProfileClaimMaxAge: seconds a first job's claim
	                                   lasts before another may take it over */
	uint64_t grant_max_age;         /* GrantMaxAge: seconds after job_submit sealed a
	                                   grant that the node still takes it */
	uint32_t peer_port_min, peer_port_max; /* PeerPortMin..PeerPortMax */
	char ckpt_dir[SYN_PATH_MAX];    /* CheckpointDir: parent of the jobs' checkpoint
	                                   directories ("": none; plugin/node/ckptdir.h) */
	uint64_t ckpt_retention;        /* CheckpointRetention: seconds a job's checkpoint
	                                   directory outlives its last use (0: forever) */
} syn_conf_t;

/* Fill c with the defaults documented in synergy.conf(5). */
void syn_conf_defaults(syn_conf_t *c);

/*
 * Set one key (case-insensitive) from its text value. Returns 0, or -1
 * with errno EINVAL (ERANGE for a number out of range) and err naming the
 * key; c is then unchanged.
 */
int syn_conf_set(syn_conf_t *c, const char *key, const char *value, syn_error_t *err);

/*
 * Apply one "key=value" word (a plugstack.conf argument). The key "conf"
 * loads that file (an absolute path) with syn_conf_load(). Returns 0 or -1
 * (errno, err).
 */
int syn_conf_arg(syn_conf_t *c, const char *arg, syn_error_t *err);

/*
 * Read synergy.conf (path NULL: syn_conf_default_path()) and apply each key
 * in file order with syn_conf_set(). Returns 0, or -1 with errno (that of
 * open: ENOENT for a missing file; EINVAL, ERANGE, EFBIG) and err naming
 * the file, line and key. On failure c may be partly updated.
 */
int syn_conf_load(syn_conf_t *c, const char *path, syn_error_t *err);

/*
 * The synergy.conf every Synergy program reads when given none: the file
 * $SYNERGY_CONF names; else synergy.conf in the directory of $SLURM_CONF
 * (when that is set and has a '/'); else SYN_CONF_DEFAULT_PATH. buf (len
 * bytes) holds the second case; the result is env, buf or the constant.
 */
const char *syn_conf_default_path(char *buf, size_t len);

/* The schema, for tests and documentation checks: the keys in table order
 * (aliases included), NULL after the last. */
const char *syn_conf_key_name(size_t i);

#endif
