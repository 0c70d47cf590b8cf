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
 * --raw measures the reference instead: the same two processes and item
 * size over one plain TCP connection on 127.0.0.1, the reader keeping 64
 * requests of 24 bytes in flight and the server answering each with a
 * 32-byte header and the item's bytes from memory (no handshake, no
 * cache, no check, one thread each): what loopback TCP does for this
 * request and reply pattern, the peer tier's ceiling.
 *
 * Prints one line: bytes, seconds, MB/s (10^6 bytes), items read and
 * fallbacks; then another: the CPU microseconds per item both processes
 * used over the whole read, warm-up included (getrusage). Exits 1 when any item did not come from the peer intact, 77
 * when libcoordl was built without the peer tier. Not a test: a
 * measurement.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
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

#define RAW_WINDOW 64 /* requests in flight in --raw, the peer tier's window */

struct opts {
	size_t items, size;
	int passes, threads, port0, port1, timeout_ms, raw;
};

struct run {
	coordl__peer_t *p;
	const uint64_t *order;
	size_t n, size;
	uint64_t next;             /* the next position a worker takes */
	uint64_t hits, bytes, bad, fallbacks, absent;
};

static uint8_t pat(size_t i, size_t k) { return (uint8_t)(i * 131 + k * 7 + 1); }

/* CPU seconds (user and system) this process has used. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* What the reader used: items read (warm-up included) and CPU seconds
 * over them. */
static size_t read_items;
static double read_cpu;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: peer-read [--items N] [--size BYTES] [--passes P] [--threads T]\n"
		"                 --port0 PORT --port1 PORT [--timeout-ms MS] [--raw]\n"
		"Node 0 (a child process) serves N items of BYTES bytes from its MinIO cache;\n"
		"node 1 reads them P times with T threads through coordl's peer tier.\n"
		"Defaults: --items 1000 --size 112640 --passes 4 --threads 2 --timeout-ms 2000.\n"
		"--raw: the same over one plain TCP connection, 64 requests in flight (the reference).\n"
		"Prints one line:\n"
		"  peer-read size S items N threads T bytes B seconds X MBps Y fallbacks F ...\n"
		"and one with the CPU microseconds per item both processes used:\n"
		"  peer-read cpu us_per_item U reader R server S\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "items", required_argument, NULL, 'n' }, { "size", required_argument, NULL, 's' },
		{ "passes", required_argument, NULL, 'p' }, { "threads", required_argument, NULL, 't' },
		{ "port0", required_argument, NULL, '0' }, { "port1", required_argument, NULL, '1' },
		{ "timeout-ms", required_argument, NULL, 'T' }, { "raw", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	o->items = 1000;
	o->size = 112640;
	o->passes = 4;
	o->threads = 2;
	o->port0 = o->port1 = 0;
	o->timeout_ms = 2000;
	o->raw = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		int64_t v;
		const char *what = NULL;
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'r':
			o->raw = 1;
			break;
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

/* Any key both ends share (the bench is its own job). */
static const char key_hex[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

static void env_for(coordl__env_t *env, const char *peers, int node, uint64_t tag, int timeout_ms)
{
	memset(env, 0, sizeof(*env));
	env->peer_key = key_hex;
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
	double cpu0;

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
	cpu0 = cpu_s();
	while (read(down, &x, 1) > 0)
		;
	/* What serving cost, for the parent to print. */
	cpu0 = cpu_s() - cpu0;
	if (write(up, &cpu0, sizeof(cpu0)) != sizeof(cpu0))
		ok = 0;
	coordl__peer_destroy(p);
	coordl__cache_detach(c);
	return ok ? 0 : 1;
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
	read_cpu = cpu_s();
	read_items = 0;
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
		read_items += r.n;
		if (started == 0 || r.hits != r.n)
			break;
	}
	read_cpu = cpu_s() - read_cpu;
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

/* ---- --raw: the same pattern over plain TCP ---- */

struct raw_req {
	uint64_t type_size, id, idx;
};

struct raw_hdr {
	uint64_t type_size, id, idx, len;
};

static int full_io(int fd, void *p, size_t n, int out)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = out ? send(fd, (char *)p + done, n - done, MSG_NOSIGNAL)
				: recv(fd, (char *)p + done, n - done, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int raw_socket(int port, int listening)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (listening ? bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0
		      : connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Node 0 of --raw: answer every request with a header and SIZE bytes. */
static int raw_serve(const struct opts *o, int up)
{
	struct raw_req rq;
	struct raw_hdr h;
	struct iovec iov[2];
	uint8_t *item = malloc(o->size), ok = 1;
	int l = raw_socket(o->port0, 1), c, one = 1;
	double cpu0 = 0;

	if (!item || l < 0 || write(up, &ok, 1) != 1 || (c = accept(l, NULL, NULL)) < 0) {
		free(item);
		return 1;
	}
	(void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (size_t k = 0; k < o->size; k++)
		item[k] = pat(0, k);
	cpu0 = cpu_s();
	while (full_io(c, &rq, sizeof(rq), 0) == 0) {
		struct msghdr mh;
		size_t total = sizeof(h) + o->size, sent = 0;
		memset(&h, 0, sizeof(h));
		h.id = rq.id;
		h.idx = rq.idx;
		h.len = o->size;
		while (sent < total) {
			ssize_t w;
			iov[0].iov_base = (uint8_t *)&h + (sent < sizeof(h) ? sent : sizeof(h));
			iov[0].iov_len = sent < sizeof(h) ? sizeof(h) - sent : 0;
			iov[1].iov_base = item + (sent > sizeof(h) ? sent - sizeof(h) : 0);
			iov[1].iov_len = o->size - (sent > sizeof(h) ? sent - sizeof(h) : 0);
			memset(&mh, 0, sizeof(mh));
			mh.msg_iov = iov;
			mh.msg_iovlen = 2;
			if ((w = sendmsg(c, &mh, MSG_NOSIGNAL)) <= 0) {
				if (w < 0 && errno == EINTR)
					continue;
				goto out;
			}
			sent += (size_t)w;
		}
	}
out:
	cpu0 = cpu_s() - cpu0;
	close(c);
	close(l);
	free(item);
	return write(up, &cpu0, sizeof(cpu0)) == sizeof(cpu0) ? 0 : 1;
}

/* Node 1 of --raw: RAW_WINDOW requests in flight, each reply's bytes
 * into one of RAW_WINDOW buffers. */
static int raw_read(const struct opts *o)
{
	size_t n = o->items * (size_t)o->passes, warm = n < WARMUP ? n : WARMUP;
	uint8_t *buf = malloc(RAW_WINDOW * o->size);
	uint64_t bytes = 0;
	double t0 = 0, t1;
	int fd = -1, rv = 1;

	for (int i = 0; i < 50 && fd < 0; i++)
		if ((fd = raw_socket(o->port0, 0)) < 0)
			usleep(20000);
	if (!buf || fd < 0) {
		fprintf(stderr, "peer-read: --raw: cannot connect\n");
		goto out;
	}
	read_cpu = cpu_s();
	for (size_t sent = 0, got = 0; got < warm + n;) {
		struct raw_hdr h;
		while (sent < warm + n && sent - got < RAW_WINDOW) {
			struct raw_req rq = { 0, sent, 2 * (sent % o->items) };
			if (full_io(fd, &rq, sizeof(rq), 1) < 0)
				goto out;
			sent++;
		}
		if (full_io(fd, &h, sizeof(h), 0) < 0 || h.id != got || h.len != o->size ||
		    full_io(fd, buf + (got % RAW_WINDOW) * o->size, o->size, 0) < 0)
			goto out;
		if (++got == warm)
			t0 = coordl__now();
		else if (got > warm)
			bytes += o->size;
	}
	t1 = coordl__now();
	read_cpu = cpu_s() - read_cpu;
	read_items = warm + n;
	printf("peer-read raw size %zu items %zu threads 1 bytes %llu seconds %.4f MBps %.1f "
	       "fallbacks 0 absent 0 bad 0\n", o->size, n, (unsigned long long)bytes, t1 - t0,
	       (double)bytes / (t1 - t0) / 1e6);
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
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
	double serve_cpu = -1;

	if (parse(argc, argv, &o) < 0)
		return 2;
#ifndef HAVE_PEERS
	fprintf(stderr, "peer-read: libcoordl was built without the peer tier (libcrypto)\n");
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
		_exit(o.raw ? raw_serve(&o, up[1]) : serve(&o, peers, tag, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	if (read(up[0], &ok, 1) != 1 || !ok) {
		fprintf(stderr, "peer-read: node 0 did not start\n");
		close(down[1]);
		waitpid(pid, &status, 0);
		return 1;
	}
	rv = o.raw ? raw_read(&o) : readall(&o, peers, tag);
	close(down[1]);
	if (read(up[0], &serve_cpu, sizeof(serve_cpu)) != sizeof(serve_cpu))
		serve_cpu = -1;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "peer-read: node 0 failed\n");
		rv = 1;
	}
	/* CPU per item of both processes over the whole read (warm-up
	 * included): less at the mercy of other load on the machine than
	 * MB/s. */
	if (rv == 0 && read_items > 0 && serve_cpu >= 0)
		printf("peer-read cpu us_per_item %.1f reader %.1f server %.1f\n",
		       (read_cpu + serve_cpu) / (double)read_items * 1e6,
		       read_cpu / (double)read_items * 1e6, serve_cpu / (double)read_items * 1e6);
	return rv;
}
