/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/cpus.h: CPU lists (the grammar of common/parse.h, "0-3,8") to and
 * from cpu_set_t, for the cgroup layer, lending and the node records. The
 * loader keeps sets of any size (loader/follow.h) over the same grammar.
 */
#ifndef SYN_COMMON_CPUS_H
#define SYN_COMMON_CPUS_H

#include <sched.h>
#include <stddef.h>

/* Parse a CPU list into set (the empty list is the empty set). Returns 0 or
 * -1 with EINVAL, set then empty. */
int syn_cpus_parse(const char *list, cpu_set_t *set);

/* Write set in list syntax into buf ("" for the empty set). Returns 0, or
 * -1 with ENAMETOOLONG when buf is too small. */
int syn_cpus_format(const cpu_set_t *set, char *buf, size_t len);

/* The same, malloc'ed (NULL with errno ENOMEM). */
char *syn_cpus_format_alloc(const cpu_set_t *set);

#endif
