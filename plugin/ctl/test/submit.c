/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * submit.t: job_submit/synergy's decision (plugin/submit.c) against a real
 * profile store in a temporary directory: sized jobs (never above their GPU
 * share of the node, issue 13), GPU-proportional fallbacks, profile on
 * first run (issue 17: the first job of a key claims it and profiles in
 * place, a second does not, larger jobs queue an offline request, caps
 * count claims, a profile measured in another user's job is not used),
 * --synergy=off, malformed options refused, a corrupt profile never
 * failing the job, and a job on 2 nodes sized for the partitioned cache
 * (issue 14).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/store.h"
#include "tests/tap.h"
#include "plugin/shared/jobrec.h"
#include "plugin/ctl/shapes.h"
#include "plugin/ctl/submit.h"
#include "plugin/ctl/test/profile_fixture.h"
#include "plugin/shared/slurmtext.h"

static char dir[] = "/tmp/synsubmitXXXXXX";
static syn_conf_t conf;

/* The fixture's 2x3 profile (profile_fixture.h). */
static void put_profile(const char *key, int sensitive)
{
	syn_error_t err;

	if (syn_test_put_profile(conf.store_dir, key, sensitive, &err) < 0)
		bail_out(err.text);
}

static const char *partition;
static uint32_t tasks_per_node;
static const char *group_name;   /* --synergy-group, forwarded */
static int array;
static uint32_t job_nodes;

static void decide(const char *key, const char *onoff, const char *tres, syn__decision_t *d)
{
	char kv[128], ov[64], gv[128];
	char *env[4];
	syn__job_req_t req;
	uint32_t n = 0;

	if (key) {
		snprintf(kv, sizeof(kv), "SYNERGY_PROFILE_KEY=%s", key);
		env[n++] = kv;
	}
	if (onoff) {
		snprintf(ov, sizeof(ov), "SYNERGY=%s", onoff);
		env[n++] = ov;
	}
	if (group_name) {
		snprintf(gv, sizeof(gv), SYN__CTL_GROUP "=%s", group_name);
		env[n++] = gv;
	}
	env[n] = NULL;
	memset(&req, 0, sizeof(req));
	req.array = array;
	req.spank_env = env;
	req.spank_env_size = n;
	req.tres_per_node = tres;
	req.tasks_per_node = tasks_per_node;
	req.nodes = job_nodes;
	req.uid = 1000;
	req.partition = partition;
	syn__decide(&conf, &req, d);
}

/* Node shapes from synergyd's table (shapes.h): each job is sized for its
 * partition; a job that may run in partitions of different shapes for what
 * fits all; a stale or malformed table means GPU-proportional. */
static void shapes_tests(syn__decision_t *d)
{
	syn__shapes_t t;
	char err[200];
	int i;

	memset(&t, 0, sizeof(t));
	t.written = time(NULL);
	/* p2: 2 GPUs, 2 CPUs, 4 GB; p8: 8 GPUs, 64 CPUs, 256 GB (8 cores,
	 * 32 GB per GPU), default. */
	syn__shapes_add(&t, "p2", 0, 2, 2, 4096);
	syn__shapes_add(&t, "p2", 0, 2, 2, 4096);
	for (i = 0; i < 3; i++)
		syn__shapes_add(&t, "p8", 1, 8, 64, 262144);
	ok(t.n == 2 && t.s[0].nodes == 2 && t.s[1].nodes == 3, "equal nodes merge into shapes");
	ok(syn__shapes_write(&t, conf.shapes_file) == 0, "table written");
	syn__shapes_free(&t);
	ok(syn__shapes_read(conf.shapes_file, &t, err, sizeof(err)) == 0 && t.n == 2 &&
	   strcmp(t.s[1].part, "p8") == 0 && t.s[1].mem_mb == 262144, "and read back");
	syn__shapes_free(&t);

	partition = "p2";
	decide("img", NULL, "gres:gpu:1", d);
	ok(d->action == SYN__SIZED && strstr(d->comment, "partition p2"),
	   "p2 job sized for p2: %s", d->comment);
	ok(d->cpus_per_task <= 1, "within p2's share of one core per GPU (%u)",
	   (unsigned)d->cpus_per_task);
	partition = NULL;
	decide("img", NULL, "gres:gpu:1", d);
	ok(d->action == SYN__SIZED && strstr(d->comment, "partition p8"),
	   "a job without a partition is sized for the default one: %s", d->comment);
	partition = "p2,p8";
	decide("img", NULL, "gres:gpu:1", d);
	ok(d->action == SYN__SIZED && strstr(d->comment, "2 shapes in p2,p8: smallest share") &&
	   d->cpus_per_task <= 1, "mixed partitions: sized for what fits all: %s", d->comment);
	partition = "p2";
	decide("img", NULL, "gres:gpu:4", d);
	ok(d->action == SYN__PROPORTIONAL && strstr(d->comment, "no node in p2 has 4 GPUs"),
	   "more GPUs than p2's nodes have: GPU-proportional, says why");
	partition = "nosuch";
	decide("img", NULL, "gres:gpu:1", d);
	ok(d->action == SYN__PROPORTIONAL && strstr(d->comment, "no partition nosuch"),
	   "unknown partition: GPU-proportional");
	partition = "p2";
	syn__shapes_read(conf.shapes_file, &t, err, sizeof(err));
	t.written = time(NULL) - 3600;
	syn__shapes_write(&t, conf.shapes_file);
	syn__shapes_free(&t);
	decide("img", NULL, "gres:gpu:1", d);
	ok(d->action == SYN__PROPORTIONAL && strstr(d->comment, "s old"),
	   "a stale table: GPU-proportional (%s)", d->comment);
	{
		FILE *f = fopen(conf.shapes_file, "w");

		fputs("synergy-node-shapes 1\nwritten=1\npartition=p2 gpus=x\n", f);
		fclose(f);
	}
	ok(syn__shapes_read(conf.shapes_file, &t, err, sizeof(err)) == -1 && errno == EINVAL &&
	   strstr(err, "line 3"), "a malformed table is refused by line (%s)", err);
	decide("img", NULL, "gres:gpu:1", d);
	ok(d->action == SYN__PROPORTIONAL, "and leaves jobs GPU-proportional");
	ok(syn__shapes_parse("nonsense\n", &t, err, sizeof(err)) == -1, "a wrong magic refused");
	ok(syn__shapes_add(&t, "a,b", 0, 1, 1, 1) == -1 && errno == EINVAL,
	   "a partition name with ',' refused");
	partition = NULL;
}

/* The partition list is the user's own (sbatch -p): job_submit matches it
 * against the table in slurmctld before Slurm has checked it. Whatever it
 * holds, a name matches only as a whole list element, nothing outside the
 * table is made up, and the message stays within its buffer. */
static void shapes_hostile_tests(void)
{
	static char huge[20000];
	syn__shapes_t t;
	syn__shape_t out;
	char what[64];
	size_t i;

	memset(&t, 0, sizeof(t));
	syn__shapes_add(&t, "p2", 0, 2, 2, 4096);
	syn__shapes_add(&t, "p8", 1, 8, 64, 262144);
	ok(syn__shapes_for_job(&t, "p", 1, &out, what, sizeof(what)) == -1 && errno == ENOENT,
	   "a prefix of a partition's name is not that partition (%s)", what);
	ok(syn__shapes_for_job(&t, "p22", 1, &out, what, sizeof(what)) == -1 && errno == ENOENT,
	   "nor a longer name it is a prefix of");
	ok(syn__shapes_for_job(&t, ",,p2,", 1, &out, what, sizeof(what)) == 0 && out.gpus == 2,
	   "empty list elements are skipped, the whole name still matches");
	ok(syn__shapes_for_job(&t, "p2\np8=x", 1, &out, what, sizeof(what)) == -1 &&
	   errno == ENOENT, "a newline or '=' in the list matches nothing");
	ok(syn__shapes_for_job(&t, "p8", UINT32_MAX, &out, what, sizeof(what)) == -1 &&
	   errno == ENOENT && strstr(what, "GPUs"), "more GPUs than any node: refused (%s)", what);
	for (i = 0; i + 3 < sizeof(huge); i += 3)
		memcpy(huge + i, "p2,", 3);
	huge[i] = '\0';
	ok(syn__shapes_for_job(&t, huge, 1, &out, what, sizeof(what)) == 0 && out.gpus == 2 &&
	   strlen(what) < sizeof(what), "a list of 20000 bytes: matched, the message truncated");
	memset(huge, 'x', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	ok(syn__shapes_for_job(&t, huge, 1, &out, what, sizeof(what)) == -1 && errno == ENOENT &&
	   strlen(what) < sizeof(what), "one name of 20000 bytes: no partition, the message truncated");
	syn__shapes_free(&t);
}

int main(void)
{
	char path[512];
	syn__decision_t d;
	FILE *f;

	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	syn_conf_defaults(&conf);
	snprintf(conf.store_dir, sizeof(conf.store_dir), "%s/store", dir);
	snprintf(conf.request_dir, sizeof(conf.request_dir), "%s/requests", dir);
	conf.node_gpus = 2;
	conf.node_cpus = 2;
	conf.node_mem_mb = 4096;
	conf.process_mem_mb = 1024;
	put_profile("img", 1);
	put_profile("lang", 0);

	is_int(syn__gpus_per_node("gres:gpu:2", NULL, 1), 2, "gres:gpu:2");
	is_int(syn__gpus_per_node("gres/gpu:a100:3", NULL, 1), 3, "typed gres");
	is_int(syn__gpus_per_node("gres:gpu", NULL, 1), 1, "gres:gpu means one");
	is_int(syn__gpus_per_node("gres:shard:4", "gres:gpu:4", 2), 2, "--gpus=4 over 2 nodes");
	is_int(syn__gpus_per_node(NULL, NULL, 1), 0, "no GPUs");
	/* Slurm 23.11 and later write TRES as type/name (issue 26). */
	is_int(syn__gpus_per_node("gres/gpu:2", NULL, 1), 2, "gres/gpu:2 (23.11+)");
	is_int(syn__gpus_per_node("gres/gpu", NULL, 1), 1, "gres/gpu means one");
	is_int(syn__gpus_per_node("gres/shard:4", "gres/gpu:4", 2), 2, "--gpus=4 over 2 nodes (23.11+)");
	is_int(syn__gpus_per_node("cpu=2,gres/gpu=3", NULL, 1), 3, "gres/gpu=3 among other TRES");

	decide("img", NULL, "gres:gpu:2", &d);
	ok(d.action == SYN__SIZED && d.cpus_per_task == 2 && d.min_cpus == 2 && d.mem_mb == 3072,
	   "sensitive profile, whole node: 2 cores, 1024 MB process + 2048 MB cache, the least "
	   "cache at its peak (got %d %u %u %llu)",
	   d.action, d.cpus_per_task, d.min_cpus, (unsigned long long)d.mem_mb);
	ok(strstr(d.comment, "key=img") && strstr(d.comment, "cpus=2") &&
		   strstr(d.comment, "(best-case; configured shape)"),
	   "comment: %s", d.comment);

	/* Issue 14: on 2 nodes the union of the nodes' caches is the job's
	 * cache, so each node needs half the one-node best case. */
	job_nodes = 2;
	decide("img", NULL, "gres:gpu:2", &d);
	job_nodes = 0;
	ok(d.action == SYN__SIZED && d.cpus_per_task == 2 && d.min_cpus == 4 && d.mem_mb == 2048 &&
	   strstr(d.grant, " cache_mb=1024 ") && strstr(d.grant, " nodes=2"),
	   "2 nodes: 2 cores and 1024 MB process + 1024 MB cache per node, half the one-node "
	   "cache; the grant names the nodes (got %d %u %u %llu, %s)", d.action,
	   d.cpus_per_task, d.min_cpus, (unsigned long long)d.mem_mb, d.grant);

	/* One GPU of two: its share is 1 core and 2048 MB, which is where it
	 * stays in accounting; the second core is its best case, reclaimable. */
	decide("img", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__SIZED && d.cpus_per_task == 1 && d.mem_mb == 2048,
	   "one GPU of two: 1 core, 1024 MB process + 1024 MB cache (got %d %u %llu)",
	   d.action, d.cpus_per_task, (unsigned long long)d.mem_mb);
	ok(strstr(d.comment, "tput=1.00x") && strstr(d.comment, "reclaimable +1 cpus +0M to 2.00x"),
	   "comment has the share's throughput and the reclaimable wish: %s", d.comment);
	/* Issue 13: on a small node the old sizing took the best case capped
	 * only to leave the other GPU ProcessMemMB (1024 + 512 MB, above the
	 * 1280 MB share); the share is the most it asks now, the rest is a
	 * reclaimable wish. */
	conf.node_mem_mb = 2560;
	decide("img", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__SIZED && d.cpus_per_task == 1 && d.mem_mb == 1280,
	   "issue 13, small node: at most the GPU share, 1280 MB (got %llu)",
	   (unsigned long long)d.mem_mb);
	ok(strstr(d.comment, "tput=1.00x") && strstr(d.comment, "+768M to 2.86x"),
	   "... 0.7 at the share; 1 core and 768 MB more would give 2.0: %s", d.comment);

	/* Issue 13 as reported: 2 GPUs, 4096 MB, ProcessMemMB 512, a profile
	 * that doubles with 3 GB of cache was given 3.5 GB, and a job on the
	 * other GPU then waited for memory. */
	conf.node_mem_mb = 4096;
	conf.process_mem_mb = 512;
	decide("img", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__SIZED && d.mem_mb <= 2048 && d.cpus_per_task * 2 <= conf.node_cpus,
	   "issue 13: 2 GPUs, 4096 MB: one GPU's job asks at most 1 core, 2048 MB (got %u, %llu)",
	   d.cpus_per_task, (unsigned long long)d.mem_mb);
	conf.process_mem_mb = 1024;

	/* Two tasks on a 1-core share cannot be sized within it. */
	tasks_per_node = 2;
	decide("img", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__PROPORTIONAL && strstr(d.comment, "tasks"),
	   "2 tasks, 1-core share: GPU-proportional: %s", d.comment);
	decide("img", NULL, "gres:gpu:2", &d);
	ok(d.action == SYN__SIZED && d.cpus_per_task == 1 && d.min_cpus == 2,
	   "2 tasks on 2 GPUs: 1 core per task");
	tasks_per_node = 0;

	decide("lang", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__SIZED && d.cpus_per_task == 1 && d.mem_mb == 1024,
	   "insensitive profile: 1 core, no cache (got %u, %llu)", d.cpus_per_task,
	   (unsigned long long)d.mem_mb);

	/* Issue 15: coordinated-prep groups. */
	{
		static const char *const bad[] = { "", "../x", "-x", ".x", "a/b",
						   "abcdefghijabcdefghijabcdefghijabc" };
		syn__jobrec_t g;
		char err[200];
		size_t i;

		group_name = "hp";
		decide("img", NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__SIZED && syn__jobrec_parse(d.grant, &g, err, sizeof(err)) == 0 &&
		   strcmp(g.group, "u1000-g-hp") == 0 && strcmp(d.group, "u1000-g-hp") == 0,
		   "--synergy-group=hp: the grant names the owner's group: %s", d.grant);
		ok(strstr(d.comment, " group=u1000-g-hp") != NULL, "and the comment: %s", d.comment);
		array = 1;
		decide("img", NULL, "gres:gpu:1", &d);
		ok(syn__jobrec_parse(d.grant, &g, err, sizeof(err)) == 0 &&
		   strcmp(g.group, "u1000-g-hp") == 0, "a name wins over an array");
		group_name = NULL;
		decide("img", NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__SIZED && syn__jobrec_parse(d.grant, &g, err, sizeof(err)) == 0 &&
		   !g.group[0] && strstr(d.comment, " group=array"),
		   "an array: no group in the grant (the node adds it), comment says so: %s",
		   d.comment);
		array = 0;
		decide("img", NULL, "gres:gpu:1", &d);
		ok(!strstr(d.comment, "group") && !strstr(d.grant, "group"), "no group: none said");
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			group_name = bad[i];
			decide("img", NULL, "gres:gpu:1", &d);
			ok(d.action == SYN__REJECT && strstr(d.err, "--synergy-group") &&
			   strstr(d.err, "not a valid group name"), "refused: '%s': %s", bad[i], d.err);
		}
		group_name = "hp";
		decide(NULL, NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__UNTOUCHED && !d.grant[0] &&
		   strstr(d.comment, "ignored: no --synergy-profile"),
		   "a group without a profile key: untouched, said: %s", d.comment);
		decide("lang", "off", "gres:gpu:1", &d);
		ok(d.action == SYN__UNTOUCHED && !d.grant[0], "--synergy=off: no group");
		group_name = NULL;
	}

	/* Profile on first run (issue 17), the default. */
	decide("first", NULL, "gres:gpu:1", &d);
	{
		syn__jobrec_t g;
		char err[200];

		ok(d.action == SYN__PROPORTIONAL && d.profiling_in_place && !d.profiling_requested &&
		   strstr(d.comment, "no profile: GPU-proportional, profiling in place (claim "),
		   "no profile: the job profiles in place, at its share: %s", d.comment);
		ok(syn__jobrec_parse(d.grant, &g, err, sizeof(err)) == 0 && g.profile[0] &&
		   g.cpus == 0 && g.mem_mb == 0 && g.uid == 1000 && !strcmp(g.key, "first") &&
		   strstr(d.comment, g.profile), "its grant carries the claim's nonce, no size: %s",
		   d.grant);
		snprintf(path, sizeof(path), "%s/claims/1000.first", conf.store_dir);
		ok(access(path, F_OK) == 0, "the claim is in the store's claims directory");
		snprintf(path, sizeof(path), "%s/first.req", conf.request_dir);
		ok(access(path, F_OK) != 0, "no offline request is queued");
	}
	decide("first", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__PROPORTIONAL && !d.profiling_in_place && !d.profiling_requested &&
	   !d.grant[0] && strstr(d.comment, "another job of uid 1000 profiles it in place"),
	   "a second first job of the key does not profile: %s", d.comment);
	{
		/* A job of a group whose key has no profile joins its group
		 * all the same, at its allotment, without a profile. */
		syn__jobrec_t g;
		char err[200];

		array = 1;
		decide("first", NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__PROPORTIONAL && !d.profiling_in_place &&
		   syn__jobrec_parse(d.grant, &g, err, sizeof(err)) == 0 && g.unprofiled &&
		   !g.profile[0] && g.cpus == 0 && g.mem_mb == 0 && g.cache_mb == 0 && !g.group[0] &&
		   strstr(d.comment, " group=array"),
		   "an array whose key another job profiles: a group-only grant: %s | %s", d.grant,
		   d.comment);
		array = 0;
		group_name = "hp";
		decide("first", NULL, "gres:gpu:1", &d);
		ok(syn__jobrec_parse(d.grant, &g, err, sizeof(err)) == 0 && g.unprofiled &&
		   strcmp(g.group, "u1000-g-hp") == 0 && strstr(d.comment, " group=u1000-g-hp"),
		   "so does a named group's job: %s", d.comment);
		group_name = NULL;
		ok(strstr(d.grant, " unprofiled=1") != NULL, "the grant says unprofiled=1: %s",
		   d.grant);
	}
	decide("multi", NULL, "gres:gpu:2", &d);
	snprintf(path, sizeof(path), "%s/multi.req", conf.request_dir);
	ok(d.action == SYN__PROPORTIONAL && !d.profiling_in_place && d.profiling_requested &&
	   access(path, F_OK) == 0 && strstr(d.comment, "not in place: 2 GPU(s)"),
	   "a 2-GPU job is not profiled in place: an offline request: %s", d.comment);
	{
		/* Per-user cap: queued requests and claims count together. */
		uint64_t cap = conf.max_requests_per_user;

		conf.max_requests_per_user = 2; /* first's claim, multi's request */
		decide("second", NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__PROPORTIONAL && !d.profiling_in_place &&
		   strstr(d.comment, "profiling refused"),
		   "MaxProfileRequestsPerUser counts claims too: %s", d.comment);
		conf.max_requests_per_user = cap;
	}
	/* A profile of another user's job is not this user's. */
	{
		syn_error_t err;
		syn_store_t *s;
		syn_profile_t p;

		memset(&p, 0, sizeof(p));
		snprintf(p.key, sizeof(p.key), "theirs");
		p.n_cpu = 1;
		p.n_mem = 1;
		p.cpus[0] = 1;
		p.tput[0][0] = 1;
		p.prop_cpus = 1;
		p.has_owner = 1;
		p.owner = 2000;
		s = syn_store_create(conf.store_dir, 0, &err);
		ok(s && syn_store_put_owned(s, &p, &err) == 0, "user 2000's own profile of 'theirs'");
		decide("theirs", NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__PROPORTIONAL && d.profiling_in_place,
		   "is not used for user 1000, who profiles the key itself: %s", d.comment);
		p.owner = 1000;
		snprintf(p.key, sizeof(p.key), "mine");
		ok(syn_store_put_owned(s, &p, &err) == 0, "user 1000's own profile of 'mine'");
		decide("mine", NULL, "gres:gpu:1", &d);
		ok(d.action == SYN__SIZED, "is used for user 1000's job: %s", d.comment);
		syn_store_destroy(s);
	}

	conf.profile_in_place = 0;
	decide("unknown1", NULL, "gres:gpu:1", &d);
	snprintf(path, sizeof(path), "%s/unknown1.req", conf.request_dir);
	ok(d.action == SYN__PROPORTIONAL && d.profiling_requested && access(path, F_OK) == 0,
	   "ProfileInPlace=no: GPU-proportional and a request file");
	ok(strstr(d.comment, "no profile") != NULL, "comment says so: %s", d.comment);
	ok(!d.grant[0], "a job of no group: no grant");
	array = 1;
	decide("unknown2", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__PROPORTIONAL && strstr(d.grant, " unprofiled=1") &&
	   strstr(d.comment, " group=array"),
	   "an array that profiles offline joins its group without a profile: %s", d.comment);
	array = 0;
	conf.profile_in_place = 1;

	decide("img", "off", "gres:gpu:1", &d);
	ok(d.action == SYN__UNTOUCHED && strstr(d.comment, "off"), "--synergy=off: untouched");
	decide(NULL, NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__UNTOUCHED && !d.comment[0], "no key: untouched, no comment");
	decide("img", NULL, NULL, &d);
	ok(d.action == SYN__PROPORTIONAL, "no GPUs asked for: GPU-proportional");

	decide("../../etc/passwd", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__REJECT && strstr(d.err, "not a valid profile key"),
	   "path as key rejected: %s", d.err);
	decide("a;rm -rf /", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__REJECT, "shell metacharacters rejected");
	decide("img", "maybe", "gres:gpu:1", &d);
	ok(d.action == SYN__REJECT && strstr(d.err, "on or off"), "bad --synergy rejected: %s", d.err);

	/* A corrupt profile is the store's problem, never the job's. */
	snprintf(path, sizeof(path), "%s/bad.json", conf.store_dir);
	f = fopen(path, "w");
	fputs("{ \"schema\": 1, \"key\": \"bad\", \"cpus\": [", f);
	fclose(f);
	decide("bad", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__PROPORTIONAL && d.err[0] && strstr(d.comment, "unusable"),
	   "corrupt profile: GPU-proportional with a reason (%s)", d.err);

	snprintf(conf.store_dir, sizeof(conf.store_dir), "%s/nostore", dir);
	decide("img", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__PROPORTIONAL && d.err[0], "missing store: GPU-proportional");

	conf.node_gpus = 0;
	snprintf(conf.store_dir, sizeof(conf.store_dir), "%s/store", dir);
	decide("img", NULL, "gres:gpu:1", &d);
	snprintf(conf.shapes_file, sizeof(conf.shapes_file), "%s/node_shapes", dir);
	ok(d.action == SYN__PROPORTIONAL && strstr(d.err, "node shapes unknown"),
	   "no node shape configured nor exported: GPU-proportional");
	decide("img", NULL, "gres:gpu:1", &d);
	ok(d.action == SYN__PROPORTIONAL && strstr(d.comment, "node shapes unknown") &&
	   strstr(d.comment, "synergyd"), "AdminComment says why and what to check");
	shapes_tests(&d);
	shapes_hostile_tests();

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
