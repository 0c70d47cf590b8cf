/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profile.t: profile validation and interpolation (common/profile.c).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/profile.h"
#include "tests/tap.h"

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

static void test_check(void)
{
	syn_profile_t p = grid2x2(), q;
	syn_error_t err;

	is_int(syn_profile_check(&p, &err), 0, "valid profile passes");
	q = p, q.cpus[1] = 2;
	ok(syn_profile_check(&q, &err) == -1 && errno == EINVAL && strstr(err.text, "cpus[1]"),
	   "non-increasing cpus named: %s", err.text);
	q = p, q.mem_gb[0] = -1;
	ok(syn_profile_check(&q, &err) == -1 && strstr(err.text, "mem_gb[0]"),
	   "negative mem named: %s", err.text);
	q = p, q.tput[1][0] = NAN;
	ok(syn_profile_check(&q, &err) == -1 && strstr(err.text, "tput[1][0]"),
	   "NaN tput named: %s", err.text);
	q = p, q.n_cpu = 0;
	ok(syn_profile_check(&q, &err) == -1 && strstr(err.text, "cpus"), "empty axis named: %s",
	   err.text);
	q = p, q.n_mem = SYN_PROFILE_MAX_MEM + 1;
	ok(syn_profile_check(&q, &err) == -1 && strstr(err.text, "mem_gb"),
	   "oversized axis named: %s", err.text);
	q = p, strcpy(q.key, "bad key");
	ok(syn_profile_check(&q, &err) == -1 && strstr(err.text, "key"), "bad key named: %s",
	   err.text);
	q = p, q.prop_cpus = 0;
	ok(syn_profile_check(&q, &err) == -1 && strstr(err.text, "prop_cpus"),
	   "zero prop_cpus named: %s", err.text);
	ok(syn_profile_check(NULL, &err) == -1, "NULL profile rejected");
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
	is_near(syn_profile_eval(&p, 3.5, 25),
		0.25 * (0.25 * 1 + 0.75 * 2) + 0.75 * (0.25 * 3 + 0.75 * 5), 1e-12,
		"bilinear off-centre");
	is_near(syn_profile_eval(&p, 100, 1000), 5.0, 1e-12, "clamped above");
	is_near(syn_profile_eval(&p, 0.1, 0), 1.0, 1e-12, "clamped below");
	ok(isnan(syn_profile_eval(NULL, 1, 1)), "NULL profile gives NaN");
	p.n_cpu = 1;
	is_near(syn_profile_eval(&p, 7, 20), 1.5, 1e-12, "single-row profile interpolates memory");
}

int main(void)
{
	test_check();
	test_eval();
	return done_testing();
}
