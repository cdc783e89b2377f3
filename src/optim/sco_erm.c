/* Phased-ERM (003 Alg. 3, Lemma 4.7, Thm 4.8): iterative localization for non-smooth convex
 * losses, with regularized ERM phases and output perturbation; and the phase machinery
 * (dpo__sco_phase_run, dpo__sco_erm_solve) shared with sco_sc.c.
 *
 *   k = ceil(log2 n); phase i = 1..k: n_i = floor(2^-i n) fresh examples of the public order,
 *   eta_i = 4^-i eta,  eta = (D/L) min(4/sqrt(n), eps/sqrt(d ln(1/delta)))          (Thm 4.8)
 *   w~_i ~ argmin_K F_i,  F_i(w) = (1/n_i) sum_t f(w, x_t) + ||w - w_{i-1}||^2/(eta_i n_i),
 *        to accuracy F_i(w~_i) - min_K F_i <= L^2 eta_i / n_i              (Alg. 3, line 4)
 *   w_i = w~_i + N(0, sigma_i^2 I),  sigma_i = 4 L eta_i z                 (Alg. 3, line 5)
 * Privacy (Lemma 4.7): F_i is lambda_i = 2/(eta_i n_i)-strongly convex, its minimizer has L2
 * sensitivity 4L/(lambda_i n_i) = 2 L eta_i, and the accuracy gives ||w~_i - wbar_i|| <= L eta_i,
 * so w~_i has sensitivity 4 L eta_i.  Our solver is deterministic projected GD run for an
 * iteration count computed from public constants only (dpo__sco_erm_iters: a convergence
 * bound, not a data-dependent stopping rule, so neither the accuracy nor the number of oracle
 * calls depends on the data), so the bound holds with probability 1 (no delta for a failing
 * SGD solver) and each phase is a plain Gaussian mechanism with multiplier z.  Alg. 3 states
 * z = sqrt(ln(1/delta))/eps via Lemma 4.6, which is not a valid (eps, delta) calibration for
 * every eps (the classic Gaussian needs sqrt(2 ln(1.25/delta))/eps); we use
 *   z = max(sqrt(ln(1/delta))/eps, z_rdp),  z_rdp = dpo_rdp_calibrate(one release, eps, delta)
 * so the ledger's RDP accountant certifies (eps, delta) for one phase.  The phases use
 * disjoint examples: one disjoint pass (per-order max), so the whole run is (eps, delta)-DP.
 * The model's own regularizer (model.lambda) is part of every f; mu_model only helps.
 * One driver iteration = one phase; the solver's iterates go to the worker ranks serving the
 * oracle and are not released.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpopt/privacy.h"
#include "dpopt/runout.h"
#include "dpopt/status.h"
#include "optim/algos.h"
#include "optim/ckpt_int.h"
#include "optim/sco_common.h"

double dpo__sco_sigma(double z, double sens, int32_t d) {
  /* sigma (1 - z sqrt(d) 2^-38) >= z sens  =>  sigma / (sens + sqrt(d) Lambda) >= z */
  return z * sens / (1 - z * sqrt((double)d) * 0x1p-38);
}

/* Inner iteration count (003 Alg. 3, line 4) from public constants only, so that how long the
 * phase solver runs (oracle_evals, wall time) reveals nothing about the data.  Projected GD
 * with step 1/M on the mu-strongly convex, M-smooth F_i over K: the prox-grad inequality
 * (Beck 2017, Thm 10.16) at x = w*, y = w_t with f(w*) >= f(w_t) + <g, w* - w_t> +
 * (mu/2)||w* - w_t||^2 gives
 *   F_i(w_{t+1}) - F_i* <= ((M - mu)/2)||w_t - w*||^2 - (M/2)||w_{t+1} - w*||^2,
 * hence ||w_{t+1} - w*||^2 <= (1 - mu/M)||w_t - w*||^2 and, with ||w_0 - w*|| <= D (both in K),
 *   F_i(w_T) - F_i* <= (M D^2 / 2) (1 - mu/M)^T.
 * The accuracy L^2 eta_i / n_i of Alg. 3 line 4 (what Lemma 4.7 needs for ||w~_i - wbar_i||
 * <= L eta_i) therefore holds after
 *   T = ceil( ln(M D^2 / (2 target)) / -ln(1 - mu/M) )   (<= kappa ln(...), kappa = M/mu)
 * steps, with probability 1. */
int dpo__sco_erm_iters(double beta, double reg, double mu_model, double D, double target,
                       int64_t maxit, int64_t *iters) {
  double M = beta + 2 * reg, mu = mu_model + 2 * reg;
  *iters = 0;
  if (!(M > 0) || !isfinite(M) || !(mu > 0) || !(target > 0) || !(D >= 0) || !isfinite(D))
    return dpo_err(DPO_EINVAL, "phased-erm: phase solver needs public beta + 2 reg > 0 "
                               "(a declared row bound), mu > 0, target > 0, finite D");
  double q = fmin(mu / M, 1), r = M * D * D / (2 * target);
  double T = r <= 1 ? 0 : q >= 1 ? 1 : ceil(log(r) / -log1p(-q));
  if (!(T <= (double)maxit))
    return dpo_err(DPO_EINVAL, "phased-erm: a phase needs %.0f gradient steps for the accuracy "
                               "%g of Feldman, Koren and Talwar 2020, Alg. 3 (kappa = %g), above algo.erm_maxit = %lld: "
                               "raise algo.erm_maxit or lower algo.D",
                   T, target, M / mu, (long long)maxit);
  *iters = (int64_t)T;
  return DPO_OK;
}

int dpo__sco_erm_solve(dpo_oracle_t *o, const dpo_batch_t *b, const double *center, double reg,
                       double beta, double D, int64_t iters, double *w,
                       dpo__sco_erm_info_t *info) {
  int32_t d = dpo_oracle_dim(o);
  int rc = DPO_OK;
  double *g = malloc((size_t)d * sizeof *g);
  double M = beta + 2 * reg;
  int64_t it = 0;
  if (!g) {
    rc = dpo_err(DPO_ENOMEM, "phased-erm: out of memory");
    goto cleanup;
  }
  dpo__sco_project(w, d, D);
  /* a fixed count (dpo__sco_erm_iters): no data-dependent stopping rule */
  for (; it < iters; it++) {
    if ((rc = dpo_oracle_eval(o, w, b, 0, NULL, g))) goto cleanup;
    for (int32_t j = 0; j < d; j++) w[j] -= (g[j] + 2 * reg * (w[j] - center[j])) / M;
    dpo__sco_project(w, d, D); /* projected GD, step 1/M */
  }
cleanup:
  if (info) info->iters = it;
  free(g);
  return rc;
}

int dpo__sco_phase_run(dpo_solver_t *s, dpo__sco_t *c, const dpo__sco_phase_t *ph, int64_t step,
                       double *x, double mu_model, int64_t maxit, dpo__sco_erm_info_t *info) {
  int32_t d = c->d;
  int rc;
  double *g = NULL, *w = NULL, *avg = NULL;
  int64_t iters = 0;
  double reg = 0, target = 0;
  if (ph->erm) { /* public: a refusal here is decided before the charge and the data */
    reg = 1 / (ph->eta * (double)ph->m);
    target = c->L * c->L * ph->eta / (double)ph->m;
    if ((rc = dpo__sco_erm_iters(c->beta, reg, mu_model, c->D, target, maxit, &iters))) return rc;
  }
  /* charge the phase's release before any data-dependent computation */
  dpo_charge_t ch = {.mechanism = DPO_MECH_GAUSSIAN, .noise_scale = ph->sigma,
                     .sensitivity = ph->sens, .dim = d, .sampling = DPO_SAMPLING_DISJOINT,
                     .accounting = DPO_ACCOUNTING_RDP, .group = 1, .m = ph->m, .n = c->n,
                     .step = step, .neighbours = c->rel};
  if ((rc = dpo_ledger_charge(dpo_solver_ledger(s), &ch, NULL))) return rc;
  if (step == 0) dpo__sco_project(x, d, c->D);
  w = malloc((size_t)d * sizeof *w);
  g = malloc((size_t)d * sizeof *g);
  avg = malloc((size_t)d * sizeof *avg);
  if (!w || !g || !avg) {
    rc = dpo_err(DPO_ENOMEM, "sco phase: out of memory");
    goto cleanup;
  }
  memcpy(w, x, (size_t)d * sizeof *w);
  if (ph->erm) {
    dpo_batch_t b = dpo__sco_batch(c, ph->off, ph->m);
    if ((rc = dpo__sco_erm_solve(dpo_solver_oracle(s), &b, x, reg, c->beta, c->D, iters, w,
                                 info)))
      goto cleanup;
    memcpy(avg, w, (size_t)d * sizeof *avg);
  } else {
    double q = ph->wlam > 0 ? ph->eta * ph->wlam : 0;
    for (int32_t j = 0; j < d; j++) avg[j] = 0;
    for (int64_t u = 0; u < ph->m; u++) {
      dpo_batch_t b = dpo__sco_batch(c, ph->off + u, 1);
      if ((rc = dpo_oracle_eval(dpo_solver_oracle(s), w, &b, 0, NULL, g))) goto cleanup;
      for (int32_t j = 0; j < d; j++) w[j] -= ph->eta * g[j];
      dpo__sco_project(w, d, c->D);
      /* weighted running mean: gamma_t / sum_{s<=t} gamma_s = q / (1 - (1-q)^t) (Lemma 5.2);
       * q = 0: the plain mean 1/t */
      double t = (double)(u + 1), r = q > 0 ? q / -expm1(t * log1p(-q)) : 1 / t;
      for (int32_t j = 0; j < d; j++) avg[j] += (w[j] - avg[j]) * r;
    }
    if (info) info->iters = ph->m;
  }
  memcpy(x, avg, (size_t)d * sizeof *x);
  rc = dpo_mech_sample(DPO_MECH_GAUSSIAN, dpo_solver_rng(s), ph->sigma, x, d);
cleanup:
  free(w);
  free(g);
  free(avg);
  return rc;
}

/* ------------------------------------------------------------ phased-erm */

typedef struct {
  dpo__sco_t c;
  int k;
  double eta, z, mu;
  int64_t maxit, off;
} dpo__perm_t;

static void perm_destroy(void *st) {
  dpo__perm_t *a = st;
  if (!a) return;
  dpo__sco_free(&a->c);
  free(a);
}

static int perm_create(dpo_solver_t *s, void **state) {
  int rc;
  dpo__perm_t *a = calloc(1, sizeof *a);
  if (!a) return dpo_err(DPO_ENOMEM, "phased-erm: out of memory");
  if ((rc = dpo__sco_init(s, &a->c, "phased-erm"))) goto fail;
  int64_t n = a->c.n;
  a->k = 0;
  while ((1LL << a->k) < n) a->k++; /* ceil(log2 n) */
  if (a->k < 1) a->k = 1;
  double d = (double)a->c.d, eps = a->c.eps, delta = a->c.delta, zr;
  a->eta = a->c.D / a->c.L * fmin(4 / sqrt((double)n), eps / sqrt(d * log(1 / delta)));
  if ((rc = dpo_solver_param(s, "eta", a->eta, &a->eta))) goto fail;
  if (!(a->eta > 0) || !isfinite(a->eta)) {
    rc = dpo_err(DPO_EINVAL, "phased-erm: algo.eta must be > 0");
    goto fail;
  }
  if ((rc = dpo_rdp_calibrate("none", 0, 0, 1, eps, delta, &zr))) goto fail;
  a->z = fmax(sqrt(log(1 / delta)) / eps, zr);
  if ((rc = dpo_solver_constants(s, NULL, &a->mu))) goto fail;
  if ((rc = dpo_solver_param_int(s, "erm_maxit", 1000000, &a->maxit))) goto fail;
  /* every phase's inner step count is public: refuse a cap it exceeds before any charge */
  int64_t total = 0;
  for (int i = 1; i <= a->k && (int64_t)ldexp((double)n, -i) >= 1; i++) {
    double ni = (double)(int64_t)ldexp((double)n, -i), etai = ldexp(a->eta, -2 * i);
    int64_t T;
    if ((rc = dpo__sco_erm_iters(a->c.beta, 1 / (etai * ni), a->mu, a->c.D,
                                 a->c.L * a->c.L * etai / ni, a->maxit, &T)))
      goto fail;
    total += T;
  }
  dpo_msg("phased-erm: %lld projected-GD steps over the phases, fixed by the public constants "
          "(Feldman, Koren and Talwar 2020, Alg. 3 line 4 accuracy)", (long long)total);
  dpo_msg("phased-erm: k=%d phases, eta=%g, noise multiplier z=%g (Alg. 3: %g, RDP: %g), L=%g, "
          "D=%g (Thm 4.8 rate L D (1/sqrt n + sqrt(d ln(1/delta))/(eps n)) = %g)",
          a->k, a->eta, a->z, sqrt(log(1 / delta)) / eps, zr, a->c.L, a->c.D,
          a->c.L * a->c.D * (1 / sqrt((double)n) + sqrt(d * log(1 / delta)) / (eps * n)));
  dpo_plan_t plan = {.kind = DPO_PLAN_PER_STEP, .steps = a->k};
  snprintf(plan.what, sizeof plan.what, "up to %d phases, each output perturbation a Gaussian "
           "release charged before the phase runs (disjoint examples)", a->k);
  if ((rc = dpo_solver_declare_plan(s, &plan))) goto fail;
  *state = a;
  return DPO_OK;
fail:
  perm_destroy(a);
  return rc;
}

static int perm_step(dpo_solver_t *s, void *st, int64_t t, int *done) {
  dpo__perm_t *a = st;
  int i = (int)t + 1, rc;
  int64_t ni = (int64_t)ldexp((double)a->c.n, -i);
  if (i > a->k || ni < 1) {
    *done = 1;
    return DPO_OK;
  }
  dpo__sco_phase_t ph = {.erm = 1, .off = a->off, .m = ni, .eta = ldexp(a->eta, -2 * i)};
  /* exact ERM moves by 2 L eta between neighbours, plus the accuracy L eta on each side */
  ph.sens = dpo_sens(a->c.rel, a->c.L * ph.eta) + 2 * a->c.L * ph.eta;
  ph.sigma = dpo__sco_sigma(a->z, ph.sens, a->c.d);
  if ((rc = dpo__sco_phase_run(s, &a->c, &ph, t, dpo_solver_x(s), a->mu, a->maxit, NULL)))
    return rc;
  a->off += ni;
  if (i >= a->k || (int64_t)ldexp((double)a->c.n, -(i + 1)) < 1) *done = 1;
  return DPO_OK;
}

/* checkpoint (between phases, x the last phase's released output): the next phase's offset in
 * the public order; the plan (k, eta, z, the step cap) is recomputed and only checked.  One
 * disjoint pass: a journal with a charge after the checkpoint is refused. */
static int perm_save(dpo_solver_t *s, void *st, dpo_ckpt_t *w) {
  const dpo__perm_t *a = st;
  int rc;
  (void)s;
  if ((rc = dpo__sco_phase_save(&a->c, w, a->k, a->eta, a->z, a->off))) return rc;
  return dpo_ckpt_put_int(w, "erm_maxit", a->maxit);
}

static int perm_load(dpo_solver_t *s, void *st, const dpo_ckpt_t *r) {
  dpo__perm_t *a = st;
  int rc;
  if ((rc = dpo__sco_phase_load(s, &a->c, r, a->k, a->eta, a->z, &a->off, "phased-erm")))
    return rc;
  return dpo__ckpt_check_int(r, "erm_maxit", a->maxit);
}

static const dpo_algo_param_t perm_params[] = {
    {"eta", "(D/L) min(4/sqrt n, eps/sqrt(d ln(1/delta)))", "base step (phase i: 4^-i eta; Thm 4.8)"},
    {"erm_maxit", "1000000", "cap on the public step count of a phase's ERM solve"},
    {NULL, NULL, NULL}};

const dpo_algo_t dpo__algo_phased_erm = {
    "phased-erm", "Phased-ERM, regularized ERM phases + output perturbation (Feldman, Koren and Talwar 2020, Alg. 3, Thm 4.8)",
    1, perm_create, perm_step, perm_destroy, perm_save, perm_load, perm_params, dpo__sco_params, NULL, NULL, 0, 1, 0, NULL};
