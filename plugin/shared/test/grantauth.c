/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grantauth.t: the grant sealed by job_submit and opened by the node
 * (plugin/grantauth.c), and the grant parser that refuses what only the
 * node writes (plugin/jobrec.c). The munge part runs against a private
 * munged started here (skipped where munged is not installed); decoding a
 * grant needs root (grants are decodable by root only), so that part is
 * skipped for other users.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <munge.h>

#include "tests/tap.h"
#include "plugin/shared/grantauth.h"
#include "plugin/shared/jobrec.h"

#define GRANT "key=img uid=1000 gpus=1 cpus=4 mem_mb=8192 cache_mb=4096 want_cpus=6 " \
	      "want_cache_mb=6144"

static char dir[64];
static pid_t munged_pid = -1;

static void test_conf_value(void)
{
	static const char conf[] =
		"# slurm.conf\n"
		"SlurmUser=slurm # the daemons' account\n"
		"AuthType=auth/munge\n"
		"AuthInfo=cred_expire=600,socket=/run/x/munge.sock\n"
		"NodeName=n1 CPUs=4 RealMemory=4096\n"
		"PrologFlags=Contain,X11\n"
		"slurmuser=late\n";
	syn__grantauth_t ga;
	char buf[64], err[200];

	ok(syn__slurm_conf_value(conf, "SLURMUSER", buf, sizeof(buf)) == 0 &&
	   strcmp(buf, "late") == 0, "a key's last value, case-insensitive: %s", buf);
	ok(syn__slurm_conf_value(conf, "CPUs", buf, sizeof(buf)) == 0 && strcmp(buf, "4") == 0,
	   "a word of a NodeName line");
	ok(syn__slurm_conf_value(conf, "Nope", buf, sizeof(buf)) == -1 && errno == ENOENT,
	   "absent: ENOENT");
	ok(syn__slurm_conf_value(conf, "AuthInfo", buf, 8) == -1 && errno == ERANGE,
	   "too long for the buffer: ERANGE");
	ok(syn__slurm_conf_value("#SlurmUser=x\nX=1 # SlurmUser=y\n", "SlurmUser", buf,
				 sizeof(buf)) == -1 && errno == ENOENT, "comments are not read");
	ok(syn__grantauth_parse(conf, &ga, err, sizeof(err)) == 0 &&
	   strcmp(ga.socket, "/run/x/munge.sock") == 0 && strcmp(ga.slurm_user, "late") == 0 &&
	   strcmp(ga.auth_type, "auth/munge") == 0, "AuthInfo's socket and SlurmUser: %s %s",
	   ga.socket, ga.slurm_user);
	ok(syn__grantauth_prolog_alloc(&ga), "PrologFlags=Contain runs the prolog at allocation");
	ok(syn__grantauth_parse("AuthType=auth/munge\n", &ga, err, sizeof(err)) == 0 &&
	   strcmp(ga.slurm_user, "root") == 0 && !ga.socket[0] && !syn__grantauth_prolog_alloc(&ga),
	   "defaults: SlurmUser root, libmunge's socket, no PrologFlags");
	ok(syn__grantauth_parse("PrologFlags=NoHold,Alloc\n", &ga, err, sizeof(err)) == 0 &&
	   syn__grantauth_prolog_alloc(&ga), "PrologFlags=Alloc found in a list");
	ok(syn__grantauth_parse("PrologFlags=Allocx\n", &ga, err, sizeof(err)) == 0 &&
	   !syn__grantauth_prolog_alloc(&ga), "Allocx is not Alloc");
	ok(syn__grantauth_parse("AuthInfo=socket=run/munge\n", &ga, err, sizeof(err)) == -1 &&
	   strstr(err, "absolute"), "a relative socket is refused: %s", err);
	ok(syn__grantauth_parse("SlurmUser=$(reboot)\n", &ga, err, sizeof(err)) == -1 &&
	   strstr(err, "SlurmUser"), "an implausible SlurmUser is refused: %s", err);
}

static void test_grant_parse(void)
{
	static const char *const node_only[] = {
		GRANT " allotted=0-7", GRANT " alloc_mem_mb=1048576", GRANT " hold_cache_mb=99",
		GRANT " cpu_ns=1 cpu_at_ns=2", GRANT " spare_milli=5", GRANT " harvest=1",
	};
	syn__jobrec_t r;
	char err[200];

	ok(syn__grant_parse(GRANT, &r, err, sizeof(err)) == 0 && r.synergy && r.cpus == 4,
	   "a grant parses");
	for (size_t i = 0; i < sizeof(node_only) / sizeof(node_only[0]); i++)
		ok(syn__grant_parse(node_only[i], &r, err, sizeof(err)) == -1 && errno == EINVAL &&
		   strstr(err, "never in a grant") && !r.synergy,
		   "a field only the node writes is refused in a grant: %s", err);
	ok(syn__jobrec_parse(GRANT " allotted=0-7 alloc_mem_mb=1024", &r, err, sizeof(err)) == 0,
	   "... and still read in a record");
	ok(syn__grant_parse("allotted=0-7", &r, err, sizeof(err)) == -1,
	   "a bare record is no grant");
	ok(syn__grant_parse(GRANT " secret=0123", &r, err, sizeof(err)) == -1 &&
	   strstr(err, "secret"), "a short secret is refused");
	ok(syn__grant_parse(GRANT " secret=000102030405060708090a0b0c0d0e0f101112131415161718191a"
			    "1b1c1d1e1f", &r, err, sizeof(err)) == 0 && strlen(r.secret) == 64,
	   "a grant with its secret parses");
}

static void test_peer_key(void)
{
	static const char secret[] =
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
	char a[SYNERGY_PEER_KEY_HEX + 1], b[SYNERGY_PEER_KEY_HEX + 1];

	/* HMAC-SHA256(secret, "synergy peer key v1\0" job step, big-endian),
	 * computed independently (Python's hmac). */
	ok(syn__peer_key(secret, 42, 7, a) == 0 &&
	   strcmp(a, "4e4fe0c58b442c8b4c6d3f37cccdc92f65a7b7f34f49b8e9b8ff1ed60430e023") == 0,
	   "the peer key is HMAC-SHA256 of the job's secret: %s", a);
	ok(syn__peer_key(secret, 42, 8, b) == 0 && strcmp(a, b) != 0, "another step, another key");
	ok(syn__peer_key(secret, 43, 7, b) == 0 && strcmp(a, b) != 0, "another job, another key");
	ok(syn__peer_key("0011", 42, 7, b) == -1 && errno == EINVAL, "a malformed secret: EINVAL");
	ok(syn__peer_key("", 42, 7, b) == -1 && errno == EINVAL, "no secret: EINVAL");
}

static void stop_munged(void)
{
	if (munged_pid > 0) {
		kill(munged_pid, SIGTERM);
		waitpid(munged_pid, NULL, 0);
		munged_pid = -1;
	}
}

/* A private munged under dir; 0 when it answers. */
static int start_munged(syn__grantauth_t *ga)
{
	char key[100], sock[100], log[100], pid[100], seed[100], cmd[400];
	FILE *f;

	snprintf(key, sizeof(key), "%s/munge.key", dir);
	snprintf(sock, sizeof(sock), "%s/munge.sock", dir);
	snprintf(log, sizeof(log), "%s/munged.log", dir);
	snprintf(pid, sizeof(pid), "%s/munged.pid", dir);
	snprintf(seed, sizeof(seed), "%s/munge.seed", dir);
	snprintf(cmd, sizeof(cmd), "dd if=/dev/urandom of=%s bs=1024 count=1 status=none && "
		 "chmod 0400 %s", key, key);
	if (system(cmd) != 0)
		return -1;
	munged_pid = fork();
	if (munged_pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execl("/usr/sbin/munged", "munged", "--foreground", "--force", "--socket", sock,
		      "--key-file", key, "--log-file", log, "--pid-file", pid, "--seed-file", seed,
		      (char *)NULL);
		_exit(127);
	}
	if (munged_pid < 0)
		return -1;
	memset(ga, 0, sizeof(*ga));
	snprintf(ga->socket, sizeof(ga->socket), "%s", sock);
	snprintf(ga->slurm_user, sizeof(ga->slurm_user), "slurm");
	for (int i = 0; i < 100; i++) {
		struct timespec t = { 0, 50 * 1000 * 1000 };
		char *cred = NULL;
		munge_ctx_t ctx = munge_ctx_create();

		munge_ctx_set(ctx, MUNGE_OPT_SOCKET, sock);
		if (munge_encode(&cred, ctx, NULL, 0) == EMUNGE_SUCCESS) {
			free(cred);
			munge_ctx_destroy(ctx);
			return 0;
		}
		munge_ctx_destroy(ctx);
		nanosleep(&t, NULL);
	}
	f = fopen(log, "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f))
			diag("munged: %s", line);
		fclose(f);
	}
	return -1;
}

/* A credential of payload encoded by uid (a child that drops to it when
 * uid differs from ours), with ttl seconds; malloc'ed, or NULL. */
static char *encode_as(const syn__grantauth_t *ga, uid_t uid, const char *payload, int ttl)
{
	int fds[2];
	char buf[8192];
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return NULL;
	pid = fork();
	if (pid == 0) {
		munge_ctx_t ctx = munge_ctx_create();
		char *cred = NULL;

		close(fds[0]);
		if (uid != geteuid() && (setgid(65534) < 0 || setuid(uid) < 0))
			_exit(1);
		munge_ctx_set(ctx, MUNGE_OPT_SOCKET, ga->socket);
		munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)0);
		if (ttl)
			munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl);
		if (munge_encode(&cred, ctx, payload, (int)strlen(payload)) != EMUNGE_SUCCESS)
			_exit(2);
		if (write(fds[1], cred, strlen(cred)) < 0)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	if (got <= 0)
		return NULL;
	buf[got] = '\0';
	return strdup(buf);
}

#define SECRET "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define NMUNGE 14

static void test_munge(void)
{
	syn__grantauth_t ga;
	syn__jobrec_t r;
	char err[300], *cred = NULL, *c2;
	time_t enc = 0, now = time(NULL);

	if (access("/usr/sbin/munged", X_OK) != 0) {
		skip(NMUNGE, "munged is not installed");
		return;
	}
	if (start_munged(&ga) < 0) {
		ok(0, "a private munged starts");
		skip(NMUNGE - 1, "no munged");
		return;
	}
	ok(1, "a private munged starts");
	ok(syn__grant_seal(&ga, GRANT, &cred, err, sizeof(err)) == 0 && cred &&
	   !strstr(cred, "img"), "job_submit seals a grant; its text is not readable in it");
	ok(syn__grant_seal(&ga, GRANT " secret=" SECRET, &c2, err, sizeof(err)) == -1 && !c2,
	   "a grant that has a secret already is not sealed");
	if (geteuid() != 0) {
		ok(syn__grant_open(&ga, cred, 3600, now, &r, NULL, err, sizeof(err)) == -1 &&
		   errno == EACCES && !r.synergy,
		   "only root can open a sealed grant: %s", err);
		skip(NMUNGE - 4, "opening grants needs root");
		free(cred);
		stop_munged();
		return;
	}
	ga.slurm_uid = 4242; /* SlurmUser: someone else; root is taken too */
	ok(syn__grant_open(&ga, cred, 3600, now, &r, &enc, err, sizeof(err)) == 0 && r.synergy &&
	   r.cpus == 4 && strlen(r.secret) == 64 && enc >= now - 5 && enc <= now + 5,
	   "the node opens it");
	ok(syn__grant_open(&ga, cred, 3600, now, &r, NULL, err, sizeof(err)) == 0,
	   "a replayed credential is taken (every node of a job decodes it)");
	/* from the credential's own time: the seal may fall in a later second than now */
	ok(syn__grant_open(&ga, cred, 60, enc + 61, &r, NULL, err, sizeof(err)) == -1 &&
	   errno == ESTALE && !r.synergy, "older than GrantMaxAge: refused (%s)", err);
	ok(syn__grant_open(&ga, GRANT " secret=" SECRET, 3600, now, &r, NULL, err, sizeof(err)) ==
		   -1 && errno == EACCES && !r.synergy,
	   "a grant in plain text (what a user can forge) is refused: %s", err);
	c2 = strdup(cred);
	c2[strlen(c2) / 2] = c2[strlen(c2) / 2] == 'A' ? 'B' : 'A';
	ok(syn__grant_open(&ga, c2, 3600, now, &r, NULL, err, sizeof(err)) == -1 &&
	   errno == EACCES && !r.synergy, "an altered credential is refused: %s", err);
	free(c2);
	free(cred);

	/* What another user could seal: a valid credential, but not SlurmUser's. */
	c2 = encode_as(&ga, 65534, GRANT " secret=" SECRET, 0);
	ok(c2 && syn__grant_open(&ga, c2, 3600, now, &r, NULL, err, sizeof(err)) == -1 &&
	   errno == EACCES && strstr(err, "not by SlurmUser"),
	   "a credential of another user is refused: %s", err);
	free(c2);
	ga.slurm_uid = 65534;
	c2 = encode_as(&ga, 65534, GRANT " secret=" SECRET, 0);
	ok(c2 && syn__grant_open(&ga, c2, 3600, now, &r, NULL, err, sizeof(err)) == 0 &&
	   r.synergy, "SlurmUser's credential is taken");
	free(c2);
	/* Sealed by SlurmUser, but holding what only the node writes. */
	c2 = encode_as(&ga, 65534, GRANT " allotted=0-7 secret=" SECRET, 0);
	ok(c2 && syn__grant_open(&ga, c2, 3600, now, &r, NULL, err, sizeof(err)) == -1 &&
	   errno == EINVAL && !r.synergy, "a sealed record field is refused: %s", err);
	free(c2);
	c2 = encode_as(&ga, 65534, GRANT, 0);
	ok(c2 && syn__grant_open(&ga, c2, 3600, now, &r, NULL, err, sizeof(err)) == -1 &&
	   errno == EINVAL && strstr(err, "secret"), "a sealed grant without a secret is refused");
	free(c2);
	/* munge's TTL is not the grant's: a job waits longer in the queue. */
	c2 = encode_as(&ga, 65534, GRANT " secret=" SECRET, 1);
	sleep(2);
	ok(c2 && syn__grant_open(&ga, c2, 3600, time(NULL), &r, NULL, err, sizeof(err)) == 0,
	   "an expired credential within GrantMaxAge is taken");
	free(c2);
	snprintf(ga.socket, sizeof(ga.socket), "%s/nowhere.sock", dir);
	ok(syn__grant_seal(&ga, GRANT, &cred, err, sizeof(err)) == -1 && !cred &&
	   strstr(err, "nowhere"), "without munged nothing is sealed: %s", err);
	stop_munged();
}

int main(void)
{
	char cmd[300];

	snprintf(dir, sizeof(dir), "/tmp/grantauth.t.XXXXXX");
	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	chmod(dir, 0755);
	test_conf_value();
	test_grant_parse();
	test_peer_key();
	test_munge();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	return done_testing();
}
