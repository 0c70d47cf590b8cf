/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/shared/util.c: the plugins' own helper (see util.h): the removal
 * of a tree that a job may have written into.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/shared/util.h"

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
