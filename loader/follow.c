/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * follow.c: watch the process's CPU set so that the loader can follow it
 * (see follow.h). Relies on Linux: /proc/self/cpuset and /proc/self/cgroup
 * name the process's cgroup, the cgroup file systems under /sys/fs/cgroup
 * hold its cpuset, and sched_{get,set}affinity / pthread_setaffinity_np
 * read and pin threads.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/file.h"
#include "common/parse.h"
#include "loader/follow.h"
#include "loader/util.h"

struct coordl__follow {
	double next;         /* CLOCK_MONOTONIC time of the next look */
	coordl__cpus_t cg;   /* the cgroup's CPU set at the last look (empty: none) */
	coordl__cpus_t aff;  /* the calling thread's affinity after the last look */
};

/* A set with room for CPUs 0..ncpus-1 (at least CPU_SETSIZE), zeroed. */
static int cpus_alloc(coordl__cpus_t *s, size_t ncpus)
{
	if (ncpus < CPU_SETSIZE)
		ncpus = CPU_SETSIZE;
	s->size = CPU_ALLOC_SIZE(ncpus);
	if (!(s->set = CPU_ALLOC(ncpus))) {
		s->size = 0;
		errno = ENOMEM;
		return -1;
	}
	CPU_ZERO_S(s->size, s->set);
	return 0;
}

void coordl__cpus_free(coordl__cpus_t *s)
{
	if (s->set)
		CPU_FREE(s->set);
	s->set = NULL;
	s->size = 0;
}

int coordl__cpus_count(const coordl__cpus_t *s)
{
	return s->set ? CPU_COUNT_S(s->size, s->set) : 0;
}

int coordl__cpus_equal(const coordl__cpus_t *a, const coordl__cpus_t *b)
{
	size_t n = a->size > b->size ? a->size : b->size;

	if (!a->set || !b->set)
		return !a->set && !b->set;
	for (size_t c = 0; c < n * 8; c++)
		if (CPU_ISSET_S(c, a->size, a->set) != CPU_ISSET_S(c, b->size, b->set))
			return 0;
	return 1;
}

/* The highest CPU of a range list, for the set's size. */
static int max_cpu(unsigned lo, unsigned hi, void *arg)
{
	unsigned *top = arg;

	*top = hi > *top ? hi : *top;
	return 0;
}

static int set_cpus(unsigned lo, unsigned hi, void *arg)
{
	coordl__cpus_t *out = arg;

	for (unsigned c = lo; c <= hi; c++)
		CPU_SET_S(c, out->size, out->set);
	return 0;
}

int coordl__cpus_parse(const char *s, coordl__cpus_t *out)
{
	unsigned hi = 0;

	out->set = NULL;
	out->size = 0;
	/* The one grammar (common/parse.h); a walk for the size, one to set. */
	if (syn_parse_cpus(s, COORDL__FOLLOW_MAX_CPUS, max_cpu, &hi) < 0)
		return -1;
	if (cpus_alloc(out, (size_t)hi + 1) < 0)
		return -1;
	syn_parse_cpus(s, COORDL__FOLLOW_MAX_CPUS, set_cpus, out);
	if (coordl__cpus_count(out) > 0)
		return coordl__cpus_count(out);
	coordl__cpus_free(out);
	errno = EINVAL;
	return -1;
}

/* A whole kernel text file (common/file.h: bounded, EFBIG beyond max). */
static char *read_text(const char *path, size_t max)
{
	return syn_file_read(AT_FDCWD, path, max, SYN_FILE_FOLLOW, NULL);
}

int coordl__cpus_read(const char *path, coordl__cpus_t *out)
{
	char *text = read_text(path, COORDL__FOLLOW_MAX_TEXT);
	int n;

	out->set = NULL;
	out->size = 0;
	if (!text)
		return -1;
	n = coordl__cpus_parse(text, out);
	free(text);
	return n;
}

/* The calling thread's affinity, in a set as large as the kernel wants
 * (a fixed cpu_set_t is refused with EINVAL on nodes with more CPUs). */
static int read_affinity(coordl__cpus_t *out)
{
	for (size_t ncpus = CPU_SETSIZE; ncpus <= COORDL__FOLLOW_MAX_CPUS; ncpus *= 2) {
		if (cpus_alloc(out, ncpus) < 0)
			return -1;
		if (sched_getaffinity(0, out->size, out->set) == 0)
			return 0;
		coordl__cpus_free(out);
		if (errno != EINVAL)
			return -1;
	}
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
static int read_set_at(const char *root, const char *rel, const char *file, coordl__cpus_t *set)
{
	char *path;
	int n;

	if (asprintf(&path, "%s%s/%s", root, strcmp(rel, "/") ? rel : "", file) < 0)
		return -1;
	n = coordl__cpus_read(path, set);
	free(path);
	return n > 0 ? 0 : -1;
}

/* The CPU set of the process's cpuset cgroup, v1 then v2. Returns 0 or -1
 * when none can be read. The path is looked up every time: the job may be
 * moved into another cgroup after the loader started. */
static int read_cgroup_set(coordl__cpus_t *set)
{
	char *rel, *text, *line, *nl;
	int rv = -1;

	/* cgroup v1: /proc/self/cpuset names the path in the cpuset hierarchy. */
	if ((rel = read_text("/proc/self/cpuset", 1 << 16))) {
		rv = clean_path(rel) == 0 ? read_set_at("/sys/fs/cgroup/cpuset", rel, "cpuset.cpus", set) : -1;
		free(rel);
		if (rv == 0)
			return 0;
	}
	/* cgroup v2: the "0::PATH" line of /proc/self/cgroup. */
	if (!(text = read_text("/proc/self/cgroup", 1 << 16)))
		return -1;
	line = strstr(text, "0::");
	if (line && (line == text || line[-1] == '\n')) {
		line += 3;
		if ((nl = strchr(line, '\n')))
			*nl = '\0';
		if (clean_path(line) == 0 &&
		    (read_set_at("/sys/fs/cgroup", line, "cpuset.cpus.effective", set) == 0 ||
		     read_set_at("/sys/fs/cgroup/unified", line, "cpuset.cpus.effective", set) == 0))
			rv = 0;
	}
	free(text);
	return rv;
}

coordl__follow_t *coordl__follow_create(void)
{
	coordl__follow_t *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	read_cgroup_set(&f->cg);
	read_affinity(&f->aff);
	f->next = coordl__now() + COORDL__FOLLOW_PERIOD;
	return f;
}

void coordl__follow_destroy(coordl__follow_t *f)
{
	if (!f)
		return;
	coordl__cpus_free(&f->cg);
	coordl__cpus_free(&f->aff);
	free(f);
}

/* Replace *dst by a copy of src (dst may be empty). 0 or -1. */
static int cpus_copy(coordl__cpus_t *dst, const coordl__cpus_t *src)
{
	coordl__cpus_t t;

	if (cpus_alloc(&t, src->size * 8) < 0)
		return -1;
	memcpy(t.set, src->set, src->size);
	coordl__cpus_free(dst);
	*dst = t;
	return 0;
}

int coordl__follow_check(coordl__follow_t *f, coordl__cpus_t *set)
{
	coordl__cpus_t cg = { NULL, 0 }, aff = { NULL, 0 };
	int changed = 0;
	double now = coordl__now();

	if (!f || now < f->next)
		return 0;
	f->next = now + COORDL__FOLLOW_PERIOD;
	read_cgroup_set(&cg);
	read_affinity(&aff);
	if (cg.set && (!f->cg.set || !coordl__cpus_equal(&cg, &f->cg))) {
		/* The cpuset itself moved (the node lent or took back cores):
		 * it rules, whatever the threads' pins say. */
		changed = cpus_copy(set, &cg) == 0;
	} else if (aff.set && (!f->aff.set || !coordl__cpus_equal(&aff, &f->aff))) {
		/* Only the affinity moved: someone pinned the process. */
		changed = cpus_copy(set, &aff) == 0;
	}
	if (cg.set) {
		coordl__cpus_free(&f->cg);
		f->cg = cg;
		cg.set = NULL;
	}
	/* After a change the caller pins this thread to *set; if the kernel
	 * trims that (offline CPUs), the next look sees the difference and
	 * follows the trimmed set. */
	if (changed) {
		cpus_copy(&f->aff, set);
	} else if (aff.set) {
		coordl__cpus_free(&f->aff);
		f->aff = aff;
		aff.set = NULL;
	}
	coordl__cpus_free(&cg);
	coordl__cpus_free(&aff);
	return changed;
}

int coordl__cpus_affinity(coordl__cpus_t *set)
{
	if (read_affinity(set) < 0)
		return -1;
	return coordl__cpus_count(set);
}

int coordl__follow_now(coordl__follow_t *f, coordl__cpus_t *set)
{
	coordl__cpus_t cg = { NULL, 0 }, aff = { NULL, 0 };
	int rv = -1;

	set->set = NULL;
	set->size = 0;
	if (!f) {
		errno = EINVAL;
		return -1;
	}
	f->next = coordl__now() + COORDL__FOLLOW_PERIOD;
	read_cgroup_set(&cg);
	read_affinity(&aff);
	/* As coordl__follow_check decides: a cpuset that moved since the last
	 * look rules; else the affinity (which lies within the cpuset). */
	if (cg.set && (!f->cg.set || !coordl__cpus_equal(&cg, &f->cg) || !aff.set)) {
		if (cpus_copy(set, &cg) == 0)
			rv = coordl__cpus_count(set);
	} else if (aff.set && cpus_copy(set, &aff) == 0) {
		rv = coordl__cpus_count(set);
	}
	if (cg.set) {
		coordl__cpus_free(&f->cg);
		f->cg = cg;
		cg.set = NULL;
	}
	/* The caller pins this thread to *set (as after a change). */
	if (rv > 0)
		cpus_copy(&f->aff, set);
	coordl__cpus_free(&cg);
	coordl__cpus_free(&aff);
	if (rv < 0)
		errno = ENOENT;
	return rv;
}

int coordl__follow_pin(const coordl__cpus_t *set, const pthread_t *thr, int n)
{
	int rv = 0, first = 0;

	if (sched_setaffinity(0, set->size, set->set) < 0) {
		first = errno;
		rv = -1;
	}
	for (int i = 0; i < n; i++) {
		int e = pthread_setaffinity_np(thr[i], set->size, set->set);
		if (e != 0 && rv == 0) {
			first = e;
			rv = -1;
		}
	}
	if (rv < 0)
		errno = first;
	return rv;
}
