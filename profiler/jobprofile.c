/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jobprofile.c: parse, check and turn into a profile the report a job's own
 * loader wrote in profiling mode (see jobprofile.h).
 *
 * The report is untrusted: it is parsed with jansson (duplicate keys
 * refused), every number must be finite and non-negative, counts must be
 * integers, and the sanity bounds below compare each point with the wall
 * clock. The bounds are loose on purpose (a real loader's windows start and
 * end between items, so its worker time may run a little past the wall
 * time); they exist to refuse reports no loader could have measured, such as
 * a worker time far beyond what the job's CPUs could give, not to judge how
 * fast a job should be.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/error.h"
#include "profiler/jobprofile.h"
#include "synergy_env.h"

/* A refusal: the reason into msg (msglen bytes), errno EINVAL, -1. */
#define fail(msg, msglen, ...) \
	syn_errbuf((msg), (msglen) > 0 ? (size_t)(msglen) : 0, EINVAL, __VA_ARGS__)

/* A required number field, finite and >= 0. */
static int num(json_t *o, const char *k, const char *where, double *out, char *msg, int msglen)
{
	json_t *v = json_object_get(o, k);
	double d;

	if (!v)
		return fail(msg, msglen, "%s: missing field '%s'", where, k);
	if (!json_is_number(v))
		return fail(msg, msglen, "%s: field '%s' must be a number", where, k);
	d = json_number_value(v);
	if (!isfinite(d) || d < 0)
		return fail(msg, msglen, "%s: field '%s' must be finite and >= 0, got %g", where, k, d);
	*out = d;
	return 0;
}

/* A required integer field in [lo, hi]. */
static int count(json_t *o, const char *k, const char *where, double lo, double hi, double *out,
                 char *msg, int msglen)
{
	json_t *v = json_object_get(o, k);

	if (!v)
		return fail(msg, msglen, "%s: missing field '%s'", where, k);
	if (!json_is_integer(v) || (double)json_integer_value(v) < lo ||
	    (double)json_integer_value(v) > hi)
		return fail(msg, msglen, "%s: field '%s' must be an integer in %.0f..%.0f", where, k,
		            lo, hi);
	*out = (double)json_integer_value(v);
	return 0;
}

int syn__job_report_parse(const char *text, size_t len, const char *name,
                          syn__job_report_t *r, char *msg, int msglen)
{
	const char *nm = name ? name : "report";
	json_error_t jerr;
	json_t *root = NULL, *ds, *arr, *c;
	double v, bytes, items;
	char where[96];
	int rv = -1;

	if (!text || !r)
		return fail(msg, msglen, "%s: no text or no report to fill", nm);
	memset(r, 0, sizeof(*r));
	if (len > SYN__REPORT_MAX_BYTES) {
		fail(msg, msglen, "%s: %zu bytes, more than a report holds (%d)", nm, len,
		     SYN__REPORT_MAX_BYTES);
		errno = EFBIG;
		return -1;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		fail(msg, msglen, "%s: line %d: %s", nm, jerr.line, jerr.text);
		goto out;
	}
	if (!json_is_object(root)) {
		fail(msg, msglen, "%s: top level must be a JSON object", nm);
		goto out;
	}
	if (count(root, "coordl_profile", nm, 0, 1e9, &v, msg, msglen) < 0)
		goto out;
	if (v != SYNERGY_PROFILE_REPORT_VERSION) {
		fail(msg, msglen, "%s: report version %.0f (this build reads %d)", nm, v,
		     SYNERGY_PROFILE_REPORT_VERSION);
		goto out;
	}
	c = json_object_get(root, "complete");
	if (!json_is_boolean(c)) {
		fail(msg, msglen, "%s: field 'complete' must be true or false", nm);
		goto out;
	}
	r->complete = json_is_true(c);
	if (count(root, "batch_size", nm, 1, 1 << 24, &v, msg, msglen) < 0)
		goto out;
	r->batch_size = (int)v;
	if (count(root, "max_threads", nm, 1, 1024, &v, msg, msglen) < 0)
		goto out;
	r->max_threads = (int)v;
	if (json_object_get(root, "elapsed") && num(root, "elapsed", nm, &r->elapsed, msg, msglen) < 0)
		goto out;
	ds = json_object_get(root, "dataset");
	if (!json_is_object(ds)) {
		fail(msg, msglen, "%s: field 'dataset' must be an object", nm);
		goto out;
	}
	snprintf(where, sizeof(where), "%.60s: dataset", nm);
	if (count(ds, "bytes", where, 0, 9007199254740992.0, &bytes, msg, msglen) < 0 ||
	    count(ds, "items", where, 0, 9007199254740992.0, &items, msg, msglen) < 0)
		goto out;
	r->dataset_bytes = (uint64_t)bytes;
	r->dataset_items = (uint64_t)items;
	arr = json_object_get(root, "points");
	if (!json_is_array(arr)) {
		fail(msg, msglen, "%s: field 'points' must be an array", nm);
		goto out;
	}
	if (json_array_size(arr) > SYN__REPORT_MAX_POINTS) {
		fail(msg, msglen, "%s: %zu points, more than %d", nm, json_array_size(arr),
		     SYN__REPORT_MAX_POINTS);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *q = json_array_get(arr, i);
		syn__report_point_t *p = &r->pt[i];

		snprintf(where, sizeof(where), "%.60s: points[%zu]", nm, i);
		if (!json_is_object(q)) {
			fail(msg, msglen, "%s: must be an object", where);
			goto out;
		}
		if (count(q, "threads", where, 1, 1024, &v, msg, msglen) < 0)
			goto out;
		p->threads = (int)v;
		if (count(q, "samples", where, 0, 9007199254740992.0, &p->samples, msg, msglen) < 0 ||
		    count(q, "storage_bytes", where, 0, 9007199254740992.0, &p->storage_bytes, msg,
		          msglen) < 0 ||
		    count(q, "hits", where, 0, 9007199254740992.0, &p->hits, msg, msglen) < 0 ||
		    count(q, "misses", where, 0, 9007199254740992.0, &p->misses, msg, msglen) < 0 ||
		    num(q, "wall", where, &p->wall, msg, msglen) < 0 ||
		    num(q, "consumer", where, &p->consumer, msg, msglen) < 0 ||
		    num(q, "stall", where, &p->stall, msg, msglen) < 0 ||
		    num(q, "prep_time", where, &p->prep_time, msg, msglen) < 0 ||
		    num(q, "fetch_time", where, &p->fetch_time, msg, msglen) < 0 ||
		    num(q, "tput", where, &p->tput, msg, msglen) < 0 ||
		    num(q, "tput_min", where, &p->tput_min, msg, msglen) < 0 ||
		    num(q, "tput_max", where, &p->tput_max, msg, msglen) < 0)
			goto out;
		r->n++;
	}
	rv = 0;
out:
	json_decref(root);
	if (rv < 0) {
		memset(r, 0, sizeof(*r));
		errno = errno == EFBIG ? EFBIG : EINVAL;
	}
	return rv;
}

int syn__job_report_check(const syn__job_report_t *r, const syn__report_limits_t *lim,
                          char *msg, int msglen)
{
	syn__report_limits_t none = { 0, 0, 0 };
	double walls = 0, samples = 0, consumer = 0;

	if (!r)
		return fail(msg, msglen, "no report");
	if (!lim)
		lim = &none;
	if (lim->require_complete && !r->complete)
		return fail(msg, msglen, "the CPU search did not finish (\"complete\": false)");
	if (r->n < 1)
		return fail(msg, msglen, "no measured point");
	if (lim->max_cpus > 0 && r->max_threads > lim->max_cpus)
		return fail(msg, msglen, "max_threads %d is more than the %d CPUs the job could use",
		            r->max_threads, lim->max_cpus);
	if (r->dataset_items < 1 || r->dataset_bytes < r->dataset_items)
		return fail(msg, msglen, "dataset of %llu items and %llu bytes",
		            (unsigned long long)r->dataset_items, (unsigned long long)r->dataset_bytes);
	for (int i = 0; i < r->n; i++) {
		const syn__report_point_t *p = &r->pt[i];
		double items = p->hits + p->misses, c = p->threads;

		if (p->threads > r->max_threads)
			return fail(msg, msglen, "points[%d]: %d threads, above max_threads %d", i,
			            p->threads, r->max_threads);
		if (!(p->samples >= 1) || !(p->wall > 0))
			return fail(msg, msglen, "points[%d]: %g samples in %g s: nothing measured", i,
			            p->samples, p->wall);
		/* The program's time between requests and its time waiting in the
		 * loader both lie inside the windows. */
		if (p->consumer + p->stall > p->wall * 1.05 + 0.05)
			return fail(msg, msglen, "points[%d]: consumer %g s + stall %g s exceed the "
			            "windows' %g s", i, p->consumer, p->stall, p->wall);
		/* c workers cannot work more than c x wall; an item that began
		 * before a window and ended in it adds at most one item's time
		 * per worker, which the slack covers. */
		if (p->prep_time + p->fetch_time > c * (p->wall * 1.5 + 0.5))
			return fail(msg, msglen, "points[%d]: %g s of worker time in %g s with %d threads",
			            i, p->prep_time + p->fetch_time, p->wall, p->threads);
		if (items < p->samples / 4 || items > 4 * p->samples + 64.0 * r->batch_size)
			return fail(msg, msglen, "points[%d]: %g items processed for %g samples", i, items,
			            p->samples);
		if (p->prep_time > 0 && !isfinite(c * items / p->prep_time))
			return fail(msg, msglen, "points[%d]: prep rate is not finite", i);
		walls += p->wall;
		samples += p->samples;
		consumer += p->consumer;
	}
	if (consumer > 0 && !isfinite(samples / consumer))
		return fail(msg, msglen, "GPU rate is not finite");
	if (r->elapsed > 0 && r->elapsed * 1.01 + 0.01 < walls)
		return fail(msg, msglen, "the search took %g s, less than its windows' %g s", r->elapsed,
		            walls);
	if (lim->max_elapsed > 0 && (r->elapsed > lim->max_elapsed + 1 || walls > lim->max_elapsed + 1))
		return fail(msg, msglen, "the search took %g s (windows %g s), longer than the job "
		            "ran (%g s)", r->elapsed, walls, lim->max_elapsed);
	return 0;
}

int syn__job_report_points(const syn__job_report_t *r, syn__job_point_t *pts, int max)
{
	int n = 0;

	for (int i = 0; i < r->n && n < max; i++, n++) {
		const syn__report_point_t *p = &r->pt[i];

		pts[n].threads = p->threads;
		pts[n].samples = p->samples;
		pts[n].consumer = p->consumer;
		pts[n].prep_time = p->prep_time;
		pts[n].fetch_time = p->fetch_time;
		pts[n].storage_bytes = p->storage_bytes;
		pts[n].items = p->hits + p->misses;
		/* Per-miss worker time only from points where every item
		 * missed: with hits, fetch_time also holds cache reads. */
		pts[n].misses = p->hits == 0 ? p->misses : 0;
	}
	return n;
}

void syn__grid_default(uint64_t dataset_bytes, int max_cpus, double *cpus, int *n_cpu,
                       double *mem_gb, int *n_mem)
{
	static const double def[] = { 1, 2, 3, 4, 5, 6, 8, 9, 12, 16, 24 };
	double d = (double)dataset_bytes / SYN__GIB;

	*n_cpu = (int)(sizeof(def) / sizeof(def[0]));
	memcpy(cpus, def, sizeof(def));
	if (max_cpus > def[*n_cpu - 1] && *n_cpu < SYN_PROFILE_MAX_CPU)
		cpus[(*n_cpu)++] = max_cpus;
	/* Cache fractions of the dataset, in GiB rounded to 1 MiB. */
	*n_mem = 0;
	for (int k = 0; k <= 4; k++) {
		double v = round(d * k / 4 * 1024) / 1024;
		if (*n_mem == 0 || v > mem_gb[*n_mem - 1])
			mem_gb[(*n_mem)++] = v;
	}
}

int syn__job_report_profile(const syn__job_report_t *r, double prop_cpus, double prop_mem_gb,
                            syn_profile_t *p, char *msg, int msglen)
{
	syn__job_point_t pts[SYN__REPORT_MAX_POINTS];
	double cpus[SYN_PROFILE_MAX_CPU], mem[SYN_PROFILE_MAX_MEM];
	syn__rates_t rates;
	int n, n_cpu, n_mem;

	if (!r || !p)
		return fail(msg, msglen, "no report or no profile to fill");
	n = syn__job_report_points(r, pts, SYN__REPORT_MAX_POINTS);
	if (syn__rates_from_job(pts, n, r->dataset_bytes, r->dataset_items, &rates) < 0)
		return fail(msg, msglen, "no point with measured prep time");
	syn__grid_default(r->dataset_bytes, r->max_threads, cpus, &n_cpu, mem, &n_mem);
	memset(p, 0, sizeof(*p));
	if (syn__model_grid(&rates, cpus, n_cpu, mem, n_mem, prop_cpus, prop_mem_gb, p, msg,
	                    msglen) < 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}
