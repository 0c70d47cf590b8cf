/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl-bench: run libcoordl over a dataset for a few epochs and print one
 * table row per epoch: throughput, throughput per core, the consumer's stall
 * share, cache hit rate, bytes read from storage and peak RSS.
 *
 * With --gpu-rate R the consumer emulates a GPU that needs n/R seconds per
 * batch of n images (it holds the batch for that long, then releases it), so
 * the stall column shows how much of the training step would be spent
 * waiting for data: the quantity Synergy allocates CPU and memory against.
 * Throughput and stall come from the loader's own counters; CPU time comes
 * from getrusage(RUSAGE_SELF) over the epoch, so "img/cpu-s" is the rate per
 * core actually used, whatever the thread count. "diskMB" is what the kernel
 * really read from the block device for this process (/proc/self/io
 * read_bytes): storageMB minus what the page cache served, which is how the
 * page cache is compared with the MinIO cache under the same memory limit.
 * For a remote dataset (a URL) four more columns give the requests of the
 * epoch, the median and 99th percentile request latency and the fetch
 * engine's window at the end of the epoch.
 *
 * Under SYNERGY_GROUP (coordinated prep, coordl(3)) the loader shares
 * prepared batches with the other members of its group; a last "# group:"
 * line says how many batches its workers prepared and how many it
 * received. Its CPU time then includes work done for the other members, so
 * compare the sum over the group (bench/coordprep.sh does).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/parse.h"
#include "coordl.h"
#include "loader/env.h"

static const char *prog = "coordl-bench";

#include "tools/die.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [OPTIONS] DATASET\n"
		"Run the coordl loader over DATASET (ImageFolder directory, file list or .cdx)\n"
		"and print a table with one row per epoch.\n"
		"\n"
		"  -e, --epochs=N         epochs to run (default 2)\n"
		"  -t, --threads=T        worker threads (default: SYNERGY_THREADS, else all cores)\n"
		"  -c, --cache=BYTES      MinIO cache size, K/M/G/T suffixes (default: SYNERGY_CACHE_BYTES, else 0)\n"
		"      --cache-name=NAME  shared cache name (default: private cache)\n"
		"  -b, --batch-size=N     samples per batch (default 32)\n"
		"  -s, --out-size=N       output height and width (default 224)\n"
		"  -m, --mode=MODE        train, eval, raw (fetch only) or synthetic (default train)\n"
		"  -l, --layout=L         f32 (NCHW float, normalized) or u8 (NHWC bytes) (default f32)\n"
		"  -g, --gpu-rate=R       emulate a GPU consuming R images/s (default 0: no GPU)\n"
		"  -n, --max-batches=N    stop each epoch after N batches (default: whole epoch)\n"
		"      --seed=S           shuffle seed (default 0)\n"
		"      --rank=R --world-size=W  this process's shard (default 0 of 1)\n"
		"      --io-window=N      remote datasets: requests in flight (default 0: sized\n"
		"                         automatically; -1: one per worker, no read-ahead)\n"
		"      --io-deadline=MS   remote datasets: give up on an item after MS of retries\n"
		"  -h, --help             show this help and exit\n"
		"\n"
		"See coordl-bench(1).\n",
		prog);
}


static int64_t int_arg(const char *opt, const char *s, int64_t min, int64_t max)
{
	int64_t v;

	if (syn_parse_i64(s, min, max, &v) < 0)
		die("--%s '%s': expected an integer %lld..%lld", opt, s, (long long)min, (long long)max);
	return v;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double peak_rss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

/* Bytes this process caused to be read from block devices, or -1. */
static long long disk_read_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "read_bytes: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Sleep until an absolute CLOCK_MONOTONIC time, so GPU steps do not drift. */
static void sleep_until(struct timespec *t)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR)
		;
}

static void add_seconds(struct timespec *t, double s)
{
	long ns = (long)(s * 1e9);

	t->tv_sec += ns / 1000000000L;
	t->tv_nsec += ns % 1000000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

int main(int argc, char **argv)
{
	enum { O_SEED = 256, O_RANK, O_WORLD, O_CACHE_NAME, O_IO_WINDOW, O_IO_DEADLINE };
	static const struct option opts[] = {
		{ "epochs", required_argument, NULL, 'e' },
		{ "threads", required_argument, NULL, 't' },
		{ "cache", required_argument, NULL, 'c' },
		{ "cache-name", required_argument, NULL, O_CACHE_NAME },
		{ "batch-size", required_argument, NULL, 'b' },
		{ "out-size", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "layout", required_argument, NULL, 'l' },
		{ "gpu-rate", required_argument, NULL, 'g' },
		{ "max-batches", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "rank", required_argument, NULL, O_RANK },
		{ "world-size", required_argument, NULL, O_WORLD },
		{ "io-window", required_argument, NULL, O_IO_WINDOW },
		{ "io-deadline", required_argument, NULL, O_IO_DEADLINE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *mode_names[] = { "train", "eval", "raw", "synthetic" };
	coordl_config_t cfg;
	coordl_error_t err = { "" };
	coordl_loader_t *ld;
	int64_t epochs = 2, max_batches = 0;
	double gpu_rate = 0;
	uint64_t bytes;
	int c, remote, peers;

	coordl_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "e:t:c:b:s:m:l:g:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'e': epochs = int_arg("epochs", optarg, 1, 1000000); break;
		case 't': cfg.threads = (int)int_arg("threads", optarg, 1, COORDL__MAX_THREADS); break;
		case 'c':
			if (syn_parse_size(optarg, 0, INT64_MAX, &bytes) < 0)
				die("--cache '%s': expected bytes with optional K/M/G/T", optarg);
			cfg.cache_bytes = (int64_t)bytes;
			break;
		case O_CACHE_NAME: cfg.cache_name = optarg; break;
		case 'b': cfg.batch_size = (int)int_arg("batch-size", optarg, 1, 65536); break;
		case 's': cfg.out_size = (int)int_arg("out-size", optarg, 8, 4096); break;
		case 'm': {
			int m = -1;
			for (int i = 0; i < 4; i++)
				if (strcmp(optarg, mode_names[i]) == 0)
					m = i;
			if (m < 0)
				die("--mode '%s': expected train, eval, raw or synthetic", optarg);
			cfg.mode = m;
			break;
		}
		case 'l':
			if (strcmp(optarg, "f32") == 0)
				cfg.layout = COORDL_LAYOUT_NCHW_F32;
			else if (strcmp(optarg, "u8") == 0)
				cfg.layout = COORDL_LAYOUT_NHWC_U8;
			else
				die("--layout '%s': expected f32 or u8", optarg);
			break;
		case 'g':
			if (syn_parse_double(optarg, 0, 1e9, &gpu_rate) < 0 || gpu_rate >= 1e9)
				die("--gpu-rate '%s': expected images/s >= 0", optarg);
			break;
		case 'n': max_batches = int_arg("max-batches", optarg, 1, INT64_MAX); break;
		case O_SEED: cfg.seed = (uint64_t)int_arg("seed", optarg, 0, INT64_MAX); break;
		case O_RANK: cfg.rank = (int)int_arg("rank", optarg, 0, 1 << 20); break;
		case O_WORLD: cfg.world_size = (int)int_arg("world-size", optarg, 1, 1 << 20); break;
		case O_IO_WINDOW:
			cfg.io_window = (int)int_arg("io-window", optarg, -1, COORDL_IO_WINDOW_MAX);
			break;
		case O_IO_DEADLINE:
			cfg.io_deadline_ms = (int)int_arg("io-deadline", optarg, 1, 86400000);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	cfg.path = argv[optind];
	if (!(ld = coordl_create(&cfg, &err)))
		die("%s", err.text);
	{
		const coordl_config_t *e = coordl_config(ld);
		printf("# coordl-bench %s: %s, %zu items, %.1f MB, %d classes\n", coordl_version(),
		       cfg.path, coordl_dataset_items(ld), (double)coordl_dataset_bytes(ld) / 1e6,
		       coordl_num_classes(ld));
		printf("# mode %s, batch %d, out %d, threads %d, cache %.1f MB%s, prefetch %d, gpu %s\n",
		       mode_names[e->mode], e->batch_size, e->out_size, e->threads,
		       (double)e->cache_bytes / 1e6, e->cache_name ? " (shared)" : "", e->prefetch,
		       gpu_rate > 0 ? "emulated" : "none");
		if (gpu_rate > 0)
			printf("# emulated GPU: %.1f images/s\n", gpu_rate);
		if (coordl_cache_note(ld))
			printf("# cache: %s\n", coordl_cache_note(ld));
		if (coordl_group_note(ld))
			printf("# group: %s\n", coordl_group_note(ld));
	}
	remote = strstr(cfg.path, "://") != NULL;
	{
		coordl_stats_t st0;
		coordl_get_stats(ld, &st0);
		peers = st0.peer_nodes > 0;
		if (peers)
			printf("# partitioned cache: node %d of %d, wire-up %s\n", st0.peer_node_index,
			       st0.peer_nodes, st0.peer_wireup == COORDL_WIREUP_PMIX ? "pmix" : "sockaddr");
	}
	printf("%5s %8s %8s %9s %9s %10s %7s %7s %10s %8s %7s %8s", "epoch", "images", "wall_s",
	       "img/s", "img/s/thr", "img/cpu-s", "stall%", "hit%", "storageMB", "diskMB", "corrupt",
	       "rssMB");
	if (remote)
		printf(" %8s %7s %7s %6s", "requests", "p50ms", "p99ms", "window");
	if (peers)
		printf(" %7s %8s %8s %6s %3s", "peer%", "peerMB", "fallback", "stalls", "up");
	putchar('\n');
	for (int64_t e = 0; e < epochs; e++) {
		coordl_batch_t *b;
		coordl_stats_t st;
		struct timespec gpu_t;
		double cpu0, cpu;
		long long disk0, disk;
		int64_t nb = 0;
		int rc;

		if (coordl_set_epoch(ld, (uint64_t)e, &err) < 0)
			die("%s", err.text);
		cpu0 = cpu_seconds();
		disk0 = disk_read_bytes();
		clock_gettime(CLOCK_MONOTONIC, &gpu_t);
		while ((rc = coordl_next(ld, &b, &err)) == 1) {
			if (gpu_rate > 0) {
				/* The GPU step starts when data arrives, or when the
				 * previous step ends, whichever is later. */
				struct timespec nowt;
				clock_gettime(CLOCK_MONOTONIC, &nowt);
				if (nowt.tv_sec > gpu_t.tv_sec ||
				    (nowt.tv_sec == gpu_t.tv_sec && nowt.tv_nsec > gpu_t.tv_nsec))
					gpu_t = nowt;
				add_seconds(&gpu_t, (double)b->n / gpu_rate);
				sleep_until(&gpu_t);
			}
			coordl_release(ld, b);
			if (max_batches && ++nb >= max_batches)
				break;
		}
		if (rc < 0)
			die("%s", err.text);
		cpu = cpu_seconds() - cpu0;
		disk = disk_read_bytes();
		coordl_get_stats(ld, &st);
		{
			double wall = st.epoch_wall > 0 ? st.epoch_wall : 1e-9;
			uint64_t lookups = st.cache_hits + st.cache_misses;
			char dbuf[32] = "-";
			if (disk0 >= 0 && disk >= disk0)
				snprintf(dbuf, sizeof(dbuf), "%.1f", (double)(disk - disk0) / 1e6);
			printf("%5lld %8llu %8.2f %9.1f %9.1f %10.1f %7.1f %7.1f %10.1f %8s %7llu %8.1f",
			       (long long)e, (unsigned long long)st.samples, st.epoch_wall,
			       st.images_per_s, st.images_per_s_per_core,
			       cpu > 0 ? (double)st.samples / cpu : 0.0, 100.0 * st.stall / wall,
			       lookups ? 100.0 * (double)st.cache_hits / (double)lookups : 0.0,
			       (double)st.storage_bytes / 1e6, dbuf, (unsigned long long)st.corrupt,
			       peak_rss_mb());
			if (remote)
				printf(" %8llu %7.1f %7.1f %6d", (unsigned long long)st.requests,
				       1e3 * st.req_latency_p50, 1e3 * st.req_latency_p99, st.io_window);
			if (peers)
				printf(" %7.1f %8.1f %8llu %6llu %3d",
				       lookups ? 100.0 * (double)st.peer_hits / (double)lookups : 0.0,
				       (double)st.peer_bytes / 1e6, (unsigned long long)st.peer_fallbacks,
				       (unsigned long long)st.peer_stalls, st.peers_up);
			putchar('\n');
			fflush(stdout);
		}
	}
	if (coordl_last_corrupt(ld))
		printf("# last corrupt item: %s\n", coordl_last_corrupt(ld));
	{
		coordl_stats_t st;

		/* Coordinated prep: what this member did for the group. */
		if (coordl_get_stats(ld, &st) == 0 && (st.group_batches || st.group_solo))
			printf("# group: batches prepared %.2f received %.2f, from staging %llu, "
			       "solo %llu, redone %llu, reaped %llu\n",
			       st.batches_prepared, st.batches_received,
			       (unsigned long long)st.group_batches, (unsigned long long)st.group_solo,
			       (unsigned long long)st.group_redone, (unsigned long long)st.group_reaped);
	}
	coordl_destroy(ld);
	return 0;
}
