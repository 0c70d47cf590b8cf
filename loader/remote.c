/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote.c: HTTP(S) and S3 datasets (see remote.h).
 *
 * Opening a remote dataset reads its item list with a few blocking
 * requests (libcurl easy interface, retried like every request here) and
 * fills an ordinary source through source.c's builder functions, so the
 * rest of the loader sees items with names, labels and sizes as for a
 * local dataset. Each item keeps the name it was listed under; a request
 * resolves it against the dataset's base location when it is made, so a
 * million items cost one string each, not a URL each.
 *
 * Every name that goes into a URL path is percent-encoded byte by byte
 * (all but A-Z a-z 0-9 - . _ ~ and '/'), which is also S3's canonical URI
 * form, and every S3 query is built sorted and encoded: libcurl 7.88 signs
 * the path and query exactly as they are in the URL.
 *
 * ImageFolder listings (manifest or ListObjectsV2) are sorted the way
 * source.c sorts a directory tree (class names, then file names within a
 * class, by strcmp; only .jpg/.jpeg directly inside a class directory), so
 * a dataset uploaded from disk keeps its labels, indices and sample order.
 *
 * S3 settings, signing and listings are in s3.c.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "common/parse.h"
#include "loader/env.h"
#include "loader/remote.h"
#include "loader/source.h"
#include "loader/util.h"


struct coordl__remote {
	int base_s3;          /* the dataset's base is in S3 */
	char *base_url;       /* http(s): base for relative names, no trailing '/' */
	char *bucket, *prefix;/* s3: base bucket and key prefix ("" or ending in '/') */
	int local_list;       /* a local file list of URLs: no relative names */
	char **shards;        /* shard object names (shard sources) */
	uint32_t nshards;
	int have_s3;          /* s3c below is filled */
	coordl__s3conf_t s3c;
	char *http_ca;        /* CURL_CA_BUNDLE */
};

/* ---- Small helpers ------------------------------------------------------ */

int coordl__is_url(const char *p)
{
	return p && (strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0 ||
		     strncmp(p, "s3://", 5) == 0);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int is_jpeg_name(const char *n)
{
	const char *dot = strrchr(n, '.');

	return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

char *coordl__cat4(const char *a, const char *b, const char *c, const char *d)
{
	const char *v[4] = { a, b, c, d };
	size_t n = 1, off = 0;
	char *s;

	for (int i = 0; i < 4; i++)
		if (v[i])
			n += strlen(v[i]);
	if (!(s = malloc(n)))
		return NULL;
	for (int i = 0; i < 4; i++)
		if (v[i]) {
			size_t l = strlen(v[i]);
			memcpy(s + off, v[i], l);
			off += l;
		}
	s[off] = '\0';
	return s;
}

char *coordl__pct_encode(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
		    (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

int coordl__check_http_url(const char *u, int allow_query, const char **why)
{
	const char *a = strstr(u, "://"), *end;

	if (!a) {
		*why = "not a URL";
		return -1;
	}
	a += 3;
	end = a + strcspn(a, "/?#");
	if (end == a) {
		*why = "no host";
		return -1;
	}
	if (memchr(a, '@', (size_t)(end - a))) {
		*why = "credentials in URLs are not supported";
		return -1;
	}
	for (const unsigned char *p = (const unsigned char *)u; *p; p++)
		if (*p <= ' ' || *p == 0x7f) {
			*why = "spaces or control characters (percent-encode them)";
			return -1;
		}
	if (!allow_query && strpbrk(u, "?#")) {
		*why = "a dataset URL takes no query or fragment";
		return -1;
	}
	return 0;
}

/* Split s3://bucket/key into malloc'd parts; key may be "". */
static int split_s3(const char *u, char **bucket, char **key, const char **why)
{
	const char *b = u + 5, *slash = strchr(b, '/');
	size_t bl = slash ? (size_t)(slash - b) : strlen(b);

	if (bl < 1 || bl > 63) {
		*why = "expected s3://BUCKET/KEY with a bucket of 1..63 characters";
		return -1;
	}
	for (size_t i = 0; i < bl; i++)
		if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '-' ||
		      b[i] == '.' || b[i] == '_')) {
			*why = "a bucket name is lower-case letters, digits, '-', '.' and '_'";
			return -1;
		}
	for (const unsigned char *p = (const unsigned char *)u; *p; p++)
		if (*p < ' ' || *p == 0x7f) {
			*why = "control characters in the key";
			return -1;
		}
	*bucket = strndup(b, bl);
	*key = strdup(slash ? slash + 1 : "");
	if (!*bucket || !*key) {
		free(*bucket);
		free(*key);
		*why = "out of memory";
		return -1;
	}
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* ---- Requests ----------------------------------------------------------- */

int coordl__remote_easy_init(const coordl__remote_t *r, CURL *h)
{
	char ua[64];

	snprintf(ua, sizeof(ua), "coordl/%s", PACKAGE_VERSION);
	if (curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK)
		return -1;
	curl_easy_setopt(h, CURLOPT_USERAGENT, ua);
	/* HTTP/2 over TLS where the server offers it (ALPN), many streams
	 * per connection (see pipewait()). */
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	if (r && r->http_ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, r->http_ca);
	return 0;
}

/* Over https a new transfer waits for a connection that may multiplex
 * (HTTP/2, known once TLS is up) instead of opening one more. Not over
 * http: there curl would wait for the first response on the connection,
 * and one slow object would hold up every request behind it. */
void coordl__remote_pipewait(CURL *h, const char *url)
{
	curl_easy_setopt(h, CURLOPT_PIPEWAIT, strncmp(url, "https://", 8) == 0 ? 1L : 0L);
}

/* Set up a GET of an absolute reference (http(s)://... or s3://...). */
static int prepare_ref(const coordl__remote_t *r, CURL *h, const char *ref, const char *range,
		       struct curl_slist **hdrs, char *why, size_t whylen)
{
	struct curl_slist *l = NULL;

	*hdrs = NULL;
	if (strncmp(ref, "s3://", 5) == 0) {
		char *bucket, *key;
		const char *w;
		int rc;
		if (!r->have_s3) {
			snprintf(why, whylen, "no S3 settings");
			return -1;
		}
		if (split_s3(ref, &bucket, &key, &w) < 0) {
			snprintf(why, whylen, "%s", w);
			return -1;
		}
		rc = coordl__s3_prepare(&r->s3c, h, bucket, key, NULL, range, NULL, hdrs, why, whylen);
		free(bucket);
		free(key);
		return rc;
	}
	if (range) {
		char line[96];
		snprintf(line, sizeof(line), "Range: %s", range);
		if (!(l = curl_slist_append(NULL, line))) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
	}
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	coordl__remote_pipewait(h, ref);
	if (curl_easy_setopt(h, CURLOPT_URL, ref) != CURLE_OK) {
		curl_slist_free_all(l);
		snprintf(why, whylen, "bad URL");
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	*hdrs = l;
	return 0;
}

/* Set up a GET of `name` relative to the dataset's base location. */
static int prepare_rel(const coordl__remote_t *r, CURL *h, const char *name, const char *range,
		       struct curl_slist **hdrs, char *why, size_t whylen)
{
	char *enc, *ref;
	int rc;

	if (coordl__is_url(name))
		return prepare_ref(r, h, name, range, hdrs, why, whylen);
	if (r->base_s3) {
		char *key = coordl__cat4(r->prefix, name, NULL, NULL);
		if (!key) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		rc = coordl__s3_prepare(&r->s3c, h, r->bucket, key, NULL, range, NULL, hdrs, why, whylen);
		free(key);
		return rc;
	}
	if (r->local_list) {
		snprintf(why, whylen, "not a URL (a file list of URLs names every item by URL)");
		return -1;
	}
	if (!(enc = coordl__pct_encode(name, 1)) || !(ref = coordl__cat4(r->base_url, "/", enc, NULL))) {
		free(enc);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	rc = prepare_ref(r, h, ref, range, hdrs, why, whylen);
	free(enc);
	free(ref);
	return rc;
}

int coordl__remote_prepare(const coordl__remote_t *r, const coordl__source_t *src, size_t i,
			   CURL *h, struct curl_slist **hdrs, uint64_t *want, char *why,
			   size_t whylen)
{
	*want = 0;
	if (coordl__source_kind(src) == COORDL_SOURCE_SHARDS) {
		uint32_t sh = coordl__source_item_shard(src, i);
		uint64_t off = coordl__source_item_offset(src, i);
		uint64_t len = coordl__source_item_size(src, i);
		char range[64];
		if (sh >= r->nshards) {
			snprintf(why, whylen, "no shard %u", sh);
			return -1;
		}
		if (len == 0) {
			/* An empty range cannot be asked for; the item is
			 * empty (and so corrupt) without a request. */
			snprintf(why, whylen, "empty item");
			return -1;
		}
		snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
			 (unsigned long long)(off + len - 1));
		*want = len;
		return prepare_rel(r, h, r->shards[sh], range, hdrs, why, whylen);
	}
	return prepare_rel(r, h, coordl__source_item_name(src, i), NULL, hdrs, why, whylen);
}

int coordl__remote_verdict(CURLcode rc, long http, uint64_t got, uint64_t want, int overflow,
			   uint64_t cap, char *why, size_t whylen)
{
	if (overflow) {
		if (want)
			snprintf(why, whylen, "more than the %llu bytes asked for (Range ignored?)",
				 (unsigned long long)want);
		else
			snprintf(why, whylen, "larger than the item cap (%llu bytes)",
				 (unsigned long long)cap);
		return COORDL__FAIL;
	}
	switch (rc) {
	case CURLE_OK:
		break;
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_AGAIN:
		snprintf(why, whylen, "%s", curl_easy_strerror(rc));
		return COORDL__RETRY;
	default:
		snprintf(why, whylen, "%s", curl_easy_strerror(rc));
		return COORDL__FAIL;
	}
	if (http == 408 || http == 429 || (http >= 500 && http <= 599)) {
		snprintf(why, whylen, "HTTP %ld", http);
		return COORDL__RETRY;
	}
	if (http != 200 && http != 206) {
		snprintf(why, whylen, "HTTP %ld", http);
		return COORDL__FAIL;
	}
	if (want && got != want) {
		snprintf(why, whylen, "%llu bytes, expected %llu", (unsigned long long)got,
			 (unsigned long long)want);
		return COORDL__FAIL;
	}
	return COORDL__DONE;
}

double coordl__remote_backoff(int attempt, unsigned *seed)
{
	double b = 0.05;

	for (int i = 1; i < attempt && b < 2.0; i++)
		b *= 2;
	if (b > 2.0)
		b = 2.0;
	return b * (0.5 + 0.5 * (double)rand_r(seed) / (double)RAND_MAX);
}

/* A response body into a growing buffer, cut at `max` bytes. */
struct sink {
	uint8_t **buf;
	size_t *cap;
	size_t len;
	uint64_t max;
	int overflow, oom;
};

static size_t sink_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sink *k = arg;
	size_t n = size * nmemb;

	if (k->len + n > k->max) {
		k->overflow = 1;
		return 0; /* CURLE_WRITE_ERROR ends the transfer */
	}
	if (k->len + n > *k->cap) {
		size_t nc = *k->cap ? *k->cap * 2 : 65536;
		uint8_t *q;
		while (nc < k->len + n)
			nc *= 2;
		if (nc > k->max)
			nc = (size_t)k->max;
		if (!(q = realloc(*k->buf, nc))) {
			k->oom = 1;
			return 0;
		}
		*k->buf = q;
		*k->cap = nc;
	}
	memcpy(*k->buf + k->len, p, n);
	k->len += n;
	return n;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * One GET with retries (blocking). setup prepares h for the request each
 * attempt. Returns the verdict; *http the last status.
 */
typedef int setup_fn(const coordl__remote_t *r, CURL *h, const void *arg,
		     struct curl_slist **hdrs, uint64_t *want, char *why, size_t whylen);

static int get_blocking(const coordl__remote_t *r, setup_fn *setup, const void *arg, uint64_t max,
			uint8_t **buf, size_t *cap, size_t *len, long *http, char *why, size_t whylen)
{
	CURL *h = curl_easy_init();
	double t0 = coordl__now(), deadline = COORDL__IO_DEADLINE_MS / 1000.0;
	unsigned seed = (unsigned)(t0 * 1e6) ^ (unsigned)(uintptr_t)&seed;
	int verdict = COORDL__FAIL;

	*http = 0;
	if (!h) {
		snprintf(why, whylen, "cannot start a transfer (curl_easy_init)");
		return COORDL__FAIL;
	}
	for (int attempt = 1;; attempt++) {
		struct curl_slist *hdrs = NULL;
		struct sink k = { buf, cap, 0, max, 0, 0 };
		uint64_t want = 0;
		double left = deadline - (coordl__now() - t0), b;
		CURLcode rc;

		curl_easy_reset(h);
		if (coordl__remote_easy_init(r, h) < 0 ||
		    setup(r, h, arg, &hdrs, &want, why, whylen) < 0) {
			curl_slist_free_all(hdrs);
			verdict = COORDL__FAIL;
			break;
		}
		if (want > max) {
			snprintf(why, whylen, "larger than the item cap (%llu bytes)",
				 (unsigned long long)max);
			curl_slist_free_all(hdrs);
			verdict = COORDL__FAIL;
			break;
		}
		if (want)
			k.max = want;
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &k);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left > 0.001 ? left * 1000 : 1));
		rc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http);
		curl_slist_free_all(hdrs);
		if (k.oom) {
			snprintf(why, whylen, "out of memory");
			verdict = COORDL__FAIL;
			break;
		}
		*len = k.len;
		verdict = coordl__remote_verdict(rc, *http, k.len, want, k.overflow, max, why, whylen);
		if (verdict != COORDL__RETRY)
			break;
		b = coordl__remote_backoff(attempt, &seed);
		if (coordl__now() + b - t0 >= deadline) {
			size_t l = strlen(why);
			snprintf(why + l, whylen - l, " (gave up after %d attempts)", attempt);
			break;
		}
		sleep_s(b);
	}
	curl_easy_cleanup(h);
	return verdict;
}

struct item_arg {
	const coordl__source_t *src;
	size_t i;
};

static int setup_item(const coordl__remote_t *r, CURL *h, const void *arg, struct curl_slist **hdrs,
		      uint64_t *want, char *why, size_t whylen)
{
	const struct item_arg *a = arg;

	return coordl__remote_prepare(r, a->src, a->i, h, hdrs, want, why, whylen);
}

int coordl__remote_fetch_sync(const coordl__remote_t *r, const coordl__source_t *src, size_t i,
			      uint8_t **buf, size_t *cap, size_t *len, char *why, size_t whylen)
{
	struct item_arg a = { src, i };
	long http;

	if (get_blocking(r, setup_item, &a, COORDL__ITEM_MAX, buf, cap, len, &http, why, whylen) !=
	    COORDL__DONE) {
		errno = http == 404 ? ENOENT : EIO;
		return -1;
	}
	return 0;
}

/* A text object at open: an absolute reference or s3 bucket/key. */
struct text_arg {
	const char *ref;      /* http(s) URL, or NULL for S3 */
	const char *bucket, *key, *query;
};

static int setup_text(const coordl__remote_t *r, CURL *h, const void *arg, struct curl_slist **hdrs,
		      uint64_t *want, char *why, size_t whylen)
{
	const struct text_arg *a = arg;

	*want = 0;
	if (a->ref)
		return prepare_ref(r, h, a->ref, NULL, hdrs, why, whylen);
	return coordl__s3_prepare(&r->s3c, h, a->bucket, a->key, a->query, NULL, NULL, hdrs, why, whylen);
}

/* ---- Listings into items ------------------------------------------------ */

struct entry {
	char *cls, *file; /* pointers into one allocation */
	uint64_t size;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->cls, y->cls);

	return c ? c : strcmp(x->file, y->file);
}

/* Split rel = "class/file" into an entry; 0 when it is an ImageFolder
 * item, 1 when it is something else to skip (as a directory scan would),
 * -1 on ENOMEM. */
static int make_entry(const char *rel, uint64_t size, struct entry *e)
{
	const char *slash = strchr(rel, '/');
	char *copy;

	if (!slash || slash == rel || strchr(slash + 1, '/') || !slash[1] || rel[0] == '.' ||
	    slash[1] == '.' || !is_jpeg_name(slash + 1))
		return 1;
	if (!(copy = strdup(rel)))
		return -1;
	copy[slash - rel] = '\0';
	e->cls = copy;
	e->file = copy + (slash - rel) + 1;
	e->size = size;
	return 0;
}

/* Sorted entries into classes and items of src (consumes the entries). */
static int build_imagefolder(coordl__source_t *src, struct entry *v, size_t n, const char *what,
			     coordl_error_t *err)
{
	int rv = -1;
	int32_t label = -1;
	const char *prev = NULL;
	char name[PATH_MAX];

	if (n == 0) {
		coordl__errprintf(err, ENOENT, "%s: no .jpg/.jpeg items under class directories "
				  "(expected <class>/<file>.jpg)", what);
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_entry);
	for (size_t i = 0; i < n; i++) {
		if (prev && strcmp(prev, v[i].cls) == 0 && i > 0 && strcmp(v[i - 1].file, v[i].file) == 0) {
			coordl__errprintf(err, EINVAL, "%s: %s/%s is listed twice", what, v[i].cls,
					  v[i].file);
			goto out;
		}
		if (!prev || strcmp(prev, v[i].cls) != 0) {
			if (label == INT32_MAX - 1 || coordl__source_add_class(src, v[i].cls) < 0) {
				coordl__errprintf(err, ENOMEM, "%s: out of memory", what);
				goto out;
			}
			label++;
			prev = v[i].cls;
		}
		if ((size_t)snprintf(name, sizeof(name), "%s/%s", v[i].cls, v[i].file) >= sizeof(name)) {
			coordl__errprintf(err, EINVAL, "%s: name too long: %.60s...", what, v[i].cls);
			goto out;
		}
		if (coordl__source_add_item(src, name, label, v[i].size, 0, 0) < 0) {
			coordl__errprintf(err, ENOMEM, "%s: out of memory", what);
			goto out;
		}
	}
	rv = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].cls);
	free(v);
	return rv;
}

/* Append an entry to a growing array. */
static int push_entry(struct entry **v, size_t *n, size_t *cap, const struct entry *e)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct entry *p = realloc(*v, nc * sizeof(*p));
		if (!p)
			return -1;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = *e;
	return 0;
}

/* Next line of a text body: NUL-terminates it in place (the body has a
 * spare byte at its end). Returns NULL at the end. */
static char *next_line(char **p, char *end, long *lineno)
{
	char *l = *p, *nl;

	if (l >= end)
		return NULL;
	nl = memchr(l, '\n', (size_t)(end - l));
	if (!nl)
		nl = end;
	*nl = '\0';
	*p = nl + 1;
	(*lineno)++;
	/* Trailing CR and spaces. */
	while (nl > l && isspace((unsigned char)nl[-1]))
		*--nl = '\0';
	return l;
}

int coordl__parse_manifest(coordl__source_t *src, const char *body, size_t len, const char *what,
			   coordl_error_t *err)
{
	char *copy = malloc(len + 1), *p, *end, *l;
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	long lineno = 0;
	int rv = -1;

	if (!copy)
		return coordl__errprintf(err, ENOMEM, "out of memory");
	memcpy(copy, body, len);
	copy[len] = '\0';
	p = copy;
	end = copy + len;
	if (memchr(copy, '\0', len)) {
		coordl__errprintf(err, EINVAL, "%s: binary data in a manifest", what);
		goto out;
	}
	if (!(l = next_line(&p, end, &lineno)) || strcmp(l, COORDL_MANIFEST_MAGIC) != 0) {
		coordl__errprintf(err, EINVAL, "%s:1: not a coordl manifest (expected '%s')", what,
				  COORDL_MANIFEST_MAGIC);
		goto out;
	}
	while ((l = next_line(&p, end, &lineno))) {
		char *sp;
		int64_t size;
		struct entry e;
		int rc;
		if (!*l || *l == '#')
			continue;
		if (!(sp = strchr(l, ' ')) || sp == l) {
			coordl__errprintf(err, EINVAL, "%s:%ld: expected '<bytes> <class>/<file>'", what, lineno);
			goto out;
		}
		*sp = '\0';
		if (syn_parse_i64(l, 0, INT64_MAX, &size) < 0 || !sp[1]) {
			coordl__errprintf(err, EINVAL, "%s:%ld: expected '<bytes> <class>/<file>'", what, lineno);
			goto out;
		}
		if ((rc = make_entry(sp + 1, (uint64_t)size, &e)) < 0 ||
		    (rc == 0 && push_entry(&v, &n, &cap, &e) < 0)) {
			if (rc == 0)
				free(e.cls);
			coordl__errprintf(err, ENOMEM, "out of memory");
			goto out;
		}
	}
	rv = build_imagefolder(src, v, n, what, err);
	v = NULL;
	n = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].cls);
	free(v);
	free(copy);
	return rv;
}

/* ---- Opening ------------------------------------------------------------ */

/* Read a text object into a malloc'd, NUL-terminated buffer. Errors name
 * `what` (a URL). */
static int get_text(coordl__remote_t *r, const struct text_arg *a, const char *what, char **out,
		    size_t *outlen, coordl_error_t *err)
{
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0;
	long http = 0;
	char why[160];
	int v = get_blocking(r, setup_text, a, COORDL__REMOTE_TEXT_MAX, &buf, &cap, &len, &http, why,
			     sizeof(why));

	if (v != COORDL__DONE) {
		int e = http == 404 ? ENOENT : (http == 401 || http == 403) ? EACCES : EIO;
		/* An S3 error document says why (AccessDenied, NoSuchBucket). */
		if (http >= 400 && buf && len) {
			coordl__s3_page_t pg;
			char w2[128];
			if (coordl__s3_parse_list((char *)buf, len, &pg, w2, sizeof(w2)) == 0)
				coordl__s3_page_free(&pg);
			else if (strncmp(w2, "S3 error", 8) == 0)
				snprintf(why + strlen(why), sizeof(why) - strlen(why), ", %s", w2);
		}
		free(buf);
		return coordl__errprintf(err, e, "%s: %s", what, why);
	}
	if (len + 1 > cap) {
		uint8_t *q = realloc(buf, len + 1);
		if (!q) {
			free(buf);
			return coordl__errprintf(err, ENOMEM, "out of memory");
		}
		buf = q;
	}
	buf[len] = '\0';
	*out = (char *)buf;
	*outlen = len;
	return 0;
}

/* ListObjectsV2 over every page under the prefix. */
static int list_s3(coordl__remote_t *r, coordl__source_t *src, const char *what, coordl_error_t *err)
{
	struct entry *v = NULL;
	size_t n = 0, cap = 0, plen = strlen(r->prefix);
	char *token = NULL, *eprefix = coordl__pct_encode(r->prefix, 0);
	int rv = -1, pages = 0;

	if (!eprefix)
		return coordl__errprintf(err, ENOMEM, "out of memory");
	for (;;) {
		char *etok = token ? coordl__pct_encode(token, 0) : NULL, *query, *body = NULL;
		struct text_arg a = { NULL, r->bucket, "", NULL };
		coordl__s3_page_t pg;
		char why[128];
		size_t len;
		if (token && !etok)
			goto nomem;
		/* Canonical: sorted by parameter name, values encoded. */
		query = token ? coordl__cat4("continuation-token=", etok, "&list-type=2&prefix=", eprefix)
			      : coordl__cat4("list-type=2&prefix=", eprefix, NULL, NULL);
		free(etok);
		if (!query)
			goto nomem;
		a.query = query;
		if (get_text(r, &a, what, &body, &len, err) < 0) {
			free(query);
			goto out;
		}
		free(query);
		if (coordl__s3_parse_list(body, len, &pg, why, sizeof(why)) < 0) {
			free(body);
			coordl__errprintf(err, errno, "%s: listing page %d: %s", what, pages + 1, why);
			goto out;
		}
		free(body);
		pages++;
		for (size_t i = 0; i < pg.n; i++) {
			struct entry e;
			int rc;
			if (strncmp(pg.keys[i], r->prefix, plen) != 0)
				continue; /* not under the prefix: ignore */
			if ((rc = make_entry(pg.keys[i] + plen, pg.sizes[i], &e)) < 0 ||
			    (rc == 0 && push_entry(&v, &n, &cap, &e) < 0)) {
				if (rc == 0)
					free(e.cls);
				coordl__s3_page_free(&pg);
				goto nomem;
			}
		}
		free(token);
		token = pg.next_token;
		pg.next_token = NULL;
		if (!pg.truncated) {
			coordl__s3_page_free(&pg);
			break;
		}
		coordl__s3_page_free(&pg);
		if (pages >= 1000000) {
			coordl__errprintf(err, EINVAL, "%s: more than a million listing pages", what);
			goto out;
		}
	}
	rv = build_imagefolder(src, v, n, what, err);
	v = NULL;
	n = 0;
	goto out;
nomem:
	coordl__errprintf(err, ENOMEM, "out of memory");
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].cls);
	free(v);
	free(token);
	free(eprefix);
	return rv;
}

/*
 * A shard index (the format of source.c). Shard sizes are not known
 * without a request per shard, so a range beyond its shard is found when
 * the item is read (a short or failed range GET: a corrupt item).
 */
static int parse_index(coordl__remote_t *r, coordl__source_t *src, char *body, size_t len,
		       const char *what, coordl_error_t *err)
{
	char *p = body, *end = body + len, *l;
	long lineno = 0;
	uint64_t nc, ns, ni;

	if (!(l = next_line(&p, end, &lineno)) || strcmp(l, COORDL__INDEX_MAGIC) != 0)
		return coordl__errprintf(err, EINVAL, "%s:1: not a coordl shard index (expected '%s')",
					 what, COORDL__INDEX_MAGIC);
	if (!(l = next_line(&p, end, &lineno)) ||
	    coordl__header_count(l, "classes", INT32_MAX, &nc) < 0 || nc == 0)
		return coordl__errprintf(err, EINVAL, "%s:%ld: expected 'classes <n>' with n >= 1", what,
					 lineno);
	for (uint64_t c = 0; c < nc; c++) {
		if (!(l = next_line(&p, end, &lineno)))
			return coordl__errprintf(err, EINVAL, "%s:%ld: missing class names", what, lineno);
		if (coordl__source_add_class(src, l) < 0)
			return coordl__errprintf(err, ENOMEM, "out of memory");
	}
	if (!(l = next_line(&p, end, &lineno)) ||
	    coordl__header_count(l, "shards", 1 << 20, &ns) < 0 || ns == 0)
		return coordl__errprintf(err, EINVAL, "%s:%ld: expected 'shards <n>' with n >= 1", what,
					 lineno);
	if (!(r->shards = calloc(ns, sizeof(char *))))
		return coordl__errprintf(err, ENOMEM, "out of memory");
	for (uint64_t i = 0; i < ns; i++) {
		if (!(l = next_line(&p, end, &lineno)) || !l[0] || strchr(l, '/'))
			return coordl__errprintf(err, EINVAL, "%s:%ld: expected a shard file name (no '/')",
						 what, lineno);
		if (!(r->shards[i] = strdup(l)))
			return coordl__errprintf(err, ENOMEM, "out of memory");
		r->nshards++;
	}
	if (!(l = next_line(&p, end, &lineno)) ||
	    coordl__header_count(l, "items", INT64_MAX, &ni) < 0 || ni == 0)
		return coordl__errprintf(err, EINVAL, "%s:%ld: expected 'items <n>' with n >= 1", what,
					 lineno);
	for (uint64_t i = 0; i < ni; i++) {
		uint64_t sh, off, ln, lab;
		char *q;
		if (!(l = next_line(&p, end, &lineno)))
			return coordl__errprintf(err, EINVAL, "%s:%ld: %llu items announced, %llu found", what,
						 lineno, (unsigned long long)ni, (unsigned long long)i);
		q = l;
		if (coordl__field_u64(&q, &sh) < 0 || coordl__field_u64(&q, &off) < 0 ||
		    coordl__field_u64(&q, &ln) < 0 || coordl__field_u64(&q, &lab) < 0 || !*q)
			return coordl__errprintf(err, EINVAL,
						 "%s:%ld: expected '<shard> <offset> <length> <label> <name>'",
						 what, lineno);
		if (sh >= ns || lab >= nc || ln > UINT32_MAX || off > UINT64_MAX - ln)
			return coordl__errprintf(err, EINVAL, "%s:%ld: shard, range or label out of bounds",
						 what, lineno);
		if (coordl__source_add_item(src, q, (int32_t)lab, ln, (uint32_t)sh, off) < 0)
			return coordl__errprintf(err, ENOMEM, "out of memory");
	}
	while ((l = next_line(&p, end, &lineno)))
		if (*l)
			return coordl__errprintf(err, EINVAL, "%s:%ld: trailing data after the last item",
						 what, lineno);
	return 0;
}

/* A file list: "<ref> <label>" lines; refs are URLs, or (remote lists)
 * paths relative to the list. Sets *has_s3 when an item is in S3. */
static int parse_list(coordl__remote_t *r, coordl__source_t *src, char *body, size_t len,
		      const char *what, int *has_s3, coordl_error_t *err)
{
	char *p = body, *end = body + len, *l;
	long lineno = 0;
	int maxlabel = -1;

	if (memchr(body, '\0', len))
		return coordl__errprintf(err, EINVAL, "%s: binary data in a file list", what);
	while ((l = next_line(&p, end, &lineno))) {
		char *sp;
		int64_t label;
		const char *why;
		while (isspace((unsigned char)*l))
			l++;
		if (!*l || *l == '#')
			continue;
		sp = l + strlen(l);
		while (sp > l && !isspace((unsigned char)sp[-1]))
			sp--;
		if (sp == l)
			return coordl__errprintf(err, EINVAL, "%s:%ld: expected '<url> <label>'", what, lineno);
		if (syn_parse_i64(sp, 0, INT32_MAX - 1, &label) < 0)
			return coordl__errprintf(err, EINVAL, "%s:%ld: label '%.20s' is not an integer 0..%d",
						 what, lineno, sp, INT32_MAX - 1);
		while (sp > l && isspace((unsigned char)sp[-1]))
			sp--;
		*sp = '\0';
		if (strncmp(l, "s3://", 5) == 0) {
			char *b, *k;
			if (split_s3(l, &b, &k, &why) < 0)
				return coordl__errprintf(err, EINVAL, "%s:%ld: %s", what, lineno, why);
			free(b);
			if (!*k) {
				free(k);
				return coordl__errprintf(err, EINVAL, "%s:%ld: expected s3://BUCKET/KEY", what,
							 lineno);
			}
			free(k);
			*has_s3 = 1;
		} else if (coordl__is_url(l)) {
			if (coordl__check_http_url(l, 1, &why) < 0)
				return coordl__errprintf(err, EINVAL, "%s:%ld: %s", what, lineno, why);
		} else if (r->local_list || strstr(l, "://")) {
			return coordl__errprintf(err, EINVAL, "%s:%ld: expected an http://, https:// or s3:// URL",
						 what, lineno);
		} else if (l[0] == '/') {
			return coordl__errprintf(err, EINVAL, "%s:%ld: expected a URL or a relative path",
						 what, lineno);
		}
		if (coordl__source_add_item(src, l, (int32_t)label, 0, 0, 0) < 0)
			return coordl__errprintf(err, ENOMEM, "out of memory");
		if (label > maxlabel)
			maxlabel = (int)label;
	}
	if (coordl__source_count(src) == 0)
		return coordl__errprintf(err, ENOENT, "%s: the file list has no items", what);
	coordl__source_set_remote(src, r, maxlabel + 1);
	return 0;
}

/* Read a local file (a list of URLs) into a NUL-terminated buffer. */
static int read_local(const char *path, char **out, size_t *outlen, coordl_error_t *err)
{
	char *buf = syn_file_read(AT_FDCWD, path, COORDL__REMOTE_TEXT_MAX,
				  SYN_FILE_FOLLOW | SYN_FILE_REGULAR, outlen);

	if (!buf && (errno == EINVAL || errno == EFBIG))
		return coordl__errprintf(err, EINVAL, "%s: not a regular file of at most %llu bytes", path,
					 (unsigned long long)COORDL__REMOTE_TEXT_MAX);
	if (!buf)
		return coordl__errprintf(err, errno, "%s: %s", path, strerror(errno));
	*out = buf;
	return 0;
}

int coordl__remote_wants(const char *path, int kind)
{
	struct stat st;
	FILE *f;
	char line[512];
	int want = 0;
	size_t l;

	if (coordl__is_url(path))
		return 1;
	if ((kind != COORDL_SOURCE_AUTO && kind != COORDL_SOURCE_FILELIST) || stat(path, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	l = strlen(path);
	if (kind == COORDL_SOURCE_AUTO && l > 4 && strcmp(path + l - 4, ".cdx") == 0)
		return 0;
	{
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0 || !(f = fdopen(fd, "r"))) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
	}
	/* The first entry decides: a list names local files or URLs. */
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		want = coordl__is_url(p);
		break;
	}
	fclose(f);
	return want;
}

coordl__source_t *coordl__remote_parse(int kind, const char *base, const char *body, size_t len,
				       coordl_error_t *err)
{
	coordl__remote_t *r = calloc(1, sizeof(*r));
	coordl__source_t *src = NULL;
	char *copy = malloc(len + 1);
	int has_s3 = 0, rc = -1;

	if (!r || !copy || !(r->base_url = strdup(base)) || !(src = coordl__source_new(kind, base))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	coordl__source_set_remote(src, r, -1);
	r = NULL;
	memcpy(copy, body, len);
	copy[len] = '\0';
	if (kind == COORDL_SOURCE_IMAGEFOLDER)
		rc = coordl__parse_manifest(src, copy, len, "manifest", err);
	else if (kind == COORDL_SOURCE_SHARDS)
		rc = parse_index(coordl__source_remote(src), src, copy, len, "index", err);
	else if (kind == COORDL_SOURCE_FILELIST)
		rc = parse_list(coordl__source_remote(src), src, copy, len, "list", &has_s3, err);
	else
		coordl__errprintf(err, EINVAL, "source=%d: unknown source kind", kind);
out:
	free(copy);
	coordl__remote_destroy(r);
	if (rc < 0) {
		int e = errno;
		coordl__source_destroy(src);
		errno = e;
		return NULL;
	}
	return src;
}

void coordl__remote_destroy(coordl__remote_t *r)
{
	int e = errno;

	if (!r)
		return;
	free(r->base_url);
	free(r->bucket);
	free(r->prefix);
	for (uint32_t i = 0; i < r->nshards; i++)
		free(r->shards[i]);
	free(r->shards);
	coordl__s3conf_clear(&r->s3c);
	free(r->http_ca);
	free(r);
	errno = e;
}

coordl__source_t *coordl__remote_open(const char *path, int kind, coordl_error_t *err)
{
	static int curl_ready;
	coordl__remote_t *r = NULL;
	coordl__source_t *src = NULL;
	char *body = NULL, *key = NULL, *url = NULL;
	const char *why, *ca;
	size_t len;
	int ok = 0, has_s3 = 0, is_s3 = strncmp(path, "s3://", 5) == 0;

	/* libcurl's global state, set up once before the first transfer. */
	if (!__atomic_exchange_n(&curl_ready, 1, __ATOMIC_ACQ_REL) &&
	    curl_global_init(CURL_GLOBAL_ALL) != 0) {
		__atomic_store_n(&curl_ready, 0, __ATOMIC_RELEASE);
		coordl__errprintf(err, EIO, "%.100s: cannot initialise libcurl", path);
		return NULL;
	}
	if (!(r = calloc(1, sizeof(*r)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		return NULL;
	}
	if ((ca = env(COORDL_ENV_CURL_CA_BUNDLE)) && !(r->http_ca = strdup(ca)))
		goto nomem;
	if (!coordl__is_url(path)) {
		/* A local file list of URLs. */
		r->local_list = 1;
		if (!(src = coordl__source_new(COORDL_SOURCE_FILELIST, ".")))
			goto nomem;
		coordl__source_set_remote(src, r, -1);
		if (read_local(path, &body, &len, err) < 0 ||
		    parse_list(r, src, body, len, path, &has_s3, err) < 0)
			goto out;
		if (has_s3 && coordl__s3conf_from_env(&r->s3c, err) < 0)
			goto out;
		r->have_s3 = has_s3;
		ok = 1;
		goto out;
	}
	if (kind == COORDL_SOURCE_AUTO) {
		if (ends_with(path, ".cdx"))
			kind = COORDL_SOURCE_SHARDS;
		else if (ends_with(path, ".txt") || ends_with(path, ".lst"))
			kind = COORDL_SOURCE_FILELIST;
		else
			kind = COORDL_SOURCE_IMAGEFOLDER;
	}
	if (kind < COORDL_SOURCE_IMAGEFOLDER || kind > COORDL_SOURCE_SHARDS) {
		coordl__errprintf(err, EINVAL, "source=%d: unknown source kind", kind);
		goto out;
	}
	if (is_s3) {
		const char *slash;
		if (split_s3(path, &r->bucket, &key, &why) < 0) {
			coordl__errprintf(err, EINVAL, "%.100s: %s", path, why);
			goto out;
		}
		if (coordl__s3conf_from_env(&r->s3c, err) < 0)
			goto out;
		r->have_s3 = r->base_s3 = 1;
		if (kind == COORDL_SOURCE_IMAGEFOLDER) {
			/* s3://b/train and s3://b/train/ both list train/. */
			size_t kl = strlen(key);
			r->prefix = kl && key[kl - 1] != '/' ? coordl__cat4(key, "/", NULL, NULL) : strdup(key);
		} else {
			if (!*key || ends_with(key, "/")) {
				coordl__errprintf(err, EINVAL, "%.100s: expected s3://BUCKET/KEY of an object",
						  path);
				goto out;
			}
			slash = strrchr(key, '/');
			r->prefix = slash ? strndup(key, (size_t)(slash - key) + 1) : strdup("");
		}
		if (!r->prefix)
			goto nomem;
	} else {
		const char *host = strstr(path, "://") + 3, *slash = strrchr(path, '/');
		size_t l = strlen(path);
		if (coordl__check_http_url(path, 0, &why) < 0) {
			/* Name the URL without what may be a password in it. */
			const char *at = strchr(host, '@'), *sl = strchr(host, '/');
			if (at && (!sl || at < sl))
				coordl__errprintf(err, EINVAL, "%.*s...@%.80s: %s", (int)(host - path), path,
						  at + 1, why);
			else
				coordl__errprintf(err, EINVAL, "%.100s: %s", path, why);
			goto out;
		}
		if (kind == COORDL_SOURCE_IMAGEFOLDER) {
			while (l > (size_t)(host - path) && path[l - 1] == '/')
				l--;
			r->base_url = strndup(path, l);
		} else {
			if (!slash || slash < host || !slash[1]) {
				coordl__errprintf(err, EINVAL, "%.100s: expected the URL of a %s", path,
						  kind == COORDL_SOURCE_SHARDS ? "shard index" : "file list");
				goto out;
			}
			r->base_url = strndup(path, (size_t)(slash - path));
		}
		if (!r->base_url)
			goto nomem;
	}
	if (!(src = coordl__source_new(kind, is_s3 ? path : r->base_url)))
		goto nomem;
	coordl__source_set_remote(src, r, -1);
	if (kind == COORDL_SOURCE_IMAGEFOLDER) {
		if (is_s3) {
			if (list_s3(r, src, path, err) < 0)
				goto out;
		} else {
			struct text_arg a = { NULL, NULL, NULL, NULL };
			if (!(url = coordl__cat4(r->base_url, "/", COORDL_MANIFEST_NAME, NULL)))
				goto nomem;
			a.ref = url;
			if (get_text(r, &a, url, &body, &len, err) < 0 ||
			    coordl__parse_manifest(src, body, len, url, err) < 0)
				goto out;
		}
	} else {
		struct text_arg a = { is_s3 ? NULL : path, r->bucket, key, NULL };
		if (get_text(r, &a, path, &body, &len, err) < 0)
			goto out;
		if (kind == COORDL_SOURCE_SHARDS) {
			if (parse_index(r, src, body, len, path, err) < 0)
				goto out;
		} else {
			if (parse_list(r, src, body, len, path, &has_s3, err) < 0)
				goto out;
			if (has_s3 && !r->have_s3) {
				if (coordl__s3conf_from_env(&r->s3c, err) < 0)
					goto out;
				r->have_s3 = 1;
			}
		}
	}
	ok = 1;
	goto out;
nomem:
	coordl__errprintf(err, ENOMEM, "out of memory");
out:
	free(body);
	free(key);
	free(url);
	if (!ok) {
		int e = errno;
		if (src)
			coordl__source_destroy(src); /* frees r too */
		else
			coordl__remote_destroy(r);
		errno = e;
		return NULL;
	}
	return src;
}
