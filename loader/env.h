/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * env.h: strict parsing of the Synergy environment contract (synergy_env.h).
 * Numbers, sizes (SYNERGY_CACHE_BYTES, SYNERGY_GROUP_BYTES) and CPU lists
 * (SYNERGY_CPUS) are common/parse.h's grammar.
 *
 * The plugin exports the loader's knobs as environment variables; a user can
 * also set them by hand, so every value is validated: a malformed or
 * out-of-range value is an EINVAL error whose text names the variable. The
 * parsers are separate from getenv() so that the tests can drive them with
 * tables of good and bad strings.
 */
#ifndef COORDL_ENV_H
#define COORDL_ENV_H

#include <stdint.h>

#include "coordl.h"

/* The most worker threads a loader runs (SYNERGY_THREADS, the threads field
 * and coordl_set_threads() all share this bound; the thread arrays are
 * sized by it once at create time). */
#define COORDL__MAX_THREADS 1024

/* An index file's "<word> <count>" header line, count in [0, max].
 * Returns 0 or -1 (not that word, or not such a count). */
int coordl__header_count(const char *line, const char *word, uint64_t max, uint64_t *out);

/* One decimal field of an index line, ending at a space: *p advances past
 * the space. The line is left as it was. Returns 0 or -1 (no space after
 * it, or not a number in [0, INT64_MAX]). */
int coordl__field_u64(char **p, uint64_t *out);

/* Validate a cache name: [A-Za-z0-9_.-], 1..64 characters, not "." or "..". */
int coordl__valid_cache_name(const char *s);

/* Peer wire-up (SYNERGY_PEER_WIREUP). */
enum { COORDL__WIREUP_AUTO = 0, COORDL__WIREUP_SOCKADDR, COORDL__WIREUP_PMIX, COORDL__WIREUP_OFF };

/* The most nodes of one job the peer tier serves, the longest host name
 * in SYNERGY_PEERS, and the default peer deadline. */
#define COORDL__MAX_NODES 1024
#define COORDL__HOST_MAX 255
#define COORDL__PEER_TIMEOUT_DEFAULT 1000

/*
 * Parse a SYNERGY_PEERS list (synergy_env.h): comma-separated host:port,
 * host a name or IPv4 address ([A-Za-z0-9._-], 1..255 characters) or an
 * IPv6 address in brackets, port 1..65535, at most COORDL__MAX_NODES
 * entries. fn (may be NULL) is called for each entry in order with its
 * index, host (without brackets) and port; a non-zero return stops the
 * walk and is returned. Returns the number of entries, or -1 with errno
 * EINVAL for a malformed list.
 */
int coordl__parse_peers(const char *s, int (*fn)(void *arg, int k, const char *host, int port),
			void *arg);

/*
 * Decode a SYNERGY_PEER_KEY (synergy_env.h): exactly SYNERGY_PEER_KEY_HEX
 * lowercase hex digits into key[0..SYNERGY_PEER_KEY_BYTES). Returns 0, or
 * -1 with errno EINVAL (key then holds nothing of s). s may be NULL (-1).
 */
int coordl__parse_peer_key(const char *s, uint8_t *key);

/* The default and the largest max_item_bytes. */
#define COORDL__MAX_ITEM_DEFAULT (64LL << 20)
#define COORDL__MAX_ITEM_LIMIT (1LL << 40)

/*
 * The loader's knobs after the environment and defaults were applied.
 * cache_dir is NULL when the cache lives in POSIX shared memory; strings
 * point into the environment or the caller's config.
 *
 * The cache: a loader takes the job's cache (job_cache) when cache_use is
 * JOB, or AUTO and the mode is TRAIN. The job's cache is named
 * cache_name, else SYNERGY_CACHE_NAME, and bounded by cache_bytes, else
 * the grant (SYNERGY_CACHE_GRANT's file, read by the loader, else
 * SYNERGY_CACHE_BYTES). Any other loader has a cache only when the config
 * gives a bound (named cache_name, else private). cache_use NONE: none.
 */
typedef struct coordl__env {
	int threads;
	int64_t cache_bytes;     /* the bound to start with; 0: no cache unless grant_path */
	int cache_fixed;         /* 1: the bound is the config's, never the grant's */
	int job_cache;           /* 1: this loader takes the job's cache */
	const char *cache_name;
	const char *cache_dir;
	const char *grant_path;  /* follow this grant file (job's cache, bound not fixed), else NULL */
	int64_t max_item_bytes;
	const char *profile_out; /* SYNERGY_PROFILE_OUT when SYNERGY_PROFILE_MODE=1, else NULL */
	int follow;        /* 1: threads were not fixed by the API and
	                      SYNERGY_FOLLOW_CPUSET is not 0: follow the cpuset
	                      (in profiling mode: once the search ended) */
	/* The peer tier (peer.h), for the loader that takes the job's cache
	 * only; wireup OFF for every other loader. */
	int wireup;              /* COORDL__WIREUP_* */
	const char *peers;       /* SYNERGY_PEERS (validated), or NULL */
	int nnodes, node_index;  /* entries of peers and ours (0, 0 without) */
	uint64_t peer_tag;
	/* SYNERGY_PEER_KEY when it is well formed (the string in the
	 * environment: decoded by the peer tier, never copied here), else
	 * NULL; peer_key_bad 1 when it is set but malformed. Not an error
	 * for the loader either way: without a key it runs no peer tier
	 * (the peer tier says why). */
	const char *peer_key;
	int peer_key_bad;
	int peer_timeout_ms;
	/* Coordinated prep: the group this loader joins (NULL: none). Only
	 * the job's training loader joins: TRAIN mode, or EVAL mode with
	 * cache_use JOB; never in profiling mode. */
	const char *group;
	const char *group_dir;   /* NULL: /dev/shm */
	uint64_t group_bytes;    /* staging bound */
	uint32_t group_window;   /* batches */
} coordl__env_t;

/*
 * Resolve threads, cache size, name and directory for cfg: an explicit
 * config value wins, then the environment, then defaults (threads: cores in
 * the process's affinity mask; cache: 0). Every contract variable that is
 * set is validated, even when the API argument wins, so that a broken
 * plugin setup is never hidden. Returns 0 or -1 with errno EINVAL and err
 * naming the variable or field.
 */
int coordl__env_resolve(const coordl_config_t *cfg, coordl__env_t *out, coordl_error_t *err);

#endif
