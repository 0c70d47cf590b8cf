/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loader.c: the coordl pipeline (public API of coordl.h).
 *
 * Worker threads fill a ring of pre-allocated batch slots. Work is handed
 * out one item at a time, always from the oldest unfinished batch, so all
 * workers cooperate on the batch the consumer needs next: a small prefetch
 * depth keeps any number of threads busy, and coordl_set_threads() only
 * changes how many workers may claim items. Which item goes where is fixed
 * before any thread runs (position -> dataset index from the epoch's order,
 * augmentation seed from (seed, epoch, index)), so the thread count never
 * changes the output.
 *
 * Epoch order: a Fisher-Yates shuffle driven by coordl__hash4(seed, epoch,
 * 0, SHUFFLE), then padded by wrapping around to a multiple of world_size
 * and split round-robin (rank r takes positions r, r+W, r+2W, ...), exactly
 * as PyTorch's DistributedSampler does: every rank gets ceil(N/W) samples
 * and the first few samples of the order appear twice in the epoch.
 *
 * Locking: one mutex protects the slot states, the counters of the consumer
 * and the epoch bookkeeping; per-item work (fetch, decode) runs unlocked.
 * Statistics that workers update per item are atomics.
 *
 * A loader whose thread count the caller left unset follows its CPU set
 * (follow.h): coordl_next() looks at most every 100 ms and, on a change,
 * pins every thread to the new set and runs one worker per CPU in it.
 *
 * The cache (env.h says which loader takes the job's cache) is opened by
 * open_cache(), which never fails the loader: a cache that cannot be had
 * leaves a private one or none, with a note. A loader whose bound is the
 * job's grant follows SYNERGY_CACHE_GRANT in a thread of its own
 * (grant.h); a worker that finds its cached item dropped by a shrink while
 * it used it (coordl__cache_done) redoes the item from storage.
 *
 * Over a remote dataset a fetch engine (fetch.h) reads ahead along the
 * epoch's order with many requests in flight; a worker takes its item's
 * bytes from it instead of reading them itself. The engine learns the
 * order whenever it is (re)computed and only changes when bytes arrive.
 *
 * In a job that spans nodes, the peer tier (peer.h) makes the nodes'
 * caches one partitioned cache: an item of another node's part is asked
 * of that node (its own read-ahead keeps many in flight) before storage,
 * only items of this node's part go into the local cache, and the
 * partition is fixed from the order of the first epoch that runs.
 *
 * In a group (coordinated prep, coord.h) the loader is a member of a
 * staging area shared with the group's other loaders on the node. While
 * the member is SHARED its private ring stands still: coordl_next() takes
 * batches from the staging area, and the workers prepare items of the
 * group's batches (group_work). When the group makes it SOLO (too far
 * behind, or no room), the private ring goes on from the member's
 * position as without a group; coordl_next() tries to rejoin at every
 * batch boundary. Lock order: the loader's mutex before the group's.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "coordl.h"
#include "loader/cache.h"
#include "loader/coord.h"
#include "loader/env.h"
#include "loader/fetch.h"
#include "loader/follow.h"
#include "loader/grant.h"
#include "loader/peer.h"
#include "loader/prep.h"
#include "loader/profmode.h"
#include "loader/rng.h"
#include "loader/source.h"
#include "synergy_env.h"
#include "loader/util.h"
#ifdef HAVE_CUDA
#include "loader/cuda.h"
#endif

/* Attempts to find a readable replacement for a corrupt item before the
 * loader gives up (a dataset that is almost all corrupt is a fatal error). */
#define MAX_REPLACE 64

/* The deepest default ring (prefetch left at 0). */
#define COORDL__RING_MAX 8

enum slot_state { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY, SLOT_HANDED };

struct slot {
	coordl_batch_t b;        /* the caller's view; points into the buffers below */
	int idx;                 /* index in the ring */
	int state;
	uint64_t gen;            /* loader generation the contents belong to */
	uint64_t batch;          /* batch number since base_pos */
	uint64_t start;          /* first sample position in this rank's order */
	int n, claimed, done, replaced;
	void *data;
	size_t data_cap;
	int touched;             /* its buffer holds memory (not released) */
};

struct worker {
	coordl_loader_t *ld;
	int id;
};

struct coordl_loader {
	coordl_config_t cfg;
	char *path, *cache_name;
	coordl__source_t *src;
	coordl__cache_t *cache;
	coordl__prep_params_t pp;
	size_t sample_bytes;
	size_t nitems, per_rank;
	uint64_t *perm, *order;

	struct slot *slots;
	int nslots;              /* slots allocated (address space) */
	int ring;                /* slots in use: batch b goes to slot b % ring */
	int ring_auto;           /* the ring follows the thread count (ring_resize) */
	int pinned;

	pthread_mutex_t mu;
	pthread_cond_t work_cv, ready_cv, idle_cv;
	pthread_t *thr;
	struct worker *wk;
	int spawned, nthreads;
	int stop, started, quiesce, active;
	uint64_t gen;

	uint64_t epoch, base_pos, next_start, next_hand, end_batches, position;

	/* Consumer-side statistics (under mu). */
	double t0, t1, stall;
	uint64_t samples, batches;
	uint64_t total_samples, total_corrupt;
	double total_stall, total_wall;
	/* Worker-side statistics (atomics, nanoseconds and counts). */
	uint64_t prep_ns, fetch_ns, storage_bytes, hits, misses, corrupt;

	char last_corrupt[PATH_MAX + 96];
	int has_corrupt;
	int fatal;
	char fatal_text[160];
	coordl__follow_t *follow; /* NULL when the thread count is fixed */
	int follow_off;           /* atomic: coordl_set_threads() took over */
	coordl__profmode_t *prof; /* SYNERGY_PROFILE_MODE=1, else NULL */
	coordl__grant_t *grant;   /* following SYNERGY_CACHE_GRANT, else NULL */
	int cache_shared;         /* the cache is a named, shared one */
	char cache_note[320];     /* why the cache is not as asked ("" when it is) */
	coordl__fetch_t *fetch;   /* remote datasets: the fetch engine, else NULL */
	coordl__peer_t *peer;     /* a multi-node job's partitioned cache, else NULL */
	uint64_t storage_reads;   /* atomic: items read from storage this epoch */
	coordl__group_t *group;   /* coordinated prep: the group's staging area, else NULL */
	int grp_shared;           /* under mu: batches come from the staging area now */
	char group_note[320];     /* why the loader is not in the group it was told of */
	uint64_t own_batches;     /* atomic: batches the private ring prepared */
	uint64_t solo_batches;    /* under mu: private batches handed out while in a group */
#ifdef HAVE_CUDA
	coordl__cuda_t *cuda;
	coordl__cuda_t *gcuda;    /* device buffers for batches of the staging area */
#endif
};

void coordl_config_init(coordl_config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->source = COORDL_SOURCE_AUTO;
	cfg->batch_size = 32;
	cfg->out_size = 224;
	cfg->layout = COORDL_LAYOUT_NCHW_F32;
	cfg->mode = COORDL_MODE_TRAIN;
	cfg->threads = 0;
	cfg->cache_bytes = -1;
	cfg->cache_name = NULL;
	cfg->seed = 0;
	cfg->shuffle = 1;
	cfg->rank = 0;
	cfg->world_size = 1;
	cfg->drop_last = 0;
	cfg->prefetch = 0;
	cfg->scale_min = 0.08f;
	cfg->scale_max = 1.0f;
	cfg->ratio_min = 3.0f / 4.0f;
	cfg->ratio_max = 4.0f / 3.0f;
	cfg->flip_prob = 0.5f;
	cfg->mean[0] = 0.485f;
	cfg->mean[1] = 0.456f;
	cfg->mean[2] = 0.406f;
	cfg->std[0] = 0.229f;
	cfg->std[1] = 0.224f;
	cfg->std[2] = 0.225f;
	cfg->pin_memory = 0;
}

const char *coordl_version(void)
{
	return PACKAGE_VERSION;
}

static int check_config(const coordl_config_t *c, coordl_error_t *err)
{
	if (!c->path || !*c->path)
		return coordl__errprintf(err, EINVAL, "path: no dataset given");
	if (c->source < COORDL_SOURCE_AUTO || c->source > COORDL_SOURCE_SHARDS)
		return coordl__errprintf(err, EINVAL, "source=%d: unknown source kind", c->source);
	if (c->batch_size < 1 || c->batch_size > 65536)
		return coordl__errprintf(err, EINVAL, "batch_size=%d: expected 1..65536", c->batch_size);
	if (c->out_size < 8 || c->out_size > 4096)
		return coordl__errprintf(err, EINVAL, "out_size=%d: expected 8..4096", c->out_size);
	if (c->layout != COORDL_LAYOUT_NCHW_F32 && c->layout != COORDL_LAYOUT_NHWC_U8)
		return coordl__errprintf(err, EINVAL, "layout=%d: unknown layout", c->layout);
	if (c->mode < COORDL_MODE_TRAIN || c->mode > COORDL_MODE_SYNTHETIC)
		return coordl__errprintf(err, EINVAL, "mode=%d: unknown mode", c->mode);
	if (c->world_size < 1 || c->rank < 0 || c->rank >= c->world_size)
		return coordl__errprintf(err, EINVAL, "rank=%d world_size=%d: expected 0 <= rank < world_size",
					 c->rank, c->world_size);
	if (c->shuffle != 0 && c->shuffle != 1)
		return coordl__errprintf(err, EINVAL, "shuffle=%d: expected 0 or 1", c->shuffle);
	if (c->drop_last != 0 && c->drop_last != 1)
		return coordl__errprintf(err, EINVAL, "drop_last=%d: expected 0 or 1", c->drop_last);
	if (c->prefetch != 0 && (c->prefetch < 2 || c->prefetch > 1024))
		return coordl__errprintf(err, EINVAL, "prefetch=%d: expected 0 (default) or 2..1024",
					 c->prefetch);
	if (!(c->scale_min > 0.0f && c->scale_min <= c->scale_max && c->scale_max <= 1.0f))
		return coordl__errprintf(err, EINVAL, "scale=%g..%g: expected 0 < min <= max <= 1",
					 (double)c->scale_min, (double)c->scale_max);
	if (!(c->ratio_min > 0.0f && c->ratio_min <= c->ratio_max))
		return coordl__errprintf(err, EINVAL, "ratio=%g..%g: expected 0 < min <= max",
					 (double)c->ratio_min, (double)c->ratio_max);
	if (!(c->flip_prob >= 0.0f && c->flip_prob <= 1.0f))
		return coordl__errprintf(err, EINVAL, "flip_prob=%g: expected 0..1", (double)c->flip_prob);
	for (int i = 0; i < 3; i++)
		if (!(c->std[i] != 0.0f))
			return coordl__errprintf(err, EINVAL, "std[%d]=%g: expected non-zero", i,
						 (double)c->std[i]);
	if (c->pin_memory != 0 && c->pin_memory != 1)
		return coordl__errprintf(err, EINVAL, "pin_memory=%d: expected 0 or 1", c->pin_memory);
	if (c->io_window < -1 || c->io_window > COORDL_IO_WINDOW_MAX)
		return coordl__errprintf(err, EINVAL, "io_window=%d: expected -1 (no read-ahead), "
					 "0 (automatic) or 1..%d", c->io_window, COORDL_IO_WINDOW_MAX);
	if (c->io_deadline_ms < 0 || c->io_deadline_ms > 86400000)
		return coordl__errprintf(err, EINVAL, "io_deadline_ms=%d: expected 0 (default) or "
					 "1..86400000", c->io_deadline_ms);
#ifndef HAVE_CUDA
	if (c->pin_memory)
		return coordl__errprintf(err, ENOTSUP, "pin_memory=1: libcoordl was built without CUDA");
#endif
	return 0;
}

/* The epoch's order for this rank (see the top of the file). */
static void compute_order(coordl_loader_t *ld)
{
	size_t n = ld->nitems;
	uint64_t w = (uint64_t)ld->cfg.world_size, r = (uint64_t)ld->cfg.rank;

	for (size_t i = 0; i < n; i++)
		ld->perm[i] = i;
	if (ld->cfg.shuffle) {
		coordl__rng_t rng;
		coordl__rng_seed(&rng, coordl__hash4(ld->cfg.seed, ld->epoch, 0, COORDL__RNG_SHUFFLE));
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = (size_t)coordl__rng_below(&rng, (uint64_t)i + 1);
			uint64_t t = ld->perm[i];
			ld->perm[i] = ld->perm[j];
			ld->perm[j] = t;
		}
	}
	for (size_t k = 0; k < ld->per_rank; k++)
		ld->order[k] = ld->perm[(r + (uint64_t)k * w) % n];
}

/* Batches from position `base` to the end of the epoch. */
static uint64_t batches_from(const coordl_loader_t *ld, uint64_t base)
{
	uint64_t rem = ld->per_rank - base, bs = (uint64_t)ld->cfg.batch_size;

	return ld->cfg.drop_last ? rem / bs : (rem + bs - 1) / bs;
}

/* Tell the fetch engine the order it reads ahead in: the positions the
 * epoch's batches will use (drop_last leaves a tail unread). */
static void restart_fetch(coordl_loader_t *ld)
{
	uint64_t end = ld->base_pos + ld->end_batches * (uint64_t)ld->cfg.batch_size;

	if (ld->fetch)
		coordl__fetch_restart(ld->fetch, ld->order, end < ld->per_rank ? end : ld->per_rank,
				      ld->base_pos);
	if (ld->peer)
		coordl__peer_restart(ld->peer, ld->order, end < ld->per_rank ? end : ld->per_rank,
				     ld->base_pos);
}

/*
 * Stop all work in flight and restart the sample order at `pos` of `epoch`.
 * Called with mu held. Slots the caller still holds stay HANDED until
 * released; everything else is discarded.
 */
/* Stop the ring: no worker is busy on return, and every slot but those
 * the caller holds (HANDED) is free. The caller sets quiesce back to 0
 * once it has moved the ring, then wakes the workers. mu held. */
static void quiesce_locked(coordl_loader_t *ld)
{
	ld->quiesce = 1;
	ld->gen++;
	/* Workers waiting in the group for work come back at once. */
	coordl__group_kick(ld->group);
	while (ld->active > 0)
		pthread_cond_wait(&ld->idle_cv, &ld->mu);
	for (int i = 0; i < ld->nslots; i++)
		if (ld->slots[i].state != SLOT_HANDED)
			ld->slots[i].state = SLOT_FREE;
}

/* The default ring depth for n workers: they share batches item by item,
 * so a shallow ring keeps all of them busy; the cap bounds the memory of
 * big thread counts (a 224x224 float batch of 32 is 19 MB). */
static int default_depth(int n)
{
	int p = 2 * n;

	return p < 2 ? 2 : p > COORDL__RING_MAX ? COORDL__RING_MAX : p;
}

/* Give a slot's buffer memory back to the system (its address range stays;
 * the next use faults it in again). */
static void slot_release_memory(struct slot *s)
{
	if (s->touched && s->data) {
		madvise(s->data, s->data_cap, MADV_DONTNEED);
		s->touched = 0;
	}
}

/*
 * A ring whose depth the caller left to the loader follows the worker
 * count, as the workers follow the CPU set: when the node takes back cores
 * it lent, the batch buffers those workers needed go back too (19 MB each
 * at 224x224 float, batch 32), leaving the job's memory limit to its cache
 * and the page cache. Changed only here, with the ring stopped (every slot
 * FREE but those the caller holds), so batch b's slot (b % ring) never
 * moves under a batch in flight. A held slot beyond the new depth gives its
 * memory back when released. mu held.
 */
static void ring_resize_locked(coordl_loader_t *ld)
{
	int want;

	if (!ld->ring_auto)
		return;
	want = default_depth(ld->nthreads);
	if (want > ld->nslots)
		want = ld->nslots;
	for (int i = want; i < ld->nslots; i++)
		if (ld->slots[i].state == SLOT_FREE)
			slot_release_memory(&ld->slots[i]);
	ld->ring = want;
}

static void restart_locked(coordl_loader_t *ld, uint64_t epoch, uint64_t pos)
{
	quiesce_locked(ld);
	ring_resize_locked(ld);
	if (ld->started && ld->t0 > 0) {
		double end = ld->t1 > 0 ? ld->t1 : coordl__now();
		ld->total_wall += end - ld->t0;
	}
	ld->total_stall += ld->stall;
	ld->epoch = epoch;
	compute_order(ld);
	ld->base_pos = pos;
	ld->position = pos;
	ld->next_start = ld->next_hand = 0;
	ld->end_batches = batches_from(ld, pos);
	restart_fetch(ld);
	if (ld->group)
		ld->grp_shared = coordl__group_restart(ld->group, epoch, pos, ld->end_batches) ==
				 COORDL__GROUP_SHARED;
	ld->t0 = ld->t1 = 0;
	ld->stall = 0;
	ld->samples = ld->batches = 0;
	ld->started = 0;
	__atomic_store_n(&ld->prep_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ld->fetch_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ld->storage_bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ld->storage_reads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ld->hits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ld->misses, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ld->corrupt, 0, __ATOMIC_RELAXED);
	ld->quiesce = 0;
	pthread_cond_broadcast(&ld->work_cv);
}

static void set_fatal(coordl_loader_t *ld, const char *what, int errnum)
{
	pthread_mutex_lock(&ld->mu);
	if (!ld->fatal) {
		ld->fatal = 1;
		snprintf(ld->fatal_text, sizeof(ld->fatal_text), "%s: %s", what, strerror(errnum));
	}
	pthread_cond_broadcast(&ld->ready_cv);
	pthread_mutex_unlock(&ld->mu);
}

static void note_corrupt(coordl_loader_t *ld, size_t idx, const char *why)
{
	__atomic_add_fetch(&ld->corrupt, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ld->mu);
	ld->total_corrupt++;
	ld->has_corrupt = 1;
	snprintf(ld->last_corrupt, sizeof(ld->last_corrupt), "%s: %s",
		 coordl__source_item_name(ld->src, idx), why);
	pthread_mutex_unlock(&ld->mu);
}

static uint64_t ns_since(double t)
{
	return (uint64_t)((coordl__now() - t) * 1e9);
}

/* Item bytes from storage: from the fetch engine for a remote dataset (read
 * ahead when pos is the item's position in the order), else from the source. */
static int fetch_item(coordl_loader_t *ld, uint64_t pos, uint64_t idx, uint8_t **buf, size_t *cap,
		      size_t *len, char *why, size_t whylen)
{
	if (ld->fetch)
		return coordl__fetch_get(ld->fetch, pos, (size_t)idx, buf, cap, len, why, whylen);
	return coordl__source_fetch(ld->src, (size_t)idx, buf, cap, len, why, whylen);
}

/* Per-thread state of a worker: its prep context and fetch buffer. */
struct wstate {
	coordl__prep_ctx_t *prep;
	uint8_t *buf;
	size_t cap;
};

/*
 * Produce one sample into dst: item orig of `epoch` (at position pos of
 * this loader's order, or COORDL__NOPOS), or, when it cannot be read or
 * decoded, a deterministic replacement; *label and *index receive the
 * label and dataset index used. Returns 1 when a replacement was used, 0
 * otherwise, -1 when no readable item was found.
 */
static int produce_sample(coordl_loader_t *ld, struct wstate *w, uint64_t epoch, uint64_t pos,
			  uint64_t orig, uint8_t *dst, int32_t *label, uint64_t *index)
{
	uint64_t idx = orig, seed = ld->cfg.seed;
	coordl__rng_t rng;
	char why[128];

	coordl__rng_seed(&rng, coordl__hash4(seed, epoch, orig, COORDL__RNG_REPLACE));
	for (int attempt = 0; attempt <= MAX_REPLACE; attempt++) {
		uint64_t sseed;
		const uint8_t *bytes = NULL;
		size_t len = 0;
		int ok, from_cache = 0, skip_cache = 0;
		coordl__cache_ticket_t tk;

		if (attempt > 0)
			idx = coordl__rng_below(&rng, ld->nitems);
		/* The augmentation of the item actually used (a replacement's
		 * own index), as coordl(3) documents. */
		sseed = coordl__hash4(seed, epoch, idx, COORDL__RNG_AUGMENT);
		if (ld->cfg.mode == COORDL_MODE_SYNTHETIC) {
			coordl__prep_synthetic(&ld->pp, sseed, dst);
			goto good;
		}
again:
		ok = 1;
		if (!skip_cache && (bytes = coordl__cache_get(ld->cache, idx, &len, &tk))) {
			from_cache = 1;
			if (ld->fetch && attempt == 0 && pos != COORDL__NOPOS)
				coordl__fetch_forget(ld->fetch, pos);
		} else {
			double t = coordl__now();
			int pr = COORDL__PEER_ABSENT;
			__atomic_add_fetch(&ld->misses, 1, __ATOMIC_RELAXED);
			/* Another node's part: ask that node before storage. */
			if (ld->peer && !coordl__peer_mine(ld->peer, idx))
				pr = coordl__peer_get(ld->peer,
						      attempt || skip_cache || pos == COORDL__NOPOS ?
						      COORDL__NOPOS : pos,
						      idx, &w->buf, &w->cap, &len);
			if (pr == COORDL__PEER_HIT) {
				bytes = w->buf;
				if (ld->fetch && attempt == 0 && pos != COORDL__NOPOS)
					coordl__fetch_forget(ld->fetch, pos);
			} else if (fetch_item(ld, attempt || skip_cache || pos == COORDL__NOPOS ?
					      COORDL__NOPOS : pos, idx,
					      &w->buf, &w->cap, &len, why, sizeof(why)) < 0) {
				ok = 0;
			} else {
				__atomic_add_fetch(&ld->storage_bytes, len, __ATOMIC_RELAXED);
				__atomic_add_fetch(&ld->storage_reads, 1, __ATOMIC_RELAXED);
				/* Only this node's part goes into its cache. */
				if (coordl__peer_mine(ld->peer, idx))
					coordl__cache_put(ld->cache, idx, w->buf, len);
				bytes = w->buf;
			}
			__atomic_add_fetch(&ld->fetch_ns, ns_since(t), __ATOMIC_RELAXED);
		}
		if (ok && len == 0 && ld->cfg.mode != COORDL_MODE_RAW) {
			snprintf(why, sizeof(why), "empty file");
			ok = 0;
		}
		if (ok && ld->cfg.mode == COORDL_MODE_RAW) {
			uint64_t l64 = len;
			memcpy(dst, &l64, sizeof(l64));
		} else if (ok) {
			double t = coordl__now();
			ok = coordl__prep_item(w->prep, bytes, len, sseed, dst, why, sizeof(why)) == 0;
			__atomic_add_fetch(&ld->prep_ns, ns_since(t), __ATOMIC_RELAXED);
		}
		if (from_cache) {
			from_cache = 0;
			if (!coordl__cache_done(ld->cache, &tk)) {
				/* A bound change dropped the item while it was in
				 * use and could not wait: redo it from storage. */
				skip_cache = 1;
				goto again;
			}
			__atomic_add_fetch(&ld->hits, 1, __ATOMIC_RELAXED);
		}
		if (ok)
			goto good;
		note_corrupt(ld, idx, why);
		continue;
good:
		*label = coordl__source_label(ld->src, idx);
		*index = idx;
		return attempt > 0;
	}
	return -1;
}

/* Produce sample k of slot s (see produce_sample). */
static int process_item(coordl_loader_t *ld, struct wstate *w, struct slot *s, int k)
{
	uint64_t pos = s->start + (uint64_t)k;

	return produce_sample(ld, w, ld->epoch, pos, ld->order[pos],
			      (uint8_t *)s->data + (size_t)k * ld->sample_bytes, &s->b.labels[k],
			      &s->b.indices[k]);
}

/* The group's callback (coord.h): one sample of any member's batch. The
 * index comes from the shared segment: keep it inside the dataset. */
static int group_item(void *arg, void *wstate, uint64_t epoch, uint64_t pos, uint64_t orig,
		      void *dst, int32_t *label, uint64_t *index)
{
	coordl_loader_t *ld = arg;

	if (orig >= ld->nitems)
		orig %= ld->nitems;
	return produce_sample(ld, wstate, epoch, pos, orig, dst, label, index);
}

/* Find an unclaimed item in the oldest unfinished batch, starting a new
 * batch when every started one is fully claimed. Called with mu held. */
static struct slot *claim_locked(coordl_loader_t *ld, int *k)
{
	struct slot *s;

	/* A shared member's batches come from the staging area. */
	if (ld->group && ld->grp_shared)
		return NULL;
	for (uint64_t b = ld->next_hand; b < ld->next_start; b++) {
		s = &ld->slots[b % (uint64_t)ld->ring];
		if (s->state == SLOT_FILLING && s->gen == ld->gen && s->batch == b && s->claimed < s->n) {
			*k = s->claimed++;
			return s;
		}
	}
	if (ld->next_start >= ld->end_batches)
		return NULL;
	s = &ld->slots[ld->next_start % (uint64_t)ld->ring];
	if (s->state != SLOT_FREE)
		return NULL;
	s->state = SLOT_FILLING;
	s->touched = 1;
	s->gen = ld->gen;
	s->batch = ld->next_start;
	s->start = ld->base_pos + ld->next_start * (uint64_t)ld->cfg.batch_size;
	s->n = (int)(ld->per_rank - s->start < (uint64_t)ld->cfg.batch_size
			     ? ld->per_rank - s->start
			     : (uint64_t)ld->cfg.batch_size);
	s->claimed = s->done = s->replaced = 0;
	s->b.n = s->n;
	s->b.epoch = ld->epoch;
	s->b.seq = s->start / (uint64_t)ld->cfg.batch_size;
	s->b.data_bytes = (size_t)s->n * ld->sample_bytes;
	s->b.device_data = NULL;
	ld->next_start++;
	*k = s->claimed++;
	return s;
}

/*
 * One item of the group's work (coord.h), or a short wait for some. Called
 * with mu held; returns with it held. Counted as active, so that a restart
 * waits for it and the order it reads stays put meanwhile.
 */
static void group_work(coordl_loader_t *ld, struct wstate *w)
{
	coordl__group_job_t job = { ld->epoch, ld->base_pos, ld->per_rank,
				    ld->base_pos / (uint64_t)ld->cfg.batch_size + ld->end_batches,
				    ld->order };
	uint64_t gen = ld->gen;
	char why[96] = "";
	int rc;

	ld->active++;
	pthread_mutex_unlock(&ld->mu);
	rc = coordl__group_work(ld->group, &job, w, COORDL__GROUP_TICK_MS, why, sizeof(why));
	pthread_mutex_lock(&ld->mu);
	ld->active--;
	if (ld->active == 0)
		pthread_cond_broadcast(&ld->idle_cv);
	if (rc < 0 && gen == ld->gen && !ld->fatal) {
		ld->fatal = 1;
		snprintf(ld->fatal_text, sizeof(ld->fatal_text),
			 "no readable item found after %d replacements (%.40s; last: %.40s)", MAX_REPLACE,
			 why, ld->last_corrupt);
		pthread_cond_broadcast(&ld->ready_cv);
	}
}

static void *worker_main(void *arg)
{
	struct worker *me = arg;
	coordl_loader_t *ld = me->ld;
	struct wstate w = { 0 };

	if (ld->cfg.mode == COORDL_MODE_TRAIN || ld->cfg.mode == COORDL_MODE_EVAL) {
		if (!(w.prep = coordl__prep_ctx_create(&ld->pp))) {
			set_fatal(ld, "worker: cannot create the prep context", errno);
			return NULL;
		}
	}
	pthread_mutex_lock(&ld->mu);
	while (!ld->stop) {
		struct slot *s;
		uint64_t gen;
		int k, rc;

		if (ld->group && ld->grp_shared && me->id < ld->nthreads && !ld->quiesce &&
		    !ld->fatal) {
			group_work(ld, &w);
			continue;
		}
		if (me->id >= ld->nthreads || !ld->started || ld->quiesce || ld->fatal ||
		    !(s = claim_locked(ld, &k))) {
			pthread_cond_wait(&ld->work_cv, &ld->mu);
			continue;
		}
		gen = ld->gen;
		ld->active++;
		pthread_mutex_unlock(&ld->mu);

		rc = process_item(ld, &w, s, k);

		pthread_mutex_lock(&ld->mu);
		ld->active--;
		if (ld->active == 0)
			pthread_cond_broadcast(&ld->idle_cv);
		if (gen != ld->gen)
			continue; /* an epoch change discarded this batch */
		if (rc < 0) {
			if (!ld->fatal) {
				ld->fatal = 1;
				snprintf(ld->fatal_text, sizeof(ld->fatal_text),
					 "no readable item found after %d replacements (last: %.100s)",
					 MAX_REPLACE, ld->last_corrupt);
			}
			pthread_cond_broadcast(&ld->ready_cv);
			continue;
		}
		s->replaced += rc;
		if (++s->done == s->n) {
			s->b.replaced = s->replaced;
			s->state = SLOT_READY;
			__atomic_add_fetch(&ld->own_batches, 1, __ATOMIC_RELAXED);
			pthread_cond_broadcast(&ld->ready_cv);
		}
	}
	pthread_mutex_unlock(&ld->mu);
	coordl__prep_ctx_destroy(w.prep);
	free(w.buf);
	return NULL;
}

/* Start workers up to `want` (they never exit before destroy). mu held. */
static int spawn_locked(coordl_loader_t *ld, int want, coordl_error_t *err)
{
	while (ld->spawned < want) {
		int i = ld->spawned, e;
		ld->wk[i].ld = ld;
		ld->wk[i].id = i;
		if ((e = pthread_create(&ld->thr[i], NULL, worker_main, &ld->wk[i])) != 0)
			return coordl__errprintf(err, e, "threads=%d: cannot start a worker: %s", want,
						 strerror(e));
		ld->spawned++;
	}
	return 0;
}

static void free_slots(coordl_loader_t *ld)
{
	if (!ld->slots)
		return;
	for (int i = 0; i < ld->nslots; i++) {
		struct slot *s = &ld->slots[i];
#ifdef HAVE_CUDA
		if (ld->pinned) {
			coordl__cuda_host_free(s->data);
			s->data = NULL;
		}
#endif
		if (s->data)
			munmap(s->data, s->data_cap);
		free(s->b.labels);
		free(s->b.indices);
	}
	free(ld->slots);
	ld->slots = NULL;
}

/*
 * Attach the cache the configuration and environment ask for (env.h), and
 * follow the grant file when the bound is the job's. Never fails: a named
 * cache that cannot be had (in use for another dataset, no room, an unsafe
 * file) leaves a private cache of the program's own bound, or no cache
 * when the bound is the job's grant (a private copy in every process could
 * exceed it), and cache_note says why.
 */
static void open_cache(coordl_loader_t *ld, const coordl__env_t *env)
{
	coordl_error_t cerr = { "" };
	uint64_t bound = (uint64_t)env->cache_bytes, g;
	size_t nitems = ld->nitems;
	uint64_t dbytes = coordl__source_bytes(ld->src), sig = coordl__source_signature(ld->src);
	char why[128];

	if (env->grant_path) {
		if (coordl__grant_read(env->grant_path, &g, why, sizeof(why)) == 0)
			bound = g;
		else
			snprintf(ld->cache_note, sizeof(ld->cache_note),
				 "%s=%.100s: %s: starting from %s (%llu bytes)", SYNERGY_ENV_CACHE_GRANT,
				 env->grant_path, why, SYNERGY_ENV_CACHE_BYTES, (unsigned long long)bound);
	} else if (bound == 0) {
		return;
	}
	if (ld->cache_name) {
		ld->cache = coordl__cache_attach(ld->cache_name, env->cache_dir, bound, nitems, dbytes,
						 sig, &cerr);
		if (ld->cache) {
			ld->cache_shared = 1;
			ld->cfg.cache_name = ld->cache_name;
		} else if (env->cache_fixed) {
			snprintf(ld->cache_note, sizeof(ld->cache_note),
				 "%.200s: using a private cache of %llu bytes", cerr.text,
				 (unsigned long long)bound);
			ld->cache = coordl__cache_attach(NULL, NULL, bound, nitems, dbytes, sig, &cerr);
		} else {
			snprintf(ld->cache_note, sizeof(ld->cache_note), "%.200s: running without a cache",
				 cerr.text);
			bound = 0;
		}
	} else {
		ld->cache = coordl__cache_attach(NULL, NULL, bound, nitems, dbytes, sig, &cerr);
	}
	if (!ld->cache && bound > 0) {
		snprintf(ld->cache_note, sizeof(ld->cache_note), "%.200s: running without a cache",
			 cerr.text);
		bound = 0;
	}
	ld->cfg.cache_bytes = (int64_t)bound;
	if (ld->cache && env->grant_path && !(ld->grant = coordl__grant_start(env->grant_path, ld->cache)))
		snprintf(ld->cache_note, sizeof(ld->cache_note),
			 "%s: cannot start following the grant: %s", SYNERGY_ENV_CACHE_GRANT,
			 strerror(errno));
}

/* Let the fetch engine leave out what a peer will serve. */
static int peer_serves(void *arg, size_t idx)
{
	return coordl__peer_serves(arg, idx);
}

/*
 * Join the partitioned cache of a multi-node job when the environment
 * says the job spans nodes (peer.h). Never fails: without peers the
 * loader works as on one node, and cache_note says why when peers were
 * asked for but cannot be had.
 */
static void open_peers(coordl_loader_t *ld, const coordl__env_t *env)
{
	coordl__peer_opts_t po;
	char why[256];

	memset(&po, 0, sizeof(po));
	po.env = env;
	po.rank = ld->cfg.rank;
	po.world = ld->cfg.world_size;
	po.signature = coordl__source_signature(ld->src);
	po.nitems = ld->nitems;
	po.per_rank = ld->per_rank;
	po.max_item = (uint64_t)env->max_item_bytes;
	ld->peer = coordl__peer_create(ld->cache, &po, why, sizeof(why));
	if (!ld->peer && why[0] && !ld->cache_note[0])
		snprintf(ld->cache_note, sizeof(ld->cache_note), "%.300s", why);
	if (ld->peer && ld->fetch)
		coordl__fetch_set_skip(ld->fetch, peer_serves, ld->peer);
}

/*
 * Join the group the environment names (coord.h). Never fails the loader:
 * a group that cannot be joined leaves it on its own, and group_note says
 * why. Pinned (CUDA) buffers are the loader's own, so such a loader does
 * not join.
 */
static void open_group(coordl_loader_t *ld, const coordl__env_t *env)
{
	coordl_error_t gerr = { "" };
	coordl__group_geom_t geom;

	if (ld->cfg.pin_memory) {
		snprintf(ld->group_note, sizeof(ld->group_note),
			 "group '%.64s': pin_memory=1 keeps its own pinned buffers: not joining",
			 env->group);
		return;
	}
	memset(&geom, 0, sizeof(geom));
	geom.signature = coordl__group_signature(&ld->cfg, coordl__source_signature(ld->src),
						 ld->nitems, ld->sample_bytes);
	geom.batch_size = (uint32_t)ld->cfg.batch_size;
	geom.sample_bytes = ld->sample_bytes;
	geom.bound = env->group_bytes;
	geom.window = env->group_window;
	ld->group = coordl__group_join(env->group, env->group_dir, &geom, group_item, ld, &gerr);
	if (!ld->group)
		snprintf(ld->group_note, sizeof(ld->group_note), "%.250s: running on its own",
			 gerr.text);
}

/* Allocate every batch buffer once and touch it, so that page faults are
 * paid here and never on the hot path. */
static int alloc_slots(coordl_loader_t *ld, coordl_error_t *err)
{
	size_t bs = (size_t)ld->cfg.batch_size;
	size_t bytes = bs * ld->sample_bytes;

	if (ld->sample_bytes && bytes / ld->sample_bytes != bs)
		return coordl__errprintf(err, EINVAL, "batch_size=%d: batch too large", ld->cfg.batch_size);
	if (!(ld->slots = calloc((size_t)ld->nslots, sizeof(*ld->slots))))
		return coordl__errprintf(err, ENOMEM, "out of memory");
	for (int i = 0; i < ld->nslots; i++) {
		struct slot *s = &ld->slots[i];
		s->idx = i;
		s->data_cap = bytes ? bytes : 1;
#ifdef HAVE_CUDA
		if (ld->cfg.pin_memory) {
			if (!(s->data = coordl__cuda_host_alloc(s->data_cap)))
				return coordl__errprintf(err, errno,
							 "pin_memory=1: cannot allocate pinned memory: %s",
							 errno == ENOTSUP ? "no CUDA device" : strerror(errno));
			ld->pinned = 1;
		}
#endif
		if (!s->data) {
			s->data = mmap(NULL, s->data_cap, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (s->data == MAP_FAILED) {
				s->data = NULL;
				return coordl__errprintf(err, ENOMEM, "batch buffers: out of memory");
			}
			/* Transparent huge pages (where the system allows them on
			 * request) turn ~5000 faults per 19 MB batch into ~10. */
			madvise(s->data, s->data_cap, MADV_HUGEPAGE);
		}
		/* A group member normally takes its batches from the staging
		 * area: its own buffers are touched only if it goes SOLO. The
		 * slots beyond the ring are address space until it grows. */
		if ((!ld->group || ld->pinned) && i < ld->ring) {
			memset(s->data, 0, s->data_cap);
			s->touched = 1;
		}
		if (!(s->b.labels = calloc(bs, sizeof(int32_t))) ||
		    !(s->b.indices = calloc(bs, sizeof(uint64_t))))
			return coordl__errprintf(err, ENOMEM, "out of memory");
		s->b.data = s->data;
	}
	return 0;
}

coordl_loader_t *coordl_create(const coordl_config_t *cfg, coordl_error_t *err)
{
	coordl_loader_t *ld = NULL;
	coordl__env_t env;
	int ok = 0, locked = 0, skip_prof = 0;

	if (!cfg) {
		coordl__errprintf(err, EINVAL, "config: NULL");
		return NULL;
	}
	if (check_config(cfg, err) < 0 || coordl__env_resolve(cfg, &env, err) < 0)
		return NULL;
	if (!(ld = calloc(1, sizeof(*ld)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&ld->mu, NULL);
	pthread_cond_init(&ld->work_cv, NULL);
	pthread_cond_init(&ld->ready_cv, NULL);
	pthread_cond_init(&ld->idle_cv, NULL);
	ld->cfg = *cfg;
	ld->cfg.threads = env.threads;
	ld->cfg.cache_bytes = env.cache_bytes;
	ld->cfg.cache_name = NULL;
	if (!(ld->path = strdup(cfg->path)) ||
	    (env.cache_name && !(ld->cache_name = strdup(env.cache_name)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	ld->cfg.path = ld->path;
	/* A ring the caller left to the loader follows the worker count
	 * (ring_resize_locked): address space for the deepest ring is
	 * reserved, memory taken only for the slots in use. Pinned buffers
	 * are allocated whole, so their ring stays as it starts. */
	ld->ring_auto = !cfg->prefetch && !cfg->pin_memory;
	if (!cfg->prefetch)
		ld->cfg.prefetch = default_depth(env.threads);
	ld->ring = ld->cfg.prefetch;
	ld->nslots = ld->ring_auto ? COORDL__RING_MAX : ld->ring;

	if (!(ld->src = coordl__source_open(ld->path, cfg->source, err)))
		goto out;
	ld->cfg.source = coordl__source_kind(ld->src);
	ld->nitems = coordl__source_count(ld->src);
	ld->per_rank = (ld->nitems + (size_t)ld->cfg.world_size - 1) / (size_t)ld->cfg.world_size;

	ld->pp.out_size = cfg->out_size;
	ld->pp.layout = cfg->layout;
	ld->pp.mode = cfg->mode == COORDL_MODE_EVAL ? COORDL_MODE_EVAL : COORDL_MODE_TRAIN;
	ld->pp.scale_min = cfg->scale_min;
	ld->pp.scale_max = cfg->scale_max;
	ld->pp.ratio_min = cfg->ratio_min;
	ld->pp.ratio_max = cfg->ratio_max;
	ld->pp.flip_prob = cfg->flip_prob;
	memcpy(ld->pp.mean, cfg->mean, sizeof(ld->pp.mean));
	memcpy(ld->pp.std, cfg->std, sizeof(ld->pp.std));
	ld->sample_bytes = cfg->mode == COORDL_MODE_RAW ? sizeof(uint64_t)
							: coordl__prep_sample_bytes(&ld->pp);
	ld->cfg.max_item_bytes = env.max_item_bytes;
	coordl__source_set_max_item(ld->src, (uint64_t)env.max_item_bytes);

	if (cfg->mode != COORDL_MODE_SYNTHETIC)
		open_cache(ld, &env);
	if (env.group)
		open_group(ld, &env);
	if (coordl__source_remote(ld->src) && cfg->mode != COORDL_MODE_SYNTHETIC) {
		coordl__fetch_opts_t fo = { cfg->io_window, cfg->io_deadline_ms,
					    (uint64_t)ld->cfg.max_item_bytes };
		if (!(ld->fetch = coordl__fetch_create(ld->src, ld->cache, &fo, err)))
			goto out;
	}
	if (cfg->mode != COORDL_MODE_SYNTHETIC)
		open_peers(ld, &env);
	if (!(ld->perm = malloc(ld->nitems * sizeof(uint64_t))) ||
	    !(ld->order = malloc(ld->per_rank * sizeof(uint64_t))) ||
	    !(ld->thr = calloc(COORDL__MAX_THREADS, sizeof(pthread_t))) ||
	    !(ld->wk = calloc(COORDL__MAX_THREADS, sizeof(struct worker)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	if (alloc_slots(ld, err) < 0)
		goto out;
	pthread_mutex_lock(&ld->mu);
	locked = 1;
	ld->epoch = 0;
	compute_order(ld);
	ld->end_batches = batches_from(ld, 0);
	restart_fetch(ld);
	if (ld->group)
		ld->grp_shared = coordl__group_restart(ld->group, 0, 0, ld->end_batches) ==
				 COORDL__GROUP_SHARED;
	ld->nthreads = env.threads;
	if (spawn_locked(ld, env.threads, err) < 0)
		goto out;
	if ((env.follow && !(ld->follow = coordl__follow_create())) ||
	    (env.profile_out && (cfg->mode == COORDL_MODE_TRAIN || cfg->mode == COORDL_MODE_EVAL) &&
	     !(ld->prof = coordl__profmode_create(ld, env.threads, env.profile_out, &skip_prof)) &&
	     !skip_prof)) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	/* The profiling search sets the worker count itself; the loader
	 * follows its cpuset again once it ended (coordl__profile_done). */
	if (ld->prof)
		__atomic_store_n(&ld->follow_off, 1, __ATOMIC_RELAXED);
	ok = 1;
out:
	if (locked)
		pthread_mutex_unlock(&ld->mu);
	if (!ok) {
		int e = errno;
		coordl_destroy(ld);
		errno = e;
		return NULL;
	}
	return ld;
}

void coordl_destroy(coordl_loader_t *ld)
{
	int e = errno;

	if (!ld)
		return;
	coordl__profmode_destroy(ld->prof);
	coordl__grant_stop(ld->grant);
	pthread_mutex_lock(&ld->mu);
	ld->stop = 1;
	pthread_cond_broadcast(&ld->work_cv);
	pthread_mutex_unlock(&ld->mu);
	coordl__group_kick(ld->group);
	for (int i = 0; i < ld->spawned; i++)
		pthread_join(ld->thr[i], NULL);
	coordl__group_leave(ld->group);
#ifdef HAVE_CUDA
	coordl__cuda_destroy(ld->cuda);
	coordl__cuda_destroy(ld->gcuda);
#endif
	coordl__fetch_destroy(ld->fetch);
	/* The peer tier has the cache's mapping registered: it goes first. */
	coordl__peer_destroy(ld->peer);
	free_slots(ld);
	coordl__cache_detach(ld->cache);
	coordl__source_destroy(ld->src);
	free(ld->perm);
	free(ld->order);
	free(ld->thr);
	free(ld->wk);
	free(ld->path);
	free(ld->cache_name);
	coordl__follow_destroy(ld->follow);
	pthread_cond_destroy(&ld->work_cv);
	pthread_cond_destroy(&ld->ready_cv);
	pthread_cond_destroy(&ld->idle_cv);
	pthread_mutex_destroy(&ld->mu);
	free(ld);
	errno = e;
}

size_t coordl_num_samples(const coordl_loader_t *ld) { return ld->per_rank; }

size_t coordl_num_batches(const coordl_loader_t *ld) { return (size_t)batches_from(ld, 0); }

size_t coordl_dataset_items(const coordl_loader_t *ld) { return ld->nitems; }

uint64_t coordl_dataset_bytes(const coordl_loader_t *ld) { return coordl__source_bytes(ld->src); }

int coordl_num_classes(const coordl_loader_t *ld) { return coordl__source_classes(ld->src); }

const coordl_config_t *coordl_config(const coordl_loader_t *ld) { return &ld->cfg; }

int coordl_set_epoch(coordl_loader_t *ld, uint64_t epoch, coordl_error_t *err)
{
	if (!ld)
		return coordl__errprintf(err, EINVAL, "loader: NULL");
	pthread_mutex_lock(&ld->mu);
	restart_locked(ld, epoch, 0);
	pthread_mutex_unlock(&ld->mu);
	return 0;
}

static int set_threads_locked(coordl_loader_t *ld, int threads, coordl_error_t *err);

/* The CPU set changed (follow.h): pin every thread to it and run one
 * worker per CPU. A thread that cannot be pinned keeps its old affinity
 * (the count still follows); a failed spawn keeps the old count. Neither
 * is retried before the set changes again. */
static void follow_cpuset(coordl_loader_t *ld, const coordl__cpus_t *set)
{
	int n = coordl__cpus_count(set);

	pthread_mutex_lock(&ld->mu);
	if (!__atomic_load_n(&ld->follow_off, __ATOMIC_RELAXED)) {
		coordl__follow_pin(set, ld->thr, ld->spawned);
		set_threads_locked(ld, n < 1 ? 1 : n > COORDL__MAX_THREADS ? COORDL__MAX_THREADS : n, NULL);
	}
	pthread_mutex_unlock(&ld->mu);
}

/* Stop the private ring where the consumer is and drop what it prepared
 * ahead: the member takes its batches from the staging area from here on.
 * Batches the caller holds stay held. mu held. */
static void pause_private_locked(coordl_loader_t *ld)
{
	quiesce_locked(ld);
	ld->next_start = ld->next_hand;
	ld->grp_shared = 1;
	ld->quiesce = 0;
	pthread_cond_broadcast(&ld->work_cv);
}

/*
 * coordl_next() in a group: the batch from the staging area (1), or 2 when
 * the member is SOLO and its private ring must produce it (from here: the
 * ring starts at the consumer's position when the member was just made
 * SOLO), -1 on error. mu held; released while waiting.
 */
static int group_next_locked(coordl_loader_t *ld, coordl_batch_t **out, coordl_error_t *err)
{
	coordl_batch_t *b = NULL;
	uint64_t x = ld->next_hand;
	double t;
	int r;

	if (!ld->grp_shared && coordl__group_try_join(ld->group, x))
		pause_private_locked(ld);
	if (!ld->grp_shared)
		return 2;
	pthread_mutex_unlock(&ld->mu);
	t = coordl__now();
	r = coordl__group_next(ld->group, x, &b);
	pthread_mutex_lock(&ld->mu);
	ld->stall += coordl__now() - t;
	if (r < 0)
		return coordl__errprintf(err, errno,
					 "%d batches of the group's staging area are held by the "
					 "caller: release a batch first",
					 COORDL__GROUP_MAX_HELD);
	if (r == 0) {
		/* Made SOLO: the private ring goes on from here. */
		ld->grp_shared = 0;
		ld->next_start = ld->next_hand;
		pthread_cond_broadcast(&ld->work_cv);
		return 2;
	}
	if (ld->fatal) {
		coordl__group_release(ld->group, b);
		return coordl__errprintf(err, EIO, "%s", ld->fatal_text);
	}
	ld->next_hand++;
	ld->position += (uint64_t)b->n;
	ld->samples += (uint64_t)b->n;
	ld->total_samples += (uint64_t)b->n;
	ld->batches++;
	if (ld->next_hand >= ld->end_batches)
		ld->t1 = coordl__now();
	*out = b;
	return 1;
}

int coordl_next(coordl_loader_t *ld, coordl_batch_t **out, coordl_error_t *err)
{
	struct slot *s;
	double t;
	int rv = -1;
	coordl__cpus_t cpus = { NULL, 0 };

	if (!ld || !out)
		return coordl__errprintf(err, EINVAL, "coordl_next: NULL argument");
	if (ld->follow && !__atomic_load_n(&ld->follow_off, __ATOMIC_RELAXED) &&
	    coordl__follow_check(ld->follow, &cpus) == 1) {
		follow_cpuset(ld, &cpus);
		coordl__cpus_free(&cpus);
	}
	if (ld->prof)
		coordl__profmode_enter(ld->prof, ld);
	pthread_mutex_lock(&ld->mu);
	if (!ld->started) {
		ld->started = 1;
		ld->t0 = coordl__now();
		/* The first epoch that runs fixes the partition (peer.h). */
		if (ld->peer)
			coordl__peer_fix(ld->peer, ld->perm, ld->nitems);
		pthread_cond_broadcast(&ld->work_cv);
	}
	if (ld->fatal) {
		coordl__errprintf(err, EIO, "%s", ld->fatal_text);
		goto out;
	}
	if (ld->next_hand >= ld->end_batches) {
		if (ld->t1 == 0)
			ld->t1 = coordl__now();
		rv = 0;
		goto out;
	}
	if (ld->group) {
		rv = group_next_locked(ld, out, err);
		if (rv != 2)
			goto out;
		rv = -1;
	}
	s = &ld->slots[ld->next_hand % (uint64_t)ld->ring];
	if (s->state == SLOT_HANDED) {
		coordl__errprintf(err, EBUSY,
				  "all %d prefetch buffers are held by the caller: release a batch first",
				  ld->ring);
		goto out;
	}
	t = coordl__now();
	while (!(s->state == SLOT_READY && s->gen == ld->gen && s->batch == ld->next_hand) && !ld->fatal)
		pthread_cond_wait(&ld->ready_cv, &ld->mu);
	ld->stall += coordl__now() - t;
	if (ld->fatal) {
		coordl__errprintf(err, EIO, "%s", ld->fatal_text);
		goto out;
	}
	s->state = SLOT_HANDED;
	if (ld->group) {
		coordl__group_solo_advance(ld->group, ld->next_hand);
		ld->solo_batches++;
	}
	ld->next_hand++;
	ld->position += (uint64_t)s->n;
	ld->samples += (uint64_t)s->n;
	ld->total_samples += (uint64_t)s->n;
	ld->batches++;
	if (ld->next_hand >= ld->end_batches)
		ld->t1 = coordl__now();
	*out = &s->b;
	rv = 1;
out:
	pthread_mutex_unlock(&ld->mu);
	if (rv == 1 && ld->prof)
		coordl__profmode_leave(ld->prof);
	return rv;
}

/* The slot a batch belongs to, or NULL when it is not one of ours. */
static struct slot *slot_of(coordl_loader_t *ld, const coordl_batch_t *b)
{
	for (int i = 0; i < ld->nslots; i++)
		if (&ld->slots[i].b == b)
			return &ld->slots[i];
	return NULL;
}

void coordl_release(coordl_loader_t *ld, coordl_batch_t *b)
{
	struct slot *s;

	if (!ld || !b)
		return;
	if (!(s = slot_of(ld, b))) {
		if (ld->group && coordl__group_batch_slot(ld->group, b) >= 0) {
			b->device_data = NULL;
			coordl__group_release(ld->group, b);
		}
		return;
	}
#ifdef HAVE_CUDA
	/* An asynchronous copy may still be reading the host buffer. */
	coordl__cuda_wait(ld->cuda, s->idx);
#endif
	pthread_mutex_lock(&ld->mu);
	if (s->state == SLOT_HANDED) {
		s->state = SLOT_FREE;
		s->b.device_data = NULL;
		if (s->idx >= ld->ring)
			slot_release_memory(s);
		pthread_cond_broadcast(&ld->work_cv);
	}
	pthread_mutex_unlock(&ld->mu);
}

/* The live set-threads path, shared by the API and the cpuset follower. */
static int set_threads_locked(coordl_loader_t *ld, int threads, coordl_error_t *err)
{
	int rv = spawn_locked(ld, threads, err);

	if (rv == 0) {
		ld->nthreads = threads;
		ld->cfg.threads = threads;
		pthread_cond_broadcast(&ld->work_cv);
	}
	return rv;
}

void coordl__profile_done(coordl_loader_t *ld, int threads)
{
	coordl__cpus_t set = { NULL, 0 };
	int n = ld->follow ? coordl__follow_now(ld->follow, &set) : -1;

	pthread_mutex_lock(&ld->mu);
	if (n > 0) {
		/* One worker per CPU the job may use now: the node may have
		 * taken back what it lent for the search, or lend more. */
		coordl__follow_pin(&set, ld->thr, ld->spawned);
		threads = n;
		__atomic_store_n(&ld->follow_off, 0, __ATOMIC_RELAXED);
	}
	set_threads_locked(ld, threads < 1 ? 1 : threads > COORDL__MAX_THREADS ? COORDL__MAX_THREADS :
			   threads, NULL);
	pthread_mutex_unlock(&ld->mu);
	coordl__cpus_free(&set);
}

int coordl_set_threads(coordl_loader_t *ld, int threads, coordl_error_t *err)
{
	int rv;

	if (!ld)
		return coordl__errprintf(err, EINVAL, "loader: NULL");
	if (threads < 1 || threads > COORDL__MAX_THREADS)
		return coordl__errprintf(err, EINVAL, "threads=%d: expected 1..%d", threads,
					 COORDL__MAX_THREADS);
	pthread_mutex_lock(&ld->mu);
	/* An explicit count wins over the cpuset from now on. */
	__atomic_store_n(&ld->follow_off, 1, __ATOMIC_RELAXED);
	rv = set_threads_locked(ld, threads, err);
	pthread_mutex_unlock(&ld->mu);
	return rv;
}

int coordl_get_threads(const coordl_loader_t *ld)
{
	int n;

	pthread_mutex_lock((pthread_mutex_t *)&ld->mu);
	n = ld->nthreads;
	pthread_mutex_unlock((pthread_mutex_t *)&ld->mu);
	return n;
}

int coordl_get_state(const coordl_loader_t *ld, coordl_state_t *st)
{
	if (!ld || !st) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock((pthread_mutex_t *)&ld->mu);
	st->seed = ld->cfg.seed;
	st->epoch = ld->epoch;
	st->position = ld->position;
	st->rank = (uint32_t)ld->cfg.rank;
	st->world_size = (uint32_t)ld->cfg.world_size;
	pthread_mutex_unlock((pthread_mutex_t *)&ld->mu);
	return 0;
}

int coordl_set_state(coordl_loader_t *ld, const coordl_state_t *st, coordl_error_t *err)
{
	if (!ld || !st)
		return coordl__errprintf(err, EINVAL, "coordl_set_state: NULL argument");
	if (st->seed != ld->cfg.seed)
		return coordl__errprintf(err, EINVAL, "state seed %llu differs from the loader's %llu",
					 (unsigned long long)st->seed,
					 (unsigned long long)ld->cfg.seed);
	if (st->rank != (uint32_t)ld->cfg.rank || st->world_size != (uint32_t)ld->cfg.world_size)
		return coordl__errprintf(err, EINVAL,
					 "state rank %u/%u differs from the loader's %d/%d", st->rank,
					 st->world_size, ld->cfg.rank, ld->cfg.world_size);
	if (st->position > ld->per_rank)
		return coordl__errprintf(err, EINVAL, "state position %llu is beyond the epoch (%zu samples)",
					 (unsigned long long)st->position, ld->per_rank);
	pthread_mutex_lock(&ld->mu);
	restart_locked(ld, st->epoch, st->position);
	pthread_mutex_unlock(&ld->mu);
	return 0;
}

int coordl_get_stats(const coordl_loader_t *ld, coordl_stats_t *st)
{
	coordl_loader_t *l = (coordl_loader_t *)ld;
	double now;

	if (!ld || !st) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&l->mu);
	now = coordl__now();
	st->epoch = l->epoch;
	st->samples = l->samples;
	st->batches = l->batches;
	st->epoch_wall = l->t0 > 0 ? (l->t1 > 0 ? l->t1 : now) - l->t0 : 0;
	st->stall = l->stall;
	st->threads = l->nthreads;
	st->total_samples = l->total_samples;
	st->total_corrupt = l->total_corrupt;
	st->total_stall = l->total_stall + l->stall;
	st->total_wall = l->total_wall + st->epoch_wall;
	pthread_mutex_unlock(&l->mu);
	st->prep_time = (double)__atomic_load_n(&l->prep_ns, __ATOMIC_RELAXED) * 1e-9;
	st->fetch_time = (double)__atomic_load_n(&l->fetch_ns, __ATOMIC_RELAXED) * 1e-9;
	st->storage_bytes = __atomic_load_n(&l->storage_bytes, __ATOMIC_RELAXED);
	st->cache_hits = __atomic_load_n(&l->hits, __ATOMIC_RELAXED);
	st->cache_misses = __atomic_load_n(&l->misses, __ATOMIC_RELAXED);
	st->corrupt = __atomic_load_n(&l->corrupt, __ATOMIC_RELAXED);
	st->cache_bytes_used = coordl__cache_used(l->cache);
	st->cache_bytes_limit = coordl__cache_bound(l->cache);
	st->cache_items = coordl__cache_items(l->cache);
	st->cache_shrinks = coordl__cache_shrinks(l->cache);
	st->cache_grows = coordl__cache_grows(l->cache);
	st->cache_shared = l->cache_shared;
	if (l->fetch)
		coordl__fetch_stats(l->fetch, st);
	st->storage_reads = __atomic_load_n(&l->storage_reads, __ATOMIC_RELAXED);
	coordl__peer_stats(l->peer, st);
	st->batches_prepared = (double)__atomic_load_n(&l->own_batches, __ATOMIC_RELAXED);
	if (l->group) {
		coordl__group_stats_t gs;
		double bs = (double)l->cfg.batch_size;

		coordl__group_stats(l->group, &gs);
		pthread_mutex_lock(&l->mu);
		st->group_shared = l->grp_shared;
		st->group_solo = l->solo_batches;
		pthread_mutex_unlock(&l->mu);
		st->group_members = gs.members;
		st->group_batches = gs.received;
		st->group_redone = gs.redone;
		st->group_reaped = gs.reaped;
		st->batches_prepared += (double)gs.items_here / bs;
		st->batches_received = (double)gs.items_received / bs;
	}
	if (st->epoch_wall > 0) {
		st->images_per_s = (double)st->samples / st->epoch_wall;
		st->images_per_s_per_core = st->images_per_s / (st->threads > 0 ? st->threads : 1);
	}
	return 0;
}

const char *coordl_cache_note(const coordl_loader_t *ld)
{
	if (!ld)
		return NULL;
	if (ld->cache_note[0])
		return ld->cache_note;
	if (coordl__grant_note(ld->grant))
		return coordl__grant_note(ld->grant);
	return coordl__peer_note(ld->peer);
}

const char *coordl_group_note(const coordl_loader_t *ld)
{
	return ld && ld->group_note[0] ? ld->group_note : NULL;
}

const char *coordl_last_corrupt(const coordl_loader_t *ld)
{
	const char *p = NULL;

	if (!ld)
		return NULL;
	pthread_mutex_lock((pthread_mutex_t *)&ld->mu);
	if (ld->has_corrupt)
		p = ld->last_corrupt;
	pthread_mutex_unlock((pthread_mutex_t *)&ld->mu);
	return p;
}

int coordl_to_device(coordl_loader_t *ld, coordl_batch_t *b, coordl_error_t *err)
{
#ifdef HAVE_CUDA
	struct slot *s;
	int gi;

	if (ld && b && !slot_of(ld, b) && (gi = coordl__group_batch_slot(ld->group, b)) >= 0) {
		/* A batch of the staging area: pageable, so the copy is synchronous. */
		if (!ld->gcuda &&
		    !(ld->gcuda = coordl__cuda_create(COORDL__GROUP_MAX_SLOTS,
						      (size_t)ld->cfg.batch_size * ld->sample_bytes, err)))
			return -1;
		return coordl__cuda_copy(ld->gcuda, gi, b->data, b->data_bytes, 0, &b->device_data, err);
	}
	if (!ld || !b || !(s = slot_of(ld, b)))
		return coordl__errprintf(err, EINVAL, "coordl_to_device: not a batch of this loader");
	if (!ld->cuda && !(ld->cuda = coordl__cuda_create(ld->nslots, s->data_cap, err)))
		return -1;
	return coordl__cuda_copy(ld->cuda, s->idx, s->b.data, s->b.data_bytes, ld->pinned,
				 &s->b.device_data, err);
#else
	return coordl__errprintf(err, ENOTSUP, "libcoordl was built without CUDA");
#endif
}

int coordl_device_wait(coordl_loader_t *ld, coordl_batch_t *b)
{
#ifdef HAVE_CUDA
	struct slot *s;

	if (ld && b && !slot_of(ld, b) && coordl__group_batch_slot(ld->group, b) >= 0)
		return 0; /* copies of the staging area's batches are synchronous */
	if (!ld || !b || !(s = slot_of(ld, b))) {
		errno = EINVAL;
		return -1;
	}
	coordl__cuda_wait(ld->cuda, s->idx);
	return 0;
#else
	errno = ENOTSUP;
	return -1;
#endif
}

void *coordl_cuda_stream(coordl_loader_t *ld)
{
#ifdef HAVE_CUDA
	return ld ? coordl__cuda_stream(ld->cuda) : NULL;
#else
	(void)ld;
	return NULL;
#endif
}
