/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/conf.c: the synergy.conf schema and its loader (see conf.h).
 *
 * One row per key: to add a key, add its field to syn_conf_t, its default
 * to syn_conf_defaults(), a row here and a paragraph to synergy.conf(5)
 * (common/test/conf.t fails for a key the manual does not name).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/conf.h"
#include "common/kv.h"

enum conf_type {
	T_BOOL,     /* int: common/parse.h's boolean */
	T_NUMBER,   /* uint32_t or uint64_t by the field's size: an integer in [min, max] */
	T_FRACTION, /* double: a real in [0, 1) */
	T_PATH,     /* char[SYN_PATH_MAX]: syn_path_ok() */
	T_USER,     /* char[]: syn_user_valid() */
	T_COMMAND,  /* char[]: a command line starting with an absolute path */
};

struct conf_key {
	const char *key; /* as synergy.conf(5) spells it */
	enum conf_type type;
	uint64_t min, max;   /* T_NUMBER: the range */
	const char *what;    /* T_NUMBER: what a message calls a value ("a number of MB") */
	size_t offset, size; /* the field in syn_conf_t */
};

#define FIELD(f) offsetof(syn_conf_t, f), sizeof(((syn_conf_t *)0)->f)
#define YEAR_S (86400ULL * 365)
#define MB_MAX (1024ULL * 1024 * 1024)

static const struct conf_key schema[] = {
	{ "Enabled", T_BOOL, 0, 0, NULL, FIELD(enabled) },
	{ "ProfileStore", T_PATH, 0, 0, NULL, FIELD(store_dir) },
	{ "RequestDir", T_PATH, 0, 0, NULL, FIELD(request_dir) },
	{ "CacheDir", T_PATH, 0, 0, NULL, FIELD(cache_dir) },
	{ "ProcessMemMB", T_NUMBER, 0, MB_MAX, "a number of MB", FIELD(process_mem_mb) },
	{ "MaxCacheMB", T_NUMBER, 0, MB_MAX, "a number of MB", FIELD(max_cache_mb) },
	{ "Eps", T_FRACTION, 0, 0, NULL, FIELD(eps) },
	{ "NodeGPUs", T_NUMBER, 1, MB_MAX, "a positive number", FIELD(node_gpus) },
	{ "NodeCPUs", T_NUMBER, 1, MB_MAX, "a positive number", FIELD(node_cpus) },
	{ "NodeMemMB", T_NUMBER, 1, MB_MAX, "a positive number of MB", FIELD(node_mem_mb) },
	{ "ProfileCommand", T_COMMAND, 0, 0, NULL, FIELD(profile_command) },
	{ "LendIdleCores", T_BOOL, 0, 0, NULL, FIELD(lend_idle) },
	{ "HarvestIdleCycles", T_BOOL, 0, 0, NULL, FIELD(harvest) },
	{ "HarvestInterval", T_NUMBER, 0, 3600, "a number of seconds", FIELD(harvest_interval) },
	{ "StateDir", T_PATH, 0, 0, NULL, FIELD(state_dir) },
	/* The name StateDir had when only lending kept state. */
	{ "LendStateDir", T_PATH, 0, 0, NULL, FIELD(state_dir) },
	{ "CgroupConf", T_PATH, 0, 0, NULL, FIELD(cgroup_conf) },
	/* A path relative to the cgroup hierarchy's root, %n and %h allowed. */
	{ "CgroupRoot", T_PATH, 0, 0, NULL, FIELD(cgroup_root) },
	{ "NodeShapesFile", T_PATH, 0, 0, NULL, FIELD(shapes_file) },
	{ "NodeShapesMaxAge", T_NUMBER, 1, YEAR_S, "a number of seconds", FIELD(shapes_max_age) },
	{ "ProfileUser", T_USER, 0, 0, NULL, FIELD(profile_user) },
	{ "MaxProfileRequests", T_NUMBER, 0, 100000, "a number", FIELD(max_requests) },
	{ "MaxProfileRequestsPerUser", T_NUMBER, 0, 100000, "a number",
	  FIELD(max_requests_per_user) },
	{ "MaxProfilingJobs", T_NUMBER, 0, 100000, "a number", FIELD(max_profiling_jobs) },
	{ "ProfileInPlace", T_BOOL, 0, 0, NULL, FIELD(profile_in_place) },
	{ "ProfileClaimMaxAge", T_NUMBER, 1, YEAR_S, "a number of seconds", FIELD(claim_max_age) },
	{ "GrantMaxAge", T_NUMBER, 60, 10 * YEAR_S, "a number of seconds", FIELD(grant_max_age) },
	{ "GroupDir", T_PATH, 0, 0, NULL, FIELD(group_dir) },
	/* The loader needs room for two batches; it says so itself
	 * (coordl_group_note) for a bound too small for its batches. */
	{ "GroupStagingMB", T_NUMBER, 1, 1024 * 1024, "a number of MB", FIELD(group_staging_mb) },
	{ "GroupWindow", T_NUMBER, 1, 1000000, "a number of batches", FIELD(group_window) },
	/* Each bound alone is checked here; a minimum above the maximum is
	 * refused where the range is used (the keys may come in any order). */
	{ "PeerPortMin", T_NUMBER, 1, 65535, "a port number", FIELD(peer_port_min) },
	{ "PeerPortMax", T_NUMBER, 1, 65535, "a port number", FIELD(peer_port_max) },
	{ "CheckpointDir", T_PATH, 0, 0, NULL, FIELD(ckpt_dir) },
	/* 0: kept until the job completes. */
	{ "CheckpointRetention", T_NUMBER, 0, 10ULL * 366 * 86400, "a number of seconds",
	  FIELD(ckpt_retention) },
};

#define N_KEYS (sizeof(schema) / sizeof(schema[0]))

const char *syn_conf_key_name(size_t i)
{
	return i < N_KEYS ? schema[i].key : NULL;
}

void syn_conf_defaults(syn_conf_t *c)
{
	memset(c, 0, sizeof(*c));
	c->enabled = 1;
	snprintf(c->store_dir, sizeof(c->store_dir), "%s", SYN_CONF_PROFILE_STORE_DEFAULT);
	snprintf(c->request_dir, sizeof(c->request_dir), "/var/spool/synergy/requests");
	snprintf(c->cache_dir, sizeof(c->cache_dir), "/dev/shm/synergy");
	snprintf(c->group_dir, sizeof(c->group_dir), "/dev/shm/synergy");
	c->process_mem_mb = 1024;
	c->max_cache_mb = 1024 * 1024;
	c->eps = 0.01;
	c->lend_idle = 0;
	c->harvest = 1;
	c->harvest_interval = 5;
	snprintf(c->state_dir, sizeof(c->state_dir), "/run/synergy");
	snprintf(c->shapes_file, sizeof(c->shapes_file), "/var/spool/synergy/node_shapes");
	c->shapes_max_age = 600;
	snprintf(c->profile_user, sizeof(c->profile_user), "nobody");
	c->max_requests = 64;
	c->max_requests_per_user = 4;
	c->max_profiling_jobs = 2;
	c->profile_in_place = 1;
	c->claim_max_age = 3600;
	c->grant_max_age = 30ULL * 24 * 3600;
	c->group_staging_mb = SYN_CONF_GROUP_STAGING_MB_DEFAULT;
	c->group_window = SYN_CONF_GROUP_WINDOW_DEFAULT;
	c->peer_port_min = SYN_CONF_PEER_PORT_MIN_DEFAULT;
	c->peer_port_max = SYN_CONF_PEER_PORT_MAX_DEFAULT;
	c->ckpt_retention = SYN_CONF_CHECKPOINT_RETENTION_DEFAULT;
}

/* Parse value as row k says into *field (the row's field of a syn_conf_t). */
static int set_one(const struct conf_key *k, char *field, const char *value, syn_error_t *err)
{
	uint64_t v;
	double d;
	int b;

	switch (k->type) {
	case T_BOOL:
		if (syn_parse_bool(value, &b) < 0)
			return syn_errprintf(err, EINVAL, "%s: '%.60s' is not yes or no", k->key,
					     value);
		*(int *)(void *)field = b;
		return 0;
	case T_NUMBER:
		if (syn_parse_u64(value, k->min, k->max, &v) < 0)
			return syn_errprintf(err, errno, "%s: '%.60s' is not %s in %llu..%llu",
					     k->key, value, k->what, (unsigned long long)k->min,
					     (unsigned long long)k->max);
		if (k->size == sizeof(uint32_t))
			*(uint32_t *)(void *)field = (uint32_t)v;
		else
			*(uint64_t *)(void *)field = v;
		return 0;
	case T_FRACTION:
		if (syn_parse_double(value, 0.0, 1.0, &d) < 0 || d >= 1.0)
			return syn_errprintf(err, EINVAL, "%s: '%.60s' is not a number in [0, 1)",
					     k->key, value);
		*(double *)(void *)field = d;
		return 0;
	case T_PATH:
		if (!syn_path_ok(value))
			return syn_errprintf(err, EINVAL,
					     "%s: '%.60s' is not an absolute path without "
					     "'..' (at most %d bytes)",
					     k->key, value, SYN_PATH_MAX - 1);
		break;
	case T_USER:
		if (!syn_user_valid(value))
			return syn_errprintf(err, EINVAL, "%s: '%.40s' is not an account name",
					     k->key, value);
		break;
	case T_COMMAND:
		/* An admin's command line, run by synergyd in a batch job: it
		 * must start with an absolute path and fit, nothing more. */
		if (value[0] != '/' || strlen(value) >= k->size || strpbrk(value, "\n\r"))
			return syn_errprintf(err, EINVAL,
					     "%s: '%.60s' must be a command line starting "
					     "with an absolute path, under %zu bytes",
					     k->key, value, k->size);
		break;
	}
	snprintf(field, k->size, "%s", value);
	return 0;
}

int syn_conf_set(syn_conf_t *c, const char *key, const char *value, syn_error_t *err)
{
	if (!c || !key || !value)
		return syn_errprintf(err, EINVAL, "missing key or value");
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcasecmp(key, schema[i].key) == 0)
			return set_one(&schema[i], (char *)c + schema[i].offset, value, err);
	return syn_errprintf(err, EINVAL, "unknown key '%.60s'", key);
}

int syn_conf_arg(syn_conf_t *c, const char *arg, syn_error_t *err)
{
	const char *eq = arg ? strchr(arg, '=') : NULL;
	char key[64];
	size_t klen;

	if (!eq || eq == arg)
		return syn_errprintf(err, EINVAL, "argument '%.60s' is not key=value",
				     arg ? arg : "");
	klen = (size_t)(eq - arg);
	if (klen >= sizeof(key))
		return syn_errprintf(err, EINVAL, "argument '%.32s...': key too long", arg);
	memcpy(key, arg, klen);
	key[klen] = '\0';
	if (strcasecmp(key, "conf") == 0) {
		if (!syn_path_ok(eq + 1))
			return syn_errprintf(err, EINVAL, "conf: '%.60s' is not an absolute path",
					     eq + 1);
		return syn_conf_load(c, eq + 1, err);
	}
	return syn_conf_set(c, key, eq + 1, err);
}

struct apply {
	syn_conf_t *c;
	const char *path;
	syn_error_t *err;
};

static int apply_one(const char *section, const char *key, const char *value, int line, void *arg)
{
	struct apply *a = arg;
	syn_error_t e;

	if (syn_conf_set(a->c, key, value, &e) < 0)
		return syn_errprintf(a->err, errno, "%s:%d: %s", a->path, line, e.text);
	return 0;
}

int syn_conf_load(syn_conf_t *c, const char *path, syn_error_t *err)
{
	struct apply a = { c, NULL, err };
	char def[4096];
	syn_kv_t *kv;
	int rv;

	if (!path)
		path = syn_conf_default_path(def, sizeof(def));
	if (!(kv = syn_kv_load(path, 0, err)))
		return -1;
	a.path = syn_kv_name(kv);
	rv = syn_kv_foreach(kv, apply_one, &a);
	syn_kv_destroy(kv);
	return rv ? -1 : 0;
}

const char *syn_conf_default_path(char *buf, size_t len)
{
	const char *env = getenv(SYN_CONF_ENV), *sc = getenv("SLURM_CONF"), *slash;

	if (env && *env)
		return env;
	/* Beside slurm.conf: a cluster whose slurm.conf is elsewhere keeps
	 * synergy.conf with it, and slurmctld, slurmd and every user command
	 * see the same SLURM_CONF. */
	if (sc && *sc && (slash = strrchr(sc, '/')) && buf && len > 0) {
		int n = snprintf(buf, len, "%.*s/synergy.conf", (int)(slash - sc), sc);
		if (n > 0 && (size_t)n < len)
			return buf;
	}
	return SYN_CONF_DEFAULT_PATH;
}
