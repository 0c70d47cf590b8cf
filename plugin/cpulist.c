/*
 * cpulist.c: CPU lists in the kernel's cpuset syntax ("0-3,8") and
 * cpu_set_t, for the cgroup layer, lending and the node records (see
 * cpulist.h). Strict: a list the kernel would not write is refused.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

int syn__cpus_parse(const char *list, cpu_set_t *set)
{
	const char *p = list;

	if (!list || !set) {
		errno = EINVAL;
		return -1;
	}
	CPU_ZERO(set);
	while (*p && *p != '\n') {
		char *end;
		long a, b;

		if (*p < '0' || *p > '9')
			goto bad;
		errno = 0;
		a = strtol(p, &end, 10);
		if (errno || a >= CPU_SETSIZE)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			if (p[1] < '0' || p[1] > '9')
				goto bad;
			b = strtol(p + 1, &end, 10);
			if (errno || b < a || b >= CPU_SETSIZE)
				goto bad;
			p = end;
		}
		for (; a <= b; a++)
			CPU_SET((int)a, set);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	if (*p == '\n' && p[1])
		goto bad;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int syn__cpus_format(const cpu_set_t *set, char *buf, size_t len)
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

char *syn__cpus_format_alloc(const cpu_set_t *set)
{
	/* "1023," per CPU at worst. */
	size_t len = (size_t)CPU_SETSIZE * 6 + 1;
	char *buf = malloc(len);

	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	if (syn__cpus_format(set, buf, len) < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

