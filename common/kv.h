/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/kv.h: the one reader of Key=Value files: synergy.conf (through
 * common/conf.h), Slurm's cgroup.conf and the AWS credentials file.
 *
 * Format, as Slurm's own files: one `Key=Value` per line; blank lines are
 * ignored, as is everything from a '#' to the end of its line; spaces
 * around key and value are trimmed; keys are [A-Za-z0-9_.-]+ and compare
 * case-insensitively; a key given twice is an error (so a typo'd override
 * is never silently lost). Errors name the file and line.
 *
 * Two flags widen it for files other programs own:
 *   SYN_KV_INI      "[section]" lines group the keys after them; a comment
 *                   is a whole line starting with '#' or ';' (a value may
 *                   hold '#'), as in the AWS credentials file. Each
 *                   section line is an entry too (key and value NULL), so
 *                   that an empty section is seen.
 *   SYN_KV_LENIENT  what the owning program may take and this reader has no
 *                   use for is kept, not refused: a line without '=' (as
 *                   Slurm's "Include") becomes an entry whose value is NULL,
 *                   keys are not checked, and a key may come again (lookup
 *                   gives the last, as Slurm reads it).
 *
 * What the keys mean is up to each reader; this module only parses. Values
 * may be secrets: the text a handle holds is wiped when it is freed, and no
 * message quotes a line of an INI file.
 * Conventions: 0 / pointer on success, -1 / NULL with errno and the
 * caller's syn_error_t naming file:line. Nothing here logs or exits.
 */
#ifndef SYN_COMMON_KV_H
#define SYN_COMMON_KV_H

#include <stddef.h>

#include "common/error.h"

#define SYN_KV_INI 0x1u
#define SYN_KV_LENIENT 0x2u

/* The largest file syn_kv_load() reads (EFBIG beyond). */
#define SYN_KV_FILE_MAX (1024 * 1024)

typedef struct syn_kv syn_kv_t;

/* Parse text (NUL-terminated); name is used in messages ("<string>" when
 * NULL). NULL with errno EINVAL (err names name:line) or ENOMEM. */
syn_kv_t *syn_kv_parse(const char *text, const char *name, unsigned flags, syn_error_t *err);

/*
 * Read and parse the file at path (an admin's: a final symbolic link is
 * followed). NULL with errno: that of open(2) (ENOENT: no such file),
 * EFBIG over SYN_KV_FILE_MAX, EINVAL for a NUL byte or a malformed line.
 */
syn_kv_t *syn_kv_load(const char *path, unsigned flags, syn_error_t *err);

/* Free a handle. Accepts NULL; preserves errno. */
void syn_kv_destroy(syn_kv_t *kv);

/* The name given to parse, or the path loaded. */
const char *syn_kv_name(const syn_kv_t *kv);

/* The value of key (case-insensitive) in section (NULL: before any
 * section), or NULL if absent. Valid until destroy. */
const char *syn_kv_get(const syn_kv_t *kv, const char *section, const char *key);

/*
 * Call fn(section, key, value, line, arg) for every entry in file order
 * (section NULL before any; value NULL for a SYN_KV_LENIENT bare line; key
 * and value NULL for a SYN_KV_INI section line).
 * Stops when fn returns non-zero and returns that value; 0 after the last.
 */
int syn_kv_foreach(const syn_kv_t *kv,
		   int (*fn)(const char *section, const char *key, const char *value, int line,
			     void *arg),
		   void *arg);

#endif
