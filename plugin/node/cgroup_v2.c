/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup_v2.c: what the cgroup v2 backend does that v1 does not (see
 * cgroup.h): a job's limit cgroups are the "user" cgroups of its running
 * steps, job_J/step_S/user, which Slurm's cgroup/v2 plugin creates and
 * constrains and under which it keeps each task in a task_T leaf. Synergy
 * creates no cgroup here: a task moved out of its task_T leaf would no
 * longer be signalled, waited for or cleaned up by Slurm.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/node/cgroup_int.h"

int syn__cg2_limits(const syn__cg_t *cg, const char *job_rel, char ***out)
{
	char path[SYN_PATH_MAX * 3], rel[SYN_PATH_MAX * 3];
	char **list = NULL, **nl;
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dp;

	if (syn__cg_path(cg, NULL, job_rel, NULL, path, sizeof(path)) < 0)
		return -1;
	list = calloc(1, sizeof(*list));
	if (!list)
		goto nomem;
	cap = 1;
	dp = opendir(path);
	if (!dp) {
		if (errno == ENOENT) {
			*out = list;
			return 0;
		}
		free(list);
		return -1;
	}
	while ((d = readdir(dp))) {
		if (strncmp(d->d_name, "step_", 5) != 0 || strchr(d->d_name, '/'))
			continue;
		if ((size_t)snprintf(rel, sizeof(rel), "%s/%s/user", job_rel, d->d_name) >=
		    sizeof(rel) ||
		    syn__cg_path(cg, NULL, rel, NULL, path, sizeof(path)) < 0 ||
		    access(path, F_OK) != 0)
			continue;
		if (n + 1 >= cap) {
			nl = realloc(list, (cap * 2 + 2) * sizeof(*list));
			if (!nl)
				goto nomem_dir;
			list = nl;
			cap = cap * 2 + 2;
		}
		list[n] = strdup(rel);
		if (!list[n])
			goto nomem_dir;
		list[++n] = NULL;
	}
	closedir(dp);
	*out = list;
	return 0;
nomem_dir:
	closedir(dp);
nomem:
	syn__cg_free_list(list);
	errno = ENOMEM;
	return -1;
}

int syn__cg2_job_idle(const syn__cg_t *cg, const char *job_rel, int idle, char *err, size_t errlen)
{
	char path[SYN_PATH_MAX * 3];

	if (syn__cg_path(cg, NULL, job_rel, "cpu.idle", path, sizeof(path)) < 0)
		return syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s",
				  job_rel);
	if (access(path, F_OK) != 0) {
		if (!idle)
			return 0;
		return syn_errbuf(err, errlen, ENOTSUP,
				  "%s has no cpu.idle (the cpu controller is not enabled there)",
				  job_rel);
	}
	if (syn__cg_write_file(path, idle ? "1" : "0", err, errlen) < 0)
		return -1;
	return 0;
}
