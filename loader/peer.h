/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peer.h: the partitioned cache of a multi-node job (CoorDL's second
 * technique): each node's MinIO cache holds a different part of the
 * dataset, and a node's miss is read from the node that caches the item,
 * over the network, before anyone goes to storage.
 *
 * Partition. Which node caches which item follows from what every node of
 * the job already knows, with no metadata exchanged: the loader's seed,
 * the epoch its workers first ran (the "fill epoch"), its rank and world
 * size, the number of nodes and this node's index (synergy_env.h). In the
 * fill epoch each node consumes a disjoint part of the order (its ranks'
 * shards; ranks are numbered node by node, as torchrun and srun's block
 * distribution do), and that is the part it caches: item perm[p] belongs
 * to node (p mod W) * N / W for W ranks on N nodes (W >= N), or to node
 * p mod N when every node reads the whole dataset with one rank (W < N).
 * So the union of the caches fills in one epoch, each node stores only its
 * own part, up to its bound (bytes, as the MinIO cache always does), and
 * after the fill epoch storage is read only for what no node's cache
 * holds.
 *
 * Transport. TCP connections of our own (not UCX: see Security). A
 * reader sends READ {id, item} on its connection to the item's owner; the
 * owner's I/O thread looks the item up in its own cache and answers with
 * its bytes and the checksum trailer the cache stores after them
 * (cache.h), or with "not cached": one round trip per item, replies in the
 * order of the requests. An item is used only if the trailer matches the
 * bytes and the item's index: an owner whose item was dropped or its room
 * reused while it sent it gives a miss, never wrong bytes.
 *
 * Wire-up. Two ways, chosen by SYNERGY_PEER_WIREUP:
 *  - sockaddr: SYNERGY_PEERS lists every node's listening address
 *    ("host:port", node index order; the plugin derives the port from the
 *    job and step). One process per node listens there (the first that
 *    binds; the others retry every 2 s and only read) and accepts
 *    connections from the job's nodes' addresses. Works for any launcher:
 *    torchrun under srun, one process per GPU, a plain script.
 *  - pmix: a rank launched by `srun --mpi=pmix` (a PMIx client whose
 *    parent is not a PMIx client of the same rank) listens on a port the
 *    kernel picks, puts the port and its node's addresses into PMIx,
 *    fences with the other ranks (30 s at most) and connects to one
 *    process per node (each process of a node serves the node's cache; a
 *    reader spreads over them by local rank and moves to the next address
 *    or process when one fails).
 * "auto" takes pmix when the process is such a PMIx rank, else sockaddr.
 *
 * Security. Every connection starts with a mutual challenge-response
 * under the step's key, SYNERGY_PEER_KEY (synergy_env.h), which only the
 * step's tasks hold: HMAC-SHA256 over both ends' fresh nonces, the
 * direction, both node indices, the job's tag and the protocol version
 * (coordl_peerwire.h). The listener proves itself first; the reader sends
 * its proof only to a listener that did, and the listener answers nothing
 * but the handshake before the reader's proof is checked. A process
 * without the key therefore gets no byte of any item, cannot make anyone
 * read or write its memory (no peer ever names an address of another:
 * the owner looks items up itself), and is closed after the peer
 * deadline. Without a well-formed key the loader runs no peer tier and
 * says why. Not protected: traffic on the network (items travel in
 * clear, as from storage; someone who can read or alter the cluster
 * network's packets can read or alter them; the trailer catches
 * accidents, not forgeries). UCX is not used because over TCP it writes
 * wherever an incoming message of its TCP transport says, whatever the
 * context's features, for anyone who can connect to it (BENCHMARKS.md,
 * issue 24); see coordl(3), SECURITY.
 *
 * Many reads in flight. An I/O thread walks this rank's epoch order ahead
 * of the workers and keeps up to 64 items in flight from peers (reads of
 * the items of upcoming batches), as the fetch engine does for remote
 * storage; a worker takes the bytes of its item from there (buffers are
 * swapped, nothing copied) or asks for it on the spot.
 *
 * Faults. A peer that fails (connection error, its process died, a
 * message its state does not allow) or stalls (a read older than
 * SYNERGY_PEER_TIMEOUT_MS, default 1000) is cut off at once: its reads in
 * flight fail, and its items are read from storage until a reconnection
 * (after 0.5 s, doubling to 8 s) succeeds. No worker waits longer than the
 * deadline for a peer. Every case is counted in the statistics
 * (coordl_stats_t's peer_* fields).
 */
#ifndef COORDL_PEER_H
#define COORDL_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"
#include "loader/cache.h"
#include "loader/env.h"
#include "loader/fetch.h"

typedef struct coordl__peer coordl__peer_t;

/* Outcomes of coordl__peer_get(). */
#define COORDL__PEER_HIT 0      /* the bytes came from a peer */
#define COORDL__PEER_ABSENT 1   /* no peer caches it (yet): read it from storage */
#define COORDL__PEER_FAILED -1  /* the peer failed or stalled: read it from storage */

typedef struct coordl__peer_opts {
	const coordl__env_t *env; /* wire-up, peers, node index, tag, key, timeout */
	int rank, world;          /* the loader's shard */
	uint64_t signature;       /* the dataset's (coordl__source_signature) */
	size_t nitems;
	size_t per_rank;          /* positions in this rank's order */
	uint64_t max_item;        /* largest item accepted from a peer */
} coordl__peer_opts_t;

/*
 * Start the peer tier for a loader whose cache is `cache` (NULL: this node
 * caches nothing but still reads from its peers). Returns NULL when there
 * is nothing to do (one node, wire-up off): then *why is "" . Also NULL,
 * with the reason in why (never an error for the loader: it runs without
 * peers), when SYNERGY_PEER_KEY is unset or malformed, the node list
 * cannot be used, or PMIx fails. Never blocks longer than the PMIx fence's 30 s.
 */
coordl__peer_t *coordl__peer_create(coordl__cache_t *cache, const coordl__peer_opts_t *o,
				    char *why, size_t whylen);

/* Stop the I/O thread, close every connection and free everything. No
 * worker may be inside coordl__peer_get(). Accepts NULL; preserves errno. */
void coordl__peer_destroy(coordl__peer_t *p);

/*
 * Fix the partition from the fill epoch's permutation (n = nitems entries:
 * perm[p] is the item at position p). Only the first call does anything.
 * No worker may be inside coordl__peer_get().
 */
void coordl__peer_fix(coordl__peer_t *p, const uint64_t *perm, size_t n);

/* 1 when item idx belongs to this node's part (it goes into the local
 * cache; before the partition is fixed every item does), else 0. */
int coordl__peer_mine(const coordl__peer_t *p, size_t idx);

/*
 * A new epoch or position: drop what was read ahead and read ahead along
 * order[base..n) (copied). No worker may be inside coordl__peer_get().
 * Resets the per-epoch statistics.
 */
void coordl__peer_restart(coordl__peer_t *p, const uint64_t *order, size_t n, uint64_t base);

/*
 * The bytes of item idx (at position pos of the order, or COORDL__NOPOS),
 * which belongs to another node: from the read-ahead, or read now. Swaps
 * the caller's buffer (*buf, *cap) with the one the bytes are in and sets
 * *len. Returns COORDL__PEER_HIT, ..._ABSENT or ..._FAILED (see above);
 * never waits past the peer deadline.
 */
int coordl__peer_get(coordl__peer_t *p, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		     size_t *len);

/* 1 when a worker asking for idx now would likely get it from a peer (it
 * belongs to a node that is connected), for the fetch engine's read-ahead
 * to leave it out. */
int coordl__peer_serves(const coordl__peer_t *p, size_t idx);

/*
 * The handshake's MAC (coordl_peerwire.h): HMAC-SHA256 under key
 * (SYNERGY_PEER_KEY_BYTES) of the transcript of direction dir
 * (COORDL_PEER_DIR_*) for the connection from node client to node server
 * of the job tagged tag, with nonces nc and ns (COORDL_PEER_NONCE bytes
 * each), into out (COORDL_PEER_MAC bytes). 0, or -1 (libcrypto failed, or
 * built without the peer tier).
 */
int coordl__peer_mac(const uint8_t *key, uint64_t tag, uint32_t dir, uint32_t client,
		     uint32_t server, const uint8_t *nc, const uint8_t *ns, uint8_t *out);

/* Fill the peer_* fields of st. */
void coordl__peer_stats(coordl__peer_t *p, coordl_stats_t *st);

/* The first problem the peer tier met while running (a peer that failed,
 * a listener that could not bind; dropped when a node that failed while
 * the job started answers), or NULL. Owned by p, valid until the next call
 * (a copy: the I/O thread may change the note meanwhile). */
const char *coordl__peer_note(coordl__peer_t *p);

#endif
