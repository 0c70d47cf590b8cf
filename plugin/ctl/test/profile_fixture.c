/* SPDX-License-Identifier: GPL-2.0-or-later */
/* profile_fixture.c: see profile_fixture.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "plugin/ctl/test/profile_fixture.h"

int syn_test_put_profile(const char *store_dir, const char *key, int sensitive,
			 syn_error_t *err)
{
	syn_store_t *s;
	syn_profile_t p;
	int i, j, rv;

	memset(&p, 0, sizeof(p));
	snprintf(p.key, sizeof(p.key), "%s", key);
	p.n_cpu = 2;
	p.n_mem = 3;
	p.cpus[0] = 1;
	p.cpus[1] = 2;
	p.mem_gb[0] = 0;
	p.mem_gb[1] = 0.5;
	p.mem_gb[2] = 1;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			p.tput[i][j] = sensitive ? (i + 1) * (0.6 + 0.2 * j) : 1.0;
	p.prop_cpus = 1;
	p.prop_mem_gb = 1;
	s = syn_store_create(store_dir, SYN_STORE_CREATE, err);
	if (!s)
		return -1;
	rv = syn_store_put(s, &p, err);
	syn_store_destroy(s);
	return rv < 0 ? -1 : 0;
}
