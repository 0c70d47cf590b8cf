/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lend.t: which CPUs the node agent gives each job (plugin/lend.c,
 * syn__lend_place): the plan says how many, this says which. Table-driven
 * cases plus a randomised check of the invariants: every job keeps all it
 * was allotted, a lent CPU was idle and goes to one job only, no job gets
 * more than it wants, lent CPUs stay where they are when they can. (The
 * counts are the policy's node-level TUNE, tested in policy/test/live.t;
 * the state layer in lendstate.t.)
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "plugin/node/lend.h"

static cpu_set_t S(const char *list)
{
	cpu_set_t s;

	if (syn_cpus_parse(list, &s) < 0)
		CPU_ZERO(&s);
	return s;
}

static const char *L(const cpu_set_t *s)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ % 8];

	syn_cpus_format(s, b, 256);
	return b;
}

static syn__lend_job_t J(uint32_t id, const char *allotted, const char *held, int want)
{
	syn__lend_job_t j;

	memset(&j, 0, sizeof(j));
	j.jobid = id;
	j.allotted = S(allotted);
	j.held = S(held ? held : allotted);
	j.want = want;
	return j;
}

static void test_cases(void)
{
	cpu_set_t node = S("0-1");
	syn__lend_job_t j[4];
	int n;

	/* Job A alone on a 2-CPU node with one CPU allotted, wanting two. */
	j[0] = J(10, "0", NULL, 2);
	n = syn__lend_place(&node, j, 1);
	ok(n == 1 && strcmp(L(&j[0].target), "0-1") == 0,
	   "a lone borrower gets the idle CPU (got %d, %s)", n, L(&j[0].target));

	/* Job B starts on the CPU A borrowed: A goes back to its share. */
	j[0] = J(10, "0", "0-1", 2);
	j[1] = J(11, "1", NULL, 1);
	n = syn__lend_place(&node, j, 2);
	ok(n == 0, "nothing idle once B is allotted the lent CPU");
	is_str(L(&j[0].target), "0", "the borrower gives the CPU back");
	is_str(L(&j[1].target), "1", "the newcomer keeps its whole share");

	/* Wanting no more than its allotment: narrowed to it. */
	node = S("0-3");
	j[0] = J(10, "0", "0-1", 1);
	syn__lend_place(&node, j, 1);
	is_str(L(&j[0].target), "0", "a job that wants its allotment holds just that");
	j[0] = J(10, "0-1", NULL, 0);
	syn__lend_place(&node, j, 1);
	is_str(L(&j[0].target), "0-1", "a want below the allotment still keeps the allotment");

	/* Two borrowers: the plan's counts, lowest idle CPUs in order. */
	node = S("0-6");
	j[0] = J(20, "0-1", NULL, 3);
	j[1] = J(21, "2", NULL, 4);
	n = syn__lend_place(&node, j, 2);
	ok(n == 4, "four CPUs lent (got %d)", n);
	is_str(L(&j[0].target), "0-1,3", "the first job gets the lowest idle CPU");
	is_str(L(&j[1].target), "2,4-6", "the second the next three");

	/* A borrower keeps the idle CPUs it holds; no churn between borrowers. */
	node = S("0-4");
	j[0] = J(40, "0", "0,4", 2);
	j[1] = J(41, "1", NULL, 2);
	syn__lend_place(&node, j, 2);
	ok(strcmp(L(&j[0].target), "0,4") == 0 && strcmp(L(&j[1].target), "1-2") == 0,
	   "lent CPUs do not move between borrowers (40: %s, 41: %s)", L(&j[0].target),
	   L(&j[1].target));
	/* ... but only up to its want: the rest goes back to the pool. */
	j[0] = J(40, "0", "0,2-4", 2);
	j[1] = J(41, "1", NULL, 3);
	syn__lend_place(&node, j, 2);
	ok(strcmp(L(&j[0].target), "0,2") == 0 && strcmp(L(&j[1].target), "1,3-4") == 0,
	   "a borrower whose want fell keeps its lowest held CPUs (40: %s, 41: %s)",
	   L(&j[0].target), L(&j[1].target));
	/* Two claims on one held CPU: the lower job id keeps it. */
	j[0] = J(51, "1", "1,3", 2);
	j[1] = J(50, "0", "0,3", 2);
	syn__lend_place(&node, j, 2);
	ok(strcmp(L(&j[1].target), "0,3") == 0 && strcmp(L(&j[0].target), "1-2") == 0,
	   "a CPU held by two goes to the lower job id (50: %s, 51: %s)", L(&j[1].target),
	   L(&j[0].target));

	/* More wanted than idle: what there is. */
	node = S("0-2");
	j[0] = J(60, "0", NULL, 8);
	j[1] = J(61, "1", NULL, 8);
	n = syn__lend_place(&node, j, 2);
	ok(n == 1 && strcmp(L(&j[0].target), "0,2") == 0 && strcmp(L(&j[1].target), "1") == 0,
	   "wants beyond the idle CPUs get what is idle, once");

	/* CPUs outside the node are never lent. */
	node = S("0-1");
	j[0] = J(70, "0", NULL, 4);
	j[1] = J(71, "4", NULL, 1);
	syn__lend_place(&node, j, 2);
	is_str(L(&j[0].target), "0-1", "only the node's CPUs are lent");

	errno = 0;
	ok(syn__lend_place(NULL, j, 1) < 0 && errno == EINVAL, "NULL node refused");
	ok(syn__lend_place(&node, NULL, 0) == 0, "no jobs: nothing to do");
}

/* Random nodes and jobs: the invariants hold whatever the input. */
static void test_random(void)
{
	int round, bad = 0;

	srand(42);
	for (round = 0; round < 4000 && !bad; round++) {
		syn__lend_job_t j[6], before[6];
		cpu_set_t node, used, idle, seen;
		int n = 1 + rand() % 6, ncpu = 1 + rand() % 32, i, c, k;

		CPU_ZERO(&node);
		for (c = 0; c < ncpu; c++)
			CPU_SET(c, &node);
		CPU_ZERO(&used);
		for (i = 0; i < n; i++) {
			memset(&j[i], 0, sizeof(j[i]));
			j[i].jobid = (uint32_t)(100 + rand() % 50);
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
			j[i].want = CPU_COUNT(&j[i].allotted) + rand() % 5 - 1;
			before[i] = j[i];
		}
		CPU_ZERO(&idle);
		for (c = 0; c < ncpu; c++)
			if (!CPU_ISSET(c, &used))
				CPU_SET(c, &idle);
		if (syn__lend_place(&node, j, n) < 0) {
			bad = 1;
			break;
		}
		CPU_ZERO(&seen);
		for (i = 0; i < n && !bad; i++) {
			cpu_set_t extra, t;
			int want = before[i].want > CPU_COUNT(&j[i].allotted) ?
				   before[i].want : CPU_COUNT(&j[i].allotted);

			CPU_AND(&t, &j[i].target, &j[i].allotted);
			if (!CPU_EQUAL(&t, &j[i].allotted))
				bad = 2; /* below its allotment */
			CPU_XOR(&extra, &j[i].target, &j[i].allotted);
			if (CPU_COUNT(&j[i].target) > want)
				bad = 3; /* more than it wants */
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
		/* Every job got its want while idle CPUs were left over. */
		CPU_XOR(&idle, &idle, &seen);
		for (i = 0; i < n && !bad; i++)
			if (CPU_COUNT(&idle) > 0 && CPU_COUNT(&j[i].target) < before[i].want)
				bad = 6;
	}
	ok(!bad, "4000 random nodes: allotment kept, only idle CPUs lent, once, never beyond "
	   "a job's want, none left idle while wanted (failure kind %d in round %d)", bad, round);
}

/* syn__lend_place_harvest: which of the lenders' CPUs each harvester gets. */
static void test_harvest(void)
{
	syn__lend_job_t j[4];
	int n;

	/* 10 on 0 harvests 1 of 11's two (1-2); 12 on 3 lends nothing. */
	j[0] = J(10, "0", NULL, 1);
	j[1] = J(11, "1-2", NULL, 2);
	j[2] = J(12, "3", NULL, 1);
	for (int i = 0; i < 3; i++)
		j[i].target = j[i].allotted;
	j[0].harvest = 1;
	j[1].lend = 2;
	n = syn__lend_place_harvest(j, 3);
	ok(n == 1 && strcmp(L(&j[0].target), "0-1") == 0 && strcmp(L(&j[0].harvested), "1") == 0,
	   "the lowest lendable CPU (got %d, %s)", n, L(&j[0].target));
	ok(strcmp(L(&j[1].target), "1-2") == 0 && CPU_COUNT(&j[1].harvested) == 0 &&
		   strcmp(L(&j[2].target), "3") == 0, "lenders and others keep their own");

	/* A harvester keeps the lendable CPU it holds (2), not the lowest. */
	j[0] = J(10, "0", "0,2", 1);
	j[0].target = j[0].allotted;
	j[1].target = j[1].allotted;
	j[0].harvest = 1;
	n = syn__lend_place_harvest(j, 3);
	ok(n == 1 && strcmp(L(&j[0].harvested), "2") == 0, "keeps what it holds (%s)",
	   L(&j[0].harvested));

	/* A lender gives at most its lend; two harvesters share. */
	j[0] = J(10, "0", NULL, 1);
	j[1] = J(11, "1-2", NULL, 2);
	j[2] = J(12, "3", NULL, 1);
	j[3] = J(13, "4", NULL, 1);
	for (int i = 0; i < 4; i++)
		j[i].target = j[i].allotted;
	j[0].harvest = 2;
	j[1].lend = 1;
	j[2].harvest = 1;
	j[3].lend = 1;
	n = syn__lend_place_harvest(j, 4);
	ok(n == 2 && strcmp(L(&j[0].harvested), "1,4") == 0 && CPU_COUNT(&j[2].harvested) == 0,
	   "each lender gives at most its lend, in array order (%s, %s)", L(&j[0].harvested),
	   L(&j[2].harvested));

	/* A lender harvests nothing, even if asked; no job its own. */
	j[0] = J(10, "0", NULL, 1);
	j[1] = J(11, "1", NULL, 1);
	j[0].target = j[0].allotted;
	j[1].target = j[1].allotted;
	j[0].lend = 1;
	j[0].harvest = 1;
	j[1].lend = 1;
	j[1].harvest = 1;
	ok(syn__lend_place_harvest(j, 2) == 0, "lenders do not harvest");
	ok(syn__lend_place_harvest(NULL, 1) == -1 && errno == EINVAL, "NULL refused");
}

int main(void)
{
	test_cases();
	test_random();
	test_harvest();
	done_testing();
	return 0;
}
