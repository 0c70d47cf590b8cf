/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * decide-bench: what job_submit/synergy's decision (plugin/ctl/submit.c,
 * syn__decide) costs one job, per kind of job, on a profile store of its
 * own in a temporary directory. slurmctld runs it for every job of every
 * user under its locks, and a new key's decision takes profiling_mu, so
 * its cost is what a burst of submissions waits for (issue 26).
 *
 * Kinds, N decisions each (uid 1000, 1 GPU, default caps):
 *   profiled   a key the store holds: sized
 *   new-claim  a new key while uid 1000 has room for a claim (each claim
 *              is released again, so that there is always room)
 *   new-cap    a new key once uid 1000 holds MaxProfileRequestsPerUser
 *              claims and OTHERS other users one each: refused by the cap
 *              (the count reads every live claim)
 *   same-key   a key another job of uid 1000 is profiling: "another job"
 *   offline    a new key of a 2-GPU job (not in place): a request queued,
 *              then refused by the cap once it is full
 * Prints wall and CPU microseconds per decision, min/median/max.
 *
 * Usage: decide-bench [N [OTHERS]]   (default 2000, 40)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/parse.h"
#include "common/store.h"
#include "plugin/ctl/submit.h"
#include "plugin/shared/claim.h"
#include "plugin/shared/util.h"
#include "plugin/ctl/test/profile_fixture.h"
#include "plugin/bench/bench_time.h"

static syn_conf_t conf;
static char dir[] = "/tmp/syndecideXXXXXX";

static void decide(const char *key, uint32_t uid, int gpus, syn__decision_t *d)
{
	char kv[128], *env[2];
	syn__job_req_t req;

	snprintf(kv, sizeof(kv), "SYNERGY_PROFILE_KEY=%s", key);
	env[0] = kv;
	env[1] = NULL;
	memset(&req, 0, sizeof(req));
	req.spank_env = env;
	req.spank_env_size = 1;
	req.tres_per_node = gpus == 1 ? "gres/gpu:1" : "gres/gpu:2";
	req.uid = uid;
	syn__decide(&conf, &req, d);
}

static void put_profile(const char *key)
{
	syn_error_t err;

	if (syn_test_put_profile(conf.store_dir, key, 1, &err) < 0) {
		fprintf(stderr, "decide-bench: profile store %s: %s\n", conf.store_dir, err.text);
		exit(1);
	}
}

/* The kinds: fill in the store, then one decision of the kind. A kind
 * with a prefix decides a new key "<prefix>-<i>" each time, one without
 * the same key (its name) each time. */
enum kind { PROFILED, NEW_CLAIM, NEW_CAP, SAME_KEY, OFFLINE, NKINDS };
static const struct {
	const char *name, *prefix, *key, *want;
	int gpus;
} kinds[NKINDS] = {
	[PROFILED] = { "profiled", NULL, "img", "cpus=", 1 },
	[NEW_CLAIM] = { "new-claim", "nc", NULL, "profiling in place", 1 },
	[NEW_CAP] = { "new-cap", "cap", NULL, "profiling refused", 1 },
	[SAME_KEY] = { "same-key", NULL, "busy", "another job", 1 },
	[OFFLINE] = { "offline", "off", NULL, "profiling re", 2 },
};

static int one(enum kind k, int i, syn__decision_t *d)
{
	char key[64], nonce[SYN__NONCE_LEN + 1];
	const char *p;

	if (kinds[k].prefix)
		snprintf(key, sizeof(key), "%s-%d", kinds[k].prefix, i);
	else
		snprintf(key, sizeof(key), "%s", kinds[k].key);
	decide(key, 1000, kinds[k].gpus, d);
	if (!strstr(d->comment, kinds[k].want)) {
		fprintf(stderr, "decide-bench: %s #%d: unexpected decision: %s\n", kinds[k].name, i,
			d->comment);
		return -1;
	}
	/* A claim taken is released, so that the next new key finds room. */
	if (k == NEW_CLAIM && (p = strstr(d->comment, "(claim "))) {
		snprintf(nonce, sizeof(nonce), "%.*s", SYN__NONCE_LEN, p + 7);
		if (syn__claim_release(conf.store_dir, 1000, key, nonce) < 0) {
			fprintf(stderr, "decide-bench: releasing the claim of %s: %s\n", key,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void fill(enum kind k, int others)
{
	char key[64];
	syn__decision_t d;

	if (k == NEW_CAP || k == SAME_KEY) {
		/* uid 1000 at its cap (busy among its claims), the others
		 * holding one claim each. */
		decide("busy", 1000, 1, &d);
		for (uint64_t j = 1; j < conf.max_requests_per_user; j++) {
			snprintf(key, sizeof(key), "held-%llu", (unsigned long long)j);
			decide(key, 1000, 1, &d);
		}
		for (int u = 0; u < others; u++) {
			snprintf(key, sizeof(key), "other-%d", u);
			decide(key, 2000 + (uint32_t)u, 1, &d);
		}
	}
}

/* Empty and remove directory path (ours, made by mkdtemp). */
static void remove_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		syn__remove_tree(fd);
	rmdir(path);
}

/* argv[i] as a count in [min, max], or the default dflt when absent. */
static int count_arg(int argc, char **argv, int i, uint64_t min, uint64_t max, int dflt,
		     const char *what, int *out)
{
	uint64_t v;

	*out = dflt;
	if (argc <= i)
		return 0;
	if (syn_parse_u64(argv[i], min, max, &v) < 0) {
		fprintf(stderr, "decide-bench: '%s': expected %s (%llu-%llu)\n", argv[i], what,
			(unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	char sub[sizeof(dir) + 8];
	int n, others;
	double *w, *c;

	if (argc > 3 || count_arg(argc, argv, 1, 1, 10000000, 2000, "a count of decisions", &n) < 0 ||
	    count_arg(argc, argv, 2, 0, 10000, 40, "a count of other users", &others) < 0) {
		if (argc > 3)
			fprintf(stderr, "usage: decide-bench [N [OTHERS]]\n");
		return 2;
	}
	w = calloc((size_t)n, sizeof(*w));
	c = calloc((size_t)n, sizeof(*c));
	if (!w || !c || !mkdtemp(dir)) {
		perror("decide-bench");
		return 1;
	}
	printf("decide-bench: %d decisions per kind, %d other users holding a claim each\n", n,
	       others);
	printf("%-10s %10s %10s %10s %10s %10s %10s\n", "kind", "wall min", "median", "max",
	       "cpu min", "median", "max");
	for (int k = 0; k < NKINDS; k++) {
		syn__decision_t d;

		snprintf(sub, sizeof(sub), "%s/store", dir);
		remove_dir(sub);
		snprintf(sub, sizeof(sub), "%s/req", dir);
		remove_dir(sub);
		syn_conf_defaults(&conf);
		snprintf(conf.store_dir, sizeof(conf.store_dir), "%s/store", dir);
		snprintf(conf.request_dir, sizeof(conf.request_dir), "%s/req", dir);
		conf.node_gpus = 4;
		conf.node_cpus = 32;
		conf.node_mem_mb = 256 * 1024;
		conf.process_mem_mb = 2048;
		conf.max_requests = (uint64_t)others + 2 * conf.max_requests_per_user;
		put_profile("img");
		fill((enum kind)k, others);
		for (int i = 0; i < n; i++) {
			double w0 = bench_wall_us(), c0 = bench_cpu_us();

			if (one((enum kind)k, i, &d) < 0) {
				remove_dir(dir);
				return 1;
			}
			w[i] = bench_wall_us() - w0;
			c[i] = bench_cpu_us() - c0;
		}
		qsort(w, (size_t)n, sizeof(*w), bench_cmp_double);
		qsort(c, (size_t)n, sizeof(*c), bench_cmp_double);
		printf("%-10s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", kinds[k].name, w[0],
		       w[n / 2], w[n - 1], c[0], c[n / 2], c[n - 1]);
	}
	remove_dir(dir);
	free(w);
	free(c);
	return 0;
}
