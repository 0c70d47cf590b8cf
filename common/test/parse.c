/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * parse.t: the one grammar of every number, size, boolean, CPU list, key
 * and admin path (common/parse.h, common/cpus.h), tested once for every
 * program that takes them.
 *
 * These parsers stand between user-supplied values and root-run plugins,
 * so hostile inputs (paths, huge numbers, shell metacharacters) are tested
 * explicitly. Each table says for each input whether it parses and to what.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpus.h"
#include "common/parse.h"
#include "tests/tap.h"

static void test_keys(void)
{
	static const struct {
		const char *key;
		int valid;
	} t[] = {
		{ "resnet18", 1 },
		{ "a", 1 },
		{ "gnmt-v2_big.1", 1 },
		{ "A-b_c.9", 1 },
		{ "", 0 },
		{ ".hidden", 0 },
		{ "..", 0 },
		{ "../../etc/passwd", 0 },
		{ "a/b", 0 },
		{ "slash/x", 0 },
		{ "a b", 0 },
		{ "sp ace", 0 },
		{ "x;rm -rf /", 0 },
		{ "$(id)", 0 },
		{ "`id`", 0 },
		{ "k\n", 0 },
		{ "caf\xc3\xa9", 0 },
		{ "ü", 0 },
		{ "0123456789012345678901234567890123456789012345678901234567890123", 1 },
		{ "01234567890123456789012345678901234567890123456789012345678901234", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(syn_key_valid(t[i].key), t[i].valid, t[i].key);
	is_int(syn_key_valid(NULL), 0, "NULL key is invalid");
}

static void test_u64(void)
{
	static const struct {
		const char *s;
		uint64_t min, max;
		int rv, err;
		uint64_t v;
	} t[] = {
		{ "0", 0, 10, 0, 0, 0 },
		{ "10", 0, 10, 0, 0, 10 },
		{ "11", 0, 10, -1, ERANGE, 0 },
		{ "-1", 0, 10, -1, EINVAL, 0 },
		{ " 1", 0, 10, -1, EINVAL, 0 },
		{ "1k", 0, 10, -1, EINVAL, 0 },
		{ "0x10", 0, 100, -1, EINVAL, 0 },
		{ "", 0, 10, -1, EINVAL, 0 },
		{ "18446744073709551615", 0, UINT64_MAX, 0, 0, UINT64_MAX },
		{ "18446744073709551616", 0, UINT64_MAX, -1, ERANGE, 0 },
		{ "99999999999999999999999", 0, UINT64_MAX, -1, ERANGE, 0 },
	};
	size_t i;
	uint64_t v;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int rv;

		v = 12345;
		errno = 0;
		rv = syn_parse_u64(t[i].s, t[i].min, t[i].max, &v);
		if (t[i].rv == 0)
			ok(rv == 0 && v == t[i].v, "u64 '%s' parses", t[i].s);
		else
			ok(rv == -1 && errno == t[i].err && v == 12345,
			   "u64 '%s' refused with %s, output untouched", t[i].s,
			   t[i].err == ERANGE ? "ERANGE" : "EINVAL");
	}
	ok(syn_parse_u64n("1234 rest", 4, 0, 10000, &v) == 0 && v == 1234,
	   "a number inside a longer text, by length");
	ok(syn_parse_u64n("12x4", 4, 0, 10000, &v) == -1 && errno == EINVAL,
	   "every byte of that length must be a digit");
	ok(syn_parse_u64n("12", 0, 0, 10, &v) == -1 && errno == EINVAL, "zero length is no number");
}

static void test_i64(void)
{
	static const struct {
		const char *s;
		int64_t min, max;
		int ok;
		int64_t want;
	} t[] = {
		{ "1", 1, 1024, 1, 1 },
		{ "1024", 1, 1024, 1, 1024 },
		{ "0", 1, 1024, 0, 0 },
		{ "1025", 1, 1024, 0, 0 },
		{ "", 1, 1024, 0, 0 },
		{ " 4", 1, 1024, 0, 0 },
		{ "4 ", 1, 1024, 0, 0 },
		{ "+4", 1, 1024, 0, 0 },
		{ "-4", 1, 1024, 0, 0 },
		{ "-4", -10, 10, 1, -4 },
		{ "4x", 1, 1024, 0, 0 },
		{ "0x10", 0, 1024, 0, 0 },
		{ "99999999999999999999999", 0, INT64_MAX, 0, 0 },
		{ "007", 0, 10, 1, 7 },
		{ "-0", 0, 10, 0, 0 },
		{ "-9223372036854775808", INT64_MIN, 0, 1, INT64_MIN },
		{ "-9223372036854775809", INT64_MIN, 0, 0, 0 },
		{ "9223372036854775807", 0, INT64_MAX, 1, INT64_MAX },
		{ "--1", -10, 10, 0, 0 },
		{ "-", -10, 10, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int64_t v = -1;
		int rc = syn_parse_i64(t[i].s, t[i].min, t[i].max, &v);
		if (t[i].ok)
			ok(rc == 0 && v == t[i].want, "i64 '%s' = %lld", t[i].s,
			   (long long)t[i].want);
		else
			ok(rc == -1 && (errno == EINVAL || errno == ERANGE) && v == -1,
			   "i64 '%s' rejected", t[i].s);
	}
}

static void test_double(void)
{
	static const struct {
		const char *s;
		double min, max;
		int ok;
		double want;
	} t[] = {
		{ "0.5", 0, 1, 1, 0.5 },        { "1", 0, 1, 1, 1 },
		{ "-1.5", -2, 0, 1, -1.5 },     { ".5", 0, 1, 1, 0.5 },
		{ "5.", 0, 10, 1, 5 },          { "1e3", 0, 1e4, 1, 1000 },
		{ "2.5E-2", 0, 1, 1, 0.025 },   { "1e+2", 0, 1e3, 1, 100 },
		{ "007.50", 0, 10, 1, 7.5 },    { "1.5", 0, 1, 0, 0 },
		{ "-0.1", 0, 1, 0, 0 },         { "", 0, 1, 0, 0 },
		{ " 1", 0, 10, 0, 0 },          { "1 ", 0, 10, 0, 0 },
		{ "+1", 0, 10, 0, 0 },          { "inf", 0, INFINITY, 0, 0 },
		{ "nan", -1, 1, 0, 0 },         { "0x10", 0, 100, 0, 0 },
		{ "1e", 0, 10, 0, 0 },          { "1e+", 0, 10, 0, 0 },
		{ "-", -1, 1, 0, 0 },           { ".", 0, 1, 0, 0 },
		{ "1.2.3", 0, 10, 0, 0 },       { "1,5", 0, 10, 0, 0 },
		{ "1e999", 0, INFINITY, 0, 0 }, { "3x", 0, 10, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		double v = -7;
		int rc = syn_parse_double(t[i].s, t[i].min, t[i].max, &v);
		if (t[i].ok)
			ok(rc == 0 && v == t[i].want, "real '%s' = %g", t[i].s, t[i].want);
		else
			ok(rc == -1 && (errno == EINVAL || errno == ERANGE) && v == -7,
			   "real '%s' rejected", t[i].s);
	}
	ok(syn_parse_double("1.5", 0, 1, &(double){ 0 }) == -1 && errno == ERANGE,
	   "out of range is ERANGE");
	ok(syn_parse_double("1.5x", 0, 9, &(double){ 0 }) == -1 && errno == EINVAL,
	   "not a real is EINVAL");
}

static void test_sizes(void)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t want;
	} t[] = {
		{ "0", 1, 0 },
		{ "12345", 1, 12345 },
		{ "1K", 1, 1024 },
		{ "2k", 1, 2048 },
		{ "3M", 1, 3ULL << 20 },
		{ "4G", 1, 4ULL << 30 },
		{ "5T", 1, 5ULL << 40 },
		{ "512M", 1, 512ULL << 20 },
		{ "1000", 1, 1000 },
		/* Units with "i" and "B", and fractions (synergy-profile took
		 * them before coordl-pack and the loader did). */
		{ "1KB", 1, 1024 },
		{ "1.5G", 1, 3ULL << 29 },
		{ "1.5GiB", 1, 3ULL << 29 },
		{ "1.5Gi", 1, 3ULL << 29 },
		{ "4kB", 1, 4096 },
		{ "2MiB", 1, 2ULL << 20 },
		{ "100B", 1, 100 },
		{ "0.1K", 1, 102 },
		{ "1.5", 1, 1 },
		{ "1e3", 1, 1000 },
		{ "18446744073709551615", 1, UINT64_MAX },
		{ "-1", 0, 0 },
		{ "G", 0, 0 },
		{ "", 0, 0 },
		{ "1 G", 0, 0 },
		{ " 1G", 0, 0 },
		{ "1G ", 0, 0 },
		{ "8388608T", 1, 1ULL << 63 },
		{ "16777216T", 0, 0 },
		{ "18446744073709551616", 0, 0 },
		{ "1P", 0, 0 },
		{ "12X", 0, 0 },
		{ "1KIB", 0, 0 },
		{ "1iB", 0, 0 },
		{ "1BB", 0, 0 },
		{ "1GBi", 0, 0 },
		{ ".5.K", 0, 0 },
		{ "0x10", 0, 0 },
		{ "+1K", 0, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t v = 7;
		int rc = syn_parse_size(t[i].s, 0, UINT64_MAX, &v);
		if (t[i].ok)
			ok(rc == 0 && v == t[i].want, "size '%s' = %llu", t[i].s,
			   (unsigned long long)t[i].want);
		else
			ok(rc == -1 && v == 7, "size '%s' rejected", t[i].s);
	}
	{
		uint64_t v;
		ok(syn_parse_size("8388608T", 0, INT64_MAX, &v) == -1 && errno == ERANGE,
		   "a size past the caller's maximum is ERANGE");
		ok(syn_parse_size("12X", 0, INT64_MAX, &v) == -1 && errno == EINVAL,
		   "a bad suffix is EINVAL");
		ok(syn_parse_size("1K", 2048, 4096, &v) == -1 && errno == ERANGE,
		   "a size below the caller's minimum is ERANGE");
	}
	{
		double d;
		ok(syn_parse_size_real("20.8G", 0, INFINITY, &d) == 0 && d == 20.8 * 1073741824.0,
		   "a size as a real keeps its fraction of a byte");
		ok(syn_parse_size_real("1.5GiB", 0, INFINITY, &d) == 0 && d == 1.5 * 1073741824.0 &&
			   syn_parse_size_real("1000", 0, INFINITY, &d) == 0 && d == 1000,
		   "the same grammar as syn_parse_size");
		ok(syn_parse_size_real("12X", 0, INFINITY, &d) == -1 && errno == EINVAL &&
			   syn_parse_size_real("", 0, INFINITY, &d) == -1 &&
			   syn_parse_size_real("2K", 0, 1024, &d) == -1 && errno == ERANGE,
		   "and the same refusals");
	}
}

static void test_bool(void)
{
	static const struct {
		const char *s;
		int rv, v;
	} t[] = {
		{ "off", 0, 0 },  { "ON", 0, 1 },     { "no", 0, 0 },          { "yes", 0, 1 },
		{ "Yes", 0, 1 },  { "true", 0, 1 },   { "FALSE", 0, 0 },       { "1", 0, 1 },
		{ "0", 0, 0 },    { "maybe", -1, 0 }, { "off;reboot", -1, 0 }, { "", -1, 0 },
		{ " on", -1, 0 }, { "2", -1, 0 },     { "y", -1, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int v = 7;
		int rv = syn_parse_bool(t[i].s, &v);
		if (t[i].rv == 0)
			ok(rv == 0 && v == t[i].v, "boolean '%s' is %d", t[i].s, t[i].v);
		else
			ok(rv == -1 && errno == EINVAL && v == 7,
			   "boolean '%s' refused, output untouched", t[i].s);
	}
}

static void test_paths(void)
{
	static const struct {
		const char *p;
		int ok;
	} t[] = {
		{ "/var/lib/synergy", 1 },
		{ "/", 1 },
		{ "relative/dir", 0 },
		{ "/a/../etc", 0 },
		{ "/a/..", 0 },
		{ "/a/./b", 0 },
		{ "/a b", 0 },
		{ "/a\tb", 0 },
		{ "/a/..b", 1 },
		{ "", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(syn_path_ok(t[i].p), t[i].ok, t[i].p);
}

struct ranges {
	char text[128];
	int n;
};

static int collect(unsigned lo, unsigned hi, void *arg)
{
	struct ranges *r = arg;
	size_t len = strlen(r->text);

	snprintf(r->text + len, sizeof(r->text) - len, "[%u,%u]", lo, hi);
	r->n++;
	return 0;
}

static int stop_at_two(unsigned lo, unsigned hi, void *arg)
{
	return ++*(int *)arg == 2 ? 42 : 0;
}

static void test_cpu_lists(void)
{
	static const char *good[] = { "0", "0-3", "0-3,8", "1,3,5-7", "0-3\n",
				      "",  "\n",  "3,1",   "1048575" };
	static const char *bad[] = { "a",
				     "3-1",
				     "0,",
				     ",0",
				     "0--3",
				     "0-",
				     "1 2",
				     "0,,1",
				     "1\n2",
				     "1\n\n",
				     " 1",
				     "-1",
				     "99999999999999999999",
				     "1048576",
				     "0x1" };
	struct ranges r = { "", 0 };
	int calls = 0;

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		ok(syn_parse_cpus(good[i], 1u << 20, NULL, NULL) == 0, "cpu list '%s' accepted",
		   strcmp(good[i], "\n") == 0 ? "\\n" : good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(syn_parse_cpus(bad[i], 1u << 20, NULL, NULL) == -1 && errno == EINVAL,
		   "cpu list '%.20s' rejected", bad[i]);
	ok(syn_parse_cpus("0-3,8,10-11\n", 64, collect, &r) == 0 && r.n == 3 &&
		   strcmp(r.text, "[0,3][8,8][10,11]") == 0,
	   "ranges reported in order: %s", r.text);
	r.text[0] = '\0';
	r.n = 0;
	ok(syn_parse_cpus("0-3,x", 64, collect, &r) == -1 && r.n == 0,
	   "a malformed list reports no range at all");
	ok(syn_parse_cpus("8", 8, NULL, NULL) == -1 && syn_parse_cpus("7", 8, NULL, NULL) == 0,
	   "a CPU at the caller's limit is refused, below it taken");
	ok(syn_parse_cpus("1,2,3", 8, stop_at_two, &calls) == 42 && calls == 2,
	   "a callback's non-zero return stops the walk and is returned");
}

/* The cpu_set_t form (common/cpus.h). */
static void test_cpu_sets(void)
{
	char buf[16], *big;
	cpu_set_t s, back;
	int i, n = 0;

	ok(syn_cpus_parse("0-3,8,10-11", &s) == 0 && CPU_COUNT(&s) == 7, "parse a list");
	ok(syn_cpus_parse("", &s) == 0 && CPU_COUNT(&s) == 0, "empty list is the empty set");
	ok(syn_cpus_parse("1\n", &s) == 0 && CPU_ISSET(1, &s), "trailing newline accepted");
	ok(syn_cpus_parse("1\n2", &s) < 0, "text after the newline refused");
	ok(syn_cpus_parse("3-1", &s) < 0 && errno == EINVAL, "reversed range refused");
	ok(syn_cpus_parse("99999999999999999999", &s) < 0, "overflowing number refused");
	ok(syn_cpus_parse("0-1,4096", &s) < 0 && CPU_COUNT(&s) == 0,
	   "a CPU beyond a cpu_set_t refused, the set left empty");
	if (syn_cpus_parse("0-9", &s) < 0)
		bail_out("0-9");
	ok(syn_cpus_format(&s, buf, 3) < 0 && errno == ENAMETOOLONG, "short buffer refused");
	ok(syn_cpus_format(&s, buf, sizeof(buf)) == 0 && strcmp(buf, "0-9") == 0,
	   "a range formats as one");
	/* A fragmented list of a large node: every other CPU up to 1022 is far
	 * longer than the 256-byte buffers that once truncated it. */
	CPU_ZERO(&s);
	for (i = 0; i < CPU_SETSIZE; i += 2) {
		CPU_SET(i, &s);
		n++;
	}
	big = syn_cpus_format_alloc(&s);
	ok(big && strlen(big) > 2000, "a fragmented 512-CPU list formats whole (%zu bytes)",
	   big ? strlen(big) : 0);
	ok(big && syn_cpus_parse(big, &back) == 0 && CPU_EQUAL(&s, &back) && CPU_COUNT(&back) == n,
	   "and parses back to the same %d CPUs", n);
	free(big);
}

static void test_users(void)
{
	static const struct {
		const char *u;
		int ok;
	} t[] = {
		{ "nobody", 1 },
		{ "_svc", 1 },
		{ "a.b-c_9", 1 },
		{ "Root", 0 },
		{ "9lives", 0 },
		{ "", 0 },
		{ "a b", 0 },
		{ "abcdefghijklmnopqrstuvwxyz012345", 1 },
		{ "abcdefghijklmnopqrstuvwxyz0123456", 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(syn_user_valid(t[i].u), t[i].ok, t[i].u);
}

int main(void)
{
	test_keys();
	test_u64();
	test_i64();
	test_double();
	test_sizes();
	test_bool();
	test_paths();
	test_cpu_lists();
	test_cpu_sets();
	test_users();
	return done_testing();
}
