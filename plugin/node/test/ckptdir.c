/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckptdir.t: jobs' checkpoint directories (plugin/node/ckptdir.h), made and removed as
 * root in a directory users can write into.
 *
 * Names: a job's and an array task's, and what is not one. Making: the
 * user's directory and the job's, mode 0700, the user's; again (kept,
 * touched); refused when CheckpointDir is a link or writable by others,
 * when the user's directory is a link, a file or another user's, when the
 * job's is a link or a file, and the targets of links are never touched.
 * Removing: the tree goes, a link planted in it goes but not what it
 * points to; nothing to remove is 0. The sweep: old directories go, fresh
 * ones, other names, and directories under a <uid> that is not that
 * user's stay. Root only (it gives directories away): skipped otherwise.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "plugin/node/ckptdir.h"

#define U 65534 /* the job's user (nobody) */
#define G 65534
#define OTHER 65533

static char root[256];

/* rm -rf path (made by this test, under its private directory). */
static void rm_rf(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		diag("'%s' failed", cmd);
}

static int owner_mode(const char *path, uid_t *uid, unsigned *mode)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -1;
	*uid = st.st_uid;
	*mode = st.st_mode & 07777;
	return S_ISDIR(st.st_mode) ? 0 : 1;
}

static void age(const char *path, time_t secs)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= secs;
	t[1] = t[0];
	utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

static void test_names(void)
{
	char b[SYN__CKPTDIR_NAME_MAX];

	ok(syn__ckptdir_name(42, 0, 0, b, sizeof(b)) == 0 && strcmp(b, "42") == 0, "job 42: '42'");
	ok(syn__ckptdir_name(43, 40, 3, b, sizeof(b)) == 0 && strcmp(b, "40_3") == 0,
	   "array task 40_3 (job 43): '40_3'");
	ok(syn__ckptdir_name(4294967295u, 4294967295u, 4294967295u, b, sizeof(b)) == 0 &&
		   strcmp(b, "4294967295_4294967295") == 0,
	   "the largest ids fit");
	errno = 0;
	ok(syn__ckptdir_name(0, 0, 0, b, sizeof(b)) < 0 && errno == EINVAL, "job 0 refused");
	ok(syn__ckptdir_name(42, 0, 0, b, 2) < 0 && errno == EINVAL, "no room refused");
	static const char *good[] = { "1", "42", "40_3", "4294967295_0" };
	static const char *bad[] = { "",   "0",  "042",       "4294967296", "4_", "_4", "4_4_4",
				     "a",  "..", "42/../1",  "42 ",        "-1", "1_0x" };
	int g = 1, b2 = 1;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		g &= syn__ckptdir_name_valid(good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (syn__ckptdir_name_valid(bad[i])) {
			b2 = 0;
			diag("'%s' taken for a job directory", bad[i]);
		}
	ok(g, "job directory names accepted");
	ok(b2, "other names refused (leading zeros, overflow, separators, paths)");
}

static void test_make(void)
{
	char path[512], want[512], p[512], err[300] = "";
	int created = -1;
	uid_t uid;
	unsigned mode;

	ok(syn__ckptdir_make(root, U, G, "42", path, sizeof(path), &created, err, sizeof(err)) ==
		   0,
	   "make job 42's directory (%s)", err);
	snprintf(want, sizeof(want), "%s/%u/42", root, U);
	is_str(path, want, "its path is CheckpointDir/<uid>/<job>");
	ok(created == 1, "made now");
	snprintf(p, sizeof(p), "%s/%u", root, U);
	ok(owner_mode(p, &uid, &mode) == 0 && uid == U && mode == 0700, "<uid>: the user's, 0700");
	ok(owner_mode(want, &uid, &mode) == 0 && uid == U && mode == 0700,
	   "<job>: the user's, 0700");
	age(want, 1000);
	ok(syn__ckptdir_make(root, U, G, "42", path, sizeof(path), &created, err, sizeof(err)) ==
			   0 &&
		   created == 0,
	   "again (a later step, a requeue): kept");
	{
		struct stat st;
		ok(stat(want, &st) == 0 && time(NULL) - st.st_mtime < 100, "and touched");
	}
	/* The user changed the mode: set back. */
	chmod(want, 0777);
	syn__ckptdir_make(root, U, G, "42", path, sizeof(path), &created, err, sizeof(err));
	ok(owner_mode(want, &uid, &mode) == 0 && mode == 0700, "a job directory made 0777 is 0700 "
	   "again");

	/* The user plants a link where a job's directory will be made. */
	snprintf(p, sizeof(p), "%s/%u/77", root, U);
	if (symlink("/etc", p) < 0)
		diag("symlink: %s", strerror(errno));
	errno = 0;
	ok(syn__ckptdir_make(root, U, G, "77", path, sizeof(path), &created, err, sizeof(err)) <
			   0 &&
		   errno == EPERM && strstr(err, "symbolic link or not a directory"),
	   "a link as the job's directory is refused (%s)", err);
	{
		struct stat st;
		ok(stat("/etc", &st) == 0 && st.st_uid == 0, "and /etc is untouched");
	}
	unlink(p);
	/* A file there. */
	close(open(p, O_CREAT | O_WRONLY, 0600));
	errno = 0;
	ok(syn__ckptdir_make(root, U, G, "77", path, sizeof(path), &created, err, sizeof(err)) <
			   0,
	   "a file as the job's directory is refused (%s)", err);
	unlink(p);
	/* Another user's directory under the user's: refused. */
	mkdir(p, 0700);
	if (chown(p, OTHER, OTHER) < 0)
		diag("chown: %s", strerror(errno));
	errno = 0;
	ok(syn__ckptdir_make(root, U, G, "77", path, sizeof(path), &created, err, sizeof(err)) <
			   0 &&
		   errno == EPERM && strstr(err, "belongs to uid"),
	   "another user's directory is not taken over (%s)", err);
	rmdir(p);

	/* The <uid> level: a link, another user's. */
	snprintf(p, sizeof(p), "%s/%u", root, OTHER);
	if (symlink("/tmp", p) < 0)
		diag("symlink: %s", strerror(errno));
	errno = 0;
	ok(syn__ckptdir_make(root, OTHER, OTHER, "5", path, sizeof(path), &created, err,
			     sizeof(err)) < 0 &&
		   errno == EPERM,
	   "a link as the user's directory is refused (%s)", err);
	unlink(p);
	mkdir(p, 0700);
	if (chown(p, U, G) < 0)
		diag("chown: %s", strerror(errno));
	errno = 0;
	ok(syn__ckptdir_make(root, OTHER, OTHER, "5", path, sizeof(path), &created, err,
			     sizeof(err)) < 0 &&
		   errno == EPERM,
	   "a directory of another user's as <uid> is refused (%s)", err);
	rm_rf(p);

	/* CheckpointDir itself. */
	chmod(root, 0777);
	errno = 0;
	ok(syn__ckptdir_make(root, U, G, "42", path, sizeof(path), &created, err, sizeof(err)) <
			   0 &&
		   errno == EPERM && strstr(err, "only root can write"),
	   "a CheckpointDir others can write is refused (%s)", err);
	chmod(root, 0755);
	snprintf(p, sizeof(p), "%s.link", root);
	if (symlink(root, p) < 0)
		diag("symlink: %s", strerror(errno));
	errno = 0;
	ok(syn__ckptdir_make(p, U, G, "42", path, sizeof(path), &created, err, sizeof(err)) < 0 &&
		   errno == EPERM,
	   "a CheckpointDir that is a link is refused (%s)", err);
	unlink(p);
	errno = 0;
	ok(syn__ckptdir_make("relative", U, G, "42", path, sizeof(path), &created, err,
			     sizeof(err)) < 0 &&
		   errno == EINVAL,
	   "a relative CheckpointDir is refused");
	ok(syn__ckptdir_make(root, U, G, "../x", path, sizeof(path), &created, err,
			     sizeof(err)) < 0 &&
		   errno == EINVAL,
	   "a name that is not a job's is refused");
	snprintf(p, sizeof(p), "%s/new", root);
	ok(syn__ckptdir_make(p, U, G, "1", path, sizeof(path), &created, err, sizeof(err)) == 0 &&
		   owner_mode(p, &uid, &mode) == 0 && uid == 0 && mode == 0755,
	   "a missing CheckpointDir is made, root's, 0755");
	rm_rf(p);
}

static void test_count_remove(void)
{
	char p[512], outside[512], err[300] = "";

	snprintf(p, sizeof(p), "%s/%u/42", root, U);
	for (int i = 0; i < 3; i++) {
		char f[600];
		snprintf(f, sizeof(f), "%s/%s", p, i == 0 ? "ckpt-1.ckpt" : i == 1 ? ".ckpt-2.tmp" : "x");
		close(open(f, O_CREAT | O_WRONLY, 0600));
	}
	is_int(syn__ckptdir_count(root, U, "42"), 1, "count: one .ckpt file (temporaries not)");
	is_int(syn__ckptdir_count(root, U, "99"), -1, "count: no such directory: -1");
	/* A link planted in the directory to a file outside. */
	snprintf(outside, sizeof(outside), "%s/outside", root);
	close(open(outside, O_CREAT | O_WRONLY, 0600));
	{
		char l[600], sub[600];
		snprintf(l, sizeof(l), "%s/link", p);
		if (symlink(outside, l) < 0)
			diag("symlink: %s", strerror(errno));
		snprintf(sub, sizeof(sub), "%s/sub", p);
		mkdir(sub, 0700);
		snprintf(l, sizeof(l), "%s/sub/f", p);
		close(open(l, O_CREAT | O_WRONLY, 0600));
	}
	is_int(syn__ckptdir_remove(root, U, "42", err, sizeof(err)), 1, "remove: removed");
	ok(access(p, F_OK) < 0 && errno == ENOENT, "the tree is gone");
	ok(access(outside, F_OK) == 0, "a link's target outside stays");
	is_int(syn__ckptdir_remove(root, U, "42", err, sizeof(err)), 0, "remove again: nothing");
	is_int(syn__ckptdir_remove(root, OTHER, "42", err, sizeof(err)), 0,
	       "remove for a user without a directory: nothing");
	unlink(outside);
}

static void test_sweep(void)
{
	char p[512], err[300] = "", path[512];
	int created;

	syn__ckptdir_make(root, U, G, "100", path, sizeof(path), &created, err, sizeof(err));
	syn__ckptdir_make(root, U, G, "101_2", path, sizeof(path), &created, err, sizeof(err));
	syn__ckptdir_make(root, U, G, "102", path, sizeof(path), &created, err, sizeof(err));
	snprintf(p, sizeof(p), "%s/%u/100", root, U);
	age(p, 10000);
	snprintf(p, sizeof(p), "%s/%u/101_2", root, U);
	age(p, 10000);
	snprintf(p, sizeof(p), "%s/%u/notajob", root, U);
	mkdir(p, 0700);
	age(p, 10000);
	/* A <uid> directory that is not that uid's: left alone. */
	snprintf(p, sizeof(p), "%s/%u", root, OTHER);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/%u/7", root, OTHER);
	mkdir(p, 0700);
	age(p, 10000);
	is_int(syn__ckptdir_sweep(root, time(NULL), 0, err, sizeof(err)), 0,
	       "retention 0: nothing swept");
	is_int(syn__ckptdir_sweep(root, time(NULL), 3600, err, sizeof(err)), 2,
	       "sweep at 1 h: the two old job directories go");
	snprintf(p, sizeof(p), "%s/%u/102", root, U);
	ok(access(p, F_OK) == 0, "the fresh one stays");
	snprintf(p, sizeof(p), "%s/%u/notajob", root, U);
	ok(access(p, F_OK) == 0, "a directory not named as a job's stays");
	snprintf(p, sizeof(p), "%s/%u/7", root, OTHER);
	ok(access(p, F_OK) == 0, "under a <uid> owned by someone else, nothing is touched");
	chmod(root, 0775);
	ok(syn__ckptdir_sweep(root, time(NULL), 3600, err, sizeof(err)) < 0,
	   "an unsafe CheckpointDir is not swept (%s)", err);
	chmod(root, 0755);
}

int main(void)
{
	test_names();
	if (geteuid() != 0) {
		skip(1, "making, removing and sweeping need root (chown)");
		return done_testing();
	}
	snprintf(root, sizeof(root), "/tmp/ckptdir-t-XXXXXX");
	if (!mkdtemp(root))
		return 1;
	chmod(root, 0755);
	test_make();
	test_count_remove();
	test_sweep();
	rm_rf(root);
	return done_testing();
}
