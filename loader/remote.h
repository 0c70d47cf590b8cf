/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote.h: datasets in HTTP(S) servers and S3 object stores (libcurl).
 *
 * A remote dataset is opened once (its item list comes from a manifest
 * object, an S3 ListObjectsV2 listing, a shard index or a file list of
 * URLs) into an ordinary coordl__source_t whose items carry their names;
 * this file turns an item into a ready-to-run curl request (URL, Range
 * header, AWS Signature V4) and judges the outcome of a transfer (done,
 * retry, or a corrupt item). The fetch engine (fetch.h) runs many such
 * requests at once; coordl__remote_fetch_sync() runs one, for callers
 * without an engine (coordl-pack).
 *
 * S3 settings come from the usual AWS environment (see coordl.h): the
 * endpoint (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else
 * https://BUCKET.s3.REGION.amazonaws.com), the region, and credentials
 * from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or the
 * shared credentials file. Secrets never appear in an error text and are
 * wiped when the source is closed. Requests are signed by libcurl
 * (CURLOPT_AWS_SIGV4); libcurl 7.88 signs the query string as given, so
 * every query built here is already in SigV4 canonical form (parameters
 * sorted, values percent-encoded). remote.c opens datasets and builds
 * requests; s3.c holds the S3 settings, signing and listing parser.
 */
#ifndef COORDL_REMOTE_H
#define COORDL_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "coordl.h"
#include "loader/source.h"

typedef struct coordl__remote coordl__remote_t;

/* Defaults of the knobs in coordl_config_t (coordl.h). */
#define COORDL__IO_DEADLINE_MS 30000          /* retries of one item, in all */
#define COORDL__ITEM_MAX (64ULL << 20)         /* largest item accepted */
/* Largest manifest, listing page, shard index or file list read at open. */
#define COORDL__REMOTE_TEXT_MAX (512ULL << 20)

/* 1 when path is an http://, https:// or s3:// URL. */
int coordl__is_url(const char *path);

/*
 * 1 when coordl__source_open() must hand path to coordl__remote_open(): a
 * URL, or (kind AUTO or FILELIST) a local file list whose first entry is a
 * URL. Never fails; a file it cannot read is left to the local source.
 */
int coordl__remote_wants(const char *path, int kind);

/*
 * Open a remote dataset (or a local file list of URLs). kind AUTO: a URL
 * ending in .cdx is a shard index, one ending in .txt or .lst a file list,
 * anything else an ImageFolder (S3: ListObjectsV2 under the prefix; HTTP:
 * the manifest object COORDL_MANIFEST_NAME under the URL). Reads the item
 * list over the network with retries (deadline: COORDL__IO_DEADLINE_MS).
 * Returns NULL with errno (EINVAL bad URL or malformed listing, ENOENT
 * missing object, EACCES refused, EIO network) and err naming the URL.
 */
coordl__source_t *coordl__remote_open(const char *path, int kind, coordl_error_t *err);

/* Free a remote backend (wipes credentials). Accepts NULL; preserves errno. */
void coordl__remote_destroy(coordl__remote_t *r);

/* Set the common options of every transfer on h (protocols, CA bundle,
 * HTTP/2, connection reuse, no signals). Returns 0 or -1. */
int coordl__remote_easy_init(const coordl__remote_t *r, CURL *h);

/* CURLOPT_PIPEWAIT for a transfer of url: on for https only. */
void coordl__remote_pipewait(CURL *h, const char *url);

/*
 * Prepare h (already set up by coordl__remote_easy_init) to fetch item i
 * of src: URL, Range header for a shard item, signing. *hdrs receives the
 * header list the caller frees with curl_slist_free_all() after the
 * transfer. *want is the exact byte count expected (a shard item), or 0
 * when any length up to the item cap is fine. Returns 0, or -1 with why.
 */
int coordl__remote_prepare(const coordl__remote_t *r, const coordl__source_t *src, size_t i,
			   CURL *h, struct curl_slist **hdrs, uint64_t *want, char *why,
			   size_t whylen);

/* The outcome of one transfer. */
enum coordl__verdict {
	COORDL__DONE = 0, /* the body is the item */
	COORDL__RETRY,    /* timeout, connection failure, 408, 429 or 5xx */
	COORDL__FAIL,     /* 404 and other 4xx, a body too large or of the wrong
	                     length, a refused protocol: a corrupt item */
};

/*
 * Judge a finished transfer: rc is curl's result, http the status code,
 * got the body length, want the exact length expected (0: any), overflow
 * 1 when the body was cut at the item cap (cap names it). Writes a reason
 * into why for anything but DONE.
 */
int coordl__remote_verdict(CURLcode rc, long http, uint64_t got, uint64_t want, int overflow,
			   uint64_t cap, char *why, size_t whylen);

/* Backoff before retry number `attempt` (1, 2, ...): 50 ms doubling up to
 * 2 s, with jitter from *seed so that many clients do not retry in step. */
double coordl__remote_backoff(int attempt, unsigned *seed);

/*
 * Fetch item i synchronously, with retries until deadline_s, into *buf
 * (grown as coordl__source_fetch() does). Returns 0, or -1 with why.
 */
int coordl__remote_fetch_sync(const coordl__remote_t *r, const coordl__source_t *src, size_t i,
			      uint8_t **buf, size_t *cap, size_t *len, char *why, size_t whylen);

/* ---- Pieces exposed for the unit tests ---------------------------------- */

/*
 * Parse a listing already read, without requests: a manifest (kind
 * IMAGEFOLDER), a shard index (SHARDS) or a file list (FILELIST), as
 * coordl__remote_open() would for a dataset under the http(s) URL base.
 * Returns the source (S3 items in a list are accepted, but no S3 settings
 * are loaded: preparing their requests fails), or NULL with errno and err.
 */
coordl__source_t *coordl__remote_parse(int kind, const char *base, const char *body, size_t len,
				       coordl_error_t *err);

/* S3 settings (see the top of the file). Strings are owned. */
typedef struct coordl__s3conf {
	char *endpoint;     /* "http://127.0.0.1:9000" (path-style), or NULL: AWS,
	                       https://BUCKET.s3.REGION.amazonaws.com */
	int virtual_host;   /* 1: BUCKET.host/KEY; 0: host/BUCKET/KEY */
	char *region;
	char *key_id, *secret, *token; /* NULL: anonymous (unsigned) requests */
	char *ca_bundle;    /* AWS_CA_BUNDLE, else CURL_CA_BUNDLE, else NULL */
	struct curl_slist *connect_to; /* tests: CURLOPT_CONNECT_TO list, else NULL */
} coordl__s3conf_t;

/* Fill c from the environment and the shared credentials file. Returns 0,
 * or -1 with EINVAL and err naming the variable or file line (never a
 * secret). */
int coordl__s3conf_from_env(coordl__s3conf_t *c, coordl_error_t *err);
/* Free and wipe c's strings; c may be partly filled. */
void coordl__s3conf_clear(coordl__s3conf_t *c);

/*
 * Prepare an S3 request on h: GET of bucket/key (key "" for the bucket
 * itself) with the canonical query `query` (may be NULL), an optional
 * Range value ("bytes=A-B") and an optional fixed x-amz-date (tests;
 * NULL: libcurl uses the current time). Returns 0 or -1 with why.
 */
int coordl__s3_prepare(const coordl__s3conf_t *c, CURL *h, const char *bucket, const char *key,
		       const char *query, const char *range, const char *amz_date,
		       struct curl_slist **hdrs, char *why, size_t whylen);

/* malloc'd concatenation of up to four strings (NULLs skipped), or NULL. */
char *coordl__cat4(const char *a, const char *b, const char *c, const char *d);

/* Check an http(s) URL: a scheme, a host, no user:password@ (it would end
 * up in error texts), no spaces or control characters. allow_query: a
 * query may follow the path (items of a file list; never a base). Returns
 * 0, or -1 with *why. */
int coordl__check_http_url(const char *u, int allow_query, const char **why);

/* Percent-encode s as SigV4 and S3 want it: every byte but A-Z a-z 0-9
 * - . _ ~ (and '/' when keep_slash) as %XX. Returns a malloc'd string. */
char *coordl__pct_encode(const char *s, int keep_slash);

/* One parsed ListObjectsV2 page. */
typedef struct coordl__s3_page {
	char **keys;
	uint64_t *sizes;
	size_t n;
	int truncated;
	char *next_token; /* NextContinuationToken, or NULL */
} coordl__s3_page_t;

/* Parse a ListObjectsV2 response body (len bytes, not NUL-terminated).
 * Returns 0, or -1 with EINVAL (malformed, or an S3 <Error> document,
 * whose code and message go into why). */
int coordl__s3_parse_list(const char *body, size_t len, coordl__s3_page_t *page, char *why,
			  size_t whylen);
void coordl__s3_page_free(coordl__s3_page_t *page);

/*
 * Parse a manifest (COORDL_MANIFEST_MAGIC, then "<size> <class>/<file>"
 * lines) or a list of object keys under a prefix into an ImageFolder item
 * list on src: classes sorted, files sorted within a class, only
 * .jpg/.jpeg files directly in a class directory (as a local ImageFolder).
 * For a manifest, body/len is the object; returns 0 or -1 with err naming
 * `what` and the line.
 */
int coordl__parse_manifest(coordl__source_t *src, const char *body, size_t len, const char *what,
			   coordl_error_t *err);

#endif
