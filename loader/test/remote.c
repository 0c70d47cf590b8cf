/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote.t: the parts of remote datasets that need no server: URL checks
 * (nothing is sent for a bad URL), percent-encoding, the ListObjectsV2
 * and manifest parsers, S3 settings from the environment and the shared
 * credentials file (and that no secret reaches an error text), local file
 * lists of URLs, the verdict on a finished transfer, the backoff, and the
 * loader's checks of the io_* knobs. loader/test/remote-server.sh runs the
 * rest against nginx.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordl.h"
#include "loader/remote.h"
#include "loader/source.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/remote-t.XXXXXX";

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if (!(f = fopen(path, "w")) || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static const char *tpath(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

static void clear_aws(void)
{
	static const char *v[] = {
		COORDL_ENV_AWS_ACCESS_KEY_ID, COORDL_ENV_AWS_SECRET_ACCESS_KEY,
		COORDL_ENV_AWS_SESSION_TOKEN, COORDL_ENV_AWS_REGION, COORDL_ENV_AWS_DEFAULT_REGION,
		COORDL_ENV_AWS_ENDPOINT_URL_S3, COORDL_ENV_AWS_ENDPOINT_URL, COORDL_ENV_AWS_PROFILE,
		COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE, COORDL_ENV_AWS_CA_BUNDLE,
		COORDL_ENV_CURL_CA_BUNDLE,
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		unsetenv(v[i]);
	setenv("HOME", tmpdir, 1);
}

static void test_bad_urls(void)
{
	static const struct {
		const char *url, *want;
	} t[] = {
		{ "http:///ds/", "no host" },
		{ "http://user:pw@127.0.0.1:1/ds/", "credentials in URLs" },
		{ "https://127.0.0.1:1/ds/?x=1", "no query" },
		{ "http://127.0.0.1:1/a b/", "spaces" },
		{ "s3://", "bucket of 1..63" },
		{ "s3://Upper/x", "lower-case" },
		{ "s3://b/dir/", "of an object" }, /* a shard index must be an object */
		{ "http://127.0.0.1:1/", "URL of a shard index" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		coordl_error_t err = { "" };
		int kind = i >= 6 ? COORDL_SOURCE_SHARDS : COORDL_SOURCE_AUTO;
		coordl__source_t *s = coordl__source_open(t[i].url, kind, &err);
		ok(!s && errno == EINVAL && strstr(err.text, t[i].want), "%s refused (%s)", t[i].url,
		   t[i].want);
		if (!strstr(err.text, t[i].want))
			diag("error: %s", err.text);
		coordl__source_destroy(s);
	}
	{
		coordl_error_t err = { "" };
		coordl__source_t *s = coordl__source_open("http://user:pw@127.0.0.1:1/ds/", 0, &err);
		ok(!s && !strstr(err.text, "pw") && !strstr(err.text, "user"),
		   "the refusal does not repeat the password (%s)", err.text);
	}
}

static void test_pct(void)
{
	char *a = coordl__pct_encode("c1/x&y z~-._\xc3\xa9.jpg", 1);
	char *b = coordl__pct_encode("t/2+=&", 0);

	is_str(a, "c1/x%26y%20z~-._%C3%A9.jpg", "path encoding keeps '/' and unreserved bytes");
	is_str(b, "t%2F2%2B%3D%26", "query encoding encodes '/' too");
	free(a);
	free(b);
}

static void test_s3_list(void)
{
	static const char page[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Name>b</Name><Prefix>t/</Prefix><KeyCount>2</KeyCount>"
		"<IsTruncated>true</IsTruncated><NextContinuationToken>1/a+b=&amp;</NextContinuationToken>"
		"<Contents><Key>t/c0/a&amp;b&#32;&#x263A;.jpg</Key><Size>12</Size></Contents>"
		"<Contents><Key>t/c1/z.jpg</Key><LastModified>x</LastModified><Size>0</Size></Contents>"
		"</ListBucketResult>";
	static const char last[] =
		"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
	static const char error[] =
		"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message>"
		"</Error>";
	static const char *bad[] = {
		"<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&#0;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
		"<html>not S3</html>",
	};
	coordl__s3_page_t pg;
	char why[160];
	int rc = coordl__s3_parse_list(page, sizeof(page) - 1, &pg, why, sizeof(why));

	ok(rc == 0 && pg.n == 2, "a ListObjectsV2 page with two objects parses");
	if (rc == 0 && pg.n == 2) {
		is_str(pg.keys[0], "t/c0/a&b \xe2\x98\xba.jpg", "entities and character references decode");
		ok(pg.sizes[0] == 12 && pg.sizes[1] == 0, "sizes are read");
		ok(pg.truncated && pg.next_token && !strcmp(pg.next_token, "1/a+b=&"),
		   "IsTruncated and the continuation token are read");
	}
	coordl__s3_page_free(&pg);
	ok(coordl__s3_parse_list(last, sizeof(last) - 1, &pg, why, sizeof(why)) == 0 && pg.n == 0 &&
	   !pg.truncated, "an empty last page parses");
	coordl__s3_page_free(&pg);
	ok(coordl__s3_parse_list(error, sizeof(error) - 1, &pg, why, sizeof(why)) < 0 &&
	   errno == EINVAL && strstr(why, "AccessDenied") && strstr(why, "Access Denied"),
	   "an S3 error document is an error with its code and message (%s)", why);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(coordl__s3_parse_list(bad[i], strlen(bad[i]), &pg, why, sizeof(why)) < 0 &&
		   errno == EINVAL, "malformed listing %zu refused (%s)", i, why);
}

static void test_manifest(void)
{
	static const char good[] =
		COORDL_MANIFEST_MAGIC "\n"
		"7 zebra/b.jpg\r\n"
		"5 apple/z.JPEG\n"
		"\n"
		"# a comment\n"
		"3 apple/a.jpg\n"
		"9 apple/readme.txt\n"  /* not an image: skipped as a scan would */
		"9 apple/.hidden.jpg\n" /* dot files are skipped */
		"9 apple/sub/deep.jpg\n" /* not directly in a class directory */
		"9 top.jpg\n";
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "coordl-manifest 2\n1 a/b.jpg\n", ":1: not a coordl manifest" },
		{ COORDL_MANIFEST_MAGIC "\nx a/b.jpg\n", ":2: expected" },
		{ COORDL_MANIFEST_MAGIC "\n1\n", ":2: expected" },
		{ COORDL_MANIFEST_MAGIC "\n1 a/b.jpg\n2 a/b.jpg\n", "listed twice" },
		{ COORDL_MANIFEST_MAGIC "\n1 a/b.txt\n", "no .jpg/.jpeg items" },
	};
	coordl__source_t *s = coordl__source_new(COORDL_SOURCE_IMAGEFOLDER, "http://h/ds");
	coordl_error_t err = { "" };

	ok(s && coordl__parse_manifest(s, good, sizeof(good) - 1, "m", &err) == 0,
	   "a manifest parses (%s)", err.text);
	if (s && coordl__source_count(s) == 3) {
		ok(coordl__source_classes(s) == 2 && !strcmp(coordl__source_class_name(s, 0), "apple") &&
		   !strcmp(coordl__source_class_name(s, 1), "zebra"), "classes sorted: apple, zebra");
		is_str(coordl__source_item_name(s, 0), "apple/a.jpg", "files sorted within a class");
		is_str(coordl__source_item_name(s, 1), "apple/z.JPEG", "... any case of .jpg/.jpeg");
		ok(coordl__source_label(s, 2) == 1 && coordl__source_item_size(s, 2) == 7 &&
		   coordl__source_bytes(s) == 15, "labels and sizes as listed");
	} else {
		ok(0, "three items (got %zu)", s ? coordl__source_count(s) : 0);
	}
	coordl__source_destroy(s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = coordl__source_new(COORDL_SOURCE_IMAGEFOLDER, "http://h/ds");
		err.text[0] = '\0';
		ok(coordl__parse_manifest(s, bad[i].text, strlen(bad[i].text), "m", &err) < 0 &&
		   strstr(err.text, bad[i].want), "bad manifest %zu: '%s'", i, err.text);
		coordl__source_destroy(s);
	}
}

static void test_s3conf(void)
{
	coordl__s3conf_t c;
	coordl_error_t err = { "" };
	static const char secret[] = "s3cr3t-DoNotPrint+/x";
	char text[512];

	clear_aws();
	ok(coordl__s3conf_from_env(&c, &err) == 0 && !c.key_id && c.virtual_host &&
	   !strcmp(c.region, "us-east-1") && !strcmp(c.endpoint, "https://s3.us-east-1.amazonaws.com"),
	   "no settings: anonymous, us-east-1, AWS endpoint, virtual-hosted");
	coordl__s3conf_clear(&c);

	setenv(COORDL_ENV_AWS_DEFAULT_REGION, "eu-west-1", 1);
	setenv(COORDL_ENV_AWS_ENDPOINT_URL, "http://127.0.0.1:9000/", 1);
	setenv(COORDL_ENV_AWS_ACCESS_KEY_ID, "AKID", 1);
	setenv(COORDL_ENV_AWS_SECRET_ACCESS_KEY, secret, 1);
	ok(coordl__s3conf_from_env(&c, &err) == 0 && !strcmp(c.region, "eu-west-1") &&
	   !strcmp(c.endpoint, "http://127.0.0.1:9000") && !c.virtual_host && c.key_id &&
	   !strcmp(c.secret, secret) && !c.token,
	   "environment: region, custom endpoint (path-style), key pair");
	coordl__s3conf_clear(&c);
	setenv(COORDL_ENV_AWS_REGION, "ap-south-2", 1);
	ok(coordl__s3conf_from_env(&c, &err) == 0 && !strcmp(c.region, "ap-south-2"),
	   "AWS_REGION wins over AWS_DEFAULT_REGION");
	coordl__s3conf_clear(&c);

	unsetenv(COORDL_ENV_AWS_SECRET_ACCESS_KEY);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && errno == EINVAL &&
	   strstr(err.text, COORDL_ENV_AWS_SECRET_ACCESS_KEY), "a key id without a secret is refused (%s)",
	   err.text);
	setenv(COORDL_ENV_AWS_SECRET_ACCESS_KEY, "has space", 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && !strstr(err.text, "has space"),
	   "a malformed secret is refused without being repeated (%s)", err.text);
	setenv(COORDL_ENV_AWS_SECRET_ACCESS_KEY, secret, 1);
	setenv(COORDL_ENV_AWS_ENDPOINT_URL, "http://127.0.0.1:9000/path", 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && strstr(err.text, COORDL_ENV_AWS_ENDPOINT_URL),
	   "an endpoint with a path is refused naming the variable");
	setenv(COORDL_ENV_AWS_ENDPOINT_URL, "ftp://x", 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0, "an endpoint that is not http(s) is refused");
	setenv(COORDL_ENV_AWS_REGION, "Bad Region", 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && strstr(err.text, COORDL_ENV_AWS_REGION),
	   "a malformed region is refused naming the variable");

	/* The shared credentials file. */
	clear_aws();
	if (mkdir(tpath(".aws"), 0700) < 0)
		abort();
	snprintf(text, sizeof(text),
		 "# comment\n[default]\naws_access_key_id = AKIDDEF\naws_secret_access_key=%s\n"
		 "region = eu-north-1\n\n[other]\naws_access_key_id = AKIDOTHER\n"
		 "aws_secret_access_key = %s\naws_session_token = TOK\n", secret, secret);
	write_file(".aws/credentials", text);
	ok(coordl__s3conf_from_env(&c, &err) == 0 && c.key_id && !strcmp(c.key_id, "AKIDDEF") &&
	   !strcmp(c.secret, secret) && !c.token, "~/.aws/credentials [default] is read");
	coordl__s3conf_clear(&c);
	setenv(COORDL_ENV_AWS_PROFILE, "other", 1);
	ok(coordl__s3conf_from_env(&c, &err) == 0 && c.key_id && !strcmp(c.key_id, "AKIDOTHER") &&
	   c.token && !strcmp(c.token, "TOK"), "AWS_PROFILE picks a section, with its session token");
	coordl__s3conf_clear(&c);
	setenv(COORDL_ENV_AWS_PROFILE, "missing", 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && errno == ENOENT && strstr(err.text, "[missing]"),
	   "a profile that is not in the file is an error (%s)", err.text);
	unsetenv(COORDL_ENV_AWS_PROFILE);
	setenv(COORDL_ENV_AWS_ACCESS_KEY_ID, "AKIDENV", 1);
	setenv(COORDL_ENV_AWS_SECRET_ACCESS_KEY, secret, 1);
	ok(coordl__s3conf_from_env(&c, &err) == 0 && !strcmp(c.key_id, "AKIDENV"),
	   "environment variables win over the file");
	coordl__s3conf_clear(&c);
	clear_aws();
	snprintf(text, sizeof(text), "[default]\n\naws_access_key_id = AKID\nthis line %s is bad\n",
		 secret);
	write_file("creds-bad", text);
	setenv(COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE, tpath("creds-bad"), 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && strstr(err.text, "creds-bad:4") &&
	   !strstr(err.text, secret), "a malformed file is refused by line, without its contents (%s)",
	   err.text);
	snprintf(text, sizeof(text), "[default]\naws_secret_access_key = %s\n", secret);
	write_file("creds-half", text);
	setenv(COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE, tpath("creds-half"), 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && strstr(err.text, "aws_access_key_id") &&
	   !strstr(err.text, secret), "a profile without a key id is refused (%s)", err.text);
	setenv(COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE, tpath("nonexistent"), 1);
	ok(coordl__s3conf_from_env(&c, &err) < 0 && errno == ENOENT,
	   "a credentials file named by the environment must exist");
	clear_aws();
	unlink(tpath(".aws/credentials"));
	rmdir(tpath(".aws"));
	ok(coordl__s3conf_from_env(&c, &err) == 0 && !c.key_id, "no file: anonymous requests");
	coordl__s3conf_clear(&c);
}

static void test_url_list(void)
{
	coordl_error_t err = { "" };
	coordl__source_t *s;

	clear_aws();
	write_file("urls.txt", "# URLs\nhttp://127.0.0.1:1/a.jpg 0\n\ns3://bkt/k/b.jpg 2\n"
		   "https://h.example/c.jpg?X-Amz-Signature=00 1\n");
	ok(coordl__remote_wants(tpath("urls.txt"), COORDL_SOURCE_AUTO) == 1,
	   "a local list whose first entry is a URL goes to the remote source");
	s = coordl__source_open(tpath("urls.txt"), COORDL_SOURCE_AUTO, &err);
	ok(s && coordl__source_count(s) == 3 && coordl__source_classes(s) == 3 &&
	   coordl__source_remote(s) && coordl__source_kind(s) == COORDL_SOURCE_FILELIST,
	   "it opens without any request: 3 items, 3 classes (%s)", err.text);
	coordl__source_destroy(s);
	write_file("mixed.txt", "http://127.0.0.1:1/a.jpg 0\nlocal/b.jpg 1\n");
	s = coordl__source_open(tpath("mixed.txt"), COORDL_SOURCE_AUTO, &err);
	ok(!s && errno == EINVAL && strstr(err.text, "mixed.txt:2"),
	   "a local path in a list of URLs is refused by line (%s)", err.text);
	write_file("badlabel.txt", "http://127.0.0.1:1/a.jpg x\n");
	s = coordl__source_open(tpath("badlabel.txt"), COORDL_SOURCE_AUTO, &err);
	ok(!s && strstr(err.text, "badlabel.txt:1: label"), "a bad label is refused by line");
	write_file("local.txt", "a.jpg 0\n");
	ok(coordl__remote_wants(tpath("local.txt"), COORDL_SOURCE_AUTO) == 0 &&
	   coordl__remote_wants(tpath("urls.txt"), COORDL_SOURCE_SHARDS) == 0,
	   "a list of local files, or another kind, stays local");
	ok(coordl__remote_wants("http://x/ds/", COORDL_SOURCE_IMAGEFOLDER) == 1 &&
	   coordl__remote_wants("s3://b/p", COORDL_SOURCE_AUTO) == 1 &&
	   coordl__remote_wants("/dev/null", COORDL_SOURCE_AUTO) == 0, "URLs are remote, devices not");
}

static void test_verdict(void)
{
	static const struct {
		CURLcode rc;
		long http;
		uint64_t got, want;
		int overflow, v;
		const char *why;
	} t[] = {
		{ CURLE_OK, 200, 10, 0, 0, COORDL__DONE, "" },
		{ CURLE_OK, 206, 10, 10, 0, COORDL__DONE, "" },
		{ CURLE_OK, 206, 9, 10, 0, COORDL__FAIL, "9 bytes, expected 10" },
		{ CURLE_OK, 404, 0, 0, 0, COORDL__FAIL, "HTTP 404" },
		{ CURLE_OK, 403, 0, 0, 0, COORDL__FAIL, "HTTP 403" },
		{ CURLE_OK, 416, 0, 10, 0, COORDL__FAIL, "HTTP 416" },
		{ CURLE_OK, 500, 0, 0, 0, COORDL__RETRY, "HTTP 500" },
		{ CURLE_OK, 503, 0, 0, 0, COORDL__RETRY, "HTTP 503" },
		{ CURLE_OK, 429, 0, 0, 0, COORDL__RETRY, "HTTP 429" },
		{ CURLE_OK, 408, 0, 0, 0, COORDL__RETRY, "HTTP 408" },
		{ CURLE_OPERATION_TIMEDOUT, 0, 0, 0, 0, COORDL__RETRY, "Timeout" },
		{ CURLE_COULDNT_CONNECT, 0, 0, 0, 0, COORDL__RETRY, "connect" },
		{ CURLE_PARTIAL_FILE, 200, 5, 0, 0, COORDL__RETRY, "" },
		{ CURLE_PEER_FAILED_VERIFICATION, 0, 0, 0, 0, COORDL__FAIL, "" },
		{ CURLE_UNSUPPORTED_PROTOCOL, 0, 0, 0, 0, COORDL__FAIL, "" },
		{ CURLE_WRITE_ERROR, 200, 100, 0, 1, COORDL__FAIL, "larger than the item cap (100 bytes)" },
		{ CURLE_WRITE_ERROR, 200, 10, 10, 1, COORDL__FAIL, "Range ignored" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char why[128] = "";
		int v = coordl__remote_verdict(t[i].rc, t[i].http, t[i].got, t[i].want, t[i].overflow, 100,
					       why, sizeof(why));
		ok(v == t[i].v && strstr(why, t[i].why), "verdict %zu (curl %d, HTTP %ld): %d '%s'", i,
		   (int)t[i].rc, t[i].http, v, why);
	}
}

static void test_backoff(void)
{
	unsigned seed = 1;
	int good = 1;

	for (int i = 0; i < 1000; i++) {
		double b1 = coordl__remote_backoff(1, &seed), b3 = coordl__remote_backoff(3, &seed);
		double b20 = coordl__remote_backoff(20, &seed);
		good &= b1 >= 0.025 && b1 <= 0.05 && b3 >= 0.1 && b3 <= 0.2 && b20 >= 1.0 && b20 <= 2.0;
	}
	ok(good, "backoff doubles from 50 ms to at most 2 s, with jitter down to half");
}

static void test_config(void)
{
	static const struct {
		int window, deadline;
		int64_t max;
		const char *want;
	} t[] = {
		{ -2, 0, 0, "io_window=-2" },
		{ COORDL_IO_WINDOW_MAX + 1, 0, 0, "io_window=" },
		{ 0, -1, 0, "io_deadline_ms=-1" },
		{ 0, 0, -5, "max_item_bytes=-5" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		coordl_config_t cfg;
		coordl_error_t err = { "" };
		coordl_config_init(&cfg);
		cfg.path = "http://127.0.0.1:1/ds/";
		cfg.io_window = t[i].window;
		cfg.io_deadline_ms = t[i].deadline;
		cfg.max_item_bytes = t[i].max;
		ok(!coordl_create(&cfg, &err) && errno == EINVAL && strstr(err.text, t[i].want),
		   "config refused: %s", err.text);
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		skip_all("cannot make a temporary directory");
	test_bad_urls();
	test_pct();
	test_s3_list();
	test_manifest();
	test_s3conf();
	test_url_list();
	test_verdict();
	test_backoff();
	test_config();
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			diag("could not remove %s", tmpdir);
	}
	done_testing();
	return tap__failed ? 1 : 0;
}
