/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * env.t: the environment contract parsers, table-driven, the precedence
 * API argument > environment > default, and (issue 12) which loader takes
 * the job's cache.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "loader/env.h"
#include "synergy_env.h"
#include "tests/tap.h"

static const char *contract_vars[] = {
	SYNERGY_ENV_CPUS, SYNERGY_ENV_THREADS, SYNERGY_ENV_CACHE_BYTES, SYNERGY_ENV_CACHE_DIR,
	SYNERGY_ENV_CACHE_NAME, SYNERGY_ENV_PROFILE_MODE, SYNERGY_ENV_PROFILE_OUT,
	SYNERGY_ENV_PROFILE_KEY, SYNERGY_ENV_ACTIVE, SYNERGY_ENV_CACHE_GRANT,
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(contract_vars) / sizeof(contract_vars[0]); i++)
		unsetenv(contract_vars[i]);
}

/* Index lines: "<word> <count>" headers and space-terminated fields. */
static void test_index_fields(void)
{
	uint64_t v = 7;
	char line[] = "12 0 34 x", bad[] = "12x 3", last[] = "5";
	char *p = line;

	ok(coordl__header_count("items 42", "items", 100, &v) == 0 && v == 42, "header 'items 42'");
	ok(coordl__header_count("items 101", "items", 100, &v) < 0, "header count above max refused");
	ok(coordl__header_count("itemsx 4", "items", 100, &v) < 0, "header word must match whole");
	ok(coordl__header_count("items", "items", 100, &v) < 0, "header without a count refused");
	ok(coordl__header_count("items -1", "items", 100, &v) < 0, "negative header count refused");
	ok(coordl__field_u64(&p, &v) == 0 && v == 12 && coordl__field_u64(&p, &v) == 0 && v == 0 &&
	   coordl__field_u64(&p, &v) == 0 && v == 34 && strcmp(p, "x") == 0, "fields 12 0 34, rest 'x'");
	ok(strcmp(line, "12 0 34 x") == 0, "the line is left as it was");
	p = bad;
	ok(coordl__field_u64(&p, &v) < 0 && p == bad && strcmp(bad, "12x 3") == 0,
	   "a malformed field is refused, line and position unchanged");
	p = last;
	ok(coordl__field_u64(&p, &v) < 0 && p == last, "a field without a following space is refused");
}

static void test_names(void)
{
	static const char *good_names[] = { "job42", "a.b-c_d", "X" };
	static const char *bad_names[] = { "", ".", "..", "a/b", "a b", "sp$ce",
					   "12345678901234567890123456789012345678901234567890123456789012345" };

	for (size_t i = 0; i < sizeof(good_names) / sizeof(*good_names); i++)
		ok(coordl__valid_cache_name(good_names[i]) == 0, "cache name '%s' accepted", good_names[i]);
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(*bad_names); i++)
		ok(coordl__valid_cache_name(bad_names[i]) == -1, "cache name '%.20s' rejected",
		   bad_names[i]);
}

/* Every malformed variable is rejected with EINVAL and its name in the text. */
static void test_resolve_bad(void)
{
	static const struct {
		const char *var, *val;
	} t[] = {
		{ SYNERGY_ENV_THREADS, "0" },
		{ SYNERGY_ENV_THREADS, "1025" },
		{ SYNERGY_ENV_THREADS, "four" },
		{ SYNERGY_ENV_THREADS, "" },
		{ SYNERGY_ENV_CACHE_BYTES, "-5" },
		{ SYNERGY_ENV_CACHE_BYTES, "10 GB" },
		{ SYNERGY_ENV_CPUS, "" },
		{ SYNERGY_ENV_CACHE_NAME, "a/b" },
		{ SYNERGY_ENV_CACHE_DIR, "relative/dir" },
		{ SYNERGY_ENV_CPUS, "0-" },
		{ SYNERGY_ENV_PROFILE_MODE, "yes" },
		{ SYNERGY_ENV_ACTIVE, "2" },
		{ SYNERGY_ENV_CACHE_GRANT, "grant" },
		{ SYNERGY_ENV_CACHE_GRANT, "" },
	};
	coordl_config_t cfg;

	coordl_config_init(&cfg);
	cfg.path = "/nonexistent";
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		coordl__env_t e;
		coordl_error_t err = { "" };
		int rc;

		clear_env();
		setenv(t[i].var, t[i].val, 1);
		errno = 0;
		rc = coordl__env_resolve(&cfg, &e, &err);
		ok(rc == -1 && errno == EINVAL && strstr(err.text, t[i].var),
		   "%s='%s' rejected naming the variable", t[i].var, t[i].val);
		if (rc == 0 || !strstr(err.text, t[i].var))
			diag("text: %s", err.text);
	}
	clear_env();
}

static void test_resolve_precedence(void)
{
	coordl_config_t cfg;
	coordl__env_t e;
	coordl_error_t err = { "" };
	cpu_set_t set;
	int cores = 1;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cores = CPU_COUNT(&set);
	clear_env();
	coordl_config_init(&cfg);
	ok(coordl__env_resolve(&cfg, &e, &err) == 0, "defaults resolve");
	is_int(e.threads, cores, "default threads = cores in the affinity mask");
	is_int(e.cache_bytes, 0, "default cache is off");
	ok(e.cache_name == NULL && e.cache_dir == NULL, "default cache is private, in shm");

	setenv(SYNERGY_ENV_THREADS, "7", 1);
	setenv(SYNERGY_ENV_CACHE_BYTES, "2M", 1);
	setenv(SYNERGY_ENV_CACHE_NAME, "job7", 1);
	setenv(SYNERGY_ENV_CACHE_DIR, "/tmp", 1);
	ok(coordl__env_resolve(&cfg, &e, &err) == 0, "environment resolves");
	is_int(e.threads, 7, "SYNERGY_THREADS used when threads unset");
	is_int(e.cache_bytes, 2 << 20, "SYNERGY_CACHE_BYTES used when cache_bytes unset");
	is_str(e.cache_name, "job7", "SYNERGY_CACHE_NAME used when cache_name unset");
	is_str(e.cache_dir, "/tmp", "SYNERGY_CACHE_DIR used");

	cfg.threads = 3;
	cfg.cache_bytes = 0;
	cfg.cache_name = "mine";
	ok(coordl__env_resolve(&cfg, &e, &err) == 0, "API arguments resolve");
	is_int(e.threads, 3, "API threads win over SYNERGY_THREADS");
	is_int(e.cache_bytes, 0, "API cache_bytes=0 wins over SYNERGY_CACHE_BYTES");
	is_str(e.cache_name, "mine", "API cache_name wins");

	cfg.threads = 2000;
	ok(coordl__env_resolve(&cfg, &e, &err) == -1 && strstr(err.text, "threads"),
	   "API threads=2000 rejected");
	cfg.threads = 0;
	cfg.cache_bytes = -2;
	ok(coordl__env_resolve(&cfg, &e, &err) == -1 && strstr(err.text, "cache_bytes"),
	   "API cache_bytes=-2 rejected");
	cfg.cache_bytes = -1;
	cfg.cache_name = "bad name";
	ok(coordl__env_resolve(&cfg, &e, &err) == -1 && strstr(err.text, "cache_name"),
	   "API cache_name with a space rejected");
	clear_env();
}

/* Issue 12: which loader takes the job's cache. */
static void test_issue12_cache_use(void)
{
	static const struct {
		int mode, use;
		int64_t bytes;
		const char *name;
		int job;
		int64_t want_bytes;
		const char *want_name;
		int grant;
		const char *what;
	} t[] = {
		{ COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, -1, NULL, 1, 2 << 20, "job7", 1,
		  "a training loader takes the job's cache and follows the grant" },
		{ COORDL_MODE_EVAL, COORDL_CACHE_AUTO, -1, NULL, 0, 0, NULL, 0,
		  "an evaluation loader gets no cache from the environment" },
		{ COORDL_MODE_RAW, COORDL_CACHE_AUTO, -1, NULL, 0, 0, NULL, 0,
		  "a raw loader gets no cache from the environment" },
		{ COORDL_MODE_EVAL, COORDL_CACHE_JOB, -1, NULL, 1, 2 << 20, "job7", 1,
		  "cache_use=job: an evaluation loader takes the job's cache" },
		{ COORDL_MODE_TRAIN, COORDL_CACHE_NONE, -1, NULL, 0, 0, NULL, 0,
		  "cache_use=none: no cache" },
		{ COORDL_MODE_TRAIN, COORDL_CACHE_NONE, 5 << 20, "mine", 0, 0, NULL, 0,
		  "cache_use=none wins over an explicit bound" },
		{ COORDL_MODE_TRAIN, COORDL_CACHE_AUTO, 1 << 20, NULL, 1, 1 << 20, "job7", 0,
		  "an explicit bound on the job's cache is fixed: no grant" },
		{ COORDL_MODE_EVAL, COORDL_CACHE_AUTO, 1 << 20, NULL, 0, 1 << 20, NULL, 0,
		  "an explicit bound on another loader: a private cache" },
		{ COORDL_MODE_EVAL, COORDL_CACHE_AUTO, 1 << 20, "val", 0, 1 << 20, "val", 0,
		  "an explicit bound and name on another loader: that named cache" },
	};

	clear_env();
	setenv(SYNERGY_ENV_CACHE_BYTES, "2M", 1);
	setenv(SYNERGY_ENV_CACHE_NAME, "job7", 1);
	setenv(SYNERGY_ENV_CACHE_GRANT, "/run/grant", 1);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		coordl_config_t cfg;
		coordl__env_t e;
		coordl_error_t err = { "" };
		coordl_config_init(&cfg);
		cfg.mode = t[i].mode;
		cfg.cache_use = t[i].use;
		cfg.cache_bytes = t[i].bytes;
		cfg.cache_name = t[i].name;
		ok(coordl__env_resolve(&cfg, &e, &err) == 0 && e.job_cache == t[i].job &&
		   e.cache_bytes == t[i].want_bytes &&
		   (t[i].want_name ? e.cache_name && strcmp(e.cache_name, t[i].want_name) == 0
				   : e.cache_name == NULL) &&
		   (t[i].grant ? e.grant_path && strcmp(e.grant_path, "/run/grant") == 0
			       : e.grant_path == NULL),
		   "issue 12: %s", t[i].what);
	}
	{
		coordl_config_t cfg;
		coordl__env_t e;
		coordl_error_t err = { "" };
		coordl_config_init(&cfg);
		ok(coordl__env_resolve(&cfg, &e, &err) == 0 && e.max_item_bytes == 64 << 20,
		   "max_item_bytes 0: the 64 MiB default");
		cfg.max_item_bytes = 4096;
		ok(coordl__env_resolve(&cfg, &e, &err) == 0 && e.max_item_bytes == 4096,
		   "max_item_bytes given: used");
	}
	clear_env();
}

/* The public entry point reports a bad variable too, and creates nothing. */
static void test_create_rejects(void)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	clear_env();
	setenv(SYNERGY_ENV_CACHE_BYTES, "lots", 1);
	coordl_config_init(&cfg);
	cfg.path = "/";
	errno = 0;
	ld = coordl_create(&cfg, &err);
	ok(ld == NULL && errno == EINVAL && strstr(err.text, SYNERGY_ENV_CACHE_BYTES),
	   "coordl_create fails with EINVAL naming SYNERGY_CACHE_BYTES");
	coordl_destroy(ld);
	clear_env();
}

int main(void)
{
	test_index_fields();
	test_names();
	test_resolve_bad();
	test_resolve_precedence();
	test_issue12_cache_use();
	test_create_rejects();
	return done_testing();
}
