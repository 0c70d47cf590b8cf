/*
 * synergy_conf.h: a reader of synergy.conf, Synergy's own key=value file
 * (default: syn_conf_default_path()), the one parser of it that every
 * Synergy program uses: synergy-profile directly, the Slurm plugins and
 * their daemons through syn__conf_load() (plugin/util.h), which then checks
 * each key's value.
 *
 * Format, as Slurm's own files: one `Key=Value` per line; blank lines and
 * lines starting with '#' are ignored, as is a '#' comment after a value;
 * spaces around key and value are trimmed; keys compare case-insensitively;
 * a key given twice is an error (so a typo'd override is never silently
 * lost). What the keys mean is up to each reader; this module only parses.
 *
 * Conventions: 0 / pointer on success, -1 / NULL with errno; the caller's
 * syn_conf_error_t names the file and line. Nothing here logs or exits.
 */
#ifndef SYNERGY_CONF_H
#define SYNERGY_CONF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Where synergy.conf lives unless $SYNERGY_CONF names another file or
 * $SLURM_CONF a directory (syn_conf_default_path()). */
#define SYN_CONF_DEFAULT_PATH "/etc/slurm/synergy.conf"
/* Environment variable that overrides the path. */
#define SYN_CONF_ENV "SYNERGY_CONF"

/* Key naming the profile store directory, and its default. */
#define SYN_CONF_PROFILE_STORE "ProfileStore"
#define SYN_CONF_PROFILE_STORE_DEFAULT "/var/lib/synergy/profiles"

/* The ports the partitioned cache's listeners of a multi-node step take
 * (synergy_env.h, SYNERGY_PEERS): node i of a step listens on a port of
 * PeerPortMin..PeerPortMax derived from the job, the step and i. The
 * default lies below Linux's ephemeral range (32768-60999), so that no
 * outgoing connection holds one of them. */
#define SYN_CONF_PEER_PORT_MIN "PeerPortMin"
#define SYN_CONF_PEER_PORT_MAX "PeerPortMax"
#define SYN_CONF_PEER_PORT_MIN_DEFAULT 27000
#define SYN_CONF_PEER_PORT_MAX_DEFAULT 28999

/* Coordinated prep: the plugin gives every job of a group on a node its
 * group's staging bound and look-behind window (synergy_env.h,
 * SYNERGY_GROUP_BYTES and SYNERGY_GROUP_WINDOW; the loader's defaults). The
 * staging pages are charged to the memory cgroups of the members that
 * first fill them, so the bound belongs inside ProcessMemMB. */
#define SYN_CONF_GROUP_STAGING_MB "GroupStagingMB"
#define SYN_CONF_GROUP_STAGING_MB_DEFAULT 512
#define SYN_CONF_GROUP_WINDOW "GroupWindow"
#define SYN_CONF_GROUP_WINDOW_DEFAULT 256

/* CheckFreq checkpoints: the site directory under which the SPANK plugin
 * gives each job its checkpoint directory (SYNERGY_CKPT_DIR; unset: none),
 * and how long a job's directory outlives its last use, in seconds (0:
 * until the job completes). See spank-synergy(8), CHECKPOINTS. */
#define SYN_CONF_CHECKPOINT_DIR "CheckpointDir"
#define SYN_CONF_CHECKPOINT_RETENTION "CheckpointRetention"
#define SYN_CONF_CHECKPOINT_RETENTION_DEFAULT (7 * 86400)

/* Human-readable detail for a failed call; owned by the caller. */
typedef struct syn_conf_error {
	char text[160];
} syn_conf_error_t;

typedef struct syn_conf syn_conf_t;

/*
 * The synergy.conf every Synergy program reads when given none: the file
 * $SYNERGY_CONF names; else synergy.conf in the directory of $SLURM_CONF
 * (when that is set and has a '/'); else SYN_CONF_DEFAULT_PATH. buf (len
 * bytes) holds the second case; the result is env, buf or the constant.
 */
const char *syn_conf_default_path(char *buf, size_t len);

/*
 * Parse the file at path (NULL: syn_conf_default_path()).
 * Returns a handle to free with syn_conf_destroy(), or NULL with errno:
 * that of open(2) (ENOENT: no such file), EINVAL for a malformed line or a
 * duplicate key (err names file:line), EFBIG for a file over 1 MiB.
 */
syn_conf_t *syn_conf_load(const char *path, syn_conf_error_t *err);

/* Parse configuration text (NUL-terminated); `name` is used in messages. */
syn_conf_t *syn_conf_parse(const char *text, const char *name, syn_conf_error_t *err);

/* Free a handle. Accepts NULL; preserves errno. */
void syn_conf_destroy(syn_conf_t *c);

/* The path the configuration came from (or the name given to parse). */
const char *syn_conf_path(const syn_conf_t *c);

/* Value of key (case-insensitive), or NULL if absent. Valid until destroy. */
const char *syn_conf_get(const syn_conf_t *c, const char *key);

/*
 * Call fn(key, value, line, arg) for every entry in file order, e.g. to
 * reject keys the reader does not know. Stops when fn returns non-zero and
 * returns that value; returns 0 after the last entry.
 */
int syn_conf_foreach(const syn_conf_t *c,
                     int (*fn)(const char *key, const char *value, int line, void *arg),
                     void *arg);

#ifdef __cplusplus
}
#endif
#endif
