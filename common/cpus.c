/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/cpus.c: CPU lists and cpu_set_t (see cpus.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/cpus.h"
#include "common/parse.h"

static int set_range(unsigned lo, unsigned hi, void *arg)
{
	cpu_set_t *set = arg;

	for (unsigned c = lo; c <= hi; c++)
		CPU_SET(c, set);
	return 0;
}

int syn_cpus_parse(const char *list, cpu_set_t *set)
{
	if (!set) {
		errno = EINVAL;
		return -1;
	}
	CPU_ZERO(set);
	return syn_parse_cpus(list, CPU_SETSIZE, set_range, set);
}

int syn_cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	int i = 0, n;

	if (!set || !buf || !len) {
		errno = EINVAL;
		return -1;
	}
	buf[0] = '\0';
	while (i < CPU_SETSIZE) {
		int j;

		if (!CPU_ISSET(i, set)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set); j++)
			;
		if (j == i)
			n = snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
		else
			n = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", i, j);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			errno = ENAMETOOLONG;
			return -1;
		}
		used += (size_t)n;
		i = j + 1;
	}
	return 0;
}

char *syn_cpus_format_alloc(const cpu_set_t *set)
{
	/* "1023," per CPU at worst. */
	size_t len = (size_t)CPU_SETSIZE * 6 + 1;
	char *buf = malloc(len);

	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	if (syn_cpus_format(set, buf, len) < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
