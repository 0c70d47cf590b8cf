/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peer-read: what the partitioned cache's peer tier (loader/peer.h)
 * delivers when one process reads items out of another process's cache,
 * with nothing else in the way (no decoding, no storage): the number to
 * compare with what UCX itself does for the same item size over the same
 * transport (bench/peer-read.sh runs both, interleaved, and prints the
 * table).
 *
 * Two processes on 127.0.0.1 act as the two nodes of one job: the child
 * (node 0) fills a private MinIO cache with ITEMS items of SIZE bytes
 * (node 0's part of a dataset of 2 * ITEMS items) and serves it through
 * its peer tier, as a loader does; the parent (node 1) starts its own peer
 * tier with no cache, waits until node 0 is up, fixes the partition and
 * reads PASSES times along node 0's part with THREADS worker threads
 * calling coordl__peer_get() position by position, as the loader's
 * workers do, after an untimed warm-up of 2048 positions (as ucx_perftest
 * warms up). The peer tier's I/O thread reads ahead with its own window
 * (64 items in flight). Every item is checked (the peer tier checks its
 * checksum trailer; here its length and first and last bytes too).
 *
 * The transport is whatever UCX_* says (the script sets UCX_TLS=tcp).
 * Prints one line: bytes, seconds, MB/s (10^6 bytes), items read and
 * fallbacks. Exits 1 when any item did not come from the peer intact, 77
 * when libcoordl was built without UCX. Not a test: a measurement.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/parse.h"
#include "loader/cache.h"
#include "loader/env.h"
#include "loader/fetch.h"
#include "loader/peer.h"
#include "loader/util.h"

#define SIGNATURE 0x5065657252656164ULL /* any value both ends share */
#define WARMUP 2048 /* positions read before the timed passes */

struct opts {
	size_t items, size;
	int passes, threads, port0, port1, timeout_ms;
};

struct run {
	coordl__peer_t *p;
	const uint64_t *order;
	size_t n, size;
	uint64_t next;             /* the next position a worker takes */
	uint64_t hits, bytes, bad, fallbacks, absent;
};

static uint8_t pat(size_t i, size_t k) { return (uint8_t)(i * 131 + k * 7 + 1); }

static void usage(FILE *f)
{
	fprintf(f,
		"usage: peer-read [--items N] [--size BYTES] [--passes P] [--threads T]\n"
		"                 --port0 PORT --port1 PORT [--timeout-ms MS]\n"
		"Node 0 (a child process) serves N items of BYTES bytes from its MinIO cache;\n"
		"node 1 reads them P times with T threads through coordl's peer tier.\n"
		"Defaults: --items 1000 --size 112640 --passes 4 --threads 2 --timeout-ms 2000.\n"
		"The transport follows UCX_* (e.g. UCX_TLS=tcp). Prints one line:\n"
		"  peer-read size S items N threads T bytes B seconds X MBps Y fallbacks F\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "items", required_argument, NULL, 'n' }, { "size", required_argument, NULL, 's' },
		{ "passes", required_argument, NULL, 'p' }, { "threads", required_argument, NULL, 't' },
		{ "port0", required_argument, NULL, '0' }, { "port1", required_argument, NULL, '1' },
		{ "timeout-ms", required_argument, NULL, 'T' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	o->items = 1000;
	o->size = 112640;
	o->passes = 4;
	o->threads = 2;
	o->port0 = o->port1 = 0;
	o->timeout_ms = 2000;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		int64_t v;
		const char *what = NULL;
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'n':
			if (syn_parse_i64(optarg, 1, 1000000, &v) < 0)
				what = "--items (1..1000000)";
			o->items = (size_t)v;
			break;
		case 's':
			if (syn_parse_i64(optarg, 16, 64 << 20, &v) < 0)
				what = "--size (16..67108864)";
			o->size = (size_t)v;
			break;
		case 'p':
			if (syn_parse_i64(optarg, 1, 1000, &v) < 0)
				what = "--passes (1..1000)";
			o->passes = (int)v;
			break;
		case 't':
			if (syn_parse_i64(optarg, 1, 64, &v) < 0)
				what = "--threads (1..64)";
			o->threads = (int)v;
			break;
		case '0':
		case '1':
			if (syn_parse_i64(optarg, 1, 65535, &v) < 0)
				what = c == '0' ? "--port0 (1..65535)" : "--port1 (1..65535)";
			*(c == '0' ? &o->port0 : &o->port1) = (int)v;
			break;
		case 'T':
			if (syn_parse_i64(optarg, 1, 600000, &v) < 0)
				what = "--timeout-ms (1..600000)";
			o->timeout_ms = (int)v;
			break;
		default:
			usage(stderr);
			return -1;
		}
		if (what) {
			fprintf(stderr, "peer-read: bad %s: '%s'\n", what, optarg);
			return -1;
		}
	}
	if (optind != argc || !o->port0 || !o->port1 || o->port0 == o->port1) {
		fprintf(stderr, "peer-read: --port0 and --port1 (two different ports) are needed\n");
		usage(stderr);
		return -1;
	}
	return 0;
}

static void env_for(coordl__env_t *env, const char *peers, int node, uint64_t tag, int timeout_ms)
{
	memset(env, 0, sizeof(*env));
	env->wireup = COORDL__WIREUP_SOCKADDR;
	env->peers = peers;
	env->nnodes = 2;
	env->node_index = node;
	env->peer_tag = tag;
	env->peer_timeout_ms = timeout_ms;
	env->max_item_bytes = COORDL__MAX_ITEM_DEFAULT;
}

/* Node 0: fill the cache with the even items (its part), serve until the
 * parent closes `down`. */
static int serve(const struct opts *o, const char *peers, uint64_t tag, int up, int down)
{
	coordl_error_t err = { "" };
	coordl__peer_opts_t po;
	coordl__env_t env;
	coordl__cache_t *c;
	coordl__peer_t *p;
	uint8_t *buf, ok = 1;
	size_t nall = 2 * o->items;
	char why[256], x;
	uint64_t bound = (uint64_t)o->items * (o->size + 64) + (64u << 20);

	if (!(buf = malloc(o->size)))
		return 1;
	if (!(c = coordl__cache_attach(NULL, NULL, bound, nall, (uint64_t)nall * o->size, SIGNATURE,
				       &err))) {
		fprintf(stderr, "peer-read: node 0's cache: %s\n", err.text);
		free(buf);
		return 1;
	}
	for (size_t i = 0; i < nall; i += 2) {
		for (size_t k = 0; k < o->size; k++)
			buf[k] = pat(i, k);
		if (coordl__cache_put(c, i, buf, o->size) != 1) {
			fprintf(stderr, "peer-read: node 0's cache took only %zu items\n", i / 2);
			coordl__cache_detach(c);
			free(buf);
			return 1;
		}
	}
	free(buf);
	env_for(&env, peers, 0, tag, o->timeout_ms);
	memset(&po, 0, sizeof(po));
	po.env = &env;
	po.rank = 0;
	po.world = 2;
	po.signature = SIGNATURE;
	po.nitems = nall;
	po.per_rank = o->items;
	po.max_item = (uint64_t)env.max_item_bytes;
	if (!(p = coordl__peer_create(c, &po, why, sizeof(why)))) {
		fprintf(stderr, "peer-read: node 0's peer tier: %s\n", why[0] ? why : "not started");
		coordl__cache_detach(c);
		return 1;
	}
	if (write(up, &ok, 1) != 1) {
		coordl__peer_destroy(p);
		coordl__cache_detach(c);
		return 1;
	}
	while (read(down, &x, 1) > 0)
		;
	coordl__peer_destroy(p);
	coordl__cache_detach(c);
	return 0;
}

static void *worker(void *arg)
{
	struct run *r = arg;
	uint8_t *buf = NULL;
	size_t cap = 0;

	for (;;) {
		uint64_t pos = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
		size_t idx, len = 0;
		int rv;
		if (pos >= r->n)
			break;
		idx = (size_t)r->order[pos];
		rv = coordl__peer_get(r->p, pos, idx, &buf, &cap, &len);
		if (rv == COORDL__PEER_HIT && len == r->size && buf[0] == pat(idx, 0) &&
		    buf[len - 1] == pat(idx, len - 1)) {
			__atomic_add_fetch(&r->hits, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&r->bytes, len, __ATOMIC_RELAXED);
		} else if (rv == COORDL__PEER_HIT) {
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
		} else if (rv == COORDL__PEER_ABSENT) {
			__atomic_add_fetch(&r->absent, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&r->fallbacks, 1, __ATOMIC_RELAXED);
		}
	}
	free(buf);
	return NULL;
}

/* Node 1: read node 0's part PASSES times through the peer tier. */
static int readall(const struct opts *o, const char *peers, uint64_t tag)
{
	coordl__peer_opts_t po;
	coordl__env_t env;
	coordl__peer_t *p;
	coordl_stats_t st;
	pthread_t *thr = NULL;
	uint64_t *perm = NULL, *order = NULL;
	struct run r;
	size_t nall = 2 * o->items, n = o->items * (size_t)o->passes;
	char why[256];
	double t0, t1, until;
	int rv = 1, started = 0;

	env_for(&env, peers, 1, tag, o->timeout_ms);
	memset(&po, 0, sizeof(po));
	po.env = &env;
	po.rank = 1;
	po.world = 2;
	po.signature = SIGNATURE;
	po.nitems = nall;
	po.per_rank = n;
	po.max_item = (uint64_t)env.max_item_bytes;
	if (!(perm = malloc(nall * sizeof(*perm))) || !(order = malloc(n * sizeof(*order))) ||
	    !(thr = calloc((size_t)o->threads, sizeof(*thr)))) {
		fprintf(stderr, "peer-read: out of memory\n");
		goto out;
	}
	if (!(p = coordl__peer_create(NULL, &po, why, sizeof(why)))) {
		fprintf(stderr, "peer-read: node 1's peer tier: %s\n", why[0] ? why : "not started");
		goto out;
	}
	/* The fill epoch's order is the identity: with 2 ranks on 2 nodes,
	 * position p belongs to node p mod 2, so node 0 owns the even items. */
	for (size_t i = 0; i < nall; i++)
		perm[i] = i;
	coordl__peer_fix(p, perm, nall);
	for (size_t k = 0; k < n; k++)
		order[k] = 2 * (k % o->items);
	until = coordl__now() + 10.0;
	do {
		memset(&st, 0, sizeof(st));
		coordl__peer_stats(p, &st);
		if (st.peers_up == 1)
			break;
		usleep(10000);
	} while (coordl__now() < until);
	if (st.peers_up != 1) {
		const char *note = coordl__peer_note(p);
		fprintf(stderr, "peer-read: node 0 did not come up in 10 s%s%s\n", note ? ": " : "",
			note ? note : "");
		coordl__peer_destroy(p);
		goto out;
	}
	/* A warm-up, as ucx_perftest's: the first reads into the read-ahead
	 * entries' buffers fault their pages in (a loader pays that once,
	 * not per epoch). Then the timed passes. */
	for (int timed = 0; timed < 2; timed++) {
		memset(&r, 0, sizeof(r));
		r.p = p;
		r.order = order;
		r.n = timed ? n : (n < WARMUP ? n : WARMUP);
		r.size = o->size;
		t0 = coordl__now();
		coordl__peer_restart(p, order, r.n, 0);
		for (started = 0; started < o->threads; started++)
			if (pthread_create(&thr[started], NULL, worker, &r) != 0)
				break;
		for (int i = 0; i < started; i++)
			pthread_join(thr[i], NULL);
		t1 = coordl__now();
		if (started == 0 || r.hits != r.n)
			break;
	}
	coordl__peer_destroy(p);
	if (started == 0) {
		fprintf(stderr, "peer-read: no worker thread\n");
		goto out;
	}
	printf("peer-read size %zu items %zu threads %d bytes %llu seconds %.4f MBps %.1f "
	       "fallbacks %llu absent %llu bad %llu\n",
	       o->size, n, started, (unsigned long long)r.bytes, t1 - t0,
	       (double)r.bytes / (t1 - t0) / 1e6, (unsigned long long)r.fallbacks,
	       (unsigned long long)r.absent, (unsigned long long)r.bad);
	rv = r.hits == r.n ? 0 : 1;
	if (rv)
		fprintf(stderr, "peer-read: only %llu of %zu items came from the peer intact\n",
			(unsigned long long)r.hits, r.n);
out:
	free(thr);
	free(order);
	free(perm);
	return rv;
}

int main(int argc, char **argv)
{
	struct opts o;
	char peers[64];
	int up[2], down[2], rv, status;
	uint64_t tag;
	pid_t pid;
	uint8_t ok = 0;

	if (parse(argc, argv, &o) < 0)
		return 2;
#ifndef HAVE_UCX
	fprintf(stderr, "peer-read: libcoordl was built without UCX\n");
	return 77;
#endif
	snprintf(peers, sizeof(peers), "127.0.0.1:%d,127.0.0.1:%d", o.port0, o.port1);
	tag = ((uint64_t)getpid() << 16) | 1;
	if (pipe(up) < 0 || pipe(down) < 0) {
		perror("peer-read: pipe");
		return 1;
	}
	fflush(NULL);
	if ((pid = fork()) < 0) {
		perror("peer-read: fork");
		return 1;
	}
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(serve(&o, peers, tag, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	if (read(up[0], &ok, 1) != 1 || !ok) {
		fprintf(stderr, "peer-read: node 0 did not start\n");
		close(down[1]);
		waitpid(pid, &status, 0);
		return 1;
	}
	rv = readall(&o, peers, tag);
	close(down[1]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "peer-read: node 0 failed\n");
		rv = 1;
	}
	return rv;
}
