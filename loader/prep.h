/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prep.h: internal interface between the pipeline and the image prep stage.
 *
 * A prep context belongs to one worker thread (libjpeg state, scratch
 * buffers allocated once and reused: no allocation per item on the hot
 * path). coordl__prep_item() turns one encoded JPEG into one output sample
 * written in place into the batch buffer. All randomness comes from
 * sample_seed, so the output depends only on (bytes, params, sample_seed).
 */
#ifndef COORDL_PREP_H
#define COORDL_PREP_H

#include <stddef.h>
#include <stdint.h>

typedef struct coordl__prep_params {
	int out_size;               /* output H = W */
	int layout;                 /* enum coordl_layout */
	int mode;                   /* COORDL_MODE_TRAIN or COORDL_MODE_EVAL */
	float scale_min, scale_max; /* RandomResizedCrop area fraction */
	float ratio_min, ratio_max; /* aspect ratio w/h */
	float flip_prob;
	float mean[3], std[3];
} coordl__prep_params_t;

typedef struct coordl__prep_ctx coordl__prep_ctx_t;

/* Bytes one output sample occupies for these params. */
size_t coordl__prep_sample_bytes(const coordl__prep_params_t *p);

/* Create / destroy a per-thread context. create returns NULL with errno. */
coordl__prep_ctx_t *coordl__prep_ctx_create(const coordl__prep_params_t *p);
void coordl__prep_ctx_destroy(coordl__prep_ctx_t *ctx);

/*
 * Decode and augment one item into dst (coordl__prep_sample_bytes() bytes).
 * Returns 0 on success; -1 when the item is not a decodable JPEG (corrupt,
 * truncated, unsupported), with a short reason in why[whylen]; dst content
 * is then unspecified. Never crashes on hostile input.
 */
int coordl__prep_item(coordl__prep_ctx_t *ctx, const uint8_t *jpeg, size_t len,
		      uint64_t sample_seed, void *dst, char *why, size_t whylen);

/* Write a synthetic sample (constant, deterministic) for COORDL_MODE_SYNTHETIC. */
void coordl__prep_synthetic(const coordl__prep_params_t *p, uint64_t sample_seed, void *dst);

#endif
