/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peers.h: the peers of a multi-node job step's partitioned cache, as the
 * SPANK plugin exports them to the step's tasks (synergy_env.h:
 * SYNERGY_PEERS, SYNERGY_NODE_INDEX, SYNERGY_PEER_TAG).
 *
 * Every node of a step computes the same list on its own, with no
 * exchange: entry i is the address slurm.conf gives the step's i-th node
 * (NodeAddr, see nodeconf.h; its name when slurm.conf has no line for it)
 * and a port that is a function of (job id,
 * step id, i) inside synergy.conf's PeerPortMin..PeerPortMax. The nodes of
 * one step take consecutive ports (modulo the range) from a start hashed
 * from the job and the step, so that they never share a port even when
 * they share a host (several slurmd on one machine), and the next step of
 * the job moves on to other ports (a listener of the step before may
 * linger). The tag is a hash of the job and the step: a listener of
 * another job or step that holds the port refuses the connecting peer.
 * Pure functions: nothing here logs or talks to Slurm.
 */
#ifndef SYN_PLUGIN_PEERS_H
#define SYN_PLUGIN_PEERS_H

#include <stddef.h>
#include <stdint.h>

/* The step's tag (never 0, the loader's "no tag"). */
uint64_t syn__peer_tag(uint32_t jobid, uint32_t stepid);

/*
 * The port of node index of a step, in pmin..pmax (1 <= pmin <= pmax <=
 * 65535). Returns it, or -1 with errno EINVAL for a bad range and ERANGE
 * when index does not fit the range (more nodes than ports).
 */
int syn__peer_port(uint32_t jobid, uint32_t stepid, uint32_t index, uint32_t pmin,
		   uint32_t pmax);

/*
 * SYNERGY_PEERS for a step: nodelist is the step's node list (a Slurm host
 * list expression, node index order, e.g. SLURM_STEP_NODELIST), nnodes the
 * step's node count (it must match, 2..SYNERGY_PEERS_MAX), slurm_conf the
 * text of slurm.conf (the nodes' addresses). Each entry is "addr:port"
 * ("[addr]:port" for an IPv6 address). Returns a malloc'ed string (the
 * caller frees it), or NULL with errno (EINVAL, ERANGE, ENOMEM)
 * and why in err, naming the node or value at fault.
 */
char *syn__peers_format(const char *slurm_conf, const char *nodelist, uint32_t nnodes,
			uint32_t jobid, uint32_t stepid, uint32_t pmin, uint32_t pmax,
			char *err, size_t errlen);

#endif
