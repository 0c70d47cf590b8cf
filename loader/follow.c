/*
 * follow.c: watch the process's CPU set so that the loader can follow it
 * (see follow.h). Relies on Linux: /proc/self/cpuset and /proc/self/cgroup
 * name the process's cgroup, the cgroup file systems under /sys/fs/cgroup
 * hold its cpuset, and sched_{get,set}affinity / pthread_setaffinity_np
 * read and pin threads.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "follow.h"
#include "util.h"

struct coordl__follow {
	double next;         /* CLOCK_MONOTONIC time of the next look */
	int have_cg;         /* cg holds the last cpuset read */
	cpu_set_t cg;        /* the cgroup's CPU set at the last look */
	int have_aff;
	cpu_set_t aff;       /* the calling thread's affinity after the last look */
};

/* Read a small text file into buf (NUL-terminated). Returns the length or
 * -1. The files read here are a few dozen bytes. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

int coordl__follow_parse(const char *s, cpu_set_t *set)
{
	const char *p = s;

	CPU_ZERO(set);
	if (!s)
		goto bad;
	while (*p && *p != '\n') {
		char *end;
		unsigned long a, b;
		if (!isdigit((unsigned char)*p))
			goto bad;
		a = strtoul(p, &end, 10);
		b = a;
		p = end;
		if (*p == '-') {
			if (!isdigit((unsigned char)p[1]))
				goto bad;
			b = strtoul(p + 1, &end, 10);
			p = end;
		}
		if (b < a || b >= CPU_SETSIZE)
			goto bad;
		for (unsigned long c = a; c <= b; c++)
			CPU_SET(c, set);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	if (CPU_COUNT(set) > 0)
		return CPU_COUNT(set);
bad:
	CPU_ZERO(set);
	errno = EINVAL;
	return -1;
}

/* Drop a trailing newline; reject an empty or relative path. */
static int clean_path(char *p)
{
	size_t n = strlen(p);

	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == ' '))
		p[--n] = '\0';
	return n > 0 && p[0] == '/' ? 0 : -1;
}

/* The CPU list in file under root/rel (rel "/" is root itself). 0 or -1. */
static int read_set_at(const char *root, const char *rel, const char *file, cpu_set_t *set)
{
	char path[1200], text[4096];

	snprintf(path, sizeof(path), "%s%s/%s", root, strcmp(rel, "/") ? rel : "", file);
	return read_small(path, text, sizeof(text)) > 0 && coordl__follow_parse(text, set) > 0 ? 0 : -1;
}

/* The CPU set of the process's cpuset cgroup, v1 then v2. Returns 0 or -1
 * when none can be read. The path is looked up every time: the job may be
 * moved into another cgroup after the loader started. */
static int read_cgroup_set(cpu_set_t *set)
{
	char rel[1024], text[4096], *line, *nl;

	/* cgroup v1: /proc/self/cpuset names the path in the cpuset hierarchy. */
	if (read_small("/proc/self/cpuset", rel, sizeof(rel)) > 0 && clean_path(rel) == 0 &&
	    read_set_at("/sys/fs/cgroup/cpuset", rel, "cpuset.cpus", set) == 0)
		return 0;
	/* cgroup v2: the "0::PATH" line of /proc/self/cgroup. */
	if (read_small("/proc/self/cgroup", text, sizeof(text)) <= 0)
		return -1;
	line = strstr(text, "0::");
	if (!line || (line != text && line[-1] != '\n'))
		return -1;
	line += 3;
	if ((nl = strchr(line, '\n')))
		*nl = '\0';
	/* (a path longer than any cgroup file name allows is refused) */
	if (strlen(line) >= sizeof(rel) || clean_path(line) < 0)
		return -1;
	if (read_set_at("/sys/fs/cgroup", line, "cpuset.cpus.effective", set) == 0 ||
	    read_set_at("/sys/fs/cgroup/unified", line, "cpuset.cpus.effective", set) == 0)
		return 0;
	return -1;
}

coordl__follow_t *coordl__follow_create(void)
{
	coordl__follow_t *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->have_cg = read_cgroup_set(&f->cg) == 0;
	f->have_aff = sched_getaffinity(0, sizeof(f->aff), &f->aff) == 0;
	f->next = coordl__now() + COORDL__FOLLOW_PERIOD;
	return f;
}

void coordl__follow_destroy(coordl__follow_t *f)
{
	free(f);
}

int coordl__follow_check(coordl__follow_t *f, cpu_set_t *set)
{
	cpu_set_t cg, aff;
	int have_cg, have_aff, changed = 0;
	double now = coordl__now();

	if (!f || now < f->next)
		return 0;
	f->next = now + COORDL__FOLLOW_PERIOD;
	have_cg = read_cgroup_set(&cg) == 0;
	have_aff = sched_getaffinity(0, sizeof(aff), &aff) == 0;
	if (have_cg && (!f->have_cg || !CPU_EQUAL(&cg, &f->cg))) {
		/* The cpuset itself moved (the node lent or took back cores):
		 * it rules, whatever the threads' pins say. */
		*set = cg;
		changed = 1;
	} else if (have_aff && (!f->have_aff || !CPU_EQUAL(&aff, &f->aff))) {
		/* Only the affinity moved: someone pinned the process. */
		*set = aff;
		changed = 1;
	}
	f->have_cg = have_cg;
	if (have_cg)
		f->cg = cg;
	/* After a change the caller pins this thread to *set; if the kernel
	 * trims that (offline CPUs), the next look sees the difference and
	 * follows the trimmed set. */
	if (changed) {
		f->aff = *set;
		f->have_aff = 1;
	} else if (have_aff) {
		f->aff = aff;
		f->have_aff = 1;
	}
	return changed;
}

int coordl__follow_pin(const cpu_set_t *set, const pthread_t *thr, int n)
{
	int rv = 0, first = 0;

	if (sched_setaffinity(0, sizeof(*set), set) < 0) {
		first = errno;
		rv = -1;
	}
	for (int i = 0; i < n; i++) {
		int e = pthread_setaffinity_np(thr[i], sizeof(*set), set);
		if (e != 0 && rv == 0) {
			first = e;
			rv = -1;
		}
	}
	if (rv < 0)
		errno = first;
	return rv;
}
