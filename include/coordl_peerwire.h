/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl_peerwire.h: what the nodes of a multi-node job tell each other
 * in libcoordl's partitioned cache (loader/peer.h). Defined once here
 * because it crosses processes (and nodes): the messages of a peer
 * connection, the handshake's MAC input, and the blob a rank puts into
 * PMIx. Both ends run the same libcoordl on one architecture (host byte
 * order, these layouts); the magic and version refuse anything else.
 *
 * A connection is a TCP stream of messages. Each starts with a
 * coordl_peer_head giving its type and its size (the head included, an
 * ITEM's payload not); a receiver takes only the types the connection's
 * state allows, each at exactly its size, and closes it at anything else.
 *
 *   client (reader)                      server (the node's listener)
 *   HELLO {from, to, tag, nonce_c}  ->
 *                                   <-   CHALLENGE {node, tag, nonce_s, mac_s}
 *   (checks mac_s: a server without the key gets nothing more)
 *   PROOF {mac_c}                   ->
 *                                        (checks mac_c: a client without the
 *                                        key gets nothing, ever)
 *                                   <-   WELCOME {signature, nitems, serves}
 *   READ {id, idx}                  ->
 *                                   <-   ITEM {id, idx, len, stored} + payload
 *
 * mac_s and mac_c are HMAC-SHA256 under the step's key (SYNERGY_PEER_KEY)
 * of a coordl_peer_transcript: the direction, the version, the tag, the
 * client's and the server's node index and both nonces, so that no MAC
 * is valid in another connection, the other direction, between other
 * nodes or for another job.
 */
#ifndef COORDL_PEERWIRE_H
#define COORDL_PEERWIRE_H

#include <stdint.h>

#define COORDL_PEER_MAGIC 0x32506c64726f6f63ULL /* "coordlP2" */
#define COORDL_PEER_VERSION 2
#define COORDL_PEER_NONCE 32
#define COORDL_PEER_MAC 32

/* Message types. */
enum {
	COORDL_PEER_HELLO = 1,
	COORDL_PEER_CHALLENGE = 2,
	COORDL_PEER_PROOF = 3,
	COORDL_PEER_WELCOME = 4,
	COORDL_PEER_READ = 5,
	COORDL_PEER_ITEM = 6,
};

struct coordl_peer_head {
	uint32_t type, size;
};

/* Client -> server, first: which node it is (from), which node it wants
 * (to), the job's tag and a fresh nonce. */
struct coordl_peer_hello {
	struct coordl_peer_head h;
	uint64_t magic;
	uint32_t version, from, to, pad;
	uint64_t tag;
	uint8_t nonce[COORDL_PEER_NONCE];
};

/* Server -> client: its node, the tag, its fresh nonce and its MAC over
 * the transcript (direction COORDL_PEER_DIR_SERVER). */
struct coordl_peer_challenge {
	struct coordl_peer_head h;
	uint64_t magic;
	uint32_t version, node;
	uint64_t tag;
	uint8_t nonce[COORDL_PEER_NONCE];
	uint8_t mac[COORDL_PEER_MAC];
};

/* Client -> server, once the server proved it holds the key: the
 * client's MAC (direction COORDL_PEER_DIR_CLIENT). */
struct coordl_peer_proof {
	struct coordl_peer_head h;
	uint8_t mac[COORDL_PEER_MAC];
};

/* Server -> client, once the client proved it holds the key: the
 * dataset it caches and whether it serves anything (0: the node caches
 * nothing). */
struct coordl_peer_welcome {
	struct coordl_peer_head h;
	uint64_t signature, nitems;
	uint32_t serves, pad;
};

/* Client -> server: send item idx; id comes back in the ITEM. */
struct coordl_peer_read {
	struct coordl_peer_head h;
	uint64_t id, idx;
};

/* Server -> client, one per READ, in the order of the READs: stored 1:
 * len bytes of the item follow, then the COORDL__CACHE_TRAILER-byte
 * checksum trailer the cache keeps after them (loader/cache.h); stored 0:
 * the node does not cache it (len 0, nothing follows). */
struct coordl_peer_item {
	struct coordl_peer_head h;
	uint64_t id, idx;
	uint32_t len, stored;
};

/* The MAC input. dir: which side's MAC it is. */
#define COORDL_PEER_DIR_SERVER 1
#define COORDL_PEER_DIR_CLIENT 2

struct coordl_peer_transcript {
	char label[16];            /* "coordl peer mac" */
	uint32_t version, dir, client, server;
	uint64_t tag;
	uint8_t nonce_c[COORDL_PEER_NONCE];
	uint8_t nonce_s[COORDL_PEER_NONCE];
};

/*
 * What a rank launched by `srun --mpi=pmix` puts into PMIx under the key
 * "coordl.peer.<n>" (n counts the loaders that joined a peer tier in the
 * process), when it serves its node's part: the port its listener took
 * and naddr addresses of its node it can be reached at (family AF_INET
 * with 4 bytes of addr, or AF_INET6 with 16), after the blob.
 */
#define COORDL_PEER_ADDRS_MAX 8

struct coordl_peer_pmix_addr {
	uint16_t family, pad;
	uint8_t addr[16];
};

struct coordl_peer_pmix_blob {
	uint64_t magic;
	uint32_t version, node, local_rank, serves;
	uint64_t signature, nitems;
	uint32_t port, naddr;
};

#endif
