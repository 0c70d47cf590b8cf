/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/file.h: reading and writing the small files Synergy keeps (the
 * configuration, profiles, job records, reports, indexes) safely.
 *
 * Reads are bounded: a whole file is read into memory up to a limit the
 * caller states, and one longer is an error (EFBIG), never silently cut.
 * Opens never block on a FIFO, never hand a terminal to the process, and
 * never follow a final symbolic link unless the caller says the path is an
 * admin's (SYN_FILE_FOLLOW): in a directory a user can write, a planted
 * link must not lead a root-run reader elsewhere. Names are relative to a
 * directory descriptor (AT_FDCWD for a plain path), so that a caller
 * holding a checked directory never looks it up by name again.
 *
 * Writes are atomic: a temporary file beside the target (".NAME.XXXXXX",
 * created exclusively, never through a link), written, fsync'ed, renamed
 * over the target, and the directory fsync'ed so that the rename survives
 * a crash. A reader sees the old file or the new one, never a part; of
 * concurrent writers exactly one file remains; a failed write leaves the
 * old file as it was and no temporary file. Two variants: without the
 * fsyncs (a file that is made again if a crash loses it), and exclusive
 * creation (linked into place, not renamed: an existing file stays, and of
 * concurrent creators exactly one succeeds).
 *
 * Conventions: 0 / a descriptor / a pointer, or -1 / NULL with errno.
 * Nothing here logs.
 */
#ifndef SYN_COMMON_FILE_H
#define SYN_COMMON_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* syn_file_open() / syn_file_read() flags. */
#define SYN_FILE_FOLLOW 0x1u  /* follow a final symbolic link (an admin's path) */
#define SYN_FILE_REGULAR 0x2u /* refuse anything but a regular file (EINVAL) */

/*
 * Open name (relative to dfd; AT_FDCWD: the working directory) for
 * reading: O_CLOEXEC, O_NOCTTY, O_NONBLOCK, and O_NOFOLLOW unless
 * SYN_FILE_FOLLOW. Returns the descriptor, or -1 with errno (ELOOP: a
 * final symbolic link; EINVAL: not a regular file, with SYN_FILE_REGULAR).
 */
int syn_file_open(int dfd, const char *name, unsigned how);

/*
 * The rest of the open file fd, whole, in a NUL-terminated malloc'ed
 * buffer (its length in *len when len is not NULL; the text may hold NUL
 * bytes). fd stays open. NULL with errno: EFBIG when it holds more than
 * max bytes, that of read(2), ENOMEM.
 */
char *syn_file_read_fd(int fd, size_t max, size_t *len);

/* syn_file_open() and syn_file_read_fd() in one; the file is closed. */
char *syn_file_read(int dfd, const char *name, size_t max, unsigned how, size_t *len);

/* Write len bytes to fd, across short writes and EINTR. 0 or -1/errno. */
int syn_file_write_all(int fd, const void *buf, size_t len);

/*
 * An exclusive flock(2) on fd, waited for at most timeout_ms (polled every
 * 10 ms): root never waits without bound for a lock that another process
 * may hold forever. 0, or -1 with errno ETIMEDOUT or that of flock(2).
 */
int syn_file_lock(int fd, int timeout_ms);

/*
 * An atomic write in three steps, for writers that stream:
 * syn_atomic_begin() creates the temporary file, the caller writes a.fd
 * (or the stdio stream syn_atomic_stream() makes of it), and
 * syn_atomic_commit() puts it in place or syn_atomic_abort() drops it.
 * Exactly one of those two ends every successful begin; both release
 * everything (the descriptor, the stream, the directory).
 */
typedef struct syn_atomic {
	int fd;         /* the temporary file, open for writing */
	FILE *f;        /* its stream, once syn_atomic_stream() made one */
	int dfd;        /* the target's directory */
	int own_dfd;    /* 1: dfd was opened here and is closed at the end */
	char tmp[272];  /* the temporary file's name in dfd */
	char name[256]; /* the target's name in dfd */
} syn_atomic_t;

/*
 * Start writing path (relative to dfd; AT_FDCWD: a plain path). The
 * directory part of path, if any, is opened (following links: the caller
 * chose it); the final component must be a name of at most 255 bytes.
 * The temporary file gets exactly mode (whatever the umask). Returns 0, or
 * -1 with errno and nothing left behind.
 */
int syn_atomic_begin(syn_atomic_t *a, int dfd, const char *path, unsigned mode);

/* A stdio stream on a.fd (the same one on every call), or NULL with errno;
 * commit flushes it and reports a write error it had. */
FILE *syn_atomic_stream(syn_atomic_t *a);

/* fsync, close, rename over the target, fsync the directory. Returns 0, or
 * -1 with errno; the temporary file is then removed, unless the rename
 * succeeded and only the directory's fsync failed. */
int syn_atomic_commit(syn_atomic_t *a);

/* syn_atomic_commit_how() and syn_file_write_atomic_how() flags. */
#define SYN_ATOMIC_NOSYNC 0x1u /* no fsync of the file or the directory: a crash may
				* lose the file, never show a part of it (for what
				* is made again: hints, soft locks) */
#define SYN_ATOMIC_EXCL 0x2u   /* create: link(2) the file into place instead of
				* renaming it, so that an existing target stays and
				* the call fails with EEXIST; of concurrent creators
				* exactly one succeeds */

/* syn_atomic_commit() as how says (0: the same). EINVAL for an unknown
 * flag (the temporary file is then dropped). */
int syn_atomic_commit_how(syn_atomic_t *a, unsigned how);

/* Drop the temporary file. Preserves errno. */
void syn_atomic_abort(syn_atomic_t *a);

/* The three steps for a buffer. */
int syn_file_write_atomic(int dfd, const char *path, const void *data, size_t len, unsigned mode);

/* The same, committed as how says (SYN_ATOMIC_NOSYNC, SYN_ATOMIC_EXCL). */
int syn_file_write_atomic_how(int dfd, const char *path, const void *data, size_t len,
			      unsigned mode, unsigned how);

/*
 * A file's stamp, for a cache of what was read from it (the configuration
 * job_submit reads for every job): its identity, size and times, and when
 * it was taken. Take the stamp, then read the file; the content stays good
 * while syn_file_stamp_fresh() says so of a new stamp.
 */
typedef struct syn_file_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	time_t taken; /* the clock (CLOCK_REALTIME) when the stamp was taken */
} syn_file_stamp_t;

/* Stamp path (following links: an admin's path). 0, or -1 with errno. */
int syn_file_stamp(const char *path, syn_file_stamp_t *s);

/*
 * 1 if what was read after stamp old is still the file's content, now
 * that its stamp is cur: the same file, size and times, and old taken at
 * least 2 s after the file's last change (a change within the clock tick
 * of a read keeps the times a file system records, and may keep the size:
 * such a content is read again until the file has been still for 2 s).
 * Else 0.
 */
int syn_file_stamp_fresh(const syn_file_stamp_t *old, const syn_file_stamp_t *cur);

#endif
