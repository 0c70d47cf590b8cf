/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_synergy.c: the Synergy SPANK plugin's entry points.
 *
 * Registers --synergy-profile=KEY, --synergy-group=NAME and --synergy=on|off
 * (environment twins SYNERGY_PROFILE, SYNERGY_GROUP_NAME and SYNERGY) in
 * every context, so that job scripts using
 * them run whether the plugin is enabled or not, loads the configuration
 * (plugstack arguments, conf=synergy.conf), and hands each hook to the
 * code for the context Slurm runs it in (spank_int.h). The node side never
 * takes the options' values from here: what a job gets on the node comes
 * from what job_submit decided (jobrec.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_env.h"
#include "plugin/node/lend.h"
#include "plugin/slurm/spank_int.h"

SPANK_PLUGIN(synergy, 1);

syn_conf_t syn__spank_conf;
int syn__spank_conf_ok;
syn__spank_opts_t syn__spank_opts;

static int opt_profile_cb(int val, const char *optarg, int remote);
static int opt_onoff_cb(int val, const char *optarg, int remote);
static int opt_group_cb(int val, const char *optarg, int remote);

static struct spank_option opt_profile = {
	"synergy-profile", "KEY",
	"Size CPU cores and cache memory from the Synergy profile KEY "
	"(env SYNERGY_PROFILE).",
	1, 0, opt_profile_cb
};
static struct spank_option opt_group = {
	"synergy-group", "NAME",
	"Coordinated prep: share prepared batches on a node with your other jobs "
	"that name the same group (a job array's tasks share without it) "
	"(env SYNERGY_GROUP_NAME).",
	1, 0, opt_group_cb
};
static struct spank_option opt_onoff = {
	"synergy", "on|off",
	"off: run GPU-proportional, leave the job untouched (env SYNERGY).",
	1, 0, opt_onoff_cb
};

/* On the node the options are only recorded by Slurm; the client checks
 * them and the user sees an error before submitting. */
static int opt_profile_cb(int val, const char *optarg, int remote)
{
	(void)val;
	if (remote)
		return 0;
	if (!syn_key_valid(optarg)) {
		slurm_error("synergy: --synergy-profile: '%s' is not a valid profile key "
			    "(1-64 characters of A-Z a-z 0-9 _ . -, not starting with '.')",
			    optarg ? optarg : "");
		syn__spank_opts.bad = 1;
		return -1;
	}
	snprintf(syn__spank_opts.key, sizeof(syn__spank_opts.key), "%s", optarg);
	syn__spank_opts.key_set = 1;
	return 0;
}

static int opt_group_cb(int val, const char *optarg, int remote)
{
	(void)val;
	if (remote)
		return 0;
	if (!syn__group_name_valid(optarg)) {
		slurm_error("synergy: --synergy-group: '%s' is not a valid group name "
			    "(1-%d characters of A-Z a-z 0-9 _ . -, not starting with '.' or '-')",
			    optarg ? optarg : "", SYNERGY_GROUP_NAME_MAX);
		syn__spank_opts.bad = 1;
		return -1;
	}
	snprintf(syn__spank_opts.group, sizeof(syn__spank_opts.group), "%s", optarg);
	syn__spank_opts.group_set = 1;
	return 0;
}

static int opt_onoff_cb(int val, const char *optarg, int remote)
{
	int on;

	(void)val;
	if (remote)
		return 0;
	if (syn_parse_bool(optarg, &on) < 0) {
		slurm_error("synergy: --synergy: '%s' is not on or off", optarg ? optarg : "");
		syn__spank_opts.bad = 1;
		return -1;
	}
	syn__spank_opts.off = !on;
	return 0;
}

/* The configuration from the plugstack arguments, once per process:
 * slurm_spank_init loads it, except in the job prolog and epilog, where
 * Slurm calls no init and hands the arguments to those hooks. */
static int conf_ac;
static char **conf_av;

/* c from the defaults and the plugstack arguments (conf=FILE loads it). */
static int conf_parse(syn_conf_t *c, int ac, char **av, char *err, size_t errlen)
{
	syn_error_t e;

	syn_conf_defaults(c);
	for (int i = 0; i < ac; i++) {
		if (!av[i]) {
			snprintf(err, errlen, "plugstack argument %d is missing", i + 1);
			return -1;
		}
		if (syn_conf_arg(c, av[i], &e) < 0) {
			snprintf(err, errlen, "%s", e.text);
			return -1;
		}
	}
	return 0;
}

int syn__spank_conf_reload(syn_conf_t *c)
{
	char err[300];

	return conf_parse(c, conf_ac, conf_av, err, sizeof(err));
}

static void load_conf(int ac, char **av)
{
	static int loaded;
	char err[300];
	int i;

	if (loaded)
		return;
	loaded = 1;
	/* Kept, copied, for syn__spank_conf_reload. */
	conf_av = ac > 0 ? calloc((size_t)ac, sizeof(*conf_av)) : NULL;
	if (conf_av) {
		conf_ac = ac;
		for (i = 0; i < ac; i++)
			conf_av[i] = av[i] ? strdup(av[i]) : NULL;
	}
	syn__spank_conf_ok = conf_parse(&syn__spank_conf, ac, av, err, sizeof(err)) == 0;
	if (!syn__spank_conf_ok)
		slurm_error("synergy: plugstack.conf: %s; Synergy disabled", err);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	/* Register the options even when disabled, so that job scripts that use
	 * them keep working. */
	if (spank_option_register(sp, &opt_profile) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_group) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_onoff) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot register options");
	if (spank_context() == S_CTX_SLURMD)
		syn__slurmd_init(sp);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return syn__client_post_opt(sp);
	case S_CTX_REMOTE:
		return syn__remote_init_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	return spank_remote(sp) ? syn__remote_task_post_fork(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	return spank_remote(sp) ? syn__remote_task_init(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	return spank_remote(sp) ? syn__remote_task_exit(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	return spank_context() == S_CTX_REMOTE ? syn__remote_exit(sp) : 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	return syn__job_prolog(sp);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	return syn__job_epilog(sp);
}

void syn__spank_log(int is_error, const char *msg, void *arg)
{
	(void)arg;
	if (is_error)
		slurm_error("%s", msg);
	else
		slurm_info("%s", msg);
}

const char *syn__node_name(void)
{
	static char name[SYN_KEY_MAX + 1];
	const char *env;

	if (name[0])
		return name;
	env = getenv("SLURMD_NODENAME");
	if (env && syn_key_valid(env)) {
		snprintf(name, sizeof(name), "%s", env);
		return name;
	}
	if (gethostname(name, sizeof(name)) < 0)
		name[0] = '\0';
	name[sizeof(name) - 1] = '\0';
	name[strcspn(name, ".")] = '\0';
	if (!syn_key_valid(name))
		name[0] = '\0';
	return name[0] ? name : NULL;
}

syn__cg_t *syn__node_cgroup(void)
{
	static syn__cg_t *cg;
	static int tried;
	const char *node;
	char err[300];

	if (tried)
		return cg;
	tried = 1;
	node = syn__node_name();
	if (!node) {
		slurm_error("synergy: cannot tell this node's NodeName; running GPU-proportional");
		return NULL;
	}
	cg = syn__cg_open_conf(&syn__spank_conf, node, NULL, 0, err, sizeof(err));
	if (!cg)
		slurm_error("synergy: %s; jobs on node %s run GPU-proportional", err, node);
	return cg;
}

const struct syn__agent *syn__node_agent(void)
{
	static syn__agent_t agent;
	static char node_rel[SYN_PATH_MAX * 2];
	static int tried, ok;
	char note[400];
	syn__cg_t *cg;

	if (tried)
		return ok ? &agent : NULL;
	tried = 1;
	cg = syn__node_cgroup();
	if (!cg)
		return NULL;
	if (syn__agent_init(&agent, &syn__spank_conf, cg, NULL, node_rel, sizeof(node_rel), note,
			    sizeof(note)) < 0) {
		slurm_error("synergy: %s; nothing is lent", note);
		return NULL;
	}
	if (note[0] && agent.lend)
		slurm_info("synergy: %s", note);
	agent.lend = agent.lend && syn__spank_conf_ok;
	agent.log = syn__spank_log;
	ok = 1;
	return &agent;
}

void syn__inplace_fill(syn__inplace_t *x, uint32_t jobid, uint32_t uid, int final)
{
	const syn__agent_t *a = syn__node_agent();
	cpu_set_t set;
	long n;

	memset(x, 0, sizeof(*x));
	x->store_dir = syn__spank_conf.store_dir;
	x->cache_dir = syn__spank_conf.cache_dir;
	x->state_dir = syn__spank_conf.state_dir;
	x->node = syn__node_name();
	x->jobid = jobid;
	x->uid = uid;
	x->node_gpus = syn__spank_conf.node_gpus;
	x->node_cpus_conf = syn__spank_conf.node_cpus;
	x->node_mem_mb = syn__spank_conf.node_mem_mb;
	x->final = final;
	x->now = time(NULL);
	x->version = PACKAGE_VERSION;
	/* The most CPUs a search could have run on: the node's cgroup (what
	 * Slurm may give jobs), else the machine's. */
	if (a && syn__cg_get_cpus(a->cg, a->node_rel, &set) == 0)
		x->node_cpus = CPU_COUNT(&set);
	else if ((n = sysconf(_SC_NPROCESSORS_ONLN)) > 0)
		x->node_cpus = (int)n;
}

int syn__inplace_run(uint32_t jobid, uint32_t uid, int final)
{
	syn__inplace_t x;
	char msg[600];
	int rc;

	syn__inplace_fill(&x, jobid, uid, final);
	rc = syn__inplace_collect(&x, msg, sizeof(msg));
	if (rc == SYN__INPLACE_FILED)
		slurm_info("synergy: job %u: profiled in place: %s", (unsigned)jobid, msg);
	else if (rc == SYN__INPLACE_REFUSED || rc == SYN__INPLACE_NONE)
		slurm_info("synergy: job %u: profiling in place: %s", (unsigned)jobid, msg);
	else if (rc < 0)
		slurm_error("synergy: job %u: profiling in place: %s", (unsigned)jobid, msg);
	return rc;
}
