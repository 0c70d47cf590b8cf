/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pack.t: coordl-pack round trip. Packing an ImageFolder (with a small
 * shard size, so several shards) and opening the index gives the same
 * items, labels and bytes as the original tree; a loader over the shards
 * delivers the same order as over the tree; bad arguments are rejected.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coordl.h"
#include "loader/source.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	const char *bd = getenv("top_builddir");
	char *dir = td_tmpdir("pack");
	char root[1024], cdx[1100], cmd[4096], pack[1100];
	coordl_error_t err = { "" };
	coordl__source_t *a, *b;
	int same = 1;

	snprintf(pack, sizeof(pack), "%s/tools/coordl-pack", bd ? bd : ".");
	if (access(pack, X_OK) != 0)
		skip_all("tools/coordl-pack not built");
	snprintf(root, sizeof(root), "%s/data", dir);
	snprintf(cdx, sizeof(cdx), "%s/packed.cdx", dir);
	if (td_imagefolder(root, 3, 9) < 0)
		bail_out("cannot write test data");

	snprintf(cmd, sizeof(cmd), "%s -q --shard-size=8K %s %s", pack, root, cdx);
	is_int(sh(cmd), 0, "coordl-pack packs an ImageFolder");
	a = coordl__source_open(root, COORDL_SOURCE_AUTO, &err);
	b = coordl__source_open(cdx, COORDL_SOURCE_AUTO, &err);
	ok(a && b, "original and packed datasets open (%s)", err.text);
	if (!a || !b)
		bail_out("cannot open datasets");
	snprintf(cmd, sizeof(cmd), "test $(ls %s/packed-*.cds | wc -l) -gt 1", dir);
	is_int(sh(cmd), 0, "an 8K shard size gives several shards");
	ok(coordl__source_count(a) == coordl__source_count(b) &&
	   coordl__source_bytes(a) == coordl__source_bytes(b) &&
	   coordl__source_classes(a) == coordl__source_classes(b),
	   "same item count, bytes and classes");
	for (size_t i = 0; i < coordl__source_count(a) && same; i++) {
		uint8_t *x = NULL, *y = NULL;
		size_t cx = 0, cy = 0, lx = 0, ly = 0;
		char why[128];
		if (coordl__source_fetch(a, i, &x, &cx, &lx, why, sizeof(why)) < 0 ||
		    coordl__source_fetch(b, i, &y, &cy, &ly, why, sizeof(why)) < 0 || lx != ly ||
		    memcmp(x, y, lx) != 0 || coordl__source_label(a, i) != coordl__source_label(b, i) ||
		    strcmp(coordl__source_item_name(a, i), coordl__source_item_name(b, i)) != 0)
			same = 0;
		free(x);
		free(y);
	}
	ok(same, "every item has the same label, name and bytes");
	is_str(coordl__source_class_name(b, 2), "c02", "class names kept");
	coordl__source_destroy(a);
	coordl__source_destroy(b);

	{
		coordl_config_t cfg;
		coordl_loader_t *l1, *l2;
		uint64_t i1[27], i2[27];
		coordl_config_init(&cfg);
		cfg.mode = COORDL_MODE_RAW;
		cfg.batch_size = 4;
		cfg.threads = 2;
		cfg.path = root;
		l1 = coordl_create(&cfg, &err);
		cfg.path = cdx;
		l2 = coordl_create(&cfg, &err);
		ok(l1 && l2 && td_run_epoch(l1, 1, i1, 27, NULL, 0) == 27 &&
		   td_run_epoch(l2, 1, i2, 27, NULL, 0) == 27 && memcmp(i1, i2, sizeof(i1)) == 0,
		   "a loader over the shards delivers the tree's order");
		coordl_destroy(l1);
		coordl_destroy(l2);
	}

	snprintf(cmd, sizeof(cmd), "%s -q %s %s/out.txt 2>/dev/null", pack, root, dir);
	ok(sh(cmd) != 0, "an output name without .cdx is rejected");
	snprintf(cmd, sizeof(cmd), "%s -q -s 0 %s %s 2>/dev/null", pack, root, cdx);
	ok(sh(cmd) != 0, "shard size 0 is rejected");
	snprintf(cmd, sizeof(cmd), "%s -q %s/none %s 2>/dev/null", pack, dir, cdx);
	ok(sh(cmd) != 0, "a missing dataset is rejected");
	snprintf(cmd, sizeof(cmd), "%s --help | grep -q Usage", pack);
	is_int(sh(cmd), 0, "--help prints usage");
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
