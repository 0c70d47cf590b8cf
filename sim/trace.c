/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * trace.c: job traces for synergy-sim. Reads and writes the trace CSV
 * (columns documented in synergy-sim(1)), generates the Philly-derived
 * workload of the Synergy paper, resolves model keys to profiles (measured
 * ones from a profile store first, then the built-ins) and parses the
 * cluster description.
 *
 * Input is untrusted: every field is checked and a bad one is reported with
 * the file, the line and the field, and nothing is half-loaded.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/store.h"
#include "sim/sim.h"

#define LINE_MAX_LEN 1024
#define MAX_JOB_GPUS 4096
#define SIM_MAX_NODES 1000000

int sim_err(sim_error_t *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	syn_verrbuf(err ? err->text : NULL, err ? sizeof err->text : 0, errno, fmt, ap);
	va_end(ap);
	return -1;
}

/* Profiles. */

struct sim_profiles {
	syn_store_t *store;
	syn_profile_t **loaded;
	int n, cap;
};

sim_profiles_t *sim_profiles_create(const char *dir, sim_error_t *err)
{
	sim_profiles_t *pr = calloc(1, sizeof *pr);
	syn_error_t serr = { "" };

	if (!pr) {
		sim_err(err, "out of memory");
		return NULL;
	}
	if (dir) {
		pr->store = syn_store_create(dir, 0, &serr);
		if (!pr->store) {
			sim_err(err, "--profiles %s: %s", dir, serr.text[0] ? serr.text : strerror(errno));
			free(pr);
			return NULL;
		}
	}
	return pr;
}

void sim_profiles_destroy(sim_profiles_t *pr)
{
	if (!pr)
		return;
	for (int i = 0; i < pr->n; i++)
		free(pr->loaded[i]);
	free(pr->loaded);
	syn_store_destroy(pr->store);
	free(pr);
}

const syn_profile_t *sim_profiles_get(sim_profiles_t *pr, const char *key, sim_error_t *err)
{
	const syn_profile_t *b;

	for (int i = 0; i < pr->n; i++)
		if (strcmp(pr->loaded[i]->key, key) == 0)
			return pr->loaded[i];
	if (pr->store) {
		syn_error_t serr = { "" };
		syn_profile_t *p = malloc(sizeof *p);

		if (!p) {
			sim_err(err, "out of memory");
			return NULL;
		}
		if (syn_store_get(pr->store, key, p, &serr) == 0) {
			if (pr->n == pr->cap) {
				int cap = pr->cap ? 2 * pr->cap : 16;
				syn_profile_t **l = realloc(pr->loaded, sizeof *l * (size_t)cap);
				if (!l) {
					free(p);
					sim_err(err, "out of memory");
					return NULL;
				}
				pr->loaded = l;
				pr->cap = cap;
			}
			pr->loaded[pr->n++] = p;
			return p;
		}
		free(p);
		if (errno != ENOENT) {
			sim_err(err, "profile '%s': %s", key, serr.text);
			return NULL;
		}
	}
	b = syn_builtin_find(key);
	if (!b)
		sim_err(err, "unknown model '%s' (not built in%s)", key,
			pr->store ? " and not in the profile store" : "; see --profiles");
	return b;
}

/* Trace CSV. */

static const char trace_header[] = "id,arrival_s,gpus,duration_s,model";
/* With the optional 6th column: a job's search (group), 0 or empty for none. */
static const char trace_header_group[] = "id,arrival_s,gpus,duration_s,model,group";

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

struct idline {
	uint64_t id;
	long line;
};

/* A search member as read, for the check that a group's members agree. */
struct grpline {
	uint64_t group;
	long line;
	int gpus;
	const char *model; /* into the new trace's job */
	int job;
};

static int grpline_cmp(const void *a, const void *b)
{
	const struct grpline *x = a, *y = b;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int idline_cmp(const void *a, const void *b)
{
	const struct idline *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int job_arrival_cmp(const void *a, const void *b)
{
	const sim_job_t *x = a, *y = b;
	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int add_job(sim_trace_t *t, int *cap, const sim_job_t *j)
{
	if (t->n == *cap) {
		int nc = *cap ? 2 * *cap : 256;
		sim_job_t *nj = realloc(t->jobs, sizeof *nj * (size_t)nc);
		if (!nj)
			return -1;
		t->jobs = nj;
		*cap = nc;
	}
	t->jobs[t->n++] = *j;
	return 0;
}

/* Put a new trace in arrival order (sim_run resets the per-job results
 * before every run, so they are not touched here). */
static void finish_trace(sim_trace_t *t)
{
	/* A header-only trace has no job array, and qsort's pointer must not
	 * be NULL even for zero elements (found by tests/fuzz/fuzz_trace.c). */
	if (t->n > 0)
		qsort(t->jobs, (size_t)t->n, sizeof *t->jobs, job_arrival_cmp);
}

int sim_trace_read(const char *path, sim_profiles_t *pr, sim_trace_t *t, sim_error_t *err)
{
	FILE *f = NULL;
	char buf[LINE_MAX_LEN + 2];
	long line = 0;
	int cap = 0, rv = -1, have_header = 0, cols = 5, n_grp = 0;
	struct idline *ids = NULL;
	struct grpline *grp = NULL;
	sim_trace_t nt = { NULL, 0 };
	sim_error_t perr;

	f = fopen(path, "r");
	if (!f) {
		sim_err(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	while (fgets(buf, sizeof buf, f)) {
		char *s, *fld[7];
		int nf = 0;
		sim_job_t j;
		uint64_t g;

		line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			sim_err(err, "%s:%ld: line longer than %d characters", path, line, LINE_MAX_LEN);
			goto out;
		}
		s = trim(buf);
		if (*s == '\0' || *s == '#')
			continue;
		if (!have_header) {
			char *h = s;
			/* Allow spaces after commas in the header. */
			char clean[LINE_MAX_LEN + 2];
			int k = 0;
			for (; *h; h++)
				if (*h != ' ' && *h != '\t')
					clean[k++] = *h;
			clean[k] = '\0';
			if (strcmp(clean, trace_header_group) == 0) {
				cols = 6;
			} else if (strcmp(clean, trace_header) != 0) {
				sim_err(err, "%s:%ld: expected the header '%s' (or '%s')", path, line,
					trace_header, trace_header_group);
				goto out;
			}
			have_header = 1;
			continue;
		}
		for (char *p = s; p; ) {
			char *c = strchr(p, ',');
			if (nf < 7)
				fld[nf] = p;
			nf++;
			if (c)
				*c++ = '\0';
			p = c;
		}
		if (nf != 5 && (cols == 5 || nf != 6)) {
			if (cols == 5 && nf == 6)
				sim_err(err, "%s:%ld: expected 5 comma-separated fields (%s), got 6: "
					"a trace with searches has the header '%s'", path, line,
					trace_header, trace_header_group);
			else
				sim_err(err, "%s:%ld: expected %s comma-separated fields (%s), got %d",
					path, line, cols == 5 ? "5" : "5 or 6",
					cols == 5 ? trace_header : trace_header_group, nf);
			goto out;
		}
		for (int k = 0; k < nf; k++)
			fld[k] = trim(fld[k]);
		memset(&j, 0, sizeof j);
		if (syn_parse_u64(fld[0], 0, UINT64_MAX, &j.id) < 0) {
			sim_err(err, "%s:%ld: id: expected a non-negative integer, got '%s'", path, line,
				fld[0]);
			goto out;
		}
		if (syn_parse_double(fld[1], 0, INFINITY, &j.arrival) < 0) {
			sim_err(err, "%s:%ld: arrival_s: expected a number >= 0, got '%s'", path, line,
				fld[1]);
			goto out;
		}
		if (syn_parse_u64(fld[2], 1, MAX_JOB_GPUS, &g) < 0) {
			sim_err(err, "%s:%ld: gpus: expected an integer 1..%d, got '%s'", path, line,
				MAX_JOB_GPUS, fld[2]);
			goto out;
		}
		j.gpus = (int)g;
		if (syn_parse_double(fld[3], 0, INFINITY, &j.duration) < 0 || !(j.duration > 0)) {
			sim_err(err, "%s:%ld: duration_s: expected a number > 0, got '%s'", path, line,
				fld[3]);
			goto out;
		}
		if (!syn_key_valid(fld[4])) {
			sim_err(err, "%s:%ld: model: '%s' is not a valid profile key", path, line, fld[4]);
			goto out;
		}
		strcpy(j.model, fld[4]);
		if (nf == 6 && *fld[5] && syn_parse_u64(fld[5], 0, UINT64_MAX, &j.group) < 0) {
			sim_err(err, "%s:%ld: group: expected empty or an integer 0..%llu, got '%s'",
				path, line, (unsigned long long)UINT64_MAX, fld[5]);
			goto out;
		}
		j.profile = sim_profiles_get(pr, j.model, &perr);
		if (!j.profile) {
			sim_err(err, "%s:%ld: model: %s", path, line, perr.text);
			goto out;
		}
		if (add_job(&nt, &cap, &j) < 0) {
			sim_err(err, "%s:%ld: out of memory", path, line);
			goto out;
		}
		/* Remember the line for the duplicate check below. */
		struct idline *ni = realloc(ids, sizeof *ids * (size_t)nt.n);
		if (!ni) {
			sim_err(err, "%s:%ld: out of memory", path, line);
			goto out;
		}
		ids = ni;
		ids[nt.n - 1] = (struct idline){ j.id, line };
		if (j.group) {
			struct grpline *ng = realloc(grp, sizeof *grp * (size_t)(n_grp + 1));
			if (!ng) {
				sim_err(err, "%s:%ld: out of memory", path, line);
				goto out;
			}
			grp = ng;
			grp[n_grp++] = (struct grpline){ j.group, line, j.gpus, NULL, nt.n - 1 };
		}
	}
	if (ferror(f)) {
		sim_err(err, "%s: read error: %s", path, strerror(errno));
		goto out;
	}
	if (!have_header) {
		sim_err(err, "%s: empty trace: expected the header '%s'", path, trace_header);
		goto out;
	}
	if (nt.n > 0) {
		qsort(ids, (size_t)nt.n, sizeof *ids, idline_cmp);
		for (int i = 1; i < nt.n; i++)
			if (ids[i].id == ids[i - 1].id) {
				sim_err(err, "%s:%ld: id: %llu already used on line %ld", path, ids[i].line,
					(unsigned long long)ids[i].id, ids[i - 1].line);
				goto out;
			}
	}
	/* The trials of one search run the same model on the same GPUs. */
	if (n_grp > 0) {
		for (int i = 0; i < n_grp; i++)
			grp[i].model = nt.jobs[grp[i].job].model;
		qsort(grp, (size_t)n_grp, sizeof *grp, grpline_cmp);
		for (int i = 1; i < n_grp; i++) {
			const struct grpline *a = &grp[i - 1], *b = &grp[i];
			if (a->group != b->group)
				continue;
			if (a->gpus != b->gpus || strcmp(a->model, b->model) != 0) {
				sim_err(err, "%s:%ld: group: %llu is a search of %d-GPU %s trials (line "
					"%ld), not %d-GPU %s: the trials of a search share GPUs and model",
					path, b->line, (unsigned long long)b->group, a->gpus, a->model,
					a->line, b->gpus, b->model);
				goto out;
			}
		}
	}
	finish_trace(&nt);
	*t = nt;
	nt.jobs = NULL;
	rv = 0;
out:
	free(nt.jobs);
	free(ids);
	free(grp);
	if (f)
		fclose(f);
	return rv;
}

int sim_trace_write(const char *path, const sim_trace_t *t, sim_error_t *err)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");

	if (!f)
		return sim_err(err, "%s: %s", path, strerror(errno));
	int groups = 0;

	for (int i = 0; i < t->n && !groups; i++)
		groups = t->jobs[i].group != 0;
	fprintf(f, "%s\n", groups ? trace_header_group : trace_header);
	for (int i = 0; i < t->n; i++) {
		const sim_job_t *j = &t->jobs[i];
		fprintf(f, "%llu,%.3f,%d,%.3f,%s", (unsigned long long)j->id, j->arrival, j->gpus,
			j->duration, j->model);
		if (groups)
			fprintf(f, ",%llu", (unsigned long long)j->group);
		fputc('\n', f);
	}
	if (f != stdout ? fclose(f) != 0 : fflush(f) != 0)
		return sim_err(err, "%s: write error: %s", path, strerror(errno));
	return 0;
}

void sim_trace_free(sim_trace_t *t)
{
	if (t) {
		free(t->jobs);
		t->jobs = NULL;
		t->n = 0;
	}
}

/* Generator: splitmix64, so traces are the same on every platform. */

static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double next_unif(uint64_t *s)
{
	return (double)(next_u64(s) >> 11) / 9007199254740992.0;
}

int sim_trace_generate(const sim_gen_t *g, sim_profiles_t *pr, sim_trace_t *t, sim_error_t *err)
{
	const char *cat_keys[3][SYN_PROFILE_MAX_CPU];
	int cat_n[3] = { 0, 0, 0 }, cap = 0;
	uint64_t s = g->seed;
	double now = 0, sum = g->split[0] + g->split[1] + g->split[2];
	sim_trace_t nt = { NULL, 0 };
	sim_error_t perr;

	uint64_t n_search = 0;

	if (g->n_jobs < 1 || !(g->rate_per_hour > 0) || !(sum > 0))
		return sim_err(err, "generator: need jobs >= 1, rate > 0 and a non-zero split");
	if (g->search_k < 0 || g->search_k > SYN_MAX_GROUP || !(g->search_frac >= 0) ||
	    g->search_frac > 1)
		return sim_err(err, "generator: need 0 <= search trials <= %d and a search fraction "
			       "in 0..1", SYN_MAX_GROUP);
	for (int i = 0; i < syn_builtin_count(); i++) {
		syn_category_t c;
		const syn_profile_t *p = syn_builtin_at(i, &c);
		cat_keys[c][cat_n[c]++] = p->key;
	}
	for (int i = 0; i < g->n_jobs;) {
		sim_job_t j;
		double u;
		int c, trials = 1;

		memset(&j, 0, sizeof j);
		j.id = (uint64_t)i;
		now += -log(1 - next_unif(&s)) * 3600.0 / g->rate_per_hour;
		j.arrival = round(now * 1000) / 1000;
		u = next_unif(&s);
		if (u < 0.8)
			j.duration = 60 * pow(10, 1.5 + 1.5 * next_unif(&s));
		else
			j.duration = 60 * pow(10, 3 + next_unif(&s));
		j.duration = round(j.duration * 1000) / 1000;
		if (j.duration <= 0)
			j.duration = 0.001;
		j.gpus = 1;
		if (g->philly_gpus) {
			u = next_unif(&s);
			j.gpus = u < 0.70 ? 1 : u < 0.80 ? 2 : u < 0.95 ? 4 : 8;
		}
		u = next_unif(&s) * sum;
		c = u < g->split[0] ? 0 : u < g->split[0] + g->split[1] ? 1 : 2;
		if (cat_n[c] == 0)
			c = 0;
		snprintf(j.model, sizeof j.model, "%s",
			 cat_keys[c][(int)(next_unif(&s) * cat_n[c]) % cat_n[c]]);
		j.profile = sim_profiles_get(pr, j.model, &perr);
		if (!j.profile) {
			free(nt.jobs);
			return sim_err(err, "generator: %s", perr.text);
		}
		/* A search: search_k trials of this arrival's model, GPUs and
		 * duration, arriving together (the draw is made only with
		 * searches on, so a workload without them is unchanged). The
		 * last search is cut short at n_jobs. */
		if (g->search_k > 1 && g->search_frac > 0 && next_unif(&s) < g->search_frac) {
			trials = g->search_k;
			j.group = ++n_search;
		}
		for (int k = 0; k < trials && i < g->n_jobs; k++, i++) {
			j.id = (uint64_t)i;
			if (add_job(&nt, &cap, &j) < 0) {
				free(nt.jobs);
				return sim_err(err, "out of memory");
			}
		}
	}
	finish_trace(&nt);
	*t = nt;
	return 0;
}

/* Cluster. */

int sim_cluster_parse(const char *spec, sim_cluster_t *c, sim_error_t *err)
{
	char *copy = strdup(spec), *save = NULL, *grp;
	sim_cluster_t nc = { NULL, 0, 0, 0, 0 };
	int rv = -1;

	if (!copy)
		return sim_err(err, "out of memory");
	for (grp = strtok_r(copy, ",", &save); grp; grp = strtok_r(NULL, ",", &save)) {
		uint64_t cnt = 1, g;
		double cpus, mem;
		char *x = strchr(grp, 'x'), *rest = grp, *c1, *c2;

		if (x) {
			if (syn_parse_u64n(grp, (size_t)(x - grp), 1, 100000, &cnt) < 0) {
				sim_err(err, "--cluster '%s': node count before 'x' must be 1..100000", grp);
				goto out;
			}
			rest = x + 1;
		}
		/* Bound the whole cluster, not only each group: enough groups
		 * of 100000 nodes would overflow the int node and GPU counts
		 * (found by tests/fuzz/fuzz_trace.c). With at most 1024 GPUs a
		 * node, SIM_MAX_NODES keeps total_gpus below 2^31. */
		if (cnt > (uint64_t)(SIM_MAX_NODES - nc.n_nodes)) {
			sim_err(err, "--cluster '%s': more than %d nodes in all", grp, SIM_MAX_NODES);
			goto out;
		}
		/* GPUS:CORES:MEM_GB, each of the one grammar. */
		if (!(c1 = strchr(rest, ':')) || !(c2 = strchr(c1 + 1, ':')) ||
		    syn_parse_u64n(rest, (size_t)(c1 - rest), 1, 1024, &g) < 0 ||
		    syn_parse_doublen(c1 + 1, (size_t)(c2 - c1 - 1), 0, INFINITY, &cpus) < 0 ||
		    !(cpus > 0) || syn_parse_double(c2 + 1, 0, INFINITY, &mem) < 0)
			goto bad;
		syn_node_t *nn = realloc(nc.nodes, sizeof *nn * (size_t)(nc.n_nodes + cnt));
		if (!nn) {
			sim_err(err, "out of memory");
			goto out;
		}
		nc.nodes = nn;
		for (uint64_t i = 0; i < cnt; i++) {
			nc.nodes[nc.n_nodes++] = (syn_node_t){ .gpus = (int)g, .cpus = cpus, .mem_gb = mem };
			nc.total_gpus += (int)g;
			nc.total_cpus += cpus;
			nc.total_mem += mem;
		}
	}
	if (nc.n_nodes == 0) {
		sim_err(err, "--cluster '%s': no nodes", spec);
		goto out;
	}
	*c = nc;
	nc.nodes = NULL;
	rv = 0;
	goto out;
bad:
	sim_err(err, "--cluster '%s': expected [COUNTx]GPUS:CORES:MEM_GB, e.g. 16x8:24:500", grp);
out:
	free(nc.nodes);
	free(copy);
	return rv;
}

void sim_cluster_free(sim_cluster_t *c)
{
	if (c) {
		free(c->nodes);
		c->nodes = NULL;
		c->n_nodes = 0;
	}
}
