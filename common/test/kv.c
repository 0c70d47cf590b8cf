/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kv.t: the Key=Value reader (common/kv.h) that synergy.conf, cgroup.conf
 * and the AWS credentials file go through: comments, spacing,
 * case-insensitive keys, duplicate and malformed lines reported with
 * file:line, the file loader's errors, sections and the lenient mode.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kv.h"
#include "tests/tap.h"

static int count_cb(const char *section, const char *key, const char *value, int line, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* The AWS credentials file's form: sections, whole-line comments. */
static void test_ini(void)
{
	syn_error_t err;
	syn_kv_t *c = syn_kv_parse("# top\n[default]\nkey = a#b\n; semicolon comment\n"
				   "[ other ]\nkey=c\n",
				   "ini", SYN_KV_INI, &err);

	ok(c != NULL, "parse an INI file");
	is_str(syn_kv_get(c, "default", "key"), "a#b", "a '#' inside a value is kept");
	is_str(syn_kv_get(c, "other", "key"), "c", "the same key in another section is another");
	is_str(syn_kv_get(c, NULL, "key"), NULL, "and none is outside the sections");
	syn_kv_destroy(c);
	c = syn_kv_parse("[default]\nkey = a\n[other]\nkey=c\nKEY=d\n", "ini", SYN_KV_INI, &err);
	ok(!c && errno == EINVAL && strstr(err.text, "ini:5") && strstr(err.text, "line 4"),
	   "a key twice in one section is refused: %s", err.text);
	c = syn_kv_parse("[default\nkey=a\n", "ini", SYN_KV_INI | SYN_KV_LENIENT, &err);
	ok(!c && errno == EINVAL && strstr(err.text, "ini:1") && strstr(err.text, "[section]"),
	   "an unclosed section is refused with file:line: %s", err.text);
}

/* Another program's file (Slurm's cgroup.conf): lines this reader has no
 * use for are kept, not refused. */
static void test_lenient(void)
{
	syn_error_t err;
	int n = 0;
	syn_kv_t *c = syn_kv_parse("Include /etc/slurm/more.conf\nCgroupPlugin=cgroup/v1 # c\n"
				   "Odd Key = 1\ncgroupplugin=cgroup/v2\n",
				   "cgroup.conf", SYN_KV_LENIENT, &err);

	ok(c != NULL, "a lenient parse takes what a strict one refuses");
	is_str(syn_kv_get(c, NULL, "CgroupPlugin"), "cgroup/v2",
	       "a key given again: the last wins");
	is_str(syn_kv_get(c, NULL, "Odd Key"), "1", "a key outside the strict charset is kept");
	is_str(syn_kv_get(c, NULL, "Include /etc/slurm/more.conf"), NULL,
	       "a line without '=' has no value to look up");
	ok(syn_kv_foreach(c, count_cb, &n) == 0 && n == 4, "but foreach sees it (4 entries)");
	syn_kv_destroy(c);
}

int main(void)
{
	syn_error_t err;
	const char *text = "# Synergy configuration\n"
			   "\n"
			   "ProfileStore = /var/lib/synergy/profiles   # where profiles live\n"
			   "  Policy=tune\n"
			   "Empty=\n";
	syn_kv_t *c = syn_kv_parse(text, "t.conf", 0, &err);
	ok(c != NULL, "parse a configuration");
	is_str(syn_kv_get(c, NULL, "ProfileStore"), "/var/lib/synergy/profiles",
	       "value trimmed, comment cut");
	is_str(syn_kv_get(c, NULL, "profilestore"), "/var/lib/synergy/profiles",
	       "keys are case-insensitive");
	is_str(syn_kv_get(c, NULL, "Policy"), "tune", "leading spaces ignored");
	is_str(syn_kv_get(c, NULL, "Empty"), "", "an empty value is allowed");
	ok(syn_kv_get(c, NULL, "Missing") == NULL, "a missing key is NULL");
	int n = 0;
	ok(syn_kv_foreach(c, count_cb, &n) == 0 && n == 3, "foreach visits every entry");
	is_str(syn_kv_name(c), "t.conf", "path is the given name");
	syn_kv_destroy(c);
	syn_kv_destroy(NULL);

	errno = 0;
	c = syn_kv_parse("A=1\n\nB=2\na=3\n", "dup.conf", 0, &err);
	ok(!c && errno == EINVAL && strstr(err.text, "dup.conf:4") && strstr(err.text, "line 1"),
	   "a duplicate key names both lines");
	c = syn_kv_parse("A=1\nthis is not a setting\n", "bad.conf", 0, &err);
	ok(!c && errno == EINVAL && strstr(err.text, "bad.conf:2") && strstr(err.text, "Key=Value"),
	   "a line without '=' is rejected with file:line");
	c = syn_kv_parse("Bad Key=1\n", "k.conf", 0, &err);
	ok(!c && strstr(err.text, "k.conf:1") && strstr(err.text, "invalid key"),
	   "a key with a space is rejected");

	char path[] = "/tmp/syn-conf-test.XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0 && write(fd, "ProfileStore=/tmp/x\n", 20) == 20, "write a conf file");
	if (fd >= 0)
		close(fd);
	c = syn_kv_load(path, 0, &err);
	is_str(syn_kv_get(c, NULL, "ProfileStore"), "/tmp/x", "load from a file");
	syn_kv_destroy(c);
	unlink(path);
	errno = 0;
	c = syn_kv_load(path, 0, &err);
	ok(!c && errno == ENOENT && strstr(err.text, path), "a missing file: ENOENT naming it");
	/* A file whose size fstat does not know (procfs says 0) is still read
	 * whole: the error quotes the line past the first bytes. */
	c = syn_kv_load("/proc/version", 0, &err);
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
		c = syn_kv_load(big, 0, &err);
		ok(!c && errno == EFBIG && strstr(err.text, "larger than"),
		   "a file over 1 MiB is refused, named: %s", err.text);
		unlink(big);
	}
	test_ini();
	test_lenient();
	return done_testing();
}
