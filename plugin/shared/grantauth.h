/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grantauth.h: the grant job_submit seals and the node opens, and the
 * secrets derived from it.
 *
 * Why a seal. The node acts on a grant (jobrec.h) that it finds in its
 * prolog's SPANK environment. Which environment a prolog sees depends on
 * Slurm's version, PrologFlags and the launch path: without
 * PrologFlags=Alloc a job's first srun can hand the prolog SPANK variables
 * of the user's choosing (srun forwards SLURM_SPANK_*). So the node trusts
 * no grant it cannot prove job_submit made: job_submit (in slurmctld, as
 * SlurmUser) seals the grant into a munge credential whose payload is the
 * grant's text with a fresh job secret, decodable by root only and
 * encrypted on the way; the prolog (root) decodes it through munged and
 * takes it only when SlurmUser (or root) encoded it, then parses the
 * payload as a grant (syn__grant_parse: no field only the node writes).
 * munge is what the cluster already trusts: Slurm authenticates every
 * message with it.
 *
 * What the seal proves, and what it cannot. It proves that the grant's text
 * is one job_submit made, for a job of the grant's uid (the prolog checks
 * that uid against the job's owner). It cannot name the job id: job_submit
 * runs before Slurm assigns one. A user could therefore move a grant made
 * for one of their own jobs into another of their own jobs. What that can
 * gain is bounded: the node takes a job's CPUs and memory from what Slurm
 * allotted it (its cgroups, S_JOB_ALLOC_MEM), never from the grant (whose
 * figures synergyd may have lowered since), so the grant only labels the
 * job with a key, which orders what the node lends among jobs, and caps
 * its cache inside its own allotment. munge credentials expire (munged's TTL, 300 s by
 * default) long before a queued job starts, and every node of a job and
 * every task of an array decodes the same one: an expired or replayed
 * credential is still taken, up to GrantMaxAge seconds after job_submit
 * encoded it (a credential munge could not verify is never taken).
 *
 * The job secret: 32 random bytes made at the seal, kept by the node in the
 * job's record (StateDir, root only). Each step's peer key
 * (SYNERGY_PEER_KEY, synergy_env.h) is derived from it, so that every node
 * of the step derives the same key without talking to the others, and no
 * one without the job's grant can.
 *
 * Where munged is: the socket= option of slurm.conf's AuthInfo, as Slurm
 * itself finds it (libmunge's default socket otherwise); SlurmUser:
 * slurm.conf's SlurmUser (default root).
 */
#ifndef SYN_PLUGIN_GRANTAUTH_H
#define SYN_PLUGIN_GRANTAUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "synergy_env.h"
#include "plugin/shared/jobrec.h"
#include "plugin/shared/util.h"

/* Default of synergy.conf's GrantMaxAge: 30 days, in seconds. */
#define SYN__GRANT_MAX_AGE_DEFAULT (30ULL * 24 * 3600)

/* What the seal and its check need from slurm.conf. */
typedef struct syn__grantauth {
	char socket[SYN_PATH_MAX];   /* munged's socket ("": libmunge's default) */
	char slurm_user[33];          /* SlurmUser ("root" when slurm.conf names none) */
	uid_t slurm_uid;              /* its uid (syn__grantauth_load) */
	char auth_type[64];           /* AuthType ("": Slurm's default, auth/munge) */
	char prolog_flags[256];       /* PrologFlags ("": none) */
} syn__grantauth_t;

/*
 * The value of key in slurm.conf text (the last "Key=Value" word of that
 * key on any line, keys compared case-insensitively, '#' comments
 * ignored), copied into buf (len bytes). Returns 0, or -1 with errno
 * ENOENT (absent) or ERANGE (longer than buf). Pure.
 */
int syn__slurm_conf_value(const char *text, const char *key, char *buf, size_t len);

/*
 * Fill ga from slurm.conf text, without resolving SlurmUser's uid: the
 * socket of AuthInfo (its "socket=PATH" option, an absolute path), the
 * other keys as they are. Returns 0, or -1 with errno EINVAL and why in err
 * (a relative or overlong socket path, an implausible SlurmUser). Pure.
 */
int syn__grantauth_parse(const char *text, syn__grantauth_t *ga, char *err, size_t errlen);

/*
 * The same from the slurm.conf at path (NULL: $SLURM_CONF, else
 * /etc/slurm/slurm.conf), and SlurmUser's uid from the password database.
 * Returns 0, or -1 with errno and why in err.
 */
int syn__grantauth_load(const char *path, syn__grantauth_t *ga, char *err, size_t errlen);

/* 1 if PrologFlags in ga makes Slurm run the prolog when it allocates the
 * job (Alloc, or Contain, which implies it): the prolog's SPANK environment
 * is then the job's record at slurmctld. */
int syn__grantauth_prolog_alloc(const syn__grantauth_t *ga);

/* 0 if munged answers on ga's socket (a credential can be made), else -1
 * with errno and why in err. */
int syn__grantauth_ping(const syn__grantauth_t *ga, char *err, size_t errlen);

/*
 * Seal grant (syn__grant_format's text, without a secret) for the node: a
 * munge credential, decodable by root only, of the grant with " secret=S"
 * appended (S: SYN__SECRET_HEX random hex digits). *cred is malloc'ed; the
 * caller frees it. Returns 0, or -1 with errno and why in err (munged not
 * reachable, ...).
 */
int syn__grant_seal(const syn__grantauth_t *ga, const char *grant, char **cred, char *err,
		    size_t errlen);

/*
 * Open a sealed grant into r (syn__grant_parse of its payload): the
 * credential must be valid (expired or replayed is fine), encoded by
 * SlurmUser or root, at most max_age seconds before now, and its payload a
 * grant with a secret. *encoded (when not NULL) gets the encode time.
 * Returns 0, or -1 with errno EACCES (not a credential of SlurmUser's or
 * root's, or one munge refuses), ESTALE (older than max_age), EINVAL (the
 * payload is no grant) or that of a failed call, and why in err; r is then
 * zeroed.
 */
int syn__grant_open(const syn__grantauth_t *ga, const char *cred, uint64_t max_age, time_t now,
		    syn__jobrec_t *r, time_t *encoded, char *err, size_t errlen);

/*
 * The peer key of step stepid of job jobid (synergy_env.h,
 * SYNERGY_PEER_KEY): HMAC-SHA256 under the job's secret (hex, as in the
 * record) of a fixed label, the job id and the step id, as
 * SYNERGY_PEER_KEY_HEX lowercase hex digits into out (SYNERGY_PEER_KEY_HEX
 * + 1 bytes). Returns 0, or -1 with errno EINVAL (not a secret).
 */
int syn__peer_key(const char *secret, uint32_t jobid, uint32_t stepid,
		  char out[SYNERGY_PEER_KEY_HEX + 1]);

#endif
