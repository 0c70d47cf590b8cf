/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peer.c: the partitioned cache's peer tier (see peer.h).
 *
 * One I/O thread per loader owns every socket: the listener, one
 * connection to each other node (a client: this node reads through it)
 * and the connections other nodes opened to the listener (served: this
 * node answers their reads out of its cache). It sleeps in epoll_wait()
 * without the mutex and does its bookkeeping under it: the workers that
 * decode share a fixed table of read entries with it; a worker that wants
 * a read started marks an entry NEW and wakes the thread through an
 * eventfd, then waits on the condition variable. Sockets are non-blocking,
 * so nothing the thread does under the mutex waits for the network; the
 * copies of an item's bytes (into a SENT entry's buffer, which only this
 * thread touches, and out of the cache) are made without it.
 *
 * The thread only moves bytes: the worker that takes an item checks its
 * trailer (checked(), without the mutex), so that checks run side by side
 * in the workers instead of one after another in the thread that keeps
 * the reads going (measured: bench/peer-read.sh, BENCHMARKS.md).
 *
 * Entries: NENT read-ahead entries, direct-mapped by position (position p
 * uses entry p % NENT: the read-ahead stops at an entry still holding an
 * older position), and NURG for reads outside the read-ahead. Life:
 * FREE -> NEW -> SENT (its READ is queued on the owner's connection; the
 * id in it names the entry and its issue) -> DONE (the bytes and the
 * trailer are in the entry's buffer), ABSENT (the owner does not cache
 * the item) or FAIL; a worker takes a terminal entry and frees it. An
 * entry nobody will take (an epoch restarted, a worker gave up) is an
 * orphan: freed when its reply arrives or its connection closes, as only
 * then does no socket read write into its buffer.
 *
 * Nodes (as a client): SELF (this one), DOWN (retry at retry_at),
 * CONNECTING (TCP connection and handshake under way), UP (authenticated:
 * reads go to it), OFF (never: another job's node or dataset, nothing
 * served). A failure, a stall or a broken message closes the connection,
 * which fails the reads in flight at once, and the node goes DOWN with a
 * doubling backoff.
 *
 * Security (coordl(3), SECURITY). Nothing is served, and nothing but the
 * handshake is read, before the other end proved that it holds the
 * step's key (SYNERGY_PEER_KEY), by HMAC-SHA256 over both ends' fresh
 * nonces, the direction, the node indices, the tag and the version
 * (coordl_peerwire.h). The server proves itself first, so a process that
 * holds a node's port without the key is told nothing, and the client's
 * MAC is never handed to it. A served connection that is not
 * authenticated within the peer deadline is closed, and so is one whose
 * message is not exactly what its state allows; every field is bounded
 * before use. This transport is our own on purpose: over TCP, UCX 1.13
 * writes wherever an incoming message of its TCP transport says, whatever
 * the context's features (BENCHMARKS.md, issue 24), so no process that
 * other users can connect to may run a UCX worker. The serving side reads
 * the item out of its own cache (coordl__cache_get) and sends its bytes:
 * no peer ever addresses this process's memory.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordl_peerwire.h"
#include "synergy_env.h"
#include "loader/peer.h"
#include "loader/util.h"

#ifdef HAVE_PEERS

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#ifdef HAVE_PMIX
#include <pmix.h>
#endif

#define NENT 1024                  /* read-ahead entries */
#define NURG 128                   /* entries for reads outside the read-ahead */
#define NSLOT (NENT + NURG)
/* Read-ahead items in flight at once (bench/peer-read.sh: 64 keeps the
 * transport busy for ~110 KB items). */
#define WINDOW 64
#define HELD_BUDGET (64ULL << 20)  /* bytes read ahead and not yet taken */
#define FIRST_RETRY 0.2            /* s between attempts to reach a node never reached */
#define FIRST_RETRY_MAX 2.0        /* s, the longest of those */
#define BACKOFF_MIN 0.5            /* s before the first reconnection */
#define BACKOFF_MAX 8.0
#define LISTEN_RETRY 2.0           /* s between attempts to listen */
#define MAX_SERVED 1024            /* connections to our listener at once */
#define MAX_HANDSHAKES 64          /* of those, not authenticated yet */
#define PMIX_FENCE_S 30
#define NOWNER 0xffff              /* owner not known yet */
#define CLIENT_RBUF 16384          /* receive staging of a client connection */
#define SERVED_RBUF 4096           /* and of a served one (READs are 24 bytes) */
#define DIRECT_MIN 4096            /* payload left that is received straight into the entry */
#define NEVENTS 64
#define SCRATCH 65536              /* where a payload nobody takes is received */

enum { E_FREE = 0, E_NEW, E_SENT, E_DONE, E_ABSENT, E_FAIL };
enum { N_SELF = 0, N_DOWN, N_CONNECTING, N_UP, N_OFF };
/* Connection states: a client's (C_*) and a served one's (S_*). */
enum { C_CONNECT = 1, C_CHALLENGE, C_WELCOME, C_UP, S_HELLO, S_PROOF, S_UP };

/* epoll tags: the eventfd, the listener, node k's connection, served i. */
#define TAG_WAKE 0
#define TAG_LISTEN 1
#define TAG_NODE 2

struct ent {
	int state;
	int ra;                  /* a read-ahead entry (counted in the window) */
	int orphan;              /* nobody will take it */
	int waiters;
	uint32_t seq;            /* issues of this entry: the upper half of its READ's id */
	uint64_t gen, pos;
	size_t idx;
	int node;
	double t_new, t_issue;
	uint32_t len;
	uint8_t *buf;
	size_t cap;
};

struct req {                     /* a READ a served connection has not answered yet */
	uint64_t id, idx;
};

struct conn {
	int fd;                  /* -1: none */
	int state;
	int node;                /* client: the node it reaches; served: the node it says it is */
	int out;                 /* EPOLLOUT is asked for */
	double t_open;
	uint8_t nonce_c[COORDL_PEER_NONCE], nonce_s[COORDL_PEER_NONCE];
	/* Receiving: staged bytes rbuf[rpos..rlen), then an ITEM's payload
	 * straight into its entry (pe; pdiscard: into nothing). */
	uint8_t *rbuf;
	size_t rcap, rpos, rlen;
	struct ent *pe;
	size_t pneed, pgot;
	int pdiscard;            /* 1: an item beyond max_item, 2: no memory for it */
	/* Sending: tbuf[tpos..tlen). */
	uint8_t *tbuf;
	size_t tcap, tpos, tlen;
	/* Served: READs not answered yet (a ring). */
	struct req *rq;
	int rq_head, rq_n;
	char who[INET6_ADDRSTRLEN + 8];  /* served: the client's address, for notes */
};

struct cand {                    /* pmix: an address of a process that serves a node */
	struct sockaddr_storage sa;
	socklen_t salen;
};

struct node {
	int state;
	char host[COORDL__HOST_MAX + 1];
	int port;
	struct sockaddr_storage sa;
	socklen_t salen;
	struct conn c;
	double retry_at, backoff, t_connect;
	int busy;                /* reads in flight */
	int was_up;              /* it has been UP once */
	struct cand *cand;       /* pmix */
	int ncand, cur;
};

struct coordl__peer {
	/* Set at create, read-only after. */
	int nnodes, me, wireup;
	uint64_t tag, signature;
	size_t nitems, per_rank;
	int rank, world;
	double timeout;
	uint64_t max_item;
	coordl__cache_t *cache;
	coordl__cache_layout_t lay;
	int serves;              /* this process serves its node's part */
	uint8_t key[SYNERGY_PEER_KEY_BYTES];

	int epfd, wakefd, lfd;   /* epoll, eventfd, listener (-1: none) */
	double listen_at;
	int listen_noted;
#ifdef HAVE_PMIX
	int pmix_inited;
#endif

	pthread_t thr;
	int thr_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;

	struct node *nodes;
	uint16_t *owner;
	int fixed, disabled;
	uint64_t *order;
	size_t n;
	uint64_t base, ra_next, gen;
	int ra_busy;
	uint64_t held;
	struct ent ent[NSLOT];
	struct conn served[MAX_SERVED];
	int served_hi;           /* 1 + the highest served slot in use (loops stop there) */
	uint8_t *scratch;        /* where a payload nobody takes is received */

	/* Statistics of the epoch (under mu); refused: over the loader's life. */
	uint64_t hits, bytes, absent, fallbacks, bad, stalls, failures, refused;
	char note[256];
	int note_node;           /* the node the note is about, or -1 */
	char note_out[256];      /* what coordl__peer_note() returned last */
};

static void set_note(struct coordl__peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_note(struct coordl__peer *p, const char *fmt, ...)
{
	va_list ap;

	if (p->note[0])
		return;
	va_start(ap, fmt);
	vsnprintf(p->note, sizeof(p->note), fmt, ap);
	va_end(ap);
}

static void wake(struct coordl__peer *p)
{
	uint64_t one = 1;
	ssize_t r = write(p->wakefd, &one, sizeof(one));
	(void)r;
}

static int terminal(int st)
{
	return st == E_DONE || st == E_ABSENT || st == E_FAIL;
}

/* Leave NEW or SENT for a terminal state (or FREE for an orphan). mu held. */
static void finish(struct coordl__peer *p, struct ent *e, int st)
{
	if (e->ra)
		p->ra_busy--;
	if (e->orphan) {
		e->state = E_FREE;
		return;
	}
	e->state = st;
	if (st == E_DONE && e->ra)
		p->held += e->len;
	pthread_cond_broadcast(&p->cv);
}

/* ---- the handshake's cryptography ---- */

static int nonce(uint8_t *out)
{
	size_t got = 0;

	while (got < COORDL_PEER_NONCE) {
		ssize_t r = getrandom(out + got, COORDL_PEER_NONCE - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

int coordl__peer_mac(const uint8_t *key, uint64_t tag, uint32_t dir, uint32_t client,
		     uint32_t server, const uint8_t *nc, const uint8_t *ns, uint8_t *out)
{
	struct coordl_peer_transcript t;
	unsigned int len = COORDL_PEER_MAC;

	memset(&t, 0, sizeof(t));
	memcpy(t.label, "coordl peer mac", 15);
	t.version = COORDL_PEER_VERSION;
	t.dir = dir;
	t.client = client;
	t.server = server;
	t.tag = tag;
	memcpy(t.nonce_c, nc, COORDL_PEER_NONCE);
	memcpy(t.nonce_s, ns, COORDL_PEER_NONCE);
	if (!HMAC(EVP_sha256(), key, SYNERGY_PEER_KEY_BYTES, (const unsigned char *)&t, sizeof(t),
		  out, &len) || len != COORDL_PEER_MAC)
		return -1;
	return 0;
}

static int peer_mac(const struct coordl__peer *p, uint32_t dir, uint32_t client, uint32_t server,
		    const uint8_t *nc, const uint8_t *ns, uint8_t *out)
{
	return coordl__peer_mac(p->key, p->tag, dir, client, server, nc, ns, out);
}

/* Does mac prove the key for that transcript? In constant time. */
static int mac_ok(const struct coordl__peer *p, uint32_t dir, uint32_t client, uint32_t server,
		  const uint8_t *nc, const uint8_t *ns, const uint8_t *mac)
{
	uint8_t want[COORDL_PEER_MAC];
	int ok;

	ok = peer_mac(p, dir, client, server, nc, ns, want) == 0 &&
	     CRYPTO_memcmp(want, mac, COORDL_PEER_MAC) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

/* ---- connections ---- */

static void conn_init(struct conn *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Forget a connection's socket and what was in flight on it (its
 * buffers stay for the next one). The caller fails its reads. */
static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
	c->state = 0;
	c->out = 0;
	c->rpos = c->rlen = 0;
	c->tpos = c->tlen = 0;
	c->pe = NULL;
	c->pneed = c->pgot = 0;
	c->pdiscard = 0;
	c->rq_head = c->rq_n = 0;
}

static void conn_free(struct conn *c)
{
	conn_close(c);
	free(c->rbuf);
	free(c->tbuf);
	free(c->rq);
	conn_init(c);
}

static int watch(struct coordl__peer *p, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.u64 = tag;
	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Ask for EPOLLOUT exactly while the connection has bytes to send (or a
 * connect() in progress). */
static void want_out(struct coordl__peer *p, struct conn *c, uint64_t tag, int on)
{
	struct epoll_event ev;

	if (c->fd < 0 || c->out == on)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.u64 = tag;
	if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->out = on;
}

/* Room for n more bytes to send. 0, or -1 (out of memory). */
static int tx_room(struct conn *c, size_t n)
{
	if (c->tpos == c->tlen)
		c->tpos = c->tlen = 0;
	if (c->tlen + n > c->tcap && c->tpos > 0) {
		memmove(c->tbuf, c->tbuf + c->tpos, c->tlen - c->tpos);
		c->tlen -= c->tpos;
		c->tpos = 0;
	}
	if (c->tlen + n > c->tcap) {
		size_t cap = c->tcap ? c->tcap : 4096;
		uint8_t *b;
		while (cap < c->tlen + n)
			cap *= 2;
		if (!(b = realloc(c->tbuf, cap)))
			return -1;
		c->tbuf = b;
		c->tcap = cap;
	}
	return 0;
}

static int tx_put(struct conn *c, const void *m, size_t n)
{
	if (tx_room(c, n) < 0)
		return -1;
	memcpy(c->tbuf + c->tlen, m, n);
	c->tlen += n;
	return 0;
}

/* Send what is queued. 0 (all sent or the socket is full), -1 (the
 * connection failed). */
static int tx_flush(struct conn *c)
{
	while (c->tpos < c->tlen) {
		ssize_t r = send(c->fd, c->tbuf + c->tpos, c->tlen - c->tpos, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (r <= 0)
			return -1;
		c->tpos += (size_t)r;
	}
	c->tpos = c->tlen = 0;
	return 0;
}

/* Requests are small and answered at once: no Nagle delay. A peer whose
 * node died without a word is found out by keepalives (a served
 * connection has no deadline of its own once authenticated). */
static void sock_opts(int fd)
{
	int one = 1, idle = 60, intvl = 10, cnt = 3;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* ---- the client side: connections to the other nodes ---- */

/* Cut node k off: its reads fail, it is retried after a backoff. */
static void node_down(struct coordl__peer *p, int k, double now, const char *why)
{
	struct node *n = &p->nodes[k];

	if (n->state != N_UP && n->state != N_CONNECTING)
		return;
	if (!p->note[0])
		p->note_node = k;
	set_note(p, "peer node %d (%s:%d): %s; its part is read from storage until it is back", k,
		 n->host, n->port, why);
	conn_close(&n->c);
	/* Closed: no socket read writes into the entries any more. */
	for (int i = 0; i < NSLOT; i++) {
		struct ent *e = &p->ent[i];
		if (e->state == E_SENT && e->node == k)
			finish(p, e, E_FAIL);
	}
	n->busy = 0;
	__atomic_store_n(&n->state, N_DOWN, __ATOMIC_RELAXED);
	if (!n->was_up) {
		/* Never reached yet: the nodes of a job start within moments
		 * of each other, so keep trying often, backing off to
		 * FIRST_RETRY_MAX for a node that does not answer. */
		n->backoff = n->backoff < FIRST_RETRY ? FIRST_RETRY : n->backoff * 2;
		if (n->backoff > FIRST_RETRY_MAX)
			n->backoff = FIRST_RETRY_MAX;
	} else {
		n->backoff = n->backoff < BACKOFF_MIN ? BACKOFF_MIN : n->backoff * 2;
		if (n->backoff > BACKOFF_MAX)
			n->backoff = BACKOFF_MAX;
	}
	n->retry_at = now + n->backoff;
	/* pmix: the next address or process of that node, if it has several. */
	if (n->ncand > 1)
		n->cur = (n->cur + 1) % n->ncand;
	p->failures++;
}

/* Node k is not this job's node or serves nothing: never used again. */
static void node_off(struct coordl__peer *p, int k)
{
	struct node *n = &p->nodes[k];

	conn_close(&n->c);
	n->busy = 0;
	__atomic_store_n(&n->state, N_OFF, __ATOMIC_RELAXED);
}

/* Node k proved it holds the key and caches our dataset: reads go to it,
 * and a note about its failure (at start, nodes often try each other
 * before all of them listen) is dropped. */
static void node_up(struct coordl__peer *p, int k)
{
	struct node *n = &p->nodes[k];

	__atomic_store_n(&n->state, N_UP, __ATOMIC_RELAXED);
	n->was_up = 1;
	n->backoff = 0;
	if (p->note_node == k) {
		p->note[0] = '\0';
		p->note_node = -1;
	}
}

static void connect_node(struct coordl__peer *p, int k, double now)
{
	struct node *n = &p->nodes[k];
	const struct sockaddr_storage *sa = &n->sa;
	socklen_t salen = n->salen;
	int fd;

	if (p->wireup == COORDL__WIREUP_PMIX) {
		sa = &n->cand[n->cur].sa;
		salen = n->cand[n->cur].salen;
	}
	__atomic_store_n(&n->state, N_CONNECTING, __ATOMIC_RELAXED); /* so that node_down takes it */
	n->t_connect = now;
	if (!n->c.rbuf && !(n->c.rbuf = malloc(CLIENT_RBUF))) {
		node_down(p, k, now, "out of memory");
		return;
	}
	n->c.rcap = CLIENT_RBUF;
	if ((fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		node_down(p, k, now, strerror(errno));
		return;
	}
	sock_opts(fd);
	n->c.fd = fd;
	n->c.node = k;
	n->c.state = C_CONNECT;
	n->c.out = 1;
	if ((connect(fd, (const struct sockaddr *)sa, salen) < 0 && errno != EINPROGRESS) ||
	    watch(p, fd, TAG_NODE + (uint64_t)k, EPOLLIN | EPOLLOUT) < 0) {
		node_down(p, k, now, strerror(errno));
		return;
	}
}

/* The connection to node k is open: say who we are, with a fresh nonce. */
static int client_hello(struct coordl__peer *p, int k)
{
	struct conn *c = &p->nodes[k].c;
	struct coordl_peer_hello h;

	memset(&h, 0, sizeof(h));
	h.h.type = COORDL_PEER_HELLO;
	h.h.size = sizeof(h);
	h.magic = COORDL_PEER_MAGIC;
	h.version = COORDL_PEER_VERSION;
	h.from = (uint32_t)p->me;
	h.to = (uint32_t)k;
	h.tag = p->tag;
	if (nonce(c->nonce_c) < 0)
		return -1;
	memcpy(h.nonce, c->nonce_c, sizeof(h.nonce));
	c->state = C_CHALLENGE;
	return tx_put(c, &h, sizeof(h));
}

/* Node k's listener answered the hello. Only a MAC made with the key
 * gets our proof: a process that holds the port without the key learns
 * nothing it could use elsewhere. */
static int on_challenge(struct coordl__peer *p, int k, const struct coordl_peer_challenge *m,
			double now)
{
	struct node *n = &p->nodes[k];
	struct coordl_peer_proof pr;

	if (p->note_node == k) {
		/* What it says replaces a failure noted while it started. */
		p->note[0] = '\0';
		p->note_node = -1;
	}
	if (m->magic != COORDL_PEER_MAGIC || m->version != COORDL_PEER_VERSION ||
	    m->node != (uint32_t)k || m->tag != p->tag) {
		set_note(p, "peer node %d (%s:%d) is not this job's node %d: not used", k, n->host,
			 n->port, k);
		node_off(p, k);
		return -1;
	}
	memcpy(n->c.nonce_s, m->nonce, COORDL_PEER_NONCE);
	if (!mac_ok(p, COORDL_PEER_DIR_SERVER, (uint32_t)p->me, (uint32_t)k, n->c.nonce_c,
		    n->c.nonce_s, m->mac)) {
		node_down(p, k, now, "it did not prove that it holds the step's key ("
			  SYNERGY_ENV_PEER_KEY "): nothing sent to it");
		return -1;
	}
	memset(&pr, 0, sizeof(pr));
	pr.h.type = COORDL_PEER_PROOF;
	pr.h.size = sizeof(pr);
	if (peer_mac(p, COORDL_PEER_DIR_CLIENT, (uint32_t)p->me, (uint32_t)k, n->c.nonce_c,
		     n->c.nonce_s, pr.mac) < 0 ||
	    tx_put(&n->c, &pr, sizeof(pr)) < 0) {
		OPENSSL_cleanse(&pr, sizeof(pr));
		node_down(p, k, now, "the handshake cannot be made (libcrypto or memory)");
		return -1;
	}
	OPENSSL_cleanse(&pr, sizeof(pr));
	n->c.state = C_WELCOME;
	return 0;
}

static int on_welcome(struct coordl__peer *p, int k, const struct coordl_peer_welcome *m)
{
	struct node *n = &p->nodes[k];

	if (m->signature != p->signature || m->nitems != p->nitems) {
		set_note(p, "peer node %d (%s:%d) caches another dataset (%llu items): not used", k,
			 n->host, n->port, (unsigned long long)m->nitems);
		node_off(p, k);
		return -1;
	}
	if (!m->serves) {
		/* The node caches nothing: its part is always read from storage. */
		node_off(p, k);
		return -1;
	}
	n->c.state = C_UP;
	node_up(p, k);
	return 0;
}

/* An ITEM for one of our READs: where its payload goes. */
static int on_item(struct coordl__peer *p, int k, const struct coordl_peer_item *m, double now)
{
	struct node *n = &p->nodes[k];
	uint64_t slot = m->id & 0xffffffffu;
	struct ent *e;

	if (slot >= NSLOT || (e = &p->ent[slot])->state != E_SENT || e->node != k ||
	    e->seq != (uint32_t)(m->id >> 32) || e->idx != m->idx || m->stored > 1 ||
	    (!m->stored && m->len)) {
		node_down(p, k, now, "it answered a read it was not asked");
		return -1;
	}
	n->busy--;
	if (!m->stored) {
		finish(p, e, E_ABSENT);
		return 0;
	}
	n->c.pneed = (size_t)m->len + COORDL__CACHE_TRAILER;
	n->c.pgot = 0;
	n->c.pe = e;
	n->c.pdiscard = 0;
	if (m->len == 0 || m->len > p->max_item) {
		/* Not an item we would take: read past it. */
		n->c.pdiscard = 1;
		return 0;
	}
	if (e->cap < n->c.pneed) {
		uint8_t *b = realloc(e->buf, n->c.pneed);
		if (!b) {
			n->c.pdiscard = 2;
			return 0;
		}
		e->buf = b;
		e->cap = n->c.pneed;
	}
	e->len = m->len;
	return 0;
}

/* The payload being received is complete. */
static void payload_done(struct coordl__peer *p, struct conn *c)
{
	struct ent *e = c->pe;

	c->pe = NULL;
	if (c->pdiscard) {
		if (c->pdiscard == 1)
			p->bad++;
		finish(p, e, E_FAIL);
	} else {
		/* The bytes and the trailer are in: the worker that takes
		 * them checks the trailer (checked()), so that this thread
		 * only moves bytes. */
		finish(p, e, E_DONE);
	}
	c->pdiscard = 0;
}

/* ---- the server side: connections to our listener ---- */

static void served_close(struct coordl__peer *p, struct conn *c, const char *refused)
{
	if (refused) {
		p->refused++;
		set_note(p, "refused a peer connection from %s: %s", c->who, refused);
	}
	conn_close(c);
	free(c->tbuf);
	c->tbuf = NULL;
	c->tcap = 0;
	while (p->served_hi > 0 && p->served[p->served_hi - 1].fd < 0)
		p->served_hi--;
}

/* Is this address one of the job's nodes'? (sockaddr wire-up) */
static int known_peer(const struct coordl__peer *p, const struct sockaddr_storage *a)
{
	for (int k = 0; k < p->nnodes; k++) {
		const struct sockaddr_storage *b = &p->nodes[k].sa;
		if (a->ss_family != b->ss_family)
			continue;
		if (a->ss_family == AF_INET &&
		    ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			    ((const struct sockaddr_in *)b)->sin_addr.s_addr)
			return 1;
		if (a->ss_family == AF_INET6 &&
		    memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			   &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0)
			return 1;
	}
	return 0;
}

static void addr_str(const struct sockaddr_storage *a, char *out, size_t len)
{
	char h[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (a->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, h, sizeof(h));
		port = ntohs(((const struct sockaddr_in *)a)->sin_port);
	} else if (a->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, h, sizeof(h));
		port = ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	}
	snprintf(out, len, "%s:%d", h, port);
}

static void on_accept(struct coordl__peer *p, double now)
{
	for (;;) {
		struct sockaddr_storage a;
		socklen_t al = sizeof(a);
		struct conn *c = NULL, *oldest = NULL;
		int fd, shaking = 0;

		if ((fd = accept4(p->lfd, (struct sockaddr *)&a, &al, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0)
			return;
		if (p->wireup == COORDL__WIREUP_SOCKADDR && !known_peer(p, &a)) {
			p->refused++;
			close(fd);
			continue;
		}
		for (int i = 0; i < p->served_hi; i++) {
			struct conn *s = &p->served[i];
			if (s->fd < 0) {
				if (!c)
					c = s;
			} else if (s->state != S_UP) {
				shaking++;
				if (!oldest || s->t_open < oldest->t_open)
					oldest = s;
			}
		}
		/* Connections that never prove anything must not crowd out
		 * the job's nodes: the oldest handshake gives way. */
		if (shaking >= MAX_HANDSHAKES && oldest) {
			served_close(p, oldest, NULL);
			p->refused++;
			if (!c)
				c = oldest;
		}
		if (!c && p->served_hi < MAX_SERVED)
			c = &p->served[p->served_hi];
		if (!c || (!c->rbuf && !(c->rbuf = malloc(SERVED_RBUF))) ||
		    (!c->rq && !(c->rq = malloc(NSLOT * sizeof(*c->rq))))) {
			p->refused++;
			close(fd);
			continue;
		}
		c->rcap = SERVED_RBUF;
		sock_opts(fd);
		c->fd = fd;
		if (c - p->served >= p->served_hi)
			p->served_hi = (int)(c - p->served) + 1;
		c->state = S_HELLO;
		c->t_open = now;
		c->node = -1;
		addr_str(&a, c->who, sizeof(c->who));
		if (watch(p, fd, TAG_NODE + (uint64_t)p->nnodes + (uint64_t)(c - p->served), EPOLLIN) < 0)
			served_close(p, c, NULL);
	}
}

static int on_hello(struct coordl__peer *p, struct conn *c, const struct coordl_peer_hello *m)
{
	struct coordl_peer_challenge ch;

	if (m->magic != COORDL_PEER_MAGIC || m->version != COORDL_PEER_VERSION || m->tag != p->tag ||
	    m->to != (uint32_t)p->me || m->from >= (uint32_t)p->nnodes || m->from == (uint32_t)p->me) {
		served_close(p, c, "not this job's peer (magic, version, tag or node index)");
		return -1;
	}
	c->node = (int)m->from;
	memcpy(c->nonce_c, m->nonce, COORDL_PEER_NONCE);
	memset(&ch, 0, sizeof(ch));
	ch.h.type = COORDL_PEER_CHALLENGE;
	ch.h.size = sizeof(ch);
	ch.magic = COORDL_PEER_MAGIC;
	ch.version = COORDL_PEER_VERSION;
	ch.node = (uint32_t)p->me;
	ch.tag = p->tag;
	if (nonce(c->nonce_s) < 0 ||
	    peer_mac(p, COORDL_PEER_DIR_SERVER, m->from, (uint32_t)p->me, c->nonce_c, c->nonce_s,
		     ch.mac) < 0) {
		served_close(p, c, NULL);
		return -1;
	}
	memcpy(ch.nonce, c->nonce_s, COORDL_PEER_NONCE);
	if (tx_put(c, &ch, sizeof(ch)) < 0) {
		served_close(p, c, NULL);
		return -1;
	}
	c->state = S_PROOF;
	return 0;
}

static int on_proof(struct coordl__peer *p, struct conn *c, const struct coordl_peer_proof *m)
{
	struct coordl_peer_welcome w;

	if (!mac_ok(p, COORDL_PEER_DIR_CLIENT, (uint32_t)c->node, (uint32_t)p->me, c->nonce_c,
		    c->nonce_s, m->mac)) {
		served_close(p, c, "it did not prove that it holds the step's key ("
			     SYNERGY_ENV_PEER_KEY "; every task of the step must have the same)");
		return -1;
	}
	memset(&w, 0, sizeof(w));
	w.h.type = COORDL_PEER_WELCOME;
	w.h.size = sizeof(w);
	w.signature = p->signature;
	w.nitems = p->nitems;
	w.serves = (uint32_t)p->serves;
	if (tx_put(c, &w, sizeof(w)) < 0) {
		served_close(p, c, NULL);
		return -1;
	}
	c->state = S_UP;
	return 0;
}

static int on_read(struct coordl__peer *p, struct conn *c, const struct coordl_peer_read *m)
{
	if (m->idx >= p->nitems || c->rq_n >= NSLOT) {
		served_close(p, c, NULL);
		return -1;
	}
	c->rq[(c->rq_head + c->rq_n) % NSLOT].id = m->id;
	c->rq[(c->rq_head + c->rq_n) % NSLOT].idx = m->idx;
	c->rq_n++;
	return 0;
}

/*
 * Answer the served connection's READs in order, one at a time: the next
 * only once the last reply left entirely, so that a slow reader costs at
 * most one item of memory here. The item's bytes are sent from the cache
 * while its lookup holds them in place; what the socket does not take at
 * once is copied, and the lookup ends before this returns. 0, or -1 (the
 * connection failed: closed).
 */
static int serve(struct coordl__peer *p, struct conn *c)
{
	while (c->rq_n > 0 && c->tpos == c->tlen) {
		struct req r = c->rq[c->rq_head];
		struct coordl_peer_item it;
		coordl__cache_ticket_t t;
		const uint8_t *b = NULL;
		size_t len = 0, sent = 0, total;
		struct iovec iov[2];
		struct msghdr mh;
		ssize_t w;

		c->rq_head = (c->rq_head + 1) % NSLOT;
		c->rq_n--;
		memset(&it, 0, sizeof(it));
		it.h.type = COORDL_PEER_ITEM;
		it.h.size = sizeof(it);
		it.id = r.id;
		it.idx = r.idx;
		if (p->serves && (b = coordl__cache_get(p->cache, (size_t)r.idx, &len, &t))) {
			/* The trailer must lie within the data area too: the
			 * segment is writable by every process of the job,
			 * so its entries are not trusted this far. */
			uint64_t off = (uint64_t)(b - (p->lay.base + p->lay.data_off));
			if (len > UINT32_MAX || len + COORDL__CACHE_TRAILER > p->lay.data_cap - off) {
				coordl__cache_done(p->cache, &t);
				b = NULL;
			}
		}
		if (b) {
			it.len = (uint32_t)len;
			it.stored = 1;
			len += COORDL__CACHE_TRAILER;
		} else {
			len = 0;
		}
		total = sizeof(it) + len;
		iov[0].iov_base = &it;
		iov[0].iov_len = sizeof(it);
		iov[1].iov_base = (void *)b;
		iov[1].iov_len = len;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = b ? 2 : 1;
		/* The copy into the socket without the lock: the workers of
		 * this process need it to take their items meanwhile, and
		 * nothing here is theirs (the connection is this thread's,
		 * the cache is safe across threads). */
		pthread_mutex_unlock(&p->mu);
		do
			w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			w = 0;
		pthread_mutex_lock(&p->mu);
		if (w >= 0)
			sent = (size_t)w;
		if (w >= 0 && sent < total) {
			/* Keep the rest: the header's and the item's. */
			if (tx_room(c, total - sent) < 0) {
				w = -1;
			} else {
				size_t h = sent < sizeof(it) ? sizeof(it) - sent : 0;
				memcpy(c->tbuf + c->tlen, (const uint8_t *)&it + sizeof(it) - h, h);
				c->tlen += h;
				if (len) {
					size_t from = sent > sizeof(it) ? sent - sizeof(it) : 0;
					memcpy(c->tbuf + c->tlen, b + from, len - from);
					c->tlen += len - from;
				}
			}
		}
		if (b)
			coordl__cache_done(p->cache, &t);
		if (w < 0) {
			served_close(p, c, NULL);
			return -1;
		}
	}
	return 0;
}

/* ---- receiving ---- */

/* The size every message type must have, or 0: a type this connection
 * state does not take. */
static size_t expected(int state, uint32_t type)
{
	switch (state) {
	case C_CHALLENGE: return type == COORDL_PEER_CHALLENGE ? sizeof(struct coordl_peer_challenge) : 0;
	case C_WELCOME: return type == COORDL_PEER_WELCOME ? sizeof(struct coordl_peer_welcome) : 0;
	case C_UP: return type == COORDL_PEER_ITEM ? sizeof(struct coordl_peer_item) : 0;
	case S_HELLO: return type == COORDL_PEER_HELLO ? sizeof(struct coordl_peer_hello) : 0;
	case S_PROOF: return type == COORDL_PEER_PROOF ? sizeof(struct coordl_peer_proof) : 0;
	case S_UP: return type == COORDL_PEER_READ ? sizeof(struct coordl_peer_read) : 0;
	default: return 0;
	}
}

/* One whole message m for connection c (node k's, or served when k < 0).
 * 0, or -1 when c was closed. */
static int on_message(struct coordl__peer *p, struct conn *c, int k, const uint8_t *m, double now)
{
	uint32_t type;
	union {
		struct coordl_peer_hello hello;
		struct coordl_peer_challenge challenge;
		struct coordl_peer_proof proof;
		struct coordl_peer_welcome welcome;
		struct coordl_peer_read read;
		struct coordl_peer_item item;
	} u;

	memcpy(&type, m, sizeof(type));
	memcpy(&u, m, expected(c->state, type));
	switch (type) {
	case COORDL_PEER_CHALLENGE: return on_challenge(p, k, &u.challenge, now);
	case COORDL_PEER_WELCOME: return on_welcome(p, k, &u.welcome);
	case COORDL_PEER_ITEM: return on_item(p, k, &u.item, now);
	case COORDL_PEER_HELLO: return on_hello(p, c, &u.hello);
	case COORDL_PEER_PROOF: return on_proof(p, c, &u.proof);
	case COORDL_PEER_READ: return on_read(p, c, &u.read);
	default: return -1; /* not reached: expected() said 0 */
	}
}

/* The connection broke (eof: the other end closed it) or sent what its
 * state does not take. A served connection that breaks the protocol
 * before it is authenticated is noted (a peer of another version, or
 * someone else's program). */
static void conn_failed(struct coordl__peer *p, struct conn *c, int k, double now, const char *why,
			int eof)
{
	if (k >= 0)
		node_down(p, k, now, why);
	else
		served_close(p, c, c->state == S_UP || eof ? NULL : why);
}

/*
 * Read what connection c (node k's, or served when k < 0) has for us and
 * act on every whole message. At most RECV_BURST reads from the socket,
 * so that one busy connection does not keep the thread from the others
 * (level-triggered epoll reports it again), but never a whole message
 * left staged (nothing would report that). Returns 0, or -1 when c was
 * closed.
 */
#define RECV_BURST 16

static int receive(struct coordl__peer *p, struct conn *c, int k, double now)
{
	int reads = 0;

	for (;;) {
		uint8_t *dst;
		size_t want;
		ssize_t r;

		if (c->pe) {
			/* A payload: first what is staged, then straight into
			 * the entry when much is left. */
			size_t left = c->pneed - c->pgot, have = c->rlen - c->rpos;
			size_t n = left < have ? left : have;
			if (n) {
				if (!c->pdiscard)
					memcpy(c->pe->buf + c->pgot, c->rbuf + c->rpos, n);
				c->pgot += n;
				c->rpos += n;
				left -= n;
			}
			if (left == 0) {
				payload_done(p, c);
				continue;
			}
			if (left >= DIRECT_MIN) {
				dst = c->pdiscard ? p->scratch : c->pe->buf + c->pgot;
				want = c->pdiscard ? (left < SCRATCH ? left : SCRATCH) : left;
				goto read;
			}
		} else if (c->rlen - c->rpos >= sizeof(struct coordl_peer_head)) {
			struct coordl_peer_head h;
			memcpy(&h, c->rbuf + c->rpos, sizeof(h));
			if (!(want = expected(c->state, h.type)) || h.size != want) {
				conn_failed(p, c, k, now, "it broke the peer protocol", 0);
				return -1;
			}
			if (c->rlen - c->rpos >= want) {
				const uint8_t *m = c->rbuf + c->rpos;
				c->rpos += want;
				if (on_message(p, c, k, m, now) < 0)
					return -1;
				continue;
			}
		}
		/* Stage more (what is staged is at most part of a message,
		 * smaller than the buffer). */
		if (c->rpos == c->rlen) {
			c->rpos = c->rlen = 0;
		} else if (c->rpos > 0) {
			memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		dst = c->rbuf + c->rlen;
		want = c->rcap - c->rlen;
read:
		if (reads++ == RECV_BURST)
			return 0;
		/* An item's bytes go straight into its entry without the lock:
		 * only this thread touches a SENT entry's buffer, and the
		 * workers need the lock meanwhile to take other items. */
		if (dst != c->rbuf + c->rlen && !c->pdiscard)
			pthread_mutex_unlock(&p->mu);
		do
			r = recv(c->fd, dst, want, 0);
		while (r < 0 && errno == EINTR);
		if (dst != c->rbuf + c->rlen && !c->pdiscard) {
			int e = errno;
			pthread_mutex_lock(&p->mu);
			errno = e;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (r <= 0) {
			conn_failed(p, c, k, now, "the connection failed", 1);
			return -1;
		}
		if (dst == c->rbuf + c->rlen) {
			c->rlen += (size_t)r;
		} else {
			c->pgot += (size_t)r;
			if (c->pgot == c->pneed)
				payload_done(p, c);
		}
	}
}

/* ---- the I/O thread ---- */

/*
 * Listen on this node's address (sockaddr wire-up). While another
 * process of this node listens there (the normal state of every process
 * of a node but its first), bind fails: retry every LISTEN_RETRY s, and
 * say so once.
 */
static void try_listen(struct coordl__peer *p, double now)
{
	const struct node *me = &p->nodes[p->me];
	int fd, one = 1;

	if ((fd = socket(me->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		goto fail;
	/* A listener of the previous loader of this job (a restarted step,
	 * a loader made again) leaves its port in TIME_WAIT for a minute:
	 * take it over. Two listeners never share a port (no SO_REUSEPORT). */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&me->sa, me->salen) < 0 || listen(fd, 128) < 0 ||
	    watch(p, fd, TAG_LISTEN, EPOLLIN) < 0)
		goto fail;
	p->lfd = fd;
	return;
fail:
	p->listen_at = now + LISTEN_RETRY;
	if (!p->listen_noted) {
		p->listen_noted = 1;
		if (errno == EADDRINUSE)
			set_note(p, "%s:%d is in use: another process of this node serves its part "
				 "(or another program holds the port); retrying every %.0f s",
				 me->host, me->port, LISTEN_RETRY);
		else
			set_note(p, "cannot listen on %s:%d (%s): another process of this node "
				 "serves its part, or none does (retrying)", me->host, me->port,
				 strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

static void advance(struct coordl__peer *p, struct ent *e, double now)
{
	struct node *n = &p->nodes[e->node];
	struct coordl_peer_read m;

	if (e->orphan) {
		finish(p, e, E_FREE);
		return;
	}
	if (n->state == N_OFF) {
		finish(p, e, E_ABSENT);
		return;
	}
	if (n->state != N_UP) {
		/* Not connected (yet, or any more): storage, at once. */
		finish(p, e, E_FAIL);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.h.type = COORDL_PEER_READ;
	m.h.size = sizeof(m);
	e->seq++;
	m.id = (uint64_t)e->seq << 32 | (uint64_t)(e - p->ent);
	m.idx = e->idx;
	if (tx_put(&n->c, &m, sizeof(m)) < 0) {
		finish(p, e, E_FAIL);
		return;
	}
	e->state = E_SENT;
	e->t_issue = now;
	n->busy++;
}

/* Read ahead along the order while the window and the budget allow. */
static void fill(struct coordl__peer *p, double now)
{
	if (!p->fixed || p->disabled || !p->order)
		return;
	while (p->ra_next < p->n && p->ra_busy < WINDOW && p->held < HELD_BUDGET) {
		uint64_t pos = p->ra_next;
		size_t idx = (size_t)p->order[pos];
		int k = p->owner[idx];
		struct ent *e = &p->ent[pos % NENT];

		if (k == p->me || k >= p->nnodes || p->nodes[k].state != N_UP) {
			p->ra_next++;
			continue;
		}
		if (e->state != E_FREE) {
			if (e->pos == pos && e->gen == p->gen && !e->orphan) {
				p->ra_next++;
				continue;
			}
			break; /* an older position still holds it */
		}
		e->state = E_NEW;
		e->ra = 1;
		e->orphan = 0;
		e->gen = p->gen;
		e->pos = pos;
		e->idx = idx;
		e->node = k;
		e->t_new = now;
		p->ra_busy++;
		p->ra_next++;
	}
}

/* Send what every connection has queued; serve what the served ones
 * asked for. */
static void flush_all(struct coordl__peer *p, double now)
{
	for (int k = 0; k < p->nnodes; k++) {
		struct conn *c = &p->nodes[k].c;
		if (c->fd < 0 || c->state == C_CONNECT)
			continue;
		if (tx_flush(c) < 0) {
			node_down(p, k, now, "the connection failed");
			continue;
		}
		want_out(p, c, TAG_NODE + (uint64_t)k, c->tpos < c->tlen);
	}
	for (int i = 0; i < p->served_hi; i++) {
		struct conn *c = &p->served[i];
		if (c->fd < 0)
			continue;
		if (tx_flush(c) < 0) {
			served_close(p, c, NULL);
			continue;
		}
		if (c->state == S_UP && serve(p, c) < 0)
			continue;
		want_out(p, c, TAG_NODE + (uint64_t)p->nnodes + (uint64_t)i, c->tpos < c->tlen);
	}
}

static void step(struct coordl__peer *p, double now)
{
	if (p->wireup == COORDL__WIREUP_SOCKADDR && p->lfd < 0 && now >= p->listen_at)
		try_listen(p, now);
	for (int k = 0; k < p->nnodes; k++) {
		struct node *n = &p->nodes[k];
		if (n->state == N_DOWN && now >= n->retry_at)
			connect_node(p, k, now);
		else if (n->state == N_CONNECTING && now - n->t_connect > p->timeout + 1.0)
			node_down(p, k, now, "no answer to the connection");
	}
	for (int i = 0; i < p->served_hi; i++) {
		struct conn *c = &p->served[i];
		if (c->fd >= 0 && c->state != S_UP && now - c->t_open > p->timeout)
			served_close(p, c, "no handshake within the peer deadline");
	}
	fill(p, now);
	for (int i = 0; i < NSLOT; i++) {
		struct ent *e = &p->ent[i];
		if (e->state == E_NEW) {
			advance(p, e, now);
		} else if (e->state == E_SENT && now - e->t_issue > p->timeout &&
			   p->nodes[e->node].state == N_UP) {
			p->stalls++;
			node_down(p, e->node, now, "a read took longer than the peer deadline");
		}
	}
	flush_all(p, now);
}

/* An event on the socket tagged tag. */
static void on_event(struct coordl__peer *p, uint64_t tag, uint32_t events, double now)
{
	struct conn *c;
	int k = -1;

	if (tag == TAG_WAKE) {
		uint64_t v;
		ssize_t r = read(p->wakefd, &v, sizeof(v));
		(void)r;
		return;
	}
	if (tag == TAG_LISTEN) {
		on_accept(p, now);
		return;
	}
	if (tag - TAG_NODE < (uint64_t)p->nnodes) {
		k = (int)(tag - TAG_NODE);
		c = &p->nodes[k].c;
	} else if (tag - TAG_NODE - (uint64_t)p->nnodes < MAX_SERVED) {
		c = &p->served[tag - TAG_NODE - (uint64_t)p->nnodes];
	} else {
		return;
	}
	if (c->fd < 0)
		return; /* closed by an earlier event of this round */
	if (k >= 0 && c->state == C_CONNECT) {
		int err = 0;
		socklen_t el = sizeof(err);
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err != 0) {
			node_down(p, k, now, strerror(err ? err : errno));
			return;
		}
		if (client_hello(p, k) < 0) {
			node_down(p, k, now, "no randomness or memory for the handshake");
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		(void)receive(p, c, k, now);
}

static void *io_main(void *arg)
{
	struct coordl__peer *p = arg;
	struct epoll_event ev[NEVENTS];

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		int busy = 0, n;
		double now = coordl__now();

		step(p, now);
		for (int k = 0; k < p->nnodes && !busy; k++)
			busy = p->nodes[k].busy > 0 || p->nodes[k].state == N_CONNECTING;
		pthread_mutex_unlock(&p->mu);
		/* Deadlines and reconnections are looked at every 10 ms while
		 * anything is in flight, else every 100 ms. */
		n = epoll_wait(p->epfd, ev, NEVENTS, busy ? 10 : 100);
		pthread_mutex_lock(&p->mu);
		now = coordl__now();
		for (int i = 0; i < n; i++)
			on_event(p, ev[i].data.u64, ev[i].events, now);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- wire-up ---- */

struct resolve_arg {
	struct coordl__peer *p;
	char *why;
	size_t whylen;
};

static int resolve_one(void *arg, int k, const char *host, int port)
{
	struct resolve_arg *ra = arg;
	struct node *n = &ra->p->nodes[k];
	struct addrinfo hints, *res = NULL;
	char ps[16];
	int rc;

	snprintf(n->host, sizeof(n->host), "%s", host);
	n->port = port;
	snprintf(ps, sizeof(ps), "%d", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, ps, &hints, &res)) != 0 || !res ||
	    res->ai_addrlen > sizeof(n->sa)) {
		snprintf(ra->why, ra->whylen, "%s: peer node %d '%s': %s", SYNERGY_ENV_PEERS, k, host,
			 rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return 1;
	}
	memcpy(&n->sa, res->ai_addr, res->ai_addrlen);
	n->salen = (socklen_t)res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Is this process a rank that srun --mpi=pmix launched (a PMIx client
 * whose parent is not the same PMIx rank, as a torchrun worker's is)? */
static int pmix_launched(void)
{
	const char *r = getenv("PMIX_RANK"), *ns = getenv("PMIX_NAMESPACE");
	char path[64], *env = NULL, want[256];
	size_t cap = 0, len = 0;
	int launched = 1;
	FILE *f;

	if (!r || !ns)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
	if (!(f = fopen(path, "r")))
		return 1; /* another user's (slurmstepd's): launched by the step */
	for (;;) {
		if (len + 4096 > cap) {
			char *e = realloc(env, cap + 65536);
			if (!e)
				break;
			env = e;
			cap += 65536;
		}
		size_t got = fread(env + len, 1, 4096, f);
		if (got == 0)
			break;
		len += got;
	}
	fclose(f);
	snprintf(want, sizeof(want), "PMIX_RANK=%s", r);
	for (size_t i = 0; env && i < len;) {
		size_t l = strnlen(env + i, len - i);
		if (l == strlen(want) && memcmp(env + i, want, l) == 0)
			launched = 0;
		i += l + 1;
	}
	free(env);
	return launched;
}

#ifdef HAVE_PMIX
static int pmix_u32(const pmix_proc_t *proc, const char *key, uint32_t *out)
{
	pmix_value_t *v = NULL;
	int ok = 0;

	if (PMIx_Get(proc, key, NULL, 0, &v) != PMIX_SUCCESS || !v)
		return -1;
	if (v->type == PMIX_UINT32) {
		*out = v->data.uint32;
		ok = 1;
	} else if (v->type == PMIX_UINT16) {
		*out = v->data.uint16;
		ok = 1;
	} else if (v->type == PMIX_INT) {
		*out = (uint32_t)v->data.integer;
		ok = 1;
	}
	PMIX_VALUE_RELEASE(v);
	return ok ? 0 : -1;
}

/* A listener on every address of this node, on a port the kernel picks;
 * its port, or -1. */
static int pmix_listen(struct coordl__peer *p)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);
	int fd, zero = 0;

	memset(&a, 0, sizeof(a));
	if ((fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) >= 0) {
		/* One socket for IPv6 and IPv4 (mapped) peers. */
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		a.ss_family = AF_INET6;
		al = sizeof(struct sockaddr_in6);
	} else if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) >= 0) {
		a.ss_family = AF_INET;
		al = sizeof(struct sockaddr_in);
	} else {
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&a, al) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		close(fd);
		return -1;
	}
	p->lfd = fd;
	return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
					     : ((struct sockaddr_in *)&a)->sin_port);
}

/* This node's addresses, up to COORDL_PEER_ADDRS_MAX: those of its
 * interfaces that are up, not loopback (loopback only when there is
 * nothing else) and not IPv6 link-local (which needs an interface to
 * mean anything on another node). */
static uint32_t pmix_addrs(struct coordl_peer_pmix_addr *out)
{
	struct ifaddrs *ifs = NULL;
	uint32_t n = 0;

	if (getifaddrs(&ifs) < 0)
		return 0;
	for (int loop = 0; loop < 2 && n == 0; loop++)
		for (struct ifaddrs *i = ifs; i && n < COORDL_PEER_ADDRS_MAX; i = i->ifa_next) {
			if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) ||
			    !!(i->ifa_flags & IFF_LOOPBACK) != loop)
				continue;
			if (i->ifa_addr->sa_family == AF_INET) {
				memset(&out[n], 0, sizeof(out[n]));
				out[n].family = AF_INET;
				memcpy(out[n].addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
				n++;
			} else if (i->ifa_addr->sa_family == AF_INET6) {
				const struct in6_addr *a6 = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
				if (IN6_IS_ADDR_LINKLOCAL(a6))
					continue;
				memset(&out[n], 0, sizeof(out[n]));
				out[n].family = AF_INET6;
				memcpy(out[n].addr, a6, 16);
				n++;
			}
		}
	freeifaddrs(ifs);
	return n;
}

/* Put this process's listener into PMIx, fence, and take, for each other
 * node, the addresses of the processes that serve it. */
static int pmix_wireup(struct coordl__peer *p, char *why, size_t whylen)
{
	static int seq;
	pmix_proc_t me, wild, proc;
	pmix_value_t val, *v;
	pmix_info_t info[2];
	struct coordl_peer_pmix_blob *b = NULL;
	struct coordl_peer_pmix_addr *ad;
	uint32_t nodeid, nnodes, size, lrank;
	size_t blob_len;
	char key[64];
	bool collect = true;
	int timeout = PMIX_FENCE_S, rv = -1, rc, port = 0;

	if ((rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
		snprintf(why, whylen, "PMIx_Init: %s", PMIx_Error_string(rc));
		return -1;
	}
	p->pmix_inited = 1;
	PMIX_PROC_CONSTRUCT(&wild);
	PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
	if (pmix_u32(&me, PMIX_NODEID, &nodeid) < 0 || pmix_u32(&wild, PMIX_NUM_NODES, &nnodes) < 0 ||
	    pmix_u32(&wild, PMIX_JOB_SIZE, &size) < 0 || pmix_u32(&me, PMIX_LOCAL_RANK, &lrank) < 0) {
		snprintf(why, whylen, "PMIx: node id, node count, job size or local rank unknown");
		return -1;
	}
	if (nnodes < 2 || nnodes > COORDL__MAX_NODES || nodeid >= nnodes) {
		snprintf(why, whylen, nnodes < 2 ? "" : "PMIx: node %u of %u: not supported",
			 (unsigned)nodeid, (unsigned)nnodes);
		return -1;
	}
	p->nnodes = (int)nnodes;
	p->me = (int)nodeid;
	blob_len = sizeof(*b) + COORDL_PEER_ADDRS_MAX * sizeof(*ad);
	if (!(b = calloc(1, blob_len)) || !(p->nodes = calloc(nnodes, sizeof(*p->nodes)))) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < nnodes; k++)
		conn_init(&p->nodes[k].c);
	ad = (struct coordl_peer_pmix_addr *)(b + 1);
	if (p->serves && (port = pmix_listen(p)) < 0) {
		snprintf(why, whylen, "peers: cannot listen (%s)", strerror(errno));
		goto out;
	}
	b->magic = COORDL_PEER_MAGIC;
	b->version = COORDL_PEER_VERSION;
	b->node = nodeid;
	b->local_rank = lrank;
	b->serves = p->serves && port > 0;
	b->signature = p->signature;
	b->nitems = p->nitems;
	b->port = (uint32_t)port;
	b->naddr = b->serves ? pmix_addrs(ad) : 0;
	blob_len = sizeof(*b) + b->naddr * sizeof(*ad);
	snprintf(key, sizeof(key), "coordl.peer.%d", __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	PMIX_VALUE_CONSTRUCT(&val);
	val.type = PMIX_BYTE_OBJECT;
	val.data.bo.bytes = (char *)b;
	val.data.bo.size = blob_len;
	if ((rc = PMIx_Put(PMIX_GLOBAL, key, &val)) != PMIX_SUCCESS ||
	    (rc = PMIx_Commit()) != PMIX_SUCCESS) {
		snprintf(why, whylen, "PMIx_Put/Commit: %s", PMIx_Error_string(rc));
		goto out;
	}
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
	rc = PMIx_Fence(&wild, 1, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	if (rc != PMIX_SUCCESS) {
		snprintf(why, whylen, "PMIx_Fence: %s (every rank must create its training loader "
			 "the same number of times)", PMIx_Error_string(rc));
		goto out;
	}
	for (uint32_t r = 0; r < size; r++) {
		struct coordl_peer_pmix_blob pb;
		struct node *n;
		if (r == me.rank)
			continue;
		PMIX_LOAD_PROCID(&proc, me.nspace, r);
		v = NULL;
		if (PMIx_Get(&proc, key, NULL, 0, &v) != PMIX_SUCCESS || !v)
			continue;
		if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size < sizeof(pb)) {
			PMIX_VALUE_RELEASE(v);
			continue;
		}
		memcpy(&pb, v->data.bo.bytes, sizeof(pb));
		if (pb.magic != COORDL_PEER_MAGIC || pb.version != COORDL_PEER_VERSION ||
		    pb.node >= nnodes || pb.node == nodeid || !pb.serves ||
		    pb.signature != p->signature || pb.nitems != p->nitems || pb.port < 1 ||
		    pb.port > 65535 || pb.naddr > COORDL_PEER_ADDRS_MAX ||
		    sizeof(pb) + pb.naddr * sizeof(*ad) != v->data.bo.size) {
			PMIX_VALUE_RELEASE(v);
			continue;
		}
		n = &p->nodes[pb.node];
		for (uint32_t a = 0; a < pb.naddr; a++) {
			struct coordl_peer_pmix_addr pa;
			struct cand *c;
			memcpy(&pa, v->data.bo.bytes + sizeof(pb) + a * sizeof(pa), sizeof(pa));
			if (pa.family != AF_INET && pa.family != AF_INET6)
				continue;
			if (!(c = realloc(n->cand, (size_t)(n->ncand + 1) * sizeof(*c))))
				break;
			n->cand = c;
			c = &n->cand[n->ncand];
			memset(c, 0, sizeof(*c));
			if (pa.family == AF_INET) {
				struct sockaddr_in *s4 = (struct sockaddr_in *)&c->sa;
				s4->sin_family = AF_INET;
				s4->sin_port = htons((uint16_t)pb.port);
				memcpy(&s4->sin_addr, pa.addr, 4);
				c->salen = sizeof(*s4);
			} else {
				struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&c->sa;
				s6->sin6_family = AF_INET6;
				s6->sin6_port = htons((uint16_t)pb.port);
				memcpy(&s6->sin6_addr, pa.addr, 16);
				c->salen = sizeof(*s6);
			}
			n->ncand++;
		}
		PMIX_VALUE_RELEASE(v);
	}
	for (uint32_t k = 0; k < nnodes; k++) {
		struct node *n = &p->nodes[k];
		snprintf(n->host, sizeof(n->host), "pmix");
		if (k == nodeid) {
			__atomic_store_n(&n->state, N_SELF, __ATOMIC_RELAXED);
		} else if (n->ncand == 0) {
			__atomic_store_n(&n->state, N_OFF, __ATOMIC_RELAXED);
		} else {
			/* Spread the readers of a node over its processes. */
			n->cur = (int)(lrank % (uint32_t)n->ncand);
			__atomic_store_n(&n->state, N_DOWN, __ATOMIC_RELAXED);
		}
	}
	rv = 0;
out:
	free(b);
	return rv;
}
#endif

/* ---- public ---- */

coordl__peer_t *coordl__peer_create(coordl__cache_t *cache, const coordl__peer_opts_t *o,
				    char *why, size_t whylen)
{
	const coordl__env_t *env = o->env;
	struct coordl__peer *p = NULL;
	int wireup = env->wireup, ok = 0;

	why[0] = '\0';
	if (wireup == COORDL__WIREUP_OFF)
		return NULL;
	if (wireup == COORDL__WIREUP_AUTO)
		wireup = pmix_launched() ? COORDL__WIREUP_PMIX : COORDL__WIREUP_SOCKADDR;
#ifndef HAVE_PMIX
	if (wireup == COORDL__WIREUP_PMIX && env->wireup == COORDL__WIREUP_AUTO)
		wireup = COORDL__WIREUP_SOCKADDR;
	if (wireup == COORDL__WIREUP_PMIX) {
		snprintf(why, whylen, "%s=pmix: libcoordl was built without PMIx", SYNERGY_ENV_PEER_WIREUP);
		return NULL;
	}
#endif
	if (wireup == COORDL__WIREUP_SOCKADDR && (!env->peers || env->nnodes < 2))
		return NULL; /* one node: nothing to share */
	/* No key, no peers: without it a peer cannot tell the job's nodes
	 * from anyone else who can reach them. */
	if (!env->peer_key) {
		snprintf(why, whylen, "%s is %s: no partitioned cache (its peers must prove to each "
			 "other that they hold the step's key, see coordl(3), SECURITY)",
			 SYNERGY_ENV_PEER_KEY, env->peer_key_bad ? "malformed (expected " "64 lowercase "
			 "hex digits)" : "not set");
		return NULL;
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		snprintf(why, whylen, "peers: out of memory");
		return NULL;
	}
	p->epfd = p->wakefd = p->lfd = -1;
	p->note_node = -1;
	for (int i = 0; i < MAX_SERVED; i++)
		conn_init(&p->served[i]);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (coordl__parse_peer_key(env->peer_key, p->key) < 0) {
		snprintf(why, whylen, "%s is malformed: no partitioned cache", SYNERGY_ENV_PEER_KEY);
		goto out;
	}
	p->wireup = wireup;
	p->tag = env->peer_tag;
	p->signature = o->signature;
	p->nitems = o->nitems;
	p->per_rank = o->per_rank;
	p->rank = o->rank;
	p->world = o->world;
	p->timeout = env->peer_timeout_ms / 1000.0;
	p->max_item = o->max_item;
	p->cache = cache;
	p->serves = cache && coordl__cache_layout(cache, &p->lay) == 0;
	if (!(p->owner = malloc((o->nitems ? o->nitems : 1) * sizeof(uint16_t))) ||
	    !(p->order = malloc((o->per_rank ? o->per_rank : 1) * sizeof(uint64_t))) ||
	    !(p->scratch = malloc(SCRATCH))) {
		snprintf(why, whylen, "peers: out of memory");
		goto out;
	}
	memset(p->owner, 0xff, (o->nitems ? o->nitems : 1) * sizeof(uint16_t));
	if ((p->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (p->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    watch(p, p->wakefd, TAG_WAKE, EPOLLIN) < 0) {
		snprintf(why, whylen, "peers: no epoll or eventfd (%s)", strerror(errno));
		goto out;
	}
	if (wireup == COORDL__WIREUP_PMIX) {
#ifdef HAVE_PMIX
		if (pmix_wireup(p, why, whylen) < 0)
			goto out;
		if (p->lfd >= 0 && watch(p, p->lfd, TAG_LISTEN, EPOLLIN) < 0) {
			snprintf(why, whylen, "peers: cannot watch the listener (%s)", strerror(errno));
			goto out;
		}
#endif
	} else {
		struct resolve_arg ra = { p, why, whylen };
		p->nnodes = env->nnodes;
		p->me = env->node_index;
		if (!(p->nodes = calloc((size_t)p->nnodes, sizeof(*p->nodes)))) {
			snprintf(why, whylen, "peers: out of memory");
			goto out;
		}
		for (int k = 0; k < p->nnodes; k++)
			conn_init(&p->nodes[k].c);
		if (coordl__parse_peers(env->peers, resolve_one, &ra) != p->nnodes)
			goto out;
		for (int k = 0; k < p->nnodes; k++)
			__atomic_store_n(&p->nodes[k].state, k == p->me ? N_SELF : N_DOWN, __ATOMIC_RELAXED);
	}
	if (pthread_create(&p->thr, NULL, io_main, p) != 0) {
		snprintf(why, whylen, "peers: cannot start the I/O thread");
		goto out;
	}
	p->thr_started = 1;
	ok = 1;
out:
	if (!ok) {
		coordl__peer_destroy(p);
		return NULL;
	}
	return p;
}

void coordl__peer_destroy(coordl__peer_t *p)
{
	int e = errno;

	if (!p)
		return;
	if (p->thr_started) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_mutex_unlock(&p->mu);
		wake(p);
		pthread_join(p->thr, NULL);
	}
	for (int k = 0; p->nodes && k < p->nnodes; k++) {
		conn_free(&p->nodes[k].c);
		free(p->nodes[k].cand);
	}
	for (int i = 0; i < MAX_SERVED; i++)
		conn_free(&p->served[i]);
	if (p->lfd >= 0)
		close(p->lfd);
	if (p->wakefd >= 0)
		close(p->wakefd);
	if (p->epfd >= 0)
		close(p->epfd);
#ifdef HAVE_PMIX
	if (p->pmix_inited)
		PMIx_Finalize(NULL, 0);
#endif
	for (int i = 0; i < NSLOT; i++)
		free(p->ent[i].buf);
	OPENSSL_cleanse(p->key, sizeof(p->key));
	free(p->nodes);
	free(p->owner);
	free(p->order);
	free(p->scratch);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	errno = e;
}

void coordl__peer_fix(coordl__peer_t *p, const uint64_t *perm, size_t n)
{
	uint64_t w = (uint64_t)p->world, nn = (uint64_t)p->nnodes;

	pthread_mutex_lock(&p->mu);
	if (p->fixed) {
		pthread_mutex_unlock(&p->mu);
		return;
	}
	/* Ranks numbered node by node: rank r runs on node r * N / W. A
	 * layout that says otherwise would leave every part unfilled (each
	 * node would consume what others own), so the tier stays off. */
	if (w >= nn && (uint64_t)p->rank * nn / w != (uint64_t)p->me) {
		p->disabled = 1;
		set_note(p, "rank %d of %d is not on node %d of %d as ranks numbered node by node "
			 "would be: no partitioned cache", p->rank, p->world, p->me, p->nnodes);
	}
	for (size_t pos = 0; pos < n && pos < p->nitems; pos++) {
		uint64_t k = w >= nn ? (pos % w) * nn / w : pos % nn;
		if (perm[pos] < p->nitems)
			p->owner[perm[pos]] = (uint16_t)k;
	}
	__atomic_store_n(&p->fixed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->mu);
	wake(p);
}

int coordl__peer_mine(const coordl__peer_t *p, size_t idx)
{
	if (!p || !p->fixed || p->disabled || idx >= p->nitems)
		return 1;
	return p->owner[idx] == p->me || p->owner[idx] == NOWNER;
}

void coordl__peer_restart(coordl__peer_t *p, const uint64_t *order, size_t n, uint64_t base)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->gen++;
	for (int i = 0; i < NSLOT; i++) {
		struct ent *e = &p->ent[i];
		if (e->state == E_FREE)
			continue;
		if (e->state == E_SENT) {
			e->orphan = 1; /* freed once no socket read writes into its buffer */
			continue;
		}
		if (e->ra && !terminal(e->state))
			p->ra_busy--;
		e->state = E_FREE;
	}
	p->held = 0;
	if (n > p->per_rank)
		n = p->per_rank;
	memcpy(p->order, order, n * sizeof(uint64_t));
	p->n = n;
	p->base = base;
	p->ra_next = base;
	p->hits = p->bytes = p->absent = p->fallbacks = p->bad = p->stalls = p->failures = 0;
	pthread_mutex_unlock(&p->mu);
	wake(p);
}

int coordl__peer_serves(const coordl__peer_t *p, size_t idx)
{
	int k;

	if (!p || !__atomic_load_n(&p->fixed, __ATOMIC_ACQUIRE) || p->disabled || idx >= p->nitems)
		return 0;
	k = p->owner[idx];
	return k != p->me && k < p->nnodes &&
	       __atomic_load_n(&p->nodes[k].state, __ATOMIC_RELAXED) == N_UP;
}

/* Take a terminal entry's outcome and free it. mu held. A HIT is counted
 * by checked(), once its trailer was checked without the lock. */
static int take(struct coordl__peer *p, struct ent *e, uint8_t **buf, size_t *cap, size_t *len)
{
	int rv;

	if (e->state == E_DONE) {
		uint8_t *b = *buf;
		size_t c = *cap;
		*buf = e->buf;
		*cap = e->cap;
		*len = e->len;
		e->buf = b;
		e->cap = c;
		if (e->ra)
			p->held -= e->len;
		rv = COORDL__PEER_HIT;
	} else if (e->state == E_ABSENT) {
		p->absent++;
		rv = COORDL__PEER_ABSENT;
	} else {
		p->fallbacks++;
		rv = COORDL__PEER_FAILED;
	}
	e->state = E_FREE;
	return rv;
}

/*
 * A HIT's bytes (buf[0..len), the trailer after them) as the owner sent
 * them: used only when the trailer matches the bytes and the item's index
 * (else the owner sent bytes that were dropped or reused while it sent
 * them, or not the item at all: never handed out). Runs in the worker,
 * without the lock, so that the checks of several workers run side by
 * side and the I/O thread only moves bytes. Counts the outcome.
 */
static int checked(struct coordl__peer *p, size_t idx, const uint8_t *buf, size_t len)
{
	uint64_t sum;
	int ok;

	memcpy(&sum, buf + len, sizeof(sum));
	ok = sum == coordl__cache_sum(idx, buf, len);
	pthread_mutex_lock(&p->mu);
	if (ok) {
		p->hits++;
		p->bytes += len;
	} else {
		p->bad++;
		p->fallbacks++;
	}
	pthread_mutex_unlock(&p->mu);
	return ok ? COORDL__PEER_HIT : COORDL__PEER_FAILED;
}

int coordl__peer_get(coordl__peer_t *p, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		     size_t *len)
{
	struct ent *e = NULL;
	struct node *n;
	double deadline;
	int k, rv;

	if (!p || !p->fixed || p->disabled || idx >= p->nitems)
		return COORDL__PEER_ABSENT;
	pthread_mutex_lock(&p->mu);
	k = p->owner[idx];
	if (k == p->me || k >= p->nnodes) {
		pthread_mutex_unlock(&p->mu);
		return COORDL__PEER_ABSENT;
	}
	n = &p->nodes[k];
	if (n->state == N_OFF) {
		p->absent++;
		pthread_mutex_unlock(&p->mu);
		return COORDL__PEER_ABSENT;
	}
	if (pos != COORDL__NOPOS) {
		struct ent *r = &p->ent[pos % NENT];
		if (r->state != E_FREE && r->pos == pos && r->gen == p->gen && !r->orphan &&
		    r->idx == idx)
			e = r;
		else if (r->state == E_FREE && n->state == N_UP)
			e = r;
	}
	if (!e && n->state != N_UP) {
		p->fallbacks++;
		pthread_mutex_unlock(&p->mu);
		return COORDL__PEER_FAILED;
	}
	if (!e)
		for (int i = NENT; i < NSLOT; i++)
			if (p->ent[i].state == E_FREE) {
				e = &p->ent[i];
				break;
			}
	if (!e) {
		p->fallbacks++;
		pthread_mutex_unlock(&p->mu);
		return COORDL__PEER_FAILED;
	}
	if (e->state == E_FREE) {
		e->state = E_NEW;
		e->ra = 0;
		e->orphan = 0;
		e->gen = p->gen;
		e->pos = pos;
		e->idx = idx;
		e->node = k;
		e->t_new = coordl__now();
		wake(p);
	}
	/* The I/O thread fails a read at the deadline; this is the backstop
	 * should it not get to it. */
	deadline = coordl__now() + p->timeout * 2 + 1.0;
	e->waiters++;
	while (!terminal(e->state)) {
		struct timespec ts;
		double left = deadline - coordl__now(), t;
		if (left <= 0)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + left;
		ts.tv_sec = (time_t)t;
		ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	e->waiters--;
	if (!terminal(e->state)) {
		e->orphan = 1;
		p->fallbacks++;
		rv = COORDL__PEER_FAILED;
	} else {
		rv = take(p, e, buf, cap, len);
	}
	pthread_mutex_unlock(&p->mu);
	if (rv == COORDL__PEER_HIT)
		rv = checked(p, idx, *buf, *len);
	return rv;
}

void coordl__peer_stats(coordl__peer_t *p, coordl_stats_t *st)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	st->peer_nodes = p->nnodes;
	st->peer_wireup = p->wireup == COORDL__WIREUP_PMIX ? COORDL_WIREUP_PMIX : COORDL_WIREUP_SOCKADDR;
	st->peer_node_index = p->me;
	st->peer_hits = p->hits;
	st->peer_bytes = p->bytes;
	st->peer_absent = p->absent;
	st->peer_fallbacks = p->fallbacks;
	st->peer_bad = p->bad;
	st->peer_stalls = p->stalls;
	st->peers_up = 0;
	for (int k = 0; k < p->nnodes; k++)
		st->peers_up += p->nodes[k].state == N_UP;
	pthread_mutex_unlock(&p->mu);
}

const char *coordl__peer_note(coordl__peer_t *p)
{
	const char *s;

	if (!p)
		return NULL;
	/* The I/O thread may change note at any time (a note about a node
	 * that came up is dropped): hand out a copy it never touches. */
	pthread_mutex_lock(&p->mu);
	s = NULL;
	if (p->note[0]) {
		memcpy(p->note_out, p->note, sizeof(p->note_out));
		s = p->note_out;
	}
	pthread_mutex_unlock(&p->mu);
	return s;
}

#else /* !HAVE_PEERS */

coordl__peer_t *coordl__peer_create(coordl__cache_t *cache, const coordl__peer_opts_t *o,
				    char *why, size_t whylen)
{
	(void)cache;
	why[0] = '\0';
	if (o->env->wireup != COORDL__WIREUP_OFF && (o->env->peers || o->env->wireup == COORDL__WIREUP_PMIX))
		snprintf(why, whylen, "%s is set but libcoordl was built without the peer tier "
			 "(libcrypto): no partitioned cache",
			 o->env->peers ? SYNERGY_ENV_PEERS : SYNERGY_ENV_PEER_WIREUP);
	return NULL;
}

void coordl__peer_destroy(coordl__peer_t *p) { (void)p; }
void coordl__peer_fix(coordl__peer_t *p, const uint64_t *perm, size_t n) { (void)p; (void)perm; (void)n; }
int coordl__peer_mine(const coordl__peer_t *p, size_t idx) { (void)p; (void)idx; return 1; }
void coordl__peer_restart(coordl__peer_t *p, const uint64_t *order, size_t n, uint64_t base)
{
	(void)p; (void)order; (void)n; (void)base;
}
int coordl__peer_get(coordl__peer_t *p, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		     size_t *len)
{
	(void)p; (void)pos; (void)idx; (void)buf; (void)cap; (void)len;
	return COORDL__PEER_ABSENT;
}
int coordl__peer_serves(const coordl__peer_t *p, size_t idx) { (void)p; (void)idx; return 0; }
void coordl__peer_stats(coordl__peer_t *p, coordl_stats_t *st) { (void)p; (void)st; }
const char *coordl__peer_note(coordl__peer_t *p) { (void)p; return NULL; }
int coordl__peer_mac(const uint8_t *key, uint64_t tag, uint32_t dir, uint32_t client,
		     uint32_t server, const uint8_t *nc, const uint8_t *ns, uint8_t *out)
{
	(void)key; (void)tag; (void)dir; (void)client; (void)server; (void)nc; (void)ns; (void)out;
	return -1;
}

#endif
