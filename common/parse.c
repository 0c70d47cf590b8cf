/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/parse.c: the strict parsers of common/parse.h.
 *
 * The libc converters alone accept leading spaces, signs, hex, "inf" and
 * trailing junk, and strtoull wraps "-1" around. So each grammar is checked
 * character by character here, and the converter only sees text already
 * known to be well formed: integers are accumulated by hand (overflow is
 * ERANGE), reals go to strtod once their syntax is checked.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/parse.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The run of decimal digits at s[0..n): its value in *v and its length in
 * *used (0: no digit). Overflow of uint64_t is ERANGE. */
static int scan_digits(const char *s, size_t n, uint64_t *v, size_t *used)
{
	uint64_t x = 0;
	size_t i;

	for (i = 0; i < n && is_digit(s[i]); i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (x > (UINT64_MAX - d) / 10) {
			errno = ERANGE;
			return -1;
		}
		x = x * 10 + d;
	}
	*v = x;
	*used = i;
	return 0;
}

int syn_parse_u64n(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	size_t used;

	if (!s || !out) {
		errno = EINVAL;
		return -1;
	}
	if (scan_digits(s, n, &v, &used) < 0)
		return -1;
	if (used == 0 || used != n) {
		errno = EINVAL;
		return -1;
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int syn_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return syn_parse_u64n(s, s ? strlen(s) : 0, min, max, out);
}

int syn_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	uint64_t mag;
	int64_t v;
	int neg;

	if (!s || !out) {
		errno = EINVAL;
		return -1;
	}
	/* A sign only where the range has room for it: "-0" is no count. */
	neg = s[0] == '-' && min < 0;
	if (syn_parse_u64(s + neg, 0, UINT64_MAX, &mag) < 0)
		return -1;
	if (mag > (uint64_t)INT64_MAX + (uint64_t)neg) {
		errno = ERANGE;
		return -1;
	}
	/* -(INT64_MAX + 1) without overflowing on the way. */
	v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

/* The length of the real at s[0..n) without its sign (digits, fraction,
 * exponent), or 0 when it is not one. *plain is set when it is digits only. */
static size_t real_len(const char *s, size_t n, int *plain)
{
	size_t i = 0, int_digits, frac_digits = 0;

	while (i < n && is_digit(s[i]))
		i++;
	int_digits = i;
	*plain = 1;
	if (i < n && s[i] == '.') {
		*plain = 0;
		for (i++; i < n && is_digit(s[i]); i++)
			frac_digits++;
	}
	if (int_digits == 0 && frac_digits == 0)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t e = i + 1, k;
		if (e < n && (s[e] == '+' || s[e] == '-'))
			e++;
		for (k = e; k < n && is_digit(s[k]); k++)
			;
		if (k == e)
			return 0;
		*plain = 0;
		i = k;
	}
	return i;
}

/* strtod on exactly s[0..n), known to be a well-formed real. */
static int convert_real(const char *s, size_t n, double *out)
{
	char buf[128], *end;
	double d;

	if (n >= sizeof(buf)) {
		/* No real needs this many characters but a hostile one. */
		errno = ERANGE;
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	d = strtod(buf, &end);
	/* Underflow to 0 or a denormal is the value asked for; only an
	 * overflow to infinity is out of range. */
	if (*end || !isfinite(d)) {
		errno = ERANGE;
		return -1;
	}
	*out = d;
	return 0;
}

int syn_parse_doublen(const char *s, size_t n, double min, double max, double *out)
{
	size_t neg, len;
	double d;
	int plain;

	if (!s || !out) {
		errno = EINVAL;
		return -1;
	}
	neg = n > 0 && s[0] == '-';
	len = real_len(s + neg, n - neg, &plain);
	if (len == 0 || neg + len != n) {
		errno = EINVAL;
		return -1;
	}
	if (convert_real(s, n, &d) < 0)
		return -1;
	if (!(d >= min && d <= max)) {
		errno = ERANGE;
		return -1;
	}
	*out = d;
	return 0;
}

int syn_parse_double(const char *s, double min, double max, double *out)
{
	return syn_parse_doublen(s, s ? strlen(s) : 0, min, max, out);
}

/* A size's number and unit: the number's length in *len (plain: digits
 * only) and the unit's power of two in *shift. 0, or -1 with EINVAL. */
static int scan_size(const char *s, size_t *len, int *plain, int *shift)
{
	const char *u;

	if (!s) {
		errno = EINVAL;
		return -1;
	}
	*len = real_len(s, strlen(s), plain);
	if (*len == 0) {
		errno = EINVAL;
		return -1;
	}
	u = s + *len;
	*shift = 0;
	switch (*u) {
	case 'K':
	case 'k':
		*shift = 10;
		break;
	case 'M':
	case 'm':
		*shift = 20;
		break;
	case 'G':
	case 'g':
		*shift = 30;
		break;
	case 'T':
	case 't':
		*shift = 40;
		break;
	default:
		break;
	}
	if (*shift) {
		u++;
		if (*u == 'i')
			u++;
	}
	if (*u == 'B' || *u == 'b')
		u++;
	if (*u != '\0') {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int syn_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	size_t len;
	uint64_t v, mult;
	int plain, shift;

	if (!out || scan_size(s, &len, &plain, &shift) < 0) {
		errno = EINVAL;
		return -1;
	}
	mult = (uint64_t)1 << shift;
	if (plain) {
		/* Whole numbers exactly, whatever their size. */
		if (syn_parse_u64n(s, len, 0, UINT64_MAX, &v) < 0)
			return -1;
		if (v > UINT64_MAX / mult) {
			errno = ERANGE;
			return -1;
		}
		v *= mult;
	} else {
		double d;
		if (convert_real(s, len, &d) < 0)
			return -1;
		d = floor(d * (double)mult);
		/* 2^64 is the first double past the range. */
		if (!(d < 18446744073709551616.0)) {
			errno = ERANGE;
			return -1;
		}
		v = (uint64_t)d;
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int syn_parse_size_real(const char *s, double min, double max, double *out)
{
	size_t len;
	int plain, shift;
	double d;

	if (!out || scan_size(s, &len, &plain, &shift) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (convert_real(s, len, &d) < 0)
		return -1;
	d = ldexp(d, shift);
	if (!isfinite(d) || !(d >= min && d <= max)) {
		errno = ERANGE;
		return -1;
	}
	*out = d;
	return 0;
}

int syn_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "yes", "on", "true", "1" };
	static const char *const no[] = { "no", "off", "false", "0" };
	size_t i;

	if (!s || !out) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	errno = EINVAL;
	return -1;
}

/* One pass over a CPU list: checks it and, when fn is set, reports each
 * range. Returns 0, fn's non-zero return, or -1 (EINVAL). */
static int walk_cpus(const char *s, unsigned limit, int (*fn)(unsigned, unsigned, void *),
		     void *arg)
{
	const char *p = s;

	if (*p == '\0' || (p[0] == '\n' && p[1] == '\0'))
		return 0;
	for (;;) {
		uint64_t a, b;
		size_t used;
		int rc;

		if (scan_digits(p, strlen(p), &a, &used) < 0 || used == 0 || a >= limit)
			goto bad;
		p += used;
		b = a;
		if (*p == '-') {
			p++;
			if (scan_digits(p, strlen(p), &b, &used) < 0 || used == 0 || b < a ||
			    b >= limit)
				goto bad;
			p += used;
		}
		if (fn && (rc = fn((unsigned)a, (unsigned)b, arg)) != 0)
			return rc;
		if (*p == '\0' || (p[0] == '\n' && p[1] == '\0'))
			return 0;
		if (*p != ',')
			goto bad;
		p++;
	}
bad:
	errno = EINVAL;
	return -1;
}

int syn_parse_cpus(const char *s, unsigned limit, int (*fn)(unsigned lo, unsigned hi, void *arg),
		   void *arg)
{
	if (!s) {
		errno = EINVAL;
		return -1;
	}
	if (walk_cpus(s, limit, NULL, NULL) < 0)
		return -1;
	return fn ? walk_cpus(s, limit, fn, arg) : 0;
}

int syn_key_valid(const char *key)
{
	size_t n;

	if (!key || key[0] == '\0' || key[0] == '.')
		return 0;
	for (n = 0; key[n]; n++) {
		char c = key[n];
		if (n >= SYN_KEY_MAX)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' ||
		      c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

int syn_path_ok(const char *path)
{
	const char *p, *comp;

	if (!path || path[0] != '/' || strlen(path) >= SYN_PATH_MAX)
		return 0;
	for (p = path; *p; p++) {
		unsigned char c = (unsigned char)*p;
		/* Controls, space and DEL; bytes above 127 (UTF-8 names) pass. */
		if (c <= ' ' || c == 127)
			return 0;
	}
	/* Reject "." and ".." components anywhere. */
	for (comp = path; comp && *comp;) {
		const char *slash;
		size_t clen;

		while (*comp == '/')
			comp++;
		slash = strchr(comp, '/');
		clen = slash ? (size_t)(slash - comp) : strlen(comp);
		if ((clen == 1 && comp[0] == '.') ||
		    (clen == 2 && comp[0] == '.' && comp[1] == '.'))
			return 0;
		comp = slash;
	}
	return 1;
}

int syn_user_valid(const char *name)
{
	size_t n;

	if (!name || !((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
		return 0;
	for (n = 0; name[n]; n++) {
		char c = name[n];
		if (n >= 32 ||
		    !((c >= 'a' && c <= 'z') || is_digit(c) || c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}
