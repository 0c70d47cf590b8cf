/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file.t: bounded whole-file reads, safe opens and atomic writes
 * (common/file.h), and the error helper (common/error.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/file.h"
#include "tests/tap.h"

static char top[] = "/tmp/syn-file-t.XXXXXX";

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, name);
	if (!(f = fopen(path, "w")) || fputs(text, f) < 0 || fclose(f) != 0)
		bail_out(path);
}

/* Names in top other than those the test made: temporary files left over. */
static int leftovers(void)
{
	DIR *d = opendir(top);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static void test_errors(void)
{
	syn_error_t err;
	char buf[8];
	int rc;

	errno = 0;
	rc = syn_errprintf(&err, ENOENT, "%s: %d", "file", 42);
	ok(rc == -1 && errno == ENOENT && strcmp(err.text, "file: 42") == 0,
	   "syn_errprintf fills the text, sets errno, returns -1");
	ok(syn_errprintf(NULL, EPERM, "ignored") == -1 && errno == EPERM, "a NULL struct is fine");
	ok(syn_errbuf(buf, sizeof(buf), EIO, "%s", "a longer text") == -1 && errno == EIO &&
		   strcmp(buf, "a longe") == 0,
	   "syn_errbuf truncates to its buffer");
	ok(syn_errbuf(NULL, 0, EINVAL, "x") == -1 && errno == EINVAL, "and takes no buffer");
	errno = ENOSPC;
	ok(syn_errprintf(&err, errno, "%s", "text") == -1 && errno == ENOSPC,
	   "passing errno keeps it");
}

static void test_read(void)
{
	char path[256], *t = NULL;
	size_t len = 0;
	int fd;

	put("ten", "0123456789");
	snprintf(path, sizeof(path), "%s/ten", top);
	t = syn_file_read(AT_FDCWD, path, 10, 0, &len);
	ok(t && len == 10 && strcmp(t, "0123456789") == 0, "a file at the limit is read whole");
	free(t);
	errno = 0;
	ok(!syn_file_read(AT_FDCWD, path, 9, 0, &len) && errno == EFBIG,
	   "a file one byte over the limit is EFBIG, never cut");
	t = syn_file_read(AT_FDCWD, "/proc/self/status", 1 << 20, 0, &len);
	ok(t && len > 100 && strstr(t, "Pid:"), "a procfs file (size 0 to stat) is read whole");
	free(t);
	put("empty", "");
	snprintf(path, sizeof(path), "%s/empty", top);
	t = syn_file_read(AT_FDCWD, path, 0, 0, &len);
	ok(t && len == 0 && t[0] == '\0', "an empty file is an empty string");
	free(t);

	/* Links: refused unless the path is an admin's. */
	snprintf(path, sizeof(path), "%s/link", top);
	if (symlink("ten", path) < 0)
		bail_out("symlink");
	errno = 0;
	ok(!syn_file_read(AT_FDCWD, path, 100, 0, NULL) && errno == ELOOP,
	   "a final symbolic link is not followed (ELOOP)");
	t = syn_file_read(AT_FDCWD, path, 100, SYN_FILE_FOLLOW, NULL);
	ok(t && strcmp(t, "0123456789") == 0, "unless SYN_FILE_FOLLOW");
	free(t);

	/* Relative to a directory descriptor. */
	fd = open(top, O_RDONLY | O_DIRECTORY);
	t = syn_file_read(fd, "ten", 100, SYN_FILE_REGULAR, NULL);
	ok(t && strcmp(t, "0123456789") == 0, "a name relative to a directory descriptor");
	free(t);
	errno = 0;
	ok(syn_file_open(fd, ".", SYN_FILE_REGULAR) == -1 && errno == EINVAL,
	   "SYN_FILE_REGULAR refuses a directory (EINVAL)");
	snprintf(path, sizeof(path), "%s/fifo", top);
	if (mkfifo(path, 0600) < 0)
		bail_out("mkfifo");
	errno = 0;
	ok(syn_file_open(fd, "fifo", SYN_FILE_REGULAR) == -1 && errno == EINVAL,
	   "and a FIFO, without blocking on it");
	t = syn_file_read(fd, "fifo", 100, 0, &len);
	ok(t && len == 0, "a FIFO without a writer reads as empty, never blocks");
	free(t);
	unlink(path);
	close(fd);
}

static void test_atomic(void)
{
	char path[256], *t = NULL;
	struct stat st;
	syn_atomic_t a;
	mode_t old = umask(077);
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/out", top);
	ok(syn_file_write_atomic(AT_FDCWD, path, "first\n", 6, 0644) == 0, "write a new file");
	ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644,
	   "with exactly its mode, whatever the umask (%04o)", (unsigned)(st.st_mode & 07777));
	ok(syn_file_write_atomic(AT_FDCWD, path, "second\n", 7, 0600) == 0 &&
		   (t = syn_file_read(AT_FDCWD, path, 100, 0, NULL)) && strcmp(t, "second\n") == 0,
	   "replace it");
	free(t);
	is_int(leftovers(), 0, "no temporary file is left");
	umask(old);

	/* Relative to a directory descriptor, a plain name. */
	fd = open(top, O_RDONLY | O_DIRECTORY);
	ok(syn_file_write_atomic(fd, "rel", "x", 1, 0600) == 0 &&
		   (t = syn_file_read(fd, "rel", 10, 0, NULL)) && strcmp(t, "x") == 0,
	   "write beside a directory descriptor");
	free(t);

	/* Abort: the old file stays, nothing is left. */
	ok(syn_atomic_begin(&a, fd, "rel", 0600) == 0 && write(a.fd, "partial", 7) == 7,
	   "begin a write");
	is_int(leftovers(), 1, "its temporary file is a dot file beside the target");
	syn_atomic_abort(&a);
	ok((t = syn_file_read(fd, "rel", 10, 0, NULL)) && strcmp(t, "x") == 0 && leftovers() == 0,
	   "abort keeps the old file and leaves nothing");
	free(t);

	/* A stream. */
	ok(syn_atomic_begin(&a, AT_FDCWD, path, 0644) == 0 && (f = syn_atomic_stream(&a)) &&
		   fprintf(f, "%s %d\n", "stream", 3) > 0 && syn_atomic_commit(&a) == 0 &&
		   (t = syn_file_read(AT_FDCWD, path, 100, 0, NULL)) &&
		   strcmp(t, "stream 3\n") == 0,
	   "a stdio stream on the temporary file");
	free(t);

	/* A link at the target's name is replaced, never written through. */
	{
		char target[256];
		struct stat lst;

		snprintf(target, sizeof(target), "%s/victim", top);
		put("victim", "safe");
		if (symlinkat(target, fd, "linked") < 0)
			bail_out("symlink");
		ok(syn_file_write_atomic(fd, "linked", "new", 3, 0644) == 0 &&
			   fstatat(fd, "linked", &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISREG(lst.st_mode) && (t = syn_file_read(fd, "victim", 10, 0, NULL)) &&
			   strcmp(t, "safe") == 0,
		   "a link at the target is replaced by the file; its target is untouched");
		free(t);
	}

	/* Failures leave nothing. */
	errno = 0;
	ok(syn_file_write_atomic(AT_FDCWD, "/nonexistent-dir/x", "x", 1, 0644) == -1 &&
		   errno == ENOENT,
	   "a missing directory is ENOENT");
	ok(syn_file_write_atomic(fd, "", "x", 1, 0644) == -1 && errno == EINVAL,
	   "an empty name is EINVAL");
	ok(syn_file_write_atomic(fd, "a/", "x", 1, 0644) == -1 && errno == EINVAL,
	   "a path ending in '/' is EINVAL");
	close(fd);
}

/* Concurrent writers of one file: readers see one whole version, and one
 * of the writers' texts remains. */
static void test_concurrent(void)
{
	char path[256], *t = NULL;
	int bad = 0;
	pid_t kids[2];

	snprintf(path, sizeof(path), "%s/race", top);
	syn_file_write_atomic(AT_FDCWD, path, "AAAAAAAA", 8, 0644);
	for (int k = 0; k < 2; k++) {
		if ((kids[k] = fork()) == 0) {
			const char *text = k ? "BBBBBBBB" : "CCCCCCCC";
			for (int i = 0; i < 200; i++)
				if (syn_file_write_atomic(AT_FDCWD, path, text, 8, 0644) < 0)
					_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < 400; i++) {
		t = syn_file_read(AT_FDCWD, path, 100, 0, NULL);
		if (!t || strlen(t) != 8 ||
		    strspn(t,
			   t[0] == 'A'           ? "A"
				   : t[0] == 'B' ? "B"
						 : "C") != 8)
			bad++;
		free(t);
	}
	for (int k = 0; k < 2; k++) {
		int st;
		waitpid(kids[k], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	is_int(bad, 0, "two writers, 400 reads: every read whole, every write done");
	t = syn_file_read(AT_FDCWD, path, 100, 0, NULL);
	ok(t && (strcmp(t, "BBBBBBBB") == 0 || strcmp(t, "CCCCCCCC") == 0),
	   "one writer's text remains");
	free(t);
	is_int(leftovers(), 0, "no temporary file is left");
}

/* The variants: without fsync, and exclusive creation (issue 26: two
 * submissions of one new key must make one request file). */
static void test_how(void)
{
	char *t = NULL;
	int fd = open(top, O_RDONLY | O_DIRECTORY), wins = 0, lost = 0, torn = 0;

	ok(syn_file_write_atomic_how(fd, "nosync", "n1", 2, 0600, SYN_ATOMIC_NOSYNC) == 0 &&
		   syn_file_write_atomic_how(fd, "nosync", "n2", 2, 0600, SYN_ATOMIC_NOSYNC) == 0 &&
		   (t = syn_file_read(fd, "nosync", 10, 0, NULL)) && strcmp(t, "n2") == 0,
	   "without fsync: written and replaced");
	free(t);
	t = NULL;
	ok(syn_file_write_atomic_how(fd, "excl", "first", 5, 0600, SYN_ATOMIC_EXCL) == 0,
	   "exclusive: a new file is created");
	errno = 0;
	ok(syn_file_write_atomic_how(fd, "excl", "second", 6, 0600,
				     SYN_ATOMIC_EXCL | SYN_ATOMIC_NOSYNC) == -1 && errno == EEXIST &&
		   (t = syn_file_read(fd, "excl", 10, 0, NULL)) && strcmp(t, "first") == 0,
	   "exclusive: an existing file stays, EEXIST");
	free(t);
	errno = 0;
	ok(syn_file_write_atomic_how(fd, "bad", "x", 1, 0600, 0x80) == -1 && errno == EINVAL &&
		   faccessat(fd, "bad", F_OK, 0) < 0,
	   "an unknown flag is EINVAL and writes nothing");
	is_int(leftovers(), 0, "no temporary file is left");

	/* Eight processes create one name at once, 40 times over. */
	for (int round = 0; round < 40; round++) {
		pid_t kids[8];

		unlinkat(fd, "excl-race", 0);
		for (int k = 0; k < 8; k++) {
			if ((kids[k] = fork()) == 0) {
				char text[16];

				snprintf(text, sizeof(text), "writer-%d", k);
				if (syn_file_write_atomic_how(fd, "excl-race", text, strlen(text), 0600,
							      SYN_ATOMIC_EXCL | SYN_ATOMIC_NOSYNC) == 0)
					_exit(0);
				_exit(errno == EEXIST ? 1 : 2);
			}
		}
		for (int k = 0; k < 8; k++) {
			int st;

			waitpid(kids[k], &st, 0);
			wins += WIFEXITED(st) && WEXITSTATUS(st) == 0;
			lost += WIFEXITED(st) && WEXITSTATUS(st) == 1;
		}
		t = syn_file_read(fd, "excl-race", 20, 0, NULL);
		torn += !t || strncmp(t, "writer-", 7) != 0 || strlen(t) != 8;
		free(t);
	}
	is_int(wins, 40, "8 concurrent exclusive creators, 40 rounds: one wins each round");
	is_int(lost, 40 * 7, "every other one gets EEXIST");
	is_int(torn, 0, "the file is always one creator's whole text");
	unlinkat(fd, "excl-race", 0);
	is_int(leftovers(), 0, "no temporary file is left");
	close(fd);
}

/* Stamps: a cache of a file's content is fresh while the file is the same
 * and was still for 2 s before the content was read. */
static void test_stamp(void)
{
	char path[256], other[256];
	syn_file_stamp_t a, b;

	snprintf(path, sizeof(path), "%s/stamped", top);
	snprintf(other, sizeof(other), "%s/stamped.new", top);
	put("stamped", "one");
	ok(syn_file_stamp(path, &a) == 0 && syn_file_stamp(path, &b) == 0, "stamp a file twice");
	ok(!syn_file_stamp_fresh(&a, &b), "just written: not fresh (a change in the same tick "
	   "could keep its times)");
	a.taken += 3; /* as if read 3 s after its change */
	ok(syn_file_stamp_fresh(&a, &b), "read 2 s or more after its change, unchanged: fresh");
	/* Longer: within one clock tick of the stamp a same-size write could
	 * keep the times (the case the 2 s rule is for). */
	put("stamped", "three");
	ok(syn_file_stamp(path, &b) == 0 && !syn_file_stamp_fresh(&a, &b),
	   "written again: not fresh");
	a = b;
	a.taken += 3;
	put("stamped.new", "three");
	ok(rename(other, path) == 0 && syn_file_stamp(path, &b) == 0 && !syn_file_stamp_fresh(&a, &b),
	   "replaced by another file of the same size: not fresh");
	errno = 0;
	ok(syn_file_stamp(other, &b) == -1 && errno == ENOENT, "a missing file is ENOENT");
	ok(!syn_file_stamp_fresh(NULL, &b), "no stamp: not fresh");
}

/* syn_file_lock: an exclusive lock, waited for within its bound. */
static void test_lock(void)
{
	struct timespec t0, t1;
	int a, b;
	long ms;

	a = syn_file_open(AT_FDCWD, top, 0);
	b = syn_file_open(AT_FDCWD, top, 0);
	ok(a >= 0 && b >= 0 && syn_file_lock(a, 0) == 0, "a free lock is taken at once");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = 0;
	ok(syn_file_lock(b, 150) == -1 && errno == ETIMEDOUT, "a held one: ETIMEDOUT");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	ok(ms >= 150, "after its bound, not before (%ld ms)", ms);
	close(a);
	ok(syn_file_lock(b, 0) == 0, "taken once its holder lets go");
	close(b);
	errno = 0;
	ok(syn_file_lock(-1, 100) == -1 && errno == EBADF, "a bad descriptor: EBADF, no wait");
}

int main(void)
{
	if (!mkdtemp(top))
		bail_out("mkdtemp");
	test_errors();
	test_read();
	test_atomic();
	test_concurrent();
	test_how();
	test_stamp();
	test_lock();
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
		if (system(cmd) != 0)
			diag("cannot remove %s", top);
	}
	return done_testing();
}
