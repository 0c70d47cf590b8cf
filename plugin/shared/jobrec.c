/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jobrec.c: the grant job_submit hands the node and the per-job records
 * in StateDir (see jobrec.h). Records are written by root into a directory
 * only root can write, and still parsed as strictly as the grant, which
 * passes through a user's job: a record that does not parse is no record.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "synergy_env.h"
#include "common/file.h"
#include "plugin/shared/jobrec.h"

/* 1 if s is exactly len lowercase hex digits. */
static int hex_valid(const char *s, size_t len)
{
	size_t n;

	if (!s)
		return 0;
	for (n = 0; s[n]; n++)
		if (n >= len || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == len;
}

int syn__nonce_valid(const char *s)
{
	return hex_valid(s, SYN__NONCE_LEN);
}

int syn__secret_valid(const char *s)
{
	return hex_valid(s, SYN__SECRET_HEX);
}

int syn__sluid_valid(const char *s)
{
	/* Crockford's base 32 as Slurm's print_sluid writes it. */
	static const char digits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	size_t n;

	if (!s || s[0] != 's')
		return 0;
	for (n = 1; s[n]; n++)
		if (n >= SYN__SLUID_LEN || !strchr(digits, s[n]))
			return 0;
	return n == SYN__SLUID_LEN;
}

int syn__grant_format(const syn__jobrec_t *r, char *buf, size_t len)
{
	int n;

	char nodes[24] = "";

	if (!r || !buf || !r->synergy || !syn_key_valid(r->key) || r->gpus < 1 ||
	    r->cache_mb > r->mem_mb || r->nodes > SYN__JOBREC_NODES_MAX ||
	    (r->profile[0] && !syn__nonce_valid(r->profile)) || (r->profile[0] && r->unprofiled) ||
	    (r->group[0] && !syn__group_valid(r->group, r->uid)) ||
	    (r->secret[0] && !syn__secret_valid(r->secret))) {
		errno = EINVAL;
		return -1;
	}
	if (r->nodes > 1)
		snprintf(nodes, sizeof(nodes), " nodes=%" PRIu32, r->nodes);
	n = snprintf(buf, len,
		     "key=%s uid=%" PRIu32 " gpus=%" PRIu32 " cpus=%" PRIu32 " mem_mb=%" PRIu64
		     " cache_mb=%" PRIu64 " want_cpus=%" PRIu32 " want_cache_mb=%" PRIu64
		     "%s%s%s%s%s%s%s%s",
		     r->key, r->uid, r->gpus, r->cpus, r->mem_mb, r->cache_mb, r->want_cpus,
		     r->want_cache_mb, nodes, r->profile[0] ? " profile=" : "", r->profile,
		     r->unprofiled ? " unprofiled=1" : "", r->group[0] ? " group=" : "", r->group,
		     r->secret[0] ? " secret=" : "", r->secret);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* One "name=value" field into r; seen is a bitmask of fields so far. */
static int field(syn__jobrec_t *r, const char *name, const char *val, unsigned *seen,
		 char *err, size_t errlen)
{
	static const char *const names[] = { "key", "uid", "gpus", "cpus", "mem_mb", "cache_mb",
					     "want_cpus", "want_cache_mb", "allotted",
					     "alloc_mem_mb", "hold_cache_mb", "profile", "group",
					     "nodes", "unprofiled", "cpu_ns", "cpu_at_ns",
					     "spare_milli", "harvest", "secret", "sluid" };
	const uint64_t mem_max = SYN__JOBREC_MEM_MAX;
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			break;
	if (i == sizeof(names) / sizeof(names[0]))
		return syn_errbuf(err, errlen, EINVAL, "unknown field '%.40s'", name);
	if (*seen & (1u << i))
		return syn_errbuf(err, errlen, EINVAL, "field '%s' given twice", name);
	*seen |= 1u << i;
	switch (i) {
	case 0:
		if (!syn_key_valid(val))
			return syn_errbuf(err, errlen, EINVAL, "key: '%.70s' is not a valid profile key", val);
		snprintf(r->key, sizeof(r->key), "%s", val);
		return 0;
	case 11:
		if (!syn__nonce_valid(val))
			return syn_errbuf(err, errlen, EINVAL, "profile: '%.40s' is not a claim nonce (%d hex digits)",
				    val, SYN__NONCE_LEN);
		snprintf(r->profile, sizeof(r->profile), "%s", val);
		return 0;
	case 12:
		/* Its uid is checked once the whole text is read. */
		if (strlen(val) > SYN__GROUP_MAX || !syn_key_valid(val))
			return syn_errbuf(err, errlen, EINVAL, "group: '%.70s' is not a group name", val);
		snprintf(r->group, sizeof(r->group), "%s", val);
		return 0;
	case 19:
		if (!syn__secret_valid(val))
			return syn_errbuf(err, errlen, EINVAL, "secret: not %d lowercase hex digits",
					 SYN__SECRET_HEX);
		snprintf(r->secret, sizeof(r->secret), "%s", val);
		return 0;
	case 20:
		if (!syn__sluid_valid(val))
			return syn_errbuf(err, errlen, EINVAL, "sluid: '%.40s' is not a SLUID", val);
		snprintf(r->sluid, sizeof(r->sluid), "%s", val);
		return 0;
	case 8:
		if (syn_cpus_parse(val, &r->allotted) < 0 || CPU_COUNT(&r->allotted) == 0)
			return syn_errbuf(err, errlen, EINVAL, "allotted: '%.70s' is not a CPU list", val);
		r->has_allotted = 1;
		return 0;
	default:
		break;
	}
	if (syn_parse_u64(val, (i == 13 || i == 14 || i == 18) ? 1 : 0,
			   i == 1 ? UINT32_MAX : i == 2 ? 1024 :
			   i == 13 ? SYN__JOBREC_NODES_MAX : (i == 14 || i == 18) ? 1 :
			   (i == 15 || i == 16) ? UINT64_MAX : i == 17 ? 1000ULL << 20 :
			   (i == 3 || i == 6) ? 1u << 20 : mem_max, &v) < 0)
		return syn_errbuf(err, errlen, EINVAL, "%s: '%.40s' is not a number in range", name, val);
	switch (i) {
	case 1: r->uid = (uint32_t)v; break;
	case 2: r->gpus = (uint32_t)v; break;
	case 3: r->cpus = (uint32_t)v; break;
	case 4: r->mem_mb = v; break;
	case 5: r->cache_mb = v; break;
	case 6: r->want_cpus = (uint32_t)v; break;
	case 7: r->want_cache_mb = v; break;
	case 9: r->alloc_mem_mb = v; break;
	case 10: r->hold_cache_mb = v; r->has_hold = 1; break;
	case 13: r->nodes = (uint32_t)v; break;
	case 14: r->unprofiled = 1; break;
	case 15: r->cpu_ns = v; r->has_cpu = 1; break;
	case 16: r->cpu_at_ns = v; r->has_cpu = 1; break;
	case 17: r->spare_milli = v; r->has_spare = 1; break;
	case 18: r->harvest = 1; break;
	}
	return 0;
}

/* The fields the node adds to a record, never in a grant. */
#define RECORD_ONLY ((1u << 8) | (1u << 9) | (1u << 10) | (1u << 15) | (1u << 16) | \
		     (1u << 17) | (1u << 18) | (1u << 20))

/* A grant (grant set: only what job_submit decides, and its key) or a
 * record. */
static int parse(const char *text, syn__jobrec_t *r, int grant, char *err, size_t errlen)
{
	char *copy, *tok, *save = NULL;
	unsigned seen = 0;
	int rv = -1;

	if (!text || !r) {
		errno = EINVAL;
		return -1;
	}
	memset(r, 0, sizeof(*r));
	if (strlen(text) >= SYN__JOBREC_MAX)
		return syn_errbuf(err, errlen, EINVAL, "longer than %d bytes", SYN__JOBREC_MAX);
	copy = strdup(text);
	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	for (tok = strtok_r(copy, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok) {
			syn_errbuf(err, errlen, EINVAL, "'%.40s' is not name=value", tok);
			goto out;
		}
		*eq = '\0';
		if (field(r, tok, eq + 1, &seen, err, errlen) < 0)
			goto out;
		if (grant && (seen & RECORD_ONLY)) {
			syn_errbuf(err, errlen, EINVAL, "'%.20s' is the node's, never in a grant", tok);
			goto out;
		}
	}
	if (grant && !(seen & 1u)) {
		syn_errbuf(err, errlen, EINVAL, "a grant needs key, uid and gpus");
		goto out;
	}
	/* A grant names its key, owner and GPUs (a job whose own CPU/memory
	 * request job_submit kept has no size: 0); a bare record (a job
	 * Synergy did not size, seen by lending) carries only what lending
	 * adds. */
	if (!(seen & (1u << 15)) != !(seen & (1u << 16))) {
		syn_errbuf(err, errlen, EINVAL, "cpu_ns and cpu_at_ns go together");
		goto out;
	}
	if (seen & 1u) {
		if ((seen & 0x7u) != 0x7u) {
			syn_errbuf(err, errlen, EINVAL, "a grant needs key, uid and gpus");
			goto out;
		}
		if (r->gpus < 1 || r->cache_mb > r->mem_mb) {
			syn_errbuf(err, errlen, EINVAL, "gpus must be >= 1 and cache_mb <= mem_mb");
			goto out;
		}
		if (r->group[0] && !syn__group_valid(r->group, r->uid)) {
			syn_errbuf(err, errlen, EINVAL, "group: '%s' is not a group of uid %" PRIu32, r->group,
			     r->uid);
			goto out;
		}
		if (r->unprofiled && r->profile[0]) {
			syn_errbuf(err, errlen, EINVAL, "unprofiled and profile together");
			goto out;
		}
		r->synergy = 1;
	} else if (seen & ~RECORD_ONLY) {
		syn_errbuf(err, errlen, EINVAL, "fields without a key");
		goto out;
	}
	rv = 0;
out:
	free(copy);
	if (rv < 0) {
		memset(r, 0, sizeof(*r));
		errno = EINVAL;
	}
	return rv;
}

int syn__jobrec_parse(const char *text, syn__jobrec_t *r, char *err, size_t errlen)
{
	return parse(text, r, 0, err, errlen);
}

int syn__grant_parse(const char *text, syn__jobrec_t *r, char *err, size_t errlen)
{
	return parse(text, r, 1, err, errlen);
}

int syn__state_dir_open(const char *dir, char *err, size_t errlen)
{
	char parent[SYN_PATH_MAX];
	char *slash;
	struct stat st;
	int fd;

	if (!dir || !syn_path_ok(dir)) {
		errno = EINVAL;
		if (err && errlen)
			snprintf(err, errlen, "StateDir '%s' is not a clean absolute path",
				 dir ? dir : "");
		return -1;
	}
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
			if (err && errlen)
				snprintf(err, errlen, "mkdir %s: %s", parent, strerror(errno));
			return -1;
		}
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		if (err && errlen)
			snprintf(err, errlen, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (err && errlen)
			snprintf(err, errlen, "open %s: %s", dir, strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		if (err && errlen)
			snprintf(err, errlen, "%s must be owned by root and writable by root only",
				 dir);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

int syn__node_lock(int dfd, const char *node, int timeout_ms)
{
	char name[SYN_KEY_MAX + 16];
	int fd;

	if (!syn_key_valid(node)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(name, sizeof(name), "%s.lock", node);
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (syn_file_lock(fd, timeout_ms) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int syn__jobrec_name(const char *node, uint32_t jobid, const char *suffix, char *buf,
		     size_t len)
{
	int n;

	if (!syn_key_valid(node)) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(buf, len, "%s.job_%" PRIu32 "%s", node, jobid, suffix ? suffix : "");
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int syn__jobrec_match(const char *name, const char *node, uint32_t *jobid)
{
	size_t nl = strlen(node);
	uint64_t v;

	if (strncmp(name, node, nl) != 0 || strncmp(name + nl, ".job_", 5) != 0 ||
	    syn_parse_u64(name + nl + 5, 1, UINT32_MAX, &v) < 0)
		return 0;
	*jobid = (uint32_t)v;
	return 1;
}

int syn__jobrec_read(int dfd, const char *node, uint32_t jobid, syn__jobrec_t *r, char *err,
		     size_t errlen)
{
	char name[SYN_KEY_MAX + 32], why[160];
	char *text;
	int rv;

	if (syn__jobrec_name(node, jobid, "", name, sizeof(name)) < 0)
		return -1;
	text = syn_file_read(dfd, name, SYN__JOBREC_MAX, 0, NULL);
	if (!text) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return -1;
	}
	rv = syn__jobrec_parse(text, r, why, sizeof(why));
	if (rv < 0 && err && errlen)
		snprintf(err, errlen, "%s: %s", name, why);
	free(text);
	if (rv < 0)
		errno = EINVAL;
	return rv;
}

int syn__jobrec_write(int dfd, const char *node, uint32_t jobid, const syn__jobrec_t *r)
{
	char name[SYN_KEY_MAX + 32], tmp[SYN_KEY_MAX + 48];
	char *text = NULL, *list = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int rv = -1, e;

	if (syn__jobrec_name(node, jobid, "", name, sizeof(name)) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	f = open_memstream(&text, &len);
	if (!f)
		return -1;
	if (r->synergy) {
		char grant[512];

		if (syn__grant_format(r, grant, sizeof(grant)) < 0)
			goto out;
		for (char *p = grant; *p; p++)
			if (*p == ' ')
				*p = '\n';
		fprintf(f, "%s\n", grant);
	}
	if (r->has_allotted) {
		if (!(list = syn_cpus_format_alloc(&r->allotted)))
			goto out;
		fprintf(f, "allotted=%s\n", list);
	}
	if (r->alloc_mem_mb)
		fprintf(f, "alloc_mem_mb=%" PRIu64 "\n", r->alloc_mem_mb);
	if (r->has_hold)
		fprintf(f, "hold_cache_mb=%" PRIu64 "\n", r->hold_cache_mb);
	if (r->has_cpu)
		fprintf(f, "cpu_ns=%" PRIu64 "\ncpu_at_ns=%" PRIu64 "\n", r->cpu_ns, r->cpu_at_ns);
	if (r->has_spare)
		fprintf(f, "spare_milli=%" PRIu64 "\n", r->spare_milli);
	if (r->harvest)
		fprintf(f, "harvest=1\n");
	if (r->sluid[0])
		fprintf(f, "sluid=%s\n", r->sluid);
	if (fclose(f) != 0) {
		f = NULL;
		goto out;
	}
	f = NULL;
	if (syn_file_write_atomic(dfd, name, text, len, 0600) < 0)
		goto out;
	rv = 0;
out:
	e = errno;
	if (f)
		fclose(f);
	free(text);
	free(list);
	errno = e;
	return rv;
}

int syn__jobrec_remove(int dfd, const char *node, uint32_t jobid)
{
	char name[SYN_KEY_MAX + 40];
	int rv = 0;

	if (syn__jobrec_name(node, jobid, "", name, sizeof(name)) < 0)
		return -1;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		rv = -1;
	if (syn__jobrec_name(node, jobid, ".json", name, sizeof(name)) < 0)
		return -1;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		rv = -1;
	return rv;
}

int syn__group_format(uint32_t uid, uint32_t array_job_id, const char *name, char *buf,
		      size_t len)
{
	int n;

	if (!buf || (name ? !syn__group_name_valid(name) : array_job_id == 0)) {
		errno = EINVAL;
		return -1;
	}
	if (name)
		n = snprintf(buf, len, SYNERGY_GROUP_NAMED_FMT, (unsigned)uid, name);
	else
		n = snprintf(buf, len, SYNERGY_GROUP_ARRAY_FMT, (unsigned)uid, (unsigned)array_job_id);
	if (n < 0 || (size_t)n >= len || n > SYN__GROUP_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int syn__group_valid(const char *group, uint32_t uid)
{
	char prefix[24], again[SYN__GROUP_MAX + 1];
	const char *rest;
	uint64_t id;
	size_t pl;

	if (!group || strlen(group) > SYN__GROUP_MAX)
		return 0;
	pl = (size_t)snprintf(prefix, sizeof(prefix), "u%u-", (unsigned)uid);
	if (strncmp(group, prefix, pl) != 0)
		return 0;
	rest = group + pl;
	if (strncmp(rest, "g-", 2) == 0)
		return syn__group_name_valid(rest + 2) &&
		       syn__group_format(uid, 0, rest + 2, again, sizeof(again)) == 0 &&
		       strcmp(again, group) == 0;
	/* An array job id, written as the format writes it (no leading 0). */
	if (rest[0] != 'a' || syn_parse_u64(rest + 1, 1, UINT32_MAX, &id) < 0 ||
	    syn__group_format(uid, (uint32_t)id, NULL, again, sizeof(again)) < 0)
		return 0;
	return strcmp(again, group) == 0;
}

#define GROUP_DIR_INFIX ".group_"

int syn__group_dir_name(const char *node, const char *group, char *buf, size_t len)
{
	int n;

	if (!buf || !syn_key_valid(node) || !group || strlen(group) > SYN__GROUP_MAX ||
	    !syn_key_valid(group)) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(buf, len, "%s" GROUP_DIR_INFIX "%s", node, group);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

const char *syn__group_dir_match(const char *name, const char *node)
{
	size_t nl, il = strlen(GROUP_DIR_INFIX);
	const char *g;

	if (!name || !node)
		return NULL;
	nl = strlen(node);
	if (strncmp(name, node, nl) != 0 || strncmp(name + nl, GROUP_DIR_INFIX, il) != 0)
		return NULL;
	g = name + nl + il;
	return strlen(g) <= SYN__GROUP_MAX && syn_key_valid(g) ? g : NULL;
}

int syn__group_members(int dfd, const char *node, const char *group)
{
	struct dirent *d;
	DIR *dir;
	int copy, n = 0;

	if (!node || !group || !group[0])
		return 0;
	copy = dup(dfd);
	if (copy < 0)
		return 0;
	dir = fdopendir(copy);
	if (!dir) {
		close(copy);
		return 0;
	}
	/* fdopendir shares the offset with dfd: start from the beginning. */
	rewinddir(dir);
	while ((d = readdir(dir))) {
		syn__jobrec_t r;
		uint32_t id;

		if (!syn__jobrec_match(d->d_name, node, &id) ||
		    strchr(d->d_name + strlen(node) + 1, '.'))
			continue;
		if (syn__jobrec_read(dfd, node, id, &r, NULL, 0) == 0 && strcmp(r.group, group) == 0)
			n++;
	}
	closedir(dir);
	return n;
}
