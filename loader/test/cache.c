/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cache.t: the MinIO cache. Bound never exceeded, no eviction, no item
 * stored twice, sharing between processes (fork) with one copy per item,
 * removal after the last detach, recovery from a crashed job's segment,
 * and refusal of a live segment that belongs to another dataset.
 *
 * Issue 12: segment names carry the uid; a symlink, FIFO, file of another
 * mode, owner or with another link at a segment's or lock file's path is
 * never used (and what a symlink points to is left alone); a segment
 * poisoned while attached never makes a lookup or insertion leave the
 * mapping; a file system without room skips items instead of killing the
 * process.
 *
 * Issue 13: the bound lowered and raised live: the first items stored stay,
 * the memory beyond the bound goes back (file blocks, resident pages), the
 * cache fills again after a raise, a reader holding an item does not block
 * a change for long and learns that its item went, a change made by one
 * process holds for all, and threads reading and storing while the bound
 * moves never see a torn item (run under TSan as well).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader/cache.h"
#include "synergy_env.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

static int exists(const char *p)
{
	struct stat st;
	return p && lstat(p, &st) == 0;
}

/* Item i's bytes: a pattern that tells items apart. */
static void fill(uint8_t *buf, size_t i, size_t len)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 131 + k * 7 + 1);
}

static int intact(const uint8_t *p, size_t i, size_t len)
{
	for (size_t k = 0; k < len; k++)
		if (p[k] != (uint8_t)(i * 131 + k * 7 + 1))
			return 0;
	return 1;
}

/* Look item i up: 1 when it is there with the right len and bytes, 0 on a
 * miss, -1 when it is there but wrong. */
static int lookup(coordl__cache_t *c, size_t i, size_t want_len)
{
	coordl__cache_ticket_t t;
	size_t len = 0;
	const uint8_t *p = coordl__cache_get(c, i, &len, &t);
	int good;

	if (!p)
		return 0;
	good = len == want_len && intact(p, i, len);
	coordl__cache_done(c, &t);
	return good ? 1 : -1;
}

static size_t pagesz(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Bytes of a cache's mapping resident in memory (mincore). */
static long long resident(coordl__cache_t *c)
{
	size_t len = 0, np;
	const uint8_t *base = coordl__cache_mapping(c, &len);
	unsigned char *vec;
	long long n = 0;

	if (!base)
		return -1;
	np = (len + pagesz() - 1) / pagesz();
	if (!(vec = malloc(np)) || mincore((void *)base, len, vec) < 0) {
		free(vec);
		return -1;
	}
	for (size_t k = 0; k < np; k++)
		n += vec[k] & 1;
	free(vec);
	return n * (long long)pagesz();
}

/* Blocks a disk file system adds for its own metadata (extent trees);
 * tmpfs, where the caches live, adds none. */
static long long meta_slack;

/* Memory a cache occupies: file blocks of a named one (less the file
 * system's metadata), resident pages of a private one. */
static long long occupied(coordl__cache_t *c)
{
	const char *p = coordl__cache_path(c);
	long long b = p ? td_file_blocks(p) : resident(c);

	return p && b > meta_slack ? b - meta_slack : b;
}

static void test_private(void)
{
	coordl_error_t err = { "" };
	uint8_t item[1000];
	size_t len = 0, n = 200;
	uint64_t bound = 64 * 1024, stored = 0;
	coordl__cache_t *c = coordl__cache_attach(NULL, NULL, bound, n, n * 406, 1, &err);
	coordl__cache_ticket_t t;
	const uint8_t *p;

	ok(c != NULL, "private cache attaches");
	if (!c)
		return;
	ok(coordl__cache_get(c, 3, &len, &t) == NULL, "empty cache misses");
	for (size_t i = 0; i < n; i++) {
		memset(item, (int)i, sizeof(item));
		if (coordl__cache_put(c, i, item, 400 + i % 7))
			stored += 400 + i % 7;
	}
	ok(coordl__cache_used(c) == stored, "used bytes = bytes of stored items (%llu)",
	   (unsigned long long)stored);
	ok(coordl__cache_used(c) <= coordl__cache_capacity(c) && coordl__cache_capacity(c) < bound,
	   "data never exceeds the capacity, which is below the bound");
	ok(coordl__cache_items(c) < n, "a cache smaller than the data fills up (%llu of %zu)",
	   (unsigned long long)coordl__cache_items(c), n);
	ok(resident(c) <= (long long)bound, "resident memory %lld <= bound %llu", resident(c),
	   (unsigned long long)bound);
	p = coordl__cache_get(c, 5, &len, &t);
	ok(p && len == 405 && p[0] == 5 && p[404] == 5, "an early item is served intact");
	if (p)
		ok(coordl__cache_done(c, &t) == 1, "and done() says it stayed");
	else
		ok(0, "and done() says it stayed");
	memset(item, 0xee, sizeof(item));
	is_int(coordl__cache_put(c, 5, item, 405), 0, "storing an item twice is refused");
	p = coordl__cache_get(c, 5, &len, &t);
	ok(p && p[0] == 5, "and the first copy is kept");
	if (p)
		coordl__cache_done(c, &t);
	ok(coordl__cache_get(c, n - 1, &len, &t) == NULL, "a late item did not fit: never evicts");
	coordl__cache_detach(c);

	c = coordl__cache_attach(NULL, NULL, 100, 1000, 1000, 1, &err);
	ok(c && coordl__cache_put(c, 0, item, 10) == 0 && coordl__cache_capacity(c) == 0,
	   "a bound smaller than the index stores nothing");
	coordl__cache_detach(c);
}

/* A child attaches and fills items [from, to); the parent checks the shared view. */
static int child_fill(const char *name, const char *dir, uint64_t bound, size_t n, size_t from,
		      size_t to, int crash)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		coordl_error_t err = { "" };
		uint8_t item[512];
		coordl__cache_t *c = coordl__cache_attach(name, dir, bound, n, n * 512, 42, &err);
		if (!c)
			_exit(2);
		for (size_t i = from; i < to; i++) {
			memset(item, (int)(i & 0xff), sizeof(item));
			coordl__cache_put(c, i, item, sizeof(item));
		}
		if (crash)
			_exit(0); /* no detach: as if the job was killed */
		coordl__cache_detach(c);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_shared(const char *dir, const char *label)
{
	coordl_error_t err = { "" };
	const char *name = "cachetest";
	uint64_t bound = 256 * 1024;
	size_t n = 100, len;
	coordl__cache_t *a, *b;
	coordl__cache_ticket_t t;
	const uint8_t *p;
	char seg[512], want[512];

	a = coordl__cache_attach(name, dir, bound, n, n * 512, 42, &err);
	ok(a != NULL, "%s: first loader creates the named cache (%s)", label, a ? "ok" : err.text);
	if (!a)
		return;
	snprintf(seg, sizeof(seg), "%s", coordl__cache_path(a));
	snprintf(want, sizeof(want), "%s/coordl-%u-%s.cache", dir ? dir : "/dev/shm",
		 (unsigned)geteuid(), name);
	ok(strcmp(seg, want) == 0, "%s: issue 12: the segment's name carries the uid (%s)", label, seg);
	ok(exists(seg), "%s: segment exists", label);
	ok(td_file_blocks(seg) <= (long long)bound, "%s: segment occupies %lld <= bound %llu", label,
	   td_file_blocks(seg), (unsigned long long)bound);
	is_int(child_fill(name, dir, bound, n, 0, 30, 0), 0, "child process fills items 0..29");
	p = coordl__cache_get(a, 7, &len, &t);
	ok(p && len == 512 && p[0] == 7, "parent sees the child's item");
	if (p)
		coordl__cache_done(a, &t);
	is_int(child_fill(name, dir, bound, n, 20, 40, 0), 0, "second child fills 20..39");
	is_int(coordl__cache_items(a), 40, "overlapping fills stored each item once");
	is_int(coordl__cache_used(a), 40 * 512, "one copy per item in the bytes used");
	ok(td_file_blocks(seg) <= (long long)bound, "%s: and occupies %lld <= bound", label,
	   td_file_blocks(seg));
	ok(exists(seg), "%s: segment kept while the parent is attached", label);

	b = coordl__cache_attach(name, dir, bound, n, n * 512, 43, &err);
	ok(!b && errno == EBUSY && strstr(err.text, name),
	   "%s: a live cache of another dataset is refused with EBUSY", label);
	coordl__cache_detach(b);
	b = coordl__cache_attach(name, dir, bound * 2, n, n * 512, 42, &err);
	ok(b && coordl__cache_bound(b) == bound && coordl__cache_items(b) == 40,
	   "%s: a later attacher with another bound adopts the live cache's bound", label);
	coordl__cache_detach(b);

	coordl__cache_detach(a);
	ok(!exists(seg), "%s: segment removed after the last detach", label);

	/* A job that died attached leaves its segment behind ... */
	is_int(child_fill(name, dir, bound, n, 0, 10, 1), 0, "a child dies without detaching");
	ok(exists(seg), "%s: its segment is left behind", label);
	/* ... and the next job with another dataset must still start. */
	a = coordl__cache_attach(name, dir, bound, n + 5, n * 512, 77, &err);
	ok(a && coordl__cache_items(a) == 0, "%s: the stale segment is reinitialised (%s)", label,
	   a ? "ok" : err.text);
	coordl__cache_detach(a);
	ok(!exists(seg), "%s: and removed afterwards", label);
}

/* Issue 12: what another user (or a mistake) put at a segment's path is
 * never used, and what a symlink points to is left alone. */
static void test_issue12_unsafe(const char *dir)
{
	static const char *kinds[] = { "symlink", "lock symlink", "mode 0644", "second link", "fifo",
				       "directory", "other owner" };
	char seg[1024], lock[1024], victim[1024], other[1100];
	const char *victim_text = "precious data";

	snprintf(seg, sizeof(seg), "%s/coordl-%u-unsafe.cache", dir, (unsigned)geteuid());
	snprintf(lock, sizeof(lock), "%s/coordl-%u-unsafe.lock", dir, (unsigned)geteuid());
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(other, sizeof(other), "%s/other-link", dir);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		coordl_error_t err = { "" };
		coordl__cache_t *c;
		int made = 0;
		size_t vlen = 0;

		if (td_write_file(victim, victim_text, strlen(victim_text)) < 0)
			bail_out("cannot write the victim file");
		switch (k) {
		case 0: made = symlink(victim, seg) == 0; break;
		case 1: made = symlink(victim, lock) == 0; break;
		case 2: made = td_write_file(seg, "x", 1) == 0 && chmod(seg, 0644) == 0; break;
		case 3: made = td_write_file(seg, "", 0) == 0 && chmod(seg, 0600) == 0 && link(seg, other) == 0; break;
		case 4: made = mkfifo(seg, 0600) == 0; break;
		case 5: made = mkdir(seg, 0700) == 0; break;
		case 6:
			if (geteuid() != 0) {
				skip(3, "a file of another owner needs root to make");
				continue;
			}
			made = td_write_file(seg, "", 0) == 0 && chmod(seg, 0600) == 0 && chown(seg, 65534, 65534) == 0;
			break;
		}
		if (!made)
			bail_out("cannot make the unsafe file");
		errno = 0;
		c = coordl__cache_attach("unsafe", dir, 1 << 20, 10, 10000, 1, &err);
		ok(!c && errno == EPERM && strstr(err.text, "unsafe") &&
		   strstr(err.text, k == 1 ? lock : seg),
		   "issue 12: %s at the path: refused with EPERM naming it (%s)", kinds[k], err.text);
		coordl__cache_detach(c);
		vlen = (size_t)td_file_size(victim);
		ok(vlen == strlen(victim_text) && td_file_blocks(victim) >= 0,
		   "issue 12: %s: the file it points to is untouched (%zu bytes)", kinds[k], vlen);
		ok(exists(k == 1 ? lock : seg), "issue 12: %s: and left where it was", kinds[k]);
		if (k == 5)
			rmdir(seg);
		unlink(seg);
		unlink(lock);
		unlink(other);
	}
	unlink(victim);
}

/* Issue 12: another process of the job poisons the segment while we are
 * attached: every 8-byte word of the header, slots and index in turn is set
 * to hostile values; lookups must stay inside the mapping and insertions
 * must not write outside it. */
static void test_issue12_poison(const char *dir)
{
	static const uint64_t vals[] = { ~0ULL, 0x7fffffffffffffffULL, 0x0000000100000000ULL,
					 0x00000000fffffff0ULL, 1ULL << 20, 0 };
	coordl_error_t err = { "" };
	size_t n = 40, il = 300, seglen = 0, escapes = 0, tries = 0;
	uint8_t item[300];
	coordl__cache_t *c = coordl__cache_attach("poison", dir, 1 << 20, n, n * il, 5, &err);
	const uint8_t *base;
	int fd;
	size_t span;

	if (!c) {
		ok(0, "poison: attach: %s", err.text);
		return;
	}
	base = coordl__cache_mapping(c, &seglen);
	for (size_t i = 0; i < n; i++) {
		fill(item, i, il);
		coordl__cache_put(c, i, item, il);
	}
	ok(coordl__cache_items(c) == n, "poison: %zu items stored", n);
	fd = open(coordl__cache_path(c), O_RDWR | O_CLOEXEC);
	/* Header, slots and index, plus the start of the data. */
	span = COORDL__CACHE_HEADER_BYTES + n * 16 + 256;
	for (size_t off = 0; fd >= 0 && off + 8 <= span; off += 8) {
		uint64_t orig;
		if (pread(fd, &orig, 8, (off_t)off) != 8)
			break;
		for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
			if (pwrite(fd, &vals[v], 8, (off_t)off) != 8)
				break;
			for (size_t i = 0; i < n + 3; i++) {
				coordl__cache_ticket_t t;
				size_t len = 0;
				const uint8_t *p = coordl__cache_get(c, i, &len, &t);
				tries++;
				if (!p)
					continue;
				if (p < base || len > seglen || p + len > base + seglen)
					escapes++;
				else if (len)
					item[0] = p[len - 1]; /* touch the last byte */
				coordl__cache_done(c, &t);
			}
			fill(item, 3, il);
			coordl__cache_put(c, (off / 8) % n, item, il);
		}
		if (pwrite(fd, &orig, 8, (off_t)off) != 8)
			break;
	}
	ok(fd >= 0 && tries > 100000, "poison: %zu lookups on a segment poisoned word by word", tries);
	is_int(escapes, 0, "issue 12: no lookup ever pointed outside the mapping");
	{
		size_t good = 0;
		for (size_t i = 0; i < n; i++)
			good += lookup(c, i, il) == 1;
		ok(good > 0, "poison: with the words restored the cache serves items again (%zu)", good);
	}
	if (fd >= 0)
		close(fd);
	coordl__cache_detach(c);
}

/* A cache directory without room for the segment is an error at attach,
 * not a SIGBUS later; no room for an item skips it. RLIMIT_FSIZE stands in
 * for a full tmpfs (no root). */
static void test_no_space(const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		coordl_error_t err = { "" };
		coordl__cache_t *c;
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(3);
		c = coordl__cache_attach("nospace", dir, 1 << 20, 10, 10000, 1, &err);
		if (c)
			_exit(1);
		if (!strstr(err.text, "nospace")) {
			fprintf(stderr, "%s\n", err.text);
			_exit(2);
		}
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "no room for the segment: attach fails with a message naming the cache");

	/* A full file system when an item is stored: a small tmpfs of our own,
	 * mounted in a private mount namespace of a child (root only). */
	pid = fork();
	if (pid == 0) {
		char sub[1100];
		coordl_error_t err = { "" };
		uint8_t item[4000];
		coordl__cache_t *c;
		int stored = 0;
		snprintf(sub, sizeof(sub), "%s/small-tmpfs", dir);
		if (geteuid() != 0 || mkdir(sub, 0700) < 0 || unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", sub, "tmpfs", 0, "size=64k,mode=0700") < 0)
			_exit(77);
		/* The bound is far more than the file system holds. */
		if (!(c = coordl__cache_attach("full", sub, 1 << 20, 40, 40 * 4000, 1, &err))) {
			fprintf(stderr, "attach: %s\n", err.text);
			_exit(2);
		}
		for (size_t i = 0; i < 40; i++) {
			fill(item, i, sizeof(item));
			stored += coordl__cache_put(c, i, item, sizeof(item));
		}
		/* Items within the room are stored, the rest skipped; every
		 * stored one reads back. */
		for (size_t i = 0; i < 40; i++)
			if (lookup(c, i, sizeof(item)) < 0)
				_exit(4);
		coordl__cache_detach(c);
		_exit(stored > 0 && stored < 40 ? 0 : 5);
	}
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 77)
		skip(1, "a tmpfs of our own needs root and a mount namespace");
	else
		ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "issue 12: a bound beyond a full tmpfs: attach works, items that do not fit are "
		   "skipped, the process lives (status %d)",
		   WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
	{
		char sub[1100];
		snprintf(sub, sizeof(sub), "%s/small-tmpfs", dir);
		rmdir(sub);
	}
}

/* Issue 13: on a tmpfs that takes memory in huge pages (mounted with
 * huge=always, which a node may use for its cache directory: releasing
 * memory is then far cheaper) the cache still stays within bounds that are
 * not multiples of a huge page, filling, lowered and raised (root only: a
 * tmpfs of our own in a private mount namespace of a child). */
static void test_issue13_huge_tmpfs(const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char sub[1100];
		coordl_error_t err = { "" };
		static uint8_t item[100000];
		const uint64_t bounds[] = { 7 * 1048576 + 12345, 3 * 1048576 + 777, 0, 5 * 1048576 + 1 };
		coordl__cache_t *c;
		snprintf(sub, sizeof(sub), "%s/huge-tmpfs", dir);
		if (geteuid() != 0 || mkdir(sub, 0700) < 0 || unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", sub, "tmpfs", 0, "size=64m,huge=always,mode=0700") < 0)
			_exit(77);
		if (!(c = coordl__cache_attach("huge", sub, bounds[0], 100, 100 * sizeof(item), 1, &err)))
			_exit(2);
		for (int k = 0; k < 4; k++) {
			if (k > 0 && coordl__cache_set_bound(c, bounds[k]) < 0)
				_exit(3);
			for (size_t i = 0; i < 100; i++) {
				fill(item, i, sizeof(item));
				coordl__cache_put(c, i, item, sizeof(item));
			}
			if (td_file_blocks(coordl__cache_path(c)) >
			    (long long)(bounds[k] > COORDL__CACHE_HEADER_BYTES ? bounds[k] : 2 << 20)) {
				fprintf(stderr, "bound %llu: %lld bytes\n", (unsigned long long)bounds[k],
					td_file_blocks(coordl__cache_path(c)));
				_exit(4);
			}
			if (k == 0 && coordl__cache_items(c) < 40)
				_exit(5);
		}
		coordl__cache_detach(c);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 77)
		skip(1, "a tmpfs of our own needs root and a mount namespace");
	else
		ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "issue 13: on a tmpfs with huge pages the cache stays within bounds that are not "
		   "multiples of a huge page, filling, lowered and raised (status %d)",
		   st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	{
		char sub[1100];
		snprintf(sub, sizeof(sub), "%s/huge-tmpfs", dir);
		rmdir(sub);
	}
}

/* Issue 13: a private cache as large as the dataset maps may use
 * transparent huge pages, but none may straddle its bound: resident memory
 * stays within bounds that are not multiples of a huge page. */
static void test_issue13_private_thp(void)
{
	coordl_error_t err = { "" };
	static uint8_t item[100000];
	const uint64_t bounds[] = { 7 * 1048576 + 12345, 3 * 1048576 + 777, 9 * 1048576 + 1 };
	coordl__cache_t *c = coordl__cache_attach(NULL, NULL, bounds[0], 200, 200 * sizeof(item), 1, &err);
	int good = c != NULL;
	long long worst = 0;

	for (int k = 0; good && k < 3; k++) {
		if (k > 0 && coordl__cache_set_bound(c, bounds[k]) < 0)
			good = 0;
		for (size_t i = 0; i < 200; i++) {
			fill(item, i, sizeof(item));
			coordl__cache_put(c, i, item, sizeof(item));
		}
		if (resident(c) > (long long)bounds[k])
			good = 0;
		worst = resident(c) - (long long)bounds[k] > worst ? resident(c) - (long long)bounds[k] : worst;
	}
	ok(good, "issue 13: private: resident memory within bounds that are not multiples of a huge "
	   "page, filling, lowered and raised (worst excess %lld)", worst);
	coordl__cache_detach(c);
}

/* Issue 13: lower and raise the bound of a filled cache. */
static void test_issue13_bounds(const char *dir, const char *label)
{
	coordl_error_t err = { "" };
	size_t n = 200, il = 1000, kept = 0, lost = 0, bad = 0;
	uint64_t big = 512 * 1024, small = 128 * 1024;
	uint8_t item[1000];
	coordl__cache_t *c = coordl__cache_attach(dir ? "bounds" : NULL, dir, big, n, n * il, 9, &err);

	if (!c) {
		ok(0, "%s: attach: %s", label, err.text);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		fill(item, i, il);
		coordl__cache_put(c, i, item, il);
	}
	ok(coordl__cache_items(c) == n, "%s: all %zu items stored under %llu bytes", label, n,
	   (unsigned long long)big);
	ok(occupied(c) <= (long long)big && occupied(c) >= (long long)(n * il),
	   "%s: occupies %lld bytes", label, occupied(c));

	ok(coordl__cache_set_bound(c, small) == 0, "%s: bound lowered to %llu", label,
	   (unsigned long long)small);
	ok(occupied(c) <= (long long)small, "issue 13: %s: the memory beyond it went back (%lld <= %llu)",
	   label, occupied(c), (unsigned long long)small);
	for (size_t i = 0; i < n; i++) {
		int r = lookup(c, i, il);
		if (r < 0)
			bad++;
		else if (r == 1 && lost == 0)
			kept++;
		else if (r == 1)
			bad++; /* a hit after a miss: not the first ones stored */
		else
			lost++;
	}
	ok(bad == 0 && kept > 50 && kept < n && kept + lost == n,
	   "issue 13: %s: the first %zu items stored stay intact, the other %zu are dropped", label,
	   kept, lost);
	ok(coordl__cache_items(c) == kept && coordl__cache_used(c) == kept * il &&
	   coordl__cache_bound(c) == small && coordl__cache_shrinks(c) == 1,
	   "%s: items, bytes, bound and shrink count follow", label);
	ok(coordl__cache_used(c) <= coordl__cache_capacity(c), "%s: stored data within the new capacity",
	   label);

	ok(coordl__cache_set_bound(c, big) == 0 && coordl__cache_grows(c) == 1,
	   "%s: bound raised again", label);
	for (size_t i = kept; i < n; i++) {
		fill(item, i, il);
		coordl__cache_put(c, i, item, il);
	}
	bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += lookup(c, i, il) != 1;
	ok(bad == 0, "issue 13: %s: after a raise the cache keeps filling (every item served)",
	   label);

	ok(coordl__cache_set_bound(c, 0) == 0, "%s: bound 0", label);
	ok(occupied(c) <= COORDL__CACHE_HEADER_BYTES,
	   "issue 13: %s: bound 0 leaves only the header (%lld bytes)", label, occupied(c));
	bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += lookup(c, i, il) != 0;
	fill(item, 0, il);
	ok(bad == 0 && coordl__cache_put(c, 0, item, il) == 0 && coordl__cache_items(c) == 0,
	   "%s: and stores nothing", label);
	ok(coordl__cache_set_bound(c, small) == 0 && coordl__cache_put(c, 0, item, il) == 1 &&
	   lookup(c, 0, il) == 1, "%s: raised from 0 it stores again", label);
	ok(occupied(c) <= (long long)small, "%s: within its bound (%lld)", label, occupied(c));
	coordl__cache_detach(c);
}

struct shrinker {
	coordl__cache_t *c;
	uint64_t bound;
	int rc;
	double took;
};

static void *shrink_main(void *arg)
{
	struct shrinker *s = arg;
	double t = td_now();

	s->rc = coordl__cache_set_bound(s->c, s->bound);
	s->took = td_now() - t;
	return NULL;
}

/* Issue 13: a reader that holds an item (a slow decode, a stopped process)
 * does not block a shrink for long, and learns that its item went; the
 * memory it may have kept is released by the next change. */
static void test_issue13_slow_reader(const char *dir)
{
	coordl_error_t err = { "" };
	coordl__cache_t *c = coordl__cache_attach("slow", dir, 256 * 1024, 10, 10000, 3, &err);
	coordl__cache_ticket_t t;
	uint8_t item[1000];
	size_t len;
	struct shrinker s = { c, 0, -1, 0 };
	pthread_t thr;
	const uint8_t *p;

	if (!c) {
		ok(0, "slow reader: attach: %s", err.text);
		return;
	}
	fill(item, 4, sizeof(item));
	coordl__cache_put(c, 4, item, sizeof(item));
	p = coordl__cache_get(c, 4, &len, &t);
	ok(p != NULL, "slow reader: holds item 4");
	if (!p || pthread_create(&thr, NULL, shrink_main, &s) != 0) {
		coordl__cache_detach(c);
		return;
	}
	pthread_join(thr, NULL);
	ok(s.rc == 0, "issue 13: a shrink to 0 returns while a reader holds an item (%.3f s)", s.took);
	is_int(coordl__cache_done(c, &t), 0, "issue 13: and the reader learns that its item went");
	ok(coordl__cache_set_bound(c, 0) == 0 && occupied(c) <= COORDL__CACHE_HEADER_BYTES,
	   "slow reader: the next change finishes the release (%lld bytes)", occupied(c));
	coordl__cache_detach(c);
}

/* Issue 13: the bound lives in the segment: a change one process makes
 * holds for every process attached. */
static void test_issue13_processes(const char *dir)
{
	coordl_error_t err = { "" };
	size_t n = 100, il = 1000, hits = 0;
	uint8_t item[1000];
	coordl__cache_t *c = coordl__cache_attach("procs", dir, 256 * 1024, n, n * il, 8, &err);
	pid_t pid;
	int st = -1;

	if (!c) {
		ok(0, "processes: attach: %s", err.text);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		fill(item, i, il);
		coordl__cache_put(c, i, item, il);
	}
	if ((pid = fork()) == 0) {
		coordl__cache_t *cc = coordl__cache_attach("procs", dir, 1, n, n * il, 8, &err);
		_exit(cc && coordl__cache_set_bound(cc, 64 * 1024) == 0 ? (coordl__cache_detach(cc), 0) : 1);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "processes: another process lowers the bound");
	for (size_t i = 0; i < n; i++)
		hits += lookup(c, i, il) == 1;
	ok(coordl__cache_bound(c) == 64 * 1024 && coordl__cache_shrinks(c) == 1 && hits > 0 && hits < n &&
	   hits == coordl__cache_items(c),
	   "issue 13: this process sees the new bound, the count and the drops (%zu items left)", hits);
	ok(occupied(c) <= 64 * 1024, "processes: the file occupies %lld", occupied(c));
	coordl__cache_detach(c);
}

#define STRESS_ITEMS 64
#define STRESS_LEN 3000

struct stress {
	coordl__cache_t *c;
	int stop;        /* atomic */
	unsigned seed;
	long hits, torn, stores;
};

static void *stress_worker(void *arg)
{
	struct stress *s = arg;
	uint8_t *item = malloc(STRESS_LEN);
	unsigned r = s->seed;

	while (item && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		coordl__cache_ticket_t t;
		size_t i, len = 0;
		const uint8_t *p;
		r = r * 1103515245u + 12345u;
		i = (r >> 8) % STRESS_ITEMS;
		if ((p = coordl__cache_get(s->c, i, &len, &t))) {
			int good = len == STRESS_LEN && intact(p, i, len);
			if (coordl__cache_done(s->c, &t)) {
				s->hits++;
				s->torn += !good;
			}
		} else {
			fill(item, i, STRESS_LEN);
			s->stores += coordl__cache_put(s->c, i, item, STRESS_LEN);
		}
	}
	free(item);
	return NULL;
}

/* Issue 13: readers and writers in several threads while the bound moves
 * up and down (to 0 too): an item reported intact by done() always is. */
static void test_issue13_threads(const char *dir, const char *label)
{
	coordl_error_t err = { "" };
	coordl__cache_t *c = coordl__cache_attach(dir ? "stress" : NULL, dir, 256 * 1024, STRESS_ITEMS,
						  STRESS_ITEMS * STRESS_LEN, 4, &err);
	struct stress w[3];
	pthread_t thr[3];
	long hits = 0, torn = 0, stores = 0;
	int started = 0, changes = 0;
	static const uint64_t bounds[] = { 40 * 1024, 200 * 1024, 0, 120 * 1024, 70 * 1024, 256 * 1024 };

	if (!c) {
		ok(0, "%s: stress: attach: %s", label, err.text);
		return;
	}
	for (int k = 0; k < 3; k++) {
		memset(&w[k], 0, sizeof(w[k]));
		w[k].c = c;
		w[k].seed = 17u * (unsigned)k + 1;
		if (pthread_create(&thr[k], NULL, stress_worker, &w[k]) == 0)
			started++;
	}
	for (int round = 0; round < 60; round++) {
		struct timespec ts = { 0, 3000000 };
		nanosleep(&ts, NULL);
		changes += coordl__cache_set_bound(c, bounds[round % 6]) == 0;
	}
	for (int k = 0; k < started; k++)
		__atomic_store_n(&w[k].stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < started; k++) {
		pthread_join(thr[k], NULL);
		hits += w[k].hits;
		torn += w[k].torn;
		stores += w[k].stores;
	}
	ok(started == 3 && changes == 60, "%s: 3 threads ran through 60 bound changes", label);
	ok(hits > 0 && stores > 0, "%s: with %ld hits and %ld stores", label, hits, stores);
	ok(torn == 0, "issue 13: %s: no item reported intact was torn (%ld)", label, torn);
	ok(coordl__cache_shrinks(c) == 30 && coordl__cache_grows(c) == 30,
	   "%s: 30 shrinks and 30 grows counted (%llu, %llu)", label,
	   (unsigned long long)coordl__cache_shrinks(c), (unsigned long long)coordl__cache_grows(c));
	ok(occupied(c) <= 256 * 1024, "%s: occupies %lld <= the last bound", label, occupied(c));
	coordl__cache_detach(c);
}

/* Two loader processes share one cache through SYNERGY_CACHE_NAME. */
static void test_loaders(const char *dir)
{
	char root[1024], seg[1200];
	long long total;
	int st[2] = { -1, -1 };
	int pipefd[2];

	snprintf(root, sizeof(root), "%s/data", dir);
	total = td_imagefolder(root, 3, 20);
	ok(total > 0, "test dataset written (%lld bytes)", total);
	setenv(SYNERGY_ENV_CACHE_DIR, dir, 1);
	snprintf(seg, sizeof(seg), "%s/coordl-%u-ld2.cache", dir, (unsigned)geteuid());
	if (pipe(pipefd) < 0)
		bail_out("pipe");
	for (int r = 0; r < 2; r++) {
		pid_t pid = fork();
		if (pid == 0) {
			coordl_config_t cfg;
			coordl_error_t err = { "" };
			coordl_loader_t *ld;
			coordl_stats_t s;
			char go;
			coordl_config_init(&cfg);
			cfg.path = root;
			cfg.mode = COORDL_MODE_RAW;
			cfg.batch_size = 4;
			cfg.threads = 2;
			cfg.rank = r;
			cfg.world_size = 2;
			cfg.cache_bytes = 1 << 20;
			cfg.cache_name = "ld2";
			if (!(ld = coordl_create(&cfg, &err)))
				_exit(10);
			/* Both ranks attach before either runs, so both count. */
			if (r == 0 && read(pipefd[0], &go, 1) != 1)
				_exit(11);
			if (r == 1 && write(pipefd[1], "g", 1) != 1)
				_exit(11);
			if (td_run_epoch(ld, 0, NULL, 0, NULL, 0) != 30)
				_exit(12);
			coordl_get_stats(ld, &s);
			if (s.cache_bytes_used > s.cache_bytes_limit || !s.cache_shared)
				_exit(13);
			if (td_file_blocks(seg) > (long long)s.cache_bytes_limit)
				_exit(14);
			coordl_destroy(ld);
			_exit(0);
		}
		if (pid < 0)
			bail_out("fork");
		if (r == 1) {
			int s1;
			/* Wait for the one that ends second to know the first is done. */
			waitpid(pid, &s1, 0);
			st[1] = WIFEXITED(s1) ? WEXITSTATUS(s1) : -1;
		} else {
			st[0] = pid;
		}
	}
	{
		int s0;
		waitpid(st[0], &s0, 0);
		st[0] = WIFEXITED(s0) ? WEXITSTATUS(s0) : -1;
	}
	ok(st[0] == 0 && st[1] == 0, "two loader processes (ranks 0, 1) ran an epoch on one cache (%d %d)",
	   st[0], st[1]);
	ok(!exists(seg), "the shared cache file is gone after both loaders were destroyed");
	close(pipefd[0]);
	close(pipefd[1]);

	/* Sharing, observed from a third attacher while two loaders live. */
	{
		coordl_config_t cfg;
		coordl_error_t err = { "" };
		coordl_loader_t *l0, *l1;
		coordl_stats_t s0, s1;
		coordl_config_init(&cfg);
		cfg.path = root;
		cfg.mode = COORDL_MODE_RAW;
		cfg.batch_size = 4;
		cfg.threads = 2;
		cfg.world_size = 2;
		cfg.cache_bytes = 1 << 20;
		cfg.cache_name = "ld2";
		l0 = coordl_create(&cfg, &err);
		cfg.rank = 1;
		l1 = coordl_create(&cfg, &err);
		ok(l0 && l1, "two loaders in one process attach to the same cache");
		if (l0 && l1) {
			td_run_epoch(l0, 0, NULL, 0, NULL, 0);
			td_run_epoch(l1, 0, NULL, 0, NULL, 0);
			coordl_get_stats(l0, &s0);
			coordl_get_stats(l1, &s1);
			ok(s0.cache_bytes_used == (uint64_t)total && s1.cache_bytes_used == (uint64_t)total,
			   "both see the whole dataset cached once (%llu of %lld bytes)",
			   (unsigned long long)s0.cache_bytes_used, total);
			ok(s0.storage_bytes + s1.storage_bytes == (uint64_t)total,
			   "disjoint shards read each item from storage once");
			td_run_epoch(l1, 1, NULL, 0, NULL, 0);
			coordl_get_stats(l1, &s1);
			ok(s1.storage_bytes == 0 && s1.cache_misses == 0,
			   "rank 1's next epoch is served entirely from the shared cache");
		} else {
			skip(3, "no loaders");
		}
		coordl_destroy(l0);
		ok(exists(seg), "cache kept while one loader remains");
		coordl_destroy(l1);
		ok(!exists(seg), "cache removed when the last loader is destroyed");
	}
	unsetenv(SYNERGY_ENV_CACHE_DIR);
}

int main(void)
{
	char *dir = td_tmpdir("cache"), shmdir[] = "/dev/shm/coordl-cache-XXXXXX";
	int shm = access("/dev/shm", W_OK) == 0 && mkdtemp(shmdir) != NULL;
	/* Bound changes are checked where caches live (tmpfs) when we can. */
	const char *bdir = shm ? shmdir : dir;
	struct statfs sf;

	if (statfs(bdir, &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		meta_slack = 4 * 4096;

	test_private();
	test_shared(dir, "cache dir");
	if (shm)
		test_shared(NULL, "/dev/shm");
	else
		skip(21, "/dev/shm not writable");
	test_issue12_unsafe(dir);
	test_issue12_poison(dir);
	test_no_space(dir);
	test_issue13_bounds(bdir, "cache dir");
	test_issue13_bounds(NULL, "private");
	test_issue13_huge_tmpfs(dir);
	test_issue13_private_thp();
	test_issue13_slow_reader(bdir);
	test_issue13_processes(bdir);
	test_issue13_threads(bdir, "cache dir");
	test_issue13_threads(NULL, "private");
	test_loaders(dir);
	td_rmrf(dir);
	if (shm)
		td_rmrf(shmdir);
	free(dir);
	return done_testing();
}
