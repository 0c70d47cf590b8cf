/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup_int.h: what cgroup.c shares with its two backends (cgroup_v1.c,
 * cgroup_v2.c). Not for use outside the cgroup layer.
 */
#ifndef SYN_PLUGIN_CGROUP_INT_H
#define SYN_PLUGIN_CGROUP_INT_H

#include <limits.h>

#include "plugin/node/cgroup.h"
#include "plugin/shared/util.h"

struct syn__cg {
	int version;
	char mnt[SYN_PATH_MAX];
	char node[SYN_KEY_MAX + 1];
	char host[SYN_KEY_MAX + 1];
	char root[SYN_PATH_MAX];     /* the admin's pattern, "" for Slurm's layouts */
	/* v2 (cgroup.h): */
	char slice[SYN_PATH_MAX];    /* CgroupSlice, "system.slice" by default */
	char init_cg[SYN_PATH_MAX];  /* PID 1's cgroup, "" when unknown */
	char prefix[SYN_PATH_MAX];   /* its parent ("" for the mount's root) */
	int job_id_paths;            /* CgroupJobIdPaths=yes */
};

/* The path of file in cgroup rel: v1 <mnt>/<ctl>/<rel>/<file>, v2
 * <mnt>/<rel>/<file> (ctl ignored); file NULL: the directory. Returns 0,
 * or -1 with ENAMETOOLONG. */
int syn__cg_path(const syn__cg_t *cg, const char *ctl, const char *rel, const char *file,
		 char *buf, size_t len);

/* A whole small file (at most 1 MiB), NUL-terminated, malloc'ed; NULL with
 * errno. Trailing newlines are stripped. */
char *syn__cg_read_file(const char *path);

/* The full path (without the leading '/') of controller's line in a
 * /proc/<pid>/cgroup text (NULL: the v2 "0::" line). 0, or -1 with errno
 * ENOENT or ENAMETOOLONG. */
int syn__cg_proc_path(const char *text, const char *controller, char *out, size_t len);

/* Write s to path with a single write(2). Returns 0, or -1 with errno and
 * err naming the path. */
int syn__cg_write_file(const char *path, const char *s, char *err, size_t errlen);

/* Call fn for every thread of cgroup rel and of its descendants in ctl's
 * hierarchy (v1 "tasks", v2 "cgroup.threads"); threads that exit meanwhile
 * are the callback's to skip. Returns how many calls returned > 0, or -1
 * with errno when rel cannot be read. */
int syn__cg_foreach_thread(const syn__cg_t *cg, const char *ctl, const char *rel,
			   int (*fn)(pid_t tid, void *arg), void *arg);

/* Pin every thread of cgroup rel (and of its descendants, ctl's hierarchy)
 * to set. Threads that exit meanwhile are skipped. Returns the number
 * pinned, or -1 with errno when rel cannot be read. */
int syn__cg_pin_tree(const syn__cg_t *cg, const char *ctl, const char *rel,
		     const cpu_set_t *set);

/* Backends. Each returns what the public function of the same name does. */
int syn__cg1_limits(const syn__cg_t *cg, const char *job_rel, char ***out);
int syn__cg1_task_enter(const syn__cg_t *cg, const char *job_rel, pid_t pid,
			uint64_t mem_bytes, cpu_set_t *set, char *err, size_t errlen);
int syn__cg1_step_leave(const syn__cg_t *cg, const char *job_rel, uint32_t jobid,
			const char *step_dir, char *err, size_t errlen);
int syn__cg1_job_cleanup(const syn__cg_t *cg, const char *job_rel, char *err, size_t errlen);
int syn__cg1_job_gone(const syn__cg_t *cg, const char *job_rel, int lock_ms, char *err,
		      size_t errlen);
/* The job as an idle group (cgroup.h, syn__cg_job_sched_idle): v1 moves
 * its processes into an idle cpu cgroup and back; v2 sets cpu.idle. Return
 * the processes moved (v1) or 0, -1 with errno and err (ENOTSUP: no way). */
int syn__cg1_job_idle(const syn__cg_t *cg, const char *job_rel, int idle, char *err, size_t errlen);
void syn__cg1_idle_cleanup(const syn__cg_t *cg, const char *job_rel);
int syn__cg2_job_idle(const syn__cg_t *cg, const char *job_rel, int idle, char *err, size_t errlen);

int syn__cg2_limits(const syn__cg_t *cg, const char *job_rel, char ***out);

/* Free a NULL-terminated list from the *_limits functions. */
void syn__cg_free_list(char **list);

#endif
