/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peers.c: the peers of a multi-node step's partitioned cache (peers.h).
 *
 * The hash is splitmix64's finaliser: every node computes the same value
 * from the same (job, step), on any architecture. An address goes into
 * the list only if the loader's parser takes it (synergy_env.h: a name of
 * [A-Za-z0-9._-], an IPv4 address, or an IPv6 address, bracketed here).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synergy_env.h"
#include "plugin/shared/nodeconf.h"
#include "plugin/node/peers.h"
#include "plugin/shared/util.h"

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t syn__peer_tag(uint32_t jobid, uint32_t stepid)
{
	uint64_t t = mix64(((uint64_t)jobid << 32) | stepid);

	return t ? t : 1;
}

int syn__peer_port(uint32_t jobid, uint32_t stepid, uint32_t index, uint32_t pmin,
		   uint32_t pmax)
{
	uint32_t range;

	if (pmin < 1 || pmin > pmax || pmax > 65535) {
		errno = EINVAL;
		return -1;
	}
	range = pmax - pmin + 1;
	if (index >= range) {
		errno = ERANGE;
		return -1;
	}
	/* Another constant than the tag's, so that port and tag do not
	 * follow each other. */
	return (int)(pmin + (uint32_t)((mix64((((uint64_t)jobid << 32) | stepid) ^
					      0x5bd1e9955bd1e995ULL) + index) % range));
}

/* 0 for a name or IPv4 address, 1 for an IPv6 address, -1 for neither. */
static int addr_kind(const char *a)
{
	const char *p;
	int colon = 0;

	if (!*a)
		return -1;
	for (p = a; *p; p++)
		colon |= *p == ':';
	for (p = a; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (colon ? !(isxdigit(c) || c == ':' || c == '.')
			  : !(isalnum(c) || c == '.' || c == '-' || c == '_'))
			return -1;
	}
	return colon;
}

struct build {
	const char *conf;
	uint32_t jobid, stepid, pmin, pmax, k;
	char *out;
	size_t used, cap;
	char *err;
	size_t errlen;
	int failed;
};

static int build_cb(const char *name, void *arg)
{
	struct build *b = arg;
	char addr[SYN__HOST_MAX + 1], why[200];
	int port, kind;
	size_t need;

	if (syn__node_addr_parse(b->conf, name, addr, sizeof(addr), why, sizeof(why)) < 0) {
		/* A node slurm.conf does not list (a dynamic node, a NodeName
		 * line in an Include file) is reached at its name, as Slurm's
		 * own default NodeAddr is. */
		if (errno != ENOENT) {
			b->failed = syn_errbuf(b->err, b->errlen, errno, "%s", why);
			return 1;
		}
		snprintf(addr, sizeof(addr), "%s", name);
	}
	if ((kind = addr_kind(addr)) < 0) {
		b->failed = syn_errbuf(b->err, b->errlen, EINVAL, "node %s: address '%.60s' is not a "
				 "host name or an IP address", name, addr);
		return 1;
	}
	if ((port = syn__peer_port(b->jobid, b->stepid, b->k, b->pmin, b->pmax)) < 0) {
		b->failed = syn_errbuf(b->err, b->errlen, errno, "node index %u has no port in "
				 "PeerPortMin..PeerPortMax (%u..%u)", b->k, b->pmin, b->pmax);
		return 1;
	}
	need = strlen(addr) + 10;
	if (b->used + need >= b->cap) {
		size_t cap = (b->cap + need) * 2;
		char *o = realloc(b->out, cap);
		if (!o) {
			b->failed = syn_errbuf(b->err, b->errlen, ENOMEM, "out of memory");
			return 1;
		}
		b->out = o;
		b->cap = cap;
	}
	b->used += (size_t)snprintf(b->out + b->used, b->cap - b->used, "%s%s%s%s:%d",
				    b->k ? "," : "", kind ? "[" : "", addr, kind ? "]" : "", port);
	b->k++;
	return 0;
}

char *syn__peers_format(const char *slurm_conf, const char *nodelist, uint32_t nnodes,
			uint32_t jobid, uint32_t stepid, uint32_t pmin, uint32_t pmax,
			char *err, size_t errlen)
{
	struct build b = { slurm_conf, jobid, stepid, pmin, pmax, 0, NULL, 0, 0, err, errlen, 0 };
	int n;

	if (!slurm_conf || !nodelist) {
		syn_errbuf(err, errlen, EINVAL, "no slurm.conf or node list");
		return NULL;
	}
	if (nnodes < 2 || nnodes > SYNERGY_PEERS_MAX) {
		syn_errbuf(err, errlen, EINVAL, "%u nodes: the partitioned cache takes 2..%d",
		     nnodes, SYNERGY_PEERS_MAX);
		return NULL;
	}
	if (pmin < 1 || pmin > pmax || pmax > 65535) {
		syn_errbuf(err, errlen, EINVAL, "PeerPortMin..PeerPortMax (%u..%u) is not a port range",
		     pmin, pmax);
		return NULL;
	}
	n = syn__hostlist_count(nodelist);
	if (n < 0 || (uint32_t)n != nnodes) {
		syn_errbuf(err, errlen, EINVAL, "node list '%.80s' does not name the step's %u nodes",
		     nodelist, nnodes);
		return NULL;
	}
	if (syn__hostlist_foreach(nodelist, build_cb, &b) != 0 || b.failed) {
		free(b.out);
		return NULL;
	}
	return b.out;
}
