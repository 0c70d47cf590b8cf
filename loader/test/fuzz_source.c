/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_source.c: libFuzzer entry point for the loader's text parsers of
 * untrusted input: the shard index (.cdx) and the file list. Each input is
 * written to a scratch directory that also holds one small shard file, then
 * opened both ways; an accepted source must have every item inside its
 * shard and every label below its class count, and fetching every item must
 * succeed or fail cleanly.
 *
 * Fuzzed by tests/fuzz/run-fuzz.sh (target "source"); `make check` replays
 * its seeds, tests/fuzz/corpus/source/, through tests/fuzz/replay.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/source.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scratch directory with a 16-byte shard s.cds that indexes may name. */
static const char *setup(void)
{
	static char shard[320];
	FILE *f;

	if (!shard[0]) {
		snprintf(shard, sizeof(shard), "%s/s.cds", fuzz_scratch_dir("source"));
		if (!(f = fopen(shard, "wb")))
			abort();
		fwrite("0123456789abcdef", 1, 16, f);
		fclose(f);
	}
	return fuzz_scratch_dir("source");
}

static void try_open(const char *path, int kind)
{
	coordl_error_t err;
	coordl__source_t *s = coordl__source_open(path, kind, &err);
	uint8_t *buf = NULL;
	size_t cap = 0, len;
	char why[128];

	if (!s)
		return;
	for (size_t i = 0; i < coordl__source_count(s) && i < 64; i++) {
		if (coordl__source_label(s, i) < 0 || coordl__source_label(s, i) >= coordl__source_classes(s))
			abort();
		if (kind == COORDL_SOURCE_SHARDS &&
		    coordl__source_fetch(s, i, &buf, &cap, &len, why, sizeof(why)) < 0)
			abort(); /* a validated index must never point outside its shard */
	}
	free(buf);
	coordl__source_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char p[352];

	snprintf(p, sizeof(p), "%s/in.cdx", setup());
	fuzz_write_file(p, data, size);
	try_open(p, COORDL_SOURCE_SHARDS);
	try_open(p, COORDL_SOURCE_FILELIST);
	return 0;
}
