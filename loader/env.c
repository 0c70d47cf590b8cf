/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * env.c: strict parsing of the Synergy environment contract (see env.h).
 * Numbers, sizes and CPU lists are common/parse.h's, as every program
 * parses them; what is particular to the contract (peer lists, cache
 * names, which variable wins) is here.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "synergy_env.h"
#include "loader/coord.h"
#include "loader/env.h"
#include "loader/util.h"

int coordl__header_count(const char *line, const char *word, uint64_t max, uint64_t *out)
{
	size_t wl = strlen(word);

	if (strncmp(line, word, wl) != 0 || line[wl] != ' ')
		return -1;
	if (max > (uint64_t)INT64_MAX || syn_parse_u64(line + wl + 1, 0, max, out) < 0)
		return -1;
	return 0;
}

int coordl__field_u64(char **p, uint64_t *out)
{
	char *s = *p, *e = strchr(s, ' ');

	if (!e || syn_parse_u64n(s, (size_t)(e - s), 0, INT64_MAX, out) < 0)
		return -1;
	*p = e + 1;
	return 0;
}

int coordl__valid_cache_name(const char *s)
{
	size_t n;

	if (!s)
		goto bad;
	n = strlen(s);
	if (n == 0 || n > 64 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && c != '_' && c != '.' && c != '-')
			goto bad;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int coordl__parse_peers(const char *s, int (*fn)(void *arg, int k, const char *host, int port),
			void *arg)
{
	char host[COORDL__HOST_MAX + 1];
	const char *p = s;
	int k = 0;

	if (!s || !*s)
		goto bad;
	for (;;) {
		size_t n = 0;
		uint64_t port;
		int rc;

		if (k >= COORDL__MAX_NODES)
			goto bad;
		if (*p == '[') {
			/* An IPv6 address: hex digits, colons and dots. */
			for (p++; *p && *p != ']'; p++) {
				if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
					goto bad;
				if (n >= COORDL__HOST_MAX)
					goto bad;
				host[n++] = *p;
			}
			if (*p != ']' || n == 0)
				goto bad;
			p++;
		} else {
			for (; *p && *p != ':'; p++) {
				if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
					goto bad;
				if (n >= COORDL__HOST_MAX)
					goto bad;
				host[n++] = *p;
			}
			if (n == 0)
				goto bad;
		}
		host[n] = '\0';
		if (*p != ':')
			goto bad;
		n = strspn(++p, "0123456789");
		if (syn_parse_u64n(p, n, 1, 65535, &port) < 0)
			goto bad;
		p += n;
		if (fn && (rc = fn(arg, k, host, (int)port)) != 0)
			return rc;
		k++;
		if (*p == '\0')
			return k;
		if (*p != ',')
			goto bad;
		p++;
	}
bad:
	errno = EINVAL;
	return -1;
}

int coordl__parse_peer_key(const char *s, uint8_t *key)
{
	size_t i;

	/* Exactly the contract's form (lowercase, no prefix, no spaces):
	 * every task of the step is given the same string, so anything
	 * else is a mistake worth refusing rather than guessing at. */
	if (!s || strlen(s) != SYNERGY_PEER_KEY_HEX)
		goto bad;
	for (i = 0; i < SYNERGY_PEER_KEY_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			goto bad;
	for (i = 0; i < SYNERGY_PEER_KEY_BYTES; i++) {
		unsigned hi = (unsigned)(s[2 * i] <= '9' ? s[2 * i] - '0' : s[2 * i] - 'a' + 10);
		unsigned lo = (unsigned)(s[2 * i + 1] <= '9' ? s[2 * i + 1] - '0' : s[2 * i + 1] - 'a' + 10);
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* Count the cores this process may run on. A node with more possible CPUs
 * than a cpu_set_t holds refuses the fixed-size mask (EINVAL), so the
 * mask grows until the kernel takes it. */
static int affinity_cores(void)
{
	for (size_t ncpus = CPU_SETSIZE; ncpus <= (1u << 20); ncpus *= 2) {
		size_t size = CPU_ALLOC_SIZE(ncpus);
		cpu_set_t *set = CPU_ALLOC(ncpus);
		int n;
		if (!set)
			return 1;
		if (sched_getaffinity(0, size, set) == 0) {
			n = CPU_COUNT_S(size, set);
			CPU_FREE(set);
			return n < 1 ? 1 : n > COORDL__MAX_THREADS ? COORDL__MAX_THREADS : n;
		}
		CPU_FREE(set);
		if (errno != EINVAL)
			break;
	}
	return 1;
}

/* A "0"/"1" flag variable. */
static int check_flag(const char *name, coordl_error_t *err)
{
	const char *v = getenv(name);

	if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
		return coordl__errprintf(err, EINVAL, "%s='%s': expected 0 or 1", name, v);
	return 0;
}

/* An integer variable in [min, max]: 1 and *out when it is set, 0 when it
 * is not, -1 with err naming it when it is malformed ("expected <what>
 * min..max"). */
static int env_int(const char *name, int64_t min, int64_t max, const char *what, int64_t *out,
		   coordl_error_t *err)
{
	const char *v = getenv(name);

	if (!v)
		return 0;
	if (syn_parse_i64(v, min, max, out) < 0)
		return coordl__errprintf(err, EINVAL, "%s='%.40s': expected %s %lld..%lld", name, v, what,
					 (long long)min, (long long)max);
	return 1;
}

/* A byte-count variable: as env_int. */
static int env_bytes(const char *name, uint64_t *out, coordl_error_t *err)
{
	const char *v = getenv(name);

	if (!v)
		return 0;
	if (syn_parse_size(v, 0, INT64_MAX, out) < 0)
		return coordl__errprintf(err, EINVAL,
					 "%s='%.40s': expected bytes >= 0 with optional K/M/G/T", name, v);
	return 1;
}

int coordl__env_resolve(const coordl_config_t *cfg, coordl__env_t *out, coordl_error_t *err)
{
	const char *v, *env_name = NULL, *grant = NULL;
	int64_t n, env_cache = 0;
	int rc;
	uint64_t bytes;
	coordl__env_t e = { 0 };

	/* Validate every variable that is set first, even when the API
	 * argument wins: a broken plugin setup should be seen at once. */
	if ((rc = env_int(SYNERGY_ENV_THREADS, 1, COORDL__MAX_THREADS, "an integer", &n, err)) < 0)
		return -1;
	if (rc)
		e.threads = (int)n;
	if ((rc = env_bytes(SYNERGY_ENV_CACHE_BYTES, &bytes, err)) < 0)
		return -1;
	if (rc)
		env_cache = (int64_t)bytes;
	if ((v = getenv(SYNERGY_ENV_CACHE_NAME))) {
		if (coordl__valid_cache_name(v) < 0)
			return coordl__errprintf(err, EINVAL,
						 "%s='%.40s': expected 1..64 of [A-Za-z0-9_.-]",
						 SYNERGY_ENV_CACHE_NAME, v);
		env_name = v;
	}
	if ((v = getenv(SYNERGY_ENV_CACHE_DIR))) {
		if (v[0] != '/')
			return coordl__errprintf(err, EINVAL,
						 "%s='%.40s': expected an absolute directory",
						 SYNERGY_ENV_CACHE_DIR, v);
		e.cache_dir = v;
	}
	if ((v = getenv(SYNERGY_ENV_CACHE_GRANT))) {
		if (v[0] != '/' || strlen(v) >= PATH_MAX)
			return coordl__errprintf(err, EINVAL, "%s='%.40s': expected an absolute file path",
						 SYNERGY_ENV_CACHE_GRANT, v);
		grant = v;
	}
	if ((v = getenv(SYNERGY_ENV_GROUP)) && *v) {
		if (coordl__valid_cache_name(v) < 0)
			return coordl__errprintf(err, EINVAL,
						 "%s='%.40s': expected 1..64 of [A-Za-z0-9_.-]",
						 SYNERGY_ENV_GROUP, v);
		e.group = v;
	}
	if ((v = getenv(SYNERGY_ENV_GROUP_DIR))) {
		if (v[0] != '/' || strlen(v) >= PATH_MAX - 128)
			return coordl__errprintf(err, EINVAL,
						 "%s='%.40s': expected an absolute directory",
						 SYNERGY_ENV_GROUP_DIR, v);
		e.group_dir = v;
	}
	e.group_bytes = COORDL__GROUP_BYTES_DEFAULT;
	if (env_bytes(SYNERGY_ENV_GROUP_BYTES, &e.group_bytes, err) < 0)
		return -1;
	e.group_window = COORDL__GROUP_WINDOW_DEFAULT;
	if ((rc = env_int(SYNERGY_ENV_GROUP_WINDOW, 1, 1000000, "an integer", &n, err)) < 0)
		return -1;
	if (rc)
		e.group_window = (uint32_t)n;
	if ((v = getenv(SYNERGY_ENV_CPUS)) &&
	    (!*v || syn_parse_cpus(v, 1u << 20, NULL, NULL) < 0))
		return coordl__errprintf(err, EINVAL, "%s='%.40s': expected a cpu list like 0-3,8",
					 SYNERGY_ENV_CPUS, v);
	if ((v = getenv(SYNERGY_ENV_PEERS))) {
		int k = coordl__parse_peers(v, NULL, NULL);
		if (k < 0)
			return coordl__errprintf(err, EINVAL,
						 "%s='%.40s': expected host:port,host:port,... (at most %d)",
						 SYNERGY_ENV_PEERS, v, COORDL__MAX_NODES);
		e.peers = v;
		e.nnodes = k;
		if (!(v = getenv(SYNERGY_ENV_NODE_INDEX)))
			return coordl__errprintf(err, EINVAL, "%s is set but %s is not",
						 SYNERGY_ENV_PEERS, SYNERGY_ENV_NODE_INDEX);
		if (syn_parse_i64(v, 0, k - 1, &n) < 0)
			return coordl__errprintf(err, EINVAL, "%s='%.40s': expected an integer 0..%d (%s has %d entries)",
						 SYNERGY_ENV_NODE_INDEX, v, k - 1, SYNERGY_ENV_PEERS, k);
		e.node_index = (int)n;
	}
	if ((v = getenv(SYNERGY_ENV_PEER_TAG))) {
		uint64_t tag;
		if (syn_parse_u64(v, 0, UINT64_MAX, &tag) < 0)
			return coordl__errprintf(err, EINVAL, "%s='%.40s': expected an integer 0..2^64-1",
						 SYNERGY_ENV_PEER_TAG, v);
		e.peer_tag = tag;
	}
	if ((v = getenv(SYNERGY_ENV_PEER_KEY))) {
		uint8_t key[SYNERGY_PEER_KEY_BYTES];
		if (coordl__parse_peer_key(v, key) == 0)
			e.peer_key = v;
		else
			e.peer_key_bad = 1;
		explicit_bzero(key, sizeof(key));
	}
	e.peer_timeout_ms = COORDL__PEER_TIMEOUT_DEFAULT;
	if ((rc = env_int(SYNERGY_ENV_PEER_TIMEOUT_MS, 1, 600000, "milliseconds", &n, err)) < 0)
		return -1;
	if (rc)
		e.peer_timeout_ms = (int)n;
	if ((v = getenv(SYNERGY_ENV_PEER_WIREUP))) {
		static const char *names[] = { "auto", "sockaddr", "pmix", "off" };
		int w = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(v, names[i]) == 0)
				w = i;
		if (w < 0)
			return coordl__errprintf(err, EINVAL, "%s='%.40s': expected auto, sockaddr, pmix or off",
						 SYNERGY_ENV_PEER_WIREUP, v);
		e.wireup = w;
	}
	if (check_flag(SYNERGY_ENV_PROFILE_MODE, err) < 0 || check_flag(SYNERGY_ENV_ACTIVE, err) < 0 ||
	    check_flag(SYNERGY_ENV_FOLLOW_CPUSET, err) < 0)
		return -1;

	/* Then apply precedence: API, environment, default. */
	if (cfg->threads < 0 || cfg->threads > COORDL__MAX_THREADS)
		return coordl__errprintf(err, EINVAL, "threads=%d: expected 0 (unset) or 1..%d",
					 cfg->threads, COORDL__MAX_THREADS);
	if (cfg->threads > 0)
		e.threads = cfg->threads;
	else if (e.threads == 0)
		e.threads = affinity_cores();
	v = getenv(SYNERGY_ENV_FOLLOW_CPUSET);
	e.follow = cfg->threads == 0 && !(v && strcmp(v, "0") == 0);
	/* Profiling mode needs somewhere to report: without a path (a Slurm
	 * profiling job that runs synergy-profile on a dataset sets only the
	 * mode) the loader trains normally. It sweeps the worker count
	 * itself, and follows the cpuset (if it would) only once the search
	 * ended. */
	if (!(v = getenv(SYNERGY_ENV_PROFILE_MODE)) || strcmp(v, "1") != 0 ||
	    !(e.profile_out = getenv(SYNERGY_ENV_PROFILE_OUT)) || !*e.profile_out)
		e.profile_out = NULL;

	if (cfg->cache_bytes < -1)
		return coordl__errprintf(err, EINVAL,
					 "cache_bytes=%lld: expected -1 (unset) or >= 0",
					 (long long)cfg->cache_bytes);
	if (cfg->cache_name && coordl__valid_cache_name(cfg->cache_name) < 0)
		return coordl__errprintf(err, EINVAL,
					 "cache_name='%.40s': expected 1..64 of [A-Za-z0-9_.-]",
					 cfg->cache_name);
	if (cfg->cache_use < COORDL_CACHE_AUTO || cfg->cache_use > COORDL_CACHE_NONE)
		return coordl__errprintf(err, EINVAL, "cache_use=%d: expected 0 (auto), 1 (job) or 2 (none)",
					 cfg->cache_use);
	if (cfg->max_item_bytes < 0 || cfg->max_item_bytes > COORDL__MAX_ITEM_LIMIT)
		return coordl__errprintf(err, EINVAL, "max_item_bytes=%lld: expected 0 (default) or 1..%lld",
					 (long long)cfg->max_item_bytes, (long long)COORDL__MAX_ITEM_LIMIT);
	e.max_item_bytes = cfg->max_item_bytes ? cfg->max_item_bytes : COORDL__MAX_ITEM_DEFAULT;

	/* The cache: see env.h. */
	e.job_cache = cfg->cache_use == COORDL_CACHE_JOB ||
		      (cfg->cache_use == COORDL_CACHE_AUTO && cfg->mode == COORDL_MODE_TRAIN);
	/* The group goes with the job's training loader (see env.h). */
	if (e.profile_out || !(cfg->mode == COORDL_MODE_TRAIN ||
			       (cfg->mode == COORDL_MODE_EVAL && cfg->cache_use == COORDL_CACHE_JOB)))
		e.group = NULL;
	if (cfg->cache_use != COORDL_CACHE_NONE) {
		e.cache_fixed = cfg->cache_bytes >= 0;
		e.cache_bytes = e.cache_fixed ? cfg->cache_bytes : e.job_cache ? env_cache : 0;
		e.cache_name = cfg->cache_name ? cfg->cache_name : e.job_cache ? env_name : NULL;
		e.grant_path = e.job_cache && !e.cache_fixed ? grant : NULL;
	} else {
		e.job_cache = 0;
		e.cache_fixed = 1;
	}
	/* Only the loader that takes the job's cache joins the peer tier:
	 * one partition per node and job, like the cache itself. */
	if (!e.job_cache || cfg->mode == COORDL_MODE_SYNTHETIC)
		e.wireup = COORDL__WIREUP_OFF;
	*out = e;
	return 0;
}
