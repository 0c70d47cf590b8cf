/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckptdir.h: each job's CheckFreq checkpoint directory (SYNERGY_CKPT_DIR,
 * synergy_env.h), made, checked and removed as root.
 *
 * Layout under synergy.conf's CheckpointDir (a site path, e.g. on shared
 * scratch, so that a requeued job finds its checkpoints on any node):
 *   CheckpointDir/            root's, writable by root only (made 0755
 *                             when missing; refused otherwise)
 *     <uid>/                  the user's, mode 0700
 *       <job id>/             a job's, the user's, mode 0700, or
 *       <array job id>_<task>/ an array task's
 * The job's directory keeps its name across requeues (the job id stays),
 * so a requeued job resumes from it. It goes when the job ends COMPLETED
 * (its batch script exited 0) or, by the sweep, once nothing used it for
 * CheckpointRetention seconds (its mtime: each step's start touches it, and
 * each checkpoint written renames a file in it).
 *
 * Everything a user can write is hostile here: <uid>/ and what is in it.
 * So every component is opened with O_NOFOLLOW relative to its parent's
 * descriptor, ownership is checked on the descriptor, chown and chmod are
 * done on descriptors, and trees are removed without following links
 * (syn__remove_tree). Slurm-free: the SPANK glue is plugin/slurm/spank_ckpt.c.
 */
#ifndef SYN_PLUGIN_NODE_CKPTDIR_H
#define SYN_PLUGIN_NODE_CKPTDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Room for a job directory's name: "<10 digits>_<10 digits>" and a NUL. */
#define SYN__CKPTDIR_NAME_MAX 24

/* The job's directory name: "<jobid>", or "<array_id>_<task_id>" when
 * array_id is not 0. Returns 0, or -1 (EINVAL: jobid 0, or no room). */
int syn__ckptdir_name(uint32_t jobid, uint32_t array_id, uint32_t task_id, char *out,
		      size_t len);

/* 1 if name is a job directory's name as syn__ckptdir_name makes them. */
int syn__ckptdir_name_valid(const char *name);

/*
 * Make (or take over) root/<uid>/<name> for a job of uid and gid, and touch
 * it: root made 0755 when missing, and must be a directory of root's that
 * nobody else can write (not a link); <uid> and <name> made mode 0700 and
 * given to the user, or already the user's directories (a link, a file or
 * another user's directory is refused). *created says whether <name> was
 * made now. path gets root/<uid>/<name>. Returns 0, or -1 with errno and
 * err naming what was refused.
 */
int syn__ckptdir_make(const char *root, uid_t uid, gid_t gid, const char *name, char *path,
		      size_t pathlen, int *created, char *err, size_t errlen);

/* Checkpoint files (*.ckpt) in root/<uid>/<name>, or -1 when it cannot be
 * read (not checked beyond their names: the job verifies them). */
int syn__ckptdir_count(const char *root, uid_t uid, const char *name);

/*
 * Remove root/<uid>/<name> and everything in it, if <uid> is the user's
 * directory. Returns 1 when removed, 0 when there was none, -1 with errno
 * and err.
 */
int syn__ckptdir_remove(const char *root, uid_t uid, const char *name, char *err,
			size_t errlen);

/*
 * Remove every job directory under root whose mtime is more than
 * retention seconds before now (retention 0: none). Only root/<uid>/<name>
 * where <uid> is a number, a directory owned by that uid, and <name> a job
 * directory name are looked at. Returns how many were removed, or -1
 * (root refused or unreadable) with errno and err.
 */
int syn__ckptdir_sweep(const char *root, time_t now, uint64_t retention, char *err,
		       size_t errlen);

#endif
