/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * testdata.c: writes the tiny test datasets (see testdata.h) with libjpeg.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "tests/tap.h"
#include "loader/test/testdata.h"

char *td_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *p;

	if (!base || !*base)
		base = "/tmp";
	if (asprintf(&p, "%s/coordl-%s-XXXXXX", base, tag) < 0)
		bail_out("out of memory");
	if (!mkdtemp(p))
		bail_out("mkdtemp failed");
	return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void td_rmrf(const char *path)
{
	if (path)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int td_write_jpeg(const char *path, int w, int h, unsigned seed)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr jerr;
	FILE *f = fopen(path, "wb");
	unsigned char *row;

	if (!f)
		return -1;
	if (!(row = malloc((size_t)w * 3))) {
		fclose(f);
		return -1;
	}
	c.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, f);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 90, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		unsigned y = c.next_scanline;
		for (int x = 0; x < w; x++) {
			row[3 * x + 0] = (unsigned char)(x * 255 / (w > 1 ? w - 1 : 1) + seed * 37);
			row[3 * x + 1] = (unsigned char)(y * 255 / (unsigned)(h > 1 ? h - 1 : 1) + seed * 11);
			row[3 * x + 2] = (unsigned char)(((unsigned)x ^ y) * 3 + seed * 71);
		}
		JSAMPROW rp = row;
		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(row);
	return fclose(f) == 0 ? 0 : -1;
}

int td_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	if (len && fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

long long td_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

double td_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long long td_file_blocks(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_blocks * 512 : -1;
}

long long td_dir_blocks(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long long sum = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			sum += (long long)st.st_blocks * 512;
	}
	closedir(d);
	return sum;
}

long long td_imagefolder(const char *root, int ncls, int nper)
{
	char p[4096];
	long long total = 0;

	if (mkdir(root, 0700) < 0 && errno != EEXIST)
		return -1;
	for (int c = 0; c < ncls; c++) {
		snprintf(p, sizeof(p), "%s/c%02d", root, c);
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -1;
		for (int i = 0; i < nper; i++) {
			long long sz;
			snprintf(p, sizeof(p), "%s/c%02d/img%04d.jpg", root, c, i);
			if (td_write_jpeg(p, 40 + (i % 5) * 4, 32 + (c % 3) * 4, (unsigned)(c * 1000 + i)) < 0)
				return -1;
			if ((sz = td_file_size(p)) < 0)
				return -1;
			total += sz;
		}
	}
	return total;
}

long td_run_epoch(coordl_loader_t *ld, uint64_t epoch, uint64_t *idx, size_t cap, void *data,
		  size_t data_cap)
{
	coordl_error_t err = { "" };
	coordl_batch_t *b;
	size_t n = 0, off = 0;
	int rc;

	if (coordl_set_epoch(ld, epoch, &err) < 0) {
		diag("set_epoch: %s", err.text);
		return -1;
	}
	while ((rc = coordl_next(ld, &b, &err)) == 1) {
		for (int i = 0; i < b->n; i++, n++)
			if (idx && n < cap)
				idx[n] = b->indices[i];
		if (data && off + b->data_bytes <= data_cap) {
			memcpy((char *)data + off, b->data, b->data_bytes);
			off += b->data_bytes;
		}
		coordl_release(ld, b);
	}
	if (rc < 0) {
		diag("next: %s", err.text);
		return -1;
	}
	return (long)n;
}
