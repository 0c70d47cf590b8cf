/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/file.c: bounded reads, safe opens and atomic writes (see file.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"

int syn_file_open(int dfd, const char *name, unsigned how)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	struct stat st;
	int fd;

	if (!name || !*name) {
		errno = EINVAL;
		return -1;
	}
	if (!(how & SYN_FILE_FOLLOW))
		flags |= O_NOFOLLOW;
	if ((fd = openat(dfd, name, flags)) < 0)
		return -1;
	if (how & SYN_FILE_REGULAR) {
		int e = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
		if (e) {
			close(fd);
			errno = e;
			return -1;
		}
	}
	return fd;
}

char *syn_file_read_fd(int fd, size_t max, size_t *lenp)
{
	size_t cap = 512, used = 0;
	char *buf = NULL, *nb;
	ssize_t r;
	int e;

	/* Grow by doubling up to max + 1 bytes of text: one byte past max
	 * tells a file over the limit from one exactly at it, whatever the
	 * file's size said (procfs files say 0). */
	for (;;) {
		if (!buf || used + 1 >= cap) {
			if (buf)
				cap *= 2;
			if (cap > max + 2)
				cap = max + 2;
			if (buf && used + 1 >= cap) {
				e = EFBIG;
				goto fail;
			}
			if (!(nb = realloc(buf, cap))) {
				e = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		r = read(fd, buf + used, cap - used - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			goto fail;
		}
		if (r == 0)
			break;
		used += (size_t)r;
	}
	if (used > max) {
		e = EFBIG;
		goto fail;
	}
	buf[used] = '\0';
	if (lenp)
		*lenp = used;
	return buf;
fail:
	free(buf);
	errno = e;
	return NULL;
}

char *syn_file_read(int dfd, const char *name, size_t max, unsigned how, size_t *len)
{
	char *buf;
	int fd, e;

	if ((fd = syn_file_open(dfd, name, how)) < 0)
		return NULL;
	buf = syn_file_read_fd(fd, max, len);
	e = errno;
	close(fd);
	errno = e;
	return buf;
}

int syn_file_lock(int fd, int timeout_ms)
{
	struct timespec start, now, pause = { 0, 10 * 1000 * 1000 };

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >=
		    timeout_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return 0;
}

int syn_file_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A temporary name that no other writer picks: the clock, the pid and a
 * per-process counter, mixed; a collision only costs another try. */
static void tmp_name(char *buf, size_t len, const char *name)
{
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	static unsigned counter;
	struct timespec ts;
	uint64_t x;
	char sfx[7];

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
		__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) * 0xBF58476D1CE4E5B9ull ^
		(uint64_t)ts.tv_sec;
	for (int i = 0; i < 6; i++) {
		sfx[i] = digits[x % 36];
		x /= 36;
	}
	sfx[6] = '\0';
	snprintf(buf, len, ".%s.%s", name, sfx);
}

int syn_atomic_begin(syn_atomic_t *a, int dfd, const char *path, unsigned mode)
{
	const char *slash, *base;
	int e;

	a->fd = -1;
	a->f = NULL;
	a->dfd = dfd;
	a->own_dfd = 0;
	a->tmp[0] = '\0';
	if (!path || !*path) {
		errno = EINVAL;
		return -1;
	}
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	if (strlen(base) >= sizeof(a->name) - 8) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(a->name, sizeof(a->name), "%s", base);
	if (slash || dfd == AT_FDCWD) {
		/* The directory part, or the working directory: opened so
		 * that the rename and the directory's fsync act on one. */
		char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
		if (!dir) {
			errno = ENOMEM;
			return -1;
		}
		a->dfd = openat(dfd, *dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		e = errno;
		free(dir);
		if (a->dfd < 0) {
			errno = e;
			return -1;
		}
		a->own_dfd = 1;
	}
	for (int tries = 0; tries < 64; tries++) {
		tmp_name(a->tmp, sizeof(a->tmp), a->name);
		a->fd = openat(a->dfd, a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       (mode_t)mode);
		if (a->fd >= 0 || errno != EEXIST)
			break;
	}
	if (a->fd < 0) {
		a->tmp[0] = '\0';
		goto fail;
	}
	/* The mode exactly, whatever the umask. */
	if (fchmod(a->fd, (mode_t)mode) < 0) {
		e = errno;
		syn_atomic_abort(a);
		errno = e;
		return -1;
	}
	return 0;
fail:
	e = errno;
	if (a->own_dfd)
		close(a->dfd);
	a->own_dfd = 0;
	errno = e;
	return -1;
}

FILE *syn_atomic_stream(syn_atomic_t *a)
{
	if (!a->f)
		a->f = fdopen(a->fd, "w");
	return a->f;
}

void syn_atomic_abort(syn_atomic_t *a)
{
	int e = errno;

	if (a->f)
		fclose(a->f); /* closes a->fd */
	else if (a->fd >= 0)
		close(a->fd);
	a->f = NULL;
	a->fd = -1;
	if (a->tmp[0])
		unlinkat(a->dfd, a->tmp, 0);
	a->tmp[0] = '\0';
	if (a->own_dfd)
		close(a->dfd);
	a->own_dfd = 0;
	errno = e;
}

int syn_atomic_commit_how(syn_atomic_t *a, unsigned how)
{
	int rv = 0, e;

	errno = 0;
	if (how & ~(SYN_ATOMIC_NOSYNC | SYN_ATOMIC_EXCL)) {
		errno = EINVAL;
		goto fail;
	}
	if (a->f && (fflush(a->f) != 0 || ferror(a->f))) {
		if (!errno)
			errno = EIO;
		goto fail;
	}
	if (!(how & SYN_ATOMIC_NOSYNC) && fsync(a->fd) < 0)
		goto fail;
	e = a->f ? fclose(a->f) : close(a->fd);
	a->f = NULL;
	a->fd = -1;
	if (e != 0)
		goto fail;
	if (how & SYN_ATOMIC_EXCL) {
		/* link(2) fails if the name exists, where rename(2) would
		 * replace it: of two creators exactly one succeeds. */
		if (linkat(a->dfd, a->tmp, a->dfd, a->name, 0) < 0)
			goto fail;
		unlinkat(a->dfd, a->tmp, 0);
	} else if (renameat(a->dfd, a->tmp, a->dfd, a->name) < 0) {
		goto fail;
	}
	a->tmp[0] = '\0';
	if (!(how & SYN_ATOMIC_NOSYNC))
		rv = fsync(a->dfd);
	e = errno;
	if (a->own_dfd)
		close(a->dfd);
	a->own_dfd = 0;
	errno = e;
	return rv;
fail:
	syn_atomic_abort(a);
	return -1;
}

int syn_atomic_commit(syn_atomic_t *a)
{
	return syn_atomic_commit_how(a, 0);
}

int syn_file_write_atomic_how(int dfd, const char *path, const void *data, size_t len,
			      unsigned mode, unsigned how)
{
	syn_atomic_t a;

	if (syn_atomic_begin(&a, dfd, path, mode) < 0)
		return -1;
	if (syn_file_write_all(a.fd, data, len) < 0) {
		syn_atomic_abort(&a);
		return -1;
	}
	return syn_atomic_commit_how(&a, how);
}

int syn_file_write_atomic(int dfd, const char *path, const void *data, size_t len, unsigned mode)
{
	return syn_file_write_atomic_how(dfd, path, data, len, mode, 0);
}

int syn_file_stamp(const char *path, syn_file_stamp_t *s)
{
	struct stat st;

	if (!path || !s) {
		errno = EINVAL;
		return -1;
	}
	memset(s, 0, sizeof(*s));
	if (stat(path, &st) < 0)
		return -1;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime = st.st_mtim;
	s->ctime = st.st_ctim;
	s->taken = time(NULL);
	return 0;
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int syn_file_stamp_fresh(const syn_file_stamp_t *old, const syn_file_stamp_t *cur)
{
	time_t changed;

	if (!old || !cur || old->dev != cur->dev || old->ino != cur->ino ||
	    old->size != cur->size || !same_time(&old->mtime, &cur->mtime) ||
	    !same_time(&old->ctime, &cur->ctime))
		return 0;
	changed = old->mtime.tv_sec > old->ctime.tv_sec ? old->mtime.tv_sec : old->ctime.tv_sec;
	return old->taken >= changed + 2;
}
