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

#endif
