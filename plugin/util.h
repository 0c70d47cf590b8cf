/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/util.h: what the Synergy Slurm plugins share beyond common/: the
 * removal of a job's directory tree, and (for now) the old names of what
 * moved to common/.
 *
 * Both plugins run as root and take values from users (option arguments,
 * environment twins) and from admins (plugstack arguments, synergy.conf).
 * Every such value goes through the one grammar of common/parse.h, and
 * synergy.conf through common/conf.h's one loader. Nothing here logs or
 * talks to Slurm, so it is unit-tested without it. Internal to the
 * plugins: every name carries the syn__ prefix.
 */
#ifndef SYN_PLUGIN_UTIL_H
#define SYN_PLUGIN_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/conf.h"
#include "common/cpus.h"
#include "common/error.h"
#include "common/file.h"
#include "common/parse.h"
#include "common/store.h"

/*
 * Empty the directory open at dfd (the descriptor is consumed), depth
 * first, never following a link: a link planted there is removed, not its
 * target. Depth is bounded so that a hostile tree cannot exhaust
 * descriptors; what lies deeper stays.
 */
void syn__remove_tree(int dfd);

/*
 * Transitional: the names these had before common/ (issue 25), kept only
 * for the plugin files that still use them (jobrec, claim, lend, peers,
 * the SPANK plugin's files and synergyd). They switch to the names on the
 * right and these go.
 */
#define SYN__PATH_MAX SYN_PATH_MAX
#define SYN__KEY_MAX SYN_KEY_MAX
typedef syn_conf_t syn__conf_t;
#define syn__conf syn_conf /* the struct tag, in forward declarations */

static inline void syn__conf_defaults(syn_conf_t *c)
{
	syn_conf_defaults(c);
}

/* The old form of an error: a buffer and its length. */
static inline int syn__copy_err(int rv, const syn_error_t *e, char *err, size_t errlen)
{
	int saved = errno;

	if (rv < 0 && err && errlen)
		snprintf(err, errlen, "%s", e->text);
	errno = saved;
	return rv;
}

static inline int syn__conf_load(syn_conf_t *c, const char *path, char *err, size_t errlen)
{
	syn_error_t e = { "" };

	return syn__copy_err(syn_conf_load(c, path, &e), &e, err, errlen);
}

static inline int syn__conf_arg(syn_conf_t *c, const char *arg, char *err, size_t errlen)
{
	syn_error_t e = { "" };

	return syn__copy_err(syn_conf_arg(c, arg, &e), &e, err, errlen);
}

static inline int syn__key_valid(const char *key)
{
	return syn_key_valid(key);
}

static inline int syn__path_ok(const char *path)
{
	return syn_path_ok(path);
}

static inline int syn__parse_onoff(const char *s, int *on)
{
	return syn_parse_bool(s, on);
}

static inline int syn__parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return syn_parse_u64(s, min, max, out);
}

static inline char *syn__read_file_at(int dfd, const char *name, size_t max, size_t *len)
{
	return syn_file_read(dfd, name, max, 0, len);
}

static inline int syn__cpus_parse(const char *list, cpu_set_t *set)
{
	return syn_cpus_parse(list, set);
}

static inline int syn__cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
	return syn_cpus_format(set, buf, len);
}

static inline char *syn__cpus_format_alloc(const cpu_set_t *set)
{
	return syn_cpus_format_alloc(set);
}

/* syn_errbuf() with the errno value first. */
int syn__errf(int errnum, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Write len bytes of text to a new file tmp in directory dfd, mode mode (a
 * stale tmp is removed first; never follows a link), for the caller to
 * rename or link into place. Returns 0, or -1 with errno and no tmp left.
 * (common/file.h's syn_atomic_begin() and syn_atomic_commit() do the whole
 * write, fsync included.)
 */
int syn__write_tmp_at(int dfd, const char *tmp, const void *text, size_t len, unsigned mode);

#endif
