/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cachedir.t: taking memory back from a job's cache directory
 * (plugin/cachedir.c, issue 24): holes are punched into the job's user's
 * regular files only, never through a link, never into another user's
 * file linked in, never blocking on a FIFO; the walk stops once enough is
 * freed. The directory tree is made on tmpfs (/dev/shm, where CacheDir
 * lives) as root would find it: CacheDir root's, the job's directory and
 * files its user's. Needs root (to own files as another user).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tap.h"
#include "plugin/node/cachedir.h"

#define USER 65534 /* nobody: the job's user */
#define MB (1ULL << 20)

static char root[64];

/* A file of size MB megabytes at root/rel, owned by uid, its pages allocated. */
static int put(const char *rel, int mb, uid_t uid)
{
	char path[300], buf[65536];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	memset(buf, 0x5a, sizeof(buf));
	for (int i = 0; i < mb * 16; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			close(fd);
			return -1;
		}
	close(fd);
	return chown(path, uid, uid);
}

static uint64_t allocated(const char *rel)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : UINT64_MAX;
}

static int mkdir_as(const char *rel, uid_t uid, mode_t mode)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return mkdir(path, mode) < 0 || chown(path, uid, uid) < 0 ? -1 : 0;
}

int main(void)
{
	char err[300], path[300], target[300], cmd[300];
	uint64_t freed;
	int ok_setup, rc;

	if (geteuid() != 0)
		skip_all("needs root (files of another user)");
	snprintf(root, sizeof(root), "/dev/shm/cachedir.t.XXXXXX");
	if (!mkdtemp(root))
		bail_out("mkdtemp in /dev/shm");
	chmod(root, 0755);
	ok_setup = mkdir_as("job_7", USER, 0700) == 0 && mkdir_as("job_7/sub", USER, 0700) == 0 &&
		   put("job_7/coordl-cache", 4, USER) == 0 && put("job_7/sub/more", 2, USER) == 0 &&
		   put("job_7/roots", 1, 0) == 0 && put("outside", 1, USER) == 0 &&
		   put("job_7/linked", 1, USER) == 0;
	snprintf(path, sizeof(path), "%s/job_7/linked", root);
	snprintf(target, sizeof(target), "%s/linked-too", root);
	ok_setup = ok_setup && link(path, target) == 0;
	snprintf(path, sizeof(path), "%s/job_7/to-outside", root);
	snprintf(target, sizeof(target), "%s/outside", root);
	ok_setup = ok_setup && symlink(target, path) == 0 && lchown(path, USER, USER) == 0;
	snprintf(path, sizeof(path), "%s/job_7/fifo", root);
	ok_setup = ok_setup && mkfifo(path, 0600) == 0 && chown(path, USER, USER) == 0;
	if (!ok_setup)
		bail_out("cannot make the test tree");

	rc = syn__cache_punch(root, "job_7", USER, 1 * MB, 5000, &freed, err, sizeof(err));
	ok(rc == 0 && freed >= 1 * MB, "frees at least what was asked (%llu bytes)",
	   (unsigned long long)freed);
	ok(allocated("job_7/coordl-cache") + allocated("job_7/sub/more") <= 5 * MB,
	   "... by punching the job's files");
	ok(freed < 2 * MB && allocated("job_7/coordl-cache") + allocated("job_7/sub/more") >= 4 * MB,
	   "from a file's end, and no more than needed");
	ok(syn__cache_punch(root, "job_7", USER, UINT64_MAX, 5000, &freed, err, sizeof(err)) == 0,
	   "asked for everything");
	ok(allocated("job_7/coordl-cache") == 0 && allocated("job_7/sub/more") == 0,
	   "every file of the job's user is punched, in subdirectories too");
	{
		struct stat st;

		snprintf(path, sizeof(path), "%s/job_7/coordl-cache", root);
		ok(stat(path, &st) == 0 && st.st_size == (off_t)(4 * MB),
		   "a punched file keeps its size (a loader's mapping stays valid)");
	}
	ok(allocated("job_7/roots") >= 1 * MB, "another user's file in the directory is untouched");
	ok(allocated("job_7/linked") >= 1 * MB, "a file with a second link is untouched");
	ok(allocated("outside") >= 1 * MB, "a link's target outside the directory is untouched");
	ok(syn__cache_punch(root, "job_7", USER + 1, UINT64_MAX, 5000, &freed, err, sizeof(err)) ==
		   -1 && errno == EPERM, "a directory not the job's user's is refused: %s", err);
	ok(syn__cache_punch(root, "job_8", USER, UINT64_MAX, 5000, &freed, err, sizeof(err)) == -1 &&
	   errno == ENOENT, "no such job directory: ENOENT");
	snprintf(path, sizeof(path), "%s/job_7", root);
	ok(syn__cache_punch(path, "sub", USER, UINT64_MAX, 5000, &freed, err, sizeof(err)) == -1 &&
	   errno == EPERM, "a CacheDir that is not root's is refused: %s", err);
	snprintf(path, sizeof(path), "%s/link-dir", root);
	snprintf(target, sizeof(target), "%s/job_7", root);
	ok(symlink(target, path) == 0 &&
	   syn__cache_punch(root, "link-dir", USER, UINT64_MAX, 5000, &freed, err, sizeof(err)) ==
		   -1 && (errno == ELOOP || errno == ENOTDIR),
	   "a job directory that is a link is not followed");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("cannot remove %s", root);
	return done_testing();
}
