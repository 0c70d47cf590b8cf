/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodeconf.c: a node's GPUs, CPUs and memory from slurm.conf (nodeconf.h).
 *
 * slurm.conf lines are "Key=Value" words separated by blanks; a NodeName
 * line describes the nodes of its host list, and NodeName=DEFAULT sets
 * values for the lines after it. Only what the node agent needs is read:
 * CPUs, RealMemory, MemSpecLimit and the gpu count in Gres, and a node's
 * NodeAddr / NodeHostname. Include files are not followed (a site that
 * keeps its nodes in one sets NodeGPUs and NodeMemMB in synergy.conf; the
 * peers of its multi-node steps are then reached at their NodeNames). Host
 * lists expand one
 * bracket group per name, as Slurm writes node names with one number.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/shared/nodeconf.h"
#include "plugin/shared/slurmtext.h"
#include "plugin/shared/util.h"

/* 1 if name matches one host expression (no top-level comma). */
static int host_match(const char *expr, size_t len, const char *name)
{
	const char *lb = memchr(expr, '[', len), *rb;
	size_t plen, slen, nlen = strlen(name);
	const char *p;

	if (!lb)
		return len == nlen && strncmp(expr, name, len) == 0;
	rb = memchr(lb, ']', len - (size_t)(lb - expr));
	if (!rb)
		return 0;
	plen = (size_t)(lb - expr);
	slen = len - (size_t)(rb + 1 - expr);
	if (nlen < plen + slen || strncmp(name, expr, plen) != 0 ||
	    strncmp(name + nlen - slen, rb + 1, slen) != 0)
		return 0;
	/* The middle of name must be one of the ranges, same width when the
	 * range has leading zeros. */
	{
		const char *mid = name + plen;
		size_t mlen = nlen - plen - slen;
		char num[32];
		uint64_t v;

		if (mlen == 0 || mlen >= sizeof(num))
			return 0;
		memcpy(num, mid, mlen);
		num[mlen] = '\0';
		if (syn_parse_u64(num, 0, UINT32_MAX, &v) < 0)
			return 0;
		for (p = lb + 1; p < rb;) {
			const char *c = memchr(p, ',', (size_t)(rb - p));
			const char *e = c ? c : rb, *dash = memchr(p, '-', (size_t)(e - p));
			char a[32], b[32];
			uint64_t lo, hi;
			size_t al = (size_t)((dash ? dash : e) - p);

			if (al == 0 || al >= sizeof(a))
				return 0;
			memcpy(a, p, al);
			a[al] = '\0';
			if (syn_parse_u64(a, 0, UINT32_MAX, &lo) < 0)
				return 0;
			hi = lo;
			if (dash) {
				size_t bl = (size_t)(e - dash - 1);

				if (bl == 0 || bl >= sizeof(b))
					return 0;
				memcpy(b, dash + 1, bl);
				b[bl] = '\0';
				if (syn_parse_u64(b, 0, UINT32_MAX, &hi) < 0)
					return 0;
			}
			/* Zero-padded ranges ("01-16") fix the width, and a
			 * zero-padded name needs one. */
			if (v >= lo && v <= hi &&
			    (a[0] == '0' && al > 1 ? mlen == al : !(mid[0] == '0' && mlen > 1)))
				return 1;
			p = c ? c + 1 : rb;
		}
	}
	return 0;
}

int syn__hostlist_has(const char *list, const char *name)
{
	const char *p = list;
	int depth = 0;

	if (!list || !name || !*name)
		return 0;
	while (*p) {
		const char *q = p;

		for (depth = 0; *q && (depth || *q != ','); q++) {
			if (*q == '[')
				depth++;
			else if (*q == ']' && depth)
				depth--;
		}
		if (host_match(p, (size_t)(q - p), name))
			return 1;
		p = *q ? q + 1 : q;
	}
	return 0;
}

/* At most this many hosts in one host list (a bound on hostile input). */
#define HOSTLIST_MAX_HOSTS (1u << 20)

struct expand {
	int (*fn)(const char *name, void *arg);
	void *arg;
	size_t count;
};

static int einval(void)
{
	errno = EINVAL;
	return -1;
}

/* Expand one host expression (no top-level comma) of len bytes: a plain
 * name, or prefix[ranges]suffix with one bracket group. Returns 0, fn's
 * non-zero value, or -1 (EINVAL). */
static int expand_one(const char *expr, size_t len, struct expand *x)
{
	const char *lb = memchr(expr, '[', len), *rb, *p;
	char name[SYN__HOST_MAX + 1];
	int plen, slen, rc;

	if (len == 0)
		return einval();
	if (!lb) {
		if (len > SYN__HOST_MAX || memchr(expr, ']', len))
			return einval();
		memcpy(name, expr, len);
		name[len] = '\0';
		if (++x->count > HOSTLIST_MAX_HOSTS)
			return einval();
		return x->fn ? x->fn(name, x->arg) : 0;
	}
	rb = memchr(lb, ']', len - (size_t)(lb - expr));
	if (!rb || rb == lb + 1 || memchr(lb + 1, '[', (size_t)(rb - lb - 1)) ||
	    memchr(rb + 1, '[', len - (size_t)(rb + 1 - expr)) ||
	    memchr(rb + 1, ']', len - (size_t)(rb + 1 - expr)) || memchr(expr, ']', (size_t)(lb - expr)))
		return einval();
	plen = (int)(lb - expr);
	slen = (int)(len - (size_t)(rb + 1 - expr));
	for (p = lb + 1; p < rb;) {
		const char *c = memchr(p, ',', (size_t)(rb - p));
		const char *e = c ? c : rb, *dash = memchr(p, '-', (size_t)(e - p));
		char a[32], b[32];
		uint64_t lo, hi, v;
		size_t al = (size_t)((dash ? dash : e) - p);
		int width;

		if (al == 0 || al >= sizeof(a))
			return einval();
		memcpy(a, p, al);
		a[al] = '\0';
		if (syn_parse_u64(a, 0, UINT32_MAX, &lo) < 0)
			return einval();
		hi = lo;
		if (dash) {
			size_t bl = (size_t)(e - dash - 1);

			if (bl == 0 || bl >= sizeof(b))
				return einval();
			memcpy(b, dash + 1, bl);
			b[bl] = '\0';
			if (syn_parse_u64(b, 0, UINT32_MAX, &hi) < 0 || hi < lo)
				return einval();
		}
		/* "01-16": the width of the first number, as Slurm pads. */
		width = a[0] == '0' && al > 1 ? (int)al : 0;
		for (v = lo; v <= hi; v++) {
			int n;

			if (++x->count > HOSTLIST_MAX_HOSTS)
				return einval();
			n = snprintf(name, sizeof(name), "%.*s%0*llu%.*s", plen, expr, width,
				     (unsigned long long)v, slen, rb + 1);
			if (n < 0 || n > SYN__HOST_MAX)
				return einval();
			if (x->fn && (rc = x->fn(name, x->arg)) != 0)
				return rc;
		}
		p = c ? c + 1 : rb;
		if (c && p == rb)
			return einval();
	}
	return 0;
}

int syn__hostlist_foreach(const char *list, int (*fn)(const char *name, void *arg), void *arg)
{
	struct expand x = { fn, arg, 0 };
	const char *p = list;

	if (!list || !*list)
		return einval();
	for (;;) {
		const char *q = p;
		int depth = 0, rc;

		for (; *q && (depth || *q != ','); q++) {
			if (*q == '[')
				depth++;
			else if (*q == ']' && depth)
				depth--;
		}
		if ((rc = expand_one(p, (size_t)(q - p), &x)) != 0)
			return rc;
		if (!*q)
			return 0;
		p = q + 1;
	}
}

static int count_cb(const char *name, void *arg)
{
	(void)name;
	(*(size_t *)arg)++;
	return 0;
}

int syn__hostlist_count(const char *list)
{
	size_t n = 0;

	if (syn__hostlist_foreach(list, count_cb, &n) < 0)
		return -1;
	return (int)n;
}

struct nth {
	size_t k, i;
	char *buf;
	size_t len;
	int found;
};

static int nth_cb(const char *name, void *arg)
{
	struct nth *n = arg;

	if (n->i++ != n->k)
		return 0;
	n->found = 1;
	if (strlen(name) >= n->len)
		return 2;
	memcpy(n->buf, name, strlen(name) + 1);
	return 1;
}

int syn__hostlist_nth(const char *list, size_t k, char *buf, size_t len)
{
	struct nth n = { k, 0, buf, len, 0 };
	int rc = syn__hostlist_foreach(list, nth_cb, &n);

	if (rc < 0)
		return -1;
	if (rc == 2) {
		errno = ERANGE;
		return -1;
	}
	if (!n.found) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

struct pos {
	const char *name;
	size_t i;
};

static int pos_cb(const char *name, void *arg)
{
	struct pos *p = arg;

	if (strcmp(name, p->name) == 0)
		return 1;
	p->i++;
	return 0;
}

/* The value of key in the blank-separated words of line, copied to buf. */
static int word(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = line;

	while (*p) {
		const char *e;

		while (*p && isspace((unsigned char)*p))
			p++;
		e = p;
		while (*e && !isspace((unsigned char)*e))
			e++;
		if ((size_t)(e - p) > kl && strncasecmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t n = (size_t)(e - p) - kl - 1;

			if (n >= len)
				n = len - 1;
			memcpy(buf, p + kl + 1, n);
			buf[n] = '\0';
			return 1;
		}
		p = e;
	}
	return 0;
}

/* Apply the values a NodeName line sets. */
static int apply(const char *line, syn__node_conf_t *c, uint64_t *spec, char *err, size_t errlen)
{
	char v[512];
	uint64_t n;

	if (word(line, "CPUs", v, sizeof(v)) || word(line, "Procs", v, sizeof(v))) {
		if (syn_parse_u64(v, 1, 1u << 20, &n) < 0)
			goto bad;
		c->cpus = (uint32_t)n;
	}
	if (word(line, "RealMemory", v, sizeof(v))) {
		if (syn_parse_u64(v, 1, 1ULL << 40, &n) < 0)
			goto bad;
		c->mem_mb = n;
	}
	if (word(line, "MemSpecLimit", v, sizeof(v))) {
		if (syn_parse_u64(v, 0, 1ULL << 40, &n) < 0)
			goto bad;
		*spec = n;
	}
	if (word(line, "Gres", v, sizeof(v)))
		c->gpus = (uint32_t)syn__gres_gpus(v);
	return 0;
bad:
	if (err && errlen)
		snprintf(err, errlen, "slurm.conf: '%.60s' is not a number", v);
	errno = EINVAL;
	return -1;
}

/*
 * The next line of slurm.conf text at *pos into buf (len bytes), its
 * comment cut off; *pos moves past it. Lines that do not fit buf are
 * skipped (no NodeName line is that long). Returns 0 at the end of text.
 */
static int conf_line(const char **pos, char *buf, size_t len)
{
	while (*pos && **pos) {
		const char *line = *pos, *next = strchr(line, '\n');
		size_t l = next ? (size_t)(next - line) : strlen(line);
		char *hash;

		*pos = next ? next + 1 : NULL;
		if (l >= len)
			continue;
		memcpy(buf, line, l);
		buf[l] = '\0';
		if ((hash = strchr(buf, '#')))
			*hash = '\0';
		return 1;
	}
	return 0;
}

int syn__node_conf_parse(const char *text, const char *node, syn__node_conf_t *out,
			 char *err, size_t errlen)
{
	syn__node_conf_t dflt, found;
	uint64_t dspec = 0, fspec = 0;
	const char *cur;
	char buf[8192];
	char name[4096];
	int have = 0;

	memset(&dflt, 0, sizeof(dflt));
	memset(&found, 0, sizeof(found));
	for (cur = text; conf_line(&cur, buf, sizeof(buf));) {
		if (!word(buf, "NodeName", name, sizeof(name)))
			continue;
		if (strcasecmp(name, "DEFAULT") == 0) {
			if (apply(buf, &dflt, &dspec, err, errlen) < 0)
				return -1;
			continue;
		}
		if (!syn__hostlist_has(name, node))
			continue;
		found = dflt;
		fspec = dspec;
		if (apply(buf, &found, &fspec, err, errlen) < 0)
			return -1;
		have = 1;
	}
	if (!have) {
		if (err && errlen)
			snprintf(err, errlen, "slurm.conf names no node %s", node);
		errno = ENOENT;
		return -1;
	}
	if (found.mem_mb > fspec)
		found.mem_mb -= fspec;
	*out = found;
	return 0;
}

int syn__node_conf_read(const char *path, const char *node, syn__node_conf_t *out,
			char *err, size_t errlen)
{
	char *text = syn_file_read(AT_FDCWD, path, 4 << 20, 0, NULL);
	int rv;

	if (!text) {
		int e = errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	rv = syn__node_conf_parse(text, node, out, err, errlen);
	free(text);
	return rv;
}

int syn__node_addr_parse(const char *text, const char *node, char *addr, size_t len,
			 char *err, size_t errlen)
{
	char names[4096], list[4096], found_names[4096], found_list[4096];
	const char *cur;
	char buf[8192];
	int have = 0, n;
	struct pos pos = { node, 0 };

	found_list[0] = found_names[0] = '\0';
	for (cur = text; conf_line(&cur, buf, sizeof(buf));) {
		if (!word(buf, "NodeName", names, sizeof(names)) || strcasecmp(names, "DEFAULT") == 0 ||
		    !syn__hostlist_has(names, node))
			continue;
		if (!word(buf, "NodeAddr", list, sizeof(list)) &&
		    !word(buf, "NodeHostname", list, sizeof(list)))
			list[0] = '\0';
		snprintf(found_names, sizeof(found_names), "%s", names);
		snprintf(found_list, sizeof(found_list), "%s", list);
		have = 1;
	}
	if (!have) {
		if (err && errlen)
			snprintf(err, errlen, "slurm.conf names no node %s", node);
		errno = ENOENT;
		return -1;
	}
	if (!found_list[0]) {
		if (strlen(node) >= len) {
			errno = ERANGE;
			goto range;
		}
		memcpy(addr, node, strlen(node) + 1);
		return 0;
	}
	n = syn__hostlist_count(found_list);
	if (n == 1)
		pos.i = 0;
	else if (n < 1 || syn__hostlist_foreach(found_names, pos_cb, &pos) != 1 ||
		 pos.i >= (size_t)n) {
		if (err && errlen)
			snprintf(err, errlen, "slurm.conf: node %s: NodeAddr/NodeHostname '%.60s' "
				 "does not list one host per NodeName '%.60s'", node, found_list,
				 found_names);
		errno = EINVAL;
		return -1;
	}
	if (syn__hostlist_nth(found_list, pos.i, addr, len) == 0)
		return 0;
range:
	if (err && errlen)
		snprintf(err, errlen, "slurm.conf: node %s: its address does not fit %zu bytes",
			 node, len);
	errno = ERANGE;
	return -1;
}

struct of_host {
	const char *host;
	const char *hosts;   /* the line's NodeHostname list, "" for none */
	int nhosts;
	size_t i;            /* position in the line's NodeName list */
	int found;
	char name[SYN__HOST_MAX + 1];
};

static int of_host_cb(const char *node, void *arg)
{
	struct of_host *o = arg;
	char h[SYN__HOST_MAX + 1];
	const char *hn = node;

	if (o->hosts[0]) {
		if (syn__hostlist_nth(o->hosts, o->nhosts == 1 ? 0 : o->i, h, sizeof(h)) < 0)
			return 0; /* a short list: slurmd would refuse it */
		hn = h;
	}
	o->i++;
	/* host is short: a NodeHostname given with its domain matches too. */
	if (strncmp(hn, o->host, strlen(o->host)) != 0 ||
	    (hn[strlen(o->host)] != '\0' && hn[strlen(o->host)] != '.') ||
	    (o->found && strcmp(o->name, node) == 0))
		return 0;
	snprintf(o->name, sizeof(o->name), "%s", node);
	o->found++;
	return 0;
}

int syn__node_of_host(const char *text, const char *host, char *name, size_t len)
{
	struct of_host o = { .host = host };
	const char *cur;
	char buf[8192];

	for (cur = text; conf_line(&cur, buf, sizeof(buf));) {
		char names[4096], hosts[4096];

		if (!word(buf, "NodeName", names, sizeof(names)) || strcasecmp(names, "DEFAULT") == 0)
			continue;
		if (!word(buf, "NodeHostname", hosts, sizeof(hosts)))
			hosts[0] = '\0';
		o.hosts = hosts;
		o.nhosts = hosts[0] ? syn__hostlist_count(hosts) : 0;
		o.i = 0;
		if (hosts[0] && o.nhosts < 1)
			continue;
		syn__hostlist_foreach(names, of_host_cb, &o);
	}
	if (!o.found) {
		errno = ENOENT;
		return -1;
	}
	if (o.found > 1) {
		errno = EEXIST;
		return -1;
	}
	if (strlen(o.name) >= len) {
		errno = ERANGE;
		return -1;
	}
	memcpy(name, o.name, strlen(o.name) + 1);
	return 0;
}
