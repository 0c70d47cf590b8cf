/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * replay.c: run one fuzz target over its checked-in seed corpus as a unit
 * test, without clang or libFuzzer. Each target (tests/fuzz/fuzz_*.c,
 * loader/test/fuzz_*.c, profiler/test/fuzz_profile.c) is linked with this
 * main() and the code it tests; every file of tests/fuzz/corpus/TARGET
 * (FUZZ_CORPUS) is fed to LLVMFuzzerTestOneInput once, in a child process
 * with TMPDIR pointing at a scratch directory removed at the end. A target
 * abort()s when the parser breaks a promise, so a regression seed that
 * finds its bug again fails `make check`, naming the seed (and, in the
 * sanitizer build, so does a memory error). tests/fuzz/run-fuzz.sh is
 * still what fuzzes.
 */
#include "config.h"

#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The whole file, or NULL (errno set). */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0;

	*len = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (*len == cap) {
			uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		size_t n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		buf = NULL;
		errno = EIO;
	}
	fclose(f);
	return buf;
}

/* Remove what the targets left in the scratch directory. */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

/* Feed one seed to the target in a child process: a broken promise
 * (abort) or a sanitizer report ends only that child, and the seed is
 * named. Returns the child's wait status, or -1. */
static int run_seed(const uint8_t *data, size_t len)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		LLVMFuzzerTestOneInput(data, len);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

int main(void)
{
	const char *dir = FUZZ_CORPUS;
	char **names = NULL, tmp[] = "/tmp/fuzz-replay-XXXXXX";
	int n = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		printf("Bail out! %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (!mkdtemp(tmp) || setenv("TMPDIR", tmp, 1) < 0) {
		printf("Bail out! scratch directory %s: %s\n", tmp, strerror(errno));
		return 1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, sizeof *names * (size_t)(cap = cap ? 2 * cap : 16));
			if (!nn)
				return 1;
			names = nn;
		}
		if (!(names[n++] = strdup(e->d_name)))
			return 1;
	}
	closedir(d);
	ok(n > 0, "%s holds seeds (%d)", dir, n);
	qsort(names, (size_t)n, sizeof *names, name_cmp);
	fflush(stdout); /* the children must not print it again */
	for (int i = 0; i < n; i++) {
		char path[4096];
		size_t len;
		uint8_t *data;
		int st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!(data = slurp(path, &len))) {
			ok(0, "%s: read", names[i]);
			diag("%s: %s", path, strerror(errno));
			continue;
		}
		st = run_seed(data, len);
		if (!ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: no promise broken",
			names[i]))
			diag("%s: %s %d", path,
			     st < 0 ? "fork/wait failed" : WIFSIGNALED(st) ? "killed by signal" : "exit status",
			     st < 0 ? errno : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		free(data);
		free(names[i]);
	}
	free(names);
	nftw(tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
