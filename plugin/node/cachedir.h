/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cachedir.h: taking memory back from a job's cache directory.
 *
 * A job's cache grant shrinks when the node needs the memory for a
 * newcomer (lend.h): the grant file tells the job's loader, which lets go
 * of what it cached beyond the new grant. A job that does not (a loader
 * that ignores its grant, or plain files written into its cache directory
 * on tmpfs) would keep the memory: tmpfs pages are not reclaimable without
 * swap, so on cgroup v1 lowering the limit fails with EBUSY, and on v2 the
 * kernel kills the job's processes while the pages stay until the epilog.
 * Then the node frees them itself: it punches holes into the job's files,
 * from their ends (what was stored last), until enough is freed; a file
 * keeps its size, and what was punched reads back as zeros, which the
 * loader's checks refuse as a cached item.
 *
 * The directory is the job's user's and hostile: the walk never follows a
 * link (every open is relative to a directory opened O_NOFOLLOW), opens
 * nothing but regular files of the job's user with one link (never a
 * FIFO, a device, or another user's file linked in), checks each file again
 * after it is opened, and is bounded in depth, entries and wall time.
 */
#ifndef SYN_PLUGIN_CACHEDIR_H
#define SYN_PLUGIN_CACHEDIR_H

#include <stdint.h>
#include <sys/types.h>

/* The most directory entries the walk looks at, and how deep it goes. */
#define SYN__PUNCH_MAX_ENTRIES 100000
#define SYN__PUNCH_MAX_DEPTH 8

/*
 * Punch holes into the regular files of user uid in the directory job
 * (a name) under the root-owned directory cache_dir, until want bytes of
 * their allocated space are freed, every file was seen, or budget_ms of
 * wall time passed. Returns the bytes freed (in *freed) and 0, or -1 with
 * errno (ENOENT: no such directory; EPERM: cache_dir is not root's only,
 * or job is not uid's) and why in err.
 */
int syn__cache_punch(const char *cache_dir, const char *job, uid_t uid, uint64_t want,
		     int budget_ms, uint64_t *freed, char *err, size_t errlen);

#endif
