/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util.c: libcoordl's face of the error helper, path formatting and the
 * private files and locks of the shared cache (see util.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "loader/util.h"

int coordl__errprintf(coordl_error_t *err, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	syn_verrbuf(err ? err->text : NULL, err ? sizeof(err->text) : 0, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

char *coordl__path_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

int coordl__private_check(int fd, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(why, whylen, "fstat: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		snprintf(why, whylen, "not a regular file");
	else if (st.st_uid != geteuid())
		snprintf(why, whylen, "owned by uid %u, not %u", (unsigned)st.st_uid,
			 (unsigned)geteuid());
	else if ((st.st_mode & 07777) != 0600)
		snprintf(why, whylen, "mode %04o, not 0600", (unsigned)(st.st_mode & 07777));
	else if (st.st_nlink != 1)
		snprintf(why, whylen, "%lu links, not 1", (unsigned long)st.st_nlink);
	else
		return 0;
	errno = EPERM;
	return -1;
}

int coordl__private_open(const char *path, char *why, size_t whylen)
{
	for (int tries = 0; tries < 16; tries++) {
		int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
				  0600);
			if (fd < 0 && errno == EEXIST)
				continue; /* created meanwhile: open that one */
			/* The umask may have taken bits the check wants. */
			if (fd >= 0 && fchmod(fd, 0600) < 0) {
				int e = errno;
				close(fd);
				errno = e;
				fd = -1;
			}
		}
		if (fd < 0) {
			if (errno == ELOOP || errno == EISDIR) {
				snprintf(why, whylen, "%s",
					 errno == ELOOP ? "a symbolic link" : "not a regular file");
				errno = EPERM;
			} else {
				snprintf(why, whylen, "%s", strerror(errno));
			}
			return -1;
		}
		if (coordl__private_check(fd, why, whylen) < 0) {
			close(fd);
			errno = EPERM;
			return -1;
		}
		return fd;
	}
	snprintf(why, whylen, "created and removed repeatedly");
	errno = EAGAIN;
	return -1;
}

int coordl__private_lock(const char *path, char *why, size_t whylen)
{
	for (;;) {
		struct stat a, b;
		int fd = coordl__private_open(path, why, whylen);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX) < 0) {
			int e = errno;
			close(fd);
			if (e == EINTR)
				continue;
			snprintf(why, whylen, "flock: %s", strerror(e));
			errno = e;
			return -1;
		}
		if (fstat(fd, &a) == 0 && fstatat(AT_FDCWD, path, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
}

static void byte_range(struct flock *fl, int k, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = k;
	fl->l_len = 1;
}

int coordl__byte_lock(int fd, int k, short type)
{
	struct flock fl;

	byte_range(&fl, k, type);
	return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -1 : 0;
}

int coordl__byte_held(int fd, int k)
{
	struct flock fl;

	byte_range(&fl, k, F_WRLCK);
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return 1;
	return fl.l_type != F_UNLCK;
}
