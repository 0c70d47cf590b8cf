/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tuner.c: parsing of Slurm's text fields for synergyd and job_submit
 * (GPUs in a job's TRES request and a node's GRES, partition job
 * defaults, Synergy's AdminComment). Everything here treats its input as
 * untrusted text from slurmctld and never reads past a terminator.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/shared/slurmtext.h"
#include "plugin/shared/util.h"

int syn__gres_gpus(const char *gres)
{
	const char *p = gres;
	int total = 0;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[128], *paren, *colon;
		uint64_t v;

		if (len < sizeof(item) && strncmp(p, "gpu", 3) == 0 && (p[3] == ':' || len == 3)) {
			memcpy(item, p, len);
			item[len] = '\0';
			paren = strchr(item, '(');
			if (paren)
				*paren = '\0';
			colon = strrchr(item, ':');
			if (colon && syn_parse_u64(colon + 1, 0, 1u << 20, &v) == 0)
				total += (int)v;
		}
		/* Skip commas inside "(IDX:0,2)" by jumping over the parenthesis. */
		if (end) {
			const char *open = memchr(p, '(', len);
			if (open) {
				const char *close = strchr(open, ')');
				end = close ? strchr(close, ',') : NULL;
			}
		}
		p = end ? end + 1 : NULL;
	}
	return total;
}

int syn__job_defaults(const char *s, uint64_t *cpu_per_gpu, uint64_t *mem_per_gpu)
{
	const char *p = s;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[64], *eq;
		uint64_t v;

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			eq = strchr(item, '=');
			if (eq) {
				*eq = '\0';
				if (strcmp(item, "DefCpuPerGPU") == 0 || strcmp(item, "DefMemPerGPU") == 0) {
					if (syn_parse_u64(eq + 1, 0, UINT64_MAX / 2, &v) < 0) {
						errno = EINVAL;
						return -1;
					}
					*(strcmp(item, "DefCpuPerGPU") == 0 ? cpu_per_gpu : mem_per_gpu) = v;
				}
			}
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}

int syn__comment_key(const char *comment, char *key, int len)
{
	static const char prefix[] = "synergy: key=";
	const char *k, *sp;
	size_t n;

	if (!comment || strncmp(comment, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	k = comment + sizeof(prefix) - 1;
	sp = strchr(k, ' ');
	if (!sp || strncmp(sp, " cpus=", 6) != 0)
		return -1;
	n = (size_t)(sp - k);
	if (n == 0 || n >= (size_t)len)
		return -1;
	memcpy(key, k, n);
	key[n] = '\0';
	return syn_key_valid(key) ? 0 : -1;
}

/* GPU count in one TRES list; -1 if no gpu entry. */
static int gpus_in(const char *tres)
{
	const char *p = tres;

	while (p && *p) {
		const char *end = strpbrk(p, ",;");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[128];

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			if (strncmp(item, "gres:gpu", 8) == 0 || strncmp(item, "gres/gpu", 8) == 0) {
				/* the count is after the last ':' or '=' ("gres:gpu:a100:2") */
				char *c = strrchr(item, ':'), *e = strrchr(item, '=');
				char *num = (e && (!c || e > c)) ? e + 1 : (c && c > item + 7 ? c + 1 : NULL);
				uint64_t v;

				if (!num)
					return 1;
				if (syn_parse_u64(num, 0, 1024, &v) == 0)
					return (int)v;
				return 1; /* a type name without a count means one */
			}
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

int syn__gpus_per_node(const char *tres_per_node, const char *tres_per_job, uint32_t nodes)
{
	int g;

	if (tres_per_node && (g = gpus_in(tres_per_node)) >= 0)
		return g;
	if (tres_per_job && (g = gpus_in(tres_per_job)) >= 0) {
		if (nodes > 1)
			g = (int)((g + (int)nodes - 1) / (int)nodes);
		return g;
	}
	return 0;
}
