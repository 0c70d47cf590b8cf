/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/store.h: the profile store, a directory of JSON profiles, and the
 * JSON form of a profile (common/profile.h).
 *
 * The profiler writes one file per profile key (<dir>/<key>.json, the
 * layout documented in common/profile.h); the job_submit plugin, the tuner
 * and the simulator look profiles up by key. Writes are atomic (temporary
 * file in the same directory, fsync, rename, fsync of the directory), so a
 * reader sees either the old or the new profile, never a partial file, and
 * concurrent writers of one key leave exactly one of their profiles.
 * Reading is one small local file read: safe inside slurmctld.
 *
 * Every profile read is checked in full (schema version, field types, grid
 * sizes, monotone axes, finite non-negative values) with syn_profile_check();
 * a file that fails is reported with its path and the offending field and
 * never returned half-read.
 *
 * Conventions: 0 / pointer on success, -1 / NULL with errno on failure;
 * when the caller passes a syn_error_t its text names the file and the
 * field. Nothing here logs, exits or aborts.
 */
#ifndef SYN_COMMON_STORE_H
#define SYN_COMMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/profile.h"

/* Profiles larger than this are rejected unread (EFBIG): a full grid is
 * about 20 KiB, so anything bigger is not a profile. */
#define SYN_PROFILE_FILE_MAX (1024 * 1024)

/*
 * Parse a profile from JSON text (len bytes, need not be NUL-terminated).
 * `name` is used in error messages (a file name, or NULL for "<string>").
 * On success fills *p completely and returns 0. On failure returns -1 with
 * errno EINVAL (malformed, wrong type, out-of-range field),
 * EPROTONOSUPPORT (unknown "schema" version); *p is left unchanged.
 */
int syn_profile_parse(const char *text, size_t len, const char *name,
                      syn_profile_t *p, syn_error_t *err);

/*
 * Read and parse the profile file at path. Errors as syn_profile_parse,
 * plus the errno of open/read (ENOENT, EACCES, ...) and EFBIG.
 */
int syn_profile_read_file(const char *path, syn_profile_t *p, syn_error_t *err);

/*
 * Format p as JSON (schema SYN_PROFILE_SCHEMA, two-space indent, a final
 * newline). p must pass syn_profile_check(), else EINVAL. Numbers are
 * written so that reading them back gives the same doubles. Returns a
 * malloc()ed string the caller frees, or NULL with errno.
 */
char *syn_profile_format(const syn_profile_t *p, syn_error_t *err);

/*
 * Write p to path atomically: a temporary file beside it, fsync, rename,
 * fsync of the directory. An existing file is replaced. Mode 0644.
 * Returns 0, or -1 with errno (EINVAL for an invalid profile); on failure
 * the previous file, if any, is untouched and no temporary file is left.
 */
int syn_profile_write_file(const char *path, const syn_profile_t *p, syn_error_t *err);

typedef struct syn_store syn_store_t;

/* syn_store_create() flags. */
#define SYN_STORE_CREATE 1 /* create the directory (mode 0755) if missing */

/*
 * Open the store in directory dir. Without SYN_STORE_CREATE the directory
 * must exist (ENOENT, ENOTDIR otherwise). Returns a handle to free with
 * syn_store_destroy(), or NULL with errno.
 */
syn_store_t *syn_store_create(const char *dir, int flags, syn_error_t *err);

/* Free a store handle. Accepts NULL; preserves errno. */
void syn_store_destroy(syn_store_t *s);

/* The store's directory, as given to syn_store_create(). */
const char *syn_store_dir(const syn_store_t *s);

/*
 * Path of key's file in the store, written to buf (size len). Returns 0,
 * or -1 with EINVAL (invalid key) or ENAMETOOLONG.
 */
int syn_store_path(const syn_store_t *s, const char *key, char *buf, size_t len,
                   syn_error_t *err);

/*
 * Look up key. Returns 0 and fills *p, or -1 with errno: ENOENT (no such
 * profile), EINVAL (invalid key, or the file is corrupt), EPROTONOSUPPORT
 * (unknown schema version); err names the file and field. A profile file
 * whose "key" differs from its file name is rejected (EINVAL).
 */
int syn_store_get(syn_store_t *s, const char *key, syn_profile_t *p, syn_error_t *err);

/*
 * Store p under p->key, atomically replacing an existing profile. Safe
 * against concurrent writers and readers in any process. Returns 0 or -1
 * with errno (EINVAL: p fails syn_profile_check()).
 */
int syn_store_put(syn_store_t *s, const syn_profile_t *p, syn_error_t *err);

/*
 * Profiles measured in users' own jobs (common/profile.h, "owner") live
 * apart from the shared ones, one directory per user:
 * <dir>/SYN_STORE_USER_DIR/<uid>/<key>.json. The shared profiles stay
 * <dir>/<key>.json; syn_store_list() and syn_store_get() see only those.
 */
#define SYN_STORE_USER_DIR "user"

/*
 * Look up the profile a job of user uid uses for key: the shared profile
 * <dir>/<key>.json when it has no owner or uid owns it; else uid's own
 * (<dir>/user/<uid>/<key>.json), which must record uid as its owner. A
 * shared profile that exists but cannot be read is an error (not a reason
 * to use another). Returns 0 and fills *p, or -1 with errno as
 * syn_store_get(): ENOENT when there is none for uid.
 */
int syn_store_get_for(syn_store_t *s, const char *key, uint32_t uid, syn_profile_t *p,
                      syn_error_t *err);

/*
 * Store a profile measured in a user's job (p->has_owner must be set,
 * else EINVAL) as that user's: <dir>/user/<owner>/<key>.json, the
 * directories made (0755) as needed, atomically as syn_store_put(). A
 * shared profile of the key is never touched. Returns 0 or -1 with errno.
 */
int syn_store_put_owned(syn_store_t *s, const syn_profile_t *p, syn_error_t *err);

/* Remove key's profile. Returns 0, or -1 with errno (ENOENT if absent). */
int syn_store_remove(syn_store_t *s, const char *key, syn_error_t *err);

/*
 * Called by syn_store_list() once per file named <key>.json, in key order.
 * For a good profile p is set and problem is NULL; for a file that could
 * not be used (corrupt, unknown version, key mismatch) p is NULL and
 * problem says why, naming the file. Return 0 to go on, non-zero to stop.
 */
typedef int (*syn_store_list_f)(const char *key, const syn_profile_t *p,
                                const char *problem, void *arg);

/*
 * Visit every profile in the store. Files that are not <valid-key>.json
 * (temporary files, editor backups) are ignored silently. Returns the
 * number of good profiles visited, or -1 with errno if the directory
 * cannot be read.
 */
int syn_store_list(syn_store_t *s, syn_store_list_f cb, void *arg, syn_error_t *err);

#endif
