/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergy-profile: measure a job's data-stall sensitivity and manage the
 * profile store.
 *
 *   synergy-profile run [OPTIONS] DATASET      profile with the embedded loader
 *   synergy-profile show [--json] KEY|FILE     the profile as a table, and
 *                                              its stall report at the share
 *   synergy-profile what-if [--json] KEY|FILE --cpus N --cache BYTES [--nodes N]
 *                           [--members K]
 *   synergy-profile plot KEY|FILE --out FILE.png
 *   synergy-profile list                       every profile in the store
 *   synergy-profile measure [OPTIONS] DATASET --threads N --cache BYTES
 *                                              one direct measurement
 *
 * The store directory comes from --store, else ProfileStore= in
 * synergy.conf (--conf, $SYNERGY_CONF, beside $SLURM_CONF, /etc/slurm/synergy.conf). Errors go
 * to stderr prefixed "synergy-profile:", with exit status 1 (2 for usage).
 * Progress lines go to stderr when it is a terminal (or with --verbose).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/conf.h"
#include "common/file.h"
#include "common/parse.h"
#include "common/profile.h"
#include "common/store.h"
#include "coordl.h"
#include "coordl_ckpt.h"
#include "profiler/jobprofile.h"
#include "profiler/measure.h"
#include "profiler/model.h"
#include "profiler/report.h"
#include "synergy_env.h"
#include "synergy_policy.h"

#define PROG "synergy-profile"

static const char usage_text[] =
	"Usage: " PROG " COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"Measure a DNN training job's throughput as a function of CPU cores and\n"
	"cache memory per GPU, and manage the profile store the scheduler reads.\n"
	"\n"
	"Commands:\n"
	"  run [OPTIONS] DATASET     profile a dataset + pipeline with the embedded loader\n"
	"                            (a directory, file list, shard index, or its http://,\n"
	"                            https:// or s3:// URL)\n"
	"  run [OPTIONS] -- CMD ARGS profile a training command through its own coordl\n"
	"                            loader (SYNERGY_PROFILE_MODE=1)\n"
	"  show KEY|FILE             print a profile as a table, and what bounds the job\n"
	"                            at its share (GPU, prep or fetch), its stalls and\n"
	"                            the smallest grants that remove them\n"
	"  what-if KEY|FILE --cpus N --cache BYTES [--nodes N] [--members K]\n"
	"                            predicted throughput per GPU at that allocation,\n"
	"                            with the same stall report\n"
	"  plot KEY|FILE --out FILE.png\n"
	"                            plot throughput against cores and cache, marking\n"
	"                            the share and the best case\n"
	"  list                      list the profiles in the store\n"
	"  measure [OPTIONS] DATASET --threads N --cache BYTES\n"
	"                            measure one point directly (to check predictions)\n"
	"\n"
	"Common options:\n"
	"  --store DIR       profile store (default: ProfileStore= in synergy.conf,\n"
	"                    else " SYN_CONF_PROFILE_STORE_DEFAULT ")\n"
	"  --conf FILE       synergy.conf to read (default: $SYNERGY_CONF, else beside\n"
	"                    $SLURM_CONF, else " SYN_CONF_DEFAULT_PATH ")\n"
	"  -v, --verbose     progress lines even when stderr is not a terminal\n"
	"  -q, --quiet       no progress lines\n"
	"  -h, --help        this text\n"
	"  -V, --version     the version\n"
	"\n"
	"run and measure options:\n"
	"  --key KEY         store the profile under KEY ([A-Za-z0-9_.-], up to 64)\n"
	"  --out FILE        write the profile to FILE instead of the store\n"
	"  --model TEXT      free-text description kept in the profile\n"
	"  --gpu-rate R      emulated GPU ingestion, samples/s (default: unlimited)\n"
	"  --batch-size N    samples per batch (default 32)\n"
	"  --size N          output image side (default 224)\n"
	"  --eval            evaluation pipeline (resize + center crop)\n"
	"  --uint8           uint8 NHWC output instead of float NCHW\n"
	"  --seed N          shuffle and augmentation seed (default 0)\n"
	"  --max-threads N   top of the CPU search (default: online cores)\n"
	"  --grid-cpus LIST  profile rows, cores per GPU (default 1,2,3,4,5,6,8,9,12,16,24)\n"
	"  --grid-mem LIST   profile columns, GiB per GPU (default: 0, 1/4, 1/2, 3/4\n"
	"                    and all of the dataset)\n"
	"  --prop-cpus N     proportional share the grid is normalised to (default 3)\n"
	"  --prop-mem GIB    (default 62.5)\n"
	"  --windows N       timed windows per CPU point (default 5)\n"
	"  --window-batches N  batches per window (default 10)\n"
	"  --check-frac F    cache fraction of the measured memory point (default 0.5;\n"
	"                    0 skips it)\n"
	"  --cold MODE       make storage cold with: auto (default; = fadvise), fadvise\n"
	"                    (evict the dataset's files), drop (drop_caches, root), none\n"
	"  --threads N       (measure) worker threads\n"
	"  --cache BYTES     (measure, what-if) cache size; suffix K, M, G, T\n"
	"  --epochs N        (measure) measured epochs (default 3)\n"
	"  --members K       (measure) a coordinated-prep group of K loaders, one\n"
	"                    process each, sharing --threads workers (2..16);\n"
	"                    (what-if) each of K members of a group holds --cpus\n"
	"  --cpus N          (what-if) cores per GPU\n"
	"  --nodes N         (what-if) the job spans N nodes (1..1024, default 1), each\n"
	"                    with --cache per GPU: the partitioned cache makes the\n"
	"                    union of the N caches the job's cache\n"
	"  --json            (show, what-if) the stall report as one JSON object\n"
	"  --ckpt-bytes BYTES  (run) also measure CheckFreq checkpoints of this much state\n"
	"                    (model + optimizer; suffix K, M, G, T) and record their costs:\n"
	"                    jobs of the key are then sized with memory for two snapshot\n"
	"                    buffers\n"
	"  --ckpt-dir DIR    (run) where checkpoints go (the storage jobs checkpoint to;\n"
	"                    default $" SYNERGY_ENV_CKPT_DIR ")\n"
	"  --ckpt-reps N     (run) checkpoints measured (default 3)\n"
	"  --ckpt-bound F    (run, show) overhead bound for the interval CheckFreq would\n"
	"                    choose (default 0.035)\n"
	"\n"
	"See synergy-profile(1).\n";

enum {
	OPT_STORE = 256, OPT_CONF, OPT_KEY, OPT_OUT, OPT_MODEL, OPT_GPU_RATE, OPT_BATCH, OPT_SIZE,
	OPT_EVAL, OPT_UINT8, OPT_SEED, OPT_MAX_THREADS, OPT_GRID_CPUS, OPT_GRID_MEM, OPT_PROP_CPUS,
	OPT_PROP_MEM, OPT_WINDOWS, OPT_WINDOW_BATCHES, OPT_CHECK_FRAC, OPT_COLD, OPT_THREADS,
	OPT_CACHE, OPT_EPOCHS, OPT_CPUS, OPT_JSON, OPT_NODES, OPT_MEMBERS, OPT_CKPT_BYTES,
	OPT_CKPT_DIR, OPT_CKPT_REPS, OPT_CKPT_BOUND,
};

static const struct option long_opts[] = {
	{ "store", required_argument, NULL, OPT_STORE },
	{ "conf", required_argument, NULL, OPT_CONF },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "gpu-rate", required_argument, NULL, OPT_GPU_RATE },
	{ "batch-size", required_argument, NULL, OPT_BATCH },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "eval", no_argument, NULL, OPT_EVAL },
	{ "uint8", no_argument, NULL, OPT_UINT8 },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
	{ "grid-cpus", required_argument, NULL, OPT_GRID_CPUS },
	{ "grid-mem", required_argument, NULL, OPT_GRID_MEM },
	{ "prop-cpus", required_argument, NULL, OPT_PROP_CPUS },
	{ "prop-mem", required_argument, NULL, OPT_PROP_MEM },
	{ "windows", required_argument, NULL, OPT_WINDOWS },
	{ "window-batches", required_argument, NULL, OPT_WINDOW_BATCHES },
	{ "check-frac", required_argument, NULL, OPT_CHECK_FRAC },
	{ "cold", required_argument, NULL, OPT_COLD },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "cache", required_argument, NULL, OPT_CACHE },
	{ "epochs", required_argument, NULL, OPT_EPOCHS },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "nodes", required_argument, NULL, OPT_NODES },
	{ "members", required_argument, NULL, OPT_MEMBERS },
	{ "ckpt-bytes", required_argument, NULL, OPT_CKPT_BYTES },
	{ "ckpt-dir", required_argument, NULL, OPT_CKPT_DIR },
	{ "ckpt-reps", required_argument, NULL, OPT_CKPT_REPS },
	{ "ckpt-bound", required_argument, NULL, OPT_CKPT_BOUND },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *store, *conf, *key, *out, *model;
	syn__measure_opts_t mo;
	double grid_cpus[SYN_PROFILE_MAX_CPU], grid_mem[SYN_PROFILE_MAX_MEM];
	int n_grid_cpus, n_grid_mem;
	double prop_cpus, prop_mem;
	int threads, epochs;
	double cache, cpus;
	int have_cache, have_cpus;
	int nodes;  /* what-if: nodes the job spans (0: not given, 1) */
	int members; /* measure, what-if: members of a coordinated-prep group (0: 1) */
	int json;
	int verbose; /* -1 quiet, 0 auto, 1 verbose */
	double ckpt_bytes;     /* run: checkpoint state to measure (0: none) */
	const char *ckpt_dir;
	int ckpt_reps;
};

/* The overhead bound the checkpoint interval is reported for (--ckpt-bound). */
static double ckpt_bound = COORDL_CKPT_DEFAULT_BOUND;

static void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errmsg(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry '" PROG " --help'.\n", stderr);
	return 2;
}

/* Option values: common/parse.h's numbers, a usage error naming the option. */
static int parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
	if (syn_parse_double(s, lo, hi, out) < 0) {
		usage_error("--%s '%s': expected a number in %g..%g", opt, s, lo, hi);
		return -1;
	}
	return 0;
}

static int parse_int(const char *opt, const char *s, long lo, long hi, int *out)
{
	int64_t v;

	if (syn_parse_i64(s, lo, hi, &v) < 0) {
		usage_error("--%s '%s': expected an integer in %ld..%ld", opt, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* Parse options for every command (each command checks what it needs).
 * Returns the index of the first operand, or -1 after a usage error. */
static int parse_args(int argc, char **argv, struct args *a)
{
	uint64_t u;
	while (1) {
		int c = getopt_long(argc, argv, "vqhV", long_opts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case OPT_STORE: a->store = optarg; break;
		case OPT_CONF: a->conf = optarg; break;
		case OPT_KEY:
			if (!syn_key_valid(optarg)) {
				usage_error("--key '%s': expected 1..%d of [A-Za-z0-9_.-], not starting with '.'",
				            optarg, SYN_PROFILE_KEY_MAX);
				return -1;
			}
			a->key = optarg;
			break;
		case OPT_OUT: a->out = optarg; break;
		case OPT_MODEL:
			/* Checked now, not after a minute of measuring. */
			if (strlen(optarg) >= sizeof(((syn_profile_t *)0)->model)) {
				usage_error("--model: at most %zu characters",
				            sizeof(((syn_profile_t *)0)->model) - 1);
				return -1;
			}
			a->model = optarg;
			break;
		case OPT_GPU_RATE:
			if (parse_double("gpu-rate", optarg, 0, 1e9, &a->mo.gpu_rate) < 0)
				return -1;
			break;
		case OPT_BATCH:
			if (parse_int("batch-size", optarg, 1, 65536, &a->mo.batch_size) < 0)
				return -1;
			break;
		case OPT_SIZE:
			if (parse_int("size", optarg, 8, 4096, &a->mo.out_size) < 0)
				return -1;
			break;
		case OPT_EVAL: a->mo.mode = COORDL_MODE_EVAL; break;
		case OPT_UINT8: a->mo.layout = COORDL_LAYOUT_NHWC_U8; break;
		case OPT_SEED:
			if (syn_parse_u64(optarg, 0, 9007199254740992ULL, &u) < 0) {
				usage_error("--seed '%s': expected an integer in "
				            "0..9007199254740992", optarg);
				return -1;
			}
			a->mo.seed = u;
			break;
		case OPT_MAX_THREADS:
			if (parse_int("max-threads", optarg, 1, 1024, &a->mo.max_threads) < 0)
				return -1;
			break;
		case OPT_GRID_CPUS:
			if ((a->n_grid_cpus = syn__parse_list(optarg, a->grid_cpus, SYN_PROFILE_MAX_CPU)) < 0 ||
			    !(a->grid_cpus[0] > 0)) {
				usage_error("--grid-cpus '%s': expected up to %d increasing numbers > 0, "
				            "comma-separated", optarg, SYN_PROFILE_MAX_CPU);
				return -1;
			}
			break;
		case OPT_GRID_MEM:
			if ((a->n_grid_mem = syn__parse_list(optarg, a->grid_mem, SYN_PROFILE_MAX_MEM)) < 0) {
				usage_error("--grid-mem '%s': expected up to %d increasing numbers >= 0 (GiB), "
				            "comma-separated", optarg, SYN_PROFILE_MAX_MEM);
				return -1;
			}
			break;
		case OPT_PROP_CPUS:
			if (parse_double("prop-cpus", optarg, 0.001, 1024, &a->prop_cpus) < 0)
				return -1;
			break;
		case OPT_PROP_MEM:
			if (parse_double("prop-mem", optarg, 0, 1e6, &a->prop_mem) < 0)
				return -1;
			break;
		case OPT_WINDOWS:
			if (parse_int("windows", optarg, 1, 64, &a->mo.windows) < 0)
				return -1;
			break;
		case OPT_WINDOW_BATCHES:
			if (parse_int("window-batches", optarg, 1, 100000, &a->mo.window_batches) < 0)
				return -1;
			break;
		case OPT_CHECK_FRAC:
			if (parse_double("check-frac", optarg, 0, 1, &a->mo.check_frac) < 0)
				return -1;
			break;
		case OPT_COLD:
			if (!strcmp(optarg, "auto"))
				a->mo.cold = SYN__COLD_AUTO;
			else if (!strcmp(optarg, "fadvise"))
				a->mo.cold = SYN__COLD_FADVISE;
			else if (!strcmp(optarg, "drop"))
				a->mo.cold = SYN__COLD_DROP;
			else if (!strcmp(optarg, "none"))
				a->mo.cold = SYN__COLD_NONE;
			else {
				usage_error("--cold '%s': expected auto, fadvise, drop or none", optarg);
				return -1;
			}
			break;
		case OPT_THREADS:
			if (parse_int("threads", optarg, 1, 1024, &a->threads) < 0)
				return -1;
			break;
		case OPT_CACHE:
			if (syn_parse_size_real(optarg, 0, INFINITY, &a->cache) < 0) {
				usage_error("--cache '%s': expected bytes with optional suffix K, M, G, T", optarg);
				return -1;
			}
			a->have_cache = 1;
			break;
		case OPT_CKPT_BYTES:
			if (syn_parse_size_real(optarg, 1, (double)SYN_PROFILE_CKPT_MAX_BYTES,
						&a->ckpt_bytes) < 0) {
				usage_error("--ckpt-bytes '%s': expected 1 byte .. 1 PiB with optional "
				            "suffix K, M, G, T", optarg);
				return -1;
			}
			break;
		case OPT_CKPT_DIR: a->ckpt_dir = optarg; break;
		case OPT_CKPT_REPS:
			if (parse_int("ckpt-reps", optarg, 1, 16, &a->ckpt_reps) < 0)
				return -1;
			break;
		case OPT_CKPT_BOUND:
			if (parse_double("ckpt-bound", optarg, 0.0001, 1, &ckpt_bound) < 0)
				return -1;
			break;
		case OPT_EPOCHS:
			if (parse_int("epochs", optarg, 1, 64, &a->epochs) < 0)
				return -1;
			break;
		case OPT_CPUS:
			if (parse_double("cpus", optarg, 0.001, 1024, &a->cpus) < 0)
				return -1;
			a->have_cpus = 1;
			break;
		case OPT_JSON: a->json = 1; break;
		case OPT_NODES:
			if (parse_int("nodes", optarg, 1, SYN_MAX_JOB_NODES, &a->nodes) < 0)
				return -1;
			break;
		case OPT_MEMBERS:
			if (parse_int("members", optarg, 1, COORDL_GROUP_MAX_MEMBERS, &a->members) < 0)
				return -1;
			break;
		case 'v': a->verbose = 1; break;
		case 'q': a->verbose = -1; break;
		case 'h': fputs(usage_text, stdout); exit(0);
		case 'V': printf(PROG " %s (coordl %s)\n", PACKAGE_VERSION, coordl_version()); exit(0);
		default:
			usage_error("unknown option");
			return -1;
		}
	}
	return optind;
}

static syn_store_t *open_store(const struct args *a, int flags)
{
	syn_error_t err;
	const char *dir = a->store;
	syn_conf_t conf;
	syn_store_t *s = NULL;

	if (!dir) {
		/* synergy.conf through the one loader the plugins use, so that a
		 * file they refuse is refused here too. No synergy.conf (unless
		 * --conf named one): the documented default. */
		syn_conf_defaults(&conf);
		if (syn_conf_load(&conf, a->conf, &err) < 0 && (errno != ENOENT || a->conf)) {
			errmsg("%s", err.text);
			return NULL;
		}
		dir = conf.store_dir;
	}
	if (!(s = syn_store_create(dir, flags, &err)))
		errmsg("%s", err.text);
	return s;
}

/* A KEY or FILE operand: a name with a '/' or ending in .json that exists
 * is a file; anything else is a key in the store. */
static int load_profile(const struct args *a, const char *what, syn_profile_t *p)
{
	syn_error_t err;
	size_t n = strlen(what);
	struct stat st;

	if ((strchr(what, '/') || (n > 5 && !strcmp(what + n - 5, ".json"))) && stat(what, &st) == 0) {
		if (syn_profile_read_file(what, p, &err) < 0) {
			errmsg("%s", err.text);
			return -1;
		}
		return 0;
	}
	if (!syn_key_valid(what)) {
		errmsg("'%s' is neither a profile file nor a valid profile key", what);
		return -1;
	}
	syn_store_t *s = open_store(a, 0);
	if (!s)
		return -1;
	int rc = syn_store_get(s, what, p, &err);
	if (rc < 0) {
		if (errno == ENOENT)
			errmsg("no profile '%s' in %s", what, syn_store_dir(s));
		else
			errmsg("%s", err.text);
	}
	syn_store_destroy(s);
	return rc;
}

static void human_bytes(double b, char *buf, size_t len)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

/* What the profile's checkpoints cost and how often CheckFreq would take
 * them: iterations of ckpt_batch samples at the share's throughput. */
static void print_ckpt(const syn_profile_t *p, FILE *f)
{
	coordl_ckpt_costs_t c = { 0, p->ckpt_overhead_s, p->ckpt_snapshot_s, p->ckpt_persist_s };
	coordl_ckpt_choice_t ch;
	coordl_error_t err;
	char sb[32];

	human_bytes((double)p->ckpt_state_bytes, sb, sizeof(sb));
	fprintf(f, "ckpt      %s of state: snapshot %.3f s, write %.3f s, adds %.3f s to training; "
	        "memory %llu MB (2 buffers)\n", sb, p->ckpt_snapshot_s, p->ckpt_persist_s,
	        p->ckpt_overhead_s, (unsigned long long)syn_ckpt_mb(p));
	if (!(p->base_tput > 0) || p->ckpt_batch < 1) {
		fprintf(f, "          interval: unknown (no throughput at the share)\n");
		return;
	}
	c.iter_s = p->ckpt_batch / p->base_tput;
	if (coordl_ckpt_choose(&c, ckpt_bound, 1, UINT64_C(1) << 40, &ch, &err) < 0) {
		fprintf(f, "          interval: %s\n", err.text);
		return;
	}
	fprintf(f, "          CheckFreq at %.1f%%: every %llu iterations of %d samples (%.3f s each "
	        "at the share: %.1f s of work at risk), %.2f%% overhead\n", 100 * ckpt_bound,
	        (unsigned long long)ch.interval, p->ckpt_batch, c.iter_s,
	        (double)ch.interval * c.iter_s, 100 * ch.overhead);
}

static void print_profile(const syn_profile_t *p, FILE *f)
{
	char db[32], sb[32], mb[32], gb[32];
	fprintf(f, "profile   %s\n", p->key);
	if (p->model[0])
		fprintf(f, "model     %s\n", p->model);
	fprintf(f, "share     %g cpus, %g GiB per GPU = 1.0", p->prop_cpus, p->prop_mem_gb);
	if (p->base_tput > 0)
		fprintf(f, " (%.1f samples/s)", p->base_tput);
	fputc('\n', f);
	human_bytes(p->fetch_storage_bps, sb, sizeof(sb));
	human_bytes(p->fetch_memory_bps, mb, sizeof(mb));
	if (p->gpu_rate > 0)
		snprintf(gb, sizeof(gb), "%.1f samples/s", p->gpu_rate);
	else
		snprintf(gb, sizeof(gb), "unlimited");
	fprintf(f, "rates     gpu %s, prep %.1f samples/s per core, storage %s/s, cache %s/s",
	        gb, p->prep_rate_per_core, sb, mb);
	if (p->fetch_overlap > 0)
		fprintf(f, ", overlap %.2f", p->fetch_overlap);
	if (p->fetch_miss_s > 0)
		fprintf(f, ", a miss %.3f ms", 1e3 * p->fetch_miss_s);
	fputc('\n', f);
	if (p->fetch_latency_s > 0)
		fprintf(f, "remote    %.1f ms per request, %.1f requests in flight\n",
		        1e3 * p->fetch_latency_s, p->fetch_concurrency);
	human_bytes((double)p->dataset_bytes, db, sizeof(db));
	fprintf(f, "dataset   %llu items, %s\n", (unsigned long long)p->dataset_items, db);
	if (p->ckpt_state_bytes)
		print_ckpt(p, f);
	if (p->machine[0])
		fprintf(f, "machine   %s\n", p->machine);
	if (p->date[0] || p->tool[0])
		fprintf(f, "date      %s%s%s%s\n", p->date, p->tool[0] ? " (" : "", p->tool,
		        p->tool[0] ? ")" : "");
	fprintf(f, "\nnormalised throughput per GPU (rows: cpus, columns: cache GiB)\n");
	fprintf(f, "%8s", "cpus");
	for (int j = 0; j < p->n_mem; j++)
		fprintf(f, " %8.4g", p->mem_gb[j]);
	fputc('\n', f);
	for (int i = 0; i < p->n_cpu; i++) {
		fprintf(f, "%8g", p->cpus[i]);
		for (int j = 0; j < p->n_mem; j++)
			fprintf(f, " %8.4f", p->tput[i][j]);
		fputc('\n', f);
	}
}

/* The stall report at (cpus, mem_gb) of p, or -1 after a message. */
static int make_report(const syn_profile_t *p, double cpus, double mem_gb, syn__report_t *r)
{
	char msg[256];
	if (syn__report(p, cpus, mem_gb, r, msg, sizeof(msg)) < 0) {
		errmsg("%s", msg);
		return -1;
	}
	return 0;
}

static void print_report(const syn__report_t *r, const syn_profile_t *p, FILE *f)
{
	char buf[64];
	fprintf(f, "stalls at %g cpus, %.4g GiB per GPU (DS-Analyzer: time per sample)\n", r->cpus,
	        r->mem_gb);
	fprintf(f, "  bound      %s\n", syn__bound_name(r->bound));
	fprintf(f, "  time       gpu %.1f%%, prep stall %.1f%%, fetch stall %.1f%%\n", 100 * r->gpu_frac,
	        100 * r->prep_stall, 100 * r->fetch_stall);
	if (!r->gpu_measured)
		fprintf(f, "  note       no GPU rate in the profile: stalls are relative to its best cell\n");
	if (r->prep_stall <= SYN__REPORT_EPS)
		fprintf(f, "  prep       no prep stall\n");
	else if (r->prep_cpus > 0)
		fprintf(f, "  prep       %g cpus per GPU (%+g) remove it: with the data cached they keep "
		        "up with the GPU\n", r->prep_cpus, r->prep_cpus - r->cpus);
	else
		fprintf(f, "  prep       no row of the profile removes it (%g cpus, data cached: %.1f%% "
		        "of the GPU's rate)\n", p->cpus[p->n_cpu - 1],
		        100 * syn_profile_eval(p, p->cpus[p->n_cpu - 1], r->cached_gb) / r->gpu);
	if (r->fetch_stall <= SYN__REPORT_EPS)
		fprintf(f, "  fetch      no fetch stall\n");
	else {
		if (r->fetch_mem_gb >= 0)
			snprintf(buf, sizeof(buf), "%.4g GiB of cache per GPU remove it", r->fetch_mem_gb);
		else
			snprintf(buf, sizeof(buf), "no cache on the profile removes it");
		fprintf(f, "  fetch      at %g cpus: %s", r->cpus, buf);
		if (r->fetch_half_mem_gb >= 0)
			fprintf(f, "; %.4g GiB halve it", r->fetch_half_mem_gb);
		fputc('\n', f);
	}
	fprintf(f, "  best case  %g cpus, %.4g GiB per GPU: %.4f", r->best_cpus, r->best_mem_gb,
	        r->best_tput);
	if (p->base_tput > 0)
		fprintf(f, " (%.1f samples/s)", r->best_tput * p->base_tput);
	fputc('\n', f);
}

/* The report as one JSON object on stdout; absent answers are null. */
static int print_report_json(const syn__report_t *r, const syn_profile_t *p, int nodes, int members)
{
	json_t *o = json_pack("{s:s, s:{s:f, s:f}, s:{s:f, s:f}, s:{s:f, s:f}, s:{s:f, s:b}, s:s,"
	                      " s:{s:f, s:f, s:f}, s:{s:o, s:o, s:o}, s:{s:f, s:f, s:f}}",
	                      "key", p->key,
	                      "grant", "cpus", r->cpus, "mem_gb", r->mem_gb,
	                      "share", "cpus", p->prop_cpus, "mem_gb", p->prop_mem_gb,
	                      "throughput", "normalised", r->tput, "samples_per_s", r->samples_per_s,
	                      "gpu", "normalised", r->gpu, "measured", r->gpu_measured,
	                      "bound", syn__bound_name(r->bound),
	                      "time", "gpu", r->gpu_frac, "prep_stall", r->prep_stall,
	                      "fetch_stall", r->fetch_stall,
	                      "remove",
	                      "prep_cpus", r->prep_cpus > 0 ? json_real(r->prep_cpus) : json_null(),
	                      "fetch_mem_gb", r->fetch_mem_gb >= 0 ? json_real(r->fetch_mem_gb) : json_null(),
	                      "fetch_half_mem_gb",
	                      r->fetch_half_mem_gb >= 0 ? json_real(r->fetch_half_mem_gb) : json_null(),
	                      "best", "cpus", r->best_cpus, "mem_gb", r->best_mem_gb,
	                      "normalised", r->best_tput);
	if (o && ((nodes > 1 && json_object_set_new(o, "nodes", json_integer(nodes)) < 0) ||
	          (members > 1 && json_object_set_new(o, "members", json_integer(members)) < 0))) {
		json_decref(o);
		o = NULL;
	}
	if (!o) {
		errmsg("cannot build the JSON report");
		return -1;
	}
	int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	json_decref(o);
	if (rc < 0 || fputc('\n', stdout) == EOF) {
		errmsg("writing the JSON report: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int cmd_show(const struct args *a, int argc, char **argv)
{
	syn_profile_t p;
	syn__report_t r;
	if (argc != 1)
		return usage_error("show: expected one KEY or FILE");
	if (load_profile(a, argv[0], &p) < 0 || make_report(&p, p.prop_cpus, p.prop_mem_gb, &r) < 0)
		return 1;
	if (a->json)
		return print_report_json(&r, &p, 1, 1) < 0;
	print_profile(&p, stdout);
	fputc('\n', stdout);
	print_report(&r, &p, stdout);
	return 0;
}

static int cmd_what_if(const struct args *a, int argc, char **argv)
{
	syn_profile_t raw, p;
	int nodes = a->nodes > 0 ? a->nodes : 1;
	if (argc != 1)
		return usage_error("what-if: expected one KEY or FILE");
	if (!a->have_cpus || !a->have_cache)
		return usage_error("what-if: --cpus N and --cache BYTES are required");
	syn__report_t rep;
	double gib = a->cache / SYN__GIB;
	if (load_profile(a, argv[0], &raw) < 0)
		return 1;
	/* On N nodes the job's cache is the union of its nodes' caches
	 * (synergy_policy.h): the profile as one node of it sees it. */
	if (syn_profile_union(&raw, nodes, &p) < 0) {
		errmsg("--nodes %d: %s", nodes, strerror(errno));
		return 1;
	}
	/* A coordinated-prep group of K members, each holding --cpus per
	 * GPU: every member trains as one job holding all K members' cores
	 * would (syn_profile_group, the node agent's model). */
	int members = a->members > 0 ? a->members : 1;
	if (members > 1) {
		syn_profile_t one = p;
		if (syn_profile_group(&one, members, &p) < 0) {
			errmsg("--members %d: %s", members, strerror(errno));
			return 1;
		}
	}
	if (make_report(&p, a->cpus, gib, &rep) < 0)
		return 1;
	if (a->json)
		return print_report_json(&rep, &p, nodes, members) < 0;
	double v = syn_profile_eval(&p, a->cpus, gib);
	char cb[32], ub[32], pb[32];
	human_bytes(a->cache, cb, sizeof(cb));
	printf("profile      %s\n", p.key);
	printf("allocation   %g cpus, %s cache per GPU%s\n", a->cpus, cb, nodes > 1 ? " on each node" : "");
	if (nodes > 1) {
		uint64_t part = syn_partition_cache_mb(raw.dataset_bytes, nodes);
		human_bytes(a->cache * nodes, ub, sizeof(ub));
		if (part)
			human_bytes((double)part * 1048576.0, pb, sizeof(pb));
		printf("nodes        %d, partitioned cache: the job's cache is their union, %s per GPU%s%s%s\n",
		       nodes, ub, part ? "; a node holds at most its part of the dataset, " : "",
		       part ? pb : "", part ? " per node" : "");
	}
	if (members > 1)
		printf("group        %d members sharing prep (coordinated prep): each trains as one job "
		       "with %g cpus per GPU would\n", members, a->cpus * members);
	printf("normalised   %.4f (1.0 = %g cpus, %g GiB)\n", v, raw.prop_cpus, raw.prop_mem_gb);
	if (p.base_tput > 0)
		printf("throughput   %.1f samples/s per GPU\n", v * p.base_tput);
	if (p.fetch_latency_s > 0 && p.fetch_concurrency > 0) {
		/* The storage side of the prediction: Q requests of latency L
		 * in flight bring Q/L items/s; the cache (the union) serves
		 * its share. */
		syn__rates_t r;
		memset(&r, 0, sizeof(r));
		r.fetch_latency = p.fetch_latency_s;
		r.fetch_concurrency = p.fetch_concurrency;
		r.fetch_memory_bps = p.fetch_memory_bps;
		r.dataset_bytes = p.dataset_bytes;
		r.dataset_items = p.dataset_items;
		printf("remote fetch %.1f samples/s from storage (%.1f ms x %.1f requests in flight), "
		       "hit rate %.2f: at most %.1f samples/s\n", syn__model_storage_items(&r),
		       1e3 * p.fetch_latency_s, p.fetch_concurrency,
		       syn__model_hit_rate(&r, a->cache * nodes), syn__model_fetch(&r, a->cache * nodes));
	}
	if (a->cpus > p.cpus[p.n_cpu - 1] || gib > p.mem_gb[p.n_mem - 1] || a->cpus < p.cpus[0] ||
	    gib < p.mem_gb[0])
		printf("note         outside the profiled grid: clamped to its edge\n");
	print_report(&rep, &p, stdout);
	return 0;
}

static int list_cb(const char *key, const syn_profile_t *p, const char *problem, void *arg)
{
	int *bad = arg;
	if (!p) {
		errmsg("skipped %s", problem);
		(*bad)++;
		return 0;
	}
	double peak = 0;
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem; j++)
			if (p->tput[i][j] > peak)
				peak = p->tput[i][j];
	printf("%-24s %6.2f %10.1f %5dx%-3d %-20s %s\n", key, peak, p->base_tput, p->n_cpu, p->n_mem,
	       p->date[0] ? p->date : "-", p->model);
	return 0;
}

static int cmd_list(const struct args *a, int argc, char **argv)
{
	syn_error_t err;
	int bad = 0;
	if (argc != 0)
		return usage_error("list: takes no operands");
	syn_store_t *s = open_store(a, 0);
	if (!s)
		return 1;
	printf("%-24s %6s %10s %9s %-20s %s\n", "KEY", "PEAK", "BASE/s", "GRID", "DATE", "MODEL");
	int n = syn_store_list(s, list_cb, &bad, &err);
	if (n < 0)
		errmsg("%s", err.text);
	syn_store_destroy(s);
	return n < 0 || bad ? 1 : 0;
}

static int cmd_plot(const struct args *a, int argc, char **argv)
{
	syn_profile_t p;
	char tmpl[] = "/tmp/synergy-plot.XXXXXX";
	int rv = 1, fd = -1;
	FILE *f = NULL;

	if (argc != 1)
		return usage_error("plot: expected one KEY or FILE");
	if (!a->out)
		return usage_error("plot: --out FILE.png is required");
	syn__report_t r;
	if (load_profile(a, argv[0], &p) < 0 || make_report(&p, p.prop_cpus, p.prop_mem_gb, &r) < 0)
		return 1;
	if ((fd = mkstemp(tmpl)) < 0 || !(f = fdopen(fd, "w"))) {
		errmsg("cannot create a temporary file: %s", strerror(errno));
		goto out;
	}
	fd = -1;
	/* The data blocks: one per cache column (throughput vs cores), then
	 * one per cores row (throughput vs cache). */
	for (int j = 0; j < p.n_mem; j++) {
		for (int i = 0; i < p.n_cpu; i++)
			fprintf(f, "%g %g\n", p.cpus[i], p.tput[i][j]);
		fprintf(f, "\n\n");
	}
	for (int i = 0; i < p.n_cpu; i++) {
		for (int j = 0; j < p.n_mem; j++)
			fprintf(f, "%g %g\n", p.mem_gb[j], p.tput[i][j]);
		fprintf(f, "\n\n");
	}
	if (fclose(f) != 0) {
		f = NULL;
		errmsg("%s: %s", tmpl, strerror(errno));
		goto out;
	}
	f = NULL;
	FILE *g = popen("gnuplot", "w");
	if (!g) {
		errmsg("cannot run gnuplot: %s", strerror(errno));
		goto out;
	}
	fprintf(g, "set terminal pngcairo size 1200,500 noenhanced\n");
	fprintf(g, "set output '%s'\n", a->out);
	fprintf(g, "set multiplot layout 1,2 title 'profile %s (1.0 = %g cpus, %g GiB per GPU)'\n",
	        p.key, p.prop_cpus, p.prop_mem_gb);
	fprintf(g, "set grid\nset key left top\nset yrange [0:*]\nset ylabel 'normalised throughput'\n");
	/* The share and the best case, as points with labels, on both
	 * panels: the share's bound and stalls are in the title. */
	fprintf(g, "set title 'at the share: %s-bound, prep stall %.0f%%, fetch stall %.0f%%'\n",
	        syn__bound_name(r.bound), 100 * r.prep_stall, 100 * r.fetch_stall);
	fprintf(g, "set label 1 'share' at %g,%g point pointtype 7 pointsize 1.5 offset 1,-1\n",
	        p.prop_cpus, r.tput);
	fprintf(g, "set label 2 'best case' at %g,%g point pointtype 9 pointsize 1.5 offset 1,1\n",
	        r.best_cpus, r.best_tput);
	fprintf(g, "set xlabel 'CPU cores per GPU'\n");
	for (int j = 0; j < p.n_mem; j++)
		fprintf(g, "%s '%s' index %d using 1:2 with linespoints title '%g GiB'%s", j ? "" : "plot",
		        tmpl, j, p.mem_gb[j], j + 1 < p.n_mem ? ", \\\n" : "\n");
	fprintf(g, "set label 1 'share' at %g,%g point pointtype 7 pointsize 1.5 offset 1,-1\n",
	        p.prop_mem_gb, r.tput);
	fprintf(g, "set label 2 'best case' at %g,%g point pointtype 9 pointsize 1.5 offset 1,1\n",
	        r.best_mem_gb, r.best_tput);
	fprintf(g, "set xlabel 'cache GiB per GPU'\nset key right bottom\n");
	for (int i = 0; i < p.n_cpu; i++)
		fprintf(g, "%s '%s' index %d using 1:2 with linespoints title '%g cpus'%s", i ? "" : "plot",
		        tmpl, p.n_mem + i, p.cpus[i], i + 1 < p.n_cpu ? ", \\\n" : "\n");
	fprintf(g, "unset multiplot\n");
	int st = pclose(g);
	if (st != 0) {
		errmsg("gnuplot failed (status %d) writing %s", st, a->out);
		goto out;
	}
	rv = 0;
out:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	unlink(tmpl);
	return rv;
}

static void on_progress(void *arg, const char *msg)
{
	fprintf(stderr, PROG ": %s\n", msg);
}

static int want_progress(const struct args *a)
{
	return a->verbose > 0 || (a->verbose == 0 && isatty(STDERR_FILENO));
}

/* Grid, metadata and normalisation of a profile from measured rates;
 * `what` names the dataset or command in messages. Returns 0 or -1. */
static int build_profile(const struct args *a, const syn__rates_t *rates, const char *what,
                         const char *origin, int max_measured, syn_profile_t *p)
{
	char msg[256];
	double cpus[SYN_PROFILE_MAX_CPU], mem[SYN_PROFILE_MAX_MEM];
	int n_cpu = a->n_grid_cpus, n_mem = a->n_grid_mem;
	double def_cpus[SYN_PROFILE_MAX_CPU], def_mem[SYN_PROFILE_MAX_MEM];
	int n_def_cpu, n_def_mem;
	syn__grid_default(rates->dataset_bytes, 0, def_cpus, &n_def_cpu, def_mem, &n_def_mem);
	if (n_cpu)
		memcpy(cpus, a->grid_cpus, sizeof(cpus));
	else {
		n_cpu = n_def_cpu;
		memcpy(cpus, def_cpus, sizeof(cpus));
	}
	if (n_mem)
		memcpy(mem, a->grid_mem, sizeof(mem));
	else {
		n_mem = n_def_mem;
		memcpy(mem, def_mem, sizeof(mem));
	}
	memset(p, 0, sizeof(*p));
	if (syn__model_grid(rates, cpus, n_cpu, mem, n_mem, a->prop_cpus, a->prop_mem, p, msg,
	                    sizeof(msg)) < 0) {
		errmsg("%s: building the profile grid: %s", what, msg);
		return -1;
	}
	snprintf(p->key, sizeof(p->key), "%s", a->key);
	if (a->model)
		snprintf(p->model, sizeof(p->model), "%s", a->model);
	else
		snprintf(p->model, sizeof(p->model), "%.60s, %s; cpus > %d extrapolated", what, origin,
		         max_measured);
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(p->machine, sizeof(p->machine), "%.60s %.20s, %ld cores", u.nodename, u.machine,
		         sysconf(_SC_NPROCESSORS_ONLN));
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(p->date, sizeof(p->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(p->tool, sizeof(p->tool), PROG " %s", PACKAGE_VERSION);
	return 0;
}

/* Print p and write it to --out and/or the store. Returns 0 or -1. */
static int save_profile(const struct args *a, const syn_profile_t *p, syn_store_t *s)
{
	syn_error_t err;
	putchar('\n');
	print_profile(p, stdout);
	if (a->out && syn_profile_write_file(a->out, p, &err) < 0) {
		errmsg("%s", err.text);
		return -1;
	}
	if (s && syn_store_put(s, p, &err) < 0) {
		errmsg("%s", err.text);
		return -1;
	}
	if (s)
		fprintf(stderr, PROG ": stored '%s' in %s\n", p->key, syn_store_dir(s));
	return 0;
}

/* Measure checkpoints of --ckpt-bytes with the loader at the share's
 * cores per GPU, print what was measured and record it in p. 0 or -1. */
static int measure_ckpt(const struct args *a, syn_profile_t *p)
{
	syn__ckpt_cost_t c;
	char msg[256];
	int threads = (int)(p->prop_cpus + 0.5);

	if (threads < 1)
		threads = 1;
	if (syn__measure_ckpt(&a->mo, threads, (uint64_t)a->ckpt_bytes, a->ckpt_dir,
	                      a->ckpt_reps ? a->ckpt_reps : 3, &c, msg, sizeof(msg)) < 0) {
		errmsg("%s", msg);
		return -1;
	}
	printf("checkpoint %10.1f MiB to %s, %d loader threads, %d times:\n",
	       (double)c.state_bytes / 1048576, a->ckpt_dir, c.threads, c.reps);
	printf("  snapshot %8.3f s  (%.3f-%.3f)\n", c.snapshot_s.med, c.snapshot_s.min,
	       c.snapshot_s.max);
	printf("  write    %8.3f s  (%.3f-%.3f)\n", c.persist_s.med, c.persist_s.min,
	       c.persist_s.max);
	printf("  adds     %8.3f s  (%.3f-%.3f) to iterations of %.3f s\n", c.overhead_s.med,
	       c.overhead_s.min, c.overhead_s.max, c.iter_s.med);
	p->ckpt_state_bytes = c.state_bytes;
	p->ckpt_batch = a->mo.batch_size;
	/* Milliseconds: the profile shows them as typed. */
	p->ckpt_snapshot_s = round(c.snapshot_s.med * 1e3) / 1e3;
	p->ckpt_persist_s = round(c.persist_s.med * 1e3) / 1e3;
	p->ckpt_overhead_s = round(c.overhead_s.med * 1e3) / 1e3;
	return 0;
}

static int cmd_run_job(struct args *a, int argc, char **argv);

static int cmd_run(struct args *a, int argc, char **argv, int had_dashdash)
{
	syn__measure_result_t res;
	syn_profile_t p;
	char msg[256], origin[96];
	syn_store_t *s = NULL;
	int rv = 1;

	if (had_dashdash) {
		if (argc < 1)
			return usage_error("run --: expected a command after '--'");
		if (!a->key && !a->out)
			return usage_error("run: give --key KEY (store) and/or --out FILE");
		return cmd_run_job(a, argc, argv);
	}
	if (argc != 1)
		return usage_error("run: expected one DATASET");
	if (!a->key && !a->out)
		return usage_error("run: give --key KEY (store) and/or --out FILE");
	if (a->out && !a->key)
		a->key = "profile";
	if (a->ckpt_bytes > 0 && !a->ckpt_dir && !(a->ckpt_dir = getenv(SYNERGY_ENV_CKPT_DIR)))
		return usage_error("run --ckpt-bytes: give --ckpt-dir DIR (where jobs checkpoint) or "
		                   "set " SYNERGY_ENV_CKPT_DIR);
	a->mo.dataset = argv[0];
	if (want_progress(a))
		a->mo.progress = on_progress;
	/* Open the store first: a profile measured for a minute and then
	 * thrown away because of a typo'd store is worse than an early error. */
	if (!a->out && !(s = open_store(a, SYN_STORE_CREATE)))
		return 1;

	if (syn__measure(&a->mo, &res, msg, sizeof(msg)) < 0) {
		errmsg("%s: %s", argv[0], msg);
		goto out;
	}
	int max_measured = 0;
	for (int i = 0; i < res.n_points; i++)
		if (res.point_threads[i] > max_measured)
			max_measured = res.point_threads[i];
	snprintf(origin, sizeof(origin), "batch %d, %dpx %s", a->mo.batch_size, a->mo.out_size,
	         a->mo.mode == COORDL_MODE_EVAL ? "eval" : "train");
	if (build_profile(a, &res.rates, argv[0], origin, max_measured, &p) < 0)
		goto out;

	/* The measurements behind the profile, for the record. */
	printf("measured in %.1f s (gpu %.1f, fetch %.1f, warm-up %.1f, cpu sweep %.1f, memory check %.1f)\n",
	       res.wall, res.seconds[0], res.seconds[1], res.seconds[2], res.seconds[3], res.seconds[4]);
	printf("storage: %s\n", res.cold_note);
	if (res.rates.gpu > 0)
		printf("gpu ingestion      %10.1f samples/s  (%.1f-%.1f)\n", res.gpu.med, res.gpu.min,
		       res.gpu.max);
	printf("fetch from storage %10.1f MiB/s\n", res.storage_bps.med / 1048576);
	if (res.rates.fetch_latency > 0)
		printf("remote storage     %10.1f ms per request, %.1f requests in flight\n",
		       1e3 * res.rates.fetch_latency, res.rates.fetch_concurrency);
	printf("fetch from cache   %10.1f MiB/s\n", res.memory_bps.med / 1048576);
	for (int i = 0; i < res.n_points; i++)
		printf("prep %3d thread%s   %10.1f samples/s  (%.1f-%.1f)\n", res.point_threads[i],
		       res.point_threads[i] > 1 ? "s" : " ", res.point[i].med, res.point[i].min,
		       res.point[i].max);
	for (int i = 0; i < res.n_cold; i++) {
		printf("cold %3d thread%s   %10.1f samples/s  (%.1f-%.1f), ", res.cold_threads[i],
		       res.cold_threads[i] > 1 ? "s" : " ", res.cold_rate[i].med, res.cold_rate[i].min,
		       res.cold_rate[i].max);
		if (res.local)
			printf("a miss adds %.3f ms per item per worker\n", 1e3 * res.cold_miss[i]);
		else
			printf("overlap %.3f\n", res.cold_overlap[i]);
	}
	if (res.check_cache_bytes > 0)
		printf("memory check       %10.1f samples/s measured at %.0f%% cache (hit rate %.3f), "
		       "model %.1f (%+.1f%%)\n", res.check_measured.med,
		       100.0 * res.check_cache_bytes / (double)res.rates.dataset_bytes, res.check_hit_rate,
		       res.check_predicted,
		       100 * (res.check_predicted - res.check_measured.med) / res.check_measured.med);
	if (a->ckpt_bytes > 0 && measure_ckpt(a, &p) < 0)
		goto out;
	if (save_profile(a, &p, s) < 0)
		goto out;
	rv = 0;
out:
	syn_store_destroy(s);
	return rv;
}

/*
 * Read a report written by a loader in profiling mode (the format at
 * SYNERGY_ENV_PROFILE_OUT, synergy_env.h; parsed by jobprofile.c) into
 * points, printing one line per point. Returns the number of points, or -1
 * after a message.
 */
static int read_job_report(const char *path, syn__job_point_t *pts, int max, uint64_t *bytes,
                           uint64_t *items, int *complete)
{
	syn__job_report_t *r = malloc(sizeof(*r));
	char msg[256], *text = NULL;
	size_t len = 0;
	int n = -1;

	if (!r) {
		errmsg("out of memory");
		return -1;
	}
	if (!(text = syn_file_read(AT_FDCWD, path, SYN__REPORT_MAX_BYTES, SYN_FILE_FOLLOW, &len))) {
		if (errno == EFBIG)
			errmsg("%s: longer than any report (%d bytes)", path,
			       SYN__REPORT_MAX_BYTES);
		else
			errmsg("%s: %s", path, strerror(errno));
		goto out;
	}
	if (syn__job_report_parse(text, len, path, r, msg, sizeof(msg)) < 0) {
		errmsg("%s", msg);
		goto out;
	}
	*bytes = r->dataset_bytes;
	*items = r->dataset_items;
	*complete = r->complete;
	for (int i = 0; i < r->n && i < max; i++) {
		const syn__report_point_t *q = &r->pt[i];
		printf("job %3d thread%s    %10.1f samples/s  (%.1f-%.1f), stall %.1f%%\n", q->threads,
		       q->threads > 1 ? "s" : " ", q->tput, q->tput_min, q->tput_max,
		       q->wall > 0 ? 100 * q->stall / q->wall : 0.0);
	}
	n = syn__job_report_points(r, pts, max);
out:
	free(text);
	free(r);
	return n;
}

/*
 * `run -- CMD ARGS`: run a training command whose coordl loader profiles
 * itself (SYNERGY_PROFILE_MODE=1) and writes a report, then build the
 * profile from it. The command's own exit status is forwarded when it
 * fails.
 */
static int cmd_run_job(struct args *a, int argc, char **argv)
{
	char dir[] = "/tmp/synergy-profile.XXXXXX", report[64];
	syn__job_point_t pts[SYN__MAX_POINTS];
	syn__rates_t rates;
	syn_profile_t p;
	syn_store_t *s = NULL;
	uint64_t bytes = 0, items = 0;
	int rv = 1, status, complete = 0, have_dir = 0;
	pid_t pid;

	(void)argc;
	if (a->out && !a->key)
		a->key = "profile";
	if (!a->out && !(s = open_store(a, SYN_STORE_CREATE)))
		return 1;
	if (!mkdtemp(dir)) {
		errmsg("cannot create a temporary directory: %s", strerror(errno));
		goto out;
	}
	have_dir = 1;
	snprintf(report, sizeof(report), "%s/report.json", dir);
	fflush(NULL);
	if ((pid = fork()) < 0) {
		errmsg("cannot start '%s': %s", argv[0], strerror(errno));
		goto out;
	}
	if (pid == 0) {
		setenv(SYNERGY_ENV_PROFILE_MODE, "1", 1);
		setenv(SYNERGY_ENV_PROFILE_OUT, report, 1);
		setenv(SYNERGY_ENV_PROFILE_KEY, a->key, 1);
		/* The search sets the worker count itself. */
		unsetenv(SYNERGY_ENV_THREADS);
		execvp(argv[0], argv);
		fprintf(stderr, PROG ": cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			errmsg("waiting for '%s': %s", argv[0], strerror(errno));
			goto out;
		}
	if (WIFSIGNALED(status)) {
		errmsg("'%s' was killed by signal %d", argv[0], WTERMSIG(status));
		rv = 128 + WTERMSIG(status);
		goto out;
	}
	if (WEXITSTATUS(status) != 0) {
		errmsg("'%s' exited with status %d", argv[0], WEXITSTATUS(status));
		rv = WEXITSTATUS(status);
		goto out;
	}
	if (access(report, F_OK) != 0) {
		errmsg("'%s' produced no profiling report: it must load its data with coordl "
		       "(libcoordl or its Python binding) and create a loader", argv[0]);
		goto out;
	}
	int n = read_job_report(report, pts, SYN__MAX_POINTS, &bytes, &items, &complete);
	if (n < 0)
		goto out;
	if (!complete)
		fprintf(stderr, PROG ": note: '%s' ended before the CPU search finished; the profile "
		        "uses the %d point%s measured\n", argv[0], n, n == 1 ? "" : "s");
	if (syn__rates_from_job(pts, n, bytes, items, &rates) < 0) {
		errmsg("'%s' ran too few batches for one measured point (its loader needs a few "
		       "dozen batches per thread count)", argv[0]);
		goto out;
	}
	int max_measured = 0;
	for (int i = 0; i < n; i++)
		max_measured = pts[i].threads > max_measured ? pts[i].threads : max_measured;
	printf("gpu ingestion      %10.1f samples/s  (time between batch requests)\n", rates.gpu);
	printf("fetch from storage %10.1f MiB/s\n", rates.fetch_storage_bps / 1048576);
	if (build_profile(a, &rates, argv[0], "profiled in its own loader", max_measured, &p) < 0 ||
	    save_profile(a, &p, s) < 0)
		goto out;
	rv = 0;
out:
	if (have_dir) {
		unlink(report);
		rmdir(dir);
	}
	syn_store_destroy(s);
	return rv;
}

/*
 * measure --members K: a coordinated-prep group of K loaders on this
 * node, --threads workers in all, measured directly: per member what
 * measure prints for one job, then the group's line. The model's group
 * (synergy_policy.h, syn_node_tune): every member runs as one job holding
 * the whole group's workers would, so compare each member's samples/s
 * with a plain `measure --threads N` at the group's N, and the group's
 * CPU time with that job's.
 */
static int measure_group(struct args *a, const char *dataset)
{
	syn__group_point_t g;
	char msg[256];
	double rmin = 0, rmed = 0, rmax = 0, prep = 0, recv = 0, samples = 0;
	int epochs = a->epochs ? a->epochs : 3;

	if (a->threads < a->members)
		return usage_error("measure: --members %d needs --threads %d or more (one worker each)",
		                   a->members, a->members);
	if (syn__measure_group(&a->mo, a->members, a->threads, a->cache, epochs, &g, msg,
	                       sizeof(msg)) < 0) {
		errmsg("%s: %s", dataset, msg);
		return 1;
	}
	for (int i = 0; i < g.members; i++) {
		const syn__point_detail_t *d = &g.detail[i];
		double n = d->items > 0 ? d->items : 1;
		printf("member %d threads %d cache %.0f hit_rate %.3f samples_per_s %.1f min %.1f max %.1f "
		       "prep_ms %.4f fetch_ms %.4f batches_prepared %.2f received %.2f members %d\n", i,
		       g.threads[i], a->cache, g.hit_rate[i], g.rate[i].med, g.rate[i].min,
		       g.rate[i].max, 1e3 * d->prep_time / n, 1e3 * d->fetch_time / n, d->prepared,
		       d->received, d->group_members);
		if (i == 0 || g.rate[i].med < rmin)
			rmin = g.rate[i].med;
		if (i == 0 || g.rate[i].med > rmax)
			rmax = g.rate[i].med;
		rmed += g.rate[i].med / g.members;
		prep += d->prepared;
		recv += d->received;
		samples += d->samples;
	}
	/* passes: batches the group's workers prepared per batch a member
	 * consumed (1: each once for all; K: no sharing). */
	double per_member = (prep + recv) / g.members;
	printf("group members %d threads %d cache %.0f samples_per_s_member min %.1f mean %.1f max %.1f "
	       "passes %.2f cpu_s %.2f cpu_ms_per_member_sample %.4f wall_s %.1f\n", g.members, a->threads,
	       a->cache, rmin, rmed, rmax, per_member > 0 ? prep / per_member : 0, g.cpu_time,
	       samples > 0 ? 1e3 * g.cpu_time / (samples / g.members) : 0, g.wall);
	return 0;
}

static int cmd_measure(struct args *a, int argc, char **argv)
{
	syn__stat_t st;
	syn__point_detail_t d;
	double hit;
	char msg[256];
	if (argc != 1)
		return usage_error("measure: expected one DATASET");
	if (!a->threads || !a->have_cache)
		return usage_error("measure: --threads N and --cache BYTES are required");
	a->mo.dataset = argv[0];
	if (a->members > 1)
		return measure_group(a, argv[0]);
	if (syn__measure_point(&a->mo, a->threads, a->cache, a->epochs ? a->epochs : 3, &st, &hit, &d,
	                       msg, sizeof(msg)) < 0) {
		errmsg("%s: %s", argv[0], msg);
		return 1;
	}
	/* Where the time went, per item, over the measured epochs: worker
	 * time decoding and fetching, and the process's CPU time. */
	double n = d.items > 0 ? d.items : 1;
	printf("threads %d cache %.0f hit_rate %.3f samples_per_s %.1f min %.1f max %.1f "
	       "prep_ms %.4f fetch_ms %.4f cpu_ms %.4f\n", a->threads, a->cache, hit, st.med, st.min,
	       st.max, 1e3 * d.prep_time / n, 1e3 * d.fetch_time / n, 1e3 * d.cpu_time / n);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	memset(&a, 0, sizeof(a));
	syn__measure_opts_init(&a.mo);
	a.prop_cpus = 3;
	a.prop_mem = 62.5;

	if (argc < 2)
		return usage_error("missing COMMAND");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf(PROG " %s (coordl %s)\n", PACKAGE_VERSION, coordl_version());
		return 0;
	}
	/* Options may come before or after operands (GNU getopt permutes
	 * them); "--" ends the options, as in `run -- CMD ARGS`. */
	int had_dashdash = 0;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			had_dashdash = 1;
			break;
		}
	/* The profiler drives its embedded loaders itself: a profiling-mode
	 * environment it inherits (a Slurm profiling job) is for the command
	 * of `run -- CMD`, which gets its own. */
	unsetenv(SYNERGY_ENV_PROFILE_MODE);
	unsetenv(SYNERGY_ENV_PROFILE_OUT);
	/* Nor do its loaders join the coordinated-prep group of a job it runs
	 * in (batches other members prepared would count as this job's
	 * throughput; measure --members makes its own group), and the
	 * command it profiles stays out too, as a job profiling in place does
	 * (spank-synergy(8)). */
	unsetenv(SYNERGY_ENV_GROUP);
	unsetenv(SYNERGY_ENV_GROUP_DIR);
	/* A profile is one node's (the union model makes it a multi-node
	 * job's): no partitioned cache with the step's other nodes. */
	unsetenv(SYNERGY_ENV_PEERS);
	unsetenv(SYNERGY_ENV_NODE_INDEX);
	unsetenv(SYNERGY_ENV_PEER_TAG);
	int first = parse_args(argc - 1, argv + 1, &a);
	if (first < 0)
		return 2;
	int n = argc - 1 - first;
	char **ops = argv + 1 + first;

	if (!strcmp(cmd, "run"))
		return cmd_run(&a, n, ops, had_dashdash);
	if (!strcmp(cmd, "show"))
		return cmd_show(&a, n, ops);
	if (!strcmp(cmd, "what-if"))
		return cmd_what_if(&a, n, ops);
	if (!strcmp(cmd, "plot"))
		return cmd_plot(&a, n, ops);
	if (!strcmp(cmd, "list"))
		return cmd_list(&a, n, ops);
	if (!strcmp(cmd, "measure"))
		return cmd_measure(&a, n, ops);
	return usage_error("unknown command '%s'", cmd);
}
