/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * builtin.t: the built-in profiles' published points and the best-case
 * demand rule (profile validation and interpolation: common/test/profile.c).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "synergy_policy.h"
#include "tests/tap.h"

static void test_builtins(void)
{
	syn_error_t err;
	int n = syn_builtin_count(), bad = 0;
	const syn_profile_t *p;
	double c, m;

	is_int(n, 10, "ten built-in models");
	for (int i = 0; i < n; i++) {
		p = syn_builtin_at(i, NULL);
		if (!p || syn_profile_check(p, &err) < 0 ||
		    fabs(syn_profile_eval(p, 3, 62.5) - 1.0) > 1e-12) {
			bad++;
			diag("built-in %d: %s", i, p ? err.text : "NULL");
		}
	}
	is_int(bad, 0, "every built-in is valid and 1.0 at 3 cores, 62.5 GB");
	ok(syn_builtin_at(n, NULL) == NULL && errno == EINVAL, "index out of range");
	ok(syn_builtin_find("nope") == NULL && errno == ENOENT, "unknown key");

	/* The points the paper reports. */
	is_near(syn_profile_eval(syn_builtin_find("resnet18"), 9, 62.5), 2.4, 1e-9,
		"resnet18 2.4x at 9 cores");
	is_near(syn_profile_eval(syn_builtin_find("alexnet"), 12, 125), 2.94, 1e-9,
		"alexnet 2.94x at 12c/125GB");
	is_near(syn_profile_eval(syn_builtin_find("resnet50"), 4, 62.5), 1.15, 1e-9,
		"resnet50 1.15x at 4 cores");
	is_near(syn_profile_eval(syn_builtin_find("m5"), 6, 187.5), 2.5, 1e-9,
		"m5 2.5x at 6c/187.5GB");
	is_near(syn_profile_eval(syn_builtin_find("gnmt"), 24, 250), 1.0, 1e-9, "gnmt flat");

	/* Best-case demand: the cheapest cell within 1% of the peak. */
	static const struct { const char *k; double c, m; } bc[] = {
		{ "resnet18", 9, 62.5 }, { "alexnet", 12, 125 }, { "resnet50", 4, 62.5 },
		{ "m5", 6, 187.5 },      { "gnmt", 1, 20.8 },    { "shufflenet", 12, 125 },
	};
	for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
		int rc = syn_best_case(syn_builtin_find(bc[i].k), 0.01, 0, 0, &c, &m);
		ok(rc == 0 && c == bc[i].c && m == bc[i].m,
		   "best case of %s is (%g, %g): got (%g, %g)", bc[i].k, bc[i].c, bc[i].m, c, m);
	}
	/* AlexNet at 9 cores (2.6) is 12% short of its peak: a 15% tolerance
	 * accepts it, the default 1% does not. */
	int rc = syn_best_case(syn_builtin_find("alexnet"), 0.15, 0, 0, &c, &m);
	ok(rc == 0 && c == 9 && m == 125, "15%% tolerance lets alexnet take 9 cores: got (%g, %g)",
	   c, m);
	rc = syn_best_case(syn_builtin_find("alexnet"), 0.01, 6, 0, &c, &m);
	ok(rc == 0 && c == 6 && m == 62.5, "limit of 6 cores per GPU: got (%g, %g)", c, m);
	ok(syn_best_case(syn_builtin_find("alexnet"), 1.5, 0, 0, &c, &m) == -1 && errno == EINVAL,
	   "eps out of range rejected");
	is_near(syn_job_tput(NULL, 1, 1), 1.0, 0, "no profile: flat 1.0");
}

int main(void)
{
	test_builtins();
	return done_testing();
}
