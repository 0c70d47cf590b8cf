/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_ckpt.c: libFuzzer entry point for the checkpoint file parser and
 * recovery (loader/ckpt_file.c). A checkpoint file may be torn by a crash,
 * truncated, corrupted on disk or planted by another program of the user,
 * so ckpt_file.c promises: a header is accepted only when it is complete
 * and its CRC matches, its sections are named, aligned, sorted, disjoint
 * and inside the payload, and it encodes back to the same bytes; a file is
 * loaded only when its length is exactly header plus payload and the
 * payload's CRC matches; anything else is refused (EINVAL and a reason),
 * recovery skipping it with ENOENT, never an access outside the input.
 *
 * Input: the bytes of one checkpoint file. They go through the header
 * parser (from an exact-size heap copy, so under ASan any read beyond it is
 * a crash) and, as a file in a scratch directory, through recovery.
 *
 * Fuzzed by tests/fuzz/run-fuzz.sh (target "ckpt"); `make check` replays
 * its seeds, tests/fuzz/corpus/ckpt/, through tests/fuzz/replay.c.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader/ckpt.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_header(const uint8_t *data, size_t size)
{
	coordl__ckpt_header_t h, again;
	unsigned char *copy = malloc(size ? size : 1), *enc;
	char why[200] = "";
	uint64_t end = 0;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	errno = 0;
	if (coordl__ckpt_parse_header(copy, size, &h, why, sizeof(why)) < 0) {
		if ((errno != EINVAL && errno != ENOMEM) || !why[0])
			abort();
		free(copy);
		return;
	}
	if (h.nsections < 1 || h.nsections > COORDL_CKPT_MAX_SECTIONS ||
	    h.header_bytes != coordl__ckpt_header_size(h.nsections) || h.header_bytes > size ||
	    h.version != COORDL_CKPT_FORMAT_VERSION || h.flags)
		abort();
	for (uint32_t i = 0; i < h.nsections; i++) {
		const coordl__ckpt_section_t *s = &h.sec[i];
		if (!coordl__ckpt_name_valid(s->name) || s->offset % COORDL_CKPT_ALIGN ||
		    s->offset < end || s->offset > h.payload_bytes ||
		    s->length > h.payload_bytes - s->offset)
			abort();
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(h.sec[j].name, s->name))
				abort();
		end = s->offset + s->length;
	}
	/* An accepted header encodes back to the same bytes. */
	if (!(enc = malloc(h.header_bytes)))
		abort();
	again = h;
	coordl__ckpt_encode(&again, enc);
	if (again.header_crc != h.header_crc || memcmp(enc, copy, h.header_bytes))
		abort();
	free(enc);
	free(h.sec);
	free(copy);
}

static void check_recovery(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_scratch_dir("ckpt");
	char path[512];
	coordl_ckpt_image_t *img;
	coordl_ckpt_scan_t scan;
	coordl_error_t err;

	snprintf(path, sizeof(path), "%s/ckpt-00000000000000000001.ckpt", dir);
	fuzz_write_file(path, data, size);
	errno = 0;
	img = coordl_ckpt_load_latest(dir, "ckpt", &scan, &err);
	if (!img) {
		if (errno != ENOENT || scan.files != 1 || scan.skipped != 1 || !scan.why[0])
			abort();
		return;
	}
	if (scan.files != 1 || scan.skipped != 0 || coordl_ckpt_image_bytes(img) != size)
		abort();
	/* Every section lies inside the input's payload, byte for byte. */
	for (int i = 0; i < coordl_ckpt_image_sections(img); i++) {
		const char *name = coordl_ckpt_image_section_name(img, i);
		uint64_t n = 0;
		const unsigned char *p = coordl_ckpt_image_section(img, name, &n);
		coordl__ckpt_header_t h;
		char why[200];

		if (!name || !p || coordl__ckpt_parse_header(data, size, &h, why, sizeof(why)) < 0)
			abort();
		if (h.header_bytes + h.sec[i].offset + n > size ||
		    memcmp(p, data + h.header_bytes + h.sec[i].offset, n) || h.sec[i].length != n)
			abort();
		free(h.sec);
	}
	coordl_ckpt_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_header(data, size);
	check_recovery(data, size);
	return 0;
}
