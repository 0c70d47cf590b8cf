/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/util.c: the plugins' own helpers (see util.h): the removal of a
 * tree that a job may have written into, and the old names of helpers that
 * moved to common/ while plugin files still use them.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/util.h"

static void remove_tree_depth(int dfd, int depth)
{
	struct dirent *e;
	DIR *d = fdopendir(dfd);

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR)
			continue;
		if (depth < 16) {
			sub = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				remove_tree_depth(sub, depth + 1);
		}
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

void syn__remove_tree(int dfd)
{
	remove_tree_depth(dfd, 0);
}

int syn__errf(int errnum, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	syn_verrbuf(err, errlen, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int syn__write_tmp_at(int dfd, const char *tmp, const void *text, size_t len, unsigned mode)
{
	int fd, e;

	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	if (fd < 0)
		return -1;
	/* The mode exactly, whatever the umask. */
	if (fchmod(fd, (mode_t)mode) < 0 || syn_file_write_all(fd, text, len) < 0) {
		e = errno;
		close(fd);
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	if (close(fd) != 0) {
		e = errno;
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	return 0;
}
