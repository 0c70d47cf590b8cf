/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jobprofile.t: the report a job's own loader writes in profiling mode, as
 * root reads it before filing a profile measured on a job's first run
 * (profiler/jobprofile.c): strict parsing of untrusted JSON, the sanity
 * bounds (each refusal names what is wrong), and the profile built from a
 * report (normalised to 1 at the stated share, the CPU axis reaching the
 * node's size).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "common/store.h"
#include "profiler/jobprofile.h"

/* A report like the loader's: points at 4, 2 and 1 threads of a job whose
 * GPU takes 800 samples/s and whose workers deliver 300 samples/s each
 * (333 in prep, the rest fetching). */
static char *report(const char *complete, int max_threads, double elapsed, const char *extra_pt)
{
	static char buf[32768];
	char pts[4096] = "";
	const int th[] = { 4, 2, 1 };

	for (int i = 0; i < 3; i++) {
		double rate = th[i] * 300.0 < 800 ? th[i] * 300.0 : 800;
		double samples = 480, wall = samples / rate, consumer = samples / 800;
		char one[600];

		snprintf(one, sizeof(one),
			 "%s{ \"threads\": %d, \"samples\": 480, \"wall\": %.6f, \"consumer\": %.6f, "
			 "\"stall\": %.6f, \"prep_time\": %.6f, \"fetch_time\": %.6f, "
			 "\"storage_bytes\": 4800000, \"hits\": 0, \"misses\": 480, "
			 "\"tput\": %.3f, \"tput_min\": %.3f, \"tput_max\": %.3f }",
			 i ? ", " : "", th[i], wall, consumer, wall - consumer, 480 / 300.0 * 0.9,
			 480 / 300.0 * 0.1, rate, rate * 0.98, rate * 1.02);
		strcat(pts, one);
	}
	snprintf(buf, sizeof(buf),
		 "{ \"coordl_profile\": 1, \"complete\": %s, \"batch_size\": 16, "
		 "\"max_threads\": %d, \"elapsed\": %g, "
		 "\"dataset\": { \"bytes\": 10000000, \"items\": 1000 }, \"points\": [ %s%s ] }",
		 complete, max_threads, elapsed, pts, extra_pt ? extra_pt : "");
	return buf;
}

static void test_parse(void)
{
	static const struct { const char *from, *to, *why; } bad[] = {
		{ "\"coordl_profile\": 1", "\"coordl_profile\": 2", "version" },
		{ "\"complete\": true", "\"complete\": 1", "complete" },
		{ "\"batch_size\": 16", "\"batch_size\": 0", "batch_size" },
		{ "\"max_threads\": 4", "\"max_threads\": 4.5", "max_threads" },
		{ "\"max_threads\": 4", "\"max_threads\": 4, \"max_threads\": 8", "duplicate" },
		{ "\"elapsed\": 10", "\"elapsed\": -1", "elapsed" },
		{ "\"items\": 1000", "\"items\": \"many\"", "items" },
		{ "\"threads\": 4", "\"threads\": 0", "threads" },
		{ "\"threads\": 4", "\"threads\": 2000", "threads" },
		{ "\"samples\": 480", "\"samples\": 1e400", "" },
		{ "\"hits\": 0", "\"hits\": -3", "hits" },
		{ "\"misses\": 480, ", "", "misses" },
		{ "\"points\": [", "\"points\": {", "" },
	};
	syn__job_report_t *r = malloc(sizeof(*r));
	char msg[256], text[8192], *big;

	ok(syn__job_report_parse(report("true", 4, 10, NULL), strlen(report("true", 4, 10, NULL)),
				 NULL, r, msg, sizeof(msg)) == 0 &&
	   r->complete && r->n == 3 && r->max_threads == 4 && r->batch_size == 16 &&
	   r->dataset_items == 1000 && r->pt[1].threads == 2 && r->pt[2].misses == 480 &&
	   fabs(r->elapsed - 10) < 1e-9, "a loader's report parses (%s)", msg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *src = report("true", 4, 10, NULL), *at = strstr(src, bad[i].from);

		if (!at) {
			ok(0, "case %zu: '%s' not in the report", i, bad[i].from);
			continue;
		}
		snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - src), src, bad[i].to,
			 at + strlen(bad[i].from));
		msg[0] = '\0';
		ok(syn__job_report_parse(text, strlen(text), "r.json", r, msg, sizeof(msg)) == -1 &&
		   errno == EINVAL && r->n == 0 && strstr(msg, "r.json") && strstr(msg, bad[i].why),
		   "refused: %s -> %s: %s", bad[i].from, bad[i].to, msg);
	}
	ok(syn__job_report_parse("[1, 2]", 6, NULL, r, msg, sizeof(msg)) == -1,
	   "not an object: %s", msg);
	big = malloc(SYN__REPORT_MAX_BYTES + 2);
	memset(big, ' ', SYN__REPORT_MAX_BYTES + 1);
	big[SYN__REPORT_MAX_BYTES + 1] = '\0';
	ok(syn__job_report_parse(big, SYN__REPORT_MAX_BYTES + 1, NULL, r, msg, sizeof(msg)) == -1 &&
	   errno == EFBIG, "a text longer than any report: EFBIG (%s)", msg);
	free(big);
	{
		char pts[200 * 70] = "";
		for (int i = 0; i < SYN__REPORT_MAX_POINTS + 1; i++)
			strcat(pts, ", { \"threads\": 1, \"samples\": 1, \"wall\": 1, \"consumer\": 0, "
			       "\"stall\": 0, \"prep_time\": 0, \"fetch_time\": 0, \"storage_bytes\": 0, "
			       "\"hits\": 1, \"misses\": 0, \"tput\": 1, \"tput_min\": 1, \"tput_max\": 1 }");
		const char *src = report("true", 4, 10, pts);
		ok(syn__job_report_parse(src, strlen(src), NULL, r, msg, sizeof(msg)) == -1 &&
		   strstr(msg, "points"), "more points than a loader records: %s", msg);
	}
	free(r);
}

static void test_check(void)
{
	syn__job_report_t *r = malloc(sizeof(*r)), *g = malloc(sizeof(*g));
	syn__report_limits_t lim = { 8, 60, 1 };
	char msg[256];
	const char *src = report("true", 4, 10, NULL);

	syn__job_report_parse(src, strlen(src), NULL, g, msg, sizeof(msg));
	ok(syn__job_report_check(g, &lim, msg, sizeof(msg)) == 0, "a real report passes (%s)", msg);
	ok(syn__job_report_check(g, NULL, msg, sizeof(msg)) == 0, "with no limits too");

#define CASE(what, change, word)                                                                 \
	do {                                                                                     \
		*r = *g;                                                                         \
		change;                                                                          \
		msg[0] = '\0';                                                                   \
		ok(syn__job_report_check(r, &lim, msg, sizeof(msg)) == -1 && errno == EINVAL &&  \
		   strstr(msg, word), "refused: %s: %s", what, msg);                             \
	} while (0)
	CASE("an incomplete search", r->complete = 0, "did not finish");
	CASE("no point", r->n = 0, "no measured point");
	CASE("more threads than the node's CPUs", r->max_threads = 9, "CPUs");
	CASE("a point above max_threads", r->pt[0].threads = 5, "above max_threads");
	CASE("a point with no samples", r->pt[1].samples = 0, "nothing measured");
	CASE("a point with no wall time", r->pt[1].wall = 0, "nothing measured");
	CASE("consumer and stall beyond the windows", r->pt[0].consumer = r->pt[0].wall * 2,
	     "exceed");
	CASE("worker time no CPUs could give", r->pt[2].prep_time = 100, "worker time");
	CASE("far fewer items than samples", r->pt[0].misses = 10, "items");
	CASE("far more items than samples", r->pt[0].misses = 1e7, "items");
	CASE("a search shorter than its windows", r->elapsed = 0.1, "less than its windows");
	CASE("a search longer than the job ran", r->elapsed = 600, "longer than the job");
	CASE("an empty dataset", r->dataset_items = 0, "dataset");
	CASE("fewer dataset bytes than items", r->dataset_bytes = 10, "dataset");
#undef CASE
	lim.require_complete = 0;
	*r = *g;
	r->complete = 0;
	ok(syn__job_report_check(r, &lim, msg, sizeof(msg)) == 0,
	   "an incomplete search passes when not required (synergy-profile run -- CMD)");
	free(r);
	free(g);
}

static void test_profile(void)
{
	syn__job_report_t *r = malloc(sizeof(*r));
	syn_profile_t *p = malloc(sizeof(*p));
	char msg[256];
	double cpus[SYN_PROFILE_MAX_CPU], mem[SYN_PROFILE_MAX_MEM];
	int nc, nm;
	const char *src = report("true", 4, 10, NULL);

	syn__job_report_parse(src, strlen(src), NULL, r, msg, sizeof(msg));
	ok(syn__job_report_profile(r, 1, 0.5, p, msg, sizeof(msg)) == 0, "a profile is built (%s)",
	   msg);
	snprintf(p->key, sizeof(p->key), "img");
	{
		syn_error_t why = { "" };
		ok(syn_profile_check(p, &why) == 0, "and is valid (%s)", why.text);
	}
	ok(fabs(syn_profile_eval(p, 1, 0.5) - 1) < 1e-3, "1.0 at the share (1 cpu, 0.5 GiB): %g",
	   syn_profile_eval(p, 1, 0.5));
	/* Each worker preps 480 items in 1.44 s: 333 samples/s; the GPU
	 * takes 800; the dataset fits the cache at the share. */
	ok(fabs(syn_profile_eval(p, 3, 0.5) - 2.4) < 0.02,
	   "GPU-bound from 3 cpus: 800/333 = 2.4x (%g)", syn_profile_eval(p, 3, 0.5));
	ok(fabs(p->gpu_rate - 800) < 1, "the GPU rate is the consumer's (%g)", p->gpu_rate);
	ok(fabs(p->base_tput - 333.3) < 1, "333 samples/s at the share (%g)", p->base_tput);
	syn__grid_default(1 << 30, 0, cpus, &nc, mem, &nm);
	ok(nc == 11 && cpus[10] == 24 && nm == 5 && mem[4] == 1 && mem[2] == 0.5,
	   "default grid: 11 cpu rows to 24, dataset fractions 0..1 GiB");
	syn__grid_default(1 << 30, 64, cpus, &nc, mem, &nm);
	ok(nc == 12 && cpus[11] == 64, "a larger node adds its size to the cpu axis");
	syn__grid_default(0, 0, cpus, &nc, mem, &nm);
	ok(nm == 1 && mem[0] == 0, "an unknown dataset size: one memory column");
	r->n = 0;
	ok(syn__job_report_profile(r, 1, 0.5, p, msg, sizeof(msg)) == -1 && errno == EINVAL,
	   "no point: no profile (%s)", msg);
	free(r);
	free(p);
}

int main(void)
{
	test_parse();
	test_check();
	test_profile();
	return done_testing();
}
