/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grant.c: follow the job's cache grant file (see grant.h).
 *
 * The thread sleeps on a condition variable with a CLOCK_MONOTONIC
 * deadline, so coordl__grant_stop() wakes it at once. Problems are not
 * logged (a library never logs): the first one is kept as a note the
 * program can read, published with a release store so that readers need
 * no lock.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "grant.h"
#include "synergy_env.h"

struct coordl__grant {
	coordl__cache_t *cache;
	char *path;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int has_note;        /* atomic: note is written */
	char note[200];
};

int coordl__grant_parse(const char *text, size_t len, uint64_t *bytes)
{
	uint64_t v = 0;
	size_t n = 0;

	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0 || len > 19) {
		errno = len == 0 ? EINVAL : ERANGE;
		return -1;
	}
	for (; n < len; n++) {
		if (text[n] < '0' || text[n] > '9') {
			errno = EINVAL;
			return -1;
		}
		v = v * 10 + (uint64_t)(text[n] - '0');
	}
	if (v > (uint64_t)INT64_MAX) {
		errno = ERANGE;
		return -1;
	}
	*bytes = v;
	return 0;
}

int coordl__grant_read(const char *path, uint64_t *bytes, char *why, size_t whylen)
{
	char buf[32];
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, rv = -1, e = 0;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		e = errno;
		snprintf(why, whylen, "%s", strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(why, whylen, "fstat: %s", strerror(e));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		e = EINVAL;
		snprintf(why, whylen, "not a regular file");
		goto out;
	}
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			snprintf(why, whylen, "read: %s", strerror(e));
			goto out;
		}
		got += (size_t)n;
	}
	if (coordl__grant_parse(buf, got, bytes) < 0) {
		e = errno;
		snprintf(why, whylen, "expected decimal bytes (1..19 digits) and an optional newline");
		goto out;
	}
	rv = 0;
out:
	close(fd);
	errno = e;
	return rv;
}

/* Keep the first problem (only this thread writes the note). */
static void note(coordl__grant_t *g, const char *why)
{
	if (__atomic_load_n(&g->has_note, __ATOMIC_ACQUIRE))
		return;
	snprintf(g->note, sizeof(g->note), "%s=%.100s: %s", SYNERGY_ENV_CACHE_GRANT, g->path, why);
	__atomic_store_n(&g->has_note, 1, __ATOMIC_RELEASE);
}

static void *grant_main(void *arg)
{
	coordl__grant_t *g = arg;
	struct timespec ts;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		uint64_t v;
		char why[128], text[160];

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)(COORDL__GRANT_PERIOD * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!g->stop && pthread_cond_timedwait(&g->cv, &g->mu, &ts) != ETIMEDOUT)
			;
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->mu);
		if (coordl__grant_read(g->path, &v, why, sizeof(why)) < 0) {
			snprintf(text, sizeof(text), "%s: the cache keeps its bound", why);
			note(g, text);
		} else if (coordl__cache_set_bound(g->cache, v) < 0) {
			snprintf(text, sizeof(text), "cannot apply %llu bytes: %s", (unsigned long long)v,
				 strerror(errno));
			note(g, text);
		}
		pthread_mutex_lock(&g->mu);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

coordl__grant_t *coordl__grant_start(const char *path, coordl__cache_t *c)
{
	coordl__grant_t *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;
	int e;

	if (!g)
		return NULL;
	if (!(g->path = strdup(path))) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	g->cache = c;
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((e = pthread_create(&g->thr, NULL, grant_main, g)) != 0) {
		pthread_cond_destroy(&g->cv);
		pthread_mutex_destroy(&g->mu);
		free(g->path);
		free(g);
		errno = e;
		return NULL;
	}
	return g;
}

void coordl__grant_stop(coordl__grant_t *g)
{
	int e = errno;

	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->thr, NULL);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g->path);
	free(g);
	errno = e;
}

const char *coordl__grant_note(const coordl__grant_t *g)
{
	if (!g || !__atomic_load_n(&g->has_note, __ATOMIC_ACQUIRE))
		return NULL;
	return g->note;
}
