/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coord.t: issue 15, coordinated prep. Loaders of one group (SYNERGY_GROUP,
 * as the SPANK plugin sets it) on one dataset share a staging area:
 *  - k members consume exactly the batches a loader alone would give, in
 *    the same order, every batch prepared once in all (round-robin in one
 *    thread, and one consumer thread per member at different speeds);
 *  - a member killed with kill -9 in the middle of an epoch (a real child
 *    process) is noticed within a second and never blocks the others, who
 *    finish the epoch with the right batches; one that dies holding the
 *    segment's mutex (EOWNERDEAD) does not either;
 *  - a late member joins at its next batch and catches up; one too far
 *    behind prepares its own batches (SOLO) and rejoins once close;
 *  - exact resume (state) works per member, shared when the position is a
 *    whole number of batches, alone otherwise;
 *  - other pipelines (another seed, another dataset under the same group
 *    name) do not share; hostile environment values are errors that name
 *    the variable; a staging area too small, a missing directory, or an
 *    unsafe file (wrong mode, a symbolic link) leaves the loader on its own
 *    with a note; nothing is left behind.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coordl.h"
#include "loader/coord.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

#define BS 4
#define NB 30 /* batches per epoch: 120 items */
#define EPOCHS 2

static char dir[1024], ds[1100], gdir[1100];
/* The reference: what a loader alone gives, per epoch and batch. */
static uint64_t ref[EPOCHS][NB];

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t batch_sum(const coordl_batch_t *b)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fnv(h, b->data, b->data_bytes);
	h = fnv(h, b->labels, (size_t)b->n * sizeof(int32_t));
	h = fnv(h, b->indices, (size_t)b->n * sizeof(uint64_t));
	return fnv(h, &b->seq, sizeof(b->seq));
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static coordl_loader_t *make(uint64_t seed, int threads, coordl_error_t *err)
{
	coordl_config_t cfg;
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = ds;
	cfg.out_size = 24;
	cfg.batch_size = BS;
	cfg.threads = threads;
	cfg.seed = seed;
	cfg.cache_bytes = 0;
	if (!(ld = coordl_create(&cfg, err)))
		diag("create: %s", err->text);
	return ld;
}

static coordl_stats_t stats(coordl_loader_t *ld)
{
	coordl_stats_t st;

	memset(&st, 0, sizeof(st));
	if (ld)
		coordl_get_stats(ld, &st);
	return st;
}

static void group_env(const char *name)
{
	setenv(SYNERGY_ENV_GROUP, name, 1);
	setenv(SYNERGY_ENV_GROUP_DIR, gdir, 1);
	setenv(SYNERGY_ENV_GROUP_BYTES, "4M", 1);
	unsetenv(SYNERGY_ENV_GROUP_WINDOW);
}

/* One batch of ld, checked against the reference; -1 on error, 0 at the
 * end of the epoch, 1 when it matched, 2 when it did not. */
static int take(coordl_loader_t *ld, uint64_t epoch, int *seen_ro)
{
	coordl_batch_t *b = NULL;
	coordl_error_t err;
	int rc = coordl_next(ld, &b, &err), r;

	if (rc <= 0) {
		if (rc < 0)
			diag("next: %s", err.text);
		return rc;
	}
	r = b->seq < NB && epoch < EPOCHS && batch_sum(b) == ref[epoch][b->seq] ? 1 : 2;
	if (r == 2)
		diag("epoch %llu batch %llu differs", (unsigned long long)epoch,
		     (unsigned long long)b->seq);
	if (seen_ro && b->readonly)
		*seen_ro = 1;
	coordl_release(ld, b);
	return r;
}

/* Files left in the group directory. */
static int leftovers(void)
{
	DIR *d = opendir(gdir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void make_reference(void)
{
	coordl_error_t err;
	coordl_loader_t *ld;
	int ok_all = 1;

	unsetenv(SYNERGY_ENV_GROUP);
	ld = make(7, 2, &err);
	for (uint64_t e = 0; ld && e < EPOCHS; e++) {
		coordl_batch_t *b;
		int n = 0;
		coordl_set_epoch(ld, e, &err);
		while (coordl_next(ld, &b, &err) == 1) {
			if (b->seq < NB)
				ref[e][b->seq] = batch_sum(b);
			ok_all &= b->readonly == 0;
			coordl_release(ld, b);
			n++;
		}
		ok_all &= n == NB;
	}
	ok(ld && ok_all, "reference: a loader alone gives %d private batches per epoch", NB);
	coordl_destroy(ld);
}

/* k members, consumed round-robin by one thread over two epochs. */
static void test_round_robin(void)
{
	enum { K = 3 };
	coordl_loader_t *m[K] = { NULL };
	coordl_error_t err;
	int good = 1, ro = 0, got[K] = { 0 };
	double prepared = 0, received = 0;
	int members = 0, all_shared = 1;

	group_env("rr");
	for (int i = 0; i < K; i++)
		m[i] = make(7, 1, &err);
	ok(m[0] && m[1] && m[2], "%d members created", K);
	if (!m[0] || !m[1] || !m[2])
		goto out;
	members = stats(m[0]).group_members;
	for (uint64_t e = 0; e < EPOCHS; e++) {
		for (int i = 0; i < K; i++)
			coordl_set_epoch(m[i], e, &err);
		for (int n = 0; n < NB; n++)
			for (int i = 0; i < K; i++) {
				int r = take(m[i], e, &ro);
				good &= r == 1;
				got[i] += r == 1;
			}
		for (int i = 0; i < K; i++)
			good &= take(m[i], e, NULL) == 0;
	}
	is_int(members, K, "the members form one group");
	ok(good && got[0] == NB * EPOCHS && got[1] == NB * EPOCHS && got[2] == NB * EPOCHS,
	   "every member got exactly the reference batches of %d epochs", EPOCHS);
	ok(ro, "shared batches are marked read-only");
	for (int i = 0; i < K; i++) {
		coordl_stats_t st = stats(m[i]);
		prepared += st.batches_prepared;
		received += st.batches_received;
		all_shared &= st.group_batches == NB * EPOCHS && st.group_solo == 0 &&
			      st.group_redone == 0;
		diag("member %d: prepared %.2f received %.2f batches, from staging %llu", i,
		     st.batches_prepared, st.batches_received, (unsigned long long)st.group_batches);
	}
	ok(all_shared, "every batch came from the staging area, none redone");
	ok(prepared > NB * EPOCHS - 1e-9 && prepared < NB * EPOCHS + 1e-9,
	   "each batch was prepared once in all (%.2f batches for %d)", prepared, NB * EPOCHS);
	ok(received > 0, "members received batches others prepared (%.2f)", received);
	{
		int bad = 0;
		for (int i = 0; i < K; i++) {
			coordl_batch_t *b;
			coordl_set_epoch(m[i], 0, &err);
			if (coordl_next(m[i], &b, &err) == 1) {
				/* A shared batch is read-only: writing it faults, so
				 * only check that the mapping says so. */
				bad |= !b->readonly;
				coordl_release(m[i], b);
			}
		}
		ok(!bad, "a new epoch starts shared again");
	}
out:
	for (int i = 0; i < K; i++)
		coordl_destroy(m[i]);
	is_int(leftovers(), 0, "the last member out removes the segment and its lock file");
}

/* One consumer thread per member, at different speeds. */
struct runner {
	coordl_loader_t *ld;
	int delay_ms;
	int good, n;
};

static void *run_member(void *arg)
{
	struct runner *r = arg;
	coordl_error_t err;

	for (uint64_t e = 0; e < EPOCHS; e++) {
		int rc;
		coordl_set_epoch(r->ld, e, &err);
		while ((rc = take(r->ld, e, NULL)) > 0) {
			r->good &= rc == 1;
			r->n++;
			if (r->delay_ms)
				sleep_ms(r->delay_ms);
		}
		r->good &= rc == 0;
	}
	return NULL;
}

static void test_threads(void)
{
	enum { K = 3 };
	struct runner r[K];
	pthread_t t[K];
	coordl_error_t err;
	int ok_all = 1;
	double prepared = 0;

	group_env("thr");
	for (int i = 0; i < K; i++) {
		r[i].ld = make(7, 2, &err);
		r[i].delay_ms = i;
		r[i].good = 1;
		r[i].n = 0;
		ok_all &= r[i].ld != NULL;
	}
	if (ok_all)
		for (int i = 0; i < K; i++)
			pthread_create(&t[i], NULL, run_member, &r[i]);
	if (ok_all)
		for (int i = 0; i < K; i++)
			pthread_join(t[i], NULL);
	for (int i = 0; i < K; i++) {
		ok_all &= r[i].good && r[i].n == NB * EPOCHS;
		prepared += stats(r[i].ld).batches_prepared;
	}
	ok(ok_all, "%d members in threads at different speeds get the reference batches", K);
	ok(prepared >= NB * EPOCHS - 1e-9 && prepared < NB * EPOCHS * 1.5,
	   "the group prepared %.2f batches for %d (each once, a few again at most)", prepared,
	   NB * EPOCHS);
	for (int i = 0; i < K; i++)
		coordl_destroy(r[i].ld);
}

/* A member killed with kill -9 mid-epoch: a child process. */
static pid_t spawn_member(int pfd, int delay_ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		coordl_error_t err;
		coordl_loader_t *ld = make(7, 2, &err);
		coordl_batch_t *b;
		int good = 1, n = 0, rc;

		if (!ld)
			_exit(10);
		while ((rc = coordl_next(ld, &b, &err)) == 1) {
			good &= b->seq < NB && batch_sum(b) == ref[0][b->seq];
			coordl_release(ld, b);
			n++;
			if (write(pfd, "b", 1) != 1)
				_exit(11);
			sleep_ms(delay_ms);
		}
		coordl_destroy(ld);
		_exit(rc == 0 && good && n == NB ? 0 : 12);
	}
	return pid;
}

static void test_kill9(void)
{
	int p1[2], p2[2], st = 0, good = 1, n = 0, members_before = 0, members_after = 0;
	coordl_loader_t *ld;
	coordl_error_t err;
	pid_t c1, c2;
	double t_kill, t_seen = -1;
	char c;

	group_env("kill");
	if (pipe(p1) < 0 || pipe(p2) < 0) {
		ok(0, "pipes");
		return;
	}
	c1 = spawn_member(p1[1], 40);
	c2 = spawn_member(p2[1], 5);
	close(p1[1]);
	close(p2[1]);
	ld = make(7, 1, &err);
	/* Wait until both children took a batch: the group is formed. */
	if (read(p1[0], &c, 1) != 1 || read(p2[0], &c, 1) != 1)
		diag("a child did not start");
	members_before = stats(ld).group_members;
	for (int i = 0; i < 6; i++) {
		int r = take(ld, 0, NULL);
		good &= r == 1;
		n += r == 1;
	}
	/* Kill the slow member in the middle of its epoch: it holds
	 * batches and items in flight. */
	t_kill = td_now();
	kill(c1, SIGKILL);
	waitpid(c1, &st, 0);
	while (td_now() - t_kill < 5) {
		if (stats(ld).group_members == 2) {
			t_seen = td_now() - t_kill;
			break;
		}
		sleep_ms(5);
	}
	for (int r; (r = take(ld, 0, NULL)) > 0;) {
		good &= r == 1;
		n++;
	}
	members_after = stats(ld).group_members;
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "member 1 (pid %d) was killed with kill -9",
	   (int)c1);
	is_int(members_before, 3, "three members before the kill");
	ok(t_seen >= 0 && t_seen <= 1.0, "the dead member was noticed within a second (%.3f s)",
	   t_seen);
	ok(good && n == NB, "the others finished the epoch with the reference batches (%d)", n);
	is_int(members_after, 2, "two members after the kill");
	waitpid(c2, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other child finished its epoch correctly");
	coordl_destroy(ld);
	close(p1[0]);
	close(p2[0]);
	is_int(leftovers(), 0, "nothing is left of the group after a member was killed");
}

/* A member that dies holding the segment's mutex. */
static int fill_one(void *arg, void *ws, uint64_t epoch, uint64_t pos, uint64_t orig, void *dst,
		    int32_t *label, uint64_t *index)
{
	(void)arg;
	(void)ws;
	(void)pos;
	memset(dst, (int)(orig + epoch) & 0xff, 64);
	*label = (int32_t)orig;
	*index = orig;
	return 0;
}

static void test_owner_dead(void)
{
	coordl__group_geom_t geom = { 0x1234, 4, 64, 1 << 20, 16 };
	coordl__group_t *g;
	coordl_error_t err;
	uint64_t order[64];
	coordl__group_job_t job = { 0, 0, 64, 16, order };
	coordl_batch_t *b = NULL;
	char why[64];
	int st = 0, rc = -1, ok_items = 1;
	pid_t pid;

	for (int i = 0; i < 64; i++)
		order[i] = (uint64_t)(63 - i);
	g = coordl__group_join("owner", gdir, &geom, fill_one, NULL, &err);
	ok(g != NULL, "a member joins the group directly");
	if (!g)
		return;
	coordl__group_restart(g, 0, 0, 16);
	pid = fork();
	if (pid == 0) {
		coordl__group_t *c = coordl__group_join("owner", gdir, &geom, fill_one, NULL, &err);
		if (!c)
			_exit(10);
		coordl__group_test_hold(c);
		_exit(0); /* dies holding the mutex */
	}
	waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a second member took the mutex and exited");
	/* The next lock sees EOWNERDEAD, repairs, and work goes on. */
	for (int i = 0; i < 8 && coordl__group_work(g, &job, NULL, 10, why, sizeof(why)) >= 0; i++)
		;
	rc = coordl__group_next(g, 0, &b);
	if (rc == 1) {
		for (int k = 0; k < b->n; k++)
			ok_items &= b->indices[k] == order[k] && b->labels[k] == (int32_t)order[k];
		coordl__group_release(g, b);
	}
	ok(rc == 1 && ok_items, "after EOWNERDEAD the survivor prepares and takes batch 0");
	{
		coordl__group_stats_t gs;
		coordl__group_stats(g, &gs);
		is_int(gs.members, 1, "the dead owner of the mutex was reaped");
	}
	coordl__group_leave(g);
}

/* A late member joins at its next batch and catches up. */
static void test_late_join(void)
{
	coordl_loader_t *a, *b = NULL;
	coordl_error_t err;
	int good = 1, na = 0, nb = 0;
	coordl_stats_t sa, sb;

	group_env("late");
	a = make(7, 1, &err);
	for (int i = 0; a && i < 10; i++) {
		good &= take(a, 0, NULL) == 1;
		na++;
	}
	b = a ? make(7, 1, &err) : NULL;
	/* b takes two batches for each of a's: it catches up. */
	while (a && b && (na < NB || nb < NB)) {
		for (int i = 0; i < 2 && nb < NB; i++, nb++)
			good &= take(b, 0, NULL) == 1;
		if (na < NB) {
			good &= take(a, 0, NULL) == 1;
			na++;
		}
	}
	sa = stats(a);
	sb = stats(b);
	ok(a && b && good && na == NB && nb == NB,
	   "a member created 10 batches late gets the whole epoch's reference batches");
	ok(sb.group_batches == NB && sb.group_solo == 0,
	   "the late member took every batch from the staging area (%llu)",
	   (unsigned long long)sb.group_batches);
	ok(sb.batches_received > 0 && sa.group_batches == NB,
	   "it received batches the first member prepared (%.2f)", sb.batches_received);
	coordl_destroy(a);
	coordl_destroy(b);
}

/* Beyond the window a member prepares its own, then rejoins. */
static void test_far_behind(void)
{
	coordl_loader_t *a, *b;
	coordl_error_t err;
	int good = 1, na = 0, nb = 0, was_solo = 0, rejoined = 0;
	coordl_stats_t sb;

	group_env("far");
	setenv(SYNERGY_ENV_GROUP_WINDOW, "4", 1);
	a = make(7, 1, &err);
	for (int i = 0; a && i < 20; i++, na++)
		good &= take(a, 0, NULL) == 1;
	b = a ? make(7, 1, &err) : NULL;
	/* a stops; b runs alone until it is within 2 batches of a. */
	for (; b && nb < NB; nb++) {
		good &= take(b, 0, NULL) == 1;
		sb = stats(b);
		if (!sb.group_shared && sb.group_members == 2)
			was_solo = 1;
		if (was_solo && sb.group_shared)
			rejoined = 1;
		if (nb >= 18 && na < NB) {
			good &= take(a, 0, NULL) == 1;
			na++;
		}
	}
	while (a && na < NB) {
		good &= take(a, 0, NULL) == 1;
		na++;
	}
	sb = stats(b);
	ok(good && na == NB && nb == NB, "a member 20 batches behind (window 4) still gets the "
					 "reference batches");
	ok(was_solo && sb.group_solo > 0, "it prepared its own batches while far behind (%llu)",
	   (unsigned long long)sb.group_solo);
	ok(rejoined && sb.group_batches > 0, "it rejoined the staging area once close (%llu shared)",
	   (unsigned long long)sb.group_batches);
	coordl_destroy(a);
	coordl_destroy(b);
	unsetenv(SYNERGY_ENV_GROUP_WINDOW);
}

/* Resume from a state, in a group. */
static void test_resume(void)
{
	coordl_loader_t *a, *b, *c;
	coordl_error_t err;
	coordl_state_t s, s2;
	int good = 1, n = 0;
	coordl_stats_t sc;

	group_env("resume");
	a = make(7, 1, &err);
	b = make(7, 1, &err);
	for (int i = 0; a && b && i < 7; i++) {
		good &= take(a, 0, NULL) == 1;
		good &= take(b, 0, NULL) == 1;
	}
	coordl_get_state(a, &s);
	coordl_destroy(a);
	for (int i = 0; b && i < 5; i++)
		good &= take(b, 0, NULL) == 1;
	c = make(7, 1, &err);
	ok(c && coordl_set_state(c, &s, &err) == 0, "a new member restores the state (position %llu)",
	   (unsigned long long)s.position);
	for (int r; c && (r = take(c, 0, NULL)) > 0;) {
		good &= r == 1;
		n++;
		if (n % 2 == 0)
			good &= take(b, 0, NULL) >= 0;
	}
	sc = stats(c);
	ok(good && n == NB - 7, "it gets exactly the remaining reference batches (%d)", n);
	ok(sc.group_batches == (uint64_t)n && sc.batches_received > 0,
	   "a whole-batch position shares with the group (%.2f received)", sc.batches_received);
	/* A position inside a batch: its batches are its own. */
	s2 = s;
	s2.position = s.position + 2;
	coordl_set_state(c, &s2, &err);
	{
		coordl_batch_t *bt;
		int rc = coordl_next(c, &bt, &err), first_ok = 0;
		if (rc == 1) {
			first_ok = bt->n == BS && bt->indices[0] != 0;
			coordl_release(c, bt);
		}
		sc = stats(c);
		ok(rc == 1 && first_ok, "a position inside a batch resumes there");
	}
	coordl_destroy(b);
	coordl_destroy(c);
}

/* Other pipelines, bad values, no room, unsafe files. */
static void test_edges(void)
{
	coordl_loader_t *a, *b;
	coordl_error_t err;
	char path[1500];
	int fd;

	group_env("edge");
	a = make(7, 1, &err);
	b = make(8, 1, &err); /* another seed: another pipeline */
	ok(a && b && stats(a).group_members == 1 && stats(b).group_members == 1,
	   "loaders with another seed do not share a segment");
	ok(a && b && take(a, 0, NULL) == 1, "and each gets its own batches");
	coordl_destroy(a);
	coordl_destroy(b);

	setenv(SYNERGY_ENV_GROUP, "a/b", 1);
	errno = 0;
	a = make(7, 1, &err);
	ok(!a && errno == EINVAL && strstr(err.text, SYNERGY_ENV_GROUP),
	   "a malformed group name is an error naming the variable (%s)", err.text);
	coordl_destroy(a);
	group_env("edge");
	setenv(SYNERGY_ENV_GROUP_BYTES, "12X", 1);
	a = make(7, 1, &err);
	ok(!a && strstr(err.text, SYNERGY_ENV_GROUP_BYTES), "a malformed staging bound is an error");
	coordl_destroy(a);
	group_env("edge");
	setenv(SYNERGY_ENV_GROUP_WINDOW, "0", 1);
	a = make(7, 1, &err);
	ok(!a && strstr(err.text, SYNERGY_ENV_GROUP_WINDOW), "a window of 0 is an error");
	coordl_destroy(a);
	group_env("edge");
	setenv(SYNERGY_ENV_GROUP_DIR, "relative", 1);
	a = make(7, 1, &err);
	ok(!a && strstr(err.text, SYNERGY_ENV_GROUP_DIR), "a relative group directory is an error");
	coordl_destroy(a);

	/* Hostile values: each is refused with an error naming the variable,
	 * and nothing is made in the group directory. */
	{
		static const struct {
			const char *var, *val;
		} bad[] = {
			{ SYNERGY_ENV_GROUP, ".." },
			{ SYNERGY_ENV_GROUP, "." },
			{ SYNERGY_ENV_GROUP, "a b" },
			{ SYNERGY_ENV_GROUP, "x\n" },
			{ SYNERGY_ENV_GROUP,
			  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
			{ SYNERGY_ENV_GROUP_BYTES, "-1" },
			{ SYNERGY_ENV_GROUP_BYTES, "99999999999999999999" },
			{ SYNERGY_ENV_GROUP_BYTES, "9999999999T" },
			{ SYNERGY_ENV_GROUP_BYTES, "4 MB" },
			{ SYNERGY_ENV_GROUP_WINDOW, "1000001" },
			{ SYNERGY_ENV_GROUP_WINDOW, "-3" },
			{ SYNERGY_ENV_GROUP_WINDOW, "8x" },
			{ SYNERGY_ENV_GROUP_DIR, "" },
		};
		int all = 1;

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			group_env("hostile");
			setenv(bad[i].var, bad[i].val, 1);
			errno = 0;
			a = make(7, 1, &err);
			if (a || errno != EINVAL || !strstr(err.text, bad[i].var)) {
				diag("%s='%s' was not refused: %s", bad[i].var, bad[i].val,
				     a ? "(created)" : err.text);
				all = 0;
			}
			coordl_destroy(a);
		}
		ok(all && leftovers() == 0,
		   "hostile group values (.., spaces, 65 chars, overflowing bytes, window "
		   "out of range, empty dir) are refused naming the variable, nothing made");
	}

	/* A group directory that does not exist: the loader runs alone. */
	group_env("edge");
	snprintf(path, sizeof(path), "%s/missing", gdir);
	setenv(SYNERGY_ENV_GROUP_DIR, path, 1);
	a = make(7, 1, &err);
	ok(a && coordl_group_note(a) && strstr(coordl_group_note(a), "missing") &&
		   take(a, 0, NULL) == 1 && stats(a).group_members == 0,
	   "a missing group directory leaves the loader alone, with a note: %s",
	   a && coordl_group_note(a) ? coordl_group_note(a) : "(none)");
	coordl_destroy(a);

	/* Same group name, another dataset: another signature, no sharing. */
	{
		char ds2[1200];
		coordl_config_t cfg;

		group_env("edge");
		snprintf(ds2, sizeof(ds2), "%s/ds2", dir);
		a = make(7, 1, &err);
		coordl_config_init(&cfg);
		cfg.path = ds2;
		cfg.out_size = 24;
		cfg.batch_size = BS;
		cfg.threads = 1;
		cfg.seed = 7;
		cfg.cache_bytes = 0;
		b = NULL;
		if (mkdir(ds2, 0755) == 0 && td_imagefolder(ds2, 3, 20) >= 0)
			b = coordl_create(&cfg, &err);
		ok(a && b && stats(a).group_members == 1 && stats(b).group_members == 1 &&
			   leftovers() == 4,
		   "loaders of one group over different datasets get separate segments");
		ok(a && take(a, 0, NULL) == 1, "and the first still gets the reference batches");
		coordl_destroy(a);
		coordl_destroy(b);
		td_rmrf(ds2);
	}

	group_env("edge");
	setenv(SYNERGY_ENV_GROUP_BYTES, "1K", 1);
	a = make(7, 1, &err);
	ok(a && coordl_group_note(a) && strstr(coordl_group_note(a), "fewer than 2 batches") &&
		   take(a, 0, NULL) == 1 && stats(a).group_members == 0,
	   "a staging area below two batches leaves the loader alone, with a note: %s",
	   a && coordl_group_note(a) ? coordl_group_note(a) : "(none)");
	coordl_destroy(a);

	/* Plant a file of the segment's name but the wrong mode. */
	group_env("unsafe");
	path[0] = '\0';
	{
		DIR *d;
		struct dirent *e;
		int planted = 0;

		a = make(7, 1, &err);
		d = opendir(gdir);
		while (a && d && (e = readdir(d)))
			if (strstr(e->d_name, "grp-unsafe") && strstr(e->d_name, ".seg"))
				snprintf(path, sizeof(path), "%s/%s", gdir, e->d_name);
		if (d)
			closedir(d);
		coordl_destroy(a);
		fd = path[0] ? open(path, O_CREAT | O_WRONLY, 0644) : -1;
		if (fd >= 0) {
			fchmod(fd, 0644);
			close(fd);
			planted = 1;
		}
		a = make(7, 1, &err);
		ok(planted && a && coordl_group_note(a) && strstr(coordl_group_note(a), "mode") &&
			   take(a, 0, NULL) == 1,
		   "a segment file that is not 0600 is not used: %s",
		   a && coordl_group_note(a) ? coordl_group_note(a) : "(none)");
		coordl_destroy(a);
		/* A symbolic link of the segment's name to a victim file of the
		 * user: not followed, the victim unchanged. */
		{
			char victim[1200];
			struct stat vst;
			int linked = 0;

			snprintf(victim, sizeof(victim), "%s/victim", dir);
			fd = open(victim, O_CREAT | O_WRONLY | O_TRUNC, 0600);
			if (fd >= 0) {
				linked = write(fd, "keep", 4) == 4;
				close(fd);
			}
			if (path[0])
				unlink(path);
			linked = linked && path[0] && symlink(victim, path) == 0;
			a = make(7, 1, &err);
			ok(linked && a && coordl_group_note(a) &&
				   strstr(coordl_group_note(a), "symbolic link") &&
				   take(a, 0, NULL) == 1 && stat(victim, &vst) == 0 && vst.st_size == 4,
			   "a symbolic link in the segment's place is not followed: %s",
			   a && coordl_group_note(a) ? coordl_group_note(a) : "(none)");
			coordl_destroy(a);
			unlink(victim);
		}
		if (path[0])
			unlink(path);
		snprintf(path + strlen(path) - 4, 6, ".lock");
		unlink(path);
	}
	is_int(leftovers(), 0, "nothing is left in the group directory");
}

int main(void)
{
	char *tmp = td_tmpdir("coord");

	snprintf(dir, sizeof(dir), "%s", tmp);
	free(tmp);
	snprintf(ds, sizeof(ds), "%s/ds", dir);
	snprintf(gdir, sizeof(gdir), "%s/grp", dir);
	if (mkdir(ds, 0755) < 0 || mkdir(gdir, 0700) < 0 || td_imagefolder(ds, 4, 30) < 0) {
		printf("1..0 # SKIP cannot write the test dataset\n");
		return 0;
	}
	unsetenv(SYNERGY_ENV_CACHE_NAME);
	unsetenv(SYNERGY_ENV_CACHE_BYTES);
	unsetenv(SYNERGY_ENV_CACHE_GRANT);
	unsetenv(SYNERGY_ENV_THREADS);
	alarm(300); /* a hang fails the test instead of blocking the suite */
	make_reference();
	test_round_robin();
	test_threads();
	test_kill9();
	test_owner_dead();
	test_late_join();
	test_far_behind();
	test_resume();
	test_edges();
	td_rmrf(dir);
	done_testing();
	return tap__failed ? 1 : 0;
}
