/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_client.c: the Synergy SPANK plugin in sbatch, salloc and srun.
 *
 * Takes the environment twins of the options (SYNERGY_PROFILE,
 * SYNERGY_GROUP_NAME, SYNERGY) when the flags were not given, checks them strictly and forwards them to
 * the controller with spank_job_control_setenv, where job_submit/synergy
 * finds them in the job's spank environment and decides. A malformed value
 * is an error the user sees before anything is submitted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_env.h"
#include "plugin/slurm/spank_int.h"

int syn__client_post_opt(spank_t sp)
{
	syn__spank_opts_t *o = &syn__spank_opts;
	const char *v;
	int on;

	if (!o->key_set && !o->bad && (v = getenv("SYNERGY_PROFILE")) && *v) {
		if (!syn_key_valid(v)) {
			slurm_error("synergy: SYNERGY_PROFILE: '%s' is not a valid profile key "
				    "(1-64 characters of A-Z a-z 0-9 _ . -, not starting with '.')",
				    v);
			return -1;
		}
		snprintf(o->key, sizeof(o->key), "%s", v);
		o->key_set = 1;
	}
	/* Not SYNERGY_GROUP: that is the loader's variable, which a job's
	 * environment (and so a job submitted from inside one) may carry. */
	if (!o->group_set && !o->bad && (v = getenv(SYN__CTL_GROUP)) && *v) {
		if (!syn__group_name_valid(v)) {
			slurm_error("synergy: " SYN__CTL_GROUP ": '%s' is not a valid group name "
				    "(1-%d characters of A-Z a-z 0-9 _ . -, not starting with '.' or "
				    "'-')", v, SYNERGY_GROUP_NAME_MAX);
			return -1;
		}
		snprintf(o->group, sizeof(o->group), "%s", v);
		o->group_set = 1;
	}
	if (!o->bad && (v = getenv("SYNERGY")) && *v) {
		if (syn_parse_bool(v, &on) < 0) {
			slurm_error("synergy: SYNERGY: '%s' is not on or off", v);
			return -1;
		}
		o->off = !on;
	}
	if (o->bad)
		return -1;
	if (o->key_set &&
	    spank_job_control_setenv(sp, SYN__CTL_KEY, o->key, 1) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot forward the profile key");
	if (o->group_set &&
	    spank_job_control_setenv(sp, SYN__CTL_GROUP, o->group, 1) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot forward the group name");
	if (o->off && spank_job_control_setenv(sp, SYN__CTL_ONOFF, "off", 1) != ESPANK_SUCCESS)
		slurm_error("synergy: cannot forward --synergy=off");
	return 0;
}
