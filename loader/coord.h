/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coord.h: coordinated prep, CoorDL's third technique (loader side).
 *
 * The loaders of a group of jobs (the tasks of one job array, or jobs that
 * name the same group, on one node, over the same dataset and pipeline)
 * share one staging area: a segment of batch slots in a file on tmpfs
 * (SYNERGY_GROUP_DIR, else /dev/shm). Every batch of an epoch is prepared
 * once, by whichever member's workers are free, into a slot, and handed to
 * every member that needs it; its slot is free again when every live member
 * that needed it has consumed and released it. The member's own worker
 * threads do the work, so the group's cores are the members' cores.
 *
 * Who gets what (see coordl(3), "Coordinated prep"):
 *  - A batch is keyed by (epoch, first position, batch number). Members see
 *    exactly their own order: a batch is shared only between members whose
 *    key is the same, and the segment itself only between loaders whose
 *    pipeline (dataset, seed, batch size, augmentation, output) has the
 *    same signature, so sharing never changes what a member receives.
 *  - Each member is SHARED (it takes its batches from the staging area) or
 *    SOLO (its own pipeline, private buffers, its own workers). A member
 *    more than `window` batches behind the fastest member of its key is
 *    made SOLO, so that nobody is held back by more than that; it rejoins
 *    at a batch boundary once within window/2 (e.g. at an epoch start).
 *  - Production order: the batch needed soonest by some shared member
 *    (fewest batches ahead of its consumer) first, ties to the lower batch
 *    number, so a late member catches up with the others' help.
 *  - Slots: a free slot first; else the batch already prepared whose next
 *    use lies furthest ahead is dropped (its members get it prepared again
 *    when they come to it) when that is later than the new batch's use.
 *
 * Faults: the segment's mutex is a robust, process-shared pthread mutex
 * (EOWNERDEAD repairs the state), and every member holds an open file
 * description lock on one byte of the segment file for as long as it is
 * attached: a member whose lock is gone (exit, cancel, kill -9) is reaped
 * by the first member that looks (every waiter looks at least every
 * COORDL__GROUP_TICK_MS), its items in flight are handed to others and its
 * slots released. A member stopped (SIGSTOP, a suspended job) in the
 * middle of an item for longer than COORDL__GROUP_LEASE_MS loses the slot:
 * the batch is prepared again in another, and the stopped member's slot is
 * freed only once it is gone or has finished its item.
 *
 * Locking: the segment mutex is taken with no loader lock held by the
 * caller's own code paths that wait (next, work); the loader may call the
 * non-waiting functions with its own mutex held (its lock comes first).
 */
#ifndef COORDL_COORD_H
#define COORDL_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"

typedef struct coordl__group coordl__group_t;

/* Members attached to one segment at once, slots in one segment. */
#define COORDL__GROUP_MAX_MEMBERS COORDL_GROUP_MAX_MEMBERS /* coordl.h */
#define COORDL__GROUP_MAX_SLOTS 64
/* A member waiting for a batch or for work looks for dead members at
 * least this often (ms). */
#define COORDL__GROUP_TICK_MS 100
/* Items claimed by a stopped member are taken over after this long (ms). */
#define COORDL__GROUP_LEASE_MS 1000
/* Default staging bound and look-behind window (batches). */
#define COORDL__GROUP_BYTES_DEFAULT (512ULL << 20)
#define COORDL__GROUP_WINDOW_DEFAULT 256

/* What a segment is for: members must agree on all of it. */
typedef struct coordl__group_geom {
	uint64_t signature;    /* the pipeline (coordl__group_signature) */
	uint32_t batch_size;
	uint64_t sample_bytes;
	uint64_t bound;        /* staging bytes: slots x slot size never exceed it */
	uint32_t window;       /* batches a member may lag before it goes SOLO */
} coordl__group_geom_t;

/* The member's view of its current epoch, for its workers: the order
 * stays valid while the worker runs (the loader does not recompute it
 * before its workers are idle). */
typedef struct coordl__group_job {
	uint64_t epoch, base, per_rank, end;  /* end: batches of this epoch */
	const uint64_t *order;                /* this rank's order of the epoch */
} coordl__group_job_t;

/*
 * Produce one sample: the item at dataset index orig of `epoch` into dst
 * (sample_bytes), its label and the dataset index actually used (a
 * replacement's for a corrupt item). pos is the item's position in the
 * calling member's order when the batch is of its own epoch and phase
 * (a read-ahead hint), else COORDL__NOPOS. Returns 1 when a replacement was
 * used, 0 when not, -1 when no readable item was found. Called with no
 * lock held, from a worker thread, with the worker's own state.
 */
typedef int (*coordl__group_item_fn)(void *arg, void *wstate, uint64_t epoch, uint64_t pos,
				     uint64_t orig, void *dst, int32_t *label, uint64_t *index);

/*
 * Join (or create) the group `name` (validated: [A-Za-z0-9_.-], 1..64) in
 * dir (NULL: /dev/shm) for the pipeline geom describes. The segment is
 * coordl-<uid>-grp-<name>-<signature>.seg there. Returns NULL with errno
 * and err: EINVAL (bad name or geometry, a bound below two batches),
 * EPERM (a file there that is not a regular file of this user, mode
 * 0600, one link), EBUSY (COORDL__GROUP_MAX_MEMBERS attached, or a
 * segment of another version), others from the system.
 */
coordl__group_t *coordl__group_join(const char *name, const char *dir,
				    const coordl__group_geom_t *geom, coordl__group_item_fn fn,
				    void *arg, coordl_error_t *err);

/* Leave: the member's batches are given up, its items in flight handed to
 * others, the segment removed when it was the last member. The caller's
 * workers must have stopped. Accepts NULL; preserves errno. */
void coordl__group_leave(coordl__group_t *g);

/* The pipeline signature of a loader's configuration (what members must
 * share to exchange batches). */
uint64_t coordl__group_signature(const coordl_config_t *cfg, uint64_t source_signature,
				 size_t nitems, uint64_t sample_bytes);

enum { COORDL__GROUP_SOLO = 0, COORDL__GROUP_SHARED = 1 };

/*
 * The member begins epoch `epoch` at position `base` with `end` batches
 * (set_epoch, set_state, create). Its earlier batches are given up. Its
 * key is (epoch, base mod batch size): a member that resumed at a
 * position that is a whole number of batches shares with the others. It
 * is SHARED when its first batch is within the window of its key's other
 * members (or it is alone there, or ahead), else SOLO. Returns the mode.
 */
int coordl__group_restart(coordl__group_t *g, uint64_t epoch, uint64_t base, uint64_t end);

/*
 * Consumer: batch number x (counted from the epoch's first position given
 * to coordl__group_restart) of the member's current epoch. Waits until it
 * is ready (prepared by any member) and returns 1 with *out (valid until
 * coordl__group_release; its data, labels and indices are read-only), 0
 * when the member is (or has just been made) SOLO: the caller's own
 * pipeline must produce batch x; -1 with errno EBUSY when the member
 * already holds COORDL__GROUP_MAX_HELD batches.
 */
#define COORDL__GROUP_MAX_HELD 2
int coordl__group_next(coordl__group_t *g, uint64_t x, coordl_batch_t **out);

/* A SOLO member at batch x: becomes SHARED (1) when it is within
 * window/2 of its key's shared members, else stays SOLO (0). */
int coordl__group_try_join(coordl__group_t *g, uint64_t x);

/* Note that a SOLO member consumed batch x (it counts for the lag). */
void coordl__group_solo_advance(coordl__group_t *g, uint64_t x);

/* Give back a batch coordl__group_next handed out. Returns 1, or 0 when b
 * is not one of this member's group batches. */
int coordl__group_release(coordl__group_t *g, coordl_batch_t *b);

/*
 * Worker: do one item of the group's work, preferring items of batches
 * already started, else starting the most urgent batch of this member's
 * key (job). When there is nothing to do, waits up to wait_ms for
 * something to change. Returns 1 after an item, 0 when there was nothing
 * to do, -1 when producing failed fatally (the item is left to others and
 * *why says which item).
 */
int coordl__group_work(coordl__group_t *g, const coordl__group_job_t *job, void *wstate,
		       int wait_ms, char *why, size_t whylen);

/* The staging slot a batch of this member lies in (0..slots-1), or -1
 * when b is not one of its group batches. */
int coordl__group_batch_slot(const coordl__group_t *g, const coordl_batch_t *b);

/* Wake every waiter of this member (its consumer and workers), e.g.
 * before the loader waits for its workers to go idle. */
void coordl__group_kick(coordl__group_t *g);

/* Counters of this member. */
typedef struct coordl__group_stats {
	int mode;                  /* COORDL__GROUP_SOLO or _SHARED */
	int members;               /* live members of the segment now */
	uint64_t received;         /* batches taken from the staging area (member's life) */
	uint64_t items_here;       /* items this member's workers prepared for the group */
	uint64_t items_received;   /* items of batches it took that others prepared */
	uint64_t solo_switches;    /* times it was made SOLO */
	uint64_t reaped;           /* dead members this member reaped */
	uint64_t redone;           /* batches prepared again (dropped, or a stopped member's) */
	uint32_t slots;            /* slots in the segment */
	uint64_t slot_bytes;       /* bytes of one slot's data */
} coordl__group_stats_t;

void coordl__group_stats(coordl__group_t *g, coordl__group_stats_t *st);

/* For tests: take the segment's mutex and keep it (the caller then exits,
 * leaving the next locker EOWNERDEAD). */
void coordl__group_test_hold(coordl__group_t *g);

/* The segment's path. */
const char *coordl__group_path(const coordl__group_t *g);

#endif
