/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckptdir.c: jobs' checkpoint directories under CheckpointDir (ckptdir.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/node/ckptdir.h"
#include "plugin/shared/util.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int syn__ckptdir_name(uint32_t jobid, uint32_t array_id, uint32_t task_id, char *out,
		      size_t len)
{
	int n;

	if (jobid == 0) {
		errno = EINVAL;
		return -1;
	}
	if (array_id)
		n = snprintf(out, len, "%" PRIu32 "_%" PRIu32, array_id, task_id);
	else
		n = snprintf(out, len, "%" PRIu32, jobid);
	if (n < 0 || (size_t)n >= len) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* Digits only, 1..10 of them, at most 2^32 - 1, no leading zero. */
static const char *u32_end(const char *s)
{
	uint64_t v = 0;
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9') {
		v = v * 10 + (uint64_t)(s[n] - '0');
		if (++n > 10 || v > UINT32_MAX)
			return NULL;
	}
	if (n == 0 || (n > 1 && s[0] == '0'))
		return NULL;
	return s + n;
}

int syn__ckptdir_name_valid(const char *name)
{
	/* No job is 0; an array's task may be. */
	const char *p = name && name[0] != '0' ? u32_end(name) : NULL;

	if (p && *p == '_')
		p = u32_end(p + 1);
	return p && *p == '\0';
}

/* The CheckpointDir: made root's, 0755, when missing; else it must be a
 * directory (not a link) of root's that nobody else can write, because
 * root makes and gives away directories in it. */
static int root_open(const char *root, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (!root || root[0] != '/')
		return syn_errbuf(err, errlen, EINVAL, "CheckpointDir '%s' is not an absolute path",
				 root ? root : "");
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return syn_errbuf(err, errlen, errno, "CheckpointDir %s: mkdir: %s", root,
				 strerror(errno));
	/* O_NOFOLLOW with O_DIRECTORY fails a link with ELOOP or ENOTDIR. */
	if ((fd = open(root, DIR_FLAGS)) < 0)
		return syn_errbuf(err, errlen, errno == ELOOP || errno == ENOTDIR ? EPERM : errno,
				 "CheckpointDir %s: %s", root,
				 errno == ELOOP || errno == ENOTDIR ? "a symbolic link or not a directory"
								    : strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return syn_errbuf(err, errlen, EPERM,
				 "CheckpointDir %s must be a directory of root's that only root can "
				 "write", root);
	}
	return fd;
}

/*
 * Open directory `name` in dfd for uid, making it (mode 0700, the user's)
 * when missing: one that exists must be the user's directory, or root's
 * (made by us and not yet given away). Returns its descriptor, *made, or
 * -1 with errno and err.
 */
static int user_dir(int dfd, const char *where, const char *name, uid_t uid, gid_t gid,
		    int *made, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	*made = mkdirat(dfd, name, 0700) == 0;
	if (!*made && errno != EEXIST)
		return syn_errbuf(err, errlen, errno, "mkdir %s/%s: %s", where, name, strerror(errno));
	if ((fd = openat(dfd, name, DIR_FLAGS)) < 0)
		return syn_errbuf(err, errlen, errno == ELOOP || errno == ENOTDIR ? EPERM : errno,
				 "%s/%s: %s", where, name,
				 errno == ELOOP || errno == ENOTDIR ? "a symbolic link or not a directory"
								    : strerror(errno));
	if (fstat(fd, &st) < 0 || (st.st_uid != uid && st.st_uid != 0)) {
		close(fd);
		return syn_errbuf(err, errlen, EPERM, "%s/%s belongs to uid %u, not %u", where, name,
				 (unsigned)st.st_uid, (unsigned)uid);
	}
	if ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0) {
		int e = errno;
		close(fd);
		return syn_errbuf(err, errlen, e, "chown %s/%s: %s", where, name, strerror(e));
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
		int e = errno;
		close(fd);
		return syn_errbuf(err, errlen, e, "chmod %s/%s: %s", where, name, strerror(e));
	}
	return fd;
}

int syn__ckptdir_make(const char *root, uid_t uid, gid_t gid, const char *name, char *path,
		      size_t pathlen, int *created, char *err, size_t errlen)
{
	char uname[16], where[SYN_PATH_MAX + 16];
	int rfd, ufd = -1, jfd = -1, made, rv = -1;

	*created = 0;
	if (!syn__ckptdir_name_valid(name))
		return syn_errbuf(err, errlen, EINVAL, "'%s' is not a job directory name",
				 name ? name : "");
	if ((rfd = root_open(root, err, errlen)) < 0)
		return -1;
	snprintf(uname, sizeof(uname), "%u", (unsigned)uid);
	if ((ufd = user_dir(rfd, root, uname, uid, gid, &made, err, errlen)) < 0)
		goto out;
	snprintf(where, sizeof(where), "%s/%s", root, uname);
	if ((jfd = user_dir(ufd, where, name, uid, gid, created, err, errlen)) < 0)
		goto out;
	/* Retention counts from the last use. */
	futimens(jfd, NULL);
	if (snprintf(path, pathlen, "%s/%s", where, name) >= (int)pathlen) {
		syn_errbuf(err, errlen, ENAMETOOLONG, "%s/%s: path too long", where, name);
		goto out;
	}
	rv = 0;
out:
	if (jfd >= 0)
		close(jfd);
	if (ufd >= 0)
		close(ufd);
	close(rfd);
	return rv;
}

/* Open root/<uid> if it is uid's directory; -1 with errno otherwise
 * (ENOENT when missing). */
static int user_open(int rfd, uid_t uid)
{
	char uname[16];
	struct stat st;
	int fd;

	snprintf(uname, sizeof(uname), "%u", (unsigned)uid);
	if ((fd = openat(rfd, uname, DIR_FLAGS)) < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != uid) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

int syn__ckptdir_count(const char *root, uid_t uid, const char *name)
{
	char err[256];
	struct dirent *de;
	DIR *d;
	int rfd, ufd, jfd, n = 0;

	if (!syn__ckptdir_name_valid(name) || (rfd = root_open(root, err, sizeof(err))) < 0)
		return -1;
	ufd = user_open(rfd, uid);
	close(rfd);
	if (ufd < 0)
		return -1;
	jfd = openat(ufd, name, DIR_FLAGS);
	close(ufd);
	if (jfd < 0 || !(d = fdopendir(jfd))) {
		if (jfd >= 0)
			close(jfd);
		return -1;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] != '.' && l > 5 && strcmp(de->d_name + l - 5, ".ckpt") == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Remove directory `name` in ufd and what is in it. 1, 0 (none), -1. */
static int remove_in(int ufd, const char *name)
{
	int jfd = openat(ufd, name, DIR_FLAGS);

	if (jfd < 0)
		return errno == ENOENT ? 0 : -1;
	syn__remove_tree(jfd); /* closes jfd */
	if (unlinkat(ufd, name, AT_REMOVEDIR) < 0)
		return errno == ENOENT ? 0 : -1;
	return 1;
}

int syn__ckptdir_remove(const char *root, uid_t uid, const char *name, char *err,
			size_t errlen)
{
	int rfd, ufd, rc;

	if (!syn__ckptdir_name_valid(name))
		return syn_errbuf(err, errlen, EINVAL, "'%s' is not a job directory name",
				 name ? name : "");
	if ((rfd = root_open(root, err, errlen)) < 0)
		return -1;
	ufd = user_open(rfd, uid);
	close(rfd);
	if (ufd < 0)
		return errno == ENOENT ? 0
				       : syn_errbuf(err, errlen, errno, "%s/%u: %s", root,
						   (unsigned)uid, strerror(errno));
	rc = remove_in(ufd, name);
	if (rc < 0)
		syn_errbuf(err, errlen, errno, "remove %s/%u/%s: %s", root, (unsigned)uid, name,
			  strerror(errno));
	close(ufd);
	return rc;
}

int syn__ckptdir_sweep(const char *root, time_t now, uint64_t retention, char *err,
		       size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int rfd, removed = 0;

	if ((rfd = root_open(root, err, errlen)) < 0)
		return -1;
	if (retention == 0) {
		close(rfd);
		return 0;
	}
	if (!(d = fdopendir(rfd))) {
		close(rfd);
		return syn_errbuf(err, errlen, errno, "CheckpointDir %s: %s", root, strerror(errno));
	}
	while ((de = readdir(d))) {
		const char *end = u32_end(de->d_name);
		struct dirent *je;
		DIR *ud;
		int ufd;

		if (!end || *end)
			continue;
		ufd = user_open(dirfd(d), (uid_t)strtoul(de->d_name, NULL, 10));
		if (ufd < 0 || !(ud = fdopendir(ufd))) {
			if (ufd >= 0)
				close(ufd);
			continue;
		}
		while ((je = readdir(ud))) {
			struct stat st;

			if (!syn__ckptdir_name_valid(je->d_name) ||
			    fstatat(dirfd(ud), je->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISDIR(st.st_mode) || st.st_mtime > now ||
			    (uint64_t)(now - st.st_mtime) <= retention)
				continue;
			if (remove_in(dirfd(ud), je->d_name) > 0)
				removed++;
		}
		closedir(ud);
	}
	closedir(d);
	return removed;
}
