/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * source.c: ImageFolder, file list and shard sources (see source.h).
 *
 * Items live in one array with their names in a single string pool, so a
 * dataset of a million files costs two allocations, not a million. The
 * ImageFolder scan follows torchvision: class = sorted subdirectory names,
 * files sorted within each class, extensions .jpg/.jpeg in any case.
 *
 * Shard index (.cdx), a text file written by coordl-pack:
 *   coordl-index 1
 *   classes C            followed by C lines: class name
 *   shards S             followed by S lines: shard file, relative to the index
 *   items N              followed by N lines: shard offset length label name
 * Every number is checked against the limits it must respect (shard < S,
 * offset + length within the shard file, label < C) so that a damaged index
 * is an error at open, not a wild read later.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/parse.h"
#include "loader/env.h"
#include "loader/remote.h"
#include "loader/rng.h"
#include "loader/source.h"
#include "loader/util.h"

typedef struct item {
	uint64_t offset;   /* within the shard (shards only) */
	uint64_t size;     /* encoded bytes seen at open */
	size_t name;       /* offset of the name in the string pool */
	int32_t label;
	uint32_t shard;
} item_t;

/* A backend's fetch: read item i, growing *buf as needed. */
typedef int fetch_fn(coordl__source_t *src, size_t i, uint8_t **buf, size_t *cap, size_t *len,
		     char *why, size_t whylen);

struct coordl__source {
	int kind;
	char *root;              /* directory item names are relative to */
	item_t *items;
	size_t n, cap;
	char *pool;              /* item and class names, NUL-separated */
	size_t pool_len, pool_cap;
	size_t *classes;         /* pool offsets of class names */
	int nclasses;
	int *shard_fd;
	int nshards;
	uint64_t bytes;
	uint64_t max_item;       /* largest item fetched, 0 = no limit */
	fetch_fn *fetch;
	coordl__remote_t *remote; /* remote datasets (remote.h), else NULL */
};

/* Append a string to the pool; returns its offset or (size_t)-1. */
static size_t pool_add(coordl__source_t *s, const char *str)
{
	size_t l = strlen(str) + 1;
	size_t off;

	if (s->pool_len + l > s->pool_cap) {
		size_t nc = s->pool_cap ? s->pool_cap * 2 : 4096;
		while (nc < s->pool_len + l)
			nc *= 2;
		char *p = realloc(s->pool, nc);
		if (!p)
			return (size_t)-1;
		s->pool = p;
		s->pool_cap = nc;
	}
	off = s->pool_len;
	memcpy(s->pool + off, str, l);
	s->pool_len += l;
	return off;
}

static int item_add(coordl__source_t *s, const char *name, int32_t label, uint64_t size,
		    uint32_t shard, uint64_t offset)
{
	item_t *it;

	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 1024;
		item_t *p = realloc(s->items, nc * sizeof(*p));
		if (!p)
			return -1;
		s->items = p;
		s->cap = nc;
	}
	it = &s->items[s->n];
	if ((it->name = pool_add(s, name)) == (size_t)-1)
		return -1;
	it->label = label;
	it->size = size;
	it->shard = shard;
	it->offset = offset;
	s->bytes += size;
	s->n++;
	return 0;
}

static int class_add(coordl__source_t *s, const char *name)
{
	size_t *p = realloc(s->classes, (size_t)(s->nclasses + 1) * sizeof(*p));
	size_t off;

	if (!p)
		return -1;
	s->classes = p;
	if ((off = pool_add(s, name)) == (size_t)-1)
		return -1;
	s->classes[s->nclasses++] = off;
	return 0;
}

/* Read exactly len bytes at offset off (pread loops over short reads). */
static int read_full(int fd, uint8_t *dst, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, dst + done, len - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}

/* Refuse an item beyond the item limit before any byte is read. */
static int check_size(const coordl__source_t *src, uint64_t size, char *why, size_t whylen)
{
	if (src->max_item && size > src->max_item) {
		snprintf(why, whylen, "%llu bytes, beyond the item limit of %llu bytes",
			 (unsigned long long)size, (unsigned long long)src->max_item);
		errno = EFBIG;
		return -1;
	}
	return 0;
}

/* Make room for want bytes in the caller's per-thread buffer. */
static int reserve(uint8_t **buf, size_t *cap, size_t want, char *why, size_t whylen)
{
	uint8_t *p;

	if (want <= *cap)
		return 0;
	if (!(p = realloc(*buf, want))) {
		snprintf(why, whylen, "out of memory for %zu bytes", want);
		errno = ENOMEM;
		return -1;
	}
	*buf = p;
	*cap = want;
	return 0;
}

/* Files backend: one open per item, path = root/name. The size comes from
 * fstat at read time, not from the scan, so a file truncated since then is
 * read as it is now (and then fails to decode). Symbolic links are
 * followed (datasets use them); O_NONBLOCK keeps a FIFO or a device named
 * in a file list from blocking the open, and fstat then refuses anything
 * but a regular file. */
static int files_fetch(coordl__source_t *src, size_t i, uint8_t **buf, size_t *cap, size_t *len,
		       char *why, size_t whylen)
{
	char path[PATH_MAX];
	const char *name = src->pool + src->items[i].name;
	struct stat st;
	int fd, rv = -1, e;

	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else if ((size_t)snprintf(path, sizeof(path), "%s/%s", src->root, name) >= sizeof(path)) {
		snprintf(why, whylen, "path too long");
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		e = errno;
		snprintf(why, whylen, "open: %s", strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(why, whylen, "fstat: %s", strerror(e));
		errno = e;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		errno = EINVAL;
		goto out;
	}
	if (check_size(src, (uint64_t)st.st_size, why, whylen) < 0 ||
	    reserve(buf, cap, (size_t)st.st_size, why, whylen) < 0)
		goto out;
	if (read_full(fd, *buf, (size_t)st.st_size, 0) < 0) {
		e = errno;
		snprintf(why, whylen, "read: %s", strerror(e));
		errno = e;
		goto out;
	}
	*len = (size_t)st.st_size;
	rv = 0;
out:
	e = errno;
	close(fd);
	errno = e;
	return rv;
}

/* Shards backend: pread from a shard opened once at open. */
static int shards_fetch(coordl__source_t *src, size_t i, uint8_t **buf, size_t *cap, size_t *len,
			char *why, size_t whylen)
{
	const item_t *it = &src->items[i];

	if (check_size(src, it->size, why, whylen) < 0 ||
	    reserve(buf, cap, (size_t)it->size, why, whylen) < 0)
		return -1;
	if (read_full(src->shard_fd[it->shard], *buf, (size_t)it->size, it->offset) < 0) {
		int e = errno;
		snprintf(why, whylen, "shard %u read: %s", it->shard, strerror(e));
		errno = e;
		return -1;
	}
	*len = (size_t)it->size;
	return 0;
}

void coordl__source_set_max_item(coordl__source_t *src, uint64_t max_bytes)
{
	if (src)
		src->max_item = max_bytes;
}

int coordl__source_fetch(coordl__source_t *src, size_t i, uint8_t **buf, size_t *cap,
			 size_t *len, char *why, size_t whylen)
{
	if (!src || i >= src->n) {
		snprintf(why, whylen, "no such item");
		errno = EINVAL;
		return -1;
	}
	if (src->fetch(src, i, buf, cap, len, why, whylen) < 0)
		return -1;
	/* Whatever the backend: nothing beyond the limit goes on. */
	return check_size(src, *len, why, whylen);
}

static int is_jpeg_name(const char *n)
{
	const char *dot = strrchr(n, '.');

	return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir that satisfy want(dirfd, name); NULL-safe free with free_names. */
static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static char **list_dir(int dfd, int want_dirs, size_t *count)
{
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;
	int fd = dup(dfd);

	if (fd < 0)
		return NULL;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return NULL;
	}
	rewinddir(d);
	while ((errno = 0, de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dfd, de->d_name, &st, 0) < 0)
			continue;
		if (want_dirs ? !S_ISDIR(st.st_mode)
			      : !(S_ISREG(st.st_mode) && is_jpeg_name(de->d_name)))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **p = realloc(v, nc * sizeof(*p));
			if (!p)
				goto fail;
			v = p;
			cap = nc;
		}
		if (!(v[n] = strdup(de->d_name)))
			goto fail;
		n++;
	}
	if (errno)
		goto fail;
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	else if (!v && !(v = malloc(sizeof(*v))))
		return NULL;
	*count = n;
	return v;
fail:
	{
		int e = errno ? errno : ENOMEM;
		closedir(d);
		free_names(v, n);
		errno = e;
	}
	return NULL;
}

static int open_imagefolder(coordl__source_t *s, coordl_error_t *err)
{
	int rv = -1, root = -1;
	char **cls = NULL;
	size_t ncls = 0;
	char name[PATH_MAX];

	if ((root = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		coordl__errprintf(err, errno, "%s: %s", s->root, strerror(errno));
		goto out;
	}
	if (!(cls = list_dir(root, 1, &ncls))) {
		coordl__errprintf(err, errno, "%s: %s", s->root, strerror(errno));
		goto out;
	}
	if (ncls == 0 || ncls > INT32_MAX) {
		coordl__errprintf(err, ENOENT, "%s: no class directories (expected root/<class>/<file>.jpg)",
				  s->root);
		goto out;
	}
	for (size_t c = 0; c < ncls; c++) {
		int cfd;
		char **files;
		size_t nf = 0;

		if (class_add(s, cls[c]) < 0) {
			coordl__errprintf(err, ENOMEM, "%s: out of memory", s->root);
			goto out;
		}
		if ((cfd = openat(root, cls[c], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
			coordl__errprintf(err, errno, "%s/%s: %s", s->root, cls[c], strerror(errno));
			goto out;
		}
		files = list_dir(cfd, 0, &nf);
		if (!files) {
			coordl__errprintf(err, errno, "%s/%s: %s", s->root, cls[c], strerror(errno));
			close(cfd);
			goto out;
		}
		for (size_t f = 0; f < nf; f++) {
			struct stat st;
			uint64_t size = 0;
			if (fstatat(cfd, files[f], &st, 0) == 0)
				size = (uint64_t)st.st_size;
			snprintf(name, sizeof(name), "%s/%s", cls[c], files[f]);
			if (item_add(s, name, (int32_t)c, size, 0, 0) < 0) {
				free_names(files, nf);
				close(cfd);
				coordl__errprintf(err, ENOMEM, "%s: out of memory", s->root);
				goto out;
			}
		}
		free_names(files, nf);
		close(cfd);
	}
	if (s->n == 0) {
		coordl__errprintf(err, ENOENT, "%s: no .jpg/.jpeg files under the class directories",
				  s->root);
		goto out;
	}
	s->fetch = files_fetch;
	rv = 0;
out:
	free_names(cls, ncls);
	if (root >= 0)
		close(root);
	return rv;
}

/* Trim trailing newline / CR / spaces in place. */
static void rtrim(char *l)
{
	size_t n = strlen(l);

	while (n && isspace((unsigned char)l[n - 1]))
		l[--n] = '\0';
}

static int open_filelist(coordl__source_t *s, const char *path, coordl_error_t *err)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t lcap = 0;
	long lineno = 0;
	int rv = -1, maxlabel = -1;

	if (!(f = fopen(path, "re"))) {
		coordl__errprintf(err, errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	while (getline(&line, &lcap, f) >= 0) {
		char *sp, *p;
		int64_t label;
		struct stat st;
		char full[PATH_MAX];
		uint64_t size = 0;

		lineno++;
		rtrim(line);
		for (p = line; isspace((unsigned char)*p); p++)
			;
		if (*p == '\0' || *p == '#')
			continue;
		/* The label is the last field, so paths may contain spaces. */
		sp = p + strlen(p);
		while (sp > p && !isspace((unsigned char)sp[-1]))
			sp--;
		if (sp == p) {
			coordl__errprintf(err, EINVAL, "%s:%ld: expected '<path> <label>'", path, lineno);
			goto out;
		}
		if (syn_parse_i64(sp, 0, INT32_MAX - 1, &label) < 0) {
			coordl__errprintf(err, EINVAL, "%s:%ld: label '%.20s' is not an integer 0..%d",
					  path, lineno, sp, INT32_MAX - 1);
			goto out;
		}
		while (sp > p && isspace((unsigned char)sp[-1]))
			sp--;
		*sp = '\0';
		if (p[0] == '/')
			snprintf(full, sizeof(full), "%s", p);
		else
			snprintf(full, sizeof(full), "%s/%s", s->root, p);
		/* A missing file stays in the list: it is replaced at fetch time
		 * like a corrupt one, so one bad line does not stop a job. */
		if (stat(full, &st) == 0)
			size = (uint64_t)st.st_size;
		if (item_add(s, p, (int32_t)label, size, 0, 0) < 0) {
			coordl__errprintf(err, ENOMEM, "%s: out of memory", path);
			goto out;
		}
		if (label > maxlabel)
			maxlabel = (int)label;
	}
	if (ferror(f)) {
		coordl__errprintf(err, EIO, "%s: read error", path);
		goto out;
	}
	if (s->n == 0) {
		coordl__errprintf(err, ENOENT, "%s: the file list has no items", path);
		goto out;
	}
	s->nclasses = maxlabel + 1;
	s->fetch = files_fetch;
	rv = 0;
out:
	free(line);
	if (f)
		fclose(f);
	return rv;
}

/* Read one line of the index into *line; returns 0 or -1 at EOF. */
static int next_line(FILE *f, char **line, size_t *cap, long *lineno)
{
	if (getline(line, cap, f) < 0)
		return -1;
	(*lineno)++;
	rtrim(*line);
	return 0;
}

static int open_shards(coordl__source_t *s, const char *path, coordl_error_t *err)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t lcap = 0;
	long lineno = 0;
	uint64_t nc, ns, ni;
	uint64_t *shard_size = NULL;
	int rv = -1;

	if (!(f = fopen(path, "re"))) {
		coordl__errprintf(err, errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (next_line(f, &line, &lcap, &lineno) < 0 || strcmp(line, COORDL__INDEX_MAGIC) != 0) {
		coordl__errprintf(err, EINVAL, "%s:1: not a coordl shard index (expected '%s')", path,
				  COORDL__INDEX_MAGIC);
		goto out;
	}
	if (next_line(f, &line, &lcap, &lineno) < 0 ||
	    coordl__header_count(line, "classes", INT32_MAX, &nc) < 0 || nc == 0) {
		coordl__errprintf(err, EINVAL, "%s:%ld: expected 'classes <n>' with n >= 1", path, lineno);
		goto out;
	}
	for (uint64_t c = 0; c < nc; c++) {
		if (next_line(f, &line, &lcap, &lineno) < 0) {
			coordl__errprintf(err, EINVAL, "%s:%ld: missing class names", path, lineno);
			goto out;
		}
		if (class_add(s, line) < 0) {
			coordl__errprintf(err, ENOMEM, "%s: out of memory", path);
			goto out;
		}
	}
	if (next_line(f, &line, &lcap, &lineno) < 0 ||
	    coordl__header_count(line, "shards", 1 << 20, &ns) < 0 || ns == 0) {
		coordl__errprintf(err, EINVAL, "%s:%ld: expected 'shards <n>' with n >= 1", path, lineno);
		goto out;
	}
	if (!(s->shard_fd = malloc(ns * sizeof(int))) || !(shard_size = calloc(ns, sizeof(uint64_t)))) {
		coordl__errprintf(err, ENOMEM, "%s: out of memory", path);
		goto out;
	}
	for (uint64_t i = 0; i < ns; i++) {
		char full[PATH_MAX];
		struct stat st;
		if (next_line(f, &line, &lcap, &lineno) < 0 || !line[0] || strchr(line, '/')) {
			coordl__errprintf(err, EINVAL, "%s:%ld: expected a shard file name (no '/')",
					  path, lineno);
			goto out;
		}
		snprintf(full, sizeof(full), "%s/%s", s->root, line);
		if ((s->shard_fd[i] = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
			coordl__errprintf(err, errno, "%s:%ld: shard %s: %s", path, lineno, full,
					  strerror(errno));
			goto out;
		}
		s->nshards++;
		if (fstat(s->shard_fd[i], &st) < 0) {
			coordl__errprintf(err, errno, "%s: %s", full, strerror(errno));
			goto out;
		}
		if (!S_ISREG(st.st_mode)) {
			coordl__errprintf(err, EINVAL, "%s:%ld: shard %s: not a regular file", path,
					  lineno, full);
			goto out;
		}
		shard_size[i] = (uint64_t)st.st_size;
	}
	if (next_line(f, &line, &lcap, &lineno) < 0 ||
	    coordl__header_count(line, "items", INT64_MAX, &ni) < 0 || ni == 0) {
		coordl__errprintf(err, EINVAL, "%s:%ld: expected 'items <n>' with n >= 1", path, lineno);
		goto out;
	}
	for (uint64_t i = 0; i < ni; i++) {
		uint64_t sh, off, len, lab;
		char *p;

		if (next_line(f, &line, &lcap, &lineno) < 0) {
			coordl__errprintf(err, EINVAL, "%s:%ld: %llu items announced, %llu found", path,
					  lineno, (unsigned long long)ni, (unsigned long long)i);
			goto out;
		}
		p = line;
		if (coordl__field_u64(&p, &sh) < 0 || coordl__field_u64(&p, &off) < 0 ||
		    coordl__field_u64(&p, &len) < 0 || coordl__field_u64(&p, &lab) < 0 || !*p) {
			coordl__errprintf(err, EINVAL,
					  "%s:%ld: expected '<shard> <offset> <length> <label> <name>'",
					  path, lineno);
			goto out;
		}
		if (sh >= ns || lab >= nc || off > shard_size[sh] || len > shard_size[sh] - off ||
		    len > UINT32_MAX) {
			coordl__errprintf(err, EINVAL,
					  "%s:%ld: shard, range or label out of bounds", path, lineno);
			goto out;
		}
		if (item_add(s, p, (int32_t)lab, len, (uint32_t)sh, off) < 0) {
			coordl__errprintf(err, ENOMEM, "%s: out of memory", path);
			goto out;
		}
	}
	if (next_line(f, &line, &lcap, &lineno) == 0) {
		coordl__errprintf(err, EINVAL, "%s:%ld: trailing data after the last item", path, lineno);
		goto out;
	}
	s->fetch = shards_fetch;
	rv = 0;
out:
	free(shard_size);
	free(line);
	if (f)
		fclose(f);
	return rv;
}

coordl__source_t *coordl__source_open(const char *path, int kind, coordl_error_t *err)
{
	coordl__source_t *s = NULL;
	struct stat st;
	int rc = -1;

	if (!path || !*path) {
		coordl__errprintf(err, EINVAL, "path: no dataset given");
		return NULL;
	}
	if (coordl__remote_wants(path, kind))
		return coordl__remote_open(path, kind, err);
	if (stat(path, &st) < 0) {
		coordl__errprintf(err, errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (kind == COORDL_SOURCE_AUTO) {
		size_t l = strlen(path);
		if (S_ISDIR(st.st_mode))
			kind = COORDL_SOURCE_IMAGEFOLDER;
		else if (l > 4 && strcmp(path + l - 4, ".cdx") == 0)
			kind = COORDL_SOURCE_SHARDS;
		else
			kind = COORDL_SOURCE_FILELIST;
	}
	if (kind < COORDL_SOURCE_IMAGEFOLDER || kind > COORDL_SOURCE_SHARDS) {
		coordl__errprintf(err, EINVAL, "source=%d: unknown source kind", kind);
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	s->kind = kind;
	if (kind == COORDL_SOURCE_IMAGEFOLDER) {
		s->root = strdup(path);
	} else {
		/* Lists and indexes name files relative to their own directory. */
		const char *slash = strrchr(path, '/');
		s->root = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	}
	if (!s->root) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	if (kind == COORDL_SOURCE_IMAGEFOLDER)
		rc = open_imagefolder(s, err);
	else if (kind == COORDL_SOURCE_FILELIST)
		rc = open_filelist(s, path, err);
	else
		rc = open_shards(s, path, err);
out:
	if (rc < 0) {
		coordl__source_destroy(s);
		return NULL;
	}
	return s;
}

void coordl__source_destroy(coordl__source_t *s)
{
	int e = errno;

	if (!s)
		return;
	for (int i = 0; i < s->nshards; i++)
		close(s->shard_fd[i]);
	free(s->shard_fd);
	coordl__remote_destroy(s->remote);
	free(s->items);
	free(s->pool);
	free(s->classes);
	free(s->root);
	free(s);
	errno = e;
}

size_t coordl__source_count(const coordl__source_t *s) { return s->n; }
uint64_t coordl__source_bytes(const coordl__source_t *s) { return s->bytes; }
int coordl__source_classes(const coordl__source_t *s) { return s->nclasses; }
int coordl__source_kind(const coordl__source_t *s) { return s->kind; }

const char *coordl__source_class_name(const coordl__source_t *s, int l)
{
	if (l < 0 || l >= s->nclasses || !s->classes)
		return "";
	return s->pool + s->classes[l];
}

int32_t coordl__source_label(const coordl__source_t *s, size_t i) { return s->items[i].label; }
uint64_t coordl__source_item_size(const coordl__source_t *s, size_t i) { return s->items[i].size; }
const char *coordl__source_item_name(const coordl__source_t *s, size_t i)
{
	return s->pool + s->items[i].name;
}

uint64_t coordl__source_signature(const coordl__source_t *s)
{
	uint64_t h = coordl__mix64(s->n);

	for (size_t i = 0; i < s->n; i++)
		h = coordl__mix64(h ^ (s->items[i].size * 0x100000001b3ULL) ^ (uint64_t)s->items[i].label);
	return h;
}

/* ---- Building a source from another backend (remote.c) ------------------ */

coordl__source_t *coordl__source_new(int kind, const char *root)
{
	coordl__source_t *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kind = kind;
	if (!(s->root = strdup(root))) {
		free(s);
		return NULL;
	}
	return s;
}

int coordl__source_add_class(coordl__source_t *s, const char *name)
{
	return class_add(s, name);
}

int coordl__source_add_item(coordl__source_t *s, const char *name, int32_t label, uint64_t size,
			    uint32_t shard, uint64_t offset)
{
	return item_add(s, name, label, size, shard, offset);
}

/* Remote backend: one synchronous request (the loader's fetch engine
 * bypasses this and runs many at once). */
static int remote_fetch(coordl__source_t *src, size_t i, uint8_t **buf, size_t *cap, size_t *len,
			char *why, size_t whylen)
{
	return coordl__remote_fetch_sync(src->remote, src, i, buf, cap, len, why, whylen);
}

void coordl__source_set_remote(coordl__source_t *s, coordl__remote_t *r, int nclasses)
{
	s->remote = r;
	s->fetch = remote_fetch;
	if (nclasses >= 0)
		s->nclasses = nclasses;
}

coordl__remote_t *coordl__source_remote(const coordl__source_t *s) { return s->remote; }
const char *coordl__source_root(const coordl__source_t *s) { return s->root; }
uint32_t coordl__source_item_shard(const coordl__source_t *s, size_t i) { return s->items[i].shard; }
uint64_t coordl__source_item_offset(const coordl__source_t *s, size_t i) { return s->items[i].offset; }
