/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peer.t: issues 14 and 24, the partitioned cache of a multi-node job
 * (peer.h) and its authentication.
 *
 * Unit part: SYNERGY_PEERS and SYNERGY_PEER_KEY parsing, the environment's
 * errors, the cache's checksum trailer as a peer checks it; without a
 * well-formed key there is no peer tier, and the note says why.
 *
 * Job part: three loader processes on 127.0.0.1 act as the three nodes of
 * one job (each its own cache directory and bound, SYNERGY_PEERS naming a
 * port per node, the same SYNERGY_PEER_KEY). Each node caches only its
 * part; after the first epoch no node reads storage, every item of
 * another node's part comes from that node, and every output byte is what
 * a loader without any cache delivers. Then one node is stopped (SIGSTOP:
 * a stall) and later killed: the others finish their epochs within the
 * deadline, reading its part from storage, with a note naming it.
 *
 * Hostile listeners: the second node's port is held by something that is
 * not the job's peer: a TCP server sending garbage; a peer without the key
 * (it never gets the loader's proof); peers with the key that answer with
 * a wrong tag, another dataset's signature, a truncated message, or items
 * that lie (not cached, a wrong trailer, beyond max_item_bytes, another
 * item's bytes). The loader refuses each, reads from storage, and delivers
 * the same bytes. And an honest peer that moves every item between two
 * epochs: still every item from it.
 *
 * Hostile clients (issue 24): a process that knows the job's tag, node
 * list and ports but not the key attacks a serving node: it asks for items
 * before, during and after a handshake it cannot finish (a wrong proof, its
 * challenge reflected, none at all, another node's index), and, where UCX
 * is there, connects as a UCX peer (UCP through the listener, forged
 * remote keys; UCT puts to every port the node listens on, aimed at its
 * cache segment). It gets not one byte of an item, the node listens on
 * nothing but its peer port, its cache segment is unchanged, and it still
 * serves the job's other node.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader/cache.h"
#include "coordl.h"
#include "loader/env.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

/* The job's key, and another (a process that is not the job's). */
#define KEY_HEX "4d1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96a"
#define WRONG_HEX "4d1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96b"

#ifdef HAVE_PEERS
#include <arpa/inet.h>
#include <poll.h>
#include <sys/random.h>
#ifdef HAVE_UCX
#include <ucp/api/ucp.h>
#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>
#endif

#include "coordl_peerwire.h"
#include "loader/peer.h"
#include "loader/source.h"

#define NNODES 3
#define EPOCHS 4
/* The epochs the nodes run: 2 and 3 are not each other's successors, so
 * that nothing of epoch 5 was read ahead before node 2 stopped. */
static const uint64_t epoch_no[EPOCHS] = { 0, 1, 5, 6 };
#define OUT 16
#define MAXS 256
/* max_item_bytes of the loaders here: small, so that a peer's oversized
 * item costs the test little to send. */
#define MAX_ITEM (1 << 20)

static char dir[1024], ds[1100];
static long long ds_bytes;
static int nitems;

/* What a node process reports after each epoch. */
struct rep {
	int epoch, created;
	long samples;
	int data_ok;
	double wall, up_wait;
	coordl_stats_t st;
	char note[240];
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* One epoch's output hash (indices and payload bytes). */
static uint64_t epoch_hash(coordl_loader_t *ld, uint64_t e, long *n)
{
	static uint64_t idx[MAXS];
	static float data[MAXS * OUT * OUT * 3];
	uint64_t h = 0xcbf29ce484222325ULL;

	memset(data, 0, sizeof(data));
	*n = td_run_epoch(ld, e, idx, MAXS, data, sizeof(data));
	if (*n > 0) {
		h = fnv(idx, (size_t)*n * sizeof(uint64_t), h);
		h = fnv(data, sizeof(data), h);
	}
	return h;
}

static coordl_loader_t *make(int rank, int world, int cache_use, coordl_error_t *err)
{
	coordl_config_t cfg;

	coordl_config_init(&cfg);
	cfg.path = ds;
	cfg.mode = COORDL_MODE_TRAIN;
	cfg.out_size = OUT;
	cfg.batch_size = 4;
	cfg.threads = 2;
	cfg.cache_use = cache_use;
	cfg.rank = rank;
	cfg.world_size = world;
	cfg.seed = 7;
	cfg.max_item_bytes = MAX_ITEM;
	return coordl_create(&cfg, err);
}

/* A free TCP port on 127.0.0.1 (the kernel's pick; released at once). */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

static void node_env(int k, const char *peers, const char *tag, int cache_bytes)
{
	char v[64], cd[1200];

	snprintf(cd, sizeof(cd), "%s/node%d", dir, k);
	mkdir(cd, 0700);
	setenv(SYNERGY_ENV_PEERS, peers, 1);
	setenv(SYNERGY_ENV_PEER_KEY, KEY_HEX, 1);
	snprintf(v, sizeof(v), "%d", k);
	setenv(SYNERGY_ENV_NODE_INDEX, v, 1);
	setenv(SYNERGY_ENV_PEER_TAG, tag, 1);
	setenv(SYNERGY_ENV_PEER_TIMEOUT_MS, "500", 1);
	setenv(SYNERGY_ENV_CACHE_NAME, "job_14", 1);
	snprintf(v, sizeof(v), "%d", cache_bytes);
	setenv(SYNERGY_ENV_CACHE_BYTES, v, 1);
	setenv(SYNERGY_ENV_CACHE_DIR, cd, 1);
}

static void wr(int fd, const void *p, size_t n)
{
	ssize_t r = write(fd, p, n);
	(void)r;
}

static int rd(int fd, void *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/*
 * A node: reference hashes from a loader without cache or peers, then the
 * peer loader's epochs, each reported on up and started by a byte on down
 * (a barrier the parent holds; the byte says how many peers to wait for,
 * 10 s at most, before the epoch starts); then it serves until down is
 * closed.
 */
static void node_main(int k, int world, const char *peers, const char *tag, int cache_bytes,
		      int epochs, int up, int down)
{
	coordl_error_t err = { "" };
	coordl_loader_t *ld;
	uint64_t ref[EPOCHS];
	struct rep r;
	char go;
	int wait_up;

	alarm(120);
	if (!(ld = make(k, world, COORDL_CACHE_NONE, &err))) {
		fprintf(stderr, "node %d: reference loader: %s\n", k, err.text);
		_exit(3);
	}
	for (int e = 0; e < epochs; e++)
		ref[e] = epoch_hash(ld, epoch_no[e], &r.samples);
	coordl_destroy(ld);
	node_env(k, peers, tag, cache_bytes);
	ld = make(k, world, COORDL_CACHE_AUTO, &err);
	for (int e = 0; e < epochs; e++) {
		double t;
		memset(&r, 0, sizeof(r));
		if (rd(down, &go, 1) < 0)
			break;
		r.epoch = e;
		r.created = ld != NULL;
		if (!ld) {
			snprintf(r.note, sizeof(r.note), "%s", err.text);
			wr(up, &r, sizeof(r));
			break;
		}
		t = td_now();
		wait_up = go;
		if (wait_up > 0) {
			coordl_stats_t st;
			do {
				coordl_get_stats(ld, &st);
				if (st.peers_up >= wait_up)
					break;
				usleep(20000);
			} while (td_now() - t < 10);
			r.up_wait = td_now() - t;
			t = td_now();
		}
		r.data_ok = epoch_hash(ld, epoch_no[e], &r.samples) == ref[e];
		r.wall = td_now() - t;
		coordl_get_stats(ld, &r.st);
		snprintf(r.note, sizeof(r.note), "%s", coordl_cache_note(ld) ? coordl_cache_note(ld) : "");
		wr(up, &r, sizeof(r));
	}
	/* Serve the other nodes until the parent is done with all of them:
	 * a node that ran its last epoch first must not leave the others'
	 * last epoch without its part. */
	while (rd(down, &go, 1) == 0)
		;
	coordl_destroy(ld);
	_exit(0);
}

struct node {
	pid_t pid;
	int up, down;
};

static pid_t start_node(struct node *n, int k, int world, const char *peers, const char *tag,
			int cache_bytes, int epochs)
{
	int u[2], d[2];

	if (pipe(u) < 0 || pipe(d) < 0)
		return -1;
	fflush(stdout);
	n->pid = fork();
	if (n->pid == 0) {
		/* Only its own pipes: a node must see the end of its down pipe
		 * when the parent closes it, not when every node forked after
		 * it has exited. */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != u[1] && fd != d[0])
				close(fd);
		node_main(k, world, peers, tag, cache_bytes, epochs, u[1], d[0]);
	}
	close(u[1]);
	close(d[0]);
	n->up = u[0];
	n->down = d[1];
	return n->pid;
}

/* Run the node's next epoch after waiting (10 s at most) until wait_up
 * peers are connected. */
static int node_epoch(struct node *n, struct rep *r, char wait_up)
{
	char go = wait_up;
	int rc;

	memset(r, 0, sizeof(*r));
	wr(n->down, &go, 1);
	rc = rd(n->up, r, sizeof(*r));
	diag("  node pid %d epoch %d: %ld samples in %.2f s: %llu local hits, %llu peer hits, "
	     "%llu storage reads, %llu fallbacks, %llu bad, %llu stalls, %d up%s%s",
	     (int)n->pid, r->epoch, r->samples, r->wall, (unsigned long long)r->st.cache_hits,
	     (unsigned long long)r->st.peer_hits, (unsigned long long)r->st.storage_reads,
	     (unsigned long long)r->st.peer_fallbacks, (unsigned long long)r->st.peer_bad,
	     (unsigned long long)r->st.peer_stalls, r->st.peers_up, r->note[0] ? "; note: " : "",
	     r->note);
	return rc;
}

static void node_end(struct node *n)
{
	int st;
	close(n->down);
	close(n->up);
	if (n->pid > 0)
		waitpid(n->pid, &st, 0);
	n->pid = 0;
}

/* Wait (5 s at most) until every thread of pid is stopped: a signal is
 * delivered asynchronously. */
static int stopped(pid_t pid)
{
	double t0 = td_now();
	char path[64];

	do {
		int all = 1, n = 0;
		DIR *d;
		struct dirent *de;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		if (!(d = opendir(path)))
			return 0;
		while ((de = readdir(d))) {
			char sp[400], buf[512], *c;
			FILE *f;
			if (de->d_name[0] == '.')
				continue;
			snprintf(sp, sizeof(sp), "%s/%s/stat", path, de->d_name);
			if (!(f = fopen(sp, "r")))
				continue;
			if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')) && c[1] == ' ')
				all &= c[2] == 'T' || c[2] == 't';
			fclose(f);
			n++;
		}
		closedir(d);
		if (all && n > 0)
			return 1;
		usleep(10000);
	} while (td_now() - t0 < 5);
	return 0;
}

static void test_job(void)
{
	struct node nd[NNODES];
	struct rep r[NNODES];
	char peers[256] = "";
	int bound = (int)(ds_bytes / 2) + 16384, ok0 = 1;

	for (int k = 0; k < NNODES; k++) {
		int port = free_port();
		snprintf(peers + strlen(peers), sizeof(peers) - strlen(peers), "%s127.0.0.1:%d",
			 k ? "," : "", port);
	}
	diag("peers %s, dataset %lld bytes, %d items, cache bound %d per node", peers, ds_bytes,
	     nitems, bound);
	for (int k = 0; k < NNODES; k++)
		start_node(&nd[k], k, NNODES, peers, "1414", bound, EPOCHS);

	/* Epoch 0: every node fills its part. */
	for (int k = 0; k < NNODES; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 0) == 0 && r[k].created && r[k].data_ok;
	ok(ok0, "three nodes start and run the fill epoch, output as without a cache");
	ok(r[0].st.peer_nodes == NNODES && r[1].st.peer_node_index == 1 && r[2].st.peer_node_index == 2,
	   "each knows it is node k of %d (%d, %d)", NNODES, r[0].st.peer_nodes, r[2].st.peer_node_index);
	ok(r[0].st.peer_wireup == COORDL_WIREUP_SOCKADDR && r[1].st.peer_wireup == COORDL_WIREUP_SOCKADDR &&
	   r[2].st.peer_wireup == COORDL_WIREUP_SOCKADDR,
	   "and that the nodes found each other by the SYNERGY_PEERS list (wire-up %d)",
	   r[0].st.peer_wireup);
	{
		uint64_t used = 0;
		int part = 1;
		for (int k = 0; k < NNODES; k++) {
			used += r[k].st.cache_bytes_used;
			part &= r[k].st.cache_bytes_used < (uint64_t)ds_bytes / 2;
		}
		ok(part && used == (uint64_t)ds_bytes,
		   "each node caches only its part (%llu, %llu, %llu bytes), together the dataset (%llu of %lld)",
		   (unsigned long long)r[0].st.cache_bytes_used,
		   (unsigned long long)r[1].st.cache_bytes_used,
		   (unsigned long long)r[2].st.cache_bytes_used, (unsigned long long)used, ds_bytes);
	}

	/* Epoch 1: all of it from the nodes' caches. */
	ok0 = 1;
	for (int k = 0; k < NNODES; k++)
		ok0 &= node_epoch(&nd[k], &r[k], NNODES - 1) == 0 && r[k].data_ok;
	ok(ok0 && r[0].st.peers_up == 2 && r[1].st.peers_up == 2 && r[2].st.peers_up == 2,
	   "epoch 1: every node connected to both others (%.2f s), output as without a cache",
	   r[0].up_wait);
	{
		int exact = 1, peers_used = 1;
		for (int k = 0; k < NNODES; k++) {
			exact &= r[k].st.storage_reads == 0 && r[k].st.storage_bytes == 0;
			peers_used &= r[k].st.peer_hits > 0 &&
				      r[k].st.peer_hits + r[k].st.cache_hits == (uint64_t)r[k].samples &&
				      r[k].st.peer_fallbacks == 0 && r[k].st.peer_bad == 0;
			diag("node %d epoch 1: %ld samples, %llu local hits, %llu peer hits (%llu bytes), "
			     "%llu storage reads", k, r[k].samples, (unsigned long long)r[k].st.cache_hits,
			     (unsigned long long)r[k].st.peer_hits, (unsigned long long)r[k].st.peer_bytes,
			     (unsigned long long)r[k].st.storage_reads);
		}
		ok(exact, "issue 14: after the fill epoch no node reads storage (the union of the "
		   "caches holds the dataset)");
		ok(peers_used, "every item is a local hit or a peer hit; no fallback, no bad item");
	}

	/* Epoch 2: node 2 stalls (stopped). */
	kill(nd[2].pid, SIGSTOP);
	ok(stopped(nd[2].pid), "node 2 stopped (every thread)");
	ok0 = 1;
	for (int k = 0; k < 2; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 0) == 0 && r[k].data_ok;
	ok(ok0, "issue 14: node 2 stalls: nodes 0 and 1 finish epoch 2 (%.2f s, %.2f s), output as "
	   "without a cache", r[0].wall, r[1].wall);
	ok(r[0].wall < 15 && r[1].wall < 15, "  within bounded time, not a hang");
	ok(r[0].st.storage_reads > 0 && r[0].st.peer_fallbacks > 0 && r[0].st.peer_hits > 0 &&
	   (r[0].st.peer_stalls > 0 || r[1].st.peer_stalls > 0),
	   "  node 0 read node 2's part from storage (%llu reads, %llu fallbacks, %llu stalls), node 1's "
	   "from node 1 (%llu)", (unsigned long long)r[0].st.storage_reads,
	   (unsigned long long)r[0].st.peer_fallbacks, (unsigned long long)r[0].st.peer_stalls,
	   (unsigned long long)r[0].st.peer_hits);
	ok(strstr(r[0].note, "peer node 2") && strstr(r[0].note, "read from storage"),
	   "  and says so: %s", r[0].note);

	/* Epoch 3: node 2 is dead. */
	kill(nd[2].pid, SIGKILL);
	kill(nd[2].pid, SIGCONT);
	/* Give the loaders the time to notice (their reconnections to node
	 * 2 are refused) before the epoch, which waits for one peer up. */
	usleep(1500000);
	ok0 = 1;
	for (int k = 0; k < 2; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 1) == 0 && r[k].data_ok;
	ok(ok0 && r[0].wall < 15 && r[1].wall < 15,
	   "issue 14: node 2 killed: nodes 0 and 1 finish the epoch after (%.2f s, %.2f s), output as without a "
	   "cache", r[0].wall, r[1].wall);
	/* Each connection is its own TCP stream: a peer's death leaves the
	 * survivors' connection to each other alone. */
	ok(r[0].st.storage_reads > 0 && r[1].st.storage_reads > 0 &&
	   r[0].st.peer_hits > 0 && r[1].st.peer_hits > 0,
	   "  node 2's part from storage (%llu, %llu reads), the survivors' parts from each other "
	   "(%llu, %llu peer hits)", (unsigned long long)r[0].st.storage_reads,
	   (unsigned long long)r[1].st.storage_reads, (unsigned long long)r[0].st.peer_hits,
	   (unsigned long long)r[1].st.peer_hits);
	for (int k = 0; k < NNODES; k++)
		node_end(&nd[k]);
}

/* ---- the protocol, as a peer of another program would speak it ---- */

static int key_of(const char *hex, uint8_t *key)
{
	return coordl__parse_peer_key(hex, key);
}

/* The handshake's MAC, as a peer that holds key makes it. */
static void t_mac(const uint8_t *key, uint32_t way, uint32_t client, uint32_t server, uint64_t tag,
		  const uint8_t *nc, const uint8_t *ns, uint8_t *out)
{
	if (coordl__peer_mac(key, tag, way, client, server, nc, ns, out) < 0)
		memset(out, 0, COORDL_PEER_MAC);
}

static void t_nonce(uint8_t *n)
{
	if (getrandom(n, COORDL_PEER_NONCE, 0) != COORDL_PEER_NONCE)
		bail_out("getrandom");
}

/* Read exactly n bytes within secs: 0, or -1 (EOF, error or time out). */
static int rd_within(int fd, void *p, size_t n, double secs)
{
	double until = td_now() + secs;
	size_t got = 0;

	while (got < n) {
		struct pollfd pf = { fd, POLLIN, 0 };
		double left = until - td_now();
		ssize_t r;
		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			return -1;
		if ((r = read(fd, (char *)p + got, n - got)) <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Bytes fd gives before its end, waiting at most secs for each; *eof 1
 * when the other end closed it (else the wait ran out). */
static size_t drain(int fd, double secs, int *eof)
{
	char b[4096];
	size_t n = 0;

	*eof = 0;
	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t r;
		if (poll(&pf, 1, (int)(secs * 1000)) <= 0)
			return n;
		if ((r = read(fd, b, sizeof(b))) <= 0) {
			*eof = 1;
			return n;
		}
		n += (size_t)r;
	}
}

/* ---- hostile listeners ---- */

enum { H_GARBAGE, H_NOKEY, H_TAG, H_SIG, H_SHORT, H_LIES, H_MOVES };

struct hostile {
	int variant;
	uint64_t tag, signature, nitems, max_item;
	uint8_t key[SYNERGY_PEER_KEY_BYTES];
	uint8_t *seg;              /* H_MOVES: an index of 16-byte entries, then the items */
	size_t seg_len;
	coordl__source_t *src;
	int ready;
};

/*
 * Items stored as a cache stores them (bytes then checksum trailer, entry
 * off u64, len u32, READY) in half `half` of the data area, the other half
 * garbage: H_MOVES serves from there, then, on SIGUSR1, moves them all to
 * the other half, as an owner that dropped and stored them again would.
 */
static int h_store(struct hostile *h, int half)
{
	uint64_t data_cap = h->seg_len - h->nitems * 16, at = half ? data_cap / 2 : 0;
	uint8_t *data = h->seg + h->nitems * 16, *buf = NULL;
	size_t cap = 0, len;
	char why[128];

	for (uint64_t b = 0; b < data_cap; b++)
		data[b] = (uint8_t)(b * 131 + 7);
	for (uint64_t i = 0; i < h->nitems; i++) {
		uint8_t *e = h->seg + i * 16;
		uint64_t sum;
		uint32_t l32;
		if (coordl__source_fetch(h->src, i, &buf, &cap, &len, why, sizeof(why)) < 0 ||
		    at + len + 8 > (half ? data_cap : data_cap / 2)) {
			free(buf);
			return -1;
		}
		memcpy(data + at, buf, len);
		sum = coordl__cache_sum(i, buf, len);
		memcpy(data + at + len, &sum, 8);
		l32 = (uint32_t)len;
		memcpy(e, &at, 8);
		memcpy(e + 8, &l32, 4);
		at += len + 8;
	}
	free(buf);
	return 0;
}

static volatile sig_atomic_t h_move;
static void h_on_usr1(int sig) { (void)sig; h_move = 1; }

/* Item i's bytes as the source has them (malloc'd), or NULL. */
static uint8_t *h_item(struct hostile *h, uint64_t i, size_t *len)
{
	uint8_t *buf = NULL;
	size_t cap = 0;
	char why[128];

	if (coordl__source_fetch(h->src, i, &buf, &cap, len, why, sizeof(why)) < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void h_send_item(int c, const struct coordl_peer_read *rq, const uint8_t *b, size_t len,
			uint64_t sum, int stored)
{
	struct coordl_peer_item it;

	memset(&it, 0, sizeof(it));
	it.h.type = COORDL_PEER_ITEM;
	it.h.size = sizeof(it);
	it.id = rq->id;
	it.idx = rq->idx;
	it.stored = (uint32_t)stored;
	it.len = stored ? (uint32_t)len : 0;
	wr(c, &it, sizeof(it));
	if (stored) {
		wr(c, b, len);
		wr(c, &sum, 8);
	}
}

/* Answer a READ the way the variant lies (or honestly, H_MOVES). */
static void h_answer(struct hostile *h, int c, const struct coordl_peer_read *rq)
{
	uint64_t i = rq->idx;
	uint8_t *b = NULL;
	size_t len = 0;

	if (h->variant == H_MOVES) {
		uint64_t off;
		uint32_t l32;
		memcpy(&off, h->seg + i * 16, 8);
		memcpy(&l32, h->seg + i * 16 + 8, 4);
		uint8_t *d = h->seg + h->nitems * 16 + off;
		uint64_t sum;
		memcpy(&sum, d + l32, 8);
		h_send_item(c, rq, d, l32, sum, 1);
		return;
	}
	switch (i % 4) {
	case 0: /* not cached */
		h_send_item(c, rq, NULL, 0, 0, 0);
		break;
	case 1: /* its bytes, a wrong trailer */
		if ((b = h_item(h, i, &len)))
			h_send_item(c, rq, b, len, coordl__cache_sum(i, b, len) ^ 1, 1);
		break;
	case 2: /* beyond max_item_bytes */
		len = (size_t)h->max_item + 1;
		if ((b = calloc(1, len)))
			h_send_item(c, rq, b, len, coordl__cache_sum(i, b, len), 1);
		break;
	default: /* another item's bytes and trailer */
		if ((b = h_item(h, (i + 1) % h->nitems, &len)))
			h_send_item(c, rq, b, len, coordl__cache_sum((i + 1) % h->nitems, b, len), 1);
		break;
	}
	free(b);
}

/* One connection of the loader to the hostile listener. */
static void h_conn(struct hostile *h, int c)
{
	struct coordl_peer_hello he;
	struct coordl_peer_challenge ch;
	struct coordl_peer_proof pr;
	struct coordl_peer_welcome w;

	if (rd_within(c, &he, sizeof(he), 5) < 0 || he.h.type != COORDL_PEER_HELLO)
		return;
	memset(&ch, 0, sizeof(ch));
	ch.h.type = COORDL_PEER_CHALLENGE;
	ch.h.size = sizeof(ch);
	ch.magic = COORDL_PEER_MAGIC;
	ch.version = COORDL_PEER_VERSION;
	ch.node = 1;
	ch.tag = h->variant == H_TAG ? h->tag + 1 : h->tag;
	t_nonce(ch.nonce);
	t_mac(h->key, COORDL_PEER_DIR_SERVER, he.from, 1, ch.tag, he.nonce, ch.nonce, ch.mac);
	if (h->variant == H_SHORT) {
		ch.h.size -= 8;
		wr(c, &ch, sizeof(ch) - 8);
		(void)rd_within(c, &pr, 1, 5); /* until the loader gives up */
		return;
	}
	wr(c, &ch, sizeof(ch));
	if (rd_within(c, &pr, sizeof(pr), 5) < 0)
		return;
	/* A squatter without the key must never see the loader's proof. */
	if (h->variant == H_NOKEY)
		wr(h->ready, "P", 1);
	memset(&w, 0, sizeof(w));
	w.h.type = COORDL_PEER_WELCOME;
	w.h.size = sizeof(w);
	w.signature = h->variant == H_SIG ? h->signature ^ 1 : h->signature;
	w.nitems = h->nitems;
	w.serves = 1;
	wr(c, &w, sizeof(w));
	for (;;) {
		struct coordl_peer_read rq;
		struct pollfd pf = { c, POLLIN, 0 };
		if (h_move) {
			h_move = 0;
			wr(h->ready, h_store(h, 1) == 0 ? "m" : "x", 1);
		}
		if (poll(&pf, 1, 100) == 0)
			continue;
		if (rd_within(c, &rq, sizeof(rq), 5) < 0 || rq.h.type != COORDL_PEER_READ)
			return;
		h_answer(h, c, &rq);
	}
}

static void hostile_main(int variant, int port, uint64_t tag, int ready)
{
	struct hostile h;
	struct sockaddr_in a;
	coordl_error_t err = { "" };
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	alarm(60);
	signal(SIGPIPE, SIG_IGN);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 16) < 0)
		_exit(2);
	if (variant == H_GARBAGE) {
		char junk[4096];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)(i * 37 + 1);
		wr(ready, "r", 1);
		for (;;) {
			int c = accept(s, NULL, NULL);
			if (c < 0)
				continue;
			wr(c, junk, sizeof(junk));
			close(c);
		}
	}
	memset(&h, 0, sizeof(h));
	h.variant = variant;
	h.tag = tag;
	h.max_item = MAX_ITEM;
	h.ready = ready;
	if (key_of(variant == H_NOKEY ? WRONG_HEX : KEY_HEX, h.key) < 0 ||
	    !(h.src = coordl__source_open(ds, COORDL_SOURCE_AUTO, &err)))
		_exit(2);
	h.signature = coordl__source_signature(h.src);
	h.nitems = coordl__source_count(h.src);
	h.seg_len = h.nitems * 16 + 2 * (coordl__source_bytes(h.src) + h.nitems * 8) + (1 << 20);
	if (!(h.seg = calloc(1, h.seg_len)) || (variant == H_MOVES && h_store(&h, 0) < 0))
		_exit(2);
	signal(SIGUSR1, h_on_usr1);
	wr(ready, "r", 1);
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			continue;
		h_conn(&h, c);
		close(c);
	}
}

/* Node 1 of peers p0,p1 played by a hostile peer (hostile_main) in a
 * child: its pid; rp[0] reads what it says ('r' once it listens). */
static pid_t start_hostile(int variant, int p0, int p1, char *peers, size_t len, int rp[2])
{
	pid_t hp;

	snprintf(peers, len, "127.0.0.1:%d,127.0.0.1:%d", p0, p1);
	fflush(stdout);
	if (pipe(rp) < 0)
		bail_out("pipe");
	if ((hp = fork()) == 0) {
		close(rp[0]);
		hostile_main(variant, p1, 77, rp[1]);
	}
	close(rp[1]);
	return hp;
}

/* What the hostile wrote to its pipe so far, without waiting. */
static void pipe_said(int fd, char *out, size_t cap)
{
	size_t n = 0;

	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		char c;
		if (poll(&pf, 1, 0) <= 0 || read(fd, &c, 1) != 1)
			break;
		if (n + 1 < cap)
			out[n++] = c;
	}
	out[n] = '\0';
}

static void test_hostile(int variant, const char *what)
{
	struct node n;
	struct rep r0, r1;
	char peers[128], said[64];
	int p0 = free_port(), p1 = free_port(), st, rp[2];
	char c = 0;
	pid_t hp;

	hp = start_hostile(variant, p0, p1, peers, sizeof(peers), rp);
	ok(rd(rp[0], &c, 1) == 0 && c == 'r', "%s: it listens", what);
	/* One rank on node 0 of 2: half the items are node 1's part. */
	start_node(&n, 0, 1, peers, "77", (int)ds_bytes + 16384, 3);
	node_epoch(&n, &r0, 0);
	usleep(300000); /* time to connect and hear the challenge */
	/* The lying peer looks like one: wait for it to be connected. */
	node_epoch(&n, &r1, variant == H_LIES);
	if (variant == H_SHORT || variant == H_GARBAGE || variant == H_NOKEY)
		usleep(2000000); /* the connection's deadline passes */
	node_epoch(&n, &r1, 0);
	ok(r0.created && r0.data_ok && r1.data_ok && r1.wall < 15,
	   "issue 14: %s: the loader runs on (%.2f s), output as without a cache", what, r1.wall);
	ok(r1.st.peer_hits == 0 && r1.st.storage_reads + r1.st.cache_hits == (uint64_t)r1.samples &&
	   r1.st.storage_reads > 0,
	   "  nothing taken from it: %llu items of its part from storage, %llu local hits",
	   (unsigned long long)r1.st.storage_reads, (unsigned long long)r1.st.cache_hits);
	if (variant == H_TAG || variant == H_SIG)
		ok(strstr(r1.note, "peer node 1") &&
		   strstr(r1.note, variant == H_TAG ? "not this job's node" : "another dataset"),
		   "  refused, with a note: %s", r1.note);
	else if (variant == H_LIES)
		ok(r1.st.peer_bad > 0 && r1.st.peer_absent > 0,
		   "  every lie refused: %llu items failed their check or the item limit, %llu not "
		   "cached there (absent)", (unsigned long long)r1.st.peer_bad,
		   (unsigned long long)r1.st.peer_absent);
	else
		ok(r1.st.peers_up == 0 && r1.note[0], "  never taken for a peer: %s", r1.note);
	if (variant == H_NOKEY) {
		pipe_said(rp[0], said, sizeof(said));
		ok(!strchr(said, 'P'), "issue 24: a listener without the key never gets the loader's "
		   "proof (it said '%s')", said);
		ok(strstr(r1.note, "peer node 1") && strstr(r1.note, SYNERGY_ENV_PEER_KEY),
		   "  and the note says why, naming %s: %s", SYNERGY_ENV_PEER_KEY, r1.note);
	}
	close(rp[0]);
	node_end(&n);
	kill(hp, SIGKILL);
	waitpid(hp, &st, 0);
}

/*
 * An owner that moves every item between two epochs (dropped and stored
 * again elsewhere): the reader asks its owner for items by index, not by
 * place, so every item of the owner's part still comes from it, none bad,
 * none from storage.
 */
static void test_moves(void)
{
	const char *what = "node 1 moves every item between two epochs";
	struct node n;
	struct rep r0, r1, r2;
	char peers[128];
	int p0 = free_port(), p1 = free_port(), st, rp[2];
	char c = 0, m = 0;
	pid_t hp;

	hp = start_hostile(H_MOVES, p0, p1, peers, sizeof(peers), rp);
	ok(rd(rp[0], &c, 1) == 0 && c == 'r', "%s: it listens", what);
	start_node(&n, 0, 1, peers, "77", (int)ds_bytes + 16384, 3);
	node_epoch(&n, &r0, 0);
	node_epoch(&n, &r1, 1);
	kill(hp, SIGUSR1);
	ok(rd(rp[0], &m, 1) == 0 && m == 'm', "%s: moved (after an epoch with %llu peer hits)", what,
	   (unsigned long long)r1.st.peer_hits);
	node_epoch(&n, &r2, 1);
	ok(r1.data_ok && r1.st.peer_hits > 0 && r2.data_ok,
	   "issue 14: %s: output as without a cache", what);
	ok(r2.st.peer_hits == r1.st.peer_hits && r2.st.peer_bad == 0 && r2.st.peer_fallbacks == 0 &&
	   r2.st.storage_reads == 0,
	   "  every item of its part read from its new place (%llu peer hits, %llu bad, %llu "
	   "fallbacks, %llu storage reads)", (unsigned long long)r2.st.peer_hits,
	   (unsigned long long)r2.st.peer_bad, (unsigned long long)r2.st.peer_fallbacks,
	   (unsigned long long)r2.st.storage_reads);
	close(rp[0]);
	node_end(&n);
	kill(hp, SIGKILL);
	waitpid(hp, &st, 0);
}

/* ---- hostile clients (issue 24) ---- */

/* A TCP connection to 127.0.0.1:port, or -1. */
static int dial(int port)
{
	struct sockaddr_in a;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		s = -1;
	}
	return s;
}

static void t_read_msg(struct coordl_peer_read *rq, uint64_t idx)
{
	memset(rq, 0, sizeof(*rq));
	rq->h.type = COORDL_PEER_READ;
	rq->h.size = sizeof(*rq);
	rq->id = 1;
	rq->idx = idx;
}

static void t_hello(struct coordl_peer_hello *he, uint32_t from, uint32_t to, uint64_t tag)
{
	memset(he, 0, sizeof(*he));
	he->h.type = COORDL_PEER_HELLO;
	he->h.size = sizeof(*he);
	he->magic = COORDL_PEER_MAGIC;
	he->version = COORDL_PEER_VERSION;
	he->from = from;
	he->to = to;
	he->tag = tag;
	t_nonce(he->nonce);
}

/*
 * The raw attacks of a process that knows the job (tag 77, node 0 at
 * port) but not the key. Each gets a fresh connection. Returns the bytes
 * of anything but a challenge it got, and counts in *closed the
 * connections the node closed on it (of *tries), within bounded waits.
 */
static size_t raw_attacks(int port, uint64_t tag, double deadline, int *closed, int *tries,
			  char *log, size_t loglen)
{
	uint8_t wrong[SYNERGY_PEER_KEY_BYTES];
	size_t leaked = 0;

	*closed = *tries = 0;
	log[0] = '\0';
	if (key_of(WRONG_HEX, wrong) < 0)
		return 1;
	for (int a = 0; a < 7; a++) {
		struct coordl_peer_hello he;
		struct coordl_peer_challenge ch;
		struct coordl_peer_proof pr;
		struct coordl_peer_read rq;
		int fd = dial(port), eof = 0, got_ch = 0;
		size_t n;

		if (fd < 0)
			continue;
		(*tries)++;
		memset(&pr, 0, sizeof(pr));
		pr.h.type = COORDL_PEER_PROOF;
		pr.h.size = sizeof(pr);
		t_read_msg(&rq, 3);
		if (a == 0) {
			/* Ask at once, no handshake. */
			wr(fd, &rq, sizeof(rq));
		} else if (a == 5) {
			/* Claim to be the node itself, or another job. */
			t_hello(&he, 0, 0, tag);
			wr(fd, &he, sizeof(he));
		} else if (a == 6) {
			t_hello(&he, 1, 0, tag + 1);
			wr(fd, &he, sizeof(he));
		} else {
			t_hello(&he, 1, 0, tag);
			wr(fd, &he, sizeof(he));
			got_ch = rd_within(fd, &ch, sizeof(ch), 5) == 0 && ch.h.type == COORDL_PEER_CHALLENGE;
			if (a == 1) {
				/* A proof made with another key. */
				t_mac(wrong, COORDL_PEER_DIR_CLIENT, 1, 0, tag, he.nonce, ch.nonce, pr.mac);
				wr(fd, &pr, sizeof(pr));
			} else if (a == 2) {
				/* The node's own MAC handed back (reflection). */
				memcpy(pr.mac, ch.mac, sizeof(pr.mac));
				wr(fd, &pr, sizeof(pr));
			} else if (a == 3) {
				/* No proof: ask straight away. */
				wr(fd, &rq, sizeof(rq));
			}
			/* a == 4: nothing more; the deadline closes it. */
			if (a != 4)
				wr(fd, &rq, sizeof(rq));
		}
		n = drain(fd, deadline, &eof);
		leaked += n;
		*closed += eof;
		snprintf(log + strlen(log), loglen - strlen(log), "%s%d:%s%zu%s", a ? " " : "", a,
			 got_ch ? "challenge+" : "", n, eof ? ",closed" : ",open");
		close(fd);
	}
	return leaked;
}

/* The TCP ports pid listens on (IPv4 and IPv6), up to max: how many. */
static int listening_ports(pid_t pid, int *ports, int max)
{
	unsigned long ino[512];
	int nino = 0, n = 0;
	char path[64];
	DIR *dp;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(dp = opendir(path)))
		return -1;
	while ((de = readdir(dp)) && nino < 512) {
		char fp[320], l[128];
		ssize_t r;
		snprintf(fp, sizeof(fp), "%s/%s", path, de->d_name);
		if ((r = readlink(fp, l, sizeof(l) - 1)) > 0) {
			l[r] = '\0';
			if (sscanf(l, "socket:[%lu]", &ino[nino]) == 1)
				nino++;
		}
	}
	closedir(dp);
	for (int v6 = 0; v6 < 2; v6++) {
		FILE *f = fopen(v6 ? "/proc/net/tcp6" : "/proc/net/tcp", "r");
		char line[512];
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f)) {
			fclose(f);
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			unsigned port, st;
			unsigned long inode;
			if (sscanf(line, "%*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*d %*d %lu",
				   &port, &st, &inode) != 3 || st != 0x0a)
				continue;
			for (int i = 0; i < nino; i++)
				if (ino[i] == inode && n < max)
					ports[n++] = (int)port;
		}
		fclose(f);
	}
	return n;
}

/* Where pid maps the file whose path ends with suffix: its start, or 0. */
static uint64_t mapping_of(pid_t pid, const char *suffix, uint64_t *len)
{
	char path[64], line[1400];
	uint64_t at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		char *nl = strchr(line, '\n'), *sl;
		if (nl)
			*nl = '\0';
		if ((sl = strchr(line, '/')) && strlen(sl) >= strlen(suffix) &&
		    strcmp(sl + strlen(sl) - strlen(suffix), suffix) == 0 &&
		    sscanf(line, "%llx-%llx", &a, &b) == 2) {
			at = a;
			*len = b - a;
			break;
		}
	}
	fclose(f);
	return at;
}

/* A hash of a file's bytes, or 0. */
static uint64_t file_hash(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char b[65536];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while ((n = fread(b, 1, sizeof(b), f)) > 0)
		h = fnv(b, n, h);
	fclose(f);
	return h;
}

#ifdef HAVE_UCX
static int u_done;
static ucs_status_t u_status;
static void u_cb(void *req, ucs_status_t st, void *arg)
{
	(void)req;
	(void)arg;
	u_status = st;
	u_done = 1;
}

/* What the listener of issue 14 sent every client with the tag: its
 * segment's address and remote key, in an active message of id 23. */
#define OLD_AM_HELLO 23
static size_t u_hello;
static ucs_status_t u_hello_cb(void *arg, const void *header, size_t header_length, void *data,
			       size_t length, const ucp_am_recv_param_t *param)
{
	(void)arg;
	(void)header;
	(void)data;
	(void)param;
	u_hello += header_length + length;
	return UCS_OK;
}

static void u_conn_cb(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	(void)arg;
	(void)ep;
	(void)st;
}

/* Wait (secs at most) for a UCP request: 1 when it completed with
 * success. */
static int u_wait(ucp_worker_h w, void *req, double secs)
{
	double until = td_now() + secs;

	if (req == NULL)
		return 1;
	if (UCS_PTR_IS_ERR(req))
		return 0;
	while (!u_done && td_now() < until)
		ucp_worker_progress(w);
	ucp_request_free(req);
	return u_done && u_status == UCS_OK;
}

/*
 * A UCX client of the old protocol: UCP through the node's port with the
 * job's tag as client id, as a peer of issue 14 connected; then a get
 * and a put of 8 bytes at the node's cache segment with a forged remote
 * key (its own). Returns how many of the three succeeded: a hello (the
 * old listener's, with its segment's address and key), the get, the put.
 */
static int ucp_attack(int port, uint64_t tag, uint64_t seg, char *why, size_t whylen)
{
	ucp_am_handler_param_t ap;
	ucp_params_t up;
	ucp_worker_params_t wp;
	ucp_context_h ctx = NULL;
	ucp_worker_h w = NULL;
	ucp_ep_h ep = NULL;
	ucp_ep_params_t epp;
	ucp_mem_map_params_t mp;
	ucp_mem_h mh = NULL;
	ucp_rkey_h rkey = NULL;
	ucp_request_param_t prm;
	struct sockaddr_in a;
	static uint8_t local[64];
	uint64_t got = 0, evil = 0x6666666666666666ULL;
	void *rk = NULL;
	size_t rkl = 0;
	int won = 0;

	snprintf(why, whylen, "UCX could not be set up here");
	memset(&up, 0, sizeof(up));
	up.field_mask = UCP_PARAM_FIELD_FEATURES;
	up.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
	memset(&wp, 0, sizeof(wp));
	wp.field_mask = UCP_WORKER_PARAM_FIELD_CLIENT_ID;
	wp.client_id = tag;
	if (ucp_init(&up, NULL, &ctx) != UCS_OK || ucp_worker_create(ctx, &wp, &w) != UCS_OK)
		goto out;
	memset(&ap, 0, sizeof(ap));
	ap.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
	ap.id = OLD_AM_HELLO;
	ap.cb = u_hello_cb;
	u_hello = 0;
	if (ucp_worker_set_am_recv_handler(w, &ap) != UCS_OK)
		goto out;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&epp, 0, sizeof(epp));
	epp.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
			 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
	epp.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID;
	epp.sockaddr.addr = (const struct sockaddr *)&a;
	epp.sockaddr.addrlen = sizeof(a);
	epp.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	epp.err_handler.cb = u_conn_cb;
	if (ucp_ep_create(w, &epp, &ep) != UCS_OK) {
		ep = NULL;
		snprintf(why, whylen, "no UCP endpoint");
		goto out;
	}
	memset(&mp, 0, sizeof(mp));
	mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
	mp.address = local;
	mp.length = sizeof(local);
	if (ucp_mem_map(ctx, &mp, &mh) != UCS_OK || ucp_rkey_pack(ctx, mh, &rk, &rkl) != UCS_OK ||
	    ucp_ep_rkey_unpack(ep, rk, &rkey) != UCS_OK) {
		snprintf(why, whylen, "no forged remote key");
		goto out;
	}
	{
		/* A second for the hello, if anything sends one. */
		double until = td_now() + 1;
		while (td_now() < until)
			ucp_worker_progress(w);
		won += u_hello > 0;
	}
	memset(&prm, 0, sizeof(prm));
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
	prm.cb.send = u_cb;
	u_done = 0;
	won += u_wait(w, ucp_get_nbx(ep, &got, sizeof(got), seg + 8192, rkey, &prm), 3);
	u_done = 0;
	won += u_wait(w, ucp_put_nbx(ep, &evil, sizeof(evil), seg + 8192, rkey, &prm), 3) &&
	       (u_done = 0, u_wait(w, ucp_ep_flush_nbx(ep, &prm), 3));
	snprintf(why, whylen, "get and put tried");
out:
	if (rkey)
		ucp_rkey_destroy(rkey);
	if (rk)
		ucp_rkey_buffer_release(rk);
	if (mh)
		ucp_mem_unmap(ctx, mh);
	if (ep) {
		memset(&prm, 0, sizeof(prm));
		prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
		prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
		void *req = ucp_ep_close_nbx(ep, &prm);
		double until = td_now() + 2;
		while (req && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS &&
		       td_now() < until)
			ucp_worker_progress(w);
		if (req && !UCS_PTR_IS_ERR(req))
			ucp_request_free(req);
	}
	if (w)
		ucp_worker_destroy(w);
	if (ctx)
		ucp_cleanup(ctx);
	return won;
}

static int t_put_done;
static void t_put_cb(uct_completion_t *c) { (void)c; t_put_done = 1; }

/*
 * A UCT client, below UCP: its own TCP interface on "lo" aimed at
 * 127.0.0.1:port, one put_zcopy of 8 bytes at addr with no key (UCX 1.13's
 * TCP transport writes where an incoming put says, whatever the receiving
 * context's features). 1 when the put reported success.
 */
static int uct_put_attack(int port, uint64_t addr)
{
	uct_component_h *comps = NULL;
	unsigned ncomp = 0;
	int won = 0;

	if (uct_query_components(&comps, &ncomp) != UCS_OK)
		return 0;
	for (unsigned c = 0; c < ncomp; c++) {
		uct_component_attr_t ca;
		uct_md_resource_desc_t mdr[8];
		uct_md_config_t *mdc = NULL;
		uct_iface_config_t *ic = NULL;
		uct_md_h md = NULL;
		ucs_async_context_t *async = NULL;
		uct_worker_h wk = NULL;
		uct_iface_h iface = NULL;
		uct_iface_params_t ip;
		uct_ep_params_t epp;
		uct_ep_h ep = NULL;
		char devaddr[256], ifaddr[64];
		static uint64_t evil = 0x7777777777777777ULL;
		uct_iov_t iov;
		uct_completion_t comp;
		ucs_status_t st;
		uint16_t np = htons((uint16_t)port);
		double until;

		memset(&ca, 0, sizeof(ca));
		ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
		if (uct_component_query(comps[c], &ca) != UCS_OK || strcmp(ca.name, "tcp") != 0 ||
		    ca.md_resource_count < 1 || ca.md_resource_count > 8)
			continue;
		ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
		ca.md_resources = mdr;
		if (uct_component_query(comps[c], &ca) != UCS_OK ||
		    uct_md_config_read(comps[c], NULL, NULL, &mdc) != UCS_OK ||
		    uct_md_open(comps[c], mdr[0].md_name, mdc, &md) != UCS_OK ||
		    ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK ||
		    uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &wk) != UCS_OK ||
		    uct_md_iface_config_read(md, "tcp", NULL, NULL, &ic) != UCS_OK)
			goto next;
		memset(&ip, 0, sizeof(ip));
		ip.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
		ip.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
		ip.mode.device.tl_name = "tcp";
		ip.mode.device.dev_name = "lo";
		if (uct_iface_open(md, wk, &ip, ic, &iface) != UCS_OK) {
			iface = NULL;
			goto next;
		}
		uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
		if (uct_iface_get_device_address(iface, (uct_device_addr_t *)devaddr) != UCS_OK ||
		    uct_iface_get_address(iface, (uct_iface_addr_t *)ifaddr) != UCS_OK)
			goto next;
		memcpy(ifaddr, &np, sizeof(np)); /* a TCP interface's address is its port */
		memset(&epp, 0, sizeof(epp));
		epp.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
				 UCT_EP_PARAM_FIELD_IFACE_ADDR;
		epp.iface = iface;
		epp.dev_addr = (uct_device_addr_t *)devaddr;
		epp.iface_addr = (uct_iface_addr_t *)ifaddr;
		if (uct_ep_create(&epp, &ep) != UCS_OK) {
			ep = NULL;
			goto next;
		}
		memset(&iov, 0, sizeof(iov));
		iov.buffer = &evil;
		iov.length = sizeof(evil);
		iov.memh = UCT_MEM_HANDLE_NULL;
		iov.count = 1;
		memset(&comp, 0, sizeof(comp));
		comp.func = t_put_cb;
		comp.count = 1;
		t_put_done = 0;
		until = td_now() + 3;
		do {
			st = uct_ep_put_zcopy(ep, &iov, 1, addr, 0, &comp);
			uct_worker_progress(wk);
		} while (st == UCS_ERR_NO_RESOURCE && td_now() < until);
		while (st == UCS_INPROGRESS && !t_put_done && td_now() < until)
			uct_worker_progress(wk);
		won = (st == UCS_OK || (st == UCS_INPROGRESS && t_put_done && comp.status == UCS_OK));
next:
		if (ep)
			uct_ep_destroy(ep);
		if (iface)
			uct_iface_close(iface);
		if (ic)
			uct_config_release(ic);
		if (wk)
			uct_worker_destroy(wk);
		if (async)
			ucs_async_context_destroy(async);
		if (md)
			uct_md_close(md);
		if (mdc)
			uct_config_release(mdc);
		break;
	}
	uct_release_component_list(comps);
	return won;
}
#endif

/*
 * Node 0 of a two-node job (a real loader, the victim) and node 1 (a real
 * loader too, its peer) run two epochs; then a process that knows the tag
 * and the ports but not the key attacks node 0, which must give it
 * nothing, keep its cache segment as it was, stay alive and serve node 1
 * as before.
 */
static void test_attack(void)
{
	struct node nd[2];
	struct rep r[2];
	char peers[128], seg_path[1300], log[400];
	int port[2] = { free_port(), free_port() }, ok0 = 1, closed, tries, ports[16], np, st;
	uint64_t before, after, seg = 0, seg_len = 0;
	size_t leaked;
	double deadline = 1.5; /* s: beyond the nodes' 0.5 s peer deadline */

	snprintf(peers, sizeof(peers), "127.0.0.1:%d,127.0.0.1:%d", port[0], port[1]);
	for (int k = 0; k < 2; k++)
		start_node(&nd[k], k, 2, peers, "77", (int)ds_bytes + 16384, 3);
	for (int k = 0; k < 2; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 0) == 0 && r[k].created && r[k].data_ok;
	for (int k = 0; k < 2; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 1) == 0 && r[k].data_ok;
	ok(ok0 && r[1].st.peer_hits > 0,
	   "issue 24: a two-node job runs, node 1 reads node 0's part from it (%llu peer hits)",
	   (unsigned long long)r[1].st.peer_hits);
	snprintf(seg_path, sizeof(seg_path), "%s/node0/coordl-%u-job_14.cache", dir, (unsigned)getuid());
	before = file_hash(seg_path);
	seg = mapping_of(nd[0].pid, "/coordl-0-job_14.cache" + 0, &seg_len);
	{
		char suffix[64];
		snprintf(suffix, sizeof(suffix), "/coordl-%u-job_14.cache", (unsigned)getuid());
		seg = mapping_of(nd[0].pid, suffix, &seg_len);
	}
	diag("node 0 (pid %d) maps its segment at %#llx (%llu bytes)", (int)nd[0].pid,
	     (unsigned long long)seg, (unsigned long long)seg_len);

	np = listening_ports(nd[0].pid, ports, 16);
	{
		char ps[160] = "";
		for (int i = 0; i < np; i++)
			snprintf(ps + strlen(ps), sizeof(ps) - strlen(ps), " %d", ports[i]);
		ok(np == 1 && ports[0] == port[0],
		   "issue 24: node 0 listens on its peer port and nothing else (ports:%s)", ps);
	}
	leaked = raw_attacks(port[0], 77, deadline, &closed, &tries, log, sizeof(log));
	ok(tries == 7 && leaked == 0,
	   "issue 24: a client without the key gets no byte but a challenge from node 0 (%zu bytes "
	   "in %d tries: %s)", leaked, tries, log);
	ok(closed == tries, "  node 0 closed every such connection within %.1f s (%d of %d)", deadline,
	   closed, tries);
#ifdef HAVE_UCX
	{
		char why[80];
		int won = ucp_attack(port[0], 77, seg, why, sizeof(why)), puts = 0;
		ok(won == 0, "issue 24: a UCX client with the tag: no hello, and its get and put at node "
		   "0's segment with a forged remote key fail (%d of 3 succeeded; %s)", won, why);
		for (int i = 0; i < np; i++)
			puts += uct_put_attack(ports[i], seg + 8192);
		ok(puts == 0, "issue 24: a UCT put at node 0's segment on each of its %d listening ports: "
		   "none succeeds (%d did)", np, puts);
	}
#else
	skip(2, "built without UCX: no UCX attacker");
#endif
	after = file_hash(seg_path);
	ok(before != 0 && before == after,
	   "issue 24: node 0's cache segment is unchanged (%#llx, %#llx)", (unsigned long long)before,
	   (unsigned long long)after);
	ok(waitpid(nd[0].pid, &st, WNOHANG) == 0 && kill(nd[0].pid, 0) == 0, "  node 0 is alive");
	ok0 = 1;
	for (int k = 0; k < 2; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 1) == 0 && r[k].data_ok;
	ok(ok0 && r[1].st.peer_hits > 0 && r[1].st.peer_fallbacks == 0 && r[1].st.storage_reads == 0,
	   "  and still serves node 1: %llu peer hits, %llu fallbacks, %llu storage reads, output as "
	   "without a cache", (unsigned long long)r[1].st.peer_hits,
	   (unsigned long long)r[1].st.peer_fallbacks, (unsigned long long)r[1].st.storage_reads);
	ok(strstr(r[0].note, "refused a peer connection"), "  node 0 says it refused: %s", r[0].note);
	for (int k = 0; k < 2; k++)
		node_end(&nd[k]);
}

/* Without a well-formed key, SYNERGY_PEERS gives no peer tier (the loader
 * runs, and says why, naming the variable). */
static void test_nokey(void)
{
	static const struct {
		const char *key, *want;
	} cases[] = {
		{ NULL, "not set" },
		{ "", "malformed" },
		{ "4D1F8A0E6C2B97D35E08F4A1C6B9207E3D5A8C1F0B6E49D27A3C5F81E0D4B96A", "malformed" },
		{ "4d1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96", "malformed" },
		{ "4d1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96a0", "malformed" },
		{ "0x1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96a", "malformed" },
	};
	char peers[64];

	snprintf(peers, sizeof(peers), "127.0.0.1:%d,127.0.0.1:%d", free_port(), free_port());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		coordl_error_t err = { "" };
		coordl_loader_t *ld;
		coordl_stats_t st;
		const char *note;
		node_env(0, peers, "77", 1 << 20);
		if (cases[i].key)
			setenv(SYNERGY_ENV_PEER_KEY, cases[i].key, 1);
		else
			unsetenv(SYNERGY_ENV_PEER_KEY);
		ld = make(0, 1, COORDL_CACHE_AUTO, &err);
		memset(&st, 0, sizeof(st));
		if (ld)
			coordl_get_stats(ld, &st);
		note = ld ? coordl_cache_note(ld) : NULL;
		ok(ld && st.peer_nodes == 0 && note && strstr(note, SYNERGY_ENV_PEER_KEY) &&
		   strstr(note, cases[i].want) && !(cases[i].key && cases[i].key[0] && strstr(note, cases[i].key)),
		   "issue 24: %s %s: the loader runs without peers, and says so: %s", SYNERGY_ENV_PEER_KEY,
		   cases[i].want, note ? note : err.text);
		coordl_destroy(ld);
	}
	unsetenv(SYNERGY_ENV_PEERS);
	unsetenv(SYNERGY_ENV_NODE_INDEX);
	unsetenv(SYNERGY_ENV_PEER_TAG);
	unsetenv(SYNERGY_ENV_PEER_KEY);
	unsetenv(SYNERGY_ENV_PEER_TIMEOUT_MS);
	unsetenv(SYNERGY_ENV_CACHE_NAME);
	unsetenv(SYNERGY_ENV_CACHE_BYTES);
	unsetenv(SYNERGY_ENV_CACHE_DIR);
}

#endif /* HAVE_PEERS */

static int count_cb(void *arg, int k, const char *host, int port)
{
	char *out = arg;
	snprintf(out + strlen(out), 256 - strlen(out), "%d=%s:%d;", k, host, port);
	return 0;
}

static void test_parse(void)
{
	static const struct {
		const char *s;
		int n;
		const char *walk;
	} cases[] = {
		{ "a:1,b:2", 2, "0=a:1;1=b:2;" },
		{ "node-01.cluster:65535", 1, "0=node-01.cluster:65535;" },
		{ "[::1]:4000,10.0.0.2:4000", 2, "0=::1:4000;1=10.0.0.2:4000;" },
		{ "", -1, NULL }, { "a", -1, NULL }, { "a:", -1, NULL }, { "a:0", -1, NULL },
		{ "a:65536", -1, NULL }, { "a:1,", -1, NULL }, { ",a:1", -1, NULL },
		{ "a b:1", -1, NULL }, { "[zz]:1", -1, NULL }, { "[::1:1", -1, NULL },
		{ "a:1x", -1, NULL }, { "a:+1", -1, NULL }, { "a/b:1", -1, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char walk[256] = "";
		int n = coordl__parse_peers(cases[i].s, count_cb, walk);
		if (cases[i].n < 0)
			ok(n == -1 && errno == EINVAL, "SYNERGY_PEERS '%s' rejected", cases[i].s);
		else
			ok(n == cases[i].n && strcmp(walk, cases[i].walk) == 0,
			   "SYNERGY_PEERS '%s': %d entries (%s)", cases[i].s, n, walk);
	}
	{
		/* 1025 entries: beyond COORDL__MAX_NODES. */
		size_t cap = 1025 * 8 + 1;
		char *s = malloc(cap);
		size_t o = 0;
		for (int i = 0; s && i < 1025; i++)
			o += (size_t)snprintf(s + o, cap - o, "%sh:%d", i ? "," : "", 1 + i % 9);
		ok(s && coordl__parse_peers(s, NULL, NULL) == -1, "1025 peers rejected");
		free(s);
	}
}

/* A variable's bad value: coordl_create fails with EINVAL naming it. */
static void env_bad(const char *ds_path, const char *var, const char *val, const char *want)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	setenv(SYNERGY_ENV_PEERS, "127.0.0.1:1,127.0.0.1:2", 1);
	setenv(SYNERGY_ENV_NODE_INDEX, "1", 1);
	if (val)
		setenv(var, val, 1);
	else
		unsetenv(var);
	coordl_config_init(&cfg);
	cfg.path = ds_path;
	cfg.out_size = 16;
	errno = 0;
	ld = coordl_create(&cfg, &err);
	ok(!ld && errno == EINVAL && strstr(err.text, want),
	   "%s=%s rejected naming %s: %s", var, val ? val : "(unset)", want, err.text);
	coordl_destroy(ld);
	unsetenv(SYNERGY_ENV_PEERS);
	unsetenv(SYNERGY_ENV_NODE_INDEX);
	unsetenv(var);
}

static void test_env(const char *ds_path)
{
	env_bad(ds_path, SYNERGY_ENV_PEERS, "127.0.0.1", SYNERGY_ENV_PEERS);
	env_bad(ds_path, SYNERGY_ENV_NODE_INDEX, NULL, SYNERGY_ENV_NODE_INDEX);
	env_bad(ds_path, SYNERGY_ENV_NODE_INDEX, "2", SYNERGY_ENV_NODE_INDEX);
	env_bad(ds_path, SYNERGY_ENV_NODE_INDEX, "-1", SYNERGY_ENV_NODE_INDEX);
	env_bad(ds_path, SYNERGY_ENV_PEER_TAG, "x1", SYNERGY_ENV_PEER_TAG);
	env_bad(ds_path, SYNERGY_ENV_PEER_TIMEOUT_MS, "0", SYNERGY_ENV_PEER_TIMEOUT_MS);
	env_bad(ds_path, SYNERGY_ENV_PEER_WIREUP, "mpi", SYNERGY_ENV_PEER_WIREUP);
}

/* SYNERGY_PEER_KEY: exactly 64 lowercase hex digits. */
static void test_key(void)
{
	static const char *bad[] = {
		"", "4d", KEY_HEX "0",
		"4D1F8A0E6C2B97D35E08F4A1C6B9207E3D5A8C1F0B6E49D27A3C5F81E0D4B96A",
		"4d1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96g",
		" 4d1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96",
		"0x1f8a0e6c2b97d35e08f4a1c6b9207e3d5a8c1f0b6e49d27a3c5f81e0d4b96a",
	};
	uint8_t key[SYNERGY_PEER_KEY_BYTES], want[SYNERGY_PEER_KEY_BYTES];

	for (int i = 0; i < SYNERGY_PEER_KEY_BYTES; i++)
		want[i] = (uint8_t)(i * 17 + 1);
	{
		char hex[SYNERGY_PEER_KEY_HEX + 1];
		for (int i = 0; i < SYNERGY_PEER_KEY_BYTES; i++)
			snprintf(hex + 2 * i, 3, "%02x", want[i]);
		ok(coordl__parse_peer_key(hex, key) == 0 && memcmp(key, want, sizeof(key)) == 0,
		   "%s of 64 lowercase hex digits decodes to its 32 bytes", SYNERGY_ENV_PEER_KEY);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(key, 0xa5, sizeof(key));
		errno = 0;
		ok(coordl__parse_peer_key(bad[i], key) == -1 && errno == EINVAL && key[0] == 0xa5,
		   "%s '%.20s...' (%zu characters) refused", SYNERGY_ENV_PEER_KEY, bad[i], strlen(bad[i]));
	}
	ok(coordl__parse_peer_key(NULL, key) == -1, "no %s refused", SYNERGY_ENV_PEER_KEY);
}

/* The raw index entry and trailer a peer reads out of a cache segment. */
static void test_segment(void)
{
	coordl_error_t err = { "" };
	coordl__cache_t *c = coordl__cache_attach(NULL, NULL, 1 << 20, 8, 4096, 1, &err);
	coordl__cache_layout_t lay;
	uint8_t item[300], raw[16];
	uint64_t off, sum;
	uint32_t len;

	for (size_t i = 0; i < sizeof(item); i++)
		item[i] = (uint8_t)(i * 7);
	ok(c && coordl__cache_put(c, 3, item, sizeof(item)) == 1 && coordl__cache_layout(c, &lay) == 0,
	   "a cache stores an item and tells its layout");
	if (!c) {
		skip(7, "no cache");
		return;
	}
	memcpy(raw, lay.base + lay.index_off + 3 * 16, 16);
	ok(coordl__cache_entry_ready(raw, lay.data_cap, &off, &len) && len == sizeof(item) &&
	   memcmp(lay.base + lay.data_off + off, item, len) == 0,
	   "the stored item's raw entry decodes to its bytes");
	memcpy(&sum, lay.base + lay.data_off + off + len, 8);
	ok(sum == coordl__cache_sum(3, item, len), "the trailer after them is its checksum");
	item[100] ^= 1;
	ok(coordl__cache_sum(3, item, len) != sum, "one flipped bit changes the checksum");
	item[100] ^= 1;
	ok(coordl__cache_sum(4, item, len) != sum && coordl__cache_sum(3, item, len - 1) != sum,
	   "so do another index and another length");
	memcpy(raw, lay.base + lay.index_off + 2 * 16, 16);
	ok(!coordl__cache_entry_ready(raw, lay.data_cap, &off, &len), "an item not stored: not ready");
	{
		uint8_t bad[16];
		uint64_t big = lay.data_cap;
		uint32_t blen = 0xffffffffu;
		memcpy(bad, lay.base + lay.index_off + 3 * 16, 16);
		memcpy(bad, &big, 8);
		ok(!coordl__cache_entry_ready(bad, lay.data_cap, &off, &len),
		   "an entry pointing past the data area is refused");
		memcpy(bad, lay.base + lay.index_off + 3 * 16, 16);
		memcpy(bad + 8, &blen, 4);
		ok(!coordl__cache_entry_ready(bad, lay.data_cap, &off, &len),
		   "an entry whose bytes would run past the data area is refused");
	}
	coordl__cache_detach(c);
}

int main(int argc, char **argv)
{
	char *d;
	long long ds_total = 0;

#if defined(__SANITIZE_THREAD__) && defined(HAVE_UCX)
	/* UCX's memory hooks (ucm patches malloc and mmap; this test links
	 * UCX for its attacker) crash under TSan's interceptors, and ucm
	 * reads its setting when the library loads: run again with them off
	 * (TCP needs no registration cache). */
	if (!getenv("UCX_MEM_EVENTS")) {
		setenv("UCX_MEM_EVENTS", "no", 1);
		execv("/proc/self/exe", argv);
	}
#endif
	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	d = td_tmpdir("peer");
	unsetenv(SYNERGY_ENV_CACHE_NAME);
	unsetenv(SYNERGY_ENV_CACHE_BYTES);
	unsetenv(SYNERGY_ENV_CACHE_GRANT);
	unsetenv(SYNERGY_ENV_PEER_WIREUP);
	test_parse();
	{
		char p[1100];
		snprintf(p, sizeof(p), "%s/ds", d);
		mkdir(p, 0700);
		if ((ds_total = td_imagefolder(p, 3, 20)) < 0)
			bail_out("cannot write the dataset");
		test_env(p);
	}
	test_key();
	test_segment();
#ifdef HAVE_PEERS
	snprintf(dir, sizeof(dir), "%s", d);
	snprintf(ds, sizeof(ds), "%s/ds", d);
	ds_bytes = ds_total;
	{
		coordl_error_t err = { "" };
		coordl__source_t *src = coordl__source_open(ds, COORDL_SOURCE_AUTO, &err);
		if (!src)
			bail_out(err.text);
		nitems = (int)coordl__source_count(src);
		coordl__source_destroy(src);
	}
	signal(SIGPIPE, SIG_IGN);
	test_nokey();
	test_job();
	test_attack();
	test_hostile(H_GARBAGE, "a TCP server that sends garbage holds node 1's port");
	test_hostile(H_NOKEY, "a process without the key holds node 1's port");
	test_hostile(H_TAG, "node 1 answers with another job's tag");
	test_hostile(H_SIG, "node 1 caches another dataset");
	test_hostile(H_SHORT, "node 1's challenge is truncated");
	test_hostile(H_LIES, "node 1's items lie");
	test_moves();
#else
	diag("built without the peer tier (libcrypto): the multi-node tests do not run");
#endif
	td_rmrf(d);
	free(d);
	(void)ds_total;
	return done_testing();
}
