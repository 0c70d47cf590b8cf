/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jobrec.h: what the node knows of a job, and where that comes from.
 *
 * Trust: the node acts on what job_submit/synergy decided, never on the
 * job's environment, which the user controls. job_submit writes its
 * decision (the "grant") into the job's spank environment as
 * SYN__GRANT_VAR, after removing any copy the user sent; Slurm hands the
 * spank environment only to the job's prolog and epilog, prefixed with
 * "SPANK_". The SPANK plugin's job prolog (root, before any step of the job
 * runs on the node) checks it and writes a per-job record into the node's
 * state directory (StateDir: root-owned, mode 0700), with a copy of the
 * job's profile, read from the store at that moment; every later hook of
 * the job reads the record. Idle-core lending adds, at the job's first
 * step, the CPUs Slurm allotted it. The epilog removes both files.
 *
 * Groups (coordinated prep, synergy_env.h SYNERGY_GROUP): a job's group is
 * in its record, never taken from its environment. A group the user named
 * (--synergy-group=NAME) is in job_submit's grant, built with the job's
 * owner in it ("u<uid>-g-NAME"), and the prolog writes it into the
 * record; an array task's group ("u<uid>-a<array job id>") is added to the
 * record at the task's first step, from the array job id slurmstepd has
 * (slurmd gives the prolog none). Either way the record's group must
 * carry the record's uid, so jobs of two users never share one. Whoever
 * adds it also makes the group's directory on the node
 * (GroupDir/<node>.group_<group>, the job's user's, 0700); the epilog
 * removes it once no record of the node names the group.
 *
 * Job cgroups named by SLUID (Slurm 26.05, cgroup.h): the node agent lists
 * a node's jobs by their cgroup directories, which Slurm 26.05 names by
 * the job's SLUID instead of job_<id>. The record says which SLUID its job
 * has ("sluid"): the prolog writes the one slurmd hands it
 * (SLURM_JOB_SLUID, 25.11+), the job's first step the name of the
 * directory its own slurmstepd runs in (the kernel's word, which wins).
 * A SLUID directory that no record of the node names is a job Synergy
 * does not know, as a job_<id> directory without a record always was.
 *
 * Files in StateDir, per node (NodeName) and job id:
 *   <node>.job_<id>        the record: "key=value" lines (syn__jobrec_*)
 *   <node>.job_<id>.json   the job's profile (synergy_profile.h schema)
 *   <node>.lock            serialises every change on the node
 */
#ifndef SYN_PLUGIN_JOBREC_H
#define SYN_PLUGIN_JOBREC_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "synergy_env.h"
#include "plugin/shared/util.h"

/* The spank environment variable job_submit sets and the prolog reads
 * (there as "SPANK_" SYN__GRANT_VAR). */
#define SYN__GRANT_VAR "SYNERGY_GRANT"
/* Variables the SPANK client forwards to job_submit. */
#define SYN__CTL_KEY "SYNERGY_PROFILE_KEY"
#define SYN__CTL_ONOFF "SYNERGY"
#define SYN__CTL_GROUP "SYNERGY_GROUP_NAME"   /* --synergy-group NAME */

/* A group (synergy_env.h) is at most this long. */
#define SYN__GROUP_MAX 64

/* A SLUID as Slurm prints it: 's' and 13 Crockford base-32 digits. */
#define SYN__SLUID_LEN 14

/* A claim's nonce: this many lowercase hex digits (claim.h). */
#define SYN__NONCE_LEN 16

/* The job's secret (grantauth.h): this many lowercase hex digits. */
#define SYN__SECRET_HEX 64

/* A record or grant is at most this long (bytes). */
#define SYN__JOBREC_MAX 16384
/* The most nodes a grant names (the loader's most peers). */
#define SYN__JOBREC_NODES_MAX 1024

/* The largest memory figure (MB) a record holds: a petabyte. */
#define SYN__JOBREC_MEM_MAX (1ULL << 40)

typedef struct syn__jobrec {
	/* The grant, as job_submit decided it (all 0/"" for a job Synergy
	 * did not size). Per node. */
	int synergy;                 /* 1: sized from profile key */
	char key[SYN_KEY_MAX + 1];
	uint32_t uid;                /* the job's owner */
	uint32_t gpus;               /* GPUs on the node (>= 1 when synergy) */
	uint32_t cpus;               /* cores in Slurm's accounting (0: not sized:
	                                the user's own request was kept) */
	uint64_t mem_mb;             /* memory in Slurm's accounting (0: not sized) */
	uint64_t cache_mb;           /* the loader cache inside mem_mb */
	uint32_t want_cpus;          /* best case, above the share (0: none) */
	uint64_t want_cache_mb;
	/* The job's coordinated-prep group ("" none): "u<uid>-g-<NAME>" from
	 * the grant, or "u<uid>-a<array job id>" added at the first step. */
	char group[SYN__GROUP_MAX + 1];
	uint32_t nodes;              /* nodes the job spans when > 1 (0 or 1: one):
	                                sized for the partitioned cache, and the
	                                node's profile copy is the union profile
	                                (syn_profile_union, synergy_policy.h) */
	/* Profile on first run: the nonce of the job's claim on profiling
	 * its key in place (claim.h), "" when it does not profile. The
	 * record drops it once the job's profile is filed or refused. */
	char profile[SYN__NONCE_LEN + 1];
	/* The job's secret, which job_submit made for it and sealed into its
	 * grant (grantauth.h), "" in a grant job_submit has not sealed yet.
	 * The node derives each step's peer key from it (SYNERGY_PEER_KEY);
	 * only root reads it from the record. */
	char secret[SYN__SECRET_HEX + 1];
	/* 1: the key had no profile for the job's user (job_submit's grant
	 * for a job of a group: an array task, or --synergy-group), or
	 * another job held the claim on profiling it in place (the prolog).
	 * The job runs at what Slurm allotted it, under the loader contract
	 * and in its group, with no profile copy and no grant of the node's
	 * (lend.h). Never beside profile. */
	int unprofiled;
	/* Added on the node at the job's first step. */
	int has_allotted;
	cpu_set_t allotted;          /* CPUs its job cgroup had from Slurm */
	uint64_t alloc_mem_mb;       /* memory Slurm allotted it on the node (0: unknown) */
	/* The job's SLUID ("" unknown), which names its cgroup directory on
	 * Slurm 26.05 (see the top of the file). Never in a grant. */
	char sluid[SYN__SLUID_LEN + 1];
	/* Kept by the node agent (lend.h): the cache grant the job's grant
	 * file says now, in MB (has_hold 0: none written since the prolog,
	 * which wrote cache_mb). */
	int has_hold;
	uint64_t hold_cache_mb;
	/* Kept by the node agent for harvesting idle cycles (lend.h): the
	 * job's CPU time at its last sample and when it was taken
	 * (CLOCK_MONOTONIC ns; has_cpu 0: no sample yet), the idle cores of
	 * its allotment measured then, in thousandths (has_spare 0: not yet
	 * measured), and 1 in harvest while the agent keeps its threads at
	 * SCHED_IDLE because it harvests other jobs' cores. */
	int has_cpu;
	uint64_t cpu_ns, cpu_at_ns;
	int has_spare;
	uint64_t spare_milli;
	int harvest;
} syn__jobrec_t;

/*
 * Format the grant fields of r as one line "key=K uid=U gpus=G cpus=C
 * mem_mb=M cache_mb=X want_cpus=W want_cache_mb=Y [nodes=N] [profile=NONCE]
 * [unprofiled=1] [group=GROUP] [secret=S]" (nodes only when above 1, up to
 * 1024) into buf. Returns 0, or -1 with ENAMETOOLONG or EINVAL (r is not a
 * valid grant).
 */
int syn__grant_format(const syn__jobrec_t *r, char *buf, size_t len);

/* 1 if s is a claim nonce: SYN__NONCE_LEN lowercase hex digits. */
int syn__nonce_valid(const char *s);

/* 1 if s is a job secret: SYN__SECRET_HEX lowercase hex digits. */
int syn__secret_valid(const char *s);

/* 1 if s is a SLUID as Slurm prints it (print_sluid): 's' followed by 13
 * characters of Crockford's base 32 (0-9 and A-Z without I, L, O, U),
 * upper case; else 0. */
int syn__sluid_valid(const char *s);

/*
 * Parse a record (newline-separated; also a grant's fields, space-separated)
 * into r, strictly: every field known, every number in range, the key
 * valid, no field twice, a group only of the record's uid
 * (syn__group_valid). Returns 0, or -1 with errno EINVAL and the offending
 * field in err. r is zeroed first.
 */
int syn__jobrec_parse(const char *text, syn__jobrec_t *r, char *err, size_t errlen);

/*
 * Parse a grant, as syn__jobrec_parse() and stricter: it must name key, uid
 * and gpus, and none of the fields only the node writes into a record
 * ("allotted", "alloc_mem_mb", "hold_cache_mb", "cpu_ns", "cpu_at_ns",
 * "spare_milli", "harvest", "sluid"). What reached the node as a grant goes through
 * this parser only.
 */
int syn__grant_parse(const char *text, syn__jobrec_t *r, char *err, size_t errlen);

/*
 * Open StateDir (created 0700 if missing, parents 0755), refusing it unless
 * it is a directory owned by root that nobody else can write. Returns its
 * descriptor, or -1 with errno and err.
 */
int syn__state_dir_open(const char *dir, char *err, size_t errlen);

/*
 * Take the node's lock in StateDir within timeout_ms (a holder that hangs
 * must not stall every job launch). Returns a descriptor (close to
 * release), or -1 with errno (ETIMEDOUT).
 */
int syn__node_lock(int dfd, const char *node, int timeout_ms);

/* Read, write (atomically: temporary file, rename) and remove the record
 * of job jobid on node in StateDir dfd. read: -1 with ENOENT when absent,
 * EINVAL when malformed (err says why). remove also removes the profile
 * copy; both are fine when absent. */
int syn__jobrec_read(int dfd, const char *node, uint32_t jobid, syn__jobrec_t *r, char *err,
		     size_t errlen);
int syn__jobrec_write(int dfd, const char *node, uint32_t jobid, const syn__jobrec_t *r);
int syn__jobrec_remove(int dfd, const char *node, uint32_t jobid);

/* The file name of the record (suffix "" ) or of its profile copy
 * (suffix ".json"). Returns 0 or -1 with ENAMETOOLONG. */
int syn__jobrec_name(const char *node, uint32_t jobid, const char *suffix, char *buf,
		     size_t len);

/* 1 and the id if name is a record of node ("<node>.job_<id>"), else 0. */
int syn__jobrec_match(const char *name, const char *node, uint32_t *jobid);

/* 1 if name is a valid --synergy-group NAME: 1..SYNERGY_GROUP_NAME_MAX of
 * [A-Za-z0-9_.-], not starting with '.' or '-'; else 0. Inline: the SPANK
 * plugin's client side checks it with nothing but libsyncommon linked. */
static inline int syn__group_name_valid(const char *name)
{
	return name && name[0] != '-' && strlen(name) <= SYNERGY_GROUP_NAME_MAX &&
	       syn_key_valid(name);
}

/*
 * The group of a job of user uid: SYNERGY_GROUP_NAMED_FMT when name is
 * not NULL (a valid group name), else SYNERGY_GROUP_ARRAY_FMT of
 * array_job_id (>= 1). Returns 0, or -1 with errno EINVAL or ENAMETOOLONG.
 */
int syn__group_format(uint32_t uid, uint32_t array_job_id, const char *name, char *buf,
		      size_t len);

/* 1 if group is exactly what syn__group_format() makes for some array job
 * id or group name of user uid, else 0. */
int syn__group_valid(const char *group, uint32_t uid);

/* The name of a group's directory on node under GroupDir
 * ("<node>.group_<group>"). Returns 0, or -1 with EINVAL or ENAMETOOLONG. */
int syn__group_dir_name(const char *node, const char *group, char *buf, size_t len);

/* The group whose directory on node name is (a pointer into name), or
 * NULL when name is not one. */
const char *syn__group_dir_match(const char *name, const char *node);

/* How many records of node in StateDir dfd name group (the caller holds
 * the node's lock); 0 also when the directory cannot be read. */
int syn__group_members(int dfd, const char *node, const char *group);

#endif
