/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cores.c: core selection for the synergy cgroup (hwloc).
 *
 * Slurm already gave the job its cores; this picks which of them the
 * data pipeline's cgroup gets when it should use fewer, preferring whole
 * cores near the job's GPU so that pinned memory and the decode threads
 * share the GPU's package. Fake GPUs (character devices without PCI) have
 * no locality, and then topology order decides.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hwloc.h>

#include "common/parse.h"
#include "plugin/node/cores.h"

static int set_range(unsigned lo, unsigned hi, void *arg)
{
	return hwloc_bitmap_set_range(arg, lo, (int)hi) < 0 ? -1 : 0;
}

/* The cpuset of the non-I/O ancestor of GPU gpu, or NULL if unknown. */
static hwloc_const_cpuset_t gpu_locality(hwloc_topology_t topo, int gpu)
{
	hwloc_obj_t os = NULL;
	char names[3][32];
	int i;

	if (gpu < 0)
		return NULL;
	snprintf(names[0], sizeof(names[0]), "cuda%d", gpu);
	snprintf(names[1], sizeof(names[1]), "nvidia%d", gpu);
	snprintf(names[2], sizeof(names[2]), "rsmi%d", gpu);
	while ((os = hwloc_get_next_osdev(topo, os))) {
		for (i = 0; i < 3; i++) {
			if (os->name && strcmp(os->name, names[i]) == 0) {
				hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, os);
				return anc ? anc->cpuset : NULL;
			}
		}
	}
	return NULL;
}

int syn__pick_cores(const char *allowed, int n, int gpu, char *out, size_t outlen)
{
	hwloc_topology_t topo = NULL;
	hwloc_bitmap_t allow = NULL, chosen = NULL, tmp = NULL;
	hwloc_const_cpuset_t local;
	int pass, picked = 0, rv = -1, ncores, i;

	if (!allowed || n <= 0 || !out || !outlen) {
		errno = EINVAL;
		return -1;
	}
	allow = hwloc_bitmap_alloc();
	chosen = hwloc_bitmap_alloc();
	tmp = hwloc_bitmap_alloc();
	if (!allow || !chosen || !tmp) {
		errno = ENOMEM;
		goto out;
	}
	/* The one CPU-list grammar (common/parse.h), not hwloc's (which takes
	 * "0-" as every CPU from 0 on). */
	if (syn_parse_cpus(allowed, 1u << 20, set_range, allow) < 0 || hwloc_bitmap_iszero(allow)) {
		errno = EINVAL;
		goto out;
	}
	/* Taking every allowed CPU needs no topology: loading it costs about
	 * 90 ms here (120 ms with I/O devices), paid at each job's start. */
	if (n >= hwloc_bitmap_weight(allow)) {
		hwloc_bitmap_copy(chosen, allow);
		picked = hwloc_bitmap_weight(allow);
		goto print;
	}
	if (hwloc_topology_init(&topo) < 0)
		goto out;
	/* I/O devices are only needed to find the GPU. */
	if (gpu >= 0)
		hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(topo) < 0)
		goto out;
	local = gpu_locality(topo, gpu);
	ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	/* Pass 0 takes allowed cores near the GPU, pass 1 the rest. */
	for (pass = 0; pass < 2 && picked < n; pass++) {
		if (pass == 0 && !local)
			continue;
		for (i = 0; i < ncores && picked < n; i++) {
			hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i);
			int near;

			if (!core || !hwloc_bitmap_intersects(core->cpuset, allow))
				continue;
			if (hwloc_bitmap_intersects(core->cpuset, chosen))
				continue;
			near = local && hwloc_bitmap_isincluded(core->cpuset, local);
			if (pass == 0 && !near)
				continue;
			hwloc_bitmap_and(tmp, core->cpuset, allow);
			hwloc_bitmap_or(chosen, chosen, tmp);
			picked++;
		}
	}
	if (picked == 0) {
		/* No core object covers the allowed CPUs (odd topology): use them as given. */
		hwloc_bitmap_copy(chosen, allow);
		picked = hwloc_bitmap_weight(allow);
	}
print:
	if (hwloc_bitmap_list_snprintf(out, outlen, chosen) >= (int)outlen) {
		errno = ENAMETOOLONG;
		goto out;
	}
	rv = picked;
out:
	if (topo)
		hwloc_topology_destroy(topo);
	hwloc_bitmap_free(allow);
	hwloc_bitmap_free(chosen);
	hwloc_bitmap_free(tmp);
	return rv;
}
