/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt-policy.t: the checkpoint frequency policy (coordl_ckpt_choose).
 *
 * Cases worked by hand (the overhead bound setting k, the pipeline
 * condition setting k, neither, k_max cutting it short), bad input
 * refused with EINVAL and a message naming it, then properties over
 * random costs: the chosen k keeps the bound and the pipeline condition
 * whenever it says so, it is the smallest such k, it never decreases when
 * a cost grows or the bound shrinks, and never increases when iterations
 * get longer. The seed is fixed so that a failure reproduces; SEED
 * overrides it.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coordl_ckpt.h"
#include "tests/tap.h"

static coordl_ckpt_choice_t choose(double iter, double over, double snap, double pers,
				   double bound, uint64_t kmin, uint64_t kmax, int *rc)
{
	coordl_ckpt_costs_t c = { .iter_s = iter, .overhead_s = over, .snapshot_s = snap,
				  .persist_s = pers };
	coordl_ckpt_choice_t out;
	coordl_error_t err = { "" };

	memset(&out, 0xaa, sizeof(out));
	*rc = coordl_ckpt_choose(&c, bound, kmin, kmax, &out, &err);
	if (*rc < 0)
		diag("error: %s", err.text);
	return out;
}

static void test_by_hand(void)
{
	coordl_ckpt_choice_t c;
	int rc;

	/* 35 ms per checkpoint on 100 ms iterations at 3.5%: one every 10
	 * iterations costs 35 ms per second, exactly the bound. */
	c = choose(0.1, 0.035, 0.01, 0.05, 0.035, 1, 1000, &rc);
	is_int(rc, 0, "bound case: accepted");
	is_int(c.interval, 10, "bound case: k = 0.035 / (0.035 x 0.1) = 10");
	is_int(c.limit, COORDL_CKPT_LIMIT_BOUND, "bound case: the bound set k");
	is_near(c.overhead, 0.035, 1e-12, "bound case: overhead 3.5%");
	is_int(c.bound_met, 1, "bound case: bound met");

	/* A slow disk: 0.5 s snapshot + 4.5 s persist on 1 s iterations
	 * needs k >= 5, the bound (0.1 s at 5%) only k >= 2. */
	c = choose(1.0, 0.1, 0.5, 4.5, 0.05, 1, 1000, &rc);
	is_int(c.interval, 5, "pipeline case: k = (0.5 + 4.5) / 1 = 5");
	is_int(c.limit, COORDL_CKPT_LIMIT_PIPELINE, "pipeline case: the pipeline set k");
	is_near(c.overhead, 0.02, 1e-12, "pipeline case: overhead 0.1 / 5 = 2%");

	/* Just above a whole number: 2.5 s of overhead at bound 1 needs 3. */
	c = choose(1.0, 2.5, 0, 0, 1.0, 1, 100, &rc);
	is_int(c.interval, 3, "overhead 2.5 iterations at bound 100%: k = 3");

	/* Free checkpoints: every iteration. */
	c = choose(0.2, 0, 0, 0, 0.035, 1, 100, &rc);
	is_int(c.interval, 1, "no cost: k = 1");
	is_int(c.limit, COORDL_CKPT_LIMIT_MIN, "no cost: k_min set k");
	is_int(c.bound_met, 1, "no cost: bound met");

	c = choose(0.2, 0.001, 0, 0, 0.035, 50, 100, &rc);
	is_int(c.interval, 50, "k_min = 50 above what the costs need: k = 50");
	is_int(c.limit, COORDL_CKPT_LIMIT_MIN, "k_min set k");

	/* 10 s per checkpoint on 10 ms iterations at 1% needs 100000. */
	c = choose(0.01, 10, 0, 0, 0.01, 1, 1000, &rc);
	is_int(c.interval, 1000, "bound out of reach: k = k_max");
	is_int(c.limit, COORDL_CKPT_LIMIT_MAX, "k_max set k");
	is_int(c.bound_met, 0, "bound not met, and said so");
	is_near(c.overhead, 1.0, 1e-12, "overhead at k_max: 10 / (1000 x 0.01) = 100%");

	c = choose(0.01, 10, 0, 0, 0.01, 1, 100000, &rc);
	is_int(c.interval, 100000, "the same with k_max = 100000: exactly 100000");
	is_int(c.bound_met, 1, "and the bound is met there");

	/* The pipeline alone at k_max: k = k_max, not met. */
	c = choose(1.0, 0, 0, 50, 0.035, 1, 10, &rc);
	is_int(c.interval, 10, "persist 50 s on 1 s iterations, k_max 10: k = 10");
	is_int(c.bound_met, 0, "pipeline not met at k_max: said so");

	/* k_min == k_max. */
	c = choose(1.0, 1, 0, 0, 0.5, 7, 7, &rc);
	is_int(c.interval, 7, "k_min = k_max = 7: k = 7");
}

static void refused(double iter, double over, double snap, double pers, double bound,
		    uint64_t kmin, uint64_t kmax, const char *word, const char *name)
{
	coordl_ckpt_costs_t c = { iter, over, snap, pers };
	coordl_ckpt_choice_t out;
	coordl_error_t err = { "" };
	int rc;

	errno = 0;
	rc = coordl_ckpt_choose(&c, bound, kmin, kmax, &out, &err);
	if (!ok(rc == -1 && errno == EINVAL && strstr(err.text, word), "refused: %s", name))
		diag("rc %d errno %d text '%s' (want '%s')", rc, errno, err.text, word);
}

static void test_refusals(void)
{
	coordl_ckpt_costs_t c = { 1, 0, 0, 0 };
	coordl_error_t err;

	refused(0, 0, 0, 0, 0.035, 1, 10, "iter_s", "iter_s = 0");
	refused(-1, 0, 0, 0, 0.035, 1, 10, "iter_s", "iter_s < 0");
	refused(NAN, 0, 0, 0, 0.035, 1, 10, "iter_s", "iter_s NaN");
	refused(1, INFINITY, 0, 0, 0.035, 1, 10, "overhead_s", "overhead_s infinite");
	refused(1, -0.5, 0, 0, 0.035, 1, 10, "overhead_s", "overhead_s < 0");
	refused(1, 0, NAN, 0, 0.035, 1, 10, "snapshot_s", "snapshot_s NaN");
	refused(1, 0, 0, -1, 0.035, 1, 10, "persist_s", "persist_s < 0");
	refused(1, 0, 0, 0, 0, 1, 10, "bound", "bound 0");
	refused(1, 0, 0, 0, 1.5, 1, 10, "bound", "bound > 1");
	refused(1, 0, 0, 0, NAN, 1, 10, "bound", "bound NaN");
	refused(1, 0, 0, 0, 0.035, 0, 10, "k_min", "k_min 0");
	refused(1, 0, 0, 0, 0.035, 11, 10, "k_min", "k_max < k_min");
	refused(1, 0, 0, 0, 0.035, 1, (UINT64_C(1) << 53) + 1, "k_max", "k_max > 2^53");
	errno = 0;
	ok(coordl_ckpt_choose(NULL, 0.035, 1, 10, NULL, &err) == -1 && errno == EINVAL,
	   "refused: NULL costs");
	ok(coordl_ckpt_choose(&c, 0.035, 1, 10, NULL, NULL) == -1 && errno == EINVAL,
	   "refused: NULL out, no error struct");
}

static uint64_t rng_state;

static double urand(void)
{
	/* xorshift64*: reproducible across libcs. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

/* Log-uniform in [lo, hi]; zero one time in eight. */
static double cost(double lo, double hi)
{
	if (urand() < 0.125)
		return 0;
	return lo * pow(hi / lo, urand());
}

static int meets(const coordl_ckpt_costs_t *c, double bound, uint64_t k)
{
	return c->overhead_s <= bound * ((double)k * c->iter_s) &&
	       (double)k * c->iter_s >= c->snapshot_s + c->persist_s;
}

static void test_properties(void)
{
	int bad_kept = 0, bad_min = 0, bad_mono = 0, bad_iter = 0, bad_max = 0, n = 20000;

	for (int i = 0; i < n; i++) {
		coordl_ckpt_costs_t c = { cost(1e-3, 10), cost(1e-4, 100), cost(1e-4, 10),
					  cost(1e-3, 1000) };
		double bound = 0.001 + urand() * 0.2, f = 1 + urand() * 3;
		uint64_t kmin = 1 + (uint64_t)(urand() * 3), kmax = kmin + (uint64_t)(urand() * 1e6);
		coordl_ckpt_choice_t a, b;
		coordl_ckpt_costs_t d;

		if (c.iter_s == 0)
			c.iter_s = 0.05;
		if (coordl_ckpt_choose(&c, bound, kmin, kmax, &a, NULL) < 0) {
			bad_kept++;
			continue;
		}
		/* What it says holds; k_max whenever it does not. */
		if (a.bound_met != meets(&c, bound, a.interval) ||
		    (a.bound_met && a.overhead > bound * (1 + 1e-12)))
			bad_kept++;
		if (!a.bound_met && a.interval != kmax)
			bad_max++;
		/* The smallest such k. */
		if (a.bound_met && a.interval > kmin && meets(&c, bound, a.interval - 1))
			bad_min++;
		/* Any cost up, or the bound down: k does not fall. */
		for (int which = 0; which < 4; which++) {
			d = c;
			if (which == 0)
				d.overhead_s = d.overhead_s * f + 1e-6;
			else if (which == 1)
				d.snapshot_s = d.snapshot_s * f + 1e-6;
			else if (which == 2)
				d.persist_s = d.persist_s * f + 1e-6;
			if (coordl_ckpt_choose(&d, which == 3 ? bound / f : bound, kmin, kmax, &b,
					       NULL) < 0 ||
			    b.interval < a.interval)
				bad_mono++;
		}
		/* Longer iterations: k does not grow. */
		d = c;
		d.iter_s *= f;
		if (coordl_ckpt_choose(&d, bound, kmin, kmax, &b, NULL) < 0 || b.interval > a.interval)
			bad_iter++;
	}
	is_int(bad_kept, 0, "random costs: bound_met says exactly whether both conditions hold");
	is_int(bad_max, 0, "random costs: k = k_max whenever the conditions cannot be met");
	is_int(bad_min, 0, "random costs: k is the smallest that meets them");
	is_int(bad_mono, 0, "random costs: k never falls when a cost grows or the bound shrinks");
	is_int(bad_iter, 0, "random costs: k never grows when iterations get longer");
}

int main(void)
{
	const char *s = getenv("SEED");

	rng_state = s ? strtoull(s, NULL, 0) : UINT64_C(0x9e3779b97f4a7c15);
	if (!rng_state)
		rng_state = 1;
	diag("seed 0x%llx", (unsigned long long)rng_state);
	test_by_hand();
	test_refusals();
	test_properties();
	done_testing();
}
