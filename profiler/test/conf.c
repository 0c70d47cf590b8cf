/*
 * conf.c: tests of the synergy.conf parser: comments, spacing, case-
 * insensitive keys, duplicate and malformed lines reported with file:line,
 * and the file loader's errors.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "synergy_conf.h"
#include "tap.h"

static int count_cb(const char *key, const char *value, int line, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

int main(void)
{
	syn_conf_error_t err;
	const char *text =
		"# Synergy configuration\n"
		"\n"
		"ProfileStore = /var/lib/synergy/profiles   # where profiles live\n"
		"  Policy=tune\n"
		"Empty=\n";
	syn_conf_t *c = syn_conf_parse(text, "t.conf", &err);
	ok(c != NULL, "parse a configuration");
	is_str(syn_conf_get(c, "ProfileStore"), "/var/lib/synergy/profiles", "value trimmed, comment cut");
	is_str(syn_conf_get(c, "profilestore"), "/var/lib/synergy/profiles", "keys are case-insensitive");
	is_str(syn_conf_get(c, "Policy"), "tune", "leading spaces ignored");
	is_str(syn_conf_get(c, "Empty"), "", "an empty value is allowed");
	ok(syn_conf_get(c, "Missing") == NULL, "a missing key is NULL");
	int n = 0;
	ok(syn_conf_foreach(c, count_cb, &n) == 0 && n == 3, "foreach visits every entry");
	is_str(syn_conf_path(c), "t.conf", "path is the given name");
	syn_conf_destroy(c);
	syn_conf_destroy(NULL);

	errno = 0;
	c = syn_conf_parse("A=1\n\nB=2\na=3\n", "dup.conf", &err);
	ok(!c && errno == EINVAL && strstr(err.text, "dup.conf:4") && strstr(err.text, "line 1"),
	   "a duplicate key names both lines");
	c = syn_conf_parse("A=1\nthis is not a setting\n", "bad.conf", &err);
	ok(!c && errno == EINVAL && strstr(err.text, "bad.conf:2") && strstr(err.text, "Key=Value"),
	   "a line without '=' is rejected with file:line");
	c = syn_conf_parse("Bad Key=1\n", "k.conf", &err);
	ok(!c && strstr(err.text, "k.conf:1") && strstr(err.text, "invalid key"), "a key with a space is rejected");

	char path[] = "/tmp/syn-conf-test.XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0 && write(fd, "ProfileStore=/tmp/x\n", 20) == 20, "write a conf file");
	if (fd >= 0)
		close(fd);
	c = syn_conf_load(path, &err);
	is_str(syn_conf_get(c, SYN_CONF_PROFILE_STORE), "/tmp/x", "load from a file");
	syn_conf_destroy(c);
	setenv(SYN_CONF_ENV, path, 1);
	c = syn_conf_load(NULL, &err);
	ok(c && strcmp(syn_conf_path(c), path) == 0, "SYNERGY_CONF names the default file");
	syn_conf_destroy(c);
	unlink(path);
	errno = 0;
	c = syn_conf_load(path, &err);
	ok(!c && errno == ENOENT && strstr(err.text, path), "a missing file: ENOENT naming it");
	/* A file whose size fstat does not know (procfs says 0) is still read
	 * whole: the error quotes the line past the first bytes. */
	c = syn_conf_load("/proc/version", &err);
	ok(!c && errno == EINVAL && strstr(err.text, "/proc/version:1") &&
		   strstr(err.text, "Linux version"),
	   "a file longer than fstat says is read whole: %s", err.text);
	{
		char big[] = "/tmp/synconf-big.XXXXXX";
		int bfd = mkstemp(big);
		FILE *f = bfd >= 0 ? fdopen(bfd, "w") : NULL;
		ok(f != NULL, "temporary file for the size limit");
		for (int i = 0; f && i <= 1024 * 1024; i += 8)
			fputs("# 45678\n", f);
		if (f)
			fclose(f);
		errno = 0;
		c = syn_conf_load(big, &err);
		ok(!c && errno == EFBIG && strstr(err.text, "larger than"),
		   "a file over 1 MiB is refused, named: %s", err.text);
		unlink(big);
	}
	/* The one search order of every Synergy program. */
	{
		char buf[256];
		setenv("SYNERGY_CONF", "/etc/x/mine.conf", 1);
		setenv("SLURM_CONF", "/opt/slurm/etc/slurm.conf", 1);
		is_str(syn_conf_default_path(buf, sizeof(buf)), "/etc/x/mine.conf",
		       "default path: $SYNERGY_CONF first");
		unsetenv("SYNERGY_CONF");
		is_str(syn_conf_default_path(buf, sizeof(buf)), "/opt/slurm/etc/synergy.conf",
		       "then beside $SLURM_CONF");
		setenv("SLURM_CONF", "slurm.conf", 1);
		is_str(syn_conf_default_path(buf, sizeof(buf)), SYN_CONF_DEFAULT_PATH,
		       "a SLURM_CONF without a directory is not used");
		setenv("SLURM_CONF", "/opt/slurm/etc/slurm.conf", 1);
		is_str(syn_conf_default_path(buf, 8), SYN_CONF_DEFAULT_PATH,
		       "a buffer too small falls back to the default, not a truncated path");
		unsetenv("SLURM_CONF");
		is_str(syn_conf_default_path(buf, sizeof(buf)), SYN_CONF_DEFAULT_PATH,
		       "else " SYN_CONF_DEFAULT_PATH);
	}
	return done_testing();
}
