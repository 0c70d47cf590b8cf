/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_spank.c: libFuzzer entry point for the Slurm plugins' input checks
 * (common/parse.c, common/conf.c, plugin/cgroup.c). These run as root on
 * values from users (--synergy, --synergy-key and their environment
 * twins), from admins (plugstack arguments, synergy.conf) and from the
 * kernel (/proc/<pid>/cgroup), so each must either accept exactly what
 * common/parse.h and common/conf.h promise or refuse.
 *
 * The first line of the input goes through the single-value checks and,
 * as a plugstack "key=value" argument, through syn_conf_arg(); the whole
 * input is read as a synergy.conf file by syn_conf_load() and as a
 * /proc/<pid>/cgroup text by syn__cg_parse_proc(). Accepted values are checked
 * against the documented rules (charset, length, range, absolute paths).
 *
 * A "conf=PATH" argument would make syn_conf_arg() open a file the input
 * names (a FIFO or /dev/stdin would block the fuzzer), so that one key is
 * left to the syn_conf_load() call on the scratch file.
 *
 * Built and run by tests/fuzz/run-fuzz.sh.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "plugin/node/cgroup.h"
#include "plugin/shared/jobrec.h"
#include "plugin/shared/util.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What every accepted configuration must satisfy, whatever set it. */
static void check_conf(const syn_conf_t *c)
{
	if (!syn_path_ok(c->store_dir) || !syn_path_ok(c->request_dir) ||
	    !syn_path_ok(c->cache_dir) || !syn_path_ok(c->group_dir))
		abort();
	if (!(c->eps >= 0.0 && c->eps < 1.0) || (c->enabled != 0 && c->enabled != 1))
		abort();
	if (c->profile_command[0] &&
	    (c->profile_command[0] != '/' || strpbrk(c->profile_command, "\n\r")))
		abort();
}

static void single(const char *s)
{
	size_t len = strlen(s);
	uint64_t v;
	int on;

	if (syn_key_valid(s) &&
	    (len < 1 || len > SYN_KEY_MAX || s[0] == '.' ||
	     strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len))
		abort();
	if (syn__group_name_valid(s) &&
	    (len < 1 || len > 32 || s[0] == '.' || s[0] == '-' ||
	     strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len))
		abort();
	errno = 0;
	if (syn_parse_bool(s, &on) == 0) {
		if (on != 0 && on != 1)
			abort();
	} else if (errno != EINVAL) {
		abort();
	}
	errno = 0;
	if (syn_parse_u64(s, 3, 1000, &v) == 0) {
		if (v < 3 || v > 1000 || strspn(s, "0123456789") != len)
			abort();
	} else if (errno != EINVAL && errno != ERANGE) {
		abort();
	}
	if (syn_path_ok(s) &&
	    (s[0] != '/' || len >= SYN_PATH_MAX || strstr(s, "/../") || strstr(s, "/./") ||
	     (len >= 3 && strcmp(s + len - 3, "/..") == 0) ||
	     (len >= 2 && strcmp(s + len - 2, "/.") == 0)))
		abort();
}

static void cgroup(const char *text, const char *controller, uint32_t jobid)
{
	char out[128], want[32];
	size_t olen, wlen;

	errno = 0;
	if (syn__cg_parse_proc(text, controller, jobid, out, sizeof(out)) < 0) {
		if (errno != ENOENT && errno != ENAMETOOLONG)
			abort();
		return;
	}
	/* A relative path ending in the job's own directory, without "..".
	 * (tests/fuzz/crashes/spank-1 once gave a leading '/'.) On the
	 * unified line the job's directory may be a SLUID (Slurm 26.05). */
	olen = strnlen(out, sizeof(out));
	if (out[0] == '/' || olen == sizeof(out) || strstr(out, ".."))
		abort();
	if (!*controller && olen >= SYN__SLUID_LEN &&
	    syn__sluid_valid(out + olen - SYN__SLUID_LEN) &&
	    (olen == SYN__SLUID_LEN || out[olen - SYN__SLUID_LEN - 1] == '/'))
		return;
	wlen = (size_t)snprintf(want, sizeof(want), "job_%u", (unsigned)jobid);
	if (olen < wlen || strcmp(out + olen - wlen, want) != 0 ||
	    (olen > wlen && out[olen - wlen - 1] != '/'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_scratch_path("spank", "synergy.conf");
	syn_conf_t c;
	syn_error_t err;
	char *s, *first, *nl;

	if (!(s = fuzz_string(data, size)))
		return 0;

	if (!(first = strdup(s)))
		goto out;
	if ((nl = strchr(first, '\n')))
		*nl = '\0';
	single(first);
	syn_conf_defaults(&c);
	if (strncasecmp(first, "conf=", 5) != 0) {
		err.text[0] = '\0';
		errno = 0;
		if (syn_conf_arg(&c, first, &err) == 0)
			check_conf(&c);
		else if ((errno != EINVAL && errno != ERANGE) || err.text[0] == '\0')
			abort();
	}
	free(first);

	fuzz_write_file(path, data, size);
	syn_conf_defaults(&c);
	err.text[0] = '\0';
	if (syn_conf_load(&c, path, &err) == 0)
		check_conf(&c);
	else if (err.text[0] == '\0')
		abort();

	cgroup(s, "cpuset", 42);
	cgroup(s, "memory", 7);
	cgroup(s, "", 4294967295u);
out:
	free(s);
	return 0;
}
