/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/profile_json.c: the JSON reader and writer of syn_profile_t (the
 * layout in common/profile.h), built on jansson.
 *
 * Reading is strict about what the schema promises and lenient about what
 * it does not: a required field that is missing, of the wrong type or out
 * of range is an error naming the file and the field; an unknown top-level
 * field is ignored, so a later minor addition does not break older readers
 * of the same schema version. The schema number itself must match exactly.
 * The parsed profile is filled into a local copy and handed to the caller
 * only after syn_profile_check() accepted it, so a caller never sees half
 * of a file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/file.h"
#include "common/store.h"

/* Doubles up to 2^53 with no fraction are written as JSON integers. */
#define EXACT_INT_MAX 9007199254740992.0

static const char *nm(const char *name)
{
	return name ? name : "<string>";
}

/* Fetch a number field; `required` decides whether absence is an error. */
static int get_number(json_t *obj, const char *field, const char *where, int required,
                      double *out, const char *name, syn_error_t *err)
{
	json_t *v = json_object_get(obj, field);
	if (!v) {
		if (required)
			return syn_errprintf(err, EINVAL, "%s: missing field '%s%s'", nm(name),
					     where, field);
		return 0;
	}
	if (!json_is_number(v))
		return syn_errprintf(err, EINVAL, "%s: field '%s%s' must be a number", nm(name),
				     where, field);
	double d = json_number_value(v);
	if (!isfinite(d) || d < 0)
		return syn_errprintf(err, EINVAL,
				     "%s: field '%s%s' must be finite and >= 0, got %g", nm(name),
				     where, field, d);
	*out = d;
	return 0;
}

static int get_string(json_t *obj, const char *field, int required, char *out, size_t outlen,
                      const char *name, syn_error_t *err)
{
	json_t *v = json_object_get(obj, field);
	if (!v) {
		if (required)
			return syn_errprintf(err, EINVAL, "%s: missing field '%s'", nm(name),
					     field);
		return 0;
	}
	if (!json_is_string(v))
		return syn_errprintf(err, EINVAL, "%s: field '%s' must be a string", nm(name),
				     field);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n >= outlen || strlen(s) != n)
		return syn_errprintf(err, EINVAL,
				     "%s: field '%s' is longer than %zu bytes or contains NUL",
				     nm(name), field, outlen - 1);
	memcpy(out, s, n + 1);
	return 0;
}

/* A JSON array of 1..max numbers >= 0 into out; returns its length or -1. */
static int get_axis(json_t *obj, const char *field, int max, double *out,
                    const char *name, syn_error_t *err)
{
	json_t *a = json_object_get(obj, field);
	if (!a)
		return syn_errprintf(err, EINVAL, "%s: missing field '%s'", nm(name), field);
	if (!json_is_array(a))
		return syn_errprintf(err, EINVAL, "%s: field '%s' must be an array", nm(name),
				     field);
	size_t n = json_array_size(a);
	if (n < 1 || n > (size_t)max)
		return syn_errprintf(err, EINVAL, "%s: field '%s' must have 1..%d entries, has %zu",
				     nm(name), field, max, n);
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_number(v))
			return syn_errprintf(err, EINVAL, "%s: field '%s[%zu]' must be a number",
					     nm(name), field, i);
		out[i] = json_number_value(v);
		if (!isfinite(out[i]) || out[i] < 0)
			return syn_errprintf(err, EINVAL,
					     "%s: field '%s[%zu]' must be finite and >= 0",
					     nm(name), field, i);
		if (i > 0 && out[i] <= out[i - 1])
			return syn_errprintf(err, EINVAL, "%s: field '%s' must be strictly "
					     "increasing (entry %zu)", nm(name), field, i);
	}
	return (int)n;
}

static int get_count(json_t *obj, const char *field, const char *where, uint64_t *out,
                     const char *name, syn_error_t *err)
{
	json_t *v = json_object_get(obj, field);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return syn_errprintf(err, EINVAL, "%s: field '%s%s' must be an integer >= 0",
				     nm(name), where, field);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_tree(json_t *root, const char *name, syn_profile_t *p, syn_error_t *err)
{
	if (!json_is_object(root))
		return syn_errprintf(err, EINVAL, "%s: top level must be a JSON object", nm(name));

	json_t *schema = json_object_get(root, "schema");
	if (!schema)
		return syn_errprintf(err, EINVAL, "%s: missing field 'schema'", nm(name));
	if (!json_is_integer(schema))
		return syn_errprintf(err, EINVAL, "%s: field 'schema' must be an integer",
				     nm(name));
	if (json_integer_value(schema) != SYN_PROFILE_SCHEMA)
		return syn_errprintf(err, EPROTONOSUPPORT, "%s: schema version %lld is not "
				     "supported (this build reads %d)", nm(name),
				     (long long)json_integer_value(schema), SYN_PROFILE_SCHEMA);

	if (get_string(root, "key", 1, p->key, sizeof(p->key), name, err) < 0)
		return -1;
	if (!syn_key_valid(p->key))
		return syn_errprintf(err, EINVAL,
				     "%s: field 'key' (\"%s\") must be 1..%d of [A-Za-z0-9_.-], "
				     "not starting with '.'",
				     nm(name), p->key, SYN_PROFILE_KEY_MAX);
	if (get_string(root, "model", 0, p->model, sizeof(p->model), name, err) < 0 ||
	    get_string(root, "machine", 0, p->machine, sizeof(p->machine), name, err) < 0 ||
	    get_string(root, "date", 0, p->date, sizeof(p->date), name, err) < 0 ||
	    get_string(root, "tool", 0, p->tool, sizeof(p->tool), name, err) < 0)
		return -1;

	if ((p->n_cpu = get_axis(root, "cpus", SYN_PROFILE_MAX_CPU, p->cpus, name, err)) < 0)
		return -1;
	if (p->cpus[0] <= 0)
		return syn_errprintf(err, EINVAL, "%s: field 'cpus[0]' must be > 0", nm(name));
	if ((p->n_mem = get_axis(root, "mem_gb", SYN_PROFILE_MAX_MEM, p->mem_gb, name, err)) < 0)
		return -1;

	json_t *t = json_object_get(root, "tput");
	if (!t)
		return syn_errprintf(err, EINVAL, "%s: missing field 'tput'", nm(name));
	if (!json_is_array(t) || json_array_size(t) != (size_t)p->n_cpu)
		return syn_errprintf(err, EINVAL, "%s: field 'tput' must be an array of %d rows "
				     "(one per cpus entry)", nm(name), p->n_cpu);
	for (int i = 0; i < p->n_cpu; i++) {
		json_t *row = json_array_get(t, (size_t)i);
		if (!json_is_array(row) || json_array_size(row) != (size_t)p->n_mem)
			return syn_errprintf(err, EINVAL,
					     "%s: field 'tput[%d]' must be an array of %d numbers "
					     "(one per mem_gb entry)",
					     nm(name), i, p->n_mem);
		for (int j = 0; j < p->n_mem; j++) {
			json_t *v = json_array_get(row, (size_t)j);
			double d = json_is_number(v) ? json_number_value(v) : -1;
			if (!json_is_number(v) || !isfinite(d) || d < 0)
				return syn_errprintf(err, EINVAL, "%s: field 'tput[%d][%d]' must "
						     "be a number >= 0", nm(name), i, j);
			p->tput[i][j] = d;
		}
	}

	if (get_number(root, "prop_cpus", "", 1, &p->prop_cpus, name, err) < 0 ||
	    get_number(root, "prop_mem_gb", "", 1, &p->prop_mem_gb, name, err) < 0 ||
	    get_number(root, "base_tput", "", 0, &p->base_tput, name, err) < 0)
		return -1;

	json_t *rates = json_object_get(root, "rates");
	if (rates) {
		if (!json_is_object(rates))
			return syn_errprintf(err, EINVAL, "%s: field 'rates' must be an object",
					     nm(name));
		if (get_number(rates, "gpu", "rates.", 0, &p->gpu_rate, name, err) < 0 ||
		    get_number(rates, "prep_per_core", "rates.", 0, &p->prep_rate_per_core, name, err) < 0 ||
		    get_number(rates, "fetch_storage_bps", "rates.", 0, &p->fetch_storage_bps, name, err) < 0 ||
		    get_number(rates, "fetch_memory_bps", "rates.", 0, &p->fetch_memory_bps, name, err) < 0 ||
		    get_number(rates, "fetch_overlap", "rates.", 0, &p->fetch_overlap, name, err) < 0 ||
		    get_number(rates, "fetch_latency_s", "rates.", 0, &p->fetch_latency_s, name, err) < 0 ||
		    get_number(rates, "fetch_concurrency", "rates.", 0, &p->fetch_concurrency, name, err) < 0 ||
		    get_number(rates, "fetch_miss_s", "rates.", 0, &p->fetch_miss_s, name, err) < 0)
			return -1;
		if (p->fetch_overlap > 1)
			return syn_errprintf(err, EINVAL,
					     "%s: field 'rates.fetch_overlap' must be a number "
					     "in 0..1",
					     nm(name));
	}
	json_t *owner = json_object_get(root, "owner");
	if (owner) {
		if (!json_is_integer(owner) || json_integer_value(owner) < 0 ||
		    json_integer_value(owner) > (json_int_t)UINT32_MAX)
			return syn_errprintf(err, EINVAL,
					     "%s: field 'owner' must be a uid (an integer "
					     "in 0..%u)",
					     nm(name), (unsigned)UINT32_MAX);
		p->has_owner = 1;
		p->owner = (uint32_t)json_integer_value(owner);
	}
	json_t *ck = json_object_get(root, "checkpoint");
	if (ck) {
		double batch = 0;
		if (!json_is_object(ck))
			return syn_errprintf(err, EINVAL, "%s: field 'checkpoint' must be an object",
					     nm(name));
		if (get_count(ck, "state_bytes", "checkpoint.", &p->ckpt_state_bytes, name, err) < 0 ||
		    get_number(ck, "batch", "checkpoint.", 0, &batch, name, err) < 0 ||
		    get_number(ck, "snapshot_s", "checkpoint.", 0, &p->ckpt_snapshot_s, name, err) < 0 ||
		    get_number(ck, "persist_s", "checkpoint.", 0, &p->ckpt_persist_s, name, err) < 0 ||
		    get_number(ck, "overhead_s", "checkpoint.", 0, &p->ckpt_overhead_s, name, err) < 0)
			return -1;
		if (batch != floor(batch) || batch > 1e9)
			return syn_errprintf(err, EINVAL, "%s: field 'checkpoint.batch' must be an "
					     "integer in 0..1000000000", nm(name));
		p->ckpt_batch = (int)batch;
	}
	json_t *ds = json_object_get(root, "dataset");
	if (ds) {
		if (!json_is_object(ds))
			return syn_errprintf(err, EINVAL, "%s: field 'dataset' must be an object",
					     nm(name));
		if (get_count(ds, "bytes", "dataset.", &p->dataset_bytes, name, err) < 0 ||
		    get_count(ds, "items", "dataset.", &p->dataset_items, name, err) < 0)
			return -1;
	}

	syn_error_t why;
	if (syn_profile_check(p, &why) < 0)
		return syn_errprintf(err, EINVAL, "%s: %s", nm(name), why.text);
	return 0;
}

int syn_profile_parse(const char *text, size_t len, const char *name,
                      syn_profile_t *p, syn_error_t *err)
{
	int rv = -1;
	json_t *root = NULL;
	json_error_t jerr;
	syn_profile_t *tmp = NULL;

	if (!text || !p) {
		syn_errprintf(err, EINVAL, "%s: no text or no profile to fill", nm(name));
		goto out;
	}
	/* The profile is ~20 KiB at most; keep it off the caller's stack
	 * (slurmctld threads have small stacks). */
	if (!(tmp = calloc(1, sizeof(*tmp)))) {
		syn_errprintf(err, ENOMEM, "%s: out of memory", nm(name));
		goto out;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		syn_errprintf(err, EINVAL, "%s: line %d: %s", nm(name), jerr.line, jerr.text);
		goto out;
	}
	if (parse_tree(root, name, tmp, err) < 0)
		goto out;
	*p = *tmp;
	rv = 0;
out:
	{
		int e = errno;
		json_decref(root);
		free(tmp);
		errno = e;
	}
	return rv;
}

int syn_profile_read_file(const char *path, syn_profile_t *p, syn_error_t *err)
{
	char *buf;
	size_t len;
	int rv;

	if (!path || !p)
		return syn_errprintf(err, EINVAL, "no path or no profile to fill");
	/* The store is an admin's directory: a link in it is followed. */
	if (!(buf = syn_file_read(AT_FDCWD, path, SYN_PROFILE_FILE_MAX,
				  SYN_FILE_FOLLOW | SYN_FILE_REGULAR, &len))) {
		if (errno == EFBIG)
			return syn_errprintf(err, EFBIG, "%s: larger than any profile (%d bytes)",
					     path, SYN_PROFILE_FILE_MAX);
		if (errno == EINVAL)
			return syn_errprintf(err, EINVAL, "%s: not a regular file", path);
		return syn_errprintf(err, errno, "%s: %s", path, strerror(errno));
	}
	rv = syn_profile_parse(buf, len, path, p, err);
	{
		int e = errno;
		free(buf);
		errno = e;
	}
	return rv;
}

/* A number as a JSON value: integers exactly, other values as reals. */
static json_t *num(double d)
{
	if (d == floor(d) && fabs(d) < EXACT_INT_MAX)
		return json_integer((json_int_t)d);
	return json_real(d);
}

/* Does d survive a trip through "%.15g"? Then 15 digits suffice for it. */
static int short_ok(double d)
{
	char s[40];
	snprintf(s, sizeof(s), "%.15g", d);
	return strtod(s, NULL) == d;
}

/* The text fields are fixed-size arrays that a caller may have filled to
 * the brim: bound every read by the array, and report one that is not
 * UTF-8 (JSON cannot carry it, and jansson would refuse it) by name. */
static const char *bad_string(const syn_profile_t *p)
{
	const struct { const char *name, *v; size_t cap; } f[] = {
		{ "model", p->model, sizeof(p->model) },
		{ "machine", p->machine, sizeof(p->machine) },
		{ "date", p->date, sizeof(p->date) },
		{ "tool", p->tool, sizeof(p->tool) },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (strnlen(f[i].v, f[i].cap) == f[i].cap)
			return f[i].name;
		json_t *t = json_string(f[i].v);
		if (!t)
			return f[i].name;
		json_decref(t);
	}
	return NULL;
}

static int set_new(json_t *obj, const char *k, json_t *v, int *okp)
{
	if (!v || json_object_set_new(obj, k, v) < 0)
		*okp = 0;
	return *okp;
}

char *syn_profile_format(const syn_profile_t *p, syn_error_t *err)
{
	char *text = NULL;
	syn_error_t why;
	json_t *root = NULL;
	int good = 1, short_digits = 1;

	if (!p) {
		syn_errprintf(err, EINVAL, "no profile");
		goto out;
	}
	if (syn_profile_check(p, &why) < 0) {
		syn_errprintf(err, EINVAL, "profile '%.64s': %s", p->key, why.text);
		goto out;
	}
	const char *bad = bad_string(p);
	if (bad) {
		syn_errprintf(err, EINVAL,
			      "profile '%.64s': field '%s' is not NUL-terminated UTF-8 text",
			      p->key, bad);
		goto out;
	}
	root = json_object();
	json_t *cpus = json_array(), *mem = json_array(), *tput = json_array();
	set_new(root, "schema", json_integer(SYN_PROFILE_SCHEMA), &good);
	set_new(root, "key", json_string(p->key), &good);
	set_new(root, "model", json_string(p->model), &good);
	set_new(root, "cpus", cpus, &good);
	set_new(root, "mem_gb", mem, &good);
	set_new(root, "tput", tput, &good);
	if (!good)
		goto nomem;
	for (int i = 0; i < p->n_cpu; i++) {
		good &= json_array_append_new(cpus, num(p->cpus[i])) == 0;
		short_digits &= short_ok(p->cpus[i]);
	}
	for (int j = 0; j < p->n_mem; j++) {
		good &= json_array_append_new(mem, num(p->mem_gb[j])) == 0;
		short_digits &= short_ok(p->mem_gb[j]);
	}
	for (int i = 0; i < p->n_cpu; i++) {
		json_t *row = json_array();
		good &= json_array_append_new(tput, row) == 0;
		for (int j = 0; good && j < p->n_mem; j++) {
			good &= json_array_append_new(row, num(p->tput[i][j])) == 0;
			short_digits &= short_ok(p->tput[i][j]);
		}
	}
	double scalars[] = { p->prop_cpus, p->prop_mem_gb, p->base_tput, p->gpu_rate,
	                     p->prep_rate_per_core, p->fetch_storage_bps, p->fetch_memory_bps,
	                     p->fetch_overlap, p->fetch_latency_s, p->fetch_concurrency,
	                     p->fetch_miss_s };
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
		short_digits &= short_ok(scalars[i]);
	set_new(root, "prop_cpus", num(p->prop_cpus), &good);
	set_new(root, "prop_mem_gb", num(p->prop_mem_gb), &good);
	set_new(root, "base_tput", num(p->base_tput), &good);
	json_t *rates = json_object(), *ds = json_object();
	set_new(root, "rates", rates, &good);
	set_new(root, "dataset", ds, &good);
	if (!good)
		goto nomem;
	set_new(rates, "gpu", num(p->gpu_rate), &good);
	set_new(rates, "prep_per_core", num(p->prep_rate_per_core), &good);
	set_new(rates, "fetch_storage_bps", num(p->fetch_storage_bps), &good);
	set_new(rates, "fetch_memory_bps", num(p->fetch_memory_bps), &good);
	/* Optional (added after schema 1 shipped): written only when fitted,
	 * so profiles of the serial model read and write as before. */
	if (p->fetch_overlap > 0)
		set_new(rates, "fetch_overlap", num(p->fetch_overlap), &good);
	if (p->fetch_miss_s > 0)
		set_new(rates, "fetch_miss_s", num(p->fetch_miss_s), &good);
	if (p->fetch_latency_s > 0 || p->fetch_concurrency > 0) {
		set_new(rates, "fetch_latency_s", num(p->fetch_latency_s), &good);
		set_new(rates, "fetch_concurrency", num(p->fetch_concurrency), &good);
	}
	set_new(ds, "bytes", json_integer((json_int_t)p->dataset_bytes), &good);
	set_new(ds, "items", json_integer((json_int_t)p->dataset_items), &good);
	set_new(root, "machine", json_string(p->machine), &good);
	set_new(root, "date", json_string(p->date), &good);
	set_new(root, "tool", json_string(p->tool), &good);
	/* Optional: only profiles measured in a user's job have an owner. */
	if (p->has_owner)
		set_new(root, "owner", json_integer((json_int_t)p->owner), &good);
	/* Optional: only profiles measured with --ckpt-bytes. */
	if (p->ckpt_state_bytes) {
		json_t *ck = json_object();
		set_new(root, "checkpoint", ck, &good);
		if (!good)
			goto nomem;
		set_new(ck, "state_bytes", json_integer((json_int_t)p->ckpt_state_bytes), &good);
		set_new(ck, "batch", json_integer(p->ckpt_batch), &good);
		set_new(ck, "snapshot_s", num(p->ckpt_snapshot_s), &good);
		set_new(ck, "persist_s", num(p->ckpt_persist_s), &good);
		set_new(ck, "overhead_s", num(p->ckpt_overhead_s), &good);
		short_digits &= short_ok(p->ckpt_snapshot_s) & short_ok(p->ckpt_persist_s) &
		                short_ok(p->ckpt_overhead_s);
	}
	if (!good)
		goto nomem;
	/* Profiles the profiler writes carry rounded values, which 15 digits
	 * show as typed; anything else gets the 17 digits that round-trip
	 * every double. */
	size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER |
	               JSON_REAL_PRECISION(short_digits ? 15 : 17);
	char *body = json_dumps(root, flags);
	if (!body)
		goto nomem;
	size_t n = strlen(body);
	if ((text = malloc(n + 2))) {
		memcpy(text, body, n);
		text[n] = '\n';
		text[n + 1] = '\0';
	}
	free(body);
	if (!text)
		goto nomem;
	goto out;
nomem:
	syn_errprintf(err, ENOMEM, "profile '%.64s': out of memory formatting JSON", p->key);
out:
	{
		int e = errno;
		json_decref(root);
		errno = e;
	}
	return text;
}
