/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote-client: the loader side of loader/test/remote-server.sh, which
 * starts the nginx these commands talk to and turns their exit status and
 * output into TAP.
 *
 *   remote-client same [OPTS] A B     run two loaders over datasets A and B
 *                                     (local or remote) with the same
 *                                     settings; exit 0 when every batch has
 *                                     the same indices, labels and pixels
 *   remote-client resume [OPTS] URL   stop an epoch half way, restore the
 *                                     state in a new loader, and compare the
 *                                     rest with an uninterrupted run
 *   remote-client stats [OPTS] URL    run epochs, print one line of
 *                                     key=value statistics per epoch
 *   remote-client sigv4 PORT          send AWS's published SigV4 example
 *                                     requests (GET Object with a Range,
 *                                     ListObjects) through the loader's S3
 *                                     request code to 127.0.0.1:PORT, which
 *                                     logs the Authorization header
 *
 * OPTS: --window N, --deadline MS, --max-item BYTES, --cache BYTES,
 * --epochs E, --threads T, --mode train|raw, --rank R, --world W.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "common/parse.h"
#include "coordl.h"
#include "loader/env.h"
#include "loader/remote.h"

struct opts {
	int window, deadline, epochs, threads, mode, rank, world;
	int64_t max_item, cache;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "remote-client: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int64_t num(const char *opt, const char *s)
{
	int64_t v;

	if (syn_parse_i64(s, -1, INT64_MAX, &v) < 0)
		die("bad number for %s", opt);
	return v;
}

/* Parse OPTS from argv[*i...]; returns the index of the first operand. */
static int parse_opts(int argc, char **argv, int i, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->epochs = 2;
	o->threads = 2;
	o->world = 1;
	o->mode = COORDL_MODE_TRAIN;
	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		const char *k = argv[i] + 2, *v = argv[i + 1];
		if (!strcmp(k, "window"))
			o->window = (int)num(k, v);
		else if (!strcmp(k, "deadline"))
			o->deadline = (int)num(k, v);
		else if (!strcmp(k, "max-item"))
			o->max_item = num(k, v);
		else if (!strcmp(k, "cache"))
			o->cache = num(k, v);
		else if (!strcmp(k, "epochs"))
			o->epochs = (int)num(k, v);
		else if (!strcmp(k, "threads"))
			o->threads = (int)num(k, v);
		else if (!strcmp(k, "rank"))
			o->rank = (int)num(k, v);
		else if (!strcmp(k, "world"))
			o->world = (int)num(k, v);
		else if (!strcmp(k, "mode"))
			o->mode = !strcmp(v, "raw") ? COORDL_MODE_RAW : COORDL_MODE_TRAIN;
		else
			die("unknown option --%s", k);
	}
	return i;
}

static coordl_loader_t *open_loader(const char *path, const struct opts *o)
{
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;

	coordl_config_init(&cfg);
	cfg.path = path;
	cfg.batch_size = 8;
	cfg.out_size = 32;
	cfg.seed = 7;
	cfg.threads = o->threads;
	cfg.mode = o->mode;
	cfg.cache_bytes = o->cache;
	cfg.rank = o->rank;
	cfg.world_size = o->world;
	cfg.io_window = o->window;
	cfg.io_deadline_ms = o->deadline;
	cfg.max_item_bytes = o->max_item;
	if (!(ld = coordl_create(&cfg, &err)))
		die("%s", err.text);
	return ld;
}

/* Compare the next batch of a and b; 0 when equal, 1 when different, 2
 * when both epochs ended. */
static int compare_batch(coordl_loader_t *a, coordl_loader_t *b, const char *what)
{
	coordl_batch_t *x, *y;
	coordl_error_t err = { "" };
	int ra = coordl_next(a, &x, &err), rb;

	if (ra < 0)
		die("%s", err.text);
	if ((rb = coordl_next(b, &y, &err)) < 0)
		die("%s", err.text);
	if (ra == 0 || rb == 0) {
		if (ra != rb)
			fprintf(stderr, "%s: one epoch ended before the other\n", what);
		if (ra)
			coordl_release(a, x);
		if (rb)
			coordl_release(b, y);
		return ra == rb ? 2 : 1;
	}
	int diff = x->n != y->n || x->seq != y->seq ||
		   memcmp(x->indices, y->indices, (size_t)x->n * sizeof(uint64_t)) ||
		   memcmp(x->labels, y->labels, (size_t)x->n * sizeof(int32_t)) ||
		   x->data_bytes != y->data_bytes || memcmp(x->data, y->data, x->data_bytes);
	if (diff)
		fprintf(stderr, "%s: batch %llu differs\n", what, (unsigned long long)x->seq);
	coordl_release(a, x);
	coordl_release(b, y);
	return diff;
}

static int cmd_same(const char *pa, const char *pb, const struct opts *o)
{
	coordl_loader_t *a = open_loader(pa, o), *b = open_loader(pb, o);
	coordl_error_t err = { "" };
	int rc = 0, batches = 0;

	if (coordl_num_samples(a) != coordl_num_samples(b) ||
	    coordl_num_classes(a) != coordl_num_classes(b)) {
		fprintf(stderr, "%zu samples/%d classes versus %zu/%d\n", coordl_num_samples(a),
			coordl_num_classes(a), coordl_num_samples(b), coordl_num_classes(b));
		rc = 1;
	}
	for (int e = 0; e < o->epochs && !rc; e++) {
		int c;
		if (coordl_set_epoch(a, (uint64_t)e, &err) < 0 || coordl_set_epoch(b, (uint64_t)e, &err) < 0)
			die("%s", err.text);
		while ((c = compare_batch(a, b, "same")) == 0)
			batches++;
		rc = c == 1;
	}
	if (!rc)
		printf("same: %d batches equal\n", batches);
	coordl_destroy(a);
	coordl_destroy(b);
	return rc;
}

static int cmd_resume(const char *url, const struct opts *o)
{
	coordl_loader_t *a = open_loader(url, o), *b, *c = open_loader(url, o);
	coordl_error_t err = { "" };
	coordl_batch_t *x;
	coordl_state_t st;
	size_t half = coordl_num_batches(a) / 2;
	int rc = 0, n;

	if (coordl_set_epoch(a, 1, &err) < 0 || coordl_set_epoch(c, 1, &err) < 0)
		die("%s", err.text);
	for (size_t i = 0; i < half; i++) {
		if (coordl_next(a, &x, &err) != 1)
			die("%s", err.text[0] ? err.text : "epoch too short");
		coordl_release(a, x);
		if (coordl_next(c, &x, &err) != 1)
			die("%s", err.text[0] ? err.text : "epoch too short");
		coordl_release(c, x);
	}
	coordl_get_state(a, &st);
	coordl_destroy(a);
	b = open_loader(url, o);
	if (coordl_set_state(b, &st, &err) < 0)
		die("%s", err.text);
	for (n = 0; (rc = compare_batch(b, c, "resume")) == 0; n++)
		;
	rc = rc == 1;
	if (!rc)
		printf("resume: the %d batches after position %llu are equal\n", n,
		       (unsigned long long)st.position);
	coordl_destroy(b);
	coordl_destroy(c);
	return rc;
}

static int cmd_stats(const char *url, const struct opts *o)
{
	coordl_loader_t *ld = open_loader(url, o);
	coordl_error_t err = { "" };
	coordl_batch_t *b;
	coordl_stats_t st;
	int rc = 0;

	for (int e = 0; e < o->epochs; e++) {
		int r;
		if (coordl_set_epoch(ld, (uint64_t)e, &err) < 0)
			die("%s", err.text);
		while ((r = coordl_next(ld, &b, &err)) == 1)
			coordl_release(ld, b);
		if (r < 0) {
			printf("epoch=%d error=\"%s\"\n", e, err.text);
			rc = 1;
			break;
		}
		coordl_get_stats(ld, &st);
		printf("epoch=%d samples=%llu corrupt=%llu hits=%llu misses=%llu storage_bytes=%llu "
		       "requests=%llu retries=%llu p50=%.4f p90=%.4f p99=%.4f window=%d inflight=%d "
		       "bytes_in_flight=%llu wall=%.3f\n",
		       e, (unsigned long long)st.samples, (unsigned long long)st.corrupt,
		       (unsigned long long)st.cache_hits, (unsigned long long)st.cache_misses,
		       (unsigned long long)st.storage_bytes, (unsigned long long)st.requests,
		       (unsigned long long)st.retries, st.req_latency_p50, st.req_latency_p90,
		       st.req_latency_p99, st.io_window, st.io_inflight,
		       (unsigned long long)st.io_bytes_in_flight, st.epoch_wall);
	}
	if (coordl_last_corrupt(ld))
		printf("last_corrupt=%s\n", coordl_last_corrupt(ld));
	coordl_destroy(ld);
	return rc;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* AWS's example: GET /test.txt with Range: bytes=0-9 and ListObjects
 * ?max-keys=2&prefix=J on examplebucket, 20130524T000000Z, us-east-1,
 * AKIAIOSFODNN7EXAMPLE. The request goes to 127.0.0.1:PORT with the Host
 * header of the example, so the server sees exactly the signed request. */
static int cmd_sigv4(const char *port)
{
	coordl__s3conf_t c;
	char connect[128], why[160];
	int rc = 0;

	memset(&c, 0, sizeof(c));
	c.endpoint = strdup("http://s3.amazonaws.com");
	c.virtual_host = 1;
	c.region = strdup("us-east-1");
	c.key_id = strdup("AKIAIOSFODNN7EXAMPLE");
	c.secret = strdup("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
	snprintf(connect, sizeof(connect), "examplebucket.s3.amazonaws.com:80:127.0.0.1:%s", port);
	c.connect_to = curl_slist_append(NULL, connect);
	curl_global_init(CURL_GLOBAL_ALL);
	for (int i = 0; i < 2; i++) {
		CURL *h = curl_easy_init();
		struct curl_slist *hdrs = NULL;
		long http = 0;
		if (!h || coordl__remote_easy_init(NULL, h) < 0)
			die("%s", "curl_easy_init failed");
		if ((i == 0 ? coordl__s3_prepare(&c, h, "examplebucket", "test.txt", NULL, "bytes=0-9",
						 "20130524T000000Z", &hdrs, why, sizeof(why))
			    : coordl__s3_prepare(&c, h, "examplebucket", "", "max-keys=2&prefix=J", NULL,
						 "20130524T000000Z", &hdrs, why, sizeof(why))) < 0)
			die("%s", why);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
		if (curl_easy_perform(h) != CURLE_OK ||
		    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http) != CURLE_OK || http != 200)
			rc = 1;
		curl_slist_free_all(hdrs);
		curl_easy_cleanup(h);
	}
	coordl__s3conf_clear(&c);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	int i;

	if (argc < 3)
		die("%s", "usage: remote-client same|resume|stats|sigv4 ...");
	if (!strcmp(argv[1], "sigv4"))
		return cmd_sigv4(argv[2]);
	i = parse_opts(argc, argv, 2, &o);
	if (!strcmp(argv[1], "same") && argc - i == 2)
		return cmd_same(argv[i], argv[i + 1], &o);
	if (!strcmp(argv[1], "resume") && argc - i == 1)
		return cmd_resume(argv[i], &o);
	if (!strcmp(argv[1], "stats") && argc - i == 1)
		return cmd_stats(argv[i], &o);
	die("%s", "usage: remote-client same|resume|stats|sigv4 ...");
}
