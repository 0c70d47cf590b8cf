/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jobrec.t: the grant job_submit hands the node and the node's per-job
 * records (plugin/jobrec.c): strict parsing of what passes through a
 * user's job, records written and read back, the node lock's deadline,
 * coordinated-prep groups (names, their uid, directory names, members
 * counted from records), and job_submit's stripping of user-sent grants
 * (plugin/submit.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "plugin/node/cgroup.h"
#include "plugin/shared/jobrec.h"
#include "plugin/ctl/submit.h"

static void test_grant(void)
{
	static const struct { const char *text, *why; } bad[] = {
		{ "key=img uid=0 cpus=2 mem_mb=2048", "key, uid and gpus" },
		{ "key=../x uid=0 gpus=1 cpus=2 mem_mb=2048 cache_mb=0", "key" },
		{ "key=img uid=0 gpus=1 cpus=2 mem_mb=2048 cache_mb=0 cache_mb=1", "twice" },
		{ "key=img uid=-1 gpus=1 cpus=2 mem_mb=2048 cache_mb=0", "uid" },
		{ "key=img uid=0 gpus=0 cpus=2 mem_mb=2048 cache_mb=0", "gpus" },
		{ "key=img uid=0 gpus=1 cpus=2 mem_mb=1024 cache_mb=2048", "cache_mb" },
		{ "key=img uid=0 gpus=1 cpus=2 mem_mb=2048 cache_mb=0 colour=red", "colour" },
		{ "key=img uid=0 gpus=99999 cpus=2 mem_mb=2048 cache_mb=0", "gpus" },
		{ "key=img uid=0 gpus=1 cpus=2 mem_mb=2048 cache_mb=0x10", "cache_mb" },
		{ "key=img uid=0 gpus=1 cpus=2 mem_mb=2048 cache_mb=0 nodes=0", "nodes" },
		{ "key=img uid=0 gpus=1 cpus=2 mem_mb=2048 cache_mb=0 nodes=1025", "nodes" },
		{ "nodes=2", "without a key" },
		{ "uid=0", "without a key" },
		{ "key", "name=value" },
	};
	syn__jobrec_t r, back;
	char buf[512], err[200];
	size_t i;

	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "resnet18");
	r.uid = 1000;
	r.gpus = 2;
	r.cpus = 12;
	r.mem_mb = 9216;
	r.cache_mb = 7168;
	r.want_cpus = 16;
	r.want_cache_mb = 8000;
	ok(syn__grant_format(&r, buf, sizeof(buf)) == 0, "a grant formats: %s", buf);
	ok(syn__jobrec_parse(buf, &back, err, sizeof(err)) == 0 && back.synergy &&
	   strcmp(back.key, "resnet18") == 0 && back.uid == 1000 && back.gpus == 2 &&
	   back.cpus == 12 && back.mem_mb == 9216 && back.cache_mb == 7168 &&
	   back.want_cpus == 16 && back.want_cache_mb == 8000 && !back.has_allotted,
	   "and parses back the same");
	ok(!strstr(buf, "nodes="), "a one-node grant names no nodes");
	r.nodes = 4;
	ok(syn__grant_format(&r, buf, sizeof(buf)) == 0 && strstr(buf, " nodes=4") &&
	   syn__jobrec_parse(buf, &back, err, sizeof(err)) == 0 && back.nodes == 4,
	   "issue 14: a multi-node grant carries its node count: %s", buf);
	r.nodes = 1025;
	ok(syn__grant_format(&r, buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "more nodes than SYN__JOBREC_NODES_MAX do not format");
	r.nodes = 0;
	ok(syn__grant_format(&r, buf, 20) == -1 && errno == ENAMETOOLONG, "short buffer refused");
	r.synergy = 0;
	ok(syn__grant_format(&r, buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "only a Synergy grant formats");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		back.synergy = 7;
		ok(syn__jobrec_parse(bad[i].text, &back, err, sizeof(err)) == -1 &&
		   errno == EINVAL && strstr(err, bad[i].why) && back.synergy == 0,
		   "refused: '%s' (%s)", bad[i].text, err);
	}
	ok(syn__jobrec_parse("key=img uid=7 gpus=2", &back, err, sizeof(err)) == 0 && back.synergy &&
	   back.gpus == 2 && back.cpus == 0 && back.mem_mb == 0,
	   "an unsized grant (the user's own request kept) parses");
	ok(syn__jobrec_parse("allotted=0-3,8\n", &back, err, sizeof(err)) == 0 &&
	   !back.synergy && back.has_allotted && CPU_COUNT(&back.allotted) == 5,
	   "a bare record: allotted CPUs only");
	ok(syn__jobrec_parse("allotted=\n", &back, err, sizeof(err)) == -1,
	   "an empty allotted list is refused");
	memset(buf, 'a', sizeof(buf));
	{
		char *huge = malloc(SYN__JOBREC_MAX + 10);

		memset(huge, ' ', SYN__JOBREC_MAX + 9);
		huge[SYN__JOBREC_MAX + 9] = '\0';
		ok(syn__jobrec_parse(huge, &back, err, sizeof(err)) == -1 && strstr(err, "longer"),
		   "an oversized grant is refused");
		free(huge);
	}
}

static void test_records(void)
{
	char dir[] = "/tmp/jobrec-t.XXXXXX", err[200];
	syn__jobrec_t r, back;
	uint32_t id;
	int dfd, held, fd;
	struct timespec t0, t1;

	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "img");
	r.gpus = 1;
	r.cpus = 2;
	r.mem_mb = 2048;
	r.cache_mb = 1024;
	ok(syn__jobrec_read(dfd, "n1", 5, &back, err, sizeof(err)) == -1 && errno == ENOENT,
	   "no record: ENOENT");
	ok(syn__jobrec_write(dfd, "n1", 5, &r) == 0, "record written");
	r.has_allotted = 1;
	CPU_ZERO(&r.allotted);
	CPU_SET(3, &r.allotted);
	CPU_SET(4, &r.allotted);
	ok(syn__jobrec_write(dfd, "n1", 5, &r) == 0, "record rewritten with its allotted CPUs");
	ok(syn__jobrec_read(dfd, "n1", 5, &back, err, sizeof(err)) == 0 && back.synergy &&
	   back.cache_mb == 1024 && back.has_allotted && CPU_EQUAL(&back.allotted, &r.allotted),
	   "read back whole");
	r.has_cpu = 1;
	r.cpu_ns = UINT64_MAX - 1;
	r.cpu_at_ns = 123456789012345ULL;
	r.has_spare = 1;
	r.spare_milli = 2500;
	r.harvest = 1;
	ok(syn__jobrec_write(dfd, "n1", 5, &r) == 0 &&
		   syn__jobrec_read(dfd, "n1", 5, &back, err, sizeof(err)) == 0 && back.has_cpu &&
		   back.cpu_ns == UINT64_MAX - 1 && back.cpu_at_ns == 123456789012345ULL &&
		   back.has_spare && back.spare_milli == 2500 && back.harvest == 1,
	   "the agent's CPU sample, idle share and harvest flag read back");
	ok(syn__jobrec_parse("allotted=1\ncpu_ns=5\n", &back, err, sizeof(err)) == -1 &&
		   strstr(err, "cpu_ns and cpu_at_ns"), "a CPU sample without its time is refused (%s)",
	   err);
	ok(syn__jobrec_parse("allotted=1\nharvest=2\n", &back, err, sizeof(err)) == -1 &&
		   strstr(err, "harvest"), "harvest is 1 or absent (%s)", err);
	ok(syn__jobrec_parse("allotted=1\nspare_milli=1048576001\n", &back, err, sizeof(err)) == -1,
	   "an idle share beyond 2^20 cores is refused");
	ok(syn__jobrec_parse("allotted=1\ncpu_ns=5\ncpu_at_ns=6\nspare_milli=0\nharvest=1\n", &back,
			     err, sizeof(err)) == 0 && !back.synergy && back.harvest,
	   "a bare record may carry them (%s)", err);
	/* Issue 26: the SLUID that names the job's cgroup on Slurm 26.05. */
	ok(syn__sluid_valid("s72XM8G6TT4S00") && syn__sluid_valid("sEKNKTV3WPV500"),
	   "SLUIDs as Slurm 26.05 prints them are valid");
	ok(!syn__sluid_valid("s72XM8G6TT4S0") && !syn__sluid_valid("s72XM8G6TT4S000") &&
	   !syn__sluid_valid("S72XM8G6TT4S00") && !syn__sluid_valid("s72xm8g6tt4s00") &&
	   !syn__sluid_valid("s72XM8G6TT4SI0") && !syn__sluid_valid("s72XM8G6TT4SU0") &&
	   !syn__sluid_valid("job_42") && !syn__sluid_valid("") && !syn__sluid_valid(NULL),
	   "short, long, lower-case, I/U (not Crockford) and job_<id> are not");
	snprintf(r.sluid, sizeof(r.sluid), "sEKNKTV3WPV500");
	ok(syn__jobrec_write(dfd, "n1", 5, &r) == 0 &&
	   syn__jobrec_read(dfd, "n1", 5, &back, err, sizeof(err)) == 0 &&
	   strcmp(back.sluid, "sEKNKTV3WPV500") == 0 && back.synergy && back.harvest,
	   "a record's SLUID reads back");
	ok(syn__jobrec_parse("sluid=s72XM8G6TT4S00\n", &back, err, sizeof(err)) == 0 &&
	   !back.synergy && strcmp(back.sluid, "s72XM8G6TT4S00") == 0,
	   "a bare record may carry only the SLUID (the prolog of a job that is not sized)");
	ok(syn__jobrec_parse("sluid=../job_1\n", &back, err, sizeof(err)) == -1 &&
	   strstr(err, "sluid"), "a record's sluid must be a SLUID (%s)", err);
	ok(syn__grant_parse("key=img uid=7 gpus=1 sluid=s72XM8G6TT4S00", &back, err,
			    sizeof(err)) == -1, "a grant never carries a SLUID (%s)", err);
	r.sluid[0] = '\0';
	ok(syn__jobrec_match("n1.job_5", "n1", &id) && id == 5, "record names match");
	ok(!syn__jobrec_match("n1.job_5x", "n1", &id) && !syn__jobrec_match("n10.job_5", "n1", &id),
	   "other names do not");
	fd = openat(dfd, "n1.job_6", O_WRONLY | O_CREAT, 0600);
	if (write(fd, "key=img\nbogus\n", 14) != 14)
		bail_out("write");
	close(fd);
	ok(syn__jobrec_read(dfd, "n1", 6, &back, err, sizeof(err)) == -1 && errno == EINVAL &&
	   strstr(err, "n1.job_6"), "a malformed record is no record, named (%s)", err);
	if (symlinkat("/etc/passwd", dfd, "n1.job_8") == 0)
		ok(syn__jobrec_read(dfd, "n1", 8, &back, err, sizeof(err)) == -1,
		   "a record that is a link is not followed");
	ok(syn__jobrec_remove(dfd, "n1", 5) == 0 && syn__jobrec_remove(dfd, "n1", 5) == 0 &&
	   faccessat(dfd, "n1.job_5", F_OK, 0) != 0, "removed, twice is fine");

	/* The node lock has a deadline. */
	held = syn__node_lock(dfd, "n1", 100);
	ok(held >= 0, "lock taken");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok(syn__node_lock(dfd, "n1", 100) == -1 && errno == ETIMEDOUT,
	   "a second taker gives up with ETIMEDOUT");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 5000,
	   "within its deadline, not forever");
	close(held);
	held = syn__node_lock(dfd, "n1", 100);
	ok(held >= 0, "free again once released");
	close(held);
	ok(syn__node_lock(dfd, "../x", 100) == -1 && errno == EINVAL, "a bad node name refused");
	close(dfd);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			diag("cleanup failed");
	}
	if (geteuid() == 0) {
		char sd[] = "/tmp/jobrec-sd.XXXXXX", sub[64];

		if (!mkdtemp(sd))
			bail_out("mkdtemp");
		snprintf(sub, sizeof(sub), "%s/state", sd);
		fd = syn__state_dir_open(sub, err, sizeof(err));
		ok(fd >= 0, "StateDir created");
		{
			struct stat st;
			ok(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0700,
			   "mode 0700");
		}
		if (fd >= 0)
			close(fd);
		chmod(sub, 0777);
		ok(syn__state_dir_open(sub, err, sizeof(err)) == -1 && errno == EPERM &&
		   strstr(err, "root only"), "a StateDir others can write is refused");
		rmdir(sub);
		rmdir(sd);
	} else {
		diag("not root: StateDir ownership checks not run");
	}
}

/* Issue 15: a job's group in grants and records, never another user's. */
static void test_groups(void)
{
	static const char *const bad_names[] = {
		"", "../x", "a/b", ".hidden", "-opt", "a b", "x\n", "abcdefghijabcdefghijabcdefghijabc",
	};
	static const struct { const char *group; uint32_t uid; int valid; } ids[] = {
		{ "u1000-a42", 1000, 1 },
		{ "u1000-g-search.1", 1000, 1 },
		{ "u0-a1", 0, 1 },
		{ "u1000-a42", 1001, 0 },       /* another user's */
		{ "u1000-g-x", 100, 0 },
		{ "u1000-a042", 1000, 0 },      /* not as the format writes it */
		{ "u1000-a0", 1000, 0 },
		{ "u1000-a", 1000, 0 },
		{ "u1000-g-", 1000, 0 },
		{ "u1000-g-../x", 1000, 0 },
		{ "u1000-g-.x", 1000, 0 },
		{ "u1000-b7", 1000, 0 },
		{ "x1000-a42", 1000, 0 },
		{ "u1000-a4294967296", 1000, 0 },
	};
	char buf[128], err[200], dir[] = "/tmp/jobrec-g.XXXXXX";
	syn__jobrec_t r, back;
	size_t i;
	int dfd;

	ok(syn__group_name_valid("search") && syn__group_name_valid("a") &&
	   syn__group_name_valid("abcdefghijabcdefghijabcdefghij12"), "group names: 1..32 good");
	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
		ok(!syn__group_name_valid(bad_names[i]), "group name refused: '%s'", bad_names[i]);
	ok(!syn__group_name_valid(NULL), "NULL refused");
	ok(syn__group_format(1000, 42, NULL, buf, sizeof(buf)) == 0 && strcmp(buf, "u1000-a42") == 0,
	   "an array's group: %s", buf);
	ok(syn__group_format(1000, 42, "hp", buf, sizeof(buf)) == 0 &&
	   strcmp(buf, "u1000-g-hp") == 0, "a named group wins: %s", buf);
	ok(syn__group_format(4294967295u, 0, "abcdefghijabcdefghijabcdefghij12", buf,
			     sizeof(buf)) == 0 && strlen(buf) <= 64,
	   "the longest name and uid fit in 64: %s", buf);
	ok(syn__group_format(1000, 0, NULL, buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "no array and no name: EINVAL");
	ok(syn__group_format(1000, 0, "../x", buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "a bad name: EINVAL");
	ok(syn__group_format(1000, 42, NULL, buf, 5) == -1 && errno == ENAMETOOLONG,
	   "short buffer: ENAMETOOLONG");
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		ok(syn__group_valid(ids[i].group, ids[i].uid) == ids[i].valid, "%s of uid %u: %s",
		   ids[i].group, (unsigned)ids[i].uid, ids[i].valid ? "valid" : "refused");

	/* In a grant and a record. */
	ok(syn__jobrec_parse("key=img uid=1000 gpus=1 group=u1000-a42", &back, err, sizeof(err)) == 0 &&
	   strcmp(back.group, "u1000-a42") == 0, "a grant with the owner's group parses");
	ok(syn__jobrec_parse("group=u1000-a42 key=img gpus=1 uid=1000", &back, err, sizeof(err)) == 0 &&
	   strcmp(back.group, "u1000-a42") == 0, "in any order");
	ok(syn__jobrec_parse("key=img uid=1001 gpus=1 group=u1000-a42", &back, err, sizeof(err)) == -1 &&
	   strstr(err, "uid 1001") && !back.group[0], "another user's group is refused (%s)", err);
	ok(syn__jobrec_parse("key=img uid=1000 gpus=1 group=../../x", &back, err, sizeof(err)) == -1 &&
	   strstr(err, "group"), "a hostile group is refused (%s)", err);
	ok(syn__jobrec_parse("allotted=1 group=u0-a1", &back, err, sizeof(err)) == -1,
	   "no group in a bare record");
	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "img");
	r.uid = 1000;
	r.gpus = 1;
	snprintf(r.group, sizeof(r.group), "u1000-g-hp");
	ok(syn__grant_format(&r, buf, sizeof(buf)) == 0 && strstr(buf, " group=u1000-g-hp") &&
	   syn__jobrec_parse(buf, &back, err, sizeof(err)) == 0 &&
	   strcmp(back.group, "u1000-g-hp") == 0, "formats and parses back: %s", buf);
	r.uid = 7;
	ok(syn__grant_format(&r, buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "a grant with another user's group does not format");
	r.uid = 1000;
	/* A member whose key has no profile (jobrec.h: unprofiled). */
	r.unprofiled = 1;
	ok(syn__grant_format(&r, buf, sizeof(buf)) == 0 && strstr(buf, " unprofiled=1 group=") &&
	   syn__jobrec_parse(buf, &back, err, sizeof(err)) == 0 && back.unprofiled &&
	   back.synergy && !back.profile[0], "unprofiled formats and parses back: %s", buf);
	snprintf(r.profile, sizeof(r.profile), "%0*d", SYN__NONCE_LEN, 0);
	ok(syn__grant_format(&r, buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "unprofiled beside a claim nonce does not format");
	r.profile[0] = '\0';
	r.unprofiled = 0;
	{
		static const char *const bad[] = {
			"key=img uid=1000 gpus=1 unprofiled=0",
			"key=img uid=1000 gpus=1 unprofiled=2",
			"key=img uid=1000 gpus=1 unprofiled=yes",
			"key=img uid=1000 gpus=1 unprofiled=1 unprofiled=1",
			"unprofiled=1",
		};

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			ok(syn__jobrec_parse(bad[i], &back, err, sizeof(err)) == -1 && errno == EINVAL,
			   "refused: '%s' (%s)", bad[i], err);
		snprintf(buf, sizeof(buf), "key=img uid=1000 gpus=1 unprofiled=1 profile=%0*d",
			 SYN__NONCE_LEN, 0);
		ok(syn__jobrec_parse(buf, &back, err, sizeof(err)) == -1 && strstr(err, "unprofiled"),
		   "unprofiled beside profile refused: %s", err);
	}

	/* Directory names and members on a node. */
	ok(syn__group_dir_name("n1", "u1000-a42", buf, sizeof(buf)) == 0 &&
	   strcmp(buf, "n1.group_u1000-a42") == 0, "directory name %s", buf);
	ok(syn__group_dir_name("../n", "u1000-a42", buf, sizeof(buf)) == -1 &&
	   syn__group_dir_name("n1", "../x", buf, sizeof(buf)) == -1, "bad node or group refused");
	ok(syn__group_dir_match("n1.group_u1000-a42", "n1") &&
	   strcmp(syn__group_dir_match("n1.group_u1000-a42", "n1"), "u1000-a42") == 0,
	   "a directory of n1 matches");
	ok(!syn__group_dir_match("n10.group_u1000-a42", "n1") &&
	   !syn__group_dir_match("n1.group_", "n1") && !syn__group_dir_match("n1.job_5", "n1") &&
	   !syn__group_dir_match("job_5", "n1"), "others do not");
	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ok(syn__group_members(dfd, "n1", "u1000-g-hp") == 0, "no member yet");
	ok(syn__jobrec_write(dfd, "n1", 11, &r) == 0 && syn__jobrec_write(dfd, "n1", 12, &r) == 0 &&
	   syn__jobrec_write(dfd, "n2", 13, &r) == 0, "two records of the group on n1, one on n2");
	ok(syn__jobrec_read(dfd, "n1", 11, &back, err, sizeof(err)) == 0 &&
	   strcmp(back.group, "u1000-g-hp") == 0, "a record keeps its group");
	r.group[0] = '\0';
	ok(syn__jobrec_write(dfd, "n1", 14, &r) == 0, "and one without a group");
	ok(syn__group_members(dfd, "n1", "u1000-g-hp") == 2, "two members on n1");
	ok(syn__group_members(dfd, "n2", "u1000-g-hp") == 1, "one on n2");
	syn__jobrec_remove(dfd, "n1", 11);
	ok(syn__group_members(dfd, "n1", "u1000-g-hp") == 1, "one once a record is gone");
	syn__jobrec_remove(dfd, "n1", 12);
	ok(syn__group_members(dfd, "n1", "u1000-g-hp") == 0, "none after the last");
	syn__jobrec_remove(dfd, "n1", 14);
	syn__jobrec_remove(dfd, "n2", 13);
	close(dfd);
	rmdir(dir);
}

static char *freed[8];
static int nfreed;
static void note_free(char *s) { if (nfreed < 8) freed[nfreed++] = s; }

static void test_strip(void)
{
	char a[] = "SYNERGY_PROFILE_KEY=img", b[] = "SYNERGY_GRANT=key=greedy uid=0",
	     c[] = "SPANK_SYNERGY_GRANT=key=x", d[] = "SYNERGY_GRANTX=1";
	char *env[] = { a, b, c, d };
	uint32_t n = syn__strip_grant(env, 4, note_free);

	ok(n == 2 && env[0] == a && env[1] == d && env[2] == NULL && env[3] == NULL,
	   "user-sent grants (both spellings) are removed, others kept in order");
	ok(nfreed == 2 && freed[0] == b && freed[1] == c, "and handed to the free function");
}

int main(void)
{
	test_grant();
	test_records();
	test_groups();
	test_strip();
	return done_testing();
}
