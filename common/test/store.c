/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store.c: tests of the profile JSON reader/writer and the profile store:
 * round trip (exact doubles), the checked-in golden profile, a table of
 * corrupt inputs (each rejected with the field named and the output left
 * untouched), key validation, listing that skips and reports bad files,
 * and concurrent writers and readers in separate processes (a reader never
 * sees a partial or mixed profile, no temporary file is left behind).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/store.h"
#include "tests/tap.h"

static char dir[] = "/tmp/syn-store-test.XXXXXX";

static void make_profile(syn_profile_t *p, const char *key, double salt)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->key, sizeof(p->key), "%s", key);
	snprintf(p->model, sizeof(p->model), "salt %.17g", salt);
	p->n_cpu = 5;
	p->n_mem = 3;
	for (int i = 0; i < p->n_cpu; i++)
		p->cpus[i] = i + 1 + (i == 4 ? 0.5 : 0);
	p->mem_gb[0] = 0;
	p->mem_gb[1] = 20.8;
	p->mem_gb[2] = 62.5 + salt / 7;
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem; j++)
			p->tput[i][j] = salt + (i + 1) / 3.0 + j / 11.0;
	p->prop_cpus = 3;
	p->prop_mem_gb = 62.5;
	p->base_tput = 812.5 + salt;
	p->gpu_rate = 2040.0 / 3;
	p->prep_rate_per_core = 270.8;
	p->fetch_storage_bps = 5.24288e8;
	p->fetch_memory_bps = 1e10 / 3;
	p->fetch_overlap = 2.0 / 3;
	p->fetch_miss_s = 1.0 / 7000;
	p->dataset_bytes = 150000000000ULL;
	p->dataset_items = 1281167;
	snprintf(p->machine, sizeof(p->machine), "host \"quoted\" \\ tab\t");
	snprintf(p->date, sizeof(p->date), "2026-11-22T15:00:00Z");
	snprintf(p->tool, sizeof(p->tool), "synergy-profile 0.1.0");
}

static int same(const syn_profile_t *a, const syn_profile_t *b)
{
	if (strcmp(a->key, b->key) || strcmp(a->model, b->model) || a->n_cpu != b->n_cpu ||
	    a->n_mem != b->n_mem || strcmp(a->machine, b->machine) || strcmp(a->date, b->date) ||
	    strcmp(a->tool, b->tool))
		return 0;
	for (int i = 0; i < a->n_cpu; i++)
		if (a->cpus[i] != b->cpus[i])
			return 0;
	for (int j = 0; j < a->n_mem; j++)
		if (a->mem_gb[j] != b->mem_gb[j])
			return 0;
	for (int i = 0; i < a->n_cpu; i++)
		for (int j = 0; j < a->n_mem; j++)
			if (a->tput[i][j] != b->tput[i][j])
				return 0;
	return a->prop_cpus == b->prop_cpus && a->prop_mem_gb == b->prop_mem_gb &&
	       a->base_tput == b->base_tput && a->gpu_rate == b->gpu_rate &&
	       a->prep_rate_per_core == b->prep_rate_per_core &&
	       a->fetch_storage_bps == b->fetch_storage_bps &&
	       a->fetch_memory_bps == b->fetch_memory_bps && a->fetch_overlap == b->fetch_overlap &&
	       a->fetch_miss_s == b->fetch_miss_s && a->dataset_bytes == b->dataset_bytes &&
	       a->dataset_items == b->dataset_items && a->has_owner == b->has_owner &&
	       a->owner == b->owner;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		bail_out("cannot write test file");
}

static void test_round_trip(void)
{
	syn_profile_t a, b;
	syn_error_t err;

	make_profile(&a, "rt", 0.1);
	char *text = syn_profile_format(&a, &err);
	ok(text != NULL, "format a profile");
	memset(&b, 0, sizeof(b));
	ok(text && syn_profile_parse(text, strlen(text), "rt", &b, &err) == 0,
	   "parse the formatted text");
	ok(same(&a, &b), "round trip keeps every field and every double exactly");
	ok(text && text[strlen(text) - 1] == '\n', "formatted text ends with a newline");
	free(text);

	/* Rounded values (what the profiler writes) print as typed. */
	make_profile(&a, "short", 0);
	for (int i = 0; i < a.n_cpu; i++)
		for (int j = 0; j < a.n_mem; j++)
			a.tput[i][j] = round(a.tput[i][j] * 1e4) / 1e4;
	a.tput[0][0] = 0.4321;
	a.mem_gb[2] = 62.5;
	a.gpu_rate = 680.2;
	a.fetch_memory_bps = 3333333333;
	a.fetch_overlap = 0.6123;
	a.fetch_miss_s = 0.0004;
	text = syn_profile_format(&a, NULL);
	ok(text && strstr(text, "0.4321") && !strstr(text, "0.43209999"),
	   "rounded values are written with short digits");
	ok(text && strstr(text, "\"fetch_overlap\": 0.6123"), "a fitted overlap is written");
	free(text);

	/* The serial model (overlap 0) writes no field: profiles of the
	 * older tool read and write exactly as before, and 0 comes back. */
	a.fetch_overlap = 0;
	text = syn_profile_format(&a, NULL);
	memset(&b, 0xff, sizeof(b));
	ok(text && !strstr(text, "fetch_overlap") &&
	   syn_profile_parse(text, strlen(text), "short", &b, NULL) == 0 && b.fetch_overlap == 0,
	   "overlap 0: no field written, read back as 0");
	free(text);

	/* A measured miss time is written; none (0) writes no field, so
	 * profiles without it (older tools, remote storage) read as 0. */
	a.fetch_miss_s = 0.0004321;
	text = syn_profile_format(&a, NULL);
	ok(text && strstr(text, "\"fetch_miss_s\": 0.0004321") &&
	   syn_profile_parse(text, strlen(text), "short", &b, NULL) == 0 && b.fetch_miss_s == 0.0004321,
	   "a miss time is written and read back");
	free(text);
	a.fetch_miss_s = 0;
	text = syn_profile_format(&a, NULL);
	memset(&b, 0xff, sizeof(b));
	ok(text && !strstr(text, "fetch_miss_s") &&
	   syn_profile_parse(text, strlen(text), "short", &b, NULL) == 0 && b.fetch_miss_s == 0,
	   "miss time 0: no field written, read back as 0");
	free(text);
}

static void test_golden(void)
{
	syn_profile_t p;
	syn_error_t err;
	int rc = syn_profile_read_file(PROFILER_TEST_DATA "/resnet18.json", &p, &err);
	ok(rc == 0, "read the checked-in resnet18 profile");
	if (rc < 0)
		diag("%s", err.text);
	is_str(p.key, "resnet18", "golden key");
	is_int(p.n_cpu, 6, "golden n_cpu");
	is_int(p.n_mem, 3, "golden n_mem");
	is_near(p.tput[4][1], 2.4, 0, "golden tput[4][1]");
	is_near(p.base_tput, 812.5, 0, "golden base_tput");
	is_near(p.fetch_storage_bps, 524288000, 0, "golden rates.fetch_storage_bps");
	is_near(p.fetch_overlap, 0, 0, "golden file without rates.fetch_overlap: 0 (serial)");
	is_near(p.fetch_miss_s, 0, 0, "golden file (older tool) without rates.fetch_miss_s: 0");
	ok(p.dataset_items == 1281167, "golden dataset.items");
}

struct bad_case {
	const char *name, *text;
	int errnum;
	const char *needle; /* must appear in the error text */
};

#define GOOD_HEAD "{\"schema\":1,\"key\":\"k\","
#define GOOD_GRID "\"cpus\":[1,2],\"mem_gb\":[0,10],\"tput\":[[0.5,0.6],[1,1.1]],"
#define GOOD_PROP "\"prop_cpus\":2,\"prop_mem_gb\":10"

static const struct bad_case bad_cases[] = {
	{ "empty text", "", EINVAL, "line" },
	{ "truncated object", GOOD_HEAD GOOD_GRID, EINVAL, "line" },
	{ "top level array", "[1,2]", EINVAL, "top level" },
	{ "unknown schema version", "{\"schema\":2,\"key\":\"k\"}", EPROTONOSUPPORT, "schema version 2" },
	{ "schema as string", "{\"schema\":\"1\"}", EINVAL, "'schema'" },
	{ "missing schema", "{\"key\":\"k\"}", EINVAL, "'schema'" },
	{ "missing key", "{\"schema\":1," GOOD_GRID GOOD_PROP "}", EINVAL, "'key'" },
	{ "key with slash", "{\"schema\":1,\"key\":\"../etc\"," GOOD_GRID GOOD_PROP "}", EINVAL, "'key'" },
	{ "key starting with dot", "{\"schema\":1,\"key\":\".k\"," GOOD_GRID GOOD_PROP "}", EINVAL, "'key'" },
	{ "cpus not increasing", GOOD_HEAD "\"cpus\":[2,1],\"mem_gb\":[0,10],\"tput\":[[1,1],[1,1]],"
	  GOOD_PROP "}", EINVAL, "'cpus'" },
	{ "cpus zero", GOOD_HEAD "\"cpus\":[0,1],\"mem_gb\":[0,10],\"tput\":[[1,1],[1,1]],"
	  GOOD_PROP "}", EINVAL, "cpus" },
	{ "mem negative", GOOD_HEAD "\"cpus\":[1,2],\"mem_gb\":[-1,10],\"tput\":[[1,1],[1,1]],"
	  GOOD_PROP "}", EINVAL, "'mem_gb[0]'" },
	{ "tput too few rows", GOOD_HEAD "\"cpus\":[1,2],\"mem_gb\":[0,10],\"tput\":[[1,1]],"
	  GOOD_PROP "}", EINVAL, "'tput'" },
	{ "tput short row", GOOD_HEAD "\"cpus\":[1,2],\"mem_gb\":[0,10],\"tput\":[[1,1],[1]],"
	  GOOD_PROP "}", EINVAL, "'tput[1]'" },
	{ "tput negative", GOOD_HEAD "\"cpus\":[1,2],\"mem_gb\":[0,10],\"tput\":[[1,1],[1,-2]],"
	  GOOD_PROP "}", EINVAL, "'tput[1][1]'" },
	{ "tput string", GOOD_HEAD "\"cpus\":[1,2],\"mem_gb\":[0,10],\"tput\":[[1,\"x\"],[1,1]],"
	  GOOD_PROP "}", EINVAL, "'tput[0][1]'" },
	{ "too many cpus", GOOD_HEAD "\"cpus\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,"
	  "22,23,24,25,26,27,28,29,30,31,32,33],\"mem_gb\":[0],\"tput\":[]," GOOD_PROP "}", EINVAL,
	  "'cpus' must have 1..32" },
	{ "prop_cpus zero", GOOD_HEAD GOOD_GRID "\"prop_cpus\":0,\"prop_mem_gb\":10}", EINVAL, "prop_cpus" },
	{ "missing prop_mem_gb", GOOD_HEAD GOOD_GRID "\"prop_cpus\":2}", EINVAL, "'prop_mem_gb'" },
	{ "rates not an object", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"rates\":[1]}", EINVAL, "'rates'" },
	{ "rate negative", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"rates\":{\"gpu\":-1}}", EINVAL, "'rates.gpu'" },
	{ "overlap above 1", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"rates\":{\"fetch_overlap\":1.5}}", EINVAL,
	  "'rates.fetch_overlap'" },
	{ "miss time negative", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"rates\":{\"fetch_miss_s\":-0.001}}",
	  EINVAL, "'rates.fetch_miss_s'" },
	{ "miss time string", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"rates\":{\"fetch_miss_s\":\"1\"}}",
	  EINVAL, "'rates.fetch_miss_s'" },
	{ "dataset items fraction", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"dataset\":{\"items\":1.5}}", EINVAL,
	  "'dataset.items'" },
	{ "duplicate field", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"prop_cpus\":3}", EINVAL, "duplicate" },
	{ "model not a string", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"model\":7}", EINVAL, "'model'" },
	{ "date too long", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"date\":\"0123456789012345678901234567890123\"}",
	  EINVAL, "'date'" },
	{ "NaN literal", GOOD_HEAD GOOD_GRID GOOD_PROP ",\"base_tput\":NaN}", EINVAL, "line" },
};

static void test_corrupt(void)
{
	syn_profile_t p, keep;
	syn_error_t err;
	const char *good = GOOD_HEAD GOOD_GRID GOOD_PROP "}";

	ok(syn_profile_parse(good, strlen(good), "good", &p, &err) == 0, "the minimal profile parses");
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		memset(&p, 0x5a, sizeof(p));
		keep = p;
		err.text[0] = '\0';
		errno = 0;
		int rc = syn_profile_parse(bad_cases[i].text, strlen(bad_cases[i].text), "bad.json", &p, &err);
		int e = errno;
		ok(rc == -1 && e == bad_cases[i].errnum && strstr(err.text, bad_cases[i].needle) &&
		   strstr(err.text, "bad.json") && memcmp(&p, &keep, sizeof(p)) == 0,
		   "rejects %s (errno, names file and field, output untouched)", bad_cases[i].name);
		if (rc != -1 || e != bad_cases[i].errnum || !strstr(err.text, bad_cases[i].needle))
			diag("rc %d errno %d text '%s'", rc, e, err.text);
	}
	/* Every proper prefix of a valid file is rejected: a torn read can
	 * never be mistaken for a profile. */
	syn_profile_t a;
	make_profile(&a, "torn", 0.25);
	char *text = syn_profile_format(&a, NULL);
	size_t len = text ? strlen(text) : 0, accepted = 0;
	for (size_t n = 0; text && n + 1 < len; n++)
		if (syn_profile_parse(text, n, "prefix", &p, NULL) == 0)
			accepted++;
	ok(text && accepted == 0, "no proper prefix of a profile parses (%zu bytes tried)", len);
	free(text);
}

static void test_files(void)
{
	char path[512];
	syn_profile_t p, q;
	syn_error_t err;

	snprintf(path, sizeof(path), "%s/file.json", dir);
	make_profile(&p, "file", 1.5);
	ok(syn_profile_write_file(path, &p, &err) == 0, "write a profile file");
	ok(syn_profile_read_file(path, &q, &err) == 0 && same(&p, &q), "read it back unchanged");
	struct stat st;
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644, "profile file mode is 0644");

	p.prop_cpus = -1;
	snprintf(path, sizeof(path), "%s/invalid.json", dir);
	errno = 0;
	ok(syn_profile_write_file(path, &p, &err) == -1 && errno == EINVAL && strstr(err.text, "prop_cpus") &&
	   access(path, F_OK) != 0, "an invalid profile is not written (EINVAL, names prop_cpus)");

	make_profile(&p, "file", 1.5);
	snprintf(p.model, sizeof(p.model), "caf\xe9 latin-1");
	errno = 0;
	ok(syn_profile_format(&p, &err) == NULL && errno == EINVAL && strstr(err.text, "'model'"),
	   "a model text that is not UTF-8 is refused, naming the field");
	make_profile(&p, "file", 1.5);
	memset(p.machine, 'x', sizeof(p.machine));
	errno = 0;
	ok(syn_profile_format(&p, &err) == NULL && errno == EINVAL && strstr(err.text, "'machine'"),
	   "a machine text without its NUL is refused, naming the field");

	errno = 0;
	ok(syn_profile_read_file(dir, &q, &err) == -1 && errno == EINVAL, "a directory is not a profile");
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	errno = 0;
	ok(syn_profile_read_file(path, &q, &err) == -1 && errno == ENOENT && strstr(err.text, path),
	   "a missing file: ENOENT naming the path");

	snprintf(path, sizeof(path), "%s/huge.json", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ok(fd >= 0 && ftruncate(fd, SYN_PROFILE_FILE_MAX + 1) == 0, "make a file over the size limit");
	if (fd >= 0)
		close(fd);
	errno = 0;
	ok(syn_profile_read_file(path, &q, &err) == -1 && errno == EFBIG, "an oversized file: EFBIG");
	unlink(path);
}

struct list_seen {
	int good, bad;
	char problems[4][160];
};

static int list_cb(const char *key, const syn_profile_t *p, const char *problem, void *arg)
{
	struct list_seen *s = arg;
	if (p && strcmp(p->key, key) == 0)
		s->good++;
	else if (!p && problem && s->bad < 4)
		snprintf(s->problems[s->bad++], 160, "%s", problem);
	return 0;
}

static void test_store(void)
{
	char sdir[300], path[512];
	syn_error_t err;
	syn_profile_t p, q;

	snprintf(sdir, sizeof(sdir), "%s/store", dir);
	errno = 0;
	ok(syn_store_create(sdir, 0, &err) == NULL && errno == ENOENT, "opening a missing store: ENOENT");
	syn_store_t *s = syn_store_create(sdir, SYN_STORE_CREATE, &err);
	ok(s != NULL, "create a store directory");
	if (!s)
		bail_out(err.text);
	syn_store_destroy(NULL);

	make_profile(&p, "resnet18", 2);
	ok(syn_store_put(s, &p, &err) == 0, "put a profile");
	ok(syn_store_get(s, "resnet18", &q, &err) == 0 && same(&p, &q), "get it back");
	p.base_tput = 900;
	ok(syn_store_put(s, &p, &err) == 0 && syn_store_get(s, "resnet18", &q, &err) == 0 &&
	   q.base_tput == 900, "put replaces an existing profile");
	errno = 0;
	ok(syn_store_get(s, "nosuch", &q, &err) == -1 && errno == ENOENT, "get of a missing key: ENOENT");

	const char *badkeys[] = { "", "../x", ".hidden", "a/b", "sp ace",
	                          "x12345678901234567890123456789012345678901234567890123456789012345" };
	for (size_t i = 0; i < sizeof(badkeys) / sizeof(badkeys[0]); i++) {
		errno = 0;
		ok(syn_store_get(s, badkeys[i], &q, &err) == -1 && errno == EINVAL &&
		   strstr(err.text, "invalid profile key"), "get rejects key '%s'", badkeys[i]);
	}
	snprintf(p.key, sizeof(p.key), "a/b");
	errno = 0;
	ok(syn_store_put(s, &p, &err) == -1 && errno == EINVAL, "put rejects an invalid key");

	/* A file whose key differs from its name is not that key's profile. */
	make_profile(&p, "other", 3);
	snprintf(path, sizeof(path), "%s/renamed.json", sdir);
	ok(syn_profile_write_file(path, &p, NULL) == 0, "write a profile under a foreign name");
	errno = 0;
	ok(syn_store_get(s, "renamed", &q, &err) == -1 && errno == EINVAL && strstr(err.text, "'key'"),
	   "key/file name mismatch: EINVAL");

	snprintf(path, sizeof(path), "%s/future.json", sdir);
	write_text(path, "{\"schema\": 99, \"key\": \"future\"}");
	errno = 0;
	ok(syn_store_get(s, "future", &q, &err) == -1 && errno == EPROTONOSUPPORT,
	   "unknown schema version: EPROTONOSUPPORT");
	snprintf(path, sizeof(path), "%s/.profile-tmp.abc123", sdir);
	write_text(path, "{");
	snprintf(path, sizeof(path), "%s/notes.txt", sdir);
	write_text(path, "not a profile");

	struct list_seen seen = { 0 };
	int n = syn_store_list(s, list_cb, &seen, &err);
	is_int(n, 1, "list counts one good profile");
	is_int(seen.good, 1, "list visits the good profile");
	is_int(seen.bad, 2, "list reports the two bad profile files");
	ok(strstr(seen.problems[0], "future.json") && strstr(seen.problems[1], "renamed.json"),
	   "problems name the files, in key order");

	ok(syn_store_remove(s, "resnet18", &err) == 0 && syn_store_get(s, "resnet18", &q, NULL) == -1 &&
	   errno == ENOENT, "remove a profile");
	errno = 0;
	ok(syn_store_remove(s, "resnet18", &err) == -1 && errno == ENOENT, "remove of a missing key: ENOENT");
	syn_store_destroy(s);
}

/* Every profile a writer stores is internally consistent: all its grid
 * values and base_tput derive from one number, which the model text
 * repeats. A reader that saw a mix of two files would find a mismatch. */
static int consistent(const syn_profile_t *p)
{
	double v;
	if (sscanf(p->model, "salt %lf", &v) != 1)
		return 0;
	syn_profile_t want;
	make_profile(&want, p->key, v);
	return same(p, &want);
}

#define WRITERS 4
#define READERS 3
#define ROUNDS 150

static int count_cb(const char *key, const syn_profile_t *p, const char *problem, void *arg)
{
	(void)key;
	(void)p;
	(void)problem;
	(*(int *)arg)++;
	return 0;
}

/* Profiles measured in a user's job (issue 12: they record their owner;
 * issue 17: used only for that user's jobs). */
static void test_owner(void)
{
	char sdir[300], path[600];
	syn_error_t err;
	syn_profile_t p, q;
	int n = 0;

	snprintf(sdir, sizeof(sdir), "%s/owned", dir);
	syn_store_t *s = syn_store_create(sdir, SYN_STORE_CREATE, &err);
	if (!s)
		bail_out(err.text);
	make_profile(&p, "img", 3);
	char *text = syn_profile_format(&p, &err);
	ok(text && !strstr(text, "owner"), "a profile without an owner writes none (an admin's)");
	free(text);
	p.has_owner = 1;
	p.owner = 1000;
	text = syn_profile_format(&p, &err);
	ok(text && strstr(text, "\"owner\": 1000"), "an owned profile writes \"owner\": 1000");
	ok(text && syn_profile_parse(text, strlen(text), NULL, &q, &err) == 0 && q.has_owner &&
	   q.owner == 1000 && same(&p, &q), "and reads it back");
	free(text);
	const char *neg = "{\"schema\":1,\"key\":\"k\",\"cpus\":[1],\"mem_gb\":[0],"
	                  "\"tput\":[[1]],\"prop_cpus\":1,\"prop_mem_gb\":0,\"owner\":-1}";
	ok(syn_profile_parse(neg, strlen(neg), "x", &q, &err) == -1 && strstr(err.text, "owner"),
	   "a negative owner is refused: %s", err.text);
	ok(syn_store_put(s, &p, &err) == 0, "a shared file may carry an owner too");
	ok(syn_store_get_for(s, "img", 1000, &q, &err) == 0 && q.owner == 1000,
	   "a shared profile owned by 1000 is 1000's");
	ok(syn_store_get_for(s, "img", 2000, &q, &err) == -1 && errno == ENOENT,
	   "and not 2000's (ENOENT)");
	ok(syn_store_remove(s, "img", &err) == 0, "(removed)");
	ok(syn_store_put_owned(s, &p, &err) == 0, "put_owned files it as 1000's");
	snprintf(path, sizeof(path), "%s/" SYN_STORE_USER_DIR "/1000/img.json", sdir);
	ok(access(path, F_OK) == 0, "in user/1000/img.json");
	ok(syn_store_get_for(s, "img", 1000, &q, &err) == 0 && same(&p, &q), "1000 finds it");
	ok(syn_store_get_for(s, "img", 2000, &q, &err) == -1 && errno == ENOENT,
	   "2000 does not");
	ok(syn_store_get(s, "img", &q, &err) == -1 && errno == ENOENT,
	   "nor does the shared lookup");
	ok(syn_store_list(s, count_cb, &n, &err) == 0 && n == 0, "list shows shared profiles only");
	make_profile(&q, "img", 4);
	ok(syn_store_put(s, &q, &err) == 0 && syn_store_get_for(s, "img", 1000, &p, &err) == 0 &&
	   !p.has_owner && p.base_tput == q.base_tput,
	   "an admin's shared profile of the key goes first, for 1000 too");
	q.has_owner = 0;
	ok(syn_store_put_owned(s, &q, &err) == -1 && errno == EINVAL, "put_owned needs an owner");
	write_text(path, "{ \"schema\": 1 }");
	ok(syn_store_remove(s, "img", &err) == 0 &&
	   syn_store_get_for(s, "img", 1000, &q, &err) == -1 && errno == EINVAL,
	   "a corrupt user profile is an error, not ENOENT: %s", err.text);
	make_profile(&p, "img", 5);
	p.has_owner = 1;
	p.owner = 3000;
	text = syn_profile_format(&p, &err);
	write_text(path, text);
	free(text);
	ok(syn_store_get_for(s, "img", 1000, &q, &err) == -1 && errno == EINVAL &&
	   strstr(err.text, "owner"), "a profile filed under 1000 but owned by 3000 is refused");
	syn_store_destroy(s);
}

/* The optional "checkpoint" block: absent unless measured, round trips,
 * and malformed ones are refused naming the field. */
static void test_checkpoint(void)
{
	syn_error_t err;
	syn_profile_t p, q;
	char *text;

	make_profile(&p, "ck", 2);
	text = syn_profile_format(&p, &err);
	ok(text && !strstr(text, "checkpoint"), "no checkpoint measured: none written");
	free(text);
	p.ckpt_state_bytes = 268435456;
	p.ckpt_batch = 32;
	p.ckpt_snapshot_s = 0.03;
	p.ckpt_persist_s = 1.1;
	p.ckpt_overhead_s = 0.25;
	text = syn_profile_format(&p, &err);
	ok(text && strstr(text, "\"checkpoint\"") && strstr(text, "\"state_bytes\": 268435456"),
	   "a measured checkpoint is written");
	ok(text && syn_profile_parse(text, strlen(text), "ck", &q, &err) == 0 && same(&p, &q) &&
		   q.ckpt_state_bytes == 268435456 && q.ckpt_batch == 32 &&
		   q.ckpt_snapshot_s == 0.03 && q.ckpt_persist_s == 1.1 && q.ckpt_overhead_s == 0.25,
	   "and reads back");
	free(text);
	static const struct {
		const char *ck, *word;
	} bad[] = {
		{ "[]", "must be an object" },
		{ "{\"state_bytes\": -1}", "checkpoint.state_bytes" },
		{ "{\"state_bytes\": 2.5}", "checkpoint.state_bytes" },
		{ "{\"state_bytes\": 2000000000000000000}", "state_bytes" },
		{ "{\"batch\": 2.5}", "checkpoint.batch" },
		{ "{\"persist_s\": -1}", "checkpoint.persist_s" },
		{ "{\"snapshot_s\": \"x\"}", "checkpoint.snapshot_s" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[400];
		snprintf(buf, sizeof(buf),
			 "{\"schema\":1,\"key\":\"k\",\"cpus\":[1],\"mem_gb\":[0],\"tput\":[[1]],"
			 "\"prop_cpus\":1,\"prop_mem_gb\":0,\"checkpoint\":%s}",
			 bad[i].ck);
		ok(syn_profile_parse(buf, strlen(buf), "x", &q, &err) == -1 && errno == EINVAL &&
			   strstr(err.text, bad[i].word),
		   "checkpoint %s refused: %s", bad[i].ck, err.text);
	}
}

static void test_concurrent(void)
{
	char sdir[300];
	syn_error_t err;
	pid_t pids[WRITERS + READERS];

	snprintf(sdir, sizeof(sdir), "%s/conc", dir);
	syn_store_t *s = syn_store_create(sdir, SYN_STORE_CREATE, &err);
	syn_profile_t p;
	make_profile(&p, "shared", 0);
	ok(s && syn_store_put(s, &p, &err) == 0, "seed the shared profile");

	for (int w = 0; w < WRITERS + READERS; w++) {
		pid_t pid = fork();
		if (pid < 0)
			bail_out("fork");
		if (pid == 0) {
			int bad = 0;
			syn_profile_t *q = malloc(sizeof(*q));
			for (int i = 0; q && i < ROUNDS * (w < WRITERS ? 1 : 4); i++) {
				if (w < WRITERS) {
					make_profile(q, "shared", w * 1000 + i + 0.125);
					if (syn_store_put(s, q, NULL) < 0)
						bad++;
				} else if (syn_store_get(s, "shared", q, NULL) < 0 || !consistent(q)) {
					bad++;
				}
			}
			free(q);
			_exit(bad ? 1 : 0);
		}
		pids[w] = pid;
	}
	int wfail = 0, rfail = 0;
	for (int w = 0; w < WRITERS + READERS; w++) {
		int st;
		if (waitpid(pids[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			*(w < WRITERS ? &wfail : &rfail) += 1;
	}
	is_int(wfail, 0, "concurrent writers all succeed");
	is_int(rfail, 0, "concurrent readers always read a complete, consistent profile");
	syn_profile_t q;
	ok(syn_store_get(s, "shared", &q, &err) == 0 && consistent(&q),
	   "the surviving profile is one writer's complete profile");
	int leftovers = 0;
	DIR *d = opendir(sdir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			leftovers++;
	if (d)
		closedir(d);
	is_int(leftovers, 0, "no temporary files left behind");
	syn_store_destroy(s);
}

int main(void)
{
	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	test_round_trip();
	test_golden();
	test_corrupt();
	test_files();
	test_store();
	test_owner();
	test_checkpoint();
	test_concurrent();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
