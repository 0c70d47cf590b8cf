/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shapes.c: the node shapes table synergyd writes and job_submit reads
 * (see shapes.h). Parsed strictly: it passes between two root programs
 * through a file, but a table that does not parse is no table (the job
 * then stays GPU-proportional), never a half-read one.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/ctl/shapes.h"

/* Slurm partition names: printable, no spaces, commas or '='. */
static int part_ok(const char *p)
{
	size_t n;

	if (!p || !*p)
		return 0;
	for (n = 0; p[n]; n++) {
		unsigned char c = (unsigned char)p[n];
		if (n >= SYN__PART_MAX || c <= ' ' || c >= 127 || c == ',' || c == '=')
			return 0;
	}
	return 1;
}

void syn__shapes_free(syn__shapes_t *t)
{
	if (!t)
		return;
	free(t->s);
	t->s = NULL;
	t->n = 0;
}

int syn__shapes_add(syn__shapes_t *t, const char *part, int is_default, uint32_t gpus,
		    uint32_t cpus, uint64_t mem_mb)
{
	syn__shape_t *s;
	size_t i;

	if (!t || !part_ok(part)) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < t->n; i++) {
		s = &t->s[i];
		if (strcmp(s->part, part) == 0 && s->gpus == gpus && s->cpus == cpus &&
		    s->mem_mb == mem_mb) {
			s->nodes++;
			return 0;
		}
	}
	if (t->n >= SYN__SHAPES_MAX) {
		errno = E2BIG;
		return -1;
	}
	s = realloc(t->s, (t->n + 1) * sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return -1;
	}
	t->s = s;
	s = &t->s[t->n++];
	memset(s, 0, sizeof(*s));
	snprintf(s->part, sizeof(s->part), "%s", part);
	s->is_default = is_default ? 1 : 0;
	s->gpus = gpus;
	s->cpus = cpus;
	s->mem_mb = mem_mb;
	s->nodes = 1;
	return 0;
}

int syn__shapes_write(const syn__shapes_t *t, const char *path)
{
	syn_atomic_t a;
	FILE *f;
	size_t i;

	/* Atomically (common/file.h): job_submit reads it at any moment. */
	if (syn_atomic_begin(&a, AT_FDCWD, path, 0644) < 0)
		return -1;
	if (!(f = syn_atomic_stream(&a))) {
		syn_atomic_abort(&a);
		return -1;
	}
	fprintf(f, "%s\nwritten=%lld\n", SYN__SHAPES_MAGIC, (long long)t->written);
	for (i = 0; i < t->n; i++) {
		const syn__shape_t *s = &t->s[i];

		fprintf(f, "partition=%s default=%d gpus=%" PRIu32 " cpus=%" PRIu32
			" mem_mb=%" PRIu64 " nodes=%" PRIu32 "\n", s->part, s->is_default, s->gpus,
			s->cpus, s->mem_mb, s->nodes);
	}
	return syn_atomic_commit(&a);
}

static int parse_line(char *line, syn__shape_t *s, char *err, size_t errlen, int lineno)
{
	static const char *const names[] = { "partition", "default", "gpus", "cpus", "mem_mb",
					     "nodes" };
	char *tok, *save = NULL;
	unsigned seen = 0;
	uint64_t v;
	size_t i;

	memset(s, 0, sizeof(*s));
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq)
			return syn_errbuf(err, errlen, EINVAL, "line %d: '%.40s' is not name=value",
					  lineno, tok);
		*eq++ = '\0';
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(tok, names[i]) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]) || (seen & (1u << i)))
			return syn_errbuf(err, errlen, EINVAL,
					  "line %d: field '%.40s' unknown or repeated", lineno,
					  tok);
		seen |= 1u << i;
		if (i == 0) {
			if (!part_ok(eq))
				return syn_errbuf(err, errlen, EINVAL,
						  "line %d: bad partition name", lineno);
			snprintf(s->part, sizeof(s->part), "%s", eq);
			continue;
		}
		if (syn_parse_u64(eq, (i == 1 || i == 2) ? 0 : 1,
				   i == 1 ? 1 : i == 4 ? (1ULL << 40) : 1u << 20, &v) < 0)
			return syn_errbuf(err, errlen, EINVAL,
					  "line %d: %s: '%.30s' is not a number in range", lineno,
					  tok, eq);
		switch (i) {
		case 1: s->is_default = (int)v; break;
		case 2: s->gpus = (uint32_t)v; break;
		case 3: s->cpus = (uint32_t)v; break;
		case 4: s->mem_mb = v; break;
		case 5: s->nodes = (uint32_t)v; break;
		}
	}
	if (seen != 0x3fu)
		return syn_errbuf(err, errlen, EINVAL,
				  "line %d: needs partition, default, gpus, cpus, mem_mb and "
				  "nodes",
				  lineno);
	return 0;
}

int syn__shapes_parse(const char *text, syn__shapes_t *t, char *err, size_t errlen)
{
	char *copy, *line, *next;
	int lineno = 0, rv = -1;
	uint64_t v;

	memset(t, 0, sizeof(*t));
	copy = strdup(text ? text : "");
	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	for (line = copy; line && *line; line = next) {
		syn__shape_t s, *ns;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (lineno == 1) {
			if (strcmp(line, SYN__SHAPES_MAGIC) != 0) {
				syn_errbuf(err, errlen, EINVAL, "line 1: not '%s'",
					   SYN__SHAPES_MAGIC);
				goto out;
			}
			continue;
		}
		if (lineno == 2) {
			if (strncmp(line, "written=", 8) != 0 ||
			    syn_parse_u64(line + 8, 0, INT64_MAX, &v) < 0) {
				syn_errbuf(err, errlen, EINVAL, "line 2: not written=<time>");
				goto out;
			}
			t->written = (time_t)v;
			continue;
		}
		if (parse_line(line, &s, err, errlen, lineno) < 0)
			goto out;
		if (t->n >= SYN__SHAPES_MAX) {
			syn_errbuf(err, errlen, EINVAL, "more than %d shapes", SYN__SHAPES_MAX);
			goto out;
		}
		ns = realloc(t->s, (t->n + 1) * sizeof(*ns));
		if (!ns) {
			errno = ENOMEM;
			goto out;
		}
		t->s = ns;
		t->s[t->n++] = s;
	}
	if (lineno < 2) {
		syn_errbuf(err, errlen, EINVAL, "truncated (%d lines)", lineno);
		goto out;
	}
	rv = 0;
out:
	free(copy);
	if (rv < 0) {
		int e = errno;
		syn__shapes_free(t);
		errno = e;
	}
	return rv;
}

int syn__shapes_read(const char *path, syn__shapes_t *t, char *err, size_t errlen)
{
	char *text = syn_file_read(AT_FDCWD, path, 1 << 20, 0, NULL);
	int rv;

	if (!text) {
		int e = errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		memset(t, 0, sizeof(*t));
		errno = e;
		return -1;
	}
	rv = syn__shapes_parse(text, t, err, errlen);
	free(text);
	return rv;
}

/* 1 if name is one of the comma-separated partitions in list. */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

int syn__shapes_for_job(const syn__shapes_t *t, const char *partitions, uint32_t gpus,
			syn__shape_t *out, char *what, size_t whatlen)
{
	double cpg = 0, mpg = 0;
	uint32_t min_gpus = 0;
	size_t i, used = 0, parts = 0;
	const syn__shape_t *first = NULL;
	int dflt = !partitions || !*partitions, same = 1;

	for (i = 0; i < t->n; i++) {
		const syn__shape_t *s = &t->s[i];

		if (dflt ? !s->is_default : !in_list(partitions, s->part))
			continue;
		parts++;
		if (s->gpus < gpus || s->gpus == 0)
			continue;
		if (!first) {
			first = s;
			cpg = (double)s->cpus / s->gpus;
			mpg = (double)s->mem_mb / s->gpus;
			min_gpus = s->gpus;
		} else {
			if (s->gpus != first->gpus || s->cpus != first->cpus ||
			    s->mem_mb != first->mem_mb)
				same = 0;
			if ((double)s->cpus / s->gpus < cpg)
				cpg = (double)s->cpus / s->gpus;
			if ((double)s->mem_mb / s->gpus < mpg)
				mpg = (double)s->mem_mb / s->gpus;
			if (s->gpus < min_gpus)
				min_gpus = s->gpus;
		}
		used++;
	}
	if (!first) {
		if (what && whatlen)
			snprintf(what, whatlen, parts ? "no node in %s has %u GPUs" :
				 "no partition %s in the node table", dflt ? "(default)" : partitions,
				 (unsigned)gpus);
		errno = ENOENT;
		return -1;
	}
	*out = *first;
	if (same) {
		if (what && whatlen)
			snprintf(what, whatlen, "partition %s", dflt ? first->part : partitions);
		return 0;
	}
	/* Mixed: the smallest per-GPU share of any shape, on the fewest GPUs. */
	out->gpus = min_gpus;
	out->cpus = (uint32_t)(cpg * min_gpus);
	out->mem_mb = (uint64_t)(mpg * min_gpus);
	if (what && whatlen)
		snprintf(what, whatlen, "%zu shapes in %s: smallest share", used,
			 dflt ? first->part : partitions);
	return 0;
}
