/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_profile.c: libFuzzer entry point for the profile reader and the
 * Key=Value reader, parsers of untrusted input (profile files in a store
 * anyone with write access can drop files into, and an admin-edited
 * config). Every input must either parse into a profile that
 * passes syn_profile_check() and survives a format/parse round trip
 * unchanged, or be rejected with errno set; the only acceptable outcomes.
 *
 * Built and run by tests/fuzz/run-fuzz.sh (target "profile"); its seeds,
 * replayed by `make check`, are tests/fuzz/corpus/profile.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/kv.h"
#include "common/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static syn_profile_t p, q;

	errno = 0;
	if (syn_profile_parse((const char *)data, size, "fuzz", &p, NULL) == 0) {
		if (syn_profile_check(&p, NULL) != 0)
			abort();
		char *text = syn_profile_format(&p, NULL);
		if (!text)
			abort();
		if (syn_profile_parse(text, strlen(text), "again", &q, NULL) != 0)
			abort();
		free(text);
	} else if (errno == 0) {
		abort();
	}

	char *s = malloc(size + 1);
	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
		syn_kv_destroy(syn_kv_parse(s, "fuzz", 0, NULL));
		free(s);
	}
	return 0;
}
