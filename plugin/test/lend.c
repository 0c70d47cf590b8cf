/*
 * lend.t: the idle-core lending decision (plugin/lend.c, syn__lend_plan)
 * and the cpuset list helpers. Table-driven cases plus a randomised check
 * of the invariants: every job keeps all it was allotted, a lent CPU was
 * idle and goes to one job only, and only jobs with a profile borrow.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "lend.h"

static syn_profile_t steep, mild, flat;

static void mkprof(syn_profile_t *p, const char *key, int n, const double *tput)
{
	int i;

	memset(p, 0, sizeof(*p));
	snprintf(p->key, sizeof(p->key), "%s", key);
	p->n_cpu = n;
	p->n_mem = 1;
	for (i = 0; i < n; i++) {
		p->cpus[i] = i + 1;
		p->tput[i][0] = tput[i];
	}
	p->mem_gb[0] = 0;
	p->prop_cpus = 1;
}

static cpu_set_t S(const char *list)
{
	cpu_set_t s;

	if (syn__cpus_parse(list, &s) < 0)
		CPU_ZERO(&s);
	return s;
}

static const char *L(const cpu_set_t *s)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ % 8];

	syn__cpus_format(s, b, 256);
	return b;
}

static syn__lend_job_t J(uint32_t id, const char *allotted, const char *held,
			 const syn_profile_t *p)
{
	syn__lend_job_t j;

	memset(&j, 0, sizeof(j));
	j.jobid = id;
	j.allotted = S(allotted);
	j.held = S(held ? held : allotted);
	j.gpus = 1;
	j.profile = p;
	return j;
}

static void test_lists(void)
{
	cpu_set_t s;
	char buf[64];

	ok(syn__cpus_parse("0-3,8,10-11", &s) == 0 && CPU_COUNT(&s) == 7, "parse a list");
	is_str(L(&s), "0-3,8,10-11", "format gives it back");
	ok(syn__cpus_parse("", &s) == 0 && CPU_COUNT(&s) == 0, "empty list is the empty set");
	ok(syn__cpus_parse("1\n", &s) == 0 && CPU_ISSET(1, &s), "trailing newline accepted");
	errno = 0;
	ok(syn__cpus_parse("3-1", &s) < 0 && errno == EINVAL, "reversed range refused");
	ok(syn__cpus_parse("1,,2", &s) < 0, "empty item refused");
	ok(syn__cpus_parse("-1", &s) < 0, "negative refused");
	ok(syn__cpus_parse("99999", &s) < 0, "CPU past CPU_SETSIZE refused");
	ok(syn__cpus_parse("0-1x", &s) < 0, "trailing garbage refused");
	s = S("0-15");
	ok(syn__cpus_format(&s, buf, 3) < 0 && errno == ENAMETOOLONG, "short buffer refused");
}

static void test_cases(void)
{
	cpu_set_t node = S("0-1");
	syn__lend_job_t j[4];
	int n;

	/* Job A alone on a 2-CPU node with one CPU allotted. */
	j[0] = J(10, "0", NULL, &steep);
	n = syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	ok(n == 1 && strcmp(L(&j[0].target), "0-1") == 0,
	   "a lone borrower gets the idle CPU (got %d, %s)", n, L(&j[0].target));
	ok(j[0].gain > 0.99 && j[0].gain < 1.01, "gain of its second core is 100%% (%.3f)", j[0].gain);

	/* Job B starts on the CPU A borrowed: A goes back to its share. */
	j[0] = J(10, "0", "0-1", &steep);
	j[1] = J(11, "1", NULL, NULL);
	n = syn__lend_plan(&node, j, 2, SYN__LEND_MIN_GAIN);
	ok(n == 0, "nothing idle once B is allotted the lent CPU");
	is_str(L(&j[0].target), "0", "the borrower gives the CPU back");
	is_str(L(&j[1].target), "1", "the newcomer keeps its whole share");

	/* The newcomer is a Synergy job too: still no one below its share. */
	j[0] = J(10, "0", "0-1", &steep);
	j[1] = J(11, "1", NULL, &steep);
	syn__lend_plan(&node, j, 2, SYN__LEND_MIN_GAIN);
	ok(strcmp(L(&j[0].target), "0") == 0 && strcmp(L(&j[1].target), "1") == 0,
	   "newcomer never below its share, borrower never above its own");

	/* B ended: A gets the CPU again. */
	j[0] = J(10, "0", NULL, &steep);
	syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	is_str(L(&j[0].target), "0-1", "a CPU freed by an ending job is lent again");

	/* No profile (no Synergy, --synergy=off): never borrows. */
	node = S("0-3");
	j[0] = J(10, "0", NULL, NULL);
	n = syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	ok(n == 0 && strcmp(L(&j[0].target), "0") == 0, "no borrower without a profile");
	/* ... and gives back what it should not hold. */
	j[0] = J(10, "0", "0-1", NULL);
	j[0].allotted = S("0");
	syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	is_str(L(&j[0].target), "0", "a job without a profile is narrowed to its allotment");

	/* Below the minimum gain the CPU stays idle. */
	j[0] = J(10, "0", NULL, &flat);
	n = syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	ok(n == 0 && strcmp(L(&j[0].target), "0") == 0, "insensitive job borrows nothing");
	j[0] = J(10, "0-1", NULL, &mild);   /* 2 -> 3 cores: +5% */
	n = syn__lend_plan(&node, j, 1, 0.06);
	ok(n == 0, "a 5%% gain is below a 6%% threshold");
	n = syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	ok(n == 1 && strcmp(L(&j[0].target), "0-2") == 0,
	   "mild job takes one core (5%%) and not the next (0%%): %s", L(&j[0].target));

	/* Two borrowers: the larger gain first, one CPU at a time. */
	node = S("0-6");
	j[0] = J(20, "0-1", NULL, &mild);   /* next core +5% */
	j[1] = J(21, "2", NULL, &steep);    /* 1->2 +100%, 2->3 +40%, 3->4 +14%, then 0 */
	n = syn__lend_plan(&node, j, 2, SYN__LEND_MIN_GAIN);
	ok(n == 4, "four CPUs lent (got %d)", n);
	is_str(L(&j[1].target), "2-5", "the steep job gets three, while its gain is larger");
	is_str(L(&j[0].target), "0-1,6", "the mild job gets the last one");

	/* Equal gains: the lower job id wins. */
	node = S("0-2");
	j[0] = J(31, "1", NULL, &steep);
	j[1] = J(30, "2", NULL, &steep);
	syn__lend_plan(&node, j, 2, SYN__LEND_MIN_GAIN);
	ok(strcmp(L(&j[1].target), "0,2") == 0 && strcmp(L(&j[0].target), "1") == 0,
	   "tie goes to the lower job id (30: %s, 31: %s)", L(&j[1].target), L(&j[0].target));

	/* A borrower keeps an idle CPU it holds even if another gains more. */
	node = S("0-2");
	j[0] = J(40, "0", "0,2", &mild);
	j[1] = J(41, "1", NULL, &steep);
	syn__lend_plan(&node, j, 2, SYN__LEND_MIN_GAIN);
	ok(strcmp(L(&j[0].target), "0,2") == 0 && strcmp(L(&j[1].target), "1") == 0,
	   "lent CPUs do not move between borrowers");

	/* Per GPU: a 2-GPU job with 2 CPUs is at 1 core per GPU. */
	node = S("0-2");
	j[0] = J(50, "0-1", NULL, &steep);
	j[0].gpus = 2;
	syn__lend_plan(&node, j, 1, SYN__LEND_MIN_GAIN);
	ok(j[0].gain > 0.49 && j[0].gain < 0.51, "gain is per GPU: 1 -> 1.5 cores per GPU is +50%% (%.3f)",
	   j[0].gain);

	/* CPUs outside the node are never lent. */
	node = S("0-1");
	j[0] = J(60, "0", NULL, &steep);
	j[1] = J(61, "4", NULL, NULL);
	syn__lend_plan(&node, j, 2, SYN__LEND_MIN_GAIN);
	is_str(L(&j[0].target), "0-1", "only the node's CPUs are lent");

	errno = 0;
	ok(syn__lend_plan(NULL, j, 1, 0.02) < 0 && errno == EINVAL, "NULL node refused");
	ok(syn__lend_plan(&node, NULL, 0, 0.02) == 0, "no jobs: nothing to do");
}

/* Random nodes and jobs: the invariants hold whatever the input. */
static void test_random(void)
{
	const syn_profile_t *profs[] = { NULL, &steep, &mild, &flat };
	int round, bad = 0;

	srand(42);
	for (round = 0; round < 2000 && !bad; round++) {
		syn__lend_job_t j[6];
		cpu_set_t node, used, idle, seen;
		int n = 1 + rand() % 6, ncpu = 1 + rand() % 16, i, c, k;

		CPU_ZERO(&node);
		for (c = 0; c < ncpu; c++)
			CPU_SET(c, &node);
		CPU_ZERO(&used);
		for (i = 0; i < n; i++) {
			memset(&j[i], 0, sizeof(j[i]));
			j[i].jobid = (uint32_t)(100 + rand() % 50);
			j[i].gpus = 1 + rand() % 2;
			j[i].profile = profs[rand() % 4];
			for (c = 0; c < ncpu; c++) {
				if (!CPU_ISSET(c, &used) && rand() % 4 == 0) {
					CPU_SET(c, &j[i].allotted);
					CPU_SET(c, &used);
				}
			}
			j[i].held = j[i].allotted;
			for (c = 0; c < ncpu; c++) /* stale loans, some now allotted elsewhere */
				if (rand() % 8 == 0)
					CPU_SET(c, &j[i].held);
		}
		CPU_ZERO(&idle);
		for (c = 0; c < ncpu; c++)
			if (!CPU_ISSET(c, &used))
				CPU_SET(c, &idle);
		if (syn__lend_plan(&node, j, n, SYN__LEND_MIN_GAIN) < 0) {
			bad = 1;
			break;
		}
		CPU_ZERO(&seen);
		for (i = 0; i < n && !bad; i++) {
			cpu_set_t extra, t;

			CPU_AND(&t, &j[i].target, &j[i].allotted);
			if (!CPU_EQUAL(&t, &j[i].allotted))
				bad = 2; /* below its share */
			CPU_XOR(&extra, &j[i].target, &j[i].allotted);
			if (CPU_COUNT(&extra) && !j[i].profile)
				bad = 3; /* borrowed without a profile */
			CPU_AND(&t, &extra, &idle);
			if (!CPU_EQUAL(&t, &extra))
				bad = 4; /* lent a CPU that was not idle */
			for (k = 0; k < CPU_SETSIZE; k++) {
				if (CPU_ISSET(k, &extra) && CPU_ISSET(k, &seen))
					bad = 5; /* lent twice */
				if (CPU_ISSET(k, &extra))
					CPU_SET(k, &seen);
			}
		}
	}
	ok(!bad, "2000 random nodes: allotment kept, only idle CPUs lent, once, to profiled jobs "
	   "(failure kind %d in round %d)", bad, round);
}

int main(void)
{
	static const double st[] = { 0.5, 1.0, 1.4, 1.6 };
	static const double mi[] = { 0.95, 1.0, 1.05 };
	static const double fl[] = { 1.0, 1.0 };

	mkprof(&steep, "steep", 4, st);
	mkprof(&mild, "mild", 3, mi);
	mkprof(&flat, "flat", 2, fl);
	test_lists();
	test_cases();
	test_random();
	done_testing();
	return 0;
}
