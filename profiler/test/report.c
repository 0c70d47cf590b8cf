/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * report.c: tests of the DS-Analyzer stall report (profiler/report.h) on a
 * small hand-made profile: the split of the time per sample into GPU, prep
 * stall and fetch stall, what bounds the job, the smallest cores and cache
 * that remove each stall (and halve the fetch stall), the best case, the
 * stand-in for an unmeasured GPU, a noisy grid, and bad input. Expected
 * values are worked by hand in the comments.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "profiler/report.h"
#include "tests/tap.h"

/*
 * Grid (normalised, 1.0 = 2 cpus, 1 GiB), dataset 2 GiB, base 100/s, GPU
 * 300/s (3.0):
 *            0 GiB  1 GiB  2 GiB
 *   1 cpu    0.5    0.75   1.0
 *   2 cpus   0.8    1.0    2.0
 *   4 cpus   1.0    2.0    3.0
 */
static syn_profile_t profile(void)
{
	static const double t[3][3] = { { 0.5, 0.75, 1.0 }, { 0.8, 1.0, 2.0 }, { 1.0, 2.0, 3.0 } };
	syn_profile_t p;
	memset(&p, 0, sizeof(p));
	strcpy(p.key, "rep");
	p.n_cpu = p.n_mem = 3;
	p.cpus[0] = 1;
	p.cpus[1] = 2;
	p.cpus[2] = 4;
	for (int j = 0; j < 3; j++)
		p.mem_gb[j] = j;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			p.tput[i][j] = t[i][j];
	p.prop_cpus = 2;
	p.prop_mem_gb = 1;
	p.base_tput = 100;
	p.gpu_rate = 300;
	p.dataset_bytes = 2ULL << 30;
	p.dataset_items = 1000;
	return p;
}

static void test_share(void)
{
	syn_profile_t p = profile();
	syn__report_t r;
	char msg[200];

	/* At the share: x = 1, cached x_c = 2, G = 3. Time per sample 1:
	 * GPU 1/3, prep 1/2 - 1/3 = 1/6, fetch 1 - 1/2 = 1/2. */
	ok(syn__report(&p, 2, 1, &r, msg, sizeof(msg)) == 0, "report at the share");
	is_near(r.tput, 1, 1e-12, "throughput at the share is 1.0");
	is_near(r.samples_per_s, 100, 1e-9, "absolute throughput from base_tput");
	ok(r.gpu_measured && fabs(r.gpu - 3) < 1e-12, "G = gpu_rate / base_tput = 3.0");
	is_near(r.cached_gb, 2, 1e-12, "dataset cached = its size, 2 GiB");
	is_near(r.cached, 2, 1e-12, "cached rate at 2 cpus");
	is_near(r.gpu_frac, 1 / 3.0, 1e-12, "GPU works 1/3 of the time");
	is_near(r.prep_stall, 1 / 6.0, 1e-12, "prep stall 1/2 - 1/3");
	is_near(r.fetch_stall, 0.5, 1e-12, "fetch stall 1 - 1/2");
	is_near(r.gpu_frac + r.prep_stall + r.fetch_stall, 1, 1e-12, "the shares sum to 1");
	ok(r.bound == SYN__BOUND_FETCH, "bound: fetch (the larger stall)");
	is_str(syn__bound_name(r.bound), "fetch", "bound name");
	/* Prep: cached rate >= 0.99 * 3: 3 cpus interpolate to 2.5, 4 give
	 * 3.0. */
	is_near(r.prep_cpus, 4, 0, "4 cpus remove the prep stall");
	/* Fetch at 2 cpus: reach 0.99 * 2 = 1.98 between 1 GiB (1.0) and
	 * 2 GiB (2.0): 1.98 GiB; halve it (0.25 stall): 1.5 at 1.5 GiB. */
	is_near(r.fetch_mem_gb, 1.98, 1e-12, "1.98 GiB remove the fetch stall");
	is_near(r.fetch_half_mem_gb, 1.5, 1e-12, "1.5 GiB halve it");
	ok(r.best_cpus == 4 && r.best_mem_gb == 2, "best case: the only cell within 1%% of the peak");
	is_near(r.best_tput, 3, 1e-12, "best-case throughput");
}

static void test_bounds(void)
{
	syn_profile_t p = profile();
	syn__report_t r;
	char msg[200];

	ok(syn__report(&p, 4, 2, &r, msg, sizeof(msg)) == 0, "report at 4 cpus, 2 GiB");
	ok(r.bound == SYN__BOUND_GPU && r.prep_stall < 1e-12 && r.fetch_stall < 1e-12 &&
	   fabs(r.gpu_frac - 1) < 1e-12, "at the GPU's rate: GPU bound, no stall");
	is_near(r.fetch_half_mem_gb, -1, 0, "no fetch stall: nothing to halve");
	/* 4 cpus reach 0.99 * 3 = 2.97 between 1 GiB (2.0) and 2 GiB (3.0). */
	is_near(r.fetch_mem_gb, 1.97, 1e-12, "the smallest cache that is within 1%% of cached");

	/* 1 cpu, all cached: x = 1 = x_c, G = 3: prep stall 2/3. */
	ok(syn__report(&p, 1, 2, &r, msg, sizeof(msg)) == 0, "report at 1 cpu, 2 GiB");
	ok(r.bound == SYN__BOUND_PREP, "bound: prep");
	is_near(r.prep_stall, 2 / 3.0, 1e-12, "prep stall 1 - 1/3");
	is_near(r.fetch_stall, 0, 1e-12, "no fetch stall with the dataset cached");

	/* 3 cpus, no cache: between rows 2 and 4: x = 0.9, x_c = 2.5. */
	ok(syn__report(&p, 3, 0, &r, msg, sizeof(msg)) == 0, "report between rows");
	is_near(r.fetch_stall, 1 - 0.9 / 2.5, 1e-12, "fetch stall interpolated");
	is_near(r.prep_stall, 0.9 / 2.5 - 0.9 / 3, 1e-12, "prep stall interpolated");
	/* Fetch at 3 cpus: values 0.9, 1.5, 2.5 at 0, 1, 2 GiB; 0.99 * 2.5 =
	 * 2.475 at 1 + 0.975 GiB. */
	is_near(r.fetch_mem_gb, 1.975, 1e-12, "cache to remove it, between columns");

	/* Beyond the grid: clamped, as every evaluation. */
	ok(syn__report(&p, 64, 100, &r, msg, sizeof(msg)) == 0 && r.bound == SYN__BOUND_GPU,
	   "a grant beyond the grid is clamped to its edge");
}

static void test_standins(void)
{
	syn_profile_t p = profile();
	syn__report_t r;
	char msg[200];

	/* No GPU rate: the best cell (3.0) stands in for G; same split. */
	p.gpu_rate = 0;
	ok(syn__report(&p, 2, 1, &r, msg, sizeof(msg)) == 0 && !r.gpu_measured, "no GPU rate");
	is_near(r.gpu, 3, 1e-12, "G = the best cell");
	is_near(r.prep_stall, 1 / 6.0, 1e-12, "prep stall relative to the best cell");
	/* A GPU rate without a base to compare it with: the same stand-in. */
	p.gpu_rate = 300;
	p.base_tput = 0;
	ok(syn__report(&p, 2, 1, &r, msg, sizeof(msg)) == 0 && !r.gpu_measured && r.samples_per_s == 0,
	   "no base throughput: no absolute rate, G stands in");
	/* No dataset size: the largest column is "cached". */
	p = profile();
	p.dataset_bytes = 0;
	ok(syn__report(&p, 2, 0, &r, msg, sizeof(msg)) == 0 && r.cached_gb == 2 && r.cached == 2,
	   "no dataset size: the largest column");
	/* A dataset larger than the grid: clamped at its last column. */
	p.dataset_bytes = 10ULL << 30;
	ok(syn__report(&p, 2, 0, &r, msg, sizeof(msg)) == 0 && r.cached == 2,
	   "a dataset beyond the grid: its last column");

	/* A noisy cell above its cached rate: no negative stall. */
	p = profile();
	p.tput[1][1] = 2.5;
	ok(syn__report(&p, 2, 1, &r, msg, sizeof(msg)) == 0 && r.fetch_stall == 0 && r.prep_stall >= 0,
	   "a noisy cell above the cached rate: fetch stall 0, not negative");
	is_near(r.gpu_frac + r.prep_stall + r.fetch_stall, 1, 1e-12, "and the shares still sum to 1");

	/* A GPU slower than the grid's top (rounding): no negative prep. */
	p = profile();
	p.gpu_rate = 250;
	ok(syn__report(&p, 4, 2, &r, msg, sizeof(msg)) == 0 && r.prep_stall == 0 &&
	   r.bound == SYN__BOUND_GPU, "a cell above G: prep stall 0, GPU bound");

	/* Fractional rows are candidates too: 1.5 cpus alone reach G. */
	p = profile();
	p.cpus[1] = 1.5;
	p.tput[1][2] = 3;
	ok(syn__report(&p, 1, 2, &r, msg, sizeof(msg)) == 0 && r.prep_cpus == 1.5,
	   "a fractional row is the smallest that removes the prep stall");

	/* A flat grid that never reaches G: no cores remove the prep stall,
	 * and no cache removes a fetch stall there is no cache to fix. */
	p = profile();
	p.gpu_rate = 1000;
	ok(syn__report(&p, 2, 1, &r, msg, sizeof(msg)) == 0 && r.prep_cpus == 0,
	   "G out of reach: no cores on the grid remove the prep stall (0)");
}

static void test_bad(void)
{
	syn_profile_t p = profile();
	syn__report_t r, before;
	char msg[200];

	memset(&r, 0xab, sizeof(r));
	before = r;
	errno = 0;
	ok(syn__report(&p, 0, 1, &r, msg, sizeof(msg)) == -1 && errno == EINVAL && strstr(msg, "grant"),
	   "cpus 0: EINVAL naming the grant");
	ok(!memcmp(&r, &before, sizeof(r)), "and the report is untouched");
	errno = 0;
	ok(syn__report(&p, 2, NAN, &r, msg, sizeof(msg)) == -1 && errno == EINVAL, "NaN cache: EINVAL");
	errno = 0;
	ok(syn__report(&p, 2, -1, &r, msg, sizeof(msg)) == -1 && errno == EINVAL, "negative cache: EINVAL");
	p.n_cpu = 0;
	errno = 0;
	ok(syn__report(&p, 2, 1, &r, msg, sizeof(msg)) == -1 && errno == EINVAL && strstr(msg, "'rep'"),
	   "a broken profile: EINVAL naming it");
	p = profile();
	for (int j = 0; j < 3; j++)
		p.tput[0][j] = 0;
	errno = 0;
	ok(syn__report(&p, 1, 0, &r, msg, sizeof(msg)) == -1 && errno == EINVAL &&
	   strstr(msg, "no throughput"), "zero throughput at the grant: EINVAL");
	ok(!memcmp(&r, &before, sizeof(r)), "failed calls never wrote the report");
	errno = 0;
	ok(syn__report(NULL, 2, 1, &r, msg, sizeof(msg)) == -1 && errno == EINVAL, "NULL profile");
}

int main(void)
{
	test_share();
	test_bounds();
	test_standins();
	test_bad();
	return done_testing();
}
