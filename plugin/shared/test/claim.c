/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * claim.t: claims on profiling a key in place (plugin/claim.c): one per
 * user and key, taken once, renewed and released only by the nonce that
 * took it, taken over once lapsed; strict parsing of the files; the grant
 * field that carries the nonce (plugin/jobrec.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tap.h"
#include "plugin/shared/claim.h"
#include "plugin/shared/jobrec.h"

static char store[256];

static void put(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/" SYN__CLAIM_DIR "/%s", store, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int exists(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/" SYN__CLAIM_DIR "/%s", store, name);
	return access(path, F_OK) == 0;
}

static int count_cb(const syn__claim_t *c, void *arg)
{
	(void)c;
	(*(int *)arg)++;
	return 0;
}

static void test_parse(void)
{
	static const char *const bad[] = {
		"uid=1\nkey=k\ntime=5\n",                                    /* no nonce */
		"uid=1\nkey=k\nnonce=0123456789abcdef\ntime=5\njobid=3\n",   /* job without node */
		"uid=1\nkey=../k\nnonce=0123456789abcdef\ntime=5\n",
		"uid=1\nkey=k\nnonce=0123456789ABCDEF\ntime=5\n",
		"uid=1\nkey=k\nnonce=0123456789abcde\ntime=5\n",
		"uid=1\nkey=k\nnonce=0123456789abcdef\ntime=-5\n",
		"uid=1\nuid=2\nkey=k\nnonce=0123456789abcdef\ntime=5\n",
		"uid=1\nkey=k\nnonce=0123456789abcdef\ntime=5\ncolour=red\n",
		"uid=1 key=k nonce=0123456789abcdef time=5",
	};
	syn__claim_t c;
	size_t i;

	ok(syn__claim_parse("uid=7\nkey=img\nnonce=0123456789abcdef\ntime=100\n", &c) == 0 &&
	   c.uid == 7 && !strcmp(c.key, "img") && c.time == 100 && c.jobid == 0,
	   "a claim parses");
	ok(syn__claim_parse("uid=7\nkey=img\nnonce=0123456789abcdef\ntime=100\njobid=4\nnode=n1\n",
			    &c) == 0 && c.jobid == 4 && !strcmp(c.node, "n1"),
	   "a renewed claim parses");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(syn__claim_parse(bad[i], &c) == -1 && errno == EINVAL && c.uid == 0,
		   "malformed claim %zu refused", i);
	c.time = 1000;
	ok(!syn__claim_lapsed(&c, 60, 1030) && syn__claim_lapsed(&c, 60, 1061),
	   "a claim lapses max_age seconds after it was made");
	ok(!syn__claim_lapsed(&c, 60, 990) && syn__claim_lapsed(&c, 60, 900),
	   "a claim from the future lapses once further ahead than max_age");
}

static void test_take(void)
{
	char n1[SYN__NONCE_LEN + 1] = "", n2[SYN__NONCE_LEN + 1] = "", n3[SYN__NONCE_LEN + 1] = "";
	syn__claim_t held, c;
	int n = 0;

	ok(syn__claim_foreach(store, count_cb, &n) == 0, "no claims directory: nothing to list");
	ok(syn__claim_take(store, 1000, "img", 3600, 5000, n1, NULL) == 1 && syn__nonce_valid(n1),
	   "the first job of a key takes its claim (nonce %s)", n1);
	ok(exists("1000.img"), "as <uid>.<key> in the store's claims directory");
	ok(syn__claim_take(store, 1000, "img", 3600, 5001, n2, &held) == 0 &&
	   !strcmp(held.nonce, n1) && held.time == 5000,
	   "a second job of the same user and key finds it held (issue 17: two first jobs)");
	ok(syn__claim_take(store, 2000, "img", 3600, 5001, n3, NULL) == 1 && strcmp(n3, n1) != 0,
	   "another user's first job of the key takes its own claim");
	ok(syn__claim_renew(store, 1000, "img", n3, 42, "n1", 5010) == 0,
	   "renewing with another nonce does nothing");
	ok(syn__claim_renew(store, 1000, "img", n1, 42, "n1", 5010) == 1 &&
	   syn__claim_read(store, 1000, "img", &c) == 0 && c.jobid == 42 && !strcmp(c.node, "n1") &&
	   c.time == 5010 && !strcmp(c.nonce, n1), "its prolog renews it with job and node");
	ok(syn__claim_renew(store, 1000, "img", n1, 43, "n1", 5011) == 0 &&
	   syn__claim_read(store, 1000, "img", &c) == 0 && c.jobid == 42 && c.time == 5010,
	   "another task of the array (same nonce, job 43) finds it bound to job 42");
	ok(syn__claim_renew(store, 1000, "img", n1, 42, "n2", 5010) == 1,
	   "job 42 renews it again (a requeued job's prolog)");
	ok(syn__claim_take(store, 1000, "img", 3600, 5010 + 3600, n2, NULL) == 0,
	   "still held at max_age after the renewal");
	ok(syn__claim_take(store, 1000, "img", 3600, 5010 + 3601, n2, NULL) == 1 && strcmp(n2, n1),
	   "lapsed: the next first job takes it over");
	ok(syn__claim_renew(store, 1000, "img", n1, 42, "n1", 9000) == 0,
	   "the job whose claim lapsed can no longer renew it");
	ok(syn__claim_release(store, 1000, "img", n1) == 0 && exists("1000.img"),
	   "nor release it");
	ok(syn__claim_release(store, 1000, "img", n2) == 1 && !exists("1000.img"),
	   "its holder releases it");
	ok(syn__claim_release(store, 1000, "img", n2) == 0, "releasing twice is harmless");
	ok(syn__claim_take(store, 1000, "img", 3600, 9000, n1, NULL) == 1,
	   "released: the next first job tries again");
	put("1000.junk", "not a claim");
	ok(syn__claim_take(store, 1000, "junk", 3600, 9000, n2, NULL) == 1,
	   "a file that is not a claim is replaced");
	put(".claim.tmp", "uid=1\nkey=k\nnonce=0123456789abcdef\ntime=5\n");
	put("5.other", "uid=1\nkey=k\nnonce=0123456789abcdef\ntime=5\n");
	n = 0;
	ok(syn__claim_foreach(store, count_cb, &n) == 3 && n == 3,
	   "foreach visits the claims, not temporary or misnamed files (%d)", n);
	ok(syn__claim_take(store, 1000, "../x", 3600, 9000, n1, NULL) == -1 && errno == EINVAL,
	   "a bad key is refused");
	{
		char path[512], link[512];

		snprintf(path, sizeof(path), "%s/" SYN__CLAIM_DIR "/3000.img", store);
		snprintf(link, sizeof(link), "%s/target", store);
		put("../target", "uid=3000\nkey=img\nnonce=0123456789abcdef\ntime=9000\n");
		ok(symlink(link, path) == 0 && syn__claim_read(store, 3000, "img", &c) == -1,
		   "a claim that is a link is never followed");
	}
}

static void test_grant(void)
{
	syn__jobrec_t r, back;
	char buf[512], err[200];

	memset(&r, 0, sizeof(r));
	r.synergy = 1;
	snprintf(r.key, sizeof(r.key), "img");
	r.uid = 1000;
	r.gpus = 1;
	snprintf(r.profile, sizeof(r.profile), "0123456789abcdef");
	ok(syn__grant_format(&r, buf, sizeof(buf)) == 0 && strstr(buf, " profile=0123456789abcdef"),
	   "a profiling grant carries the nonce: %s", buf);
	ok(syn__jobrec_parse(buf, &back, err, sizeof(err)) == 0 &&
	   !strcmp(back.profile, "0123456789abcdef") && back.cpus == 0,
	   "and parses back");
	ok(syn__jobrec_parse("key=img uid=1 gpus=1 cpus=0 mem_mb=0 cache_mb=0 want_cpus=0 "
			     "want_cache_mb=0 profile=xyz", &back, err, sizeof(err)) == -1 &&
	   strstr(err, "profile"), "a malformed nonce is refused: %s", err);
	ok(syn__jobrec_parse("profile=0123456789abcdef", &back, err, sizeof(err)) == -1,
	   "a nonce without a grant is refused");
	snprintf(r.profile, sizeof(r.profile), "nothex!!nothex!!");
	ok(syn__grant_format(&r, buf, sizeof(buf)) == -1 && errno == EINVAL,
	   "a grant with a bad nonce is not formatted");
}

/*
 * Issue 24: nobody but SlurmUser and root may open the claims directory
 * (nonces are capabilities, and its lock was held by a user to hang every
 * prolog), and root waits for its lock a bounded time.
 */
static void test_private(void)
{
	char path[600], nonce[SYN__NONCE_LEN + 1];
	struct stat st;
	int fd, fds[2];
	pid_t holder;

	snprintf(path, sizeof(path), "%s/" SYN__CLAIM_DIR, store);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700,
	   "the claims directory is 0700 (%o)", (unsigned)(st.st_mode & 0777));
	snprintf(path, sizeof(path), "%s/" SYN__CLAIM_DIR "/1000.img", store);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
	   "a claim file is 0600 (%o)", (unsigned)(st.st_mode & 0777));
	/* A directory an older version made 0755 is narrowed at the next use. */
	snprintf(path, sizeof(path), "%s/" SYN__CLAIM_DIR, store);
	chmod(path, 0755);
	ok(syn__claim_take(store, 3000, "wide", 3600, 100, nonce, NULL) == 1 &&
	   stat(path, &st) == 0 && (st.st_mode & 0777) == 0700,
	   "a 0755 claims directory is narrowed to 0700");
	/* A holder of the lock (here: ourselves, in a child) makes a renewal
	 * fail with ETIMEDOUT instead of waiting for ever. */
	if (pipe(fds) < 0) {
		skip(1, "pipe");
		return;
	}
	holder = fork();
	if (holder == 0) {
		close(fds[0]);
		fd = open(path, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(1);
		if (write(fds[1], "x", 1) < 0)
			_exit(1);
		pause(); /* until the parent kills it */
		_exit(0);
	}
	close(fds[1]);
	{
		char c;

		ok(read(fds[0], &c, 1) == 1 &&
		   syn__claim_renew(store, 3000, "wide", nonce, 7, "n1", 101) == -1 &&
		   errno == ETIMEDOUT, "a held lock: the renewal gives up (ETIMEDOUT)");
	}
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	close(fds[0]);
	ok(syn__claim_renew(store, 3000, "wide", nonce, 7, "n1", 101) == 1,
	   "once the holder is gone, the renewal goes through");
}

/*
 * Eight processes take one claim at once (issue 26: from Slurm 23.02
 * job_submit runs concurrently), rounds times over: of a free name, and of
 * a lapsed claim (each taker reads it lapsed, then replaces it). Exactly
 * one wins each round, the others find the winner's nonce, and the file
 * holds the winner's nonce. Returns the rounds that went otherwise.
 */
#define RACERS 8
static int race(const char *what, int lapsed, int rounds)
{
	int bad = 0;

	for (int r = 0; r < rounds; r++) {
		char key[32], name[64], line[RACERS][64], winner[SYN__NONCE_LEN + 1] = "";
		int go[2], out[2], wins = 0, held = 0, n = 0;
		syn__claim_t c;
		pid_t kids[RACERS];
		FILE *f;

		snprintf(key, sizeof(key), "%s%d", what, r);
		snprintf(name, sizeof(name), "4000.%s", key);
		if (lapsed)
			put(name, "uid=4000\nkey=x\nnonce=0123456789abcdef\ntime=1\n");
		if (pipe(go) < 0 || pipe(out) < 0)
			bail_out("pipe");
		for (int k = 0; k < RACERS; k++) {
			if ((kids[k] = fork()) == 0) {
				char nonce[SYN__NONCE_LEN + 1], buf[64], x;
				syn__claim_t h;
				int rc, len;

				close(go[1]);
				close(out[0]);
				if (read(go[0], &x, 1) < 0) /* EOF: all start together */
					_exit(3);
				rc = syn__claim_take(store, 4000, key, 3600, 100000, nonce, &h);
				len = snprintf(buf, sizeof(buf), "%c %s\n", rc == 1 ? 'W' : rc == 0 ? 'H' : 'E',
					       rc == 1 ? nonce : rc == 0 ? h.nonce : strerror(errno));
				_exit(write(out[1], buf, (size_t)len) == len ? 0 : 3);
			}
		}
		close(go[0]);
		close(out[1]);
		close(go[1]);
		f = fdopen(out[0], "r");
		while (f && n < RACERS && fgets(line[n], sizeof(line[n]), f))
			n++;
		if (f)
			fclose(f);
		for (int k = 0; k < RACERS; k++)
			waitpid(kids[k], NULL, 0);
		for (int k = 0; k < n; k++) {
			line[k][strcspn(line[k], "\n")] = '\0';
			if (line[k][0] == 'W') {
				wins++;
				snprintf(winner, sizeof(winner), "%s", line[k] + 2);
			}
		}
		for (int k = 0; k < n; k++)
			held += line[k][0] == 'H' && strcmp(line[k] + 2, winner) == 0;
		if (n != RACERS || wins != 1 || held != RACERS - 1 ||
		    syn__claim_read(store, 4000, key, &c) < 0 || strcmp(c.nonce, winner) != 0) {
			diag("%s round %d: %d answers, %d won, %d found the winner's claim", what, r, n,
			     wins, held);
			bad++;
		}
	}
	return bad;
}

static void test_race(void)
{
	is_int(race("new", 0, 25), 0,
	       "8 takers of a free claim at once, 25 rounds: one wins, 7 find its nonce");
	is_int(race("lapsed", 1, 25), 0,
	       "8 takers of a lapsed claim at once, 25 rounds: one takes it over, 7 find its nonce");
}

int main(void)
{
	char cmd[600];
	char *tmp = getenv("TMPDIR");

	snprintf(store, sizeof(store), "%s/claim-t.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(store)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	test_parse();
	test_take();
	test_private();
	test_race();
	test_grant();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store);
	if (system(cmd) != 0)
		diag("cannot remove %s", store);
	return done_testing();
}
