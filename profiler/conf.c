/*
 * conf.c: the synergy.conf reader (see synergy_conf.h).
 *
 * The whole file is read into memory and split in place; entries keep
 * pointers into that copy, so a handle is two allocations however many
 * keys it has. The file is small and read once per process (or per
 * job_submit call in slurmctld), so a linear lookup is the simple choice.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "synergy_conf.h"
#include "errprintf.h"

#define CONF_FILE_MAX (1024 * 1024)

struct conf_entry {
	const char *key, *value;
	int line;
};

struct syn_conf {
	char *path;
	char *text;              /* owned copy, split in place */
	struct conf_entry *ent;
	int n, cap;
};

static char *trim(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int key_ok(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_' && *k != '-' && *k != '.')
			return 0;
	return 1;
}

void syn_conf_destroy(syn_conf_t *c)
{
	if (c) {
		int e = errno;
		free(c->path);
		free(c->text);
		free(c->ent);
		free(c);
		errno = e;
	}
}

syn_conf_t *syn_conf_parse(const char *text, const char *name, syn_conf_error_t *err)
{
	syn_conf_t *c = NULL;
	const char *nm = name ? name : "<string>";

	if (!text) {
		SYN__ERR(err, EINVAL, "%s: no text", nm);
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c))) || !(c->path = strdup(nm)) || !(c->text = strdup(text)))
		goto nomem;
	int lineno = 0;
	char *save = NULL;
	/* strtok_r would merge empty lines and so miscount them: split by hand. */
	for (char *line = c->text; line; line = save) {
		char *nl = strchr(line, '\n');
		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = '\0';
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *l = trim(line);
		if (!*l)
			continue;
		char *eq = strchr(l, '=');
		if (!eq) {
			SYN__ERR(err, EINVAL, "%s:%d: expected Key=Value, got '%.60s'", nm, lineno, l);
			goto fail;
		}
		*eq = '\0';
		char *k = trim(l), *v = trim(eq + 1);
		if (!key_ok(k)) {
			SYN__ERR(err, EINVAL, "%s:%d: invalid key '%.60s' (letters, digits, _ - . only)",
			         nm, lineno, k);
			goto fail;
		}
		for (int i = 0; i < c->n; i++)
			if (strcasecmp(c->ent[i].key, k) == 0) {
				SYN__ERR(err, EINVAL, "%s:%d: key '%s' already set on line %d",
				         nm, lineno, k, c->ent[i].line);
				goto fail;
			}
		if (c->n == c->cap) {
			int nc = c->cap ? 2 * c->cap : 16;
			struct conf_entry *ne = realloc(c->ent, (size_t)nc * sizeof(*ne));
			if (!ne)
				goto nomem;
			c->ent = ne;
			c->cap = nc;
		}
		c->ent[c->n++] = (struct conf_entry){ k, v, lineno };
	}
	return c;
nomem:
	SYN__ERR(err, ENOMEM, "%s: out of memory", nm);
fail:
	syn_conf_destroy(c);
	return NULL;
}

const char *syn_conf_default_path(char *buf, size_t len)
{
	const char *env = getenv(SYN_CONF_ENV), *sc = getenv("SLURM_CONF"), *slash;

	if (env && *env)
		return env;
	/* Beside slurm.conf: a cluster whose slurm.conf is elsewhere keeps
	 * synergy.conf with it, and slurmctld, slurmd and every user command
	 * see the same SLURM_CONF. */
	if (sc && *sc && (slash = strrchr(sc, '/')) && buf && len > 0) {
		int n = snprintf(buf, len, "%.*s/synergy.conf", (int)(slash - sc), sc);
		if (n > 0 && (size_t)n < len)
			return buf;
	}
	return SYN_CONF_DEFAULT_PATH;
}

syn_conf_t *syn_conf_load(const char *path, syn_conf_error_t *err)
{
	syn_conf_t *c = NULL;
	FILE *f = NULL;
	char *buf = NULL;
	struct stat st;
	char def[4096];

	if (!path)
		path = syn_conf_default_path(def, sizeof(def));
	if (!(f = fopen(path, "re"))) {
		SYN__ERR(err, errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fileno(f), &st) < 0) {
		SYN__ERR(err, errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (st.st_size > CONF_FILE_MAX) {
		SYN__ERR(err, EFBIG, "%s: larger than %d bytes", path, CONF_FILE_MAX);
		goto out;
	}
	if (!(buf = malloc(CONF_FILE_MAX + 1))) {
		SYN__ERR(err, ENOMEM, "%s: out of memory", path);
		goto out;
	}
	size_t n = fread(buf, 1, CONF_FILE_MAX + 1, f);
	if (ferror(f)) {
		SYN__ERR(err, EIO, "%s: read error", path);
		goto out;
	}
	if (n > CONF_FILE_MAX) {
		SYN__ERR(err, EFBIG, "%s: larger than %d bytes", path, CONF_FILE_MAX);
		goto out;
	}
	if (memchr(buf, '\0', n)) {
		SYN__ERR(err, EINVAL, "%s: contains a NUL byte; not a text file", path);
		goto out;
	}
	buf[n] = '\0';
	c = syn_conf_parse(buf, path, err);
out:
	{
		int e = errno;
		if (f)
			fclose(f);
		free(buf);
		errno = e;
	}
	return c;
}

const char *syn_conf_path(const syn_conf_t *c)
{
	return c ? c->path : NULL;
}

const char *syn_conf_get(const syn_conf_t *c, const char *key)
{
	if (!c || !key)
		return NULL;
	for (int i = 0; i < c->n; i++)
		if (strcasecmp(c->ent[i].key, key) == 0)
			return c->ent[i].value;
	return NULL;
}

int syn_conf_foreach(const syn_conf_t *c,
                     int (*fn)(const char *key, const char *value, int line, void *arg),
                     void *arg)
{
	if (!c || !fn)
		return 0;
	for (int i = 0; i < c->n; i++) {
		int rc = fn(c->ent[i].key, c->ent[i].value, c->ent[i].line, arg);
		if (rc)
			return rc;
	}
	return 0;
}
