/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main.c: the synergy-sim command line. Loads or generates a trace, runs it
 * under each requested allocator x ordering, in rounds and/or in the
 * live-Slurm model (--live), optionally at several loads,
 * prints a comparison table, and writes per-job CSV and a plot on request.
 * See synergy-sim(1).
 *
 * Exit status: 0 on success, 1 when a run fails or any round broke the
 * guarantee or a capacity, 2 on a usage error.
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
#include <sys/wait.h>
#include <unistd.h>

#include "common/parse.h"
#include "sim/sim.h"

#define MAX_COMBO 16
#define MAX_RATES 32

static const char usage_text[] =
	"Usage: synergy-sim [OPTIONS]\n"
	"Simulate Synergy allocation policies on a trace of DNN training jobs.\n"
	"\n"
	"Workload (a trace file, or the generated Philly-derived workload):\n"
	"  -t, --trace FILE        read jobs from CSV: id,arrival_s,gpus,duration_s,model[,group]\n"
	"  -n, --jobs N            generate N jobs (default 1000)\n"
	"  -r, --rate J            generate J arrivals per hour (default 9)\n"
	"  -s, --seed S            generator seed (default 1)\n"
	"      --gpu-mix MIX       '1' (1-GPU jobs, default) or 'philly' (70/10/15/5% of 1/2/4/8)\n"
	"      --split I/L/S       image/language/speech percentages (default 20/70/10)\n"
	"      --search K:FRAC     make a fraction FRAC (0..1) of arrivals hyperparameter\n"
	"                          searches of K trials (one group: same model, GPUs and\n"
	"                          duration, arriving together); default none\n"
	"      --write-trace FILE  write the generated trace ('-' for stdout) and exit\n"
	"  -P, --profiles DIR      profile store: measured profiles override the built-ins\n"
	"      --coord on|off      the trials of a search share their prep (CoorDL's\n"
	"                          coordinated prep; default on); off: each trial preps alone\n"
	"Cluster and policy:\n"
	"  -c, --cluster SPEC      [COUNTx]GPUS:CORES:MEM_GB[,...] (default 16x8:24:500)\n"
	"      --round SECONDS     round length (default 300)\n"
	"  -a, --alloc LIST        allocators: prop,greedy,tune,opt (default prop,tune)\n"
	"  -o, --order LIST        orderings: fifo,srtf,las,ftf (default fifo)\n"
	"      --eps F             best-case tolerance (default 0.01)\n"
	"      --tune-steps N      TUNE's steps: 3 (the paper's), 4 (+ leftover), 5 (+ exchange\n"
	"                          and swap; default)\n"
	"      --opt-time-limit S  GLPK time limit per OPT solve (default 10)\n"
	"      --live[=both]       live Slurm instead of rounds (prop, tune only): jobs start\n"
	"                          and end as events, never above their GPU share in\n"
	"                          accounting, never preempted or shrunk; tune's extra cores\n"
	"                          and cache are reclaimable grants of node-level TUNE at each\n"
	"                          job start and end. 'both': rounds and live side by side\n"
	"Output:\n"
	"  -w, --window A-B        measure jobs with ids A..B (default all)\n"
	"  -j, --jobs-out FILE     per-job results as CSV ('-' for stdout)\n"
	"      --sweep R1,R2,...   run at each arrival rate (generated workload only)\n"
	"      --plot FILE.png     JCT CDF per policy, or mean JCT vs load with --sweep\n"
	"  -q, --quiet             no table (with --jobs-out -)\n"
	"  -h, --help              this text\n";

struct combo {
	syn_allocator_t a;
	syn_ordering_t o;
	int live;
};

/* "tune", or "live-tune" in live Slurm. */
static const char *combo_alloc(const struct combo *c)
{
	static const char *const live[] = { "live-prop", "live-greedy", "live-tune", "live-opt" };
	return c->live ? live[c->a] : syn_allocator_name(c->a);
}

static int die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "synergy-sim: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'synergy-sim --help'.\n");
	return 2;
}

static int parse_list(const char *s, int is_alloc, int *vals, int max)
{
	char *copy = strdup(s), *save = NULL, *tok;
	int n = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int ok = is_alloc ? syn_allocator_parse(tok, (syn_allocator_t *)&vals[n])
				  : syn_ordering_parse(tok, (syn_ordering_t *)&vals[n]);
		if (ok < 0 || n == max) {
			free(copy);
			return -1;
		}
		n++;
	}
	free(copy);
	return n;
}

static void print_header(void)
{
	printf("%-9s %-5s %6s %11s %13s %10s %11s %8s %8s %7s %10s %7s %7s\n", "alloc", "order",
	       "jobs", "jct_mean_h", "jct_median_h", "jct_p99_h", "makespan_h", "gpu_util",
	       "cpu_util", "speedup", "violations", "rounds", "cpu_s");
}

static void print_row(const struct combo *c, const sim_result_t *r)
{
	printf("%-9s %-5s %6d %11.2f %13.2f %10.2f %11.2f %8.3f %8.3f %7.3f %10ld %7ld %7.2f\n",
	       combo_alloc(c), syn_ordering_name(c->o), r->n_window, r->jct_mean / 3600,
	       r->jct_median / 3600, r->jct_p99 / 3600, r->makespan / 3600, r->gpu_util,
	       r->cpu_util, r->speedup_mean, r->violations, r->rounds, r->cpu_s);
	if (r->n_members > 0)
		printf("# %s/%s: %d search trials: %ld trial-%s sharing prep, %ld of them slower "
		       "than alone\n", combo_alloc(c), syn_ordering_name(c->o), r->n_members,
		       r->coord_runs, c->live ? "plans" : "rounds", r->coord_slower);
	if (r->n_window_drain > 0)
		printf("# %s/%s: %d of %d window jobs finished after the last arrival (in the "
		       "drain): not a steady-state measure, generate more jobs\n",
		       combo_alloc(c), syn_ordering_name(c->o), r->n_window_drain,
		       r->n_window);
}

/* Run gnuplot on a script; pngcairo first, the plain png terminal if that
 * fails. Returns 0 or -1. */
static int run_gnuplot(const char *dir, const char *body, const char *png)
{
	static const char *const terms[] = { "pngcairo size 900,560", "png size 900,560" };
	char path[4096];

	snprintf(path, sizeof path, "%s/plot.gp", dir);
	for (int t = 0; t < 2; t++) {
		FILE *f = fopen(path, "w");
		if (!f)
			return -1;
		fprintf(f, "set terminal %s\nset output '%s'\n%s", terms[t], png, body);
		fclose(f);
		pid_t pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) {
				dup2(fd, 2);
				dup2(fd, 1);
			}
			execlp("gnuplot", "gnuplot", path, (char *)NULL);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			return 0;
	}
	return -1;
}

static void rm_tree(const char *dir, int n_files)
{
	char p[4096];
	for (int i = 0; i < n_files; i++) {
		snprintf(p, sizeof p, "%s/d%d.dat", dir, i);
		unlink(p);
	}
	snprintf(p, sizeof p, "%s/plot.gp", dir);
	unlink(p);
	rmdir(dir);
}

/* Write the CDF of JCT (hours) over the window to <dir>/d<i>.dat. */
static int write_cdf(const char *dir, int i, const sim_trace_t *t, const sim_cfg_t *cfg,
		     sim_error_t *err)
{
	char p[4096];
	double *x = malloc(sizeof *x * (size_t)(t->n > 0 ? t->n : 1));
	FILE *d;
	int m = 0;

	snprintf(p, sizeof p, "%s/d%d.dat", dir, i);
	d = fopen(p, "w");
	if (!x || !d) {
		free(x);
		if (d)
			fclose(d);
		return sim_err(err, "plot data %s: %s", p, strerror(errno));
	}
	for (int k = 0; k < t->n; k++)
		if (t->jobs[k].id >= cfg->win_lo && t->jobs[k].id <= cfg->win_hi)
			x[m++] = (t->jobs[k].finish - t->jobs[k].arrival) / 3600;
	qsort(x, (size_t)m, sizeof *x, sim_dcmp);
	for (int k = 0; k < m; k++)
		fprintf(d, "%.6f %.6f\n", x[k], (k + 1.0) / m);
	free(x);
	return fclose(d) == 0 ? 0 : sim_err(err, "plot data %s: %s", p, strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "jobs", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "gpu-mix", required_argument, NULL, 1 },
		{ "split", required_argument, NULL, 2 },
		{ "write-trace", required_argument, NULL, 3 },
		{ "profiles", required_argument, NULL, 'P' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "round", required_argument, NULL, 4 },
		{ "alloc", required_argument, NULL, 'a' },
		{ "order", required_argument, NULL, 'o' },
		{ "eps", required_argument, NULL, 5 },
		{ "tune-steps", required_argument, NULL, 9 },
		{ "opt-time-limit", required_argument, NULL, 6 },
		{ "window", required_argument, NULL, 'w' },
		{ "jobs-out", required_argument, NULL, 'j' },
		{ "sweep", required_argument, NULL, 7 },
		{ "plot", required_argument, NULL, 8 },
		{ "live", optional_argument, NULL, 10 },
		{ "search", required_argument, NULL, 11 },
		{ "coord", required_argument, NULL, 12 },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *trace_path = NULL, *write_trace = NULL, *profiles_dir = NULL;
	const char *cluster_spec = "16x8:24:500", *jobs_out = NULL, *plot = NULL;
	sim_gen_t gen = { .n_jobs = 1000, .rate_per_hour = 9, .seed = 1, .philly_gpus = 0,
			  .split = { 20, 70, 10 } };
	sim_cfg_t cfg;
	int allocs[MAX_COMBO] = { SYN_ALLOC_PROP, SYN_ALLOC_TUNE }, n_alloc = 2;
	int orders[MAX_COMBO] = { SYN_ORDER_FIFO }, n_order = 1, quiet = 0, n_rates = 0;
	int modes = 1; /* 1 rounds, 2 live, 3 both */
	double rates[MAX_RATES], v;
	uint64_t u;
	sim_profiles_t *pr = NULL;
	sim_cluster_t cl = { NULL, 0, 0, 0, 0 };
	sim_trace_t tr = { NULL, 0 };
	sim_error_t err = { "" };
	FILE *jf = NULL;
	int status = 1, opt;
	char tmpdir[] = "/tmp/synergy-sim.XXXXXX";
	int have_tmp = 0, n_dat = 0;
	struct combo combos[2 * MAX_COMBO * MAX_COMBO];
	int n_combo = 0;
	static double sweep_jct[MAX_RATES][2 * MAX_COMBO * MAX_COMBO];

	memset(&cfg, 0, sizeof cfg);
	cfg.round_s = 300;
	syn_round_opts_init(&cfg.opts);
	cfg.win_lo = 0;
	cfg.win_hi = UINT64_MAX;
	cfg.coord = 1;

	while ((opt = getopt_long(argc, argv, "t:n:r:s:P:c:a:o:w:j:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			trace_path = optarg;
			break;
		case 'n':
			if (syn_parse_u64(optarg, 1, 100000000, &u) < 0)
				return die_usage("--jobs '%s': expected an integer 1..100000000", optarg);
			gen.n_jobs = (int)u;
			break;
		case 'r':
			if (syn_parse_double(optarg, 1e-6, 1e9, &v) < 0)
				return die_usage("--rate '%s': expected a number > 0 (jobs per hour)", optarg);
			gen.rate_per_hour = v;
			break;
		case 's':
			if (syn_parse_u64(optarg, 0, UINT64_MAX, &gen.seed) < 0)
				return die_usage("--seed '%s': expected a non-negative integer", optarg);
			break;
		case 1:
			if (strcmp(optarg, "1") == 0)
				gen.philly_gpus = 0;
			else if (strcmp(optarg, "philly") == 0)
				gen.philly_gpus = 1;
			else
				return die_usage("--gpu-mix '%s': expected '1' or 'philly'", optarg);
			break;
		case 2: {
			double a, b, c;
			const char *s1 = strchr(optarg, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
			if (!s2 ||
			    syn_parse_doublen(optarg, (size_t)(s1 - optarg), 0, INFINITY, &a) < 0 ||
			    syn_parse_doublen(s1 + 1, (size_t)(s2 - s1 - 1), 0, INFINITY, &b) < 0 ||
			    syn_parse_double(s2 + 1, 0, INFINITY, &c) < 0 || !(a + b + c > 0))
				return die_usage("--split '%s': expected I/L/S percentages, e.g. 20/70/10",
						 optarg);
			gen.split[0] = a, gen.split[1] = b, gen.split[2] = c;
			break;
		}
		case 3:
			write_trace = optarg;
			break;
		case 'P':
			profiles_dir = optarg;
			break;
		case 'c':
			cluster_spec = optarg;
			break;
		case 4:
			if (syn_parse_double(optarg, 1, 1e7, &v) < 0)
				return die_usage("--round '%s': expected seconds, 1..10000000", optarg);
			cfg.round_s = v;
			break;
		case 'a':
			n_alloc = parse_list(optarg, 1, allocs, MAX_COMBO);
			if (n_alloc < 1)
				return die_usage("--alloc '%s': expected a list of prop,greedy,tune,opt",
						 optarg);
			break;
		case 'o':
			n_order = parse_list(optarg, 0, orders, MAX_COMBO);
			if (n_order < 1)
				return die_usage("--order '%s': expected a list of fifo,srtf,las,ftf", optarg);
			break;
		case 5:
			if (syn_parse_double(optarg, 0, 0.99, &v) < 0)
				return die_usage("--eps '%s': expected 0..0.99", optarg);
			cfg.opts.eps = v;
			break;
		case 9:
			if (strcmp(optarg, "3") && strcmp(optarg, "4") && strcmp(optarg, "5"))
				return die_usage("--tune-steps '%s': expected 3, 4 or 5", optarg);
			cfg.opts.no_leftover = optarg[0] < '4';
			cfg.opts.no_exchange = optarg[0] < '5';
			break;
		case 6:
			if (syn_parse_double(optarg, 0.001, 3600, &v) < 0)
				return die_usage("--opt-time-limit '%s': expected seconds, 0.001..3600", optarg);
			cfg.opts.opt_time_limit_s = v;
			break;
		case 'w': {
			const char *dash = strchr(optarg, '-');
			uint64_t lo, hi;
			if (!dash ||
			    syn_parse_u64n(optarg, (size_t)(dash - optarg), 0, UINT64_MAX, &lo) <
				    0 ||
			    syn_parse_u64(dash + 1, lo, UINT64_MAX, &hi) < 0)
				return die_usage("--window '%s': expected A-B with A <= B (job ids)", optarg);
			cfg.win_lo = lo;
			cfg.win_hi = hi;
			break;
		}
		case 'j':
			jobs_out = optarg;
			break;
		case 7: {
			char *copy = strdup(optarg), *save = NULL, *tok;
			n_rates = 0;
			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (n_rates == MAX_RATES ||
				    syn_parse_double(tok, 1e-6, 1e9, &rates[n_rates]) < 0) {
					free(copy);
					return die_usage("--sweep '%s': expected up to 32 rates > 0, comma-separated",
							 optarg);
				}
				n_rates++;
			}
			free(copy);
			if (n_rates == 0)
				return die_usage("--sweep '%s': no rates", optarg);
			break;
		}
		case 8:
			plot = optarg;
			break;
		case 10:
			if (!optarg)
				modes = 2;
			else if (strcmp(optarg, "both") == 0)
				modes = 3;
			else
				return die_usage("--live=%s: expected --live or --live=both", optarg);
			break;
		case 11: {
			const char *colon = strchr(optarg, ':');
			uint64_t k;
			double f;
			if (!colon ||
			    syn_parse_u64n(optarg, (size_t)(colon - optarg), 2, SYN_MAX_GROUP, &k) <
				    0 ||
			    syn_parse_double(colon + 1, 0, 1, &f) < 0)
				return die_usage("--search '%s': expected K:FRAC, K trials 2..%d, FRAC 0..1 "
						 "(e.g. 4:0.3)", optarg, SYN_MAX_GROUP);
			gen.search_k = (int)k;
			gen.search_frac = f;
			break;
		}
		case 12:
			/* The two words of synergy-sim(1), not a yes/no boolean. */
			if (strcmp(optarg, "on") == 0)
				cfg.coord = 1;
			else if (strcmp(optarg, "off") == 0)
				cfg.coord = 0;
			else
				return die_usage("--coord '%s': expected on or off", optarg);
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'synergy-sim --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		return die_usage("unexpected argument '%s'", argv[optind]);
	if (trace_path && n_rates)
		return die_usage("%s", "--sweep generates its traces: it cannot be used with --trace");
	if (trace_path && write_trace)
		return die_usage("%s", "--write-trace writes a generated trace: drop --trace");
	for (int a = 0; modes & 2 && a < n_alloc; a++)
		if (allocs[a] != SYN_ALLOC_PROP && allocs[a] != SYN_ALLOC_TUNE)
			return die_usage("--live: allocator '%s' has no live form (prop and tune do)",
					 syn_allocator_name((syn_allocator_t)allocs[a]));

	pr = sim_profiles_create(profiles_dir, &err);
	if (!pr)
		goto fail;
	if (sim_cluster_parse(cluster_spec, &cl, &err) < 0) {
		fprintf(stderr, "synergy-sim: %s\nTry 'synergy-sim --help'.\n", err.text);
		status = 2;
		goto out;
	}
	for (int live = 0; live < 2; live++)
		for (int a = 0; a < n_alloc && modes & (1 << live); a++)
			for (int o = 0; o < n_order; o++)
				combos[n_combo++] = (struct combo){ (syn_allocator_t)allocs[a],
								    (syn_ordering_t)orders[o], live };

	if (write_trace) {
		if (sim_trace_generate(&gen, pr, &tr, &err) < 0 ||
		    sim_trace_write(write_trace, &tr, &err) < 0)
			goto fail;
		status = 0;
		goto out;
	}
	if (jobs_out) {
		jf = strcmp(jobs_out, "-") == 0 ? stdout : fopen(jobs_out, "w");
		if (!jf) {
			snprintf(err.text, sizeof err.text, "%s: %s", jobs_out, strerror(errno));
			goto fail;
		}
	}
	if (plot) {
		if (!mkdtemp(tmpdir)) {
			snprintf(err.text, sizeof err.text, "temporary directory: %s", strerror(errno));
			goto fail;
		}
		have_tmp = 1;
	}

	status = 0;
	int n_loads = n_rates ? n_rates : 1;
	for (int l = 0; l < n_loads; l++) {
		if (trace_path) {
			if (sim_trace_read(trace_path, pr, &tr, &err) < 0)
				goto fail;
		} else {
			if (n_rates)
				gen.rate_per_hour = rates[l];
			if (sim_trace_generate(&gen, pr, &tr, &err) < 0)
				goto fail;
		}
		if (!quiet) {
			printf("# %d jobs%s, %d nodes (%d GPUs, %g cores, %g GB), round %g s", tr.n,
			       trace_path ? "" : " generated", cl.n_nodes, cl.total_gpus, cl.total_cpus,
			       cl.total_mem, cfg.round_s);
			if (!trace_path)
				printf(", rate %g/h, seed %llu, split %g/%g/%g, gpus %s", gen.rate_per_hour,
				       (unsigned long long)gen.seed, gen.split[0], gen.split[1], gen.split[2],
				       gen.philly_gpus ? "philly" : "1");
			if (!trace_path && gen.search_k > 1)
				printf(", searches %d:%g", gen.search_k, gen.search_frac);
			if (!cfg.coord)
				printf(", coordinated prep off");
			if (modes & 2)
				printf(", %s", modes == 3 ? "rounds and live Slurm" : "live Slurm");
			if (cfg.win_hi != UINT64_MAX || cfg.win_lo)
				printf(", window ids %llu-%llu", (unsigned long long)cfg.win_lo,
				       (unsigned long long)cfg.win_hi);
			printf("\n");
			print_header();
		}
		for (int k = 0; k < n_combo; k++) {
			sim_result_t res;
			cfg.opts.allocator = combos[k].a;
			cfg.opts.ordering = combos[k].o;
			int rc = combos[k].live ? sim_run_live(&tr, &cl, &cfg, &res, &err)
						: sim_run(&tr, &cl, &cfg, &res, &err);
			if (rc < 0)
				goto fail;
			if (!quiet)
				print_row(&combos[k], &res);
			fflush(stdout);
			if (res.violations) {
				fprintf(stderr, "synergy-sim: %s/%s: %ld violations; first: %s\n",
					combo_alloc(&combos[k]), syn_ordering_name(combos[k].o),
					res.violations, res.first_violation);
				status = 1;
			}
			sweep_jct[l][k] = res.jct_mean;
			if (jf)
				sim_jobs_write(jf, &tr, combo_alloc(&combos[k]),
					       syn_ordering_name(combos[k].o), l == 0 && k == 0);
			if (have_tmp && !n_rates && write_cdf(tmpdir, n_dat++, &tr, &cfg, &err) < 0)
				goto fail;
		}
		sim_trace_free(&tr);
	}
	if (n_rates && !quiet) {
		printf("\n# mean JCT (h) vs load\n%-9s", "rate_jph");
		for (int k = 0; k < n_combo; k++) {
			char h[32];
			snprintf(h, sizeof h, "%s/%s", combo_alloc(&combos[k]),
				 syn_ordering_name(combos[k].o));
			printf(" %14s", h);
		}
		printf("\n");
		for (int l = 0; l < n_rates; l++) {
			printf("%-9g", rates[l]);
			for (int k = 0; k < n_combo; k++)
				printf(" %14.2f", sweep_jct[l][k] / 3600);
			printf("\n");
		}
	}
	if (have_tmp) {
		char body[8192], p[4096];
		size_t off = 0;
		if (n_rates) {
			snprintf(p, sizeof p, "%s/d0.dat", tmpdir);
			FILE *d = fopen(p, "w");
			if (!d) {
				sim_err(&err, "plot data %s: %s", p, strerror(errno));
				goto fail;
			}
			n_dat = 1;
			for (int l = 0; l < n_rates; l++) {
				fprintf(d, "%g", rates[l]);
				for (int k = 0; k < n_combo; k++)
					fprintf(d, " %.6f", sweep_jct[l][k] / 3600);
				fprintf(d, "\n");
			}
			fclose(d);
			off += (size_t)snprintf(body + off, sizeof body - off,
				"set xlabel 'load (jobs/hour)'\nset ylabel 'mean JCT (hours)'\n"
				"set key top left\nset grid\nplot");
			for (int k = 0; k < n_combo && off < sizeof body; k++)
				off += (size_t)snprintf(body + off, sizeof body - off,
					"%s '%s' using 1:%d with linespoints lw 2 title '%s/%s'",
					k ? "," : "", p, k + 2, combo_alloc(&combos[k]),
					syn_ordering_name(combos[k].o));
		} else {
			off += (size_t)snprintf(body + off, sizeof body - off,
				"set xlabel 'JCT (hours)'\nset ylabel 'fraction of jobs'\n"
				"set logscale x\nset key bottom right\nset grid\nplot");
			for (int k = 0; k < n_combo && off < sizeof body; k++) {
				snprintf(p, sizeof p, "%s/d%d.dat", tmpdir, k);
				off += (size_t)snprintf(body + off, sizeof body - off,
					"%s '%s' using 1:2 with lines lw 2 title '%s/%s'", k ? "," : "", p,
					combo_alloc(&combos[k]), syn_ordering_name(combos[k].o));
			}
		}
		if (off < sizeof body - 2)
			strcat(body, "\n");
		if (run_gnuplot(tmpdir, body, plot) < 0) {
			snprintf(err.text, sizeof err.text, "--plot %s: gnuplot failed (is it installed?)", plot);
			goto fail;
		}
	}
	goto out;
fail:
	fprintf(stderr, "synergy-sim: %s\n", err.text);
	status = 1;
out:
	if (jf && jf != stdout)
		fclose(jf);
	if (have_tmp)
		rm_tree(tmpdir, n_dat);
	sim_trace_free(&tr);
	sim_cluster_free(&cl);
	sim_profiles_destroy(pr);
	return status;
}
