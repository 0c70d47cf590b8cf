/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prep.c (test): the JPEG prep stage against a straightforward reference.
 *
 * The reference decodes the whole image at full resolution (libjpeg, no
 * DCT scaling, no cropping) and resamples the same crop box with a direct,
 * table-free evaluation of the antialiased bilinear (triangle) filter in
 * double precision. The fast path decodes at a reduced DCT scale and only
 * the crop's region, so the two differ by JPEG's reduced-size IDCT and
 * float rounding; the tolerance below states how much that may be.
 * Also: determinism, flip, eval geometry, grayscale and CMYK/YCCK, every
 * kind of corrupt input plus a mutation loop, NHWC u8 vs NCHW f32, the
 * synthetic mode, and parameter validation.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "coordl.h"
#include "loader/prep.h"
#include "loader/prep_internal.h"
#include "loader/test/prep_jpeg.h"
#include "tests/tap.h"

/* Mean absolute error over all samples and channels, in 8-bit units, and
 * the largest single difference the fast path may show against the
 * reference. The mean bounds the overall bias of reduced-scale decoding;
 * the max allows for JPEG ringing at sharp edges, which the reduced IDCT
 * reproduces differently from full decode plus filtering. */
#define TOL_MEAN 2.0
#define TOL_MAX 32.0

static coordl__prep_params_t params(int mode, int layout, int out)
{
	coordl__prep_params_t p = {
		.out_size = out, .layout = layout, .mode = mode,
		.scale_min = 0.08f, .scale_max = 1.0f,
		.ratio_min = 3.0f / 4.0f, .ratio_max = 4.0f / 3.0f,
		.flip_prob = 0.5f,
		.mean = { 0.485f, 0.456f, 0.406f }, .std = { 0.229f, 0.224f, 0.225f },
	};
	return p;
}

static double tri(double d)
{
	d = fabs(d);
	return d < 1.0 ? 1.0 - d : 0.0;
}

/* Reference resample of box from rgb (w x h) to out x out RGB doubles,
 * written flipped when box->flip. */
static void reference(const uint8_t *rgb, int w, const coordl__prep_box_t *b, int out, double *dst)
{
	double sx = b->bw / out, sy = b->bh / out;
	double fx = sx > 1 ? sx : 1, fy = sy > 1 ? sy : 1;

	for (int oy = 0; oy < out; oy++) {
		double cy = b->y + (oy + 0.5) * sy;
		for (int ox = 0; ox < out; ox++) {
			double cx = b->x + (ox + 0.5) * sx;
			double acc[3] = { 0, 0, 0 }, wsum = 0;
			/* Only pixels within one filter radius have weight. */
			int y0 = (int)floor(cy - fy) - 1, y1 = (int)ceil(cy + fy) + 1;
			int x0 = (int)floor(cx - fx) - 1, x1 = (int)ceil(cx + fx) + 1;
			y0 = y0 < b->ry0 ? b->ry0 : y0;
			y1 = y1 > b->ry1 ? b->ry1 : y1;
			x0 = x0 < b->rx0 ? b->rx0 : x0;
			x1 = x1 > b->rx1 ? b->rx1 : x1;
			for (int y = y0; y < y1; y++) {
				double wy = tri((y + 0.5 - cy) / fy);
				for (int x = x0; x < x1; x++) {
					double wx = tri((x + 0.5 - cx) / fx);
					const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
					for (int c = 0; c < 3; c++)
						acc[c] += wx * wy * p[c];
					wsum += wx * wy;
				}
			}
			int dx = b->flip ? out - 1 - ox : ox;
			for (int c = 0; c < 3; c++)
				dst[((size_t)oy * out + dx) * 3 + c] = acc[c] / wsum;
		}
	}
}

struct err_stats {
	double sum, max;
	long n;
};

/* Run prep (NHWC u8) and the reference on one image and seed; accumulate. */
static int compare_one(coordl__prep_ctx_t *ctx, const coordl__prep_params_t *p, const uint8_t *jpg,
		       size_t len, uint64_t seed, struct err_stats *st)
{
	int w, h, out = p->out_size, rv = -1;
	uint8_t *rgb = tj_decode_rgb(jpg, len, &w, &h);
	uint8_t *got = malloc((size_t)out * out * 3);
	double *ref = malloc(sizeof(double) * out * out * 3);
	char why[160];
	coordl__prep_box_t box;

	if (!rgb || !got || !ref)
		goto out;
	if (coordl__prep_item(ctx, jpg, len, seed, got, why, sizeof(why)) < 0) {
		diag("prep failed: %s", why);
		goto out;
	}
	coordl__prep_geometry(p, w, h, seed, &box);
	reference(rgb, w, &box, out, ref);
	for (size_t i = 0; i < (size_t)out * out * 3; i++) {
		double d = fabs(got[i] - ref[i]);
		st->sum += d;
		st->n++;
		if (d > st->max)
			st->max = d;
	}
	rv = 0;
out:
	free(rgb);
	free(got);
	free(ref);
	return rv;
}

static void test_reference(void)
{
	/* Sizes that exercise every DCT scale: small ones upscale at 8/8,
	 * ImageNet-like ones use 8/8 and 4/8, large ones 2/8 and 1/8. */
	static const struct { int w, h; } sizes[] = {
		{ 500, 375 }, { 375, 500 }, { 640, 427 }, { 1600, 1200 }, { 4000, 3000 }, { 120, 90 },
	};
	static const int modes[] = { COORDL_MODE_TRAIN, COORDL_MODE_EVAL };

	for (size_t m = 0; m < 2; m++) {
		coordl__prep_params_t p = params(modes[m], COORDL_LAYOUT_NHWC_U8, 224);
		coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
		struct err_stats st = { 0, 0, 0 }, full = { 0, 0, 0 };
		int bad = 0, scales[9] = { 0 };
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			int w = sizes[i].w, h = sizes[i].h;
			uint8_t *rgb = tj_make_rgb(w, h, (uint32_t)i + 1);
			size_t len = 0;
			uint8_t *jpg = tj_encode(rgb, w, h, TJ_RGB, 90, i == 2, &len);
			int nseeds = modes[m] == COORDL_MODE_EVAL ? 1 : (w > 1000 ? 8 : 12);
			for (int s = 0; s < nseeds; s++) {
				coordl__prep_box_t box;
				coordl__prep_geometry(&p, w, h, (uint64_t)s * 7919 + 1, &box);
				int k = coordl__prep_scale_num(&box, 224);
				scales[k]++;
				if (!jpg || compare_one(ctx, &p, jpg, len, (uint64_t)s * 7919 + 1, k == 8 ? &full : &st) < 0)
					bad++;
			}
			free(rgb);
			free(jpg);
		}
		/* At 8/8 the decoded pixels are the reference's own, so only
		 * float rounding may differ: this is what catches partial-decode
		 * edge effects (regression: fancy upsampling at the crop's
		 * column edges once leaked into the first and last columns). */
		ok(full.n > 0 && full.max <= 1.0, "%s: at DCT scale 8/8 every value is within 1/255 of the reference (max %.2f)",
		   m ? "eval" : "train", full.max);
		st.sum += full.sum;
		st.n += full.n;
		st.max = full.max > st.max ? full.max : st.max;
		double mean = st.n ? st.sum / st.n : 1e9;
		diag("%s: mean abs error %.3f, max %.1f (8-bit units) over %ld values; scales 1/8:%d 2/8:%d 4/8:%d 8/8:%d",
		     m ? "eval" : "train", mean, st.max, st.n, scales[1], scales[2], scales[4], scales[8]);
		is_int(bad, 0, m ? "eval: every reference comparison ran" : "train: every reference comparison ran");
		ok(mean < TOL_MEAN, "%s: mean abs error vs reference %.3f < %.1f/255", m ? "eval" : "train", mean,
		   TOL_MEAN);
		ok(st.max <= TOL_MAX, "%s: max abs error vs reference %.1f <= %.0f/255", m ? "eval" : "train",
		   st.max, TOL_MAX);
		if (!m)
			ok(scales[1] + scales[2] > 0 && scales[4] > 0 && scales[8] > 0,
			   "train: the comparison covered reduced and full DCT scales");
		coordl__prep_ctx_destroy(ctx);
	}
}

/* Degenerate shapes: 1x1 and thin images, tiny and large outputs. */
static void test_odd_sizes(void)
{
	static const struct { int w, h; } sizes[] = { { 1, 1 }, { 17, 5 }, { 5, 17 }, { 500, 375 } };
	static const int outs[] = { 1, 7, 300, 512 };
	int fails = 0, runs = 0;
	double worst = 0;

	for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++) {
		for (int mode = 0; mode < 2; mode++) {
			coordl__prep_params_t p = params(mode ? COORDL_MODE_EVAL : COORDL_MODE_TRAIN, COORDL_LAYOUT_NHWC_U8,
							 outs[o]);
			coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				int w = sizes[i].w, h = sizes[i].h;
				uint8_t *rgb = tj_make_rgb(w, h, 3);
				size_t len = 0;
				uint8_t *jpg = rgb ? tj_encode(rgb, w, h, TJ_RGB, 90, 0, &len) : NULL;
				for (uint64_t seed = 0; seed < 3; seed++) {
					struct err_stats st = { 0, 0, 0 };
					runs++;
					if (!ctx || !jpg || compare_one(ctx, &p, jpg, len, seed, &st) < 0) {
						fails++;
						diag("%dx%d -> %d (%s) failed", w, h, outs[o], mode ? "eval" : "train");
					} else if (outs[o] > 1) {
						/* A 1x1 output from a reduced DCT scale is a block
						 * mean that spills past a tiny crop box; only its
						 * decoding is checked. */
						if (st.sum / st.n > worst)
							worst = st.sum / st.n;
						if (st.sum / st.n >= TOL_MEAN)
							diag("%dx%d -> %d (%s, seed %d): mean %.3f max %.1f", w, h, outs[o],
							     mode ? "eval" : "train", (int)seed, st.sum / st.n, st.max);
					}
				}
				free(rgb);
				free(jpg);
			}
			coordl__prep_ctx_destroy(ctx);
		}
	}
	ok(fails == 0 && worst < TOL_MEAN, "%d odd shape/size runs (1x1, 17x5, out 1..512) decode and match (worst mean %.3f)",
	   runs, worst);
}

static void test_determinism_and_flip(const uint8_t *jpg, size_t len)
{
	coordl__prep_params_t p = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NCHW_F32, 224);
	size_t n = coordl__prep_sample_bytes(&p);
	coordl__prep_ctx_t *a = coordl__prep_ctx_create(&p), *b = coordl__prep_ctx_create(&p);
	uint8_t *x = malloc(n), *y = malloc(n), *z = malloc(n);
	int same = 1, differ = 0;

	is_int(n, 3 * 224 * 224 * 4, "sample bytes of 224 NCHW f32");
	for (uint64_t s = 0; s < 20; s++) {
		/* Interleave another image on context a, so leftover scratch
		 * state would show. */
		coordl__prep_item(a, jpg, len, s + 1000, z, NULL, 0);
		if (coordl__prep_item(a, jpg, len, s, x, NULL, 0) < 0
		    || coordl__prep_item(b, jpg, len, s, y, NULL, 0) < 0 || memcmp(x, y, n) != 0)
			same = 0;
		if (coordl__prep_item(b, jpg, len, s + 1, y, NULL, 0) == 0 && memcmp(x, y, n) != 0)
			differ++;
	}
	ok(same, "same seed gives identical bytes (two contexts, interleaved use)");
	is_int(differ, 20, "a different seed gives a different sample");

	coordl__prep_box_t b1, b2;
	int boxes_differ = 0;
	for (uint64_t s = 0; s < 20; s++) {
		coordl__prep_geometry(&p, 500, 375, s, &b1);
		coordl__prep_geometry(&p, 500, 375, s + 1, &b2);
		boxes_differ += b1.x != b2.x || b1.y != b2.y || b1.bw != b2.bw || b1.bh != b2.bh;
	}
	is_int(boxes_differ, 20, "different seeds draw different crop boxes");

	/* Flip: the same crop with flip_prob 0 and 1 mirrors exactly. */
	coordl__prep_params_t p0 = p, p1 = p;
	p0.flip_prob = 0;
	p1.flip_prob = 1;
	coordl__prep_ctx_t *c0 = coordl__prep_ctx_create(&p0), *c1 = coordl__prep_ctx_create(&p1);
	int mirrored = 1, flips = 0, flipped_differs = 0;
	for (uint64_t s = 0; s < 8; s++) {
		const float *f0 = (const float *)x, *f1 = (const float *)y;
		coordl__prep_item(c0, jpg, len, s, x, NULL, 0);
		coordl__prep_item(c1, jpg, len, s, y, NULL, 0);
		for (int c = 0; c < 3; c++)
			for (int r = 0; r < 224; r++)
				for (int col = 0; col < 224; col++) {
					size_t i = ((size_t)c * 224 + r) * 224;
					if (f0[i + col] != f1[i + 223 - col])
						mirrored = 0;
					if (f0[i + col] != f1[i + col])
						flipped_differs = 1;
				}
	}
	ok(mirrored, "flip_prob=1 output is the exact mirror of flip_prob=0");
	ok(flipped_differs, "the mirrored output is not symmetric by accident");
	for (uint64_t s = 0; s < 1000; s++) {
		coordl__prep_geometry(&p, 500, 375, s, &b1);
		flips += b1.flip;
	}
	ok(flips > 430 && flips < 570, "flip_prob=0.5 flips %d of 1000 seeds", flips);

	coordl__prep_ctx_destroy(a);
	coordl__prep_ctx_destroy(b);
	coordl__prep_ctx_destroy(c0);
	coordl__prep_ctx_destroy(c1);
	free(x);
	free(y);
	free(z);
}

/* Eval: a black-left / white-right image with the edge in the middle must
 * come out with the edge in the middle, whatever the seed. */
static void test_eval_geometry(void)
{
	coordl__prep_params_t p = params(COORDL_MODE_EVAL, COORDL_LAYOUT_NHWC_U8, 224);
	coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
	int w = 640, h = 400;
	uint8_t *rgb = malloc((size_t)w * h * 3), *o1 = malloc(224 * 224 * 3), *o2 = malloc(224 * 224 * 3);
	size_t len = 0;

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			memset(rgb + ((size_t)y * w + x) * 3, x < w / 2 ? 0 : 255, 3);
	uint8_t *jpg = tj_encode(rgb, w, h, TJ_RGB, 95, 0, &len);
	int r1 = coordl__prep_item(ctx, jpg, len, 1, o1, NULL, 0);
	int r2 = coordl__prep_item(ctx, jpg, len, 999, o2, NULL, 0);
	ok(r1 == 0 && r2 == 0 && memcmp(o1, o2, 224 * 224 * 3) == 0, "eval output does not depend on the seed");
	int edge_ok = 1;
	for (int y = 0; y < 224; y++) {
		const uint8_t *row = o1 + (size_t)y * 224 * 3;
		if (row[0] > 8 || row[3 * 110] > 8 || row[3 * 113] < 247 || row[3 * 223] < 247)
			edge_ok = 0;
	}
	ok(edge_ok, "eval: the centred edge lands between output columns 110 and 113");
	coordl__prep_box_t b;
	coordl__prep_geometry(&p, w, h, 0, &b);
	is_near(b.bw, 400 * 224.0 / 256.0, 1e-9, "eval box side is short side * 224/256");
	is_near(b.x + b.bw / 2, w / 2.0, 1e-9, "eval box is centred horizontally");
	is_near(b.y + b.bh / 2, h / 2.0, 1e-9, "eval box is centred vertically");
	coordl__prep_ctx_destroy(ctx);
	free(rgb);
	free(o1);
	free(o2);
	free(jpg);
}

static void test_color_kinds(void)
{
	static const struct { enum tj_kind k; const char *name; } kinds[] = {
		{ TJ_GRAY, "grayscale" }, { TJ_CMYK_ADOBE, "CMYK (Adobe, inverted)" },
		{ TJ_CMYK_PLAIN, "CMYK (plain)" }, { TJ_YCCK, "YCCK" },
	};
	coordl__prep_params_t p = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NHWC_U8, 224);
	coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
	uint8_t *rgb = tj_make_rgb(500, 375, 77);
	uint8_t *o = malloc(224 * 224 * 3);

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t len = 0;
		uint8_t *jpg = tj_encode(rgb, 500, 375, kinds[i].k, 90, 0, &len);
		struct err_stats st = { 0, 0, 0 };
		int bad = 0;
		for (uint64_t s = 0; s < 6; s++)
			bad += !jpg || compare_one(ctx, &p, jpg, len, s, &st) < 0;
		double mean = st.n ? st.sum / st.n : 1e9;
		ok(!bad && mean < TOL_MEAN && st.max <= TOL_MAX, "%s decodes and matches the reference (mean %.3f, max %.0f)",
		   kinds[i].name, mean, st.max);
		if (kinds[i].k == TJ_GRAY) {
			int grey = jpg && coordl__prep_item(ctx, jpg, len, 3, o, NULL, 0) == 0;
			for (int j = 0; grey && j < 224 * 224; j++)
				grey = o[3 * j] == o[3 * j + 1] && o[3 * j] == o[3 * j + 2];
			ok(grey, "grayscale comes out with R = G = B");
		}
		if (kinds[i].k == TJ_CMYK_ADOBE) {
			/* The colours must survive, not just the shapes: compare
			 * with the original RGB through the reference decode. */
			int w, h;
			uint8_t *dec = jpg ? tj_decode_rgb(jpg, len, &w, &h) : NULL;
			double sum = 0;
			for (size_t j = 0; dec && j < (size_t)500 * 375 * 3; j++)
				sum += fabs((double)dec[j] - rgb[j]);
			ok(dec && sum / (500.0 * 375 * 3) < 6.0, "CMYK (Adobe) colours round-trip (mean %.2f)",
			   sum / (500.0 * 375 * 3));
			free(dec);
		}
		free(jpg);
	}
	coordl__prep_ctx_destroy(ctx);
	free(rgb);
	free(o);
}

static int expect_fail(coordl__prep_ctx_t *ctx, const uint8_t *buf, size_t len, const char *name)
{
	uint8_t *o = malloc(coordl__prep_sample_bytes(&(coordl__prep_params_t){ .out_size = 224 }));
	char why[160] = "";
	int rv = coordl__prep_item(ctx, buf, len, 5, o, why, sizeof(why));
	ok(rv == -1 && why[0] != '\0', "%s: rejected (%s)", name, why);
	free(o);
	return rv;
}

static void test_corrupt(const uint8_t *jpg, size_t len)
{
	coordl__prep_params_t p = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NHWC_U8, 224);
	coordl__prep_params_t pe = params(COORDL_MODE_EVAL, COORDL_LAYOUT_NHWC_U8, 224);
	coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
	coordl__prep_ctx_t *ectx = coordl__prep_ctx_create(&pe);
	uint8_t *buf = malloc(len + 64), *o = malloc(224 * 224 * 3);
	uint32_t s = 42;

	expect_fail(ctx, NULL, 0, "NULL input");
	expect_fail(ctx, jpg, 0, "zero-length input");
	expect_fail(ctx, (const uint8_t *)"hello, world: not an image", 26, "text");
	for (size_t i = 0; i < len; i++) {
		s = s * 1664525u + 1013904223u;
		buf[i] = (uint8_t)(s >> 24);
	}
	expect_fail(ctx, buf, len, "random bytes");
	buf[0] = 0xFF;
	buf[1] = 0xD8;
	expect_fail(ctx, buf, len, "SOI followed by random bytes");
	expect_fail(ctx, jpg, 2, "SOI only");

	/* Truncation anywhere; eval decodes rows down to the bottom region. */
	static const double cut[] = { 0.05, 0.3, 0.6, 0.9, 0.999 };
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "truncated to %.1f%%", cut[i] * 100);
		expect_fail(ectx, jpg, (size_t)(len * cut[i]), name);
		snprintf(name, sizeof(name), "truncated to %.1f%% (train crop)", cut[i] * 100);
		expect_fail(ctx, jpg, (size_t)(len * cut[i]), name);
	}
	expect_fail(ctx, jpg, len - 2, "missing the EOI marker only");

	/* Valid headers, garbage entropy data: find the SOS segment. */
	size_t sos = 0;
	for (size_t i = 2; i + 4 < len; i++)
		if (jpg[i] == 0xFF && jpg[i + 1] == 0xDA) {
			sos = i + 2 + ((size_t)jpg[i + 2] << 8 | jpg[i + 3]);
			break;
		}
	ok(sos > 0 && sos < len, "found the scan data");
	memcpy(buf, jpg, len);
	for (size_t i = sos; i + 2 < len; i++) {
		s = s * 1664525u + 1013904223u;
		buf[i] = (uint8_t)(s >> 24);
	}
	expect_fail(ctx, buf, len, "valid header, garbage entropy data");

	/* An absurd size in the SOF header. */
	memcpy(buf, jpg, len);
	for (size_t i = 2; i + 9 < len; i++)
		if (buf[i] == 0xFF && (buf[i + 1] == 0xC0 || buf[i + 1] == 0xC2)) {
			buf[i + 5] = 0xEA; /* height 60000 */
			buf[i + 6] = 0x60;
			buf[i + 7] = 0xEA; /* width 60000 */
			buf[i + 8] = 0x60;
			break;
		}
	expect_fail(ctx, buf, len, "60000x60000 in the header");

	/* The context still works after all that. */
	ok(coordl__prep_item(ctx, jpg, len, 1, o, NULL, 0) == 0, "context decodes a valid image after errors");

	/* Mutations: truncate and flip bytes; each must return 0 or -1 with a
	 * reason (crashes and memory errors fail the test, under ASan too). */
	int results[2] = { 0, 0 }, noreason = 0;
	for (int it = 0; it < 400; it++) {
		size_t n = len;
		memcpy(buf, jpg, len);
		s = s * 1664525u + 1013904223u;
		int nflip = 1 + (int)(s >> 28);
		for (int f = 0; f < nflip; f++) {
			s = s * 1664525u + 1013904223u;
			size_t at = 2 + (s >> 8) % (len - 2);
			s = s * 1664525u + 1013904223u;
			buf[at] = (it & 1) ? (uint8_t)(s >> 24) : buf[at] ^ (uint8_t)(1u << ((s >> 24) & 7));
		}
		if (it % 3 == 0) {
			s = s * 1664525u + 1013904223u;
			n = 1 + (s >> 8) % len;
		}
		char why[160] = "";
		int rv = coordl__prep_item((it & 2) ? ectx : ctx, buf, n, (uint64_t)it, o, why, sizeof(why));
		results[rv == 0]++;
		if (rv == -1 && !why[0])
			noreason++;
	}
	diag("mutation loop: %d decoded, %d rejected", results[1], results[0]);
	ok(noreason == 0 && results[0] > 0, "400 mutated inputs: no crash, every rejection has a reason");

	coordl__prep_ctx_destroy(ctx);
	coordl__prep_ctx_destroy(ectx);
	free(buf);
	free(o);
}

static void test_layouts(const uint8_t *jpg, size_t len)
{
	int modes[2] = { COORDL_MODE_TRAIN, COORDL_MODE_EVAL };
	for (int m = 0; m < 2; m++) {
		coordl__prep_params_t pu = params(modes[m], COORDL_LAYOUT_NHWC_U8, 160);
		coordl__prep_params_t pf = params(modes[m], COORDL_LAYOUT_NCHW_F32, 160);
		coordl__prep_ctx_t *cu = coordl__prep_ctx_create(&pu), *cf = coordl__prep_ctx_create(&pf);
		uint8_t *u = malloc(coordl__prep_sample_bytes(&pu));
		float *f = malloc(coordl__prep_sample_bytes(&pf));
		double worst = 0;
		int rv = 0;
		for (uint64_t s = 0; s < 5; s++) {
			rv |= coordl__prep_item(cu, jpg, len, s, u, NULL, 0);
			rv |= coordl__prep_item(cf, jpg, len, s, f, NULL, 0);
			for (int c = 0; c < 3; c++)
				for (int i = 0; i < 160 * 160; i++) {
					double v = (f[(size_t)c * 160 * 160 + i] * pf.std[c] + pf.mean[c]) * 255.0;
					double d = fabs(v - u[(size_t)i * 3 + c]);
					worst = d > worst ? d : worst;
				}
		}
		ok(rv == 0 && worst <= 0.5 + 1e-3, "%s: NHWC u8 is NCHW f32 denormalised and rounded (worst %.4f)",
		   m ? "eval" : "train", worst);
		coordl__prep_ctx_destroy(cu);
		coordl__prep_ctx_destroy(cf);
		free(u);
		free(f);
	}
}

static void test_synthetic_and_params(void)
{
	coordl__prep_params_t p = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NCHW_F32, 32);
	coordl__prep_params_t pu = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NHWC_U8, 32);
	float a[3 * 32 * 32], b[3 * 32 * 32];
	uint8_t u[3 * 32 * 32];
	int cons = 1;

	coordl__prep_synthetic(&p, 7, a);
	coordl__prep_synthetic(&p, 7, b);
	coordl__prep_synthetic(&pu, 7, u);
	ok(memcmp(a, b, sizeof(a)) == 0, "synthetic: same seed, same bytes");
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 32 * 32; i++) {
			double v = (a[c * 1024 + i] * p.std[c] + p.mean[c]) * 255.0;
			cons &= a[c * 1024 + i] == a[c * 1024] && fabs(v - u[i * 3 + c]) < 1e-3;
		}
	ok(cons, "synthetic: constant per channel, f32 and u8 agree");

	coordl__prep_params_t bad = p;
	bad.out_size = 0;
	errno = 0;
	ok(coordl__prep_ctx_create(&bad) == NULL && errno == EINVAL, "out_size 0 is rejected with EINVAL");
	bad = p;
	bad.std[1] = 0;
	ok(coordl__prep_ctx_create(&bad) == NULL && errno == EINVAL, "std 0 is rejected with EINVAL");
	bad = p;
	bad.layout = 7;
	ok(coordl__prep_ctx_create(&bad) == NULL && errno == EINVAL, "an unknown layout is rejected");
	coordl__prep_ctx_destroy(NULL);
	ok(1, "destroy accepts NULL");
}

/* Decode every file coordl-datagen writes: images succeed, the corrupt
 * extras fail. Skipped when the generator has not been built. */
static void test_datagen(void)
{
	const char *top = getenv("top_builddir");
	char gen[512], dir[] = "/tmp/coordl-prep-t.XXXXXX", cmd[1400];
	if (!top)
		top = ".";
	snprintf(gen, sizeof(gen), "%s/tools/coordl-datagen", top);
	if (access(gen, X_OK) != 0 || !mkdtemp(dir)) {
		skip(2, "tools/coordl-datagen not built");
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s --out %s/d --classes 3 --images 60 --seed 5 --corrupt 8 >/dev/null", gen, dir);
	int rc = system(cmd);
	coordl__prep_params_t p = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NHWC_U8, 224);
	coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
	uint8_t *o = malloc(224 * 224 * 3);
	int good = 0, good_fail = 0, corrupt = 0, corrupt_ok = 0;
	for (int c = 0; rc == 0 && c < 3; c++) {
		char cdir[600];
		snprintf(cdir, sizeof(cdir), "%s/d/class%03d", dir, c);
		DIR *d = opendir(cdir);
		struct dirent *e;
		while (d && (e = readdir(d)) != NULL) {
			char path[900];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", cdir, e->d_name);
			FILE *fp = fopen(path, "rb");
			uint8_t *buf = NULL;
			long n = 0;
			if (fp && fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0
			    && (buf = malloc((size_t)n + 1)) != NULL && fread(buf, 1, (size_t)n, fp) == (size_t)n) {
				char why[160];
				int is_corrupt = strncmp(e->d_name, "corrupt", 7) == 0;
				int rv = coordl__prep_item(ctx, buf, (size_t)n, 3, o, why, sizeof(why));
				if (is_corrupt) {
					corrupt++;
					corrupt_ok += rv == -1;
					if (rv == 0)
						diag("corrupt file decoded: %s", e->d_name);
				} else {
					good++;
					good_fail += rv != 0;
					if (rv != 0)
						diag("%s: %s", e->d_name, why);
				}
			}
			free(buf);
			if (fp)
				fclose(fp);
		}
		if (d)
			closedir(d);
	}
	ok(rc == 0 && good == 60 && good_fail == 0, "all %d generated images decode", good);
	ok(corrupt == 8 && corrupt_ok == 8, "all %d generated corrupt files are rejected", corrupt);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	coordl__prep_ctx_destroy(ctx);
	free(o);
}

/* A progressive JPEG with a scan script of nscans scans (2..190): the DC of
 * all components, then one scan per AC coefficient, Y first, then Cb, Cr,
 * as far as nscans goes (a valid script: only the DC must be complete). */
static uint8_t *encode_scans(const uint8_t *rgb, int w, int h, int nscans, size_t *len)
{
	struct jpeg_compress_struct c;
	struct tj_err e;
	jpeg_scan_info *scans = calloc((size_t)nscans, sizeof(*scans));
	unsigned char *out = NULL;
	unsigned long outlen = 0;
	uint8_t *res = NULL;

	if (!scans)
		return NULL;
	scans[0].comps_in_scan = 3;
	for (int k = 0; k < 3; k++)
		scans[0].component_index[k] = k;
	for (int i = 1; i < nscans; i++) {
		scans[i].comps_in_scan = 1;
		scans[i].component_index[0] = (i - 1) / 63;
		scans[i].Ss = scans[i].Se = (i - 1) % 63 + 1;
	}
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = tj_error_exit;
	e.pub.emit_message = tj_quiet;
	if (setjmp(e.jb)) {
		jpeg_destroy_compress(&c);
		free(out);
		free(scans);
		return NULL;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out, &outlen);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	c.scan_info = scans;
	c.num_scans = nscans;
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW rp = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(scans);
	if ((res = malloc(outlen))) {
		memcpy(res, out, outlen);
		*len = outlen;
	}
	free(out);
	return res;
}

/*
 * A valid progressive JPEG of side x side pixels, 3 components at 4:4:4,
 * with one scan: the DC of every block, each coded as "no change" in one
 * bit (a Huffman table with a single 1-bit code). Tiny for its size (3 bits
 * per 8x8 block), yet a decoder holds a coefficient for every block of the
 * image and writes each one while absorbing the scan.
 */
static uint8_t *make_huge_progressive(int side, size_t *len)
{
	size_t blocks = (size_t)(side / 8) * (size_t)(side / 8), bits = blocks * 3;
	size_t data = (bits + 7) / 8, n = 0;
	uint8_t *b = malloc(data + 512);

	if (!b || side % 8)
		return NULL;
#define PUT(x) (b[n++] = (uint8_t)(x))
	PUT(0xFF); PUT(0xD8);
	PUT(0xFF); PUT(0xDB); PUT(0); PUT(67); PUT(0);          /* DQT: table 0, all ones */
	for (int i = 0; i < 64; i++)
		PUT(1);
	PUT(0xFF); PUT(0xC2); PUT(0); PUT(17); PUT(8);          /* SOF2 */
	PUT(side >> 8); PUT(side & 0xff); PUT(side >> 8); PUT(side & 0xff); PUT(3);
	for (int c = 1; c <= 3; c++) {
		PUT(c); PUT(0x11); PUT(0);
	}
	PUT(0xFF); PUT(0xC4); PUT(0); PUT(20); PUT(0x00);       /* DHT: DC 0, one code of 1 bit */
	PUT(1);
	for (int i = 1; i < 16; i++)
		PUT(0);
	PUT(0);
	PUT(0xFF); PUT(0xDA); PUT(0); PUT(12); PUT(3);          /* SOS: DC first scan, all */
	for (int c = 1; c <= 3; c++) {
		PUT(c); PUT(0x00);
	}
	PUT(0); PUT(0); PUT(0);
	memset(b + n, 0, data);                                  /* every DC: code '0' */
	n += data;
	if (bits % 8)
		b[n - 1] = (uint8_t)(0xFF >> (bits % 8));        /* pad with 1-bits */
	PUT(0xFF); PUT(0xD9);
#undef PUT
	*len = n;
	return b;
}

/*
 * Issue 12: a small crafted JPEG must not take a worker's memory or time.
 * A progressive file with more scans than the limit is refused (one at
 * the limit decodes); a valid 143 KiB progressive file of 5000x5000 at
 * 4:4:4 (150 MB of coefficient buffers, all written) is refused from its
 * header, and the worker's peak memory does not grow by that.
 */
static void test_issue12_limits(void)
{
	coordl__prep_params_t p = params(COORDL_MODE_TRAIN, COORDL_LAYOUT_NHWC_U8, 64);
	coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
	uint8_t *rgb = tj_make_rgb(96, 80, 4), *o = malloc(64 * 64 * 3);
	size_t len = 0, plen = 0;
	uint8_t *at = rgb ? encode_scans(rgb, 96, 80, COORDL__PREP_MAX_SCANS, &len) : NULL;
	size_t olen = 0;
	uint8_t *over = rgb ? encode_scans(rgb, 96, 80, COORDL__PREP_MAX_SCANS + 1, &olen) : NULL;
	uint8_t *prog = rgb ? tj_encode(rgb, 96, 80, TJ_RGB, 90, 1, &plen) : NULL;
	char why[160] = "";
	pid_t pid;
	int st;

	if (!ctx || !o || !at || !over || !prog)
		bail_out("cannot make the crafted JPEGs");
	ok(coordl__prep_item(ctx, at, len, 1, o, why, sizeof(why)) == 0,
	   "a progressive JPEG of %d scans decodes (%s)", COORDL__PREP_MAX_SCANS, why);
	why[0] = '\0';
	ok(coordl__prep_item(ctx, over, olen, 1, o, why, sizeof(why)) < 0 && strstr(why, "scans"),
	   "issue 12: one of %d scans is refused: %s", COORDL__PREP_MAX_SCANS + 1, why);
	free(over);
	over = encode_scans(rgb, 96, 80, 190, &len);
	why[0] = '\0';
	ok(over && coordl__prep_item(ctx, over, len, 1, o, why, sizeof(why)) < 0 && strstr(why, "scans"),
	   "issue 12: one of 190 scans is refused: %s", why);

	free(prog);
	if (!(prog = make_huge_progressive(5000, &plen)))
		bail_out("cannot make the crafted JPEG");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		struct rusage r0, r1;
		int rc;
		getrusage(RUSAGE_SELF, &r0);
		rc = coordl__prep_item(ctx, prog, plen, 1, o, why, sizeof(why));
		getrusage(RUSAGE_SELF, &r1);
		if (rc == 0)
			_exit(1);
		if (!strstr(why, "MiB")) {
			fprintf(stderr, "why: %s\n", why);
			_exit(2);
		}
		/* Peak memory (KiB) may not grow by the 150 MB the image needs. */
		_exit(r1.ru_maxrss - r0.ru_maxrss > 64 * 1024 ? 3 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "issue 12: a %zu-byte progressive JPEG of 5000x5000 is refused from its header, "
	   "without taking the memory (status %d)", plen, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	free(prog);
	free(over);
	free(at);
	free(rgb);
	free(o);
	coordl__prep_ctx_destroy(ctx);
}

int main(void)
{
	uint8_t *rgb = tj_make_rgb(500, 375, 9);
	size_t len = 0;
	uint8_t *jpg = rgb ? tj_encode(rgb, 500, 375, TJ_RGB, 90, 0, &len) : NULL;

	if (!jpg)
		bail_out("cannot encode the test image");
	test_reference();
	test_odd_sizes();
	test_determinism_and_flip(jpg, len);
	test_eval_geometry();
	test_color_kinds();
	test_corrupt(jpg, len);
	test_layouts(jpg, len);
	test_synthetic_and_params();
	test_datagen();
	test_issue12_limits();
	free(rgb);
	free(jpg);
	return done_testing();
}
