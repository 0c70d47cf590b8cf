/*
 * util.t: the plugins' strict parsers and configuration (plugin/util.c).
 *
 * These checks are what stands between user-supplied option values and a
 * root-run plugin, so hostile inputs (paths, huge numbers, shell
 * metacharacters) are tested explicitly.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "util.h"

static void test_keys(void)
{
	static const struct { const char *key; int valid; } t[] = {
		{ "resnet18", 1 }, { "a", 1 }, { "gnmt-v2_big.1", 1 },
		{ "", 0 }, { ".hidden", 0 }, { "..", 0 }, { "../../etc/passwd", 0 },
		{ "a/b", 0 }, { "a b", 0 }, { "x;rm -rf /", 0 }, { "$(id)", 0 },
		{ "`id`", 0 }, { "k\n", 0 }, { "caf\xc3\xa9", 0 },
		{ "0123456789012345678901234567890123456789012345678901234567890123", 1 },
		{ "01234567890123456789012345678901234567890123456789012345678901234", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(syn__key_valid(t[i].key), t[i].valid, t[i].key);
	is_int(syn__key_valid(NULL), 0, "NULL key is invalid");
}

static void test_numbers(void)
{
	static const struct { const char *s; uint64_t min, max; int rv, err; uint64_t v; } t[] = {
		{ "0", 0, 10, 0, 0, 0 }, { "10", 0, 10, 0, 0, 10 },
		{ "11", 0, 10, -1, ERANGE, 0 }, { "-1", 0, 10, -1, EINVAL, 0 },
		{ " 1", 0, 10, -1, EINVAL, 0 }, { "1k", 0, 10, -1, EINVAL, 0 },
		{ "0x10", 0, 100, -1, EINVAL, 0 }, { "", 0, 10, -1, EINVAL, 0 },
		{ "18446744073709551615", 0, UINT64_MAX, 0, 0, UINT64_MAX },
		{ "18446744073709551616", 0, UINT64_MAX, -1, ERANGE, 0 },
		{ "99999999999999999999999", 0, UINT64_MAX, -1, ERANGE, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t v = 12345;
		int rv;

		errno = 0;
		rv = syn__parse_u64(t[i].s, t[i].min, t[i].max, &v);
		if (t[i].rv == 0)
			ok(rv == 0 && v == t[i].v, "u64 '%s' parses", t[i].s);
		else
			ok(rv == -1 && errno == t[i].err && v == 12345,
			   "u64 '%s' refused with %s, output untouched", t[i].s,
			   t[i].err == ERANGE ? "ERANGE" : "EINVAL");
	}
}

static void test_onoff(void)
{
	int on = -1;

	ok(syn__parse_onoff("off", &on) == 0 && on == 0, "off");
	ok(syn__parse_onoff("ON", &on) == 0 && on == 1, "ON");
	ok(syn__parse_onoff("no", &on) == 0 && on == 0, "no");
	on = 7;
	ok(syn__parse_onoff("maybe", &on) == -1 && errno == EINVAL && on == 7, "maybe refused");
	ok(syn__parse_onoff("off;reboot", &on) == -1, "off;reboot refused");
}

static void test_paths(void)
{
	static const struct { const char *p; int ok; } t[] = {
		{ "/var/lib/synergy", 1 }, { "/", 1 }, { "relative/dir", 0 },
		{ "/a/../etc", 0 }, { "/a/..", 0 }, { "/a/./b", 0 }, { "/a b", 0 },
		{ "/a\tb", 0 }, { "/a/..b", 1 }, { "", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(syn__path_ok(t[i].p), t[i].ok, t[i].p);
}

static void test_conf(void)
{
	char err[200], path[] = "/tmp/synconfXXXXXX";
	syn__conf_t c;
	FILE *f;
	int fd;

	syn__conf_defaults(&c);
	ok(c.enabled == 1 && c.process_mem_mb == 1024 && c.eps == 0.01, "defaults");
	ok(syn__conf_arg(&c, "CacheDir=/dev/shm/x", err, sizeof(err)) == 0 &&
	   strcmp(c.cache_dir, "/dev/shm/x") == 0, "plugstack argument cache_dir=");
	ok(syn__conf_arg(&c, "cachedir=../../etc", err, sizeof(err)) == -1 &&
	   strstr(err, "CacheDir") && strcmp(c.cache_dir, "/dev/shm/x") == 0,
	   "relative cache_dir refused, names the key, keeps the old value");
	ok(syn__conf_arg(&c, "nonsense", err, sizeof(err)) == -1 && strstr(err, "key=value"),
	   "argument without '=' refused");
	ok(syn__conf_arg(&c, "colour=blue", err, sizeof(err)) == -1 && strstr(err, "colour"),
	   "unknown key refused by name");
	ok(syn__conf_arg(&c, "ProcessMemMB=99999999999999999999", err, sizeof(err)) == -1 &&
	   c.process_mem_mb == 1024, "huge number refused");
	ok(syn__conf_arg(&c, "Eps=1.5", err, sizeof(err)) == -1, "eps out of range refused");
	ok(c.group_staging_mb == 512 && c.group_window == 256, "group defaults: the loader's");
	ok(syn__conf_arg(&c, "GroupStagingMB=64", err, sizeof(err)) == 0 &&
	   syn__conf_arg(&c, "groupwindow=32", err, sizeof(err)) == 0 && c.group_staging_mb == 64 &&
	   c.group_window == 32, "GroupStagingMB, GroupWindow set");
	{
		static const char *const bad[] = { "GroupStagingMB=0", "GroupStagingMB=1048577",
						   "GroupStagingMB=64M", "GroupStagingMB=-1",
						   "GroupWindow=0", "GroupWindow=1000001",
						   "GroupWindow=x" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			ok(syn__conf_arg(&c, bad[i], err, sizeof(err)) == -1 &&
			   strstr(err, "Group") && c.group_staging_mb == 64 && c.group_window == 32,
			   "%s refused, names the key, keeps the old value: %s", bad[i], err);
	}
	ok(syn__conf_arg(&c, "ProfileCommand=/usr/bin/synergy-profile run --key %k /data/%k",
			 err, sizeof(err)) == 0 &&
	   strcmp(c.profile_command, "/usr/bin/synergy-profile run --key %k /data/%k") == 0,
	   "ProfileCommand with arguments");
	ok(syn__conf_arg(&c, "ProfileCommand=synergy-profile run", err, sizeof(err)) == -1 &&
	   strstr(err, "absolute path"), "relative ProfileCommand refused");
	ok(c.lend_idle == 0 && strcmp(c.state_dir, "/run/synergy") == 0,
	   "lending is off by default, node state under /run/synergy");
	ok(syn__conf_arg(&c, "LendIdleCores=yes", err, sizeof(err)) == 0 && c.lend_idle == 1,
	   "LendIdleCores=yes");
	ok(syn__conf_arg(&c, "LendIdleCores=maybe", err, sizeof(err)) == -1 &&
	   strstr(err, "LendIdleCores") && c.lend_idle == 1, "LendIdleCores=maybe refused by name");
	/* Harvesting idle cycles (issue 13). */
	ok(c.harvest == 1 && c.harvest_interval == 5, "harvesting on by default, every 5 s");
	ok(syn__conf_arg(&c, "HarvestIdleCycles=yes", err, sizeof(err)) == 0 && c.harvest == 1 &&
		   syn__conf_arg(&c, "HarvestIdleCycles=no", err, sizeof(err)) == 0 && c.harvest == 0,
	   "HarvestIdleCycles=yes, =no");
	ok(syn__conf_arg(&c, "HarvestIdleCycles=2", err, sizeof(err)) == -1 &&
		   strstr(err, "HarvestIdleCycles") && c.harvest == 0,
	   "HarvestIdleCycles=2 refused by name");
	ok(syn__conf_arg(&c, "HarvestInterval=0", err, sizeof(err)) == 0 && c.harvest_interval == 0,
	   "HarvestInterval=0: job starts and ends only");
	ok(syn__conf_arg(&c, "HarvestInterval=3601", err, sizeof(err)) == -1 &&
		   strstr(err, "HarvestInterval") && c.harvest_interval == 0,
	   "HarvestInterval=3601 refused by name, nothing changed");
	ok(syn__conf_arg(&c, "HarvestInterval=-1", err, sizeof(err)) == -1 &&
		   syn__conf_arg(&c, "HarvestInterval=5s", err, sizeof(err)) == -1,
	   "negative or suffixed intervals refused");
	/* Profile on first run (issue 17). */
	ok(c.profile_in_place == 1 && c.claim_max_age == 3600,
	   "profile on first run is on by default; a claim lasts an hour");
	ok(syn__conf_arg(&c, "ProfileInPlace=no", err, sizeof(err)) == 0 && c.profile_in_place == 0,
	   "ProfileInPlace=no");
	ok(syn__conf_arg(&c, "ProfileInPlace=later", err, sizeof(err)) == -1 &&
	   strstr(err, "ProfileInPlace") && c.profile_in_place == 0,
	   "ProfileInPlace=later refused by name, value kept");
	ok(syn__conf_arg(&c, "ProfileClaimMaxAge=600", err, sizeof(err)) == 0 &&
	   c.claim_max_age == 600, "ProfileClaimMaxAge=600");
	ok(syn__conf_arg(&c, "ProfileClaimMaxAge=0", err, sizeof(err)) == -1 &&
	   strstr(err, "ProfileClaimMaxAge") && c.claim_max_age == 600,
	   "ProfileClaimMaxAge=0 refused by name, value kept");
	ok(syn__conf_arg(&c, "LendStateDir=/var/run/x", err, sizeof(err)) == 0 &&
	   strcmp(c.state_dir, "/var/run/x") == 0, "LendStateDir is the old name of StateDir");
	ok(syn__conf_arg(&c, "StateDir=/var/run/y", err, sizeof(err)) == 0 &&
	   strcmp(c.state_dir, "/var/run/y") == 0, "StateDir");
	ok(syn__conf_arg(&c, "CgroupRoot=/slurm_%n", err, sizeof(err)) == 0 &&
	   strcmp(c.cgroup_root, "/slurm_%n") == 0, "CgroupRoot with %%n");
	ok(syn__conf_arg(&c, "CgroupRoot=slurm", err, sizeof(err)) == -1 &&
	   strstr(err, "CgroupRoot"), "a relative CgroupRoot refused by name");
	ok(syn__conf_arg(&c, "CgroupConf=/etc/slurm/cgroup.conf", err, sizeof(err)) == 0 &&
	   strcmp(c.cgroup_conf, "/etc/slurm/cgroup.conf") == 0, "CgroupConf");
	ok(syn__conf_arg(&c, "LendStateDir=run/x", err, sizeof(err)) == -1 &&
	   strstr(err, "LendStateDir"), "relative LendStateDir refused");

	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		bail_out("mkstemp");
	fputs("# comment\n\nProfileStore = /srv/profiles   # trailing\nprocessmemmb=512\n"
	      "Enabled = no\nNodeGPUs=4\n", f);
	fclose(f);
	syn__conf_defaults(&c);
	ok(syn__conf_load(&c, path, err, sizeof(err)) == 0 &&
	   strcmp(c.store_dir, "/srv/profiles") == 0 && c.process_mem_mb == 512 && !c.enabled && c.node_gpus == 4,
	   "synergy.conf with comments and blanks");
	f = fopen(path, "w");
	fputs("ProfileStore=/srv\nbogus line\n", f);
	fclose(f);
	ok(syn__conf_load(&c, path, err, sizeof(err)) == -1 && strstr(err, ":2:"),
	   "malformed line reported with its line number");
	f = fopen(path, "w");
	fputs("ProfileStore=/srv\nNodeGPUs=4\nnodegpus=8\n", f);
	fclose(f);
	ok(syn__conf_load(&c, path, err, sizeof(err)) == -1 && strstr(err, ":3:") &&
		   strstr(err, "line 2"),
	   "a key set twice is refused, naming both lines (the profiler's parser): %s", err);
	f = fopen(path, "w");
	fputs("# ", f);
	for (int i = 0; i < 100; i++)
		fputs("a long comment ", f);
	fputs("\nNodeGPUs = 2\nProcessMemMB = 1x\n", f);
	fclose(f);
	syn__conf_defaults(&c);
	ok(syn__conf_load(&c, path, err, sizeof(err)) == -1 && c.node_gpus == 2 && strstr(err, ":3:") &&
		   strstr(err, "ProcessMemMB"),
	   "a line over 512 bytes is read; a bad value names its line and key: %s", err);
	unlink(path);
	ok(syn__conf_load(&c, path, err, sizeof(err)) == -1 && errno == ENOENT,
	   "missing file: ENOENT");
}

int main(void)
{
	test_keys();
	test_numbers();
	test_onoff();
	test_paths();
	test_conf();
	return done_testing();
}
