/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_prep.c: libFuzzer entry point for the JPEG prep stage, the loader's
 * parser of untrusted input. Each input is prepped in train mode (with a
 * seed taken from its length, so crops vary) and in eval mode, into both
 * output layouts; the only acceptable outcomes are 0 or -1 with a reason.
 *
 * Not part of `make check`. Build and run from the source tree with clang:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Ibuild -Iinclude -I. loader/test/fuzz_prep.c loader/prep.c \
 *     -ljpeg -lm -o fuzz_prep
 *   mkdir -p corpus && coordl-datagen --out seeds --classes 1 --images 20 --seed 1 \
 *     && cp seeds/class000/img* corpus/
 *   ./fuzz_prep -max_len=200000 corpus
 *
 * (-Ibuild names any configured build directory, for its config.h.)
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "coordl.h"
#include "loader/prep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static coordl__prep_ctx_t *ctx[4];
	static void *out;
	char why[160];

	if (!out) {
		for (int i = 0; i < 4; i++) {
			coordl__prep_params_t p = {
				.out_size = 64, .layout = i & 1, .mode = i >> 1,
				.scale_min = 0.08f, .scale_max = 1.0f,
				.ratio_min = 0.75f, .ratio_max = 4.0f / 3.0f, .flip_prob = 0.5f,
				.mean = { 0.5f, 0.5f, 0.5f }, .std = { 0.25f, 0.25f, 0.25f },
			};
			if (!(ctx[i] = coordl__prep_ctx_create(&p)))
				abort();
		}
		if (!(out = malloc(64 * 64 * 3 * sizeof(float))))
			abort();
	}
	for (int i = 0; i < 4; i++) {
		why[0] = '\0';
		if (coordl__prep_item(ctx[i], data, size, size * 31 + (uint64_t)i, out, why, sizeof(why)) < 0
		    && why[0] == '\0')
			abort();
	}
	return 0;
}
