/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shapes.h: the node shapes of a cluster's partitions, as synergyd reads
 * them from slurmctld (libslurm) and job_submit/synergy sizes jobs for them.
 *
 * job_submit runs inside slurmctld, where it must not call back into
 * slurmctld, so synergyd writes a small table every round (NodeShapesFile,
 * written atomically) and job_submit reads it: for each partition, the
 * distinct shapes (GPUs, usable CPUs, usable memory) of its nodes. A table
 * older than NodeShapesMaxAge, or none, means GPU-proportional, never a
 * guessed size; the single-shape keys NodeGPUs/NodeCPUs/NodeMemMB of
 * synergy.conf override the table for sites that want one shape.
 *
 * File format (text, one record per line):
 *   synergy-node-shapes 1
 *   written=<unix time>
 *   partition=<name> default=<0|1> gpus=<n> cpus=<n> mem_mb=<n> nodes=<n>
 *   ... one line per (partition, shape)
 */
#ifndef SYN_PLUGIN_SHAPES_H
#define SYN_PLUGIN_SHAPES_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "plugin/shared/util.h"

#define SYN__SHAPES_MAGIC "synergy-node-shapes 1"
/* Partition names as Slurm allows them, bounded. */
#define SYN__PART_MAX 64
/* Distinct (partition, shape) lines a table may hold. */
#define SYN__SHAPES_MAX 4096

typedef struct syn__shape {
	char part[SYN__PART_MAX + 1];
	int is_default;              /* the cluster's default partition */
	uint32_t gpus, cpus;
	uint64_t mem_mb;
	uint32_t nodes;              /* nodes of this shape in the partition */
} syn__shape_t;

typedef struct syn__shapes {
	time_t written;
	size_t n;
	syn__shape_t *s;             /* malloc'ed, n entries */
} syn__shapes_t;

/* Add one node of a partition (merging equal shapes). Returns 0, or -1
 * with errno (EINVAL: bad name; E2BIG: table full; ENOMEM). */
int syn__shapes_add(syn__shapes_t *t, const char *part, int is_default, uint32_t gpus,
		    uint32_t cpus, uint64_t mem_mb);

/* Write the table atomically (temporary file beside it, rename; mode
 * 0644). Returns 0 or -1 with errno. */
int syn__shapes_write(const syn__shapes_t *t, const char *path);

/* Parse a table strictly (every line known, every number in range).
 * Returns 0 (t filled; free with syn__shapes_free), or -1 with errno
 * EINVAL and err naming the line. */
int syn__shapes_parse(const char *text, syn__shapes_t *t, char *err, size_t errlen);

/* Read path (at most 1 MiB) and parse it. Errors as parse, plus open's. */
int syn__shapes_read(const char *path, syn__shapes_t *t, char *err, size_t errlen);

void syn__shapes_free(syn__shapes_t *t);

/*
 * The shape to size a job for: the job may run in partitions (a comma list
 * as in job_desc->partition; NULL or "" means the default partition) and
 * needs gpus per node. Only shapes with at least gpus GPUs count. When they
 * all agree, that shape; when they differ, the shape that fits all of them
 * (the fewest GPUs among them, and for those the smallest share of CPUs and
 * memory per GPU of any, so that a job sized within its share fits every
 * node it may land on). what says which ("partition p4", "3 shapes in
 * p4,p8: smallest share"). Returns 0, or -1 with errno ENOENT (no such
 * partition, or no node with enough GPUs) and the reason in what.
 */
int syn__shapes_for_job(const syn__shapes_t *t, const char *partitions, uint32_t gpus,
			syn__shape_t *out, char *what, size_t whatlen);

#endif
