/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fetch.c: the fetch engine (see fetch.h).
 *
 * State: a fixed array of request entries, sized once so that a worker
 * always finds a free one (read-ahead entries never exceed twice the
 * largest window, cancelled ones the window, urgent ones the workers), a
 * sorted index of the read-ahead entries by position (positions are read
 * ahead in increasing order, so inserting is appending), and one mutex
 * with one condition variable for everything the workers share with the
 * I/O thread. libcurl handles are touched by the I/O thread only; a worker
 * that wants a request started or dropped marks the entry and wakes the
 * I/O thread (curl_multi_wakeup). The response body of an active request
 * is written by libcurl's callback in the I/O thread outside the mutex;
 * nobody else looks at it until the entry is done, under the mutex.
 *
 * Entry life: FREE -> (QUEUED ->) ACTIVE -> DONE | FAILED -> taken by a
 * worker -> FREE, with ACTIVE -> BACKOFF -> ACTIVE for each retry. A
 * read-ahead entry that is dropped while ACTIVE is marked cancelled and
 * freed when the I/O thread has removed its transfer.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "loader/env.h"
#include "loader/fetch.h"
#include "loader/remote.h"
#include "loader/util.h"

enum { E_FREE = 0, E_QUEUED, E_ACTIVE, E_BACKOFF, E_DONE, E_FAILED };

#define WINDOW_START 16
#define WINDOW_MIN 4
#define ADJUST_PERIOD 0.1       /* s between window adjustments */
#define MARGIN 2.0              /* window = rate x base latency x MARGIN + 4 */
#define RATE_PERIODS 30         /* the delivery rate is the best of the last 3 s */
#define LAT_PERIODS 100         /* the base latency the lowest of the last 10 s */
#define HELD_BUDGET (256ULL << 20) /* bytes the read-ahead may hold, fetched but not taken */
#define BUF_KEEP (4u << 20)     /* a free entry keeps a buffer up to this size */
#define DOWN_PAUSE 1.0          /* s that requests fail at once when storage is down */
#define DOWN_FAILURES 8         /* ... after this many failures and no success for a deadline */
#define HIST_SUB 8              /* latency histogram: buckets per doubling */
#define HIST_N (30 * HIST_SUB)  /* 1 us .. ~12 days */

struct ent {
	int state;
	int ra;                 /* a read-ahead entry (in the index, counted in the window) */
	int waiters, cancel;
	uint64_t pos;
	size_t idx;
	int attempts;
	double t_first, t_start, retry_at;
	CURL *h;
	struct curl_slist *hdrs;
	uint8_t *buf;
	size_t cap, len;        /* len: written by the callback while ACTIVE */
	uint64_t want, max;
	int overflow, oom, err;
	char why[128];
};

struct pos_ref {
	uint64_t pos;
	int ent;                /* -1: deleted */
};

struct coordl__fetch {
	coordl__source_t *src;
	const coordl__remote_t *rem;
	coordl__cache_t *cache;
	int (*skip)(void *arg, size_t idx);
	void *skip_arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* an entry became DONE or FAILED */
	pthread_t thr;
	int thr_started, stop;
	CURLM *multi;
	struct ent *e;
	int ne;
	int *freelist, nfree;
	struct pos_ref *ix;     /* read-ahead entries by position, sorted */
	size_t ix_head, ix_n, ix_cap;
	/* Read-ahead. */
	uint64_t *order;
	size_t n;
	uint64_t base;          /* position the order was (re)started at */
	uint64_t next;          /* next position to read ahead */
	int readahead, fixed, window, wmax;
	int n_ra;               /* read-ahead entries not yet taken (cancelled excluded) */
	int n_ra_busy;          /* of which still being fetched */
	int n_active, n_queued, n_backoff, n_cancel;
	uint64_t held;          /* bytes of DONE entries */
	double deadline;
	uint64_t max_item;
	/* Window sizing: per adjustment period, items delivered and the
	 * lowest latency seen, kept for the last periods. */
	double p_t0, p_lmin;
	uint64_t p_done;
	double rate_hist[RATE_PERIODS], lat_hist[LAT_PERIODS];
	unsigned n_periods;
	/* Storage health. */
	double fail_since, down_until;
	int fails;              /* transient failures since the last success */
	/* Statistics of the epoch. */
	uint64_t requests, retries, hist_n;
	uint32_t hist[HIST_N];
	unsigned seed;
};

/* ---- Entries and the position index ------------------------------------ */

static struct ent *alloc_ent(struct coordl__fetch *f)
{
	struct ent *e;

	if (f->nfree == 0)
		return NULL;
	e = &f->e[f->freelist[--f->nfree]];
	e->ra = e->waiters = e->cancel = e->attempts = 0;
	e->overflow = e->oom = e->err = 0;
	e->len = 0;
	e->want = 0;
	e->why[0] = '\0';
	return e;
}

static void free_ent(struct coordl__fetch *f, struct ent *e)
{
	if (e->cap > BUF_KEEP) {
		free(e->buf);
		e->buf = NULL;
		e->cap = 0;
	}
	e->state = E_FREE;
	f->freelist[f->nfree++] = (int)(e - f->e);
}

static void ix_add(struct coordl__fetch *f, uint64_t pos, int ent)
{
	/* Compact when the deleted head or the capacity runs out; the array
	 * is sized for every read-ahead entry, so this always makes room. */
	if (f->ix_n == f->ix_cap) {
		size_t k = 0;
		for (size_t i = f->ix_head; i < f->ix_n; i++)
			if (f->ix[i].ent >= 0)
				f->ix[k++] = f->ix[i];
		f->ix_head = 0;
		f->ix_n = k;
	}
	f->ix[f->ix_n].pos = pos;
	f->ix[f->ix_n].ent = ent;
	f->ix_n++;
}

/* The index slot of position pos, or NULL. */
static struct pos_ref *ix_find(struct coordl__fetch *f, uint64_t pos)
{
	size_t lo = f->ix_head, hi = f->ix_n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->ix[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->ix_n && f->ix[lo].pos == pos && f->ix[lo].ent >= 0)
		return &f->ix[lo];
	return NULL;
}

static void ix_del(struct coordl__fetch *f, struct ent *e)
{
	struct pos_ref *r = ix_find(f, e->pos);

	if (r && r->ent == (int)(e - f->e))
		r->ent = -1;
	while (f->ix_head < f->ix_n && f->ix[f->ix_head].ent < 0)
		f->ix_head++;
	if (f->ix_head == f->ix_n)
		f->ix_head = f->ix_n = 0;
}

static int busy(const struct ent *e)
{
	return e->state == E_QUEUED || e->state == E_ACTIVE || e->state == E_BACKOFF;
}

/* Every state change is leave() then enter(): the counters always match
 * the states. */
static void leave(struct coordl__fetch *f, struct ent *e)
{
	if (e->state == E_QUEUED)
		f->n_queued--;
	else if (e->state == E_ACTIVE)
		f->n_active--;
	else if (e->state == E_BACKOFF)
		f->n_backoff--;
	else if (e->state == E_DONE)
		f->held -= e->len;
	if (e->ra && busy(e))
		f->n_ra_busy--;
	e->state = E_FREE;
}

static void enter(struct coordl__fetch *f, struct ent *e, int st)
{
	e->state = st;
	if (st == E_QUEUED)
		f->n_queued++;
	else if (st == E_ACTIVE)
		f->n_active++;
	else if (st == E_BACKOFF)
		f->n_backoff++;
	else if (st == E_DONE)
		f->held += e->len;
	if (e->ra && busy(e))
		f->n_ra_busy++;
}

/* Drop a read-ahead entry nobody waits for. */
static void drop(struct coordl__fetch *f, struct ent *e)
{
	ix_del(f, e);
	f->n_ra--;
	if (e->state == E_ACTIVE) {
		/* Its transfer belongs to the I/O thread, which frees it. */
		f->n_ra_busy--;
		e->ra = 0;
		e->cancel = 1;
		f->n_cancel++;
		return;
	}
	leave(f, e);
	free_ent(f, e);
}

/* ---- Transfers (I/O thread) --------------------------------------------- */

static size_t ent_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct ent *e = arg;
	size_t n = size * nmemb, len = e->len;

	if (len + n > e->max) {
		e->overflow = 1;
		return 0;
	}
	if (len + n > e->cap) {
		size_t nc = e->cap ? e->cap * 2 : 65536;
		uint8_t *q;
		while (nc < len + n)
			nc *= 2;
		if (nc > e->max)
			nc = (size_t)e->max;
		if (!(q = realloc(e->buf, nc))) {
			e->oom = 1;
			return 0;
		}
		e->buf = q;
		e->cap = nc;
	}
	memcpy(e->buf + len, p, n);
	/* Statistics read the length while the transfer runs. */
	__atomic_store_n(&e->len, len + n, __ATOMIC_RELAXED);
	return n;
}

/* The entry is finished without (more) transfers. mu held. */
static void fail(struct coordl__fetch *f, struct ent *e, int err)
{
	e->err = err;
	leave(f, e);
	enter(f, e, E_FAILED);
	if (e->waiters)
		pthread_cond_broadcast(&f->cv);
}

/* Start (or restart) the transfer of e. mu held, I/O thread. */
static void start(struct coordl__fetch *f, struct ent *e, double now)
{
	char why[128];
	double left;

	if (now < f->down_until) {
		snprintf(e->why, sizeof(e->why), "storage failing for %.0f s", now - f->fail_since);
		fail(f, e, EIO);
		return;
	}
	if (!e->h && !(e->h = curl_easy_init())) {
		snprintf(e->why, sizeof(e->why), "cannot start a transfer (curl_easy_init)");
		fail(f, e, ENOMEM);
		return;
	}
	curl_easy_reset(e->h);
	curl_slist_free_all(e->hdrs);
	e->hdrs = NULL;
	if (coordl__remote_easy_init(f->rem, e->h) < 0 ||
	    coordl__remote_prepare(f->rem, f->src, e->idx, e->h, &e->hdrs, &e->want, why,
				   sizeof(why)) < 0) {
		snprintf(e->why, sizeof(e->why), "%s", why);
		fail(f, e, EINVAL);
		return;
	}
	if (e->want > f->max_item) {
		snprintf(e->why, sizeof(e->why), "larger than the item cap (%llu bytes)",
			 (unsigned long long)f->max_item);
		fail(f, e, EINVAL);
		return;
	}
	e->max = e->want ? e->want : f->max_item;
	e->len = 0;
	e->overflow = e->oom = 0;
	if (e->want > e->cap) {
		uint8_t *q = realloc(e->buf, (size_t)e->want);
		if (q) {
			e->buf = q;
			e->cap = (size_t)e->want;
		}
	}
	left = f->deadline - (now - e->t_first);
	curl_easy_setopt(e->h, CURLOPT_WRITEFUNCTION, ent_write);
	curl_easy_setopt(e->h, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->h, CURLOPT_PRIVATE, e);
	curl_easy_setopt(e->h, CURLOPT_TIMEOUT_MS, (long)(left > 0.001 ? left * 1000 : 1));
	if (curl_multi_add_handle(f->multi, e->h) != CURLM_OK) {
		snprintf(e->why, sizeof(e->why), "cannot start a transfer (curl_multi_add_handle)");
		fail(f, e, EIO);
		return;
	}
	leave(f, e);
	e->attempts++;
	e->t_start = now;
	enter(f, e, E_ACTIVE);
}

static void hist_add(struct coordl__fetch *f, double s)
{
	double us = s * 1e6;
	int b = us < 1 ? 0 : (int)(log2(us) * HIST_SUB);

	if (b >= HIST_N)
		b = HIST_N - 1;
	f->hist[b]++;
	f->hist_n++;
}

static double hist_quantile(const struct coordl__fetch *f, double q)
{
	uint64_t want, sum = 0;

	if (f->hist_n == 0)
		return 0;
	want = (uint64_t)ceil(q * (double)f->hist_n);
	if (want < 1)
		want = 1;
	for (int b = 0; b < HIST_N; b++) {
		sum += f->hist[b];
		if (sum >= want)
			return exp2(((double)b + 0.5) / HIST_SUB) * 1e-6;
	}
	return exp2((double)HIST_N / HIST_SUB) * 1e-6;
}

/* A transfer ended. mu held, I/O thread. */
static void finish(struct coordl__fetch *f, struct ent *e, CURLcode rc, double now)
{
	long http = 0;
	int v;
	double b;

	curl_easy_getinfo(e->h, CURLINFO_RESPONSE_CODE, &http);
	curl_multi_remove_handle(f->multi, e->h);
	curl_slist_free_all(e->hdrs);
	e->hdrs = NULL;
	f->requests++;
	if (e->cancel) {
		f->n_cancel--;
		leave(f, e);
		free_ent(f, e);
		return;
	}
	if (e->oom) {
		snprintf(e->why, sizeof(e->why), "out of memory");
		fail(f, e, ENOMEM);
		return;
	}
	v = coordl__remote_verdict(rc, http, e->len, e->want, e->overflow, f->max_item, e->why,
				   sizeof(e->why));
	if (v == COORDL__DONE) {
		double lat = now - e->t_start;
		hist_add(f, lat);
		f->p_done++;
		if (lat < f->p_lmin)
			f->p_lmin = lat;
		f->fail_since = f->down_until = 0;
		f->fails = 0;
		leave(f, e);
		enter(f, e, E_DONE);
		if (e->waiters)
			pthread_cond_broadcast(&f->cv);
		return;
	}
	if (v == COORDL__FAIL) {
		fail(f, e, http == 404 ? ENOENT : EIO);
		return;
	}
	/* Retry, unless the item's deadline or the storage's is over: many
	 * failures and no success for a whole deadline (one slow object,
	 * asked for again as a replacement, is not a dead server). */
	if (f->fail_since == 0)
		f->fail_since = now;
	if (++f->fails >= DOWN_FAILURES && now - f->fail_since >= f->deadline)
		f->down_until = now + DOWN_PAUSE;
	b = coordl__remote_backoff(e->attempts, &f->seed);
	if (now < f->down_until) {
		size_t l = strlen(e->why);
		snprintf(e->why + l, sizeof(e->why) - l, " (storage failing for %.0f s)", now - f->fail_since);
		fail(f, e, EIO);
	} else if (now + b - e->t_first >= f->deadline) {
		size_t l = strlen(e->why);
		snprintf(e->why + l, sizeof(e->why) - l, " (gave up after %d attempts in %.1f s)",
			 e->attempts, now - e->t_first);
		fail(f, e, EIO);
	} else {
		f->retries++;
		leave(f, e);
		e->retry_at = now + b;
		enter(f, e, E_BACKOFF);
	}
}

/* Read ahead along the order while the window and the budget allow. */
static void fill(struct coordl__fetch *f, double now)
{
	if (!f->readahead || !f->order)
		return;
	while (f->next < f->n && f->n_ra_busy < f->window && f->n_ra < 2 * f->window &&
	       f->held < HELD_BUDGET) {
		uint64_t pos = f->next;
		size_t idx = (size_t)f->order[pos], l;
		coordl__cache_ticket_t tk;
		struct ent *e;

		/* Cached now: no read-ahead (should a shrink drop it before a
		 * worker gets there, the worker fetches it on demand). */
		if (f->cache && coordl__cache_get(f->cache, idx, &l, &tk)) {
			coordl__cache_done(f->cache, &tk);
			f->next++;
			continue;
		}
		/* Another node's cache serves it (likewise). */
		if (f->skip && f->skip(f->skip_arg, idx)) {
			f->next++;
			continue;
		}
		if (!(e = alloc_ent(f)))
			break;
		e->ra = 1;
		e->pos = pos;
		e->idx = idx;
		e->t_first = now;
		e->state = E_FREE;
		f->n_ra++;
		ix_add(f, pos, (int)(e - f->e));
		f->next++;
		start(f, e, now);
	}
}

/*
 * Little's law sizes the window: requests in flight = items per second x
 * latency. Both are taken where they are not inflated by the window
 * itself: the rate is the best delivered over the last seconds, the
 * latency the lowest seen (the storage's own, without queueing), and the
 * window is twice their product. While the window is what limits, each
 * period delivers W/L items/s and the next window doubles; once the
 * workers (or the server) are the limit, the rate stops growing and so
 * does the window: a saturated server sees its queue held at about one
 * window, not flooded up to the cap.
 */
static void adjust(struct coordl__fetch *f, double now)
{
	double dt = now - f->p_t0, rate = 0, lbase = INFINITY;
	unsigned k;

	if (dt < ADJUST_PERIOD)
		return;
	k = f->n_periods++;
	f->rate_hist[k % RATE_PERIODS] = (double)f->p_done / dt;
	f->lat_hist[k % LAT_PERIODS] = f->p_lmin;
	if (!f->fixed && f->readahead) {
		for (unsigned i = 0; i < RATE_PERIODS && i < f->n_periods; i++)
			rate = fmax(rate, f->rate_hist[i]);
		for (unsigned i = 0; i < LAT_PERIODS && i < f->n_periods; i++)
			lbase = fmin(lbase, f->lat_hist[i]);
		if (rate > 0 && isfinite(lbase)) {
			double w = ceil(rate * lbase * MARGIN) + 4;
			f->window = w < WINDOW_MIN ? WINDOW_MIN : w > f->wmax ? f->wmax : (int)w;
		}
	}
	f->p_t0 = now;
	f->p_done = 0;
	f->p_lmin = INFINITY;
}

static void *io_main(void *arg)
{
	struct coordl__fetch *f = arg;

	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		double now = coordl__now(), wait = 0.05;
		int running;
		CURLMsg *m;

		if (f->n_cancel || f->n_queued || f->n_backoff) {
			for (int i = 0; i < f->ne; i++) {
				struct ent *e = &f->e[i];
				if (e->state == E_ACTIVE && e->cancel) {
					curl_multi_remove_handle(f->multi, e->h);
					curl_slist_free_all(e->hdrs);
					e->hdrs = NULL;
					f->n_cancel--;
					leave(f, e);
					free_ent(f, e);
				} else if (e->state == E_QUEUED) {
					start(f, e, now);
				} else if (e->state == E_BACKOFF) {
					if (e->retry_at <= now)
						start(f, e, now);
					else if (e->retry_at - now < wait)
						wait = e->retry_at - now;
				}
			}
		}
		fill(f, now);
		adjust(f, now);
		pthread_mutex_unlock(&f->mu);

		curl_multi_perform(f->multi, &running);
		while ((m = curl_multi_info_read(f->multi, &running))) {
			struct ent *e = NULL;
			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&e);
			CURLcode rc = m->data.result;
			pthread_mutex_lock(&f->mu);
			finish(f, e, rc, coordl__now());
			pthread_mutex_unlock(&f->mu);
		}
		curl_multi_poll(f->multi, NULL, 0, (int)(wait * 1000) + 1, NULL);
		pthread_mutex_lock(&f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* ---- API ---------------------------------------------------------------- */

coordl__fetch_t *coordl__fetch_create(coordl__source_t *src, coordl__cache_t *cache,
				      const coordl__fetch_opts_t *o, coordl_error_t *err)
{
	struct coordl__fetch *f;
	int e;

	if (!coordl__source_remote(src)) {
		coordl__errprintf(err, EINVAL, "fetch engine: not a remote dataset");
		return NULL;
	}
	if (o->window < -1 || o->window > COORDL_IO_WINDOW_MAX) {
		coordl__errprintf(err, EINVAL, "io_window=%d: expected -1, 0 or 1..%d", o->window,
				  COORDL_IO_WINDOW_MAX);
		return NULL;
	}
	if (!(f = calloc(1, sizeof(*f)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->src = src;
	f->rem = coordl__source_remote(src);
	f->cache = cache;
	f->readahead = o->window != -1;
	f->fixed = o->window > 0;
	f->wmax = o->window > 0 ? o->window : COORDL_IO_WINDOW_AUTO_MAX;
	f->window = o->window > 0 ? o->window : WINDOW_START;
	f->deadline = (o->deadline_ms > 0 ? o->deadline_ms : COORDL__IO_DEADLINE_MS) / 1000.0;
	f->max_item = o->max_item > 0 ? o->max_item : COORDL__ITEM_MAX;
	f->seed = (unsigned)(coordl__now() * 1e6);
	f->p_t0 = coordl__now();
	f->p_lmin = INFINITY;
	/* Read-ahead entries (2 x window), cancelled ones still in transfer
	 * (at most one window), and one urgent entry per worker thread. */
	f->ne = 3 * f->wmax + COORDL__MAX_THREADS + 8;
	f->ix_cap = 2 * (size_t)f->wmax + 8;
	if (!(f->e = calloc((size_t)f->ne, sizeof(*f->e))) ||
	    !(f->freelist = malloc((size_t)f->ne * sizeof(int))) ||
	    !(f->ix = malloc(f->ix_cap * sizeof(*f->ix)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto fail;
	}
	for (int i = f->ne - 1; i >= 0; i--)
		f->freelist[f->nfree++] = i;
	if (!(f->multi = curl_multi_init())) {
		coordl__errprintf(err, ENOMEM, "fetch engine: curl_multi_init failed");
		goto fail;
	}
	/* Many streams over one HTTP/2 connection; for HTTP/1.1 keep as many
	 * connections open for reuse as there can be requests in flight. */
	curl_multi_setopt(f->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(f->multi, CURLMOPT_MAXCONNECTS, (long)(f->wmax + COORDL__MAX_THREADS / 16 + 16));
	if ((e = pthread_create(&f->thr, NULL, io_main, f)) != 0) {
		coordl__errprintf(err, e, "fetch engine: cannot start the I/O thread: %s", strerror(e));
		goto fail;
	}
	f->thr_started = 1;
	return f;
fail:
	e = errno;
	coordl__fetch_destroy(f);
	errno = e;
	return NULL;
}

void coordl__fetch_destroy(coordl__fetch_t *f)
{
	int e = errno;

	if (!f)
		return;
	if (f->thr_started) {
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_mutex_unlock(&f->mu);
		curl_multi_wakeup(f->multi);
		pthread_join(f->thr, NULL);
	}
	for (int i = 0; f->e && i < f->ne; i++) {
		struct ent *x = &f->e[i];
		if (x->state == E_ACTIVE)
			curl_multi_remove_handle(f->multi, x->h);
		if (x->h)
			curl_easy_cleanup(x->h);
		curl_slist_free_all(x->hdrs);
		free(x->buf);
	}
	if (f->multi)
		curl_multi_cleanup(f->multi);
	free(f->e);
	free(f->freelist);
	free(f->ix);
	free(f->order);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	errno = e;
}

int coordl__fetch_restart(coordl__fetch_t *f, const uint64_t *order, size_t n, uint64_t base)
{
	int rv = 0;

	pthread_mutex_lock(&f->mu);
	/* coordl_set_epoch(0) right after create restarts the order the
	 * engine already reads ahead in: keep what is on its way, and the
	 * statistics of those requests. */
	if (f->order && f->n == n && f->base == base && n > 0 &&
	    memcmp(f->order, order, n * sizeof(*order)) == 0)
		goto out;
	for (int i = 0; i < f->ne; i++) {
		struct ent *e = &f->e[i];
		if (e->state != E_FREE && e->ra)
			drop(f, e);
	}
	if (n > 0) {
		uint64_t *p = realloc(f->order, n * sizeof(*p));
		if (p) {
			memcpy(p, order, n * sizeof(*p));
			f->order = p;
		} else {
			free(f->order);
			f->order = NULL;
			rv = -1;
		}
	}
	f->n = f->order ? n : 0;
	f->next = f->base = base;
	f->requests = f->retries = f->hist_n = 0;
	memset(f->hist, 0, sizeof(f->hist));
out:
	pthread_mutex_unlock(&f->mu);
	curl_multi_wakeup(f->multi);
	if (rv < 0)
		errno = ENOMEM;
	return rv;
}

int coordl__fetch_get(coordl__fetch_t *f, uint64_t pos, size_t idx, uint8_t **buf, size_t *cap,
		      size_t *len, char *why, size_t whylen)
{
	struct pos_ref *r;
	struct ent *e = NULL;
	int rv, err = 0;

	pthread_mutex_lock(&f->mu);
	if (pos != COORDL__NOPOS && f->n_ra && (r = ix_find(f, pos))) {
		e = &f->e[r->ent];
		if (e->idx != idx) {
			drop(f, e);
			e = NULL;
		}
	}
	if (!e) {
		/* Not read ahead (or a replacement): fetch it now. The array
		 * holds one entry per worker beyond the read-ahead. */
		if (!(e = alloc_ent(f))) {
			pthread_mutex_unlock(&f->mu);
			snprintf(why, whylen, "no free request slot");
			errno = EAGAIN;
			return -1;
		}
		e->pos = pos;
		e->idx = idx;
		e->t_first = coordl__now();
		e->state = E_FREE;
		enter(f, e, E_QUEUED);
		if (pos != COORDL__NOPOS && pos >= f->next)
			f->next = pos + 1;
		curl_multi_wakeup(f->multi);
	}
	if (e->ra) {
		/* Taken: no longer part of the read-ahead. */
		ix_del(f, e);
		f->n_ra--;
		if (busy(e))
			f->n_ra_busy--;
		e->ra = 0;
	}
	e->waiters++;
	while (e->state != E_DONE && e->state != E_FAILED)
		pthread_cond_wait(&f->cv, &f->mu);
	e->waiters--;
	if (e->state == E_DONE) {
		uint8_t *b = *buf;
		size_t c = *cap;
		*buf = e->buf;
		*cap = e->cap;
		*len = e->len;
		e->buf = b;
		e->cap = c;
		rv = 0;
	} else {
		snprintf(why, whylen, "%s", e->why);
		err = e->err ? e->err : EIO;
		rv = -1;
	}
	leave(f, e);
	free_ent(f, e);
	pthread_mutex_unlock(&f->mu);
	if (rv < 0)
		errno = err;
	return rv;
}

void coordl__fetch_forget(coordl__fetch_t *f, uint64_t pos)
{
	struct pos_ref *r;

	pthread_mutex_lock(&f->mu);
	if (f->n_ra && (r = ix_find(f, pos)) && f->e[r->ent].waiters == 0)
		drop(f, &f->e[r->ent]);
	pthread_mutex_unlock(&f->mu);
}

void coordl__fetch_stats(coordl__fetch_t *f, coordl_stats_t *st)
{
	uint64_t bytes;

	pthread_mutex_lock(&f->mu);
	bytes = f->held;
	for (int i = 0; i < f->ne; i++)
		if (f->e[i].state == E_ACTIVE && !f->e[i].cancel)
			bytes += __atomic_load_n(&f->e[i].len, __ATOMIC_RELAXED);
	st->requests = f->requests;
	st->retries = f->retries;
	st->req_latency_p50 = hist_quantile(f, 0.50);
	st->req_latency_p90 = hist_quantile(f, 0.90);
	st->req_latency_p99 = hist_quantile(f, 0.99);
	st->io_window = f->readahead ? f->window : 0;
	st->io_inflight = f->n_active;
	st->io_bytes_in_flight = bytes;
	pthread_mutex_unlock(&f->mu);
}

void coordl__fetch_set_skip(coordl__fetch_t *f, int (*skip)(void *arg, size_t idx), void *arg)
{
	pthread_mutex_lock(&f->mu);
	f->skip = skip;
	f->skip_arg = arg;
	pthread_mutex_unlock(&f->mu);
}
