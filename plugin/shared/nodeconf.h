/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodeconf.h: this node's shape as the node side of the plugin can know it.
 *
 * The node agent (idle-core lending and cache grants, lend.h) plans over
 * the node's GPUs, CPUs and memory. Its CPUs are its cgroup's; its GPUs and
 * the memory Slurm allots are what slurm.conf says of the node (the
 * NodeName line that lists it: Gres=gpu:N, RealMemory less MemSpecLimit),
 * unless synergy.conf's NodeGPUs / NodeMemMB say otherwise. The same
 * slurm.conf lines give the address any node is reached at (NodeAddr), for
 * the peers of a multi-node step (peers.h), and Slurm's host list
 * expressions are expanded here. Nothing here talks to slurmctld.
 */
#ifndef SYN_PLUGIN_NODECONF_H
#define SYN_PLUGIN_NODECONF_H

#include <stddef.h>
#include <stdint.h>

/* Longest host name the host list functions below produce. */
#define SYN__HOST_MAX 255

/*
 * Call fn(name, arg) for every host of the Slurm host list expression list
 * (as syn__hostlist_has reads it), in the order the list gives them: "n[1-3],x"
 * is n1, n2, n3, x. Stops when fn returns non-zero and returns that value;
 * returns 0 after the last host, or -1 with errno EINVAL for a malformed
 * list, a name longer than SYN__HOST_MAX or more than 1048576 hosts. Pure.
 */
int syn__hostlist_foreach(const char *list, int (*fn)(const char *name, void *arg), void *arg);

/* The number of hosts in list, or -1 (errno EINVAL) when it is malformed. */
int syn__hostlist_count(const char *list);

/* Copy the k-th host (from 0) of list into buf (len bytes). Returns 0, or
 * -1 with errno ENOENT (fewer hosts), EINVAL (malformed) or ERANGE (buf too
 * small). */
int syn__hostlist_nth(const char *list, size_t k, char *buf, size_t len);

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

/*
 * The address other nodes reach node at, as Slurm itself takes it from
 * slurm.conf text: the last NodeName= line whose host list includes node
 * gives NodeAddr, else NodeHostname, else the node's name; a NodeAddr or
 * NodeHostname listing several hosts gives the one at the node's position
 * in the line's NodeName list (NodeName=n[1-2] NodeAddr=10.0.0.[5-6]: n2 is
 * 10.0.0.6), one host is every node's. Copies it into addr (len bytes).
 * Returns 0, or -1 with errno ENOENT (no line names node), EINVAL (a list
 * shorter than the NodeName list, malformed) or ERANGE, and why in err.
 * Pure.
 */
int syn__node_addr_parse(const char *text, const char *node, char *addr, size_t len,
			 char *err, size_t errlen);

/*
 * The NodeName of the slurmd that runs on host (a short host name), as
 * slurmd started without -N finds its own: the NodeName= lines' nodes
 * whose NodeHostname (the one at the node's position when the line lists
 * several, else the node's name) is host, or host and a domain. Copies it into name (len bytes).
 * Returns 0, or -1 with errno ENOENT (no node on host), EEXIST (several:
 * a multiple-slurmd host, where each slurmd is given its NodeName) or
 * ERANGE. Pure.
 */
int syn__node_of_host(const char *text, const char *host, char *name, size_t len);

#endif
