/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_node.c: the node half of the Synergy SPANK plugin, built as its own
 * module (spank_synergy_node.so) that spank_synergy.so loads only where it
 * runs as root on a node: in slurmd, its job prolog and epilog, and
 * slurmstepd. sbatch, salloc and srun, which load spank_synergy.so for
 * every job of every user, never map the node's libraries (hwloc,
 * libcgroup, munge, libcrypto, GLPK, jansson: about 1.3 ms of CPU per
 * process, BENCHMARKS.md, "Job submission").
 *
 * It holds what the node-side contexts share (the configuration from the
 * plugstack arguments, this node's name, its cgroup layer and node agent,
 * in-place profiling's glue, logging through Slurm) and exports one table,
 * syn__spank_node, through which spank_synergy.c calls the hooks of
 * spank_remote.c and spank_jobscript.c. Its state lives as long as the
 * process: slurmd loads SPANK plugins once, at its start, and slurmstepd
 * and the prolog's process are one step's or one job's.
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

#include "plugin/node/lend.h"
#include "plugin/slurm/spank_int.h"

syn_conf_t syn__spank_conf;
int syn__spank_conf_ok;

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

/* slurm_spank_init on a node: the configuration, and slurmd's own start
 * (which never fails: from 25.05 a failing init stops slurmd). */
static int node_init(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	if (spank_context() == S_CTX_SLURMD)
		syn__slurmd_init(sp);
	return 0;
}

static int node_job_prolog(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	return syn__job_prolog(sp);
}

static int node_job_epilog(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	return syn__job_epilog(sp);
}

const syn__spank_node_t syn__spank_node = {
	.size = sizeof(syn__spank_node_t),
	.version = PACKAGE_VERSION,
	.init = node_init,
	.init_post_opt = syn__remote_init_post_opt,
	.task_post_fork = syn__remote_task_post_fork,
	.task_init = syn__remote_task_init,
	.task_exit = syn__remote_task_exit,
	.exit = syn__remote_exit,
	.job_prolog = node_job_prolog,
	.job_epilog = node_job_epilog,
};
