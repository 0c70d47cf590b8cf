/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grantauth.c: sealing and opening grants with munge, and the secrets
 * derived from them (grantauth.h).
 *
 * libmunge talks to munged over its socket; a context per call keeps the
 * functions free of shared state (job_submit runs concurrently in
 * slurmctld from Slurm 23.02 on). HMAC-SHA256 comes from OpenSSL's
 * libcrypto.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include <munge.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "plugin/shared/grantauth.h"

/* Copy [s, s + n) into buf (len bytes); -1 with ERANGE when it does not fit. */
static int copy_span(char *buf, size_t len, const char *s, size_t n)
{
	if (n >= len) {
		errno = ERANGE;
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

int syn__slurm_conf_value(const char *text, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);
	const char *p = text, *found = NULL;
	size_t flen = 0;

	if (!text || !key || !klen || !buf || !len) {
		errno = EINVAL;
		return -1;
	}
	while (*p) {
		const char *end = strchr(p, '\n'), *hash, *w;

		if (!end)
			end = p + strlen(p);
		hash = memchr(p, '#', (size_t)(end - p));
		if (!hash)
			hash = end;
		/* Words separated by blanks: "NodeName=x CPUs=4" holds two. */
		for (w = p; w < hash;) {
			const char *we;

			while (w < hash && isspace((unsigned char)*w))
				w++;
			for (we = w; we < hash && !isspace((unsigned char)*we); we++)
				;
			if ((size_t)(we - w) > klen && w[klen] == '=' && strncasecmp(w, key, klen) == 0) {
				found = w + klen + 1;
				flen = (size_t)(we - found);
			}
			w = we;
		}
		p = *end ? end + 1 : end;
	}
	if (!found) {
		errno = ENOENT;
		return -1;
	}
	return copy_span(buf, len, found, flen);
}

int syn__grantauth_parse(const char *text, syn__grantauth_t *ga, char *err, size_t errlen)
{
	char authinfo[1024];
	const char *p;

	memset(ga, 0, sizeof(*ga));
	if (syn__slurm_conf_value(text, "SlurmUser", ga->slurm_user, sizeof(ga->slurm_user)) < 0) {
		if (errno != ENOENT)
			return syn_errbuf(err, errlen, EINVAL, "slurm.conf: SlurmUser is too long");
		snprintf(ga->slurm_user, sizeof(ga->slurm_user), "root");
	}
	if (!syn_user_valid(ga->slurm_user))
		return syn_errbuf(err, errlen, EINVAL, "slurm.conf: SlurmUser '%.40s' is not an account "
				 "name", ga->slurm_user);
	if (syn__slurm_conf_value(text, "AuthType", ga->auth_type, sizeof(ga->auth_type)) < 0 &&
	    errno != ENOENT)
		return syn_errbuf(err, errlen, EINVAL, "slurm.conf: AuthType is too long");
	if (syn__slurm_conf_value(text, "PrologFlags", ga->prolog_flags,
				  sizeof(ga->prolog_flags)) < 0 && errno != ENOENT)
		return syn_errbuf(err, errlen, EINVAL, "slurm.conf: PrologFlags is too long");
	if (syn__slurm_conf_value(text, "AuthInfo", authinfo, sizeof(authinfo)) < 0) {
		if (errno != ENOENT)
			return syn_errbuf(err, errlen, EINVAL, "slurm.conf: AuthInfo is too long");
		return 0;
	}
	/* Comma-separated options; the socket is "socket=PATH". */
	for (p = authinfo; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n > 7 && strncasecmp(p, "socket=", 7) == 0) {
			if (copy_span(ga->socket, sizeof(ga->socket), p + 7, n - 7) < 0)
				return syn_errbuf(err, errlen, EINVAL, "slurm.conf: AuthInfo's socket "
						 "path is too long");
			if (!syn_path_ok(ga->socket))
				return syn_errbuf(err, errlen, EINVAL, "slurm.conf: AuthInfo's socket "
						 "'%.80s' is not an absolute path", ga->socket);
		}
	}
	return 0;
}

int syn__grantauth_load(const char *path, syn__grantauth_t *ga, char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	char *text;
	int rc;

	if (!path || !*path)
		path = getenv("SLURM_CONF");
	if (!path || !*path)
		path = "/etc/slurm/slurm.conf";
	text = syn_file_read(AT_FDCWD, path, 4 << 20, 0, NULL);
	if (!text)
		return syn_errbuf(err, errlen, errno, "%s: %s", path, strerror(errno));
	rc = syn__grantauth_parse(text, ga, err, errlen);
	free(text);
	if (rc < 0)
		return -1;
	rc = getpwnam_r(ga->slurm_user, &pw, pwbuf, sizeof(pwbuf), &res);
	if (rc != 0 || !res)
		return syn_errbuf(err, errlen, rc ? rc : ENOENT, "%s: SlurmUser '%s' has no account "
				 "here", path, ga->slurm_user);
	ga->slurm_uid = pw.pw_uid;
	return 0;
}

int syn__grantauth_prolog_alloc(const syn__grantauth_t *ga)
{
	const char *p = ga->prolog_flags;

	while (*p) {
		size_t n = strcspn(p, ",");

		if ((n == 5 && strncasecmp(p, "Alloc", 5) == 0) ||
		    (n == 7 && strncasecmp(p, "Contain", 7) == 0))
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static void to_hex(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int from_hex(const char *s, unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned hi, lo;

		if (sscanf(s + 2 * i, "%1x%1x", &hi, &lo) != 2)
			return -1;
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int random_bytes(unsigned char *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(b + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* A munge context on ga's socket, decodable by root only when seal. */
static munge_ctx_t context(const syn__grantauth_t *ga, int seal, char *err, size_t errlen)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		syn_errbuf(err, errlen, ENOMEM, "munge: no memory for a context");
		return NULL;
	}
	if (ga->socket[0] && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, ga->socket) != EMUNGE_SUCCESS) {
		syn_errbuf(err, errlen, EINVAL, "munge: socket %s: %s", ga->socket,
			  munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	if (seal && munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)0) != EMUNGE_SUCCESS) {
		syn_errbuf(err, errlen, EINVAL, "munge: cannot restrict decoding to root: %s",
			  munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

int syn__grantauth_ping(const syn__grantauth_t *ga, char *err, size_t errlen)
{
	munge_ctx_t ctx = context(ga, 0, err, errlen);
	char *cred = NULL;
	munge_err_t e;

	if (!ctx)
		return -1;
	e = munge_encode(&cred, ctx, NULL, 0);
	if (e != EMUNGE_SUCCESS)
		syn_errbuf(err, errlen, EIO, "munged%s%s: %s", ga->socket[0] ? " at " : "",
			  ga->socket, munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) :
			  munge_strerror(e));
	free(cred);
	munge_ctx_destroy(ctx);
	return e == EMUNGE_SUCCESS ? 0 : -1;
}

int syn__grant_seal(const syn__grantauth_t *ga, const char *grant, char **cred, char *err,
		    size_t errlen)
{
	unsigned char raw[SYN__SECRET_HEX / 2];
	char secret[SYN__SECRET_HEX + 1], payload[1024];
	munge_ctx_t ctx;
	munge_err_t e;
	int n;

	*cred = NULL;
	if (!grant || strstr(grant, "secret="))
		return syn_errbuf(err, errlen, EINVAL, "the grant to seal already has a secret");
	if (random_bytes(raw, sizeof(raw)) < 0)
		return syn_errbuf(err, errlen, errno, "getrandom: %s", strerror(errno));
	to_hex(raw, sizeof(raw), secret);
	n = snprintf(payload, sizeof(payload), "%s secret=%s", grant, secret);
	explicit_bzero(raw, sizeof(raw));
	explicit_bzero(secret, sizeof(secret));
	if (n < 0 || (size_t)n >= sizeof(payload)) {
		explicit_bzero(payload, sizeof(payload));
		return syn_errbuf(err, errlen, ENAMETOOLONG, "the grant is too long to seal");
	}
	ctx = context(ga, 1, err, errlen);
	if (!ctx) {
		explicit_bzero(payload, sizeof(payload));
		return -1;
	}
	e = munge_encode(cred, ctx, payload, n);
	explicit_bzero(payload, sizeof(payload));
	if (e != EMUNGE_SUCCESS) {
		syn_errbuf(err, errlen, EIO, "munge_encode%s%s: %s", ga->socket[0] ? " via " : "",
			  ga->socket, munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) :
			  munge_strerror(e));
		munge_ctx_destroy(ctx);
		free(*cred);
		*cred = NULL;
		return -1;
	}
	munge_ctx_destroy(ctx);
	return 0;
}

int syn__grant_open(const syn__grantauth_t *ga, const char *cred, uint64_t max_age, time_t now,
		    syn__jobrec_t *r, time_t *encoded, char *err, size_t errlen)
{
	char why[200];
	void *buf = NULL;
	int len = 0, rv = -1, e = EACCES;
	uid_t uid = (uid_t)-1;
	gid_t gid;
	time_t t = 0;
	munge_ctx_t ctx;
	munge_err_t me;

	memset(r, 0, sizeof(*r));
	if (!cred || !*cred || strlen(cred) > 8192)
		return syn_errbuf(err, errlen, EACCES, "not a sealed grant");
	ctx = context(ga, 0, err, errlen);
	if (!ctx)
		return -1;
	me = munge_decode(cred, ctx, &buf, &len, &uid, &gid);
	/* Expired and replayed credentials are genuine: a job waits longer
	 * than munge's TTL, and each node of a job decodes the same one. A
	 * rewound one (encoded "in the future": clocks apart) is genuine too. */
	if (me != EMUNGE_SUCCESS && me != EMUNGE_CRED_EXPIRED && me != EMUNGE_CRED_REPLAYED &&
	    me != EMUNGE_CRED_REWOUND) {
		e = me == EMUNGE_SOCKET || me == EMUNGE_TIMEOUT ? EIO : EACCES;
		syn_errbuf(err, errlen, e, "munge_decode: %s",
			  munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(me));
		goto out;
	}
	if (uid != 0 && uid != ga->slurm_uid) {
		syn_errbuf(err, errlen, EACCES, "sealed by uid %u, not by SlurmUser %s (uid %u) or "
			  "root", (unsigned)uid, ga->slurm_user, (unsigned)ga->slurm_uid);
		goto out;
	}
	if (munge_ctx_get(ctx, MUNGE_OPT_ENCODE_TIME, &t) != EMUNGE_SUCCESS) {
		syn_errbuf(err, errlen, EACCES, "munge: the credential has no encode time");
		goto out;
	}
	if (encoded)
		*encoded = t;
	if (t < now && (uint64_t)(now - t) > max_age) {
		e = ESTALE;
		syn_errbuf(err, errlen, e, "sealed %" PRIu64 " s ago, longer than GrantMaxAge=%" PRIu64,
			  (uint64_t)(now - t), max_age);
		goto out;
	}
	if (!buf || len <= 0 || memchr(buf, '\0', (size_t)len)) {
		e = EINVAL;
		syn_errbuf(err, errlen, e, "the sealed grant is empty or not text");
		goto out;
	}
	/* munge NUL-terminates the payload past len. */
	if (syn__grant_parse(buf, r, why, sizeof(why)) < 0) {
		e = EINVAL;
		syn_errbuf(err, errlen, e, "the sealed grant does not parse: %s", why);
		goto out;
	}
	if (!r->secret[0]) {
		e = EINVAL;
		syn_errbuf(err, errlen, e, "the sealed grant has no secret");
		goto out;
	}
	rv = 0;
out:
	if (buf) {
		explicit_bzero(buf, (size_t)(len > 0 ? len : 0));
		free(buf);
	}
	munge_ctx_destroy(ctx);
	if (rv < 0) {
		explicit_bzero(r, sizeof(*r));
		errno = e;
	}
	return rv;
}

int syn__peer_key(const char *secret, uint32_t jobid, uint32_t stepid,
		  char out[SYNERGY_PEER_KEY_HEX + 1])
{
	static const char label[] = "synergy peer key v1";
	unsigned char key[SYN__SECRET_HEX / 2], msg[sizeof(label) + 8], mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	int rv = -1;

	if (!syn__secret_valid(secret) || from_hex(secret, key, sizeof(key)) < 0) {
		errno = EINVAL;
		return -1;
	}
	memcpy(msg, label, sizeof(label));
	for (int i = 0; i < 4; i++) {
		msg[sizeof(label) + i] = (unsigned char)(jobid >> (24 - 8 * i));
		msg[sizeof(label) + 4 + i] = (unsigned char)(stepid >> (24 - 8 * i));
	}
	if (HMAC(EVP_sha256(), key, (int)sizeof(key), msg, sizeof(msg), mac, &maclen) &&
	    maclen >= SYNERGY_PEER_KEY_BYTES) {
		to_hex(mac, SYNERGY_PEER_KEY_BYTES, out);
		rv = 0;
	} else {
		errno = EIO;
	}
	explicit_bzero(key, sizeof(key));
	explicit_bzero(mac, sizeof(mac));
	return rv;
}
