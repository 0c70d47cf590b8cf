/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * follow.h: the loader follows its CPU set (internal to libcoordl).
 *
 * A Synergy node may widen or narrow a running job's cpuset (lending idle
 * cores, taking them back). A loader whose thread count the caller did not
 * fix then keeps one worker per CPU it may use: coordl_next() asks
 * coordl__follow_check() at most every 100 ms whether the process's CPU
 * set changed, and if so pins itself and its workers to the new set
 * (after a cpuset is widened the kernel keeps earlier explicit pins) and
 * resizes its worker pool.
 *
 * The set is read from the process's own cpuset cgroup: cgroup v1
 * (/proc/self/cpuset names the path under /sys/fs/cgroup/cpuset, file
 * cpuset.cpus), else cgroup v2 (/proc/self/cgroup "0::PATH",
 * cpuset.cpus.effective under /sys/fs/cgroup or /sys/fs/cgroup/unified).
 * The calling thread's affinity is watched as well: a change made with
 * sched_setaffinity() (by the job itself, or where no cpuset file can be
 * read) is followed the same way. Whichever of the two changed last wins.
 * Cpuset files are read whole and sets are sized for their highest CPU, so
 * a long fragmented list on a node with many CPUs is never cut short.
 */
#ifndef COORDL_FOLLOW_H
#define COORDL_FOLLOW_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>

/* Minimum time between two looks at the CPU set, in seconds. */
#define COORDL__FOLLOW_PERIOD 0.1

/* CPU numbers accepted in a list (a node's CPUs are numbered below this). */
#define COORDL__FOLLOW_MAX_CPUS 65536

/* The longest cpuset file read (a fully fragmented list of MAX_CPUS). */
#define COORDL__FOLLOW_MAX_TEXT (1 << 20)

/*
 * A CPU set of any size (nodes may have more CPUs than a cpu_set_t holds):
 * set is CPU_ALLOC'd with room for at least CPU_SETSIZE CPUs, size is its
 * CPU_ALLOC_SIZE in bytes. Free with coordl__cpus_free().
 */
typedef struct coordl__cpus {
	cpu_set_t *set;
	size_t size;
} coordl__cpus_t;

/*
 * Parse a cpuset list ("0-3,8\n") into a set sized for its highest CPU.
 * Returns the number of CPUs, or -1 with errno EINVAL (malformed, empty,
 * a CPU >= COORDL__FOLLOW_MAX_CPUS) or ENOMEM; out is then empty.
 */
int coordl__cpus_parse(const char *s, coordl__cpus_t *out);

/* CPUs in the set; whether two sets hold the same CPUs (sizes may differ). */
int coordl__cpus_count(const coordl__cpus_t *s);
int coordl__cpus_equal(const coordl__cpus_t *a, const coordl__cpus_t *b);

/* Free the set (accepts an empty one) and leave it empty. */
void coordl__cpus_free(coordl__cpus_t *s);

/*
 * Read a whole cpuset list file (up to COORDL__FOLLOW_MAX_TEXT bytes, never
 * cut short) and parse it. Returns the count, or -1 with errno.
 */
int coordl__cpus_read(const char *path, coordl__cpus_t *out);

typedef struct coordl__follow coordl__follow_t;

/*
 * Start following: remember the current cpuset and affinity. Returns NULL
 * with errno ENOMEM only; a process whose cpuset cannot be read follows
 * its affinity alone.
 */
coordl__follow_t *coordl__follow_create(void);

/* Accepts NULL. */
void coordl__follow_destroy(coordl__follow_t *f);

/*
 * Cheap when called often: returns 0 unless COORDL__FOLLOW_PERIOD passed
 * since the last look. Returns 1 and fills *set (non-empty; the caller
 * frees it) when the CPU set changed since the last look, else 0. Not
 * thread-safe: one caller (the consumer inside coordl_next) at a time.
 */
int coordl__follow_check(coordl__follow_t *f, coordl__cpus_t *set);

/*
 * The set to follow now, whatever the last look saw: the cgroup's CPU set
 * when it moved since the last look (or no affinity can be read), else the
 * calling thread's affinity; both are remembered as seen. Fills
 * *set (the caller frees it) and returns its count, or -1 with errno.
 * (A loader that stopped following for a while, to profile, resumes here.)
 */
int coordl__follow_now(coordl__follow_t *f, coordl__cpus_t *set);

/* The calling thread's affinity into *set (the caller frees it). Returns
 * the count, or -1 with errno. */
int coordl__cpus_affinity(coordl__cpus_t *set);

/*
 * Pin the calling thread and the n threads in thr to set. Returns 0, or
 * -1 with errno from the first pin that failed (the others are still
 * tried: a thread that cannot be pinned keeps its old affinity).
 */
int coordl__follow_pin(const coordl__cpus_t *set, const pthread_t *thr, int n);

#endif
