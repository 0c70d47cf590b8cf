/*
 * util.h: input checking and configuration shared by the Synergy Slurm
 * plugins (SPANK, job_submit) and the tuner.
 *
 * Both plugins run as root and take values from users (option arguments,
 * environment twins) and from admins (plugstack arguments, synergy.conf).
 * Every such value goes through one of the strict parsers here: a profile
 * key is a short word of [A-Za-z0-9_.-], numbers are decimal and in range,
 * paths come only from the admin and must be absolute and free of "..".
 * Nothing here logs or talks to Slurm, so it is unit-tested without it.
 * Internal to the plugins: every name carries the syn__ prefix.
 */
#ifndef SYN_PLUGIN_UTIL_H
#define SYN_PLUGIN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define SYN__PATH_MAX 256
#define SYN__KEY_MAX 64

/*
 * The plugins' configuration: synergy.conf (shared with synergy-profile,
 * see synergy_conf.h; Slurm-style Key=Value, keys case-insensitive) and the
 * SPANK plugin's plugstack arguments, which take the same keys. Keys:
 * Enabled, ProfileStore, RequestDir, CacheDir, ProcessMemMB, MaxCacheMB,
 * Eps, NodeGPUs, NodeCPUs, NodeMemMB, ProfileCommand, LendIdleCores,
 * StateDir (alias LendStateDir), CgroupConf, CgroupRoot, NodeShapesFile,
 * NodeShapesMaxAge, ProfileUser, MaxProfileRequests,
 * MaxProfileRequestsPerUser, MaxProfilingJobs, ProfileInPlace,
 * ProfileClaimMaxAge, GroupDir, GroupStagingMB, GroupWindow, PeerPortMin,
 * PeerPortMax, CheckpointDir, CheckpointRetention (see synergy.conf(5)).
 */
typedef struct syn__conf {
	int enabled;                        /* enabled=yes|no: master switch */
	char store_dir[SYN__PATH_MAX];      /* profile store (synergy_store.h) */
	char request_dir[SYN__PATH_MAX];    /* profiling requests for the tuner */
	char cache_dir[SYN__PATH_MAX];      /* parent of the per-job cache dirs */
	char group_dir[SYN__PATH_MAX];      /* parent of the per-group staging dirs (tmpfs) */
	uint64_t group_staging_mb;          /* a group's staging bound (SYNERGY_GROUP_BYTES) */
	uint32_t group_window;              /* its look-behind window (SYNERGY_GROUP_WINDOW) */
	uint64_t process_mem_mb;            /* memory kept for the process, beside the cache */
	uint64_t max_cache_mb;              /* upper bound on one job's cache grant per node */
	double eps;                         /* best-case tolerance for the policy */
	uint64_t node_gpus, node_cpus, node_mem_mb; /* the node shape job_submit sizes for (0: unknown) */
	char profile_command[512];          /* synergyd runs it as a batch job per request ("": none) */
	int lend_idle;                      /* LendIdleCores=yes|no: lend idle cores (lend.h) */
	int harvest;                        /* HarvestIdleCycles=yes|no: let jobs harvest the
					       idle cycles of others' cores (lend.h) */
	uint32_t harvest_interval;          /* HarvestInterval=SECONDS between the agent's
					       looks at a node while jobs run (0: none) */
	char state_dir[SYN__PATH_MAX];      /* root-only per-node job records and locks */
	char cgroup_conf[SYN__PATH_MAX];    /* Slurm's cgroup.conf ("": beside slurm.conf) */
	char cgroup_root[SYN__PATH_MAX];    /* the node's cgroup, %n/%h ("": Slurm's layouts) */
	char shapes_file[SYN__PATH_MAX];    /* node shapes synergyd exports (shapes.h) */
	char profile_user[33];              /* account profiling jobs run as */
	uint64_t max_requests;              /* profiling requests queued at most */
	uint64_t max_requests_per_user;     /* ... of them by one user */
	uint64_t max_profiling_jobs;        /* profiling jobs in flight at most */
	uint64_t shapes_max_age;            /* seconds before that table is stale */
	int profile_in_place;               /* ProfileInPlace: a key's first job profiles itself */
	uint64_t claim_max_age;             /* ProfileClaimMaxAge: seconds a first job's claim
	                                       lasts before another may take it over */
	uint32_t peer_port_min, peer_port_max; /* PeerPortMin..PeerPortMax: the partitioned
	                                       cache's listening ports (synergy_conf.h) */
	char ckpt_dir[SYN__PATH_MAX];       /* CheckpointDir: parent of the jobs' checkpoint
	                                       directories ("": none; ckptdir.h) */
	uint64_t ckpt_retention;            /* CheckpointRetention: seconds a job's checkpoint
	                                       directory outlives its last use (0: forever) */
} syn__conf_t;

/* Fill c with the defaults documented in synergy.conf(5). */
void syn__conf_defaults(syn__conf_t *c);

/*
 * Set one configuration key from its text value (strict: unknown keys,
 * malformed or out-of-range values and relative paths are errors). Returns
 * 0, or -1 with errno EINVAL (ERANGE for a number too large to represent)
 * and a message naming the key in err.
 */
int syn__conf_set(syn__conf_t *c, const char *key, const char *value, char *err, size_t errlen);

/*
 * Apply one "key=value" word (a plugstack.conf argument). The key "conf"
 * loads that file with syn__conf_load(). Returns 0 or -1 (errno, err).
 */
int syn__conf_arg(syn__conf_t *c, const char *arg, char *err, size_t errlen);

/*
 * Read a synergy.conf file (path NULL: syn_conf_default_path()) with the
 * one parser every Synergy program uses (syn_conf_load: "Key = Value"
 * lines, '#' comments, blank lines, no duplicate keys) and apply each key
 * with syn__conf_set(). Returns 0, or -1 with errno (that of fopen, EINVAL,
 * EFBIG) and a message naming the file, line and key in err. On failure c
 * may be partly updated.
 */
int syn__conf_load(syn__conf_t *c, const char *path, char *err, size_t errlen);

/* 1 if key is a valid profile key: 1..64 of [A-Za-z0-9_.-], not starting
 * with '.', else 0. Such a key is safe as a file name component. */
int syn__key_valid(const char *key);

/*
 * Parse the --synergy argument: "on"/"yes"/"1" -> 1, "off"/"no"/"0" -> 0
 * (case-insensitive). Returns 0, or -1 with errno EINVAL.
 */
int syn__parse_onoff(const char *s, int *on);

/*
 * Parse a decimal unsigned integer in [min, max]: digits only, no sign, no
 * spaces, no suffix. Returns 0, or -1 with errno EINVAL or ERANGE.
 */
int syn__parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* 1 if path is an acceptable admin path: absolute, at most SYN__PATH_MAX-1
 * bytes, no "." or ".." component, no whitespace or control characters. */
int syn__path_ok(const char *path);

/*
 * Read the small file name relative to directory dfd (AT_FDCWD: a path)
 * whole, never following a final symlink and never blocking on a FIFO.
 * Returns a NUL-terminated malloc'ed buffer (its length in *len when len is
 * not NULL), or NULL with errno (EFBIG when it holds more than max bytes).
 */
char *syn__read_file_at(int dfd, const char *name, size_t max, size_t *len);

/* The rest of the open file fd, the same way (fd stays open). */
char *syn__read_fd(int fd, size_t max, size_t *len);

/*
 * Write len bytes of text to a new file tmp in directory dfd, mode mode (a
 * stale tmp is removed first; never follows a link), for the caller to
 * rename or link into place. Returns 0, or -1 with errno and no tmp left.
 */
int syn__write_tmp_at(int dfd, const char *tmp, const void *text, size_t len, unsigned mode);

/* The plugins' error return: fmt into err (when err and errlen), errno set
 * to errnum, -1 returned; so that a check fails in one statement. */
int syn__errf(int errnum, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Empty the directory open at dfd (the descriptor is consumed), depth
 * first, never following a link: a link planted there is removed, not its
 * target. Depth is bounded so that a hostile tree cannot exhaust
 * descriptors; what lies deeper stays.
 */
void syn__remove_tree(int dfd);

/* 1 if name is a plausible account name ([a-z_][a-z0-9_.-]{0,31}). */
int syn__user_valid(const char *name);

#endif
