/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prep.c: the JPEG prep stage: decode one encoded image with libjpeg-turbo
 * and write one augmented sample (RandomResizedCrop or eval resize + center
 * crop, horizontal flip, normalisation) into the batch buffer.
 *
 * Speed comes from decoding as little as possible. The crop box is drawn
 * first, from the image size in the header; the DCT scale (1/8, 2/8, 4/8 or
 * 8/8: the SIMD-optimised ones in libjpeg-turbo 2.1) is the smallest that
 * keeps the scaled box at least out_size on both sides; only the columns of
 * the box are decoded (jpeg_crop_scanline), rows above it are skipped
 * (jpeg_skip_scanlines) and decoding stops after its last row
 * (jpeg_abort_decompress). Each decoded row is resampled horizontally at
 * once into a small ring of rows; every output row is then resampled
 * vertically from that ring and written with normalisation (and the flip,
 * folded into the horizontal tables) in the same pass. Nothing is
 * allocated per item: scratch buffers live in the per-thread context and
 * only grow.
 *
 * Resampling is a separable triangle (bilinear) filter whose support widens
 * with the downscaling factor, i.e. antialiased bilinear as PIL and
 * torchvision compute it, so downscaling by more than 2x averages over the
 * whole footprint instead of aliasing.
 *
 * Hostile input: libjpeg errors and also its corrupt-data warnings end in a
 * longjmp back to coordl__prep_item, which returns -1 with the reason;
 * libjpeg never prints. Image dimensions, the scans of a progressive JPEG
 * (a progress monitor counts them while libjpeg absorbs the file) and
 * libjpeg's memory are bounded (prep_internal.h), the memory both by a
 * check of the coefficient buffers a multi-scan image needs, made from its
 * header before anything is allocated, and by max_memory_to_use.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <jpeglib.h>
#include <jerror.h>

#include "common/error.h"
#include "coordl.h"
#include "loader/prep.h"
#include "loader/prep_internal.h"
#include "loader/rng.h"


/*
 * libjpeg-turbo's SIMD colour conversion writes an aligned output row with
 * non-temporal stores, which bypass the cache, so the resampler reading the
 * row right after would wait for memory (perf showed a fifth of prep's own
 * time on that load). A row start that is deliberately not 16-byte aligned
 * gets ordinary stores and stays in L1.
 */
#define PREP_ROW_SKEW 4

/* Pixels decoded beyond each side of the columns the filter reads. */
#define PREP_CROP_MARGIN 2

/* Stream purposes derived from sample_seed, so crop and flip are independent. */
#define PREP_SEED_CROP 0x63726f70ULL
#define PREP_SEED_FLIP 0x666c6970ULL

typedef float v4f __attribute__((vector_size(16)));
typedef uint8_t v4u8 __attribute__((vector_size(4)));

struct prep_jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

/* One resampling axis: for each output index, the first source index and
 * ntaps weights (zero-padded so every output uses the same count). */
struct prep_axis {
	int *start;
	float *w;
	int ntaps;
	size_t cap_start, cap_w;
};

struct coordl__prep_ctx {
	coordl__prep_params_t p;
	struct jpeg_decompress_struct cinfo;
	struct prep_jerr jerr;
	struct jpeg_progress_mgr progress;
	int cinfo_ok;
	v4f mul, add;            /* normalisation: value * mul + add */
	struct prep_axis hx, vy;
	uint8_t *row;            /* one decoded row, 4 bytes per pixel */
	size_t row_cap;
	v4f *frow;               /* the same row as floats */
	size_t frow_cap;
	v4f *ring;               /* ntaps horizontally resampled rows */
	size_t ring_cap;
	v4f *vrow;               /* one output row before normalisation */
	size_t vrow_cap;
};

size_t coordl__prep_sample_bytes(const coordl__prep_params_t *p)
{
	size_t n = (size_t)p->out_size * (size_t)p->out_size * 3;
	return p->layout == COORDL_LAYOUT_NHWC_U8 ? n : n * sizeof(float);
}

/* libjpeg error and message hooks: never print, never exit. */
static void prep_error_exit(j_common_ptr cinfo)
{
	struct prep_jerr *e = (struct prep_jerr *)cinfo->err;
	(*cinfo->err->format_message)(cinfo, e->msg);
	longjmp(e->jb, 1);
}

/*
 * Warnings (level -1) mean corrupt or missing entropy data, for which
 * libjpeg would silently paint grey; treat them as errors. The exceptions
 * concern only metadata and leave the pixels intact.
 */
static void prep_emit_message(j_common_ptr cinfo, int level)
{
	struct prep_jerr *e = (struct prep_jerr *)cinfo->err;
	int code = cinfo->err->msg_code;
	if (level >= 0)
		return;
	if (code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM
	    || code == JWRN_BOGUS_ICC)
		return;
	(*cinfo->err->format_message)(cinfo, e->msg);
	longjmp(e->jb, 1);
}

static void prep_output_message(j_common_ptr cinfo)
{
	(void)cinfo;
}

/* Called as libjpeg absorbs a multi-scan file: stop a progressive JPEG
 * with more scans than any encoder writes (each scan is a pass over the
 * whole coefficient buffer, so scans cost time without bound). */
static void prep_progress(j_common_ptr cinfo)
{
	j_decompress_ptr d = (j_decompress_ptr)cinfo;
	struct prep_jerr *e = (struct prep_jerr *)cinfo->err;

	if (d->progressive_mode && d->input_scan_number > COORDL__PREP_MAX_SCANS) {
		snprintf(e->msg, sizeof(e->msg), "progressive JPEG with more than %d scans",
			 COORDL__PREP_MAX_SCANS);
		longjmp(e->jb, 1);
	}
}

static int prep_params_ok(const coordl__prep_params_t *p)
{
	if (p->out_size < 1 || p->out_size > COORDL__PREP_MAX_OUT)
		return 0;
	if (p->layout != COORDL_LAYOUT_NCHW_F32 && p->layout != COORDL_LAYOUT_NHWC_U8)
		return 0;
	if (p->mode != COORDL_MODE_TRAIN && p->mode != COORDL_MODE_EVAL)
		return 0;
	if (p->mode == COORDL_MODE_TRAIN
	    && !(p->scale_min > 0 && p->scale_min <= p->scale_max && p->ratio_min > 0
		 && p->ratio_min <= p->ratio_max))
		return 0;
	for (int c = 0; c < 3; c++)
		if (!(p->std[c] != 0) || !isfinite(p->std[c]) || !isfinite(p->mean[c]))
			return 0;
	return 1;
}

coordl__prep_ctx_t *coordl__prep_ctx_create(const coordl__prep_params_t *p)
{
	coordl__prep_ctx_t *volatile ctx = NULL;

	if (!p || !prep_params_ok(p)) {
		errno = EINVAL;
		return NULL;
	}
	if (!(ctx = calloc(1, sizeof(*ctx)))) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->p = *p;
	for (int c = 0; c < 3; c++) {
		ctx->mul[c] = 1.0f / (255.0f * p->std[c]);
		ctx->add[c] = -p->mean[c] / p->std[c];
	}
	ctx->cinfo.err = jpeg_std_error(&ctx->jerr.pub);
	ctx->jerr.pub.error_exit = prep_error_exit;
	ctx->jerr.pub.emit_message = prep_emit_message;
	ctx->jerr.pub.output_message = prep_output_message;
	if (setjmp(ctx->jerr.jb)) {
		/* Only an allocation failure can get here. */
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	jpeg_create_decompress(&ctx->cinfo);
	ctx->cinfo.mem->max_memory_to_use = COORDL__PREP_MAX_MEMORY;
	ctx->progress.progress_monitor = prep_progress;
	ctx->cinfo.progress = &ctx->progress;
	ctx->cinfo_ok = 1;
	return ctx;
}

void coordl__prep_ctx_destroy(coordl__prep_ctx_t *ctx)
{
	int saved = errno;
	if (!ctx)
		return;
	if (ctx->cinfo_ok)
		jpeg_destroy_decompress(&ctx->cinfo);
	free(ctx->hx.start);
	free(ctx->hx.w);
	free(ctx->vy.start);
	free(ctx->vy.w);
	free(ctx->row);
	free(ctx->frow);
	free(ctx->ring);
	free(ctx->vrow);
	free(ctx);
	errno = saved;
}

/* Grow-only scratch buffer, 64-byte aligned (vector loads need 16). */
static int grow(void **buf, size_t *cap, size_t need)
{
	void *nb;
	size_t ncap;
	if (need <= *cap)
		return 0;
	ncap = *cap + *cap / 2;
	if (ncap < need)
		ncap = need;
	if (posix_memalign(&nb, 64, ncap) != 0)
		return -1;
	free(*buf);
	*buf = nb;
	*cap = ncap;
	return 0;
}

void coordl__prep_geometry(const coordl__prep_params_t *p, int w, int h, uint64_t sample_seed,
			   coordl__prep_box_t *box)
{
	memset(box, 0, sizeof(*box));
	if (p->mode == COORDL_MODE_EVAL) {
		/* Resize the short side to out*256/224, then take the central
		 * out x out square: in source pixels a square of side
		 * short*224/256, resampled with the whole image in reach. */
		double s = (w < h ? w : h) * 224.0 / 256.0;
		box->x = (w - s) / 2.0;
		box->y = (h - s) / 2.0;
		box->bw = box->bh = s;
		box->rx0 = box->ry0 = 0;
		box->rx1 = w;
		box->ry1 = h;
		return;
	}

	/* torchvision RandomResizedCrop.get_params, draw for draw. */
	coordl__rng_t r;
	double area = (double)w * h;
	double lr0 = log(p->ratio_min), lr1 = log(p->ratio_max);
	int cx = 0, cy = 0, cw = 0, ch = 0, found = 0;
	coordl__rng_seed(&r, coordl__mix64(sample_seed ^ PREP_SEED_CROP));
	for (int t = 0; t < 10 && !found; t++) {
		double target = area * (p->scale_min + (p->scale_max - p->scale_min) * coordl__rng_uniform(&r));
		double ar = exp(lr0 + (lr1 - lr0) * coordl__rng_uniform(&r));
		long tw = lround(sqrt(target * ar));
		long th = lround(sqrt(target / ar));
		if (tw > 0 && tw <= w && th > 0 && th <= h) {
			cw = (int)tw;
			ch = (int)th;
			cy = (int)coordl__rng_below(&r, (uint64_t)(h - ch + 1));
			cx = (int)coordl__rng_below(&r, (uint64_t)(w - cw + 1));
			found = 1;
		}
	}
	if (!found) {
		double in_ratio = (double)w / h;
		if (in_ratio < p->ratio_min) {
			cw = w;
			ch = (int)lround(w / p->ratio_min);
		} else if (in_ratio > p->ratio_max) {
			ch = h;
			cw = (int)lround(h * p->ratio_max);
		} else {
			cw = w;
			ch = h;
		}
		if (cw < 1)
			cw = 1;
		if (ch < 1)
			ch = 1;
		if (cw > w)
			cw = w;
		if (ch > h)
			ch = h;
		cy = (h - ch) / 2;
		cx = (w - cw) / 2;
	}
	box->x = cx;
	box->y = cy;
	box->bw = cw;
	box->bh = ch;
	box->rx0 = cx;
	box->ry0 = cy;
	box->rx1 = cx + cw;
	box->ry1 = cy + ch;
	if (p->flip_prob > 0) {
		coordl__rng_t f;
		coordl__rng_seed(&f, coordl__mix64(sample_seed ^ PREP_SEED_FLIP));
		box->flip = coordl__rng_uniform(&f) < p->flip_prob;
	}
}

int coordl__prep_scale_num(const coordl__prep_box_t *box, int out_size)
{
	for (int k = 1; k < 8; k *= 2)
		if (box->bw * k / 8.0 >= out_size && box->bh * k / 8.0 >= out_size)
			return k;
	return 8;
}

/*
 * Fill one axis table: output i of m samples the box [b0, b0 + bl) of the
 * source (scaled pixels), reading only [lo, hi). Triangle filter of radius
 * max(1, bl/m) source pixels, weights normalised to 1. With flip, output
 * i's taps are stored at m-1-i.
 */
static int axis_build(struct prep_axis *a, double b0, double bl, int m, int lo, int hi, int flip)
{
	double scale = bl / m;
	double fs = scale > 1.0 ? scale : 1.0;
	int n = 1;

	/* The widest window actually met, not the bound ceil(2 fs) + 1: one
	 * tap fewer for most scales, and taps are the resampler's cost. */
	for (int i = 0; i < m; i++) {
		double c = b0 + (i + 0.5) * scale;
		int j0 = (int)floor(c - fs - 0.5) + 1, j1 = (int)ceil(c + fs - 0.5);
		j0 = j0 < lo ? lo : j0;
		j1 = j1 > hi ? hi : j1;
		n = j1 - j0 > n ? j1 - j0 : n;
	}
	if (n > hi - lo)
		n = hi - lo;
	if (grow((void **)&a->start, &a->cap_start, sizeof(int) * (size_t)m) < 0
	    || grow((void **)&a->w, &a->cap_w, sizeof(float) * (size_t)m * (size_t)n) < 0)
		return -1;
	a->ntaps = n;
	for (int i = 0; i < m; i++) {
		double c = b0 + (i + 0.5) * scale;
		int j0 = (int)floor(c - fs - 0.5) + 1;
		int j1 = (int)ceil(c + fs - 0.5);
		int o = flip ? m - 1 - i : i;
		float *w = a->w + (size_t)o * n;
		double sum = 0;
		int s;

		if (j0 < lo)
			j0 = lo;
		if (j1 > hi)
			j1 = hi;
		if (j1 - j0 > n)
			j1 = j0 + n;
		s = j0 + n > hi ? hi - n : j0;
		for (int k = 0; k < n; k++)
			w[k] = 0;
		for (int j = j0; j < j1; j++) {
			double d = fabs((j + 0.5 - c) / fs);
			double v = d < 1.0 ? 1.0 - d : 0.0;
			w[j - s] = (float)v;
			sum += v;
		}
		if (sum <= 0) {
			/* The window missed every pixel centre: take the nearest. */
			int j = (int)floor(c);
			j = j < lo ? lo : j >= hi ? hi - 1 : j;
			s = j + n > hi ? hi - n : j;
			w[j - s] = 1.0f;
			sum = 1.0;
		}
		for (int k = 0; k < n; k++)
			w[k] = (float)(w[k] / sum);
		a->start[o] = s;
	}
	return 0;
}

/* Adobe-inverted or plain CMYK, 4 bytes per pixel, to RGBX in place. */
static void cmyk_to_rgbx(uint8_t *px, int n, int inverted)
{
	for (int i = 0; i < n; i++, px += 4) {
		unsigned c = px[0], m = px[1], y = px[2], k = px[3];
		if (!inverted) {
			c = 255 - c;
			m = 255 - m;
			y = 255 - y;
			k = 255 - k;
		}
		/* Here c is 255 - cyan etc.: R = (255-C)(255-K)/255, rounded. */
		px[0] = (uint8_t)((c * k + 127) / 255);
		px[1] = (uint8_t)((m * k + 127) / 255);
		px[2] = (uint8_t)((y * k + 127) / 255);
		px[3] = 255;
	}
}

/*
 * Bytes to floats, 4 per pixel. GCC scalarises a generic vector conversion
 * of bytes (about 16 instructions a pixel), so x86-64 gets SSE2 unpacks
 * (about 3); other targets use the generic form.
 */
static void row_to_float(const uint8_t *src, int npx, v4f *dst)
{
	int i = 0;
#ifdef __SSE2__
	const __m128i z = _mm_setzero_si128();
	for (; i + 4 <= npx; i += 4) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(src + 4 * (size_t)i));
		__m128i lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
		dst[i] = (v4f)_mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, z));
		dst[i + 1] = (v4f)_mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, z));
		dst[i + 2] = (v4f)_mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, z));
		dst[i + 3] = (v4f)_mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, z));
	}
#endif
	for (; i < npx; i++) {
		v4u8 b;
		memcpy(&b, src + 4 * (size_t)i, 4);
		dst[i] = __builtin_convertvector(b, v4f);
	}
}

/* Horizontal pass of one decoded row into one ring row. */
static void resample_row(const struct prep_axis *hx, const uint8_t *src, int srcw, v4f *frow,
			 v4f *dst, int m)
{
	const int n = hx->ntaps;
	row_to_float(src, srcw, frow);
	switch (n) {
	case 2:
		for (int x = 0; x < m; x++) {
			const v4f *s = frow + hx->start[x];
			const float *w = hx->w + (size_t)x * 2;
			dst[x] = s[0] * w[0] + s[1] * w[1];
		}
		break;
	case 3:
		for (int x = 0; x < m; x++) {
			const v4f *s = frow + hx->start[x];
			const float *w = hx->w + (size_t)x * 3;
			dst[x] = s[0] * w[0] + s[1] * w[1] + s[2] * w[2];
		}
		break;
	case 4:
		for (int x = 0; x < m; x++) {
			const v4f *s = frow + hx->start[x];
			const float *w = hx->w + (size_t)x * 4;
			dst[x] = (s[0] * w[0] + s[1] * w[1]) + (s[2] * w[2] + s[3] * w[3]);
		}
		break;
	default:
		for (int x = 0; x < m; x++) {
			const v4f *s = frow + hx->start[x];
			const float *w = hx->w + (size_t)x * n;
			v4f acc = s[0] * w[0];
			for (int k = 1; k < n; k++)
				acc += s[k] * w[k];
			dst[x] = acc;
		}
		break;
	}
}

/* Vertical pass for output row y, fused with normalisation and layout. */
static void emit_row(coordl__prep_ctx_t *ctx, int y, int first_slot, void *dst)
{
	const int m = ctx->p.out_size, n = ctx->vy.ntaps;
	const float *w = ctx->vy.w + (size_t)y * n;
	const v4f *r[4];

	/* Ring rows of the taps; beyond 4 taps the general loop finds them. */
	for (int k = 0; k < n && k < 4; k++)
		r[k] = ctx->ring + (size_t)((first_slot + k) % n) * m;
	/* The taps first, into a row of pixels; counts of 2 to 4 (nearly
	 * every output row when the DCT scale leaves less than 2x to do) get
	 * loops without an inner loop. */
	v4f *acc = ctx->vrow;
	switch (n) {
	case 1:
		for (int x = 0; x < m; x++)
			acc[x] = r[0][x] * w[0];
		break;
	case 2:
		for (int x = 0; x < m; x++)
			acc[x] = r[0][x] * w[0] + r[1][x] * w[1];
		break;
	case 3:
		for (int x = 0; x < m; x++)
			acc[x] = r[0][x] * w[0] + r[1][x] * w[1] + r[2][x] * w[2];
		break;
	case 4:
		for (int x = 0; x < m; x++)
			acc[x] = (r[0][x] * w[0] + r[1][x] * w[1]) + (r[2][x] * w[2] + r[3][x] * w[3]);
		break;
	default:
		for (int x = 0; x < m; x++)
			acc[x] = r[0][x] * w[0];
		for (int k = 1; k < n; k++) {
			const v4f *rk = ctx->ring + (size_t)((first_slot + k) % n) * m;
			for (int x = 0; x < m; x++)
				acc[x] += rk[x] * w[k];
		}
		break;
	}
	if (ctx->p.layout == COORDL_LAYOUT_NCHW_F32) {
		float *p0 = (float *)dst + (size_t)y * m;
		float *p1 = p0 + (size_t)m * m, *p2 = p1 + (size_t)m * m;
		const v4f mul = ctx->mul, add = ctx->add;
		for (int x = 0; x < m; x++) {
			v4f v = acc[x] * mul + add;
			p0[x] = v[0];
			p1[x] = v[1];
			p2[x] = v[2];
		}
	} else {
		uint8_t *o = (uint8_t *)dst + (size_t)y * m * 3;
		for (int x = 0; x < m; x++, o += 3) {
			v4f v = acc[x];
			for (int c = 0; c < 3; c++) {
				float f = v[c] + 0.5f;
				o[c] = f <= 0.0f ? 0 : f >= 255.0f ? 255 : (uint8_t)f;
			}
		}
	}
}

/*
 * A file cut short has no EOI marker after its first scan begins. Entropy
 * data never contains FF D9 (an FF data byte is stuffed as FF 00), so the
 * backward search is exact, and O(1) for a well-formed file.
 */
static int has_eoi(const uint8_t *buf, size_t len, size_t scan_start)
{
	for (size_t i = len; i >= scan_start + 2; i--)
		if (buf[i - 2] == 0xFF && buf[i - 1] == 0xD9)
			return 1;
	return 0;
}

int coordl__prep_item(coordl__prep_ctx_t *ctx, const uint8_t *jpeg, size_t len,
		      uint64_t sample_seed, void *dst, char *why, size_t whylen)
{
	struct jpeg_decompress_struct *ci = &ctx->cinfo;
	const int m = ctx->p.out_size;
	coordl__prep_box_t box;
	JDIMENSION xoff, xw;
	size_t scan_start;
	int k, sw, sh, cmyk, inverted, xlo, xhi, ylo, yhi, row;
	double f;

	if (!jpeg || len == 0)
		return syn_errbuf(why, whylen, EINVAL, "empty input");
	if (len < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8)
		return syn_errbuf(why, whylen, EINVAL, "not a JPEG (no SOI marker)");

	/* Everything below may longjmp back here; the volatile-free locals
	 * are not used after the jump. */
	if (setjmp(ctx->jerr.jb)) {
		jpeg_abort_decompress(ci);
		return syn_errbuf(why, whylen, EINVAL, "jpeg: %s", ctx->jerr.msg);
	}
	jpeg_mem_src(ci, jpeg, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	scan_start = len - ci->src->bytes_in_buffer;

	if (ci->image_width < 1 || ci->image_height < 1 || ci->image_width > COORDL__PREP_MAX_SIDE
	    || ci->image_height > COORDL__PREP_MAX_SIDE
	    || (long)ci->image_width * (long)ci->image_height > COORDL__PREP_MAX_PIXELS) {
		jpeg_abort_decompress(ci);
		return syn_errbuf(why, whylen, EINVAL,
				  "image %ux%u is beyond the %dx%d / %ld pixel limit",
				  ci->image_width, ci->image_height, COORDL__PREP_MAX_SIDE,
				  COORDL__PREP_MAX_SIDE, COORDL__PREP_MAX_PIXELS);
	}
	if (ci->progressive_mode || ci->comps_in_scan < ci->num_components) {
		/* The whole image's coefficients stay in memory: one JBLOCK per
		 * block of each component, padded to its sampling factors. */
		uint64_t need = 0;
		for (int c = 0; c < ci->num_components; c++) {
			const jpeg_component_info *cp = &ci->comp_info[c];
			uint64_t hs = cp->h_samp_factor > 0 ? (uint64_t)cp->h_samp_factor : 1;
			uint64_t vs = cp->v_samp_factor > 0 ? (uint64_t)cp->v_samp_factor : 1;
			uint64_t wb = ((uint64_t)cp->width_in_blocks + hs - 1) / hs * hs;
			uint64_t hb = ((uint64_t)cp->height_in_blocks + vs - 1) / vs * vs;
			need += wb * hb * sizeof(JBLOCK);
		}
		if (need > (uint64_t)COORDL__PREP_MAX_MEMORY) {
			jpeg_abort_decompress(ci);
			return syn_errbuf(why, whylen, EINVAL, "%s JPEG of %ux%u needs %llu MiB "
					  "to decode, beyond the %ld MiB limit",
					  ci->progressive_mode ? "progressive" : "multi-scan",
					  ci->image_width, ci->image_height,
					  (unsigned long long)(need >> 20),
					  COORDL__PREP_MAX_MEMORY >> 20);
		}
	}
	switch (ci->jpeg_color_space) {
	case JCS_GRAYSCALE:
	case JCS_YCbCr:
	case JCS_RGB:
		cmyk = 0;
		ci->out_color_space = JCS_EXT_RGBX;
		break;
	case JCS_CMYK:
	case JCS_YCCK:
		cmyk = 1;
		ci->out_color_space = JCS_CMYK;
		break;
	default:
		jpeg_abort_decompress(ci);
		return syn_errbuf(why, whylen, EINVAL, "unsupported colour space (%d components)",
				  ci->num_components);
	}
	inverted = ci->saw_Adobe_marker;

	coordl__prep_geometry(&ctx->p, (int)ci->image_width, (int)ci->image_height, sample_seed, &box);
	k = coordl__prep_scale_num(&box, m);
	ci->scale_num = (unsigned)k;
	ci->scale_denom = 8;
	jpeg_start_decompress(ci);
	sw = (int)ci->output_width;
	sh = (int)ci->output_height;

	/* The box and region in scaled pixels: pixel j of the scaled image
	 * covers source pixels [8j/k, 8(j+1)/k). */
	f = k / 8.0;
	{
		int rx0 = (int)floor(box.rx0 * f), rx1 = (int)ceil(box.rx1 * f);
		int ry0 = (int)floor(box.ry0 * f), ry1 = (int)ceil(box.ry1 * f);
		rx1 = rx1 > sw ? sw : rx1;
		ry1 = ry1 > sh ? sh : ry1;
		if (rx1 <= rx0)
			rx1 = rx0 + 1;
		if (ry1 <= ry0)
			ry1 = ry0 + 1;
		if (axis_build(&ctx->hx, box.x * f, box.bw * f, m, rx0, rx1, box.flip) < 0
		    || axis_build(&ctx->vy, box.y * f, box.bh * f, m, ry0, ry1, 0) < 0) {
			jpeg_abort_decompress(ci);
			return syn_errbuf(why, whylen, ENOMEM, "out of memory");
		}
	}
	xlo = sw;
	xhi = 0;
	for (int i = 0; i < m; i++) {
		if (ctx->hx.start[i] < xlo)
			xlo = ctx->hx.start[i];
		if (ctx->hx.start[i] + ctx->hx.ntaps > xhi)
			xhi = ctx->hx.start[i] + ctx->hx.ntaps;
	}
	ylo = ctx->vy.start[0];
	yhi = ctx->vy.start[m - 1] + ctx->vy.ntaps;

	/* Decode only the needed columns: libjpeg widens the span to iMCU
	 * boundaries and tells us where it really starts. Its fancy chroma
	 * upsampling treats the ends of the span as image edges, which alters
	 * the outermost pixel; a margin keeps those pixels unused. */
	xlo = xlo - PREP_CROP_MARGIN < 0 ? 0 : xlo - PREP_CROP_MARGIN;
	xhi = xhi + PREP_CROP_MARGIN > sw ? sw : xhi + PREP_CROP_MARGIN;
	xoff = (JDIMENSION)xlo;
	xw = (JDIMENSION)(xhi - xlo);
	if (xw < (JDIMENSION)sw)
		jpeg_crop_scanline(ci, &xoff, &xw);
	else
		xoff = 0;
	for (int i = 0; i < m; i++)
		ctx->hx.start[i] -= (int)xoff;
	if (grow((void **)&ctx->row, &ctx->row_cap, (size_t)ci->output_width * 4 + PREP_ROW_SKEW) < 0
	    || grow((void **)&ctx->frow, &ctx->frow_cap, (size_t)ci->output_width * sizeof(v4f)) < 0
	    || grow((void **)&ctx->ring, &ctx->ring_cap,
		    (size_t)ctx->vy.ntaps * (size_t)m * sizeof(v4f)) < 0
	    || grow((void **)&ctx->vrow, &ctx->vrow_cap, (size_t)m * sizeof(v4f)) < 0) {
		jpeg_abort_decompress(ci);
		return syn_errbuf(why, whylen, ENOMEM, "out of memory");
	}
	if (ylo > 0 && jpeg_skip_scanlines(ci, (JDIMENSION)ylo) != (JDIMENSION)ylo) {
		jpeg_abort_decompress(ci);
		return syn_errbuf(why, whylen, EINVAL, "jpeg: could not skip to row %d", ylo);
	}

	row = ylo;
	for (int y = 0; y < m; y++) {
		int need = ctx->vy.start[y] + ctx->vy.ntaps;
		while (row < need) {
			JSAMPROW rp = ctx->row + PREP_ROW_SKEW;
			if (jpeg_read_scanlines(ci, &rp, 1) != 1) {
				jpeg_abort_decompress(ci);
				return syn_errbuf(why, whylen, EINVAL, "jpeg: no data for row %d",
						  row);
			}
			if (cmyk)
				cmyk_to_rgbx(rp, (int)ci->output_width, inverted);
			resample_row(&ctx->hx, rp, (int)ci->output_width, ctx->frow,
				     ctx->ring + (size_t)(row % ctx->vy.ntaps) * m, m);
			row++;
		}
		emit_row(ctx, y, ctx->vy.start[y] % ctx->vy.ntaps, dst);
	}
	(void)yhi;
	jpeg_abort_decompress(ci);

	if (!has_eoi(jpeg, len, scan_start))
		return syn_errbuf(why, whylen, EINVAL, "truncated JPEG (no EOI marker)");
	return 0;
}

void coordl__prep_synthetic(const coordl__prep_params_t *p, uint64_t sample_seed, void *dst)
{
	/* One grey level per sample, so consumers can still tell samples
	 * apart, at the cost of a memset-like fill. */
	const size_t plane = (size_t)p->out_size * (size_t)p->out_size;
	uint8_t g = (uint8_t)(coordl__mix64(sample_seed) >> 56);

	if (p->layout == COORDL_LAYOUT_NHWC_U8) {
		memset(dst, g, plane * 3);
		return;
	}
	for (int c = 0; c < 3; c++) {
		float v = (g / 255.0f - p->mean[c]) / p->std[c];
		float *o = (float *)dst + plane * (size_t)c;
		for (size_t i = 0; i < plane; i++)
			o[i] = v;
	}
}
