/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl_ckpt.h: CheckFreq-style checkpoints for DNN training (libcoordl).
 *
 * A training job that is preempted, requeued or killed loses the work done
 * since its last checkpoint. Checkpointing often is cheap only when it does
 * not stall the training loop, so a checkpoint is taken in two phases
 * (Mohan et al., "CheckFreq", FAST'21):
 *
 *  1. snapshot: the state (model and optimizer tensors, the loader's
 *     position, RNG states, ...) is copied into one of two snapshot buffers
 *     in host memory (pinned when CUDA and a device are there). Bulk copies
 *     registered with coordl_ckpt_copy_later() run on a thread of the
 *     library after coordl_ckpt_commit(), overlapped with the next
 *     iteration's forward and backward pass; coordl_ckpt_wait_copied() is
 *     the barrier to call before anything changes the copied memory (the
 *     next optimizer step).
 *  2. persist: another thread writes the buffer to one file in the
 *     checkpoint directory: a temporary name, fsync, rename, fsync of the
 *     directory; the last `keep` complete checkpoints are kept. A full file
 *     system or an I/O error is counted and reported (coordl_ckpt_stats_t),
 *     the temporary file is removed, the previous checkpoint stays, and
 *     training goes on.
 *
 * Recovery (coordl_ckpt_load_latest) takes the newest file that is complete
 * and whose checksums and lengths match, skipping torn, truncated or
 * corrupt ones, and hands back its sections.
 *
 * How often to checkpoint is coordl_ckpt_choose(): a pure function of the
 * measured costs and an overhead bound.
 *
 * File format (version 1, little-endian): a header of header_bytes (a
 * multiple of 4096) then the payload of payload_bytes; the file is exactly
 * their sum.
 *   0  magic "COORDLCK"     8  format version (u32)   12 header_bytes (u32)
 *   16 sequence (u64)       24 iteration (u64)        32 payload_bytes (u64)
 *   40 created, ns since the epoch (u64)              48 sections (u32)
 *   52 flags (u32, 0)       56 CRC32C of the payload  60 CRC32C of the header
 *                                                        (this field as 0)
 *   64 the section table, 64 bytes per section: name (48 bytes, NUL
 *      padded), offset in the payload (u64, a multiple of 64), length (u64);
 *      sections sorted by offset, not overlapping, names unique.
 * File names: <name>-<sequence, 20 digits>.ckpt; temporaries start with '.'.
 *
 * Conventions as in coordl.h: 0 / a pointer on success, -1 / NULL with
 * errno set and the optional coordl_error_t naming the bad input on
 * failure. The library never logs, exits or aborts on bad input. One
 * coordl_ckpt_t is used by one thread at a time (the library's own threads
 * aside); coordl_ckpt_get_stats() may be called from any thread.
 */
#ifndef COORDL_CKPT_H
#define COORDL_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COORDL_CKPT_FORMAT_VERSION 1
#define COORDL_CKPT_MAGIC "COORDLCK"
#define COORDL_CKPT_NAME_MAX 47      /* longest section name */
#define COORDL_CKPT_MAX_SECTIONS 256 /* most sections in one checkpoint */
#define COORDL_CKPT_ALIGN 64         /* sections start at multiples of this */
#define COORDL_CKPT_PREFIX_MAX 32    /* longest file name prefix (the config's name) */
#define COORDL_CKPT_KEEP_MAX 1000

typedef struct coordl_ckpt coordl_ckpt_t;
typedef struct coordl_ckpt_snap coordl_ckpt_snap_t;
typedef struct coordl_ckpt_image coordl_ckpt_image_t;

enum coordl_ckpt_memory {
	COORDL_CKPT_MEM_AUTO = 0, /* pinned when built with CUDA and a device exists, else pageable */
	COORDL_CKPT_MEM_PAGEABLE, /* ordinary memory */
	COORDL_CKPT_MEM_PINNED,   /* CUDA pinned; coordl_ckpt_begin fails with ENOTSUP without */
};

typedef struct coordl_ckpt_config {
	const char *dir;  /* checkpoint directory (required); created mode 0700 when
	                     missing (its parent must exist) */
	const char *name; /* file name prefix: [A-Za-z0-9_.-], 1..32 characters, not
	                     starting with '.' (default "ckpt"). One writer per directory
	                     and name (a lock file "<name>.lock" says so): give each rank
	                     of a job its own, e.g. "rank3" */
	int keep;         /* complete checkpoints kept, 1..COORDL_CKPT_KEEP_MAX (default 2) */
	int memory;       /* enum coordl_ckpt_memory */
	int durable;      /* 1 (default): fsync each file and the directory, so that a
	                     checkpoint survives a crash of the machine; 0: only the
	                     process (files are still written under a temporary name
	                     and renamed, so recovery never sees a torn one) */
} coordl_ckpt_config_t;

/* Fill cfg with defaults. Never fails. */
void coordl_ckpt_config_init(coordl_ckpt_config_t *cfg);

/*
 * Open the directory as this name's writer: take its lock (EBUSY when
 * another process holds it), remove temporaries a killed writer left,
 * continue the sequence after the newest file there, start the copy and
 * persist threads. Buffers are allocated by the first coordl_ckpt_begin of
 * each size, or by coordl_ckpt_reserve. Errors: EINVAL (bad config),
 * ENOTDIR, EACCES, EBUSY, ENOMEM.
 */
coordl_ckpt_t *coordl_ckpt_open(const coordl_ckpt_config_t *cfg, coordl_error_t *err);

/* Wait until every committed snapshot is persisted or failed, stop the
 * threads, free the buffers, release the lock. Accepts NULL; preserves
 * errno. */
void coordl_ckpt_close(coordl_ckpt_t *ck);

/* Payload space a section of n bytes takes (n rounded up to COORDL_CKPT_ALIGN):
 * the payload_bytes of coordl_ckpt_begin is the sum over its sections. */
uint64_t coordl_ckpt_section_space(uint64_t n);

/*
 * Allocate both snapshot buffers for payloads of up to `bytes` and touch
 * every page, so that later snapshots do not pay for page faults. Waits
 * for a buffer being written. 0, or -1 (ENOMEM, ENOTSUP for pinned memory
 * without CUDA, EBUSY while a snapshot is being filled).
 */
int coordl_ckpt_reserve(coordl_ckpt_t *ck, uint64_t bytes, coordl_error_t *err);

/*
 * Start the snapshot of training iteration `iteration` with room for
 * payload_bytes (see coordl_ckpt_section_space). Takes a free buffer; when
 * both are busy, the one committed but not yet being written is reused
 * (that older snapshot is superseded, counted in the stats, and never
 * written); when a snapshot's copies are still running, waits for them
 * first. Returns NULL with EBUSY while another snapshot is being filled,
 * ENOMEM, ENOTSUP (pinned memory asked for and not available), EINVAL.
 */
coordl_ckpt_snap_t *coordl_ckpt_begin(coordl_ckpt_t *ck, uint64_t iteration,
				      uint64_t payload_bytes, coordl_error_t *err);

/*
 * Add section `name` (1..COORDL_CKPT_NAME_MAX printable ASCII characters,
 * unique in the snapshot) of n bytes, and return where its bytes go in the
 * buffer (aligned to COORDL_CKPT_ALIGN, valid until commit or abort): copy
 * into it now, or register copies with coordl_ckpt_copy_later. NULL with
 * EINVAL (bad or repeated name, more than COORDL_CKPT_MAX_SECTIONS) or
 * ENOSPC (beyond the payload_bytes given to begin).
 */
void *coordl_ckpt_add(coordl_ckpt_snap_t *s, const char *name, uint64_t n, coordl_error_t *err);

/*
 * Copy n bytes from src to dst (which must lie within a section of this
 * snapshot) on the library's copy thread, after coordl_ckpt_commit. src must
 * stay valid and unchanged until coordl_ckpt_wait_copied() returns. 0, or
 * -1 with EINVAL (dst outside the snapshot's sections) or ENOMEM.
 */
int coordl_ckpt_copy_later(coordl_ckpt_snap_t *s, void *dst, const void *src, uint64_t n,
			   coordl_error_t *err);

/* Hand the snapshot over: its copies start, then it is written in the
 * background. The snapshot handle is gone after the call, whatever it
 * returns. 0, or -1 with EINVAL (a section no copy filled is fine; a
 * snapshot of no section is not). */
int coordl_ckpt_commit(coordl_ckpt_snap_t *s, coordl_error_t *err);

/* Drop a snapshot being filled (its buffer becomes free). Accepts NULL. */
void coordl_ckpt_abort(coordl_ckpt_snap_t *s);

/* Wait until the copies of committed snapshots have finished (the source
 * memory may change after this). Returns the seconds waited. */
double coordl_ckpt_wait_copied(coordl_ckpt_t *ck);

/*
 * Wait until every committed snapshot is persisted, failed or superseded,
 * for at most timeout_s seconds (< 0: no limit). 0 when the newest
 * committed snapshot is on storage; -1 with ETIMEDOUT, or with the errno of
 * its failed write (ENOSPC, EIO, ...) and err saying which file.
 */
int coordl_ckpt_flush(coordl_ckpt_t *ck, double timeout_s, coordl_error_t *err);

typedef struct coordl_ckpt_stats {
	uint64_t committed;       /* snapshots committed */
	uint64_t persisted;       /* checkpoints written completely */
	uint64_t failed;          /* writes that failed (the previous checkpoint stays) */
	uint64_t superseded;      /* committed snapshots reused before they were written */
	uint64_t last_iteration;  /* iteration of the newest checkpoint written (persisted > 0) */
	uint64_t last_sequence;   /* its sequence number */
	uint64_t last_bytes;      /* its file size */
	double last_copy_s;       /* background copy time of the newest copied snapshot */
	double last_persist_s;    /* write, sync and rename time of the newest checkpoint written */
	double last_latency_s;    /* from its commit to its rename being durable */
	double total_copy_s;      /* over the writer's life */
	double total_persist_s;
	double total_wait_s;      /* the caller waited for copies (wait_copied, begin, reserve) */
	int in_flight;            /* committed, not yet persisted, failed or superseded */
	int pinned;               /* 1: the buffers are CUDA pinned memory */
	uint64_t buffer_bytes;    /* memory the snapshot buffers hold now */
	int last_errno;           /* errno of the newest failed write, 0 when none failed */
	char last_error[160];     /* what failed and which file */
} coordl_ckpt_stats_t;

int coordl_ckpt_get_stats(coordl_ckpt_t *ck, coordl_ckpt_stats_t *st);

/* What a recovery scan saw. */
typedef struct coordl_ckpt_scan {
	int files;            /* checkpoint files of the name found */
	int skipped;          /* of them, newer than the one loaded but not usable */
	char why[224];        /* why the newest skipped one was skipped ("" when none) */
} coordl_ckpt_scan_t;

/*
 * Recovery: load the newest complete checkpoint of `name` (NULL: "ckpt") in
 * dir. A file is used only when it is a regular file of this user, its
 * length is what its header says, and both checksums match; a newer file
 * that is not is skipped (counted and explained in scan, which may be NULL)
 * and the next older one is tried. Temporary files are never read. Returns
 * the image, or NULL with ENOENT when there is none usable (err and scan
 * say what was skipped), or another errno when the directory cannot be
 * read.
 */
coordl_ckpt_image_t *coordl_ckpt_load_latest(const char *dir, const char *name,
					     coordl_ckpt_scan_t *scan, coordl_error_t *err);

/* Load and verify one checkpoint file. NULL with EINVAL (not a complete,
 * matching checkpoint: err says what is wrong), EPERM (not a regular file
 * of this user) or the errno of open/read. */
coordl_ckpt_image_t *coordl_ckpt_load_file(const char *path, coordl_error_t *err);

uint64_t coordl_ckpt_image_iteration(const coordl_ckpt_image_t *img);
uint64_t coordl_ckpt_image_sequence(const coordl_ckpt_image_t *img);
/* File size of the checkpoint read. */
uint64_t coordl_ckpt_image_bytes(const coordl_ckpt_image_t *img);
int coordl_ckpt_image_sections(const coordl_ckpt_image_t *img);
/* Name of section i (0..sections-1), or NULL. */
const char *coordl_ckpt_image_section_name(const coordl_ckpt_image_t *img, int i);
/* The bytes of section `name` and their number, valid until
 * coordl_ckpt_image_free; NULL with ENOENT when there is no such section. */
const void *coordl_ckpt_image_section(const coordl_ckpt_image_t *img, const char *name,
				      uint64_t *n);
/* Accepts NULL; preserves errno. */
void coordl_ckpt_image_free(coordl_ckpt_image_t *img);

/*
 * The frequency policy. Costs measured by the caller:
 *   iter_s      an iteration without checkpointing (> 0);
 *   overhead_s  what one checkpoint adds to the training time (>= 0): the
 *               time the loop is blocked by it plus the slow-down of the
 *               iterations its copy and write overlap;
 *   snapshot_s  from the snapshot's start until its copies are done (>= 0);
 *   persist_s   writing it to storage (>= 0).
 * coordl_ckpt_choose picks the smallest interval k (iterations between
 * checkpoints) in [k_min, k_max] such that
 *   overhead_s / (k * iter_s) <= bound       (the overhead bound), and
 *   k * iter_s >= snapshot_s + persist_s     (a checkpoint is on storage
 *                                             before the next one starts).
 * When k_max does not allow both, k = k_max and bound_met = 0.
 * k never decreases when a cost grows or the bound shrinks.
 */
typedef struct coordl_ckpt_costs {
	double iter_s;
	double overhead_s;
	double snapshot_s;
	double persist_s;
} coordl_ckpt_costs_t;

enum coordl_ckpt_limit {
	COORDL_CKPT_LIMIT_MIN = 0,   /* k_min: both conditions hold at any k */
	COORDL_CKPT_LIMIT_BOUND,     /* the overhead bound */
	COORDL_CKPT_LIMIT_PIPELINE,  /* one checkpoint written before the next */
	COORDL_CKPT_LIMIT_MAX,       /* k_max */
};

typedef struct coordl_ckpt_choice {
	uint64_t interval;  /* k */
	double overhead;    /* overhead_s / (k * iter_s): predicted fraction of training time */
	int limit;          /* enum coordl_ckpt_limit: what set k */
	int bound_met;      /* 1: overhead <= bound and the pipeline condition holds */
} coordl_ckpt_choice_t;

/* 0, or -1 with EINVAL (a cost not finite or out of range, bound not in
 * (0, 1], k_min < 1, k_max < k_min or k_max > 2^53) and err naming it. */
int coordl_ckpt_choose(const coordl_ckpt_costs_t *c, double bound, uint64_t k_min,
		       uint64_t k_max, coordl_ckpt_choice_t *out, coordl_error_t *err);

/* The overhead bound CheckFreq reports keeping (3.5% of the training time). */
#define COORDL_CKPT_DEFAULT_BOUND 0.035

#ifdef __cplusplus
}
#endif
#endif
