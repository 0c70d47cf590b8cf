/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake_tree.h: a directory tree that stands in for a cgroup filesystem in
 * the plugin's unit tests (cgroup.t, lendstate.t): files are written and
 * read back as the kernel would show them. Header-only, one per test.
 */
#ifndef SYN_TEST_FAKE_TREE_H
#define SYN_TEST_FAKE_TREE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tap.h"

static char top[64];

static void fake_tree_init(const char *name)
{
	snprintf(top, sizeof(top), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(top))
		bail_out("mkdtemp");
}


/* Write text to top/rel, creating the directories on the way. */
static void put(const char *rel, const char *text)
{
	char path[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	for (p = path + strlen(top) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		bail_out(path);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char path[1024], *p;

	snprintf(path, sizeof(path), "%s/%s/", top, rel);
	for (p = path + strlen(top) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
}

/* The contents of top/rel without the trailing newline ("" if absent). */
static const char *get(const char *rel)
{
	static char buf[8192];
	char path[1024];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return buf;
}

static void rm_rf(const char *path)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		diag("cleanup of %s failed", path);
}

#endif
