/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conf.t: synergy.conf's schema and its one loader (common/conf.h), as
 * every Synergy program reads it: defaults, each key's type and range, the
 * plugstack arguments, file:line:key in every message, where the file is
 * looked for, and that synergy.conf(5) documents every key.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/file.h"
#include "tests/tap.h"

static void test_conf(void)
{
	syn_error_t err;
	char path[] = "/tmp/synconfXXXXXX";
	syn_conf_t c;
	FILE *f;
	int fd;

	syn_conf_defaults(&c);
	ok(c.enabled == 1 && c.process_mem_mb == 1024 && c.eps == 0.01, "defaults");
	ok(syn_conf_arg(&c, "CacheDir=/dev/shm/x", &err) == 0 &&
		   strcmp(c.cache_dir, "/dev/shm/x") == 0,
	   "plugstack argument cache_dir=");
	ok(syn_conf_arg(&c, "cachedir=../../etc", &err) == -1 && strstr(err.text, "CacheDir") &&
		   strcmp(c.cache_dir, "/dev/shm/x") == 0,
	   "relative cache_dir refused, names the key, keeps the old value");
	ok(syn_conf_arg(&c, "nonsense", &err) == -1 && strstr(err.text, "key=value"),
	   "argument without '=' refused");
	ok(syn_conf_arg(&c, "colour=blue", &err) == -1 && strstr(err.text, "colour"),
	   "unknown key refused by name");
	ok(syn_conf_arg(&c, "ProcessMemMB=99999999999999999999", &err) == -1 &&
		   c.process_mem_mb == 1024,
	   "huge number refused");
	ok(syn_conf_arg(&c, "Eps=1.5", &err) == -1, "eps out of range refused");
	ok(c.group_staging_mb == 512 && c.group_window == 256, "group defaults: the loader's");
	ok(syn_conf_arg(&c, "GroupStagingMB=64", &err) == 0 &&
		   syn_conf_arg(&c, "groupwindow=32", &err) == 0 && c.group_staging_mb == 64 &&
		   c.group_window == 32,
	   "GroupStagingMB, GroupWindow set");
	{
		static const char *const bad[] = { "GroupStagingMB=0",   "GroupStagingMB=1048577",
						   "GroupStagingMB=64M", "GroupStagingMB=-1",
						   "GroupWindow=0",      "GroupWindow=1000001",
						   "GroupWindow=x" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			ok(syn_conf_arg(&c, bad[i], &err) == -1 && strstr(err.text, "Group") &&
				   c.group_staging_mb == 64 && c.group_window == 32,
			   "%s refused, names the key, keeps the old value: %s", bad[i], err.text);
	}
	ok(syn_conf_arg(&c, "ProfileCommand=/usr/bin/synergy-profile run --key %k /data/%k",
			&err) == 0 &&
		   strcmp(c.profile_command, "/usr/bin/synergy-profile run --key %k /data/%k") == 0,
	   "ProfileCommand with arguments");
	ok(syn_conf_arg(&c, "ProfileCommand=synergy-profile run", &err) == -1 &&
		   strstr(err.text, "absolute path"),
	   "relative ProfileCommand refused");
	ok(c.lend_idle == 0 && strcmp(c.state_dir, "/run/synergy") == 0,
	   "lending is off by default, node state under /run/synergy");
	ok(syn_conf_arg(&c, "LendIdleCores=yes", &err) == 0 && c.lend_idle == 1,
	   "LendIdleCores=yes");
	ok(syn_conf_arg(&c, "LendIdleCores=maybe", &err) == -1 &&
		   strstr(err.text, "LendIdleCores") && c.lend_idle == 1,
	   "LendIdleCores=maybe refused by name");
	/* Harvesting idle cycles (issue 13). */
	ok(c.harvest == 1 && c.harvest_interval == 5, "harvesting on by default, every 5 s");
	ok(syn_conf_arg(&c, "HarvestIdleCycles=yes", &err) == 0 && c.harvest == 1 &&
		   syn_conf_arg(&c, "HarvestIdleCycles=no", &err) == 0 && c.harvest == 0,
	   "HarvestIdleCycles=yes, =no");
	ok(syn_conf_arg(&c, "HarvestIdleCycles=2", &err) == -1 &&
		   strstr(err.text, "HarvestIdleCycles") && c.harvest == 0,
	   "HarvestIdleCycles=2 refused by name");
	ok(syn_conf_arg(&c, "HarvestInterval=0", &err) == 0 && c.harvest_interval == 0,
	   "HarvestInterval=0: job starts and ends only");
	ok(syn_conf_arg(&c, "HarvestInterval=3601", &err) == -1 &&
		   strstr(err.text, "HarvestInterval") && c.harvest_interval == 0,
	   "HarvestInterval=3601 refused by name, nothing changed");
	ok(syn_conf_arg(&c, "HarvestInterval=-1", &err) == -1 &&
		   syn_conf_arg(&c, "HarvestInterval=5s", &err) == -1,
	   "negative or suffixed intervals refused");
	/* Profile on first run (issue 17). */
	ok(c.profile_in_place == 1 && c.claim_max_age == 3600,
	   "profile on first run is on by default; a claim lasts an hour");
	ok(syn_conf_arg(&c, "ProfileInPlace=no", &err) == 0 && c.profile_in_place == 0,
	   "ProfileInPlace=no");
	ok(syn_conf_arg(&c, "ProfileInPlace=later", &err) == -1 &&
		   strstr(err.text, "ProfileInPlace") && c.profile_in_place == 0,
	   "ProfileInPlace=later refused by name, value kept");
	ok(syn_conf_arg(&c, "ProfileClaimMaxAge=600", &err) == 0 && c.claim_max_age == 600,
	   "ProfileClaimMaxAge=600");
	ok(syn_conf_arg(&c, "ProfileClaimMaxAge=0", &err) == -1 &&
		   strstr(err.text, "ProfileClaimMaxAge") && c.claim_max_age == 600,
	   "ProfileClaimMaxAge=0 refused by name, value kept");
	ok(syn_conf_arg(&c, "LendStateDir=/var/run/x", &err) == 0 &&
		   strcmp(c.state_dir, "/var/run/x") == 0,
	   "LendStateDir is the old name of StateDir");
	ok(syn_conf_arg(&c, "StateDir=/var/run/y", &err) == 0 &&
		   strcmp(c.state_dir, "/var/run/y") == 0,
	   "StateDir");
	ok(syn_conf_arg(&c, "CgroupRoot=/slurm_%n", &err) == 0 &&
		   strcmp(c.cgroup_root, "/slurm_%n") == 0,
	   "CgroupRoot with %%n");
	ok(syn_conf_arg(&c, "CgroupRoot=slurm", &err) == -1 && strstr(err.text, "CgroupRoot"),
	   "a relative CgroupRoot refused by name");
	ok(syn_conf_arg(&c, "CgroupConf=/etc/slurm/cgroup.conf", &err) == 0 &&
		   strcmp(c.cgroup_conf, "/etc/slurm/cgroup.conf") == 0,
	   "CgroupConf");
	ok(syn_conf_arg(&c, "LendStateDir=run/x", &err) == -1 && strstr(err.text, "LendStateDir"),
	   "relative LendStateDir refused");

	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		bail_out("mkstemp");
	fputs("# comment\n\nProfileStore = /srv/profiles   # trailing\nprocessmemmb=512\n"
	      "Enabled = no\nNodeGPUs=4\n",
	      f);
	fclose(f);
	syn_conf_defaults(&c);
	ok(syn_conf_load(&c, path, &err) == 0 && strcmp(c.store_dir, "/srv/profiles") == 0 &&
		   c.process_mem_mb == 512 && !c.enabled && c.node_gpus == 4,
	   "synergy.conf with comments and blanks");
	f = fopen(path, "w");
	fputs("ProfileStore=/srv\nbogus line\n", f);
	fclose(f);
	ok(syn_conf_load(&c, path, &err) == -1 && strstr(err.text, ":2:"),
	   "malformed line reported with its line number");
	f = fopen(path, "w");
	fputs("ProfileStore=/srv\nNodeGPUs=4\nnodegpus=8\n", f);
	fclose(f);
	ok(syn_conf_load(&c, path, &err) == -1 && strstr(err.text, ":3:") &&
		   strstr(err.text, "line 2"),
	   "a key set twice is refused, naming both lines (the profiler's parser): %s", err.text);
	f = fopen(path, "w");
	fputs("# ", f);
	for (int i = 0; i < 100; i++)
		fputs("a long comment ", f);
	fputs("\nNodeGPUs = 2\nProcessMemMB = 1x\n", f);
	fclose(f);
	syn_conf_defaults(&c);
	ok(syn_conf_load(&c, path, &err) == -1 && c.node_gpus == 2 && strstr(err.text, ":3:") &&
		   strstr(err.text, "ProcessMemMB"),
	   "a line over 512 bytes is read; a bad value names its line and key: %s", err.text);
	unlink(path);
	ok(syn_conf_load(&c, path, &err) == -1 && errno == ENOENT, "missing file: ENOENT");
}

/* The one search order of every Synergy program. */
static void test_default_path(void)
{
	syn_error_t err;
	char buf[256], path[] = "/tmp/syn-conf-test.XXXXXX";
	syn_conf_t c;
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, "NodeGPUs=3\n", 11) != 11)
		bail_out("cannot write a conf file");
	close(fd);
	setenv(SYN_CONF_ENV, path, 1);
	syn_conf_defaults(&c);
	ok(syn_conf_load(&c, NULL, &err) == 0 && c.node_gpus == 3,
	   "SYNERGY_CONF names the default file");
	unlink(path);
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

/* What used to differ between programs: synergy-profile read ProfileStore
 * alone and took any text; the one loader checks every key for all. */
static void test_one_grammar(void)
{
	syn_error_t err;
	syn_conf_t c;

	syn_conf_defaults(&c);
	ok(syn_conf_set(&c, "ProfileStore", "store", &err) == -1 && errno == EINVAL &&
		   strstr(err.text, "ProfileStore") &&
		   strcmp(c.store_dir, SYN_CONF_PROFILE_STORE_DEFAULT) == 0,
	   "a relative ProfileStore is refused by name, the default kept");
	ok(syn_conf_set(&c, "ProfileStore", "", &err) == -1 && strstr(err.text, "ProfileStore"),
	   "an empty ProfileStore is refused");
	ok(syn_conf_set(&c, "Eps", " 0.5", &err) == -1 &&
		   syn_conf_set(&c, "Eps", "0x0.1", &err) == -1 &&
		   syn_conf_set(&c, "Eps", "5e-2", &err) == 0 && c.eps == 0.05,
	   "Eps is a real of the one grammar (no spaces, no hex)");
	ok(syn_conf_set(&c, "Enabled", "TRUE", &err) == 0 && c.enabled == 1 &&
		   syn_conf_set(&c, "Enabled", "0", &err) == 0 && c.enabled == 0,
	   "booleans of the one grammar");
	ok(syn_conf_set(&c, "PeerPortMin", "65536", &err) == -1 && errno == ERANGE &&
		   strstr(err.text, "PeerPortMin") &&
		   c.peer_port_min == SYN_CONF_PEER_PORT_MIN_DEFAULT,
	   "a number out of range is ERANGE, by name, value kept");
}

/* CheckFreq's keys: a path like the other directories, a retention of 0
 * (until the job completes) up to ten years of 366 days. */
static void test_checkpoint_keys(void)
{
	syn_error_t err;
	syn_conf_t c;

	syn_conf_defaults(&c);
	ok(c.ckpt_dir[0] == '\0' && c.ckpt_retention == SYN_CONF_CHECKPOINT_RETENTION_DEFAULT,
	   "no CheckpointDir by default, a week's retention");
	ok(syn_conf_set(&c, "checkpointdir", "/scratch/ckpt", &err) == 0 &&
		   strcmp(c.ckpt_dir, "/scratch/ckpt") == 0,
	   "CheckpointDir set (keys are case-insensitive)");
	ok(syn_conf_set(&c, "CheckpointDir", "scratch/../ckpt", &err) == -1 && errno == EINVAL &&
		   strstr(err.text, "CheckpointDir") && strcmp(c.ckpt_dir, "/scratch/ckpt") == 0,
	   "a relative CheckpointDir is refused by name, the value kept");
	ok(syn_conf_set(&c, "CheckpointRetention", "0", &err) == 0 && c.ckpt_retention == 0 &&
		   syn_conf_set(&c, "CheckpointRetention", "316224000", &err) == 0 &&
		   c.ckpt_retention == 316224000ULL,
	   "CheckpointRetention takes 0..316224000 seconds");
	ok(syn_conf_set(&c, "CheckpointRetention", "316224001", &err) == -1 && errno == ERANGE &&
		   strstr(err.text, "CheckpointRetention") && strstr(err.text, "0..316224000") &&
		   c.ckpt_retention == 316224000ULL,
	   "a CheckpointRetention above ten years is refused by name, the value kept");
	ok(syn_conf_set(&c, "CheckpointRetention", "-1", &err) == -1 &&
		   strstr(err.text, "CheckpointRetention"),
	   "a negative CheckpointRetention is refused");
}

/* Every key of the schema is named in synergy.conf(5): as " Key=" in a
 * paragraph's tag (".BI Key= N", ", Key=" N"), or as ".B Key" (an alias). */
static void test_documented(void)
{
	char *man = syn_file_read(AT_FDCWD, TOP_SRCDIR "/doc/synergy.conf.5", 1 << 20, 0, NULL);
	int missing = 0;
	size_t i;

	if (!man)
		bail_out("cannot read doc/synergy.conf.5");
	for (i = 0; syn_conf_key_name(i); i++) {
		char tag[80], alias[80];
		snprintf(tag, sizeof(tag), " %s=", syn_conf_key_name(i));
		snprintf(alias, sizeof(alias), "\n.B %s\n", syn_conf_key_name(i));
		if (!strstr(man, tag) && !strstr(man, alias)) {
			diag("synergy.conf(5) does not name %s", syn_conf_key_name(i));
			missing++;
		}
	}
	ok(i > 25 && missing == 0, "synergy.conf(5) documents all %zu keys of the schema", i);
	free(man);
}

int main(void)
{
	test_conf();
	test_default_path();
	test_one_grammar();
	test_checkpoint_keys();
	test_documented();
	return done_testing();
}
