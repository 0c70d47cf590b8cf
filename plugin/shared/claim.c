/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * claim.c: claims on profiling a key in place (see claim.h).
 *
 * A claim is written whole to a temporary file beside its name and then
 * either linked to the name (taking it: link(2) fails if the name exists,
 * so of two takers exactly one wins, common/file.h's SYN_ATOMIC_EXCL) or
 * renamed over it (renewing, or taking over a lapsed claim). Readers
 * therefore see a whole claim or none. What reads a claim and then replaces
 * or removes it (taking over a lapsed claim, renewing, releasing) holds the
 * claims directory's lock meanwhile, so that it acts on the claim it read:
 * of two takers of one lapsed claim exactly one wins, and a release never
 * removes a claim another job took over since. Claims are not fsync'ed: a
 * crash that loses one costs at most a second first job profiling its key
 * (whose profile is as good as the other's).
 *
 * Slurm 23.02 and later run job_submit concurrently in slurmctld's threads:
 * nothing here keeps state between calls.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "common/kv.h"
#include "plugin/shared/claim.h"

/* The claims directory's path; 0 or -1 (ENAMETOOLONG). */
static int dir_path(const char *store_dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/" SYN__CLAIM_DIR, store_dir);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The claim's file name within the directory. */
static int claim_name(uint32_t uid, const char *key, char *buf, size_t len)
{
	int n;

	if (!syn_key_valid(key)) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(buf, len, "%" PRIu32 ".%s", uid, key);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * Open the claims directory (made 0700 when create is set). Nobody but its
 * owner (SlurmUser, who takes claims) and root (the nodes) may open it: a
 * user who could would read every nonce and could hold the directory's
 * lock. One left from an older version with wider modes is narrowed when
 * we may; one that stays open to others, or is owned by anyone but us or
 * root, is refused (EPERM).
 */
static int dir_open(const char *store_dir, int create)
{
	char path[SYN_PATH_MAX + 16];
	struct stat st;
	int fd;

	if (!store_dir || dir_path(store_dir, path, sizeof(path)) < 0)
		return -1;
	if (create && mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto bad;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		errno = EPERM;
		goto bad;
	}
	if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 07700) < 0) {
		errno = EPERM;
		goto bad;
	}
	return fd;
bad:
	{
		int e = errno;

		close(fd);
		errno = e;
	}
	return -1;
}

/* Lock the claims directory dfd within CLAIM_LOCK_MS (root never waits
 * without bound: a hung holder must not stall job prologs). 0, or -1 with
 * errno ETIMEDOUT. */
#define CLAIM_LOCK_MS 3000
static int dir_lock(int dfd)
{
	return syn_file_lock(dfd, CLAIM_LOCK_MS);
}

/* One field of a claim file into c; seen is a bitmask of fields so far. */
struct claim_parse {
	syn__claim_t *c;
	unsigned seen;
};

static int claim_field(const char *section, const char *key, const char *val, int line, void *arg)
{
	struct claim_parse *cp = arg;
	syn__claim_t *c = cp->c;
	uint64_t v;
	unsigned bit;

	(void)section;
	(void)line;
	if (!strcmp(key, "uid") && syn_parse_u64(val, 0, UINT32_MAX, &v) == 0) {
		c->uid = (uint32_t)v;
		bit = 1;
	} else if (!strcmp(key, "key") && syn_key_valid(val)) {
		snprintf(c->key, sizeof(c->key), "%s", val);
		bit = 2;
	} else if (!strcmp(key, "nonce") && syn__nonce_valid(val)) {
		snprintf(c->nonce, sizeof(c->nonce), "%s", val);
		bit = 4;
	} else if (!strcmp(key, "time") && syn_parse_u64(val, 0, INT64_MAX, &v) == 0) {
		c->time = (int64_t)v;
		bit = 8;
	} else if (!strcmp(key, "jobid") && syn_parse_u64(val, 1, UINT32_MAX, &v) == 0) {
		c->jobid = (uint32_t)v;
		bit = 16;
	} else if (!strcmp(key, "node") && syn_key_valid(val)) {
		snprintf(c->node, sizeof(c->node), "%s", val);
		bit = 32;
	} else {
		return -1;
	}
	cp->seen |= bit;
	return 0;
}

int syn__claim_parse(const char *text, syn__claim_t *c)
{
	struct claim_parse cp = { c, 0 };
	syn_kv_t *kv;
	int rv = -1;

	memset(c, 0, sizeof(*c));
	if (!text || strlen(text) > 1024) {
		errno = EINVAL;
		return -1;
	}
	/* The one Key=Value reader (a key twice is refused there). */
	kv = syn_kv_parse(text, "claim", 0, NULL);
	if (!kv)
		goto out;
	if (syn_kv_foreach(kv, claim_field, &cp) != 0)
		goto out;
	/* uid, key, nonce and time always; job id and node together. */
	if ((cp.seen & 15) == 15 && ((cp.seen & 48) == 0 || (cp.seen & 48) == 48))
		rv = 0;
out:
	syn_kv_destroy(kv);
	if (rv < 0) {
		memset(c, 0, sizeof(*c));
		errno = EINVAL;
	}
	return rv;
}

int syn__claim_lapsed(const syn__claim_t *c, uint64_t max_age, time_t now)
{
	/* A time ahead of the clock (clock steps, a forged file) counts as
	 * lapsed once it is further ahead than the claim could last. */
	if ((int64_t)now < c->time)
		return c->time - (int64_t)now > (int64_t)max_age;
	return (uint64_t)((int64_t)now - c->time) > max_age;
}

static int read_at(int dfd, const char *name, syn__claim_t *c)
{
	char *text = syn_file_read(dfd, name, 1024, 0, NULL);
	int rv;

	if (!text)
		return -1;
	rv = syn__claim_parse(text, c);
	free(text);
	return rv;
}

/* c as a claim file's text into text; its length, or -1 (ENAMETOOLONG). */
static int claim_text(const syn__claim_t *c, char *text, size_t len)
{
	int n;

	if (c->jobid)
		n = snprintf(text, len,
			     "uid=%" PRIu32 "\nkey=%s\nnonce=%s\ntime=%" PRId64 "\njobid=%" PRIu32
			     "\nnode=%s\n", c->uid, c->key, c->nonce, c->time, c->jobid, c->node);
	else
		n = snprintf(text, len, "uid=%" PRIu32 "\nkey=%s\nnonce=%s\ntime=%" PRId64 "\n",
			     c->uid, c->key, c->nonce, c->time);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return n;
}

/* Write c as the claim name in dfd, mode 0600, never through a link: how
 * is SYN_ATOMIC_EXCL to take a free name (EEXIST when it is not), 0 to
 * replace the claim there. 0, or -1 with errno and nothing left. */
static int claim_write(int dfd, const char *name, const syn__claim_t *c, unsigned how)
{
	char text[256];
	int n = claim_text(c, text, sizeof(text));

	if (n < 0)
		return -1;
	return syn_file_write_atomic_how(dfd, name, text, (size_t)n, 0600, how | SYN_ATOMIC_NOSYNC);
}

static int make_nonce(char *nonce)
{
	unsigned char b[SYN__NONCE_LEN / 2];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(nonce + 2 * i, 3, "%02x", b[i]);
	return 0;
}

int syn__claim_take(const char *store_dir, uint32_t uid, const char *key, uint64_t max_age,
		    time_t now, char *nonce, syn__claim_t *held)
{
	char name[SYN_KEY_MAX + 16];
	syn__claim_t c, old;
	int dfd, rv = -1, e, locked = 0;

	if (claim_name(uid, key, name, sizeof(name)) < 0 || !nonce)
		return -1;
	memset(&c, 0, sizeof(c));
	c.uid = uid;
	snprintf(c.key, sizeof(c.key), "%s", key);
	c.time = (int64_t)now;
	if (make_nonce(c.nonce) < 0)
		return -1;
	dfd = dir_open(store_dir, 1);
	if (dfd < 0)
		return -1;
	/* A free name: linked into place, so of two takers one wins. */
	if (claim_write(dfd, name, &c, SYN_ATOMIC_EXCL) == 0) {
		rv = 1;
		goto out;
	}
	if (errno != EEXIST)
		goto out;
	/* Taken: read it and decide under the lock, which every taker over
	 * and every releaser holds, so the claim cannot change meanwhile. */
	if (dir_lock(dfd) < 0)
		goto out;
	locked = 1;
	if (read_at(dfd, name, &old) == 0 && !syn__claim_lapsed(&old, max_age, now)) {
		if (held)
			*held = old;
		rv = 0;
		goto out;
	}
	/* Lapsed, released meanwhile, or not a claim (a stray file): take it. */
	if (claim_write(dfd, name, &c, 0) == 0)
		rv = 1;
out:
	if (rv == 1)
		snprintf(nonce, SYN__NONCE_LEN + 1, "%s", c.nonce);
	e = errno;
	if (locked)
		flock(dfd, LOCK_UN);
	close(dfd);
	errno = e;
	return rv;
}

int syn__claim_read(const char *store_dir, uint32_t uid, const char *key, syn__claim_t *c)
{
	char name[SYN_KEY_MAX + 16];
	int dfd, rv, e;

	if (claim_name(uid, key, name, sizeof(name)) < 0)
		return -1;
	dfd = dir_open(store_dir, 0);
	if (dfd < 0)
		return -1;
	rv = read_at(dfd, name, c);
	e = errno;
	close(dfd);
	errno = e;
	return rv;
}

/* Open the claims directory, take its lock and read the claim NAME: 1 with
 * *dfd open and locked (the caller closes it), 0 when there is nothing to
 * act on (no directory, no such claim, or an unreadable one), -1 on an
 * error (errno). */
static int open_locked_read(const char *store_dir, const char *name, int *dfd, syn__claim_t *c)
{
	int e, rv;

	*dfd = dir_open(store_dir, 0);
	if (*dfd < 0)
		return errno == ENOENT ? 0 : -1;
	if (dir_lock(*dfd) < 0)
		rv = -1;
	else if (read_at(*dfd, name, c) < 0)
		rv = errno == ENOENT || errno == EINVAL ? 0 : -1;
	else
		return 1;
	e = errno;
	close(*dfd);
	*dfd = -1;
	errno = e;
	return rv;
}

int syn__claim_renew(const char *store_dir, uint32_t uid, const char *key, const char *nonce,
		     uint32_t jobid, const char *node, time_t now)
{
	char name[SYN_KEY_MAX + 16];
	syn__claim_t c;
	int dfd, rv = -1, e;

	if (claim_name(uid, key, name, sizeof(name)) < 0 || !syn__nonce_valid(nonce) ||
	    !syn_key_valid(node) || !jobid) {
		errno = EINVAL;
		return -1;
	}
	/* The tasks of a job array share one grant, so one nonce: the first
	 * prolog binds the claim to its job, the others find it bound. The
	 * directory's lock makes that read-and-rewrite one step (prologs of
	 * one node; on NFS, flock takes the server's lock). */
	rv = open_locked_read(store_dir, name, &dfd, &c);
	if (rv <= 0)
		return rv;
	rv = -1;
	if (strcmp(c.nonce, nonce) != 0 || c.uid != uid || strcmp(c.key, key) != 0 ||
	    (c.jobid && c.jobid != jobid)) {
		rv = 0;
		goto out;
	}
	c.time = (int64_t)now;
	c.jobid = jobid;
	snprintf(c.node, sizeof(c.node), "%s", node);
	if (claim_write(dfd, name, &c, 0) < 0)
		goto out;
	rv = 1;
out:
	e = errno;
	close(dfd);
	errno = e;
	return rv;
}

int syn__claim_release(const char *store_dir, uint32_t uid, const char *key, const char *nonce)
{
	char name[SYN_KEY_MAX + 16];
	syn__claim_t c;
	int dfd, rv = -1, e;

	if (claim_name(uid, key, name, sizeof(name)) < 0 || !syn__nonce_valid(nonce)) {
		errno = EINVAL;
		return -1;
	}
	/* Under the lock: a lapsed claim taken over after our read must not
	 * be removed. */
	rv = open_locked_read(store_dir, name, &dfd, &c);
	if (rv <= 0)
		return rv;
	rv = -1;
	if (strcmp(c.nonce, nonce) != 0) {
		rv = 0;
		goto out;
	}
	if (unlinkat(dfd, name, 0) < 0)
		rv = errno == ENOENT ? 0 : -1;
	else
		rv = 1;
out:
	e = errno;
	close(dfd);
	errno = e;
	return rv;
}

int syn__claim_foreach(const char *store_dir, int (*fn)(const syn__claim_t *c, void *arg),
		       void *arg)
{
	struct dirent *d;
	DIR *dir;
	int dfd, n = 0;

	if (!fn) {
		errno = EINVAL;
		return -1;
	}
	dfd = dir_open(store_dir, 0);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return -1;
	}
	while ((d = readdir(dir))) {
		char name[SYN_KEY_MAX + 16];
		syn__claim_t c;

		if (d->d_name[0] == '.' || read_at(dirfd(dir), d->d_name, &c) < 0 ||
		    claim_name(c.uid, c.key, name, sizeof(name)) < 0 || strcmp(name, d->d_name) != 0)
			continue;
		n++;
		if (fn(&c, arg))
			break;
	}
	closedir(dir);
	return n;
}
