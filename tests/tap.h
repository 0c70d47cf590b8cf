/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tap.h: a tiny Test Anything Protocol emitter for the C unit tests.
 *
 * Each test program calls plan(N) or ends with done_testing(); ok() and
 * friends print one "ok"/"not ok" line each, which automake's TAP driver
 * counts. skip_all() reports a missing prerequisite as a skip, never a pass.
 * Header-only so that every test links without an extra library.
 */
#ifndef SYN_TESTS_TAP_H
#define SYN_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap__n;
static int tap__failed;

static inline void plan(int n) { printf("1..%d\n", n); fflush(stdout); }

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("# ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
}

static inline int tap__ok(int cond, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int tap__ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	tap__n++;
	printf("%sok %d - ", cond ? "" : "not ", tap__n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond) {
		tap__failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap__ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, name) \
	do { long long g_ = (long long)(got), w_ = (long long)(want); \
	     if (!ok(g_ == w_, "%s", name)) diag("got %lld, want %lld", g_, w_); } while (0)
#define is_str(got, want, name) \
	do { const char *g_ = (got), *w_ = (want); \
	     int c_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_; \
	     if (!ok(c_, "%s", name)) diag("got '%s', want '%s'", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); } while (0)
#define is_near(got, want, tol, name) \
	do { double g_ = (got), w_ = (want), t_ = (tol); \
	     if (!ok(g_ - w_ <= t_ && w_ - g_ <= t_, "%s", name)) diag("got %g, want %g +- %g", g_, w_, t_); } while (0)

static inline void skip(int n, const char *why)
{
	for (int i = 0; i < n; i++) {
		tap__n++;
		printf("ok %d # SKIP %s\n", tap__n, why);
	}
	fflush(stdout);
}

static inline void skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	exit(0);
}

static inline int done_testing(void)
{
	printf("1..%d\n", tap__n);
	fflush(stdout);
	return tap__failed ? 1 : 0;
}

static inline void bail_out(const char *why)
{
	printf("Bail out! %s\n", why);
	fflush(stdout);
	exit(1);
}

#endif
