/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peers.t: the partitioned cache's peers of a multi-node step (plugin/
 * peers.c, plugin/nodeconf.c): host list expansion in node index order,
 * a node's address from slurm.conf (NodeAddr, NodeHostname, positional
 * lists), ports that every node computes alike and that differ per node
 * index within the range, the tag, and refusals that name the bad input.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "common/conf.h"
#include "plugin/shared/nodeconf.h"
#include "plugin/node/peers.h"
#include "plugin/shared/util.h"

static int join_cb(const char *name, void *arg)
{
	char *buf = arg;

	if (strlen(buf) + strlen(name) + 2 > 256)
		return 1;
	if (*buf)
		strcat(buf, " ");
	strcat(buf, name);
	return 0;
}

static void test_expand(void)
{
	static const struct { const char *list, *want; } t[] = {
		{ "n1", "n1" },
		{ "n[1-3]", "n1 n2 n3" },
		{ "c1a2n[1-2],x", "c1a2n1 c1a2n2 x" },
		{ "gpu[08-10]", "gpu08 gpu09 gpu10" },
		{ "g[1,3-4]x", "g1x g3x g4x" },
		{ "b,a", "b a" },
	};
	static const char *const bad[] = { "", "n[1-", "n[]", "n[2-1]", "n[1-2][1-2]", "a,,b",
					   "n]1", "n[x]", "n[1,]" };
	char buf[300], one[32];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		buf[0] = '\0';
		ok(syn__hostlist_foreach(t[i].list, join_cb, buf) == 0 && strcmp(buf, t[i].want) == 0,
		   "'%s' expands to '%s' (got '%s')", t[i].list, t[i].want, buf);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(syn__hostlist_count(bad[i]) == -1 && errno == EINVAL, "'%s' is refused", bad[i]);
	is_int(syn__hostlist_count("n[1-1000],m[1-24]"), 1024, "count");
	ok(syn__hostlist_nth("n[1-3]", 2, one, sizeof(one)) == 0 && strcmp(one, "n3") == 0,
	   "nth 2 of n[1-3] is n3");
	ok(syn__hostlist_nth("n[1-3]", 3, one, sizeof(one)) == -1 && errno == ENOENT,
	   "nth past the end: ENOENT");
	ok(syn__hostlist_nth("node[1-3]", 0, one, 3) == -1 && errno == ERANGE,
	   "nth into a small buffer: ERANGE");
}

static const char conf[] =
	"NodeName=DEFAULT CPUs=2 NodeAddr=9.9.9.9\n"
	"NodeName=t1n[1-3] NodeHostname=build NodeAddr=127.0.0.1 Port=6001\n"
	"NodeName=r[1-2] NodeAddr=10.0.0.[5-6] # positional\n"
	"NodeName=h[1-2] NodeHostname=host[7-8]\n"
	"NodeName=plain\n"
	"NodeName=v6 NodeAddr=fe80::1\n"
	"NodeName=short[1-3] NodeAddr=10.1.1.[1-2]\n"
	"NodeName=odd NodeAddr=a/b\n";

static void test_addr(void)
{
	static const struct { const char *node, *want; } t[] = {
		{ "t1n2", "127.0.0.1" }, { "r2", "10.0.0.6" }, { "r1", "10.0.0.5" },
		{ "h2", "host8" }, { "plain", "plain" }, { "v6", "fe80::1" },
	};
	char addr[64], err[200];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ok(syn__node_addr_parse(conf, t[i].node, addr, sizeof(addr), err, sizeof(err)) == 0 &&
		   strcmp(addr, t[i].want) == 0, "%s is reached at %s (got '%s')", t[i].node,
		   t[i].want, addr);
	ok(syn__node_addr_parse(conf, "zz", addr, sizeof(addr), err, sizeof(err)) == -1 &&
	   errno == ENOENT && strstr(err, "zz"), "an unknown node: ENOENT naming it");
	ok(syn__node_addr_parse(conf, "short3", addr, sizeof(addr), err, sizeof(err)) == -1 &&
	   errno == EINVAL && strstr(err, "short3"), "a NodeAddr list shorter than NodeName: EINVAL");
}

static void test_ports(void)
{
	int seen[8] = { 0 }, distinct = 1, inrange = 1;
	uint32_t k;

	for (k = 0; k < 8; k++) {
		int p = syn__peer_port(42, 0, k, 30000, 30007);
		inrange &= p >= 30000 && p <= 30007;
		if (inrange && seen[p - 30000]++)
			distinct = 0;
	}
	ok(inrange && distinct, "8 nodes in a range of 8 ports take all 8, one each");
	is_int(syn__peer_port(42, 0, 3, 30000, 30999), syn__peer_port(42, 0, 3, 30000, 30999),
	       "the same (job, step, node) gives the same port");
	ok(syn__peer_port(42, 0, 0, 30000, 30999) != syn__peer_port(42, 1, 0, 30000, 30999) ||
	   syn__peer_port(42, 2, 0, 30000, 30999) != syn__peer_port(42, 1, 0, 30000, 30999),
	   "the next steps of a job move to other ports");
	ok(syn__peer_port(42, 0, 8, 30000, 30007) == -1 && errno == ERANGE,
	   "more nodes than ports: ERANGE");
	ok(syn__peer_port(42, 0, 0, 30001, 30000) == -1 && errno == EINVAL,
	   "min above max: EINVAL");
	ok(syn__peer_port(42, 0, 0, 0, 10) == -1 && errno == EINVAL, "port 0: EINVAL");
	ok(syn__peer_tag(42, 0) != 0 && syn__peer_tag(42, 0) == syn__peer_tag(42, 0) &&
	   syn__peer_tag(42, 0) != syn__peer_tag(42, 1) && syn__peer_tag(42, 0) != syn__peer_tag(43, 0),
	   "the tag is fixed by (job, step), never 0, and differs between steps and jobs");
}

static void test_format(void)
{
	char err[300], want[200];
	char *s;

	s = syn__peers_format(conf, "t1n[1-3]", 3, 7, 0, 40000, 40009, err, sizeof(err));
	snprintf(want, sizeof(want), "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
		 syn__peer_port(7, 0, 0, 40000, 40009), syn__peer_port(7, 0, 1, 40000, 40009),
		 syn__peer_port(7, 0, 2, 40000, 40009));
	ok(s && strcmp(s, want) == 0, "three nodes on one host: %s", s ? s : err);
	free(s);
	s = syn__peers_format(conf, "r[1-2],v6", 3, 7, 0, 40000, 40009, err, sizeof(err));
	ok(s && strncmp(s, "10.0.0.5:", 9) == 0 && strstr(s, ",10.0.0.6:") && strstr(s, ",[fe80::1]:"),
	   "positional addresses, IPv6 in brackets: %s", s ? s : err);
	free(s);
	ok(!syn__peers_format(conf, "t1n[1-3]", 2, 7, 0, 40000, 40009, err, sizeof(err)) &&
	   errno == EINVAL && strstr(err, "t1n[1-3]"), "a node list that is not the step's: %s", err);
	ok(!syn__peers_format(conf, "t1n1", 1, 7, 0, 40000, 40009, err, sizeof(err)) &&
	   errno == EINVAL, "one node: nothing to share (%s)", err);
	ok(!syn__peers_format(conf, "t1n[1-3]", 3, 7, 0, 40000, 40001, err, sizeof(err)) &&
	   errno == ERANGE && strstr(err, "40000..40001"), "more nodes than ports: %s", err);
	s = syn__peers_format(conf, "t1n1,zz", 2, 7, 0, 40000, 40009, err, sizeof(err));
	ok(s && strstr(s, ",zz:"), "a node slurm.conf does not name is reached at its name: %s",
	   s ? s : err);
	free(s);
	ok(!syn__peers_format(conf, "t1n1,short3", 2, 7, 0, 40000, 40009, err, sizeof(err)) &&
	   errno == EINVAL && strstr(err, "short3"), "a node whose NodeAddr list is short: %s", err);
	ok(!syn__peers_format(conf, "t1n1,odd", 2, 7, 0, 40000, 40009, err, sizeof(err)) &&
	   errno == EINVAL && strstr(err, "a/b"), "an address the loader would refuse: %s", err);
	ok(!syn__peers_format(conf, "t1n[1-2]", 2, 7, 0, 40009, 40000, err, sizeof(err)) &&
	   errno == EINVAL, "an inverted port range: %s", err);
}

static void test_conf_keys(void)
{
	syn_conf_t c;
	syn_error_t err;

	syn_conf_defaults(&c);
	ok(c.peer_port_min == SYN_CONF_PEER_PORT_MIN_DEFAULT &&
	   c.peer_port_max == SYN_CONF_PEER_PORT_MAX_DEFAULT, "default port range %u..%u",
	   c.peer_port_min, c.peer_port_max);
	ok(syn_conf_set(&c, "PeerPortMin", "31000", &err) == 0 &&
	   syn_conf_set(&c, "peerportmax", "31099", &err) == 0 &&
	   c.peer_port_min == 31000 && c.peer_port_max == 31099, "PeerPortMin/Max set");
	ok(syn_conf_set(&c, "PeerPortMax", "65536", &err) == -1 &&
	   strstr(err.text, "PeerPortMax") && c.peer_port_max == 31099,
	   "a port past 65535 is refused, naming the key, and changes nothing");
	ok(syn_conf_set(&c, "PeerPortMin", "-1", &err) == -1 &&
	   c.peer_port_min == 31000, "a negative port is refused");
}

int main(void)
{
	test_expand();
	test_addr();
	test_ports();
	test_format();
	test_conf_keys();
	return done_testing();
}
