/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl-datagen: write a deterministic, ImageNet-like JPEG dataset as an
 * ImageFolder tree (DIR/classNNN/imgNNNNNNN.jpg), plus optional corrupt
 * files, for the loader's tests and benchmarks.
 *
 * Every image is a pure function of (seed, index): its size, aspect, colour
 * kind and content come from counter-based hashes (loader/rng.h), so the
 * same arguments always write byte-identical files, with any --jobs.
 * Content imitates a photograph closely enough for realistic JPEG sizes
 * and decode cost: a lit background gradient with low-frequency variation,
 * sharp-edged shapes with their own shading, and mid- and high-frequency
 * texture whose strength varies per image (at 500x375, quality 90 the
 * mean is about 110 KB, like ImageNet). A few images are grayscale, CMYK
 * (Adobe-inverted, as Photoshop writes it), YCCK, progressive or 4:4:4, so
 * the decoder's less common paths see use.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "common/parse.h"
#include "loader/rng.h"

#define PROG "coordl-datagen"

/* Hash purposes: independent streams per image. */
enum { P_SHAPE = 11, P_CONTENT = 12, P_CORRUPT = 13 };

struct opts {
	const char *out;
	long classes, images, corrupt;
	uint64_t seed;
	int wmin, wmax, quality, jobs, verbose_tty;
};

struct job {
	const struct opts *o;
	int cdigits;
	pthread_mutex_t lock;
	long next, done;
	uint64_t bytes, img_bytes;
	int failed;
	char err[PATH_MAX + 256];
};

enum kind { K_RGB, K_GRAY, K_CMYK, K_YCCK };

struct encoded {
	unsigned char *buf;
	unsigned long len;
};

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

static void jerr_exit(j_common_ptr c)
{
	struct jerr *e = (struct jerr *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jb, 1);
}

static void jerr_quiet(j_common_ptr c)
{
	(void)c;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " --out DIR --classes C --images N --seed S [options]\n"
		"Write a deterministic ImageNet-like JPEG dataset as DIR/classNNN/imgNNNNNNN.jpg.\n"
		"Image i goes to class i %% C; the same arguments give byte-identical files.\n"
		"\n"
		"  -o, --out DIR          output directory (created if missing)\n"
		"  -c, --classes C        number of classes (1..100000)\n"
		"  -n, --images N         total number of images (0..100000000)\n"
		"  -s, --seed S           seed (unsigned 64-bit)\n"
		"  -w, --width-range A-B  long side drawn from A..B pixels (default 400-600)\n"
		"  -q, --quality Q        JPEG quality 1..100 (default 90)\n"
		"  -k, --corrupt K        also write K corrupt files corruptNNNN.jpg (truncated,\n"
		"                         random bytes, empty, garbage entropy data)\n"
		"  -j, --jobs T           threads (default: online CPUs, at most 8; the output\n"
		"                         does not depend on it)\n"
		"  -h, --help             show this help\n");
}

/* An option's integer in [lo, hi] (common/parse.h's grammar). */
static int parse_long(const char *s, long lo, long hi, long *v)
{
	int64_t x;

	if (syn_parse_i64(s, lo, hi, &x) < 0)
		return -1;
	*v = (long)x;
	return 0;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* Value noise: a (gw x gh) grid of random values, bilinearly interpolated
 * at cell size `cell`; one row is produced at a time into out[w]. */
struct vnoise {
	float *g;
	int gw, gh, cell;
};

static int vnoise_init(struct vnoise *v, int w, int h, int cell, coordl__rng_t *r)
{
	v->cell = cell;
	v->gw = w / cell + 2;
	v->gh = h / cell + 2;
	if (!(v->g = malloc(sizeof(float) * (size_t)v->gw * v->gh)))
		return -1;
	for (int i = 0; i < v->gw * v->gh; i++)
		v->g[i] = (float)(coordl__rng_uniform(r) * 2.0 - 1.0);
	return 0;
}

static void vnoise_row(const struct vnoise *v, int y, int w, float *tmp, float *out)
{
	int gy = y / v->cell;
	float fy = (float)(y % v->cell) / v->cell;
	const float *a = v->g + (size_t)gy * v->gw, *b = a + v->gw;
	float inv = 1.0f / v->cell;
	for (int j = 0; j < v->gw; j++)
		tmp[j] = a[j] + (b[j] - a[j]) * fy;
	for (int x = 0, j = 0, k = 0; x < w; x++) {
		float t = (float)k * inv;
		out[x] = tmp[j] + (tmp[j + 1] - tmp[j]) * t;
		if (++k == v->cell) {
			k = 0;
			j++;
		}
	}
}

/* Shapes drawn over the background: ellipses, rectangles and bars. */
struct shape {
	int type;               /* 0 ellipse, 1 rectangle, 2 diagonal bar */
	float cx, cy, rx, ry;   /* centre and half-extents */
	float col[3], shade[3]; /* colour and its gradient across the shape */
	float alpha;
};

static uint8_t clamp8(float v)
{
	return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f);
}

/* Synthesize image `idx` (w x h RGB, 3 bytes per pixel) into px. */
static int synth(const struct opts *o, long idx, int w, int h, uint8_t *px)
{
	coordl__rng_t r;
	struct vnoise low = { 0 }, mid = { 0 }, fine = { 0 };
	struct shape sh[16];
	float *tmp = NULL, *nl = NULL, *nm = NULL, *nf = NULL;
	float top[3], bot[3], tilt[3], lowc[3], amp_mid, amp_fine, amp_white;
	int nshapes, rv = -1;

	coordl__rng_seed(&r, coordl__hash4(o->seed, 0, (uint64_t)idx, P_CONTENT));
	for (int c = 0; c < 3; c++) {
		top[c] = (float)(40 + 200 * coordl__rng_uniform(&r));
		bot[c] = (float)(20 + 180 * coordl__rng_uniform(&r));
		tilt[c] = (float)(60 * coordl__rng_uniform(&r) - 30);
		lowc[c] = (float)(20 + 40 * coordl__rng_uniform(&r));
	}
	/* Busyness varies per image, as in real photographs: most of the
	 * JPEG size comes from the texture amplitudes. */
	double busy = 0.35 + 1.3 * coordl__rng_uniform(&r);
	amp_mid = (float)(26 * busy);
	amp_fine = (float)(50 * busy);
	amp_white = (float)(30 * busy);

	if (vnoise_init(&low, w, h, 48 + (int)coordl__rng_below(&r, 64), &r) < 0
	    || vnoise_init(&mid, w, h, 6 + (int)coordl__rng_below(&r, 6), &r) < 0
	    || vnoise_init(&fine, w, h, 2, &r) < 0)
		goto out;
	tmp = malloc(sizeof(float) * (size_t)(w / 2 + 3));
	nl = malloc(sizeof(float) * (size_t)w);
	nm = malloc(sizeof(float) * (size_t)w);
	nf = malloc(sizeof(float) * (size_t)w);
	if (!tmp || !nl || !nm || !nf)
		goto out;

	nshapes = 3 + (int)coordl__rng_below(&r, 12);
	for (int i = 0; i < nshapes; i++) {
		struct shape *s = &sh[i];
		s->type = (int)coordl__rng_below(&r, 3);
		s->cx = (float)(w * coordl__rng_uniform(&r));
		s->cy = (float)(h * coordl__rng_uniform(&r));
		s->rx = (float)(8 + w * 0.3 * coordl__rng_uniform(&r));
		s->ry = (float)(8 + h * 0.3 * coordl__rng_uniform(&r));
		for (int c = 0; c < 3; c++) {
			s->col[c] = (float)(255 * coordl__rng_uniform(&r));
			s->shade[c] = (float)(80 * coordl__rng_uniform(&r) - 40);
		}
		s->alpha = (float)(0.5 + 0.5 * coordl__rng_uniform(&r));
	}

	for (int y = 0; y < h; y++) {
		uint8_t *row = px + (size_t)y * w * 3;
		float fy = (float)y / h;
		vnoise_row(&low, y, w, tmp, nl);
		vnoise_row(&mid, y, w, tmp, nm);
		vnoise_row(&fine, y, w, tmp, nf);
		for (int x = 0; x < w; x++) {
			float fx = (float)x / w;
			for (int c = 0; c < 3; c++)
				row[3 * x + c] = clamp8(top[c] + (bot[c] - top[c]) * fy + tilt[c] * fx
							+ lowc[c] * nl[x]);
		}
		for (int i = 0; i < nshapes; i++) {
			const struct shape *s = &sh[i];
			float dy = (y - s->cy) / s->ry;
			if (dy < -1 || dy > 1)
				continue;
			int x0 = (int)(s->cx - s->rx), x1 = (int)(s->cx + s->rx) + 1;
			x0 = x0 < 0 ? 0 : x0;
			x1 = x1 > w ? w : x1;
			for (int x = x0; x < x1; x++) {
				float dx = (x - s->cx) / s->rx;
				int in = s->type == 0 ? dx * dx + dy * dy <= 1.0f
					: s->type == 1 ? 1 : fabsf(dx - dy) < 0.25f;
				if (!in)
					continue;
				for (int c = 0; c < 3; c++) {
					float v = s->col[c] + s->shade[c] * (dx + dy);
					float old = row[3 * x + c];
					row[3 * x + c] = clamp8(old + (v - old) * s->alpha);
				}
			}
		}
		/* Texture last, over everything: luma-correlated, with a little
		 * colour noise, as sensor noise and surface detail are. */
		uint64_t wr = coordl__mix64(o->seed ^ ((uint64_t)idx << 20) ^ (uint64_t)y);
		for (int x = 0; x < w; x++) {
			wr ^= wr << 13;
			wr ^= wr >> 7;
			wr ^= wr << 17;
			float t = amp_mid * nm[x] + amp_fine * nf[x]
				  + amp_white * ((float)(wr & 255) / 128.0f - 1.0f);
			for (int c = 0; c < 3; c++) {
				float cn = (float)((wr >> (8 + 8 * c)) & 15) - 7.5f;
				row[3 * x + c] = clamp8(row[3 * x + c] + t + cn * 0.4f * (float)busy);
			}
		}
	}
	rv = 0;
out:
	free(low.g);
	free(mid.g);
	free(fine.g);
	free(tmp);
	free(nl);
	free(nm);
	free(nf);
	return rv;
}

/* Encode RGB pixels as `kind`; on error fills err and returns -1. */
static int encode(const uint8_t *px, int w, int h, enum kind kind, int quality, int progressive,
		  int full_chroma, struct encoded *enc, char *err, size_t errlen)
{
	struct jpeg_compress_struct c;
	struct jerr e;
	uint8_t *row = malloc((size_t)w * 4);
	int nc;

	enc->buf = NULL;
	enc->len = 0;
	if (!row) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = jerr_exit;
	e.pub.output_message = jerr_quiet;
	if (setjmp(e.jb)) {
		snprintf(err, errlen, "libjpeg: %s", e.msg);
		jpeg_destroy_compress(&c);
		free(row);
		free(enc->buf);
		enc->buf = NULL;
		return -1;
	}
	/* Set after setjmp, not before: a local that lives across setjmp may be
	 * clobbered by longjmp (gcc 16 refuses it under -Werror=clobbered). */
	nc = kind == K_GRAY ? 1 : kind == K_RGB ? 3 : 4;
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &enc->buf, &enc->len);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = nc;
	c.in_color_space = nc == 1 ? JCS_GRAYSCALE : nc == 3 ? JCS_RGB : JCS_CMYK;
	jpeg_set_defaults(&c);
	if (kind == K_YCCK)
		jpeg_set_colorspace(&c, JCS_YCCK);
	jpeg_set_quality(&c, quality, TRUE);
	if (full_chroma && nc == 3)
		c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
	if (progressive)
		jpeg_simple_progression(&c);
	jpeg_start_compress(&c, TRUE);
	for (int y = 0; y < h; y++) {
		const uint8_t *p = px + (size_t)y * w * 3;
		JSAMPROW rp = nc == 3 ? (JSAMPROW)p : row;
		if (nc == 1) {
			for (int x = 0; x < w; x++, p += 3)
				row[x] = (uint8_t)((p[0] * 77 + p[1] * 150 + p[2] * 29 + 128) >> 8);
		} else if (nc == 4) {
			/* Adobe-inverted CMYK: the file stores 255 - ink. */
			for (int x = 0; x < w; x++, p += 3) {
				int mx = p[0] > p[1] ? p[0] : p[1];
				mx = mx > p[2] ? mx : p[2];
				for (int ch = 0; ch < 3; ch++)
					row[4 * x + ch] = (uint8_t)(255 - (mx ? (mx - p[ch]) * 255 / mx : 0));
				row[4 * x + 3] = (uint8_t)mx;
			}
		}
		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(row);
	return 0;
}

static int write_file(const char *path, const void *buf, size_t len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(buf, 1, len, f) != len) || fclose(f) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Image idx: size, kind and encoding flags from its own hash. */
static int make_image(const struct opts *o, long idx, struct encoded *enc, char *err, size_t errlen)
{
	coordl__rng_t r;
	int w, h, longside, shortside, rv;
	enum kind kind = K_RGB;
	uint8_t *px;
	static const double aspects[] = { 4.0 / 3, 4.0 / 3, 4.0 / 3, 4.0 / 3, 3.0 / 2, 3.0 / 2, 1.0, 16.0 / 9 };

	coordl__rng_seed(&r, coordl__hash4(o->seed, 0, (uint64_t)idx, P_SHAPE));
	longside = o->wmin + (int)coordl__rng_below(&r, (uint64_t)(o->wmax - o->wmin + 1));
	shortside = (int)lround(longside / aspects[coordl__rng_below(&r, 8)]
				* (0.97 + 0.06 * coordl__rng_uniform(&r)));
	shortside = shortside < 8 ? 8 : shortside > longside ? longside : shortside;
	if (coordl__rng_uniform(&r) < 0.25) {
		w = shortside;
		h = longside;
	} else {
		w = longside;
		h = shortside;
	}
	/* Fixed positions, so that even a small set has every kind. */
	if (idx % 50 == 7)
		kind = K_GRAY;
	else if (idx % 100 == 13)
		kind = K_CMYK;
	else if (idx % 200 == 113)
		kind = K_YCCK;
	if (!(px = malloc((size_t)w * h * 3))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rv = synth(o, idx, w, h, px);
	if (rv < 0)
		snprintf(err, errlen, "out of memory");
	else
		rv = encode(px, w, h, kind, o->quality, idx % 20 == 11, idx % 10 == 3, enc, err, errlen);
	free(px);
	return rv;
}

/* Corrupt file k: the four kinds in turn. */
static int make_corrupt(const struct opts *o, long k, struct encoded *enc, char *err, size_t errlen)
{
	coordl__rng_t r;
	struct opts small = *o;
	size_t n, sos = 0;

	coordl__rng_seed(&r, coordl__hash4(o->seed, 1, (uint64_t)k, P_CORRUPT));
	switch (k % 4) {
	case 0: /* a real JPEG cut short */
	case 3: /* a real JPEG whose entropy data is garbage */
		small.seed = o->seed ^ 0xc0bbu;
		if (make_image(&small, k, enc, err, errlen) < 0)
			return -1;
		if (k % 4 == 0) {
			enc->len = (unsigned long)(enc->len * (0.2 + 0.6 * coordl__rng_uniform(&r)));
			return 0;
		}
		for (size_t i = 2; i + 4 < enc->len; i++)
			if (enc->buf[i] == 0xFF && enc->buf[i + 1] == 0xDA) {
				sos = i + 2 + ((size_t)enc->buf[i + 2] << 8 | enc->buf[i + 3]);
				break;
			}
		/* Keep the EOI, so only the scan itself is wrong. */
		for (size_t i = sos ? sos : enc->len; i + 2 < enc->len; i++)
			enc->buf[i] = (uint8_t)coordl__rng_next(&r);
		return 0;
	case 1: /* random bytes with a .jpg name */
		n = 1000 + coordl__rng_below(&r, 50000);
		if (!(enc->buf = malloc(n))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			enc->buf[i] = (uint8_t)coordl__rng_next(&r);
		enc->buf[0] = 0x42; /* never an SOI by accident */
		enc->len = n;
		return 0;
	default: /* empty */
		enc->buf = NULL;
		enc->len = 0;
		return 0;
	}
}

static void *worker(void *arg)
{
	struct job *j = arg;
	const struct opts *o = j->o;
	long total = o->images + o->corrupt;
	char err[PATH_MAX + 256], path[PATH_MAX];

	for (;;) {
		long i;
		struct encoded enc = { NULL, 0 };
		int rv;

		pthread_mutex_lock(&j->lock);
		i = j->failed ? total : j->next++;
		pthread_mutex_unlock(&j->lock);
		if (i >= total)
			break;
		if (i < o->images) {
			snprintf(path, sizeof(path), "%s/class%0*ld/img%07ld.jpg", o->out, j->cdigits,
				 i % o->classes, i);
			rv = make_image(o, i, &enc, err, sizeof(err));
		} else {
			long k = i - o->images;
			snprintf(path, sizeof(path), "%s/class%0*ld/corrupt%04ld.jpg", o->out, j->cdigits,
				 k % o->classes, k);
			rv = make_corrupt(o, k, &enc, err, sizeof(err));
		}
		if (rv == 0)
			rv = write_file(path, enc.buf, enc.len, err, sizeof(err));
		free(enc.buf);

		pthread_mutex_lock(&j->lock);
		if (rv < 0 && !j->failed) {
			j->failed = 1;
			snprintf(j->err, sizeof(j->err), "%s", err);
		}
		j->done++;
		j->bytes += enc.len;
		if (i < o->images)
			j->img_bytes += enc.len;
		if (o->verbose_tty && (j->done % 64 == 0 || j->done == total))
			fprintf(stderr, "\r" PROG ": %ld/%ld files", j->done, total);
		pthread_mutex_unlock(&j->lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "classes", required_argument, NULL, 'c' },
		{ "images", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "width-range", required_argument, NULL, 'w' },
		{ "quality", required_argument, NULL, 'q' },
		{ "corrupt", required_argument, NULL, 'k' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .classes = -1, .images = -1, .wmin = 400, .wmax = 600, .quality = 90, .jobs = 1 };
	struct job j;
	int opt, have_seed = 0, jobs_set = 0;
	long v;
	struct timeval t0, t1;

	while ((opt = getopt_long(argc, argv, "o:c:n:s:w:q:k:j:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'o':
			o.out = optarg;
			break;
		case 'c':
			if (parse_long(optarg, 1, 100000, &o.classes) < 0) {
				fprintf(stderr, PROG ": --classes: expected 1..100000, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			if (parse_long(optarg, 0, 100000000, &o.images) < 0) {
				fprintf(stderr, PROG ": --images: expected 0..100000000, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (syn_parse_u64(optarg, 0, UINT64_MAX, &o.seed) < 0) {
				fprintf(stderr, PROG ": --seed: expected an unsigned 64-bit number, got '%s'\n",
					optarg);
				return 2;
			}
			have_seed = 1;
			break;
		case 'w': {
			long a = -1, b = -1;
			char buf[64], *dash;
			snprintf(buf, sizeof(buf), "%s", optarg);
			if ((dash = strchr(buf, '-')) != NULL) {
				*dash = '\0';
				if (parse_long(buf, 16, 8192, &a) < 0 || parse_long(dash + 1, 16, 8192, &b) < 0)
					a = -1;
			}
			if (a < 0 || a > b) {
				fprintf(stderr, PROG ": --width-range: expected MIN-MAX with 16 <= MIN <= MAX <= 8192, got '%s'\n",
					optarg);
				return 2;
			}
			o.wmin = (int)a;
			o.wmax = (int)b;
			break;
		}
		case 'q':
			if (parse_long(optarg, 1, 100, &v) < 0) {
				fprintf(stderr, PROG ": --quality: expected 1..100, got '%s'\n", optarg);
				return 2;
			}
			o.quality = (int)v;
			break;
		case 'k':
			if (parse_long(optarg, 0, 1000000, &o.corrupt) < 0) {
				fprintf(stderr, PROG ": --corrupt: expected 0..1000000, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'j':
			if (parse_long(optarg, 1, 256, &v) < 0) {
				fprintf(stderr, PROG ": --jobs: expected 1..256, got '%s'\n", optarg);
				return 2;
			}
			o.jobs = (int)v;
			jobs_set = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.out || o.classes < 0 || o.images < 0 || !have_seed) {
		fprintf(stderr, PROG ": missing%s%s%s%s (--out, --classes, --images and --seed are "
			"required; see --help)\n", o.out ? "" : " --out", o.classes < 0 ? " --classes" : "",
			o.images < 0 ? " --images" : "", have_seed ? "" : " --seed");
		return 2;
	}
	o.verbose_tty = isatty(STDERR_FILENO);
	if (!jobs_set) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		o.jobs = n < 1 ? 1 : n > 8 ? 8 : (int)n;
	}

	memset(&j, 0, sizeof(j));
	j.o = &o;
	j.cdigits = 3;
	for (long c = 1000; c <= o.classes - 1; c *= 10)
		j.cdigits++;
	pthread_mutex_init(&j.lock, NULL);

	if (mkdir_p(o.out) < 0) {
		fprintf(stderr, PROG ": cannot create %s: %s\n", o.out, strerror(errno));
		return 1;
	}
	for (long c = 0; c < o.classes; c++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/class%0*ld", o.out, j.cdigits, c);
		if (mkdir(path, 0777) < 0 && errno != EEXIST) {
			fprintf(stderr, PROG ": cannot create %s: %s\n", path, strerror(errno));
			return 1;
		}
	}

	gettimeofday(&t0, NULL);
	pthread_t tid[256];
	int started = 0;
	for (int t = 1; t < o.jobs; t++) {
		if (pthread_create(&tid[started], NULL, worker, &j) != 0)
			break;
		started++;
	}
	worker(&j);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	gettimeofday(&t1, NULL);
	if (o.verbose_tty && o.images + o.corrupt > 0)
		fputc('\n', stderr);
	if (j.failed) {
		fprintf(stderr, PROG ": %s\n", j.err);
		return 1;
	}
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_usec - t0.tv_usec) / 1e6;
	printf("%s: %ld images and %ld corrupt files in %ld classes, %.1f MB (mean image %.1f KB), %.1f s\n",
	       o.out, o.images, o.corrupt, o.classes, j.bytes / 1e6,
	       o.images ? j.img_bytes / 1e3 / (double)o.images : 0.0, secs);
	pthread_mutex_destroy(&j.lock);
	return 0;
}
