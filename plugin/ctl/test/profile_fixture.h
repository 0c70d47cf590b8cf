/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profile_fixture.h: the 2x3 profile the controller's tests and
 * decide-bench put into a store of their own: 2 cores and 1 GB per GPU
 * double the throughput when sensitive, a flat 1.0 when not.
 */
#ifndef SYN_CTL_TEST_PROFILE_FIXTURE_H
#define SYN_CTL_TEST_PROFILE_FIXTURE_H

#include "common/store.h"

/* Put that profile of key into the store at store_dir (created when
 * missing). Returns 0, or -1 with err set. */
int syn_test_put_profile(const char *store_dir, const char *key, int sensitive,
			 syn_error_t *err);

#endif
