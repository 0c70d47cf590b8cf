/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * source.t: ImageFolder scan (labels, sorting, extensions), file lists
 * (relative paths, comments, bad lines), shard indexes (good and damaged),
 * and the fetch interface returning the exact file bytes; issue 12: a FIFO
 * in a file list, symlinked items, the item size limit.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader/source.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_imagefolder(const char *dir)
{
	char root[1024], p[1200];
	coordl_error_t err = { "" };
	coordl__source_t *s;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, flen = 0;
	char why[128];
	char *want;

	snprintf(root, sizeof(root), "%s/if", dir);
	mkdir(root, 0700);
	/* Classes out of order on disk; files with mixed extensions. */
	const char *files[] = { "zebra/b.jpg", "zebra/a.JPEG", "ant/x.jpeg", "ant/y.JPG", "moth/1.jpg" };
	const char *ignored[] = { "ant/notes.txt", "ant/.hidden.jpg", "zebra/c.png" };
	mkdir((snprintf(p, sizeof(p), "%s/zebra", root), p), 0700);
	mkdir((snprintf(p, sizeof(p), "%s/ant", root), p), 0700);
	mkdir((snprintf(p, sizeof(p), "%s/moth", root), p), 0700);
	mkdir((snprintf(p, sizeof(p), "%s/.git", root), p), 0700);
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/%s", root, files[i]);
		td_write_jpeg(p, 16, 16, (unsigned)i);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", root, ignored[i]);
		td_write_file(p, "x", 1);
	}
	snprintf(p, sizeof(p), "%s/README", root);
	td_write_file(p, "top-level file", 14);

	s = coordl__source_open(root, COORDL_SOURCE_AUTO, &err);
	ok(s != NULL, "ImageFolder opens (%s)", s ? "ok" : err.text);
	if (!s) {
		skip(9, "no source");
		return;
	}
	is_int(coordl__source_kind(s), COORDL_SOURCE_IMAGEFOLDER, "directory detected as ImageFolder");
	is_int(coordl__source_classes(s), 3, "three classes (hidden directory ignored)");
	is_str(coordl__source_class_name(s, 0), "ant", "class 0 is the first sorted name");
	is_str(coordl__source_class_name(s, 2), "zebra", "class 2 is the last sorted name");
	is_int(coordl__source_count(s), 5, "five JPEGs found, other files ignored");
	is_str(coordl__source_item_name(s, 0), "ant/x.jpeg", "items sorted by class then file");
	ok(strcmp(coordl__source_item_name(s, 3), "zebra/a.JPEG") == 0 &&
	   coordl__source_label(s, 3) == 2, "item 3 is zebra/a.JPEG with label 2");
	snprintf(p, sizeof(p), "%s/zebra/b.jpg", root);
	want = slurp(p, &flen);
	ok(coordl__source_fetch(s, 4, &buf, &cap, &len, why, sizeof(why)) == 0 && want &&
	   len == flen && memcmp(buf, want, len) == 0, "fetch returns the file's bytes");
	free(want);
	/* A file that vanished after the scan is a fetch error, not a crash. */
	unlink(p);
	ok(coordl__source_fetch(s, 4, &buf, &cap, &len, why, sizeof(why)) == -1 && errno == ENOENT,
	   "fetch of a vanished file fails with ENOENT (%s)", why);
	free(buf);
	coordl__source_destroy(s);
}

static void test_filelist(const char *dir)
{
	char list[1024], p[1200];
	coordl_error_t err = { "" };
	coordl__source_t *s;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0;
	char why[128];

	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/sub/a b.jpg", dir);
	td_write_jpeg(p, 16, 16, 1);
	snprintf(p, sizeof(p), "%s/c.jpg", dir);
	td_write_jpeg(p, 16, 16, 2);
	snprintf(list, sizeof(list), "%s/list.txt", dir);
	snprintf(p, sizeof(p), "# comment\n\nsub/a b.jpg 3\n%s/c.jpg 0\r\nmissing.jpg\t1\n", dir);
	td_write_file(list, p, strlen(p));

	s = coordl__source_open(list, COORDL_SOURCE_AUTO, &err);
	ok(s != NULL, "file list opens (%s)", s ? "ok" : err.text);
	if (!s) {
		skip(6, "no source");
		return;
	}
	is_int(coordl__source_kind(s), COORDL_SOURCE_FILELIST, "text file detected as a file list");
	is_int(coordl__source_count(s), 3, "three items (comment and blank line skipped)");
	is_int(coordl__source_classes(s), 4, "classes = max label + 1");
	ok(coordl__source_label(s, 0) == 3 && strcmp(coordl__source_item_name(s, 0), "sub/a b.jpg") == 0,
	   "path with a space keeps its label");
	ok(coordl__source_fetch(s, 0, &buf, &cap, &len, why, sizeof(why)) == 0 && len > 100,
	   "relative path resolved against the list's directory");
	ok(coordl__source_fetch(s, 2, &buf, &cap, &len, why, sizeof(why)) == -1,
	   "missing file is a fetch error (%s)", why);
	free(buf);
	coordl__source_destroy(s);

	static const char *bad[] = { "a.jpg\n", "a.jpg x\n", "a.jpg -1\n", "a.jpg 1.5\n", "# only\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		td_write_file(list, bad[i], strlen(bad[i]));
		s = coordl__source_open(list, COORDL_SOURCE_FILELIST, &err);
		ok(!s && strstr(err.text, "list.txt"), "bad list '%.*s' rejected naming the file (%s)",
		   (int)strlen(bad[i]) - 1, bad[i], err.text);
		coordl__source_destroy(s);
	}
}

static void test_shards(const char *dir)
{
	char idx[1024], p[1200];
	coordl_error_t err = { "" };
	coordl__source_t *s;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0;
	char why[128];
	const char *payload = "AAAABBBBBBCC";

	snprintf(p, sizeof(p), "%s/d-00000.cds", dir);
	td_write_file(p, payload, 12);
	snprintf(idx, sizeof(idx), "%s/d.cdx", dir);
	const char *good = "coordl-index 1\nclasses 2\ncat\ndog\nshards 1\nd-00000.cds\nitems 3\n"
			   "0 0 4 0 cat/a.jpg\n0 4 6 1 dog/b c.jpg\n0 10 2 1 dog/d.jpg\n";
	td_write_file(idx, good, strlen(good));
	s = coordl__source_open(idx, COORDL_SOURCE_AUTO, &err);
	ok(s != NULL, "shard index opens (%s)", s ? "ok" : err.text);
	if (s) {
		is_int(coordl__source_kind(s), COORDL_SOURCE_SHARDS, ".cdx detected as shards");
		is_int(coordl__source_count(s), 3, "three items");
		is_int(coordl__source_bytes(s), 12, "dataset bytes from the index");
		is_str(coordl__source_class_name(s, 1), "dog", "class names from the index");
		ok(coordl__source_fetch(s, 1, &buf, &cap, &len, why, sizeof(why)) == 0 && len == 6 &&
		   memcmp(buf, "BBBBBB", 6) == 0, "fetch reads the item's range of the shard");
		is_str(coordl__source_item_name(s, 1), "dog/b c.jpg", "names may contain spaces");
	} else {
		skip(6, "no source");
	}
	free(buf);
	coordl__source_destroy(s);

	static const char *bad[] = {
		"coordl-index 2\n",
		"coordl-index 1\nclasses 0\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nnope.cds\nitems 1\n0 0 1 0 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n0 0 13 0 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n1 0 1 0 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n0 0 1 1 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 2\n0 0 1 0 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n0 0 1 0\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n0 0 1 0 a\nextra\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\n../etc/passwd\nitems 1\n0 0 1 0 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n0 -1 1 0 a\n",
		"coordl-index 1\nclasses 1\ncat\nshards 1\nd-00000.cds\nitems 1\n0 18446744073709551615 1 0 a\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		td_write_file(idx, bad[i], strlen(bad[i]));
		errno = 0;
		s = coordl__source_open(idx, COORDL_SOURCE_AUTO, &err);
		ok(!s && strstr(err.text, "d.cdx") != NULL, "damaged index %zu rejected (%s)", i, err.text);
		coordl__source_destroy(s);
	}
}

static void test_errors(const char *dir)
{
	char p[1200];
	coordl_error_t err = { "" };
	coordl__source_t *s;

	snprintf(p, sizeof(p), "%s/none", dir);
	errno = 0;
	s = coordl__source_open(p, COORDL_SOURCE_AUTO, &err);
	ok(!s && errno == ENOENT && strstr(err.text, "none"), "missing dataset: ENOENT naming it");
	snprintf(p, sizeof(p), "%s/empty", dir);
	mkdir(p, 0700);
	s = coordl__source_open(p, COORDL_SOURCE_AUTO, &err);
	ok(!s && strstr(err.text, "empty"), "directory without classes rejected (%s)", err.text);
}

/*
 * Issue 12: hostile items. A FIFO named in a file list must not hang the
 * worker that fetches it (the fetch runs in a child with an alarm, so a
 * hang fails the test instead of stalling it); a symlinked item is read
 * (datasets use them); an item beyond the item limit is refused before it
 * is read, with its size and the limit, from files and from shards.
 */
static void test_issue12_hostile(const char *dir)
{
	char list[1024], p[1200], q[1200];
	coordl_error_t err = { "" };
	coordl__source_t *s;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, tlen = 0;
	char why[128];
	char *target;
	pid_t pid;
	int st;

	snprintf(p, sizeof(p), "%s/h-real.jpg", dir);
	td_write_jpeg(p, 32, 32, 9);
	snprintf(q, sizeof(q), "%s/h-link.jpg", dir);
	if (symlink(p, q) < 0)
		bail_out("symlink");
	snprintf(p, sizeof(p), "%s/h-fifo.jpg", dir);
	if (mkfifo(p, 0600) < 0)
		bail_out("mkfifo");
	snprintf(list, sizeof(list), "%s/h-list.txt", dir);
	snprintf(p, sizeof(p), "h-fifo.jpg 0\nh-link.jpg 1\nh-real.jpg 1\n");
	td_write_file(list, p, strlen(p));
	s = coordl__source_open(list, COORDL_SOURCE_FILELIST, &err);
	ok(s != NULL, "a file list naming a FIFO opens (%s)", s ? "ok" : err.text);
	if (!s) {
		skip(5, "no source");
		return;
	}
	fflush(stdout);
	if ((pid = fork()) == 0) {
		alarm(10);
		if (coordl__source_fetch(s, 0, &buf, &cap, &len, why, sizeof(why)) == 0)
			_exit(1);
		_exit(strstr(why, "not a regular file") ? 0 : 2);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "issue 12: fetching a FIFO fails at once as not a regular file (status %d%s)",
	   WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	   WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? ", hung" : "");
	snprintf(p, sizeof(p), "%s/h-real.jpg", dir);
	target = slurp(p, &tlen);
	ok(target && coordl__source_fetch(s, 1, &buf, &cap, &len, why, sizeof(why)) == 0 &&
	   len == tlen && memcmp(buf, target, len) == 0, "a symlinked item is followed and read");
	coordl__source_set_max_item(s, (uint64_t)tlen - 1);
	errno = 0;
	ok(coordl__source_fetch(s, 2, &buf, &cap, &len, why, sizeof(why)) == -1 && errno == EFBIG &&
	   strstr(why, "item limit"),
	   "issue 12: an item one byte beyond the item limit is refused: %s", why);
	coordl__source_set_max_item(s, (uint64_t)tlen);
	ok(coordl__source_fetch(s, 2, &buf, &cap, &len, why, sizeof(why)) == 0 && len == tlen,
	   "an item at the limit is read");
	coordl__source_destroy(s);
	free(target);

	/* Shards: the limit applies to an item's indexed length. */
	snprintf(p, sizeof(p), "%s/h-00000.cds", dir);
	td_write_file(p, "0123456789abcdef", 16);
	snprintf(p, sizeof(p), "%s/h.cdx", dir);
	const char *idx = "coordl-index 1\nclasses 1\nc\nshards 1\nh-00000.cds\nitems 2\n"
			  "0 0 4 0 c/a.jpg\n0 4 12 0 c/b.jpg\n";
	td_write_file(p, idx, strlen(idx));
	s = coordl__source_open(p, COORDL_SOURCE_SHARDS, &err);
	if (s)
		coordl__source_set_max_item(s, 8);
	ok(s && coordl__source_fetch(s, 0, &buf, &cap, &len, why, sizeof(why)) == 0 &&
	   coordl__source_fetch(s, 1, &buf, &cap, &len, why, sizeof(why)) == -1 && strstr(why, "12 bytes"),
	   "issue 12: a shard item beyond the limit is refused, the small one read (%s)", why);
	coordl__source_destroy(s);
	free(buf);
}

int main(void)
{
	char *dir = td_tmpdir("source");

	test_imagefolder(dir);
	test_filelist(dir);
	test_shards(dir);
	test_errors(dir);
	test_issue12_hostile(dir);
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
