/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prep_internal.h: pieces of the prep stage that tests and benchmarks need
 * beyond loader/prep.h, chiefly the crop geometry, so that a reference
 * implementation can resample exactly the box the fast path decoded.
 * Not part of the pipeline's interface; the pipeline uses prep.h only.
 */
#ifndef COORDL_PREP_INTERNAL_H
#define COORDL_PREP_INTERNAL_H

#include <stdint.h>

#include "loader/prep.h"

/* Limits on the images prep accepts (larger ones are rejected as absurd). */
#define COORDL__PREP_MAX_SIDE 16384
#define COORDL__PREP_MAX_PIXELS (64L * 1024 * 1024)
/*
 * Limits on what one decode may cost (a small crafted file must not take a
 * worker's memory or minutes): the scans of a progressive JPEG (encoders
 * write about 10) and libjpeg's memory for the whole-image coefficient
 * buffers that progressive and multi-scan JPEGs need (2 bytes per sample:
 * 128 MiB is a 4:2:0 image of about 44 Mpixels). Beyond either, the item
 * is corrupt.
 */
#define COORDL__PREP_MAX_SCANS 100
#define COORDL__PREP_MAX_MEMORY (128L * 1024 * 1024)
/* Output sizes accepted by coordl__prep_ctx_create(). */
#define COORDL__PREP_MAX_OUT 4096

/*
 * Where one sample comes from in a w x h source image, in full-resolution
 * pixel units (pixel j covers [j, j+1)). The box [x, x+bw) x [y, y+bh) is
 * resampled to out_size x out_size; the filter only reads pixels inside the
 * region [rx0, rx1) x [ry0, ry1): the crop box itself in train mode (as
 * torchvision crops before it resizes), the whole image in eval mode (as
 * it resizes before it crops). flip mirrors the output horizontally.
 */
typedef struct coordl__prep_box {
	double x, y, bw, bh;
	int rx0, ry0, rx1, ry1;
	int flip;
} coordl__prep_box_t;

/*
 * Geometry of the sample drawn for sample_seed from a w x h image under p
 * (train: RandomResizedCrop with torchvision's algorithm, 10 tries then the
 * central fallback, and a flip with probability flip_prob; eval: short side
 * to out_size*256/224, central out_size square). Depends on nothing else.
 */
void coordl__prep_geometry(const coordl__prep_params_t *p, int w, int h, uint64_t sample_seed,
			   coordl__prep_box_t *box);

/*
 * The DCT scale numerator (over 8: 1, 2, 4 or 8) that prep decodes this box
 * at: the smallest one that keeps the scaled box at least out_size wide
 * and high.
 */
int coordl__prep_scale_num(const coordl__prep_box_t *box, int out_size);

#endif
