/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/kv.c: the Key=Value reader (see kv.h).
 *
 * The whole file is read into memory and split in place; entries keep
 * pointers into that copy, so a handle is three allocations however many
 * keys it has. The files are small and read once per process (or per
 * job_submit call in slurmctld), so a linear lookup is the simple choice.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/file.h"
#include "common/kv.h"

struct kv_entry {
	const char *section, *key, *value;
	int line;
};

struct syn_kv {
	char *name;
	char *text; /* owned copy, split in place */
	size_t len; /* its size, to wipe it */
	struct kv_entry *ent;
	int n, cap;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

static char *trim(char *s)
{
	char *e;

	while (*s && is_space(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_space(e[-1]))
		*--e = '\0';
	return s;
}

static int key_ok(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_' || *k == '-' || *k == '.'))
			return 0;
	return 1;
}

static int same_section(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void syn_kv_destroy(syn_kv_t *kv)
{
	if (kv) {
		int e = errno;
		free(kv->name);
		/* A value may be a secret (AWS credentials): wipe it. */
		if (kv->text)
			explicit_bzero(kv->text, kv->len);
		free(kv->text);
		free(kv->ent);
		free(kv);
		errno = e;
	}
}

static int add(syn_kv_t *kv, const char *section, const char *key, const char *value, int line)
{
	if (kv->n == kv->cap) {
		int nc = kv->cap ? 2 * kv->cap : 16;
		struct kv_entry *ne = realloc(kv->ent, (size_t)nc * sizeof(*ne));
		if (!ne)
			return -1;
		kv->ent = ne;
		kv->cap = nc;
	}
	kv->ent[kv->n++] = (struct kv_entry){ section, key, value, line };
	return 0;
}

syn_kv_t *syn_kv_parse(const char *text, const char *name, unsigned flags, syn_error_t *err)
{
	const char *nm = name ? name : "<string>", *section = NULL;
	int strict = !(flags & SYN_KV_LENIENT), ini = !!(flags & SYN_KV_INI);
	syn_kv_t *kv = NULL;
	char *line, *next;
	int lineno = 0;

	if (!text) {
		syn_errprintf(err, EINVAL, "%s: no text", nm);
		return NULL;
	}
	if (!(kv = calloc(1, sizeof(*kv))) || !(kv->name = strdup(nm)) ||
	    !(kv->text = strdup(text)))
		goto nomem;
	kv->len = strlen(text);
	/* strtok_r would merge empty lines and so miscount them: split by hand. */
	for (line = kv->text; line; line = next) {
		char *l, *eq, *k, *v;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		lineno++;
		if (!ini && (eq = strchr(line, '#')))
			*eq = '\0';
		l = trim(line);
		if (!*l || (ini && (*l == '#' || *l == ';')))
			continue;
		if (ini && *l == '[') {
			char *e = strchr(l, ']');
			/* Not quoted: the file may hold secrets. */
			if (!e) {
				syn_errprintf(err, EINVAL, "%s:%d: expected '[section]'", nm,
					      lineno);
				goto fail;
			}
			*e = '\0';
			section = trim(l + 1);
			if (add(kv, section, NULL, NULL, lineno) < 0)
				goto nomem;
			continue;
		}
		if (!(eq = strchr(l, '='))) {
			if (strict) {
				syn_errprintf(err, EINVAL, "%s:%d: expected Key=Value, got '%.60s'",
					      nm, lineno, ini ? "..." : l);
				goto fail;
			}
			if (add(kv, section, l, NULL, lineno) < 0)
				goto nomem;
			continue;
		}
		*eq = '\0';
		k = trim(l);
		v = trim(eq + 1);
		if (strict && !key_ok(k)) {
			syn_errprintf(err, EINVAL,
				      "%s:%d: invalid key '%.60s' (letters, digits, _ - . only)",
				      nm, lineno, k);
			goto fail;
		}
		for (int i = 0; strict && i < kv->n; i++) {
			if (kv->ent[i].key && same_section(kv->ent[i].section, section) &&
			    strcasecmp(kv->ent[i].key, k) == 0) {
				syn_errprintf(err, EINVAL, "%s:%d: key '%s' already set on line %d",
					      nm, lineno, k, kv->ent[i].line);
				goto fail;
			}
		}
		if (add(kv, section, k, v, lineno) < 0)
			goto nomem;
	}
	return kv;
nomem:
	syn_errprintf(err, ENOMEM, "%s: out of memory", nm);
fail:
	syn_kv_destroy(kv);
	return NULL;
}

syn_kv_t *syn_kv_load(const char *path, unsigned flags, syn_error_t *err)
{
	syn_kv_t *kv = NULL;
	char *buf;
	size_t n;

	if (!path || !*path) {
		syn_errprintf(err, EINVAL, "no file name");
		return NULL;
	}
	if (!(buf = syn_file_read(AT_FDCWD, path, SYN_KV_FILE_MAX, SYN_FILE_FOLLOW, &n))) {
		if (errno == EFBIG)
			syn_errprintf(err, EFBIG, "%s: larger than %d bytes", path,
				      SYN_KV_FILE_MAX);
		else
			syn_errprintf(err, errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (memchr(buf, '\0', n))
		syn_errprintf(err, EINVAL, "%s: contains a NUL byte; not a text file", path);
	else
		kv = syn_kv_parse(buf, path, flags, err);
	{
		int e = errno;
		explicit_bzero(buf, n);
		free(buf);
		errno = e;
	}
	return kv;
}

const char *syn_kv_name(const syn_kv_t *kv)
{
	return kv ? kv->name : NULL;
}

const char *syn_kv_get(const syn_kv_t *kv, const char *section, const char *key)
{
	if (!kv || !key)
		return NULL;
	for (int i = kv->n - 1; i >= 0; i--)
		if (kv->ent[i].key && kv->ent[i].value &&
		    same_section(kv->ent[i].section, section) &&
		    strcasecmp(kv->ent[i].key, key) == 0)
			return kv->ent[i].value;
	return NULL;
}

int syn_kv_foreach(const syn_kv_t *kv,
		   int (*fn)(const char *section, const char *key, const char *value, int line,
			     void *arg),
		   void *arg)
{
	if (!kv || !fn)
		return 0;
	for (int i = 0; i < kv->n; i++) {
		int rc = fn(kv->ent[i].section, kv->ent[i].key, kv->ent[i].value, kv->ent[i].line,
			    arg);
		if (rc)
			return rc;
	}
	return 0;
}
