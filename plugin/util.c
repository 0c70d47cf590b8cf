/*
 * util.c: strict parsers and the configuration of the Synergy plugins.
 *
 * Everything a user or admin can hand to the root-run plugins is checked
 * here before it is used: keys against a safe charset, numbers against
 * their range, paths for being absolute and free of "..". The cgroup path
 * parser trusts only the kernel's /proc/<pid>/cgroup text and still refuses
 * anything that does not look like a Slurm job cgroup.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "synergy_conf.h"
#include "util.h"

static int errprintf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int errprintf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = saved ? saved : EINVAL;
	return -1;
}

int syn__errf(int errnum, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = errnum;
	return -1;
}

void syn__conf_defaults(syn__conf_t *c)
{
	memset(c, 0, sizeof(*c));
	c->enabled = 1;
	snprintf(c->store_dir, sizeof(c->store_dir), "/var/lib/synergy/profiles");
	snprintf(c->request_dir, sizeof(c->request_dir), "/var/spool/synergy/requests");
	snprintf(c->cache_dir, sizeof(c->cache_dir), "/dev/shm/synergy");
	snprintf(c->group_dir, sizeof(c->group_dir), "/dev/shm/synergy");
	c->process_mem_mb = 1024;
	c->max_cache_mb = 1024 * 1024;
	c->eps = 0.01;
	c->lend_idle = 0;
	c->harvest = 1;
	c->harvest_interval = 5;
	snprintf(c->state_dir, sizeof(c->state_dir), "/run/synergy");
	snprintf(c->shapes_file, sizeof(c->shapes_file), "/var/spool/synergy/node_shapes");
	c->shapes_max_age = 600;
	snprintf(c->profile_user, sizeof(c->profile_user), "nobody");
	c->max_requests = 64;
	c->max_requests_per_user = 4;
	c->max_profiling_jobs = 2;
	c->profile_in_place = 1;
	c->claim_max_age = 3600;
	c->group_staging_mb = SYN_CONF_GROUP_STAGING_MB_DEFAULT;
	c->group_window = SYN_CONF_GROUP_WINDOW_DEFAULT;
	c->peer_port_min = SYN_CONF_PEER_PORT_MIN_DEFAULT;
	c->peer_port_max = SYN_CONF_PEER_PORT_MAX_DEFAULT;
	c->ckpt_retention = SYN_CONF_CHECKPOINT_RETENTION_DEFAULT;
}

int syn__key_valid(const char *key)
{
	size_t n;

	if (!key || !key[0] || key[0] == '.')
		return 0;
	for (n = 0; key[n]; n++) {
		unsigned char ch = (unsigned char)key[n];
		if (n >= SYN__KEY_MAX)
			return 0;
		if (!isascii(ch) || !(isalnum(ch) || ch == '_' || ch == '.' || ch == '-'))
			return 0;
	}
	return 1;
}

int syn__parse_onoff(const char *s, int *on)
{
	static const char *const yes[] = { "on", "yes", "1", "true" };
	static const char *const no[] = { "off", "no", "0", "false" };
	size_t i;

	if (!s || !on) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*on = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*on = 0;
			return 0;
		}
	}
	errno = EINVAL;
	return -1;
}

int syn__parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	if (!s || !*s || !out) {
		errno = EINVAL;
		return -1;
	}
	/* Hand-rolled so that signs, spaces, hex and suffixes are all refused
	 * (strtoull would accept " -1" and wrap it). */
	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9') {
			errno = EINVAL;
			return -1;
		}
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) {
			errno = ERANGE;
			return -1;
		}
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int syn__path_ok(const char *path)
{
	const char *p, *comp;
	size_t len;

	if (!path || path[0] != '/')
		return 0;
	len = strlen(path);
	if (len >= SYN__PATH_MAX)
		return 0;
	for (p = path; *p; p++) {
		if (iscntrl((unsigned char)*p) || isspace((unsigned char)*p))
			return 0;
	}
	/* Reject "." and ".." components anywhere. */
	for (comp = path; comp && *comp; ) {
		const char *slash;
		size_t clen;

		while (*comp == '/')
			comp++;
		slash = strchr(comp, '/');
		clen = slash ? (size_t)(slash - comp) : strlen(comp);
		if ((clen == 1 && comp[0] == '.') || (clen == 2 && comp[0] == '.' && comp[1] == '.'))
			return 0;
		comp = slash;
	}
	return 1;
}

static int set_path(char *dst, const char *key, const char *value, char *err, size_t errlen)
{
	if (!syn__path_ok(value)) {
		errno = EINVAL;
		return errprintf(err, errlen, "%s: '%s' is not an absolute path without '..' "
				 "(at most %d bytes)", key, value, SYN__PATH_MAX - 1);
	}
	snprintf(dst, SYN__PATH_MAX, "%s", value);
	return 0;
}

int syn__conf_set(syn__conf_t *c, const char *key, const char *value, char *err, size_t errlen)
{
	uint64_t v;
	char *end;
	double d;

	if (!c || !key || !value) {
		errno = EINVAL;
		return errprintf(err, errlen, "missing key or value");
	}
	if (strcasecmp(key, "Enabled") == 0) {
		if (syn__parse_onoff(value, &c->enabled) < 0)
			return errprintf(err, errlen, "Enabled: '%s' is not yes or no", value);
		return 0;
	}
	if (strcasecmp(key, "ProfileInPlace") == 0) {
		if (syn__parse_onoff(value, &c->profile_in_place) < 0)
			return errprintf(err, errlen, "ProfileInPlace: '%s' is not yes or no", value);
		return 0;
	}
	if (strcasecmp(key, "ProfileClaimMaxAge") == 0) {
		if (syn__parse_u64(value, 1, 86400 * 365, &v) < 0)
			return errprintf(err, errlen, "ProfileClaimMaxAge: '%s' is not a number of "
					 "seconds in 1..31536000", value);
		c->claim_max_age = v;
		return 0;
	}
	if (strcasecmp(key, SYN_CONF_PEER_PORT_MIN) == 0 ||
	    strcasecmp(key, SYN_CONF_PEER_PORT_MAX) == 0) {
		/* Each bound alone is checked here; a minimum above the maximum
		 * is refused where the range is used (the keys may come in any
		 * order). */
		if (syn__parse_u64(value, 1, 65535, &v) < 0)
			return errprintf(err, errlen, "%s: '%s' is not a port number in 1..65535",
					 key, value);
		if (strcasecmp(key, SYN_CONF_PEER_PORT_MIN) == 0)
			c->peer_port_min = (uint32_t)v;
		else
			c->peer_port_max = (uint32_t)v;
		return 0;
	}
	if (strcasecmp(key, "HarvestIdleCycles") == 0) {
		if (syn__parse_onoff(value, &c->harvest) < 0)
			return errprintf(err, errlen, "HarvestIdleCycles: '%s' is not yes or no", value);
		return 0;
	}
	if (strcasecmp(key, "HarvestInterval") == 0) {
		if (syn__parse_u64(value, 0, 3600, &v) < 0)
			return errprintf(err, errlen,
					 "HarvestInterval: '%s' is not a number of seconds in 0..3600",
					 value);
		c->harvest_interval = (uint32_t)v;
		return 0;
	}
	if (strcasecmp(key, "LendIdleCores") == 0) {
		if (syn__parse_onoff(value, &c->lend_idle) < 0)
			return errprintf(err, errlen, "LendIdleCores: '%s' is not yes or no", value);
		return 0;
	}
	/* LendStateDir is the name this key had when only lending kept state. */
	if (strcasecmp(key, "StateDir") == 0 || strcasecmp(key, "LendStateDir") == 0)
		return set_path(c->state_dir, key, value, err, errlen);
	if (strcasecmp(key, "ProfileUser") == 0) {
		if (!syn__user_valid(value))
			return errprintf(err, errlen, "ProfileUser: '%.40s' is not an account name",
					 value);
		snprintf(c->profile_user, sizeof(c->profile_user), "%s", value);
		return 0;
	}
	if (strcasecmp(key, "MaxProfileRequests") == 0 ||
	    strcasecmp(key, "MaxProfileRequestsPerUser") == 0 ||
	    strcasecmp(key, "MaxProfilingJobs") == 0) {
		if (syn__parse_u64(value, 0, 100000, &v) < 0)
			return errprintf(err, errlen, "%s: '%s' is not a number in 0..100000", key,
					 value);
		if (strcasecmp(key, "MaxProfileRequests") == 0)
			c->max_requests = v;
		else if (strcasecmp(key, "MaxProfilingJobs") == 0)
			c->max_profiling_jobs = v;
		else
			c->max_requests_per_user = v;
		return 0;
	}
	if (strcasecmp(key, "NodeShapesFile") == 0)
		return set_path(c->shapes_file, "NodeShapesFile", value, err, errlen);
	if (strcasecmp(key, "NodeShapesMaxAge") == 0) {
		if (syn__parse_u64(value, 1, 86400 * 365, &v) < 0)
			return errprintf(err, errlen, "NodeShapesMaxAge: '%s' is not a number of "
					 "seconds in 1..31536000", value);
		c->shapes_max_age = v;
		return 0;
	}
	if (strcasecmp(key, "CgroupConf") == 0)
		return set_path(c->cgroup_conf, "CgroupConf", value, err, errlen);
	if (strcasecmp(key, "CgroupRoot") == 0) {
		/* A path relative to the cgroup hierarchy's root, %n and %h allowed. */
		if (!syn__path_ok(value)) {
			errno = EINVAL;
			return errprintf(err, errlen, "CgroupRoot: '%s' is not an absolute path "
					 "without '..' (e.g. /slurm_%%n)", value);
		}
		snprintf(c->cgroup_root, sizeof(c->cgroup_root), "%s", value);
		return 0;
	}
	if (strcasecmp(key, "ProfileStore") == 0)
		return set_path(c->store_dir, "ProfileStore", value, err, errlen);
	if (strcasecmp(key, "RequestDir") == 0)
		return set_path(c->request_dir, "RequestDir", value, err, errlen);
	if (strcasecmp(key, "CacheDir") == 0)
		return set_path(c->cache_dir, "CacheDir", value, err, errlen);
	if (strcasecmp(key, "GroupDir") == 0)
		return set_path(c->group_dir, "GroupDir", value, err, errlen);
	if (strcasecmp(key, SYN_CONF_CHECKPOINT_DIR) == 0)
		return set_path(c->ckpt_dir, SYN_CONF_CHECKPOINT_DIR, value, err, errlen);
	if (strcasecmp(key, SYN_CONF_CHECKPOINT_RETENTION) == 0) {
		if (syn__parse_u64(value, 0, 10ULL * 366 * 86400, &v) < 0)
			return errprintf(err, errlen, SYN_CONF_CHECKPOINT_RETENTION ": '%s' is not a "
					 "number of seconds in 0..316224000", value);
		c->ckpt_retention = v;
		return 0;
	}
	if (strcasecmp(key, SYN_CONF_GROUP_STAGING_MB) == 0) {
		/* The loader needs room for two batches; it says so itself
		 * (coordl_group_note) for a bound too small for its batches. */
		if (syn__parse_u64(value, 1, 1024 * 1024, &v) < 0)
			return errprintf(err, errlen, SYN_CONF_GROUP_STAGING_MB ": '%s' is not a number "
					 "of MB in 1..1048576", value);
		c->group_staging_mb = v;
		return 0;
	}
	if (strcasecmp(key, SYN_CONF_GROUP_WINDOW) == 0) {
		if (syn__parse_u64(value, 1, 1000000, &v) < 0)
			return errprintf(err, errlen, SYN_CONF_GROUP_WINDOW ": '%s' is not a number of "
					 "batches in 1..1000000", value);
		c->group_window = (uint32_t)v;
		return 0;
	}
	if (strcasecmp(key, "ProcessMemMB") == 0) {
		if (syn__parse_u64(value, 0, 1024 * 1024 * 1024, &v) < 0)
			return errprintf(err, errlen, "ProcessMemMB: '%s' is not a number of MB "
					 "in 0..1073741824", value);
		c->process_mem_mb = v;
		return 0;
	}
	if (strcasecmp(key, "MaxCacheMB") == 0) {
		if (syn__parse_u64(value, 0, 1024ULL * 1024 * 1024, &v) < 0)
			return errprintf(err, errlen, "MaxCacheMB: '%s' is not a number of MB "
					 "in 0..1073741824", value);
		c->max_cache_mb = v;
		return 0;
	}
	if (strcasecmp(key, "Eps") == 0) {
		errno = 0;
		d = strtod(value, &end);
		if (errno || end == value || *end || !(d >= 0.0 && d < 1.0)) {
			errno = EINVAL;
			return errprintf(err, errlen, "Eps: '%s' is not a number in [0, 1)", value);
		}
		c->eps = d;
		return 0;
	}
	if (strcasecmp(key, "ProfileCommand") == 0) {
		/* An admin's command line, run by synergyd in a batch job: it
		 * must start with an absolute path and fit, nothing more. */
		if (value[0] != '/' || strlen(value) >= sizeof(c->profile_command) ||
		    strpbrk(value, "\n\r")) {
			errno = EINVAL;
			return errprintf(err, errlen, "ProfileCommand: '%.60s' must be a command line "
					 "starting with an absolute path, under %zu bytes", value,
					 sizeof(c->profile_command));
		}
		snprintf(c->profile_command, sizeof(c->profile_command), "%s", value);
		return 0;
	}
	if (strcasecmp(key, "NodeGPUs") == 0 || strcasecmp(key, "NodeCPUs") == 0 ||
	    strcasecmp(key, "NodeMemMB") == 0) {
		if (syn__parse_u64(value, 1, 1024ULL * 1024 * 1024, &v) < 0)
			return errprintf(err, errlen, "%s: '%s' is not a positive number", key, value);
		if (strcasecmp(key, "NodeGPUs") == 0)
			c->node_gpus = v;
		else if (strcasecmp(key, "NodeCPUs") == 0)
			c->node_cpus = v;
		else
			c->node_mem_mb = v;
		return 0;
	}
	errno = EINVAL;
	return errprintf(err, errlen, "unknown key '%s'", key);
}

int syn__conf_arg(syn__conf_t *c, const char *arg, char *err, size_t errlen)
{
	char key[64];
	const char *eq;
	size_t klen;

	eq = arg ? strchr(arg, '=') : NULL;
	if (!eq || eq == arg) {
		errno = EINVAL;
		return errprintf(err, errlen, "argument '%s' is not key=value", arg ? arg : "");
	}
	klen = (size_t)(eq - arg);
	if (klen >= sizeof(key)) {
		errno = EINVAL;
		return errprintf(err, errlen, "argument '%.32s...': key too long", arg);
	}
	memcpy(key, arg, klen);
	key[klen] = '\0';
	if (strcasecmp(key, "conf") == 0) {
		if (!syn__path_ok(eq + 1)) {
			errno = EINVAL;
			return errprintf(err, errlen, "conf: '%s' is not an absolute path", eq + 1);
		}
		return syn__conf_load(c, eq + 1, err, errlen);
	}
	return syn__conf_set(c, key, eq + 1, err, errlen);
}

struct conf_apply {
	syn__conf_t *c;
	const char *path;
	char *err;
	size_t errlen;
};

static int conf_apply_one(const char *key, const char *value, int line, void *arg)
{
	struct conf_apply *a = arg;
	char msg[200];

	if (syn__conf_set(a->c, key, value, msg, sizeof(msg)) < 0) {
		errprintf(a->err, a->errlen, "%s:%d: %s", a->path, line, msg);
		return -1;
	}
	return 0;
}

int syn__conf_load(syn__conf_t *c, const char *path, char *err, size_t errlen)
{
	syn_conf_error_t cerr = { "" };
	syn_conf_t *conf = syn_conf_load(path, &cerr);
	struct conf_apply a = { c, NULL, err, errlen };
	int rv;

	if (!conf) {
		int e = errno;
		errprintf(err, errlen, "%s", cerr.text);
		errno = e;
		return -1;
	}
	a.path = syn_conf_path(conf);
	rv = syn_conf_foreach(conf, conf_apply_one, &a);
	syn_conf_destroy(conf);
	if (rv) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

char *syn__read_fd(int fd, size_t max, size_t *lenp)
{
	size_t cap = 512, used = 0;
	char *buf = NULL, *nb;
	ssize_t r;
	int e;

	for (;;) {
		if (!buf || used + 1 >= cap) {
			if (buf)
				cap *= 2;
			if (cap > max + 1)
				cap = max + 1;
			if (buf && used + 1 >= cap) {
				e = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				e = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		r = read(fd, buf + used, cap - used - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			goto fail;
		}
		if (r == 0)
			break;
		used += (size_t)r;
	}
	buf[used] = '\0';
	if (lenp)
		*lenp = used;
	return buf;
fail:
	free(buf);
	errno = e;
	return NULL;
}

char *syn__read_file_at(int dfd, const char *name, size_t max, size_t *lenp)
{
	char *buf;
	int fd, e;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	buf = syn__read_fd(fd, max, lenp);
	e = errno;
	close(fd);
	errno = e;
	return buf;
}

int syn__user_valid(const char *name)
{
	size_t n;

	if (!name || !name[0] || !(islower((unsigned char)name[0]) || name[0] == '_'))
		return 0;
	for (n = 0; name[n]; n++) {
		unsigned char c = (unsigned char)name[n];
		if (n >= 32 || !(islower(c) || isdigit(c) || c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static void remove_tree_depth(int dfd, int depth)
{
	struct dirent *e;
	DIR *d = fdopendir(dfd);

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR)
			continue;
		if (depth < 16) {
			sub = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				remove_tree_depth(sub, depth + 1);
		}
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int syn__write_tmp_at(int dfd, const char *tmp, const void *text, size_t len, unsigned mode)
{
	int fd, e;

	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	if (fd < 0)
		return -1;
	/* The mode exactly, whatever the umask. */
	if (fchmod(fd, (mode_t)mode) < 0 || write(fd, text, len) != (ssize_t)len) {
		e = errno;
		close(fd);
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	if (close(fd) != 0) {
		e = errno;
		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	return 0;
}

void syn__remove_tree(int dfd)
{
	remove_tree_depth(dfd, 0);
}
