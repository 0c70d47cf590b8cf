/*
 * fuzz_source.c: libFuzzer entry point for the loader's text parsers of
 * untrusted input: the shard index (.cdx) and the file list. Each input is
 * written to a scratch directory that also holds one small shard file, then
 * opened both ways; an accepted source must have every item inside its
 * shard and every label below its class count, and fetching every item must
 * succeed or fail cleanly.
 *
 * Not part of `make check`. Build and run from the source tree with clang:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Ibuild -Iinclude -Iloader loader/test/fuzz_source.c loader/source.c \
 *     loader/env.c loader/util.c -o fuzz_source
 *   mkdir -p corpus && printf 'coordl-index 1\nclasses 1\na\nshards 1\ns.cds\nitems 1\n0 0 4 0 x\n' \
 *     >corpus/seed && ./fuzz_source -max_len=4096 corpus
 *
 * (-Ibuild names any configured build directory, for its config.h.)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void setup(void)
{
	char p[128];
	FILE *f;

	if (dir[0])
		return;
	snprintf(dir, sizeof(dir), "/tmp/fuzz-source-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(p, sizeof(p), "%s/s.cds", dir);
	if (!(f = fopen(p, "wb")))
		abort();
	fwrite("0123456789abcdef", 1, 16, f);
	fclose(f);
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
	char p[128];
	FILE *f;

	setup();
	snprintf(p, sizeof(p), "%s/in.cdx", dir);
	if (!(f = fopen(p, "wb")))
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	try_open(p, COORDL_SOURCE_SHARDS);
	try_open(p, COORDL_SOURCE_FILELIST);
	return 0;
}
