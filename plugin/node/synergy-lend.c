/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergy-lend: look at Synergy on this machine (root, read-only).
 *
 * --status: for every Slurm node whose cgroup exists here (a machine may run
 * several slurmd), the node's CPUs and, per running job, the CPUs Slurm
 * allotted (from the node's job record), the CPUs its job cgroup and its
 * limit cgroups hold now, and which of them are lent.
 * --check: what the SPANK plugin would do on this node and, if it would
 * leave jobs GPU-proportional, why: the configuration, the cgroup version
 * and layout it detects (on v2 the slice, PID 1's cgroup and the prefix
 * Slurm 23.02+ takes from it, the node's scope, where slurmd runs, and how
 * the running jobs' directories are named: job_<id> or, from Slurm 26.05,
 * the SLUID), StateDir, CacheDir and the profile store.
 * Both read the cgroup tree through the plugins' cgroup layer and change
 * nothing.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/store.h"
#include "plugin/shared/nodeconf.h"
#include "plugin/node/cgroup.h"
#include "plugin/shared/grantauth.h"
#include "plugin/shared/jobrec.h"
#include "plugin/node/lend.h"
#include "plugin/shared/util.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: synergy-lend --status|--check [-c FILE] [-N NODE]\n"
		"Look at Synergy on this machine; read-only, run as root.\n"
		"  -s, --status     per Slurm node here: the CPUs each running job was allotted\n"
		"                   and holds now, lent ones included (LendIdleCores)\n"
		"  -k, --check      what the plugin would do on this node, and why it would run\n"
		"                   jobs GPU-proportional; exit status 1 if it would\n"
		"  -c, --conf FILE  synergy.conf to read (default $SYNERGY_CONF, else beside\n"
		"                   $SLURM_CONF, else %s)\n"
		"  -N, --node NAME  the node's NodeName (default $SLURMD_NODENAME, else the\n"
		"                   short host name)\n"
		"  -h, --help       this text\n", SYN_CONF_DEFAULT_PATH);
}

typedef struct status_arg {
	const syn__cg_t *cg;
	const syn_conf_t *conf;
	int failed;
} status_arg_t;

static int print_job(const syn__lend_info_t *i, void *arg)
{
	(void)arg;
	char cache[24] = "-", idle[24] = "-";

	if (i->borrow)
		snprintf(cache, sizeof(cache), "%lluM", (unsigned long long)i->cache_mb);
	if (i->has_idle)
		snprintf(idle, sizeof(idle), "%.2f", i->idle);
	char id[32];
	const char *slash = strrchr(i->job_rel, '/');

	/* A job cgroup named by a SLUID that no record names (cgroup.h). */
	if (i->jobid)
		snprintf(id, sizeof(id), "%u", (unsigned)i->jobid);
	else
		snprintf(id, sizeof(id), "%.20s", slash ? slash + 1 : i->job_rel);
	printf("  %-14s %-12s %-12s %-12s %-12s %-9s %-6s %-14s %s%s\n", id,
	       i->recorded ? i->allotted : "-", i->held[0] ? i->held : "-",
	       i->limits[0] ? i->limits : "-", i->lent[0] ? i->lent : "-", cache, idle,
	       i->group[0] ? i->group : "-",
	       i->borrow ? i->key : i->recorded ? "(does not borrow)" : "(not recorded)",
	       i->harvests ? " (harvests, idle priority)" : "");
	return 0;
}

static int print_node(const char *node_rel, const char *name, void *arg)
{
	status_arg_t *a = arg;
	char cpus[SYN__CPULIST_MAX], err[300], rel[SYN_PATH_MAX * 2], *text;
	syn__agent_t agent;
	syn__cg_t *cg;

	/* Records are per NodeName: open the layer as that node. */
	cg = syn__cg_open_conf(a->conf, name, NULL, 0, err, sizeof(err));
	if (!cg) {
		fprintf(stderr, "synergy-lend: node %s: %s\n", name, err);
		a->failed = 1;
		return 0;
	}
	memset(&agent, 0, sizeof(agent));
	agent.cg = cg;
	agent.state_dir = a->conf->state_dir;
	snprintf(rel, sizeof(rel), "%s", node_rel);
	agent.node_rel = rel;
	text = syn__cg_get_cpus_text(cg, node_rel);
	printf("node %s: cpus %s (cgroup %s)\n", name, text ? text : "?", node_rel);
	free(text);
	printf("  %-14s %-12s %-12s %-12s %-12s %-9s %-6s %-14s %s\n", "JOB", "ALLOTTED", "HOLDS",
	       "LIMITS", "LENT", "CACHE", "IDLE", "GROUP", "PROFILE");
	if (syn__lend_status(&agent, cpus, sizeof(cpus), print_job, NULL) < 0) {
		printf("  unreadable: %s\n", strerror(errno));
		a->failed = 1;
	}
	syn__cg_close(cg);
	return 0;
}

/* ---- --check ---- */

static int problems;

static void check(int good, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(int good, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("%-5s %-12s ", good ? "ok" : "FAIL", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!good)
		problems++;
}

static void note(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("%-5s %-12s ", "info", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int count_profiles(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		size_t len = strlen(d->d_name);
		if (len > 5 && strcmp(d->d_name + len - 5, ".json") == 0)
			n++;
	}
	closedir(dp);
	return n;
}

static void check_dir_safe(const char *what, const char *path, int must_exist)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT && !must_exist)
			check(1, what, "%s does not exist yet (the plugin creates it, root-only)",
			      path);
		else
			check(0, what, "%s: %s", path, strerror(errno));
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		check(0, what, "%s is not a directory (a link or file: the plugin moves a "
		      "CacheDir like this aside at slurmd start)", path);
		return;
	}
	check(st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)), what,
	      "%s owner uid %u mode %04o (must be root's, writable by root only)", path,
	      (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
}

/* How the node would tell a grant job_submit sealed from a forged one
 * (grantauth.h). */
static void check_grants(const syn_conf_t *conf)
{
	char err[300], path[SYN_PATH_MAX + 16];
	syn__grantauth_t ga;
	struct stat st;

	if (syn__grantauth_load(NULL, &ga, err, sizeof(err)) < 0) {
		check(0, "grants", "%s: the node cannot check any grant", err);
		return;
	}
	if (syn__grantauth_ping(&ga, err, sizeof(err)) < 0) {
		check(0, "grants", "%s: job_submit cannot seal grants nor the node open them", err);
		return;
	}
	check(1, "grants", "sealed with munge%s%s by SlurmUser %s (uid %u) or root; grants older "
	      "than GrantMaxAge=%llu s refused", ga.socket[0] ? " at " : "", ga.socket,
	      ga.slurm_user, (unsigned)ga.slurm_uid, (unsigned long long)conf->grant_max_age);
	if (syn__grantauth_prolog_alloc(&ga))
		note("prolog env", "PrologFlags=%s: the prolog runs at allocation with the job's "
		     "SPANK environment from slurmctld", ga.prolog_flags);
	else
		note("prolog env", "PrologFlags without Alloc: a job's first srun may hand the "
		     "prolog SPANK variables of the user's; only a sealed grant is taken "
		     "(PrologFlags=Alloc keeps them from the prolog altogether)");
	snprintf(path, sizeof(path), "%s/claims", conf->store_dir);
	if (lstat(path, &st) == 0)
		check(S_ISDIR(st.st_mode) && !(st.st_mode & 077), "claims",
		      "%s mode %04o (others must not open it: nonces, and its lock)", path,
		      (unsigned)(st.st_mode & 07777));
}

/* 1 if argument list cmdline (NUL-separated, len bytes) names node with
 * -N (slurmd of a multiple-slurmd host), or names no node at all. */
static int slurmd_of(const char *cmdline, size_t len, const char *node)
{
	const char *a = cmdline, *end = cmdline + len;
	int named = 0;

	while (a < end) {
		size_t n = strnlen(a, (size_t)(end - a));

		if (strcmp(a, "-N") == 0 && a + n + 1 < end) {
			named = 1;
			if (strcmp(a + n + 1, node) == 0)
				return 1;
		} else if (strncmp(a, "-N", 2) == 0 && a[2]) {
			named = 1;
			if (strcmp(a + 2, node) == 0)
				return 1;
		}
		a += n + 1;
	}
	return !named;
}

/*
 * Where this node's slurmd runs: the cgroup of each process named slurmd
 * that serves node (info only: nothing the plugin does depends on it).
 * On v2 it tells how slurmd was started: in <scope>/slurmd (by hand, as
 * every release does), in <unit>/slurmd (systemd, Slurm 25.11.3+), or in
 * its unit's own cgroup (systemd, earlier releases). A scope found so is
 * copied to scope (len bytes; "" if none). Returns how many run.
 */
static int check_slurmd(const syn__cg_t *cg, const char *node, char *scope, size_t len_scope)
{
	char path[64], rel[SYN_PATH_MAX * 2], *cmd;
	struct dirent *d;
	size_t len;
	DIR *dp = opendir("/proc");
	int found = 0;

	scope[0] = '\0';
	if (!dp)
		return 0;
	while ((d = readdir(dp))) {
		uint64_t pid;
		char *comm;

		if (syn_parse_u64(d->d_name, 1, INT32_MAX, &pid) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%llu/comm", (unsigned long long)pid);
		comm = syn_file_read(AT_FDCWD, path, 64, 0, NULL);
		if (!comm || strcmp(comm, "slurmd\n") != 0) {
			free(comm);
			continue;
		}
		free(comm);
		snprintf(path, sizeof(path), "/proc/%llu/cmdline", (unsigned long long)pid);
		cmd = syn_file_read(AT_FDCWD, path, 1 << 16, 0, &len);
		if (!cmd || !slurmd_of(cmd, len, node) ||
		    syn__cg_of_pid(cg, (pid_t)pid, rel, sizeof(rel)) < 0) {
			free(cmd);
			continue;
		}
		free(cmd);
		found++;
		if (syn__cg_version(cg) == 1) {
			note("slurmd", "pid %llu in /%s (cpuset)", (unsigned long long)pid, rel);
			continue;
		}
		len = strlen(rel);
		if (len >= 7 && strcmp(rel + len - 7, "/slurmd") == 0 && len - 7 >= 16 &&
		    strncmp(rel + len - 7 - 16, "slurmstepd.scope", 16) == 0) {
			note("slurmd", "pid %llu in /%s: its scope's slurmd cgroup (started by hand "
			     "or believing so)", (unsigned long long)pid, rel);
			snprintf(scope, len_scope, "%.*s", (int)(len - 7), rel);
		} else if (len >= 7 && strcmp(rel + len - 7, "/slurmd") == 0)
			note("slurmd", "pid %llu in /%s: a slurmd sub-cgroup of its unit (systemd, "
			     "Slurm 25.11.3+)", (unsigned long long)pid, rel);
		else
			note("slurmd", "pid %llu in /%s (systemd's unit, or where it was started)",
			     (unsigned long long)pid, rel);
	}
	closedir(dp);
	if (!found)
		note("slurmd", "no slurmd of node %s runs on this machine", node);
	return found;
}

/*
 * The cgroup layout the plugin assumes, and what of it could make jobs
 * fall back: the node's cgroup (FAIL while slurmd runs without one the
 * layer finds), controllers the node cgroup does not pass to its jobs, and
 * job directories of a naming the layer does not know.
 */
static void check_layout(const syn_conf_t *conf, const syn__cg_t *cg, const char *node)
{
	char rel[SYN_PATH_MAX * 2], cand[SYN_PATH_MAX * 2], scope[SYN_PATH_MAX * 2];
	syn__cg_survey_t sv;
	int i, v2 = syn__cg_version(cg) == 2, exists, running;

	if (syn__cg_root(cg)[0])
		note("layout", "the node cgroup is CgroupRoot=%s (synergy.conf or cgroup.conf's "
		     "CgroupPrepend), not Slurm's own layout", syn__cg_root(cg));
	if (v2) {
		note("slice", "%s%s", syn__cg_slice(cg),
		     strcmp(syn__cg_slice(cg), "system.slice") == 0 ?
		     " (Slurm's default; cgroup.conf's CgroupSlice from Slurm 25.11)" :
		     " (cgroup.conf's CgroupSlice)");
		if (!syn__cg_init_cgroup(cg)[0])
			note("PID 1", "its cgroup is unreadable: Slurm's tree is looked for at the "
			     "mount's root only");
		else if (!syn__cg_init_prefix(cg)[0])
			note("PID 1", "in %s: Slurm's tree is at the mount's root",
			     syn__cg_init_cgroup(cg));
		else
			note("PID 1", "in %s: Slurm 23.02+ puts its tree under /%s (22.05 at the "
			     "mount's root; both are looked at)", syn__cg_init_cgroup(cg),
			     syn__cg_init_prefix(cg));
	}
	exists = syn__cg_node_path(cg, rel, sizeof(rel)) == 0;
	running = check_slurmd(cg, node, scope, sizeof(scope));
	if (exists) {
		check(1, "node cgroup", "/%s", rel);
	} else {
		char tried[1024] = "";
		size_t n = 0;

		for (i = 0; syn__cg_node_candidate(cg, i, cand, sizeof(cand)) == 0; i++)
			n += (size_t)snprintf(tried + n, n < sizeof(tried) ? sizeof(tried) - n : 0,
					      "%s/%s", i ? ", " : "", cand);
		/* On v2 slurmd makes its scope as it starts: a running slurmd
		 * without one here uses a layout the plugin does not know. */
		if (v2 && running)
			check(!conf->lend_idle, "node cgroup", "slurmd runs, but none of %s "
			      "exists: %s (set CgroupRoot in synergy.conf to the node's scope%s%s)",
			      tried, conf->lend_idle ? "the node agent would find no job and "
			      "lend nothing" : "only lending needs it, and LendIdleCores=no",
			      scope[0] ? ", slurmd's: /" : "", scope);
		else
			check(1, "node cgroup", "none yet of %s (slurmd makes it when it starts, "
			      "or with the node's first job; set CgroupRoot if your layout "
			      "differs)", tried);
	}
	if (!exists) {
		note("job cgroup", "%s", v2 ? "<node>/<job>/step_S/user/task_T, <job> job_<id> "
		     "(Slurm up to 25.11, or CgroupJobIdPaths=yes) or the job's SLUID (26.05)" :
		     "<node>/uid_U/job_J, tasks in job_J/synergy");
		return;
	}
	if (syn__cg_node_survey(cg, rel, &sv) < 0) {
		check(0, "node cgroup", "/%s cannot be read: %s", rel, strerror(errno));
		return;
	}
	if (!v2) {
		note("job cgroup", "<node>/uid_U/job_J, tasks in job_J/synergy (%d running)",
		     sv.by_id);
		return;
	}
	check(strstr(sv.subtree, "cpuset") && strstr(sv.subtree, "memory"), "controllers",
	      "/%s passes '%s' to its jobs (Synergy reads and sets each job's cpuset and "
	      "memory there; Slurm enables them when it makes the scope)", rel, sv.subtree);
	if (sv.by_sluid && sv.by_id)
		note("job dirs", "%d named by SLUID, %d job_<id> (CgroupJobIdPaths changed "
		     "while jobs ran?): both are read", sv.by_sluid, sv.by_id);
	else if (sv.by_sluid)
		note("job dirs", "named by the job's SLUID (Slurm 26.05; CgroupJobIdPaths=yes "
		     "names them job_<id>), %d running: a job is known by the SLUID its record "
		     "in StateDir keeps (written by the prolog from SLURM_JOB_SLUID and by the "
		     "job's first step)", sv.by_sluid);
	else if (sv.by_id)
		note("job dirs", "named job_<id>, %d running", sv.by_id);
	else
		note("job dirs", "none running (job_<id> up to Slurm 25.11 or with "
		     "CgroupJobIdPaths=yes%s, the SLUID from 26.05: both are read)",
		     syn__cg_job_id_paths(cg) ? ", which cgroup.conf sets" : "");
	check(sv.other == 0, "job dirs", "%s%s%s", sv.other ? "a directory of a naming the "
	      "plugin does not know: " : "no directory of another naming", sv.other_name,
	      sv.other ? " (a job named so would run GPU-proportional)" : "");
	note("job cgroup", "<node>/<job>/step_S/user/task_T; tasks stay in Slurm's task_T, "
	     "bounded by their step's user cgroup (cgroup.h)");
}

static int run_check(const syn_conf_t *conf, const char *conf_path, const char *node)
{
	char used[SYN_PATH_MAX + 16], err[300];
	syn__cg_t *cg;
	struct statfs fs;
	struct statvfs vfs;
	int n;

	note("node", "%s", node);
	check(1, "synergy.conf", "%s parsed", conf_path);
	check(conf->enabled, "enabled", "Enabled=%s", conf->enabled ? "yes" : "no");
	note("lending", "LendIdleCores=%s", conf->lend_idle ? "yes" : "no");
	cg = syn__cg_open_conf(conf, node, used, sizeof(used), err, sizeof(err));
	note("cgroup.conf", "%s%s", used, access(used, R_OK) == 0 ? "" : " (absent: Slurm's defaults)");
	if (!cg) {
		check(0, "cgroups", "%s", err);
	} else {
		check(1, "cgroups", "cgroup v%d at %s", syn__cg_version(cg), syn__cg_mountpoint(cg));
		check_layout(conf, cg, node);
		syn__cg_close(cg);
	}
	check_dir_safe("StateDir", conf->state_dir, 0);
	check_dir_safe("CacheDir", conf->cache_dir, 0);
	if (statfs(conf->cache_dir, &fs) == 0 && statvfs(conf->cache_dir, &vfs) == 0)
		note("CacheDir fs", "%s, %llu MB, %llu MB free",
		     (unsigned long)fs.f_type == TMPFS_MAGIC ? "tmpfs" : "not tmpfs (caches on disk)",
		     (unsigned long long)((uint64_t)vfs.f_blocks * vfs.f_frsize >> 20),
		     (unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize >> 20));
	check_grants(conf);
	n = count_profiles(conf->store_dir);
	check(n >= 0, "profiles", "%s: %s", conf->store_dir,
	      n >= 0 ? (n ? "readable" : "readable, empty (jobs with a key run "
			"GPU-proportional until profiled)") : strerror(errno));
	if (n > 0)
		note("profiles", "%d in the store", n);
	if (problems)
		printf("verdict: Synergy jobs on %s would run GPU-proportional (%d problem%s above)\n",
		       node, problems, problems == 1 ? "" : "s");
	else
		printf("verdict: Synergy jobs on %s would be sized and placed under their limits\n",
		       node);
	return problems ? 1 : 0;
}

/*
 * This machine's NodeName: $SLURMD_NODENAME, else the one slurm.conf gives
 * the slurmd on this host (NodeHostname, as slurmd finds its own; Slurm's
 * /slurm cgroup layout does not carry it), else the short host name.
 */
static const char *default_node(char *buf, size_t len)
{
	const char *env = getenv("SLURMD_NODENAME"), *path = getenv("SLURM_CONF");
	char host[SYN_KEY_MAX + 1], *text;

	if (env && syn_key_valid(env))
		return env;
	if (gethostname(host, sizeof(host)) < 0)
		return NULL;
	host[sizeof(host) - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
	text = syn_file_read(AT_FDCWD, path && *path ? path : "/etc/slurm/slurm.conf",
			     4 << 20, 0, NULL);
	if (text && syn__node_of_host(text, host, buf, len) == 0 && syn_key_valid(buf)) {
		free(text);
		return buf;
	}
	free(text);
	snprintf(buf, len, "%s", host);
	return syn_key_valid(buf) ? buf : NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "status", no_argument, NULL, 's' },
		{ "check", no_argument, NULL, 'k' },
		{ "conf", required_argument, NULL, 'c' },
		{ "node", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf_path = NULL, *node = NULL;
	char conf_buf[4096], host[SYN_KEY_MAX + 1], err[300];
	syn_error_t cerr;
	status_arg_t sa;
	syn_conf_t conf;
	syn__cg_t *cg;
	int c, action = 0, n;

	while ((c = getopt_long(argc, argv, "skc:N:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'k':
			if (action && action != c) {
				fprintf(stderr, "synergy-lend: give --status or --check, not both\n");
				return 2;
			}
			action = c;
			break;
		case 'c':
			conf_path = optarg;
			break;
		case 'N':
			if (!syn_key_valid(optarg)) {
				fprintf(stderr, "synergy-lend: --node: '%s' is not a NodeName\n",
					optarg);
				return 2;
			}
			node = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!action || optind < argc) {
		fprintf(stderr, "synergy-lend: %s\n", optind < argc ?
			"unexpected argument" : "nothing to do: give --status or --check");
		usage(stderr);
		return 2;
	}
	if (!conf_path)
		conf_path = syn_conf_default_path(conf_buf, sizeof(conf_buf));
	syn_conf_defaults(&conf);
	if (syn_conf_load(&conf, conf_path, &cerr) < 0) {
		fprintf(stderr, "synergy-lend: %s\n", cerr.text);
		if (action == 'k')
			printf("FAIL  synergy.conf %s\nverdict: the plugin is disabled\n",
			       cerr.text);
		return 1;
	}
	if (!node)
		node = default_node(host, sizeof(host));
	if (!node) {
		fprintf(stderr, "synergy-lend: cannot tell the NodeName: give --node\n");
		return 2;
	}
	if (action == 'k')
		return run_check(&conf, conf_path, node);
	printf("lending %s (LendIdleCores in %s), records in %s\n", conf.lend_idle ? "on" : "off",
	       conf_path, conf.state_dir);
	cg = syn__cg_open_conf(&conf, node, NULL, 0, err, sizeof(err));
	if (!cg) {
		fprintf(stderr, "synergy-lend: %s\n", err);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.cg = cg;
	sa.conf = &conf;
	n = syn__cg_foreach_node(cg, print_node, &sa);
	syn__cg_close(cg);
	if (n < 0) {
		fprintf(stderr, "synergy-lend: cannot list the node cgroups: %s\n", strerror(errno));
		return 1;
	}
	if (n == 0)
		printf("no Slurm node cgroup on this machine (no job has run yet)\n");
	return sa.failed ? 1 : 0;
}
