/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cores.h: choose the cores of a job's synergy cgroup with hwloc.
 */
#ifndef SYN_PLUGIN_CORES_H
#define SYN_PLUGIN_CORES_H

#include <stddef.h>

/*
 * Choose n whole cores among the CPUs in allowed (cpuset list syntax, e.g.
 * the job's cpuset.cpus) and write their PUs, restricted to allowed, to out
 * in list syntax. Cores local to GPU number gpu (the hwloc OS device
 * "cuda<gpu>", "nvidia<gpu>" or "rsmi<gpu>") come first when the topology
 * knows it (gpu < 0: no preference); otherwise cores are taken in topology
 * order, which keeps them on as few packages as possible. If fewer than n
 * cores are allowed, all allowed cores are taken. When n covers every
 * allowed CPU the topology is not loaded and allowed is returned as it is
 * (the count is then of CPUs). Returns the number of cores chosen (> 0), or
 * -1 with errno (EINVAL: bad list or nothing allowed).
 * Honours HWLOC_SYNTHETIC etc. through the normal hwloc environment.
 */
int syn__pick_cores(const char *allowed, int n, int gpu, char *out, size_t outlen);

#endif
