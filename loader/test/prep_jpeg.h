/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prep_jpeg.h: helpers shared by the prep tests, benchmark and fuzz
 * target: encode a photograph-like test image to JPEG in memory (RGB,
 * grayscale, CMYK with or without the Adobe inversion, YCCK) and decode a
 * JPEG completely to 8-bit RGB, the straightforward way, as a reference.
 * Header-only (static functions) so each program links without a helper
 * library; callers free what the functions return.
 */
#ifndef COORDL_TEST_PREP_JPEG_H
#define COORDL_TEST_PREP_JPEG_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

enum tj_kind { TJ_RGB, TJ_GRAY, TJ_CMYK_ADOBE, TJ_CMYK_PLAIN, TJ_YCCK };

struct tj_err {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
};

static void tj_error_exit(j_common_ptr c)
{
	longjmp(((struct tj_err *)c->err)->jb, 1);
}

static void tj_quiet(j_common_ptr c, int level)
{
	(void)c;
	(void)level;
}

/* A deterministic photograph-like RGB image: a smooth gradient, a few
 * discs and bars, and mild per-pixel noise. Returns malloc'd w*h*3. */
static uint8_t *tj_make_rgb(int w, int h, uint32_t seed)
{
	uint8_t *px = malloc((size_t)w * h * 3);
	uint32_t s = seed * 2654435761u + 12345u;
	int cx[4], cy[4], cr[4], col[4][3];

	if (!px)
		return NULL;
	for (int i = 0; i < 4; i++) {
		s = s * 1664525u + 1013904223u;
		cx[i] = (int)(s >> 8) % w;
		s = s * 1664525u + 1013904223u;
		cy[i] = (int)(s >> 8) % h;
		s = s * 1664525u + 1013904223u;
		cr[i] = 10 + (int)(s >> 8) % (w / 4 + 1);
		for (int c = 0; c < 3; c++) {
			s = s * 1664525u + 1013904223u;
			col[i][c] = (int)(s >> 24);
		}
	}
	for (int y = 0; y < h; y++) {
		for (int x = 0; x < w; x++) {
			uint8_t *p = px + ((size_t)y * w + x) * 3;
			int v[3] = { 40 + 160 * x / w, 60 + 140 * y / h, 200 - 150 * (x + y) / (w + h) };
			for (int i = 0; i < 4; i++) {
				int dx = x - cx[i], dy = y - cy[i];
				if (dx * dx + dy * dy < cr[i] * cr[i])
					for (int c = 0; c < 3; c++)
						v[c] = col[i][c];
			}
			if ((x / 16 + y / 24) % 7 == 0)
				v[0] = v[0] / 2 + 100;
			s = s * 1664525u + 1013904223u;
			for (int c = 0; c < 3; c++) {
				int n = v[c] + (int)((s >> (8 + 4 * c)) & 15) - 8;
				p[c] = (uint8_t)(n < 0 ? 0 : n > 255 ? 255 : n);
			}
		}
	}
	return px;
}

/* Encode rgb (w*h*3) as kind at quality q. Returns a malloc'd buffer and its
 * size in *len, or NULL. */
static uint8_t *tj_encode(const uint8_t *rgb, int w, int h, enum tj_kind kind, int q, int progressive,
			  size_t *len)
{
	struct jpeg_compress_struct c;
	struct tj_err e;
	unsigned char *out = NULL;
	unsigned long outlen = 0;
	int nc = kind == TJ_GRAY ? 1 : kind == TJ_RGB ? 3 : 4;
	uint8_t *row = malloc((size_t)w * 4);
	uint8_t *res = NULL;

	if (!row)
		return NULL;
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = tj_error_exit;
	e.pub.emit_message = tj_quiet;
	if (setjmp(e.jb)) {
		jpeg_destroy_compress(&c);
		free(row);
		free(out);
		return NULL;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out, &outlen);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = nc;
	c.in_color_space = nc == 1 ? JCS_GRAYSCALE : nc == 3 ? JCS_RGB : JCS_CMYK;
	jpeg_set_defaults(&c);
	if (kind == TJ_YCCK)
		jpeg_set_colorspace(&c, JCS_YCCK);
	if (kind == TJ_CMYK_PLAIN)
		c.write_Adobe_marker = FALSE;
	jpeg_set_quality(&c, q, TRUE);
	if (progressive)
		jpeg_simple_progression(&c);
	jpeg_start_compress(&c, TRUE);
	for (int y = 0; y < h; y++) {
		const uint8_t *p = rgb + (size_t)y * w * 3;
		JSAMPROW rp = row;
		for (int x = 0; x < w; x++, p += 3) {
			if (nc == 1) {
				row[x] = (uint8_t)((p[0] * 77 + p[1] * 150 + p[2] * 29 + 128) >> 8);
			} else if (nc == 3) {
				memcpy(row + 3 * x, p, 3);
			} else {
				/* Naive RGB -> CMYK; Adobe files store every ink inverted. */
				int mx = p[0] > p[1] ? p[0] : p[1];
				mx = mx > p[2] ? mx : p[2];
				int k = 255 - mx;
				for (int ch = 0; ch < 3; ch++) {
					int v = mx ? (mx - p[ch]) * 255 / mx : 0;
					row[4 * x + ch] = (uint8_t)(kind == TJ_CMYK_PLAIN ? v : 255 - v);
				}
				row[4 * x + 3] = (uint8_t)(kind == TJ_CMYK_PLAIN ? k : 255 - k);
			}
		}
		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(row);
	if ((res = malloc(outlen)) != NULL) {
		memcpy(res, out, outlen);
		*len = outlen;
	}
	free(out);
	return res;
}

/* Full decode of a JPEG to RGB (CMYK converted as an Adobe-aware viewer
 * does). Returns malloc'd w*h*3 and the size, or NULL. */
static uint8_t *tj_decode_rgb(const uint8_t *buf, size_t len, int *w, int *h)
{
	struct jpeg_decompress_struct d;
	struct tj_err e;
	uint8_t *volatile px = NULL;
	uint8_t *volatile row = NULL;

	d.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = tj_error_exit;
	e.pub.emit_message = tj_quiet;
	if (setjmp(e.jb)) {
		jpeg_destroy_decompress(&d);
		free(px);
		free(row);
		return NULL;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, buf, (unsigned long)len);
	jpeg_read_header(&d, TRUE);
	int cmyk = d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK;
	int inv = d.saw_Adobe_marker;
	d.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
	jpeg_start_decompress(&d);
	*w = (int)d.output_width;
	*h = (int)d.output_height;
	px = malloc((size_t)*w * *h * 3);
	row = malloc((size_t)*w * 4);
	if (!px || !row)
		longjmp(e.jb, 1);
	while (d.output_scanline < d.output_height) {
		uint8_t *o = px + (size_t)d.output_scanline * *w * 3;
		JSAMPROW rp = cmyk ? row : o;
		jpeg_read_scanlines(&d, &rp, 1);
		if (cmyk) {
			for (int x = 0; x < *w; x++) {
				double k = inv ? row[4 * x + 3] : 255 - row[4 * x + 3];
				for (int ch = 0; ch < 3; ch++) {
					double v = inv ? row[4 * x + ch] : 255 - row[4 * x + ch];
					o[3 * x + ch] = (uint8_t)(v * k / 255.0 + 0.5);
				}
			}
		}
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	free(row);
	return px;
}

#endif
