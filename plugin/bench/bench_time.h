/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_time.h: the clocks and the sort the plugin benchmarks time their
 * calls with (lend-bench, decide-bench).
 */
#ifndef SYN_PLUGIN_BENCH_TIME_H
#define SYN_PLUGIN_BENCH_TIME_H

#include <time.h>

/* Monotonic wall time, microseconds. */
static inline double bench_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* This process's CPU time (user and system, all threads), microseconds. */
static inline double bench_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* qsort's comparison of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
