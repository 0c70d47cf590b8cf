/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_remote.c: libFuzzer entry point for the parsers of what a remote
 * dataset's server sends at open: the manifest, the shard index and the
 * file list (as remote bodies, through coordl__remote_parse) and the S3
 * ListObjectsV2 response. No request is ever made. Promises checked: an
 * accepted listing has labels below its class count and every item gets
 * a request prepared for it (or a clear refusal, such as an empty range)
 * asking for exactly its bytes; an accepted S3 page has as many keys as
 * sizes, no control characters in a key, and a token when truncated; a
 * refusal sets errno and says why.
 *
 * Fuzzed by tests/fuzz/run-fuzz.sh (target "remote"); `make check` replays
 * its seeds, tests/fuzz/corpus/remote/, through tests/fuzz/replay.c.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "loader/remote.h"
#include "loader/source.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE "http://127.0.0.1:9/ds"

static void try_listing(CURL *h, int kind, const uint8_t *data, size_t size)
{
	coordl_error_t err = { "" };
	coordl__source_t *s;

	errno = 0;
	if (!(s = coordl__remote_parse(kind, BASE, (const char *)data, size, &err))) {
		if (errno == 0 || !err.text[0])
			abort(); /* a refusal says why */
		return;
	}
	for (size_t i = 0; i < coordl__source_count(s) && i < 64; i++) {
		struct curl_slist *hdrs = NULL;
		uint64_t want = 0;
		char why[128] = "";
		int rc;
		if (coordl__source_label(s, i) < 0 || coordl__source_label(s, i) >= coordl__source_classes(s))
			abort();
		curl_easy_reset(h);
		rc = coordl__remote_prepare(coordl__source_remote(s), s, i, h, &hdrs, &want, why, sizeof(why));
		if (rc < 0 && !why[0])
			abort();
		if (kind == COORDL_SOURCE_SHARDS && rc == 0 && want != coordl__source_item_size(s, i))
			abort();
		curl_slist_free_all(hdrs);
	}
	coordl__source_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static CURL *h;
	coordl__s3_page_t pg;
	char why[160] = "";

	if (!h && !(h = curl_easy_init()))
		abort();
	try_listing(h, COORDL_SOURCE_IMAGEFOLDER, data, size);
	try_listing(h, COORDL_SOURCE_SHARDS, data, size);
	try_listing(h, COORDL_SOURCE_FILELIST, data, size);
	errno = 0;
	if (coordl__s3_parse_list((const char *)data, size, &pg, why, sizeof(why)) == 0) {
		for (size_t i = 0; i < pg.n; i++)
			for (const unsigned char *p = (const unsigned char *)pg.keys[i]; *p; p++)
				if (*p < ' ' && *p != '\t')
					abort();
		if (pg.truncated && (!pg.next_token || !pg.next_token[0]))
			abort();
		coordl__s3_page_free(&pg);
	} else if (!errno || !why[0]) {
		abort();
	}
	return 0;
}
