/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_jobscript.c: the Synergy SPANK plugin in slurmd (root): at slurmd's
 * start, and in the job prolog and epilog it runs for each job on the node.
 *
 * slurmd start: make CacheDir safe. Its default, /dev/shm/synergy, lies in
 * a world-writable directory, where any user could have created it first
 * (or a link by that name) to make every later Synergy job on the node fall
 * back; so a CacheDir that is not a root-owned directory writable by root
 * only is replaced, atomically, by a new one (the old one moved aside), and
 * the prolog checks it again.
 *
 * Prolog: the grant job_submit decided reaches the node only here, as
 * SPANK_SYNERGY_GRANT in the prolog's environment (jobrec.h), sealed by
 * job_submit with munge (grantauth.h): it is opened and checked (sealed by
 * SlurmUser, not older than GrantMaxAge, grant fields only) and checked
 * against the job (its owner), the job's profile is copied from the store
 * into StateDir (for a job on several nodes, the profile of the union of
 * its nodes' caches, as job_submit sized it), the cache grant is clamped to what CacheDir's filesystem
 * can hold beside the other jobs' grants on the node, and the job's record
 * and cache directory are made. Without a valid grant nothing is made and
 * the job runs GPU-proportional.
 *
 * A job of a coordinated-prep group (jobrec.h) also gets its group's
 * directory on the node, GroupDir/<node>.group_<group>, made or taken over
 * (syn__group_join): the job's user's, mode 0700. A named group (from the
 * grant) joins here; a job array's task joins at its first step, where
 * slurmstepd knows the array job id (spank_remote.c).
 *
 * The record also keeps the job's SLUID when slurmd hands the prolog one
 * (SLURM_JOB_SLUID, Slurm 25.11+, in the prolog's own environment, which
 * slurmd builds, not the user): Slurm 26.05 names the job's cgroup by it
 * (jobrec.h, cgroup.h).
 *
 * Epilog: removes the job's synergy cgroup (v1; a leftover child blocks
 * Slurm's own cleanup), its cache directory and its record, and lends the
 * CPUs it held to the jobs still running; then, under the node's lock, the
 * directory of every group of the node that no record names any more (the
 * group's last job here ended; also what a crashed job left behind).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "synergy_policy.h"
#include "common/store.h"
#include "plugin/shared/claim.h"
#include "plugin/shared/grantauth.h"
#include "plugin/node/inplace.h"
#include "plugin/node/lend.h"
#include "plugin/slurm/spank_int.h"

#define conf syn__spank_conf

/* 1 if fd is a directory owned by root that nobody else can write. */
static int safe_dir(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Put a fresh root-owned directory (mode 0755) in place of dir, atomically:
 * it is made under a random name beside dir, then renamed onto dir with
 * RENAME_NOREPLACE (dir missing) or exchanged with whatever is there
 * (RENAME_EXCHANGE), which then holds the random name and is renamed to
 * "<dir>.unsafe.<time>.<pid>" for the admin to look at. No window is left in
 * which a user could make dir again: a user who keeps recreating it can no
 * longer keep Synergy off. In a sticky directory such as /dev/shm nobody
 * else can then move or remove it. Returns 0, or -1 (logged).
 */
static int root_dir_replace(const char *dir, const char *name)
{
	char tmp[SYN_PATH_MAX + 16], aside[SYN_PATH_MAX + 64];
	int tries;

	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", dir);
	if (!mkdtemp(tmp) || chmod(tmp, 0755) < 0) {
		slurm_error("synergy: %s %s: cannot make a directory beside it: %m", name, dir);
		return -1;
	}
	for (tries = 0; tries < 4; tries++) {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST)
			break;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
			/* What stood at dir is at tmp now. */
			snprintf(aside, sizeof(aside), "%s.unsafe.%ld.%d", dir, (long)time(NULL),
				 (int)getpid());
			if (rename(tmp, aside) < 0)
				slurm_error("synergy: %s %s: what was there is now %s: %m", name, dir,
					    tmp);
			else
				slurm_error("synergy: %s %s was not a root-owned directory writable "
					    "by root only; moved it to %s and made a new one", name,
					    dir, aside);
			return 0;
		}
		if (errno != ENOENT)
			break;
		/* Gone between the two renames: try the first again. */
	}
	slurm_error("synergy: %s %s cannot be replaced by a directory of root's: %m", name, dir);
	rmdir(tmp);
	return -1;
}

/*
 * Open a root directory of job directories (CacheDir, GroupDir: name is the
 * key), creating it (0755, root) if missing; one that exists but is not
 * safe (a link, or anyone's but root's) is replaced by a new one when fix
 * is set (root_dir_replace). Returns its descriptor, or -1 (logged).
 */
static int root_dir_open(const char *dir, const char *name, int fix)
{
	int fd, tries;

	for (tries = 0; tries < 2; tries++) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			slurm_error("synergy: mkdir %s: %m", dir);
			return -1;
		}
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && safe_dir(fd))
			return fd;
		if (fd >= 0)
			close(fd);
		if (!fix || tries > 0 || root_dir_replace(dir, name) < 0)
			break;
	}
	slurm_error("synergy: %s %s must be a directory owned by root and writable by "
		    "root only; Synergy jobs run without it", name, dir);
	return -1;
}

static int cache_root_open(int fix)
{
	return root_dir_open(conf.cache_dir, "CacheDir", fix);
}

int syn__slurmd_init(spank_t sp)
{
	char err[300];
	int fd;

	(void)sp;
	if (!syn__spank_conf_ok || !conf.enabled)
		return 0;
	fd = cache_root_open(1);
	if (fd >= 0)
		close(fd);
	if (strcmp(conf.group_dir, conf.cache_dir) != 0) {
		fd = root_dir_open(conf.group_dir, "GroupDir", 1);
		if (fd >= 0)
			close(fd);
	}
	fd = syn__state_dir_open(conf.state_dir, err, sizeof(err));
	if (fd < 0)
		slurm_error("synergy: StateDir: %s", err);
	else
		close(fd);
	return 0;
}

/* Make CacheDir/job_<id>, owned by the job's user, mode 0700. */
static int cache_job_dir_create(uint32_t jobid, uid_t uid, gid_t gid)
{
	char name[32];
	int dfd, rv = -1;

	dfd = cache_root_open(1);
	if (dfd < 0)
		return -1;
	snprintf(name, sizeof(name), SYN__CACHE_JOB_FMT, (unsigned)jobid);
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
		slurm_error("synergy: mkdir %s/%s: %m", conf.cache_dir, name);
		goto out;
	}
	if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
		slurm_error("synergy: chown %s/%s: %m", conf.cache_dir, name);
		goto out;
	}
	rv = 0;
out:
	close(dfd);
	return rv;
}

void syn__cache_dir_remove(uint32_t jobid)
{
	char name[32];
	int dfd, jfd;

	snprintf(name, sizeof(name), SYN__CACHE_JOB_FMT, (unsigned)jobid);
	dfd = open(conf.cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (!safe_dir(dfd)) {
		close(dfd);
		return;
	}
	jfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd >= 0)
		syn__remove_tree(jfd);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		slurm_info("synergy: job %u: cannot remove cache dir %s/%s: %m", (unsigned)jobid,
			   conf.cache_dir, name);
	close(dfd);
}

/*
 * Make the directory of group on node under GroupDir, or take over the one
 * there: owned by the job's user, mode 0700 (GroupDir is root's, so only
 * root made what is there). Returns 0 or -1 (logged).
 */
static int group_dir_create(const char *node, const char *group, uid_t uid, gid_t gid)
{
	char name[SYN_KEY_MAX + SYN__GROUP_MAX + 16];
	int dfd, fd = -1, rv = -1;

	if (syn__group_dir_name(node, group, name, sizeof(name)) < 0)
		return -1;
	dfd = root_dir_open(conf.group_dir, "GroupDir", 1);
	if (dfd < 0)
		return -1;
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
		slurm_error("synergy: mkdir %s/%s: %m", conf.group_dir, name);
		goto out;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0) {
		slurm_error("synergy: %s/%s: cannot make it the job's, mode 0700: %m",
			    conf.group_dir, name);
		goto out;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	close(dfd);
	return rv;
}

/*
 * Remove the directories of node's groups that no record of the node names
 * any more (the group's last job on the node ended, or one ended without
 * its epilog reaching this point). The caller holds the node's lock, so no
 * prolog makes a record meanwhile. sdfd: StateDir.
 */
static void group_dirs_sweep(int sdfd, const char *node)
{
	struct dirent *d;
	DIR *dir;
	int dfd, gfd;

	dfd = open(conf.group_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (!safe_dir(dfd) || !(dir = fdopendir(dfd))) {
		close(dfd);
		return;
	}
	while ((d = readdir(dir))) {
		const char *group = syn__group_dir_match(d->d_name, node);

		if (!group || syn__group_members(sdfd, node, group) > 0)
			continue;
		gfd = openat(dirfd(dir), d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (gfd >= 0)
			syn__remove_tree(gfd);
		if (unlinkat(dirfd(dir), d->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			slurm_error("synergy: group %s: cannot remove %s/%s: %m", group,
				    conf.group_dir, d->d_name);
		else
			slurm_info("synergy: group %s: no job of it left on node %s; removed %s/%s",
				   group, node, conf.group_dir, d->d_name);
	}
	closedir(dir);
}

int syn__group_join(int dfd, const char *node, uint32_t jobid, uid_t uid, gid_t gid,
		    syn__jobrec_t *r)
{
	char group[SYN__GROUP_MAX + 1];

	snprintf(group, sizeof(group), "%s", r->group);
	if (!group[0])
		return -1;
	if (group_dir_create(node, group, uid, gid) < 0) {
		slurm_error("synergy: job %u: no directory for group %s; it runs outside the "
			    "group", (unsigned)jobid, group);
		r->group[0] = '\0';
		return -1;
	}
	if (syn__jobrec_write(dfd, node, jobid, r) < 0) {
		slurm_error("synergy: job %u: cannot write group %s into its record in %s: %m; it "
			    "runs outside the group", (unsigned)jobid, group, conf.state_dir);
		r->group[0] = '\0';
		/* The directory goes with the next sweep if nobody else has it. */
		return -1;
	}
	/* Where the job's joining its group is stated: the node knows it
	 * (job_submit could only say "group=array"). */
	slurm_info("synergy: job %u: joined group %s on node %s (%d job(s) of it here), "
		   "directory %s/%s.group_%s", (unsigned)jobid, group, node,
		   syn__group_members(dfd, node, group), conf.group_dir, node, group);
	return 0;
}

/* The cache grants of the node's other Synergy jobs (their records), MB. */
static uint64_t other_grants_mb(int dfd, const char *node, uint32_t self)
{
	struct dirent *d;
	uint64_t mb = 0;
	DIR *dir;
	int copy = dup(dfd);

	if (copy < 0)
		return 0;
	dir = fdopendir(copy);
	if (!dir) {
		close(copy);
		return 0;
	}
	while ((d = readdir(dir))) {
		syn__jobrec_t r;
		uint32_t id;

		if (!syn__jobrec_match(d->d_name, node, &id) || id == self ||
		    strchr(d->d_name + strlen(node) + 1, '.'))
			continue;
		if (syn__jobrec_read(dfd, node, id, &r, NULL, 0) == 0 && r.synergy)
			mb += r.cache_mb;
	}
	closedir(dir);
	return mb;
}

/* Clamp r's cache grant to CacheDir's filesystem: its size less the other
 * grants on the node (the loader reserves its whole grant there, and a
 * full tmpfs would make later jobs' loaders run without a cache). */
static void clamp_cache(syn__jobrec_t *r, int dfd, const char *node, uint32_t jobid)
{
	struct statvfs vfs;
	uint64_t size_mb, others, room;

	if (!r->cache_mb || statvfs(conf.cache_dir, &vfs) < 0)
		return;
	size_mb = (uint64_t)vfs.f_blocks * vfs.f_frsize >> 20;
	others = other_grants_mb(dfd, node, jobid);
	room = size_mb > others ? size_mb - others : 0;
	if (r->cache_mb > room) {
		slurm_info("synergy: job %u: cache grant %" PRIu64 "MB clamped to %" PRIu64
			   "MB (%s holds %" PRIu64 "MB, other grants %" PRIu64 "MB)",
			   (unsigned)jobid, r->cache_mb, room, conf.cache_dir, size_mb, others);
		r->cache_mb = room;
	}
	if (r->want_cache_mb > room)
		r->want_cache_mb = room;
}

int syn__job_prolog(spank_t sp)
{
	char err[300], name[SYN_KEY_MAX + 40], path[SYN_PATH_MAX + SYN_KEY_MAX + 48];
	char group[SYN__GROUP_MAX + 1];
	const char *grant, *node;
	syn__grantauth_t ga;
	syn__jobrec_t r;
	syn_store_t *store = NULL;
	syn_error_t serr;
	syn_profile_t prof;
	uint32_t jobid;
	uid_t uid;
	gid_t gid;
	int dfd = -1, lockfd = -1, ok = 0;

	if (!syn__spank_conf_ok || !conf.enabled ||
	    spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
		return 0;
	grant = getenv("SPANK_" SYN__GRANT_VAR);
	if (!grant || !*grant)
		return 0; /* not a job Synergy sized */
	node = syn__node_name();
	if (!node) {
		slurm_error("synergy: job %u: cannot tell this node's name; GPU-proportional",
			    (unsigned)jobid);
		return 0;
	}
	if (syn__grantauth_load(NULL, &ga, err, sizeof(err)) < 0) {
		slurm_error("synergy: job %u: cannot check its grant: %s; GPU-proportional",
			    (unsigned)jobid, err);
		return 0;
	}
	if (syn__grant_open(&ga, grant, conf.grant_max_age, time(NULL), &r, NULL, err,
			    sizeof(err)) < 0 || !r.synergy) {
		slurm_error("synergy: job %u: grant refused: %s; GPU-proportional", (unsigned)jobid,
			    err);
		return 0;
	}
	if (r.uid != (uint32_t)uid) {
		slurm_error("synergy: job %u: grant for uid %" PRIu32 " in a job of uid %u; "
			    "GPU-proportional", (unsigned)jobid, r.uid, (unsigned)uid);
		return 0;
	}
	if (r.profile[0]) {
		/* Profile on first run: the job profiles only while its claim
		 * is still the one job_submit gave it (claim.h). */
		int rc = syn__claim_renew(conf.store_dir, r.uid, r.key, r.profile, jobid, node,
					  time(NULL));

		if (rc == 0) {
			/* Another job profiles the key (an array's other task,
			 * or a later job after this claim lapsed): this one
			 * runs at its allotment without a profile, in its
			 * group if it has one. */
			slurm_info("synergy: job %u: another job holds the claim on profiling %s "
				   "in place; it runs GPU-proportional without a profile",
				   (unsigned)jobid, r.key);
			r.profile[0] = '\0';
			r.unprofiled = 1;
		} else if (rc != 1) {
			slurm_error("synergy: job %u: cannot renew its claim on profiling %s in "
				    "place; it runs GPU-proportional without profiling",
				    (unsigned)jobid, r.key);
			return 0;
		}
	} else if (!r.unprofiled) {
		store = syn_store_create(conf.store_dir, 0, &serr);
		if (!store || syn_store_get_for(store, r.key, r.uid, &prof, &serr) < 0) {
			slurm_error("synergy: job %u: profile %s: %s; GPU-proportional",
				    (unsigned)jobid, r.key, serr.text);
			goto out;
		}
	}
	dfd = syn__state_dir_open(conf.state_dir, err, sizeof(err));
	if (dfd < 0) {
		slurm_error("synergy: job %u: %s; GPU-proportional", (unsigned)jobid, err);
		goto out;
	}
	lockfd = syn__node_lock(dfd, node, SYN__LEND_LOCK_MS);
	if (lockfd < 0) {
		slurm_error("synergy: job %u: lock %s/%s.lock: %m; GPU-proportional",
			    (unsigned)jobid, conf.state_dir, node);
		goto out;
	}
	/* A job on several nodes reads through the partitioned cache: the
	 * node agent plans its cache on the union profile, as job_submit
	 * sized it (synergy_policy.h). */
	if (!r.profile[0] && !r.unprofiled && r.nodes > 1) {
		syn_profile_t one = prof;

		if (syn_profile_union(&one, (int)r.nodes, &prof) < 0)
			prof = one;
	}
	if (!r.profile[0] && !r.unprofiled &&
	    (syn__jobrec_name(node, jobid, ".json", name, sizeof(name)) < 0 ||
	     snprintf(path, sizeof(path), "%s/%s", conf.state_dir, name) >= (int)sizeof(path) ||
	     syn_profile_write_file(path, &prof, &serr) < 0)) {
		slurm_error("synergy: job %u: cannot copy its profile: %s; GPU-proportional",
			    (unsigned)jobid, serr.text);
		goto out;
	}
	clamp_cache(&r, dfd, node, jobid);
	{
		const char *sluid = getenv("SLURM_JOB_SLUID");

		/* Only a well-formed one: the job's first step checks it
		 * against the name of its cgroup (lend.h). */
		if (sluid && syn__sluid_valid(sluid))
			snprintf(r.sluid, sizeof(r.sluid), "%s", sluid);
	}
	/* A named group is in the grant; it joins once the rest is made. An
	 * array task's group is added at its first step (spank_remote.c):
	 * slurmd hands the job prolog no array job id. A job that profiles
	 * in place stays out of its group: batches other members prepared
	 * would count as its own throughput. */
	snprintf(group, sizeof(group), "%s", r.profile[0] ? "" : r.group);
	if (r.profile[0] && r.group[0])
		slurm_info("synergy: job %u: profiles %s in place, outside its group %s",
			   (unsigned)jobid, r.key, r.group);
	r.group[0] = '\0';
	if (syn__jobrec_write(dfd, node, jobid, &r) < 0) {
		slurm_error("synergy: job %u: cannot write its record in %s: %m; GPU-proportional",
			    (unsigned)jobid, conf.state_dir);
		syn__jobrec_remove(dfd, node, jobid);
		goto out;
	}
	if (cache_job_dir_create(jobid, uid, gid) < 0) {
		slurm_error("synergy: job %u: no cache directory; GPU-proportional",
			    (unsigned)jobid);
		syn__jobrec_remove(dfd, node, jobid);
		goto out;
	}
	ok = 1;
	slurm_info("synergy: job %u: grant key=%s gpus=%" PRIu32 " cpus=%" PRIu32
		   " mem=%" PRIu64 "MB cache=%" PRIu64 "MB%s", (unsigned)jobid, r.key, r.gpus, r.cpus,
		   r.mem_mb, r.cache_mb, r.profile[0] ? " profiling in place" :
		   r.unprofiled ? " without a profile" : "");
	if (group[0]) {
		snprintf(r.group, sizeof(r.group), "%s", group);
		syn__group_join(dfd, node, jobid, uid, gid, &r);
	}
out:
	if (r.profile[0] && !ok)
		syn__claim_release(conf.store_dir, r.uid, r.key, r.profile);
	if (lockfd >= 0)
		close(lockfd);
	if (dfd >= 0)
		close(dfd);
	syn_store_destroy(store);
	return 0;
}

int syn__job_epilog(spank_t sp)
{
	char job_rel[SYN_PATH_MAX * 2], err[300], grant[SYN_PATH_MAX + 32];
	const char *node;
	syn__cg_t *cg;
	uint32_t jobid;
	uid_t uid;
	int dfd, lockfd;

	if (!syn__spank_conf_ok || spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return 0;
	/* A job that profiled in place: file its profile if its node has not
	 * yet (it ended right after its search), else release its claim so
	 * that the key's next first job tries again. Before anything of the
	 * job (its record, its cache directory with the report) goes. */
	node = syn__node_name();
	if (node && access(conf.state_dir, F_OK) == 0)
		syn__inplace_run(jobid, (uint32_t)uid, 1);
	cg = syn__node_cgroup();
	/* What Synergy made in the job's cgroup exists on v1 only, where the
	 * job's directory is job_<id>; on v2 (job_<id> or, from Slurm 26.05,
	 * the SLUID) there is nothing of ours to remove. Once ours is gone,
	 * the job's and user's directories too if Slurm's last step could
	 * not remove them because ours was still there. */
	if (cg && syn__cg_version(cg) == 1 &&
	    syn__cg_job_path(cg, jobid, uid, job_rel, sizeof(job_rel)) == 0) {
		if (syn__cg_job_cleanup(cg, job_rel, err, sizeof(err)) < 0) {
			if (errno != EBUSY)
				slurm_error("synergy: job %u: epilog: %s", (unsigned)jobid, err);
		} else if (syn__cg_job_gone(cg, job_rel, SYN__CG_LOCK_MS, err, sizeof(err)) < 0) {
			slurm_error("synergy: job %u: epilog: %s", (unsigned)jobid, err);
		}
	}
	/* Also drops the job's record. The agent exists once the node has
	 * its cgroup. */
	if (cg && conf.enabled && conf.lend_idle && syn__node_agent())
		syn__lend_rebalance(syn__node_agent(), NULL, jobid);
	syn__cache_dir_remove(jobid);
	if (syn__grant_path(conf.cache_dir, jobid, grant, sizeof(grant)) == 0)
		unlink(grant);
	/* The record goes, lending on or off: a stale record must not describe
	 * a later job that reuses the id. */
	if (node && access(conf.state_dir, F_OK) == 0) {
		dfd = syn__state_dir_open(conf.state_dir, err, sizeof(err));
		if (dfd >= 0) {
			lockfd = syn__node_lock(dfd, node, SYN__LEND_LOCK_MS);
			syn__jobrec_remove(dfd, node, jobid);
			/* Only under the lock: a prolog may be adding a member. */
			if (lockfd >= 0) {
				group_dirs_sweep(dfd, node);
				close(lockfd);
			}
			close(dfd);
		}
	}
	syn__ckpt_epilog(sp);
	return 0;
}
