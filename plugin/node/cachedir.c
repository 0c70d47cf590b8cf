/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cachedir.c: punching holes into a job's cache directory (cachedir.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/node/cachedir.h"
#include "plugin/shared/util.h"

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Punch the regular file name in dfd if it is one of uid's with one link:
 * the last need bytes of it (what was stored last: the loader keeps what it
 * stored first, as its own shrink does), or all of it when that frees less.
 * Returns the bytes freed.
 */
static uint64_t punch_one(int dfd, const char *name, const struct stat *before, uid_t uid,
			  uint64_t need)
{
	struct stat st, after;
	uint64_t freed = 0;
	off_t from = 0;
	int fd;

	fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* The entry may have been swapped between the look and the open. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1 ||
	    st.st_dev != before->st_dev || st.st_ino != before->st_ino || st.st_size <= 0)
		goto out;
	if (need < (uint64_t)st.st_blocks * 512 && need < (uint64_t)st.st_size)
		from = (st.st_size - (off_t)need) & ~(off_t)4095;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, from, st.st_size - from) == 0 &&
	    fstat(fd, &after) == 0 && after.st_blocks < st.st_blocks)
		freed = (uint64_t)(st.st_blocks - after.st_blocks) * 512;
	/* A sparse tail freed too little: the whole file. */
	if (from > 0 && freed < need &&
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size) == 0 &&
	    fstat(fd, &after) == 0 && after.st_blocks < st.st_blocks)
		freed = (uint64_t)(st.st_blocks - after.st_blocks) * 512;
out:
	close(fd);
	return freed;
}

int syn__cache_punch(const char *cache_dir, const char *job, uid_t uid, uint64_t want,
		     int budget_ms, uint64_t *freed, char *err, size_t errlen)
{
	DIR *stack[SYN__PUNCH_MAX_DEPTH + 1];
	int depth = 0, rootfd, jfd, entries = 0;
	int64_t deadline = now_ms() + (budget_ms > 0 ? budget_ms : 0);
	struct stat st;

	*freed = 0;
	rootfd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return syn_errbuf(err, errlen, errno, "%s: %s", cache_dir, strerror(errno));
	if (fstat(rootfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(rootfd);
		return syn_errbuf(err, errlen, EPERM, "%s is not root's only", cache_dir);
	}
	jfd = openat(rootfd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rootfd);
	if (jfd < 0)
		return syn_errbuf(err, errlen, errno, "%s/%s: %s", cache_dir, job, strerror(errno));
	if (fstat(jfd, &st) < 0 || st.st_uid != uid) {
		close(jfd);
		return syn_errbuf(err, errlen, EPERM, "%s/%s is not uid %u's", cache_dir, job,
				 (unsigned)uid);
	}
	stack[0] = fdopendir(jfd);
	if (!stack[0]) {
		int e = errno;

		close(jfd);
		return syn_errbuf(err, errlen, e, "%s/%s: %s", cache_dir, job, strerror(e));
	}
	while (depth >= 0) {
		struct dirent *d = readdir(stack[depth]);
		int dfd = dirfd(stack[depth]);

		if (!d) {
			closedir(stack[depth--]);
			continue;
		}
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (*freed >= want || ++entries > SYN__PUNCH_MAX_ENTRIES || now_ms() > deadline)
			break;
		if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != uid)
			continue;
		if (S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_blocks > 0) {
			*freed += punch_one(dfd, d->d_name, &st, uid, want - *freed);
		} else if (S_ISDIR(st.st_mode) && depth < SYN__PUNCH_MAX_DEPTH) {
			struct stat sub;
			int fd = openat(dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			DIR *dir;

			if (fd < 0)
				continue;
			if (fstat(fd, &sub) < 0 || sub.st_dev != st.st_dev || sub.st_ino != st.st_ino ||
			    !(dir = fdopendir(fd))) {
				close(fd);
				continue;
			}
			stack[++depth] = dir;
		}
	}
	while (depth >= 0)
		closedir(stack[depth--]);
	return 0;
}
