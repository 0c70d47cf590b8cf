/*
 * peer.c: the partitioned cache's peer tier (see peer.h).
 *
 * One I/O thread per loader owns the UCX worker: every UCX call is made by
 * it (the worker runs in UCS_THREAD_MODE_SINGLE), apart from creation and
 * destruction, which happen before it starts and after it stopped. The
 * workers that decode share a fixed table of read entries with it under
 * one mutex; a worker that wants a read started marks an entry NEW and
 * wakes the thread through an eventfd. UCX's callbacks run inside
 * ucp_worker_progress(), which the thread calls without the mutex: the
 * completion callback of a read only publishes its status in the entry
 * (the thread looks at it in its next step, under the mutex), and the
 * callbacks for connections, errors and the hello message queue an event
 * under a lock of their own. So no callback ever waits for the mutex.
 *
 * The I/O thread only moves bytes: the worker that takes an item checks
 * its trailer (checked(), without the mutex), so that checks run side by
 * side in the workers instead of one after another in the thread that
 * keeps the reads going (measured: bench/peer-read.sh, BENCHMARKS.md).
 *
 * Entries: NENT read-ahead entries, direct-mapped by position (position p
 * uses entry p % NENT: the read-ahead stops at an entry still holding an
 * older position), and NURG for reads outside the read-ahead. Life:
 * FREE -> NEW -> ENT (the index entry is read) -> DATA (the bytes and the
 * trailer are read) -> DONE, or ABSENT (the owner has not stored the item)
 * or FAIL; a worker takes a terminal entry and frees it. NEW goes straight
 * to DATA when the item's index entry is known from an earlier read
 * (eoff/elen, under mu; 12 bytes per item of the dataset): a worker whose
 * item then fails its check forgets the entry and reads the item again
 * (AGAIN), as the owner may have dropped it and stored it elsewhere. An entry nobody
 * will take (an epoch restarted, a worker gave up) is an orphan: freed as
 * soon as no read of UCX's is writing into its buffer.
 *
 * Nodes: SELF (this one), DOWN (retry at retry_at), CONNECTING (sockaddr:
 * waiting for the listener's hello), UP (ep and remote key in hand), OFF
 * (never: no route, another dataset, nothing served). A failure or a
 * stall closes the endpoint with UCP_EP_CLOSE_FLAG_FORCE, which completes
 * the reads in flight with an error, and the node goes DOWN with a
 * doubling backoff.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordl_peerwire.h"
#include "peer.h"
#include "synergy_env.h"
#include "util.h"

#ifdef HAVE_UCX

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ucp/api/ucp.h>
#ifdef HAVE_PMIX
#include <pmix.h>
#endif

#define AM_HELLO COORDL_PEER_AM_HELLO
#define HELLO_MAGIC COORDL_PEER_MAGIC
#define HELLO_VERSION COORDL_PEER_VERSION
#define RKEY_MAX COORDL_PEER_RKEY_MAX
#define NENT 1024                  /* read-ahead entries */
#define NURG 128                   /* entries for reads outside the read-ahead */
/* Read-ahead items being read at once. An item whose index entry is not
 * known yet takes two gets, the entry and then its bytes (in the first
 * epoch that reads from peers, about half of the window waits for
 * entries: 32 kept ~16 byte-gets in flight, bench/peer-read.sh). */
#define WINDOW 64
#define HELD_BUDGET (64ULL << 20)  /* bytes read ahead and not yet taken */
#define FIRST_RETRY 0.2            /* s between attempts to reach a node never reached */
#define FIRST_RETRY_MAX 2.0        /* s, the longest of those */
#define BACKOFF_MIN 0.5            /* s before the first reconnection */
#define BACKOFF_MAX 8.0
#define LISTEN_RETRY 2.0           /* s between attempts to listen */
#define MAX_SERVED 1024            /* peers connected to our listener at once */
#define NEVENTS 128
#define PROGRESS_BURST 64          /* worker progress calls between two steps */
#define PMIX_FENCE_S 30
#define NOWNER 0xffff              /* owner not known yet */

enum { E_FREE = 0, E_NEW, E_ENT, E_DATA, E_DONE, E_ABSENT, E_FAIL };
enum { N_SELF = 0, N_DOWN, N_CONNECTING, N_UP, N_OFF };
enum { EV_CONN = 1, EV_HELLO, EV_ERROR };

struct ent {
	int state;
	int ra;                  /* a read-ahead entry (counted in the window) */
	int orphan;              /* nobody will take it */
	int waiters;
	int known;               /* read with the index entry kept from an earlier read */
	uint64_t gen, pos;
	size_t idx;
	int node;
	double t_new, t_issue;
	uint8_t raw[COORDL__CACHE_ENTRY_BYTES];
	uint32_t len;
	uint8_t *buf;
	size_t cap;
	/* Published by the completion callback (in the I/O thread). */
	ucs_status_t status;
	int done;
};

struct cand {                    /* pmix: a process that serves a node */
	int local_rank;
	uint64_t base, index_off, data_off, data_cap;
	uint8_t *rkey;
	size_t rkey_len;
	uint8_t *addr;
	size_t addr_len;
};

struct node {
	int state;
	char host[COORDL__HOST_MAX + 1];
	int port;
	struct sockaddr_storage sa;
	socklen_t salen;
	ucp_ep_h ep;
	ucp_rkey_h rkey;
	uint64_t base, index_off, data_off, data_cap;
	double retry_at, backoff, t_connect;
	int busy;
	int was_up;              /* it has been UP once */
	struct cand *cand;       /* pmix */
	int ncand, cur;
};

struct served {
	ucp_ep_h ep;
	struct coordl_peer_hello hello;      /* sent from here: valid until the ep closes */
};

struct closing {
	void *req;               /* the close request, or NULL when it completed at once */
	ucp_rkey_h rkey;         /* destroyed once the close completed */
};

struct event {
	int kind;
	ucp_ep_h ep;
	ucp_conn_request_h conn;
	struct coordl_peer_hello hello;
	uint8_t rkey[RKEY_MAX];
	size_t rkey_len;
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
	int serves;              /* this process serves its node's segment */

	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_mem_h memh;
	void *rkey_buf;
	size_t rkey_len;
	ucp_listener_h listener;
	int efd, wakefd;
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
	/* The index entry of each item last read from its owner (elen 0:
	 * none): later reads of the item take one get instead of two. An
	 * owner that dropped or moved the item since gives bytes that fail
	 * their check; the item is then read again with a fresh entry. */
	uint64_t *eoff;
	uint32_t *elen;
	int fixed, disabled;
	uint64_t *order;
	size_t n;
	uint64_t base, ra_next, gen;
	int ra_busy;
	uint64_t held;
	struct ent ent[NENT + NURG];
	struct served served[MAX_SERVED];
	struct closing *closing;
	int nclosing, closing_cap;

	pthread_mutex_t ev_mu;
	struct event *ev;
	int nev;

	/* Statistics of the epoch (under mu). */
	uint64_t hits, bytes, absent, fallbacks, bad, stalls, failures, rejected;
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

/* ---- UCX callbacks (inside ucp_worker_progress, without mu) ---- */

static void push_event(struct coordl__peer *p, const struct event *ev)
{
	pthread_mutex_lock(&p->ev_mu);
	if (p->nev < NEVENTS)
		p->ev[p->nev++] = *ev;
	pthread_mutex_unlock(&p->ev_mu);
}

static void get_cb(void *req, ucs_status_t status, void *arg)
{
	struct ent *e = arg;

	e->status = status;
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
	ucp_request_free(req);
}

static void send_cb(void *req, ucs_status_t status, void *arg)
{
	(void)status;
	(void)arg;
	ucp_request_free(req);
}

static void err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct event ev;

	(void)status;
	memset(&ev, 0, sizeof(ev));
	ev.kind = EV_ERROR;
	ev.ep = ep;
	push_event(arg, &ev);
}

static void conn_cb(ucp_conn_request_h conn, void *arg)
{
	struct event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = EV_CONN;
	ev.conn = conn;
	push_event(arg, &ev);
}

static ucs_status_t hello_cb(void *arg, const void *header, size_t header_length, void *data,
			     size_t length, const ucp_am_recv_param_t *param)
{
	struct event *ev;

	/* Only a small eager hello with its reply endpoint is one of ours. */
	if (header_length != sizeof(struct coordl_peer_hello) || length > RKEY_MAX ||
	    (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
	    !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP))
		return UCS_OK;
	if (!(ev = calloc(1, sizeof(*ev))))
		return UCS_OK;
	ev->kind = EV_HELLO;
	ev->ep = param->reply_ep;
	memcpy(&ev->hello, header, sizeof(ev->hello));
	memcpy(ev->rkey, data, length);
	ev->rkey_len = length;
	push_event(arg, ev);
	free(ev);
	return UCS_OK;
}

/* ---- endpoints ---- */

/* Close ep at once (reads in flight complete with an error); destroy rkey
 * when the close has completed. */
static void close_ep(struct coordl__peer *p, ucp_ep_h ep, ucp_rkey_h rkey)
{
	ucp_request_param_t prm;
	void *req;

	memset(&prm, 0, sizeof(prm));
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
	prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
	req = ucp_ep_close_nbx(ep, &prm);
	if (UCS_PTR_IS_ERR(req))
		req = NULL;
	if (!req) {
		if (rkey)
			ucp_rkey_destroy(rkey);
		return;
	}
	if (p->nclosing == p->closing_cap) {
		int cap = p->closing_cap ? 2 * p->closing_cap : 16;
		struct closing *c = realloc(p->closing, (size_t)cap * sizeof(*c));
		if (!c) {
			/* Out of memory: leak the key rather than free it under
			 * a close in flight. */
			return;
		}
		p->closing = c;
		p->closing_cap = cap;
	}
	p->closing[p->nclosing].req = req;
	p->closing[p->nclosing].rkey = rkey;
	p->nclosing++;
}

static void poll_closing(struct coordl__peer *p)
{
	for (int i = 0; i < p->nclosing;) {
		struct closing *c = &p->closing[i];
		if (ucp_request_check_status(c->req) == UCS_INPROGRESS) {
			i++;
			continue;
		}
		ucp_request_free(c->req);
		if (c->rkey)
			ucp_rkey_destroy(c->rkey);
		*c = p->closing[--p->nclosing];
	}
}

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
	if (n->ep)
		close_ep(p, n->ep, n->rkey);
	else if (n->rkey)
		ucp_rkey_destroy(n->rkey);
	n->ep = NULL;
	n->rkey = NULL;
	__atomic_store_n(&n->state, N_DOWN, __ATOMIC_RELAXED);
	if (!n->was_up) {
		/* Never reached yet: the nodes of a job start within moments
		 * of each other, so keep trying often, backing off to
		 * FIRST_RETRY_MAX for a node that does not answer. */
		n->backoff = n->backoff < FIRST_RETRY ? FIRST_RETRY : n->backoff * 2;
		if (n->backoff > FIRST_RETRY_MAX)
			n->backoff = FIRST_RETRY_MAX;
		n->retry_at = now + n->backoff;
	} else {
		n->backoff = n->backoff < BACKOFF_MIN ? BACKOFF_MIN : n->backoff * 2;
		if (n->backoff > BACKOFF_MAX)
			n->backoff = BACKOFF_MAX;
		n->retry_at = now + n->backoff;
	}
	/* pmix: the next process of that node, if it has several. */
	if (n->ncand > 1)
		n->cur = (n->cur + 1) % n->ncand;
	p->failures++;
}

/* Node k answered: reads go to it again, and a note about its failure
 * (at start, nodes often try each other before all of them listen) is
 * dropped. */
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
	ucp_ep_params_t ep;
	ucs_status_t st;

	memset(&ep, 0, sizeof(ep));
	ep.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = err_cb;
	ep.err_handler.arg = p;
	if (p->wireup == COORDL__WIREUP_PMIX) {
		struct cand *c = &n->cand[n->cur];
		ep.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
		ep.address = (const ucp_address_t *)c->addr;
		st = ucp_ep_create(p->worker, &ep, &n->ep);
		if (st == UCS_OK && (st = ucp_ep_rkey_unpack(n->ep, c->rkey, &n->rkey)) != UCS_OK) {
			close_ep(p, n->ep, NULL);
			n->ep = NULL;
		}
		if (st != UCS_OK) {
			n->ep = NULL;
			__atomic_store_n(&n->state, N_CONNECTING, __ATOMIC_RELAXED); /* so that node_down takes it */
			node_down(p, k, now, ucs_status_string(st));
			return;
		}
		n->base = c->base;
		n->index_off = c->index_off;
		n->data_off = c->data_off;
		n->data_cap = c->data_cap;
		node_up(p, k);
		return;
	}
	ep.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
	ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID;
	ep.sockaddr.addr = (const struct sockaddr *)&n->sa;
	ep.sockaddr.addrlen = n->salen;
	st = ucp_ep_create(p->worker, &ep, &n->ep);
	if (st != UCS_OK) {
		n->ep = NULL;
		__atomic_store_n(&n->state, N_CONNECTING, __ATOMIC_RELAXED);
		node_down(p, k, now, ucs_status_string(st));
		return;
	}
	__atomic_store_n(&n->state, N_CONNECTING, __ATOMIC_RELAXED);
	n->t_connect = now;
}

/* The listener's hello arrived on one of our endpoints. */
static void on_hello(struct coordl__peer *p, struct event *ev, double now)
{
	const struct coordl_peer_hello *h = &ev->hello;
	struct node *n = NULL;
	int k;

	for (k = 0; k < p->nnodes; k++)
		if (p->nodes[k].state == N_CONNECTING && p->nodes[k].ep == ev->ep) {
			n = &p->nodes[k];
			break;
		}
	if (!n)
		return;
	if (p->note_node == k) {
		/* What it says replaces a failure noted while it started. */
		p->note[0] = '\0';
		p->note_node = -1;
	}
	if (h->magic != HELLO_MAGIC || h->version != HELLO_VERSION || h->node != (uint32_t)k ||
	    h->tag != p->tag) {
		set_note(p, "peer node %d (%s:%d) is not this job's node %d: not used", k, n->host,
			 n->port, k);
		close_ep(p, n->ep, NULL);
		n->ep = NULL;
		__atomic_store_n(&n->state, N_OFF, __ATOMIC_RELAXED);
		return;
	}
	if (h->signature != p->signature || h->nitems != p->nitems) {
		set_note(p, "peer node %d (%s:%d) caches another dataset (%llu items): not used", k,
			 n->host, n->port, (unsigned long long)h->nitems);
		close_ep(p, n->ep, NULL);
		n->ep = NULL;
		__atomic_store_n(&n->state, N_OFF, __ATOMIC_RELAXED);
		return;
	}
	if (!h->serves || h->rkey_len != ev->rkey_len) {
		/* The node caches nothing: its part is always read from storage. */
		close_ep(p, n->ep, NULL);
		n->ep = NULL;
		__atomic_store_n(&n->state, N_OFF, __ATOMIC_RELAXED);
		return;
	}
	if (ucp_ep_rkey_unpack(n->ep, ev->rkey, &n->rkey) != UCS_OK) {
		node_down(p, k, now, "its remote key cannot be unpacked");
		return;
	}
	n->base = h->base;
	n->index_off = h->index_off;
	n->data_off = h->data_off;
	n->data_cap = h->data_cap;
	node_up(p, k);
}

/* Is this address one of the job's nodes'? */
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

/* A peer connects to our listener: check it, accept, send the hello. */
static void on_conn(struct coordl__peer *p, ucp_conn_request_h conn)
{
	ucp_conn_request_attr_t at;
	ucp_request_param_t prm;
	ucp_ep_params_t ep;
	struct served *s = NULL;
	void *req;

	memset(&at, 0, sizeof(at));
	at.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID | UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
	for (int i = 0; i < MAX_SERVED; i++)
		if (!p->served[i].ep) {
			s = &p->served[i];
			break;
		}
	if (!s || ucp_conn_request_query(conn, &at) != UCS_OK || at.client_id != p->tag ||
	    !known_peer(p, &at.client_address)) {
		p->rejected++;
		ucp_listener_reject(p->listener, conn);
		return;
	}
	memset(&ep, 0, sizeof(ep));
	ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
			UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep.conn_request = conn;
	ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep.err_handler.cb = err_cb;
	ep.err_handler.arg = p;
	if (ucp_ep_create(p->worker, &ep, &s->ep) != UCS_OK) {
		s->ep = NULL;
		return;
	}
	memset(&s->hello, 0, sizeof(s->hello));
	s->hello.magic = HELLO_MAGIC;
	s->hello.version = HELLO_VERSION;
	s->hello.node = (uint32_t)p->me;
	s->hello.tag = p->tag;
	s->hello.signature = p->signature;
	s->hello.nitems = p->nitems;
	s->hello.serves = p->serves;
	if (p->serves) {
		s->hello.base = (uint64_t)(uintptr_t)p->lay.base;
		s->hello.index_off = p->lay.index_off;
		s->hello.data_off = p->lay.data_off;
		s->hello.data_cap = p->lay.data_cap;
		s->hello.rkey_len = (uint32_t)p->rkey_len;
	}
	memset(&prm, 0, sizeof(prm));
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
	prm.cb.send = send_cb;
	prm.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
	req = ucp_am_send_nbx(s->ep, AM_HELLO, &s->hello, sizeof(s->hello),
			      p->serves ? p->rkey_buf : NULL, p->serves ? p->rkey_len : 0, &prm);
	if (UCS_PTR_IS_ERR(req)) {
		close_ep(p, s->ep, NULL);
		s->ep = NULL;
	}
}

static void on_error(struct coordl__peer *p, ucp_ep_h ep, double now)
{
	for (int k = 0; k < p->nnodes; k++)
		if (p->nodes[k].ep == ep) {
			node_down(p, k, now, "the connection failed");
			return;
		}
	for (int i = 0; i < MAX_SERVED; i++)
		if (p->served[i].ep == ep) {
			close_ep(p, ep, NULL);
			p->served[i].ep = NULL;
			return;
		}
}

static void handle_events(struct coordl__peer *p, double now)
{
	struct event *ev;
	int n;

	pthread_mutex_lock(&p->ev_mu);
	n = p->nev;
	if (n == 0) {
		pthread_mutex_unlock(&p->ev_mu);
		return;
	}
	ev = malloc((size_t)n * sizeof(*ev));
	if (ev)
		memcpy(ev, p->ev, (size_t)n * sizeof(*ev));
	p->nev = 0;
	pthread_mutex_unlock(&p->ev_mu);
	if (!ev)
		return;
	for (int i = 0; i < n; i++) {
		if (ev[i].kind == EV_CONN) {
			if (p->listener)
				on_conn(p, ev[i].conn);
		} else if (ev[i].kind == EV_HELLO) {
			on_hello(p, &ev[i], now);
		} else if (ev[i].kind == EV_ERROR) {
			on_error(p, ev[i].ep, now);
		}
	}
	free(ev);
}

/*
 * Is the node's address taken (a listening socket bound to it)? Asked of
 * the kernel with a plain socket bound as UCX binds its listener
 * (SO_REUSEADDR, CM_REUSEADDR=y: a port in TIME_WAIT is free, one with a
 * listener is not). While another process of this node listens there,
 * this one keeps out of UCX's way: ucp_listener_create() would log a bind
 * error (UCX ERROR ... Address already in use) at every retry, in the
 * job's output, for what is the normal state of every process of a node
 * but its first. 1: in use; 0: free, or cannot tell (then UCX tries, and
 * reports what goes wrong).
 */
static int addr_in_use(const struct node *n)
{
	int fd, one = 1, busy = 0;

	if ((fd = socket(n->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	    bind(fd, (const struct sockaddr *)&n->sa, n->salen) < 0 && errno == EADDRINUSE)
		busy = 1;
	close(fd);
	return busy;
}

static void try_listen(struct coordl__peer *p, double now)
{
	ucp_listener_params_t lp;
	ucs_status_t st;

	if (addr_in_use(&p->nodes[p->me])) {
		p->listen_at = now + LISTEN_RETRY;
		if (!p->listen_noted) {
			p->listen_noted = 1;
			set_note(p, "%s:%d is in use: another process of this node serves its part "
				 "(or another program holds the port); retrying every %.0f s",
				 p->nodes[p->me].host, p->nodes[p->me].port, LISTEN_RETRY);
		}
		return;
	}
	memset(&lp, 0, sizeof(lp));
	lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
	lp.sockaddr.addr = (const struct sockaddr *)&p->nodes[p->me].sa;
	lp.sockaddr.addrlen = p->nodes[p->me].salen;
	lp.conn_handler.cb = conn_cb;
	lp.conn_handler.arg = p;
	st = ucp_listener_create(p->worker, &lp, &p->listener);
	if (st != UCS_OK) {
		p->listener = NULL;
		p->listen_at = now + LISTEN_RETRY;
		if (!p->listen_noted) {
			p->listen_noted = 1;
			set_note(p, "cannot listen on %s:%d (%s): another process of this node "
				 "serves its part, or none does (retrying)",
				 p->nodes[p->me].host, p->nodes[p->me].port, ucs_status_string(st));
		}
	}
}

/* ---- reads ---- */

static int terminal(int st)
{
	return st == E_DONE || st == E_ABSENT || st == E_FAIL;
}

/* Leave NEW/ENT/DATA for a terminal state (or FREE for an orphan). */
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

static int issue(struct coordl__peer *p, struct ent *e, void *buf, size_t len, uint64_t raddr,
		 double now)
{
	struct node *n = &p->nodes[e->node];
	ucp_request_param_t prm;
	void *req;

	memset(&prm, 0, sizeof(prm));
	prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
			   UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
	prm.cb.send = get_cb;
	prm.user_data = e;
	e->done = 0;
	req = ucp_get_nbx(n->ep, buf, len, raddr, n->rkey, &prm);
	if (UCS_PTR_IS_ERR(req)) {
		node_down(p, e->node, now, ucs_status_string(UCS_PTR_STATUS(req)));
		return -1;
	}
	e->t_issue = now;
	n->busy++;
	return 0;
}

/* Item e->idx's entry is known from an earlier read and still fits the
 * node's data area and max_item, and e's buffer is ready for it: 1 (with
 * e->len set), else 0 (read the entry first). */
static int known_entry(struct coordl__peer *p, struct ent *e, const struct node *n)
{
	uint64_t off;
	uint32_t len;

	if (!p->elen || !(len = p->elen[e->idx]))
		return 0;
	off = p->eoff[e->idx];
	if (len > p->max_item || off > n->data_cap ||
	    (uint64_t)len + COORDL__CACHE_TRAILER > n->data_cap - off)
		return 0;
	if (e->cap < (size_t)len + COORDL__CACHE_TRAILER) {
		uint8_t *b = realloc(e->buf, (size_t)len + COORDL__CACHE_TRAILER);
		if (!b)
			return 0;
		e->buf = b;
		e->cap = (size_t)len + COORDL__CACHE_TRAILER;
	}
	e->len = len;
	return 1;
}

static void advance(struct coordl__peer *p, struct ent *e, double now)
{
	struct node *n = &p->nodes[e->node];
	uint64_t off;
	uint32_t len;

	switch (e->state) {
	case E_NEW:
		e->known = 0;
		if (e->orphan) {
			finish(p, e, E_FREE);
		} else if (n->state == N_UP && known_entry(p, e, n)) {
			e->known = 1;
			if (issue(p, e, e->buf, (size_t)e->len + COORDL__CACHE_TRAILER,
				  n->base + n->data_off + p->eoff[e->idx], now) == 0)
				e->state = E_DATA;
			else
				finish(p, e, E_FAIL);
		} else if (n->state == N_UP) {
			if (issue(p, e, e->raw, sizeof(e->raw),
				  n->base + n->index_off + (uint64_t)e->idx * COORDL__CACHE_ENTRY_BYTES,
				  now) == 0)
				e->state = E_ENT;
			else
				finish(p, e, E_FAIL);
		} else if (n->state == N_OFF) {
			finish(p, e, E_ABSENT);
		} else {
			/* Not connected (yet, or any more): storage, at once. */
			finish(p, e, E_FAIL);
		}
		break;
	case E_ENT:
	case E_DATA:
		if (!__atomic_load_n(&e->done, __ATOMIC_ACQUIRE)) {
			if (now - e->t_issue > p->timeout && n->state == N_UP) {
				p->stalls++;
				node_down(p, e->node, now, "a read took longer than the peer deadline");
			}
			break;
		}
		e->done = 0;
		n->busy--;
		if (e->status != UCS_OK) {
			finish(p, e, E_FAIL);
			break;
		}
		if (e->state == E_ENT) {
			if (p->elen)
				p->elen[e->idx] = 0;
			if (!coordl__cache_entry_ready(e->raw, n->data_cap, &off, &len)) {
				finish(p, e, E_ABSENT);
				break;
			}
			if (len > p->max_item) {
				p->bad++;
				finish(p, e, E_FAIL);
				break;
			}
			if (e->cap < (size_t)len + COORDL__CACHE_TRAILER) {
				uint8_t *b = realloc(e->buf, (size_t)len + COORDL__CACHE_TRAILER);
				if (!b) {
					finish(p, e, E_FAIL);
					break;
				}
				e->buf = b;
				e->cap = (size_t)len + COORDL__CACHE_TRAILER;
			}
			e->len = len;
			if (p->elen) {
				p->eoff[e->idx] = off;
				p->elen[e->idx] = len;
			}
			if (n->state != N_UP ||
			    issue(p, e, e->buf, (size_t)len + COORDL__CACHE_TRAILER,
				  n->base + n->data_off + off, now) < 0)
				finish(p, e, E_FAIL);
			else
				e->state = E_DATA;
			break;
		}
		/* The bytes and the trailer are in: the worker that takes
		 * them checks the trailer (checked()), so that this thread
		 * only moves bytes. */
		finish(p, e, E_DONE);
		break;
	default:
		break;
	}
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

static void step(struct coordl__peer *p, double now)
{
	handle_events(p, now);
	if (p->wireup == COORDL__WIREUP_SOCKADDR && !p->listener && now >= p->listen_at)
		try_listen(p, now);
	for (int k = 0; k < p->nnodes; k++) {
		struct node *n = &p->nodes[k];
		if (n->state == N_DOWN && now >= n->retry_at)
			connect_node(p, k, now);
		else if (n->state == N_CONNECTING && now - n->t_connect > p->timeout + 1.0)
			node_down(p, k, now, "no answer to the connection");
	}
	fill(p, now);
	for (int i = 0; i < NENT + NURG; i++)
		if (p->ent[i].state != E_FREE && !terminal(p->ent[i].state))
			advance(p, &p->ent[i], now);
	poll_closing(p);
}

/* Progress the worker up to PROGRESS_BURST times while it reports work;
 * returns whether it did any. */
static int progress_burst(ucp_worker_h w)
{
	int n = 0;

	while (n < PROGRESS_BURST && ucp_worker_progress(w))
		n++;
	return n > 0;
}

static void *io_main(void *arg)
{
	struct coordl__peer *p = arg;
	struct pollfd fds[2];

	fds[0].fd = p->efd;
	fds[0].events = POLLIN;
	fds[1].fd = p->wakefd;
	fds[1].events = POLLIN;
	for (;;) {
		int busy = 0;
		uint64_t v;
		ssize_t r;

		pthread_mutex_lock(&p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		step(p, coordl__now());
		for (int k = 0; k < p->nnodes && !busy; k++)
			busy = p->nodes[k].busy > 0 || p->nodes[k].state == N_CONNECTING;
		busy = busy || p->nclosing > 0;
		pthread_mutex_unlock(&p->mu);
		/* A bounded burst: a connection that keeps UCX busy (a peer
		 * that stalls or died mid-transfer can make every call report
		 * progress) must not keep the thread from its deadlines. */
		if (progress_burst(p->worker))
			continue;
		if (ucp_worker_arm(p->worker) == UCS_ERR_BUSY)
			continue;
		/* Deadlines and reconnections are looked at every 10 ms
		 * while anything is in flight, else every 100 ms. */
		if (poll(fds, 2, busy ? 10 : 100) > 0 && (fds[1].revents & POLLIN))
			r = read(p->wakefd, &v, sizeof(v));
		(void)r;
	}
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

/* Exchange worker addresses and keys through PMIx and pick, for each
 * other node, the processes that serve it. */
static int pmix_wireup(struct coordl__peer *p, char *why, size_t whylen)
{
	static int seq;
	pmix_proc_t me, wild, proc;
	pmix_value_t val, *v;
	pmix_info_t info[2];
	ucp_address_t *addr = NULL;
	size_t addr_len = 0, blob_len;
	struct coordl_peer_pmix_blob *b = NULL;
	uint32_t nodeid, nnodes, size, lrank;
	char key[64];
	bool collect = true;
	int timeout = PMIX_FENCE_S, rv = -1, rc;

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
	if (ucp_worker_get_address(p->worker, &addr, &addr_len) != UCS_OK) {
		snprintf(why, whylen, "ucp_worker_get_address failed");
		return -1;
	}
	blob_len = sizeof(*b) + (p->serves ? p->rkey_len : 0) + addr_len;
	if (!(b = calloc(1, blob_len)) || !(p->nodes = calloc(nnodes, sizeof(*p->nodes)))) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	b->magic = HELLO_MAGIC;
	b->version = HELLO_VERSION;
	b->node = nodeid;
	b->local_rank = lrank;
	b->serves = (uint32_t)p->serves;
	b->signature = p->signature;
	b->nitems = p->nitems;
	if (p->serves) {
		b->base = (uint64_t)(uintptr_t)p->lay.base;
		b->index_off = p->lay.index_off;
		b->data_off = p->lay.data_off;
		b->data_cap = p->lay.data_cap;
		b->rkey_len = (uint32_t)p->rkey_len;
		memcpy(b + 1, p->rkey_buf, p->rkey_len);
	}
	b->addr_len = (uint32_t)addr_len;
	memcpy((uint8_t *)(b + 1) + b->rkey_len, addr, addr_len);
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
		struct cand *c;
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
		if (pb.magic != HELLO_MAGIC || pb.version != HELLO_VERSION || pb.node >= nnodes ||
		    pb.node == nodeid || !pb.serves || pb.signature != p->signature ||
		    pb.nitems != p->nitems || pb.rkey_len > RKEY_MAX ||
		    sizeof(pb) + pb.rkey_len + pb.addr_len != v->data.bo.size) {
			PMIX_VALUE_RELEASE(v);
			continue;
		}
		n = &p->nodes[pb.node];
		if (!(c = realloc(n->cand, (size_t)(n->ncand + 1) * sizeof(*c)))) {
			PMIX_VALUE_RELEASE(v);
			continue;
		}
		n->cand = c;
		c = &n->cand[n->ncand];
		memset(c, 0, sizeof(*c));
		c->local_rank = (int)pb.local_rank;
		c->base = pb.base;
		c->index_off = pb.index_off;
		c->data_off = pb.data_off;
		c->data_cap = pb.data_cap;
		c->rkey_len = pb.rkey_len;
		c->addr_len = pb.addr_len;
		if (!(c->rkey = malloc(pb.rkey_len ? pb.rkey_len : 1)) ||
		    !(c->addr = malloc(pb.addr_len ? pb.addr_len : 1))) {
			free(c->rkey);
			free(c->addr);
			PMIX_VALUE_RELEASE(v);
			continue;
		}
		memcpy(c->rkey, v->data.bo.bytes + sizeof(pb), pb.rkey_len);
		memcpy(c->addr, v->data.bo.bytes + sizeof(pb) + pb.rkey_len, pb.addr_len);
		n->ncand++;
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
	if (addr)
		ucp_worker_release_address(p->worker, addr);
	return rv;
}
#endif

/* ---- public ---- */

coordl__peer_t *coordl__peer_create(coordl__cache_t *cache, const coordl__peer_opts_t *o,
				    char *why, size_t whylen)
{
	const coordl__env_t *env = o->env;
	struct coordl__peer *p = NULL;
	ucp_config_t *cfg = NULL;
	ucp_params_t up;
	ucp_worker_params_t wp;
	ucp_am_handler_param_t ap;
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
	if (!(p = calloc(1, sizeof(*p)))) {
		snprintf(why, whylen, "peers: out of memory");
		return NULL;
	}
	p->efd = p->wakefd = -1;
	p->note_node = -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_mutex_init(&p->ev_mu, NULL);
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
	    !(p->ev = calloc(NEVENTS, sizeof(struct event)))) {
		snprintf(why, whylen, "peers: out of memory");
		goto out;
	}
	memset(p->owner, 0xff, (o->nitems ? o->nitems : 1) * sizeof(uint16_t));
	/* Without room for them, every read takes its index entry first. */
	p->eoff = calloc(o->nitems ? o->nitems : 1, sizeof(uint64_t));
	p->elen = p->eoff ? calloc(o->nitems ? o->nitems : 1, sizeof(uint32_t)) : NULL;

	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK) {
		snprintf(why, whylen, "peers: UCX configuration cannot be read (UCX_* variables)");
		goto out;
	}
	/* A listener of the previous loader of this job (a restarted step, a
	 * loader made again) leaves its port in TIME_WAIT for a minute: take
	 * it over, unless the user said otherwise. Two listeners never share
	 * a port either way. */
	if (!getenv("UCX_TCP_CM_REUSEADDR") && !getenv("UCX_CM_REUSEADDR"))
		(void)ucp_config_modify(cfg, "CM_REUSEADDR", "y");
	memset(&up, 0, sizeof(up));
	up.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
	up.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
	up.name = "coordl";
	if (ucp_init(&up, cfg, &p->ctx) != UCS_OK) {
		p->ctx = NULL;
		snprintf(why, whylen, "peers: UCX cannot start (ucp_init)");
		goto out;
	}
	memset(&wp, 0, sizeof(wp));
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_CLIENT_ID;
	wp.thread_mode = UCS_THREAD_MODE_SINGLE;
	wp.client_id = p->tag;
	if (ucp_worker_create(p->ctx, &wp, &p->worker) != UCS_OK) {
		p->worker = NULL;
		snprintf(why, whylen, "peers: UCX worker cannot start");
		goto out;
	}
	if (ucp_worker_get_efd(p->worker, &p->efd) != UCS_OK ||
	    (p->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		snprintf(why, whylen, "peers: no wakeup file descriptor");
		goto out;
	}
	memset(&ap, 0, sizeof(ap));
	ap.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
			UCP_AM_HANDLER_PARAM_FIELD_ARG;
	ap.id = AM_HELLO;
	ap.cb = hello_cb;
	ap.arg = p;
	if (ucp_worker_set_am_recv_handler(p->worker, &ap) != UCS_OK) {
		snprintf(why, whylen, "peers: cannot register the hello handler");
		goto out;
	}
	if (p->serves) {
		ucp_mem_map_params_t mp;
		memset(&mp, 0, sizeof(mp));
		mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
				UCP_MEM_MAP_PARAM_FIELD_FLAGS;
		mp.address = p->lay.base;
		mp.length = p->lay.seg_size;
		/* The segment is sparse: on transports that pin memory, let
		 * it be registered on demand instead of touching all of it. */
		mp.flags = UCP_MEM_MAP_NONBLOCK;
		if (ucp_mem_map(p->ctx, &mp, &p->memh) != UCS_OK ||
		    ucp_rkey_pack(p->ctx, p->memh, &p->rkey_buf, &p->rkey_len) != UCS_OK ||
		    p->rkey_len > RKEY_MAX) {
			snprintf(why, whylen, "peers: the cache segment cannot be registered with UCX");
			goto out;
		}
	}
	if (wireup == COORDL__WIREUP_PMIX) {
#ifdef HAVE_PMIX
		if (pmix_wireup(p, why, whylen) < 0)
			goto out;
#endif
	} else {
		struct resolve_arg ra = { p, why, whylen };
		p->nnodes = env->nnodes;
		p->me = env->node_index;
		if (!(p->nodes = calloc((size_t)p->nnodes, sizeof(*p->nodes)))) {
			snprintf(why, whylen, "peers: out of memory");
			goto out;
		}
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
	if (cfg)
		ucp_config_release(cfg);
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
	if (p->worker) {
		double until;
		for (int k = 0; p->nodes && k < p->nnodes; k++) {
			if (p->nodes[k].ep)
				close_ep(p, p->nodes[k].ep, p->nodes[k].rkey);
			else if (p->nodes[k].rkey)
				ucp_rkey_destroy(p->nodes[k].rkey);
			p->nodes[k].ep = NULL;
			p->nodes[k].rkey = NULL;
		}
		for (int i = 0; i < MAX_SERVED; i++)
			if (p->served[i].ep)
				close_ep(p, p->served[i].ep, NULL);
		if (p->listener)
			ucp_listener_destroy(p->listener);
		/* Forced closes and the reads they fail complete in progress. */
		until = coordl__now() + 2.0;
		do {
			progress_burst(p->worker);
			poll_closing(p);
		} while (p->nclosing > 0 && coordl__now() < until);
		for (int i = 0; i < NENT + NURG; i++)
			if (p->ent[i].state == E_ENT || p->ent[i].state == E_DATA)
				p->ent[i].buf = NULL; /* UCX may still own it: leak, never free */
	}
	if (p->rkey_buf)
		ucp_rkey_buffer_release(p->rkey_buf);
	if (p->memh)
		ucp_mem_unmap(p->ctx, p->memh);
	if (p->worker)
		ucp_worker_destroy(p->worker);
	if (p->ctx)
		ucp_cleanup(p->ctx);
#ifdef HAVE_PMIX
	if (p->pmix_inited)
		PMIx_Finalize(NULL, 0);
#endif
	if (p->wakefd >= 0)
		close(p->wakefd);
	for (int i = 0; i < NENT + NURG; i++)
		free(p->ent[i].buf);
	for (int k = 0; p->nodes && k < p->nnodes; k++) {
		for (int c = 0; c < p->nodes[k].ncand; c++) {
			free(p->nodes[k].cand[c].rkey);
			free(p->nodes[k].cand[c].addr);
		}
		free(p->nodes[k].cand);
	}
	free(p->nodes);
	free(p->closing);
	free(p->ev);
	free(p->owner);
	free(p->eoff);
	free(p->elen);
	free(p->order);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->ev_mu);
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
	for (int i = 0; i < NENT + NURG; i++) {
		struct ent *e = &p->ent[i];
		if (e->state == E_FREE)
			continue;
		if (e->state == E_ENT || e->state == E_DATA) {
			e->orphan = 1; /* freed once UCX is done with its buffer */
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
static int take(struct coordl__peer *p, struct ent *e, uint8_t **buf, size_t *cap, size_t *len,
		int *known)
{
	int rv;

	*known = e->known;
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
 * A HIT's bytes (buf[0..len), the trailer after them) as read from the
 * peer: used only when the trailer matches the bytes and the item's index
 * (else the item was dropped or its room reused while it was read, or it
 * is not the item at all: never handed out). Runs in the worker, without
 * the lock, so that the checks of several workers run side by side and
 * the I/O thread only moves bytes. Counts the outcome.
 */
#define AGAIN 2 /* get_once(): read the item again, with a fresh index entry */

static int checked(struct coordl__peer *p, size_t idx, const uint8_t *buf, size_t len, int known)
{
	uint64_t sum;
	int ok;

	memcpy(&sum, buf + len, sizeof(sum));
	ok = sum == coordl__cache_sum(idx, buf, len);
	pthread_mutex_lock(&p->mu);
	if (!ok && known) {
		/* Read where the item was: the owner dropped or moved it
		 * since. Forget that entry; the caller reads it again. */
		if (p->elen)
			p->elen[idx] = 0;
		pthread_mutex_unlock(&p->mu);
		return AGAIN;
	}
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

static int get_once(struct coordl__peer *p, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		    size_t *len)
{
	struct ent *e = NULL;
	struct node *n;
	double deadline;
	int k, rv, known = 0;

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
		for (int i = NENT; i < NENT + NURG; i++)
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
		rv = take(p, e, buf, cap, len, &known);
	}
	pthread_mutex_unlock(&p->mu);
	if (rv == COORDL__PEER_HIT)
		rv = checked(p, idx, *buf, *len, known);
	return rv;
}

int coordl__peer_get(coordl__peer_t *p, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		     size_t *len)
{
	int rv = get_once(p, pos, idx, buf, cap, len);

	/* The item moved on its owner since its entry was read: once more,
	 * outside the read-ahead, which reads the entry first. */
	if (rv == AGAIN && (rv = get_once(p, COORDL__NOPOS, idx, buf, cap, len)) == AGAIN) {
		pthread_mutex_lock(&p->mu);
		p->bad++;
		p->fallbacks++;
		pthread_mutex_unlock(&p->mu);
		rv = COORDL__PEER_FAILED;
	}
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

#else /* !HAVE_UCX */

coordl__peer_t *coordl__peer_create(coordl__cache_t *cache, const coordl__peer_opts_t *o,
				    char *why, size_t whylen)
{
	(void)cache;
	why[0] = '\0';
	if (o->env->wireup != COORDL__WIREUP_OFF && (o->env->peers || o->env->wireup == COORDL__WIREUP_PMIX))
		snprintf(why, whylen, "%s is set but libcoordl was built without UCX: no partitioned cache",
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

#endif
