/*
 * cpulist.h: CPU lists in cpuset syntax ("0-3,8") to and from cpu_set_t.
 * Pure functions, shared by the cgroup layer, lending and the records.
 */
#ifndef SYN_PLUGIN_CPULIST_H
#define SYN_PLUGIN_CPULIST_H

#include <sched.h>
#include <stddef.h>

/* Parse a cpuset list ("0-3,8", a trailing newline allowed) into set.
 * Returns 0 or -1 with EINVAL (the empty string is the empty set). */
int syn__cpus_parse(const char *list, cpu_set_t *set);

/* Write set in list syntax into buf ("" for the empty set). Returns 0, or
 * -1 with ENAMETOOLONG when buf is too small. */
int syn__cpus_format(const cpu_set_t *set, char *buf, size_t len);

/* The same, malloc'ed (NULL with errno ENOMEM). */
char *syn__cpus_format_alloc(const cpu_set_t *set);

#endif
