/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rng.h: small deterministic random number generation for the loader.
 *
 * Every random decision (shuffle, crop, flip) is derived from a counter-based
 * hash of (seed, epoch, index, purpose), so results never depend on which
 * thread did the work or in which order. splitmix64 is the mixer; a
 * coordl__rng_t stream is seeded from such a hash when a function needs
 * several numbers.
 */
#ifndef COORDL_RNG_H
#define COORDL_RNG_H

#include <stdint.h>

static inline uint64_t coordl__mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Hash of a tuple; distinct `purpose` values give independent streams. */
static inline uint64_t coordl__hash4(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t purpose)
{
	uint64_t h = coordl__mix64(seed ^ 0x5851f42d4c957f2dULL);
	h = coordl__mix64(h ^ epoch);
	h = coordl__mix64(h ^ index);
	return coordl__mix64(h ^ purpose);
}

typedef struct coordl__rng {
	uint64_t s;
} coordl__rng_t;

static inline void coordl__rng_seed(coordl__rng_t *r, uint64_t seed) { r->s = seed; }

static inline uint64_t coordl__rng_next(coordl__rng_t *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	uint64_t z = r->s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double coordl__rng_uniform(coordl__rng_t *r)
{
	return (double)(coordl__rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0, without modulo bias. */
static inline uint64_t coordl__rng_below(coordl__rng_t *r, uint64_t n)
{
	uint64_t lim = -n % n;
	uint64_t x;
	do
		x = coordl__rng_next(r);
	while (x < lim);
	return x % n;
}

/* Purposes for coordl__hash4. */
enum {
	COORDL__RNG_SHUFFLE = 1,
	COORDL__RNG_AUGMENT = 2,
	COORDL__RNG_REPLACE = 3,
};

#endif
