/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_node.c: libFuzzer entry point for the parsers of node-side state the
 * root-run plugins read: the grant job_submit hands the node and the job
 * records in StateDir (plugin/jobrec.c), CPU lists from cgroup files
 * (common/cpus.c), the node shapes table synergyd writes
 * (plugin/shapes.c), the TRES/GRES strings of jobs and nodes
 * (plugin/tuner.c), and the claims on profiling a key in place in the
 * profile store (plugin/claim.c).
 *
 * Each input is given, whole and line by line, to every parser, and what
 * a parser accepts must keep its promises: the grant parser never accepts
 * a field only the node writes, an accepted grant formats and
 * parses back to the same grant, an accepted CPU list formats and parses
 * back to the same set, an accepted shapes table writes and reads back to
 * the same table, GPU counts are within range. A refusal must set errno
 * (and, where one is taken, an error text).
 *
 * Built and run by tests/fuzz/run-fuzz.sh; its corpus is replayed by
 * make check (tests/fuzz/replay.c).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/shared/claim.h"
#include "common/cpus.h"
#include "plugin/shared/jobrec.h"
#include "plugin/ctl/shapes.h"
#include "plugin/shared/slurmtext.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void grant(const char *s)
{
	syn__jobrec_t r, back;
	char err[200], buf[1024];

	err[0] = '\0';
	errno = 0;
	if (syn__jobrec_parse(s, &r, err, sizeof(err)) < 0) {
		if (errno != EINVAL && errno != ENOMEM)
			abort();
		if (errno == EINVAL && !err[0])
			abort();
		return;
	}
	if (r.synergy) {
		if (!r.key[0] || r.gpus < 1 || r.cache_mb > r.mem_mb)
			abort();
		if (syn__grant_format(&r, buf, sizeof(buf)) < 0)
			abort();
		if (syn__jobrec_parse(buf, &back, err, sizeof(err)) < 0 ||
		    strcmp(back.key, r.key) != 0 || back.uid != r.uid || back.gpus != r.gpus ||
		    back.cpus != r.cpus || back.mem_mb != r.mem_mb ||
		    back.cache_mb != r.cache_mb || back.want_cpus != r.want_cpus ||
		    back.want_cache_mb != r.want_cache_mb || strcmp(back.profile, r.profile) != 0 ||
		    strcmp(back.group, r.group) != 0)
			abort();
		/* A group is only ever the job's owner's (issue 15). */
		if (r.group[0] && !syn__group_valid(r.group, r.uid))
			abort();
	}
	if (r.has_allotted && CPU_COUNT(&r.allotted) == 0)
		abort();
	if (r.secret[0] && !syn__secret_valid(r.secret))
		abort();
}

/* What reaches the node as a grant (issue 24): accepted only as a sized
 * grant with none of the fields only the node writes, and then exactly as
 * the record parser reads it. */
static void grant_only(const char *s)
{
	syn__jobrec_t r, rec;
	char err[200];

	err[0] = '\0';
	errno = 0;
	if (syn__grant_parse(s, &r, err, sizeof(err)) < 0) {
		if (errno != EINVAL && errno != ENOMEM)
			abort();
		if (errno == EINVAL && !err[0])
			abort();
		if (r.synergy || r.has_allotted || r.secret[0])
			abort(); /* a refusal leaves nothing behind */
		return;
	}
	if (!r.synergy || r.has_allotted || r.alloc_mem_mb || r.has_hold || r.has_cpu ||
	    r.has_spare || r.harvest)
		abort();
	if (syn__jobrec_parse(s, &rec, err, sizeof(err)) < 0 || memcmp(&r, &rec, sizeof(r)) != 0)
		abort();
}

/* An accepted claim holds a valid key and nonce, and a job id with a node
 * or neither. */
static void claim(const char *s)
{
	syn__claim_t c;

	errno = 0;
	if (syn__claim_parse(s, &c) < 0) {
		if (errno != EINVAL && errno != ENOMEM)
			abort();
		return;
	}
	if (!syn_key_valid(c.key) || !syn__nonce_valid(c.nonce) || c.time < 0 ||
	    (c.jobid != 0) != (c.node[0] != '\0'))
		abort();
}

static void cpulist(const char *s)
{
	cpu_set_t set, back;
	char *text;

	errno = 0;
	if (syn_cpus_parse(s, &set) < 0) {
		if (errno != EINVAL)
			abort();
		return;
	}
	text = syn_cpus_format_alloc(&set);
	if (!text)
		abort();
	if (syn_cpus_parse(text, &back) < 0 || !CPU_EQUAL(&set, &back))
		abort();
	free(text);
}

static void shapes(const char *s)
{
	const char *path = fuzz_scratch_path("node", "shapes");
	syn__shapes_t t, back;
	syn__shape_t one;
	char err[200], what[200];
	size_t i;

	err[0] = '\0';
	errno = 0;
	if (syn__shapes_parse(s, &t, err, sizeof(err)) < 0) {
		if ((errno != EINVAL && errno != ENOMEM) || (errno == EINVAL && !err[0]))
			abort();
		return;
	}
	if (syn__shapes_write(&t, path) < 0 || syn__shapes_read(path, &back, err, sizeof(err)) < 0)
		abort();
	if (back.n != t.n || back.written != t.written)
		abort();
	for (i = 0; i < t.n; i++)
		if (strcmp(back.s[i].part, t.s[i].part) != 0 || back.s[i].gpus != t.s[i].gpus ||
		    back.s[i].cpus != t.s[i].cpus || back.s[i].mem_mb != t.s[i].mem_mb)
			abort();
	/* A pick never offers more GPUs than some node has, nor fewer than asked. */
	if (syn__shapes_for_job(&t, t.n ? t.s[0].part : NULL, 1, &one, what, sizeof(what)) == 0 &&
	    one.gpus < 1)
		abort();
	syn__shapes_free(&back);
	syn__shapes_free(&t);
}

static void tres(const char *s)
{
	int g = syn__gpus_per_node(s, NULL, 1), h = syn__gpus_per_node(NULL, s, 3);

	if (g < 0 || g > 1024 || h < 0 || h > 1024)
		abort();
	if (syn__gres_gpus(s) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *copy, *line, *next;

	if (!(s = fuzz_string(data, size)))
		return 0;
	grant(s);
	grant_only(s);
	shapes(s);
	claim(s);
	if ((copy = strdup(s))) {
		for (line = copy; line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			grant(line);
			grant_only(line);
			cpulist(line);
			tres(line);
		}
		free(copy);
	}
	free(s);
	return 0;
}
