/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/store.c: the profile store, one JSON file per key in a directory,
 * and the profile file write both it and `synergy-profile run --out` use.
 *
 * Writes are common/file.h's atomic writes: a temporary file beside the
 * target, renamed over it, so readers get either the old inode or the new
 * one, each complete. Temporary names start with '.', which is not a valid
 * first character of a key, so listing never mistakes one for a profile.
 * No locks are taken: a reader inside slurmctld never waits for a writer.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/store.h"

struct syn_store {
	char *dir;
};

/* fsync a directory so that an unlink in it is durable. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int syn_profile_write_file(const char *path, const syn_profile_t *p, syn_error_t *err)
{
	char *text;
	int rv = 0;

	if (!path || !*path)
		return syn_errprintf(err, EINVAL, "no output path");
	if (!(text = syn_profile_format(p, err)))
		return -1;
	if (syn_file_write_atomic(AT_FDCWD, path, text, strlen(text), 0644) < 0)
		rv = syn_errprintf(err, errno, "%s: %s", path, strerror(errno));
	{
		int e = errno;
		free(text);
		errno = e;
	}
	return rv;
}

syn_store_t *syn_store_create(const char *dir, int flags, syn_error_t *err)
{
	syn_store_t *s = NULL;
	struct stat st;

	if (!dir || !*dir) {
		syn_errprintf(err, EINVAL, "no profile store directory given");
		return NULL;
	}
	if (flags & ~SYN_STORE_CREATE) {
		syn_errprintf(err, EINVAL, "profile store %s: unknown flags 0x%x", dir, flags);
		return NULL;
	}
	if ((flags & SYN_STORE_CREATE) && mkdir(dir, 0755) < 0 && errno != EEXIST) {
		syn_errprintf(err, errno, "profile store %s: cannot create: %s", dir,
			      strerror(errno));
		return NULL;
	}
	if (stat(dir, &st) < 0) {
		syn_errprintf(err, errno, "profile store %s: %s", dir, strerror(errno));
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		syn_errprintf(err, ENOTDIR, "profile store %s: not a directory", dir);
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s))) || !(s->dir = strdup(dir))) {
		free(s);
		syn_errprintf(err, ENOMEM, "profile store %s: out of memory", dir);
		return NULL;
	}
	return s;
}

void syn_store_destroy(syn_store_t *s)
{
	if (s) {
		int e = errno;
		free(s->dir);
		free(s);
		errno = e;
	}
}

const char *syn_store_dir(const syn_store_t *s)
{
	return s ? s->dir : NULL;
}

int syn_store_path(const syn_store_t *s, const char *key, char *buf, size_t len,
                   syn_error_t *err)
{
	if (!s || !key || !syn_key_valid(key))
		return syn_errprintf(err, EINVAL, "invalid profile key '%.80s': expected 1..%d of "
				     "[A-Za-z0-9_.-], not starting with '.'", key ? key : "(null)",
				     SYN_PROFILE_KEY_MAX);
	int n = snprintf(buf, len, "%s/%s.json", s->dir, key);
	if (n < 0 || (size_t)n >= len)
		return syn_errprintf(err, ENAMETOOLONG,
				     "profile store %s: path for key '%s' too long", s->dir, key);
	return 0;
}

/* Read the profile at path into p, which must be key's (the file's name says
 * which key it holds). 0, or -1 with errno and err. */
static int read_keyed(const char *path, const char *key, syn_profile_t *p, syn_error_t *err)
{
	if (syn_profile_read_file(path, p, err) < 0)
		return -1;
	if (strcmp(p->key, key) != 0)
		return syn_errprintf(err, EINVAL, "%s: field 'key' is \"%s\", expected \"%s\" from "
				     "the file name", path, p->key, key);
	return 0;
}

int syn_store_get(syn_store_t *s, const char *key, syn_profile_t *p, syn_error_t *err)
{
	char path[PATH_MAX];
	syn_profile_t *tmp = NULL;
	int rv = -1;

	if (syn_store_path(s, key, path, sizeof(path), err) < 0)
		return -1;
	if (!(tmp = malloc(sizeof(*tmp))))
		return syn_errprintf(err, ENOMEM, "%s: out of memory", path);
	if (read_keyed(path, key, tmp, err) < 0)
		goto out;
	*p = *tmp;
	rv = 0;
out:
	{
		int e = errno;
		free(tmp);
		errno = e;
	}
	return rv;
}

/* The path of uid's own profile of key (its directory when key is NULL). */
static int user_path(const syn_store_t *s, uint32_t uid, const char *key, char *buf, size_t len,
                     syn_error_t *err)
{
	int n;

	if (key && !syn_key_valid(key))
		return syn_errprintf(err, EINVAL,
				     "invalid profile key '%.80s': expected 1..%d of "
				     "[A-Za-z0-9_.-], not starting with '.'",
				     key, SYN_PROFILE_KEY_MAX);
	n = snprintf(buf, len, "%s/" SYN_STORE_USER_DIR "/%u%s%s%s", s->dir, (unsigned)uid,
	             key ? "/" : "", key ? key : "", key ? ".json" : "");
	if (n < 0 || (size_t)n >= len)
		return syn_errprintf(err, ENAMETOOLONG,
				     "profile store %s: path for uid %u too long", s->dir,
				     (unsigned)uid);
	return 0;
}

int syn_store_get_for(syn_store_t *s, const char *key, uint32_t uid, syn_profile_t *p,
                      syn_error_t *err)
{
	char path[PATH_MAX];
	syn_profile_t *tmp = NULL;
	int rv = -1;

	if (!s || !p)
		return syn_errprintf(err, EINVAL, "no store or no profile to fill");
	if (!(tmp = malloc(sizeof(*tmp))))
		return syn_errprintf(err, ENOMEM, "profile store %s: out of memory", s->dir);
	if (syn_store_get(s, key, tmp, err) == 0) {
		if (!tmp->has_owner || tmp->owner == uid) {
			*p = *tmp;
			rv = 0;
			goto out;
		}
		/* Another user's profile filed as shared: not for uid. */
	} else if (errno != ENOENT) {
		goto out;
	}
	if (user_path(s, uid, key, path, sizeof(path), err) < 0 ||
	    read_keyed(path, key, tmp, err) < 0)
		goto out;
	if (!tmp->has_owner || tmp->owner != uid) {
		syn_errprintf(err, EINVAL,
			      "%s: field 'owner' must be %u, the uid it is filed under", path,
			      (unsigned)uid);
		goto out;
	}
	*p = *tmp;
	rv = 0;
out:
	{
		int e = errno;
		free(tmp);
		errno = e;
	}
	return rv;
}

int syn_store_put_owned(syn_store_t *s, const syn_profile_t *p, syn_error_t *err)
{
	char path[PATH_MAX];

	if (!s || !p)
		return syn_errprintf(err, EINVAL, "no store or no profile");
	if (!p->has_owner)
		return syn_errprintf(err, EINVAL, "profile '%.64s' has no owner: file it with "
				     "syn_store_put()", p->key);
	if (snprintf(path, sizeof(path), "%s/" SYN_STORE_USER_DIR, s->dir) >= (int)sizeof(path))
		return syn_errprintf(err, ENAMETOOLONG, "profile store %s: path too long", s->dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return syn_errprintf(err, errno, "%s: cannot create: %s", path, strerror(errno));
	if (user_path(s, p->owner, NULL, path, sizeof(path), err) < 0)
		return -1;
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return syn_errprintf(err, errno, "%s: cannot create: %s", path, strerror(errno));
	if (user_path(s, p->owner, p->key, path, sizeof(path), err) < 0)
		return -1;
	return syn_profile_write_file(path, p, err);
}

int syn_store_put(syn_store_t *s, const syn_profile_t *p, syn_error_t *err)
{
	char path[PATH_MAX];

	if (!s || !p)
		return syn_errprintf(err, EINVAL, "no store or no profile");
	if (syn_store_path(s, p->key, path, sizeof(path), err) < 0)
		return -1;
	return syn_profile_write_file(path, p, err);
}

int syn_store_remove(syn_store_t *s, const char *key, syn_error_t *err)
{
	char path[PATH_MAX];

	if (syn_store_path(s, key, path, sizeof(path), err) < 0)
		return -1;
	if (unlink(path) < 0)
		return syn_errprintf(err, errno, "%s: %s", path, strerror(errno));
	if (sync_dir(s->dir) < 0)
		return syn_errprintf(err, errno, "%s: fsync: %s", s->dir, strerror(errno));
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int syn_store_list(syn_store_t *s, syn_store_list_f cb, void *arg, syn_error_t *err)
{
	DIR *d = NULL;
	char **keys = NULL;
	size_t n = 0, cap = 0;
	int rv = -1, good = 0;
	syn_profile_t *p = NULL;
	syn_error_t perr;

	if (!s || !cb)
		return syn_errprintf(err, EINVAL, "no store or no callback");
	if (!(d = opendir(s->dir))) {
		syn_errprintf(err, errno, "profile store %s: %s", s->dir, strerror(errno));
		goto out;
	}
	/* Collect the names first and sort them so the order is stable
	 * (readdir order depends on the file system). */
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		char *k = strndup(de->d_name, len - 5);
		if (!k)
			goto nomem;
		if (!syn_key_valid(k)) {
			free(k);
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 32;
			char **nk = realloc(keys, nc * sizeof(*nk));
			if (!nk) {
				free(k);
				goto nomem;
			}
			keys = nk;
			cap = nc;
		}
		keys[n++] = k;
		errno = 0;
	}
	if (errno) {
		syn_errprintf(err, errno, "profile store %s: %s", s->dir, strerror(errno));
		goto out;
	}
	if (n)
		qsort(keys, n, sizeof(*keys), cmp_str);
	if (!(p = malloc(sizeof(*p))))
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		int stop;
		if (syn_store_get(s, keys[i], p, &perr) == 0) {
			good++;
			stop = cb(keys[i], p, NULL, arg);
		} else if (errno == ENOENT) {
			continue; /* removed since we listed it */
		} else {
			stop = cb(keys[i], NULL, perr.text, arg);
		}
		if (stop)
			break;
	}
	rv = good;
	goto out;
nomem:
	syn_errprintf(err, ENOMEM, "profile store %s: out of memory", s->dir);
out:
	{
		int e = errno;
		if (d)
			closedir(d);
		for (size_t i = 0; i < n; i++)
			free(keys[i]);
		free(keys);
		free(p);
		errno = e;
	}
	return rv;
}
