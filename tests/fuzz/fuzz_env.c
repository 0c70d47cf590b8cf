/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_env.c: libFuzzer entry point for the loader's environment contract
 * (loader/env.c) and the parsers of common/parse.h it uses. The SYNERGY_*
 * variables are set by the plugin but can be set by any user by hand, so
 * every parser must accept exactly what env.h promises and refuse the rest
 * with EINVAL or ERANGE.
 *
 * The input is split at newlines: the first line goes through each of the
 * single-value parsers (whose results are checked against their documented
 * ranges), and the first eight lines become SYNERGY_THREADS,
 * SYNERGY_CACHE_BYTES, SYNERGY_CACHE_NAME, SYNERGY_CACHE_DIR, SYNERGY_CPUS,
 * SYNERGY_PROFILE_MODE, SYNERGY_ACTIVE and SYNERGY_CACHE_GRANT for
 * coordl__env_resolve(), in that order; a missing line leaves its variable
 * unset.
 *
 * Built and run by tests/fuzz/run-fuzz.sh.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "synergy_env.h"
#include "loader/env.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vars[] = {
	SYNERGY_ENV_THREADS, SYNERGY_ENV_CACHE_BYTES, SYNERGY_ENV_CACHE_NAME,
	SYNERGY_ENV_CACHE_DIR, SYNERGY_ENV_CPUS, SYNERGY_ENV_PROFILE_MODE, SYNERGY_ENV_ACTIVE,
	SYNERGY_ENV_CACHE_GRANT,
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

/* A refusal must come with one of the two documented errno values. */
static void check_refusal(void)
{
	if (errno != EINVAL && errno != ERANGE)
		abort();
}

static void single(const char *s)
{
	static const int64_t ranges[][2] = {
		{ 0, 0 }, { 1, 1024 }, { -5, 5 }, { INT64_MIN, INT64_MAX }, { 0, INT64_MAX },
	};
	int64_t n;
	uint64_t b;

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		errno = 0;
		if (syn_parse_i64(s, ranges[i][0], ranges[i][1], &n) == 0) {
			if (n < ranges[i][0] || n > ranges[i][1])
				abort();
		} else {
			check_refusal();
		}
	}
	errno = 0;
	if (syn_parse_size(s, 0, INT64_MAX, &b) < 0)
		check_refusal();
	else if (b > (uint64_t)INT64_MAX)
		abort();
	errno = 0;
	if (syn_parse_cpus(s, 1u << 20, NULL, NULL) < 0 && errno != EINVAL)
		abort();
	if (coordl__valid_cache_name(s) == 0) {
		size_t len = strlen(s);

		if (len < 1 || len > 64 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	coordl_config_t cfg;
	coordl__env_t e;
	coordl_error_t err;
	char *s, *line, *next;
	size_t i;

	if (!(s = fuzz_string(data, size)))
		return 0;

	for (i = 0; i < NVARS; i++)
		unsetenv(vars[i]);
	line = s;
	for (i = 0; i < NVARS && line; i++, line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (i == 0)
			single(line);
		if (setenv(vars[i], line, 1) < 0)
			break;
	}

	/* Only the three fields resolve() reads, set to "unset" so that the
	 * environment decides (coordl_config_init lives in loader.c, which
	 * would pull in the whole loader). */
	memset(&cfg, 0, sizeof(cfg));
	cfg.threads = 0;
	cfg.cache_bytes = -1;
	cfg.cache_name = NULL;
	memset(&err, 0, sizeof(err));
	errno = 0;
	if (coordl__env_resolve(&cfg, &e, &err) == 0) {
		if (e.threads < 1 || e.threads > 1024 || e.cache_bytes < 0)
			abort();
		if (e.cache_name && coordl__valid_cache_name(e.cache_name) < 0)
			abort();
		if (e.cache_dir && e.cache_dir[0] != '/')
			abort();
		if (e.grant_path && (e.grant_path[0] != '/' || !e.job_cache || e.cache_fixed))
			abort();
		if (e.max_item_bytes < 1 || e.max_item_bytes > COORDL__MAX_ITEM_LIMIT)
			abort();
	} else if (errno != EINVAL || err.text[0] == '\0') {
		abort();
	}
	for (i = 0; i < NVARS; i++)
		unsetenv(vars[i]);
	free(s);
	return 0;
}
