/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_cache.c: libFuzzer entry point for the validation of a shared cache
 * segment (loader/cache.c). Every process of a job can write the segment,
 * so its header and index are untrusted: cache.c promises that a segment
 * poisoned in any way is either refused at attach (with errno and a
 * reason) or gives at worst a wrong item, never an access outside the
 * mapping, whatever lookups, insertions and bound changes follow.
 *
 * Input: byte 0 picks the item count (1..64), byte 1 how many items the
 * creator stores, byte 2 the bound changes to run; then 4-byte records
 * (16-bit little-endian offset, kind, argument) that poison the segment
 * image (header, attach slots, index, start of the data) after the creator
 * filled it, before a second "process" attaches to it. The image is an
 * exact-size heap buffer, so under ASan any access beyond it is a crash;
 * every lookup is also checked to point inside it.
 *
 * Fuzzed by tests/fuzz/run-fuzz.sh (target "cache"); `make check` replays
 * its seeds, tests/fuzz/corpus/cache/, through tests/fuzz/replay.c.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader/cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t pattern(size_t i, size_t k)
{
	return (uint8_t)(i * 131 + k * 7 + 1);
}

/* Look up every item (and a few beyond): a hit must lie inside the image. */
static void lookups(coordl__cache_t *c, const uint8_t *img, size_t len, size_t nitems)
{
	for (size_t i = 0; i < nitems + 3; i++) {
		coordl__cache_ticket_t t;
		size_t l = 0;
		const uint8_t *p = coordl__cache_get(c, i, &l, &t);
		volatile uint8_t sink = 0;

		if (!p)
			continue;
		if (p < img || l > len || p + l > img + len || l == 0)
			abort();
		for (size_t k = 0; k < l; k++)
			sink ^= p[k];
		(void)sink;
		coordl__cache_done(c, &t);
	}
}

static void stores(coordl__cache_t *c, size_t nitems)
{
	uint8_t item[64];

	for (size_t i = 0; i < nitems; i++) {
		size_t l = i % 64 + 1;
		for (size_t k = 0; k < l; k++)
			item[k] = pattern(i, k);
		coordl__cache_put(c, i, item, l);
	}
}

static void poison(uint8_t *img, size_t len, const uint8_t *rec)
{
	size_t off = (size_t)rec[0] | (size_t)rec[1] << 8;
	uint64_t v;

	switch (rec[2] % 6) {
	case 0: /* one byte */
		if (off < len)
			img[off] = rec[3];
		return;
	case 1: v = ~0ULL; break;
	case 2: v = (uint64_t)rec[3] << 56; break;
	case 3: v = rec[3]; break;
	case 4: v = (uint64_t)len - rec[3]; break;          /* near the end */
	default: v = (uint64_t)rec[3] << 32 | 0xfffffff0u; break;
	}
	off &= ~(size_t)7;
	if (off + 8 <= len)
		memcpy(img + off, &v, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t nitems, nfill, len, dbytes;
	uint8_t *img;
	coordl__cache_t *c;
	coordl_error_t err;
	const uint64_t sig = 0x5eed;

	if (size < 3)
		return 0;
	nitems = data[0] % 64 + 1;
	nfill = data[1] % (nitems + 1);
	dbytes = nitems * 64;
	if (!(len = coordl__cache_image_size(nitems, dbytes)) || !(img = malloc(len)))
		abort();
	/* The creator lays out a valid segment and stores some items. */
	if (!(c = coordl__cache_image(img, len, 1, len, nitems, dbytes, sig, &err)))
		abort();
	stores(c, nfill);
	coordl__cache_detach(c);

	for (size_t r = 3; r + 4 <= size; r += 4)
		poison(img, len, data + r);

	/* Another process attaches to the poisoned segment. */
	memset(&err, 0, sizeof(err));
	errno = 0;
	if (!(c = coordl__cache_image(img, len, 0, 0, nitems, dbytes, sig, &err))) {
		if ((errno != EBUSY && errno != EINVAL) || !err.text[0])
			abort();
		free(img);
		return 0;
	}
	lookups(c, img, len, nitems);
	stores(c, nitems);
	lookups(c, img, len, nitems);
	for (int k = 0; k < 3; k++) {
		/* Bound changes chosen by byte 2: lower, raise, to 0 and back. */
		static const uint64_t frac[] = { 0, 1, 2, 3 };
		uint64_t b = ((data[2] >> (2 * k)) & 3) == 3 ? len : len * frac[(data[2] >> (2 * k)) & 3] / 4;
		coordl__cache_set_bound(c, b);
		lookups(c, img, len, nitems);
		stores(c, nitems);
		lookups(c, img, len, nitems);
		/* The room for data never exceeds the image, whatever the bound. */
		if (coordl__cache_capacity(c) > len)
			abort();
	}
	coordl__cache_detach(c);
	free(img);
	return 0;
}
