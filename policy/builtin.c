/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * builtin.c: built-in sensitivity profiles for the ten models the Synergy
 * simulator uses, on the paper's grid (cores {1,2,3,4,5,6,9,12,24} x cache GB
 * {20.8,62.5,125,187.5,250} per GPU, normalised to 1.0 at 3 cores and
 * 62.5 GB, the GPU-proportional share of an 8-GPU, 24-core, 500 GB server).
 *
 * These grids are RECONSTRUCTED, not measured. The Synergy paper (OSDI 2022)
 * reports only a few points: ResNet-18 2.4x at 9 cores; AlexNet 2.94x at 12
 * cores and 125 GB; ResNet-50 1.15x at 4 cores; speech M5 2.5x at 6 cores and
 * 187.5 GB; GNMT, Transformer and LSTM flat at 1.0. ShuffleNet, MobileNet and
 * DeepSpeech are our own assumptions in the same spirit. Each grid is the
 * minimum of a CPU curve (prep rate: linear in cores until the GPU saturates)
 * and a memory curve (fetch rate: rises as more of the dataset stays cached),
 * which is the DS-Analyzer what-if model: min(R_gpu, R_prep, R_fetch).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "synergy_policy.h"

#define MN(a, b) ((a) < (b) ? (a) : (b))
#define ROW(c, m0, m1, m2, m3, m4) { MN(c, m0), MN(c, m1), MN(c, m2), MN(c, m3), MN(c, m4) }
/* A grid from nine CPU factors (one per core count) and five memory factors. */
#define GRID(c0, c1, c2, c3, c4, c5, c6, c7, c8, m0, m1, m2, m3, m4)                        \
	{ ROW(c0, m0, m1, m2, m3, m4), ROW(c1, m0, m1, m2, m3, m4), ROW(c2, m0, m1, m2, m3, m4), \
	  ROW(c3, m0, m1, m2, m3, m4), ROW(c4, m0, m1, m2, m3, m4), ROW(c5, m0, m1, m2, m3, m4), \
	  ROW(c6, m0, m1, m2, m3, m4), ROW(c7, m0, m1, m2, m3, m4), ROW(c8, m0, m1, m2, m3, m4) }
#define PROFILE(k, desc, grid)                                                    \
	{ .key = k, .model = desc, .n_cpu = 9, .n_mem = 5,                        \
	  .cpus = { 1, 2, 3, 4, 5, 6, 9, 12, 24 },                                \
	  .mem_gb = { 20.8, 62.5, 125, 187.5, 250 }, .tput = grid,                \
	  .prop_cpus = 3, .prop_mem_gb = 62.5, .machine = "built-in",             \
	  .tool = "reconstructed from the Synergy paper, not measured" }

static const struct builtin {
	syn_category_t cat;
	syn_profile_t p;
} builtins[] = {
	/* Image: CPU-bound below the peak; memory matters once the cache holds
	 * less than the working set. */
	{ SYN_CAT_IMAGE, PROFILE("resnet18", "ResNet-18 (image); 2.4x at 9 cores",
		GRID(0.35, 0.68, 1.0, 1.3, 1.6, 1.85, 2.4, 2.4, 2.4,
		     0.85, 2.4, 2.45, 2.45, 2.45)) },
	{ SYN_CAT_IMAGE, PROFILE("alexnet", "AlexNet (image); 2.94x at 12 cores and 125 GB",
		GRID(0.33, 0.67, 1.0, 1.33, 1.67, 2.0, 2.6, 2.94, 2.94,
		     0.8, 2.2, 2.94, 2.94, 2.94)) },
	{ SYN_CAT_IMAGE, PROFILE("resnet50", "ResNet-50 (image); 1.15x at 4 cores",
		GRID(0.4, 0.75, 1.0, 1.15, 1.15, 1.15, 1.15, 1.15, 1.15,
		     0.95, 1.15, 1.15, 1.15, 1.15)) },
	{ SYN_CAT_IMAGE, PROFILE("shufflenet", "ShuffleNet-v2 (image); assumed 3.0x at 12 cores and 125 GB",
		GRID(0.33, 0.67, 1.0, 1.33, 1.67, 2.0, 2.7, 3.0, 3.0,
		     0.85, 2.5, 3.0, 3.0, 3.0)) },
	{ SYN_CAT_IMAGE, PROFILE("mobilenet", "MobileNet-v2 (image); assumed 2.2x at 9 cores",
		GRID(0.34, 0.67, 1.0, 1.3, 1.6, 1.9, 2.2, 2.2, 2.2,
		     0.9, 2.2, 2.2, 2.2, 2.2)) },
	/* Language: GPU-bound, insensitive to cores and cache. */
	{ SYN_CAT_LANGUAGE, PROFILE("gnmt", "GNMT (language); flat",
		GRID(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)) },
	{ SYN_CAT_LANGUAGE, PROFILE("transformer", "Transformer (language); flat",
		GRID(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)) },
	{ SYN_CAT_LANGUAGE, PROFILE("lstm", "LSTM (language); flat",
		GRID(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)) },
	/* Speech: both CPU (feature extraction) and cache sensitive. */
	{ SYN_CAT_SPEECH, PROFILE("m5", "M5 (speech); 2.5x at 6 cores and 187.5 GB",
		GRID(0.35, 0.7, 1.0, 1.5, 2.0, 2.5, 2.5, 2.5, 2.5,
		     0.8, 1.3, 2.0, 2.5, 2.5)) },
	{ SYN_CAT_SPEECH, PROFILE("deepspeech", "DeepSpeech (speech); assumed 1.6x at 6 cores and 125 GB",
		GRID(0.5, 0.8, 1.0, 1.3, 1.5, 1.6, 1.6, 1.6, 1.6,
		     0.9, 1.2, 1.6, 1.6, 1.6)) },
};

#define N_BUILTIN ((int)(sizeof builtins / sizeof builtins[0]))

int syn_builtin_count(void)
{
	return N_BUILTIN;
}

const syn_profile_t *syn_builtin_at(int i, syn_category_t *cat)
{
	if (i < 0 || i >= N_BUILTIN) {
		errno = EINVAL;
		return NULL;
	}
	if (cat)
		*cat = builtins[i].cat;
	return &builtins[i].p;
}

const syn_profile_t *syn_builtin_find(const char *key)
{
	for (int i = 0; key && i < N_BUILTIN; i++)
		if (strcasecmp(builtins[i].p.key, key) == 0)
			return &builtins[i].p;
	errno = ENOENT;
	return NULL;
}
