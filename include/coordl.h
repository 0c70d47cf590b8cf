/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl.h: libcoordl, a CoorDL-style data loader for DNN training.
 *
 * A loader reads a dataset of JPEG images (an ImageFolder tree, a file list,
 * or a packed shard set; on local storage, an HTTP(S) server or an S3
 * object store), keeps encoded items in a no-eviction (MinIO) cache
 * bounded in bytes, decodes and augments them with libjpeg-turbo on worker
 * threads, and hands out batches from pre-allocated buffers.
 *
 * Sample order depends only on (seed, epoch, rank, world_size): never on the
 * thread count, the cache size or timing. Knobs left unset by the caller are
 * read from the Synergy environment contract (synergy_env.h), then derived
 * from the process's cpuset and memory limit.
 *
 * Conventions: functions return 0 / a pointer on success and -1 / NULL on
 * failure with errno set; when the caller passes a coordl_error_t, its text
 * says what went wrong and names the bad input. A failed call has no side
 * effects. The library never logs, exits or aborts on bad input.
 */
#ifndef COORDL_H
#define COORDL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COORDL_VERSION_MAJOR 0
#define COORDL_VERSION_MINOR 1

/* Human-readable detail for a failed call; owned by the caller. */
typedef struct coordl_error {
	char text[160];
} coordl_error_t;

typedef struct coordl_loader coordl_loader_t;

enum coordl_source_kind {
	COORDL_SOURCE_AUTO = 0,    /* directory -> imagefolder, *.cdx -> shards, else file list;
	                              URLs: *.cdx -> shards, *.txt or *.lst -> file list,
	                              else imagefolder */
	COORDL_SOURCE_IMAGEFOLDER, /* root/<class>/<file>.jpg, labels from sorted class names */
	COORDL_SOURCE_FILELIST,    /* text file: "<path> <label>" per line, paths relative to the list */
	COORDL_SOURCE_SHARDS,      /* packed shards: path of the .cdx index written by coordl-pack */
};

enum coordl_layout {
	COORDL_LAYOUT_NCHW_F32 = 0, /* float32, normalized with mean/std */
	COORDL_LAYOUT_NHWC_U8,      /* uint8, not normalized (normalize on the GPU) */
};

enum coordl_mode {
	COORDL_MODE_TRAIN = 0, /* RandomResizedCrop + horizontal flip */
	COORDL_MODE_EVAL,      /* resize short side to out_size*256/224, center crop */
	COORDL_MODE_RAW,       /* no decode: batches carry only labels and encoded sizes
	                          (data = n uint64_t sizes; used by the profiler to
	                          measure fetch alone) */
	COORDL_MODE_SYNTHETIC, /* no fetch, no decode: constant tensors (GPU ingestion rate) */
};

/* How the nodes of a multi-node job's partitioned cache found each other
 * (coordl_stats_t.peer_wireup; SYNERGY_PEER_WIREUP chooses). */
enum coordl_wireup {
	COORDL_WIREUP_NONE = 0,     /* no partitioned cache */
	COORDL_WIREUP_SOCKADDR = 1, /* the node list SYNERGY_PEERS, a listener per node */
	COORDL_WIREUP_PMIX = 2,     /* PMIx: a rank that srun --mpi=pmix launched */
};

/* Which loader gets the job's cache (the SYNERGY_CACHE_* environment). */
enum coordl_cache_use {
	COORDL_CACHE_AUTO = 0, /* a TRAIN-mode loader takes the job's cache, other modes none */
	COORDL_CACHE_JOB,      /* take the job's cache whatever the mode (e.g. the loader
	                          that runs most epochs is not in TRAIN mode) */
	COORDL_CACHE_NONE,     /* no cache, whatever the environment says */
};

/*
 * Loader configuration. Initialise with coordl_config_init() and set only
 * what you need; "unset" values come from the environment contract, then
 * from defaults.
 */
typedef struct coordl_config {
	const char *path;      /* dataset: directory, file list, or shard index (required) */
	int source;            /* enum coordl_source_kind */
	int batch_size;        /* samples per batch (default 32) */
	int out_size;          /* output height = width (default 224) */
	int layout;            /* enum coordl_layout */
	int mode;              /* enum coordl_mode */
	int threads;           /* worker threads; 0 = SYNERGY_THREADS, else cores in the cpuset */
	int64_t cache_bytes;   /* MinIO cache bound; -1 = the job's grant (SYNERGY_CACHE_GRANT,
	                          else SYNERGY_CACHE_BYTES) for the loader that takes the
	                          job's cache (see cache_use), else 0 (off). The bound
	                          covers the cache's index and data: it never occupies
	                          more memory, private or in its file */
	const char *cache_name;/* shared cache name; NULL = SYNERGY_CACHE_NAME for the loader
	                          that takes the job's cache, else a private cache */
	uint64_t seed;         /* shuffle and augmentation seed (default 0) */
	int shuffle;           /* 1 = new random order each epoch (default 1) */
	int rank;              /* this process's shard, 0..world_size-1 (default 0) */
	int world_size;        /* number of shards (default 1). As PyTorch's
	                          DistributedSampler: the epoch's order is padded by
	                          wrapping to a multiple of world_size and rank r takes
	                          positions r, r+W, ...; all ranks get ceil(N/W) samples */
	int drop_last;         /* 1 = drop a partial last batch (default 0) */
	int prefetch;          /* batches in flight ahead of the consumer (default 2*threads,
	                          at least 2, at most 8: workers share batches item by item,
	                          so a shallow ring keeps them busy). Left at 0, the depth
	                          follows the worker count at every coordl_set_epoch (the
	                          buffers of a shallower ring go back to the system), as the
	                          workers follow the CPU set; not with pin_memory */
	float scale_min, scale_max; /* RandomResizedCrop area range (default 0.08, 1.0) */
	float ratio_min, ratio_max; /* aspect range (default 3/4, 4/3) */
	float flip_prob;       /* horizontal flip probability (default 0.5) */
	float mean[3], std[3]; /* normalization (default ImageNet) */
	int pin_memory;        /* 1 = CUDA pinned batch buffers (needs CUDA at build and run time) */
	int cache_use;         /* enum coordl_cache_use (default AUTO) */
	/* Remote datasets only (see "Remote datasets" below). */
	int io_window;         /* read-ahead: requests in flight for the items of the
	                          current and upcoming batches. 0 = sized from the
	                          measured request latency x item rate, at most
	                          COORDL_IO_WINDOW_AUTO_MAX; 1..COORDL_IO_WINDOW_MAX =
	                          exactly that many; -1 = no read-ahead (each worker
	                          fetches its own item when it needs it) */
	int io_deadline_ms;    /* retries of one item (timeouts, 5xx) stop after this
	                          long and it counts as corrupt (0 = 30000) */
	int64_t max_item_bytes;/* largest encoded item read; a larger one counts as corrupt
	                          and is replaced. 0 = default (64 MiB), else 1..2^40 */
} coordl_config_t;

/*
 * Remote datasets. An http(s) URL or s3://BUCKET/PREFIX names the dataset:
 *  - ImageFolder: over HTTP the object COORDL_MANIFEST_NAME under the URL
 *    lists the items (COORDL_MANIFEST_MAGIC, then "<bytes> <class>/<file>"
 *    per line; coordl-pack --manifest writes it); on S3, ListObjectsV2
 *    under the prefix. Labels and order are those of the same tree on disk.
 *  - Shards: the .cdx index and its shards side by side; items are read
 *    with range GETs.
 *  - File list: "<url> <label>" lines (a local list may name URLs too;
 *    relative paths in a remote list are relative to it).
 * Many requests stay in flight (libcurl multi: connections reused, HTTP/2
 * where offered) apart from the worker threads, so few cores keep up with
 * high-latency storage. Timeouts and 5xx are retried with backoff until
 * io_deadline_ms; a 404 or a bad body is a corrupt item (counted, replaced).
 * S3 requests are signed with AWS Signature V4 when credentials are found
 * (the variables below, else the shared credentials file); the library
 * never prints or returns them.
 */
#define COORDL_MANIFEST_NAME "coordl.manifest"
#define COORDL_MANIFEST_MAGIC "coordl-manifest 1"
#define COORDL_IO_WINDOW_AUTO_MAX 256
#define COORDL_IO_WINDOW_MAX 4096
/* The AWS environment read for s3:// datasets (names as the AWS CLI uses). */
#define COORDL_ENV_AWS_ACCESS_KEY_ID "AWS_ACCESS_KEY_ID"
#define COORDL_ENV_AWS_SECRET_ACCESS_KEY "AWS_SECRET_ACCESS_KEY"
#define COORDL_ENV_AWS_SESSION_TOKEN "AWS_SESSION_TOKEN"
#define COORDL_ENV_AWS_REGION "AWS_REGION"                 /* else AWS_DEFAULT_REGION, us-east-1 */
#define COORDL_ENV_AWS_DEFAULT_REGION "AWS_DEFAULT_REGION"
#define COORDL_ENV_AWS_ENDPOINT_URL_S3 "AWS_ENDPOINT_URL_S3" /* else AWS_ENDPOINT_URL; path-style */
#define COORDL_ENV_AWS_ENDPOINT_URL "AWS_ENDPOINT_URL"
#define COORDL_ENV_AWS_PROFILE "AWS_PROFILE"               /* section of the credentials file */
#define COORDL_ENV_AWS_SHARED_CREDENTIALS_FILE "AWS_SHARED_CREDENTIALS_FILE" /* else ~/.aws/credentials */
#define COORDL_ENV_AWS_CA_BUNDLE "AWS_CA_BUNDLE"           /* CA certificates for https (S3) */
#define COORDL_ENV_CURL_CA_BUNDLE "CURL_CA_BUNDLE"         /* CA certificates for https */

/* Fill cfg with defaults (all knobs unset). Never fails. */
void coordl_config_init(coordl_config_t *cfg);

/*
 * Create a loader: scan the dataset, attach or create the cache, start the
 * workers (they idle until the first coordl_next()). Returns NULL with errno
 * (ENOENT missing dataset, EINVAL bad config or environment value, ENOMEM)
 * and err->text naming the bad input.
 *
 * A cache that cannot be had as asked is not an error: when the named
 * cache is in use for another dataset (EBUSY), the file system has no room
 * for it (ENOSPC), or its file is not safe to use (not a regular file of
 * this user with mode 0600 and one link), the loader runs with a private
 * cache of the bound the program gave, or without a cache when the bound
 * is the job's grant (a private copy per process could exceed the grant).
 * coordl_cache_note() then says why.
 */
coordl_loader_t *coordl_create(const coordl_config_t *cfg, coordl_error_t *err);

/* Stop the workers, free buffers, detach from the cache (removing it when
 * this was its last user). Accepts NULL; preserves errno. */
void coordl_destroy(coordl_loader_t *ld);

/* Samples in this rank's shard per epoch (equal for every rank). */
size_t coordl_num_samples(const coordl_loader_t *ld);

/* Batches per epoch for this rank (honours drop_last). */
size_t coordl_num_batches(const coordl_loader_t *ld);

/* Items in the whole dataset and its total encoded size in bytes. */
size_t coordl_dataset_items(const coordl_loader_t *ld);
uint64_t coordl_dataset_bytes(const coordl_loader_t *ld);

/* Number of classes (labels are 0..n-1). */
int coordl_num_classes(const coordl_loader_t *ld);

/* The effective configuration after environment and defaults. */
const coordl_config_t *coordl_config(const coordl_loader_t *ld);

/*
 * Begin epoch `epoch` (restarts the sample order at position 0). Batches of
 * an unfinished previous epoch are discarded. Returns 0, or -1 (EINVAL).
 */
int coordl_set_epoch(coordl_loader_t *ld, uint64_t epoch, coordl_error_t *err);

/* One batch, valid until coordl_release(). */
typedef struct coordl_batch {
	void *data;            /* n x 3 x S x S float32, or n x S x S x 3 uint8 */
	int32_t *labels;       /* n labels */
	uint64_t *indices;     /* n dataset indices (for checking order) */
	int n;                 /* samples in this batch (< batch_size only for a last partial batch) */
	size_t data_bytes;     /* bytes at data */
	uint64_t epoch;        /* epoch this batch belongs to */
	uint64_t seq;          /* batch number within the epoch, from 0 */
	int replaced;          /* items of this batch that were corrupt and replaced */
	void *device_data;     /* device copy when coordl_to_device() was used, else NULL */
	int readonly;          /* 1: the batch is shared with the other jobs of a group
	                          (coordinated prep): data, labels and indices lie in a
	                          read-only mapping and must not be written */
} coordl_batch_t;

/*
 * Wait for the next batch of the current epoch. Returns 1 and sets *out,
 * 0 at the end of the epoch (call coordl_set_epoch for the next one), or -1
 * on a fatal error (e.g. the dataset vanished) with err filled.
 * The time spent waiting is counted as stall time.
 */
int coordl_next(coordl_loader_t *ld, coordl_batch_t **out, coordl_error_t *err);

/* Give a batch's buffer back to the loader. Accepts NULL. */
void coordl_release(coordl_loader_t *ld, coordl_batch_t *b);

/*
 * Change the number of worker threads while running (the profiler sweeps
 * cores in one launch). Takes effect before the next batch is started;
 * sample order is unaffected. 1..1024. An explicit count ends cpuset
 * following: a loader created with threads = 0 otherwise re-reads its
 * cpuset at most every 100 ms inside coordl_next() and, when it changed,
 * pins its threads to it and runs one worker per CPU in it (the node may
 * lend idle cores; SYNERGY_FOLLOW_CPUSET=0 turns this off).
 * coordl_get_threads() and the stats' threads give the current count.
 */
int coordl_set_threads(coordl_loader_t *ld, int threads, coordl_error_t *err);
int coordl_get_threads(const coordl_loader_t *ld);

/* Resumable position (CheckFreq-style): restoring it yields exactly the
 * samples that had not been handed out yet. */
typedef struct coordl_state {
	uint64_t seed;
	uint64_t epoch;
	uint64_t position;     /* samples of this rank's epoch already consumed */
	uint32_t rank, world_size;
} coordl_state_t;

int coordl_get_state(const coordl_loader_t *ld, coordl_state_t *st);
/* Fails with EINVAL if seed/rank/world_size differ from the loader's or
 * position is beyond the epoch. */
int coordl_set_state(coordl_loader_t *ld, const coordl_state_t *st, coordl_error_t *err);

/* Counters, from the loader's own clocks. Times in seconds. */
typedef struct coordl_stats {
	uint64_t epoch;             /* current epoch */
	uint64_t samples;           /* samples delivered this epoch */
	uint64_t batches;           /* batches delivered this epoch */
	double epoch_wall;          /* from the epoch's first coordl_next to its last batch (or now) */
	double stall;               /* consumer waited inside coordl_next this epoch */
	double prep_time;           /* worker time decoding+augmenting this epoch, summed */
	double fetch_time;          /* worker time reading from storage this epoch, summed */
	uint64_t storage_bytes;     /* bytes read from storage this epoch */
	uint64_t cache_hits;        /* items served from the cache this epoch */
	uint64_t cache_misses;
	uint64_t cache_bytes_used;  /* encoded bytes in the cache now (whole job on this node) */
	uint64_t cache_bytes_limit; /* the cache's bound now (it follows the grant) */
	uint64_t corrupt;           /* items skipped and replaced this epoch (a replacement
	                               that is corrupt too counts again) */
	int threads;
	double images_per_s;        /* samples / epoch_wall */
	double images_per_s_per_core;
	/* Totals over the loader's life. */
	uint64_t total_samples;
	uint64_t total_corrupt;
	double total_stall;
	double total_wall;
	/* The cache (the whole job's on this node when shared). */
	uint64_t cache_items;       /* items stored now */
	uint64_t cache_shrinks;     /* times its bound was lowered (grant followed) */
	uint64_t cache_grows;       /* times its bound was raised */
	int cache_shared;           /* 1: a named cache shared between loaders, 0: private or none */
	/* Remote datasets (all 0 for local ones). */
	uint64_t requests;          /* transfers finished this epoch, retries included */
	uint64_t retries;           /* transfers retried after a timeout, 408, 429 or 5xx */
	double req_latency_p50;     /* latency of this epoch's successful transfers, s */
	double req_latency_p90;
	double req_latency_p99;
	int io_window;              /* read-ahead window now (requests; 0 = none) */
	int io_inflight;            /* requests in flight now */
	uint64_t io_bytes_in_flight;/* bytes fetched or being fetched that no worker
	                               has taken yet (the read-ahead's memory) */
	/* Where this epoch's items came from: cache_hits from this node's
	 * cache, peer_hits from another node's (the partitioned cache of a
	 * multi-node job, see "Multi-node jobs" below), storage_reads from
	 * storage. */
	uint64_t storage_reads;     /* items read from storage this epoch */
	int peer_nodes;             /* nodes whose caches form the job's cache (0: none) */
	int peer_node_index;        /* this node's index among them */
	int peers_up;               /* other nodes connected now */
	uint64_t peer_hits;         /* items read from another node's cache this epoch */
	uint64_t peer_bytes;        /* their bytes */
	uint64_t peer_absent;       /* items their node did not cache: read from storage */
	uint64_t peer_fallbacks;    /* items whose node failed, stalled or sent bytes that
	                               failed their check: read from storage */
	uint64_t peer_bad;          /* of those, items that failed their check */
	uint64_t peer_stalls;       /* nodes cut off this epoch for missing the deadline */
	/* Coordinated prep (a group of jobs on one node, see "Coordinated prep"),
	 * over the loader's life. Outside a group batches_prepared counts the
	 * batches of its own pipeline and the group fields are 0. */
	double batches_prepared;    /* batches this loader's workers prepared, for itself or
	                               for other members (a shared batch counts by the share
	                               of its items they did) */
	double batches_received;    /* batches it consumed that other members' workers
	                               prepared (by the same share) */
	int group_members;          /* live members of its group now (0: not in a group) */
	int group_shared;           /* 1: it takes its batches from the group's staging
	                               area now; 0: from its own pipeline */
	uint64_t group_batches;     /* batches it took from the staging area */
	uint64_t group_solo;        /* batches it prepared alone while in a group (it was
	                               too far behind, or could not join) */
	uint64_t group_redone;      /* batches its workers began again (dropped from the
	                               staging area before a member took it, or a stopped
	                               member's) */
	uint64_t group_reaped;      /* dead members it noticed and cleaned up after */
	/* The partitioned cache again (appended: the fields above keep their
	 * offsets). */
	int peer_wireup;            /* how its nodes found each other: enum
	                               coordl_wireup (0: no partitioned cache) */
} coordl_stats_t;

int coordl_get_stats(const coordl_loader_t *ld, coordl_stats_t *st);

/*
 * Multi-node jobs. When the environment names the job's nodes
 * (SYNERGY_PEERS and SYNERGY_NODE_INDEX, set by the SPANK plugin or the
 * job script) and the step's key (SYNERGY_PEER_KEY), or the process is a
 * rank that `srun --mpi=pmix` launched and has the key, the loader that
 * takes the job's cache shares it with the other nodes over TCP, with
 * peers that proved they hold the key: each node caches a different
 * part of the dataset (fixed by the seed, the epoch the loader first ran
 * and the rank layout; ranks numbered node by node), and an item this
 * node does not cache is read from the node that does, several items in
 * flight, before storage. After the first epoch storage is read only for
 * what no node caches. A node that dies or stalls costs a fallback to
 * storage for its part (SYNERGY_PEER_TIMEOUT_MS), never a hang or wrong
 * bytes (every item read from a peer is checked). Nothing changes on one
 * node. See coordl(3) and synergy_env.h.
 */

/*
 * Why the loader's cache is not what the configuration and environment
 * asked for, or NULL when it is: e.g. "cache 'job_7' is in use for another
 * dataset or version: running without a cache". Also set, when nothing
 * else was, by the first problem met while following SYNERGY_CACHE_GRANT
 * (an unreadable or malformed file). Owned by the loader, valid until
 * coordl_destroy(). The library never logs: print it if you want it seen.
 */
const char *coordl_cache_note(const coordl_loader_t *ld);

/*
 * Coordinated prep. A training loader whose environment names a group
 * (SYNERGY_GROUP, see synergy_env.h; meant for the tasks of a job array,
 * or jobs naming the same group, on one node) shares a staging area of prepared batches with the other loaders
 * of that group on the node that read the same dataset with the same
 * pipeline (seed, batch size, augmentation, output, rank and world size):
 * each batch is fetched and prepared once, by whichever member's workers
 * are free, and handed to every member. Nothing changes for the program:
 * every member receives exactly the batches it would receive alone, in the
 * same order (sample order depends only on (seed, epoch, rank, world
 * size)), except that a shared batch is read-only (coordl_batch_t.readonly;
 * copy it to change it). A member more than SYNERGY_GROUP_WINDOW batches
 * behind the fastest of the group falls back to preparing its own batches
 * with its own workers, without holding the others back, and rejoins when
 * it comes within half that. A member that exits or is killed is noticed
 * within a second and its part given to the others. The stats' group_*
 * fields and batches_prepared / batches_received show what it did.
 *
 * Why the loader is not in the group its environment names (the name is
 * bad, the staging area cannot hold two batches, the segment cannot be
 * made), or NULL when it is or none was named. Owned by the loader.
 */
const char *coordl_group_note(const coordl_loader_t *ld);

/* The most loaders one group has attached at once; a further one runs on
 * its own (coordl_group_note says so). */
#define COORDL_GROUP_MAX_MEMBERS 16

/* Description of the last corrupt item (path and reason), or NULL. The text
 * is owned by the loader and may change when the next corrupt item is met. */
const char *coordl_last_corrupt(const coordl_loader_t *ld);

/*
 * CUDA ingestion: copy a batch to the device on the loader's stream
 * (asynchronously when pin_memory was set) and set b->device_data.
 * device_data stays valid until coordl_release(). An asynchronous copy may
 * still be running when this returns: call coordl_device_wait(), or make
 * your stream wait on coordl_cuda_stream(), before reading device_data.
 * Returns -1 with ENOTSUP when built without CUDA or no device exists.
 */
int coordl_to_device(coordl_loader_t *ld, coordl_batch_t *b, coordl_error_t *err);

/* Block until the copy of b started by coordl_to_device() has finished
 * (returns at once for synchronous copies). 0, or -1 with EINVAL for a batch
 * not of this loader, ENOTSUP without CUDA. */
int coordl_device_wait(coordl_loader_t *ld, coordl_batch_t *b);

/* The loader's CUDA stream (a cudaStream_t) once coordl_to_device() has
 * been called, else NULL. */
void *coordl_cuda_stream(coordl_loader_t *ld);

/* Library version string, e.g. "0.1.0". */
const char *coordl_version(void);

#ifdef __cplusplus
}
#endif
#endif
