/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * order.c: the scheduling orderings a round visits jobs in (FIFO, SRTF, LAS,
 * FTF), and the names of allocators and orderings.
 *
 * FTF (finish-time fairness, after Themis) ranks a job by
 * rho = T_shared / T_ideal, with T_shared = time in the system so far plus
 * the remaining work, and T_ideal = its total work times the cluster's
 * contention. The contention factor is the same for every job of a round,
 * so it does not change the order and is left out; the job furthest behind
 * its fair finish time (largest rho) goes first.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "policy/policy_int.h"

struct key {
	double k, arrival;
	uint64_t id;
	int idx;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx - y->idx;
}

int syn_order(const syn_job_t *jobs, int n_jobs, syn_ordering_t ord, double now, int *idx)
{
	struct key *keys = NULL;
	int rv = -1;

	if (n_jobs < 0 || (n_jobs > 0 && (!jobs || !idx)) || (int)ord < SYN_ORDER_FIFO ||
	    ord > SYN_ORDER_FTF) {
		errno = EINVAL;
		return -1;
	}
	if (n_jobs == 0)
		return 0;
	keys = malloc(sizeof *keys * (size_t)n_jobs);
	if (!keys)
		goto out;
	for (int i = 0; i < n_jobs; i++) {
		const syn_job_t *j = &jobs[i];
		double k = 0;

		switch (ord) {
		case SYN_ORDER_FIFO:
			k = j->arrival;
			break;
		case SYN_ORDER_SRTF:
			/* Remaining time, not work: a job that ran last round at
			 * a speed-up over its share finishes its work that much
			 * sooner (Synergy's SRTF), so divide by that rate. A job
			 * without a previous allocation counts at its share. */
			k = j->remaining;
			if (j->alloc.n_place > 0 && j->alloc.prop_tput > 0 && j->alloc.tput > 0)
				k /= j->alloc.tput / j->alloc.prop_tput;
			break;
		case SYN_ORDER_LAS:
			k = j->attained * j->gpus;
			break;
		case SYN_ORDER_FTF: {
			double ideal = j->duration > 0 ? j->duration : 1e-9;
			k = -((now - j->arrival) + j->remaining) / ideal;
			break;
		}
		}
		keys[i] = (struct key){ k, j->arrival, j->id, i };
	}
	qsort(keys, (size_t)n_jobs, sizeof *keys, key_cmp);
	for (int i = 0; i < n_jobs; i++)
		idx[i] = keys[i].idx;
	rv = 0;
out:
	free(keys);
	return rv;
}

static const char *const alloc_names[] = { "prop", "greedy", "tune", "opt" };
static const char *const order_names[] = { "fifo", "srtf", "las", "ftf" };

const char *syn_allocator_name(syn_allocator_t a)
{
	return (int)a >= 0 && a <= SYN_ALLOC_OPT ? alloc_names[a] : "?";
}

const char *syn_ordering_name(syn_ordering_t o)
{
	return (int)o >= 0 && o <= SYN_ORDER_FTF ? order_names[o] : "?";
}

int syn_allocator_parse(const char *s, syn_allocator_t *a)
{
	for (int i = 0; s && a && i <= SYN_ALLOC_OPT; i++)
		if (strcasecmp(s, alloc_names[i]) == 0) {
			*a = (syn_allocator_t)i;
			return 0;
		}
	errno = EINVAL;
	return -1;
}

int syn_ordering_parse(const char *s, syn_ordering_t *o)
{
	for (int i = 0; s && o && i <= SYN_ORDER_FTF; i++)
		if (strcasecmp(s, order_names[i]) == 0) {
			*o = (syn_ordering_t)i;
			return 0;
		}
	errno = EINVAL;
	return -1;
}
