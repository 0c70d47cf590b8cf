/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coord.c: coordinated prep across the loaders of a group (see coord.h).
 *
 * Segment layout (version 1), offsets in bytes:
 *   0          header: geometry (written once by the creator), the robust
 *              process-shared mutex, two futex words, the member table and
 *              the slot table
 *   meta_off   per slot, meta_bytes: its items' control words, then its
 *              labels (int32) and dataset indices (uint64) as a consumer
 *              reads them
 *   data_off   per slot, slot_bytes: the batch's samples
 * The file is as long as that but only the header and metadata are
 * reserved at creation; a slot's data is reserved (posix_fallocate) by
 * the member that first prepares a batch into it, so that its memory is
 * charged to that member's memory cgroup, and released (hole punched) once
 * the slot is free and that member is gone.
 *
 * Everything shared is changed under the segment mutex, except the bytes
 * of a sample, which only the worker that claimed the item writes, before
 * it marks the item done under the mutex; a consumer reads a batch only
 * after seeing it READY under the mutex. Consumers get the batch through
 * a second, read-only mapping, so that one member cannot change what the
 * others train on.
 *
 * Waiting: futex words in the segment (ready_word for consumers, work_word
 * for workers) are bumped and woken on every change a waiter may wait for;
 * every wait is bounded by COORDL__GROUP_TICK_MS, after which the waiter
 * looks for dead members (reap): a member holds an open file description
 * lock on byte <index> of the segment file while attached, so a member
 * whose byte nobody locks has exited or been killed, whatever the way.
 * A mutex whose owner died (EOWNERDEAD) is made consistent and the state
 * repaired: the dead member is reaped, counters are recomputed from the
 * items' states, and slots whose items are all done are made READY.
 *
 * Trust: every process of the group is the same user (the files are 0600
 * and checked), so nothing read from the segment is trusted beyond staying
 * inside the mapping: the geometry is computed privately and compared with
 * the header once at join; indices read from it are range-checked.
 *
 * Attach and detach are serialised by an exclusive flock on a sibling lock
 * file (re-checked against the path after locking, since the last member
 * to leave unlinks it); a segment nobody holds a member byte of is
 * reinitialised by the next member to join.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loader/coord.h"
#include "loader/env.h"
#include "loader/fetch.h"
#include "loader/rng.h"
#include "loader/util.h"

#define GRP_MAGIC 0x636f6f72646c4731ULL /* "coordlG1" */
#define GRP_VERSION 1

#define MAXM COORDL__GROUP_MAX_MEMBERS
#define MAXS COORDL__GROUP_MAX_SLOTS

enum { M_FREE = 0, M_LIVE = 1 };
enum { S_EMPTY = 0, S_FILLING = 1, S_READY = 2, S_ABANDONED = 3 };
enum { I_FREE = 0, I_CLAIMED = 1, I_DONE = 2 };

struct gmember {
	uint32_t state, gen;
	int32_t pid;
	uint32_t mode;
	uint64_t epoch, phase;   /* its key: epoch and first position mod batch size */
	uint64_t next, end;      /* batch numbers (position / batch size): next to take, end */
	uint32_t held;           /* batches its consumer holds */
	uint32_t solo_switches;  /* times it was made SOLO */
};

struct gslot {
	uint32_t state;
	uint32_t owner, owner_gen; /* member index + 1 that reserved its data (0: none) */
	uint32_t n, done, claimed, replaced, pad;
	uint64_t epoch, phase, seq, tick;
	uint64_t need;           /* members that will take it */
	uint64_t holding;        /* members whose consumer holds it */
};

struct gitem {
	uint64_t orig;           /* dataset index at this position of the order */
	uint32_t state, by;      /* by: member index + 1 that claimed or did it */
	uint32_t by_gen, claim_ms;
};

struct ghdr {
	uint64_t magic;          /* written last */
	uint32_t version, hdr_bytes;
	uint64_t signature, seg_size, sample_bytes, slot_bytes, meta_bytes, meta_off, data_off;
	uint32_t batch_size, nslots, window, lookahead;
	pthread_mutex_t mu;
	uint32_t ready_word, work_word;
	uint64_t tick;
	uint32_t last_reap_ms, pad;
	struct gmember m[MAXM];
	struct gslot s[MAXS];
};

struct coordl__group {
	int fd;
	char *path, *lock_path;
	uint8_t *rw;
	const uint8_t *ro;
	size_t len;
	struct ghdr *h;
	int me;
	uint32_t gen;
	uint64_t seq0;           /* the member's first batch number of its epoch */
	/* Private geometry, checked against the header once. */
	uint32_t bs, nslots, window, lookahead;
	uint64_t sample_bytes, slot_bytes, meta_bytes, meta_off, data_off, seg_size;
	coordl__group_item_fn fn;
	void *arg;
	int broken;              /* the mutex is unrecoverable: SOLO from now on */
	coordl_batch_t gb[MAXS];
	int gheld[MAXS];         /* consumer-side: gb[i] is handed out */
	/* Counters (atomics). */
	uint64_t received, items_here, items_received, reaped, redone;
};

/* ---- small helpers ---- */

static uint64_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (uint64_t)p : 4096;
}

static uint64_t page_up(uint64_t x)
{
	uint64_t p = page_size();
	return (x + p - 1) & ~(p - 1);
}

static uint32_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

static uint64_t bit(int i) { return 1ULL << i; }

static void futex_wait(uint32_t *word, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void wake(uint32_t *word)
{
	__atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static struct gitem *items_of(coordl__group_t *g, int i)
{
	return (struct gitem *)(g->rw + g->meta_off + (uint64_t)i * g->meta_bytes);
}

static uint64_t labels_off(const coordl__group_t *g, int i)
{
	return g->meta_off + (uint64_t)i * g->meta_bytes +
	       (((uint64_t)g->bs * sizeof(struct gitem) + 7) & ~7ULL);
}

static uint64_t indices_off(const coordl__group_t *g, int i)
{
	return labels_off(g, i) + (((uint64_t)g->bs * sizeof(int32_t) + 7) & ~7ULL);
}

static uint64_t data_off(const coordl__group_t *g, int i)
{
	return g->data_off + (uint64_t)i * g->slot_bytes;
}

/* Is member i's byte locked by another open file description? */
static int member_alive(const coordl__group_t *g, int i)
{
	return coordl__byte_held(g->fd, i); /* cannot tell: alive */
}

/* Is the process stopped (SIGSTOP, a suspended job) or traced? A process
 * we cannot see (another pid namespace) counts as running. */
static int pid_stopped(int32_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* ---- state changes, all under the mutex ---- */

static int owner_alive(const coordl__group_t *g, const struct gslot *s)
{
	uint32_t o = s->owner;

	return o >= 1 && o <= MAXM && g->h->m[o - 1].state == M_LIVE &&
	       g->h->m[o - 1].gen == s->owner_gen;
}

static void punch(coordl__group_t *g, int i)
{
	fallocate(g->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)data_off(g, i),
		  (off_t)g->slot_bytes);
}

/* Bring slot i to its resting state: an abandoned slot nobody writes any
 * more is empty; a free slot whose memory belongs to a member that is gone
 * gives it back. */
static void settle(coordl__group_t *g, int i)
{
	struct gslot *s = &g->h->s[i];

	if (s->state == S_ABANDONED && s->claimed == 0)
		s->state = S_EMPTY;
	if (s->state == S_READY && !s->need && !s->holding && !owner_alive(g, s))
		s->state = S_EMPTY;
	if (s->state == S_EMPTY && s->owner && !owner_alive(g, s)) {
		punch(g, i);
		s->owner = 0;
		s->owner_gen = 0;
	}
}

static int same_key(const struct gslot *s, const struct gmember *m)
{
	return s->epoch == m->epoch && s->phase == m->phase;
}

/* The slot holding batch seq of key (epoch, phase), or -1. */
static int find(const coordl__group_t *g, uint64_t epoch, uint64_t phase, uint64_t seq)
{
	for (uint32_t i = 0; i < g->nslots; i++) {
		const struct gslot *s = &g->h->s[i];
		if ((s->state == S_FILLING || s->state == S_READY) && s->epoch == epoch &&
		    s->phase == phase && s->seq == seq)
			return (int)i;
	}
	return -1;
}

/*
 * Batches until member m takes slot s: within its key, how far the batch
 * lies ahead of its cursor; a batch of the next epoch's first key counts
 * after the rest of m's epoch (members go on to the next epoch, and a
 * member that is still finishing this one is expected there).
 * UINT64_MAX: m will not take it.
 */
static uint64_t member_dist(const struct gmember *m, const struct gslot *s)
{
	if (m->state != M_LIVE || m->mode != COORDL__GROUP_SHARED)
		return UINT64_MAX;
	if (same_key(s, m))
		return s->seq >= m->next ? s->seq - m->next : UINT64_MAX;
	if (s->epoch == m->epoch + 1 && s->phase == 0 && m->end >= m->next)
		return m->end - m->next + s->seq;
	return UINT64_MAX;
}

/* Batches until some member that needs slot s takes it, or UINT64_MAX. */
static uint64_t urgency(const coordl__group_t *g, const struct gslot *s)
{
	uint64_t best = UINT64_MAX;

	for (int j = 0; j < MAXM; j++) {
		uint64_t d;
		if (!(s->need & bit(j)))
			continue;
		d = member_dist(&g->h->m[j], s);
		if (d < best)
			best = d;
	}
	return best;
}

/* Member j no longer takes anything of the staging area it has not taken
 * yet (it left, died, or was made SOLO). */
static void unsubscribe(coordl__group_t *g, int j)
{
	for (uint32_t i = 0; i < g->nslots; i++) {
		g->h->s[i].need &= ~bit(j);
		settle(g, (int)i);
	}
}

/* Member j is gone: free its entry, hand its items in flight to others,
 * release what it held. */
static void drop_member(coordl__group_t *g, int j)
{
	struct gmember *m = &g->h->m[j];

	m->state = M_FREE;
	m->gen++;
	m->held = 0;
	m->mode = COORDL__GROUP_SOLO;
	for (uint32_t i = 0; i < g->nslots; i++) {
		struct gslot *s = &g->h->s[i];
		s->need &= ~bit(j);
		s->holding &= ~bit(j);
		if (s->state == S_FILLING || s->state == S_ABANDONED) {
			struct gitem *it = items_of(g, (int)i);
			uint32_t n = s->n <= g->bs ? s->n : g->bs;
			for (uint32_t k = 0; k < n; k++) {
				if (it[k].state == I_CLAIMED && it[k].by == (uint32_t)j + 1) {
					it[k].state = I_FREE;
					it[k].by = 0;
					if (s->claimed)
						s->claimed--;
				}
			}
		}
	}
	for (uint32_t i = 0; i < g->nslots; i++)
		settle(g, (int)i);
	wake(&g->h->ready_word);
	wake(&g->h->work_word);
}

/* A batch one of whose items a stopped member has claimed for too long
 * is given up: it is made again in another slot, and this one is empty
 * once nobody writes it any more. */
static void abandon(coordl__group_t *g, int i)
{
	struct gslot *s = &g->h->s[i];

	s->state = S_ABANDONED;
	s->need = 0;
	__atomic_add_fetch(&g->redone, 1, __ATOMIC_RELAXED);
	settle(g, i);
	wake(&g->h->work_word);
}

/* Members more than window batches behind the fastest shared member of
 * their key are made SOLO (see coord.h). */
static void detach_laggards(coordl__group_t *g)
{
	for (int j = 0; j < MAXM; j++) {
		struct gmember *m = &g->h->m[j];
		uint64_t lead = 0;

		if (m->state != M_LIVE || m->mode != COORDL__GROUP_SHARED)
			continue;
		for (int o = 0; o < MAXM; o++) {
			const struct gmember *x = &g->h->m[o];
			if (x->state == M_LIVE && x->mode == COORDL__GROUP_SHARED && x->epoch == m->epoch &&
			    x->phase == m->phase && x->next > lead)
				lead = x->next;
		}
		if (lead > m->next && lead - m->next > g->window) {
			m->mode = COORDL__GROUP_SOLO;
			m->solo_switches++;
			unsubscribe(g, j);
			wake(&g->h->ready_word);
			wake(&g->h->work_word);
		}
	}
}

/* Look for dead members, stopped claimers and laggards; at most every
 * tick unless forced. */
static void reap(coordl__group_t *g, int force)
{
	struct ghdr *h = g->h;
	uint32_t now = now_ms();

	if (!force && now - h->last_reap_ms < COORDL__GROUP_TICK_MS)
		return;
	h->last_reap_ms = now;
	for (int j = 0; j < MAXM; j++) {
		if (j == g->me || h->m[j].state != M_LIVE || member_alive(g, j))
			continue;
		drop_member(g, j);
		__atomic_add_fetch(&g->reaped, 1, __ATOMIC_RELAXED);
	}
	for (uint32_t i = 0; i < g->nslots; i++) {
		struct gslot *s = &h->s[i];
		struct gitem *it;
		uint32_t n;

		if (s->state != S_FILLING || s->claimed == 0)
			continue;
		it = items_of(g, (int)i);
		n = s->n <= g->bs ? s->n : g->bs;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t by = it[k].by;
			if (it[k].state != I_CLAIMED || now - it[k].claim_ms < COORDL__GROUP_LEASE_MS ||
			    by < 1 || by > MAXM || by - 1 == (uint32_t)g->me)
				continue;
			if (pid_stopped(h->m[by - 1].pid)) {
				abandon(g, (int)i);
				break;
			}
		}
	}
	detach_laggards(g);
}

/* After a member died holding the mutex: recount every slot from its items. */
static void repair(coordl__group_t *g)
{
	for (uint32_t i = 0; i < g->nslots; i++) {
		struct gslot *s = &g->h->s[i];
		struct gitem *it = items_of(g, (int)i);
		uint32_t n, done = 0, claimed = 0;

		if (s->n > g->bs)
			s->n = g->bs;
		n = s->n;
		if (s->state != S_FILLING && s->state != S_ABANDONED)
			continue;
		for (uint32_t k = 0; k < n; k++) {
			done += it[k].state == I_DONE;
			claimed += it[k].state == I_CLAIMED;
		}
		s->done = done;
		s->claimed = claimed;
		if (s->state == S_FILLING && done == n)
			s->state = S_READY;
	}
	reap(g, 1);
}

static int lock(coordl__group_t *g)
{
	int e;

	if (g->broken)
		return -1;
	e = pthread_mutex_lock(&g->h->mu);
	if (e == EOWNERDEAD) {
		pthread_mutex_consistent(&g->h->mu);
		repair(g);
		return 0;
	}
	if (e != 0) {
		g->broken = 1;
		return -1;
	}
	return 0;
}

static void unlock(coordl__group_t *g)
{
	pthread_mutex_unlock(&g->h->mu);
}

/* Unlock and wait on word for at most ms (or until it changes). */
static void wait_unlock(coordl__group_t *g, uint32_t *word, int ms)
{
	uint32_t v = __atomic_load_n(word, __ATOMIC_SEQ_CST);

	unlock(g);
	futex_wait(word, v, ms);
}

/* The member joins the staging area at its cursor when within `window`
 * batches of its key's other shared members (or ahead of them, or alone):
 * it takes every batch of its key from its cursor on. */
static int join_check(coordl__group_t *g, uint64_t window)
{
	struct gmember *me = &g->h->m[g->me];
	uint64_t lead = 0;
	int any = 0;

	for (int j = 0; j < MAXM; j++) {
		const struct gmember *x = &g->h->m[j];
		if (j == g->me || x->state != M_LIVE || x->mode != COORDL__GROUP_SHARED ||
		    x->epoch != me->epoch || x->phase != me->phase)
			continue;
		any = 1;
		if (x->next > lead)
			lead = x->next;
	}
	if (any && lead > me->next && lead - me->next > window) {
		me->mode = COORDL__GROUP_SOLO;
		return me->mode;
	}
	me->mode = COORDL__GROUP_SHARED;
	for (uint32_t i = 0; i < g->nslots; i++) {
		struct gslot *s = &g->h->s[i];
		if ((s->state == S_FILLING || s->state == S_READY) && same_key(s, me) &&
		    s->seq >= me->next && s->seq < me->end)
			s->need |= bit(g->me);
	}
	wake(&g->h->work_word);
	return me->mode;
}

/* ---- files ---- */

static int anyone_alive(const coordl__group_t *g)
{
	for (int j = 0; j < MAXM; j++)
		if (member_alive(g, j))
			return 1;
	return 0;
}

/* The geometry for geom; 0, or -1 (EINVAL) when it cannot hold 2 slots. */
static int geometry(coordl__group_t *g, const coordl__group_geom_t *geom)
{
	uint64_t per, n;

	if (geom->batch_size < 1 || geom->batch_size > 65536 || geom->sample_bytes < 1 ||
	    geom->sample_bytes > (1ULL << 32) || geom->window < 1 || geom->window > 1000000)
		return -1;
	g->bs = geom->batch_size;
	g->sample_bytes = geom->sample_bytes;
	g->slot_bytes = page_up((uint64_t)g->bs * g->sample_bytes);
	g->meta_bytes = page_up((((uint64_t)g->bs * sizeof(struct gitem) + 7) & ~7ULL) +
				(((uint64_t)g->bs * sizeof(int32_t) + 7) & ~7ULL) +
				(uint64_t)g->bs * sizeof(uint64_t));
	per = g->slot_bytes + g->meta_bytes;
	n = geom->bound / per;
	if (n < 2)
		return -1;
	g->nslots = (uint32_t)(n > MAXS ? MAXS : n);
	g->window = geom->window;
	return 0;
}

/* Offsets from nslots (private). */
static void layout(coordl__group_t *g)
{
	uint64_t hdr = page_up(sizeof(struct ghdr));

	g->meta_off = hdr;
	g->data_off = hdr + (uint64_t)g->nslots * g->meta_bytes;
	g->seg_size = g->data_off + (uint64_t)g->nslots * g->slot_bytes;
	/* Workers prepare at most this many batches ahead of a member's
	 * cursor. Every slot in circulation is memory each member process
	 * maps page by page (a fault per 4 KiB page and process, about 10 us
	 * on a VM), so a shallow look-ahead keeps the group's footprint, and
	 * its first epoch's faults, small: 4 ahead instead of 8 cut a group of
	 * 4's faults from ~100,000 to ~61,000 (BENCHMARKS.md, issue 15). */
	g->lookahead = g->nslots / 2 < 1 ? 1 : g->nslots / 2 > 4 ? 4 : g->nslots / 2;
}

static int init_segment(coordl__group_t *g, uint64_t signature)
{
	struct ghdr *h = g->h;
	pthread_mutexattr_t a;
	int e;

	memset(g->rw, 0, g->data_off);
	h->version = GRP_VERSION;
	h->hdr_bytes = (uint32_t)g->meta_off;
	h->signature = signature;
	h->seg_size = g->seg_size;
	h->sample_bytes = g->sample_bytes;
	h->slot_bytes = g->slot_bytes;
	h->meta_bytes = g->meta_bytes;
	h->meta_off = g->meta_off;
	h->data_off = g->data_off;
	h->batch_size = g->bs;
	h->nslots = g->nslots;
	h->window = g->window;
	h->lookahead = g->lookahead;
	if ((e = pthread_mutexattr_init(&a)) != 0)
		return e;
	if ((e = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED)) == 0 &&
	    (e = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST)) == 0)
		e = pthread_mutex_init(&h->mu, &a);
	pthread_mutexattr_destroy(&a);
	if (e)
		return e;
	__atomic_store_n(&h->magic, GRP_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* Does the header describe the segment this member computed? Adopts the
 * creator's slot count and window (checked). */
static int header_matches(coordl__group_t *g, uint64_t signature, uint64_t file_size)
{
	const struct ghdr *h = g->h;
	uint32_t n = h->nslots, w = h->window;

	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != GRP_MAGIC || h->version != GRP_VERSION ||
	    h->signature != signature || h->batch_size != g->bs ||
	    h->sample_bytes != g->sample_bytes || h->slot_bytes != g->slot_bytes ||
	    h->meta_bytes != g->meta_bytes || n < 2 || n > MAXS || w < 1 || w > 1000000)
		return 0;
	g->nslots = n;
	g->window = w;
	layout(g);
	return h->seg_size == g->seg_size && h->data_off == g->data_off &&
	       h->meta_off == g->meta_off && file_size == g->seg_size;
}

static void free_group(coordl__group_t *g)
{
	if (g->rw)
		munmap(g->rw, g->len);
	if (g->ro)
		munmap((void *)g->ro, g->len);
	if (g->fd >= 0)
		close(g->fd);
	free(g->path);
	free(g->lock_path);
	free(g);
}

/* Take a member entry: lock its byte and mark it live. Under the attach
 * lock and the mutex. */
static int claim_member(coordl__group_t *g)
{
	for (int j = 0; j < MAXM; j++) {
		struct gmember *m = &g->h->m[j];

		if (member_alive(g, j))
			continue;
		if (m->state == M_LIVE)
			drop_member(g, j); /* died, not reaped yet */
		if (coordl__byte_lock(g->fd, j, F_WRLCK) < 0)
			continue;
		m->state = M_LIVE;
		m->gen++;
		m->pid = (int32_t)getpid();
		m->mode = COORDL__GROUP_SOLO;
		m->epoch = m->phase = m->next = m->end = 0;
		m->held = 0;
		m->solo_switches = 0;
		g->me = j;
		g->gen = m->gen;
		return 0;
	}
	errno = EBUSY;
	return -1;
}

coordl__group_t *coordl__group_join(const char *name, const char *dir,
				    const coordl__group_geom_t *geom, coordl__group_item_fn fn,
				    void *arg, coordl_error_t *err)
{
	coordl__group_t *g = NULL;
	char why[128];
	struct stat st;
	int lfd = -1, ok = 0, created = 0, e;

	if (!name || coordl__valid_cache_name(name) < 0) {
		coordl__errprintf(err, EINVAL, "group '%.40s': expected 1..64 of [A-Za-z0-9_.-]",
				  name ? name : "");
		return NULL;
	}
	if (!geom || !fn || (dir && dir[0] != '/')) {
		coordl__errprintf(err, EINVAL, "group '%s': bad arguments", name);
		return NULL;
	}
	if (!(g = calloc(1, sizeof(*g)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	g->fd = -1;
	g->me = -1;
	g->fn = fn;
	g->arg = arg;
	if (geometry(g, geom) < 0) {
		coordl__errprintf(err, EINVAL,
				  "group '%s': a staging area of %llu bytes holds fewer than 2 batches "
				  "of %llu bytes",
				  name, (unsigned long long)geom->bound,
				  (unsigned long long)((uint64_t)geom->batch_size * geom->sample_bytes));
		goto out;
	}
	layout(g);
	if (!dir)
		dir = "/dev/shm";
	g->path = coordl__path_printf("%s/coordl-%u-grp-%s-%016llx.seg", dir, (unsigned)geteuid(), name,
			      (unsigned long long)geom->signature);
	g->lock_path = coordl__path_printf("%s/coordl-%u-grp-%s-%016llx.lock", dir, (unsigned)geteuid(),
				   name, (unsigned long long)geom->signature);
	if (!g->path || !g->lock_path) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((lfd = coordl__private_lock(g->lock_path, why, sizeof(why))) < 0) {
		coordl__errprintf(err, errno, "group '%s': %s: %s", name, g->lock_path, why);
		goto out;
	}
	if ((g->fd = coordl__private_open(g->path, why, sizeof(why))) < 0) {
		coordl__errprintf(err, errno, "group '%s': %s: %s", name, g->path, why);
		goto out;
	}
	if (fstat(g->fd, &st) < 0) {
		coordl__errprintf(err, errno, "group '%s': fstat %s: %s", name, g->path, strerror(errno));
		goto out;
	}
	if (st.st_size == 0 || !anyone_alive(g)) {
		/* New, or left by members that are all gone: start afresh. */
		created = 1;
		if (ftruncate(g->fd, 0) < 0 || ftruncate(g->fd, (off_t)g->seg_size) < 0) {
			coordl__errprintf(err, errno, "group '%s': size %s to %llu bytes: %s", name,
					  g->path, (unsigned long long)g->seg_size, strerror(errno));
			goto out;
		}
		/* The header and metadata now (a store into a tmpfs page that
		 * cannot be had would be SIGBUS); slots as they are used. */
		if ((e = posix_fallocate(g->fd, 0, (off_t)g->data_off)) != 0) {
			coordl__errprintf(err, e, "group '%s': reserve %llu bytes in %s: %s", name,
					  (unsigned long long)g->data_off, g->path, strerror(e));
			goto out;
		}
	} else if ((uint64_t)st.st_size < sizeof(struct ghdr)) {
		coordl__errprintf(err, EBUSY, "group '%s': %s is not a group segment", name, g->path);
		goto out;
	}
	g->len = created ? (size_t)g->seg_size : (size_t)st.st_size;
	g->rw = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
	if (g->rw == MAP_FAILED) {
		g->rw = NULL;
		coordl__errprintf(err, errno, "group '%s': mmap: %s", name, strerror(errno));
		goto out;
	}
	g->h = (struct ghdr *)g->rw;
	if (created) {
		if ((e = init_segment(g, geom->signature)) != 0) {
			coordl__errprintf(err, e, "group '%s': mutex: %s", name, strerror(e));
			goto out;
		}
	} else if (!header_matches(g, geom->signature, (uint64_t)st.st_size)) {
		coordl__errprintf(err, EBUSY, "group '%s': %s is of another version or geometry", name,
				  g->path);
		goto out;
	}
	g->ro = mmap(NULL, g->len, PROT_READ, MAP_SHARED, g->fd, 0);
	if (g->ro == MAP_FAILED) {
		g->ro = NULL;
		coordl__errprintf(err, errno, "group '%s': mmap: %s", name, strerror(errno));
		goto out;
	}
	if (lock(g) < 0) {
		coordl__errprintf(err, ENOTRECOVERABLE, "group '%s': its mutex is unrecoverable", name);
		goto out;
	}
	e = claim_member(g);
	unlock(g);
	if (e < 0) {
		coordl__errprintf(err, EBUSY, "group '%s' has %d members already", name, MAXM);
		goto out;
	}
	for (uint32_t i = 0; i < g->nslots; i++) {
		coordl_batch_t *b = &g->gb[i];
		b->data = (void *)(g->ro + data_off(g, (int)i));
		b->labels = (int32_t *)(g->ro + labels_off(g, (int)i));
		b->indices = (uint64_t *)(g->ro + indices_off(g, (int)i));
		b->readonly = 1;
	}
	ok = 1;
out:
	if (!ok && g) {
		e = errno;
		if (created && g->fd >= 0 && !anyone_alive(g)) {
			unlink(g->path);
			unlink(g->lock_path);
		}
		free_group(g);
		g = NULL;
		errno = e;
	}
	if (lfd >= 0)
		close(lfd);
	return g;
}

void coordl__group_leave(coordl__group_t *g)
{
	char why[128];
	int e = errno, lfd;

	if (!g)
		return;
	lfd = coordl__private_lock(g->lock_path, why, sizeof(why));
	if (lock(g) == 0) {
		drop_member(g, g->me);
		unlock(g);
	}
	/* Closing the fd drops our member byte; then, alone, remove it. */
	munmap(g->rw, g->len);
	g->rw = NULL;
	munmap((void *)g->ro, g->len);
	g->ro = NULL;
	coordl__byte_lock(g->fd, g->me, F_UNLCK);
	if (!anyone_alive(g)) {
		unlink(g->path);
		unlink(g->lock_path);
	}
	if (lfd >= 0)
		close(lfd);
	free_group(g);
	errno = e;
}

uint64_t coordl__group_signature(const coordl_config_t *c, uint64_t source_signature,
				 size_t nitems, uint64_t sample_bytes)
{
	uint64_t h = coordl__mix64(0x67726f7570ULL ^ source_signature);
	uint32_t f[12];

	h = coordl__mix64(h ^ (uint64_t)nitems);
	h = coordl__mix64(h ^ sample_bytes);
	h = coordl__mix64(h ^ c->seed);
	h = coordl__mix64(h ^ ((uint64_t)(uint32_t)c->batch_size << 32 | (uint32_t)c->out_size));
	h = coordl__mix64(h ^ ((uint64_t)(uint32_t)c->layout << 32 | (uint32_t)c->mode));
	h = coordl__mix64(h ^ ((uint64_t)(uint32_t)c->shuffle << 32 | (uint32_t)c->drop_last));
	h = coordl__mix64(h ^ ((uint64_t)(uint32_t)c->rank << 32 | (uint32_t)c->world_size));
	h = coordl__mix64(h ^ (uint64_t)c->max_item_bytes);
	memcpy(&f[0], &c->scale_min, 4);
	memcpy(&f[1], &c->scale_max, 4);
	memcpy(&f[2], &c->ratio_min, 4);
	memcpy(&f[3], &c->ratio_max, 4);
	memcpy(&f[4], &c->flip_prob, 4);
	memcpy(&f[5], c->mean, 12);
	memcpy(&f[8], c->std, 12);
	f[11] = 0;
	for (int i = 0; i < 12; i += 2)
		h = coordl__mix64(h ^ ((uint64_t)f[i] << 32 | f[i + 1]));
	return h;
}

/* ---- members ---- */

int coordl__group_restart(coordl__group_t *g, uint64_t epoch, uint64_t base, uint64_t end)
{
	struct gmember *me;
	int mode;

	if (lock(g) < 0)
		return COORDL__GROUP_SOLO;
	me = &g->h->m[g->me];
	unsubscribe(g, g->me);
	me->epoch = epoch;
	me->phase = base % g->bs;
	g->seq0 = base / g->bs;
	me->next = g->seq0;
	me->end = g->seq0 + end;
	mode = join_check(g, g->window);
	unlock(g);
	return mode;
}

int coordl__group_try_join(coordl__group_t *g, uint64_t x)
{
	struct gmember *me;
	int mode;

	if (lock(g) < 0)
		return 0;
	me = &g->h->m[g->me];
	if (me->mode != COORDL__GROUP_SHARED) {
		me->next = g->seq0 + x;
		join_check(g, g->window / 2);
	}
	mode = me->mode;
	unlock(g);
	return mode == COORDL__GROUP_SHARED;
}

void coordl__group_solo_advance(coordl__group_t *g, uint64_t x)
{
	if (lock(g) < 0)
		return;
	g->h->m[g->me].next = g->seq0 + x + 1;
	unlock(g);
}

int coordl__group_next(coordl__group_t *g, uint64_t x, coordl_batch_t **out)
{
	uint64_t seq = g->seq0 + x;
	int rv = 0;

	if (lock(g) < 0)
		return 0;
	for (;;) {
		struct gmember *me = &g->h->m[g->me];
		struct gslot *s;
		int i;

		reap(g, 0);
		if (me->mode != COORDL__GROUP_SHARED || seq >= me->end)
			break;
		if (me->held >= COORDL__GROUP_MAX_HELD) {
			errno = EBUSY;
			rv = -1;
			break;
		}
		if (me->next != seq) {
			me->next = seq;
			wake(&g->h->work_word);
		}
		i = find(g, me->epoch, me->phase, seq);
		if (i >= 0 && g->h->s[i].state == S_READY && !g->gheld[i]) {
			const struct gitem *it = items_of(g, i);
			coordl_batch_t *b = &g->gb[i];
			uint64_t others = 0;

			s = &g->h->s[i];
			s->need &= ~bit(g->me);
			s->holding |= bit(g->me);
			me->held++;
			me->next = seq + 1;
			b->n = (int)s->n;
			b->data_bytes = (size_t)s->n * g->sample_bytes;
			b->epoch = s->epoch;
			b->seq = s->seq;
			b->replaced = (int)s->replaced;
			b->device_data = NULL;
			for (uint32_t k = 0; k < s->n; k++)
				others += it[k].by != (uint32_t)g->me + 1;
			g->gheld[i] = 1;
			__atomic_add_fetch(&g->received, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&g->items_received, others, __ATOMIC_RELAXED);
			*out = b;
			wake(&g->h->work_word);
			rv = 1;
			break;
		}
		wait_unlock(g, &g->h->ready_word, COORDL__GROUP_TICK_MS);
		if (lock(g) < 0)
			return 0;
	}
	unlock(g);
	return rv;
}

int coordl__group_release(coordl__group_t *g, coordl_batch_t *b)
{
	int i;

	if (!g || !b)
		return 0;
	for (i = 0; i < (int)g->nslots; i++)
		if (&g->gb[i] == b)
			break;
	if (i >= (int)g->nslots || !g->gheld[i])
		return 0;
	g->gheld[i] = 0;
	if (lock(g) < 0)
		return 1;
	if (g->h->s[i].holding & bit(g->me)) {
		struct gmember *me = &g->h->m[g->me];
		g->h->s[i].holding &= ~bit(g->me);
		if (me->held)
			me->held--;
		settle(g, i);
		wake(&g->h->work_word);
	}
	unlock(g);
	return 1;
}

/* The slot with a free item whose batch is needed soonest, or -1. */
static int pick_claim(coordl__group_t *g)
{
	uint64_t best_u = UINT64_MAX, best_t = UINT64_MAX;
	int best = -1;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const struct gslot *s = &g->h->s[i];
		uint64_t u;
		if (s->state != S_FILLING || s->claimed + s->done >= s->n)
			continue;
		u = urgency(g, s);
		if (u < best_u || (u == best_u && s->tick < best_t)) {
			best = (int)i;
			best_u = u;
			best_t = s->tick;
		}
	}
	return best;
}

/* The batch of this member's key needed soonest that is not in the
 * staging area: its number and how soon (batches ahead of its member). */
static int wanted(coordl__group_t *g, uint64_t *seq, uint64_t *dist)
{
	const struct gmember *me = &g->h->m[g->me];
	int found = 0;

	for (int j = 0; j < MAXM; j++) {
		const struct gmember *m = &g->h->m[j];
		if (m->state != M_LIVE || m->mode != COORDL__GROUP_SHARED || m->epoch != me->epoch ||
		    m->phase != me->phase)
			continue;
		for (uint64_t d = 0; d < g->lookahead; d++) {
			uint64_t x = m->next + d;
			if (x >= m->end || x >= me->end)
				break;
			if (found && (d > *dist || (d == *dist && x >= *seq)))
				break;
			if (find(g, me->epoch, me->phase, x) >= 0)
				continue;
			*seq = x;
			*dist = d;
			found = 1;
			break;
		}
	}
	return found;
}

/*
 * A slot to prepare a batch needed in `dist` batches into, cheapest first:
 * an empty slot whose memory this member holds already, a free slot that
 * still holds a batch nobody needs (the newest: its pages are the likeliest
 * to be mapped in this process and in the CPU's caches, and reusing few
 * slots keeps the staging footprint small), an empty slot with memory
 * of another live member, one with no memory yet (the staging area grows
 * only when it must), else a prepared batch that is needed later than the
 * new one (dropped: its members get it prepared again). -1: none.
 */
static int get_slot(coordl__group_t *g, uint64_t dist)
{
	int pick[4] = { -1, -1, -1, -1 }, victim = -1;
	uint64_t rt = UINT64_MAX, vu = 0;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const struct gslot *s = &g->h->s[i];
		if (s->state == S_EMPTY) {
			int mine = s->owner == (uint32_t)g->me + 1 && owner_alive(g, s);
			int r = mine ? 0 : owner_alive(g, s) ? 2 : 3;
			if (pick[r] < 0)
				pick[r] = (int)i;
		} else if (s->state == S_READY && !s->holding) {
			uint64_t u = s->need ? urgency(g, s) : UINT64_MAX;
			if (u == UINT64_MAX) {
				if (pick[1] < 0 || s->tick > rt) {
					rt = s->tick;
					pick[1] = (int)i;
				}
			} else if (u > dist && u > vu) {
				vu = u;
				victim = (int)i;
			}
		}
	}
	for (int r = 0; r < 4; r++)
		if (pick[r] >= 0)
			return pick[r];
	if (victim >= 0)
		__atomic_add_fetch(&g->redone, 1, __ATOMIC_RELAXED);
	return victim;
}

/* Prepare slot i for batch seq of this member's key. 0, or -1 when its
 * memory cannot be reserved. */
static int setup(coordl__group_t *g, int i, const coordl__group_job_t *job, uint64_t seq)
{
	struct gslot *s = &g->h->s[i];
	struct gmember *me = &g->h->m[g->me];
	struct gitem *it = items_of(g, i);
	uint64_t start = me->phase + seq * g->bs;
	uint32_t n;

	if (start >= job->per_rank)
		return -1;
	n = job->per_rank - start < g->bs ? (uint32_t)(job->per_rank - start) : g->bs;
	if (!owner_alive(g, s)) {
		if (s->owner)
			punch(g, i);
		s->owner = 0;
		if (posix_fallocate(g->fd, (off_t)data_off(g, i), (off_t)g->slot_bytes) != 0)
			return -1;
		s->owner = (uint32_t)g->me + 1;
		s->owner_gen = g->gen;
	}
	for (uint32_t k = 0; k < n; k++) {
		it[k].orig = job->order[start + k];
		it[k].state = I_FREE;
		it[k].by = 0;
	}
	s->epoch = me->epoch;
	s->phase = me->phase;
	s->seq = seq;
	s->n = n;
	s->done = s->claimed = s->replaced = 0;
	s->holding = 0;
	s->need = 0;
	for (int j = 0; j < MAXM; j++)
		if (member_dist(&g->h->m[j], s) != UINT64_MAX)
			s->need |= bit(j);
	s->tick = ++g->h->tick;
	s->state = S_FILLING;
	return 0;
}

int coordl__group_work(coordl__group_t *g, const coordl__group_job_t *job, void *wstate,
		       int wait_ms, char *why, size_t whylen)
{
	struct gmember *me;
	struct gitem *it;
	struct gslot *s;
	uint64_t epoch, pos, orig, index = 0;
	uint8_t *dst;
	int32_t label = 0;
	int i, rc;
	uint32_t k;

	if (lock(g) < 0) {
		struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		return 0;
	}
	reap(g, 0);
	me = &g->h->m[g->me];
	i = pick_claim(g);
	if (i < 0 && me->mode == COORDL__GROUP_SHARED && job->epoch == me->epoch &&
	    job->base % g->bs == me->phase && job->base / g->bs == g->seq0) {
		uint64_t seq = 0, dist = 0;
		if (wanted(g, &seq, &dist)) {
			int j = get_slot(g, dist);
			if (j >= 0) {
				if (setup(g, j, job, seq) == 0) {
					i = j;
					wake(&g->h->work_word);
				} else {
					/* No memory for the staging area: this member
					 * goes on alone rather than wait for it. */
					me->mode = COORDL__GROUP_SOLO;
					me->solo_switches++;
					unsubscribe(g, g->me);
					wake(&g->h->ready_word);
				}
			}
		}
	}
	if (i < 0) {
		wait_unlock(g, &g->h->work_word, wait_ms);
		return 0;
	}
	s = &g->h->s[i];
	it = items_of(g, i);
	for (k = 0; k < s->n && it[k].state != I_FREE; k++)
		;
	if (k >= s->n) {
		unlock(g);
		return 0;
	}
	it[k].state = I_CLAIMED;
	it[k].by = (uint32_t)g->me + 1;
	it[k].by_gen = g->gen;
	it[k].claim_ms = now_ms();
	s->claimed++;
	epoch = s->epoch;
	orig = it[k].orig;
	pos = s->epoch == job->epoch ? s->phase + s->seq * g->bs + k : COORDL__NOPOS;
	if (pos != COORDL__NOPOS && (pos >= job->per_rank || job->order[pos] != orig))
		pos = COORDL__NOPOS;
	dst = g->rw + data_off(g, i) + (uint64_t)k * g->sample_bytes;
	unlock(g);

	rc = g->fn(g->arg, wstate, epoch, pos, orig, dst, &label, &index);

	if (lock(g) < 0)
		return rc < 0 ? -1 : 1;
	if (it[k].state == I_CLAIMED && it[k].by == (uint32_t)g->me + 1) {
		if (s->claimed)
			s->claimed--;
		if (rc < 0) {
			it[k].state = I_FREE;
			it[k].by = 0;
			snprintf(why, whylen, "item %llu of epoch %llu", (unsigned long long)orig,
				 (unsigned long long)epoch);
		} else if (s->state == S_FILLING) {
			((int32_t *)(g->rw + labels_off(g, i)))[k] = label;
			((uint64_t *)(g->rw + indices_off(g, i)))[k] = index;
			it[k].state = I_DONE;
			s->done++;
			s->replaced += (uint32_t)rc;
			__atomic_add_fetch(&g->items_here, 1, __ATOMIC_RELAXED);
			if (s->done >= s->n) {
				s->state = S_READY;
				settle(g, i);
				wake(&g->h->ready_word);
			}
		} else {
			it[k].state = I_FREE;
			it[k].by = 0;
			settle(g, i);
		}
	}
	unlock(g);
	return rc < 0 ? -1 : 1;
}

int coordl__group_batch_slot(const coordl__group_t *g, const coordl_batch_t *b)
{
	if (!g || !b)
		return -1;
	for (uint32_t i = 0; i < g->nslots; i++)
		if (&g->gb[i] == b)
			return (int)i;
	return -1;
}

void coordl__group_kick(coordl__group_t *g)
{
	if (!g)
		return;
	wake(&g->h->work_word);
	wake(&g->h->ready_word);
}

void coordl__group_stats(coordl__group_t *g, coordl__group_stats_t *st)
{
	memset(st, 0, sizeof(*st));
	st->slots = g->nslots;
	st->slot_bytes = g->slot_bytes;
	st->received = __atomic_load_n(&g->received, __ATOMIC_RELAXED);
	st->items_here = __atomic_load_n(&g->items_here, __ATOMIC_RELAXED);
	st->items_received = __atomic_load_n(&g->items_received, __ATOMIC_RELAXED);
	st->reaped = __atomic_load_n(&g->reaped, __ATOMIC_RELAXED);
	st->redone = __atomic_load_n(&g->redone, __ATOMIC_RELAXED);
	if (lock(g) < 0)
		return;
	/* Members are reaped at most every tick on the way; a member that
	 * died since is not counted as live here. */
	reap(g, 1);
	st->reaped = __atomic_load_n(&g->reaped, __ATOMIC_RELAXED);
	st->mode = (int)g->h->m[g->me].mode;
	st->solo_switches = g->h->m[g->me].solo_switches;
	for (int j = 0; j < MAXM; j++)
		st->members += g->h->m[j].state == M_LIVE;
	unlock(g);
}

void coordl__group_test_hold(coordl__group_t *g)
{
	lock(g);
}

const char *coordl__group_path(const coordl__group_t *g)
{
	return g ? g->path : NULL;
}
