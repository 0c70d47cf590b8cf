/*
 * nodeconf.c: a node's GPUs, CPUs and memory from slurm.conf (nodeconf.h).
 *
 * slurm.conf lines are "Key=Value" words separated by blanks; a NodeName
 * line describes the nodes of its host list, and NodeName=DEFAULT sets
 * values for the lines after it. Only what the node agent needs is read:
 * CPUs, RealMemory, MemSpecLimit and the gpu count in Gres. Include files
 * are not followed (a site that keeps its nodes in one sets NodeGPUs and
 * NodeMemMB in synergy.conf).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nodeconf.h"
#include "tuner.h"
#include "util.h"

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
		if (syn__parse_u64(num, 0, UINT32_MAX, &v) < 0)
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
			if (syn__parse_u64(a, 0, UINT32_MAX, &lo) < 0)
				return 0;
			hi = lo;
			if (dash) {
				size_t bl = (size_t)(e - dash - 1);

				if (bl == 0 || bl >= sizeof(b))
					return 0;
				memcpy(b, dash + 1, bl);
				b[bl] = '\0';
				if (syn__parse_u64(b, 0, UINT32_MAX, &hi) < 0)
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
		if (syn__parse_u64(v, 1, 1u << 20, &n) < 0)
			goto bad;
		c->cpus = (uint32_t)n;
	}
	if (word(line, "RealMemory", v, sizeof(v))) {
		if (syn__parse_u64(v, 1, 1ULL << 40, &n) < 0)
			goto bad;
		c->mem_mb = n;
	}
	if (word(line, "MemSpecLimit", v, sizeof(v))) {
		if (syn__parse_u64(v, 0, 1ULL << 40, &n) < 0)
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

int syn__node_conf_parse(const char *text, const char *node, syn__node_conf_t *out,
			 char *err, size_t errlen)
{
	syn__node_conf_t dflt, found;
	uint64_t dspec = 0, fspec = 0;
	const char *line, *next;
	char name[4096];
	int have = 0;

	memset(&dflt, 0, sizeof(dflt));
	memset(&found, 0, sizeof(found));
	for (line = text; line && *line; line = next) {
		char buf[8192], *hash;
		size_t len;

		next = strchr(line, '\n');
		len = next ? (size_t)(next - line) : strlen(line);
		if (next)
			next++;
		if (len >= sizeof(buf))
			continue;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if ((hash = strchr(buf, '#')))
			*hash = '\0';
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
	char *text = syn__read_file_at(AT_FDCWD, path, 4 << 20, NULL);
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
