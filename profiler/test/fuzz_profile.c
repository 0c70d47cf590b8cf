/*
 * fuzz_profile.c: libFuzzer entry point for the profile reader and the
 * synergy.conf parser, the profiler's parsers of untrusted input (profile
 * files in a store anyone with write access can drop files into, and an
 * admin-edited config). Every input must either parse into a profile that
 * passes syn_profile_check() and survives a format/parse round trip
 * unchanged, or be rejected with errno set; the only acceptable outcomes.
 *
 * Not part of `make check`. Build and run from the source tree with clang:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Ibuild -Iinclude -Iprofiler profiler/test/fuzz_profile.c \
 *     profiler/profile_json.c profiler/store.c profiler/conf.c \
 *     profiler/errprintf.c policy/profile.c -ljansson -lm -o fuzz_profile
 *   mkdir -p corpus && cp profiler/test/data/resnet18.json corpus/
 *   ./fuzz_profile -max_len=20000 corpus
 *
 * (-Ibuild names any configured build directory, for its config.h.)
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synergy_conf.h"
#include "synergy_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static syn_profile_t p, q;
	char msg[160];

	errno = 0;
	if (syn_profile_parse((const char *)data, size, "fuzz", &p, NULL) == 0) {
		if (syn_profile_check(&p, msg, (int)sizeof(msg)) != 0)
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
		syn_conf_destroy(syn_conf_parse(s, "fuzz", NULL));
		free(s);
	}
	return 0;
}
