/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl_peerwire.h: what the nodes of a multi-node job tell each other
 * when libcoordl's partitioned cache wires up (loader/peer.h). Defined once
 * here because it crosses processes (and nodes): the sockaddr listener's
 * hello, a UCX active message, and the blob a rank puts into PMIx. Both
 * ends run the same libcoordl on one architecture (host byte order); the
 * magic and version refuse anything else.
 */
#ifndef COORDL_PEERWIRE_H
#define COORDL_PEERWIRE_H

#include <stdint.h>

#define COORDL_PEER_MAGIC 0x31506c64726f6f63ULL /* "coordlP1" */
#define COORDL_PEER_VERSION 1
/* UCX active message id of the listener's hello. */
#define COORDL_PEER_AM_HELLO 23
/* The largest packed remote key a node accepts from a peer. */
#define COORDL_PEER_RKEY_MAX 4096

/*
 * What a node's listener sends every peer that connects (the active
 * message's header), followed by the packed remote key of its cache
 * segment (the payload, rkey_len bytes). base: where the segment is mapped
 * in the serving process; index_off, data_off, data_cap: its layout
 * (loader/cache.h). serves 0: the node caches nothing.
 */
struct coordl_peer_hello {
	uint64_t magic;
	uint32_t version, node;
	uint64_t tag, signature, nitems;
	uint64_t base, index_off, data_off, data_cap;
	uint32_t rkey_len, serves;
};

/*
 * What a rank launched by `srun --mpi=pmix` puts into PMIx under the key
 * "coordl.peer.<n>" (n counts the loaders that joined a peer tier in the
 * process), followed by rkey_len bytes of packed remote key and addr_len
 * bytes of UCX worker address.
 */
struct coordl_peer_pmix_blob {
	uint64_t magic;
	uint32_t version, node, local_rank, serves;
	uint64_t signature, nitems;
	uint64_t base, index_off, data_off, data_cap;
	uint32_t rkey_len, addr_len;
};

#endif
