/*
 * env.h: strict parsing of the Synergy environment contract (synergy_env.h).
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

/* Parse a plain decimal integer in [min, max] (no sign unless min < 0, no
 * spaces, no trailing text). Returns 0 or -1 with errno EINVAL/ERANGE. */
int coordl__parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/* Parse a byte count: decimal with an optional K, M, G or T suffix (powers
 * of 1024, either case). Returns 0 or -1 with errno EINVAL/ERANGE. */
int coordl__parse_bytes(const char *s, uint64_t *out);

/* Validate a cpuset list such as "0-3,8". Returns 0 or -1 (EINVAL). */
int coordl__parse_cpulist(const char *s);

/* Validate a cache name: [A-Za-z0-9_.-], 1..64 characters, not "." or "..". */
int coordl__valid_cache_name(const char *s);

/*
 * The loader's knobs after the environment and defaults were applied.
 * cache_dir is NULL when the cache lives in POSIX shared memory; strings
 * point into the environment or the caller's config.
 */
typedef struct coordl__env {
	int threads;
	int64_t cache_bytes;
	const char *cache_name;
	const char *cache_dir;
	const char *profile_out; /* SYNERGY_PROFILE_OUT when SYNERGY_PROFILE_MODE=1, else NULL */
	int follow;        /* 1: threads were not fixed by the API and
	                      SYNERGY_FOLLOW_CPUSET is not 0: follow the cpuset */
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
