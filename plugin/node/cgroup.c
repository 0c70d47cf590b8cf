/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup.c: the cgroup layer (cgroup.h): version detection, Slurm's layouts,
 * /proc/<pid>/cgroup, the node's jobs, and the operations that are the same
 * on both versions but for file names and ordering. What differs in kind
 * (the v1 synergy child, v2's step user cgroups) is in cgroup_v1.c and
 * cgroup_v2.c.
 *
 * Control files are read whole (cpuset lists of large nodes are long) and
 * written with a single write(2), so that the kernel applies a value or
 * refuses it as a whole. Paths come only from the mountpoint, the layout
 * and names the kernel listed; a component of "." or ".." is never built.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/kv.h"
#include "plugin/node/cgroup_int.h"
#include "plugin/shared/jobrec.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define CG_FILE_MAX (1 << 20)
/* Depth of a job's subtree we walk (job/step/user/task is 3 below it). */
#define CG_MAX_DEPTH 8

/* ---- files ---- */

int syn__cg_path(const syn__cg_t *cg, const char *ctl, const char *rel, const char *file,
		 char *buf, size_t len)
{
	int n;

	if (cg->version == 1)
		n = snprintf(buf, len, "%s/%s%s%s%s%s", cg->mnt, ctl, rel && *rel ? "/" : "",
			     rel ? rel : "", file ? "/" : "", file ? file : "");
	else
		n = snprintf(buf, len, "%s%s%s%s%s", cg->mnt, rel && *rel ? "/" : "",
			     rel ? rel : "", file ? "/" : "", file ? file : "");
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

char *syn__cg_read_file(const char *path)
{
	size_t used;
	char *buf = syn_file_read(AT_FDCWD, path, CG_FILE_MAX, 0, &used);

	if (!buf)
		return NULL;
	while (used && (buf[used - 1] == '\n' || buf[used - 1] == ' '))
		buf[--used] = '\0';
	return buf;
}

int syn__cg_write_file(const char *path, const char *s, char *err, size_t errlen)
{
	size_t n = strlen(s);
	ssize_t w;
	int fd, e;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return syn_errbuf(err, errlen, errno ? errno : EIO, "open %s: %s", path,
				  strerror(errno));
	w = write(fd, s, n);
	e = errno;
	close(fd);
	if (w != (ssize_t)n)
		return syn_errbuf(err, errlen, w < 0 ? e : EIO, "writing '%.60s' to %s: %s", s,
				  path, w < 0 ? strerror(e) : "short write");
	return 0;
}

void syn__cg_free_list(char **list)
{
	size_t i;

	if (!list)
		return;
	for (i = 0; list[i]; i++)
		free(list[i]);
	free(list);
}

/* ---- configuration and detection ---- */

int syn__cg_read_slurm_conf(const char *path, syn__cg_slurm_conf_t *out)
{
	const char *v;
	syn_kv_t *kv;
	char *text;
	int b;

	memset(out, 0, sizeof(*out));
	text = syn__cg_read_file(path);
	if (!text)
		return -1;
	/* Slurm's file, read as Slurm reads it: lines this layer has no use
	 * for ("Include", keys of later Slurm versions) are not errors. */
	kv = syn_kv_parse(text, path, SYN_KV_LENIENT, NULL);
	free(text);
	if (!kv)
		return -1;
	if ((v = syn_kv_get(kv, NULL, "CgroupPlugin")))
		snprintf(out->plugin, sizeof(out->plugin), "%s", v);
	if ((v = syn_kv_get(kv, NULL, "CgroupMountpoint")))
		snprintf(out->mountpoint, sizeof(out->mountpoint), "%s", v);
	if ((v = syn_kv_get(kv, NULL, "CgroupPrepend")))
		snprintf(out->prepend, sizeof(out->prepend), "%s", v);
	if ((v = syn_kv_get(kv, NULL, "CgroupSlice")))
		snprintf(out->slice, sizeof(out->slice), "%s", v);
	/* Slurm's own booleans: yes/no, true/false, 1/0; anything else is
	 * Slurm's error to report, and means "no" here. */
	if ((v = syn_kv_get(kv, NULL, "CgroupJobIdPaths")) && syn_parse_bool(v, &b) == 0)
		out->job_id_paths = b;
	syn_kv_destroy(kv);
	return 0;
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 if the space-separated list has word. */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (p && *p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\0' || p[n] == '\n'))
			return 1;
		p = strchr(p, ' ');
	}
	return 0;
}

/* The version mounted at mnt, as Slurm's autodetect decides it; on a tree
 * that is no cgroup filesystem (tests) by what is in it. 0: none. */
static int detect_version(const char *mnt)
{
	char path[SYN_PATH_MAX + 32];
	struct statfs fs;

	if (statfs(mnt, &fs) == 0 && (unsigned long)fs.f_type == CGROUP2_SUPER_MAGIC)
		return 2;
	snprintf(path, sizeof(path), "%s/systemd", mnt);
	if (statfs(path, &fs) == 0) {
		if ((unsigned long)fs.f_type == CGROUP2_SUPER_MAGIC)
			return 2;
		if ((unsigned long)fs.f_type == CGROUP_SUPER_MAGIC)
			return 1;
	}
	snprintf(path, sizeof(path), "%s/cgroup.controllers", mnt);
	if (access(path, F_OK) == 0)
		return 2;
	snprintf(path, sizeof(path), "%s/cpuset", mnt);
	if (is_dir(path))
		return 1;
	return 0;
}

/* 1 if rel is a clean relative path (no "." or ".." component, no "//",
 * no leading or trailing '/'), short enough for a layout. */
static int clean_rel(const char *rel)
{
	char path[SYN_PATH_MAX + 2];
	size_t n = strlen(rel);

	if (!n || rel[0] == '/' || rel[n - 1] == '/' ||
	    (size_t)snprintf(path, sizeof(path), "/%s", rel) >= sizeof(path))
		return 0;
	return syn_path_ok(path);
}

/*
 * Where a mount point of the unified hierarchy is rooted (the fourth field
 * of /proc/1/mountinfo: "/" unless PID 1 sees a cgroup namespace whose
 * root is below the hierarchy's), into out. 0, or -1 when no line mounts
 * mnt.
 */
static int init_mount_root(const char *mnt, char *out, size_t len)
{
	char *text = syn__cg_read_file("/proc/1/mountinfo"), *line, *save = NULL;
	int rv = -1;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *p = line;
		int i;

		/* id parent major:minor root mount-point options... */
		for (i = 0; i < 5 && p; i++) {
			f[i] = p;
			p = strchr(p, ' ');
			if (p)
				*p++ = '\0';
		}
		if (i == 5 && strcmp(f[4], mnt) == 0 && f[3][0] == '/') {
			snprintf(out, len, "%s", f[3]);
			rv = 0;
		}
	}
	free(text);
	return rv;
}

/*
 * PID 1's cgroup (given, or read from /proc/1/cgroup) and the prefix Slurm
 * 23.02.1+ puts before its slice (cgroup.h): the parent of PID 1's cgroup
 * ("/init.scope" on a host: the root; "/docker.slice/docker-X.scope/
 * init.scope" in a container without a cgroup namespace), after the mount's
 * own root is taken off it, as Slurm's _get_init_cg_path does. A PID 1 in
 * the root cgroup itself gives "". Unknown (not readable): both "".
 */
static void init_prefix(syn__cg_t *cg, const char *given)
{
	char path[SYN_PATH_MAX], root[SYN_PATH_MAX], *text, *slash;
	size_t rl;

	cg->init_cg[0] = cg->prefix[0] = '\0';
	if (given) {
		snprintf(path, sizeof(path), "%s", given);
	} else {
		text = syn__cg_read_file("/proc/1/cgroup");
		if (!text || syn__cg_proc_path(text, NULL, path + 1, sizeof(path) - 1) < 0) {
			free(text);
			return;
		}
		free(text);
		path[0] = '/';
		if (init_mount_root(cg->mnt, root, sizeof(root)) == 0 && strcmp(root, "/") != 0) {
			rl = strlen(root);
			if (strncmp(path, root, rl) == 0 && (path[rl] == '/' || !path[rl]))
				memmove(path, path + rl, strlen(path + rl) + 1);
			if (!path[0])
				snprintf(path, sizeof(path), "/");
		}
	}
	if (path[0] != '/' || !syn_path_ok(path))
		return;
	snprintf(cg->init_cg, sizeof(cg->init_cg), "%s", path);
	slash = strrchr(path, '/');
	*slash = '\0';
	/* The rest has no leading '/': a path relative to the mount. */
	snprintf(cg->prefix, sizeof(cg->prefix), "%s", path[0] ? path + 1 : "");
}

syn__cg_t *syn__cg_open(const syn__cg_opts_t *o, char *err, size_t errlen)
{
	char path[SYN_PATH_MAX + 64];
	syn__cg_t *cg;
	const char *mnt;
	char *ctl;
	int want = 0, e;

	if (!o || !o->node || !syn_key_valid(o->node)) {
		syn_errbuf(err, errlen, EINVAL, "cgroup: node name '%.64s' is not a valid NodeName",
			   o && o->node ? o->node : "");
		return NULL;
	}
	mnt = o->mountpoint && *o->mountpoint ? o->mountpoint : "/sys/fs/cgroup";
	if (!syn_path_ok(mnt)) {
		syn_errbuf(err, errlen, EINVAL,
			   "cgroup: mountpoint '%.100s' is not an absolute path", mnt);
		return NULL;
	}
	if (o->root && *o->root) {
		int n = snprintf(path, sizeof(path), "/%s", o->root + (o->root[0] == '/'));

		if (n < 0 || (size_t)n >= sizeof(path) || !syn_path_ok(path)) {
			syn_errbuf(err, errlen, EINVAL, "cgroup: root '%.100s' is not a clean path",
				   o->root);
			return NULL;
		}
	}
	if (o->slice && *o->slice && !clean_rel(o->slice)) {
		syn_errbuf(err, errlen, EINVAL,
			   "cgroup: CgroupSlice '%.100s' is not a clean relative path", o->slice);
		return NULL;
	}
	if (o->plugin && *o->plugin && strcasecmp(o->plugin, "autodetect") != 0) {
		if (strcasecmp(o->plugin, "cgroup/v1") == 0)
			want = 1;
		else if (strcasecmp(o->plugin, "cgroup/v2") == 0)
			want = 2;
		else {
			syn_errbuf(err, errlen, ENOTSUP, "cgroup: CgroupPlugin=%.40s is not "
				   "cgroup/v1, cgroup/v2 or autodetect", o->plugin);
			return NULL;
		}
	}
	cg = calloc(1, sizeof(*cg));
	if (!cg) {
		syn_errbuf(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(cg->mnt, sizeof(cg->mnt), "%s", mnt);
	while (strlen(cg->mnt) > 1 && cg->mnt[strlen(cg->mnt) - 1] == '/')
		cg->mnt[strlen(cg->mnt) - 1] = '\0';
	snprintf(cg->node, sizeof(cg->node), "%s", o->node);
	if (gethostname(cg->host, sizeof(cg->host)) < 0)
		cg->host[0] = '\0';
	cg->host[sizeof(cg->host) - 1] = '\0';
	cg->host[strcspn(cg->host, ".")] = '\0';
	if (o->root && *o->root)
		snprintf(cg->root, sizeof(cg->root), "%s", o->root + (o->root[0] == '/'));
	snprintf(cg->slice, sizeof(cg->slice), "%s",
		 o->slice && *o->slice ? o->slice : "system.slice");
	cg->job_id_paths = o->job_id_paths;
	cg->version = want ? want : detect_version(cg->mnt);
	if (cg->version == 2)
		init_prefix(cg, o->init_cgroup);
	switch (cg->version) {
	case 1:
		snprintf(path, sizeof(path), "%s/cpuset", cg->mnt);
		if (!is_dir(path)) {
			syn_errbuf(err, errlen, ENOTSUP, "cgroup v1: no cpuset hierarchy at %s",
				   path);
			goto fail;
		}
		snprintf(path, sizeof(path), "%s/memory", cg->mnt);
		if (!is_dir(path)) {
			syn_errbuf(err, errlen, ENOTSUP, "cgroup v1: no memory hierarchy at %s",
				   path);
			goto fail;
		}
		break;
	case 2:
		snprintf(path, sizeof(path), "%s/cgroup.controllers", cg->mnt);
		ctl = syn__cg_read_file(path);
		if (!ctl) {
			syn_errbuf(err, errlen, ENOTSUP, "cgroup v2: cannot read %s: %s", path,
				   strerror(errno));
			goto fail;
		}
		if (!has_word(ctl, "cpuset") || !has_word(ctl, "memory")) {
			syn_errbuf(err, errlen, ENOTSUP,
				   "cgroup v2: %s offers '%.80s', not both cpuset and memory", path,
				   ctl);
			free(ctl);
			goto fail;
		}
		free(ctl);
		break;
	default:
		syn_errbuf(err, errlen, ENOTSUP,
			   "cgroup: neither a cgroup v2 nor a v1 cpuset hierarchy at %s", cg->mnt);
		goto fail;
	}
	return cg;
fail:
	e = errno;
	free(cg);
	errno = e;
	return NULL;
}

syn__cg_t *syn__cg_open_conf(const struct syn_conf *conf, const char *node, char *used_conf,
			     size_t used_len, char *err, size_t errlen)
{
	char path[SYN_PATH_MAX + 16];
	const char *file = conf->cgroup_conf, *slurm_conf, *slash;
	syn__cg_slurm_conf_t sc;
	syn__cg_t *cg;
	syn__cg_opts_t o;

	if (!file[0]) {
		slurm_conf = getenv("SLURM_CONF");
		if (!slurm_conf || !(slash = strrchr(slurm_conf, '/'))) {
			slurm_conf = "/etc/slurm/slurm.conf";
			slash = strrchr(slurm_conf, '/');
		}
		snprintf(path, sizeof(path), "%.*s/cgroup.conf", (int)(slash - slurm_conf),
			 slurm_conf);
		file = path;
	}
	if (used_conf && used_len)
		snprintf(used_conf, used_len, "%s", file);
	if (syn__cg_read_slurm_conf(file, &sc) < 0 && errno != ENOENT) {
		syn_errbuf(err, errlen, errno ? errno : EIO, "cgroup: cannot read %s: %s", file,
			   strerror(errno));
		return NULL;
	}
	memset(&o, 0, sizeof(o));
	o.node = node;
	o.plugin = sc.plugin;
	o.mountpoint = sc.mountpoint;
	o.root = conf->cgroup_root[0] ? conf->cgroup_root : sc.prepend;
	o.slice = sc.slice;
	o.job_id_paths = sc.job_id_paths;
	cg = syn__cg_open(&o, err, errlen);
	/* Name the file: a bad CgroupSlice is the admin's to fix there. */
	if (!cg && errno == EINVAL && sc.slice[0] && strstr(err, "CgroupSlice")) {
		size_t n = strlen(err);

		snprintf(err + n, errlen > n ? errlen - n : 0, " (in %s)", file);
		errno = EINVAL;
	}
	return cg;
}

void syn__cg_close(syn__cg_t *cg)
{
	int e = errno;

	free(cg);
	errno = e;
}

int syn__cg_version(const syn__cg_t *cg) { return cg->version; }

const char *syn__cg_mountpoint(const syn__cg_t *cg) { return cg->mnt; }

const char *syn__cg_node(const syn__cg_t *cg) { return cg->node; }

const char *syn__cg_root(const syn__cg_t *cg) { return cg->root; }

const char *syn__cg_slice(const syn__cg_t *cg) { return cg->slice; }

const char *syn__cg_init_cgroup(const syn__cg_t *cg) { return cg->init_cg; }

const char *syn__cg_init_prefix(const syn__cg_t *cg) { return cg->prefix; }

int syn__cg_job_id_paths(const syn__cg_t *cg) { return cg->job_id_paths; }

/* ---- layouts ---- */

/* Expand %n and %h of pattern into out. */
static int expand(const syn__cg_t *cg, const char *pattern, char *out, size_t len)
{
	size_t used = 0;
	const char *p;

	for (p = pattern; *p; p++) {
		const char *ins = NULL;
		char one[2] = { *p, '\0' };
		size_t n;

		if (*p == '%' && p[1] == 'n')
			ins = cg->node;
		else if (*p == '%' && p[1] == 'h')
			ins = cg->host;
		if (ins)
			p++;
		else
			ins = one;
		n = strlen(ins);
		if (used + n + 1 > len) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(out + used, ins, n);
		used += n;
	}
	out[used] = '\0';
	return 0;
}

/* The v2 slices that may hold the node's scope, in order: under PID 1's
 * parent (23.02.1+) and, when that is not the root, at the root (22.05). */
static int v2_bases(const syn__cg_t *cg, char base[2][SYN_PATH_MAX * 2])
{
	int n = 0;

	if (cg->prefix[0])
		snprintf(base[n++], sizeof(base[0]), "%s/%s", cg->prefix, cg->slice);
	snprintf(base[n++], sizeof(base[0]), "%s", cg->slice);
	return n;
}

int syn__cg_node_candidate(const syn__cg_t *cg, int i, char *out, size_t len)
{
	static const char *const v1[] = { "slurm_%n", "slurm" };
	static const char *const scope[] = { "%n_slurmstepd.scope", "slurmstepd.scope" };
	char base[2][SYN_PATH_MAX * 2], pattern[SYN_PATH_MAX * 3];
	int nb;

	if (i < 0) {
		errno = ENOENT;
		return -1;
	}
	if (cg->root[0] || cg->version == 1) {
		if (i >= (cg->root[0] ? 1 : 2)) {
			errno = ENOENT;
			return -1;
		}
		return expand(cg, cg->root[0] ? cg->root : v1[i], out, len);
	}
	nb = v2_bases(cg, base);
	if (i >= nb * 2) {
		errno = ENOENT;
		return -1;
	}
	if ((size_t)snprintf(pattern, sizeof(pattern), "%s/%s", base[i / 2], scope[i % 2]) >=
	    sizeof(pattern)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return expand(cg, pattern, out, len);
}

int syn__cg_node_path(const syn__cg_t *cg, char *out, size_t len)
{
	char dir[SYN_PATH_MAX * 3];
	int i;

	for (i = 0; syn__cg_node_candidate(cg, i, out, len) == 0; i++) {
		if (syn__cg_path(cg, "cpuset", out, NULL, dir, sizeof(dir)) == 0 && is_dir(dir))
			return 0;
	}
	if (errno != ENOENT || syn__cg_node_candidate(cg, 0, out, len) < 0)
		return -1;
	errno = ENOENT;
	return -1;
}

int syn__cg_job_path(const syn__cg_t *cg, uint32_t jobid, uid_t uid, char *out, size_t len)
{
	char node[SYN_PATH_MAX];
	int n;

	if (syn__cg_node_path(cg, node, sizeof(node)) < 0)
		return -1;
	if (cg->version == 1)
		n = snprintf(out, len, "%s/uid_%u/job_%u", node, (unsigned)uid, (unsigned)jobid);
	else
		n = snprintf(out, len, "%s/job_%u", node, (unsigned)jobid);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* "prefix<digits>" -> 1 and the number, else 0. */
static int numbered(const char *name, const char *prefix, uint32_t *out)
{
	size_t plen = strlen(prefix);
	uint64_t v;

	if (strncmp(name, prefix, plen) != 0 || syn_parse_u64(name + plen, 0, UINT32_MAX, &v) < 0)
		return 0;
	*out = (uint32_t)v;
	return 1;
}

/* 1 if the len bytes at name are a SLUID. */
static int sluid_at(const char *name, size_t len)
{
	char buf[SYN__SLUID_LEN + 1];

	if (len != SYN__SLUID_LEN)
		return 0;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return syn__sluid_valid(buf);
}

int syn__cg_node_of_job(const syn__cg_t *cg, const char *job_rel, char *out, size_t len)
{
	char *slash;
	uint32_t num;
	int i, levels = cg->version == 1 ? 2 : 1;

	if ((size_t)snprintf(out, len, "%s", job_rel) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (i = 0; i < levels; i++) {
		slash = strrchr(out, '/');
		if (!slash || slash == out ||
		    !(numbered(slash + 1, i == 0 ? "job_" : "uid_", &num) ||
		      (cg->version == 2 && syn__sluid_valid(slash + 1)))) {
			errno = EINVAL;
			return -1;
		}
		*slash = '\0';
	}
	return 0;
}

int syn__cg_job_sluid(const char *job_rel, char *out, size_t len)
{
	const char *slash = strrchr(job_rel, '/'), *name = slash ? slash + 1 : job_rel;

	if (!syn__sluid_valid(name)) {
		errno = ENOENT;
		return -1;
	}
	if ((size_t)snprintf(out, len, "%s", name) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * The line of controller (NULL: the v2 "0::" line) in a /proc/<pid>/cgroup
 * text: a pointer to its path (at the '/') and, in *end, where it ends.
 * NULL when there is no such line or its path is not absolute.
 */
static const char *find_line(const char *text, const char *controller, const char **end)
{
	const char *line, *next;
	size_t clen = controller ? strlen(controller) : 0;

	for (line = text; line && *line; line = next) {
		const char *c1, *c2, *e, *ctl;

		next = strchr(line, '\n');
		e = next ? next : line + strlen(line);
		if (next)
			next++;
		/* "hierarchy-id:controller,list:/path" */
		c1 = memchr(line, ':', (size_t)(e - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(e - c1 - 1)) : NULL;
		if (!c2)
			continue;
		if (!controller) {
			/* The v2 line: hierarchy 0, no controllers. */
			if (c1 - line != 1 || line[0] != '0' || c2 != c1 + 1)
				continue;
		} else {
			for (ctl = c1 + 1; ctl < c2;) {
				const char *comma = memchr(ctl, ',', (size_t)(c2 - ctl));
				const char *cend = comma ? comma : c2;
				if ((size_t)(cend - ctl) == clen && memcmp(ctl, controller, clen) == 0)
					break;
				ctl = comma ? comma + 1 : c2;
			}
			if (ctl >= c2)
				continue;
		}
		if (c2 + 1 >= e || c2[1] != '/')
			return NULL;
		*end = e;
		return c2 + 1;
	}
	return NULL;
}

int syn__cg_parse_proc(const char *proc_cgroup, const char *controller, uint32_t jobid,
		       char *out, size_t outlen)
{
	const char *path, *end, *hit;
	char want[32];
	size_t len;
	int wlen;

	if (!proc_cgroup || !out) {
		errno = EINVAL;
		return -1;
	}
	path = find_line(proc_cgroup, controller && *controller ? controller : NULL, &end);
	if (!path) {
		errno = ENOENT;
		return -1;
	}
	wlen = snprintf(want, sizeof(want), "/job_%u", (unsigned)jobid);
	/* "//job_1" names the same cgroup as "/job_1"; the result must stay
	 * relative, so skip every leading slash but the last. */
	while (path + 1 < end && path[1] == '/')
		path++;
	/* Find "/job_<id>" followed by '/' or the end of the line. */
	for (hit = path; (hit = strstr(hit, want)) && hit < end; hit++) {
		const char *after = hit + wlen;
		if (after == end || *after == '/')
			break;
	}
	if (hit && hit < end) {
		len = (size_t)(hit + wlen - (path + 1));
	} else if (!controller || !*controller) {
		/* Slurm 26.05 names the job's directory by its SLUID: the
		 * last "/<SLUID>/step_" of the line (cgroup.h). */
		const char *c, *job = NULL;

		for (c = path; c < end; c++) {
			const char *next = memchr(c + 1, '/', (size_t)(end - c - 1));

			if (*c != '/' || !next)
				continue;
			if (sluid_at(c + 1, (size_t)(next - c - 1)) &&
			    (size_t)(end - next) > 6 && strncmp(next, "/step_", 6) == 0)
				job = next;
		}
		if (!job) {
			errno = ENOENT;
			return -1;
		}
		len = (size_t)(job - (path + 1));
	} else {
		errno = ENOENT;
		return -1;
	}
	if (len + 1 > outlen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(out, path + 1, len);
	out[len] = '\0';
	/* The kernel never writes ".." in a cgroup path, but be sure. */
	if (strstr(out, "..")) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

static char *read_proc(pid_t pid)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	return syn__cg_read_file(path);
}

/* The full path (without the leading '/') of the controller's line in a
 * /proc/<pid>/cgroup text (NULL controller: the v2 "0::" line). */
int syn__cg_proc_path(const char *text, const char *controller, char *out, size_t len)
{
	const char *end, *path = find_line(text, controller, &end);

	if (!path) {
		errno = ENOENT;
		return -1;
	}
	if ((size_t)(end - path) > len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(out, path + 1, (size_t)(end - path - 1));
	out[end - path - 1] = '\0';
	return 0;
}

int syn__cg_job_of_pid(const syn__cg_t *cg, pid_t pid, uint32_t jobid, char *out, size_t len)
{
	char *text = read_proc(pid);
	int rv, e;

	if (!text)
		return -1;
	rv = syn__cg_parse_proc(text, cg->version == 1 ? "cpuset" : NULL, jobid, out, len);
	e = errno;
	free(text);
	errno = e;
	return rv;
}

int syn__cg_of_pid(const syn__cg_t *cg, pid_t pid, char *out, size_t len)
{
	char *text = read_proc(pid);
	int rv, e;

	if (!text)
		return -1;
	rv = syn__cg_proc_path(text, cg->version == 1 ? "cpuset" : NULL, out, len);
	e = errno;
	free(text);
	errno = e;
	return rv;
}

int syn__cg_foreach_job(const syn__cg_t *cg, const char *node_rel,
			int (*fn)(uint32_t jobid, const char *job_rel, void *arg), void *arg)
{
	char path[SYN_PATH_MAX * 2], rel[SYN_PATH_MAX * 2];
	DIR *top = NULL, *ud;
	struct dirent *u, *j;
	uint32_t num;
	int count = 0, stop = 0;

	if (syn__cg_path(cg, "cpuset", node_rel, NULL, path, sizeof(path)) < 0)
		return -1;
	top = opendir(path);
	if (!top)
		return -1;
	while (!stop && (u = readdir(top))) {
		if (cg->version == 2) {
			/* job_<id>, or a SLUID the caller maps (cgroup.h). */
			num = 0;
			if (!numbered(u->d_name, "job_", &num) && !syn__sluid_valid(u->d_name))
				continue;
			if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", node_rel, u->d_name) >=
			    sizeof(rel))
				continue;
			count++;
			stop = fn(num, rel, arg);
			continue;
		}
		if (!numbered(u->d_name, "uid_", &num))
			continue;
		if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", node_rel, u->d_name) >= sizeof(rel) ||
		    syn__cg_path(cg, "cpuset", rel, NULL, path, sizeof(path)) < 0)
			continue;
		ud = opendir(path);
		if (!ud)
			continue;
		while (!stop && (j = readdir(ud))) {
			if (!numbered(j->d_name, "job_", &num))
				continue;
			if ((size_t)snprintf(rel, sizeof(rel), "%s/%s/%s", node_rel, u->d_name,
					     j->d_name) >= sizeof(rel))
				continue;
			count++;
			stop = fn(num, rel, arg);
		}
		closedir(ud);
	}
	closedir(top);
	return count;
}

static int count_job(uint32_t jobid, const char *job_rel, void *arg)
{
	(void)jobid;
	(void)job_rel;
	(void)arg;
	return 0;
}

int syn__cg_node_survey(const syn__cg_t *cg, const char *node_rel, syn__cg_survey_t *out)
{
	char path[SYN_PATH_MAX * 3], *text;
	struct dirent *d;
	uint32_t num;
	DIR *dp;

	memset(out, 0, sizeof(*out));
	if (cg->version == 1) {
		/* uid_U/job_J: only what the layout names is looked at. */
		int n = syn__cg_foreach_job(cg, node_rel, count_job, NULL);

		if (n < 0)
			return -1;
		out->by_id = n;
		return 0;
	}
	if (syn__cg_path(cg, NULL, node_rel, NULL, path, sizeof(path)) < 0)
		return -1;
	dp = opendir(path);
	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		const char *n = d->d_name;

		if (d->d_type != DT_DIR || n[0] == '.')
			continue;
		if (numbered(n, "job_", &num))
			out->by_id++;
		else if (syn__sluid_valid(n))
			out->by_sluid++;
		else if (strcmp(n, "slurmd") == 0 || strcmp(n, "system") == 0)
			out->slurm++;
		else if (out->other++ == 0)
			snprintf(out->other_name, sizeof(out->other_name), "%.64s", n);
	}
	closedir(dp);
	if (syn__cg_path(cg, NULL, node_rel, "cgroup.subtree_control", path, sizeof(path)) == 0 &&
	    (text = syn__cg_read_file(path))) {
		snprintf(out->subtree, sizeof(out->subtree), "%s", text);
		free(text);
	}
	return 0;
}

/* foreach_node's look at one directory (base: "" or a slice). Returns
 * the nodes found, -1 with errno; *stop when fn asked to. */
static int nodes_in(const syn__cg_t *cg, const char *base,
		    int (*fn)(const char *node_rel, const char *node_name, void *arg), void *arg,
		    int *stop)
{
	char dir[SYN_PATH_MAX * 3], rel[SYN_PATH_MAX * 3], name[SYN_KEY_MAX + 1];
	struct dirent *d;
	DIR *dp;
	int count = 0;

	if (syn__cg_path(cg, "cpuset", base, NULL, dir, sizeof(dir)) < 0)
		return -1;
	dp = opendir(dir);
	if (!dp)
		return errno == ENOENT ? 0 : -1;
	while (!*stop && (d = readdir(dp))) {
		const char *n = d->d_name;
		size_t len = strlen(n);

		if (cg->version == 1) {
			if (strcmp(n, "slurm") == 0)
				snprintf(name, sizeof(name), "%s", cg->node);
			else if (strncmp(n, "slurm_", 6) == 0 && syn_key_valid(n + 6))
				snprintf(name, sizeof(name), "%s", n + 6);
			else
				continue;
			snprintf(rel, sizeof(rel), "%s", n);
		} else {
			static const char sfx[] = "slurmstepd.scope";
			size_t sl = sizeof(sfx) - 1;

			if (strcmp(n, sfx) == 0) {
				snprintf(name, sizeof(name), "%s", cg->node);
			} else if (len > sl + 1 && strcmp(n + len - sl, sfx) == 0 &&
				   n[len - sl - 1] == '_' && len - sl - 1 <= SYN_KEY_MAX) {
				memcpy(name, n, len - sl - 1);
				name[len - sl - 1] = '\0';
				if (!syn_key_valid(name))
					continue;
			} else {
				continue;
			}
			snprintf(rel, sizeof(rel), "%s/%s", base, n);
		}
		count++;
		if (fn(rel, name, arg))
			*stop = 1;
	}
	closedir(dp);
	return count;
}

int syn__cg_foreach_node(const syn__cg_t *cg,
			 int (*fn)(const char *node_rel, const char *node_name, void *arg),
			 void *arg)
{
	char rel[SYN_PATH_MAX * 3], base[2][SYN_PATH_MAX * 2];
	int i, nb, n, count = 0, stop = 0;

	if (cg->root[0]) {
		/* The admin's layout names one node: this one. */
		if (syn__cg_node_path(cg, rel, sizeof(rel)) < 0)
			return errno == ENOENT ? 0 : -1;
		fn(rel, cg->node, arg);
		return 1;
	}
	if (cg->version == 1)
		return nodes_in(cg, "", fn, arg, &stop);
	nb = v2_bases(cg, base);
	for (i = 0; i < nb && !stop; i++) {
		n = nodes_in(cg, base[i], fn, arg, &stop);
		if (n < 0)
			return -1;
		count += n;
	}
	return count;
}

/* ---- CPUs ---- */

char *syn__cg_get_cpus_text(const syn__cg_t *cg, const char *rel)
{
	char path[SYN_PATH_MAX * 2];
	char *text;

	if (syn__cg_path(cg, "cpuset", rel, "cpuset.cpus", path, sizeof(path)) < 0)
		return NULL;
	text = syn__cg_read_file(path);
	if (text && !text[0] && cg->version == 2) {
		/* v2: a cgroup that sets none has its parent's. */
		free(text);
		if (syn__cg_path(cg, "cpuset", rel, "cpuset.cpus.effective", path, sizeof(path)) < 0)
			return NULL;
		text = syn__cg_read_file(path);
	}
	return text;
}

int syn__cg_get_cpus(const syn__cg_t *cg, const char *rel, cpu_set_t *set)
{
	char *text = syn__cg_get_cpus_text(cg, rel);
	int rv, e;

	if (!text)
		return -1;
	rv = syn_cpus_parse(text, set);
	e = errno;
	free(text);
	errno = e;
	return rv;
}

int syn__cg_set_cpus(const syn__cg_t *cg, const char *rel, const char *cpus, char *err,
		     size_t errlen)
{
	char path[SYN_PATH_MAX * 2];

	if (syn__cg_path(cg, "cpuset", rel, "cpuset.cpus", path, sizeof(path)) < 0)
		return syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s", rel);
	return syn__cg_write_file(path, cpus, err, errlen);
}

static int set_cpu_set(const syn__cg_t *cg, const char *rel, const cpu_set_t *set, char *err,
		       size_t errlen)
{
	char *list = syn_cpus_format_alloc(set);
	int rv;

	if (!list)
		return syn_errbuf(err, errlen, errno ? errno : EIO, "out of memory");
	rv = syn__cg_set_cpus(cg, rel, list, err, errlen);
	free(list);
	return rv;
}

/* Walk rel and its descendants in ctl's hierarchy, calling fn for each id
 * listed in their file "threads" (a thread or a process list). */
static int foreach_id(const syn__cg_t *cg, const char *ctl, const char *rel, const char *threads,
		      int (*fn)(pid_t tid, void *arg), void *arg)
{
	char path[SYN_PATH_MAX * 2], sub[SYN_PATH_MAX * 2];
	struct {
		char rel[SYN_PATH_MAX * 2];
		int depth;
	} *stack;
	int top = 0, n = 0, first = 1;

	/* Iterative walk: a small explicit stack instead of recursion. */
	stack = malloc(sizeof(*stack) * 64);
	if (!stack) {
		errno = ENOMEM;
		return -1;
	}
	snprintf(stack[0].rel, sizeof(stack[0].rel), "%s", rel);
	stack[0].depth = 0;
	top = 1;
	while (top > 0) {
		char cur[SYN_PATH_MAX * 2];
		int depth;
		FILE *f;
		DIR *d;
		struct dirent *e;
		long tid;

		top--;
		snprintf(cur, sizeof(cur), "%s", stack[top].rel);
		depth = stack[top].depth;
		if (syn__cg_path(cg, ctl, cur, threads, path, sizeof(path)) < 0)
			continue;
		f = fopen(path, "re");
		if (!f) {
			if (first) {
				free(stack);
				return -1;
			}
			continue;
		}
		first = 0;
		while (fscanf(f, "%ld", &tid) == 1) {
			if (tid > 0 && tid <= INT32_MAX && fn((pid_t)tid, arg) > 0)
				n++;
		}
		fclose(f);
		if (depth >= CG_MAX_DEPTH || syn__cg_path(cg, ctl, cur, NULL, path, sizeof(path)) < 0)
			continue;
		d = opendir(path);
		if (!d)
			continue;
		while ((e = readdir(d)) && top < 64) {
			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", cur, e->d_name) >= sizeof(sub))
				continue;
			snprintf(stack[top].rel, sizeof(stack[top].rel), "%s", sub);
			stack[top].depth = depth + 1;
			top++;
		}
		closedir(d);
	}
	free(stack);
	return n;
}

int syn__cg_foreach_thread(const syn__cg_t *cg, const char *ctl, const char *rel,
			   int (*fn)(pid_t tid, void *arg), void *arg)
{
	return foreach_id(cg, ctl, rel, cg->version == 1 ? "tasks" : "cgroup.threads", fn, arg);
}

static int pin_one(pid_t tid, void *arg)
{
	return sched_setaffinity(tid, sizeof(cpu_set_t), arg) == 0;
}

int syn__cg_pin_tree(const syn__cg_t *cg, const char *ctl, const char *rel,
		     const cpu_set_t *set)
{
	return syn__cg_foreach_thread(cg, ctl, rel, pin_one, (void *)set);
}

/* The limit cgroups of job_rel (NULL-terminated, malloc'ed; may be empty). */
static int job_limits(const syn__cg_t *cg, const char *job_rel, char ***out)
{
	return cg->version == 1 ? syn__cg1_limits(cg, job_rel, out) :
				  syn__cg2_limits(cg, job_rel, out);
}

int syn__cg_job_has_limits(const syn__cg_t *cg, const char *job_rel)
{
	char **lim = NULL;
	int has;

	if (job_limits(cg, job_rel, &lim) < 0)
		return 0;
	has = lim[0] != NULL;
	syn__cg_free_list(lim);
	return has;
}

static int count_one(pid_t tid, void *arg)
{
	(void)tid;
	(void)arg;
	return 1;
}

int syn__cg_job_has_tasks(const syn__cg_t *cg, const char *job_rel)
{
	int n = syn__cg_foreach_thread(cg, "cpuset", job_rel, count_one, NULL);

	return n < 0 ? -1 : n > 0;
}

int syn__cg_job_limit_cpus(const syn__cg_t *cg, const char *job_rel, cpu_set_t *set)
{
	cpu_set_t one;
	char **lim = NULL;
	size_t i;
	int n = 0;

	CPU_ZERO(set);
	if (job_limits(cg, job_rel, &lim) < 0)
		return -1;
	for (i = 0; lim[i]; i++) {
		if (syn__cg_get_cpus(cg, lim[i], &one) == 0) {
			CPU_OR(set, set, &one);
			n = 1;
		}
	}
	syn__cg_free_list(lim);
	return n;
}

int syn__cg_job_set_cpus(const syn__cg_t *cg, const char *job_rel, const cpu_set_t *target,
			 const cpu_set_t *allotted, char *err, size_t errlen)
{
	cpu_set_t held, keep, gain, cur, want;
	char **lim = NULL;
	size_t i;
	int rv = -1;

	if (syn__cg_get_cpus(cg, job_rel, &held) < 0)
		return syn_errbuf(err, errlen, errno ? errno : EIO, "cannot read the CPUs of %s",
				  job_rel);
	if (job_limits(cg, job_rel, &lim) < 0)
		return syn_errbuf(err, errlen, errno ? errno : EIO,
				  "cannot list the limit cgroups of %s", job_rel);
	CPU_AND(&keep, &held, target);
	CPU_OR(&gain, &held, target);
	CPU_XOR(&gain, &gain, &held);
	/* Narrow: the limit cgroups first (v1 refuses a parent narrower than
	 * a child), then the job. */
	if (!CPU_EQUAL(&keep, &held)) {
		for (i = 0; lim[i]; i++) {
			if (syn__cg_get_cpus(cg, lim[i], &cur) < 0)
				continue; /* a step that ended meanwhile */
			CPU_AND(&want, &cur, &keep);
			if (CPU_COUNT(&want) == 0)
				CPU_AND(&want, allotted, &keep);
			if (CPU_COUNT(&want) == 0)
				want = keep;
			if (!CPU_EQUAL(&want, &cur) && set_cpu_set(cg, lim[i], &want, err, errlen) < 0)
				goto out;
		}
		if (set_cpu_set(cg, job_rel, &keep, err, errlen) < 0)
			goto out;
	}
	/* Widen: parents (v1: uid_U must cover its jobs), the job, then the
	 * limit cgroups, which gain what the job gains. */
	if (CPU_COUNT(&gain) > 0) {
		if (cg->version == 1) {
			char parent[SYN_PATH_MAX * 2], *slash;

			snprintf(parent, sizeof(parent), "%s", job_rel);
			slash = strrchr(parent, '/');
			if (slash) {
				*slash = '\0';
				if (syn__cg_get_cpus(cg, parent, &cur) < 0) {
					syn_errbuf(err, errlen, errno ? errno : EIO,
						   "cannot read the CPUs of %s", parent);
					goto out;
				}
				CPU_OR(&want, &cur, target);
				if (!CPU_EQUAL(&want, &cur) &&
				    set_cpu_set(cg, parent, &want, err, errlen) < 0)
					goto out;
			}
		}
		if (set_cpu_set(cg, job_rel, target, err, errlen) < 0)
			goto out;
		for (i = 0; lim[i]; i++) {
			if (syn__cg_get_cpus(cg, lim[i], &cur) < 0)
				continue;
			CPU_OR(&want, &cur, &gain);
			CPU_AND(&want, &want, target);
			if (!CPU_EQUAL(&want, &cur) && set_cpu_set(cg, lim[i], &want, err, errlen) < 0)
				goto out;
		}
	}
	/* Re-pin: the kernel does not widen a pinned thread's affinity. */
	for (i = 0; lim[i]; i++) {
		if (syn__cg_get_cpus(cg, lim[i], &cur) == 0)
			syn__cg_pin_tree(cg, "cpuset", lim[i], &cur);
	}
	rv = 0;
out:
	syn__cg_free_list(lim);
	return rv;
}

/* ---- CPU time and priority ---- */

static int idle_one(pid_t tid, void *arg)
{
	struct sched_param sp = { 0 };
	int pol = sched_getscheduler(tid);

	(void)arg;
	if (pol < 0 || (pol & ~SCHED_RESET_ON_FORK) == SCHED_IDLE)
		return 0;
	return sched_setscheduler(tid, SCHED_IDLE, &sp) == 0;
}

static int normal_one(pid_t tid, void *arg)
{
	struct sched_param sp = { 0 };
	int pol = sched_getscheduler(tid);

	(void)arg;
	if (pol < 0 || (pol & ~SCHED_RESET_ON_FORK) != SCHED_IDLE)
		return 0;
	return sched_setscheduler(tid, SCHED_OTHER, &sp) == 0;
}

int syn__cg_job_sched_idle(const syn__cg_t *cg, const char *job_rel, int idle, char *err,
			   size_t errlen)
{
	char **lim = NULL;
	int i, pass, n, total = 0;

	/* The group first when lowering, last when restoring: at no time may
	 * the job compete at normal weight where another job's threads run. */
	if (idle && (cg->version == 1 ? syn__cg1_job_idle(cg, job_rel, 1, err, errlen) :
					syn__cg2_job_idle(cg, job_rel, 1, err, errlen)) < 0)
		return -1;
	if (job_limits(cg, job_rel, &lim) < 0)
		return syn_errbuf(err, errlen, errno ? errno : EIO,
				  "cannot list the limit cgroups of %s", job_rel);
	/* A thread a not yet visited thread creates meanwhile inherits the
	 * old policy: walk again until a walk changes nothing. */
	for (pass = 0; pass < 8; pass++) {
		n = 0;
		for (i = 0; lim[i]; i++) {
			int k = syn__cg_foreach_thread(cg, "cpuset", lim[i],
						       idle ? idle_one : normal_one, NULL);
			if (k > 0)
				n += k;
		}
		total += n;
		if (n == 0)
			break;
	}
	syn__cg_free_list(lim);
	if (idle && pass == 8)
		return syn_errbuf(err, errlen, EAGAIN,
				  "%s: threads still appearing at normal priority after 8 walks",
				  job_rel);
	if (!idle && (cg->version == 1 ? syn__cg1_job_idle(cg, job_rel, 0, err, errlen) :
					 syn__cg2_job_idle(cg, job_rel, 0, err, errlen)) < 0)
		return -1;
	return total;
}

/* Add a process's CPU time and that of its children it reaped (ticks). */
static int proc_ticks(pid_t pid, void *arg)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, cut, cst;
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return 0;
	buf[k] = '\0';
	/* The command name may hold anything: the fields follow its last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
			 &ut, &st, &cut, &cst) != 4)
		return 0;
	*(uint64_t *)arg += ut + st + cut + cst;
	return 1;
}

int syn__cg_job_cpu_ns(const syn__cg_t *cg, const char *job_rel, uint64_t *ns)
{
	char path[SYN_PATH_MAX * 2], *text, *p;
	uint64_t v, sum = 0;

	if (cg->version == 2) {
		if (syn__cg_path(cg, "cpu", job_rel, "cpu.stat", path, sizeof(path)) < 0 ||
		    !(text = syn__cg_read_file(path)))
			return -1;
		p = strstr(text, "usage_usec ");
		if (!p || (p != text && p[-1] != '\n') ||
		    syn_parse_u64n(p + 11, strspn(p + 11, "0123456789"), 0, UINT64_MAX / 1000,
				   &v) < 0) {
			free(text);
			errno = EPROTO;
			return -1;
		}
		free(text);
		*ns = v * 1000;
		return 0;
	}
	/* v1: cpuacct when Slurm accounts the job there, else what the job's
	 * processes used, with what they reaped of their children. */
	if (syn__cg_path(cg, "cpuacct", job_rel, "cpuacct.usage", path, sizeof(path)) == 0 &&
	    (text = syn__cg_read_file(path))) {
		int got = syn_parse_u64(text, 0, UINT64_MAX, &v) == 0;

		free(text);
		if (got) {
			*ns = v;
			return 0;
		}
	}
	if (foreach_id(cg, "cpuset", job_rel, "cgroup.procs", proc_ticks, &sum) < 0)
		return -1;
	*ns = sum * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
	return 0;
}

/* ---- memory ---- */

int syn__cg_get_mem(const syn__cg_t *cg, const char *rel, uint64_t *bytes)
{
	char path[SYN_PATH_MAX * 2];
	char *text;
	int rv = 0;

	if (syn__cg_path(cg, "memory", rel, cg->version == 1 ? "memory.limit_in_bytes" :
			 "memory.max", path, sizeof(path)) < 0)
		return -1;
	text = syn__cg_read_file(path);
	if (!text)
		return -1;
	if (strcmp(text, "max") == 0)
		*bytes = UINT64_MAX;
	else if (syn_parse_u64(text, 0, UINT64_MAX, bytes) < 0)
		rv = -1;
	/* v1 reports "no limit" as a huge page-rounded number. */
	if (rv == 0 && cg->version == 1 && *bytes >= (UINT64_MAX >> 2))
		*bytes = UINT64_MAX;
	free(text);
	if (rv < 0)
		errno = EINVAL;
	return rv;
}

int syn__cg_mem_pinned(const syn__cg_t *cg, const char *rel, uint64_t *bytes)
{
	/* v1's hierarchical totals, v2's counters (hierarchical already). */
	const char *anon = cg->version == 1 ? "total_rss" : "anon";
	const char *shmem = cg->version == 1 ? "total_shmem" : "shmem";
	char path[SYN_PATH_MAX * 2];
	uint64_t a = 0, m = 0;
	int seen = 0;
	char *text, *line, *save = NULL;

	if (syn__cg_path(cg, "memory", rel, "memory.stat", path, sizeof(path)) < 0)
		return -1;
	text = syn__cg_read_file(path);
	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp++ = '\0';
		if (strcmp(line, anon) == 0 && syn_parse_u64(sp, 0, UINT64_MAX, &a) == 0)
			seen |= 1;
		else if (strcmp(line, shmem) == 0 && syn_parse_u64(sp, 0, UINT64_MAX, &m) == 0)
			seen |= 2;
	}
	free(text);
	if (seen != 3) {
		errno = ENOENT;
		return -1;
	}
	*bytes = a > UINT64_MAX - m ? UINT64_MAX : a + m;
	return 0;
}

static int set_mem(const syn__cg_t *cg, const char *rel, uint64_t bytes, char *err,
		   size_t errlen)
{
	char path[SYN_PATH_MAX * 2], val[32];

	if (syn__cg_path(cg, "memory", rel, cg->version == 1 ? "memory.limit_in_bytes" :
			 "memory.max", path, sizeof(path)) < 0)
		return syn_errbuf(err, errlen, ENAMETOOLONG, "cgroup path too long: %.80s", rel);
	if (bytes == UINT64_MAX)
		snprintf(val, sizeof(val), "%s", cg->version == 1 ? "-1" : "max");
	else
		snprintf(val, sizeof(val), "%llu", (unsigned long long)bytes);
	return syn__cg_write_file(path, val, err, errlen);
}

int syn__cg_job_set_mem(const syn__cg_t *cg, const char *job_rel, uint64_t bytes, char *err,
			size_t errlen)
{
	uint64_t cur;
	char **lim = NULL;
	size_t i;
	int rv = -1, raise;

	if (syn__cg_get_mem(cg, job_rel, &cur) < 0)
		return syn_errbuf(err, errlen, errno ? errno : EIO,
				  "cannot read the memory limit of %s", job_rel);
	if (job_limits(cg, job_rel, &lim) < 0)
		return syn_errbuf(err, errlen, errno ? errno : EIO,
				  "cannot list the limit cgroups of %s", job_rel);
	raise = bytes >= cur;
	if (raise && set_mem(cg, job_rel, bytes, err, errlen) < 0)
		goto out;
	for (i = 0; lim[i]; i++) {
		if (set_mem(cg, lim[i], bytes, err, errlen) < 0 && errno != ENOENT)
			goto out;
	}
	if (!raise && set_mem(cg, job_rel, bytes, err, errlen) < 0)
		goto out;
	rv = 0;
out:
	syn__cg_free_list(lim);
	return rv;
}

/* ---- tasks ---- */

int syn__cg_task_enter(const syn__cg_t *cg, const char *job_rel, pid_t pid,
		       uint64_t mem_bytes, cpu_set_t *set, char *err, size_t errlen)
{
	char own[SYN_PATH_MAX * 2];
	char *text;
	int e;

	if (cg->version == 1)
		return syn__cg1_task_enter(cg, job_rel, pid, mem_bytes, set, err, errlen);
	/* v2: the task stays in Slurm's task leaf, under its step's user
	 * cgroup; its CPUs are that cgroup's. */
	(void)mem_bytes;
	text = read_proc(pid);
	if (!text)
		return syn_errbuf(err, errlen, errno ? errno : EIO, "cannot read /proc/%d/cgroup",
				  (int)pid);
	e = syn__cg_proc_path(text, NULL, own, sizeof(own));
	free(text);
	if (e < 0)
		return syn_errbuf(err, errlen, ENOENT, "task %d has no cgroup v2 path", (int)pid);
	if (strncmp(own, job_rel, strlen(job_rel)) != 0 || own[strlen(job_rel)] != '/')
		return syn_errbuf(err, errlen, ENOENT, "task %d is not inside %s", (int)pid,
				  job_rel);
	if (syn__cg_get_cpus(cg, own, set) < 0) {
		e = errno;
		return syn_errbuf(err, errlen, e ? e : EIO, "cannot read the CPUs of %s", own);
	}
	return 0;
}

int syn__cg_self_in_limits(const syn__cg_t *cg, uint32_t jobid, cpu_set_t *set)
{
	char job[SYN_PATH_MAX * 2], own[SYN_PATH_MAX * 2];
	const char *ctl = cg->version == 1 ? "cpuset" : NULL;
	char *text;
	size_t jl;
	int in = 0;

	text = read_proc(0);
	if (!text)
		return -1;
	if (syn__cg_parse_proc(text, ctl, jobid, job, sizeof(job)) < 0 ||
	    syn__cg_proc_path(text, ctl, own, sizeof(own)) < 0) {
		free(text);
		return 0;
	}
	free(text);
	jl = strlen(job);
	if (strncmp(own, job, jl) != 0 || own[jl] != '/')
		return 0;
	if (cg->version == 1) {
		/* Exactly job_J/synergy in the cpuset hierarchy. */
		in = strcmp(own + jl + 1, SYN__CG_CHILD) == 0;
	} else {
		/* Inside job_J/step_S/user. */
		const char *step = own + jl + 1, *u = strchr(step, '/');

		in = strncmp(step, "step_", 5) == 0 && u && strncmp(u, "/user", 5) == 0 &&
		     (u[5] == '\0' || u[5] == '/');
	}
	if (!in)
		return 0;
	return syn__cg_get_cpus(cg, own, set) < 0 ? -1 : 1;
}

int syn__cg_step_leave(const syn__cg_t *cg, const char *job_rel, uint32_t jobid,
		       const char *step_dir, char *err, size_t errlen)
{
	if (cg->version == 1)
		return syn__cg1_step_leave(cg, job_rel, jobid, step_dir, err, errlen);
	return 0;
}

int syn__cg_job_cleanup(const syn__cg_t *cg, const char *job_rel, char *err, size_t errlen)
{
	if (cg->version == 1)
		return syn__cg1_job_cleanup(cg, job_rel, err, errlen);
	return 0;
}

int syn__cg_job_gone(const syn__cg_t *cg, const char *job_rel, int lock_ms, char *err,
		     size_t errlen)
{
	if (cg->version == 1)
		return syn__cg1_job_gone(cg, job_rel, lock_ms, err, errlen);
	return 0;
}
