/*
 * nodeconf.h: this node's shape as the node side of the plugin can know it.
 *
 * The node agent (idle-core lending and cache grants, lend.h) plans over
 * the node's GPUs, CPUs and memory. Its CPUs are its cgroup's; its GPUs and
 * the memory Slurm allots are what slurm.conf says of the node (the
 * NodeName line that lists it: Gres=gpu:N, RealMemory less MemSpecLimit),
 * unless synergy.conf's NodeGPUs / NodeMemMB say otherwise. Nothing here
 * talks to slurmctld.
 */
#ifndef SYN_PLUGIN_NODECONF_H
#define SYN_PLUGIN_NODECONF_H

#include <stddef.h>
#include <stdint.h>

/* What slurm.conf says of one node (0 where it says nothing). */
typedef struct syn__node_conf {
	uint32_t gpus;
	uint32_t cpus;
	uint64_t mem_mb;      /* RealMemory - MemSpecLimit */
} syn__node_conf_t;

/*
 * 1 if name is in the Slurm host list expression list: comma-separated
 * names, each possibly with one bracket range group ("gpu[01-16,20]x",
 * leading zeros kept). Pure. 0 otherwise (also for a malformed list).
 */
int syn__hostlist_has(const char *list, const char *name);

/*
 * Parse slurm.conf text for node: the last NodeName= line whose host list
 * includes it, over the NodeName=DEFAULT values before it. Returns 0 with
 * out filled, or -1 with errno ENOENT (no such node) or EINVAL (a value
 * that is not a number) and why in err. Pure.
 */
int syn__node_conf_parse(const char *text, const char *node, syn__node_conf_t *out,
			 char *err, size_t errlen);

/* The same from the file at path (at most 4 MiB). Errors as parse, plus
 * open(2)'s. */
int syn__node_conf_read(const char *path, const char *node, syn__node_conf_t *out,
			char *err, size_t errlen);

#endif
