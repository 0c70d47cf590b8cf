/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * claim.h: one in-flight profiling per key and user (profile on first run).
 *
 * The first job of a key with no profile for its user profiles itself in
 * place (spank-synergy(8)). So that two first jobs of the key starting at
 * once do not both sweep (and compete for the node's idle cores), the first
 * one submitted takes a claim and only the job holding the claim profiles;
 * the others run GPU-proportional. A claim is a small file in the profile
 * store, which the controller (job_submit, synergyd) and the nodes (prolog,
 * slurmstepd, epilog: root) share:
 *
 *   <ProfileStore>/claims/<uid>.<key>     "uid=U\nkey=K\nnonce=N\ntime=T\n"
 *                                         [+ "jobid=J\nnode=NODE\n"]
 *
 * job_submit takes it (syn__claim_take) and puts its random nonce into the
 * job's grant; the job's prolog renews it (time, job id, node) if it still
 * holds that nonce; whoever ends the job's profiling (the node filing its
 * profile, or the epilog of a job that ended without one) releases it. A
 * claim older than ProfileClaimMaxAge seconds (from its taking or its last
 * renewal) has lapsed: the next first job takes it over, and the job whose
 * claim lapsed no longer profiles (its prolog, its node and its epilog all
 * check the nonce). synergyd removes the claims of jobs that ended without
 * running (cancelled while pending), so a lapse is only the last resort
 * (a node that died with its job). Claims are per user because a profile
 * measured in a user's job is only used for that user's jobs.
 *
 * Claim files are parsed strictly and never followed if links. The claims
 * directory is its owner's (SlurmUser) and root's only, mode 0700, its
 * files 0600: a nonce is a capability, and a user who could open the
 * directory could hold its lock; root waits for that lock a bounded time
 * (a few seconds, then ETIMEDOUT). Nothing here logs; errors are -1 with
 * errno.
 */
#ifndef SYN_PLUGIN_CLAIM_H
#define SYN_PLUGIN_CLAIM_H

#include <stdint.h>
#include <time.h>

#include "plugin/shared/jobrec.h"
#include "plugin/shared/util.h"

/* The claims' directory under ProfileStore. */
#define SYN__CLAIM_DIR "claims"

typedef struct syn__claim {
	uint32_t uid;
	char key[SYN_KEY_MAX + 1];
	char nonce[SYN__NONCE_LEN + 1];
	int64_t time;                 /* taken or last renewed (seconds since the epoch) */
	uint32_t jobid;               /* 0 until the job's prolog renewed it */
	char node[SYN_KEY_MAX + 1];  /* "" until then */
} syn__claim_t;

/* Parse a claim file's text strictly. 0, or -1 with EINVAL. */
int syn__claim_parse(const char *text, syn__claim_t *c);

/* 1 if c has lapsed at time now (older than max_age seconds, or from the future). */
int syn__claim_lapsed(const syn__claim_t *c, uint64_t max_age, time_t now);

/*
 * Take the claim of (uid, key) in the store at store_dir (its claims
 * directory made if missing): when there is none, or the one there has
 * lapsed (it is replaced). A fresh random nonce goes to nonce (size
 * SYN__NONCE_LEN + 1). Returns 1 when taken, 0 when a live claim holds it
 * (copied to *held when not NULL), or -1 with errno.
 */
int syn__claim_take(const char *store_dir, uint32_t uid, const char *key, uint64_t max_age,
		    time_t now, char *nonce, syn__claim_t *held);

/* Read the claim of (uid, key). 0, or -1 with errno (ENOENT: none). */
int syn__claim_read(const char *store_dir, uint32_t uid, const char *key, syn__claim_t *c);

/*
 * The job's prolog: if the claim of (uid, key) holds nonce and no other job
 * (a job array's tasks share one nonce), rewrite it with time now, jobid and
 * node. Returns 1 when renewed, 0 when the claim is gone, another's (lapsed
 * and taken over) or bound to another job, -1 with errno.
 */
int syn__claim_renew(const char *store_dir, uint32_t uid, const char *key, const char *nonce,
		     uint32_t jobid, const char *node, time_t now);

/* Remove the claim of (uid, key) if it holds nonce. 1 removed, 0 not
 * there or another's, -1 with errno. */
int syn__claim_release(const char *store_dir, uint32_t uid, const char *key, const char *nonce);

/*
 * Call fn for every claim in the store's claims directory (parsed; files
 * that are not claims are skipped). Stops when fn returns non-zero.
 * Returns the number visited, or -1 with errno (0 when there is no
 * claims directory).
 */
int syn__claim_foreach(const char *store_dir, int (*fn)(const syn__claim_t *c, void *arg),
		       void *arg);

#endif
