/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodeconf.t: a node's shape from slurm.conf (plugin/nodeconf.c): Slurm
 * host list expressions, NodeName=DEFAULT, the last matching line, Gres,
 * MemSpecLimit, and refusals.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/tap.h"
#include "plugin/shared/nodeconf.h"

static void test_hostlist(void)
{
	static const struct { const char *list, *name; int want; } t[] = {
		{ "n1", "n1", 1 }, { "n1", "n10", 0 }, { "n1,n2", "n2", 1 },
		{ "gpu[1-4]", "gpu3", 1 }, { "gpu[1-4]", "gpu5", 0 }, { "gpu[1-4]", "gpu", 0 },
		{ "gpu[01-16]", "gpu07", 1 }, { "gpu[01-16]", "gpu7", 0 }, { "gpu[1-16]", "gpu07", 0 },
		{ "gpu[1-2,7]x", "gpu7x", 1 }, { "gpu[1-2,7]x", "gpu7", 0 },
		{ "a[1-2],b[3-4]", "b4", 1 }, { "a[1-2],b[3-4]", "a3", 0 },
		{ "c1a2n[1-3]", "c1a2n2", 1 }, { "bad[1-", "bad1", 0 }, { "x[a-b]", "x1", 0 },
		{ "", "n1", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ok(syn__hostlist_has(t[i].list, t[i].name) == t[i].want, "'%s' %s '%s'", t[i].list,
		   t[i].want ? "has" : "lacks", t[i].name);
}

static void test_conf(void)
{
	static const char conf[] =
		"ClusterName=x\n"
		"NodeName=DEFAULT CPUs=16 RealMemory=64000 Gres=gpu:4\n"
		"NodeName=gpu[1-8] NodeAddr=1.2.3.4 MemSpecLimit=2000 # comment RealMemory=1\n"
		"NodeName=big1 CPUs=64 RealMemory=512000 Gres=gpu:a100:8(S:0-1),shard:8\n"
		"NodeName=gpu3 CPUs=32\n";
	syn__node_conf_t c = { 0, 0, 0 };
	char err[200];

	ok(syn__node_conf_parse(conf, "gpu2", &c, err, sizeof(err)) == 0 && c.cpus == 16 &&
	   c.gpus == 4 && c.mem_mb == 62000, "defaults, less MemSpecLimit (%u %u %llu)",
	   c.cpus, c.gpus, (unsigned long long)c.mem_mb);
	ok(syn__node_conf_parse(conf, "gpu3", &c, err, sizeof(err)) == 0 && c.cpus == 32 &&
	   c.gpus == 4 && c.mem_mb == 64000, "the last matching line wins over an earlier one");
	ok(syn__node_conf_parse(conf, "big1", &c, err, sizeof(err)) == 0 && c.cpus == 64 &&
	   c.gpus == 8 && c.mem_mb == 512000, "typed Gres with a socket list");
	ok(syn__node_conf_parse(conf, "gpu9", &c, err, sizeof(err)) == -1 && errno == ENOENT &&
	   strstr(err, "gpu9"), "an unknown node: ENOENT naming it");
	ok(syn__node_conf_parse("NodeName=n1 RealMemory=lots\n", "n1", &c, err, sizeof(err)) == -1 &&
	   errno == EINVAL && strstr(err, "lots"), "a bad number is refused by value");
}

/* Which NodeName runs on a host, as slurmd without -N finds its own. */
static void test_node_of_host(void)
{
	const char *conf =
		"NodeName=DEFAULT CPUs=8\n"
		"NodeName=gpu[01-03] NodeHostname=h[1-3] Gres=gpu:4\n"
		"NodeName=login # no NodeHostname: its own name\n"
		"NodeName=m1,m2 NodeHostname=big   # two slurmd on one host\n"
		"# NodeName=h9 NodeHostname=h9\n";
	char name[64];

	ok(syn__node_of_host(conf, "h2", name, sizeof(name)) == 0 && strcmp(name, "gpu02") == 0,
	   "h2 runs gpu02 (NodeHostname list by position)");
	ok(syn__node_of_host(conf, "login", name, sizeof(name)) == 0 && strcmp(name, "login") == 0,
	   "a node without NodeHostname runs on its own name");
	ok(syn__node_of_host(conf, "big", name, sizeof(name)) == -1 && errno == EEXIST,
	   "two nodes on one host: EEXIST (ambiguous)");
	ok(syn__node_of_host(conf, "h9", name, sizeof(name)) == -1 && errno == ENOENT,
	   "a commented-out line names nothing: ENOENT");
	ok(syn__node_of_host(conf, "h1", name, 3) == -1 && errno == ERANGE,
	   "a buffer too small: ERANGE");
	ok(syn__node_of_host("NodeName=g1 NodeHostname=h1.cluster.example\n", "h1", name,
			     sizeof(name)) == 0 && strcmp(name, "g1") == 0,
	   "a NodeHostname with its domain matches the short host name");
	ok(syn__node_of_host("NodeName=g1 NodeHostname=h10\n", "h1", name, sizeof(name)) == -1 &&
	   errno == ENOENT, "h1 is not h10");
	ok(syn__node_of_host("NodeName=a NodeHostname=x\nNodeName=a NodeHostname=x\n", "x", name,
			     sizeof(name)) == 0 && strcmp(name, "a") == 0,
	   "a node named twice is one node");
}

int main(void)
{
	test_hostlist();
	test_conf();
	test_node_of_host();
	return done_testing();
}
