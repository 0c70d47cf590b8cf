/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prep-bench: per-core throughput of the JPEG prep stage.
 *
 * Loads the JPEGs of a directory tree into memory (so storage plays no
 * part), then, for several repetitions, runs each variant over every image
 * in turn, interleaved, timing the CPU time of this thread:
 *
 *   coordl-prep   coordl__prep_item: crop-aware DCT scale, partial decode,
 *                 fused resample + flip + normalise (the loader's path)
 *   naive         full decode at 8/8 into a buffer, then crop and resample
 *                 the same box with the same filter, flip and normalise
 *   decode-only   full decode at 8/8 and nothing else (libjpeg's ceiling)
 *
 * and prints min/median/max of CPU microseconds per image and of images/s
 * per core. Usage: prep-bench [options] DIR (see --help).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <jpeglib.h>

#include "common/parse.h"
#include "coordl.h"
#include "loader/prep.h"
#include "loader/prep_internal.h"

#define PROG "prep-bench"

struct item {
	uint8_t *buf;
	size_t len;
};

struct set {
	struct item *it;
	size_t n, cap, bytes, max;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options] DIR\n"
		"Throughput per core of the JPEG prep stage vs a naive full decode + resize,\n"
		"on the JPEGs under DIR (e.g. made by coordl-datagen), held in memory.\n"
		"\n"
		"  -n, --images N    use at most N images (default 500)\n"
		"  -r, --reps R      timed repetitions per variant (default 7)\n"
		"  -s, --size S      output size (default 224)\n"
		"  -m, --mode M      train or eval (default train)\n"
		"  -l, --layout L    f32 (NCHW float32) or u8 (NHWC uint8) (default f32)\n"
		"  -h, --help        show this help\n");
}

static void load_tree(const char *dir, struct set *s)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	if (!d)
		return;
	while (s->n < s->max && (e = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			load_tree(path, s);
			continue;
		}
		size_t l = strlen(e->d_name);
		if (l < 4 || strcmp(e->d_name + l - 4, ".jpg") != 0 || st.st_size < 4)
			continue;
		FILE *fp = fopen(path, "rb");
		uint8_t *b = malloc((size_t)st.st_size);
		if (fp && b && fread(b, 1, (size_t)st.st_size, fp) == (size_t)st.st_size) {
			if (s->n == s->cap) {
				size_t nc = s->cap ? 2 * s->cap : 256;
				struct item *ni = realloc(s->it, nc * sizeof(*ni));
				if (!ni) {
					free(b);
					fclose(fp);
					break;
				}
				s->it = ni;
				s->cap = nc;
			}
			s->it[s->n].buf = b;
			s->it[s->n].len = (size_t)st.st_size;
			s->bytes += (size_t)st.st_size;
			s->n++;
			b = NULL;
		}
		free(b);
		if (fp)
			fclose(fp);
	}
	closedir(d);
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The naive pipeline: whole-image decode, then a separable resample. */
struct naive {
	struct jpeg_decompress_struct d;
	struct jpeg_error_mgr em;
	jmp_buf jb;
	uint8_t *img;
	size_t img_cap;
	float *tmp, *hw, *vw;
	int *idx;
	size_t tmp_cap, hw_cap, vw_cap, idx_cap;
};

static void naive_error(j_common_ptr c)
{
	longjmp(((struct naive *)c->client_data)->jb, 1);
}

static void naive_quiet(j_common_ptr c, int l)
{
	(void)c;
	(void)l;
}

static int ensure(void **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	void *n = realloc(*p, need);
	if (!n)
		return -1;
	*p = n;
	*cap = need;
	return 0;
}

static double tri(double x)
{
	x = fabs(x);
	return x < 1 ? 1 - x : 0;
}

/* Full decode of one item into nv->img; 0 or -1. */
static int naive_decode(struct naive *nv, const struct item *it, int *w, int *h)
{
	struct jpeg_decompress_struct *d = &nv->d;

	if (setjmp(nv->jb)) {
		jpeg_abort_decompress(d);
		return -1;
	}
	jpeg_mem_src(d, it->buf, (unsigned long)it->len);
	jpeg_read_header(d, TRUE);
	if (d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK) {
		jpeg_abort_decompress(d);
		return -1; /* the naive path does not convert CMYK */
	}
	d->out_color_space = JCS_RGB;
	jpeg_start_decompress(d);
	*w = (int)d->output_width;
	*h = (int)d->output_height;
	if (ensure((void **)&nv->img, &nv->img_cap, (size_t)d->output_width * d->output_height * 3) < 0)
		longjmp(nv->jb, 1);
	while (d->output_scanline < d->output_height) {
		JSAMPROW r = nv->img + (size_t)d->output_scanline * d->output_width * 3;
		jpeg_read_scanlines(d, &r, 1);
	}
	jpeg_finish_decompress(d);
	return 0;
}

/* Decode all of it (decode_only) or also crop, resample, flip, normalise. */
static int naive_item(struct naive *nv, const coordl__prep_params_t *p, const struct item *it, uint64_t seed,
		      float *out, int decode_only)
{
	int w, h, m = p->out_size;
	coordl__prep_box_t b;

	if (naive_decode(nv, it, &w, &h) < 0)
		return -1;
	if (decode_only)
		return 0;

	/* Weight tables (as any resize does), a horizontal pass over the
	 * crop's rows into tmp (rows x m x 3), then vertical into the output:
	 * the same filter as prep, on the fully decoded image. */
	coordl__prep_geometry(p, w, h, seed, &b);
	int rows = b.ry1 - b.ry0;
	double sx = b.bw / m, sy = b.bh / m, fx = sx > 1 ? sx : 1, fy = sy > 1 ? sy : 1;
	int hn = (int)ceil(2 * fx) + 2, vn = (int)ceil(2 * fy) + 2;
	if (ensure((void **)&nv->tmp, &nv->tmp_cap, sizeof(float) * (size_t)rows * m * 3) < 0
	    || ensure((void **)&nv->hw, &nv->hw_cap, sizeof(float) * (size_t)m * hn) < 0
	    || ensure((void **)&nv->vw, &nv->vw_cap, sizeof(float) * (size_t)m * vn) < 0
	    || ensure((void **)&nv->idx, &nv->idx_cap, sizeof(int) * (size_t)m * 4) < 0)
		return -1;
	int *hs = nv->idx, *hc = hs + m, *vs = hc + m, *vc = vs + m;
	for (int o = 0; o < m; o++) {
		double c = b.x + (o + 0.5) * sx, ws = 0;
		int j0 = (int)floor(c - fx), j1 = (int)ceil(c + fx);
		j0 = j0 < b.rx0 ? b.rx0 : j0;
		j1 = j1 > b.rx1 ? b.rx1 : j1;
		for (int j = j0; j < j1; j++)
			ws += tri((j + 0.5 - c) / fx);
		for (int j = j0; j < j1; j++)
			nv->hw[(size_t)o * hn + (j - j0)] = (float)(tri((j + 0.5 - c) / fx) / ws);
		hs[o] = j0;
		hc[o] = j1 - j0;
		c = b.y + (o + 0.5) * sy;
		ws = 0;
		j0 = (int)floor(c - fy);
		j1 = (int)ceil(c + fy);
		j0 = j0 < b.ry0 ? b.ry0 : j0;
		j1 = j1 > b.ry1 ? b.ry1 : j1;
		for (int j = j0; j < j1; j++)
			ws += tri((j + 0.5 - c) / fy);
		for (int j = j0; j < j1; j++)
			nv->vw[(size_t)o * vn + (j - j0)] = (float)(tri((j + 0.5 - c) / fy) / ws);
		vs[o] = j0;
		vc[o] = j1 - j0;
	}
	for (int y = 0; y < rows; y++) {
		const uint8_t *src = nv->img + (size_t)(b.ry0 + y) * w * 3;
		for (int ox = 0; ox < m; ox++) {
			const float *wt = nv->hw + (size_t)ox * hn;
			const uint8_t *sp = src + 3 * (size_t)hs[ox];
			float acc[3] = { 0, 0, 0 };
			for (int k = 0; k < hc[ox]; k++)
				for (int ch = 0; ch < 3; ch++)
					acc[ch] += wt[k] * sp[3 * k + ch];
			int dx = b.flip ? m - 1 - ox : ox;
			for (int ch = 0; ch < 3; ch++)
				nv->tmp[((size_t)y * m + dx) * 3 + ch] = acc[ch];
		}
	}
	for (int oy = 0; oy < m; oy++) {
		const float *wt = nv->vw + (size_t)oy * vn;
		for (int ox = 0; ox < m; ox++) {
			float acc[3] = { 0, 0, 0 };
			for (int k = 0; k < vc[oy]; k++) {
				const float *t = nv->tmp + ((size_t)(vs[oy] + k - b.ry0) * m + ox) * 3;
				for (int ch = 0; ch < 3; ch++)
					acc[ch] += wt[k] * t[ch];
			}
			for (int ch = 0; ch < 3; ch++)
				out[((size_t)ch * m + oy) * m + ox] = (acc[ch] / 255.0f - p->mean[ch]) / p->std[ch];
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The integer value of option `name`, lo..hi; exits 2 naming the bad value. */
static long int_arg(const char *name, const char *v, long lo, long hi)
{
	int64_t x;

	if (syn_parse_i64(v, lo, hi, &x) < 0) {
		fprintf(stderr, PROG ": --%s: expected %ld..%ld, got '%s'\n", name, lo, hi, v);
		exit(2);
	}
	return (long)x;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "images", required_argument, NULL, 'n' }, { "reps", required_argument, NULL, 'r' },
		{ "size", required_argument, NULL, 's' },   { "mode", required_argument, NULL, 'm' },
		{ "layout", required_argument, NULL, 'l' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	coordl__prep_params_t p = {
		.out_size = 224, .layout = COORDL_LAYOUT_NCHW_F32, .mode = COORDL_MODE_TRAIN,
		.scale_min = 0.08f, .scale_max = 1.0f, .ratio_min = 0.75f, .ratio_max = 4.0f / 3.0f,
		.flip_prob = 0.5f, .mean = { 0.485f, 0.456f, 0.406f }, .std = { 0.229f, 0.224f, 0.225f },
	};
	struct set s = { .max = 500 };
	int reps = 7, opt;
	struct naive nv;

	while ((opt = getopt_long(argc, argv, "n:r:s:m:l:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'n':
			s.max = (size_t)int_arg("images", optarg, 1, LONG_MAX);
			break;
		case 'r':
			reps = (int)int_arg("reps", optarg, 1, INT_MAX);
			break;
		case 's':
			p.out_size = (int)int_arg("size", optarg, 1, 4096);
			break;
		case 'm':
			if (strcmp(optarg, "train") && strcmp(optarg, "eval")) {
				fprintf(stderr, PROG ": --mode: expected train or eval, got '%s'\n", optarg);
				return 2;
			}
			p.mode = strcmp(optarg, "eval") == 0 ? COORDL_MODE_EVAL : COORDL_MODE_TRAIN;
			break;
		case 'l':
			if (strcmp(optarg, "f32") && strcmp(optarg, "u8")) {
				fprintf(stderr, PROG ": --layout: expected f32 or u8, got '%s'\n", optarg);
				return 2;
			}
			p.layout = strcmp(optarg, "u8") == 0 ? COORDL_LAYOUT_NHWC_U8 : COORDL_LAYOUT_NCHW_F32;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	load_tree(argv[optind], &s);
	if (s.n == 0) {
		fprintf(stderr, PROG ": no .jpg files under %s (make some with coordl-datagen)\n", argv[optind]);
		return 1;
	}

	coordl__prep_ctx_t *ctx = coordl__prep_ctx_create(&p);
	void *out = malloc(coordl__prep_sample_bytes(&p) > (size_t)p.out_size * p.out_size * 3 * sizeof(float)
			   ? coordl__prep_sample_bytes(&p) : (size_t)p.out_size * p.out_size * 3 * sizeof(float));
	nv.d.err = jpeg_std_error(&nv.em);
	nv.em.error_exit = naive_error;
	nv.em.emit_message = naive_quiet;
	nv.d.client_data = &nv;
	jpeg_create_decompress(&nv.d);
	nv.img = NULL;
	nv.tmp = nv.hw = nv.vw = NULL;
	nv.idx = NULL;
	nv.img_cap = nv.tmp_cap = nv.hw_cap = nv.vw_cap = nv.idx_cap = 0;
	if (!ctx || !out) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}

	/* Images the naive path cannot take (CMYK, corrupt) are left out of
	 * every variant, so all three do the same work. */
	size_t kept = 0, bytes = 0;
	for (size_t i = 0; i < s.n; i++) {
		char why[160];
		if (coordl__prep_item(ctx, s.it[i].buf, s.it[i].len, i, out, why, sizeof(why)) == 0
		    && naive_item(&nv, &p, &s.it[i], i, out, 0) == 0) {
			s.it[kept++] = s.it[i];
			bytes += s.it[i].len;
		} else {
			free(s.it[i].buf);
		}
	}
	s.n = kept;
	if (!kept) {
		fprintf(stderr, PROG ": no decodable images under %s\n", argv[optind]);
		return 1;
	}

	enum { V_PREP, V_NAIVE, V_DECODE, NV };
	static const char *names[NV] = { "coordl-prep", "naive decode+resize", "full decode only" };
	double *us[NV];
	for (int v = 0; v < NV; v++)
		us[v] = calloc((size_t)reps, sizeof(double));

	/* One untimed pass of each to warm caches and grow buffers. */
	for (int r = -1; r < reps; r++) {
		for (int v = 0; v < NV; v++) {
			double t0 = cpu_now();
			for (size_t i = 0; i < s.n; i++) {
				uint64_t seed = (uint64_t)i * 1000003u + (uint64_t)(r + 1);
				if (v == V_PREP)
					coordl__prep_item(ctx, s.it[i].buf, s.it[i].len, seed, out, NULL, 0);
				else
					naive_item(&nv, &p, &s.it[i], seed, out, v == V_DECODE);
			}
			if (r >= 0)
				us[v][r] = (cpu_now() - t0) * 1e6 / (double)s.n;
		}
	}

	printf("# %zu images, mean %.1f KB, out %dx%d %s %s, %d reps interleaved, thread CPU time\n", s.n,
	       bytes / 1e3 / (double)s.n, p.out_size, p.out_size, p.mode == COORDL_MODE_EVAL ? "eval" : "train",
	       p.layout == COORDL_LAYOUT_NHWC_U8 ? "NHWC-u8" : "NCHW-f32", reps);
	printf("%-22s %10s %10s %10s   %12s %12s %12s\n", "variant", "us/img min", "median", "max",
	       "img/s/core max", "median", "min");
	double med[NV];
	for (int v = 0; v < NV; v++) {
		qsort(us[v], (size_t)reps, sizeof(double), cmp_double);
		med[v] = us[v][reps / 2];
		printf("%-22s %10.1f %10.1f %10.1f   %12.0f %12.0f %12.0f\n", names[v], us[v][0], med[v],
		       us[v][reps - 1], 1e6 / us[v][0], 1e6 / med[v], 1e6 / us[v][reps - 1]);
	}
	printf("# speedup of coordl-prep over naive (median): %.2fx\n", med[V_NAIVE] / med[V_PREP]);

	for (int v = 0; v < NV; v++)
		free(us[v]);
	for (size_t i = 0; i < s.n; i++)
		free(s.it[i].buf);
	free(s.it);
	free(out);
	free(nv.img);
	free(nv.tmp);
	free(nv.hw);
	free(nv.vw);
	free(nv.idx);
	jpeg_destroy_decompress(&nv.d);
	coordl__prep_ctx_destroy(ctx);
	return 0;
}
