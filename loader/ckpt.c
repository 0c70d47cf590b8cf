/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt.c: two-phase checkpoints and recovery (coordl_ckpt.h).
 *
 * Two snapshot buffers, each in one of these states:
 *   FREE -> FILLING (begin; the caller adds sections)
 *        -> COPYING (commit with copies registered; the copy thread runs them)
 *        -> READY   (copies done, or none; waits for the persist thread)
 *        -> WRITING (the persist thread writes it) -> FREE.
 * One snapshot is filled at a time, so with two buffers begin() always
 * finds one free or READY: a READY buffer that was not yet taken up by
 * the writer is reused (superseded) rather than making the training loop
 * wait for the disk; the policy's pipeline condition keeps that rare.
 * All state changes happen under one mutex and are announced on one
 * condition variable; the copying and writing themselves run unlocked on
 * memory that only the owning thread touches in that state.
 *
 * Why a file is never seen torn: it is written under a temporary name
 * that recovery never reads, its data synced, and only then renamed to
 * its final name (atomic within a directory), then the directory synced
 * so that the rename survives a crash of the machine. A file killed at
 * any step before the rename stays a temporary and is removed by the next
 * writer of the directory; after the rename it is complete. Recovery
 * (ckpt_file.c) still checks every file (length, header and payload CRC32C), for the
 * file systems that do not keep fsync's promise and for bit rot.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loader/ckpt.h"
#include "loader/util.h"
#ifdef HAVE_CUDA
#include "loader/cuda.h"
#endif

#define NBUF 2
#define CHUNK_DEFAULT ((size_t)8 << 20)
#define BUF_ROUND ((uint64_t)2 << 20) /* buffers grow in huge-page steps */

enum { B_FREE = 0, B_FILLING, B_COPYING, B_READY, B_WRITING };

struct copy_op {
	unsigned char *dst;
	const unsigned char *src;
	uint64_t n;
};

struct coordl_ckpt_snap {
	coordl_ckpt_t *ck;
	int state;
	unsigned char *mem;
	uint64_t cap;
	int pinned;
	uint64_t iteration;
	uint64_t limit; /* payload_bytes given to begin */
	uint64_t used;  /* end of the last section */
	uint32_t nsec;
	coordl__ckpt_section_t sec[COORDL_CKPT_MAX_SECTIONS];
	struct copy_op *ops;
	size_t nops, ops_cap;
	uint64_t commit_no;
	double t_commit;
};

struct coordl_ckpt {
	int dirfd, lockfd;
	char *dir;
	char name[COORDL_CKPT_PREFIX_MAX + 1];
	int keep, memory, durable;
	size_t chunk;
	void (*hook)(int phase, void *arg);
	void *hook_arg;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t copier, writer;
	int have_copier, have_writer;
	int stop;
	struct coordl_ckpt_snap buf[NBUF];
	uint64_t next_seq;
	uint64_t commits;
	/* The outcome of the newest commit that has one. */
	uint64_t outcome_commit;
	int outcome_errno;
	char outcome_text[160];
	coordl_ckpt_stats_t st;
};

/* ---- memory ----------------------------------------------------------- */

static void buf_free(struct coordl_ckpt_snap *b)
{
	if (!b->mem)
		return;
#ifdef HAVE_CUDA
	if (b->pinned)
		coordl__cuda_host_free(b->mem);
	else
#endif
		munmap(b->mem, b->cap);
	b->mem = NULL;
	b->cap = 0;
	b->pinned = 0;
}

/* Make b hold at least `need` bytes. Called with b owned by the caller
 * (FILLING), without the lock; the fields the stats read change under it. */
static int buf_grow(coordl_ckpt_t *ck, struct coordl_ckpt_snap *b, uint64_t need, int touch,
		    coordl_error_t *err)
{
	struct coordl_ckpt_snap old;
	uint64_t cap;
	void *p = NULL;
	int pinned = 0;

	if (b->mem && b->cap >= need)
		goto touch;
	if (need > (UINT64_C(1) << 56) || (size_t)need != need)
		return coordl__errprintf(err, ENOMEM, "snapshot buffer of %llu bytes: out of range",
					 (unsigned long long)need);
	cap = need ? (need + BUF_ROUND - 1) / BUF_ROUND * BUF_ROUND : BUF_ROUND;
	pthread_mutex_lock(&ck->mu);
	old = *b;
	b->mem = NULL;
	b->cap = 0;
	b->pinned = 0;
	pthread_mutex_unlock(&ck->mu);
	buf_free(&old);
#ifdef HAVE_CUDA
	if (ck->memory != COORDL_CKPT_MEM_PAGEABLE) {
		p = coordl__cuda_host_alloc((size_t)cap);
		pinned = p != NULL;
	}
#endif
	if (!p && ck->memory == COORDL_CKPT_MEM_PINNED)
		return coordl__errprintf(err, ENOTSUP, "pinned snapshot memory asked for, but %s",
#ifdef HAVE_CUDA
					 "no CUDA device (or cudaHostAlloc failed)"
#else
					 "libcoordl was built without CUDA"
#endif
		);
	if (!p && !(p = coordl__ckpt_big_alloc(cap)))
		return coordl__errprintf(err, ENOMEM, "snapshot buffer of %llu bytes: out of memory",
					 (unsigned long long)cap);
	pthread_mutex_lock(&ck->mu);
	b->mem = p;
	b->cap = cap;
	b->pinned = pinned;
	pthread_mutex_unlock(&ck->mu);
touch:
	if (touch)
		memset(b->mem, 0, (size_t)b->cap);
	return 0;
}

/* ---- threads ---------------------------------------------------------- */

static int any_state(coordl_ckpt_t *ck, int state)
{
	for (int i = 0; i < NBUF; i++)
		if (ck->buf[i].state == state)
			return 1;
	return 0;
}

static void *copy_main(void *arg)
{
	coordl_ckpt_t *ck = arg;

	pthread_mutex_lock(&ck->mu);
	for (;;) {
		struct coordl_ckpt_snap *b = NULL;
		double t0, t;

		for (int i = 0; i < NBUF; i++)
			if (ck->buf[i].state == B_COPYING)
				b = &ck->buf[i];
		if (!b) {
			if (ck->stop)
				break;
			pthread_cond_wait(&ck->cv, &ck->mu);
			continue;
		}
		pthread_mutex_unlock(&ck->mu);
		t0 = coordl__now();
		for (size_t k = 0; k < b->nops; k++)
			memcpy(b->ops[k].dst, b->ops[k].src, (size_t)b->ops[k].n);
		t = coordl__now() - t0;
		pthread_mutex_lock(&ck->mu);
		b->nops = 0;
		b->state = B_READY;
		ck->st.last_copy_s = t;
		ck->st.total_copy_s += t;
		pthread_cond_broadcast(&ck->cv);
	}
	pthread_mutex_unlock(&ck->mu);
	return NULL;
}

static void hook(coordl_ckpt_t *ck, int phase)
{
	if (ck->hook)
		ck->hook(phase, ck->hook_arg);
}

static int pwrite_all(int fd, const unsigned char *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* Remove the files older than `newest` beyond the keep - 1 newest of them. */
static void retain(coordl_ckpt_t *ck, uint64_t newest)
{
	uint64_t *v;
	size_t n, older = 0;
	char fn[COORDL__CKPT_FILE_NAME_MAX];

	if (coordl__ckpt_list(ck->dirfd, ck->name, 0, &v, &n) < 0)
		return;
	while (older < n && v[older] < newest)
		older++;
	for (size_t i = 0; i + (size_t)(ck->keep - 1) < older; i++) {
		coordl__ckpt_final_name(fn, sizeof(fn), ck->name, v[i]);
		unlinkat(ck->dirfd, fn, 0);
	}
	free(v);
}

/* Write buffer b as checkpoint `seq`. 0, or -1 with errno and why. */
static int persist(coordl_ckpt_t *ck, struct coordl_ckpt_snap *b, uint64_t seq, char *why,
		   size_t whylen)
{
	coordl__ckpt_header_t h;
	unsigned char *hdr = NULL;
	char tmp[COORDL__CKPT_FILE_NAME_MAX], fin[COORDL__CKPT_FILE_NAME_MAX];
	struct timespec now;
	uint32_t crc = 0;
	uint64_t off;
	int fd = -1, rc = -1, e = 0;
	const char *step = "";

	coordl__ckpt_temp_name(tmp, sizeof(tmp), ck->name, seq);
	coordl__ckpt_final_name(fin, sizeof(fin), ck->name, seq);
	memset(&h, 0, sizeof(h));
	h.version = COORDL_CKPT_FORMAT_VERSION;
	h.sequence = seq;
	h.iteration = b->iteration;
	h.payload_bytes = b->used;
	clock_gettime(CLOCK_REALTIME, &now);
	h.created_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	h.nsections = b->nsec;
	h.sec = b->sec;
	if (!(hdr = malloc(coordl__ckpt_header_size(h.nsections)))) {
		e = ENOMEM;
		step = "allocate the header of";
		goto out;
	}
	step = "create";
	if ((fd = openat(ck->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 0600)) < 0) {
		e = errno;
		goto out;
	}
	hook(ck, COORDL__CKPT_PH_OPENED);
	step = "write";
	for (off = 0; off < b->used;) {
		size_t n = b->used - off < ck->chunk ? (size_t)(b->used - off) : ck->chunk;
		crc = coordl__crc32c(crc, b->mem + off, n);
		if (pwrite_all(fd, b->mem + off, n,
			       (off_t)(coordl__ckpt_header_size(h.nsections) + off)) < 0) {
			e = errno;
			goto out;
		}
		off += n;
		hook(ck, COORDL__CKPT_PH_PAYLOAD_PART);
	}
	hook(ck, COORDL__CKPT_PH_PAYLOAD);
	h.payload_crc = crc;
	coordl__ckpt_encode(&h, hdr);
	if (pwrite_all(fd, hdr, h.header_bytes, 0) < 0) {
		e = errno;
		goto out;
	}
	hook(ck, COORDL__CKPT_PH_HEADER);
	step = "sync";
	if (ck->durable && fdatasync(fd) < 0) {
		e = errno;
		goto out;
	}
	hook(ck, COORDL__CKPT_PH_SYNCED);
	/* The job's memory limit counts the page cache it fills: give the
	 * written pages back (they are clean now, or soon when not durable). */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	step = "close";
	if (close(fd) < 0) {
		fd = -1;
		e = errno;
		goto out;
	}
	fd = -1;
	step = "rename";
	if (renameat(ck->dirfd, tmp, ck->dirfd, fin) < 0) {
		e = errno;
		goto out;
	}
	hook(ck, COORDL__CKPT_PH_RENAMED);
	/* From here the checkpoint is complete: a failed directory sync only
	 * weakens its durability across a machine crash. */
	if (ck->durable)
		fsync(ck->dirfd);
	hook(ck, COORDL__CKPT_PH_DIRSYNCED);
	retain(ck, seq);
	hook(ck, COORDL__CKPT_PH_RETAINED);
	rc = 0;
out:
	if (rc < 0) {
		snprintf(why, whylen, "%s %s/%s: %s", step, ck->dir, tmp, strerror(e));
		if (fd >= 0)
			close(fd);
		unlinkat(ck->dirfd, tmp, 0);
		errno = e;
	}
	free(hdr);
	return rc;
}

static void *write_main(void *arg)
{
	coordl_ckpt_t *ck = arg;

	pthread_mutex_lock(&ck->mu);
	for (;;) {
		struct coordl_ckpt_snap *b = NULL;
		char why[sizeof(ck->st.last_error)];
		uint64_t seq;
		double t0, t;
		int rc, e;

		/* The oldest ready snapshot first: both get written. */
		for (int i = 0; i < NBUF; i++)
			if (ck->buf[i].state == B_READY && (!b || ck->buf[i].commit_no < b->commit_no))
				b = &ck->buf[i];
		if (!b) {
			if (ck->stop)
				break;
			pthread_cond_wait(&ck->cv, &ck->mu);
			continue;
		}
		b->state = B_WRITING;
		seq = ck->next_seq++;
		pthread_mutex_unlock(&ck->mu);
		t0 = coordl__now();
		why[0] = 0;
		rc = persist(ck, b, seq, why, sizeof(why));
		e = errno;
		t = coordl__now() - t0;
		pthread_mutex_lock(&ck->mu);
		if (rc == 0) {
			ck->st.persisted++;
			ck->st.last_iteration = b->iteration;
			ck->st.last_sequence = seq;
			ck->st.last_bytes = coordl__ckpt_header_size(b->nsec) + b->used;
			ck->st.last_persist_s = t;
			ck->st.total_persist_s += t;
			ck->st.last_latency_s = coordl__now() - b->t_commit;
		} else {
			ck->st.failed++;
			ck->st.last_errno = e;
			snprintf(ck->st.last_error, sizeof(ck->st.last_error), "%s", why);
		}
		if (b->commit_no >= ck->outcome_commit) {
			ck->outcome_commit = b->commit_no;
			ck->outcome_errno = rc == 0 ? 0 : e;
			snprintf(ck->outcome_text, sizeof(ck->outcome_text), "%s", why);
		}
		b->state = B_FREE;
		pthread_cond_broadcast(&ck->cv);
	}
	pthread_mutex_unlock(&ck->mu);
	return NULL;
}

/* ---- the writer's API --------------------------------------------------- */

void coordl_ckpt_config_init(coordl_ckpt_config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->name = "ckpt";
	cfg->keep = 2;
	cfg->memory = COORDL_CKPT_MEM_AUTO;
	cfg->durable = 1;
}

uint64_t coordl_ckpt_section_space(uint64_t n)
{
	return (n + COORDL_CKPT_ALIGN - 1) / COORDL_CKPT_ALIGN * COORDL_CKPT_ALIGN;
}

static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int e;

	/* The library's threads take no signals: a job's SIGTERM goes to the
	 * threads of the program, which handles it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

coordl_ckpt_t *coordl_ckpt_open(const coordl_ckpt_config_t *cfg, coordl_error_t *err)
{
	coordl_ckpt_t *ck = NULL;
	pthread_condattr_t ca;
	char lockname[COORDL_CKPT_PREFIX_MAX + 8];
	uint64_t *seqs = NULL;
	size_t nseq;
	int e;

	if (!cfg || !cfg->dir || !cfg->dir[0]) {
		coordl__errprintf(err, EINVAL, "checkpoint config: no directory given");
		return NULL;
	}
	if (!coordl__ckpt_prefix_valid(cfg->name)) {
		coordl__errprintf(err, EINVAL,
				  "checkpoint name '%.40s': expected 1..%d of [A-Za-z0-9_.-], not "
				  "starting with '.'",
				  cfg->name ? cfg->name : "(null)", COORDL_CKPT_PREFIX_MAX);
		return NULL;
	}
	if (cfg->keep < 1 || cfg->keep > COORDL_CKPT_KEEP_MAX) {
		coordl__errprintf(err, EINVAL, "checkpoint keep = %d: expected 1..%d", cfg->keep,
				  COORDL_CKPT_KEEP_MAX);
		return NULL;
	}
	if (cfg->memory < COORDL_CKPT_MEM_AUTO || cfg->memory > COORDL_CKPT_MEM_PINNED ||
	    (cfg->durable != 0 && cfg->durable != 1)) {
		coordl__errprintf(err, EINVAL, "checkpoint memory = %d, durable = %d: out of range",
				  cfg->memory, cfg->durable);
		return NULL;
	}
	if (!(ck = calloc(1, sizeof(*ck))) || !(ck->dir = strdup(cfg->dir))) {
		free(ck);
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	ck->dirfd = ck->lockfd = -1;
	snprintf(ck->name, sizeof(ck->name), "%s", cfg->name);
	ck->keep = cfg->keep;
	ck->memory = cfg->memory;
	ck->durable = cfg->durable;
	ck->chunk = CHUNK_DEFAULT;
	pthread_mutex_init(&ck->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ck->cv, &ca);
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < NBUF; i++)
		ck->buf[i].ck = ck;

	if (mkdir(cfg->dir, 0700) < 0 && errno != EEXIST) {
		coordl__errprintf(err, errno, "checkpoint directory %s: %s", cfg->dir,
				  strerror(errno));
		goto fail;
	}
	if ((ck->dirfd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		coordl__errprintf(err, errno, "checkpoint directory %s: %s", cfg->dir,
				  strerror(errno));
		goto fail;
	}
	snprintf(lockname, sizeof(lockname), "%s.lock", ck->name);
	if ((ck->lockfd = openat(ck->dirfd, lockname,
				 O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600)) < 0) {
		coordl__errprintf(err, errno, "checkpoint lock %s/%s: %s", cfg->dir, lockname,
				  strerror(errno));
		goto fail;
	}
	if (flock(ck->lockfd, LOCK_EX | LOCK_NB) < 0) {
		e = errno == EWOULDBLOCK ? EBUSY : errno;
		coordl__errprintf(err, e, "checkpoint directory %s: '%s' is in use by another writer",
				  cfg->dir, ck->name);
		goto fail;
	}
	/* Under the lock no other writer of the name exists: its temporaries
	 * are left by a killed one. */
	if (coordl__ckpt_list(ck->dirfd, ck->name, 1, &seqs, &nseq) < 0) {
		coordl__errprintf(err, errno, "checkpoint directory %s: %s", cfg->dir,
				  strerror(errno));
		goto fail;
	}
	ck->next_seq = nseq ? seqs[nseq - 1] + 1 : 1;
	free(seqs);
	if ((e = start_thread(&ck->copier, copy_main, ck)) != 0) {
		coordl__errprintf(err, e, "checkpoint copy thread: %s", strerror(e));
		goto fail;
	}
	ck->have_copier = 1;
	if ((e = start_thread(&ck->writer, write_main, ck)) != 0) {
		coordl__errprintf(err, e, "checkpoint persist thread: %s", strerror(e));
		goto fail;
	}
	ck->have_writer = 1;
	return ck;
fail:
	e = errno;
	coordl_ckpt_close(ck);
	errno = e;
	return NULL;
}

void coordl_ckpt_close(coordl_ckpt_t *ck)
{
	int e = errno;

	if (!ck)
		return;
	for (int i = 0; i < NBUF; i++)
		if (ck->buf[i].state == B_FILLING)
			coordl_ckpt_abort(&ck->buf[i]);
	if (ck->have_copier && ck->have_writer)
		coordl_ckpt_flush(ck, -1, NULL);
	pthread_mutex_lock(&ck->mu);
	ck->stop = 1;
	pthread_cond_broadcast(&ck->cv);
	pthread_mutex_unlock(&ck->mu);
	if (ck->have_copier)
		pthread_join(ck->copier, NULL);
	if (ck->have_writer)
		pthread_join(ck->writer, NULL);
	for (int i = 0; i < NBUF; i++) {
		buf_free(&ck->buf[i]);
		free(ck->buf[i].ops);
	}
	if (ck->lockfd >= 0)
		close(ck->lockfd);
	if (ck->dirfd >= 0)
		close(ck->dirfd);
	pthread_cond_destroy(&ck->cv);
	pthread_mutex_destroy(&ck->mu);
	free(ck->dir);
	free(ck);
	errno = e;
}

/* Wait (locked) until no buffer is COPYING; adds the time to the stats. */
static void wait_copies_locked(coordl_ckpt_t *ck)
{
	double t0;

	if (!any_state(ck, B_COPYING))
		return;
	t0 = coordl__now();
	while (any_state(ck, B_COPYING))
		pthread_cond_wait(&ck->cv, &ck->mu);
	ck->st.total_wait_s += coordl__now() - t0;
}

int coordl_ckpt_reserve(coordl_ckpt_t *ck, uint64_t bytes, coordl_error_t *err)
{
	int rc = 0;

	if (!ck)
		return coordl__errprintf(err, EINVAL, "checkpoint writer is NULL");
	pthread_mutex_lock(&ck->mu);
	if (any_state(ck, B_FILLING)) {
		pthread_mutex_unlock(&ck->mu);
		return coordl__errprintf(err, EBUSY, "a snapshot is being filled");
	}
	/* Only a FREE buffer may be reallocated: wait for the others. */
	for (int i = 0; i < NBUF && rc == 0; i++) {
		struct coordl_ckpt_snap *b = &ck->buf[i];
		double t0 = coordl__now();

		while (b->state != B_FREE)
			pthread_cond_wait(&ck->cv, &ck->mu);
		ck->st.total_wait_s += coordl__now() - t0;
		b->state = B_FILLING;
		pthread_mutex_unlock(&ck->mu);
		rc = buf_grow(ck, b, bytes, 1, err);
		pthread_mutex_lock(&ck->mu);
		b->state = B_FREE;
		pthread_cond_broadcast(&ck->cv);
	}
	pthread_mutex_unlock(&ck->mu);
	return rc;
}

coordl_ckpt_snap_t *coordl_ckpt_begin(coordl_ckpt_t *ck, uint64_t iteration,
				      uint64_t payload_bytes, coordl_error_t *err)
{
	struct coordl_ckpt_snap *b = NULL;

	if (!ck) {
		coordl__errprintf(err, EINVAL, "checkpoint writer is NULL");
		return NULL;
	}
	pthread_mutex_lock(&ck->mu);
	if (any_state(ck, B_FILLING)) {
		pthread_mutex_unlock(&ck->mu);
		coordl__errprintf(err, EBUSY, "a snapshot is being filled: commit or abort it first");
		return NULL;
	}
	for (;;) {
		/* A free buffer, the one already big enough first. */
		for (int i = 0; i < NBUF; i++)
			if (ck->buf[i].state == B_FREE &&
			    (!b || (ck->buf[i].cap >= payload_bytes && b->cap < payload_bytes)))
				b = &ck->buf[i];
		if (b)
			break;
		/* Else the newest snapshot not yet taken up by the writer. */
		for (int i = 0; i < NBUF; i++)
			if (ck->buf[i].state == B_READY)
				b = &ck->buf[i];
		if (b) {
			ck->st.superseded++;
			if (b->commit_no >= ck->outcome_commit) {
				ck->outcome_commit = b->commit_no;
				ck->outcome_errno = ECANCELED;
				snprintf(ck->outcome_text, sizeof(ck->outcome_text),
					 "snapshot of iteration %llu superseded before it was written",
					 (unsigned long long)b->iteration);
			}
			break;
		}
		/* One is copying, the other being written: wait. */
		wait_copies_locked(ck);
	}
	b->state = B_FILLING;
	pthread_mutex_unlock(&ck->mu);
	if (buf_grow(ck, b, payload_bytes, 0, err) < 0) {
		pthread_mutex_lock(&ck->mu);
		b->state = B_FREE;
		pthread_cond_broadcast(&ck->cv);
		pthread_mutex_unlock(&ck->mu);
		return NULL;
	}
	b->iteration = iteration;
	b->limit = payload_bytes;
	b->used = 0;
	b->nsec = 0;
	b->nops = 0;
	return b;
}

void *coordl_ckpt_add(coordl_ckpt_snap_t *s, const char *name, uint64_t n, coordl_error_t *err)
{
	uint64_t off;

	if (!s || s->state != B_FILLING) {
		coordl__errprintf(err, EINVAL, "not a snapshot being filled");
		return NULL;
	}
	if (!coordl__ckpt_name_valid(name)) {
		coordl__errprintf(err, EINVAL,
				  "section name '%.60s': expected 1..%d printable ASCII characters, "
				  "no space",
				  name ? name : "(null)", COORDL_CKPT_NAME_MAX);
		return NULL;
	}
	for (uint32_t i = 0; i < s->nsec; i++)
		if (strcmp(s->sec[i].name, name) == 0) {
			coordl__errprintf(err, EINVAL, "section '%s' added twice", name);
			return NULL;
		}
	if (s->nsec >= COORDL_CKPT_MAX_SECTIONS) {
		coordl__errprintf(err, EINVAL, "section '%s': more than %d sections", name,
				  COORDL_CKPT_MAX_SECTIONS);
		return NULL;
	}
	off = coordl_ckpt_section_space(s->used);
	if (off > s->limit || n > s->limit - off) {
		coordl__errprintf(err, ENOSPC,
				  "section '%s' of %llu bytes: beyond the snapshot's %llu bytes", name,
				  (unsigned long long)n, (unsigned long long)s->limit);
		return NULL;
	}
	/* The gap before the section is part of the payload: keep it
	 * deterministic. */
	memset(s->mem + s->used, 0, (size_t)(off - s->used));
	snprintf(s->sec[s->nsec].name, sizeof(s->sec[s->nsec].name), "%s", name);
	s->sec[s->nsec].offset = off;
	s->sec[s->nsec].length = n;
	s->nsec++;
	s->used = off + n;
	return s->mem + off;
}

int coordl_ckpt_copy_later(coordl_ckpt_snap_t *s, void *dst, const void *src, uint64_t n,
			   coordl_error_t *err)
{
	unsigned char *d = dst;
	int inside = 0;

	if (!s || s->state != B_FILLING)
		return coordl__errprintf(err, EINVAL, "not a snapshot being filled");
	for (uint32_t i = 0; i < s->nsec && !inside; i++) {
		unsigned char *a = s->mem + s->sec[i].offset;
		inside = d >= a && d <= a + s->sec[i].length &&
			 n <= (uint64_t)(a + s->sec[i].length - d);
	}
	if (!inside || (n && !src))
		return coordl__errprintf(err, EINVAL,
					 "copy of %llu bytes: destination not within a section of "
					 "this snapshot",
					 (unsigned long long)n);
	if (n == 0)
		return 0;
	if (s->nops == s->ops_cap) {
		size_t cap = s->ops_cap ? s->ops_cap * 2 : 64;
		struct copy_op *o = realloc(s->ops, cap * sizeof(*o));
		if (!o)
			return coordl__errprintf(err, ENOMEM, "out of memory");
		s->ops = o;
		s->ops_cap = cap;
	}
	s->ops[s->nops].dst = d;
	s->ops[s->nops].src = src;
	s->ops[s->nops].n = n;
	s->nops++;
	return 0;
}

int coordl_ckpt_commit(coordl_ckpt_snap_t *s, coordl_error_t *err)
{
	coordl_ckpt_t *ck;

	if (!s || s->state != B_FILLING)
		return coordl__errprintf(err, EINVAL, "not a snapshot being filled");
	if (s->nsec == 0) {
		coordl_ckpt_abort(s);
		return coordl__errprintf(err, EINVAL, "snapshot has no section");
	}
	ck = s->ck;
	pthread_mutex_lock(&ck->mu);
	s->commit_no = ++ck->commits;
	s->t_commit = coordl__now();
	s->state = s->nops ? B_COPYING : B_READY;
	ck->st.committed++;
	pthread_cond_broadcast(&ck->cv);
	pthread_mutex_unlock(&ck->mu);
	return 0;
}

void coordl_ckpt_abort(coordl_ckpt_snap_t *s)
{
	coordl_ckpt_t *ck;

	if (!s || s->state != B_FILLING)
		return;
	ck = s->ck;
	pthread_mutex_lock(&ck->mu);
	s->nops = 0;
	s->state = B_FREE;
	pthread_cond_broadcast(&ck->cv);
	pthread_mutex_unlock(&ck->mu);
}

double coordl_ckpt_wait_copied(coordl_ckpt_t *ck)
{
	double t0 = coordl__now();

	if (!ck)
		return 0;
	pthread_mutex_lock(&ck->mu);
	wait_copies_locked(ck);
	pthread_mutex_unlock(&ck->mu);
	return coordl__now() - t0;
}

static int busy(coordl_ckpt_t *ck)
{
	return any_state(ck, B_COPYING) || any_state(ck, B_READY) || any_state(ck, B_WRITING);
}

int coordl_ckpt_flush(coordl_ckpt_t *ck, double timeout_s, coordl_error_t *err)
{
	struct timespec dl;
	int rc = 0;

	if (!ck)
		return coordl__errprintf(err, EINVAL, "checkpoint writer is NULL");
	if (timeout_s >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &dl);
		if (timeout_s > 1e9)
			timeout_s = 1e9;
		dl.tv_sec += (time_t)timeout_s;
		dl.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&ck->mu);
	while (busy(ck)) {
		if (timeout_s < 0) {
			pthread_cond_wait(&ck->cv, &ck->mu);
		} else if (pthread_cond_timedwait(&ck->cv, &ck->mu, &dl) == ETIMEDOUT && busy(ck)) {
			rc = coordl__errprintf(err, ETIMEDOUT,
					       "checkpoint not written within %.3g s", timeout_s);
			goto out;
		}
	}
	if (ck->commits && (ck->outcome_commit != ck->commits || ck->outcome_errno))
		rc = coordl__errprintf(err, ck->outcome_errno ? ck->outcome_errno : ECANCELED, "%s",
				       ck->outcome_text[0] ? ck->outcome_text
							   : "newest snapshot not written");
out:
	pthread_mutex_unlock(&ck->mu);
	return rc;
}

int coordl_ckpt_get_stats(coordl_ckpt_t *ck, coordl_ckpt_stats_t *st)
{
	if (!ck || !st) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&ck->mu);
	*st = ck->st;
	st->in_flight = 0;
	st->buffer_bytes = 0;
	st->pinned = 0;
	for (int i = 0; i < NBUF; i++) {
		int s = ck->buf[i].state;
		if (s == B_COPYING || s == B_READY || s == B_WRITING)
			st->in_flight++;
		st->buffer_bytes += ck->buf[i].cap;
		st->pinned |= ck->buf[i].pinned;
	}
	pthread_mutex_unlock(&ck->mu);
	return 0;
}

void coordl__ckpt_set_hook(coordl_ckpt_t *ck, void (*fn)(int phase, void *arg), void *arg)
{
	ck->hook = fn;
	ck->hook_arg = arg;
}

void coordl__ckpt_set_chunk(coordl_ckpt_t *ck, size_t chunk)
{
	ck->chunk = chunk ? chunk : CHUNK_DEFAULT;
}

