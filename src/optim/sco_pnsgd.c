/* PNSGD (003 Alg. 1) with the Snowball batch schedules, privacy by amplification by iteration.
 *
 *   v_{t+1} = w_t - eta_t (grad F_t(w_t) + xi_t),  xi_t ~ N(0, sigma^2 I),  w_{t+1} = Pi_K(v_{t+1})
 * where F_t is the mean loss over batch t (B_t fresh examples of the public order: each sample
 * is used once).  algo.schedule:
 *   const  Thm 3.5: B_t = ceil(2 sqrt(d/(T-t+1))/rho), eta = D/(L sqrt(2T)), sigma = L/sqrt(d)
 *   jnn    Thm 3.6: B_t = ceil(4 sqrt(3d/(T-t+1))/rho), eta_t = JNN(D/(sqrt 2 L)) (Def. 3.3)
 *   sc     Thm 5.4 (lambda-strongly convex, lambda = the model's public mu):
 *          B_t as in Thm 3.5, eta = 2 ln T / (lambda T)
 * T = algo.T, or (algo.T = 0, default) the largest T whose schedule fits the n examples.
 * The n consumed, sum_t B_t, is reported (003 Thm 3.5: n <= T + 4 sqrt(dT)/rho).
 *
 * Privacy.  The charged rho is recomputed from the actual schedule by 003 Thm 3.1,
 *   rho = 2 L max_t eta_t / (B_t sqrt(sum_{s>=t} eta_s^2 sigma^2))       (dpo_abi_rho)
 * with L inflated by the grid snapping (sqrt(d) Lambda B_t / 2 per step), and needs
 * eta_t <= 2/beta (checked).  algo.release:
 *   final (default)  ONE "rdp-rho" charge for the whole pass, before the first step (Thm 3.1
 *                    covers the final iterate; intermediate iterates go only to the worker
 *                    ranks of this job, which serve the gradient oracle)
 *   all              every iterate is a release: step t charges a Gaussian of multiplier
 *                    sigma B_t / (2L) as one batch of a disjoint pass (parallel composition).
 * The ABI analysis is for continuous Gaussian noise; the exact grid sampler stands in for it.
 * Multi-party runs (sco_common.h), privacy.trust = central or local: as under secagg below, every
 * step is a release charged to every party; a Gaussian of multiplier 1/rho on the batch SUM
 * (sensitivity dpo_sens(L)), added by rank 0 (central) or by every party to its own sum
 * (local: each party's own noise carries the charge against the coordinator, so the sum
 * carries sqrt(ranks) times it), charged as one batch of a disjoint pass (parallel composition
 * needs no secrecy of the public order, so local charges the same as central).
 * privacy.trust = secagg (sco_common.h): every iterate goes to every party (the oracle's x),
 * so the final-iterate analysis does not hold against them: each step is a release (as
 * algo.release = all; an explicit algo.release = final is refused), the masked batch SUM with
 * the parties' discrete Gaussian shares, charged rdp-rho (KLS 2021 Thm 1, P - k honest shares)
 * with rho <= algo.rho as one batch of a disjoint pass (parallel composition: the pass costs
 * one step's rho).  Its noise is set by the budget, not by sigma = L/sqrt(d).
 *
 * Speed (issue 16).  The steps are sequential in the iterate and most batches are one row, so
 * one oracle collective per step made the pass ~100x slower than its arithmetic.  With
 * algo.fetch_rows = W > 0 (default: 2^22 / d) rank 0 fetches the rows of the next steps (the
 * public order, at most W rows, at least one batch) in one collective and evaluates each batch itself
 * (dpo_oracle_eval_rows: the same sums as the oracle's); multi-party runs keep one oracle
 * call per step (a party's rows never leave it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/parties.h"
#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"
#include "optim/sco_common.h"

typedef struct {
  dpo__sco_t c;
  int kind;          /* 0 const, 1 jnn, 2 sc */
  int release_all;
  int64_t T, used;   /* steps, examples consumed */
  int64_t *B;
  double *eta, *sig;
  double sigma, rho_charged, Lsnap;
  int64_t off;
  double *g;
  dpo__sco_sa_t sa;       /* multi-party runs (sco_common.h) */
  double sig_sum;         /* parties, central / local: the Gaussian sigma on the sum */
  int64_t fetch;          /* algo.fetch_rows: rows fetched at a time (0: oracle per step) */
  dpo_oracle_rows_t win;  /* rows perm[woff .. woff + win.rows.n) on rank 0 */
  int64_t woff, *pos;
} dpo__pnsgd_t;

/* Default rows fetched at a time: 2^22 / d (32 MB of dense rows). */
#define DPO__PN_WINDOW ((int64_t)1 << 22)

static void pnsgd_destroy(void *st) {
  dpo__pnsgd_t *a = st;
  if (!a) return;
  dpo__sco_free(&a->c);
  dpo__sco_secagg_free(&a->sa);
  free(a->B);
  free(a->eta);
  free(a->sig);
  free(a->g);
  free(a->pos);
  dpo_oracle_rows_free(&a->win);
  free(a);
}

/* schedule for T steps into a->B, a->eta; returns n consumed */
static int64_t pnsgd_plan(dpo__pnsgd_t *a, int64_t T, double lambda) {
  const dpo__sco_t *c = &a->c;
  int64_t n = dpo__sco_snowball(a->kind == 1, T, c->d, c->rho, a->B);
  if (a->kind == 0)
    for (int64_t t = 0; t < T; t++) a->eta[t] = c->D / (c->L * sqrt(2.0 * (double)T));
  else if (a->kind == 1)
    dpo__sco_jnn(T, c->D / (sqrt(2.0) * c->L), a->eta);
  else
    for (int64_t t = 0; t < T; t++)
      a->eta[t] = 2 * log((double)(T > 1 ? T : 2)) / (lambda * (double)T);
  return n;
}

static int pnsgd_create(dpo_solver_t *s, void **state) {
  int rc;
  dpo__pnsgd_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "pnsgd: out of memory");
  const char *sched = NULL, *rel = NULL;
  double lambda = NAN;
  if ((rc = dpo__sco_init(s, &a->c, "pnsgd"))) goto fail;
  if ((rc = dpo_solver_param_str(s, "schedule", "const", &sched)) ||
      (rc = dpo_solver_param_str(s, "release", "final", &rel)))
    goto fail;
  if (!strcmp(sched, "const")) a->kind = 0;
  else if (!strcmp(sched, "jnn")) a->kind = 1;
  else if (!strcmp(sched, "sc")) a->kind = 2;
  else {
    rc = dpo_err(DPO_EINVAL, "pnsgd: algo.schedule = '%s': const | jnn | sc", sched);
    goto fail;
  }
  if (!strcmp(rel, "final")) a->release_all = 0;
  else if (!strcmp(rel, "all")) a->release_all = 1;
  else {
    rc = dpo_err(DPO_EINVAL, "pnsgd: algo.release = '%s': final | all", rel);
    goto fail;
  }
  const dpo_parties_t *pt = dpo_oracle_parties(dpo_solver_oracle(s));
  if (pt) {
    if (!a->release_all && dpo_config_get(dpo_solver_config(s), "algo.release")) {
      rc = dpo_err(DPO_EUNSUP, "pnsgd: algo.release = final is not private under privacy.trust "
                   "= %s with parties: every party receives every iterate, and Feldman, Koren and Talwar 2020, Thm 3.1 "
                   "covers only the final one; use algo.release = all (the default with "
                   "parties)", dpo_trust_name(pt->trust));
      goto fail;
    }
    a->release_all = 1;
    if ((rc = dpo__sco_parties_setup(s, dpo_sens(a->c.rel, a->c.L), a->c.rho, &a->sa))) goto fail;
    /* central / local: a Gaussian on the SUM of multiplier 1/rho (the rdp-rho curve of the
     * target), each batch one of a disjoint pass; local: every party adds it to its own sum */
    a->sig_sum = dpo__sco_sigma(nextafter(1 / a->c.rho, INFINITY), a->sa.sens, a->c.d);
  }
  if (a->kind == 2) {
    if ((rc = dpo_solver_constants(s, NULL, &lambda))) goto fail;
    if (!(lambda > 0)) {
      rc = dpo_err(DPO_EINVAL, "pnsgd: schedule sc needs a strongly convex model (lambda > 0)");
      goto fail;
    }
  }
  int64_t T, n = a->c.n;
  int64_t wdef = DPO__PN_WINDOW / a->c.d > 0 ? DPO__PN_WINDOW / a->c.d : 1;
  if ((rc = dpo_solver_param_int(s, "T", 0, &T)) ||
      (rc = dpo_solver_param_int(s, "fetch_rows", wdef, &a->fetch)))
    goto fail;
  if (a->fetch < 0) {
    rc = dpo_err(DPO_EINVAL, "pnsgd: algo.fetch_rows = %lld < 0", (long long)a->fetch);
    goto fail;
  }
  int64_t Tmax = n; /* every step uses >= 1 example */
  a->B = malloc((size_t)Tmax * sizeof *a->B);
  a->eta = malloc((size_t)Tmax * sizeof *a->eta);
  a->sig = malloc((size_t)Tmax * sizeof *a->sig);
  a->g = malloc((size_t)a->c.d * sizeof *a->g);
  a->pos = malloc((size_t)Tmax * 2 * sizeof *a->pos);
  if (!a->B || !a->eta || !a->sig || !a->g || !a->pos) {
    rc = dpo_err(DPO_ENOMEM, "pnsgd: out of memory");
    goto fail;
  }
  if (T <= 0) { /* largest T that fits: n(T) is nondecreasing in T, bisect */
    int64_t lo = 0, hi = Tmax;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (pnsgd_plan(a, mid, lambda) <= n) lo = mid;
      else hi = mid - 1;
    }
    T = lo;
    if (T < 1) {
      rc = dpo_err(DPO_EINVAL, "pnsgd: %lld examples cannot cover even one Snowball step at "
                               "rho=%g", (long long)n, a->c.rho);
      goto fail;
    }
  } else if (T > Tmax) {
    rc = dpo_err(DPO_EINVAL, "pnsgd: algo.T = %lld > n", (long long)T);
    goto fail;
  }
  a->T = T;
  a->used = pnsgd_plan(a, T, lambda);
  if (a->used > n) {
    rc = dpo_err(DPO_EINVAL, "pnsgd: T=%lld at rho=%g consumes n=%lld examples, only %lld "
                             "available (each sample is used once)",
                 (long long)T, a->c.rho, (long long)a->used, (long long)n);
    goto fail;
  }
  a->sigma = a->c.L / sqrt((double)a->c.d);
  for (int64_t t = 0; t < T; t++) {
    a->sig[t] = a->sigma;
    if (isfinite(a->c.beta) && !(a->eta[t] <= 2 / a->c.beta)) {
      rc = dpo_err(DPO_EINVAL, "pnsgd: step eta_%lld = %g exceeds 2/beta = %g (Feldman, Koren and Talwar 2020, Thm 3.1 needs "
                               "it): use more steps or a smaller algo.D",
                   (long long)t + 1, a->eta[t], 2 / a->c.beta);
      goto fail;
    }
  }
  /* the grid snapping adds up to sqrt(d) Lambda / 2 per coordinate difference */
  double lambda_grid;
  if ((rc = dpo_mech_grid(a->sigma, &lambda_grid))) goto fail;
  int64_t bmax = 0;
  for (int64_t t = 0; t < T; t++) bmax = a->B[t] > bmax ? a->B[t] : bmax;
  a->Lsnap = a->c.L + (double)bmax * sqrt((double)a->c.d) * lambda_grid / 2;
  if ((rc = dpo_abi_rho(a->Lsnap, T, a->B, a->eta, a->sig, &a->rho_charged))) goto fail;
  dpo_msg("pnsgd: schedule %s, T=%lld steps consume n=%lld of %lld examples (B_1=%lld, B_T=%lld), "
          "rho target %.6g, Thm 3.1 rho %.6g, L=%g, D=%g, sigma=%g",
          sched, (long long)T, (long long)a->used, (long long)n, (long long)a->B[0],
          (long long)a->B[T - 1], a->c.rho, a->rho_charged, a->c.L, a->c.D, a->sigma);
  /* release final: Thm 3.1 covers the final iterate of the FULL pass only, so the plan is one
   * charge for the whole schedule, made by the driver before step 0 (optim.h) */
  dpo_plan_t plan = {.kind = a->release_all ? DPO_PLAN_PER_STEP : DPO_PLAN_WHOLE, .steps = T,
                     .one_pass = a->release_all};
  if (a->sa.on && a->sa.trust == DPO_TRUST_SECAGG)
    snprintf(plan.what, sizeof plan.what, "%lld steps, each iterate a securely aggregated "
             "distributed discrete Gaussian release (rdp-rho %.6g) charged before it is made "
             "(disjoint batches: one pass)", (long long)T, a->sa.rho);
  else if (a->sa.on)
    snprintf(plan.what, sizeof plan.what, "%lld steps, each iterate a Gaussian release charged "
             "to every party before it is made (disjoint batches: one pass); sigma %.9g on the "
             "sum, added %s: sd %.9g on the sum", (long long)T, a->sig_sum,
             a->sa.trust == DPO_TRUST_LOCAL ? "by every party to its own sum" : "by rank 0",
             a->sa.trust == DPO_TRUST_LOCAL ? a->sig_sum * sqrt((double)a->sa.size) : a->sig_sum);
  else if (a->release_all)
    snprintf(plan.what, sizeof plan.what, "%lld steps, each iterate a Gaussian release charged "
             "before it is made (disjoint batches)", (long long)T);
  else {
    plan.whole = (dpo_charge_t){.mechanism = DPO_MECH_RDP_RHO, .rho = a->rho_charged,
                                .sampling = DPO_SAMPLING_NONE, .accounting = DPO_ACCOUNTING_RDP,
                                .m = a->used, .n = n, .step = 0, .neighbours = a->c.rel};
    snprintf(plan.what, sizeof plan.what, "one charge rho = %.6g for the final iterate of the "
             "full %lld-step pass (Feldman, Koren and Talwar 2020, Thm 3.1)", a->rho_charged, (long long)T);
  }
  if ((rc = dpo_solver_declare_plan(s, &plan))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  pnsgd_destroy(a);
  return rc;
}

/* Rows of steps t, t+1, ... (from a->off, the public order) fetched to rank 0: as many whole
 * batches as fit algo.fetch_rows rows, at least one. */
static int pnsgd_fetch(dpo__pnsgd_t *a, dpo_oracle_t *o, int64_t t) {
  int64_t rows = 0;
  for (int64_t u = t; u < a->T; u++) {
    if (rows > 0 && rows + a->B[u] > a->fetch) break;
    rows += a->B[u];
  }
  dpo_oracle_rows_free(&a->win);
  a->woff = a->off;
  return dpo_oracle_fetch_rows(o, a->c.perm + a->off, rows, &a->win);
}

static int pnsgd_cmp_pair(const void *p, const void *q) {
  const int64_t *u = p, *v = q; /* (global id, position) pairs by id */
  return (u[0] > v[0]) - (u[0] < v[0]);
}

/* g at x over batch t from the fetched rows (fetching the next window when it is used up). */
static int pnsgd_grad_local(dpo__pnsgd_t *a, dpo_oracle_t *o, const double *x, int64_t t) {
  int rc;
  if (a->off + a->B[t] > a->woff + a->win.rows.n && (rc = pnsgd_fetch(a, o, t))) return rc;
  int64_t m = a->B[t], p0 = a->off - a->woff;
  for (int64_t k = 0; k < m; k++) {
    a->pos[2 * k] = a->win.gid[p0 + k];
    a->pos[2 * k + 1] = p0 + k;
  }
  if (m > 1) qsort(a->pos, (size_t)m, 2 * sizeof *a->pos, pnsgd_cmp_pair);
  for (int64_t k = 0; k < m; k++) a->pos[k] = a->pos[2 * k + 1]; /* in place: k <= 2k + 1 */
  return dpo_oracle_eval_rows(o, &a->win, a->pos, m, x, 0, NULL, a->g);
}

static int pnsgd_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__pnsgd_t *a = st;
  double *x = dpo_solver_x(s);
  int32_t d = a->c.d;
  int rc;
  if (t >= a->T) {
    *done = 1;
    return DPO_OK;
  }
  if (t == 0) dpo__sco_project(x, d, a->c.D); /* w_0 in K */
  dpo_batch_t b = dpo__sco_batch(&a->c, a->off, a->B[t]);
  dpo_oracle_t *o = dpo_solver_oracle(s);
  if (a->sa.on) {
    /* charge every party (one batch of the disjoint pass), then the noised sum; parallel
     * composition holds against the coordinator too (the order is public, not amplification) */
    dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = a->sig_sum,
                       .sensitivity = a->sa.sens, .dim = d, .sampling = DPO_SAMPLING_DISJOINT,
                       .accounting = DPO_ACCOUNTING_RDP, .group = 1, .m = b.m, .n = a->c.n,
                       .step = t, .neighbours = a->c.rel};
    if ((rc = dpo__sco_parties_sum(s, &a->sa, x, &b, &ch, a->g))) return rc;
    dpo_model_finish(dpo_oracle_model(o), d, b.m, x, NULL, a->g);
  } else if (a->release_all) {
    /* mean of B_t examples: replace-one L2 sensitivity 2L/B_t (dpo_sens) */
    dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = a->sigma,
                       .sensitivity = dpo_sens(a->c.rel, a->c.L) / (double)a->B[t], .dim = d,
                       .sampling = DPO_SAMPLING_DISJOINT, .accounting = DPO_ACCOUNTING_RDP,
                       .group = 1, .m = a->B[t], .n = a->c.n, .step = t, .neighbours = a->c.rel};
    if ((rc = dpo_ledger_charge(dpo_solver_ledger(s), &ch, NULL))) return rc;
  }
  if (!a->sa.on) {
    if (a->fetch > 0 && !dpo_oracle_parties(o)) rc = pnsgd_grad_local(a, o, x, t);
    else rc = dpo_oracle_eval(o, x, &b, 0, NULL, a->g);
    if (rc) return rc;
    if ((rc = dpo_mech_sample(DPO_MECH_GAUSSIAN, dpo_solver_rng(s), a->sigma, a->g, d))) return rc;
  }
  for (int32_t j = 0; j < d; j++) x[j] -= a->eta[t] * a->g[j];
  dpo__sco_project(x, d, a->c.D);
  a->off += a->B[t];
  if (t + 1 >= a->T) *done = 1;
  return DPO_OK;
}

/* checkpoint: the offset of the next batch in the public order (the fetched rows are a cache,
 * fetched again from there); the schedule (T, B_t, eta_t, sigma, the charged rho) is
 * recomputed from the config and only checked.  algo.release = all: one disjoint pass, so a
 * journal with a charge after the checkpoint is refused.  algo.release = final: the one charge
 * for the whole pass was made before step 0, so the resumed pass runs under it, charging
 * nothing (solver.c); the checkpoint then holds an iterate no charge releases (Thm 3.1 covers
 * the final one only), as secret as the data (doc/design.md).  Multi-party runs release
 * every iterate (release = all), their party accounts are the reopened journal's and the
 * parties' noise shares follow from the config; under secagg the one pass has no checkpoint
 * (dpo_algo_ckpt_check, the solver: dpo_plan_t.one_pass). */
static int pnsgd_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  const dpo__pnsgd_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__sco_ckpt_save(&a->c, w)) || (rc = dpo_ckpt_put_int(w, "kind", a->kind)) ||
      (rc = dpo_ckpt_put_int(w, "release_all", a->release_all)) ||
      (rc = dpo_ckpt_put_int(w, "T", a->T)) || (rc = dpo_ckpt_put_int(w, "used", a->used)) ||
      (rc = dpo_ckpt_put_double(w, "sigma", a->sigma)) ||
      (rc = dpo_ckpt_put_double(w, "rho_charged", a->rho_charged)) ||
      (rc = dpo_ckpt_put_double(w, "Lsnap", a->Lsnap)) ||
      (rc = dpo_ckpt_put_i64(w, "B", a->B, a->T)) || (rc = dpo_ckpt_put_f64(w, "eta", a->eta, a->T)))
    return rc;
  return dpo_ckpt_put_int(w, "off", a->off);
}

static int pnsgd_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__pnsgd_t *a = st;
  int rc;
  if ((rc = dpo__sco_ckpt_load(s, &a->c, r, a->release_all, "the batches'")) ||
      (rc = dpo__ckpt_check_int(r, "kind", a->kind)) ||
      (rc = dpo__ckpt_check_int(r, "release_all", a->release_all)) ||
      (rc = dpo__ckpt_check_int(r, "T", a->T)) || (rc = dpo__ckpt_check_int(r, "used", a->used)) ||
      (rc = dpo__ckpt_check_double(r, "sigma", a->sigma)) ||
      (rc = dpo__ckpt_check_double(r, "rho_charged", a->rho_charged)) ||
      (rc = dpo__ckpt_check_double(r, "Lsnap", a->Lsnap)) ||
      (rc = dpo__ckpt_check_i64s(r, "B", a->B, a->T)) ||
      (rc = dpo__ckpt_check_f64s(r, "eta", a->eta, a->T)) ||
      (rc = dpo_ckpt_get_int(r, "off", &a->off)))
    return rc;
  if (a->off < 0 || a->off > a->used)
    return dpo_err(DPO_EFORMAT, "checkpoint: pnsgd offset %lld outside 0..%lld",
                   (long long)a->off, (long long)a->used);
  return DPO_OK;
}

static const dpo_algo_param_t pnsgd_params[] = {
    {"schedule", "const", "const (Thm 3.5) | jnn (Thm 3.6) | sc (Thm 5.4, lambda > 0)"},
    {"release", "final", "final (one charge, Thm 3.1) | all (every iterate charged)"},
    {"T", "0 (largest T whose Snowball schedule fits n)", "steps"},
    {"fetch_rows", "4194304 / d", "rows rank 0 fetches at once to run the steps itself (same "
     "values, no collective per step); 0: one oracle evaluation per step"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_pnsgd = {
    "pnsgd", "PNSGD with Snowball batches, amplification by iteration (Feldman, Koren and Talwar 2020, Alg. 1; algo.schedule)",
    1, pnsgd_create, pnsgd_step, pnsgd_destroy, pnsgd_save, pnsgd_load, pnsgd_params, dpo__sco_params, NULL,
    NULL, 1, 1, 0, NULL};
