/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_util.h: the pieces the libFuzzer targets in tests/fuzz/ share.
 * Header-only (static inline) because tests/fuzz/run-fuzz.sh builds each
 * target from its own .c and the sources it tests, with no library.
 */
#ifndef SYNERGY_FUZZ_UTIL_H
#define SYNERGY_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The input as a NUL-terminated string (an embedded NUL ends it early, as
 * it would for text read with fgets), or NULL when out of memory. */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

/* One scratch directory, ${TMPDIR:-/tmp}/fuzz-TAG-XXXXXX, for the parsers
 * that read files. It is made once: libFuzzer runs every input in one
 * process, and a fresh directory per input would only cost time. The
 * corpus replay (replay.c) points TMPDIR at a directory it removes. */
static inline const char *fuzz_scratch_dir(const char *tag)
{
	static char dir[256];
	const char *tmp = getenv("TMPDIR");

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(dir), "%s/fuzz-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
	if (!mkdtemp(dir))
		abort();
	return dir;
}

/* The scratch file NAME in that directory. */
static inline const char *fuzz_scratch_path(const char *tag, const char *name)
{
	static char path[320];

	if (!path[0])
		snprintf(path, sizeof(path), "%s/%s", fuzz_scratch_dir(tag), name);
	return path;
}

/* Replace the file at path with the input's bytes; abort() on any error,
 * since a target that silently tests a stale file tests nothing. */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "w");

	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	if (fclose(f) != 0)
		abort();
}

#endif
