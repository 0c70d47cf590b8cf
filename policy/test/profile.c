/*
 * profile.t: profile validation, interpolation, the built-in profiles'
 * published points, and the best-case demand rule.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "synergy_policy.h"
#include "tap.h"

static syn_profile_t grid2x2(void)
{
	syn_profile_t p;
	memset(&p, 0, sizeof p);
	strcpy(p.key, "t");
	p.n_cpu = 2;
	p.n_mem = 2;
	p.cpus[0] = 2, p.cpus[1] = 4;
	p.mem_gb[0] = 10, p.mem_gb[1] = 30;
	p.tput[0][0] = 1.0, p.tput[0][1] = 2.0;
	p.tput[1][0] = 3.0, p.tput[1][1] = 5.0;
	p.prop_cpus = 2;
	p.prop_mem_gb = 10;
	return p;
}

static void test_keys(void)
{
	static const struct { const char *k; int valid; } t[] = {
		{ "resnet18", 1 }, { "a", 1 }, { "A-b_c.9", 1 }, { "", 0 }, { ".hidden", 0 },
		{ "sp ace", 0 }, { "slash/x", 0 }, { "ü", 0 },
		{ "0123456789012345678901234567890123456789012345678901234567890123", 1 },
		{ "01234567890123456789012345678901234567890123456789012345678901234", 0 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		is_int(syn_profile_key_valid(t[i].k), t[i].valid, t[i].k);
	is_int(syn_profile_key_valid(NULL), 0, "NULL key invalid");
}

static void test_check(void)
{
	syn_profile_t p = grid2x2(), q;
	char msg[160];

	is_int(syn_profile_check(&p, msg, sizeof msg), 0, "valid profile passes");
	q = p, q.cpus[1] = 2;
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && errno == EINVAL &&
		   strstr(msg, "cpus[1]"),
	   "non-increasing cpus named: %s", msg);
	q = p, q.mem_gb[0] = -1;
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && strstr(msg, "mem_gb[0]"),
	   "negative mem named: %s", msg);
	q = p, q.tput[1][0] = NAN;
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && strstr(msg, "tput[1][0]"),
	   "NaN tput named: %s", msg);
	q = p, q.n_cpu = 0;
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && strstr(msg, "cpus"),
	   "empty axis named: %s", msg);
	q = p, q.n_mem = SYN_PROFILE_MAX_MEM + 1;
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && strstr(msg, "mem_gb"),
	   "oversized axis named: %s", msg);
	q = p, strcpy(q.key, "bad key");
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && strstr(msg, "key"),
	   "bad key named: %s", msg);
	q = p, q.prop_cpus = 0;
	ok(syn_profile_check(&q, msg, sizeof msg) == -1 && strstr(msg, "prop_cpus"),
	   "zero prop_cpus named: %s", msg);
	ok(syn_profile_check(NULL, msg, sizeof msg) == -1, "NULL profile rejected");
}

static void test_eval(void)
{
	syn_profile_t p = grid2x2();

	is_near(syn_profile_eval(&p, 2, 10), 1.0, 1e-12, "grid point (2,10)");
	is_near(syn_profile_eval(&p, 4, 30), 5.0, 1e-12, "grid point (4,30)");
	is_near(syn_profile_eval(&p, 3, 10), 2.0, 1e-12, "midpoint on cpu axis");
	is_near(syn_profile_eval(&p, 2, 20), 1.5, 1e-12, "midpoint on mem axis");
	/* bilinear centre: (1+2+3+5)/4 */
	is_near(syn_profile_eval(&p, 3, 20), 2.75, 1e-12, "bilinear centre");
	is_near(syn_profile_eval(&p, 3.5, 25), 0.25 * (0.25 * 1 + 0.75 * 2) + 0.75 * (0.25 * 3 + 0.75 * 5),
		1e-12, "bilinear off-centre");
	is_near(syn_profile_eval(&p, 100, 1000), 5.0, 1e-12, "clamped above");
	is_near(syn_profile_eval(&p, 0.1, 0), 1.0, 1e-12, "clamped below");
	ok(isnan(syn_profile_eval(NULL, 1, 1)), "NULL profile gives NaN");
	p.n_cpu = 1;
	is_near(syn_profile_eval(&p, 7, 20), 1.5, 1e-12, "single-row profile interpolates memory");
}

static void test_builtins(void)
{
	char msg[160];
	int n = syn_builtin_count(), bad = 0;
	const syn_profile_t *p;
	double c, m;

	is_int(n, 10, "ten built-in models");
	for (int i = 0; i < n; i++) {
		p = syn_builtin_at(i, NULL);
		if (!p || syn_profile_check(p, msg, sizeof msg) < 0 ||
		    fabs(syn_profile_eval(p, 3, 62.5) - 1.0) > 1e-12) {
			bad++;
			diag("built-in %d: %s", i, p ? msg : "NULL");
		}
	}
	is_int(bad, 0, "every built-in is valid and 1.0 at 3 cores, 62.5 GB");
	ok(syn_builtin_at(n, NULL) == NULL && errno == EINVAL, "index out of range");
	ok(syn_builtin_find("nope") == NULL && errno == ENOENT, "unknown key");

	/* The points the paper reports. */
	is_near(syn_profile_eval(syn_builtin_find("resnet18"), 9, 62.5), 2.4, 1e-9, "resnet18 2.4x at 9 cores");
	is_near(syn_profile_eval(syn_builtin_find("alexnet"), 12, 125), 2.94, 1e-9, "alexnet 2.94x at 12c/125GB");
	is_near(syn_profile_eval(syn_builtin_find("resnet50"), 4, 62.5), 1.15, 1e-9, "resnet50 1.15x at 4 cores");
	is_near(syn_profile_eval(syn_builtin_find("m5"), 6, 187.5), 2.5, 1e-9, "m5 2.5x at 6c/187.5GB");
	is_near(syn_profile_eval(syn_builtin_find("gnmt"), 24, 250), 1.0, 1e-9, "gnmt flat");

	/* Best-case demand: the cheapest cell within 1% of the peak. */
	static const struct { const char *k; double c, m; } bc[] = {
		{ "resnet18", 9, 62.5 }, { "alexnet", 12, 125 }, { "resnet50", 4, 62.5 },
		{ "m5", 6, 187.5 },      { "gnmt", 1, 20.8 },    { "shufflenet", 12, 125 },
	};
	for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
		int rc = syn_best_case(syn_builtin_find(bc[i].k), 0.01, 0, 0, &c, &m);
		ok(rc == 0 && c == bc[i].c && m == bc[i].m, "best case of %s is (%g, %g): got (%g, %g)",
		   bc[i].k, bc[i].c, bc[i].m, c, m);
	}
	/* AlexNet at 9 cores (2.6) is 12% short of its peak: a 15% tolerance
	 * accepts it, the default 1% does not. */
	int rc = syn_best_case(syn_builtin_find("alexnet"), 0.15, 0, 0, &c, &m);
	ok(rc == 0 && c == 9 && m == 125, "15%% tolerance lets alexnet take 9 cores: got (%g, %g)", c, m);
	rc = syn_best_case(syn_builtin_find("alexnet"), 0.01, 6, 0, &c, &m);
	ok(rc == 0 && c == 6 && m == 62.5, "limit of 6 cores per GPU: got (%g, %g)", c, m);
	ok(syn_best_case(syn_builtin_find("alexnet"), 1.5, 0, 0, &c, &m) == -1 && errno == EINVAL,
	   "eps out of range rejected");
	is_near(syn_job_tput(NULL, 1, 1), 1.0, 0, "no profile: flat 1.0");
}

int main(void)
{
	test_keys();
	test_check();
	test_eval();
	test_builtins();
	return done_testing();
}
