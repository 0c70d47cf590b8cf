/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_synergy.c: the Synergy SPANK plugin's entry points.
 *
 * Registers --synergy-profile=KEY, --synergy-group=NAME and --synergy=on|off
 * (environment twins SYNERGY_PROFILE, SYNERGY_GROUP_NAME and SYNERGY) in
 * every context, so that job scripts using them run whether the plugin is
 * enabled or not, and hands each hook to the code for the context Slurm
 * runs it in (spank_int.h): the client's in this module, the node's in
 * spank_synergy_node.so, which is loaded from beside this module the first
 * time a node-side hook runs (slurmd, its prolog and epilog, slurmstepd).
 * sbatch, salloc and srun thus load this small module and libc only. The
 * node side never takes the options' values from here: what a job gets on
 * the node comes from what job_submit decided (jobrec.h).
 *
 * Every hook returns 0 or -1 (rc()): from Slurm 25.05 any other non-zero
 * value fails the step, and a failing init stops slurmd.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_env.h"
#include "plugin/slurm/spank_int.h"

SPANK_PLUGIN(synergy, 1);

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

/* A hook's result as Slurm must see it: 0, or -1 for any failure. */
static int rc(int v)
{
	return v == 0 ? 0 : -1;
}

/*
 * The node module, loaded once per process from the directory this module
 * was loaded from (the admin's plugstack.conf or PluginDir named it, so
 * that directory is the admin's). NULL (logged once) when it cannot be
 * loaded or comes from another build: the node then runs every job
 * GPU-proportional, as with any other failure of the node side. It stays
 * loaded for the life of the process (slurmd loads SPANK plugins once;
 * slurmstepd and the prolog's process live one step or one job).
 */
static const syn__spank_node_t *node(void)
{
	static const syn__spank_node_t *ops;
	static int tried;
	static const char self;
	char path[4096];
	const char *slash;
	const syn__spank_node_t *o;
	Dl_info info;
	void *h;
	int n;

	if (tried)
		return ops;
	tried = 1;
	if (!dladdr(&self, &info) || !info.dli_fname || !(slash = strrchr(info.dli_fname, '/'))) {
		slurm_error("synergy: cannot tell where spank_synergy.so was loaded from; "
			    "running GPU-proportional");
		return NULL;
	}
	n = snprintf(path, sizeof(path), "%.*s/" SYN__SPANK_NODE_MODULE,
		     (int)(slash - info.dli_fname), info.dli_fname);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		slurm_error("synergy: the path of " SYN__SPANK_NODE_MODULE " is too long; "
			    "running GPU-proportional");
		return NULL;
	}
	h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		slurm_error("synergy: cannot load %s: %s; running GPU-proportional", path,
			    dlerror());
		return NULL;
	}
	o = dlsym(h, SYN__SPANK_NODE_SYMBOL);
	if (!o || o->size != sizeof(*o) || !o->version || strcmp(o->version, PACKAGE_VERSION)) {
		slurm_error("synergy: %s is not the node module of this spank_synergy.so (version "
			    "%s, expected %s); running GPU-proportional", path,
			    o && o->size == sizeof(*o) && o->version ? o->version : "unknown",
			    PACKAGE_VERSION);
		dlclose(h);
		return NULL;
	}
	ops = o;
	return ops;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n;
	spank_context_t ctx = spank_context();

	/* Register the options even when disabled, so that job scripts that use
	 * them keep working. */
	if (spank_option_register(sp, &opt_profile) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_group) != ESPANK_SUCCESS ||
	    spank_option_register(sp, &opt_onoff) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot register options");
	if ((ctx == S_CTX_REMOTE || ctx == S_CTX_SLURMD) && (n = node()))
		n->init(sp, ac, av);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n;

	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return rc(syn__client_post_opt(sp));
	case S_CTX_REMOTE:
		return (n = node()) ? rc(n->init_post_opt(sp)) : 0;
	default:
		return 0;
	}
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n;

	return spank_remote(sp) && (n = node()) ? rc(n->task_post_fork(sp)) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n;

	return spank_remote(sp) && (n = node()) ? rc(n->task_init(sp)) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n;

	return spank_remote(sp) && (n = node()) ? rc(n->task_exit(sp)) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n;

	return spank_context() == S_CTX_REMOTE && (n = node()) ? rc(n->exit(sp)) : 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n = node();

	return n ? rc(n->job_prolog(sp, ac, av)) : 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	const syn__spank_node_t *n = node();

	return n ? rc(n->job_epilog(sp, ac, av)) : 0;
}
