/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * opt.c: Synergy-OPT with GLPK, the upper bound the simulator compares TUNE
 * against.
 *
 * Phase 1 (an ILP) picks one cell of each selected job's profile, maximising
 * the total normalised throughput (sum of gpus x tput) under the cluster's
 * free cores and memory, with the fairness floor: only cells at or above the
 * job's throughput at the GPU-proportional share are candidates. A tiny cost
 * term (1e-4 per proportional share) breaks ties toward cheaper cells, so a
 * flat job does not hoard resources that change nothing.
 * Phase 2 packs the chosen demands onto nodes: first best-fit decreasing
 * (largest demand first, each job on the fullest node that holds it), which
 * costs microseconds. Phase 1's pooled demands often fill the cluster's
 * cores exactly and cannot be split into per-node sums, so when that fails
 * the cells and nodes are chosen together (opt_joint: the same objective
 * with per-node capacities, identical jobs aggregated, dominated cells
 * dropped, identical nodes ordered); its optimum is the best per-node
 * allocation. The bound reported in the stats is phase 1's linear
 * relaxation (relaxed_bound), proven whether or not GLPK finished.
 * Jobs that must span nodes use the older packing program instead
 * (integer GPUs per (job, node), GLPK's branch and bound). If none finds a
 * solution in time, the jobs are placed in order by TUNE's steps with the
 * OPT demand as their best case (opt_fallback in the stats), which keeps
 * the guarantee.
 *
 * The floor uses the smallest per-GPU share of the cluster's nodes, which is
 * exact on the homogeneous clusters OPT is meant for.
 */
#include "config.h"

#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define TIE_COST 1e-4

int syn__opt_cells(const syn_profile_t *p, double share_c, double share_m, double *cpus,
		   double *mem, double *tput, int max)
{
	int n = 0;
	double floor_t = syn_job_tput(p, share_c, share_m);

	if (max < 1)
		return 0;
	cpus[n] = share_c;
	mem[n] = share_m;
	tput[n] = floor_t;
	n++;
	if (!p)
		return n;
	for (int i = 0; i < p->n_cpu; i++)
		for (int j = 0; j < p->n_mem && n < max; j++) {
			if (p->tput[i][j] < floor_t)
				continue;
			if (p->cpus[i] == share_c && p->mem_gb[j] == share_m)
				continue;
			cpus[n] = p->cpus[i];
			mem[n] = p->mem_gb[j];
			tput[n] = p->tput[i][j];
			n++;
		}
	return n;
}

/* Solve a MIP quietly under a time limit. Returns 0 with a feasible
 * solution (proven within the gap, or the best found when time ran out),
 * -1 with ETIME (no solution in time) or EDOM (infeasible). */
static int solve(glp_prob *lp, double time_limit_s)
{
	glp_iocp parm;
	int rc, st;

	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = GLP_MSG_OFF;
	/* Stop at a proven 0.1% gap: many cells tie within that, and closing
	 * the last fraction of a percent costs most of the search. */
	parm.mip_gap = 1e-3;
	parm.tm_lim = time_limit_s > 0 ? (int)fmin(time_limit_s * 1000, 1e9) : 10000;
	rc = glp_intopt(lp, &parm);
	st = glp_mip_status(lp);
	if ((rc == 0 || rc == GLP_EMIPGAP || rc == GLP_ETMLIM) && (st == GLP_OPT || st == GLP_FEAS))
		return 0;
	if (rc == GLP_ETMLIM || rc == GLP_EITLIM) {
		errno = ETIME;
		return -1;
	}
	errno = EDOM;
	return -1;
}

/* The optimum of phase 1's linear relaxation with the pure throughput
 * objective (no tie-break term): copy lp, make every cell continuous in
 * [0, 1], solve with the simplex method. NaN if that fails. */
static double relaxed_bound(glp_prob *lp, int ncol, const int *colk, const double *ct,
			    const syn_job_t *jobs, const int *idx)
{
	glp_prob *rel = glp_create_prob();
	glp_smcp parm;
	double v = NAN;

	glp_copy_prob(rel, lp, GLP_OFF);
	for (int c = 0; c < ncol; c++) {
		glp_set_col_kind(rel, c + 1, GLP_CV);
		glp_set_col_bnds(rel, c + 1, GLP_DB, 0, 1);
		glp_set_obj_coef(rel, c + 1, jobs[idx[colk[c]]].gpus * ct[c]);
	}
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	if (glp_simplex(rel, &parm) == 0 && glp_get_status(rel) == GLP_OPT)
		v = glp_get_obj_val(rel);
	glp_delete_prob(rel);
	return v;
}

int syn__opt_select(const syn_job_t *jobs, const int *idx, int n_sel, double free_cpus,
		    double free_mem, double share_c, double share_m, double time_limit_s,
		    double *cpus, double *mem, double *obj, double *bound,
		    syn_error_t *err)
{
	enum { MAXC = SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1 };
	glp_prob *lp = NULL;
	int *ia = NULL, *ja = NULL, *first = NULL, *count = NULL, *colk = NULL;
	double *ar = NULL, *cc = NULL, *cm = NULL, *ct = NULL;
	int rv = -1, ncol = 0, nz = 0;
	double cbuf[MAXC], mbuf[MAXC], tbuf[MAXC];

	*obj = 0;
	if (bound)
		*bound = 0;
	if (n_sel == 0)
		return 0;
	first = malloc(sizeof *first * (size_t)n_sel);
	count = malloc(sizeof *count * (size_t)n_sel);
	if (!first || !count)
		goto nomem;
	for (int k = 0; k < n_sel; k++) {
		count[k] = syn__opt_cells(jobs[idx[k]].profile, share_c, share_m, cbuf, mbuf, tbuf,
					  MAXC);
		first[k] = ncol;
		ncol += count[k];
	}
	cc = malloc(sizeof *cc * (size_t)ncol);
	cm = malloc(sizeof *cm * (size_t)ncol);
	ct = malloc(sizeof *ct * (size_t)ncol);
	ia = malloc(sizeof *ia * (size_t)(3 * ncol + 1));
	ja = malloc(sizeof *ja * (size_t)(3 * ncol + 1));
	ar = malloc(sizeof *ar * (size_t)(3 * ncol + 1));
	colk = malloc(sizeof *colk * (size_t)ncol);
	if (!cc || !cm || !ct || !ia || !ja || !ar || !colk)
		goto nomem;
	for (int k = 0; k < n_sel; k++)
		for (int c = first[k]; c < first[k] + count[k]; c++)
			colk[c] = k;
	for (int k = 0; k < n_sel; k++)
		syn__opt_cells(jobs[idx[k]].profile, share_c, share_m, cc + first[k],
			       cm + first[k], ct + first[k], count[k]);

	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MAX);
	/* Rows 1..n_sel: one cell per job; then cores, then memory. */
	glp_add_rows(lp, n_sel + 2);
	for (int k = 0; k < n_sel; k++)
		glp_set_row_bnds(lp, k + 1, GLP_FX, 1, 1);
	glp_set_row_bnds(lp, n_sel + 1, GLP_UP, 0, free_cpus * (1 + SYN__EPS));
	glp_set_row_bnds(lp, n_sel + 2, GLP_UP, 0, free_mem * (1 + SYN__EPS));
	glp_add_cols(lp, ncol);
	for (int k = 0; k < n_sel; k++) {
		double g = jobs[idx[k]].gpus;
		for (int c = first[k]; c < first[k] + count[k]; c++) {
			double cost = cc[c] / share_c + (share_m > 0 ? cm[c] / share_m : 0);
			glp_set_col_kind(lp, c + 1, GLP_BV);
			glp_set_obj_coef(lp, c + 1, g * (ct[c] - TIE_COST * cost));
			nz++;
			ia[nz] = k + 1, ja[nz] = c + 1, ar[nz] = 1;
			nz++;
			ia[nz] = n_sel + 1, ja[nz] = c + 1, ar[nz] = g * cc[c];
			nz++;
			ia[nz] = n_sel + 2, ja[nz] = c + 1, ar[nz] = g * cm[c];
		}
	}
	glp_load_matrix(lp, nz, ia, ja, ar);
	if (solve(lp, time_limit_s) < 0) {
		if (errno == ETIME)
			syn_errprintf(err, ETIME,
				      "OPT phase 1 (%d jobs, %d cells): no solution within %g s",
				      n_sel, ncol, time_limit_s);
		else
			syn_errprintf(err, EDOM,
				  "OPT phase 1 (%d jobs): infeasible, free cores/memory below the "
				      "jobs' proportional shares",
				      n_sel);
		goto out;
	}
	for (int k = 0; k < n_sel; k++) {
		int pick = first[k];
		for (int c = first[k]; c < first[k] + count[k]; c++)
			if (glp_mip_col_val(lp, c + 1) > 0.5)
				pick = c;
		cpus[k] = cc[pick];
		mem[k] = cm[pick];
		*obj += jobs[idx[k]].gpus * ct[pick];
	}
	if (bound)
		*bound = relaxed_bound(lp, ncol, colk, ct, jobs, idx);
	rv = 0;
	goto out;
nomem:
	syn_errprintf(err, ENOMEM, "out of memory");
out:
	if (lp)
		glp_delete_prob(lp);
	free(colk);
	free(first);
	free(count);
	free(cc);
	free(cm);
	free(ct);
	free(ia);
	free(ja);
	free(ar);
	return rv;
}

/* Phase 2: pack the selected jobs at their chosen demand. Returns 0 with
 * every job committed, -1 if it cannot (nothing committed). */
static int opt_pack(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, const int *idx, int n_sel,
		    const double *cpus, const double *mem, double time_limit_s, struct syn__ctx *cx)
{
	glp_prob *lp = NULL;
	int *ia = NULL, *ja = NULL, *ar_n = NULL;
	double *ar = NULL;
	int rv = -1, nv = n_sel * n_nodes, nz = 0;

	if (nv == 0)
		return 0;
	ia = malloc(sizeof *ia * (size_t)(4 * nv + 1));
	ja = malloc(sizeof *ja * (size_t)(4 * nv + 1));
	ar = malloc(sizeof *ar * (size_t)(4 * nv + 1));
	ar_n = malloc(sizeof *ar_n * (size_t)n_sel);
	if (!ia || !ja || !ar || !ar_n)
		goto out;
	lp = glp_create_prob();
	/* Rows 1..n_sel: GPUs of each job; then per node GPUs, cores, memory. */
	glp_add_rows(lp, n_sel + 3 * n_nodes);
	for (int k = 0; k < n_sel; k++)
		glp_set_row_bnds(lp, k + 1, GLP_FX, jobs[idx[k]].gpus, jobs[idx[k]].gpus);
	for (int s = 0; s < n_nodes; s++) {
		const syn_node_t *n = &nodes[s];
		int r = n_sel + 3 * s + 1;
		glp_set_row_bnds(lp, r, GLP_UP, 0, n->free_gpus > 0 ? n->free_gpus : 0);
		glp_set_row_bnds(lp, r + 1, GLP_UP, 0,
				 fmax(0, n->free_cpus + SYN__EPS * (1 + n->cpus)));
		glp_set_row_bnds(lp, r + 2, GLP_UP, 0,
				 fmax(0, n->free_mem_gb + SYN__EPS * (1 + n->mem_gb)));
	}
	glp_add_cols(lp, nv);
	for (int k = 0; k < n_sel; k++)
		for (int s = 0; s < n_nodes; s++) {
			int col = k * n_nodes + s + 1, r = n_sel + 3 * s + 1;
			int ub = nodes[s].free_gpus < jobs[idx[k]].gpus ? nodes[s].free_gpus
									: jobs[idx[k]].gpus;
			glp_set_col_kind(lp, col, GLP_IV);
			if (ub <= 0)
				glp_set_col_bnds(lp, col, GLP_FX, 0, 0);
			else
				glp_set_col_bnds(lp, col, GLP_DB, 0, ub);
			/* Prefer lower-numbered nodes a little: consolidates
			 * multi-GPU jobs and makes the answer deterministic. */
			glp_set_obj_coef(lp, col, 1e-6 * s);
			ia[++nz] = k + 1, ja[nz] = col, ar[nz] = 1;
			ia[++nz] = r, ja[nz] = col, ar[nz] = 1;
			ia[++nz] = r + 1, ja[nz] = col, ar[nz] = cpus[k];
			ia[++nz] = r + 2, ja[nz] = col, ar[nz] = mem[k];
		}
	glp_set_obj_dir(lp, GLP_MIN);
	glp_load_matrix(lp, nz, ia, ja, ar);
	if (solve(lp, time_limit_s) < 0)
		goto out;
	/* Check the result before committing anything: span limit and the
	 * per-node floor. */
	for (int k = 0; k < n_sel; k++) {
		const syn_job_t *j = &jobs[idx[k]];
		double sc = INFINITY, sm = INFINITY;
		ar_n[k] = 0;
		for (int s = 0; s < n_nodes; s++)
			if (glp_mip_col_val(lp, k * n_nodes + s + 1) > 0.5) {
				ar_n[k]++;
				sc = fmin(sc, syn__share_cpus(&nodes[s]));
				sm = fmin(sm, syn__share_mem(&nodes[s]));
			}
		if (ar_n[k] > SYN_MAX_SPAN ||
		    syn_job_tput(j->profile, cpus[k], mem[k]) < syn_job_tput(j->profile, sc, sm))
			goto out;
	}
	for (int k = 0; k < n_sel; k++) {
		syn_place_t pl[SYN_MAX_SPAN];
		int np = 0;
		for (int s = 0; s < n_nodes; s++) {
			double v = glp_mip_col_val(lp, k * n_nodes + s + 1);
			if (v > 0.5)
				pl[np++] = (syn_place_t){ s, (int)lround(v) };
		}
		syn__commit(cx, idx[k], pl, np, cpus[k], mem[k]);
	}
	rv = 0;
out:
	if (lp)
		glp_delete_prob(lp);
	free(ia);
	free(ja);
	free(ar);
	free(ar_n);
	return rv;
}

/*
 * Phase 2 when the phase-1 demands do not pack: choose the cells and the
 * nodes together. Phase 1 pools the cluster's cores and memory, and its
 * demands often add up to a node's capacity only when split across nodes,
 * which no packing can do; a packing program then has no solution and GLPK
 * spends its whole time limit failing to prove it. Here the variables are
 * x[t][c][s], the number of jobs of class t (same profile and GPU count)
 * at cell c on node s, so identical jobs are one integer instead of many
 * interchangeable binaries; cells dominated by a cheaper cell at least as
 * fast are dropped; and consecutive identical nodes are ordered by the
 * cores they hand out, so GLPK does not explore every permutation of them.
 * Every job of the round is placed (all fit by GPUs: the round selected
 * them so), each node's floor is respected, and the objective is phase 1's.
 * Only for jobs that fit on one node. Returns 0 with every job committed,
 * -1 if there is no solution in time (nothing committed).
 */
struct jclass {
	const syn_profile_t *p;
	int gpus, n, first; /* first column */
	int nc;             /* cells kept */
	double c[SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1];
	double m[SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1];
	double t[SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1];
};

static int same_node(const syn_node_t *a, const syn_node_t *b)
{
	return a->gpus == b->gpus && a->cpus == b->cpus && a->mem_gb == b->mem_gb &&
	       a->free_gpus == b->free_gpus && a->free_cpus == b->free_cpus &&
	       a->free_mem_gb == b->free_mem_gb;
}

static int opt_joint(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, const int *idx, int n_sel,
		     double share_c, double share_m, double time_limit_s, struct syn__ctx *cx)
{
	enum { MAXC = SYN_PROFILE_MAX_CPU * SYN_PROFILE_MAX_MEM + 1 };
	struct jclass *cl = NULL;
	int *cls = NULL, *pick = NULL, *ia = NULL, *ja = NULL, *left = NULL;
	double *ar = NULL;
	glp_prob *lp = NULL;
	int rv = -1, ncl = 0, ncol = 0, nz = 0, max_g = 0, row;

	for (int s = 0; s < n_nodes; s++)
		max_g = nodes[s].free_gpus > max_g ? nodes[s].free_gpus : max_g;
	cl = calloc((size_t)(n_sel > 0 ? n_sel : 1), sizeof *cl);
	cls = malloc(sizeof *cls * (size_t)(n_sel > 0 ? n_sel : 1));
	pick = malloc(sizeof *pick * (size_t)(n_sel > 0 ? n_sel : 1));
	if (!cl || !cls || !pick)
		goto out;
	for (int k = 0; k < n_sel; k++) {
		const syn_job_t *j = &jobs[idx[k]];
		int q = 0;
		if (j->gpus > max_g)
			goto out;
		while (q < ncl && !(cl[q].p == j->profile && cl[q].gpus == j->gpus))
			q++;
		if (q == ncl) {
			double c[MAXC], m[MAXC], t[MAXC];
			int n = syn__opt_cells(j->profile, share_c, share_m, c, m, t, MAXC);
			cl[q].p = j->profile;
			cl[q].gpus = j->gpus;
			for (int a = 0; a < n; a++) {
				int dom = 0;
				for (int b = 0; b < n && !dom; b++)
					dom = b != a && c[b] <= c[a] && m[b] <= m[a] && t[b] >= t[a] &&
					      (c[b] < c[a] || m[b] < m[a] || t[b] > t[a] || b < a);
				if (dom)
					continue;
				cl[q].c[cl[q].nc] = c[a];
				cl[q].m[cl[q].nc] = m[a];
				cl[q].t[cl[q].nc++] = t[a];
			}
			cl[q].first = ncol;
			ncol += cl[q].nc * n_nodes;
			ncl++;
		}
		cl[q].n++;
		cls[k] = q;
	}
	/* Rows: one per class (all its jobs placed), three per node, one per
	 * pair of consecutive identical nodes. Each column has at most five
	 * entries (class, node GPUs, cores, memory, two order rows). */
	ia = malloc(sizeof *ia * (size_t)(6 * ncol + 1));
	ja = malloc(sizeof *ja * (size_t)(6 * ncol + 1));
	ar = malloc(sizeof *ar * (size_t)(6 * ncol + 1));
	left = malloc(sizeof *left * (size_t)(ncol > 0 ? ncol : 1));
	if (!ia || !ja || !ar || !left)
		goto out;
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_rows(lp, ncl + 4 * n_nodes);
	for (int q = 0; q < ncl; q++)
		glp_set_row_bnds(lp, q + 1, GLP_FX, cl[q].n, cl[q].n);
	for (int s = 0; s < n_nodes; s++) {
		const syn_node_t *n = &nodes[s];
		row = ncl + 4 * s + 1;
		glp_set_row_bnds(lp, row, GLP_UP, 0, n->free_gpus > 0 ? n->free_gpus : 0);
		glp_set_row_bnds(lp, row + 1, GLP_UP, 0,
				 fmax(0, n->free_cpus + SYN__EPS * (1 + n->cpus)));
		glp_set_row_bnds(lp, row + 2, GLP_UP, 0,
				 fmax(0, n->free_mem_gb + SYN__EPS * (1 + n->mem_gb)));
		/* cores(s) - cores(s+1) >= 0 for identical neighbours. */
		if (s + 1 < n_nodes && same_node(n, &nodes[s + 1]))
			glp_set_row_bnds(lp, row + 3, GLP_LO, 0, 0);
		else
			glp_set_row_bnds(lp, row + 3, GLP_FR, 0, 0);
	}
	glp_add_cols(lp, ncol);
	for (int q = 0; q < ncl; q++)
		for (int a = 0; a < cl[q].nc; a++)
			for (int s = 0; s < n_nodes; s++) {
				const syn_node_t *n = &nodes[s];
				int col = cl[q].first + a * n_nodes + s + 1, g = cl[q].gpus;
				double cost = cl[q].c[a] / share_c + (share_m > 0 ? cl[q].m[a] / share_m : 0);
				int ub = n->free_gpus / g < cl[q].n ? n->free_gpus / g : cl[q].n;
				glp_set_col_kind(lp, col, GLP_IV);
				/* The floor on this node (its own share). */
				if (cl[q].t[a] < syn_job_tput(cl[q].p, syn__share_cpus(n), syn__share_mem(n)))
					ub = 0;
				if (ub <= 0)
					glp_set_col_bnds(lp, col, GLP_FX, 0, 0);
				else
					glp_set_col_bnds(lp, col, GLP_DB, 0, ub);
				glp_set_obj_coef(lp, col, g * (cl[q].t[a] - TIE_COST * cost));
				row = ncl + 4 * s + 1;
				ia[++nz] = q + 1, ja[nz] = col, ar[nz] = 1;
				ia[++nz] = row, ja[nz] = col, ar[nz] = g;
				ia[++nz] = row + 1, ja[nz] = col, ar[nz] = g * cl[q].c[a];
				ia[++nz] = row + 2, ja[nz] = col, ar[nz] = g * cl[q].m[a];
				ia[++nz] = row + 3, ja[nz] = col, ar[nz] = g * cl[q].c[a];
				if (s > 0)
					ia[++nz] = row - 1, ja[nz] = col, ar[nz] = -g * cl[q].c[a];
			}
	glp_load_matrix(lp, nz, ia, ja, ar);
	if (solve(lp, time_limit_s) < 0)
		goto out;
	/* Hand each class's jobs out over its (cell, node) counts, in the
	 * round's order; pick[k] is job k's column. The class rows make the
	 * counts add up exactly; nothing is committed unless they do. */
	for (int c = 0; c < ncol; c++)
		left[c] = (int)lround(glp_mip_col_val(lp, c + 1));
	for (int k = 0; k < n_sel; k++) {
		const struct jclass *q = &cl[cls[k]];
		int c = q->first, end = q->first + q->nc * n_nodes;
		while (c < end && left[c] <= 0)
			c++;
		if (c == end)
			goto out;
		left[c]--;
		pick[k] = c;
	}
	for (int c = 0; c < ncol; c++)
		if (left[c] != 0)
			goto out;
	for (int k = 0; k < n_sel; k++) {
		const struct jclass *q = &cl[cls[k]];
		int a = (pick[k] - q->first) / n_nodes, s = (pick[k] - q->first) % n_nodes;
		syn_place_t pl = { s, q->gpus };
		syn__commit(cx, idx[k], &pl, 1, q->c[a], q->m[a]);
	}
	rv = 0;
out:
	if (lp)
		glp_delete_prob(lp);
	free(cl);
	free(cls);
	free(pick);
	free(ia);
	free(ja);
	free(ar);
	free(left);
	return rv;
}

struct bfd_item {
	double key;
	int k;
};

static int bfd_cmp(const void *a, const void *b)
{
	const struct bfd_item *x = a, *y = b;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->k - y->k;
}

/* Phase 2 heuristic: best-fit decreasing of single-node jobs. Commits all
 * and returns 0, or commits nothing and returns -1. */
static int opt_pack_bfd(const syn_node_t *nodes, int n_nodes, syn_job_t *jobs, const int *idx,
			int n_sel, const double *cpus, const double *mem, struct syn__ctx *cx)
{
	struct bfd_item *it = malloc(sizeof *it * (size_t)(n_sel > 0 ? n_sel : 1));
	syn_node_t *fr = malloc(sizeof *fr * (size_t)(n_nodes > 0 ? n_nodes : 1));
	int *where = malloc(sizeof *where * (size_t)(n_sel > 0 ? n_sel : 1));
	int rv = -1;

	if (!it || !fr || !where)
		goto out;
	memcpy(fr, nodes, sizeof *fr * (size_t)n_nodes);
	for (int k = 0; k < n_sel; k++) {
		const syn_node_t *n0 = &nodes[0];
		it[k].k = k;
		it[k].key = jobs[idx[k]].gpus *
			    (cpus[k] / n0->cpus + (n0->mem_gb > 0 ? mem[k] / n0->mem_gb : 0));
	}
	qsort(it, (size_t)n_sel, sizeof *it, bfd_cmp);
	for (int q = 0; q < n_sel; q++) {
		int k = it[q].k, g = jobs[idx[k]].gpus, best = -1;
		double left = INFINITY;
		for (int s = 0; s < n_nodes; s++) {
			syn_node_t *n = &fr[s];
			if (!syn__fits(n, g, cpus[k], mem[k]))
				continue;
			if (syn_job_tput(jobs[idx[k]].profile, cpus[k], mem[k]) <
			    syn_job_tput(jobs[idx[k]].profile, syn__share_cpus(n), syn__share_mem(n)))
				continue;
			double l = (n->free_cpus - g * cpus[k]) / n->cpus +
				   (n->mem_gb > 0 ? (n->free_mem_gb - g * mem[k]) / n->mem_gb : 0);
			if (l < left) {
				left = l;
				best = s;
			}
		}
		if (best < 0)
			goto out;
		where[k] = best;
		fr[best].free_gpus -= g;
		fr[best].free_cpus -= g * cpus[k];
		fr[best].free_mem_gb -= g * mem[k];
	}
	for (int k = 0; k < n_sel; k++) {
		syn_place_t pl = { where[k], jobs[idx[k]].gpus };
		syn__commit(cx, idx[k], &pl, 1, cpus[k], mem[k]);
	}
	rv = 0;
out:
	free(it);
	free(fr);
	free(where);
	return rv;
}

int syn__opt_round(syn_node_t *nodes, int n_nodes, syn_job_t *jobs, int n_jobs,
		   const int *order, const syn_round_opts_t *o, syn_round_stats_t *st,
		   syn_error_t *err)
{
	struct syn__ctx *cx = NULL;
	int *sel = NULL, n_sel = 0, rv = -1, free_g = 0;
	double *cpus = NULL, *mem = NULL, free_c = 0, free_m = 0, obj, bound;
	double share_c = INFINITY, share_m = INFINITY;

	for (int s = 0; s < n_nodes; s++) {
		free_g += nodes[s].free_gpus;
		free_c += nodes[s].free_cpus;
		free_m += nodes[s].free_mem_gb;
		share_c = fmin(share_c, syn__share_cpus(&nodes[s]));
		share_m = fmin(share_m, syn__share_mem(&nodes[s]));
	}
	sel = malloc(sizeof *sel * (size_t)(n_jobs > 0 ? n_jobs : 1));
	cpus = malloc(sizeof *cpus * (size_t)(n_jobs > 0 ? n_jobs : 1));
	mem = malloc(sizeof *mem * (size_t)(n_jobs > 0 ? n_jobs : 1));
	cx = syn__ctx_create(nodes, n_nodes, jobs, n_jobs, st);
	if (!sel || !cpus || !mem || !cx) {
		syn_errprintf(err, ENOMEM, "out of memory");
		goto out;
	}
	/* The jobs of this round: in order, as many as the free GPUs hold. */
	for (int k = 0; k < n_jobs; k++) {
		const syn_job_t *j = &jobs[order[k]];
		if (j->pinned || j->gpus > free_g)
			continue;
		sel[n_sel++] = order[k];
		free_g -= j->gpus;
	}
	if (syn__opt_select(jobs, sel, n_sel, free_c, free_m, share_c, share_m,
			    o->opt_time_limit_s, cpus, mem, &obj, &bound, err) < 0) {
		if (errno != EDOM)
			goto out;
		/* Pinned jobs above their share can leave too little for the
		 * floors of the others: the ILP has no answer, TUNE does. */
		st->opt_fallback = 1;
		for (int k = 0; k < n_sel; k++)
			syn__place(cx, sel[k], SYN__TUNE, 0, 0, 0);
		rv = 0;
		goto out;
	}
	st->opt_bound = bound;
	if (opt_pack_bfd(nodes, n_nodes, jobs, sel, n_sel, cpus, mem, cx) < 0 &&
	    opt_joint(nodes, n_nodes, jobs, sel, n_sel, share_c, share_m, o->opt_time_limit_s,
		      cx) < 0 &&
	    opt_pack(nodes, n_nodes, jobs, sel, n_sel, cpus, mem, fmin(o->opt_time_limit_s / 4, 2),
		     cx) < 0) {
		st->opt_fallback = 1;
		for (int k = 0; k < n_sel; k++)
			syn__place(cx, sel[k], SYN__TUNE, 1, cpus[k], mem[k]);
	}
	rv = 0;
out:
	syn__ctx_destroy(cx);
	free(sel);
	free(cpus);
	free(mem);
	return rv;
}
