/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt_policy.c: how often to checkpoint (coordl_ckpt_choose, see
 * coordl_ckpt.h). A pure function of the measured costs: no clock, no
 * state, so the tests can work cases out by hand.
 *
 * CheckFreq's argument: a checkpoint every k iterations costs overhead_s
 * of training time per k iterations, so the fraction of time lost is
 * overhead_s / (k * iter_s), and the smallest k that keeps it within the
 * bound loses the least work when the job is interrupted. A second
 * condition keeps the pipeline from backing up: the previous checkpoint
 * should be on storage (snapshot plus persist) before the next one starts,
 * or snapshots pile up and are superseded without ever being written.
 *
 * Both conditions are monotone in k, so the smallest k meeting both is
 * found by bisection over [k_min, k_max], deciding each candidate by the
 * conditions themselves rather than by a rounded quotient: the result is
 * exact, and a larger cost or a smaller bound can never give a smaller k.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "coordl_ckpt.h"
#include "loader/util.h"

/* Keeps (double)k exact, so that k * iter_s grows with k. */
#define K_LIMIT (UINT64_C(1) << 53)

static int meets_bound(const coordl_ckpt_costs_t *c, double bound, uint64_t k)
{
	return c->overhead_s <= bound * ((double)k * c->iter_s);
}

static int meets_pipeline(const coordl_ckpt_costs_t *c, uint64_t k)
{
	return (double)k * c->iter_s >= c->snapshot_s + c->persist_s;
}

static int meets(const coordl_ckpt_costs_t *c, double bound, uint64_t k)
{
	return meets_bound(c, bound, k) && meets_pipeline(c, k);
}

static int check_cost(const char *name, double v, int positive, coordl_error_t *err)
{
	if (!isfinite(v) || v < 0 || (positive && v == 0))
		return coordl__errprintf(err, EINVAL, "%s = %g: expected a finite value %s 0", name,
					 v, positive ? ">" : ">=");
	return 0;
}

int coordl_ckpt_choose(const coordl_ckpt_costs_t *c, double bound, uint64_t k_min,
		       uint64_t k_max, coordl_ckpt_choice_t *out, coordl_error_t *err)
{
	uint64_t lo, hi;

	if (!c || !out)
		return coordl__errprintf(err, EINVAL, "costs or out is NULL");
	if (check_cost("iter_s", c->iter_s, 1, err) < 0 ||
	    check_cost("overhead_s", c->overhead_s, 0, err) < 0 ||
	    check_cost("snapshot_s", c->snapshot_s, 0, err) < 0 ||
	    check_cost("persist_s", c->persist_s, 0, err) < 0)
		return -1;
	if (!(bound > 0 && bound <= 1))
		return coordl__errprintf(err, EINVAL, "bound = %g: expected 0 < bound <= 1", bound);
	if (k_min < 1 || k_max < k_min || k_max > K_LIMIT)
		return coordl__errprintf(err, EINVAL,
					 "k_min = %llu, k_max = %llu: expected 1 <= k_min <= "
					 "k_max <= 2^53",
					 (unsigned long long)k_min, (unsigned long long)k_max);
	memset(out, 0, sizeof(*out));
	if (meets(c, bound, k_min)) {
		out->interval = k_min;
		out->limit = COORDL_CKPT_LIMIT_MIN;
	} else if (!meets(c, bound, k_max)) {
		out->interval = k_max;
		out->limit = COORDL_CKPT_LIMIT_MAX;
	} else {
		/* Invariant: k_min <= lo < hi, lo fails, hi meets. */
		lo = k_min;
		hi = k_max;
		while (hi - lo > 1) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (meets(c, bound, mid))
				hi = mid;
			else
				lo = mid;
		}
		out->interval = hi;
		out->limit = meets_bound(c, bound, lo) ? COORDL_CKPT_LIMIT_PIPELINE
						       : COORDL_CKPT_LIMIT_BOUND;
	}
	out->overhead = c->overhead_s / ((double)out->interval * c->iter_s);
	out->bound_met = meets(c, bound, out->interval);
	return 0;
}
