/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inplace.t: the node files the profile a job measured on its first run
 * (plugin/inplace.c). A valid, complete report in the job's cache
 * directory becomes the user's own profile in the store (used for that
 * user's jobs only), the job's profile copy and a record without its
 * nonce; the claim is released and the report removed. Every report root
 * must not trust files nothing and releases the claim, so that the key's
 * next first job tries again: an incomplete search, a link, a file of
 * another user, CPUs the node does not have, worker time no CPUs could
 * give, a search longer than the job ran, a lapsed claim. A job that ends
 * without a report leaves nothing either. Root only (StateDir and CacheDir
 * must be root's).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tap.h"
#include "common/store.h"
#include "plugin/shared/claim.h"
#include "plugin/node/inplace.h"
#include "plugin/shared/jobrec.h"

#define USER 65534u
#define JOB 7u

static char top[256], store[300], cache[300], state[300], jobdir[320], rep[400];
static syn__inplace_t x;
static char nonce[SYN__NONCE_LEN + 1];
static time_t t0;

static void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A report of a job whose GPU takes 800 samples/s and whose workers
 * deliver 300 samples/s each, measured at 2 and 1 threads. */
static const char *good_report(int threads0, double prep0, double elapsed, const char *complete)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf),
		 "{ \"coordl_profile\": 1, \"complete\": %s, \"batch_size\": 16, \"max_threads\": %d,"
		 " \"elapsed\": %g, \"dataset\": { \"bytes\": 10000000, \"items\": 1000 }, \"points\": ["
		 " { \"threads\": %d, \"samples\": 480, \"wall\": 0.8, \"consumer\": 0.6, \"stall\": 0.2,"
		 " \"prep_time\": %g, \"fetch_time\": 0.16, \"storage_bytes\": 4800000, \"hits\": 0,"
		 " \"misses\": 480, \"tput\": 600, \"tput_min\": 590, \"tput_max\": 610 },"
		 " { \"threads\": 1, \"samples\": 480, \"wall\": 1.6, \"consumer\": 0.6, \"stall\": 1.0,"
		 " \"prep_time\": 1.44, \"fetch_time\": 0.16, \"storage_bytes\": 4800000, \"hits\": 0,"
		 " \"misses\": 480, \"tput\": 300, \"tput_min\": 295, \"tput_max\": 305 } ] }",
		 complete, threads0, elapsed, threads0, prep0);
	return buf;
}

static void write_report(const char *text, uid_t owner)
{
	FILE *f = fopen(rep, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || chown(rep, owner, 0) < 0)
		bail("report");
}

/* A fresh profiling job: its claim taken and renewed, its record. */
static void job(const char *key)
{
	syn__jobrec_t r;
	int dfd;
	char err[200];

	if (syn__claim_take(store, USER, key, 3600, t0 - 10, nonce, NULL) != 1 ||
	    syn__claim_renew(store, USER, key, nonce, JOB, "n1", t0 - 10) != 1)
		bail("claim");
	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "%s", key);
	r.uid = USER;
	r.gpus = 1;
	snprintf(r.profile, sizeof(r.profile), "%s", nonce);
	r.has_allotted = 1;
	CPU_ZERO(&r.allotted);
	CPU_SET(0, &r.allotted);
	r.alloc_mem_mb = 512;
	if ((dfd = syn__state_dir_open(state, err, sizeof(err))) < 0 ||
	    syn__jobrec_write(dfd, "n1", JOB, &r) < 0)
		bail("record");
	close(dfd);
	x.final = 0;
}

static int record(syn__jobrec_t *r)
{
	char err[200];
	int dfd = syn__state_dir_open(state, err, sizeof(err)), rv;

	rv = syn__jobrec_read(dfd, "n1", JOB, r, err, sizeof(err));
	close(dfd);
	return rv;
}

static int claimed(const char *key)
{
	syn__claim_t c;

	return syn__claim_read(store, USER, key, &c) == 0;
}

static int stored(const char *key)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/" SYN_STORE_USER_DIR "/%u/%s.json", store, USER, key);
	return access(path, F_OK) == 0;
}

/* The job ran the report through collect and it was refused: nothing filed,
 * the claim released, the record without its nonce, the report gone. */
static void refused(const char *key, const char *what, const char *word)
{
	char msg[600];
	syn__jobrec_t r;
	int rc = syn__inplace_collect(&x, msg, sizeof(msg));

	ok(rc == SYN__INPLACE_REFUSED && strstr(msg, word), "%s: refused: %s", what, msg);
	ok(!stored(key) && !claimed(key) && record(&r) == 0 && !r.profile[0] &&
	   access(rep, F_OK) != 0, "  nothing filed, claim released, no nonce, no report");
}

int main(void)
{
	syn_error_t serr;
	syn_store_t *s;
	syn_profile_t p;
	syn__jobrec_t r;
	char msg[600], path[600];
	int rc;

	if (geteuid() != 0) {
		printf("1..0 # SKIP StateDir and CacheDir must be owned by root\n");
		return 0;
	}
	snprintf(top, sizeof(top), "/tmp/inplace-t.XXXXXX");
	if (!mkdtemp(top))
		bail("mkdtemp");
	chmod(top, 0755);
	snprintf(store, sizeof(store), "%s/store", top);
	snprintf(cache, sizeof(cache), "%s/cache", top);
	snprintf(state, sizeof(state), "%s/state", top);
	snprintf(jobdir, sizeof(jobdir), "%s/job_%u", cache, JOB);
	snprintf(rep, sizeof(rep), "%s/" SYN__REPORT_NAME, jobdir);
	if (mkdir(store, 0755) < 0 || mkdir(cache, 0755) < 0 || mkdir(jobdir, 0700) < 0 ||
	    chown(jobdir, USER, 0) < 0)
		bail("dirs");
	t0 = time(NULL);
	memset(&x, 0, sizeof(x));
	x.store_dir = store;
	x.cache_dir = cache;
	x.state_dir = state;
	x.node = "n1";
	x.jobid = JOB;
	x.uid = USER;
	x.node_cpus = 2;
	x.now = t0;
	x.version = "test";
	ok(syn__inplace_report_path(cache, JOB, path, sizeof(path)) == 0 && !strcmp(path, rep),
	   "the report's path: %s", path);

	/* The search is running: nothing yet. */
	job("fresh");
	rc = syn__inplace_collect(&x, msg, sizeof(msg));
	ok(rc == SYN__INPLACE_WAIT && claimed("fresh") && record(&r) == 0 && r.profile[0],
	   "no report yet: wait, claim and nonce kept");

	/* The search ended: the profile is filed as the user's. */
	write_report(good_report(2, 1.44, 10, "true"), USER);
	rc = syn__inplace_collect(&x, msg, sizeof(msg));
	ok(rc == SYN__INPLACE_FILED, "a complete report: filed: %s", msg);
	ok(stored("fresh"), "into the store as the user's own (user/%u/fresh.json)", USER);
	s = syn_store_create(store, 0, &serr);
	ok(s && syn_store_get_for(s, "fresh", USER, &p, &serr) == 0 && p.has_owner &&
	   p.owner == USER && strstr(p.model, "in place by job 7"),
	   "it records its owner and how it was measured: %s", p.model);
	ok(fabs(syn_profile_eval(&p, 1, p.prop_mem_gb) - 1) < 1e-3 && p.prop_cpus == 1 &&
	   p.prop_mem_gb == 0.5, "normalised at the job's share: 1 cpu, 0.5 GiB per GPU");
	ok(syn_store_get_for(s, "fresh", 1000, &p, &serr) == -1 && errno == ENOENT,
	   "another user's jobs do not use it (ENOENT)");
	ok(syn_store_get(s, "fresh", &p, &serr) == -1 && errno == ENOENT,
	   "and the shared profile of the key is untouched (none)");
	syn_store_destroy(s);
	snprintf(path, sizeof(path), "%s/n1.job_%u.json", state, JOB);
	ok(access(path, F_OK) == 0, "the job's profile copy is in StateDir (lending reads it)");
	ok(record(&r) == 0 && r.synergy && !r.profile[0] && r.has_allotted,
	   "its record lost the nonce: an ordinary Synergy job now");
	ok(!claimed("fresh"), "the claim is released");
	ok(access(rep, F_OK) != 0, "the report is removed");
	ok(syn__inplace_collect(&x, msg, sizeof(msg)) == SYN__INPLACE_IDLE,
	   "afterwards nothing is left to do");
	x.final = 1;
	ok(syn__inplace_collect(&x, msg, sizeof(msg)) == SYN__INPLACE_IDLE,
	   "not at the epilog either");

	/* Reports root must not trust. */
	job("k1");
	write_report(good_report(2, 1.44, 10, "false"), USER);
	refused("k1", "an incomplete search", "cut short");
	job("k2");
	write_report(good_report(4, 1.44, 10, "true"), USER);
	refused("k2", "4 threads on a 2-CPU node", "CPUs");
	job("k3");
	write_report(good_report(2, 30, 10, "true"), USER);
	refused("k3", "30 s of prep in 0.8 s on 2 threads", "worker time");
	job("k4");
	write_report(good_report(2, 1.44, 100, "true"), USER);
	refused("k4", "a 100 s search in a job started 10 s ago", "longer than the job");
	job("k5");
	write_report(good_report(2, 1.44, 10, "true"), 0);
	refused("k5", "a report of another user (root)", "regular file of the job's user");
	job("k6");
	snprintf(path, sizeof(path), "%s/elsewhere.json", top);
	{
		FILE *f = fopen(path, "w");
		fputs(good_report(2, 1.44, 10, "true"), f);
		fclose(f);
		chown(path, USER, 0);
	}
	if (symlink(path, rep) < 0)
		bail("symlink");
	refused("k6", "a report that is a link", "");
	ok(access(path, F_OK) == 0, "  the link's target is untouched");
	job("k7");
	write_report("{ \"coordl_profile\": 1, \"complete\": true }", USER);
	refused("k7", "a report missing fields", "batch_size");
	job("k8");
	write_report(good_report(2, 1.44, 10, "true"), USER);
	{
		char other[SYN__NONCE_LEN + 1];

		x.now = t0 + 7200;
		ok(syn__claim_take(store, USER, "k8", 3600, x.now, other, NULL) == 1,
		   "k8's claim lapsed and another first job took it over");
		rc = syn__inplace_collect(&x, msg, sizeof(msg));
		ok(rc == SYN__INPLACE_REFUSED && strstr(msg, "lapsed") && !stored("k8") &&
		   claimed("k8"), "the job whose claim lapsed files nothing, and leaves the new "
		   "claim alone: %s", msg);
		x.now = t0;
	}

	/* A job that ends without a report (too short, or killed). */
	job("k9");
	ok(syn__inplace_collect(&x, msg, sizeof(msg)) == SYN__INPLACE_WAIT,
	   "k9 runs without a report yet");
	x.final = 1;
	rc = syn__inplace_collect(&x, msg, sizeof(msg));
	ok(rc == SYN__INPLACE_NONE && !claimed("k9") && !stored("k9") && record(&r) == 0 &&
	   !r.profile[0], "it ends without one: nothing filed, claim released (%s)", msg);
	ok(syn__claim_take(store, USER, "k9", 3600, t0, nonce, NULL) == 1,
	   "and the key's next first job profiles");

	snprintf(path, sizeof(path), "rm -rf '%s'", top);
	if (system(path) != 0)
		diag("cannot remove %s", top);
	return done_testing();
}
