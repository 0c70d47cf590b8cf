/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cores.t: choosing whole cores inside an allowed cpuset (plugin/cores.c),
 * on synthetic hwloc topologies so that the result does not depend on the
 * machine running the test.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "plugin/node/cores.h"

int main(void)
{
	char out[128];
	int n;

	/* 2 packages x 4 cores x 2 PUs: PUs 0-7 on package 0, 8-15 on package 1. */
	setenv("HWLOC_SYNTHETIC", "package:2 core:4 pu:2", 1);

	n = syn__pick_cores("0-15", 2, -1, out, sizeof(out));
	ok(n == 2 && strcmp(out, "0-3") == 0, "two whole cores in topology order (got %d '%s')", n, out);

	n = syn__pick_cores("6-11", 2, -1, out, sizeof(out));
	ok(n == 2 && strcmp(out, "6-9") == 0, "only allowed cores (got %d '%s')", n, out);

	n = syn__pick_cores("1,8", 8, -1, out, sizeof(out));
	ok(n == 2 && strcmp(out, "1,8") == 0,
	   "fewer allowed than asked: all allowed PUs, never outside (got %d '%s')", n, out);

	n = syn__pick_cores("0-15", 1, 3, out, sizeof(out));
	ok(n == 1 && strcmp(out, "0-1") == 0, "unknown GPU: no preference (got %d '%s')", n, out);

	errno = 0;
	ok(syn__pick_cores("garbage", 1, -1, out, sizeof(out)) == -1 && errno == EINVAL,
	   "malformed list refused");
	ok(syn__pick_cores("0-3", 0, -1, out, sizeof(out)) == -1 && errno == EINVAL,
	   "zero cores refused");
	ok(syn__pick_cores("64-70", 1, -1, out, sizeof(out)) == 7 && strcmp(out, "64-70") == 0,
	   "CPUs outside the topology are passed through as given");
	return done_testing();
}
