/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * s3.c: the S3 side of remote datasets (see remote.h): settings from the
 * AWS environment and the shared credentials file, signed requests, and
 * the ListObjectsV2 response parser.
 *
 * Credentials are read into memory owned here, passed to libcurl for
 * signing (CURLOPT_AWS_SIGV4), never formatted into an error text, and
 * wiped when freed. libcurl 7.88 signs the host, the date and exactly the
 * headers set with CURLOPT_HTTPHEADER, and takes the payload hash from
 * x-amz-content-sha256; it signs the URL's path and query as they are, so
 * callers pass the query already in canonical form.
 *
 * The XML parser reads only what ListObjectsV2 and S3 error documents
 * hold (elements without attributes, the five entities and numeric
 * character references); anything else is an error, not a guess.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/kv.h"
#include "common/parse.h"
#include "loader/env.h"
#include "loader/remote.h"
#include "loader/util.h"

/* SHA-256 of the empty string: the payload hash of every GET. */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/* The largest shared credentials file read. */
#define CRED_FILE_MAX (1 << 20)

/* Free a string after overwriting it (secrets). */
static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void coordl__s3conf_clear(coordl__s3conf_t *c)
{
	free(c->endpoint);
	free(c->region);
	wipe_free(c->key_id);
	wipe_free(c->secret);
	wipe_free(c->token);
	free(c->ca_bundle);
	curl_slist_free_all(c->connect_to);
	memset(c, 0, sizeof(*c));
}

/* A credential value: printable ASCII without spaces, 1..max bytes. */
static int valid_secret(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n < 1 || n > max)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return 0;
	return 1;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

struct cred_walk {
	coordl__s3conf_t *c;
	const char *path, *profile;
	int found;
	coordl_error_t *err;
};

static int cred_entry(const char *section, const char *key, const char *value, int line,
		      void *arg)
{
	struct cred_walk *w = arg;
	char **dst = NULL;

	if (!section || strcmp(section, w->profile) != 0)
		return 0;
	w->found = 1;
	if (!key)
		return 0; /* the section's own line */
	if (!value)
		return coordl__errprintf(w->err, EINVAL, "AWS credentials file %s:%d: expected "
					 "'key = value'", w->path, line);
	if (strcmp(key, "aws_access_key_id") == 0)
		dst = &w->c->key_id;
	else if (strcmp(key, "aws_secret_access_key") == 0)
		dst = &w->c->secret;
	else if (strcmp(key, "aws_session_token") == 0)
		dst = &w->c->token;
	if (!dst)
		return 0; /* region, output and other settings */
	if (!valid_secret(value, 4096))
		return coordl__errprintf(w->err, EINVAL, "AWS credentials file %s:%d: %s: expected "
					 "printable characters without spaces", w->path, line, key);
	wipe_free(*dst);
	if (!(*dst = strdup(value)))
		return coordl__errprintf(w->err, ENOMEM, "out of memory");
	return 0;
}

/*
 * Read aws_access_key_id, aws_secret_access_key and aws_session_token of
 * `profile` from an INI credentials file (common/kv.h). explicit: the file
 * or the profile was named by the environment, so its absence is an error.
 * Error texts name the file and line, never a value.
 */
static int read_cred_file(coordl__s3conf_t *c, const char *path, const char *profile, int explicit,
			  coordl_error_t *err)
{
	struct cred_walk w = { c, path, profile, 0, err };
	syn_error_t kerr;
	syn_kv_t *kv = NULL;
	char *data;
	size_t n;
	int rv = -1;

	if (!(data = syn_file_read(AT_FDCWD, path, CRED_FILE_MAX,
				   SYN_FILE_FOLLOW | SYN_FILE_REGULAR, &n))) {
		if (errno == ENOENT && !explicit)
			return 0; /* no file: anonymous requests */
		if (errno == EINVAL || errno == EFBIG)
			return coordl__errprintf(err, EINVAL,
						 "AWS credentials file %s: not a regular "
						 "file of at most %d bytes",
						 path, CRED_FILE_MAX);
		return coordl__errprintf(err, errno == ENOENT ? ENOENT : EACCES,
					 "AWS credentials file %s: %s", path, strerror(errno));
	}
	/* Lenient: another program's file, whose other profiles may hold
	 * lines this reader has no use for. */
	if (!(kv = syn_kv_parse(data, path, SYN_KV_INI | SYN_KV_LENIENT, &kerr))) {
		coordl__errprintf(err, errno, "AWS credentials file %s", kerr.text);
		goto out;
	}
	if (syn_kv_foreach(kv, cred_entry, &w) != 0)
		goto out;
	if (!w.found && explicit) {
		coordl__errprintf(err, ENOENT, "AWS credentials file %s: no profile [%s]", path, profile);
		goto out;
	}
	if (w.found && (!c->key_id || !c->secret)) {
		coordl__errprintf(err, EINVAL, "AWS credentials file %s: profile [%s] lacks %s", path,
				  profile, c->key_id ? "aws_secret_access_key" : "aws_access_key_id");
		goto out;
	}
	rv = 0;
out:
	syn_kv_destroy(kv);
	explicit_bzero(data, n);
	free(data);
	return rv;
}

int coordl__s3conf_from_env(coordl__s3conf_t *c, coordl_error_t *err)
{
	const char *region = env(COORDL_ENV_AWS_REGION), *ep, *id, *sec, *tok, *ca, *why;
	const char *rvar = COORDL_ENV_AWS_REGION, *epvar = COORDL_ENV_AWS_ENDPOINT_URL_S3;

	memset(c, 0, sizeof(*c));
	if (!region) {
		region = env(COORDL_ENV_AWS_DEFAULT_REGION);
		rvar = COORDL_ENV_AWS_DEFAULT_REGION;
	}
	if (!region)
		region = "us-east-1";
	if (strlen(region) > 32 || strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(region))
		return coordl__errprintf(err, EINVAL, "%s='%.40s': expected a region such as us-east-1",
					 rvar, region);
	if (!(c->region = strdup(region)))
		goto nomem;
	if (!(ep = env(COORDL_ENV_AWS_ENDPOINT_URL_S3))) {
		ep = env(COORDL_ENV_AWS_ENDPOINT_URL);
		epvar = COORDL_ENV_AWS_ENDPOINT_URL;
	}
	if (ep) {
		/* A custom endpoint (MinIO, Ceph RGW, a test server): path-style
		 * addressing, which every S3 implementation understands. */
		const char *hoststart = strstr(ep, "://"), *slash;
		size_t l = strlen(ep);
		if ((strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0) ||
		    coordl__check_http_url(ep, 0, &why) < 0) {
			coordl__s3conf_clear(c);
			return coordl__errprintf(err, EINVAL, "%s='%.80s': expected http(s)://HOST[:PORT]",
						 epvar, ep);
		}
		slash = strchr(hoststart + 3, '/');
		if (slash && slash[1] != '\0') {
			coordl__s3conf_clear(c);
			return coordl__errprintf(err, EINVAL, "%s='%.80s': expected no path after the host",
						 epvar, ep);
		}
		if (ep[l - 1] == '/')
			l--;
		if (!(c->endpoint = strndup(ep, l)))
			goto nomem;
		c->virtual_host = 0;
	} else {
		if (!(c->endpoint = coordl__cat4("https://s3.", region, ".amazonaws.com", NULL)))
			goto nomem;
		c->virtual_host = 1;
	}
	id = env(COORDL_ENV_AWS_ACCESS_KEY_ID);
	sec = env(COORDL_ENV_AWS_SECRET_ACCESS_KEY);
	tok = env(COORDL_ENV_AWS_SESSION_TOKEN);
	if (id || sec) {
		if (!id || !sec) {
			coordl__s3conf_clear(c);
			return coordl__errprintf(err, EINVAL, "%s is set but %s is not",
						 id ? COORDL_ENV_AWS_ACCESS_KEY_ID : COORDL_ENV_AWS_SECRET_ACCESS_KEY,
						 id ? COORDL_ENV_AWS_SECRET_ACCESS_KEY : COORDL_ENV_AWS_ACCESS_KEY_ID);
		}
		if (!valid_secret(id, 128) || !valid_secret(sec, 4096) || (tok && !valid_secret(tok, 8192))) {
			const char *bad = !valid_secret(id, 128) ? COORDL_ENV_AWS_ACCESS_KEY_ID
					  : !valid_secret(sec, 4096) ? COORDL_ENV_AWS_SECRET_ACCESS_KEY
								     : COORDL_ENV_AWS_SESSION_TOKEN;
			coordl__s3conf_clear(c);
			return coordl__errprintf(err, EINVAL, "%s: expected printable characters without spaces",
						 bad);
		}
		if (!(c->key_id = strdup(id)) || !(c->secret = strdup(sec)) ||
		    (tok && !(c->token = strdup(tok))))
			goto nomem;
	} else {
		const char *file = env(COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE);
		const char *profile = env(COORDL_ENV_AWS_PROFILE);
		char path[PATH_MAX];
		if (!file) {
			const char *home = env("HOME");
			struct passwd *pw;
			if (!home && (pw = getpwuid(getuid())))
				home = pw->pw_dir;
			if (home && (size_t)snprintf(path, sizeof(path), "%s/.aws/credentials", home) <
					    sizeof(path))
				file = path;
		}
		if (file && read_cred_file(c, file, profile ? profile : "default",
					   env(COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE) || profile, err) < 0) {
			int e = errno;
			coordl__s3conf_clear(c);
			errno = e;
			return -1;
		}
	}
	ca = env(COORDL_ENV_AWS_CA_BUNDLE);
	if (!ca)
		ca = env(COORDL_ENV_CURL_CA_BUNDLE);
	if (ca && !(c->ca_bundle = strdup(ca)))
		goto nomem;
	return 0;
nomem:
	coordl__s3conf_clear(c);
	return coordl__errprintf(err, ENOMEM, "out of memory");
}

int coordl__s3_prepare(const coordl__s3conf_t *c, CURL *h, const char *bucket, const char *key,
		       const char *query, const char *range, const char *amz_date,
		       struct curl_slist **hdrs, char *why, size_t whylen)
{
	char *ekey = NULL, *url = NULL, *line = NULL, sigv4[96];
	const char *hs = strstr(c->endpoint, "://");
	struct curl_slist *l = NULL, *t;
	int rv = -1;

	*hdrs = NULL;
	if (!hs || !(ekey = coordl__pct_encode(key, 1))) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	/* A bucket name with dots would not match the TLS certificate of
	 * *.s3.REGION.amazonaws.com: such buckets go path-style. */
	if (c->virtual_host && !strchr(bucket, '.')) {
		/* scheme://BUCKET.host/KEY */
		char *scheme = strndup(c->endpoint, (size_t)(hs - c->endpoint) + 3);
		if (scheme)
			url = coordl__cat4(scheme, bucket, ".", hs + 3);
		free(scheme);
		if (url) {
			char *u2 = coordl__cat4(url, "/", ekey, query ? "?" : NULL);
			free(url);
			url = u2 && query ? coordl__cat4(u2, query, NULL, NULL) : u2;
			if (query)
				free(u2);
		}
	} else {
		/* endpoint/BUCKET[/KEY] */
		char *u1 = coordl__cat4(c->endpoint, "/", bucket, *key ? "/" : NULL);
		if (u1)
			url = coordl__cat4(u1, ekey, query ? "?" : NULL, query);
		free(u1);
	}
	if (!url)
		goto nomem;
	if (range) {
		if (!(line = coordl__cat4("Range: ", range, NULL, NULL)) || !(t = curl_slist_append(l, line)))
			goto nomem;
		l = t;
		free(line);
		line = NULL;
	}
	if (c->key_id) {
		/* Signed: libcurl computes the signature over these headers,
		 * the host and the date; the payload hash of a GET is that of
		 * the empty body. */
		if (!(t = curl_slist_append(l, "x-amz-content-sha256: " EMPTY_SHA256)))
			goto nomem;
		l = t;
		if (c->token) {
			if (!(line = coordl__cat4("x-amz-security-token: ", c->token, NULL, NULL)) ||
			    !(t = curl_slist_append(l, line)))
				goto nomem;
			l = t;
			wipe_free(line);
			line = NULL;
		}
		if (amz_date) {
			if (!(line = coordl__cat4("X-Amz-Date: ", amz_date, NULL, NULL)) ||
			    !(t = curl_slist_append(l, line)))
				goto nomem;
			l = t;
			free(line);
			line = NULL;
		}
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", c->region);
		if (curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4) != CURLE_OK ||
		    curl_easy_setopt(h, CURLOPT_USERNAME, c->key_id) != CURLE_OK ||
		    curl_easy_setopt(h, CURLOPT_PASSWORD, c->secret) != CURLE_OK) {
			snprintf(why, whylen, "this libcurl cannot sign requests (CURLOPT_AWS_SIGV4)");
			goto out;
		}
	}
	if (c->ca_bundle)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_bundle);
	if (c->connect_to)
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
	/* A redirect would need a new signature: S3 answers a wrong region
	 * with 301, which is then a clear error instead of a loop. */
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	coordl__remote_pipewait(h, url);
	if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK) {
		snprintf(why, whylen, "bad URL for s3://%s/%.60s", bucket, key);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	*hdrs = l;
	l = NULL;
	rv = 0;
	goto out;
nomem:
	snprintf(why, whylen, "out of memory");
out:
	if (line)
		wipe_free(line);
	curl_slist_free_all(l);
	free(ekey);
	free(url);
	return rv;
}

/* The first <tag>...</tag> between p and end (no attributes), or NULL. */
static const char *xml_find(const char *p, const char *end, const char *tag, const char **cend)
{
	char open[64], close[64];
	size_t ol, cl;
	const char *a, *b;

	ol = (size_t)snprintf(open, sizeof(open), "<%s>", tag);
	cl = (size_t)snprintf(close, sizeof(close), "</%s>", tag);
	if (!(a = memmem(p, (size_t)(end - p), open, ol)))
		return NULL;
	a += ol;
	if (!(b = memmem(a, (size_t)(end - a), close, cl)))
		return NULL;
	*cend = b;
	return a;
}

/* Decode XML character data (the five entities and numeric references)
 * into a malloc'd string; NULL for malformed text or a NUL/control char. */
static char *xml_text(const char *p, const char *end)
{
	char *out = malloc((size_t)(end - p) + 1), *o = out;

	if (!out)
		return NULL;
	while (p < end) {
		if (*p != '&') {
			if ((unsigned char)*p < ' ' && *p != '\t')
				goto bad;
			*o++ = *p++;
			continue;
		}
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n;
		if (!semi)
			goto bad;
		n = (size_t)(semi - p - 1);
		if (n == 3 && !memcmp(p + 1, "amp", 3))
			*o++ = '&';
		else if (n == 2 && !memcmp(p + 1, "lt", 2))
			*o++ = '<';
		else if (n == 2 && !memcmp(p + 1, "gt", 2))
			*o++ = '>';
		else if (n == 4 && !memcmp(p + 1, "quot", 4))
			*o++ = '"';
		else if (n == 4 && !memcmp(p + 1, "apos", 4))
			*o++ = '\'';
		else if (n >= 2 && n <= 9 && p[1] == '#') {
			unsigned long cp = 0;
			int hexa = p[2] == 'x' || p[2] == 'X';
			const char *d = p + 2 + hexa;
			if (d >= semi)
				goto bad;
			for (; d < semi; d++) {
				int v = isdigit((unsigned char)*d) ? *d - '0'
					: hexa && isxdigit((unsigned char)*d) ? tolower((unsigned char)*d) - 'a' + 10
					: -1;
				if (v < 0)
					goto bad;
				cp = cp * (hexa ? 16 : 10) + (unsigned long)v;
				if (cp > 0x10FFFF)
					goto bad;
			}
			if (cp < 0x20 || (cp >= 0xD800 && cp <= 0xDFFF))
				goto bad;
			if (cp < 0x80) {
				*o++ = (char)cp;
			} else if (cp < 0x800) {
				*o++ = (char)(0xC0 | (cp >> 6));
				*o++ = (char)(0x80 | (cp & 0x3F));
			} else if (cp < 0x10000) {
				*o++ = (char)(0xE0 | (cp >> 12));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*o++ = (char)(0x80 | (cp & 0x3F));
			} else {
				*o++ = (char)(0xF0 | (cp >> 18));
				*o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*o++ = (char)(0x80 | (cp & 0x3F));
			}
		} else {
			goto bad;
		}
		p = semi + 1;
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

void coordl__s3_page_free(coordl__s3_page_t *pg)
{
	for (size_t i = 0; i < pg->n; i++)
		free(pg->keys[i]);
	free(pg->keys);
	free(pg->sizes);
	free(pg->next_token);
	memset(pg, 0, sizeof(*pg));
}

int coordl__s3_parse_list(const char *body, size_t len, coordl__s3_page_t *pg, char *why,
			  size_t whylen)
{
	const char *end = body + len, *p, *c, *ce, *v, *ve;
	size_t cap = 0;

	memset(pg, 0, sizeof(*pg));
	if ((v = xml_find(body, end, "Error", &ve))) {
		const char *a, *ae;
		char *code = (a = xml_find(v, ve, "Code", &ae)) ? xml_text(a, ae) : NULL;
		char *msg = (a = xml_find(v, ve, "Message", &ae)) ? xml_text(a, ae) : NULL;
		snprintf(why, whylen, "S3 error %.40s: %.80s", code ? code : "?", msg ? msg : "");
		free(code);
		free(msg);
		errno = EINVAL;
		return -1;
	}
	if (!memmem(body, len, "<ListBucketResult", 17)) {
		snprintf(why, whylen, "not a ListObjectsV2 response (no ListBucketResult)");
		errno = EINVAL;
		return -1;
	}
	for (p = body; (c = xml_find(p, end, "Contents", &ce)); p = ce + 11) {
		char *key, *size;
		int64_t sz;
		if (pg->n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			char **k2 = realloc(pg->keys, nc * sizeof(*k2));
			uint64_t *s2;
			if (!k2)
				goto nomem;
			pg->keys = k2;
			if (!(s2 = realloc(pg->sizes, nc * sizeof(*s2))))
				goto nomem;
			pg->sizes = s2;
			cap = nc;
		}
		if (!(v = xml_find(c, ce, "Key", &ve)) || !(key = xml_text(v, ve))) {
			snprintf(why, whylen, "entry %zu: no valid <Key>", pg->n + 1);
			goto bad;
		}
		if (!(v = xml_find(c, ce, "Size", &ve)) || !(size = xml_text(v, ve))) {
			free(key);
			snprintf(why, whylen, "entry %zu: no <Size>", pg->n + 1);
			goto bad;
		}
		if (syn_parse_i64(size, 0, INT64_MAX, &sz) < 0) {
			free(key);
			free(size);
			snprintf(why, whylen, "entry %zu: <Size> is not a number", pg->n + 1);
			goto bad;
		}
		free(size);
		pg->keys[pg->n] = key;
		pg->sizes[pg->n++] = (uint64_t)sz;
	}
	/* Keys are entity-encoded, so a raw tag is the document's own. */
	if ((v = xml_find(body, end, "IsTruncated", &ve)) && ve - v == 4 && !memcmp(v, "true", 4))
		pg->truncated = 1;
	if (pg->truncated) {
		if (!(v = xml_find(body, end, "NextContinuationToken", &ve)) ||
		    !(pg->next_token = xml_text(v, ve)) || !pg->next_token[0]) {
			snprintf(why, whylen, "truncated listing without a NextContinuationToken");
			goto bad;
		}
	}
	return 0;
nomem:
	snprintf(why, whylen, "out of memory");
	coordl__s3_page_free(pg);
	errno = ENOMEM;
	return -1;
bad:
	coordl__s3_page_free(pg);
	errno = EINVAL;
	return -1;
}
