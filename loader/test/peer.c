/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peer.t: issue 14, the partitioned cache of a multi-node job (peer.h).
 *
 * Unit part: SYNERGY_PEERS parsing, the environment's errors, the cache's
 * raw index entries and checksum trailer as a peer reads them.
 *
 * Job part: three loader processes on 127.0.0.1 act as the three nodes of
 * one job (each its own cache directory and bound, SYNERGY_PEERS naming a
 * port per node, UCX_TLS=tcp so that the bytes cross sockets). Each node
 * caches only its part; after the first epoch no node reads storage, every
 * item of another node's part comes from that node, and every output byte
 * is what a loader without any cache delivers. Then one node is stopped
 * (SIGSTOP: a stall) and later killed: the others finish their epochs
 * within the deadline, reading its part from storage, with a note naming
 * it.
 *
 * Hostile part: the second node's port is held by something that is not a
 * coordl peer: a TCP server sending garbage, or a UCX peer whose hello has
 * a wrong tag, another dataset's signature or a truncated header, or whose
 * segment lies (index entries out of range, bytes that fail their check,
 * an item beyond max_item_bytes). The loader refuses each, reads from
 * storage, and delivers the same bytes. And an honest peer that moves
 * every item between two epochs: the reader, which kept the items' index
 * entries, reads them again from their new places.
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

#ifdef HAVE_UCX
#include <poll.h>
#include <ucp/api/ucp.h>

#include "coordl_peerwire.h"
#include "loader/source.h"

#define NNODES 3
#define EPOCHS 4
/* The epochs the nodes run: 2 and 3 are not each other's successors, so
 * that nothing of epoch 5 was read ahead before node 2 stopped. */
static const uint64_t epoch_no[EPOCHS] = { 0, 1, 5, 6 };
#define OUT 16
#define MAXS 256

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
	setenv("UCX_TLS", "tcp", 1);
	setenv(SYNERGY_ENV_PEERS, peers, 1);
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
 * 10 s at most, before the epoch starts).
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
		close(u[0]);
		close(d[1]);
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
	/* UCX over TCP may report the death of one peer as an error on
	 * another peer's endpoint too: give the loaders the time to notice
	 * and reconnect (0.5 s backoff) before the epoch, which waits for one
	 * peer up. */
	usleep(1500000);
	ok0 = 1;
	for (int k = 0; k < 2; k++)
		ok0 &= node_epoch(&nd[k], &r[k], 1) == 0 && r[k].data_ok;
	ok(ok0 && r[0].wall < 15 && r[1].wall < 15,
	   "issue 14: node 2 killed: nodes 0 and 1 finish the epoch after (%.2f s, %.2f s), output as without a "
	   "cache", r[0].wall, r[1].wall);
	/* Not asserted for both: after a peer's death UCX sometimes fails a
	 * live peer's endpoint too (then that node reconnects, see peer.c). */
	ok(r[0].st.storage_reads > 0 && r[1].st.storage_reads > 0 &&
	   (r[0].st.peer_hits > 0 || r[1].st.peer_hits > 0),
	   "  node 2's part from storage (%llu, %llu reads), the survivors' parts from each other "
	   "(%llu, %llu peer hits)", (unsigned long long)r[0].st.storage_reads,
	   (unsigned long long)r[1].st.storage_reads, (unsigned long long)r[0].st.peer_hits,
	   (unsigned long long)r[1].st.peer_hits);
	for (int k = 0; k < NNODES; k++)
		node_end(&nd[k]);
}

/* ---- hostile peers ---- */

enum { H_GARBAGE, H_TAG, H_SIG, H_SHORT, H_LIES, H_MOVES };

struct hostile {
	int variant;
	uint64_t tag, signature, nitems;
	uint8_t *seg;
	size_t seg_len;
	ucp_context_h ctx;
	ucp_worker_h w;
	ucp_listener_h l;
	ucp_mem_h memh;
	void *rkey;
	size_t rkey_len;
	struct coordl_peer_hello hello;
	ucp_ep_h eps[64];
	int neps;
};

static void h_send_cb(void *req, ucs_status_t st, void *arg)
{
	(void)st;
	(void)arg;
	ucp_request_free(req);
}

static void h_conn_cb(ucp_conn_request_h conn, void *arg)
{
	struct hostile *h = arg;
	ucp_ep_params_t ep;
	ucp_request_param_t prm;
	size_t hl = sizeof(h->hello);
	void *req;

	if (h->neps == 64) {
		ucp_listener_reject(h->l, conn);
		return;
	}
	memset(&ep, 0, sizeof(ep));
	ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
	ep.conn_request = conn;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	if (ucp_ep_create(h->w, &ep, &h->eps[h->neps]) != UCS_OK)
		return;
	memset(&h->hello, 0, sizeof(h->hello));
	h->hello.magic = COORDL_PEER_MAGIC;
	h->hello.version = COORDL_PEER_VERSION;
	h->hello.node = 1;
	h->hello.tag = h->variant == H_TAG ? h->tag + 1 : h->tag;
	h->hello.signature = h->variant == H_SIG ? h->signature ^ 1 : h->signature;
	h->hello.nitems = h->nitems;
	h->hello.serves = 1;
	h->hello.base = (uint64_t)(uintptr_t)h->seg;
	h->hello.index_off = 0;
	h->hello.data_off = (uint64_t)h->nitems * 16;
	h->hello.data_cap = h->seg_len - h->hello.data_off;
	h->hello.rkey_len = (uint32_t)h->rkey_len;
	if (h->variant == H_SHORT)
		hl -= 8;
	memset(&prm, 0, sizeof(prm));
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
	prm.cb.send = h_send_cb;
	prm.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
	req = ucp_am_send_nbx(h->eps[h->neps], COORDL_PEER_AM_HELLO, &h->hello, hl, h->rkey,
			      h->rkey_len, &prm);
	(void)req;
	h->neps++;
}

/*
 * A segment that lies: item i's index entry says, by i mod 4: stored far
 * beyond the data area; stored, with bytes whose trailer is wrong; stored
 * with a length beyond max_item_bytes; not stored. (Entries as cache.c
 * lays them out: off u64, len u32, state u32 with READY = 2.)
 */
static void h_lie(struct hostile *h, uint64_t max_item)
{
	uint64_t data_cap = h->seg_len - h->nitems * 16;
	for (uint64_t i = 0; i < h->nitems; i++) {
		uint8_t *e = h->seg + i * 16;
		uint64_t off = 0;
		uint32_t len = 0, state = 0;
		switch (i % 4) {
		case 0: off = data_cap + 4096; len = 100; state = 2; break;
		case 1: off = (i * 512) % (data_cap - 1024); len = 500; state = 2; break;
		case 2: off = 0; len = (uint32_t)(max_item + 1 < data_cap - 8 ? max_item + 1 : data_cap - 8);
			state = 2; break;
		default: break;
		}
		memcpy(e, &off, 8);
		memcpy(e + 8, &len, 4);
		memcpy(e + 12, &state, 4);
	}
	for (size_t b = h->nitems * 16; b < h->seg_len; b++)
		h->seg[b] = (uint8_t)(b * 131 + 7);
}

/*
 * An honest segment holding every item (bytes, trailer, READY entry) in
 * half `half` of the data area, the other half garbage: H_MOVES serves
 * the items there, then, on SIGUSR1, moves them all to the other half,
 * as an owner that dropped and stored them again would.
 */
static int h_store(struct hostile *h, coordl__source_t *src, int half)
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
		uint32_t l32, state = 2;
		if (coordl__source_fetch(src, i, &buf, &cap, &len, why, sizeof(why)) < 0 ||
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
		memcpy(e + 12, &state, 4);
		at += len + 8;
	}
	free(buf);
	return 0;
}

static volatile sig_atomic_t h_move;
static void h_on_usr1(int sig) { (void)sig; h_move = 1; }

static void hostile_main(int variant, int port, uint64_t tag, uint64_t max_item, int ready)
{
	struct hostile h;
	ucp_params_t up;
	ucp_worker_params_t wp;
	ucp_listener_params_t lp;
	ucp_mem_map_params_t mp;
	struct sockaddr_in a;
	coordl_error_t err = { "" };
	coordl__source_t *src;
	double t0 = td_now();

	alarm(60);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (variant == H_GARBAGE) {
		int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		char junk[4096];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)(i * 37 + 1);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 16) < 0)
			_exit(2);
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
	if (!(src = coordl__source_open(ds, COORDL_SOURCE_AUTO, &err)))
		_exit(2);
	h.signature = coordl__source_signature(src);
	h.nitems = coordl__source_count(src);
	h.seg_len = h.nitems * 16 + 2 * (coordl__source_bytes(src) + h.nitems * 8) + (1 << 20);
	if (!(h.seg = calloc(1, h.seg_len)))
		_exit(2);
	if (variant != H_MOVES)
		h_lie(&h, max_item);
	else if (h_store(&h, src, 0) < 0)
		_exit(2);
	signal(SIGUSR1, h_on_usr1);
	memset(&up, 0, sizeof(up));
	up.field_mask = UCP_PARAM_FIELD_FEATURES;
	up.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
	if (ucp_init(&up, NULL, &h.ctx) != UCS_OK)
		_exit(2);
	memset(&wp, 0, sizeof(wp));
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	wp.thread_mode = UCS_THREAD_MODE_SINGLE;
	if (ucp_worker_create(h.ctx, &wp, &h.w) != UCS_OK)
		_exit(2);
	memset(&mp, 0, sizeof(mp));
	mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
	mp.address = h.seg;
	mp.length = h.seg_len;
	if (ucp_mem_map(h.ctx, &mp, &h.memh) != UCS_OK ||
	    ucp_rkey_pack(h.ctx, h.memh, &h.rkey, &h.rkey_len) != UCS_OK)
		_exit(2);
	memset(&lp, 0, sizeof(lp));
	lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
	lp.sockaddr.addr = (const struct sockaddr *)&a;
	lp.sockaddr.addrlen = sizeof(a);
	lp.conn_handler.cb = h_conn_cb;
	lp.conn_handler.arg = &h;
	if (ucp_listener_create(h.w, &lp, &h.l) != UCS_OK)
		_exit(2);
	wr(ready, "r", 1);
	/* Serve (progress) until killed; move the items when asked. */
	while (td_now() - t0 < 60) {
		if (h_move) {
			h_move = 0;
			wr(ready, h_store(&h, src, 1) == 0 ? "m" : "x", 1);
		}
		if (!ucp_worker_progress(h.w))
			usleep(200);
	}
	_exit(0);
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
		hostile_main(variant, p1, 77, COORDL__MAX_ITEM_DEFAULT, rp[1]);
	}
	close(rp[1]);
	return hp;
}

static void test_hostile(int variant, const char *what)
{
	struct node n;
	struct rep r0, r1;
	char peers[128];
	int p0 = free_port(), p1 = free_port(), st, rp[2];
	char c = 0;
	pid_t hp;

	hp = start_hostile(variant, p0, p1, peers, sizeof(peers), rp);
	ok(rd(rp[0], &c, 1) == 0 && c == 'r', "%s: it listens", what);
	close(rp[0]);
	/* One rank on node 0 of 2: half the items are node 1's part. */
	start_node(&n, 0, 1, peers, "77", (int)ds_bytes + 16384, 3);
	node_epoch(&n, &r0, 0);
	usleep(300000); /* time to connect and hear the hello */
	/* The lying peer looks like one: wait for it to be connected. */
	node_epoch(&n, &r1, variant == H_LIES);
	if (variant == H_SHORT || variant == H_GARBAGE)
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
		   "  every lie refused: %llu items failed their check or the item limit, %llu entries "
		   "not usable (absent)", (unsigned long long)r1.st.peer_bad,
		   (unsigned long long)r1.st.peer_absent);
	else
		ok(r1.st.peers_up == 0 && r1.note[0], "  never taken for a peer: %s", r1.note);
	node_end(&n);
	kill(hp, SIGKILL);
	waitpid(hp, &st, 0);
}

/*
 * An owner that moves every item between two epochs (dropped and stored
 * again elsewhere): the reader, which kept each item's index entry from
 * the epoch before and reads its bytes with one get, finds bytes that fail
 * their check, reads the entry again and takes the item from its new
 * place: every item of the owner's part still from the peer, none bad,
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

#endif /* HAVE_UCX */

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

#ifdef __SANITIZE_THREAD__
	/* UCX's memory hooks (ucm patches malloc and mmap) crash under TSan's
	 * interceptors, and ucm reads its setting when the library loads:
	 * run again with them off (TCP needs no registration cache). */
	if (!getenv("UCX_MEM_EVENTS")) {
		setenv("UCX_MEM_EVENTS", "no", 1);
		execv("/proc/self/exe", argv);
	}
#endif
	(void)argc;
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
	test_segment();
#ifdef HAVE_UCX
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
	test_job();
	test_hostile(H_GARBAGE, "a TCP server that sends garbage holds node 1's port");
	test_hostile(H_TAG, "node 1 answers with another job's tag");
	test_hostile(H_SIG, "node 1 caches another dataset");
	test_hostile(H_SHORT, "node 1's hello is truncated");
	test_hostile(H_LIES, "node 1's segment lies");
	test_moves();
#else
	diag("built without UCX: the multi-node tests do not run");
#endif
	td_rmrf(d);
	free(d);
	(void)ds_total;
	return done_testing();
}
