/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inplace.c: file the profile a job measured on its first run (see
 * inplace.h). Root runs this on the node, over a file the job's user
 * wrote: every open is relative to a directory descriptor, never follows a
 * link, never blocks on a FIFO, and the report must be a regular file of
 * the job's user with one link and at most SYN__REPORT_MAX_BYTES.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/store.h"
#include "plugin/shared/claim.h"
#include "plugin/node/inplace.h"
#include "profiler/jobprofile.h"
#include "plugin/shared/jobrec.h"

int syn__inplace_report_path(const char *cache_dir, uint32_t jobid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/job_%" PRIu32 "/" SYN__REPORT_NAME, cache_dir, jobid);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * Open the job's cache directory (CacheDir must be root's and writable by
 * root only; the job's directory in it the user's or root's). -1 with
 * errno ENOENT when it is not there.
 */
static int job_dir_open(const syn__inplace_t *x)
{
	char name[32];
	struct stat st;
	int dfd, jfd = -1;

	dfd = open(x->cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(dfd);
		errno = EPERM;
		return -1;
	}
	snprintf(name, sizeof(name), "job_%" PRIu32, x->jobid);
	jfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (jfd >= 0 && (fstat(jfd, &st) < 0 || (st.st_uid != x->uid && st.st_uid != 0))) {
		close(jfd);
		errno = EPERM;
		return -1;
	}
	return jfd;
}

/*
 * Read the report from the job's directory jfd: NULL with errno ENOENT
 * when there is none; EPERM when it is not a regular file of the job's
 * user with one link; EFBIG when too large.
 */
static char *report_read(int jfd, uint32_t uid, size_t *len)
{
	struct stat st;
	char *buf;
	int fd, e;

	fd = syn_file_open(jfd, SYN__REPORT_NAME, 0);
	if (fd < 0)
		return NULL; /* ENOENT, or ELOOP for a link */
	if (fstat(fd, &st) < 0) {
		e = errno;
		buf = NULL;
	} else if (!S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1) {
		e = EPERM;
		buf = NULL;
	} else {
		buf = syn_file_read_fd(fd, SYN__REPORT_MAX_BYTES, len);
		e = errno;
	}
	close(fd);
	errno = e;
	return buf;
}

/* The GPU share the profile is normalised to: the job's allotment per GPU
 * (it ran GPU-proportional), else the node's shape per GPU. */
static void share(const syn__inplace_t *x, const syn__jobrec_t *r, double *cpus, double *mem_gb)
{
	double g = r->gpus ? r->gpus : 1;

	*cpus = 0;
	*mem_gb = 0;
	if (r->has_allotted)
		*cpus = CPU_COUNT(&r->allotted) / g;
	else if (x->node_gpus && x->node_cpus_conf)
		*cpus = (double)x->node_cpus_conf / (double)x->node_gpus;
	if (*cpus <= 0)
		*cpus = 1;
	if (r->alloc_mem_mb)
		*mem_gb = (double)r->alloc_mem_mb / g / 1024.0;
	else if (x->node_gpus && x->node_mem_mb)
		*mem_gb = (double)x->node_mem_mb / (double)x->node_gpus / 1024.0;
}

/* Build and check the profile from a parsed report; 0 or -1 with msg. */
static int build(const syn__inplace_t *x, const syn__jobrec_t *r, const syn__job_report_t *rep,
		 syn_profile_t *p, char *msg, size_t msglen)
{
	double pc, pm;
	struct tm tm;
	int lo = rep->pt[0].threads;
	char why[200];
	syn_error_t perr;

	share(x, r, &pc, &pm);
	if (syn__job_report_profile(rep, pc, pm, p, why, sizeof(why)) < 0) {
		snprintf(msg, msglen, "cannot build a profile from it: %s", why);
		return -1;
	}
	for (int i = 0; i < rep->n; i++)
		lo = rep->pt[i].threads < lo ? rep->pt[i].threads : lo;
	snprintf(p->key, sizeof(p->key), "%s", r->key);
	snprintf(p->model, sizeof(p->model),
		 "measured in place by job %" PRIu32 " on %.40s (%d down to %d threads); cpus > %d "
		 "extrapolated", x->jobid, x->node, rep->max_threads, lo, rep->max_threads);
	snprintf(p->machine, sizeof(p->machine), "%.60s, %d cpus", x->node, x->node_cpus);
	gmtime_r(&x->now, &tm);
	strftime(p->date, sizeof(p->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(p->tool, sizeof(p->tool), "spank_synergy %.40s", x->version ? x->version : "");
	p->has_owner = 1;
	p->owner = x->uid;
	if (syn_profile_check(p, &perr) < 0) {
		snprintf(msg, msglen, "the profile built from it is invalid: %s", perr.text);
		return -1;
	}
	return 0;
}

/* Write the job's profile copy into StateDir (the node agent reads it). */
static int copy_profile(const syn__inplace_t *x, const syn_profile_t *p)
{
	char name[SYN_KEY_MAX + 40], path[SYN_PATH_MAX + SYN_KEY_MAX + 48];
	syn_error_t serr;

	if (syn__jobrec_name(x->node, x->jobid, ".json", name, sizeof(name)) < 0 ||
	    snprintf(path, sizeof(path), "%s/%s", x->state_dir, name) >= (int)sizeof(path))
		return -1;
	return syn_profile_write_file(path, p, &serr);
}

int syn__inplace_collect(const syn__inplace_t *x, char *msg, size_t msglen)
{
	syn__job_report_t *rep = NULL;
	syn__report_limits_t lim;
	syn_profile_t *prof = NULL;
	syn_store_t *store = NULL;
	syn_error_t serr;
	syn__jobrec_t r;
	syn__claim_t claim;
	char err[300], why[300] = "";
	char *text = NULL;
	size_t len = 0;
	int dfd = -1, lockfd = -1, jfd = -1, rv = -1, outcome;

	if (msg && msglen)
		msg[0] = '\0';
	if (!x || !x->store_dir || !x->cache_dir || !x->state_dir || !x->node) {
		errno = EINVAL;
		return -1;
	}
	dfd = syn__state_dir_open(x->state_dir, err, sizeof(err));
	if (dfd < 0) {
		snprintf(msg, msglen, "%s", err);
		return -1;
	}
	lockfd = syn__node_lock(dfd, x->node, 5000);
	if (lockfd < 0) {
		snprintf(msg, msglen, "lock %s/%s.lock: %s", x->state_dir, x->node, strerror(errno));
		goto out;
	}
	if (syn__jobrec_read(dfd, x->node, x->jobid, &r, NULL, 0) < 0 || !r.synergy ||
	    !r.profile[0] || r.uid != x->uid) {
		rv = SYN__INPLACE_IDLE;
		goto out;
	}
	jfd = job_dir_open(x);
	if (jfd >= 0)
		text = report_read(jfd, x->uid, &len);
	if (!text && (jfd < 0 || errno == ENOENT)) {
		if (!x->final) {
			rv = SYN__INPLACE_WAIT;
			goto out;
		}
		outcome = SYN__INPLACE_NONE;
		snprintf(why, sizeof(why), "the job ended before its loader finished the CPU search "
			 "(no report): nothing filed");
		goto done;
	}
	outcome = SYN__INPLACE_REFUSED;
	if (!text) {
		snprintf(why, sizeof(why), "%s/job_%" PRIu32 "/" SYN__REPORT_NAME ": %s", x->cache_dir,
			 x->jobid, errno == EPERM ? "not a regular file of the job's user with one link" :
			 strerror(errno));
		goto done;
	}
	if (!(rep = malloc(sizeof(*rep))) || !(prof = malloc(sizeof(*prof)))) {
		snprintf(why, sizeof(why), "out of memory");
		goto done;
	}
	if (syn__job_report_parse(text, len, SYN__REPORT_NAME, rep, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "%s", err);
		goto done;
	}
	if (!rep->complete) {
		snprintf(why, sizeof(why), "the loader's CPU search was cut short (\"complete\": "
			 "false): nothing filed");
		goto done;
	}
	if (syn__claim_read(x->store_dir, x->uid, r.key, &claim) < 0 ||
	    strcmp(claim.nonce, r.profile) != 0) {
		snprintf(why, sizeof(why), "its claim on profiling %s lapsed and was taken over (or "
			 "removed): nothing filed", r.key);
		goto done;
	}
	memset(&lim, 0, sizeof(lim));
	lim.max_cpus = x->node_cpus;
	lim.max_elapsed = x->now > claim.time ? (double)(x->now - claim.time) + 2 : 2;
	lim.require_complete = 1;
	if (syn__job_report_check(rep, &lim, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "refused: %s", err);
		goto done;
	}
	if (build(x, &r, rep, prof, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "%s", err);
		goto done;
	}
	store = syn_store_create(x->store_dir, 0, &serr);
	if (!store || syn_store_put_owned(store, prof, &serr) < 0) {
		snprintf(why, sizeof(why), "cannot file it: %s", serr.text);
		goto done;
	}
	if (copy_profile(x, prof) < 0)
		snprintf(err, sizeof(err), "; its copy in StateDir failed (%s): no grants for it",
			 strerror(errno));
	else
		err[0] = '\0';
	outcome = SYN__INPLACE_FILED;
	snprintf(why, sizeof(why), "filed profile %s for uid %" PRIu32 " (%d points, %d down to "
		 "%d threads, search %.1f s; %.2fx its share at %d cpus)%s", r.key, x->uid, rep->n,
		 rep->max_threads, rep->pt[rep->n - 1].threads, rep->elapsed,
		 syn_profile_eval(prof, rep->max_threads / (double)(r.gpus ? r.gpus : 1),
				  prof->prop_mem_gb), rep->max_threads, err);
done:
	/* Whatever came of it, this job's profiling is over: the record
	 * loses its nonce (later steps train normally), the report goes, the
	 * claim is released. */
	if (jfd >= 0)
		unlinkat(jfd, SYN__REPORT_NAME, 0);
	syn__claim_release(x->store_dir, x->uid, r.key, r.profile);
	r.profile[0] = '\0';
	err[0] = '\0';
	if (syn__jobrec_write(dfd, x->node, x->jobid, &r) < 0)
		snprintf(err, sizeof(err), "; cannot update its record: %s", strerror(errno));
	snprintf(msg, msglen, "%s%s", why, err);
	rv = outcome;
out:
	if (jfd >= 0)
		close(jfd);
	if (lockfd >= 0)
		close(lockfd);
	if (dfd >= 0)
		close(dfd);
	syn_store_destroy(store);
	free(text);
	free(rep);
	free(prof);
	return rv;
}
