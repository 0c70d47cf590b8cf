/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_conf.c: libFuzzer entry point for the Key=Value reader that
 * synergy.conf goes through (syn_kv_parse in common/kv.c). The file is
 * admin-edited and read by root-run plugins and slurmctld's job_submit, so
 * a typo must end in an error message, never in a crash. An accepted
 * configuration must be self-consistent: every key that syn_kv_foreach()
 * reports is found again by syn_kv_get(), and keys and values are
 * printable C strings from the input. The same input then goes through the
 * schema (syn_conf_set for each key): a value either lands in its field or
 * is refused with errno and a reason.
 *
 * common/test/fuzz_profile.c also feeds its inputs to this reader, mixed
 * with the profile reader; this target has a seed corpus of configuration
 * files of its own, so the fuzzer starts from the grammar it tests.
 *
 * Built and run by tests/fuzz/run-fuzz.sh.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/kv.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every reported entry must be found again by lookup, with the same value:
 * the parser refuses a key set twice, so there is exactly one entry per
 * key whatever its case. */
static int check_entry(const char *section, const char *key, const char *value, int line,
		       void *arg)
{
	const syn_kv_t *c = arg;
	const char *v;
	syn_error_t err = { "" };
	syn_conf_t conf;

	if (section || !key || !value || line < 1 || key[0] == '\0')
		abort();
	v = syn_kv_get(c, NULL, key);
	if (!v || strcmp(v, value) != 0)
		abort();
	syn_conf_defaults(&conf);
	errno = 0;
	if (syn_conf_set(&conf, key, value, &err) < 0 && (errno == 0 || err.text[0] == '\0'))
		abort(); /* a refusal must set errno and say why */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	syn_error_t err = { "" };
	syn_kv_t *c;
	char *s;

	/* The parser takes a NUL-terminated string. */
	if (!(s = fuzz_string(data, size)))
		return 0;
	errno = 0;
	c = syn_kv_parse(s, "fuzz", 0, &err);
	if (c) {
		if (syn_kv_foreach(c, check_entry, c) != 0)
			abort();
		syn_kv_destroy(c);
	} else if (errno == 0 || err.text[0] == '\0') {
		abort(); /* a refusal must set errno and say why */
	}
	free(s);
	return 0;
}
