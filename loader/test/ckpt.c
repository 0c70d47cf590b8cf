/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt.t: libcoordl's checkpoint engine and recovery (coordl_ckpt.h).
 *
 * - CRC32C against the RFC 3720 vectors, the instruction against the
 *   tables, and in pieces against in one go;
 * - round trips: sections copied now and by the copy thread, the source
 *   changed after coordl_ckpt_wait_copied() does not reach the file;
 *   sequence numbers continue across writers, `keep` files are kept,
 *   stats say what happened;
 * - misuse refused with the errno the header promises;
 * - torn writes: a child writer is killed with SIGKILL after each phase of
 *   a write (the file created, part of the payload, all of it, the header,
 *   synced, renamed, the directory synced, old files removed); recovery
 *   then takes the previous checkpoint before the rename and the new one
 *   after it, never a torn one, and the next writer removes what was left;
 * - corrupt and truncated files: every byte of the header and section table
 *   and payload bytes flipped one at a time, every truncation point class,
 *   a byte appended, headers forged with a valid CRC but bad fields; each
 *   is refused and recovery falls back to the previous file; symbolic links
 *   and other users' files are never read;
 * - a snapshot superseded while the writer is busy, flush's timeout;
 * - a full file system (a 4 MiB ext4 image on a loop device, root only):
 *   the failed write is reported with ENOSPC and its file, the previous
 *   checkpoint stays, nothing is left behind, and the next write succeeds.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader/ckpt.h"
#include "coordl_ckpt.h"
#include "tests/tap.h"

#define A_BYTES (3 * 4096 + 100)
#define B_BYTES 5000

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15u + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)x;
	}
}

static void rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[1024];

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
}

static void tmpdir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/ckpt-t-XXXXXX");
	if (!mkdtemp(buf)) {
		perror("mkdtemp");
		exit(1);
	}
}

static coordl_ckpt_t *open_ck(const char *dir, int keep, coordl_error_t *err)
{
	coordl_ckpt_config_t cfg;

	coordl_ckpt_config_init(&cfg);
	cfg.dir = dir;
	cfg.keep = keep;
	return coordl_ckpt_open(&cfg, err);
}

/* Commit a checkpoint of iteration `iter` whose contents follow from seed:
 * "meta" (16 bytes) and "a" written now, "b" by the copy thread from a
 * buffer that is scribbled over once the copies are done. */
static int put_ckpt(coordl_ckpt_t *ck, uint64_t iter, uint64_t seed, size_t a_bytes)
{
	uint64_t total = coordl_ckpt_section_space(16) + coordl_ckpt_section_space(a_bytes) +
			 coordl_ckpt_section_space(B_BYTES);
	coordl_error_t err = { "" };
	coordl_ckpt_snap_t *s;
	unsigned char *m, *a, *b, *src = malloc(B_BYTES);
	uint64_t meta[2] = { iter, seed };

	if (!src)
		return -1;
	fill(src, B_BYTES, seed + 1000);
	if (!(s = coordl_ckpt_begin(ck, iter, total, &err)) ||
	    !(m = coordl_ckpt_add(s, "meta", 16, &err)) ||
	    !(a = coordl_ckpt_add(s, "a", a_bytes, &err)) ||
	    !(b = coordl_ckpt_add(s, "b", B_BYTES, &err)) ||
	    coordl_ckpt_copy_later(s, b, src, B_BYTES, &err) < 0) {
		diag("put_ckpt: %s", err.text);
		coordl_ckpt_abort(s);
		free(src);
		return -1;
	}
	memcpy(m, meta, 16);
	fill(a, a_bytes, seed);
	if (coordl_ckpt_commit(s, &err) < 0) {
		diag("commit: %s", err.text);
		free(src);
		return -1;
	}
	coordl_ckpt_wait_copied(ck);
	memset(src, 0xee, B_BYTES);
	free(src);
	return 0;
}

/* Does img hold exactly what put_ckpt(iter, seed, a_bytes) wrote? */
static int img_is(const coordl_ckpt_image_t *img, uint64_t iter, uint64_t seed, size_t a_bytes)
{
	unsigned char *want = malloc(a_bytes > B_BYTES ? a_bytes : B_BYTES);
	const unsigned char *p;
	uint64_t n, meta[2] = { iter, seed };
	int good = 0;

	if (!img || !want)
		goto out;
	if (coordl_ckpt_image_iteration(img) != iter || coordl_ckpt_image_sections(img) != 3)
		goto out;
	if (!(p = coordl_ckpt_image_section(img, "meta", &n)) || n != 16 || memcmp(p, meta, 16))
		goto out;
	fill(want, a_bytes, seed);
	if (!(p = coordl_ckpt_image_section(img, "a", &n)) || n != a_bytes || memcmp(p, want, n))
		goto out;
	fill(want, B_BYTES, seed + 1000);
	if (!(p = coordl_ckpt_image_section(img, "b", &n)) || n != B_BYTES || memcmp(p, want, n))
		goto out;
	good = 1;
out:
	free(want);
	return good;
}

static int count_files(const char *dir, int dot)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (dot ? (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			: strstr(de->d_name, ".ckpt") != NULL)
			n++;
	closedir(d);
	return n;
}

static char *ckpt_path(const char *dir, uint64_t seq)
{
	static char p[1024];
	snprintf(p, sizeof(p), "%s/ckpt-%020llu.ckpt", dir, (unsigned long long)seq);
	return p;
}

static void test_crc(void)
{
	unsigned char buf[4096 + 13];
	uint32_t a, b;
	int mism = 0;

	is_int(coordl__crc32c(0, "123456789", 9), 0xE3069283u, "CRC32C('123456789') = 0xE3069283");
	memset(buf, 0, 32);
	is_int(coordl__crc32c(0, buf, 32), 0x8A9136AAu, "CRC32C(32 zeros) = 0x8A9136AA (RFC 3720)");
	memset(buf, 0xff, 32);
	is_int(coordl__crc32c(0, buf, 32), 0x62A8AB43u, "CRC32C(32 x 0xFF) = 0x62A8AB43 (RFC 3720)");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	is_int(coordl__crc32c(0, buf, 32), 0x46DD794Eu, "CRC32C(0..31) = 0x46DD794E (RFC 3720)");
	is_int(coordl__crc32c_sw(0, buf, 32), 0x46DD794Eu, "table-driven CRC32C agrees");
	fill(buf, sizeof(buf), 5);
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n + off <= sizeof(buf); n += 1 + n / 3) {
			a = coordl__crc32c(0, buf + off, n);
			b = coordl__crc32c_sw(0, buf + off, n);
			mism += a != b;
			/* In two pieces, split anywhere. */
			mism += coordl__crc32c(coordl__crc32c(0, buf + off, n / 3), buf + off + n / 3,
					       n - n / 3) != a;
		}
	is_int(mism, 0, "CRC32C: instruction = tables = pieces, every length and alignment");
}

static void test_roundtrip(void)
{
	char dir[64];
	coordl_error_t err = { "" };
	coordl_ckpt_t *ck, *ck2;
	coordl_ckpt_image_t *img;
	coordl_ckpt_stats_t st;
	coordl_ckpt_scan_t scan;
	struct stat sb;
	int good = 1;

	tmpdir(dir, sizeof(dir));
	ck = open_ck(dir, 3, &err);
	if (!ok(ck != NULL, "open a writer on an empty directory"))
		diag("%s", err.text);
	if (!ck)
		return;
	errno = 0;
	ck2 = open_ck(dir, 3, &err);
	ok(!ck2 && errno == EBUSY && strstr(err.text, "another writer"),
	   "a second writer of the same name: EBUSY (%s)", err.text);
	for (uint64_t i = 1; i <= 5; i++)
		good &= put_ckpt(ck, i * 10, i, A_BYTES) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0;
	ok(good, "five checkpoints written and flushed");
	coordl_ckpt_get_stats(ck, &st);
	is_int(st.committed, 5, "stats: 5 committed");
	is_int(st.persisted, 5, "stats: 5 persisted");
	is_int(st.failed + st.superseded, 0, "stats: none failed or superseded");
	is_int(st.last_iteration, 50, "stats: last iteration 50");
	is_int(st.last_sequence, 5, "stats: last sequence 5");
	is_int(st.in_flight, 0, "stats: nothing in flight after flush");
	ok(stat(ckpt_path(dir, 5), &sb) == 0 && (uint64_t)sb.st_size == st.last_bytes,
	   "stats: last_bytes is the file's size (%llu)", (unsigned long long)st.last_bytes);
	ok(sb.st_mode % 01000 == 0600, "checkpoint files are mode 0600");
	is_int(count_files(dir, 0), 3, "keep = 3: three checkpoint files left");
	ok(stat(ckpt_path(dir, 2), &sb) < 0 && stat(ckpt_path(dir, 3), &sb) == 0,
	   "the oldest ones were removed");
	is_int(count_files(dir, 1), 0, "no temporary file left");
	coordl_ckpt_close(ck);

	img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
	ok(img_is(img, 50, 5, A_BYTES), "load_latest: the newest, every section intact");
	ok(scan.files == 3 && scan.skipped == 0, "scan: 3 files, none skipped");
	is_int(coordl_ckpt_image_sequence(img), 5, "image: sequence 5");
	is_str(coordl_ckpt_image_section_name(img, 2), "b", "image: section names in order");
	ok(coordl_ckpt_image_section_name(img, 3) == NULL, "image: no section 3");
	errno = 0;
	ok(coordl_ckpt_image_section(img, "nope", NULL) == NULL && errno == ENOENT,
	   "image: a missing section is ENOENT");
	coordl_ckpt_image_free(img);
	img = coordl_ckpt_load_file(ckpt_path(dir, 3), &err);
	ok(img_is(img, 30, 3, A_BYTES), "load_file: an older one, by path");
	coordl_ckpt_image_free(img);

	/* A new writer continues the sequence. */
	ck = open_ck(dir, 3, &err);
	ok(ck && put_ckpt(ck, 60, 6, 1) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0,
	   "a new writer writes on");
	coordl_ckpt_close(ck);
	ok(stat(ckpt_path(dir, 6), &sb) == 0, "its sequence continues at 6");
	img = coordl_ckpt_load_latest(dir, "ckpt", NULL, &err);
	ok(img_is(img, 60, 6, 1), "and recovery takes it");
	coordl_ckpt_image_free(img);
	rmtree(dir);

	/* Not durable: the same files, without fsync. */
	{
		coordl_ckpt_config_t cfg;
		tmpdir(dir, sizeof(dir));
		coordl_ckpt_config_init(&cfg);
		cfg.dir = dir;
		cfg.durable = 0;
		cfg.name = "rank1";
		ck = coordl_ckpt_open(&cfg, &err);
		ok(ck && put_ckpt(ck, 7, 7, 100000) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0,
		   "durable = 0, name rank1: written");
		coordl_ckpt_close(ck);
		img = coordl_ckpt_load_latest(dir, "rank1", NULL, &err);
		ok(img_is(img, 7, 7, 100000), "and read back under its name");
		coordl_ckpt_image_free(img);
		errno = 0;
		img = coordl_ckpt_load_latest(dir, NULL, NULL, &err);
		ok(!img && errno == ENOENT, "another name finds nothing: ENOENT (%s)", err.text);
		rmtree(dir);
	}
}

static void test_misuse(void)
{
	char dir[64], file[96];
	coordl_ckpt_config_t cfg;
	coordl_error_t err = { "" };
	coordl_ckpt_t *ck;
	coordl_ckpt_snap_t *s, *s2;
	coordl_ckpt_stats_t st;
	unsigned char *p;
	int fd;

	tmpdir(dir, sizeof(dir));
	coordl_ckpt_config_init(&cfg);
	cfg.dir = dir;
	static const char *bad_names[] = { "", ".hidden", "a/b", "sp ace",
					   "x123456789012345678901234567890123" };
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		cfg.name = bad_names[i];
		errno = 0;
		ok(!coordl_ckpt_open(&cfg, &err) && errno == EINVAL && strstr(err.text, "name"),
		   "open: name '%s' refused", bad_names[i]);
	}
	cfg.name = "ckpt";
	cfg.keep = 0;
	errno = 0;
	ok(!coordl_ckpt_open(&cfg, &err) && errno == EINVAL && strstr(err.text, "keep"),
	   "open: keep 0 refused");
	cfg.keep = 2;
	cfg.memory = 7;
	errno = 0;
	ok(!coordl_ckpt_open(&cfg, &err) && errno == EINVAL, "open: memory 7 refused");
	cfg.memory = COORDL_CKPT_MEM_AUTO;
	snprintf(file, sizeof(file), "%s/file", dir);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	close(fd);
	cfg.dir = file;
	errno = 0;
	ok(!coordl_ckpt_open(&cfg, &err) && errno == ENOTDIR && strstr(err.text, file),
	   "open: a file as directory: ENOTDIR, named (%s)", err.text);
	snprintf(file, sizeof(file), "%s/new", dir);
	cfg.dir = file;
	ck = coordl_ckpt_open(&cfg, &err);
	ok(ck != NULL, "open: a missing directory is created");
	coordl_ckpt_close(ck);
	cfg.dir = dir;
	ck = coordl_ckpt_open(&cfg, &err);
	if (!ck)
		return;

	s = coordl_ckpt_begin(ck, 1, 256, &err);
	ok(s != NULL, "begin");
	errno = 0;
	s2 = coordl_ckpt_begin(ck, 2, 256, &err);
	ok(!s2 && errno == EBUSY, "begin while another is filled: EBUSY");
	p = coordl_ckpt_add(s, "x", 100, &err);
	ok(p && ((uintptr_t)p % COORDL_CKPT_ALIGN) == 0, "add: aligned");
	errno = 0;
	ok(!coordl_ckpt_add(s, "x", 10, &err) && errno == EINVAL && strstr(err.text, "twice"),
	   "add: a name twice refused");
	errno = 0;
	ok(!coordl_ckpt_add(s, "has space", 10, &err) && errno == EINVAL, "add: a bad name refused");
	errno = 0;
	ok(!coordl_ckpt_add(s, "y", 129, &err) && errno == ENOSPC,
	   "add: beyond payload_bytes: ENOSPC");
	ok(coordl_ckpt_add(s, "y", 128, &err) != NULL, "add: exactly up to payload_bytes");
	errno = 0;
	ok(coordl_ckpt_copy_later(s, p + 90, "0123456789abcdef", 16, &err) < 0 && errno == EINVAL,
	   "copy_later: running past its section refused");
	errno = 0;
	ok(coordl_ckpt_copy_later(s, file, "0", 1, &err) < 0 && errno == EINVAL,
	   "copy_later: a destination outside the buffer refused");
	ok(coordl_ckpt_copy_later(s, p + 90, "0123456789", 10, &err) == 0,
	   "copy_later: up to the section's end");
	coordl_ckpt_abort(s);
	coordl_ckpt_get_stats(ck, &st);
	is_int(st.committed, 0, "abort: nothing committed");
	s = coordl_ckpt_begin(ck, 1, 256, &err);
	errno = 0;
	ok(s && coordl_ckpt_commit(s, &err) < 0 && errno == EINVAL,
	   "commit of a snapshot with no section: EINVAL");
	s = coordl_ckpt_begin(ck, 3, 0, &err);
	ok(s && coordl_ckpt_add(s, "empty", 0, &err) && coordl_ckpt_commit(s, &err) == 0 &&
		   coordl_ckpt_flush(ck, -1, &err) == 0,
	   "a snapshot of one empty section is written");
	ok(coordl_ckpt_reserve(ck, 5 << 20, &err) == 0, "reserve 5 MiB");
	coordl_ckpt_get_stats(ck, &st);
	ok(st.buffer_bytes >= 2 * (5 << 20), "stats: both buffers hold it (%llu bytes)",
	   (unsigned long long)st.buffer_bytes);
	is_int(st.pinned, 0, "stats: pageable (no CUDA device here)");
	coordl_ckpt_close(ck);
	{
		coordl_ckpt_image_t *img = coordl_ckpt_load_latest(dir, NULL, NULL, &err);
		uint64_t n = 1;
		ok(img && coordl_ckpt_image_section(img, "empty", &n) && n == 0,
		   "the empty section reads back empty");
		coordl_ckpt_image_free(img);
	}
	errno = 0;
	ok(!coordl_ckpt_load_file("/nonexistent/x.ckpt", &err) && errno == ENOENT &&
		   strstr(err.text, "/nonexistent/x.ckpt"),
	   "load_file of a missing file: ENOENT, named");
	errno = 0;
	ok(!coordl_ckpt_load_latest("/nonexistent", NULL, NULL, &err) && errno == ENOENT,
	   "load_latest of a missing directory: ENOENT");
	rmtree(dir);
	snprintf(file, sizeof(file), "%s/new", dir);
	rmtree(file);
	rmtree(dir);
}

/* ---- torn writes ---------------------------------------------------------- */

static int kill_phase, kill_count;

static void kill_hook(int phase, void *arg)
{
	if (phase == kill_phase && --kill_count == 0)
		raise(SIGKILL);
}

static const char *phase_name[] = { "file created",   "part of the payload written",
				    "payload written", "header written",
				    "file synced",     "renamed, directory not synced",
				    "directory synced", "old files removed" };

static void test_torn(void)
{
	for (int ph = 0; ph < COORDL__CKPT_PH_COUNT; ph++) {
		char dir[64];
		coordl_error_t err = { "" };
		coordl_ckpt_image_t *img;
		coordl_ckpt_scan_t scan;
		coordl_ckpt_t *ck;
		int status = 0, after = ph >= COORDL__CKPT_PH_RENAMED;
		pid_t pid;

		tmpdir(dir, sizeof(dir));
		ck = open_ck(dir, 2, &err);
		ok(ck && put_ckpt(ck, 100, 1, A_BYTES) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0,
		   "torn (%s): checkpoint 100 written", phase_name[ph]);
		coordl_ckpt_close(ck);
		fflush(stdout);
		if ((pid = fork()) == 0) {
			ck = open_ck(dir, 2, &err);
			if (!ck)
				_exit(2);
			kill_phase = ph;
			kill_count = ph == COORDL__CKPT_PH_PAYLOAD_PART ? 2 : 1;
			coordl__ckpt_set_chunk(ck, 4096);
			coordl__ckpt_set_hook(ck, kill_hook, NULL);
			put_ckpt(ck, 200, 2, A_BYTES);
			coordl_ckpt_flush(ck, -1, &err);
			_exit(3);
		}
		waitpid(pid, &status, 0);
		ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "torn (%s): the writer was killed there", phase_name[ph]);
		img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
		if (after)
			ok(img_is(img, 200, 2, A_BYTES),
			   "torn (%s): recovery takes the new, complete checkpoint", phase_name[ph]);
		else
			ok(img_is(img, 100, 1, A_BYTES),
			   "torn (%s): recovery takes the previous checkpoint", phase_name[ph]);
		ok(scan.skipped == 0 && scan.files == 1 + after + 0,
		   "torn (%s): no torn file is ever seen (%d files, %d skipped)", phase_name[ph],
		   scan.files, scan.skipped);
		coordl_ckpt_image_free(img);
		/* The next writer cleans up and goes on. */
		ck = open_ck(dir, 2, &err);
		is_int(count_files(dir, 1), 0, "torn: the next writer removed the temporary file");
		ok(ck && put_ckpt(ck, 300, 3, A_BYTES) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0,
		   "torn: the next writer writes");
		coordl_ckpt_close(ck);
		img = coordl_ckpt_load_latest(dir, NULL, NULL, &err);
		ok(img_is(img, 300, 3, A_BYTES) && coordl_ckpt_image_sequence(img) == 2u + after,
		   "torn: and recovery takes its checkpoint (sequence %llu)",
		   (unsigned long long)coordl_ckpt_image_sequence(img));
		coordl_ckpt_image_free(img);
		rmtree(dir);
	}
}

/* ---- corrupt files -------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *n)
{
	struct stat sb;
	unsigned char *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &sb) < 0 || !(p = malloc((size_t)sb.st_size + 1))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*n = (size_t)read(fd, p, (size_t)sb.st_size);
	close(fd);
	return p;
}

static void spit(const char *path, const unsigned char *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		perror(path);
	if (fd >= 0)
		close(fd);
}

/* Is the file at path refused with EINVAL? */
static int refused(const char *path, char *text, size_t len)
{
	coordl_error_t err = { "" };
	coordl_ckpt_image_t *img;

	errno = 0;
	img = coordl_ckpt_load_file(path, &err);
	snprintf(text, len, "%s", err.text);
	if (img) {
		coordl_ckpt_image_free(img);
		return 0;
	}
	return errno == EINVAL && strstr(err.text, path) != NULL;
}

/* Recompute the header CRC of buf after a field was changed on purpose. */
static void recrc(unsigned char *buf, uint32_t hb)
{
	static const unsigned char zero[4];
	uint32_t c = coordl__crc32c(0, buf, 60);

	c = coordl__crc32c(c, zero, 4);
	c = coordl__crc32c(c, buf + 64, hb - 64);
	for (int i = 0; i < 4; i++)
		buf[60 + i] = (unsigned char)(c >> (8 * i));
}

static void put64le(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void test_corrupt(void)
{
	char dir[64], bad[128], text[200], target[1024];
	coordl_error_t err = { "" };
	coordl_ckpt_image_t *img;
	coordl_ckpt_scan_t scan;
	coordl_ckpt_t *ck;
	unsigned char *good, *m;
	size_t n = 0, hb = 4096;
	int missed = 0, tried = 0;

	tmpdir(dir, sizeof(dir));
	ck = open_ck(dir, 10, &err);
	ok(ck && put_ckpt(ck, 1, 1, A_BYTES) == 0 && put_ckpt(ck, 2, 2, A_BYTES) == 0 &&
		   coordl_ckpt_flush(ck, -1, &err) == 0,
	   "corrupt: two checkpoints written");
	coordl_ckpt_close(ck);
	if (!(good = slurp(ckpt_path(dir, 2), &n)) || !(m = malloc(n + 1))) {
		ok(0, "corrupt: read the file back");
		return;
	}
	snprintf(bad, sizeof(bad), "%s/bad.ckpt", dir);

	/* Every byte of the fixed header and the section table, the last
	 * padding byte, and payload bytes first, middle and last. */
	for (size_t i = 0; i < n; i++) {
		if (!(i < 64 + 3 * 64 || i == hb - 1 || i == hb || i == hb + n / 3 || i == n - 1))
			continue;
		memcpy(m, good, n);
		m[i] ^= 0x01;
		spit(bad, m, n);
		tried++;
		if (!refused(bad, text, sizeof(text))) {
			if (missed++ < 3)
				diag("byte %zu flipped: not refused (%s)", i, text);
		}
	}
	is_int(missed, 0, "corrupt: every flipped byte refused with EINVAL, file named");
	diag("%d single-byte corruptions tried", tried);

	missed = 0;
	static const size_t cuts[] = { 0, 1, 63, 64, 65, 4095, 4096, 4097 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]) + 1; i++) {
		size_t len = i < sizeof(cuts) / sizeof(cuts[0]) ? cuts[i] : n - 1;
		spit(bad, good, len);
		if (!refused(bad, text, sizeof(text)) && missed++ < 3)
			diag("cut to %zu bytes: not refused (%s)", len, text);
	}
	is_int(missed, 0, "truncated at 0, 1, 63, 64, 65, 4095, 4096, 4097 and n-1 bytes: refused");
	memcpy(m, good, n);
	m[n] = 0;
	spit(bad, m, n + 1);
	ok(refused(bad, text, sizeof(text)) && strstr(text, "torn or truncated"),
	   "one byte appended: refused (%s)", text);

	/* Forged headers with a valid CRC: each check on its own. */
	struct {
		size_t off;
		uint64_t val;
		int width;
		const char *word, *what;
	} forge[] = {
		{ 8, 2, 4, "format version", "version 2" },
		{ 12, 8192, 4, "header of", "header_bytes 8192" },
		{ 32, UINT64_C(1) << 60, 8, "out of range", "payload_bytes 2^60" },
		{ 48, 0, 4, "sections", "no sections" },
		{ 48, 100000, 4, "sections", "100000 sections" },
		{ 52, 1, 4, "flags", "flags 1" },
		{ 64 + 48, 3, 8, "section 'meta'", "section offset unaligned" },
		{ 64 + 64 + 48, 0, 8, "section 'a'", "sections overlap" },
		{ 64 + 128 + 56, UINT64_C(1) << 40, 8, "section 'b'", "section past the payload" },
		{ 64 + 128 + 56, UINT64_MAX, 8, "section 'b'", "section length 2^64-1" },
		{ 64 + 64, 'm' | 'e' << 8 | 't' << 16 | 'a' << 24, 4, "twice", "duplicate name" },
		{ 64 + 64, ' ', 1, "bad name", "name with a space" },
		{ 64 + 64 + 2, 'z', 1, "bad name", "bytes after the name's NUL" },
		{ 64 + 47, 'q', 1, "bad name", "a stray byte at the end of a name field" },
		{ 64 + 3 * 64 + 5, 1, 1, "padding", "non-zero padding" },
	};
	for (size_t i = 0; i < sizeof(forge) / sizeof(forge[0]); i++) {
		coordl__ckpt_header_t h;
		memcpy(m, good, n);
		if (forge[i].width == 8) {
			put64le(m + forge[i].off, forge[i].val);
		} else {
			for (int k = 0; k < forge[i].width; k++)
				m[forge[i].off + k] = (unsigned char)(forge[i].val >> (8 * k));
		}
		recrc(m, (uint32_t)hb);
		memset(&h, 0, sizeof(h));
		text[0] = 0;
		errno = 0;
		ok(coordl__ckpt_parse_header(m, hb, &h, text, sizeof(text)) < 0 && errno == EINVAL &&
			   strstr(text, forge[i].word),
		   "forged header, %s: refused (%s)", forge[i].what, text);
		free(h.sec);
		spit(bad, m, n);
		ok(refused(bad, text, sizeof(text)), "forged header, %s: the file is refused",
		   forge[i].what);
	}
	unlink(bad);

	/* Recovery falls back. */
	memcpy(m, good, n);
	m[n - 1] ^= 0x80;
	spit(ckpt_path(dir, 2), m, n);
	img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
	ok(img_is(img, 1, 1, A_BYTES) && scan.skipped == 1 && strstr(scan.why, "payload checksum"),
	   "a corrupt newest file: recovery takes the previous one (%s)", scan.why);
	coordl_ckpt_image_free(img);
	spit(ckpt_path(dir, 2), good, n - 1);
	img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
	ok(img_is(img, 1, 1, A_BYTES) && strstr(scan.why, "torn or truncated"),
	   "a truncated newest file: the previous one (%s)", scan.why);
	coordl_ckpt_image_free(img);
	unlink(ckpt_path(dir, 2));
	snprintf(target, sizeof(target), "%s", ckpt_path(dir, 1));
	if (symlink(target, ckpt_path(dir, 5)) == 0) {
		img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
		ok(img_is(img, 1, 1, A_BYTES) && strstr(scan.why, "symbolic link"),
		   "a symbolic link named as a newer checkpoint is skipped (%s)", scan.why);
		coordl_ckpt_image_free(img);
		unlink(ckpt_path(dir, 5));
	} else {
		skip(1, "symlink failed");
	}
	mkdir(ckpt_path(dir, 6), 0700);
	img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
	ok(img_is(img, 1, 1, A_BYTES) && scan.skipped == 1, "a directory named so is skipped (%s)",
	   scan.why);
	coordl_ckpt_image_free(img);
	rmdir(ckpt_path(dir, 6));
	if (geteuid() == 0) {
		spit(ckpt_path(dir, 7), good, n);
		if (chown(ckpt_path(dir, 7), 65534, 65534) == 0) {
			img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
			ok(img_is(img, 1, 1, A_BYTES) && strstr(scan.why, "owned by uid 65534"),
			   "another user's file is never read (%s)", scan.why);
			coordl_ckpt_image_free(img);
		} else {
			skip(1, "chown failed");
		}
		unlink(ckpt_path(dir, 7));
	} else {
		skip(1, "not root: cannot make another user's file");
	}
	unlink(ckpt_path(dir, 1));
	errno = 0;
	img = coordl_ckpt_load_latest(dir, NULL, &scan, &err);
	ok(!img && errno == ENOENT && scan.files == 0, "no checkpoint left: ENOENT (%s)", err.text);
	free(good);
	free(m);
	rmtree(dir);
}

/* ---- superseding and timeouts ------------------------------------------- */

static int gate[2];
static int gate_first;

static void gate_hook(int phase, void *arg)
{
	char c;

	if (phase == COORDL__CKPT_PH_OPENED && gate_first) {
		gate_first = 0;
		if (read(gate[0], &c, 1) != 1)
			abort();
	}
}

static void test_supersede(void)
{
	char dir[64];
	coordl_error_t err = { "" };
	coordl_ckpt_image_t *img;
	coordl_ckpt_stats_t st;
	coordl_ckpt_t *ck;

	tmpdir(dir, sizeof(dir));
	if (pipe(gate) < 0 || !(ck = open_ck(dir, 5, &err))) {
		ok(0, "supersede: set up");
		return;
	}
	gate_first = 1;
	coordl__ckpt_set_hook(ck, gate_hook, NULL);
	ok(put_ckpt(ck, 1, 1, A_BYTES) == 0, "supersede: checkpoint 1 committed (writer held)");
	ok(put_ckpt(ck, 2, 2, A_BYTES) == 0, "supersede: checkpoint 2 committed, waiting");
	errno = 0;
	ok(coordl_ckpt_flush(ck, 0.05, &err) < 0 && errno == ETIMEDOUT,
	   "flush with a 50 ms timeout while the writer is held: ETIMEDOUT");
	ok(put_ckpt(ck, 3, 3, A_BYTES) == 0, "supersede: checkpoint 3 takes 2's buffer");
	coordl_ckpt_get_stats(ck, &st);
	is_int(st.superseded, 1, "stats: one superseded");
	is_int(st.in_flight, 2, "stats: two in flight");
	if (write(gate[1], "x", 1) != 1)
		abort();
	ok(coordl_ckpt_flush(ck, -1, &err) == 0, "flush once the writer goes on");
	coordl_ckpt_get_stats(ck, &st);
	ok(st.persisted == 2 && st.committed == 3 && st.last_iteration == 3,
	   "stats: 3 committed, 2 persisted, the last is 3");
	coordl_ckpt_close(ck);
	img = coordl_ckpt_load_latest(dir, NULL, NULL, &err);
	ok(img_is(img, 3, 3, A_BYTES) && coordl_ckpt_image_sequence(img) == 2,
	   "recovery: checkpoint 3, written second");
	coordl_ckpt_image_free(img);
	close(gate[0]);
	close(gate[1]);
	rmtree(dir);
}

/* ---- a full file system ---------------------------------------------------- */

static void test_full(void)
{
	char base[64], mnt[96], img_path[96], cmd[512];
	coordl_error_t err = { "" };
	coordl_ckpt_image_t *img;
	coordl_ckpt_stats_t st;
	coordl_ckpt_t *ck;
	int rc;

	if (geteuid() != 0 || system("command -v mkfs.ext4 >/dev/null 2>&1") != 0) {
		skip(9, "a full file system needs root and mkfs.ext4 (a loop mount)");
		return;
	}
	tmpdir(base, sizeof(base));
	snprintf(mnt, sizeof(mnt), "%s/mnt", base);
	snprintf(img_path, sizeof(img_path), "%s/fs.img", base);
	mkdir(mnt, 0700);
	snprintf(cmd, sizeof(cmd),
		 "truncate -s 4M %s && mkfs.ext4 -q -F %s >/dev/null 2>&1 && "
		 "mount -o loop %s %s 2>/dev/null",
		 img_path, img_path, img_path, mnt);
	if (system(cmd) != 0) {
		skip(9, "cannot loop-mount a small ext4 file system here");
		rmtree(mnt);
		rmtree(base);
		return;
	}
	ck = open_ck(mnt, 2, &err);
	ok(ck && put_ckpt(ck, 1, 1, 512 << 10) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0,
	   "full fs: a 512 KiB checkpoint fits");
	if (!ck)
		goto out;
	ok(put_ckpt(ck, 2, 2, 8 << 20) == 0, "full fs: an 8 MiB snapshot is committed");
	errno = 0;
	rc = coordl_ckpt_flush(ck, -1, &err);
	ok(rc < 0 && errno == ENOSPC && strstr(err.text, mnt),
	   "full fs: flush reports ENOSPC and the file (%s)", err.text);
	coordl_ckpt_get_stats(ck, &st);
	ok(st.failed == 1 && st.last_errno == ENOSPC && strstr(st.last_error, "No space"),
	   "full fs: stats count it (%s)", st.last_error);
	is_int(count_files(mnt, 1), 0, "full fs: the temporary file was removed");
	img = coordl_ckpt_load_latest(mnt, NULL, NULL, &err);
	ok(img_is(img, 1, 1, 512 << 10), "full fs: the previous checkpoint stays and loads");
	coordl_ckpt_image_free(img);
	ok(put_ckpt(ck, 3, 3, 512 << 10) == 0 && coordl_ckpt_flush(ck, -1, &err) == 0,
	   "full fs: the next checkpoint that fits is written (training went on)");
	coordl_ckpt_get_stats(ck, &st);
	ok(st.persisted == 2 && st.last_iteration == 3 && st.failed == 1,
	   "full fs: stats: 2 written, 1 failed");
	coordl_ckpt_close(ck);
	img = coordl_ckpt_load_latest(mnt, NULL, NULL, &err);
	ok(img_is(img, 3, 3, 512 << 10), "full fs: recovery takes it");
	coordl_ckpt_image_free(img);
out:
	snprintf(cmd, sizeof(cmd), "umount %s", mnt);
	if (system(cmd) != 0)
		diag("umount %s failed", mnt);
	rmtree(mnt);
	unlink(img_path);
	rmtree(base);
}

int main(void)
{
	test_crc();
	test_roundtrip();
	test_misuse();
	test_torn();
	test_corrupt();
	test_supersede();
	test_full();
	done_testing();
}
