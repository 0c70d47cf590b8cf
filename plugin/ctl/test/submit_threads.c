/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * submit_threads.t: job_submit/synergy's decision (plugin/ctl/submit.c)
 * called by many threads at once on one profile store, as slurmctld calls
 * job_submit from Slurm 23.02 on (issue 26). Checked: every profiled job is
 * sized exactly as it is alone; of the first jobs of one new key exactly
 * one takes its claim and every other one names that claim; caps on claims
 * and requests hold however many submissions race for the last place; two
 * submissions of one new key queue one request; every file left is whole.
 * Also run under TSan (THREAD_TESTS).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/store.h"
#include "tests/tap.h"
#include "plugin/shared/claim.h"
#include "plugin/shared/jobrec.h"
#include "plugin/ctl/submit.h"
#include "plugin/ctl/test/profile_fixture.h"

#define THREADS 16
#define ROUNDS 25

static char dir[] = "/tmp/synsubthrXXXXXX";
static syn_conf_t conf;
static pthread_barrier_t start;
static syn__decision_t reference, reference_group;

static void put_profile(const char *key)
{
	syn_error_t err;

	if (syn_test_put_profile(conf.store_dir, key, 1, &err) < 0)
		bail_out(err.text);
}

/* One job of uid with key on one GPU, in group gname when not NULL. */
static void decide(const syn_conf_t *c, const char *key, uint32_t uid, const char *gname,
		   syn__decision_t *d)
{
	char kv[128], gv[128], *env[3];
	syn__job_req_t req;
	uint32_t n = 0;

	snprintf(kv, sizeof(kv), SYN__CTL_KEY "=%s", key);
	env[n++] = kv;
	if (gname) {
		snprintf(gv, sizeof(gv), SYN__CTL_GROUP "=%s", gname);
		env[n++] = gv;
	}
	env[n] = NULL;
	memset(&req, 0, sizeof(req));
	req.spank_env = env;
	req.spank_env_size = n;
	req.tres_per_node = "gres/gpu:1";
	req.uid = uid;
	syn__decide(c, &req, d);
}

/* What the threads saw, added up under a lock. */
static pthread_mutex_t tally_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int sized, sized_wrong, group_wrong;
	int shared_taken, shared_named, shared_other;
	char shared_nonce[SYN__NONCE_LEN + 1];
	int in_place, refused, other;
} tally;

/* Thread t: ROUNDS times a job of the profiled key (every other one in a
 * group), a first job of the new key all threads submit as uid 1000, and a
 * first job of a new key of its own as uid 5000, whose claims all threads
 * race for against MaxProfileRequestsPerUser. */
static void *mixed(void *arg)
{
	int t = (int)(intptr_t)arg;
	syn__decision_t d;
	char key[64], *p;

	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		decide(&conf, "img", 1000, r % 2 ? "grp" : NULL, &d);
		pthread_mutex_lock(&tally_mu);
		tally.sized += d.action == SYN__SIZED;
		tally.sized_wrong += d.action != SYN__SIZED ||
				     d.cpus_per_task != reference.cpus_per_task ||
				     d.mem_mb != reference.mem_mb ||
				     strcmp(d.comment, r % 2 ? reference_group.comment :
							       reference.comment) != 0;
		tally.group_wrong += r % 2 ? !strstr(d.grant, " group=u1000-g-grp") :
					     strstr(d.grant, " group=") != NULL;
		pthread_mutex_unlock(&tally_mu);

		decide(&conf, "shared-new", 1000, NULL, &d);
		pthread_mutex_lock(&tally_mu);
		if (d.profiling_in_place && (p = strstr(d.comment, "(claim "))) {
			tally.shared_taken++;
			snprintf(tally.shared_nonce, sizeof(tally.shared_nonce), "%.16s", p + 7);
		} else if ((p = strstr(d.comment, "another job of uid 1000 profiles it in place "
							"(claim "))) {
			tally.shared_named++;
		} else {
			tally.shared_other++;
			diag("shared key: %s", d.comment);
		}
		pthread_mutex_unlock(&tally_mu);

		snprintf(key, sizeof(key), "own-%d-%d", t, r);
		decide(&conf, key, 5000, NULL, &d);
		pthread_mutex_lock(&tally_mu);
		if (d.profiling_in_place)
			tally.in_place++;
		else if (strstr(d.comment, "profiling refused"))
			tally.refused++;
		else
			tally.other++;
		pthread_mutex_unlock(&tally_mu);
	}
	return NULL;
}

/* Claims counted by owner: [0] uid 1000, [1] uid 5000, [2] others. */
static int claim_cb(const syn__claim_t *c, void *arg)
{
	int *n = arg;

	n[c->uid == 1000 ? 0 : c->uid == 5000 ? 1 : 2]++;
	return 0;
}

/* Files in dirpath that are not whole ("key=...\nuid=...\n..." requests,
 * or claims that do not parse), and the number of names ending in suffix. */
static int count_files(const char *dirpath, const char *suffix, int *torn)
{
	DIR *dp = opendir(dirpath);
	struct dirent *e;
	int n = 0;

	*torn = 0;
	while (dp && (e = readdir(dp))) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);
		char *text;

		if (e->d_name[0] == '.')
			continue;
		if (len <= sl || strcmp(e->d_name + len - sl, suffix) != 0) {
			(*torn)++; /* a stray name: a temporary file left, say */
			continue;
		}
		n++;
		text = syn_file_read(dirfd(dp), e->d_name, 4096, 0, NULL);
		if (!text || strncmp(text, "key=", 4) != 0 || !strstr(text, "\nuid=") ||
		    !strstr(text, "\ntime=") || text[strlen(text) - 1] != '\n')
			(*torn)++;
		free(text);
	}
	if (dp)
		closedir(dp);
	return n;
}

static void run(void *(*fn)(void *))
{
	pthread_t th[THREADS];

	pthread_barrier_init(&start, NULL, THREADS);
	for (int t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, fn, (void *)(intptr_t)t) != 0)
			bail_out("pthread_create");
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&start);
}

static void test_mixed(void)
{
	syn__claim_t c;
	int claims[3] = { 0 };

	run(mixed);
	ok(tally.sized == THREADS * ROUNDS, "%d jobs of a profiled key from %d threads: all sized "
	   "(%d)", THREADS * ROUNDS, THREADS, tally.sized);
	is_int(tally.sized_wrong, 0, "each exactly as alone (cpus, memory, comment)");
	is_int(tally.group_wrong, 0, "and in its group when it names one, else in none");
	ok(tally.shared_taken == 1, "%d first jobs of one new key of one user: one takes the claim "
	   "(%d)", THREADS * ROUNDS, tally.shared_taken);
	ok(tally.shared_named == THREADS * ROUNDS - 1,
	   "every other one finds it held and is not profiled (%d)", tally.shared_named);
	ok(syn__claim_read(conf.store_dir, 1000, "shared-new", &c) == 0 &&
		   strcmp(c.nonce, tally.shared_nonce) == 0,
	   "the claim file holds the nonce its job was told (%s)", tally.shared_nonce);
	syn__claim_foreach(conf.store_dir, claim_cb, claims);
	is_int(claims[0], 1, "uid 1000 holds one claim");
	ok(claims[1] == (int)conf.max_requests_per_user,
	   "%d first jobs of new keys of one user from %d threads: MaxProfileRequestsPerUser=%u "
	   "claims (%d)", THREADS * ROUNDS, THREADS, (unsigned)conf.max_requests_per_user,
	   claims[1]);
	is_int(tally.in_place, (int)conf.max_requests_per_user, "as many jobs profile in place");
	is_int(tally.refused, THREADS * ROUNDS - (int)conf.max_requests_per_user,
	       "every other one is refused by the cap, saying so");
	is_int(claims[2] + tally.other, 0, "nothing else");
}

/* ProfileInPlace=no: the threads race to queue requests. */
static syn_conf_t offline;
static int queued_same, queued_own;

static void *requests(void *arg)
{
	int t = (int)(intptr_t)arg, same = 0, own = 0;
	syn__decision_t d;
	char key[64];

	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		decide(&offline, "queued-new", 3000, NULL, &d);
		same += d.profiling_requested;
		snprintf(key, sizeof(key), "req-%d-%d", t, r);
		decide(&offline, key, 4000 + (uint32_t)(t % 4), NULL, &d);
		own += d.profiling_requested;
	}
	pthread_mutex_lock(&tally_mu);
	queued_same += same;
	queued_own += own;
	pthread_mutex_unlock(&tally_mu);
	return NULL;
}

static void test_requests(void)
{
	int torn, n;

	run(requests);
	ok(queued_same == THREADS * ROUNDS, "%d jobs of one new key, offline profiling: each "
	   "says its key is queued (%d)", THREADS * ROUNDS, queued_same);
	n = count_files(offline.request_dir, ".req", &torn);
	ok(n == (int)offline.max_requests, "MaxProfileRequests=%u requests queued in all, "
	   "whatever the race (%d)", (unsigned)offline.max_requests, n);
	ok(queued_own + 1 == (int)offline.max_requests,
	   "as many jobs were told their key is queued (%d, and the shared key)", queued_own);
	is_int(torn, 0, "every request file whole, no temporary file left");
	{
		char path[SYN_PATH_MAX + 32];

		snprintf(path, sizeof(path), "%s/queued-new.req", offline.request_dir);
		ok(faccessat(AT_FDCWD, path, F_OK, 0) == 0,
		   "the shared key's request is one of them");
	}
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	syn_conf_defaults(&conf);
	snprintf(conf.store_dir, sizeof(conf.store_dir), "%s/store", dir);
	snprintf(conf.request_dir, sizeof(conf.request_dir), "%s/requests", dir);
	conf.node_gpus = 2;
	conf.node_cpus = 2;
	conf.node_mem_mb = 4096;
	conf.process_mem_mb = 1024;
	/* The per-user cap is the one the threads race for. */
	conf.max_requests = 1000;
	conf.max_requests_per_user = 3;
	put_profile("img");
	decide(&conf, "img", 1000, NULL, &reference);
	decide(&conf, "img", 1000, "grp", &reference_group);
	if (reference.action != SYN__SIZED || reference_group.action != SYN__SIZED)
		bail_out("the profiled key is not sized");
	test_mixed();

	/* A store of its own: the caps count the claims above too. */
	offline = conf;
	offline.profile_in_place = 0;
	snprintf(offline.store_dir, sizeof(offline.store_dir), "%s/offline-store", dir);
	snprintf(offline.request_dir, sizeof(offline.request_dir), "%s/offline-requests", dir);
	if (mkdir(offline.store_dir, 0755) < 0)
		bail_out("mkdir");
	offline.max_requests = 20;
	offline.max_requests_per_user = 1000;
	test_requests();

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	return done_testing();
}
