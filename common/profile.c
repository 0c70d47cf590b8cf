/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/profile.c: validation and evaluation of sensitivity profiles
 * (common/profile.h), shared by the profiler, the store, the policy, the
 * simulator and the plugins.
 *
 * A profile is a small dense grid (at most 32 x 16 cells), so evaluation
 * scans the axes linearly: that is faster than a binary search at these
 * sizes and has no edge cases. Outside the grid the value is clamped to the
 * nearest edge, so more resources than were profiled never predict more
 * throughput than the largest profiled point.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/profile.h"

/* An axis must be finite, strictly increasing and at or above lo (or above
 * it when strict is set). */
static int check_axis(const double *v, int n, const char *name, double lo, int strict,
		      syn_error_t *err)
{
	for (int i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			return syn_errprintf(err, EINVAL, "%s[%d] is not a finite number", name, i);
		if (strict ? !(v[i] > lo) : !(v[i] >= lo))
			return syn_errprintf(err, EINVAL, "%s[%d] = %g must be %s %g", name, i,
					     v[i], strict ? ">" : ">=", lo);
		if (i > 0 && !(v[i] > v[i - 1]))
			return syn_errprintf(err, EINVAL, "%s[%d] = %g is not greater than "
					     "%s[%d] = %g (axis must be strictly increasing)",
					     name, i, v[i], name, i - 1, v[i - 1]);
	}
	return 0;
}

int syn_profile_check(const syn_profile_t *p, syn_error_t *err)
{
	if (err)
		err->text[0] = '\0';
	if (!p)
		return syn_errprintf(err, EINVAL, "profile is NULL");
	if (memchr(p->key, '\0', sizeof p->key) == NULL || !syn_key_valid(p->key))
		return syn_errprintf(err, EINVAL, "key: expected 1-%d characters of [A-Za-z0-9_.-] "
				     "not starting with '.'", SYN_PROFILE_KEY_MAX);
	if (p->n_cpu < 1 || p->n_cpu > SYN_PROFILE_MAX_CPU)
		return syn_errprintf(err, EINVAL, "cpus: %d entries, expected 1..%d", p->n_cpu,
				     SYN_PROFILE_MAX_CPU);
	if (p->n_mem < 1 || p->n_mem > SYN_PROFILE_MAX_MEM)
		return syn_errprintf(err, EINVAL, "mem_gb: %d entries, expected 1..%d", p->n_mem,
				     SYN_PROFILE_MAX_MEM);
	if (check_axis(p->cpus, p->n_cpu, "cpus", 0.0, 1, err) < 0)
		return -1;
	if (check_axis(p->mem_gb, p->n_mem, "mem_gb", 0.0, 0, err) < 0)
		return -1;
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem; j++)
			if (!isfinite(p->tput[i][j]) || p->tput[i][j] < 0)
				return syn_errprintf(err, EINVAL, "tput[%d][%d] = %g must be a "
						     "finite number >= 0", i, j, p->tput[i][j]);
	if (!isfinite(p->prop_cpus) || !(p->prop_cpus > 0))
		return syn_errprintf(err, EINVAL, "prop_cpus = %g must be a finite number > 0",
				     p->prop_cpus);
	if (!isfinite(p->prop_mem_gb) || p->prop_mem_gb < 0)
		return syn_errprintf(err, EINVAL, "prop_mem_gb = %g must be a finite number >= 0",
				     p->prop_mem_gb);
	if (!isfinite(p->base_tput) || p->base_tput < 0)
		return syn_errprintf(err, EINVAL, "base_tput = %g must be a finite number >= 0",
				     p->base_tput);
	if (p->ckpt_state_bytes > SYN_PROFILE_CKPT_MAX_BYTES)
		return syn_errprintf(err, EINVAL, "checkpoint.state_bytes = %llu: at most 2^50",
				     (unsigned long long)p->ckpt_state_bytes);
	if (p->ckpt_batch < 0)
		return syn_errprintf(err, EINVAL, "checkpoint.batch = %d must be >= 0",
				     p->ckpt_batch);
	{
		const double v[] = { p->ckpt_snapshot_s, p->ckpt_persist_s, p->ckpt_overhead_s };
		const char *name[] = { "snapshot_s", "persist_s", "overhead_s" };
		for (int i = 0; i < 3; i++)
			if (!isfinite(v[i]) || v[i] < 0)
				return syn_errprintf(err, EINVAL,
						     "checkpoint.%s = %g must be a finite number >= 0",
						     name[i], v[i]);
	}
	return 0;
}

/* Locate x on an axis: the cell [*i, *i+1] and the weight *w of the upper
 * end, clamped to the axis. */
static void locate(const double *ax, int n, double x, int *i, double *w)
{
	if (n == 1 || !(x > ax[0])) {
		*i = 0;
		*w = 0.0;
		return;
	}
	if (x >= ax[n - 1]) {
		*i = n - 2;
		*w = 1.0;
		return;
	}
	int k = 0;
	while (k + 1 < n - 1 && ax[k + 1] <= x)
		k++;
	*i = k;
	*w = (x - ax[k]) / (ax[k + 1] - ax[k]);
}

double syn_profile_eval(const syn_profile_t *p, double cpus, double mem_gb)
{
	int i, j;
	double wi, wj, a, b;

	if (!p || p->n_cpu < 1 || p->n_mem < 1 || p->n_cpu > SYN_PROFILE_MAX_CPU ||
	    p->n_mem > SYN_PROFILE_MAX_MEM || isnan(cpus) || isnan(mem_gb)) {
		errno = EINVAL;
		return NAN;
	}
	locate(p->cpus, p->n_cpu, cpus, &i, &wi);
	locate(p->mem_gb, p->n_mem, mem_gb, &j, &wj);
	if (p->n_cpu == 1 && p->n_mem == 1)
		return p->tput[0][0];
	if (p->n_cpu == 1)
		return p->tput[0][j] * (1 - wj) + p->tput[0][j + 1] * wj;
	if (p->n_mem == 1)
		return p->tput[i][0] * (1 - wi) + p->tput[i + 1][0] * wi;
	a = p->tput[i][j] * (1 - wj) + p->tput[i][j + 1] * wj;
	b = p->tput[i + 1][j] * (1 - wj) + p->tput[i + 1][j + 1] * wj;
	return a * (1 - wi) + b * wi;
}
